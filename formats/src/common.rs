//! Helpers every writer and reader shares: offset + clamp + half-up rounding of cue times, the
//! display lines of a cue, hand-written digit formatting into a reusable buffer, a buffered sink
//! over `&mut dyn Write`, text decoding (BOM, UTF-8, legacy code pages) and line splitting.
//!
//! Writers never use `format!` per cue: they push bytes into one reusable `Vec<u8>` and flush it in
//! large chunks, which is what makes gigabyte-per-second output possible.

use std::borrow::Cow;
use std::io::Write;

use cuecraft_engine::{Cue, Millis};

use nom::bytes::complete::{take_while, take_while1};
use nom::character::complete::{char, one_of};
use nom::combinator::opt;
use nom::sequence::preceded;
use nom::{IResult, Parser};

use crate::controls;
use crate::scan::{any_byte, any_of2};
use crate::{WriteError, WriteOptions};

/// Caps for reading untrusted input: a reader stops with an error instead of growing without bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum number of cues.
    pub max_cues: usize,
    /// Maximum total bytes of cue text (UTF-8).
    pub max_text_bytes: usize,
}

impl Limits {
    /// No practical limit (the input itself bounds the output).
    pub const UNLIMITED: Limits = Limits {
        max_cues: usize::MAX,
        max_text_bytes: usize::MAX,
    };
}

impl Default for Limits {
    /// 200,000 cues and 64 MiB of text: far beyond any real subtitle file.
    fn default() -> Self {
        Limits {
            max_cues: 200_000,
            max_text_bytes: 64 << 20,
        }
    }
}

/// The cues in writing order: sorted stably by the (start, end) the file will hold, that is after
/// `offset`, clamping at zero and rounding to units of `unit_ms` (see [`span_units`]). Sorting by
/// the exact times instead would let two cues that round to the same start come out in an order
/// that reading the file back and writing it again changes.
pub(crate) fn sorted(cues: &[Cue], offset: Millis, unit_ms: u64) -> Vec<&Cue> {
    let key = |c: &Cue| span_units(c, offset, unit_ms);
    let mut v: Vec<&Cue> = cues.iter().collect();
    if !cues.windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
        v.sort_by_key(|c| key(c));
    }
    v
}

/// `t + offset`, clamped at zero, in milliseconds.
#[inline]
pub(crate) fn shifted(t: Millis, offset: Millis) -> u64 {
    t.0.saturating_add(offset.0).max(0) as u64
}

/// `ms` rounded half up to whole units of `unit_ms` (e.g. 10 for centiseconds). `unit_ms > 0`.
#[inline]
pub(crate) fn round_half_up(ms: u64, unit_ms: u64) -> u64 {
    ms.saturating_add(unit_ms / 2) / unit_ms
}

/// A cue's (start, end) in whole units of `unit_ms`, after offset and clamping, rounded half up,
/// with `end >= start + 1` unit.
#[inline]
pub(crate) fn span_units(cue: &Cue, offset: Millis, unit_ms: u64) -> (u64, u64) {
    times_in_units(cue.start, cue.end, offset, unit_ms)
}

/// [`span_units`] of a cue from `start` to `end`.
#[inline]
pub(crate) fn times_in_units(
    start: Millis,
    end: Millis,
    offset: Millis,
    unit_ms: u64,
) -> (u64, u64) {
    let start = round_half_up(shifted(start, offset), unit_ms);
    let end = round_half_up(shifted(end, offset), unit_ms).max(start.saturating_add(1));
    (start, end)
}

/// The shape of a line-based text format (SRT, WebVTT, ASS): a header, then one block per cue that
/// has visible text, in the order of the times the file holds. [`write_blocks`] writes a cue list
/// with it; a reader that streams (see `srt::Blocks`) can feed it cues one at a time instead.
pub(crate) trait TextBlocks {
    /// The unit of the format's times, in milliseconds (1 for SRT and WebVTT, 10 for ASS).
    const UNIT_MS: u64;

    /// Appends what comes before the first cue.
    fn header(&mut self, b: &mut Vec<u8>, opts: &WriteOptions);

