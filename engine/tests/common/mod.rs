//! Shared helpers of the engine's integration tests: word builders, a readable cue rendering and
//! the invariant checks that proptest (and the fuzz target) assert.
#![allow(dead_code)]

use cuecraft_engine::{Cue, FrameRate, Millis, Settings, Word};
use unicode_segmentation::UnicodeSegmentation;

/// Words from `(text, start_ms, end_ms, speaker)`.
pub fn words(spec: &[(&str, i64, i64, u32)]) -> Vec<Word> {
    spec.iter()
        .map(|&(t, s, e, sp)| Word::new(t, Millis(s), Millis(e), sp))
        .collect()
}

/// Words from running text, spoken at `ms_per_word` with a gap of `gap` ms, all one speaker.
/// A word ending in `|` gets an extra 800 ms pause after it (the `|` is removed).
pub fn speech(text: &str, ms_per_word: i64, gap: i64) -> Vec<Word> {
    let mut t = 0;
    let mut out = Vec::new();
    for w in text.split_whitespace() {
        let (w, pause) = match w.strip_suffix('|') {
            Some(w) => (w, 800),
            None => (w, 0),
        };
        out.push(Word::new(w, Millis(t), Millis(t + ms_per_word), 0));
        t += ms_per_word + gap + pause;
    }
    out
}

fn ts(m: Millis) -> String {
    let ms = m.0;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// One line per cue: `index start-end sN | line | line` and the number of words it owns.
pub fn render(cues: &[Cue]) -> String {
    let mut out = String::new();
    for c in cues {
        out.push_str(&format!(
            "{:>3} {}-{} s{} ({}w) | {}\n",
            c.index,
            ts(c.start),
            ts(c.end),
            c.speaker,
            c.words.len(),
            c.lines.join(" | ")
        ));
    }
    out
}

/// The order the layout reads words in: stable by start.
pub fn sorted(words: &[Word]) -> Vec<Word> {
    let mut w = words.to_vec();
    w.sort_by_key(|w| w.start);
    w
}

/// Asserts every invariant of the layout contract; returns a description of the first violation.
pub fn check_invariants(
    words: &[Word],
    settings: &Settings,
    fr: FrameRate,
    cues: &[Cue],
) -> Result<(), String> {
    // Control characters and whitespace alone are not visible text.
    let visible = words.iter().any(|w| {
        w.text
            .chars()
            .any(|c| !c.is_whitespace() && !c.is_control())
    });
    if cues.is_empty() {
        // No cues is right only when nothing is visible (forbidden characters may erase words).
        if visible && settings.forbidden_characters.is_empty() {
            return Err("visible words but no cues".into());
        }
    } else {
        let all: Vec<Word> = cues.iter().flat_map(|c| c.words.iter().cloned()).collect();
        let expected = sorted(words);
        if all != expected {
            return Err(format!(
                "words lost or reordered: {} in, {} out",
                expected.len(),
                all.len()
            ));
        }
    }
    let max_chars = settings.max_chars_per_line as usize;
    let audiogram = settings.subtitle_mode == cuecraft_engine::SubtitleMode::Audiogram;
    let max_lines = if audiogram {
        1
    } else {
        settings.max_lines_per_subtitle as usize
    };
    let max_chars = if audiogram {
        max_chars.min(20)
    } else {
        max_chars
    };
    for (k, c) in cues.iter().enumerate() {
        if c.index as usize != k + 1 {
            return Err(format!("cue {k} has index {}", c.index));
        }
        if c.end <= c.start {
            return Err(format!("cue {} ends at or before its start", c.index));
        }
        if c.start.0 < 0 {
            return Err(format!("cue {} starts before 0", c.index));
        }
        if c.lines.is_empty() || c.lines.len() > max_lines {
            return Err(format!("cue {} has {} lines", c.index, c.lines.len()));
        }
        for l in &c.lines {
            let g = l.graphemes(true).count();
            if g > max_chars {
                return Err(format!("cue {} line {l:?} has {g} graphemes", c.index));
            }
            if l.is_empty() || l.contains('\n') {
                return Err(format!("cue {} has a bad line {l:?}", c.index));
            }
        }
        if fr.snap(c.start) != c.start || fr.snap(c.end) != c.end {
            return Err(format!("cue {} is off the frame grid", c.index));
        }
        if let Some(md) = settings.max_duration {
            let one_frame = fr.frames_duration(1);
            if c.end.0 - c.start.0 > md.0.max(one_frame.0) + 1 {
                return Err(format!("cue {} is longer than maxDuration", c.index));
            }
        }
        if let Some(n) = cues.get(k + 1) {
            let gap = fr.frame_round(n.start) - fr.frame_round(c.end);
            if gap < settings.min_frames_between_subtitles as i64 {
                return Err(format!(
                    "cues {} and {} are {gap} frames apart",
                    c.index, n.index
                ));
            }
        }
    }
    Ok(())
}
