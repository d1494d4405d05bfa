//! cuecraft-formats: cues <-> bytes for SRT, WebVTT, TTML (IMSC 1.1 text), ASS and EBU-STL.
//!
//! Writers are byte-exact (every byte is pinned by the golden files in `golden/`) and stream into
//! any [`std::io::Write`]; readers accept the variants real files have and return a
//! [`ParseError`] that says where and why, never a panic.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod ass;
mod common;
mod controls;
mod error;
mod iso6937;
mod scan;
pub mod srt;
pub mod stl;
pub mod ttml;
pub mod vtt;

use std::io::Write;

use cuecraft_engine::{Cue, FrameRate, Millis};

pub use common::Limits;
pub use error::{ConvertError, ParseError, WriteError};

/// The five subtitle formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// SubRip.
    Srt,
    /// WebVTT.
    WebVtt,
    /// TTML 2, IMSC 1.1 Text profile.
    Ttml,
    /// Advanced SubStation Alpha v4.00+.
    Ass,
    /// EBU Tech 3264 subtitle exchange (binary).
    EbuStl,
}

impl Format {
    /// Every format, in the contract's order.
    pub const ALL: [Format; 5] = [
        Format::Srt,
        Format::WebVtt,
        Format::Ttml,
        Format::Ass,
        Format::EbuStl,
    ];

    /// Parses an API `format` value or a CLI name: `srt`, `vtt`, `webvtt`, `ttml`, `ass`, `ebu-stl`
    /// (and `stl`, `ssa`, `dfxp`, `xml` for the CLI's convenience, case-insensitive).
    pub fn from_name(name: &str) -> Option<Format> {
        Some(match name.to_ascii_lowercase().as_str() {
            "srt" => Format::Srt,
            "vtt" | "webvtt" => Format::WebVtt,
            "ttml" | "dfxp" | "xml" => Format::Ttml,
            "ass" | "ssa" => Format::Ass,
            "ebu-stl" | "stl" => Format::EbuStl,
            _ => return None,
        })
    }

    /// The file extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Srt => "srt",
            Format::WebVtt => "vtt",
            Format::Ttml => "ttml",
            Format::Ass => "ass",
            Format::EbuStl => "stl",
        }
    }

    /// The contract's content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Srt => "application/x-subrip",
            Format::WebVtt => "text/vtt",
            Format::Ttml => "application/ttml+xml",
            Format::Ass => "text/x-ssa",
            Format::EbuStl => "application/octet-stream",
        }
    }

    /// The format a file name's extension names, if any.
    pub fn from_path(path: &str) -> Option<Format> {
        let ext = path.rsplit_once('.')?.1;
        Format::from_name(ext)
    }
}

/// What a writer needs besides the cues.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteOptions {
    /// Added to every cue time before writing; negative results clamp to zero. Ignored by EBU-STL.
    pub offset: Millis,
    /// The job's frame rate: EBU-STL timecodes and the TTML frame rate.
    pub frame_rate: FrameRate,
    /// Language code of the transcript (`en`, `zh-TW`); `""` when unknown.
    pub language: String,
    /// Programme title, where the format has a field for it (ASS `Title`, EBU-STL OPT).
    pub title: String,
    /// The layout's maxCharsPerLine: EBU-STL's MNC (capped at 40 for teletext).
    pub max_chars_per_line: u32,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            offset: Millis::ZERO,
            frame_rate: FrameRate::FPS_25,
            language: String::new(),
            title: String::new(),
            max_chars_per_line: 42,
        }
    }
}

/// Writes `cues` in `format` to `out`.
pub fn write(
    format: Format,
    cues: &[Cue],
    opts: &WriteOptions,
    out: &mut dyn Write,
) -> Result<(), WriteError> {
    match format {
        Format::Srt => srt::write(cues, opts, out),
        Format::WebVtt => vtt::write(cues, opts, out),
        Format::Ttml => ttml::write(cues, opts, out),
        Format::Ass => ass::write(cues, opts, out),
        Format::EbuStl => stl::write(cues, opts, out),
    }
}

/// Writes `cues` in `format` into a new buffer.
pub fn to_vec(format: Format, cues: &[Cue], opts: &WriteOptions) -> Result<Vec<u8>, WriteError> {
    let mut out = Vec::new();
    write(format, cues, opts, &mut out)?;
    Ok(out)
}

