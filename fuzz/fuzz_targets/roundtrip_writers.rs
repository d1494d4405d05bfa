//! Fuzz target `roundtrip_writers`: arbitrary cues (times anywhere, including negative and past 100
//! hours, an arbitrary offset, text mixing markup characters, escapes, line breaks, blanks and
//! non-Latin scripts) are written in each of the five formats and read back.
//!
//! For every format: writing never fails, the reader accepts the output, and writing what was read
//! gives the same bytes (for EBU-STL when every time is under 255 hours, the timecode's range). For SRT, WebVTT and ASS the cues read back must also equal what the format
//! can represent: the visible lines (split at line breaks, trimmed, blank ones dropped) and the times
//! (offset, clamped at zero, rounded half up to the unit, end at least one unit after start). For
//! TTML the count and the millisecond times must match.
#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use cuecraft_engine::{Cue, Millis};
use cuecraft_formats::{parse, to_vec, Format, WriteOptions};
use libfuzzer_sys::fuzz_target;

/// Characters that matter to one format or another, plus some plain text.
const ALPHABET: &[char] = &[
    'a', 'b', 'Z', '1', '0', ' ', ' ', '\t', '\n', '\r', '<', '>', '&', ';', '#', '{', '}', '\\',
    'N', 'n', 'h', '-', ':', ',', '.', 'é', 'ß', '中', 'ع', '👍', '\u{200B}', '\u{A0}', '\u{FEFF}',
    '—', 'W', 'E', 'B', 'V', 'T', 'i', '/', '"', '\'', 'x', 'l', 't', 'g', 'm', 'p',
];

#[derive(Debug)]
struct Input {
    cues: Vec<Cue>,
    offset: Millis,
}

fn text(u: &mut Unstructured) -> Result<String> {
    let len = u.int_in_range(0..=24)?;
    let mut s = String::new();
    for _ in 0..len {
        if u.ratio(1, 12)? {
            s.push(u.arbitrary::<char>()?);
        } else if u.ratio(1, 10)? {
            s.push_str(u.choose(&[
                "-->",
                "&amp;",
                "&lt;",
                "\\N",
                "{\\i1}",
                "\r\n",
                "00:00:01,000",
            ])?);
        } else {
            s.push(*u.choose(ALPHABET)?);
        }
    }
    Ok(s)
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let n = u.int_in_range(0..=12)?;
        let mut cues = Vec::with_capacity(n);
        for i in 0..n {
            let start = if u.ratio(1, 8)? {
                i64::from(u.arbitrary::<i32>()?) * 1000 + i64::from(u.arbitrary::<u16>()?)
            } else {
                i64::from(u.arbitrary::<u32>()?)
            };
            let end = start + i64::from(u.arbitrary::<i16>()?);
            let n_lines = u.int_in_range(0..=4)?;
            let mut lines = Vec::with_capacity(n_lines);
            for _ in 0..n_lines {
                lines.push(text(u)?);
            }
            cues.push(Cue::from_lines(
                i as u32 + 1,
                Millis(start),
                Millis(end),
                lines,
            ));
        }
        let offset = Millis(i64::from(u.arbitrary::<i32>()?));
        Ok(Input { cues, offset })
    }
}

/// What a reader must report for `cues` written with `offset` in a format of unit `unit_ms`.
/// WebVTT readers turn NUL into U+FFFD (`nul_to_fffd`).
fn expected(
    cues: &[Cue],
    offset: Millis,
    unit_ms: i64,
    nul_to_fffd: bool,
) -> Vec<(i64, i64, Vec<String>)> {
    let mut v: Vec<(i64, i64, Vec<String>)> = cues
        .iter()
        .filter_map(|c| {
            let lines: Vec<String> = c
                .lines
                .iter()
                .flat_map(|l| l.split(['\r', '\n']))
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(|l| {
                    if nul_to_fffd {
                        l.replace('\0', "\u{FFFD}")
                    } else {
                        l.to_string()
                    }
                })
                .collect();
            if lines.is_empty() {
                return None;
            }
            let round = |t: Millis| {
                let t = t.0.saturating_add(offset.0).max(0);
                (t + unit_ms / 2) / unit_ms * unit_ms
            };
            let start = round(c.start);
            let end = round(c.end).max(start + unit_ms);
            Some((start, end, lines))
        })
        .collect();
    // Writers order cues by the times the file holds (stably), not by the exact times.
    v.sort_by_key(|(s, e, _)| (*s, *e));
    v
}

/// SRT has no escaping: a text line that is a timing line, or a number followed by one, starts a
/// new cue. Such inputs cannot be represented and are not compared (they still must round-trip).
fn srt_representable(cues: &[Cue]) -> bool {
    cues.iter()
        .flat_map(|c| c.lines.iter())
        .flat_map(|l| l.split(['\r', '\n']))
        .all(|l| {
            let t = l.trim();
            !l.contains("-->") && (t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// Every time of every cue is under 255 hours (EBU-STL's one-byte timecode hours).
fn stl_representable(cues: &[Cue]) -> bool {
    const LIMIT: i64 = 255 * 3_600_000;
    cues.iter().all(|c| c.start.0 < LIMIT && c.end.0 < LIMIT)
}

fuzz_target!(|input: Input| {
    let opts = WriteOptions {
        offset: input.offset,
        ..WriteOptions::default()
    };
    let rewrite = WriteOptions {
        offset: Millis::ZERO,
        ..WriteOptions::default()
    };
    for format in Format::ALL {
        let first = to_vec(format, &input.cues, &opts).expect("writing to memory cannot fail");
        let read = parse(format, &first)
            .unwrap_or_else(|e| panic!("{format:?}: own output unreadable: {e}"));
        let again = to_vec(format, &read, &rewrite).expect("writing to memory cannot fail");
        // EBU-STL timecode hours are one byte: cues from 256 h on cannot be represented.
        if format == Format::EbuStl && !stl_representable(&input.cues) {
            continue;
        }
        assert!(
            first == again,
            "{format:?}: write -> read -> write changed the bytes:\n{}\n---\n{}",
            String::from_utf8_lossy(&first),
            String::from_utf8_lossy(&again)
        );
        let got: Vec<(i64, i64, Vec<String>)> = read
            .iter()
            .map(|c| (c.start.0, c.end.0, c.lines.clone()))
            .collect();
        match format {
            Format::Srt if !srt_representable(&input.cues) => {}
            Format::Srt => assert_eq!(got, expected(&input.cues, input.offset, 1, false), "SRT"),
            Format::WebVtt => {
                assert_eq!(got, expected(&input.cues, input.offset, 1, true), "WebVTT")
            }
            Format::Ass => {
                assert_eq!(got, expected(&input.cues, input.offset, 10, false), "ASS")
            }
            // TTML's notion of blank text (XML whitespace) differs from the text formats', so only
            // the times' validity is checked here; its own tests pin the rest.
            Format::Ttml => assert!(got.iter().all(|(s, e, _)| *s >= 0 && e > s), "TTML times"),
            Format::EbuStl => {}
        }
    }
});