    /// Appends the block of one cue shown over `span` (in [`Self::UNIT_MS`], as [`span_units`]
    /// gives it) with text `lines`, and returns how many lines were visible. When none was, the
    /// caller removes what was appended: a cue without visible text gets no block. `timing` is the
    /// span's timing line as SRT writes it (see [`push_timing`]), when the caller has it already.
    fn block<L: BlockLines + ?Sized>(
        &mut self,
        b: &mut Vec<u8>,
        span: (u64, u64),
        timing: Option<&[u8; 29]>,
        lines: &L,
    ) -> usize;
}

/// Writes `cues` in the text format `f`: header, then a block per cue, sorted as [`sorted`] says.
pub(crate) fn write_blocks<F: TextBlocks>(
    mut f: F,
    cues: &[Cue],
    opts: &WriteOptions,
    out: &mut dyn Write,
) -> Result<(), WriteError> {
    let mut w = BlockWriter::new(&mut f, opts, out);
    for cue in sorted(cues, opts.offset, F::UNIT_MS) {
        w.push(
            span_units(cue, opts.offset, F::UNIT_MS),
            None,
            cue.lines.as_slice(),
        )?;
    }
    w.finish()
}

/// Writes cues one at a time in a text format: the header first, then each block as it comes.
pub(crate) struct BlockWriter<'a, F> {
    format: &'a mut F,
    sink: Sink<'a>,
}

impl<'a, F: TextBlocks> BlockWriter<'a, F> {
    /// Starts the file: the header goes into the buffer.
    pub fn new(format: &'a mut F, opts: &WriteOptions, out: &'a mut dyn Write) -> Self {
        let mut sink = Sink::new(out);
        format.header(&mut sink.buf, &controls::options(opts));
        BlockWriter { format, sink }
    }

    /// Appends the block of a cue shown over `span` with text `lines` (nothing when no line is
    /// visible); `timing` as [`TextBlocks::block`] takes it.
    #[inline]
    pub fn push<L: BlockLines + ?Sized>(
        &mut self,
        span: (u64, u64),
        timing: Option<&[u8; 29]>,
        lines: &L,
    ) -> Result<(), WriteError> {
        let mark = self.sink.buf.len();
        if self.format.block(&mut self.sink.buf, span, timing, lines) == 0 {
            self.sink.buf.truncate(mark);
            return Ok(());
        }
        self.sink.maybe_flush()
    }

    /// Writes what is left and flushes the output.
    pub fn finish(self) -> Result<(), WriteError> {
        self.sink.finish()
    }
}

/// The lines a writer shows for a cue: each of `cue.lines` split at CR and LF, trimmed of leading
/// and trailing whitespace (invisible, and dropped by common readers anyway), blank lines dropped
/// (an empty line ends a block in SRT and WebVTT).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn visible_lines(cue: &Cue) -> impl Iterator<Item = &str> {
    cue.lines
        .iter()
        .flat_map(|l| l.split(['\r', '\n']))
        .map(str::trim)
        .filter(|l| !l.is_empty())
}

/// The text lines of one cue, as a writer receives them.
pub(crate) trait BlockLines {
    /// Calls `f` with each of the [`visible_lines`] and returns how many there were.
    fn for_each_visible(&self, f: impl FnMut(&str)) -> usize;
}

/// A cue's lines, which may hold line breaks.
impl<S: AsRef<str>> BlockLines for [S] {
    #[inline]
    fn for_each_visible(&self, f: impl FnMut(&str)) -> usize {
        for_each_visible_line(self, f)
    }
}

/// Lines a reader has split at CR and LF already ([`Lines`] yields such): only trimming is left,
/// not another look for line breaks in every line.
pub(crate) struct Unbroken<'s, 'a>(pub &'s [&'a str]);

impl BlockLines for Unbroken<'_, '_> {
    #[inline]
    fn for_each_visible(&self, mut f: impl FnMut(&str)) -> usize {
        let mut n = 0;
        for l in self.0 {
            debug_assert!(!any_of2(l.as_bytes(), b'\r', b'\n'));
            let t = trim_line(l);
            if t.is_empty() {
                continue;
            }
            // As the writers clean a cue's lines before they look at them (`controls::cues`).
            let cleaned = controls::cleaned(t);
            let t = cleaned.trim();
            if !t.is_empty() {
                f(t);
                n += 1;
            }
        }
        n
    }
}

