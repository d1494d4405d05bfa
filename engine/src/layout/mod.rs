//! The layout: words -> cues under every rule of design.md's layout contract.
//!
//! Four passes, each linear in the number of words:
//! 1. [`prepare`]: sort (stably, by start), trim overlaps, build each word's display text once
//!    (control characters, capitalisation, forbidden characters), count its graphemes once, and cut
//!    words longer than a line into pieces at grapheme boundaries.
//! 2. [`segment`]: choose cue boundaries. Hard boundaries (manual cue breaks, speaker changes
//!    without em dashes, sentence ends with splitOnPunctuation, long silences) cut the transcript
//!    into runs; inside a run, smart mode minimises a cost over a window bounded by the line limits
//!    (a DP over break points), greedy mode fills each cue to the limits.
//! 3. [`lines`]: break each cue into lines (balanced in smart mode) and render its text.
//! 4. [`timing`]: shift, snap to frames, extend for reading pace and minDuration, cap at
//!    maxDuration, keep N frames between cues and chain short gaps.

mod lines;
mod prepare;
mod segment;
mod timing;

use crate::{ContentProfile, Cue, FrameRate, Settings, SubtitleMode, Word};

/// The settings as the passes read them, with the mode-dependent numbers worked out once.
pub(crate) struct Params {
    /// Graphemes per line (audiogram: at most 20).
    max_chars: u32,
    /// Lines per cue (audiogram: 1).
    max_lines: u32,
    /// Units per cue (audiogram: 3).
    max_words: u32,
    /// Smart formatting.
    smart: bool,
    /// Two speakers may share a cue, one line each.
    dialogue: bool,
    /// `...` across cue boundaries inside a sentence.
    ellipsis: bool,
    /// The dash that opens each line of a two-speaker cue, after forbidden characters.
    dash: String,
    dash_len: u32,
    /// The continuation mark, after forbidden characters.
    ell: String,
    ell_len: u32,
    /// Reading pace, characters per second.
    cps: i64,
    /// Whether reading pace applies (not in audiogram mode).
    pace: bool,
    /// Whether cues shorter than 5/6 s are avoided (smart mode, not audiogram).
    avoid_flash: bool,
    /// A pause at least this long (ms) is as good a cue break as a sentence end.
    pause_threshold: i64,
    /// A pause at least this long (ms) always ends the cue.
    hard_pause: i64,
    /// Cost of each line beyond the first (dramatic prefers fewer lines).
    line_cost: i64,
    /// Cost of a one-word cue (low in audiogram mode, where short cues are the point).
    orphan_cost: i64,
    split_on_punctuation: bool,
    gap_frames: u32,
    /// The frame gap in ms.
    gap_ms: i64,
    shift: i64,
    min_dur: i64,
    max_dur: Option<i64>,
}

/// Silence (ms) that always ends a cue outside audiogram mode: showing text through a longer
/// silence would put words on screen long before they are spoken.
const HARD_PAUSE_MS: i64 = 2000;

/// Reading pace picked for `auto` from the transcript's own speech rate (characters per second
/// of speaking time, short pauses included).
fn auto_cps(units: &[prepare::Unit]) -> i64 {
    let mut chars: i64 = 0;
    let mut ms: i64 = 0;
    for (k, u) in units.iter().enumerate() {
        chars += u.g as i64 + 1;
        ms += u.end - u.start;
        if let Some(nx) = units.get(k + 1) {
            let gap = nx.start - u.end;
            if (0..1000).contains(&gap) {
                ms += gap;
            }
        }
    }
    if ms < 1000 {
        return 17;
    }
    let rate_x10 = chars * 10_000 / ms;
    if rate_x10 >= 160 {
        20
    } else if rate_x10 <= 115 {
        15
    } else {
        17
    }
}

