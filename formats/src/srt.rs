//! SubRip (`.srt`): the byte-exact writer (CRLF, `HH:MM:SS,mmm`, sequential counters) and a lenient
//! reader for the files people actually have (BOM, any line ending, Windows-1252, `.` separators,
//! 1-digit or 3-digit hours, missing counters, missing final blank line).
//!
//! SRT has no escaping: text is written and read verbatim, so `<i>` or `{\an8}` in a cue are
//! markup to most players. The writer only guarantees that no text line is blank (a blank line
//! would end the block) and that times are valid.

use std::io::{Read, Write};

use cuecraft_engine::{Cue, Millis};
use nom::bytes::complete::tag;
use nom::sequence::preceded;
use nom::Parser;

use crate::common::{
    check_limits, decode, is_blank, line_at, push_timing, push_u64, shorten, spaces,
    times_in_units, timestamp, write_blocks, BlockLines, BlockWriter, Fallback, Limits, TextBlocks,
    Unbroken,
};
use crate::{ConvertError, Format, ParseError, Streamed, WriteError, WriteOptions};

/// Writes `cues` as SRT: cues sorted by time, numbered from 1, cues without visible text skipped.
pub fn write(cues: &[Cue], opts: &WriteOptions, out: &mut dyn Write) -> Result<(), WriteError> {
    write_blocks(SrtBlocks::default(), cues, opts, out)
}

/// SRT blocks: a counter, the timing line, the text lines, a blank line; CRLF throughout.
#[derive(Default)]
pub(crate) struct SrtBlocks {
    /// Blocks written so far.
    counter: u64,
}

impl TextBlocks for SrtBlocks {
    const UNIT_MS: u64 = 1;

    fn header(&mut self, _: &mut Vec<u8>, _: &WriteOptions) {}

    #[inline]
    fn block<L: BlockLines + ?Sized>(
        &mut self,
        b: &mut Vec<u8>,
        span: (u64, u64),
        timing: Option<&[u8; 29]>,
        lines: &L,
    ) -> usize {
        push_u64(b, self.counter + 1);
        b.extend_from_slice(b"\r\n");
        push_timing(b, span, timing, b',');
        b.extend_from_slice(b"\r\n");
        let shown = lines.for_each_visible(|line| {
            if looks_like_timing(line) {
                // It would start a new cue; an invisible U+200B in front keeps it text.
                b.extend_from_slice("\u{200B}".as_bytes());
            }
            b.extend_from_slice(line.as_bytes());
            b.extend_from_slice(b"\r\n");
        });
        if shown > 0 {
            b.extend_from_slice(b"\r\n");
            self.counter += 1;
        }
        shown
    }
}

/// Whether a text line would be read as a timing line: it starts with a digit and has `-->`.
#[inline]
fn looks_like_timing(line: &str) -> bool {
    line.as_bytes().first().is_some_and(u8::is_ascii_digit) && line.contains("-->")
}

/// Reads SRT cues (see [`parse_with_limits`]), without limits.
pub fn parse(input: &[u8]) -> Result<Vec<Cue>, ParseError> {
    parse_with_limits(input, &Limits::UNLIMITED)
}

/// Reads SRT cues, stopping with an error when `limits` are exceeded.
///
/// Accepted beyond the strict form: a UTF-8 or UTF-16 BOM; CRLF, LF and CR line endings, mixed;
/// bytes that are not UTF-8 are read as Windows-1252; `.` instead of `,`; hours of any number of
/// digits (or none: `MM:SS,mmm`); fractions of 1 to 9 digits read as decimals (`,5` = 500 ms);
/// coordinates after the end time (ignored); missing counters; missing blank lines before a
/// counter + timing pair; a missing final blank line. Text after a blank line that does not start a
/// new cue belongs to the previous cue (as ffmpeg reads it). Counters in the file are ignored: cues
/// are numbered from 1 in file order. An end before its start is raised to the start. Lines are
/// kept verbatim (SRT has no escaping).
pub fn parse_with_limits(input: &[u8], limits: &Limits) -> Result<Vec<Cue>, ParseError> {
    let decoded = decode(input, Fallback::Windows1252);
    let mut blocks = Blocks::new(&decoded.text, decoded.bom_len, limits);
    let mut cues: Vec<Cue> = Vec::new();
    while let Some(block) = blocks.next_block()? {
        cues.push(Cue::from_lines(
            u32::try_from(cues.len() + 1).unwrap_or(u32::MAX),
            Millis(block.start),
            Millis(block.end),
            block.lines.iter().map(|l| l.to_string()).collect(),
        ));
    }
    Ok(cues)
}

