//! Timing to the picture: the shot-change rules at 23.976, 24, 25 and 29.97 fps, by example and as
//! properties (the rules kept wherever they can be, the other rules no worse, incremental layout
//! exact, no change without shot changes or smart formatting).

mod common;

use cuecraft_engine::qc::{check, check_with_shots, QcStyle, Rule};
use cuecraft_engine::{layout, layout_with_shots, Cue, FrameRate, Layout, Millis, Settings, Word};
use proptest::prelude::*;

const RATES: [(u32, u32); 4] = [(24000, 1001), (24, 1), (25, 1), (30000, 1001)];

fn rate(num: u32, den: u32) -> FrameRate {
    FrameRate::new(num, den).unwrap()
}

/// Words of `text`, 300 ms each with 60 ms between them, starting at `start` ms.
fn said(text: &str, start: i64) -> Vec<Word> {
    let mut t = start;
    text.split_whitespace()
        .map(|w| {
            let word = Word::new(w, Millis(t), Millis(t + 300), 0);
            t += 360;
            word
        })
        .collect()
}

/// The frame a cue time falls on.
fn frame(fr: FrameRate, t: Millis) -> i64 {
    fr.frame_round(t)
}

fn shot_findings(cues: &[Cue], words: &[Word], fr: FrameRate, shots: &[Millis]) -> Vec<String> {
    let style = QcStyle::from_settings(&Settings::default(), words);
    check_with_shots(cues, &style, fr, shots)
        .findings
        .into_iter()
        .filter(|f| matches!(f.rule, Rule::ShotChangeIn | Rule::ShotChangeOut))
        .map(|f| format!("cue {}: {} {}", f.cue + 1, f.rule.id(), f.message))
        .collect()
}

#[test]
fn speech_starting_just_after_a_cut_starts_on_it_at_every_rate() {
    for (num, den) in RATES {
        let fr = rate(num, den);
        let cut = fr.frame_start(100);
        for after in [1, 6, 12] {
            let words = said("The river rose overnight.", fr.frame_start(100 + after).0);
            let plain = layout(&words, &Settings::default(), fr);
            assert_eq!(frame(fr, plain[0].start), 100 + after, "{num}/{den}");
            let cues = layout_with_shots(&words, &Settings::default(), fr, &[cut]);
            assert_eq!(cues[0].start, cut, "{num}/{den}, {after} frames after");
            assert!(cues[0].end >= words.last().unwrap().end - Millis(21));
            assert!(shot_findings(&cues, &words, fr, &[cut]).is_empty());
            // The check flags the layout that ignored the cut.
            assert_eq!(
                shot_findings(&plain, &words, fr, &[cut]),
                [format!(
                    "cue 1: shot-change-in starts {after} frame{} after the shot change at {:.3} s, not on it",
                    if after == 1 { "" } else { "s" },
                    cut.as_secs_f64()
                )]
            );
        }
        // Past half a second (12 frames, 15 at 29.97): the cue starts with its speech.
        let half = if num == 30000 { 15 } else { 12 };
        let words = said(
            "The river rose overnight.",
            fr.frame_start(100 + half + 1).0,
        );
        let cues = layout_with_shots(&words, &Settings::default(), fr, &[cut]);
        assert_eq!(frame(fr, cues[0].start), 100 + half + 1, "{num}/{den}");
    }
}

#[test]
fn a_cue_that_would_start_two_frames_before_a_cut_starts_on_it() {
    for (num, den) in RATES {
        let fr = rate(num, den);
        let words = said("The river rose overnight.", fr.frame_start(98).0);
        let cut = fr.frame_start(100);
        let cues = layout_with_shots(&words, &Settings::default(), fr, &[cut]);
        assert_eq!(cues[0].start, cut, "{num}/{den}");
        // Three frames before: the speech wins.
        let words = said("The river rose overnight.", fr.frame_start(97).0);
        let cues = layout_with_shots(&words, &Settings::default(), fr, &[cut]);
        assert_eq!(frame(fr, cues[0].start), 97, "{num}/{den}");
    }
}

#[test]
fn a_cue_chained_over_a_cut_ends_two_frames_before_it() {
    // No frame gap: chaining would end the first cue on the next one's start.
    let s = Settings {
        min_frames_between_subtitles: 0,
        ..Settings::default()
    };
    for (num, den) in RATES {
        let fr = rate(num, den);
        let mut words = said("We waited there.", 0);
        let end = frame(fr, words.last().unwrap().end);
        words.extend(said("The boat came.", fr.frame_start(end + 10).0));
        let plain = layout(&words, &s, fr);
        assert_eq!(plain[0].end, plain[1].start, "{num}/{den}: chained");
        for before in [1, 4] {
            let cut_frame = end + 10 - before;
            let cut = fr.frame_start(cut_frame);
            let cues = layout_with_shots(&words, &s, fr, &[cut]);
            assert_eq!(cues[1].start, cut, "{num}/{den}");
            assert_eq!(frame(fr, cues[0].end), cut_frame - 2, "{num}/{den}");
            let style = QcStyle::from_settings(&s, &words);
            let found = check_with_shots(&cues, &style, fr, &[cut]).findings;
            assert!(found.is_empty(), "{found:?}");
            let found = check_with_shots(&plain, &style, fr, &[cut]).findings;
            let rules: Vec<_> = found.iter().map(|f| (f.cue, f.rule)).collect();
            assert_eq!(rules, [(0, Rule::ShotChangeOut), (1, Rule::ShotChangeIn)]);
        }
    }
}

