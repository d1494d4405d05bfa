//! TTML 2 in the IMSC 1.1 Text profile: a byte-exact streaming writer and a namespace-aware reader.
//!
//! The writer emits the minimal document of formats.md §3: one style, one bottom region, one `div`,
//! one `p` per cue with `HH:MM:SS.mmm` media times and `<br/>` between lines. The reader accepts
//! what other tools write: any namespace prefixes, nested `div`s, spans, clock, frame, tick and
//! offset time expressions, times relative to the parent container, and the whitespace rules of
//! XML's default `xml:space`.

use std::borrow::Cow;
use std::io::Write;

use cuecraft_engine::{Cue, Millis};
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

use crate::{Format, ParseError, WriteError, WriteOptions};

/// Output is handed to the caller's writer in chunks of about this size.
const CHUNK: usize = 64 * 1024;

const HEAD_1: &[u8] = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<tt xmlns=\"http://www.w3.org/ns/ttml\"\n    \
xmlns:ttp=\"http://www.w3.org/ns/ttml#parameter\"\n    \
xmlns:tts=\"http://www.w3.org/ns/ttml#styling\"\n    \
xml:lang=\"";

const HEAD_2: &[u8] = b"\" ttp:timeBase=\"media\"\n    \
ttp:contentProfiles=\"http://www.w3.org/ns/ttml/profile/imsc1.1/text\">\n  \
<head>\n    \
<styling>\n      \
<style xml:id=\"s1\" tts:color=\"white\" tts:fontFamily=\"proportionalSansSerif\"\n             \
tts:fontSize=\"100%\" tts:lineHeight=\"125%\" tts:textAlign=\"center\"/>\n    \
</styling>\n    \
<layout>\n      \
<region xml:id=\"bottom\" tts:origin=\"10% ";

const HEAD_3: &[u8] = b"\" tts:displayAlign=\"after\"/>\n    \
</layout>\n  \
</head>\n  \
<body style=\"s1\" region=\"bottom\">\n    \
<div>\n";

const TAIL: &[u8] = b"    </div>\n  </body>\n</tt>\n";

