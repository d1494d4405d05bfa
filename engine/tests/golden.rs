//! Golden layouts: one reviewed snapshot (golden/engine/*.snap) per setting at a non-default value
//! and per edge case, rendered one line per cue so a subtitler can read them.

mod common;

use common::{render, speech, words};
use cuecraft_engine::qc::{self, QcStyle, Rule};
use cuecraft_engine::{
    layout, layout_with_shots, words_from_raw, Break, ContentProfile, ForbiddenRule, FrameRate,
    Millis, RawWord, Settings, SubtitleMode, Word,
};

fn input(name: &str) -> Vec<Word> {
    let path = format!(
        "{}/../golden/inputs/engine/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let raw: Vec<RawWord> = serde_json::from_str(&text).expect("input is a JSON array of words");
    words_from_raw(&raw).expect("input times are finite")
}

/// Lays out, checks the invariants, and compares the rendering with the reviewed snapshot.
fn check(name: &str, words: &[Word], settings: &Settings, fr: FrameRate) {
    let cues = layout(words, settings, fr);
    if let Err(e) = common::check_invariants(words, settings, fr, &cues) {
        panic!("{name}: {e}\n{}", render(&cues));
    }
    assert_eq!(
        cues,
        layout(words, settings, fr),
        "{name}: layout is not deterministic"
    );
    insta::with_settings!({snapshot_path => "../../golden/engine", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!(name, render(&cues));
    });
}

fn with(f: impl FnOnce(&mut Settings)) -> Settings {
    let mut s = Settings::default();
    f(&mut s);
    s
}

const FPS: FrameRate = FrameRate::FPS_25;

#[test]
fn interview_with_default_settings() {
    check(
        "interview_default",
        &input("interview"),
        &Settings::default(),
        FPS,
    );
}

#[test]
fn interview_greedy_fill() {
    let s = with(|s| s.format_subtitles = false);
    check("interview_greedy", &input("interview"), &s, FPS);
}

#[test]
fn recogniser_output_without_punctuation_breaks_at_pauses() {
    check(
        "recogniser_lowercase_default",
        &input("recogniser_lowercase"),
        &Settings::default(),
        FPS,
    );
}

#[test]
fn max_chars_per_line_32() {
    let s = with(|s| s.max_chars_per_line = 32);
    check("max_chars_32", &input("interview"), &s, FPS);
}

#[test]
fn max_chars_per_line_at_its_minimum() {
    let s = with(|s| s.max_chars_per_line = 10);
    check("max_chars_10", &input("recogniser_lowercase"), &s, FPS);
}

#[test]
fn one_line_per_subtitle() {
    let s = with(|s| s.max_lines_per_subtitle = 1);
    check("max_lines_1", &input("interview"), &s, FPS);
}

#[test]
fn three_lines_per_subtitle() {
    let s = with(|s| s.max_lines_per_subtitle = 3);
    check("max_lines_3", &input("interview"), &s, FPS);
}

#[test]
fn min_duration_extends_short_cues_into_silence() {
    let s = with(|s| s.min_duration = Some(Millis(2500)));
    check("min_duration_2_5s", &input("interview"), &s, FPS);
}

#[test]
fn max_duration_splits_long_cues() {
    let s = with(|s| s.max_duration = Some(Millis(2000)));
    check("max_duration_2s", &input("interview"), &s, FPS);
}

#[test]
fn no_frame_gap() {
    let s = with(|s| s.min_frames_between_subtitles = 0);
    check("min_frames_0", &input("interview"), &s, FPS);
}

#[test]
fn ten_frame_gap_at_ntsc_rate() {
    let s = with(|s| s.min_frames_between_subtitles = 10);
    let ntsc = FrameRate::new(30000, 1001).expect("valid rate");
    check("min_frames_10_ntsc", &input("interview"), &s, ntsc);
}

#[test]
fn dramatic_profile() {
    let s = with(|s| s.content_profile = ContentProfile::Dramatic);
    check("profile_dramatic", &input("interview"), &s, FPS);
}

#[test]
fn dense_profile() {
    let s = with(|s| s.content_profile = ContentProfile::Dense);
    check("profile_dense", &input("interview"), &s, FPS);
}

/// Fast speech (about 20 characters per second) under `auto` is read at the dense pace.
#[test]
fn auto_profile_fast_speech() {
    let s = with(|s| s.content_profile = ContentProfile::Auto);
    let w = speech(
        "okay so basically what happened is the server went down at three and nobody noticed \
         until the customers started calling which was honestly a bit embarrassing for everyone",
        190,
        20,
    );
    check("profile_auto_fast", &w, &s, FPS);
}

#[test]
fn audiogram_mode() {
    let s = with(|s| s.subtitle_mode = SubtitleMode::Audiogram);
    check("audiogram", &input("interview"), &s, FPS);
}

#[test]
fn split_on_punctuation() {
    let s = with(|s| s.split_on_punctuation = true);
    check("split_on_punctuation", &input("interview"), &s, FPS);
}

#[test]
fn speaker_change_without_em_dash_always_starts_a_cue() {
    let s = with(|s| s.em_dash_on_speaker_change = false);
    check("em_dash_off", &input("interview"), &s, FPS);
}

#[test]
fn ellipsis_continuation() {
    let s = with(|s| s.ellipsis_continuation = true);
    check("ellipsis_continuation", &input("interview"), &s, FPS);
}

#[test]
fn shift_later() {
    let s = with(|s| s.shift_ms = 1500);
    check("shift_plus_1500", &input("interview"), &s, FPS);
}

#[test]
fn shift_earlier_clamps_at_zero() {
    let s = with(|s| s.shift_ms = -10_000);
    check("shift_minus_10000", &input("interview"), &s, FPS);
}

#[test]
fn forbidden_characters_are_replaced_in_lines_only() {
    let s = with(|s| {
        s.forbidden_characters = vec![
            ForbiddenRule {
                chars: "!?".into(),
                replacement: ".".into(),
                // The em dash of two-speaker cues is a character of the line too.
            },
            ForbiddenRule {
                chars: "\u{2014}".into(),
                replacement: "-".into(),
            },
            ForbiddenRule {
                chars: "'".into(),
                replacement: "\u{2019}".into(),
            },
        ]
    });
    let w = input("interview");
    check("forbidden_characters", &w, &s, FPS);
    let cues = layout(&w, &s, FPS);
    assert!(cues
        .iter()
        .flat_map(|c| &c.words)
        .any(|w| &*w.text == "Really?"));
    assert!(cues
        .iter()
        .flat_map(|c| &c.lines)
        .all(|l| !l.contains(['!', '?', '\u{2014}', '\''])));
}

#[test]
fn manual_line_and_cue_breaks_are_honoured() {
    let mut w = speech(
        "first part of the sentence and the second part of it. then another one that goes on.",
        300,
        50,
    );
    w[4].break_after = Some(Break::Line); // after "sentence"
    w[8].break_after = Some(Break::Cue); // after "second part"
    check("manual_breaks", &w, &Settings::default(), FPS);
}

#[test]
fn settings_the_layout_does_not_read_change_nothing() {
    let w = input("interview");
    let base = layout(&w, &Settings::default(), FPS);
    let s = with(|s| {
        s.language = "nl".into();
        s.custom_vocabulary = vec!["Haddad".into()];
        s.prompt = Some("A radio interview".into());
        s.create_highlights = true;
        s.create_chapters = true;
    });
    assert_eq!(layout(&w, &s, FPS), base);
}

#[test]
fn empty_transcript() {
    check("edge_empty", &[], &Settings::default(), FPS);
}

#[test]
fn one_word() {
    check(
        "edge_one_word",
        &words(&[("hello", 1000, 1200, 0)]),
        &Settings::default(),
        FPS,
    );
}

#[test]
fn word_longer_than_a_line_is_split_at_grapheme_boundaries() {
    let w = words(&[
        ("Visit", 0, 300, 0),
        (
            "https://example.com/a/very/long/path/that/never/ends/and/keeps/going/on/and/on/index.html",
            350,
            2500,
            0,
        ),
        ("today.", 2550, 2900, 0),
    ]);
    check("edge_long_word", &w, &Settings::default(), FPS);
    let s = with(|s| {
        s.max_chars_per_line = 10;
        s.max_lines_per_subtitle = 1
    });
    check("edge_long_word_10x1", &w, &s, FPS);
}

#[test]
fn chinese_without_spaces() {
    let text = "我们今天讨论城市的公共交通。公交车为什么总是不准时？因为道路太拥挤了，而且时刻表从来不考虑交通状况。";
    let chars: Vec<String> = text.chars().map(|c| c.to_string()).collect();
    let w: Vec<Word> = chars
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let t = k as i64 * 230;
            Word::new(c.clone(), Millis(t), Millis(t + 200), 0)
        })
        .collect();
    let s = with(|s| s.max_chars_per_line = 16);
    check("edge_cjk_per_character", &w, &s, FPS);
    // A recogniser that returns a whole Japanese sentence as one word.
    let jp = words(&[(
        "東京の公共交通機関は世界で最も正確だと言われていますが、それには理由があります。",
        0,
        4000,
        0,
    )]);
    check("edge_cjk_one_long_word", &jp, &s, FPS);
}

