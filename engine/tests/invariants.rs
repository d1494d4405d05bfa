//! Property tests: for any words and any valid settings, the layout keeps every invariant of the
//! contract (nothing lost, hard limits, sorted frame-exact cues N frames apart, determinism).

mod common;

use cuecraft_engine::qc::{check, Level, QcStyle};
use cuecraft_engine::{
    layout, Break, ContentProfile, Cue, ForbiddenRule, FrameRate, Millis, Settings, SubtitleMode,
    Word,
};
use proptest::prelude::*;

/// Word texts that exercise every path: plain, punctuation, weak words, CJK, RTL, emoji, combining
/// marks, over-long, empty, whitespace and control characters.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z]{1,8}[.,?!;]?",
        1 => Just("the".to_string()),
        1 => Just("and".to_string()),
        1 => "[\u{4e00}-\u{4e2f}]{1,4}[。，]?",
        1 => "[\u{0627}-\u{0645}]{2,6}",
        1 => Just("👩‍👩‍👧‍👦".to_string()),
        1 => Just("e\u{301}a\u{308}".to_string()),
        1 => "[a-z]{20,90}",
        1 => Just(String::new()),
        1 => Just(" \n\t".to_string()),
        1 => Just("a\r\nb".to_string()),
        1 => Just("(!?...)".to_string()),
    ]
}

fn word() -> impl Strategy<Value = Word> {
    (
        text(),
        0i64..3_600_000,
        -200i64..3000,
        0u32..3,
        prop_oneof![
            8 => Just(None),
            1 => Just(Some(Break::Line)),
            1 => Just(Some(Break::Cue)),
            1 => Just(Some(Break::Join))
        ],
    )
        .prop_map(|(t, s, d, sp, br)| {
            let mut w = Word::new(t, Millis(s), Millis(s + d), sp);
            w.break_after = br;
            w
        })
}

/// Mostly realistic speech (sorted, short gaps), sometimes arbitrary times.
fn words() -> impl Strategy<Value = Vec<Word>> {
    prop_oneof![
        prop::collection::vec(word(), 0..60),
        prop::collection::vec((text(), 0i64..900, 50i64..700, 0u32..2), 0..120).prop_map(|v| {
            let mut t = 0;
            v.into_iter()
                .map(|(x, gap, d, sp)| {
                    t += gap;
                    let w = Word::new(x, Millis(t), Millis(t + d), sp);
                    t += d;
                    w
                })
                .collect()
        }),
    ]
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        (any::<bool>(), 10u32..=250, 1u32..=5, 0u32..=100),
        (
            prop::option::of(0i64..=60_000),
            prop::option::of(100i64..=60_000),
        ),
        (
            prop_oneof![
                Just(ContentProfile::Balanced),
                Just(ContentProfile::Dramatic),
                Just(ContentProfile::Dense),
                Just(ContentProfile::Auto)
            ],
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            -10_000i32..=10_000,
        ),
        prop::collection::vec(("[a-z.!—]{1,3}", "[A-Z_]{0,2}"), 0..3),
    )
        .prop_map(
            |(
                (smart, chars, lines, frames),
                (min, max),
                (profile, audiogram, split, dash, ellipsis, shift),
                forbid,
            )| {
                // Valid settings: minDuration never exceeds maxDuration.
                let (min, max) = match (min, max) {
                    (Some(a), Some(b)) if a > b => (Some(b), Some(a)),
                    other => other,
                };
                let chars = if chars > 60 && chars % 3 != 0 {
                    chars % 60 + 10
                } else {
                    chars
                };
                Settings {
                    format_subtitles: smart,
                    max_chars_per_line: chars,
                    max_lines_per_subtitle: lines,
                    min_duration: min.map(Millis),
                    max_duration: max.map(Millis),
                    min_frames_between_subtitles: frames,
                    content_profile: profile,
                    subtitle_mode: if audiogram {
                        SubtitleMode::Audiogram
                    } else {
                        SubtitleMode::Default
                    },
                    split_on_punctuation: split,
                    em_dash_on_speaker_change: dash,
                    ellipsis_continuation: ellipsis,
                    shift_ms: shift,
                    forbidden_characters: forbid
                        .into_iter()
                        .map(|(chars, replacement)| ForbiddenRule { chars, replacement })
                        .collect(),
                    ..Settings::default()
                }
            },
        )
}

/// Whether `w` may be pinned words (a manual cue break on the last word in reading order: one of
/// the words that start last). Pinned words keep the subtitler's segmentation whatever the hard
/// limits (the QC reports what a cue breaks: docs/decisions/layout.md, "Pinned layouts"; tested
/// in engine/src/layout/pinned.rs), so the hard-limit invariants are for words that are not.
fn maybe_pinned(w: &[Word]) -> bool {
    let last = w.iter().map(|x| x.start).max();
    w.iter()
        .any(|x| Some(x.start) == last && x.break_after == Some(Break::Cue))
}