/// Writes SRT `input` in the text format `f` as it reads it (see [`crate::convert_streaming`]).
pub(crate) fn stream<F: TextBlocks>(
    mut f: F,
    input: &[u8],
    opts: &WriteOptions,
    out: &mut dyn Write,
) -> Result<Streamed, ConvertError> {
    let decoded = decode(input, Fallback::Windows1252);
    let mut w = Streaming::new(&mut f, opts, out);
    if !w.feed(&decoded.text, decoded.bom_len)? {
        return Ok(Streamed::OutOfOrder);
    }
    w.finish()
}

/// Bytes [`stream_read`] reads at a time: small enough to stay in the cache and to reuse the same
/// memory pages, large enough that system calls cost nothing.
pub(crate) const CHUNK: usize = 64 * 1024;

/// Writes SRT read from `input`, `chunk` bytes at a time, in the text format `f` (see
/// [`crate::convert_streaming_read`]). Each chunk ends where a cue starts after an empty line, so
/// that reading the chunks one by one gives exactly the cues of the whole text: the cue before is
/// complete there, and the line that starts the next one is read with the line after it. A cue
/// longer than a chunk makes the chunk grow. Text that is not UTF-8 is decoded as a whole
/// (Windows-1252), which chunks cannot do: [`Streamed::NotUtf8`].
pub(crate) fn stream_read<F: TextBlocks>(
    mut f: F,
    input: &mut dyn Read,
    chunk: usize,
    opts: &WriteOptions,
    out: &mut dyn Write,
) -> Result<Streamed, ConvertError> {
    // At least a byte-order mark's worth before the first look.
    let chunk = chunk.max(4);
    let mut w = Streaming::new(&mut f, opts, out);
    // Zeroed once and reused: `buf[..filled]` holds input not yet converted. It grows only for a
    // cue longer than a chunk.
    let mut buf = vec![0u8; chunk];
    let mut filled = 0;
    // Input offset of `buf[0]`, bytes wanted in `buf` before looking for a cut, end of input.
    let (mut base, mut want, mut eof) = (0usize, chunk, false);
    let mut first = true;
    loop {
        if buf.len() < want {
            buf.resize(want, 0);
        }
        // One `read` per chunk from a file (`Read::read_to_end` would probe with small reads).
        while filled < want && !eof {
            match input.read(&mut buf[filled..want]) {
                Ok(0) => eof = true,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ConvertError::Input(e)),
            }
        }
        if std::mem::take(&mut first) {
            match encoding_rs::Encoding::for_bom(&buf[..filled]) {
                Some((enc, n)) if enc == encoding_rs::UTF_8 => {
                    buf.copy_within(n..filled, 0);
                    filled -= n;
                    base = n;
                }
                Some(_) => return Ok(Streamed::NotUtf8),
                None => {}
            }
        }
        let cut = if eof {
            filled
        } else {
            match safe_cut(&buf[..filled]) {
                Some(cut) => cut,
                None => {
                    want = filled.max(want) * 2;
                    continue;
                }
            }
        };
        let Ok(text) = simdutf8::basic::from_utf8(&buf[..cut]) else {
            return Ok(Streamed::NotUtf8);
        };
        match w.feed(text, base) {
            Ok(true) => {}
            Ok(false) => return Ok(Streamed::OutOfOrder),
            Err(e) => {
                // The error is the cue list's only if the whole input is UTF-8: otherwise the
                // whole text is decoded as Windows-1252, which can move offsets and change the
                // text an error message quotes.
                let mut rest = buf[cut..filled].to_vec();
                input.read_to_end(&mut rest).map_err(ConvertError::Input)?;
                if simdutf8::basic::from_utf8(&rest).is_err() {
                    return Ok(Streamed::NotUtf8);
                }
                return Err(e);
            }
        }
        if eof {
            return w.finish();
        }
        buf.copy_within(cut..filled, 0);
        filled -= cut;
        base += cut;
        want = chunk;
    }
}