/// Calls `f` with each of the [`visible_lines`] of a cue's `lines`, control characters removed
/// (`controls`), and returns how many there were. The fast path for writers: a line without CR,
/// LF or another control character whose ends are not whitespace is passed through untouched.
#[inline]
pub(crate) fn for_each_visible_line<S: AsRef<str>>(lines: &[S], mut f: impl FnMut(&str)) -> usize {
    let mut n = 0;
    for l in lines {
        let l = l.as_ref();
        // One scan finds line breaks and control characters alike (`controls::has_control`).
        if !any_byte(l.as_bytes(), |x| (x < 0x20) | (x == 0x7F) | (x == 0xC2)) {
            let t = trim_line(l);
            if !t.is_empty() {
                f(t);
                n += 1;
            }
        } else {
            let l = controls::cleaned(l);
            for part in l.split(['\r', '\n']) {
                let t = part.trim();
                if !t.is_empty() {
                    f(t);
                    n += 1;
                }
            }
        }
    }
    n
}

/// `l.trim()`, without looking inside when both ends are visible ASCII.
#[inline]
fn trim_line(l: &str) -> &str {
    match (l.as_bytes().first(), l.as_bytes().last()) {
        (Some(&a), Some(&z)) if a > b' ' && a < 0x7F && z > b' ' && z < 0x7F => l,
        _ => l.trim(),
    }
}

/// Whether `line` is empty or only whitespace.
#[inline]
pub(crate) fn is_blank(line: &str) -> bool {
    match line.as_bytes().first() {
        None => true,
        Some(&b) if b > b' ' && b < 0x7F => false,
        Some(_) => line.trim().is_empty(),
    }
}

/// A reusable output buffer that flushes into a `&mut dyn Write` in large chunks.
pub(crate) struct Sink<'a> {
    /// The bytes not yet written to `out`. Writers push into it directly.
    pub buf: Vec<u8>,
    out: &'a mut dyn Write,
}

const SINK_CHUNK: usize = 64 * 1024;