#[test]
fn a_cue_whose_speech_runs_over_a_cut_stays_up_half_a_second_past_it() {
    for (num, den) in RATES {
        let fr = rate(num, den);
        let half = if num == 30000 { 15 } else { 12 };
        let words = said("We waited there for the boat.", 0);
        let plain = layout(&words, &Settings::default(), fr);
        let last_word_end = frame(fr, words.last().unwrap().end);
        // The cut one frame before the last word ends: no way to end before it.
        let cut_frame = last_word_end - 1;
        let cut = fr.frame_start(cut_frame);
        assert!(frame(fr, plain[0].end) - cut_frame < half);
        let cues = layout_with_shots(&words, &Settings::default(), fr, &[cut]);
        assert_eq!(frame(fr, cues[0].end), cut_frame + half, "{num}/{den}");
        assert!(shot_findings(&cues, &words, fr, &[cut]).is_empty());
        // With the next cue too close to leave half a second, it is left as it was.
        let mut both = words.clone();
        both.extend(said("It came.", fr.frame_start(cut_frame + 5).0));
        let cues = layout_with_shots(&both, &Settings::default(), fr, &[cut]);
        let alone = layout(&both, &Settings::default(), fr);
        assert_eq!(cues[0].end, alone[0].end, "{num}/{den}");
        assert!(shot_findings(&cues, &both, fr, &[cut]).is_empty());
    }
}

#[test]
fn a_cue_whose_speech_ends_just_before_a_cut_ends_on_it() {
    for (num, den) in RATES {
        let fr = rate(num, den);
        let half = if num == 30000 { 15 } else { 12 };
        let words = said("We waited there for the boat.", 0);
        let last_word_end = frame(fr, words.last().unwrap().end);
        // The speech ends one frame before the cut: two frames before it would cut it short, and
        // half a second past it would hold the text into the next shot for nothing.
        let cut_frame = last_word_end + 1;
        let cut = fr.frame_start(cut_frame);
        let cues = layout_with_shots(&words, &Settings::default(), fr, &[cut]);
        assert_eq!(frame(fr, cues[0].end), cut_frame, "{num}/{den}");
        assert!(frame(fr, cues[0].end) - last_word_end <= half);
        assert!(shot_findings(&cues, &words, fr, &[cut]).is_empty());
        // Two frames after the speech: the out-time two frames before it, on the speech.
        let cut = fr.frame_start(last_word_end + 2);
        let cues = layout_with_shots(&words, &Settings::default(), fr, &[cut]);
        assert_eq!(frame(fr, cues[0].end), last_word_end, "{num}/{den}");
    }
}

#[test]
fn a_cut_is_not_taken_from_the_time_the_previous_cue_needs() {
    for (num, den) in RATES {
        let fr = rate(num, den);
        // The first sentence is spoken until frame 96: starting the second on the cut at 100
        // would leave the first 2 frames less than its speech with the 2-frame gap... it is kept.
        let first = said("The storm broke the dam.", 0);
        let end = frame(fr, first.last().unwrap().end);
        let cut = fr.frame_start(end + 1);
        let mut words = first.clone();
        words.extend(said("Water filled the valley.", fr.frame_start(end + 6).0));
        let cues = layout_with_shots(&words, &Settings::default(), fr, &[cut]);
        assert_eq!(cues.len(), 2);
        assert!(cues[0].end >= first.last().unwrap().end - Millis(20));
        assert_eq!(frame(fr, cues[1].start), end + 6, "{num}/{den}");
        assert!(shot_findings(&cues, &words, fr, &[cut]).is_empty());
    }
}

#[test]
fn no_shots_or_no_smart_formatting_keep_the_layout() {
    let words = said("The river rose overnight. Roads were closed.", 1000);
    // A cut 2 frames before the speech.
    let cuts = [Millis(920), Millis(2000)];
    for (num, den) in RATES {
        let fr = rate(num, den);
        let s = Settings::default();
        assert_eq!(
            layout_with_shots(&words, &s, fr, &[]),
            layout(&words, &s, fr)
        );
        let greedy = Settings {
            format_subtitles: false,
            ..Settings::default()
        };
        assert_eq!(
            layout_with_shots(&words, &greedy, fr, &cuts),
            layout(&words, &greedy, fr)
        );
        assert_ne!(
            layout_with_shots(&words, &s, fr, &cuts),
            layout(&words, &s, fr)
        );
    }
}