/// The last position in `buf` where a cue starts right after an empty line, with that line (and
/// the line after it, when it is a counter) complete in `buf`: where a chunk can end.
fn safe_cut(buf: &[u8]) -> Option<usize> {
    let eol = |b: u8| b == b'\n' || b == b'\r';
    let mut end = buf.len();
    while let Some(i) = memchr::memrchr2(b'\n', b'\r', &buf[..end]) {
        end = i;
        let p = i + 1;
        // `p` starts a line (a CR followed by LF does not end its line terminator), and the line
        // before it is empty: another terminator ends where this one (`q`) begins.
        if p >= buf.len() || (buf[i] == b'\r' && buf[p] == b'\n') {
            continue;
        }
        let q = if buf[i] == b'\n' && i > 0 && buf[i - 1] == b'\r' {
            i - 1
        } else {
            i
        };
        if q == 0 || !eol(buf[q - 1]) {
            continue;
        }
        // The line at `p` and the one after it, each only if complete.
        let Some(e1) = memchr::memchr2(b'\n', b'\r', &buf[p..]) else {
            continue;
        };
        let second = p + e1 + 1;
        let window_end = match buf
            .get(second..)
            .and_then(|r| memchr::memchr2(b'\n', b'\r', r))
        {
            Some(e2) => second + e2 + 1,
            None => second,
        };
        let Ok(window) = simdutf8::basic::from_utf8(&buf[p..window_end]) else {
            continue;
        };
        if let Some(at) = line_at(window, 0) {
            if matches!(block_start(window, at), Some(Ok(_))) {
                return Some(p);
            }
        }
    }
    None
}

/// The cues of one conversion, written as they come while they stay in order.
struct Streaming<'a, F: TextBlocks> {
    w: BlockWriter<'a, F>,
    offset: Millis,
    /// The written times of the last cue.
    last: (u64, u64),
}

impl<'a, F: TextBlocks> Streaming<'a, F> {
    fn new(f: &'a mut F, opts: &WriteOptions, out: &'a mut dyn Write) -> Self {
        Streaming {
            w: BlockWriter::new(f, opts, out),
            offset: opts.offset,
            last: (0, 0),
        }
    }

    /// Writes the cues of `text` (which starts `base` bytes into the input); `false` when a cue
    /// comes before the one written last (the cue list would be sorted before writing).
    fn feed(&mut self, text: &str, base: usize) -> Result<bool, ConvertError> {
        let mut blocks = Blocks::new(text, base, &Limits::UNLIMITED);
        while let Some(b) = blocks.next_block().map_err(ConvertError::Read)? {
            let span = times_in_units(Millis(b.start), Millis(b.end), self.offset, F::UNIT_MS);
            if span < self.last {
                return Ok(false);
            }
            self.last = span;
            // The timing line as read is the one the writer would write when it writes the times
            // the line holds: milliseconds, no offset, and not a zero-length cue (which is written
            // one unit long).
            let holds = (b.start as u64, b.end as u64);
            let timing = b.timing.filter(|_| F::UNIT_MS == 1 && span == holds);
            self.w
                .push(span, timing, &Unbroken(&b.lines))
                .map_err(ConvertError::Write)?;
        }
        Ok(true)
    }

    fn finish(self) -> Result<Streamed, ConvertError> {
        self.w.finish().map_err(ConvertError::Write)?;
        Ok(Streamed::Written)
    }
}

/// One cue as an SRT file holds it, its text borrowed from the file.
#[derive(Debug, Default)]
pub(crate) struct Block<'a> {
    /// Start and end in milliseconds, `end >= start`.
    pub start: i64,
    pub end: i64,
    /// The timing line as read, when it is exactly what the SRT writer writes for `start` and
    /// `end` (`HH:MM:SS,mmm --> HH:MM:SS,mmm` with minutes and seconds below 60, the end not before
    /// the start): a converter that writes these times can copy it instead of formatting them.
    pub timing: Option<&'a [u8; 29]>,
    /// The text lines, verbatim; never empty in a block [`Blocks::next_block`] returns.
    pub lines: Vec<&'a str>,
}

