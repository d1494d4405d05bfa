//! Words as recognised (the stored source of truth) and cues as laid out (always derived).

use std::sync::Arc;

use crate::time::Millis;

/// A manual break an editor pinned after a word; the layout honours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Break {
    /// The next word starts a new line of the same cue (when the cue has a line left).
    Line,
    /// The next word starts a new cue.
    Cue,
    /// The next word stays in this cue (an editor merged two cues the layout had cut here): the
    /// layout cuts there only when no cutting within the hard limits (line length, lines,
    /// maxDuration) keeps them together, and never overrides a hard boundary (a speaker change
    /// outside dialogue, a long pause, splitOnPunctuation).
    Join,
    /// A cue break after the last word of a cue timed by hand (a cue of an imported subtitle
    /// file): that cue shows exactly its words' times, the first word's start to the last word's
    /// end (shifted, on the frame grid), with no rule of timing applied to it (reading pace,
    /// minimum/maximum duration, gap, chaining, shot changes; QC reports what they would have
    /// changed). The mark is the cue's own: the cues around it may be timed by the rules (a range
    /// laid out again), and a cue timed by the rules after one timed by hand starts at least the
    /// frame gap after its end.
    Timed,
}

/// One recognised word with its timing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Word {
    /// The word as recognised, punctuation attached (`"Hello,"`). Shared, not copied: the cues laid
    /// out from a word list hold the same text as the list (a clone is a reference count).
    pub text: Arc<str>,
    /// Start of the word in media time.
    pub start: Millis,
    /// End of the word in media time; `end >= start` after normalisation.
    pub end: Millis,
    /// Speaker number as the recogniser labelled it (0 when unknown).
    pub speaker: u32,
    /// The speaker was set by a person (in the editor), not by a recogniser or diarization: a
    /// re-detection of speakers keeps it.
    pub speaker_set: bool,
    /// A manual break after this word, if an editor set one.
    pub break_after: Option<Break>,
}

impl Word {
    /// A word without a manual break.
    pub fn new(text: impl Into<Arc<str>>, start: Millis, end: Millis, speaker: u32) -> Word {
        Word {
            text: text.into(),
            start,
            end,
            speaker,
            speaker_set: false,
            break_after: None,
        }
    }

    /// Changes the text through `f`, on a copy of its own (other copies of the word keep theirs).
    pub fn edit_text(&mut self, f: impl FnOnce(&mut String)) {
        let mut text = self.text.to_string();
        f(&mut text);
        self.text = text.into();
    }
}

/// A word as it arrives from outside (JSON, a recogniser): seconds as `f64`, possibly hostile.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "json", derive(serde::Deserialize, serde::Serialize))]
pub struct RawWord {
    /// The word's text.
    pub text: String,
    /// Start, seconds.
    pub start: f64,
    /// End, seconds.
    pub end: f64,
    /// Speaker number; 0 when absent.
    #[cfg_attr(feature = "json", serde(default))]
    pub speaker: u32,
}

/// Why a list of raw words was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WordError {
    /// A start or end time is NaN or infinite.
    NotFinite {
        /// Index of the word in the input.
        index: usize,
    },
}

impl std::fmt::Display for WordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WordError::NotFinite { index } => {
                write!(f, "word {index} has a time that is not a finite number")
            }
        }
    }
}

impl std::error::Error for WordError {}

/// Converts raw words to engine words: NaN or infinite times are refused; negative times clamp to
/// zero and an end before its start is raised to the start. Order and overlaps are left to
/// [`crate::layout`], which sorts and trims them.
pub fn words_from_raw(raw: &[RawWord]) -> Result<Vec<Word>, WordError> {
    raw.iter()
        .enumerate()
        .map(|(index, w)| {
            let start = Millis::from_secs_f64(w.start).ok_or(WordError::NotFinite { index })?;
            let end = Millis::from_secs_f64(w.end).ok_or(WordError::NotFinite { index })?;
            let start = start.max(Millis::ZERO);
            let end = end.max(start);
            Ok(Word::new(w.text.clone(), start, end, w.speaker))
        })
        .collect()
}

/// One subtitle cue: what a player shows between `start` and `end`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cue {
    /// 1-based position in the cue list.
    pub index: u32,
    /// When the cue appears.
    pub start: Millis,
    /// When the cue disappears; `end > start` for laid-out cues.
    pub end: Millis,
    /// Speaker of the cue's first word.
    pub speaker: u32,
    /// The text, one entry per displayed line; never empty for laid-out cues.
    pub lines: Vec<String>,
    /// The words shown, with their timings as detected. Empty for cues read from a file.
    pub words: Vec<Word>,
}

impl Cue {
    /// A cue without words, as subtitle readers produce.
    pub fn from_lines(index: u32, start: Millis, end: Millis, lines: Vec<String>) -> Cue {
        Cue {
            index,
            start,
            end,
            speaker: 0,
            lines,
            words: Vec::new(),
        }
    }

    /// The cue's text as one line: its lines joined by one space.
    pub fn text(&self) -> String {
        self.lines.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_words_with_nan_are_refused_and_negatives_clamped() {
        let raw = vec![RawWord {
            text: "a".into(),
            start: -1.0,
            end: -0.5,
            speaker: 0,
        }];
        let words = words_from_raw(&raw).unwrap();
        assert_eq!((words[0].start, words[0].end), (Millis(0), Millis(0)));
        let bad = vec![RawWord {
            text: "b".into(),
            start: f64::NAN,
            end: 1.0,
            speaker: 0,
        }];
        assert_eq!(words_from_raw(&bad), Err(WordError::NotFinite { index: 0 }));
    }
}
