//! The layout: words -> cues under every rule of design.md's layout contract.

use crate::{Cue, FrameRate, Settings, Word};

/// Lays `words` out as cues. Pure and deterministic; never panics.
pub fn layout(words: &[Word], settings: &Settings, frame_rate: FrameRate) -> Vec<Cue> {
    // Placeholder until the layout lands: one cue per word.
    let _ = (settings, frame_rate);
    words
        .iter()
        .enumerate()
        .map(|(i, w)| Cue {
            index: i as u32 + 1,
            start: w.start,
            end: w.end,
            speaker: w.speaker,
            lines: vec![w.text.clone()],
            words: vec![w.clone()],
        })
        .collect()
}