/// The cues of SRT text, read one at a time in file order without copying any text: what
/// [`parse_with_limits`] collects, and what a converter can write as it reads (see
/// [`crate::convert_streaming`]). A block is complete only when the next one starts, because text
/// after a blank line that does not start a cue still belongs to the cue before it.
pub(crate) struct Blocks<'a, 'l> {
    text: &'a str,
    /// Where the next line starts.
    pos: usize,
    /// Bytes before `text` in the input (the BOM), added to error offsets.
    base: usize,
    limits: &'l Limits,
    /// Blocks started so far, including empty ones, and text bytes read: the totals `limits` caps.
    started: usize,
    text_bytes: usize,
    /// The block being read, once one has started.
    open: Option<Block<'a>>,
    /// The block last returned; its line buffer is reused.
    done: Block<'a>,
}

impl<'a, 'l> Blocks<'a, 'l> {
    /// The blocks of `text`, which started `base` bytes into the input.
    pub fn new(text: &'a str, base: usize, limits: &'l Limits) -> Self {
        Blocks {
            text,
            pos: 0,
            base,
            limits,
            started: 0,
            text_bytes: 0,
            open: None,
            done: Block::default(),
        }
    }

    fn err(&self, offset: usize, message: impl Into<String>) -> ParseError {
        ParseError::new(Format::Srt, self.base + offset, message)
    }

    fn check_limits(&self, offset: usize) -> Result<(), ParseError> {
        check_limits(self.started, self.text_bytes, self.limits).map_err(|m| self.err(offset, m))
    }

    /// The next cue with at least one text line; `None` at the end of the text.
    pub fn next_block(&mut self) -> Result<Option<&Block<'a>>, ParseError> {
        let text = self.text;
        loop {
            let (offset, (start, end), timing) = if let Some((len, times, timing)) =
                canonical_head(&text.as_bytes()[self.pos..])
            {
                let at = self.pos;
                self.pos += len;
                (at, times, (times.1 >= times.0).then_some(timing))
            } else {
                let Some((offset, line, next)) = line_at(text, self.pos) else {
                    // The end: the open block is complete.
                    match self.open.take() {
                        Some(b) if !b.lines.is_empty() => {
                            self.done = b;
                            return Ok(Some(&self.done));
                        }
                        _ => return Ok(None),
                    }
                };
                if is_blank(line) {
                    self.pos = next;
                    continue;
                }
                match block_start(text, (offset, line, next)) {
                    Some(Ok((after, times))) => {
                        self.pos = after;
                        (offset, times, None)
                    }
                    Some(Err((at, message))) => return Err(self.err(at, message)),
                    None => {
                        // Text after a blank line inside a cue: ffmpeg keeps it with the cue.
                        let Some(open) = &mut self.open else {
                            return Err(self.err(
                                offset,
                                "expected a cue number or a timing line (`00:00:01,000 --> 00:00:02,000`)",
                            ));
                        };
                        open.lines.push(line);
                        self.text_bytes += line.len();
                        self.check_limits(offset)?;
                        self.pos = next;
                        continue;
                    }
                }
            };
            // A new cue: the open one is complete. Its line buffer is reused for the new one.
            let finished = self.open.take();
            let mut lines = std::mem::take(&mut self.done.lines);
            lines.clear();
            loop {
                // The empty line that usually ends a cue, taken without searching for its end.
                let rest = &text.as_bytes()[self.pos..];
                if let [b'\r' | b'\n', ..] = rest {
                    self.pos += if rest.starts_with(b"\r\n") { 2 } else { 1 };
                    break;
                }
                let Some(at) = line_at(text, self.pos) else {
                    break;
                };
                let (_, l, next) = at;
                if is_blank(l) {
                    // Blank lines between cues are skipped anyway: this one need not be read again.
                    self.pos = next;
                    break;
                }
                // A new cue without the blank line before it.
                if matches!(block_start(text, at), Some(Ok(_))) {
                    break;
                }
                self.text_bytes += l.len();
                lines.push(l);
                self.pos = next;
            }
            self.started += 1;
            self.open = Some(Block {
                start,
                end: end.max(start),
                timing,
                lines,
            });
            self.check_limits(offset)?;
            match finished {
                Some(b) if !b.lines.is_empty() => {
                    self.done = b;
                    return Ok(Some(&self.done));
                }
                Some(b) => self.done = b,
                None => {}
            }
        }
    }
}