impl<'a> Sink<'a> {
    /// A sink over `out`.
    pub fn new(out: &'a mut dyn Write) -> Sink<'a> {
        Sink {
            buf: Vec::with_capacity(SINK_CHUNK + 4096),
            out,
        }
    }

    /// Flushes when the buffer has grown past the chunk size; call once per cue.
    #[inline]
    pub fn maybe_flush(&mut self) -> Result<(), WriteError> {
        if self.buf.len() >= SINK_CHUNK {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Writes everything left and flushes the output.
    pub fn finish(mut self) -> Result<(), WriteError> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()?;
        Ok(())
    }
}

/// Appends `v` in decimal.
#[inline]
pub(crate) fn push_u64(buf: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// The two ASCII digits of every number below 100: `PAIRS[2 * n..2 * n + 2]`.
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// The two digits of `n < 100` (99 for anything larger: callers pass values below 100, and a
/// comparison is cheaper than the division a `% 100` would cost).
#[inline(always)]
pub(crate) fn pair(n: u32) -> [u8; 2] {
    let i = 2 * n.min(99) as usize;
    [PAIRS[i], PAIRS[i + 1]]
}

/// Appends `ms` as `HH:MM:SS<sep>mmm`: hours at least two digits and as many as needed beyond.
/// Every writer formats two times per cue, so the digits come from a table of pairs instead of a
/// division per digit.
#[inline]
pub(crate) fn push_hhmmss_ms(buf: &mut Vec<u8>, ms: u64, sep: u8) {
    if let Some(t) = hhmmss_ms(ms, sep) {
        buf.extend_from_slice(&t);
        return;
    }
    push_u64(buf, ms / 3_600_000);
    buf.extend_from_slice(&hhmmss_ms(ms % 3_600_000, sep).unwrap_or_default()[2..]);
}

/// `ms` as `HH:MM:SS<sep>mmm` when it is under 100 hours (`None` beyond).
#[inline(always)]
fn hhmmss_ms(ms: u64, sep: u8) -> Option<[u8; 12]> {
    // Under 100 hours the time fits u32, whose divisions by constants are cheaper.
    let ms = u32::try_from(ms).ok().filter(|&ms| ms < 360_000_000)?;
    let (h, rem) = (ms / 3_600_000, ms % 3_600_000);
    let (m, s, f) = (rem / 60_000, rem / 1000 % 60, rem % 1000);
    let ([h1, h2], [m1, m2], [s1, s2]) = (pair(h), pair(m), pair(s));
    let [f2, f3] = pair(f % 100);
    let f1 = b'0' + (f / 100) as u8;
    Some([h1, h2, b':', m1, m2, b':', s1, s2, sep, f1, f2, f3])
}

/// Appends the timing line of `span` (milliseconds) with `sep` before the milliseconds, as
/// [`push_timing_ms`] writes it. `given` is that line as SRT writes it (`sep` a comma), when a
/// reader has it from the input: then it is copied, its two separators replaced, instead of the
/// times being formatted again.
#[inline]
pub(crate) fn push_timing(buf: &mut Vec<u8>, span: (u64, u64), given: Option<&[u8; 29]>, sep: u8) {
    let Some(line) = given else {
        push_timing_ms(buf, span, sep);
        return;
    };
    let at = buf.len();
    buf.extend_from_slice(line);
    buf[at + 8] = sep;
    buf[at + 25] = sep;
    debug_assert!({
        let mut formatted = Vec::new();
        push_timing_ms(&mut formatted, span, sep);
        formatted == buf[at..]
    });
}

/// Appends `start --> end`, both as [`push_hhmmss_ms`] writes them: the timing line of SRT and
/// WebVTT (without its line break), in one piece when both are under 100 hours.
#[inline]
pub(crate) fn push_timing_ms(buf: &mut Vec<u8>, (start, end): (u64, u64), sep: u8) {
    let (Some(a), Some(z)) = (hhmmss_ms(start, sep), hhmmss_ms(end, sep)) else {
        push_hhmmss_ms(buf, start, sep);
        buf.extend_from_slice(b" --> ");
        push_hhmmss_ms(buf, end, sep);
        return;
    };
    let mut line = [b' '; 29];
    line[..12].copy_from_slice(&a);
    line[13..16].copy_from_slice(b"-->");
    line[17..].copy_from_slice(&z);
    buf.extend_from_slice(&line);
}

/// How text that is not valid UTF-8 is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fallback {
    /// Windows-1252 (a superset of ISO 8859-1 for printable text), as legacy SRT and ASS files use.
    Windows1252,
    /// UTF-8 with U+FFFD for invalid sequences, as the WebVTT spec requires.
    LossyUtf8,
}

/// Decoded input text and the number of input bytes before it (the BOM). Byte offsets in `text`
/// plus `bom_len` are input offsets for UTF-8 input, and approximate for other encodings.
pub(crate) struct Decoded<'a> {
    /// The text, without BOM.
    pub text: Cow<'a, str>,
    /// Length of the byte-order mark that was skipped.
    pub bom_len: usize,
}

/// Decodes subtitle bytes: a UTF-8 or UTF-16 BOM is honoured and skipped; BOM-less valid UTF-8 is
/// borrowed; anything else goes through `fallback`.
pub(crate) fn decode(input: &[u8], fallback: Fallback) -> Decoded<'_> {
    if let Some((enc, bom_len)) = encoding_rs::Encoding::for_bom(input) {
        let body = &input[bom_len..];
        if enc == encoding_rs::UTF_8 {
            return match utf8(body) {
                Ok(s) => Decoded {
                    text: Cow::Borrowed(s),
                    bom_len,
                },
                Err(_) => Decoded {
                    text: Cow::Owned(String::from_utf8_lossy(body).into_owned()),
                    bom_len,
                },
            };
        }
        let (text, _) = enc.decode_without_bom_handling(body);
        return Decoded {
            text: Cow::Owned(text.into_owned()),
            bom_len,
        };
    }
    match utf8(input) {
        Ok(s) => Decoded {
            text: Cow::Borrowed(s),
            bom_len: 0,
        },
        Err(_) => {
            let text = match fallback {
                Fallback::Windows1252 => encoding_rs::WINDOWS_1252
                    .decode_without_bom_handling(input)
                    .0
                    .into_owned(),
                Fallback::LossyUtf8 => String::from_utf8_lossy(input).into_owned(),
            };
            Decoded {
                text: Cow::Owned(text),
                bom_len: 0,
            }
        }
    }
}

