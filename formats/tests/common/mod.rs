//! Shared test fixtures for every format: named cue lists that exercise what real subtitles contain
//! (scripts, markup-like characters, long times, rounding edges), plus helpers to find the external
//! validators (ffmpeg, pysubs2, ttconv) and to compute what a reader should report for a fixture.
//!
//! Used by the SRT/WebVTT/ASS tests and the TTML/EBU-STL tests alike: `mod common;` in a test file.
#![allow(dead_code)]

use std::path::PathBuf;

use cuecraft_engine::{Cue, Millis};
use cuecraft_formats::{parse, to_vec, Format, WriteOptions};

/// One named cue list with the options it is written with.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// Snapshot-friendly name (`[a-z0-9_]`).
    pub name: &'static str,
    /// The cues as a caller hands them to a writer (not necessarily tidy: see `untidy_lines`).
    pub cues: Vec<Cue>,
    /// The options of the first write. The round trip rewrites with [`Fixture::rewrite_opts`].
    pub opts: WriteOptions,
}

/// A cue as any reader should report it once the writer has applied offset, clamping, rounding to
/// its unit and line clean-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// Start, milliseconds (a multiple of the unit).
    pub start: i64,
    /// End, milliseconds (a multiple of the unit), at least one unit after `start`.
    pub end: i64,
    /// Non-empty display lines.
    pub lines: Vec<String>,
}

impl Expected {
    /// What a reader reported, in the same shape, to compare with a fixture's expectation.
    pub fn from_cues(cues: &[Cue]) -> Vec<Expected> {
        cues.iter()
            .map(|c| Expected {
                start: c.start.0,
                end: c.end.0,
                lines: c.lines.clone(),
            })
            .collect()
    }
}

impl Fixture {
    /// Options for writing the cues read back from this fixture's output: the offset has already been
    /// applied once, so it must not be applied again; everything else is unchanged.
    pub fn rewrite_opts(&self) -> WriteOptions {
        WriteOptions {
            offset: Millis::ZERO,
            ..self.opts.clone()
        }
    }

    /// What a reader of the written file must report, for a format whose time unit is `unit_ms`
    /// (1 for SRT/WebVTT/TTML, 10 for ASS): cues with no visible text dropped, lines split at
    /// embedded line breaks, trimmed, blank lines removed, times shifted by the offset, clamped at zero,
    /// rounded half up to the unit, end at least one unit after start, sorted by (start, end).
    pub fn expected(&self, unit_ms: i64) -> Vec<Expected> {
        let round = |t: Millis| {
            let t = t.0.saturating_add(self.opts.offset.0).max(0);
            (t.saturating_add(unit_ms / 2) / unit_ms).saturating_mul(unit_ms)
        };
        let mut keyed: Vec<(Millis, Millis, Expected)> = self
            .cues
            .iter()
            .filter_map(|c| {
                let lines = visible_lines(&c.lines);
                if lines.is_empty() {
                    return None;
                }
                let start = round(c.start);
                let end = round(c.end).max(start + unit_ms);
                Some((c.start, c.end, Expected { start, end, lines }))
            })
            .collect();
        // Writers sort on the cue's own (start, end), stably.
        keyed.sort_by_key(|(s, e, _)| (*s, *e));
        keyed.into_iter().map(|(_, _, x)| x).collect()
    }
}

/// The display lines a writer emits for `lines`: control characters other than CR and LF gone
/// (tab, vertical tab, form feed and NEL become spaces), split at CR/LF, trimmed, blank lines
/// dropped.
pub fn visible_lines(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| without_controls(l))
        .collect::<Vec<_>>()
        .iter()
        .flat_map(|l| l.split(['\r', '\n']))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// `s` as the writers write a header field or a line of text: C0 and C1 control characters other