#[test]
fn arabic_and_hebrew() {
    let ar = speech(
        "مرحبا بكم في برنامجنا الليلة. سنتحدث عن مستقبل النقل العام في مدننا، ولماذا لا تزال الحافلات غير منتظمة.",
        320,
        60,
    );
    check("edge_arabic", &ar, &Settings::default(), FPS);
    let he = speech(
        "ערב טוב וברוכים הבאים לתוכנית. הערב נדבר על התחבורה הציבורית בערים שלנו, ועל השאלה למה האוטובוסים תמיד מאחרים.",
        320,
        60,
    );
    check("edge_hebrew", &he, &Settings::default(), FPS);
}

#[test]
fn emoji_sequences_and_combining_marks_count_as_one_character() {
    let w = speech(
        "the family 👨‍👩‍👧‍👦 waved 👋🏽 from the café and the naïve cafe\u{301} owner said olé. \
         👩‍🔬👩‍🔬👩‍🔬👩‍🔬👩‍🔬👩‍🔬👩‍🔬👩‍🔬👩‍🔬👩‍🔬👩‍🔬👩‍🔬 a\u{301}e\u{301}i\u{301}o\u{301}u\u{301}a\u{301}e\u{301}i\u{301}o\u{301}u\u{301}a\u{301}e\u{301}",
        300,
        50,
    );
    let s = with(|s| s.max_chars_per_line = 10);
    check("edge_emoji_combining", &w, &s, FPS);
}