/// `bytes` as UTF-8 text, if they are. simdutf8 checks a megabyte in a few dozen microseconds,
/// several times faster than the standard library on text that is not all ASCII; only whether the
/// text is valid matters here (invalid text is decoded another way as a whole).
#[inline]
fn utf8(bytes: &[u8]) -> Result<&str, simdutf8::basic::Utf8Error> {
    simdutf8::basic::from_utf8(bytes)
}

/// Splits text into lines at CRLF, LF or CR, yielding each line with its byte offset in `text`.
/// A final line terminator does not produce an extra empty line.
pub(crate) struct Lines<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Lines<'a> {
    /// Lines of `text`.
    pub fn new(text: &'a str) -> Lines<'a> {
        Lines { text, pos: 0 }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, &'a str);

    fn next(&mut self) -> Option<(usize, &'a str)> {
        let rest = self.text.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        let start = self.pos;
        let bytes = rest.as_bytes();
        match memchr::memchr2(b'\n', b'\r', bytes) {
            Some(i) => {
                let skip = if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                self.pos = start + i + skip;
                Some((start, &rest[..i]))
            }
            None => {
                self.pos = self.text.len();
                Some((start, rest))
            }
        }
    }
}

/// The line starting at byte `pos` of `text` (a position [`Lines`] yields, or 0): its offset, its
/// text and where the next line starts; `None` at the end of the text.
#[inline]
pub(crate) fn line_at(text: &str, pos: usize) -> Option<(usize, &str, usize)> {
    let mut lines = Lines { text, pos };
    let (offset, line) = lines.next()?;
    Some((offset, line, lines.pos))
}

/// Checks the running totals of a reader against `limits`.
pub(crate) fn check_limits(
    cues: usize,
    text_bytes: usize,
    limits: &Limits,
) -> Result<(), &'static str> {
    if cues > limits.max_cues {
        return Err("too many cues");
    }
    if text_bytes > limits.max_text_bytes {
        return Err("too much cue text");
    }
    Ok(())
}

/// Spaces and tabs, possibly none.
pub(crate) fn spaces(i: &str) -> IResult<&str, &str> {
    take_while(|c: char| c == ' ' || c == '\t').parse(i)
}

/// One or more ASCII digits.
pub(crate) fn digits(i: &str) -> IResult<&str, &str> {
    take_while1(|c: char| c.is_ascii_digit()).parse(i)
}

/// `[H+:]M+:S+[,.]f*`: the fields as digit strings; range checks happen in [`to_millis`].
pub(crate) fn timestamp(i: &str) -> IResult<&str, Result<i64, String>> {
    let (i, a) = digits(i)?;
    let (i, _) = char(':').parse(i)?;
    let (i, b) = digits(i)?;
    let (i, c) = opt(preceded(char(':'), digits)).parse(i)?;
    let (i, frac) = opt(preceded(
        one_of(",."),
        take_while(|c: char| c.is_ascii_digit()),
    ))
    .parse(i)?;
    let (h, m, s) = match c {
        Some(c) => (Some(a), b, c),
        None => (None, a, b),
    };
    Ok((i, to_millis(h, m, s, frac.unwrap_or(""))))
}