/// The head of a cue in the form every writer uses, read without the general rules: a counter of
/// digits, then a timing line of exactly `HH:MM:SS,mmm --> HH:MM:SS,mmm`, each ended by CRLF, LF or
/// CR (the timing line may end the text). Returns the bytes it spans, the times and the timing
/// line; `None` sends the text through [`block_start`], which decides the same for these lines.
#[inline]
fn canonical_head(b: &[u8]) -> Option<(usize, (i64, i64), &[u8; 29])> {
    let eol = |b: &[u8]| match b {
        [b'\r', b'\n', ..] => Some(2),
        [b'\r' | b'\n', ..] => Some(1),
        _ => None,
    };
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let t = digits + eol(&b[digits..])?;
    let timing: &[u8; 29] = b.get(t..t + 29)?.try_into().ok()?;
    let times = canonical_timing(timing)?;
    let rest = &b[t + 29..];
    let end = if rest.is_empty() { 0 } else { eol(rest)? };
    Some((t + 29 + end, times, timing))
}

/// `HH:MM:SS,mmm` (12 bytes) in milliseconds, minutes and seconds below 60. This runs twice per
/// cue, so the time is read as two integers (`HH:MM:SS` and `,mmm`) whose bytes are checked all at
/// once: with the separators' places set to `0`, every byte must be `0x30..=0x39` (high nibble 3,
/// and still 3 once 6 is added), the tens of minutes and seconds `0x30..=0x35` (still 3 once 10 is
/// added). Bytes of multi-byte characters (0x80 and above) have another high nibble.
#[inline(always)]
fn canonical_time(t: &[u8]) -> Option<i64> {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    // Byte i of a little-endian word is bits 8i..8i+8. `HH:MM:SS`: the colons are bytes 2 and 5,
    // the tens of minutes and of seconds bytes 3 and 6.
    const COLONS: u64 = 0x0000_3A00_003A_0000;
    const COLON_BYTES: u64 = 0x0000_FF00_00FF_0000;
    const ADD: u64 = 0x060A_0606_0A06_0606;
    let t: &[u8; 12] = t.try_into().ok()?;
    let (hms, frac) = t.split_at(8);
    let hms = u64::from_le_bytes(hms.try_into().ok()?);
    let frac = u32::from_le_bytes(frac.try_into().ok()?);
    if (hms & COLON_BYTES != COLONS) | (frac & 0xFF != u32::from(b',')) {
        return None;
    }
    let hms = (hms & !COLON_BYTES) | (ZEROS & COLON_BYTES);
    let frac = (frac & !0xFF) | 0x30;
    let digits = (hms & HIGH == ZEROS) & (hms.wrapping_add(ADD) & HIGH == ZEROS);
    let digits = digits
        & (frac & 0xF0F0_F0F0 == 0x3030_3030)
        & (frac.wrapping_add(0x0606_0606) & 0xF0F0_F0F0 == 0x3030_3030);
    if !digits {
        return None;
    }
    // Each byte a digit value; then byte i of `pairs` is 10 * digit i + digit i+1, which is the
    // hours at byte 0, the minutes at byte 3 and the seconds at byte 6 (no byte exceeds 99).
    let d = hms - ZEROS;
    let pairs = d * 10 + (d >> 8);
    let (h, m, s) = (pairs & 0xFF, (pairs >> 24) & 0xFF, (pairs >> 48) & 0xFF);
    let f = frac - 0x3030_3030;
    let ms = ((f >> 8) & 0xFF) * 100 + ((f >> 16) & 0xFF) * 10 + (f >> 24);
    Some(((h * 60 + m) * 60 + s) as i64 * 1000 + i64::from(ms))
}

type BlockStart = Result<(usize, (i64, i64)), (usize, String)>;