#[test]
fn overlapping_and_zero_length_times() {
    let w = words(&[
        ("These", 0, 900, 0),
        ("words", 400, 1200, 0),
        ("overlap", 1000, 1000, 0),
        ("and", 1000, 1000, 0),
        ("some", 1000, 1000, 0),
        ("have", 2000, 1500, 0),
        ("no", 2100, 2100, 0),
        ("length.", 2100, 2200, 0),
    ]);
    check("edge_overlap_zero_length", &w, &Settings::default(), FPS);
}

#[test]
fn unsorted_input_is_read_in_start_order() {
    let mut w = speech("one two three four five six seven eight nine ten.", 300, 50);
    w.reverse();
    w.swap(2, 7);
    check("edge_unsorted", &w, &Settings::default(), FPS);
}

#[test]
fn rapid_speaker_alternation() {
    let turns = [
        (0, "Ready?"),
        (1, "Yes."),
        (0, "Now?"),
        (1, "Not yet."),
        (0, "Why not?"),
        (1, "Because the light is still red."),
        (0, "Go!"),
        (1, "Going."),
        (2, "Wait for me!"),
        (1, "Hurry up then, we are already late for the meeting."),
    ];
    let mut w = Vec::new();
    let mut t = 0;
    for (spk, text) in turns {
        for word in text.split(' ') {
            w.push(Word::new(word, Millis(t), Millis(t + 280), spk));
            t += 320;
        }
        t += 150;
    }
    check("edge_rapid_speakers", &w, &Settings::default(), FPS);
    let s = with(|s| s.em_dash_on_speaker_change = false);
    check("edge_rapid_speakers_no_dash", &w, &s, FPS);
}

/// The last cues of a 101-hour transcript: times past 100 h stay exact on the frame grid.
#[test]
fn more_than_100_hours() {
    let sentence = "this sentence is repeated for a very long time, with a pause at its end.";
    let mut w = Vec::new();
    let mut t: i64 = 0;
    let end = 101 * 3_600_000;
    while t < end {
        for word in sentence.split(' ') {
            w.push(Word::new(
                word,
                Millis(t),
                Millis(t + 300),
                (t / 600_000 % 2) as u32,
            ));
            t += 350;
        }
        t += 900;
    }
    let cues = layout(&w, &Settings::default(), FPS);
    common::check_invariants(&w, &Settings::default(), FPS, &cues).expect("invariants");
    let tail = &cues[cues.len() - 4..];
    let text = format!(
        "{} words, {} cues; the last four:\n{}",
        w.len(),
        cues.len(),
        render(tail)
    );
    insta::with_settings!({snapshot_path => "../../golden/engine", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!("edge_101_hours_tail", text);
    });
}

/// Fuzz finding (fuzz/artifacts/layout/crash-4b87...): a word made only of a control character
/// has no visible text, so it makes no cue of its own; beside a visible word it rides along.
#[test]
fn control_characters_alone_are_not_visible_text() {
    let alone = words(&[("\u{5}", 14, 14, 0)]);
    assert!(layout(&alone, &Settings::default(), FPS).is_empty());
    let beside = words(&[("\u{5}", 0, 10, 0), ("hi", 20, 400, 0)]);
    let cues = layout(&beside, &Settings::default(), FPS);
    assert_eq!(cues.len(), 1);
    assert_eq!(cues[0].lines, vec!["Hi".to_string()]);
    assert_eq!(cues[0].words.len(), 2);
}