/// Writes `cues` as an IMSC 1.1 Text document to `out`.
///
/// Cues are written in (start, end) order (stable), numbered `c1`, `c2`, … in that order; cues
/// without visible text are left out, and lines are split at embedded CR/LF with blank ones
/// dropped. Each time has `opts.offset` added and is clamped at zero; an end that would not
/// follow its start is moved to start + 1 ms. Whitespace inside a line is collapsed and trimmed,
/// as every TTML reader would do anyway, so that reading the file back gives the lines written.
pub fn write(cues: &[Cue], opts: &WriteOptions, out: &mut dyn Write) -> Result<(), WriteError> {
    let (cues, opts) = (crate::controls::cues(cues), crate::controls::options(opts));
    let (cues, opts): (&[Cue], &WriteOptions) = (&cues, &opts);
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + 4096);
    buf.extend_from_slice(HEAD_1);
    escape_into(&mut buf, opts.language.trim(), true);
    buf.extend_from_slice(HEAD_2);
    let order = crate::stl::start_order(cues, |c| span(c, opts.offset));
    write_region(&mut buf, &order);
    buf.extend_from_slice(HEAD_3);

    for (n, cue) in order.iter().enumerate() {
        let (start, end) = span(cue, opts.offset);
        buf.extend_from_slice(b"      <p xml:id=\"c");
        push_decimal(&mut buf, n as u64 + 1);
        buf.extend_from_slice(b"\" begin=\"");
        push_clock(&mut buf, start.0);
        buf.extend_from_slice(b"\" end=\"");
        push_clock(&mut buf, end.0);
        buf.extend_from_slice(b"\">");
        for (i, line) in crate::stl::visible_lines(cue).enumerate() {
            if i > 0 {
                buf.extend_from_slice(b"<br/>");
            }
            escape_into(&mut buf, line, false);
        }
        buf.extend_from_slice(b"</p>\n");
        if buf.len() >= CHUNK {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    buf.extend_from_slice(TAIL);
    out.write_all(&buf)?;
    Ok(())
}

/// A cue's begin and end as written: shifted by `offset`, clamped at zero, the end at least 1 ms
/// after the begin.
fn span(cue: &Cue, offset: Millis) -> (Millis, Millis) {
    let start = (cue.start + offset).max(Millis::ZERO);
    let end = (cue.end + offset).max(start + Millis(1));
    (start, end)
}

/// The region: 80% wide, bottom edge at 90% of the height, and tall enough for the longest cue
/// (1.25 × one cell of the default 15-row grid per line, rounded up to 5%), at least 20% (two
/// lines, the document of formats.md §3) and at most 80%. Its `displayAlign="after"` keeps the
/// text at the bottom, so a taller region only prevents clipping of three-line and longer cues.
fn write_region(buf: &mut Vec<u8>, cues: &[&Cue]) {
    let lines = cues
        .iter()
        .map(|c| crate::stl::visible_lines(c).count())
        .max()
        .unwrap_or(0)
        .max(2);
    // lines × 25/3 percent, rounded up to a multiple of 5.
    let height = (lines * 25)
        .div_ceil(3)
        .div_ceil(5)
        .saturating_mul(5)
        .min(80);
    push_decimal(buf, 90 - height as u64);
    buf.extend_from_slice(b"%\" tts:extent=\"80% ");
    push_decimal(buf, height as u64);
    buf.push(b'%');
}

/// Appends `n` in decimal.
fn push_decimal(buf: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// Appends `HH:MM:SS.mmm`; hours take two digits, or as many as they need past 99.
fn push_clock(buf: &mut Vec<u8>, ms: i64) {
    let ms = ms.max(0) as u64;
    let hours = ms / 3_600_000;
    let minutes = (ms / 60_000 % 60) as u8;
    let seconds = (ms / 1000 % 60) as u8;
    let millis = (ms % 1000) as u16;
    if hours < 100 {
        buf.extend_from_slice(&[b'0' + (hours / 10) as u8, b'0' + (hours % 10) as u8]);
    } else {
        push_decimal(buf, hours);
    }
    buf.extend_from_slice(&[
        b':',
        b'0' + minutes / 10,
        b'0' + minutes % 10,
        b':',
        b'0' + seconds / 10,
        b'0' + seconds % 10,
        b'.',
        b'0' + (millis / 100) as u8,
        b'0' + (millis / 10 % 10) as u8,
        b'0' + (millis % 10) as u8,
    ]);
}

/// Byte classes for [`escape_into`]: 0 copied as is, 1 needs a look.
const SPECIAL: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = 1;
        b += 1;
    }
    t[b'&' as usize] = 1;
    t[b'<' as usize] = 1;
    t[b'>' as usize] = 1;
    t[b'"' as usize] = 1;
    t[b' ' as usize] = 1;
    t[0xEF] = 1;
    t
};

/// Appends `text` escaped for XML: `&`, `<`, `>` (and `"` in attributes) as entities, runs of XML
/// whitespace as one space, trimmed at both ends; characters XML 1.0 forbids become `?`.
fn escape_into(buf: &mut Vec<u8>, text: &str, attribute: bool) {
    let bytes = crate::stl::trim_ascii_set(text, b" \t\n\r").as_bytes();
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if SPECIAL[usize::from(b)] == 0 {
            i += 1;
            continue;
        }
        let replacement: &[u8] = match b {
            b'&' => b"&amp;",
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'"' if attribute => b"&quot;",
            b'"' => {
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                let mut j = i + 1;
                while bytes
                    .get(j)
                    .is_some_and(|n| matches!(n, b' ' | b'\t' | b'\n' | b'\r'))
                {
                    j += 1;
                }
                if b == b' ' && j == i + 1 {
                    // A single space is copied with its run.
                    i += 1;
                    continue;
                }
                buf.extend_from_slice(&bytes[run..i]);
                buf.push(b' ');
                i = j;
                run = j;
                continue;
            }
            // U+FFFE and U+FFFF (EF BF BE/BF) are not XML characters; other EF.. are.
            0xEF => {
                if bytes.get(i + 1) == Some(&0xBF) && matches!(bytes.get(i + 2), Some(0xBE | 0xBF))
                {
                    buf.extend_from_slice(&bytes[run..i]);
                    buf.push(b'?');
                    i += 3;
                    run = i;
                } else {
                    i += 1;
                }
                continue;
            }
            _ => b"?",
        };
        buf.extend_from_slice(&bytes[run..i]);
        buf.extend_from_slice(replacement);
        i += 1;
        run = i;
    }
    buf.extend_from_slice(&bytes[run.min(bytes.len())..]);
}

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