/// than CR and LF removed, the spacing ones (tab, VT, FF, NEL) as a space.
pub fn without_controls(s: &str) -> String {
    s.chars()
        .filter_map(|c| match c {
            '\t' | '\u{b}' | '\u{c}' | '\u{85}' => Some(' '),
            '\r' | '\n' => Some(c),
            c if ('\u{0}'..='\u{1f}').contains(&c) || ('\u{7f}'..='\u{9f}').contains(&c) => None,
            c => Some(c),
        })
        .collect()
}

fn cue(index: u32, start: i64, end: i64, lines: &[&str]) -> Cue {
    Cue::from_lines(
        index,
        Millis(start),
        Millis(end),
        lines.iter().map(|s| s.to_string()).collect(),
    )
}

fn opts(language: &str, title: &str) -> WriteOptions {
    WriteOptions {
        language: language.to_string(),
        title: title.to_string(),
        ..WriteOptions::default()
    }
}

const H: i64 = 3_600_000;

/// Every fixture, in a fixed order.
pub fn fixtures() -> Vec<Fixture> {
    vec![
        Fixture {
            name: "empty",
            cues: vec![],
            opts: opts("en", "Empty"),
        },
        Fixture {
            name: "multi_line",
            cues: vec![
                cue(1, 1_000, 3_500, &["One line only."]),
                cue(
                    2,
                    4_000,
                    7_250,
                    &["The first of two lines,", "and the second one."],
                ),
                cue(3, 7_500, 11_000, &["Three lines", "are rare", "but legal."]),
            ],
            opts: opts("en", "Multi-line cues"),
        },
        Fixture {
            name: "two_speakers",
            cues: vec![
                Cue {
                    speaker: 1,
                    ..cue(1, 12_000, 14_400, &["—Are you coming?", "—Yes."])
                },
                Cue {
                    speaker: 2,
                    ..cue(2, 14_480, 16_000, &["—Where to? —Home."])
                },
            ],
            opts: opts("en", "Two speakers"),
        },
        Fixture {
            name: "iso6937_diacritics",
            cues: vec![
                cue(
                    1,
                    0,
                    2_000,
                    &["grave ÀÈÌÒÙ àèìòù", "acute ÁĆÉÍĹŃÓŔŚÚÝŹ áćéíĺńóŕśúýź ģ"],
                ),
                cue(
                    2,
                    2_000,
                    4_000,
                    &["circumflex ÂĈÊĜĤÎĴÔŜÛŴŶ âĉêĝĥîĵôŝûŵŷ", "tilde ÃĨÑÕŨ ãĩñõũ"],
                ),
                cue(3, 4_000, 6_000, &["macron ĀĒĪŌŪ āēīōū", "breve ĂĞŬ ăğŭ"]),
                cue(4, 6_000, 8_000, &["dot ĊĖĠŻİ ċėġż", "umlaut ÄËÏÖÜŸ äëïöüÿ"]),
                cue(
                    5,
                    8_000,
                    10_000,
                    &["ring ÅŮ åů", "cedilla ÇĢĶĻŅŖŞŢ çķļņŗşţ"],
                ),
                cue(
                    6,
                    10_000,
                    12_000,
                    &["double acute ŐŰ őű", "ogonek ĄĘĮŲ ąęįų"],
                ),
                cue(7, 12_000, 14_000, &["caron ČĎĚĽŇŘŠŤŽ čďěľňřšťž"]),
                cue(
                    8,
                    14_000,
                    16_000,
                    &["Æ Ø Œ æ ø œ ß Ł ł Đ đ Ħ ħ Þ þ", "¡¿ £ § ° ± ½ ¼ ¾ « » ♪"],
                ),
            ],
            opts: opts("fr", "Diacritiques français et européens"),
        },
        Fixture {
            name: "cjk",
            cues: vec![
                cue(1, 500, 2_500, &["你好，世界。", "今日は良い天気ですね。"]),
                cue(2, 3_000, 5_000, &["안녕하세요, 여러분!"]),
            ],
            opts: opts("ja", "日本語のタイトル"),
        },
        Fixture {
            name: "rtl",
            cues: vec![
                cue(1, 1_000, 3_000, &["مرحبا بالعالم.", "كيف حالك؟"]),
                cue(2, 3_500, 5_500, &["שלום עולם!", "מה שלומך?"]),
            ],
            opts: opts("ar", "عنوان"),
        },
        Fixture {
            name: "emoji",
            cues: vec![
                cue(1, 1_000, 2_000, &["Family: 👨‍👩‍👧‍👦 and flag 🇫🇷"]),
                cue(2, 2_000, 3_000, &["Thumbs 👍🏽 ok ✔️"]),
            ],
            opts: opts("en", "Emoji 🎬"),
        },
        Fixture {
            name: "markup_chars",
            cues: vec![
                cue(1, 1_000, 2_000, &["if a < b && c > d", "Tom & Jerry"]),
                cue(2, 2_000, 3_000, &["x --> y", "<i>not italic</i>"]),
                cue(
                    3,
                    3_000,
                    4_000,
                    &["{braces} and {\\i1}tags{\\i0}", "a } b { c"],
                ),
                cue(
                    4,
                    4_000,
                    5_000,
                    &["C:\\path\\to\\file", "literal \\N and \\h and \\"],
                ),
                cue(5, 5_000, 6_000, &["&amp; is not an ampersand; &lt;b&gt;"]),
            ],
            opts: opts("en", "Markup-like <characters> & {braces}"),
        },
        Fixture {
            name: "past_100_hours",
            cues: vec![
                // Rounds up across the ASS 10-hour boundary.
                cue(1, 10 * H - 5, 10 * H + 1_000, &["Ten hours."]),
                cue(
                    2,
                    99 * H + 59 * 60_000 + 59_000,
                    100 * H + 500,
                    &["Across one hundred hours."],
                ),
                cue(
                    3,
                    101 * H + 2 * 60_000 + 3_456,
                    101 * H + 2 * 60_000 + 5_000,
                    &["Past 101 hours."],
                ),
                cue(
                    4,
                    1_234 * H,
                    1_234 * H + 2_000,
                    &["One thousand two hundred thirty-four hours."],
                ),
            ],
            opts: opts("en", "Very long"),
        },
        Fixture {
            name: "rounding_edges",
            cues: vec![
                // 0.0005 s → 1 ms (half up); ASS: 0 cs start, 1 cs end.
                cue(1, ms(0.0005), 5, &["Half a millisecond."]),
                // 0.9995 s; ASS: 995 → 1.00, 1005 → 1.01.
                cue(2, ms(0.9995), 1_005, &["Just under a second."]),
                // ASS: 1005 → 1.01, 2995 → 3.00.
                cue(3, 1_005, 2_995, &["Half-up centiseconds."]),
                // 59.995 s → 1:00.00 in ASS; 59.9999 s → 60 000 ms; ASS end clamps to start + 1 cs.
                cue(4, 59_995, ms(59.9999), &["A minute."]),
                // A 4 ms cue: ASS rounds both ends to the same centisecond; end is pushed one unit.
                cue(5, 61_000, 61_004, &["Four milliseconds."]),
                // End before start from a sloppy caller: written as start + one unit.
                cue(6, 62_000, 61_000, &["Backwards."]),
            ],
            opts: opts("en", "Rounding"),
        },
        Fixture {
            name: "negative_offset",
            cues: vec![
                cue(1, 2_000, 4_000, &["Entirely before zero."]),
                cue(2, 2_000, 7_000, &["Starts before zero."]),
                cue(3, 8_000, 9_500, &["Shifted by five seconds."]),
            ],
            opts: WriteOptions {
                offset: Millis(-5_000),
                ..opts("en", "Negative offset")
            },
        },
        Fixture {
            name: "positive_offset",
            cues: vec![cue(1, 0, 1_500, &["Shifted by one hour."])],
            opts: WriteOptions {
                offset: Millis(H),
                ..opts("en", "Positive offset")
            },
        },
        Fixture {
            name: "untidy_lines",
            cues: vec![
                // Out of order on purpose: writers sort.
                cue(1, 5_000, 6_000, &["Second by time."]),
                cue(
                    2,
                    1_000,
                    2_000,
                    &["First by time,", "", "   ", "blank lines dropped."],
                ),
                cue(3, 3_000, 4_000, &["Embedded\nnewline and\r\nCRLF\rand CR."]),
                cue(4, 4_000, 4_500, &["", " "]),
                cue(5, 7_000, 8_000, &[]),
                cue(
                    6,
                    9_000,
                    10_000,
                    &["  leading and trailing spaces trimmed \t"],
                ),
            ],
            opts: opts("en", "Untidy\r\ntitle"),
        },
        Fixture {
            // A job may be named with control characters, and text may hold them: every writer
            // leaves them out of header fields and text (a NUL in ASS's Title makes libass drop
            // the whole track; XML forbids them; in EBU-STL they are teletext codes).
            name: "control_characters",
            cues: vec![
                cue(1, 500, 1_500, &["before\u{0}after"]),
                cue(2, 2_000, 3_000, &["tab\there", "bell\u{7}rings"]),
                cue(
                    3,
                    3_500,
                    4_500,
                    &["c1\u{85}next\u{9b}csi", "del\u{7f}ete\u{1b}"],
                ),
                // Nothing visible once the controls are gone: no cue.
                cue(4, 5_000, 6_000, &["\u{0}\u{1}", "\u{8}"]),
                cue(
                    5,
                    6_500,
                    7_500,
                    &["end\u{0}\u{1}\u{2}\u{3}\u{4}\u{5}\u{6}\u{e}\u{f}\u{10}\u{1f}."],
                ),
            ],
            opts: opts("en\u{0}", "before\u{0}after\u{9b}"),
        },
    ]
}

