//! Fuzz target `layout`: structured words and settings within the contract's ranges; the layout
//! must not panic and must keep every invariant (nothing lost, hard limits, sorted frame-exact cues
//! at least N frames apart, determinism), and a kept layout brought up to date after an edit
//! (`Layout::update`) must equal a fresh layout of the edited words.
#![no_main]

use arbitrary::Arbitrary;
use cuecraft_engine::{
    layout, Break, ContentProfile, Cue, ForbiddenRule, FrameRate, Layout, Millis, Settings,
    SubtitleMode, Word,
};
use libfuzzer_sys::fuzz_target;
use unicode_segmentation::UnicodeSegmentation;

#[derive(Debug, Arbitrary)]
struct Input {
    words: Vec<RawIn>,
    smart: bool,
    max_chars: u8,
    max_lines: u8,
    min_dur: Option<u16>,
    max_dur: Option<u16>,
    frames: u8,
    profile: u8,
    audiogram: bool,
    split: bool,
    dash: bool,
    ellipsis: bool,
    shift: i16,
    forbidden: Vec<(String, String)>,
    rate: u8,
    /// An edit: at this word, remove this many and insert these.
    edit_at: u16,
    edit_remove: u8,
    edit_insert: Vec<RawIn>,
}

#[derive(Debug, Arbitrary)]
struct RawIn {
    text: String,
    start: u32,
    len: i16,
    speaker: u8,
    brk: u8,
}

fn settings(i: &Input) -> Settings {
    let max_chars = 10 + u32::from(i.max_chars) % 241;
    let max_lines = 1 + u32::from(i.max_lines) % 5;
    let max = i.max_dur.map(|m| 100 + i64::from(m) % 59_901);
    // Valid settings: minDuration never exceeds maxDuration.
    let min = i
        .min_dur
        .map(|m| (i64::from(m) % 60_001).min(max.unwrap_or(i64::MAX)));
    Settings {
        format_subtitles: i.smart,
        max_chars_per_line: max_chars,
        max_lines_per_subtitle: max_lines,
        min_duration: min.map(Millis),
        max_duration: max.map(Millis),
        min_frames_between_subtitles: u32::from(i.frames) % 101,
        content_profile: match i.profile % 4 {
            0 => ContentProfile::Balanced,
            1 => ContentProfile::Dramatic,
            2 => ContentProfile::Dense,
            _ => ContentProfile::Auto,
        },
        subtitle_mode: if i.audiogram {
            SubtitleMode::Audiogram
        } else {
            SubtitleMode::Default
        },
        split_on_punctuation: i.split,
        em_dash_on_speaker_change: i.dash,
        ellipsis_continuation: i.ellipsis,
        shift_ms: i32::from(i.shift).clamp(-10_000, 10_000),
        forbidden_characters: i
            .forbidden
            .iter()
            .take(100)
            .filter(|(c, _)| !c.is_empty())
            .map(|(c, r)| ForbiddenRule {
                chars: c.clone(),
                replacement: r.clone(),
            })
            .collect(),
        ..Settings::default()
    }
}

fn check(words: &[Word], s: &Settings, fr: FrameRate, cues: &[Cue]) {
    let mut sorted = words.to_vec();
    sorted.sort_by_key(|w| w.start);
    if cues.is_empty() {
        // Control characters and whitespace alone are not visible text.
        let visible = words.iter().any(|w| {
            w.text
                .chars()
                .any(|c| !c.is_whitespace() && !c.is_control())
        });
        assert!(
            !visible || !s.forbidden_characters.is_empty(),
            "visible words but no cues"
        );
    } else {
        let all: Vec<&Word> = cues.iter().flat_map(|c| c.words.iter()).collect();
        assert_eq!(all.len(), sorted.len(), "words lost");
        assert!(
            all.iter().zip(&sorted).all(|(a, b)| *a == b),
            "words reordered"
        );
    }
    let audiogram = s.subtitle_mode == SubtitleMode::Audiogram;
    let max_chars = if audiogram {
        s.max_chars_per_line.min(20)
    } else {
        s.max_chars_per_line
    } as usize;
    let max_lines = if audiogram {
        1
    } else {
        s.max_lines_per_subtitle as usize
    };
    for (k, c) in cues.iter().enumerate() {
        assert_eq!(c.index as usize, k + 1);
        assert!(c.end > c.start, "cue {} is empty in time", c.index);
        assert!(c.start.0 >= 0);
        assert!(
            !c.lines.is_empty() && c.lines.len() <= max_lines,
            "line count"
        );
        for l in &c.lines {
            assert!(!l.is_empty() && !l.contains('\n'));
            assert!(
                l.graphemes(true).count() <= max_chars,
                "line too long: {l:?}"
            );
        }
        assert_eq!(fr.snap(c.start), c.start, "start off the grid");
        assert_eq!(fr.snap(c.end), c.end, "end off the grid");
        if let Some(md) = s.max_duration {
            assert!(
                c.end.0 - c.start.0 <= md.0.max(fr.frames_duration(1).0) + 1,
                "longer than maxDuration"
            );
        }
        if let Some(n) = cues.get(k + 1) {
            assert!(
                fr.frame_round(n.start) - fr.frame_round(c.end)
                    >= i64::from(s.min_frames_between_subtitles),
                "frame gap"
            );
        }
    }
}

fn word(w: &RawIn) -> Word {
    let start = i64::from(w.start % 400_000_000);
    let mut word = Word::new(
        w.text.clone(),
        Millis(start),
        Millis(start + i64::from(w.len)),
        u32::from(w.speaker % 4),
    );
    word.break_after = match w.brk % 8 {
        0 => Some(Break::Line),
        1 => Some(Break::Cue),
        2 => Some(Break::Join),
        _ => None,
    };
    word
}

fuzz_target!(|input: Input| {
    let words: Vec<Word> = input.words.iter().take(2000).map(word).collect();
    let s = settings(&input);
    let fr = match input.rate % 5 {
        0 => FrameRate::FPS_25,
        1 => FrameRate {
            num: 30000,
            den: 1001,
        },
        2 => FrameRate {
            num: 24000,
            den: 1001,
        },
        3 => FrameRate { num: 60, den: 1 },
        _ => FrameRate { num: 50, den: 1 },
    };
    let cues = layout(&words, &s, fr);
    check(&words, &s, fr, &cues);
    assert_eq!(cues, layout(&words, &s, fr), "not deterministic");
    // An edit: the kept layout brought up to date equals a fresh one.
    let mut kept = Layout::new(&words, &s, fr);
    assert_eq!(kept.cues, cues, "Layout::new differs from layout");
    let at = usize::from(input.edit_at).min(words.len());
    let remove = usize::from(input.edit_remove).min(words.len() - at);
    let mut edited = words.clone();
    edited.splice(
        at..at + remove,
        input.edit_insert.iter().take(200).map(word),
    );
    let changed = kept.update(&words, &edited, &s, fr);
    assert_eq!(
        kept.cues,
        layout(&edited, &s, fr),
        "update differs from layout"
    );
    assert!(changed.from + changed.inserted <= kept.cues.len());
});