/// Speech in sentences with pauses, and cuts at least a second apart, some near sentence starts.
fn scene() -> impl Strategy<Value = (Vec<Word>, Vec<Millis>)> {
    let sentence = (1usize..12, 150i64..450, 20i64..160, 0i64..2500);
    (
        prop::collection::vec(sentence, 1..14),
        prop::collection::vec((1000i64..6000, -700i64..700), 0..12),
    )
        .prop_map(|(sentences, cuts)| {
            let vocab = [
                "the",
                "river",
                "valley",
                "rose",
                "and",
                "overnight",
                "we",
                "saw",
            ];
            let mut words = Vec::new();
            let mut starts = Vec::new();
            let mut t = 0i64;
            for (i, (n, d, gap, pause)) in sentences.into_iter().enumerate() {
                t += pause;
                starts.push(t);
                for k in 0..n {
                    let text = if k + 1 == n {
                        format!("{}.", vocab[(i + k) % vocab.len()])
                    } else {
                        vocab[(i * 3 + k) % vocab.len()].to_string()
                    };
                    words.push(Word::new(text, Millis(t), Millis(t + d), 0));
                    t += d + gap;
                }
            }
            // Cuts: every second or more, some moved near a sentence's start.
            let mut shots = Vec::new();
            let mut c = 0i64;
            for (k, (step, near)) in cuts.into_iter().enumerate() {
                c += step;
                let at = match starts.get(k) {
                    Some(&s) if near.abs() < 350 => (s + near).max(0),
                    _ => c,
                };
                shots.push(Millis(at));
            }
            (words, shots)
        })
}

fn settings() -> impl Strategy<Value = Settings> {
    (0u32..4, prop::option::of(1000i64..3000), 0usize..4).prop_map(|(gap, min, profile)| Settings {
        min_frames_between_subtitles: gap,
        min_duration: min.map(Millis),
        content_profile: [
            cuecraft_engine::ContentProfile::Balanced,
            cuecraft_engine::ContentProfile::Dense,
            cuecraft_engine::ContentProfile::Dramatic,
            cuecraft_engine::ContentProfile::Auto,
        ][profile],
        ..Settings::default()
    })
}

fn frame_rate() -> impl Strategy<Value = FrameRate> {
    prop::sample::select(RATES.to_vec()).prop_map(|(n, d)| rate(n, d))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Wherever a shot-change rule could be kept it is (the check under the job's settings finds
    /// nothing), and the frame gap, reading pace and durations are no worse than without cuts.
    #[test]
    fn the_rules_are_kept_wherever_they_can_be((words, shots) in scene(), s in settings(), fr in frame_rate()) {
        let cues = layout_with_shots(&words, &s, fr, &shots);
        if let Err(e) = common::check_invariants(&words, &s, fr, &cues) {
            prop_assert!(false, "{e}\n{}", common::render(&cues));
        }
        let style = QcStyle::from_settings(&s, &words);
        let with = check_with_shots(&cues, &style, fr, &shots);
        let broken: Vec<_> = with
            .findings
            .iter()
            .filter(|f| matches!(f.rule, Rule::ShotChangeIn | Rule::ShotChangeOut))
            .collect();
        prop_assert!(
            broken.is_empty(),
            "{broken:?}\ncuts {:?}\nwords {:?}\n{}",
            shots.iter().map(|t| t.0).collect::<Vec<_>>(),
            words.iter().map(|w| (&*w.text, w.start.0, w.end.0)).collect::<Vec<_>>(),
            common::render(&cues)
        );
        let without = check(&layout(&words, &s, fr), &style, fr);
        for rule in [Rule::ReadingPace, Rule::DurationShort, Rule::DurationLong, Rule::Gap, Rule::Chaining, Rule::SilenceBridged] {
            prop_assert!(
                with.summary.count(rule) <= without.summary.count(rule),
                "{} {} > {}\n{:?}\ncuts {:?} at {:?}\n{}\nwithout cuts\n{}",
                rule.id(),
                with.summary.count(rule),
                without.summary.count(rule),
                with.findings.iter().filter(|f| f.rule == rule).collect::<Vec<_>>(),
                shots.iter().map(|t| t.0).collect::<Vec<_>>(),
                fr,
                common::render(&cues),
                common::render(&layout(&words, &s, fr))
            );
        }
    }

    /// An updated layout with shot changes equals a fresh one of the edited words.
    #[test]
    fn an_updated_layout_keeps_its_shot_changes((words, shots) in scene(), fr in frame_rate(), at in 0usize..1000) {
        let s = Settings::default();
        let mut laid = Layout::with_shots(&words, &s, fr, &shots);
        prop_assert_eq!(&laid.cues, &layout_with_shots(&words, &s, fr, &shots));
        let mut edited = words.clone();
        let k = at % edited.len().max(1);
        if let Some(w) = edited.get_mut(k) {
            w.text = "changed".into();
        }
        laid.update(&words, &edited, &s, fr);
        prop_assert_eq!(&laid.cues, &layout_with_shots(&edited, &s, fr, &shots));
    }
}
