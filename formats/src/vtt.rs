//! WebVTT (`.vtt`): the byte-exact writer (LF, `WEBVTT` header, `HH:MM:SS.mmm`, `&` `<` `>`
//! escaped as entities so text containing `-->` is written `--&gt;`) and a reader that follows the
//! W3C parser where it matters (header, blocks, identifiers, settings, tags, entities) and is
//! lenient where real files differ (BOM, any line ending, 1-digit hours, comma separators).

use std::io::Write;

use cuecraft_engine::{Cue, Millis};
use nom::bytes::complete::tag;
use nom::sequence::preceded;
use nom::Parser;

use crate::common::{
    check_limits, decode, is_blank, push_timing, shorten, spaces, timestamp, write_blocks,
    BlockLines, Fallback, Limits, Lines, TextBlocks,
};
use crate::scan::any_of4;
use crate::{Format, ParseError, WriteError, WriteOptions};

/// Writes `cues` as WebVTT: `WEBVTT`, a blank line, then one block per cue (no identifiers, no
/// settings), sorted by time; cues without visible text are skipped.
pub fn write(cues: &[Cue], opts: &WriteOptions, out: &mut dyn Write) -> Result<(), WriteError> {
    write_blocks(VttBlocks, cues, opts, out)
}

/// WebVTT blocks: the timing line, the escaped text lines, a blank line; LF throughout.
pub(crate) struct VttBlocks;

impl TextBlocks for VttBlocks {
    const UNIT_MS: u64 = 1;

    fn header(&mut self, b: &mut Vec<u8>, _: &WriteOptions) {
        b.extend_from_slice(b"WEBVTT\n\n");
    }

    #[inline]
    fn block<L: BlockLines + ?Sized>(
        &mut self,
        b: &mut Vec<u8>,
        span: (u64, u64),
        timing: Option<&[u8; 29]>,
        lines: &L,
    ) -> usize {
        push_timing(b, span, timing, b'.');
        b.push(b'\n');
        let shown = lines.for_each_visible(|line| {
            push_escaped(b, line);
            b.push(b'\n');
        });
        b.push(b'\n');
        shown
    }
}

/// Appends `line` with `&`, `<` and `>` as entities and NUL as U+FFFD.
#[inline]
fn push_escaped(b: &mut Vec<u8>, line: &str) {
    let bytes = line.as_bytes();
    if !any_of4(bytes, b'&', b'<', b'>', 0) {
        b.extend_from_slice(bytes);
        return;
    }
    let mut from = 0;
    for (i, &c) in bytes.iter().enumerate() {
        let rep: &[u8] = match c {
            b'&' => b"&amp;",
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            // WebVTT parsers turn NUL into U+FFFD; write what they will read.
            0 => "\u{FFFD}".as_bytes(),
            _ => continue,
        };
        b.extend_from_slice(&bytes[from..i]);
        b.extend_from_slice(rep);
        from = i + 1;
    }
    b.extend_from_slice(&bytes[from..]);
}

/// Reads WebVTT cues (see [`parse_with_limits`]), without limits.
pub fn parse(input: &[u8]) -> Result<Vec<Cue>, ParseError> {
    parse_with_limits(input, &Limits::UNLIMITED)
}

/// Reads WebVTT cues, stopping with an error when `limits` are exceeded.
///
/// The file must start (after an optional BOM) with `WEBVTT` followed by the end of the line, a
/// space or a tab. `NOTE`, `STYLE`, `REGION` and other blocks without `-->` are skipped; cue
/// identifiers and settings are accepted and ignored. Cue text has its tags removed (`<i>`,
/// `<v Name>`, `<c.x>`, `<00:00:01.000>`) and its character references decoded (`&amp;` `&lt;`
/// `&gt;` `&nbsp;` `&lrm;` `&rlm;` `&quot;` `&apos;` and numeric ones; others are kept as written).
/// Lenient beyond the spec: a timing line in the header block starts a cue; hours may have one
/// digit; `,` is accepted for `.`; a fraction of 1-9 digits is read as a decimal. Bytes that are not
/// UTF-8 become U+FFFD, as the spec says. A malformed timing line is an error (browsers drop the cue
/// silently; a converter should not).
pub fn parse_with_limits(input: &[u8], limits: &Limits) -> Result<Vec<Cue>, ParseError> {
    let decoded = decode(input, Fallback::LossyUtf8);
    let base = decoded.bom_len;
    let err =
        |offset: usize, message: String| ParseError::new(Format::WebVtt, base + offset, message);
    let text: std::borrow::Cow<'_, str> = if decoded.text.contains('\0') {
        decoded.text.replace('\0', "\u{FFFD}").into()
    } else {
        decoded.text
    };
    let lines: Vec<(usize, &str)> = Lines::new(&text).collect();
    match lines.first() {
        Some((_, first))
            if first.starts_with("WEBVTT")
                && matches!(first.as_bytes().get(6), None | Some(b' ') | Some(b'\t')) => {}
        _ => return Err(err(0, "missing `WEBVTT` header".to_string())),
    }
    let mut i = 1;
    // The rest of the header block.
    while i < lines.len() && !is_blank(lines[i].1) && !lines[i].1.contains("-->") {
        i += 1;
    }
    let mut cues = Vec::new();
    let mut text_bytes = 0usize;
    while i < lines.len() {
        let (offset, line) = lines[i];
        if is_blank(line) {
            i += 1;
            continue;
        }
        let timing_at = if line.contains("-->") {
            i
        } else if lines
            .get(i + 1)
            .is_some_and(|(_, l)| !is_blank(l) && l.contains("-->"))
        {
            i + 1 // `line` is the cue identifier
        } else {
            // NOTE, STYLE, REGION or an unknown block: skipped up to the next blank line.
            while i < lines.len() && !is_blank(lines[i].1) {
                i += 1;
            }
            continue;
        };
        let (t_offset, t_line) = lines[timing_at];
        let (start, end) = timing(t_line).map_err(|m| err(t_offset, m))?;
        i = timing_at + 1;
        let mut payload = Vec::new();
        while i < lines.len() && !is_blank(lines[i].1) && !lines[i].1.contains("-->") {
            let l = cue_text(lines[i].1);
            if !is_blank(&l) {
                text_bytes += l.len();
                payload.push(l);
            }
            i += 1;
        }
        if payload.is_empty() {
            continue;
        }
        cues.push(Cue::from_lines(
            u32::try_from(cues.len() + 1).unwrap_or(u32::MAX),
            Millis(start),
            Millis(end.max(start)),
            payload,
        ));
        check_limits(cues.len(), text_bytes, limits).map_err(|m| err(offset, m.to_string()))?;
    }
    Ok(cues)
}