/// Reads cues from `input` in `format`.
pub fn parse(format: Format, input: &[u8]) -> Result<Vec<Cue>, ParseError> {
    match format {
        Format::Srt => srt::parse(input),
        Format::WebVtt => vtt::parse(input),
        Format::Ttml => ttml::parse(input),
        Format::Ass => ass::parse(input),
        Format::EbuStl => stl::parse(input),
    }
}

/// What a one-pass conversion ([`convert_streaming`], [`convert_streaming_read`]) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streamed {
    /// The whole file was written: byte for byte what [`parse`] then [`write()`] give.
    Written,
    /// The input's cues are not in the order the output file holds them (writers sort cues by
    /// their written times), so they cannot be written as they are read. Part of the output may
    /// have been written: discard it and convert through the cue list ([`parse`], then [`write()`]).
    OutOfOrder,
    /// There is no one-pass conversion from this format to that one; nothing was written.
    Unsupported,
    /// ([`convert_streaming_read`] only) The input is not UTF-8, so it has to be decoded as a
    /// whole: discard what was written, read the input whole and use [`convert_streaming`].
    NotUtf8,
}

/// Converts `input` from `from` to `to` in one pass, writing each cue as soon as it is read,
/// without building the cue list: the output is byte-identical to [`parse`] followed by
/// [`write()`], in a fraction of the time and memory. Available from SRT to SRT, WebVTT and ASS
/// (the formats most converted, and writers that need nothing but the cue in hand); other pairs
/// return [`Streamed::Unsupported`].
///
/// On an error or [`Streamed::OutOfOrder`] part of the output may have been written already; a
/// caller that must not leave a partial file writes to a temporary one (as `cuecraft convert`
/// does). The error is the one [`parse`] or [`write()`] would return.
pub fn convert_streaming(
    from: Format,
    to: Format,
    input: &[u8],
    opts: &WriteOptions,
    out: &mut dyn Write,
) -> Result<Streamed, ConvertError> {
    match (from, to) {
        (Format::Srt, Format::Srt) => srt::stream(srt::SrtBlocks::default(), input, opts, out),
        (Format::Srt, Format::WebVtt) => srt::stream(vtt::VttBlocks, input, opts, out),
        (Format::Srt, Format::Ass) => srt::stream(ass::AssBlocks, input, opts, out),
        _ => Ok(Streamed::Unsupported),
    }
}

/// [`convert_streaming`] reading from `input` a chunk at a time (64 KiB, more when one cue is
/// longer), so that memory stays small whatever the size of the file. UTF-8 input only: other
/// text gives [`Streamed::NotUtf8`]. Part of the output may have been written when it returns
/// anything but [`Streamed::Written`] or [`Streamed::Unsupported`].
pub fn convert_streaming_read(
    from: Format,
    to: Format,
    input: &mut dyn std::io::Read,
    opts: &WriteOptions,
    out: &mut dyn Write,
) -> Result<Streamed, ConvertError> {
    convert_streaming_read_chunked(from, to, input, srt::CHUNK, opts, out)
}

/// [`convert_streaming_read`] with a chunk size of `chunk` bytes, for tests of the chunk edges.
#[doc(hidden)]
pub fn convert_streaming_read_chunked(
    from: Format,
    to: Format,
    input: &mut dyn std::io::Read,
    chunk: usize,
    opts: &WriteOptions,
    out: &mut dyn Write,
) -> Result<Streamed, ConvertError> {
    match (from, to) {
        (Format::Srt, Format::Srt) => {
            srt::stream_read(srt::SrtBlocks::default(), input, chunk, opts, out)
        }
        (Format::Srt, Format::WebVtt) => srt::stream_read(vtt::VttBlocks, input, chunk, opts, out),
        (Format::Srt, Format::Ass) => srt::stream_read(ass::AssBlocks, input, chunk, opts, out),
        _ => Ok(Streamed::Unsupported),
    }
}

/// The format `input` is in, judged from its first bytes (BOM skipped): EBU-STL by its GSI block,
/// `WEBVTT`, an XML/`<tt` root for TTML, a `[Script Info]`/`[Events]` section for ASS, a counter or
/// timing line for SRT. `None` when nothing matches.
pub fn detect(input: &[u8]) -> Option<Format> {
    common::detect(input)
}