fn ms(secs: f64) -> i64 {
    Millis::from_secs_f64(secs).map(|m| m.0).unwrap_or(0)
}

/// The directory of an external tool: `$CARGO_MANIFEST_DIR/../.venv/bin/<name>` when it exists,
/// otherwise the bare name (found on PATH).
pub fn tool(name: &str) -> PathBuf {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(".venv")
        .join("bin")
        .join(name);
    if venv.exists() {
        venv
    } else {
        PathBuf::from(name)
    }
}

/// The venv's Python (for pysubs2), falling back to `python3` on PATH.
pub fn python() -> PathBuf {
    tool("python")
}

/// Snapshot directory for a format, relative to the formats crate: `../golden/formats/<fmt>`.
pub fn golden_dir(format_dir: &str) -> String {
    format!("../golden/formats/{format_dir}")
}

/// Writes `cues` in `format` shifted by `offset_ms`, reads the file back and checks that the cues'
/// first lines come back in `order` (the order of the times the file holds), and that writing what
/// was read, without an offset, gives the same bytes.
pub fn assert_written_order_round_trips(
    format: Format,
    cues: &[Cue],
    offset_ms: i64,
    order: &[&str],
) {
    let opts = WriteOptions {
        offset: Millis(offset_ms),
        ..WriteOptions::default()
    };
    let first = to_vec(format, cues, &opts).unwrap();
    let read = parse(format, &first).unwrap();
    let texts: Vec<&str> = read.iter().map(|c| c.lines[0].as_str()).collect();
    assert_eq!(texts, order, "{format:?}, offset {offset_ms}");
    let again = to_vec(format, &read, &WriteOptions::default()).unwrap();
    assert!(
        first == again,
        "{format:?}, offset {offset_ms}: round trip changed bytes:\n{}\n---\n{}",
        String::from_utf8_lossy(&first),
        String::from_utf8_lossy(&again)
    );
}