fn frame_rate() -> impl Strategy<Value = FrameRate> {
    prop_oneof![
        Just(FrameRate::FPS_25),
        Just(FrameRate {
            num: 30000,
            den: 1001
        }),
        Just(FrameRate {
            num: 24000,
            den: 1001
        }),
        Just(FrameRate { num: 60, den: 1 }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn layout_keeps_every_invariant(w in words(), s in settings(), fr in frame_rate()) {
        prop_assume!(!maybe_pinned(&w));
        let cues = layout(&w, &s, fr);
        if let Err(e) = common::check_invariants(&w, &s, fr, &cues) {
            prop_assert!(false, "{e}\n{}", common::render(&cues));
        }
        prop_assert_eq!(&cues, &layout(&w, &s, fr), "not deterministic");
    }

    /// The QC check under the job's own settings finds no error-level problem in what the layout
    /// made of them: the hard limits hold as the check measures them.
    #[test]
    fn qc_finds_no_error_in_a_layout_under_its_own_settings(
        w in words(), s in settings(), fr in frame_rate()
    ) {
        prop_assume!(!maybe_pinned(&w));
        let cues = layout(&w, &s, fr);
        let style = QcStyle::from_settings(&s, &w);
        let report = check(&cues, &style, fr);
        let errors: Vec<_> = report.findings.iter().filter(|f| f.level == Level::Error).collect();
        prop_assert!(errors.is_empty(), "{errors:?}\n{}", common::render(&cues));
    }

    /// Forbidden characters never reach a line, whatever the words.
    #[test]
    fn forbidden_characters_never_reach_a_line(w in words(), fr in frame_rate()) {
        let s = Settings {
            forbidden_characters: vec![ForbiddenRule { chars: "e.—".into(), replacement: "#".into() }],
            ellipsis_continuation: true,
            ..Settings::default()
        };
        let cues = layout(&w, &s, fr);
        for c in &cues {
            for l in &c.lines {
                use unicode_segmentation::UnicodeSegmentation;
                prop_assert!(l.graphemes(true).all(|g| !matches!(g, "e" | "." | "—")), "{l:?}");
            }
        }
    }

    /// The cue texts hold the words' texts in order (smart mode may only change capitals, and the
    /// continuation marks are off).
    #[test]
    fn greedy_text_is_the_words_text(w in words(), fr in frame_rate()) {
        let s = Settings { format_subtitles: false, ..Settings::default() };
        let cues = layout(&w, &s, fr);
        let lines: String = cues
            .iter()
            .flat_map(|c| c.lines.iter())
            .flat_map(|l| l.split(' '))
            .map(|t| t.trim_start_matches('\u{2014}'))
            .collect();
        let words: String = common::sorted(&w)
            .iter()
            .flat_map(|w| w.text.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .collect();
        prop_assert_eq!(lines, words);
    }
}

/// Whether `text` ends a sentence by its punctuation (closing quotes and brackets seen through), as
/// the contract's sentence ends read.
fn ends_sentence(text: &str) -> bool {
    let t = text
        .trim_end()
        .trim_end_matches(['"', '\'', ')', ']', '}', '»', '”', '’', '」', '』', '）']);
    t.ends_with(['.', '?', '!', '。', '？', '！', '‽'])
}

/// Whether a word shows anything.
fn visible(w: &Word) -> bool {
    w.text
        .chars()
        .any(|c| !c.is_whitespace() && !c.is_control())
}

/// The first two-speaker cue that opens with the tail of a sentence its first speaker began in the
/// cue before: that cue's last visible word has the same speaker and ends no sentence (by its
/// punctuation; in words without any, a silence of 0.3 s after it may be taken as one).
fn dashed_cue_opening_with_a_tail(words: &[Word], cues: &[Cue]) -> Option<u32> {
    let punctuated = words.iter().any(|w| ends_sentence(&w.text));
    let order: Vec<&Word> = cues.iter().flat_map(|c| &c.words).collect();
    let mut seen = 0;
    let mut prev_last: Option<(&Word, usize)> = None;
    for c in cues {
        let shown: Vec<&Word> = c.words.iter().filter(|w| visible(w)).collect();
        let two = shown.iter().any(|w| w.speaker != shown[0].speaker);
        if let (true, Some(first), Some((last, at))) = (two, shown.first(), prev_last) {
            let pause = order
                .get(at + 1)
                .is_some_and(|n| n.start.0 - last.end.0 >= 300);
            let sentence_end = ends_sentence(&last.text) || (!punctuated && pause);
            if last.speaker == first.speaker && !sentence_end {
                return Some(c.index);
            }
        }
        for (k, w) in c.words.iter().enumerate() {
            if visible(w) {
                prev_last = Some((w, seen + k));
            }
        }
        seen += c.words.len();
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    /// A dashed two-speaker cue holds each speaker's turn from its start: its first line never
    /// opens with the tail of a sentence begun in the cue before (the dash would read as a third
    /// voice), in smart and greedy layout, whatever the words.
    #[test]
    fn no_dashed_cue_opens_with_the_tail_of_a_sentence(
        w in dialogue(), s in settings(), fr in frame_rate()
    ) {
        prop_assume!(!maybe_pinned(&w));
        let s = Settings { forbidden_characters: Vec::new(), em_dash_on_speaker_change: true, ..s };
        let cues = layout(&w, &s, fr);
        if let Some(k) = dashed_cue_opening_with_a_tail(&w, &cues) {
            prop_assert!(false, "cue {k} opens with a sentence's tail\n{}", common::render(&cues));
        }
    }
}

/// From the quality corpus's interview: "He just watched, and fetched tools, and swept up." /
/// "And?" / "And one Saturday...". The layout once gave "—and swept up." / "—And?", the tail of the
/// first speaker's sentence dashed as if a third voice said it.
#[test]
fn a_short_reply_does_not_pull_the_tail_of_a_sentence_into_a_dashed_cue() {
    let w = common::words(&[
        ("He", 223573, 223770, 1),
        ("just", 223842, 224028, 1),
        ("watched,", 224086, 224406, 1),
        ("and", 224625, 224839, 1),
        ("fetched", 224874, 225262, 1),
        ("tools,", 225329, 225531, 1),
        ("and", 225814, 226028, 1),
        ("swept", 226070, 226251, 1),
        ("up.", 226292, 226509, 1),
        ("And?", 227375, 227551, 0),
        ("And", 228751, 228956, 1),
        ("one", 228981, 229204, 1),
        ("Saturday", 229262, 229836, 1),
        ("a", 229868, 230076, 1),
        ("younger", 230097, 230441, 1),
        ("girl", 230499, 230689, 1),
        ("was", 230750, 230935, 1),
        ("struggling", 230997, 231353, 1),
        ("with", 231380, 231602, 1),
        ("a", 231643, 231828, 1),
        ("gear", 231890, 232101, 1),
    ]);
    for s in [
        Settings::default(),
        Settings {
            format_subtitles: false,
            ..Settings::default()
        },
    ] {
        let cues = layout(&w, &s, FrameRate::FPS_25);
        assert_eq!(
            dashed_cue_opening_with_a_tail(&w, &cues),
            None,
            "{}",
            common::render(&cues)
        );
        // The reply still gets its dash where it shares a cue.
        for c in cues
            .iter()
            .filter(|c| c.words.iter().any(|x| &*x.text == "And?"))
        {
            if c.words.len() > 1 {
                assert!(
                    c.lines.iter().all(|l| l.starts_with('\u{2014}')),
                    "{:?}",
                    c.lines
                );
            }
        }
    }
}

/// Two or three people talking: turns of one to twelve words, sentences that run over several
/// cues, quick exchanges, sometimes the general words of [`words`].
fn dialogue() -> impl Strategy<Value = Vec<Word>> {
    let turn = (
        0u32..3,
        prop::collection::vec(
            (
                "[a-z]{1,9}",
                prop::sample::select(vec!["", "", "", ",", ".", "?"]),
            ),
            1..12,
        ),
        0i64..900,
    );
    prop_oneof![
        3 => prop::collection::vec(turn, 1..40).prop_map(|turns| {
            let mut t = 0;
            let mut out = Vec::new();
            for (sp, ws, gap) in turns {
                t += gap;
                for (x, p) in ws {
                    let d = 120 + 40 * x.len() as i64;
                    out.push(Word::new(format!("{x}{p}"), Millis(t), Millis(t + d), sp));
                    t += d + 30;
                }
            }
            out
        }),
        1 => words(),
    ]
}

/// A transcript much longer than one layout chunk (2048 units), with every kind of word, manual
/// breaks, speaker changes and pauses: the invariants hold across chunk boundaries too.
#[test]
fn long_transcripts_keep_every_invariant_across_chunks() {
    let vocab = [
        "the",
        "and,",
        "people.",
        "東京",
        "مرحبا",
        "👩‍🔬",
        "",
        "e\u{301}",
        "really?",
        "supercalifragilisticexpialidociousandthensomemorelettersuntilitislong",
        "ok",
    ];
    let mut seed: u64 = 7;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    let mut words = Vec::new();
    let mut t = 0i64;
    for _ in 0..12_000 {
        let text = vocab[(next() % vocab.len() as u64) as usize];
        let d = (next() % 500) as i64;
        let mut w = Word::new(text, Millis(t), Millis(t + d), (next() % 7 / 5) as u32);
        w.break_after = match next() % 200 {
            0 => Some(Break::Line),
            1 => Some(Break::Cue),
            _ => None,
        };
        words.push(w);
        t += d + (next() % 3) as i64 * (next() % 1500) as i64;
    }
    let fr = FrameRate::FPS_25;
    for s in [
        Settings::default(),
        Settings {
            format_subtitles: false,
            ..Settings::default()
        },
        Settings {
            ellipsis_continuation: true,
            max_chars_per_line: 12,
            ..Settings::default()
        },
        Settings {
            subtitle_mode: SubtitleMode::Audiogram,
            ..Settings::default()
        },
    ] {
        let cues = layout(&words, &s, fr);
        if let Err(e) = common::check_invariants(&words, &s, fr, &cues) {
            panic!("{e}");
        }
    }
}
