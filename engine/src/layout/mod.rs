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
use prepare::Texts;

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
    /// Microseconds of reading time per character (1e6 / cps).
    us_per_char: i64,
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
/// of speaking time, short pauses included), read straight from the words in reading order.
fn auto_cps(texts: Texts<'_>, n: usize) -> i64 {
    let mut chars: i64 = 0;
    let mut ms: i64 = 0;
    let mut prev_end: Option<i64> = None;
    for k in 0..n {
        let Some(w) = texts.words.get(texts.index(k)) else {
            continue;
        };
        let t = w.text.trim();
        if t.is_empty() {
            continue;
        }
        let start = w.start.0.max(0);
        let end = w.end.0.max(start);
        chars += prepare::measure(t).0 as i64 + 1;
        ms += end - start;
        if let Some(pe) = prev_end {
            let gap = start - pe;
            if (0..1000).contains(&gap) {
                ms += gap;
            }
        }
        prev_end = Some(end);
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

/// The reading pace (characters per second) `auto` picks for `words`, as [`layout`] picks it.
pub(crate) fn auto_cps_of(words: &[Word]) -> i64 {
    let n = words.len().min(u32::MAX as usize - 1);
    let words = &words[..n];
    let order: Option<Vec<u32>> = if words.windows(2).all(|w| w[0].start <= w[1].start) {
        None
    } else {
        let mut o: Vec<u32> = (0..n as u32).collect();
        o.sort_by_key(|&i| words[i as usize].start);
        Some(o)
    };
    let texts = Texts {
        words,
        order: order.as_deref(),
        arena: "",
    };
    auto_cps(texts, n)
}

/// Units per chunk: the layout works through the transcript in chunks of this many units (ending
/// at a hard boundary or the cheapest break within the next `LOOKAHEAD` units), so its working set
/// stays in cache and its time grows linearly however long the transcript is.
const CHUNK: usize = 2048;
/// How far past `CHUNK` units the chunk may run to find a good place to end.
const LOOKAHEAD: usize = 256;

impl Params {
    fn set_cps(&mut self, cps: i64) {
        self.cps = cps.max(1);
        self.us_per_char = 1_000_000 / self.cps;
    }

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
            // A replacement may hold line breaks or control characters: cleaned like word text.
            let d = forbid
                .and_then(|f| f.apply(t))
                .map(|r| prepare::clean(&r).unwrap_or(r).trim().to_string())
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
            us_per_char: 0,
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
    p.set_cps(p.cps);
    // Over-long words are cut so that a piece with a `...` still fits a line.
    let reserve = if p.ellipsis { p.ell_len } else { 0 };
    let chunk_graphemes = p.max_chars.saturating_sub(reserve).max(1);
    let n = words.len().min(u32::MAX as usize - 1);
    let words = &words[..n];
    let order: Option<Vec<u32>> = if words.windows(2).all(|w| w[0].start <= w[1].start) {
        None
    } else {
        let mut o: Vec<u32> = (0..n as u32).collect();
        // Stable: words that start together keep their input order.
        o.sort_by_key(|&i| words[i as usize].start);
        Some(o)
    };
    let word_texts = Texts {
        words,
        order: order.as_deref(),
        arena: "",
    };
    if settings.content_profile == ContentProfile::Auto {
        p.set_cps(auto_cps(word_texts, n));
    }
    let word_at = |k: usize| words.get(word_texts.index(k));
    let mut prep = prepare::Preparer::new(prepare::PrepOptions {
        capitalise: p.smart,
        forbid: forbid.as_ref(),
        chunk: chunk_graphemes,
    });
    let mut units: Vec<prepare::Unit> = Vec::with_capacity((3 * CHUNK).min(n + 1));
    let mut arena = String::new();
    let mut seg = segment::SegScratch::default();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut scratch = lines::Scratch::default();
    let mut emitter = timing::Emitter::new(&p, frame_rate, word_texts, n / 6 + 1);
    // `units[..base]` is already laid out (one unit kept as the context of the next chunk).
    let mut base = 0;
    let mut k = 0;
    loop {
        while k < n && units.len() - base <= CHUNK + LOOKAHEAD {
            if let Some(w) = word_at(k) {
                let next_start = if k + 1 < n {
                    word_at(k + 1).map(|x| x.start.0)
                } else {
                    None
                };
                prep.push(k as u32, w, next_start, &mut units, &mut arena);
            }
            k += 1;
        }
        if base >= units.len() {
            break;
        }
        let end = if k >= n {
            units.len()
        } else {
            segment::chunk_end(&p, &units, base + CHUNK, base + CHUNK + LOOKAHEAD)
        };
        segment::segment(&p, &units, (base, end), &mut seg, &mut ranges);
        let texts = Texts {
            arena: &arena,
            ..word_texts
        };
        for &(i, j) in &ranges {
            let r = lines::render(&p, &units, texts, (i, j), &mut scratch);
            let first = &units[i];
            let span = timing::Span {
                start: first.start,
                end: units[j - 1].end,
                chars: r.chars,
            };
            emitter.push(span, r.lines, first.speaker, own_from(first));
        }
        ranges.clear();
        // Keep the last laid-out unit as context, and the units not yet laid out.
        units.drain(..end - 1);
        base = 1;
        if !arena.is_empty() {
            let mut kept = String::new();
            for u in units.iter_mut().filter(|u| u.has(prepare::IN_ARENA)) {
                let t = arena.get(u.lo as usize..u.hi as usize).unwrap_or("");
                u.lo = kept.len() as u32;
                kept.push_str(t);
                u.hi = kept.len() as u32;
            }
            arena = kept;
        }
    }
    emitter.finish(n)
}

/// The first word (in reading order) a cue starting with unit `u` owns: the unit's word, or the
/// next one when the cue opens with the rest of a word cut over a cue boundary.
fn own_from(u: &prepare::Unit) -> usize {
    if u.has(prepare::FIRST_PIECE) {
        u.word as usize
    } else {
        u.word as usize + 1
    }
}