/// Whether a cue starts at `line` (its offset, text and where the next line starts, as [`line_at`]
/// gives them): a timing line, or a counter followed by a timing line. Returns where the first text
/// line starts and the times; an error when the line is clearly meant as a timing line but is
/// malformed; `None` when it is text.
#[inline]
fn block_start(text: &str, (offset, line, next): (usize, &str, usize)) -> Option<BlockStart> {
    // Both a timing line and a counter start with a digit once leading whitespace is trimmed: a
    // line that starts with any other ASCII character is text (most lines of a file).
    // (The ASCII characters `str::trim` removes are TAB, LF, VT, FF, CR and space.)
    match line.as_bytes().first() {
        Some(&b) if b.is_ascii() && !b.is_ascii_digit() && !matches!(b, b'\t'..=b'\r' | b' ') => {
            return None
        }
        _ => {}
    }
    let counter = |l: &str| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit());
    // A bare counter cannot be a timing line (it has no `-->`): go straight to the next line.
    let bare_counter = counter(line);
    if !bare_counter {
        if let Some(t) = timing_line(line) {
            return Some(t.map(|t| (next, t)).map_err(|m| (offset, m)));
        }
    }
    if bare_counter || counter(line.trim()) {
        if let Some((next_offset, second, after)) = line_at(text, next) {
            if let Some(t) = timing_line(second) {
                return Some(t.map(|t| (after, t)).map_err(|m| (next_offset, m)));
            }
        }
    }
    None
}

/// Parses a timing line. `None` when the line does not look like one (no `-->` after a digit), an
/// error message when it does but is malformed.
fn timing_line(line: &str) -> Option<Result<(i64, i64), String>> {
    if let Some(times) = canonical_timing(line.as_bytes()) {
        return Some(Ok(times));
    }
    let t = line.trim_start();
    if !t.starts_with(|c: char| c.is_ascii_digit()) || !t.contains("-->") {
        return None;
    }
    let parsed = (timestamp, preceded((spaces, tag("-->"), spaces), timestamp)).parse(t);
    Some(match parsed {
        Ok((_rest, (Ok(a), Ok(b)))) => Ok((a, b)),
        Ok((_, (Err(m), _))) | Ok((_, (_, Err(m)))) => Err(m),
        Err(_) => Err(format!("malformed timing line `{}`", shorten(line))),
    })
}