const TT_NAMESPACES: [&[u8]; 3] = [
    b"http://www.w3.org/ns/ttml",
    b"http://www.w3.org/2006/10/ttaf1",
    b"http://www.w3.org/2006/04/ttaf1",
];

const PARAMETER_NAMESPACES: [&[u8]; 3] = [
    b"http://www.w3.org/ns/ttml#parameter",
    b"http://www.w3.org/2006/10/ttaf1#parameter",
    b"http://www.w3.org/2006/04/ttaf1#parameter",
];

/// What the time expressions of a document are measured in (from the `tt` element).
#[derive(Debug, Clone, Copy)]
struct TimeBase {
    /// Effective frame rate as a fraction: frames per `frame_den` seconds.
    frame_num: u64,
    frame_den: u64,
    sub_frame_rate: u64,
    tick_rate: u64,
}

impl Default for TimeBase {
    fn default() -> Self {
        // TTML's defaults: 30 fps, one sub-frame, and a tick rate of 1 without a frame rate.
        TimeBase {
            frame_num: 30,
            frame_den: 1,
            sub_frame_rate: 1,
            tick_rate: 1,
        }
    }
}

/// Rounds `num / den` half up; `None` on overflow or a zero denominator.
fn div_round(num: u128, den: u128) -> Option<u128> {
    if den == 0 {
        return None;
    }
    num.checked_add(den / 2).map(|n| n / den)
}

/// A non-negative decimal number as `mantissa / 10^scale_digits`.
fn parse_decimal(text: &str) -> Option<(u128, u128)> {
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, f),
        None => (text, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // More than 9 decimals cannot change a millisecond result.
    let frac = &frac[..frac.len().min(9)];
    let mut mantissa: u128 = 0;
    for b in int.bytes().chain(frac.bytes()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(u128::from(b - b'0'))?;
        if mantissa > 1_000_000_000_000_000_000_000_000 {
            return None;
        }
    }
    Some((mantissa, 10u128.pow(frac.len() as u32)))
}

/// Largest time we accept: about 31,700 years, far beyond any media, far below i64 overflow.
const MAX_MS: u128 = 1_000_000_000_000_000;

/// Parses a TTML time expression to milliseconds (rounded half up), or `None` if it is not one.
fn parse_time(text: &str, base: &TimeBase) -> Option<i64> {
    let text = text.trim();
    let ms = if text.contains(':') {
        parse_clock(text, base)?
    } else {
        let split = text.find(|c: char| c.is_ascii_alphabetic())?;
        let (number, metric) = text.split_at(split);
        let (mantissa, scale) = parse_decimal(number)?;
        // The metric's length in ms as a fraction.
        let (unit_num, unit_den): (u128, u128) = match metric {
            "h" => (3_600_000, 1),
            "m" => (60_000, 1),
            "s" => (1000, 1),
            "ms" => (1, 1),
            "f" => (
                1000 * u128::from(base.frame_den),
                u128::from(base.frame_num),
            ),
            "t" => (1000, u128::from(base.tick_rate)),
            _ => return None,
        };
        div_round(
            mantissa.checked_mul(unit_num)?,
            scale.checked_mul(unit_den)?,
        )?
    };
    if ms > MAX_MS {
        return None;
    }
    i64::try_from(ms).ok()
}