impl Params {
    fn new(s: &Settings, fr: FrameRate, forbid: Option<&prepare::Forbid>) -> Params {
        let audiogram = s.subtitle_mode == SubtitleMode::Audiogram;
        let max_chars = s.max_chars_per_line.max(1);
        let max_chars = if audiogram {
            max_chars.min(20)
        } else {
            max_chars
        };
        let max_lines = if audiogram {
            1
        } else {
            s.max_lines_per_subtitle.max(1)
        };
        let decorate = |t: &str| -> (String, u32) {
            let d = forbid
                .and_then(|f| f.apply(t))
                .unwrap_or_else(|| t.to_string());
            let (g, _) = prepare::measure(&d);
            (d, g)
        };
        let (dash, dash_len) = decorate("\u{2014}");
        let (ell, ell_len) = decorate("...");
        let dramatic = s.content_profile == ContentProfile::Dramatic;
        Params {
            max_chars,
            max_lines,
            max_words: if audiogram { 3 } else { u32::MAX },
            smart: s.format_subtitles,
            dialogue: s.em_dash_on_speaker_change && max_lines >= 2 && !audiogram,
            ellipsis: s.ellipsis_continuation,
            dash,
            dash_len,
            ell,
            ell_len,
            cps: match s.content_profile {
                ContentProfile::Dramatic => 15,
                ContentProfile::Dense => 20,
                _ => 17,
            },
            pace: !audiogram,
            avoid_flash: s.format_subtitles && !audiogram,
            pause_threshold: if audiogram {
                300
            } else if dramatic {
                400
            } else {
                700
            },
            hard_pause: if audiogram { 300 } else { HARD_PAUSE_MS },
            line_cost: if dramatic { 40 } else { 10 },
            orphan_cost: if audiogram { 40 } else { 170 },
            split_on_punctuation: s.split_on_punctuation,
            gap_frames: s.min_frames_between_subtitles,
            gap_ms: fr.frames_duration(s.min_frames_between_subtitles).0,
            shift: s.shift_ms as i64,
            min_dur: s.min_duration.map_or(0, |m| m.0.max(0)),
            max_dur: s.max_duration.filter(|m| m.0 > 0).map(|m| m.0),
        }
    }
}

/// Lays `words` out as cues under `settings` on the grid of `frame_rate`. Pure and deterministic;
/// never panics, whatever the words (unsorted, overlapping, zero-length, empty text).
///
/// Every word with visible text appears in exactly one cue's `words`, in start order (words with
/// no visible text ride along with the cue before them); when no word has visible text there are
/// no cues. Cue times are on the frame grid, sorted, at least `minFramesBetweenSubtitles` frames
/// apart, and every cue lasts at least one frame.
pub fn layout(words: &[Word], settings: &Settings, frame_rate: FrameRate) -> Vec<Cue> {
    let forbid = prepare::Forbid::new(&settings.forbidden_characters);
    let mut p = Params::new(settings, frame_rate, forbid.as_ref());
    // Over-long words are cut so that a piece with a `...` still fits a line.
    let reserve = if p.ellipsis { p.ell_len } else { 0 };
    let chunk = p.max_chars.saturating_sub(reserve).max(1);
    let prep = prepare::prepare(
        words,
        &prepare::PrepOptions {
            capitalise: p.smart,
            forbid: forbid.as_ref(),
            chunk,
        },
    );
    if prep.units.is_empty() {
        return Vec::new();
    }
    if settings.content_profile == ContentProfile::Auto {
        p.cps = auto_cps(&prep.units);
    }
    let ranges = segment::segment(&p, &prep.units);
    let mut scratch = lines::Scratch::default();
    let mut rendered = Vec::with_capacity(ranges.len());
    let mut spans = Vec::with_capacity(ranges.len());
    for &(i, j) in &ranges {
        let r = lines::render(&p, &prep, words, i, j, &mut scratch);
        spans.push(timing::Span {
            start: prep.units[i].start,
            end: prep.units[j - 1].end,
            chars: r.chars,
        });
        rendered.push(r);
    }
    let times = timing::time(&p, frame_rate, &spans);
    let n_words = prep.order.len();
    let mut cues = Vec::with_capacity(ranges.len());
    for (k, ((&(i, _), r), (start, end))) in ranges.iter().zip(rendered).zip(times).enumerate() {
        let first = &prep.units[i];
        // The cue owns the words from its first unit's word (or the next one, when the cue opens
        // with the rest of a word cut over a cue boundary) up to the next cue's first word; the
        // first cue also takes any invisible words before it.
        let lo = if k == 0 { 0 } else { own_from(&prep, i) };
        let hi = match ranges.get(k + 1) {
            Some(&(ni, _)) => own_from(&prep, ni),
            None => n_words,
        };
        let lo = lo.min(hi);
        let cue_words = prep.order[lo..hi]
            .iter()
            .filter_map(|&w| words.get(w as usize).cloned())
            .collect();
        cues.push(Cue {
            index: k as u32 + 1,
            start,
            end,
            speaker: first.speaker,
            lines: r.lines,
            words: cue_words,
        });
    }
    cues
}

/// The first word (in sorted order) a cue starting at unit `i` owns.
fn own_from(prep: &prepare::Prepared, i: usize) -> usize {
    let u = &prep.units[i];
    if u.has(prepare::FIRST_PIECE) {
        u.word as usize
    } else {
        u.word as usize + 1
    }
}