/// The fast path for the form every writer uses, `HH:MM:SS,mmm --> HH:MM:SS,mmm` (29 bytes, then
/// the end of the line or a space); anything else goes through the general parser.
#[inline]
fn canonical_timing(b: &[u8]) -> Option<(i64, i64)> {
    if b.len() < 29 || (b.len() > 29 && b[29] != b' ') || &b[12..17] != b" --> " {
        return None;
    }
    Some((canonical_time(&b[..12])?, canonical_time(&b[17..29])?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_timing_path_agrees_with_the_general_one() {
        for line in [
            "00:00:01,000 --> 00:00:02,500",
            "12:34:56,789 --> 23:59:59,999 X1:1",
            "00:61:00,000 --> 00:00:02,500",
            "00:00:01.000 --> 00:00:02,500",
        ] {
            let general = (timestamp, preceded((spaces, tag("-->"), spaces), timestamp))
                .parse(line)
                .ok()
                .and_then(|(_, (a, b))| Some((a.ok()?, b.ok()?)));
            let fast = canonical_timing(line.as_bytes());
            assert!(fast.is_none() || fast == general, "{line}");
        }
        assert_eq!(
            canonical_timing(b"12:34:56,789 --> 23:59:59,999"),
            Some((45_296_789, 86_399_999))
        );
        // Every 12-byte time over an alphabet of edge digits and separators: where the fast path
        // reads a time, the general parser reads the same.
        let alphabet = b"0569:,./";
        let mut t = *b"00:00:00,000";
        let mut read = 0;
        for n in 0..200_000u32 {
            let mut k = n;
            for b in t.iter_mut() {
                *b = alphabet[(k % alphabet.len() as u32) as usize];
                k = k.wrapping_mul(2_654_435_761).rotate_left(7) ^ n;
            }
            if n % 3 == 0 {
                (t[2], t[5], t[8]) = (b':', b':', b',');
            }
            let line = [&t[..], b" --> 00:00:00,000"].concat();
            if let Some(fast) = canonical_timing(&line) {
                let s = std::str::from_utf8(&t).unwrap();
                assert_eq!(
                    timestamp(s).ok().and_then(|(_, r)| r.ok()),
                    Some(fast.0),
                    "{s}"
                );
                read += 1;
            }
        }
        assert!(read >= 10, "only {read} times were read");
    }

    #[test]
    fn the_block_start_shortcuts_decide_as_the_full_rules() {
        // The rules without shortcuts: a timing line, else a counter (trimmed) before one.
        fn reference(text: &str, (offset, line, next): (usize, &str, usize)) -> Option<BlockStart> {
            if let Some(t) = timing_line(line) {
                return Some(t.map(|t| (next, t)).map_err(|m| (offset, m)));
            }
            let trimmed = line.trim();
            if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) {
                let (next_offset, second, after) = line_at(text, next)?;
                let t = timing_line(second)?;
                return Some(t.map(|t| (after, t)).map_err(|m| (next_offset, m)));
            }
            None
        }
        let firsts = [
            "12",
            " 12",
            "\u{0B}12",
            "\u{A0}12",
            "12a",
            "x",
            "-->",
            "\u{0B}00:00:01,000 --> 00:00:02,000",
            "\u{A0}00:00:01,000 --> 00:00:02,000",
            "\u{2003}1 --> 2",
            "\t00:00:01,000 --> 00:00:02,000",
            "00:00:01,000 --> 00:00:02,000",
            "1 --> x",
            "00:61:00,000 --> 00:00:01,000",
            "é",
        ];
        for first in firsts {
            for second in [
                "00:00:03,000 --> 00:00:04,000",
                " 0:0:5 --> 0:0:6",
                "text",
                "9:99 --> 1",
            ] {
                let text = format!("{first}\n{second}\n");
                let at = line_at(&text, 0).unwrap();
                assert_eq!(block_start(&text, at), reference(&text, at), "{text:?}");
            }
        }
    }

    #[test]
    fn the_canonical_head_reads_as_block_start_does() {
        let mut fast = 0;
        for counter in ["1", "007", "123456789012", "", "1a"] {
            for eol1 in ["\n", "\r\n", "\r", ""] {
                for timing in [
                    "00:00:01,000 --> 00:00:02,500",
                    "99:59:59,999 --> 00:00:00,000",
                    "00:61:00,000 --> 00:00:02,500",
                    "00:00:01,000 --> 00:00:02,500 X1:1",
                    "00:00:01.000 --> 00:00:02,500",
                    "00:00:01,000 --> 00:00:02,50",
                ] {
                    for eol2 in ["\n", "\r\n", "\r", ""] {
                        let text = format!("{counter}{eol1}{timing}{eol2}text\n");
                        let text = if eol2.is_empty() {
                            text[..text.len() - 5].to_string()
                        } else {
                            text
                        };
                        let Some((len, times, line)) = canonical_head(text.as_bytes()) else {
                            continue;
                        };
                        fast += 1;
                        let at = line_at(&text, 0).unwrap();
                        assert_eq!(block_start(&text, at), Some(Ok((len, times))), "{text:?}");
                        assert_eq!(&line[..], timing.as_bytes());
                    }
                }
            }
        }
        assert!(
            fast >= 3 * 3 * 2 * 4,
            "the fast path was taken {fast} times"
        );
    }

    #[test]
    fn a_timing_line_kept_for_copying_is_what_the_writer_would_write() {
        // Copied only when canonical with the end not before the start: the SRT writer then
        // formats exactly these bytes for the block's times.
        let text = "1\n00:00:01,000 --> 00:00:02,500\na\n\n\
                    2\n00:00:05,000 --> 00:00:04,000\nends before it starts\n\n\
                    3\n0:00:06,000 --> 00:00:07,000\none-digit hours\n\n\
                    4\r\n99:59:59,999 --> 99:59:59,999\r\nlast\r\n";
        let mut blocks = Blocks::new(text, 0, &Limits::UNLIMITED);
        let mut kept = Vec::new();
        while let Some(b) = blocks.next_block().unwrap() {
            if let Some(line) = b.timing {
                let mut formatted = Vec::new();
                let span = (b.start as u64, b.end as u64);
                crate::common::push_timing(&mut formatted, span, None, b',');
                assert_eq!(&line[..], &formatted[..]);
            }
            kept.push(b.timing.is_some());
        }
        assert_eq!(kept, [true, false, false, true]);
    }

    fn times(cues: &[Cue]) -> Vec<(i64, i64)> {
        cues.iter().map(|c| (c.start.0, c.end.0)).collect()
    }

    #[test]
    fn writes_crlf_blocks_with_sequential_counters() {
        let cues = vec![
            Cue::from_lines(
                7,
                Millis(1_000),
                Millis(2_500),
                vec!["a".into(), "b".into()],
            ),
            Cue::from_lines(9, Millis(3_000), Millis(4_000), vec!["c".into()]),
        ];
        let mut out = Vec::new();
        write(&cues, &WriteOptions::default(), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "1\r\n00:00:01,000 --> 00:00:02,500\r\na\r\nb\r\n\r\n2\r\n00:00:03,000 --> 00:00:04,000\r\nc\r\n\r\n"
        );
    }

    #[test]
    fn a_text_line_that_looks_like_timing_stays_text() {
        let cues = vec![Cue::from_lines(
            1,
            Millis(0),
            Millis(1_000),
            vec!["00:00:01,000 --> 00:00:02,000".into(), "x --> y".into()],
        )];
        let mut out = Vec::new();
        write(&cues, &WriteOptions::default(), &mut out).unwrap();
        let back = parse(&out).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(
            back[0].lines,
            vec!["\u{200B}00:00:01,000 --> 00:00:02,000", "x --> y"]
        );
        let mut again = Vec::new();
        write(&back, &WriteOptions::default(), &mut again).unwrap();
        assert_eq!(out, again);
    }

    #[test]
    fn reads_lenient_variants() {
        let input = b"1\n0:00:01.5 --> 0:00:02,000 X1:10 X2:20 Y1:1 Y2:2\r\nfirst\r\n\r\n\
            00:00:03,000-->100:00:04,000\rcaf\xE9\r\r3\n00:00:05,000 --> 00:00:06,000\nlast";
        let cues = parse(input).unwrap();
        assert_eq!(
            times(&cues),
            vec![(1_500, 2_000), (3_000, 360_004_000), (5_000, 6_000)]
        );
        assert_eq!(cues[1].lines, vec!["café"]);
        assert_eq!(cues[2].lines, vec!["last"]);
        assert_eq!(cues[2].index, 3);
        let bom =
            parse("\u{FEFF}1\r\n00:00:01,000 --> 00:00:02,000\r\ncafé\r\n".as_bytes()).unwrap();
        assert_eq!(bom[0].lines, vec!["café"]);
    }

    #[test]
    fn text_after_a_blank_line_stays_with_its_cue() {
        let cues = parse(
            b"1\n00:00:01,000 --> 00:00:02,000\na\n\nb\n\n2\n00:00:03,000 --> 00:00:04,000\nc\n",
        )
        .unwrap();
        assert_eq!(cues.len(), 2);
        assert_eq!(cues[0].lines, vec!["a", "b"]);
    }

    #[test]
    fn missing_blank_line_between_cues_is_tolerated() {
        let cues =
            parse(b"1\n00:00:01,000 --> 00:00:02,000\na\n2\n00:00:03,000 --> 00:00:04,000\nc\n")
                .unwrap();
        assert_eq!(times(&cues), vec![(1_000, 2_000), (3_000, 4_000)]);
    }

    #[test]
    fn errors_say_where_and_why() {
        let e = parse(b"hello\n").unwrap_err();
        assert_eq!((e.format, e.offset), (Format::Srt, 0));
        let e =
            parse(b"1\n00:00:01,000 --> 00:00:02,000\na\n\n2\n00:61:00,000 --> 00:62:00,000\nb\n")
                .unwrap_err();
        assert_eq!(e.offset, 37);
        assert!(e.message.contains("minutes 61"), "{}", e.message);
    }

    #[test]
    fn limits_stop_runaway_input() {
        let input = b"00:00:01,000 --> 00:00:02,000\na\n\n00:00:03,000 --> 00:00:04,000\nb\n";
        let limits = Limits {
            max_cues: 1,
            max_text_bytes: 100,
        };
        assert!(parse_with_limits(input, &limits).is_err());
    }
}