/// Fuzz finding (crash-2803d46b): a forbidden-character replacement with a line break must not
/// smuggle the break into a line through the `...` and dash decorations.
#[test]
fn replacements_with_line_breaks_never_break_a_line() {
    let s = with(|s| {
        s.ellipsis_continuation = true;
        s.forbidden_characters = vec![ForbiddenRule {
            chars: ".\u{2014}".into(),
            replacement: "x\n\u{7f}y".into(),
        }]
    });
    let w = speech(
        "one two three four five six seven eight nine ten eleven twelve thirteen \
                    fourteen fifteen sixteen seventeen eighteen nineteen twenty twentyone",
        300,
        50,
    );
    let cues = layout(&w, &s, FPS);
    assert!(cues.len() > 1);
    assert!(cues
        .iter()
        .flat_map(|c| &c.lines)
        .all(|l| !l.contains(['\n', '\u{7f}'])));
    assert!(
        cues[0].lines.last().is_some_and(|l| l.ends_with("x y")),
        "{:?}",
        cues[0].lines
    );
}

/// A video job with cuts: the interview's cues timed to shot changes at 25, 23.976 and 29.97 fps
/// under the default settings (a 3-frame gap between cues). The cuts sit where each rule acts or
/// gives way to another:
/// - 3.6 s, 0.245 s before "Tonight" and 0.085 s after "programme." ends: cue 2 starts on the cut
///   only where cue 1 can end the 3-frame gap before it without losing its last frame of speech,
///   so at 29.97 fps (3 frames = 0.1 s) and not at 25 or 23.976 fps (the in-time stays on the
///   speech, 3.84 s);
/// - 17.5 s and 26.0 s, 0.14 s and 0.045 s before "places." and "unreliable?" end: the speech runs
///   over the cut, so cues 4 and 7 cannot end two frames before it and stay up at least half a
///   second past it (then chained to the next cue, as without the cut);
/// - 20.6 s and 42.0 s, 0.175 s before "Let's" and 0.165 s before "Dedicated": cues 6 and 12
///   start on the cut;
/// - 9.5 s, in the pause after "cities.", which no cue touches.
///
/// The check's shot-change rules find nothing: every rule is kept where it could be. Each cut is
/// printed before the first cue that starts on or after its frame, so a subtitler reads the snapshot as
/// a timeline.
/// A cut's line in the snapshot: its time and the start of the frame it falls on.
fn cut_line(fr: FrameRate, cut: Millis) -> String {
    let f = fr.frame_round(cut);
    format!(
        "    ---- cut at {} ms (frame {f}, {} ms)\n",
        cut.0,
        fr.frame_start(f).0
    )
}

fn check_with_shots(name: &str, fr: FrameRate) {
    let words = input("interview");
    let settings = Settings::default();
    let cuts: Vec<Millis> = [3600, 9500, 17500, 20600, 26000, 42000]
        .into_iter()
        .map(Millis)
        .collect();
    let cues = layout_with_shots(&words, &settings, fr, &cuts);
    if let Err(e) = common::check_invariants(&words, &settings, fr, &cues) {
        panic!("{name}: {e}\n{}", render(&cues));
    }
    assert_eq!(
        cues,
        layout_with_shots(&words, &settings, fr, &cuts),
        "{name}: layout is not deterministic"
    );
    let style = QcStyle::from_settings(&settings, &words);
    let broken: Vec<_> = qc::check_with_shots(&cues, &style, fr, &cuts)
        .findings
        .into_iter()
        .filter(|f| matches!(f.rule, Rule::ShotChangeIn | Rule::ShotChangeOut))
        .collect();
    assert!(broken.is_empty(), "{name}: {broken:?}\n{}", render(&cues));
    let mut out = String::new();
    let mut next = cuts.iter().peekable();
    for line in render(&cues).lines() {
        let k: usize = line.split_whitespace().next().unwrap().parse().unwrap();
        while let Some(cut) =
            next.next_if(|c| fr.frame_round(**c) <= fr.frame_round(cues[k - 1].start))
        {
            out.push_str(&cut_line(fr, *cut));
        }
        out.push_str(line);
        out.push('\n');
    }
    for cut in next {
        out.push_str(&cut_line(fr, *cut));
    }
    insta::with_settings!({snapshot_path => "../../golden/engine", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!(name, out);
    });
}

#[test]
fn video_with_cuts_at_25_fps() {
    check_with_shots("shots_interview_25", FPS);
}

#[test]
fn video_with_cuts_at_23_976_fps() {
    check_with_shots(
        "shots_interview_23_976",
        FrameRate {
            num: 24000,
            den: 1001,
        },
    );
}

#[test]
fn video_with_cuts_at_29_97_fps() {
    check_with_shots(
        "shots_interview_29_97",
        FrameRate {
            num: 30000,
            den: 1001,
        },
    );
}