/// `HH:MM:SS`, `HH:MM:SS.fff` or `HH:MM:SS:FF(.sub)`.
fn parse_clock(text: &str, base: &TimeBase) -> Option<u128> {
    let mut parts = text.split(':');
    let hours = parts.next()?;
    let minutes = parts.next()?;
    let seconds = parts.next()?;
    let frames = parts.next();
    if parts.next().is_some() {
        return None;
    }
    let int = |s: &str| -> Option<u128> {
        if s.is_empty() || s.len() > 12 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let hours = int(hours)?;
    let minutes = int(minutes)?;
    if minutes > 59 {
        return None;
    }
    let whole_ms = |secs: u128| -> Option<u128> {
        hours
            .checked_mul(3_600_000)?
            .checked_add(minutes * 60_000)?
            .checked_add(secs.checked_mul(1000)?)
    };
    match frames {
        None => {
            let (mantissa, scale) = parse_decimal(seconds)?;
            if mantissa / scale > 60 {
                return None;
            }
            whole_ms(0)?.checked_add(div_round(mantissa * 1000, scale)?)
        }
        Some(frames) => {
            let secs = int(seconds)?;
            if secs > 60 {
                return None;
            }
            let (frames, sub) = match frames.split_once('.') {
                Some((f, s)) => (int(f)?, int(s)?),
                None => (int(frames)?, 0),
            };
            // (frames + sub / subFrameRate) frames of frame_den/frame_num seconds each.
            let sub_rate = u128::from(base.sub_frame_rate.max(1));
            let num = frames
                .checked_mul(sub_rate)?
                .checked_add(sub)?
                .checked_mul(1000 * u128::from(base.frame_den))?;
            let den = sub_rate.checked_mul(u128::from(base.frame_num))?;
            whole_ms(secs)?.checked_add(div_round(num, den)?)
        }
    }
}

/// What an open element is, for the reader's stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `tt`, `head`, `body`, `div` and anything whose content we do not read.
    Container,
    /// A `p` being collected.
    Paragraph,
    /// A `span` (or unknown element) inside a `p`: its text is part of the cue.
    Inline,
    /// An element whose text is not displayed (metadata, styling, foreign namespaces).
    Ignored,
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    kind: Kind,
    /// Absolute begin of this element's time container (ms).
    begin: i64,
    /// Absolute end, when one is known.
    end: Option<i64>,
    /// `xml:space="preserve"` in effect.
    preserve: bool,
}

/// A `p` being read.
struct Paragraph {
    begin: i64,
    end: Option<i64>,
    offset: usize,
    lines: Vec<String>,
    /// `xml:space="preserve"` on the `p` or above: lines are kept as written.
    preserve: bool,
}

fn err(offset: u64, message: impl Into<String>) -> ParseError {
    ParseError::new(
        Format::Ttml,
        usize::try_from(offset).unwrap_or(usize::MAX),
        message,
    )
}

/// The attributes the reader uses, resolved by namespace URI.
#[derive(Default)]
struct TimingAttrs {
    begin: Option<String>,
    end: Option<String>,
    dur: Option<String>,
    space: Option<String>,
}