/// `start --> end [settings]`.
fn timing(line: &str) -> Result<(i64, i64), String> {
    let t = line.trim_start_matches([' ', '\t']);
    let parsed = (timestamp, preceded((spaces, tag("-->"), spaces), timestamp)).parse(t);
    match parsed {
        Ok((rest, (Ok(a), Ok(b)))) => {
            if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
                return Err(format!("malformed end time in `{}`", shorten(line)));
            }
            Ok((a, b))
        }
        Ok((_, (Err(m), _))) | Ok((_, (_, Err(m)))) => Err(m),
        Err(_) => Err(format!("malformed timing line `{}`", shorten(line))),
    }
}

/// One payload line as displayed text: tags removed, character references decoded.
fn cue_text(line: &str) -> String {
    if !line.contains(['<', '&']) {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(pos) = rest.find(['<', '&']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if tail.starts_with('<') {
            match tail.find('>') {
                Some(end) => rest = &tail[end + 1..],
                None => {
                    rest = "";
                }
            }
        } else {
            match decode_entity(tail) {
                Some((ch, used)) => {
                    out.push(ch);
                    rest = &tail[used..];
                }
                None => {
                    out.push('&');
                    rest = &tail[1..];
                }
            }
        }
    }
    out.push_str(rest);
    out
}

/// The character a reference at the start of `s` (`&...;`) stands for, and its length.
fn decode_entity(s: &str) -> Option<(char, usize)> {
    let end = s.get(1..)?.find(';')? + 1;
    if end > 12 {
        return None;
    }
    let name = &s[1..end];
    let ch = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "nbsp" => '\u{A0}',
        "lrm" => '\u{200E}',
        "rlm" => '\u{200F}',
        "quot" => '"',
        "apos" => '\'',
        _ => {
            let num = name.strip_prefix('#')?;
            let code = match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => num.parse::<u32>().ok()?,
            };
            char::from_u32(code).filter(|&c| c != '\0')?
        }
    };
    Some((ch, end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_header_blocks_and_escapes() {
        let cues = vec![Cue::from_lines(
            1,
            Millis(1_000),
            Millis(2_500),
            vec!["a --> b & <c>".into(), "d".into()],
        )];
        let mut out = Vec::new();
        write(&cues, &WriteOptions::default(), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "WEBVTT\n\n00:00:01.000 --> 00:00:02.500\na --&gt; b &amp; &lt;c&gt;\nd\n\n"
        );
        let nul = vec![Cue::from_lines(
            1,
            Millis(0),
            Millis(1),
            vec!["a\0b".into()],
        )];
        let mut out = Vec::new();
        write(&nul, &WriteOptions::default(), &mut out).unwrap();
        // Like every control character, NUL is left out of what the writers write.
        assert!(String::from_utf8(out).unwrap().contains("\nab\n"));
    }

    #[test]
    fn reads_blocks_identifiers_settings_tags_and_entities() {
        let input = "\u{FEFF}WEBVTT - a title\r\nKind: captions\r\n\r\nSTYLE\n::cue { color: yellow }\n\n\
            NOTE a comment\nstill comment\n\nREGION\nid:r1\n\nintro\n0:00:01.000 --> 00:00:02.000 align:start line:90%\n\
            <v Anna><i>Hi</i> &amp; bye&nbsp;&#x41;&unknown;</v>\n--&gt; &lt;b&gt;\n\n00:03.000 --> 00:04.000\ntwo";
        let cues = parse(input.as_bytes()).unwrap();
        assert_eq!(cues.len(), 2);
        assert_eq!((cues[0].start.0, cues[0].end.0), (1_000, 2_000));
        assert_eq!(cues[0].lines, vec!["Hi & bye\u{A0}A&unknown;", "--> <b>"]);
        assert_eq!(
            (cues[1].start.0, cues[1].end.0, cues[1].index),
            (3_000, 4_000, 2)
        );
    }

    #[test]
    fn rejects_a_missing_header_and_bad_times() {
        assert_eq!(parse(b"WEBVTTX\n\n").unwrap_err().offset, 0);
        assert!(parse(b"").is_err());
        let e = parse(b"WEBVTT\n\n00:00:01.000 --> 00:00:0x.000\na\n").unwrap_err();
        assert_eq!(e.offset, 8);
        assert!(parse(b"WEBVTT").unwrap().is_empty());
    }
}