/// Milliseconds from timestamp fields; the fraction is decimal (`5` = 500 ms) and digits past the
/// third are ignored.
pub(crate) fn to_millis(h: Option<&str>, m: &str, s: &str, frac: &str) -> Result<i64, String> {
    let num = |d: &str| -> Result<i64, String> {
        if d.len() > 12 {
            return Err(format!("number `{}` is too large", shorten(d)));
        }
        d.parse::<i64>()
            .map_err(|_| format!("`{}` is not a number", shorten(d)))
    };
    let hours = match h {
        Some(h) => num(h)?,
        None => 0,
    };
    let minutes = num(m)?;
    let seconds = num(s)?;
    if minutes > 59 {
        return Err(format!("minutes {minutes} out of range (00-59)"));
    }
    if seconds > 59 {
        return Err(format!("seconds {seconds} out of range (00-59)"));
    }
    let mut ms = 0i64;
    for (k, d) in frac.bytes().take(3).enumerate() {
        ms += i64::from(d - b'0') * [100, 10, 1][k];
    }
    Ok(hours * 3_600_000 + minutes * 60_000 + seconds * 1000 + ms)
}

/// At most 40 characters of `s`, for error messages.
pub(crate) fn shorten(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// See [`crate::detect`].
pub(crate) fn detect(input: &[u8]) -> Option<crate::Format> {
    use crate::Format;
    if input.len() >= 1024 && input.get(3..6) == Some(b"STL") && input.get(8..11) == Some(b".01") {
        return Some(Format::EbuStl);
    }
    let head = &input[..input.len().min(8192)];
    let decoded = decode(head, Fallback::Windows1252);
    let text = decoded
        .text
        .trim_start_matches(['\u{FEFF}', ' ', '\t', '\r', '\n']);
    if text.starts_with("WEBVTT") {
        return Some(Format::WebVtt);
    }
    if text.starts_with("<?xml") || text.starts_with("<tt") {
        return Some(Format::Ttml);
    }
    let mut lines = Lines::new(text)
        .map(|(_, l)| l.trim())
        .filter(|l| !l.is_empty());
    let first = lines.next()?;
    if first.starts_with('[') {
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("[script info]") || lower.contains("\n[events]") {
            return Some(Format::Ass);
        }
        return None;
    }
    let timing = |l: &str| l.contains("-->") && matches!(timestamp(l), Ok((_, Ok(_))));
    if timing(first)
        || (first.bytes().all(|b| b.is_ascii_digit()) && lines.next().is_some_and(timing))
    {
        return Some(Format::Srt);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_formats_from_content() {
        use crate::Format;
        assert_eq!(detect(b"\xEF\xBB\xBFWEBVTT\n\n"), Some(Format::WebVtt));
        assert_eq!(
            detect(b"\r\n1\r\n00:00:01,000 --> 00:00:02,000\r\nx"),
            Some(Format::Srt)
        );
        assert_eq!(
            detect(b"00:00:01.000 --> 00:00:02.000\nx"),
            Some(Format::Srt)
        );
        assert_eq!(detect(b"[Script Info]\nTitle: x\n"), Some(Format::Ass));
        assert_eq!(
            detect(b"<?xml version=\"1.0\"?>\n<tt xmlns=\"\">"),
            Some(Format::Ttml)
        );
        let mut stl = vec![b' '; 1024];
        stl[..11].copy_from_slice(b"850STL25.01");
        assert_eq!(detect(&stl), Some(Format::EbuStl));
        assert_eq!(detect(b"hello"), None);
        assert_eq!(detect(b"1\nhello"), None);
        assert_eq!(detect(b""), None);
    }

    #[test]
    fn the_fast_line_path_agrees_with_visible_lines() {
        let cue = Cue::from_lines(
            1,
            Millis(0),
            Millis(1),
            vec![
                "plain".into(),
                " padded\u{A0}".into(),
                "".into(),
                "a\r\nb\rc\n\n".into(),
                "é".into(),
                "\t".into(),
            ],
        );
        let mut fast = Vec::new();
        let n = for_each_visible_line(&cue.lines, |l| fast.push(l.to_string()));
        let slow: Vec<String> = visible_lines(&cue).map(str::to_string).collect();
        assert_eq!(fast, slow);
        assert_eq!(n, 6);
    }

    #[test]
    fn half_up_rounding_at_centiseconds() {
        assert_eq!(round_half_up(1005, 10), 101);
        assert_eq!(round_half_up(2995, 10), 300);
        assert_eq!(round_half_up(1004, 10), 100);
        assert_eq!(round_half_up(u64::MAX, 10), u64::MAX / 10);
    }

    #[test]
    fn span_clamps_after_offset_and_keeps_one_unit() {
        let c = Cue::from_lines(1, Millis(2_000), Millis(4_000), vec!["x".into()]);
        assert_eq!(span_units(&c, Millis(-5_000), 1), (0, 1));
        assert_eq!(span_units(&c, Millis(-3_000), 10), (0, 100));
        let c = Cue::from_lines(1, Millis(61_000), Millis(61_004), vec!["x".into()]);
        assert_eq!(span_units(&c, Millis::ZERO, 10), (6_100, 6_101));
        let c = Cue::from_lines(1, Millis(i64::MAX), Millis(i64::MIN), vec![]);
        let (s, e) = span_units(&c, Millis(i64::MAX), 1);
        assert!(e > s);
    }

    #[test]
    fn timestamps_have_two_digit_hours_and_grow_past_99() {
        let mut b = Vec::new();
        push_hhmmss_ms(&mut b, 3_723_456, b',');
        b.push(b' ');
        push_hhmmss_ms(&mut b, 101 * 3_600_000 + 5, b'.');
        assert_eq!(b, b"01:02:03,456 101:00:00.005");
        // Against format! over every millisecond of a minute and hours from 0 to past 100.
        let values = (0..60_000u64).chain((0..2_000).map(|k| k * 3_600_017 + k * 7));
        for ms in values {
            let mut b = Vec::new();
            push_hhmmss_ms(&mut b, ms, b',');
            let (h, rem) = (ms / 3_600_000, ms % 3_600_000);
            let expected = format!(
                "{h:02}:{:02}:{:02},{:03}",
                rem / 60_000,
                rem / 1000 % 60,
                rem % 1000
            );
            assert_eq!(String::from_utf8(b).unwrap(), expected);
        }
    }

    #[test]
    fn a_timing_line_is_its_two_timestamps() {
        // The one-piece path (both under 100 hours) and the other (either at or past 100 hours,
        // or past u32 milliseconds) give what two timestamps around ` --> ` give.
        let edge = 100 * 3_600_000;
        let times = [
            0,
            999,
            59_999,
            3_599_999,
            edge - 1,
            edge,
            edge + 1,
            u64::from(u32::MAX) + 1,
        ];
        for &start in &times {
            for &end in &times {
                let mut line = Vec::new();
                push_timing_ms(&mut line, (start, end), b'.');
                let mut expected = Vec::new();
                push_hhmmss_ms(&mut expected, start, b'.');
                expected.extend_from_slice(b" --> ");
                push_hhmmss_ms(&mut expected, end, b'.');
                assert_eq!(line, expected, "{start} {end}");
            }
        }
        let mut line = Vec::new();
        push_timing_ms(&mut line, (3_723_456, edge - 1), b',');
        assert_eq!(line, b"01:02:03,456 --> 99:59:59,999");
    }

    #[test]
    fn lines_split_on_every_terminator() {
        let v: Vec<_> = Lines::new("a\r\nb\nc\rd\r\n\r\ne").collect();
        assert_eq!(
            v,
            vec![(0, "a"), (3, "b"), (5, "c"), (7, "d"), (10, ""), (12, "e")]
        );
        assert_eq!(Lines::new("a\n").count(), 1);
    }

    #[test]
    fn decoding_honours_boms_and_falls_back_to_windows_1252() {
        let d = decode(b"\xEF\xBB\xBFabc", Fallback::Windows1252);
        assert_eq!((d.text.as_ref(), d.bom_len), ("abc", 3));
        let d = decode(b"caf\xE9 \x80", Fallback::Windows1252);
        assert_eq!(d.text, "café €");
        let d = decode(b"\xFF\xFEa\0", Fallback::Windows1252);
        assert_eq!(d.text, "a");
        let d = decode(b"caf\xE9", Fallback::LossyUtf8);
        assert_eq!(d.text, "caf\u{FFFD}");
    }
}