/// Reads cues from a TTML document (UTF-8, with or without a BOM; UTF-16 with a BOM).
///
/// Cues come back in start order, numbered from 1, with the lines each `p` shows. Errors carry
/// the byte offset (in the UTF-8 text, after any transcoding) where the problem was found.
pub fn parse(input: &[u8]) -> Result<Vec<Cue>, ParseError> {
    let text: Cow<[u8]> = if input.starts_with(&[0xFF, 0xFE]) || input.starts_with(&[0xFE, 0xFF]) {
        let (decoded, _, _) = encoding_rs::UTF_16LE.decode(input);
        Cow::Owned(decoded.into_owned().into_bytes())
    } else if let Some(rest) = input.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        Cow::Borrowed(rest)
    } else {
        Cow::Borrowed(input)
    };
    let mut reader = NsReader::from_reader(text.as_ref());
    reader.config_mut().check_end_names = true;

    let mut base = TimeBase::default();
    let mut stack: Vec<Frame> = Vec::new();
    let mut seen_root = false;
    let mut paragraph: Option<Paragraph> = None;
    let mut cues: Vec<Cue> = Vec::new();

    loop {
        let before = reader.buffer_position();
        let (in_tt, event) = match reader.read_resolved_event() {
            Ok((ns, event)) => (
                matches!(ns, ResolveResult::Bound(n) if TT_NAMESPACES.contains(&n.0)),
                event,
            ),
            Err(e) => return Err(err(reader.error_position(), format!("malformed xml: {e}"))),
        };
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(event, Event::Empty(_));
                let local = e.local_name();
                let local = local.as_ref();
                let attrs = read_attrs(&reader, e, before)?;
                if !seen_root {
                    if !(in_tt && local == b"tt") {
                        return Err(err(
                            before,
                            "the root element is not a tt element in the ttml namespace",
                        ));
                    }
                    seen_root = true;
                    base = read_time_base(&reader, e, before)?;
                }
                let parent = stack.last().copied().unwrap_or(Frame {
                    kind: Kind::Container,
                    begin: 0,
                    end: None,
                    preserve: false,
                });
                let preserve = match attrs.space.as_deref() {
                    Some("preserve") => true,
                    Some("default") => false,
                    _ => parent.preserve,
                };
                let kind = match parent.kind {
                    Kind::Ignored => Kind::Ignored,
                    Kind::Paragraph | Kind::Inline => {
                        if in_tt && local == b"br" {
                            if let Some(p) = paragraph.as_mut() {
                                p.lines.push(String::new());
                            }
                            Kind::Ignored
                        } else if in_tt && local == b"span" {
                            Kind::Inline
                        } else {
                            Kind::Ignored
                        }
                    }
                    Kind::Container => {
                        if !in_tt || local == b"head" || local == b"metadata" {
                            Kind::Ignored
                        } else if local == b"p" {
                            Kind::Paragraph
                        } else {
                            Kind::Container
                        }
                    }
                };
                let mut frame = Frame {
                    kind,
                    begin: parent.begin,
                    end: parent.end,
                    preserve,
                };
                if matches!(kind, Kind::Container | Kind::Paragraph) {
                    let time =
                        |v: &Option<String>, what: &str| -> Result<Option<i64>, ParseError> {
                            match v {
                                None => Ok(None),
                                Some(s) => parse_time(s, &base).map(Some).ok_or_else(|| {
                                    err(before, format!("bad {what} time expression {s:?}"))
                                }),
                            }
                        };
                    let begin = time(&attrs.begin, "begin")?;
                    let end = time(&attrs.end, "end")?;
                    let dur = time(&attrs.dur, "dur")?;
                    frame.begin = parent.begin.saturating_add(begin.unwrap_or(0));
                    let mut own_end = end.map(|e| parent.begin.saturating_add(e));
                    if let Some(d) = dur {
                        let by_dur = frame.begin.saturating_add(d);
                        own_end = Some(own_end.map_or(by_dur, |e| e.min(by_dur)));
                    }
                    frame.end = match (own_end, parent.end) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                if kind == Kind::Paragraph {
                    paragraph = Some(Paragraph {
                        begin: frame.begin,
                        end: frame.end,
                        offset: before as usize,
                        lines: vec![String::new()],
                        preserve,
                    });
                    if empty {
                        finish_paragraph(&mut paragraph, &mut cues)?;
                    }
                }
                if !empty {
                    stack.push(frame);
                }
            }
            Event::End(_) => {
                if let Some(frame) = stack.pop() {
                    if frame.kind == Kind::Paragraph {
                        finish_paragraph(&mut paragraph, &mut cues)?;
                    }
                }
            }
            Event::Text(ref t) => {
                let Some(frame) = stack.last() else { continue };
                if !matches!(frame.kind, Kind::Paragraph | Kind::Inline) {
                    continue;
                }
                let text = t
                    .unescape()
                    .map_err(|e| err(before, format!("bad text or entity: {e}")))?;
                if let Some(p) = paragraph.as_mut() {
                    add_text(p, &text, frame.preserve);
                }
            }
            Event::CData(ref t) => {
                let Some(frame) = stack.last() else { continue };
                if !matches!(frame.kind, Kind::Paragraph | Kind::Inline) {
                    continue;
                }
                let text = std::str::from_utf8(t.as_ref())
                    .map_err(|_| err(before, "cdata section is not utf-8"))?;
                if let Some(p) = paragraph.as_mut() {
                    add_text(p, text, frame.preserve);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !seen_root {
        return Err(err(0, "no tt element: the document is empty"));
    }
    if !stack.is_empty() {
        return Err(err(
            reader.buffer_position(),
            "the document ends inside an element",
        ));
    }
    cues.sort_by_key(|c| c.start);
    for (i, cue) in cues.iter_mut().enumerate() {
        cue.index = u32::try_from(i + 1).unwrap_or(u32::MAX);
    }
    Ok(cues)
}

/// Appends text to the paragraph's current line; with `preserve`, a line feed starts a new line.
fn add_text(p: &mut Paragraph, text: &str, preserve: bool) {
    if preserve {
        let mut parts = text.split('\n');
        if let (Some(first), Some(line)) = (parts.next(), p.lines.last_mut()) {
            line.push_str(first.trim_end_matches('\r'));
        }
        for part in parts {
            p.lines.push(part.trim_end_matches('\r').to_string());
        }
    } else if let Some(line) = p.lines.last_mut() {
        line.push_str(text);
    }
}

/// Turns the collected paragraph into a cue: whitespace collapsed and trimmed per line.
fn finish_paragraph(
    paragraph: &mut Option<Paragraph>,
    cues: &mut Vec<Cue>,
) -> Result<(), ParseError> {
    let Some(p) = paragraph.take() else {
        return Ok(());
    };
    let mut lines: Vec<String> = if p.preserve {
        p.lines.clone()
    } else {
        p.lines.iter().map(|l| collapse(l)).collect()
    };
    if lines.len() == 1 && lines[0].is_empty() {
        lines.clear();
    }
    let Some(end) = p.end else {
        if lines.is_empty() {
            return Ok(());
        }
        return Err(err(
            p.offset as u64,
            "p element has no end time (no end or dur on it or its parents)",
        ));
    };
    // A paragraph clipped away by its parent's end is never shown.
    if end <= p.begin {
        return Ok(());
    }
    cues.push(Cue::from_lines(0, Millis(p.begin), Millis(end), lines));
    Ok(())
}

/// Collapses runs of XML whitespace into one space and trims both ends.
fn collapse(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for word in line
        .split([' ', '\t', '\n', '\r'])
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

fn read_attrs(
    reader: &NsReader<&[u8]>,
    e: &BytesStart,
    at: u64,
) -> Result<TimingAttrs, ParseError> {
    let mut out = TimingAttrs::default();
    for attr in e.attributes() {
        let attr = attr.map_err(|x| err(at, format!("bad attribute: {x}")))?;
        let key = attr.key;
        if key.as_ref() == b"xml:space" {
            out.space = Some(value(&attr, at)?);
            continue;
        }
        let (ns, local) = reader.resolve_attribute(key);
        // Timing attributes are unqualified; a prefixed `begin` from another vocabulary is not ours.
        if !matches!(ns, ResolveResult::Unbound) {
            continue;
        }
        match local.as_ref() {
            b"begin" => out.begin = Some(value(&attr, at)?),
            b"end" => out.end = Some(value(&attr, at)?),
            b"dur" => out.dur = Some(value(&attr, at)?),
            _ => {}
        }
    }
    Ok(out)
}

fn value(attr: &quick_xml::events::attributes::Attribute, at: u64) -> Result<String, ParseError> {
    attr.unescape_value()
        .map(|v| v.into_owned())
        .map_err(|x| err(at, format!("bad attribute value: {x}")))
}

/// Reads `ttp:frameRate`, `ttp:frameRateMultiplier`, `ttp:subFrameRate` and `ttp:tickRate`.
fn read_time_base(
    reader: &NsReader<&[u8]>,
    e: &BytesStart,
    at: u64,
) -> Result<TimeBase, ParseError> {
    let mut rate: Option<u64> = None;
    let mut multiplier = (1u64, 1u64);
    let mut sub = 1u64;
    let mut tick: Option<u64> = None;
    for attr in e.attributes() {
        let attr = attr.map_err(|x| err(at, format!("bad attribute: {x}")))?;
        let (ns, local) = reader.resolve_attribute(attr.key);
        if !matches!(ns, ResolveResult::Bound(n) if PARAMETER_NAMESPACES.contains(&n.0)) {
            continue;
        }
        let v = value(&attr, at)?;
        let positive = |s: &str| -> Result<u64, ParseError> {
            match s.trim().parse::<u64>() {
                Ok(n) if n > 0 && n <= 1_000_000_000 => Ok(n),
                _ => Err(err(at, format!("bad ttp parameter value {v:?}"))),
            }
        };
        match local.as_ref() {
            b"frameRate" => rate = Some(positive(&v)?),
            b"frameRateMultiplier" => {
                let mut it = v.split_whitespace();
                match (it.next(), it.next(), it.next()) {
                    (Some(n), Some(d), None) => multiplier = (positive(n)?, positive(d)?),
                    _ => return Err(err(at, format!("bad ttp:frameRateMultiplier {v:?}"))),
                }
            }
            b"subFrameRate" => sub = positive(&v)?,
            b"tickRate" => tick = Some(positive(&v)?),
            _ => {}
        }
    }
    let frame_num = rate.unwrap_or(30).saturating_mul(multiplier.0);
    let frame_den = multiplier.1;
    let tick_rate = match (tick, rate) {
        (Some(t), _) => t,
        // TTML: without a tick rate, ticks are sub-frames when a frame rate is given, else seconds.
        (None, Some(_)) => frame_num.saturating_mul(sub).div_ceil(frame_den),
        (None, None) => 1,
    };
    Ok(TimeBase {
        frame_num,
        frame_den,
        sub_frame_rate: sub,
        tick_rate: tick_rate.max(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Option<i64> {
        parse_time(s, &TimeBase::default())
    }

    #[test]
    fn clock_times_round_to_the_millisecond() {
        assert_eq!(t("00:00:01.000"), Some(1000));
        assert_eq!(t("01:02:03.4567"), Some(3_723_457));
        assert_eq!(t("123:00:00"), Some(442_800_000));
        assert_eq!(t("00:00:02,500"), None);
        assert_eq!(t("00:61:00"), None);
    }

    #[test]
    fn offset_times_take_every_metric() {
        assert_eq!(t("12.5s"), Some(12_500));
        assert_eq!(t("500ms"), Some(500));
        assert_eq!(t("2m"), Some(120_000));
        assert_eq!(t("1h"), Some(3_600_000));
        assert_eq!(t("25f"), Some(833));
        assert_eq!(t("3t"), Some(3000));
        assert_eq!(t("5x"), None);
        assert_eq!(t("s"), None);
        assert_eq!(t("99999999999999999999999999999h"), None);
    }

    #[test]
    fn frames_use_the_rate_and_multiplier() {
        let ntsc = TimeBase {
            frame_num: 30_000,
            frame_den: 1001,
            sub_frame_rate: 1,
            tick_rate: 10_000_000,
        };
        assert_eq!(parse_time("00:00:01:15", &ntsc), Some(1501));
        assert_eq!(parse_time("30f", &ntsc), Some(1001));
        assert_eq!(parse_time("10000000t", &ntsc), Some(1000));
    }

    #[test]
    fn clock_keeps_two_hour_digits_and_grows_past_99() {
        let mut b = Vec::new();
        push_clock(&mut b, 0);
        b.push(b' ');
        push_clock(&mut b, 360_000_000 + 1);
        assert_eq!(b, b"00:00:00.000 100:00:00.001");
    }

    #[test]
    fn escaping_covers_markup_and_whitespace() {
        let mut b = Vec::new();
        escape_into(&mut b, "  a  &\t<b> \"x\"\u{1}\u{FFFF} ", false);
        assert_eq!(String::from_utf8(b).unwrap(), "a &amp; &lt;b&gt; \"x\"??");
        let mut b = Vec::new();
        escape_into(&mut b, "a\"b", true);
        assert_eq!(b, b"a&quot;b");
    }

    #[test]
    fn region_grows_with_the_longest_cue() {
        let cue = |n: usize| Cue::from_lines(1, Millis(0), Millis(1), vec!["x".into(); n]);
        let region = |cues: &[Cue]| {
            let mut b = Vec::new();
            write_region(&mut b, &cues.iter().collect::<Vec<_>>());
            String::from_utf8(b).unwrap()
        };
        assert_eq!(region(&[]), "70%\" tts:extent=\"80% 20%");
        assert_eq!(region(&[cue(2)]), "70%\" tts:extent=\"80% 20%");
        assert_eq!(region(&[cue(3)]), "65%\" tts:extent=\"80% 25%");
        assert_eq!(region(&[cue(5)]), "45%\" tts:extent=\"80% 45%");
        assert_eq!(region(&[cue(50)]), "10%\" tts:extent=\"80% 80%");
    }
}
