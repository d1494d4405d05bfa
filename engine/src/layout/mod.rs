//! The layout: words -> cues under every rule of design.md's layout contract.
//!
//! Four passes, each linear in the number of words:
//! 1. [`prepare`]: sort (stably, by start), trim overlaps, build each word's display text once
//!    (control characters, capitalisation, forbidden characters), count its graphemes once, and cut
//!    words longer than a line into pieces at grapheme boundaries.
//!    [`breaks`] holds what a break between two units costs or adds, which the next two read.
//! 2. [`segment`]: choose cue boundaries. Hard boundaries (manual cue breaks, speaker changes
//!    without em dashes, sentence ends with splitOnPunctuation, long silences) cut the transcript
//!    into runs; inside a run, smart mode minimises a cost over a window bounded by the line limits
//!    (a DP over break points), greedy mode fills each cue to the limits.
//! 3. [`lines`]: break each cue into lines (balanced in smart mode) and render its text.
//! 4. [`timing`]: shift, snap to frames, extend for reading pace and minDuration, cap at
//!    maxDuration, keep N frames between cues and chain short gaps; with shot changes, the
//!    rules of [`shots`] (smart mode only).

mod breaks;
mod lines;
mod pinned;
mod prepare;
mod segment;
pub(crate) mod shots;
mod timing;

pub use pinned::{pin, relayout};

use crate::{Break, ContentProfile, Cue, FrameRate, Millis, Settings, SubtitleMode, Word};
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
    /// Microseconds of reading time per character (1e6 / cps, rounded up).
    us_per_char: i64,
    /// Whether reading pace applies (not in audiogram mode).
    pace: bool,
    /// Whether cues shorter than 5/6 s are avoided (smart mode, not audiogram).
    avoid_flash: bool,
    /// A pause at least this long (ms) is as good a cue break as a sentence end.
    pause_threshold: i64,
    /// `2 * pause_threshold` as a multiplier: `n / (2 * pause_threshold)` is
    /// `(n * pause_div) >> 64` for every `n` under 2^32 (Lemire, Kaser and Kurz, "Faster
    /// remainder by direct computation", 2019), one multiply where a division took dozens of
    /// cycles.
    pause_div: u64,
    /// A pause at least this long (ms) always ends the cue.
    hard_pause: i64,
    /// Cost of each line beyond the first (dramatic prefers fewer lines).
    line_cost: i64,
    /// Cost of a one-word cue (low in audiogram mode, where short cues are the point).
    orphan_cost: i64,
    split_on_punctuation: bool,
    gap_frames: u32,
    /// The frame gap and one frame more, in ms: what a cue's time on screen may lose before the
    /// next cue's first word. Its start and end are snapped to the nearest frame, so it can fall
    /// short of `next word's start - gap - first word's start` by up to one frame, and reading
    /// pace is judged on the snapped times.
    room_gap: i64,
    /// Frames per millisecond and milliseconds per frame, for the segmentation's estimate of
    /// where timing will put a cue's start.
    frames_per_ms: f64,
    ms_per_frame: f64,
    /// Cost every cue end with the general walk (tests compare it with the fast walk).
    general_only: bool,
    /// Cost of each sentence that ends inside a cue: `segment::INNER_COST`, or
    /// `segment::GUESSED_INNER_COST` where sentence ends are guessed from pauses.
    inner_cost: i64,
    shift: i64,
    min_dur: i64,
    max_dur: Option<i64>,
    /// The frames shot changes fall on (smart mode only; empty: timing ignores the picture).
    cuts: Vec<i64>,
    /// Half a second in frames (the shot-change rules' window).
    half: i64,
    /// The words are pinned: their manual breaks are the whole segmentation ([`pinned`]).
    pinned: bool,
}

/// Silence (ms) that always ends a cue outside audiogram mode: showing text through a longer
/// silence would put words on screen long before they are spoken.
const HARD_PAUSE_MS: i64 = 2000;

/// In a transcript without sentence punctuation, a silence at least this long (ms) after a word
/// is taken as a sentence end for cue breaking.
pub(crate) const PAUSE_SENTENCE_MS: i64 = 300;

/// Whether a word's text ends a sentence as cue breaking reads it: `.`, `?`, `!` (and their CJK
/// forms) before closing quotes. Wider than [`crate::qc::ends_sentence`]: an ellipsis and an
/// abbreviation's full stop count too.
pub(crate) fn breaks_sentence(text: &str) -> bool {
    prepare::ends_sentence(text)
}

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
        let (c, m, end) = speech(w, prev_end);
        chars += c;
        ms += m;
        if end.is_some() {
            prev_end = end;
        }
    }
    cps_of(chars, ms)
}

/// The reading pace for `chars` characters in `ms` of speaking time: dense, balanced or dramatic.
fn cps_of(chars: i64, ms: i64) -> i64 {
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
    let order = reading_order(words);
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
    /// Times cues to `shot_changes` in smart mode.
    fn set_cuts(&mut self, shot_changes: &[Millis], fr: FrameRate) {
        if self.smart {
            self.cuts = shots::shot_frames(shot_changes, fr);
        }
    }

    fn set_cps(&mut self, cps: i64) {
        self.cps = cps.max(1);
        // Rounded up, so a cue judged readable in time is readable at exactly the pace.
        self.us_per_char = (1_000_000 + self.cps - 1) / self.cps;
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
        let pause_threshold = if audiogram {
            300
        } else if dramatic {
            400
        } else {
            700
        };
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
            pause_threshold,
            pause_div: u64::MAX / (2 * pause_threshold) as u64 + 1,
            hard_pause: if audiogram { 300 } else { HARD_PAUSE_MS },
            line_cost: if dramatic { 40 } else { 10 },
            orphan_cost: if audiogram { 40 } else { 170 },
            split_on_punctuation: s.split_on_punctuation,
            gap_frames: s.min_frames_between_subtitles,
            frames_per_ms: fr.num as f64 / (1000.0 * fr.den as f64),
            ms_per_frame: 1000.0 * fr.den as f64 / fr.num as f64,
            general_only: false,
            room_gap: fr.frames_duration(s.min_frames_between_subtitles).0,
            inner_cost: segment::INNER_COST,
            shift: s.shift_ms as i64,
            min_dur: s.min_duration.map_or(0, |m| m.0.max(0)),
            max_dur: s.max_duration.filter(|m| m.0 > 0).map(|m| m.0),
            cuts: Vec::new(),
            half: shots::half_second(fr),
            pinned: false,
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
    layout_with(words, settings, frame_rate, &[], false, None)
}

/// [`layout`] timed to the picture as well: `shot_changes` are the times of the media's shot
/// changes (the first frame of each new shot; any order). With `formatSubtitles` (smart mode) cue
/// in- and out-times keep the shot-change rules at `frame_rate` (an in-time on a cut when speech
/// starts within half a second after it, an out-time two frames before a cut it would cross by
/// less than half a second, no cue hanging over a cut by a few frames), never at the cost of the
/// frame gap, reading pace, minimum or maximum duration. With no shot changes, or without smart
/// formatting, the cues are [`layout`]'s.
pub fn layout_with_shots(
    words: &[Word],
    settings: &Settings,
    frame_rate: FrameRate,
    shot_changes: &[Millis],
) -> Vec<Cue> {
    layout_with(words, settings, frame_rate, shot_changes, false, None)
}

/// [`layout_with_shots`], with the general walk for every cue end when `general_only`.
fn layout_with(
    words: &[Word],
    settings: &Settings,
    frame_rate: FrameRate,
    shot_changes: &[Millis],
    general_only: bool,
    record: Option<&mut Vec<(usize, Break)>>,
) -> Vec<Cue> {
    let n = words.len().min(u32::MAX as usize - 1);
    let words = &words[..n];
    let forbid = prepare::Forbid::new(&settings.forbidden_characters);
    let order = reading_order(words);
    let texts = Texts {
        words,
        order: order.as_deref(),
        arena: "",
    };
    let cps = (settings.content_profile == ContentProfile::Auto).then(|| auto_cps(texts, n));
    let pause_end = !prepare::any_sentence_end(words);
    let mut p = Params::for_run(settings, frame_rate, forbid.as_ref(), cps, pause_end);
    p.general_only = general_only;
    p.set_cuts(shot_changes, frame_rate);
    p.pinned = pinned::is_pinned(texts);
    let run = Run {
        p: &p,
        fr: frame_rate,
        texts,
        forbid: forbid.as_ref(),
        pause_end: (p.smart && pause_end).then_some(PAUSE_SENTENCE_MS),
        record: record.map(std::cell::RefCell::new),
    };
    run.go(State::start(), None, |_| None).0
}

/// [`layout`] of `words` (not pinned), recording in `out` the breaks that pin its cues and lines
/// (see [`pinned::pin`]).
fn layout_recording(
    words: &[Word],
    settings: &Settings,
    frame_rate: FrameRate,
    out: &mut Vec<(usize, Break)>,
) {
    layout_with(words, settings, frame_rate, &[], false, Some(out));
}

/// The words' reading order (a stable sort by start) when it is not their input order.
fn reading_order(words: &[Word]) -> Option<Vec<u32>> {
    if words.windows(2).all(|w| w[0].start <= w[1].start) {
        None
    } else {
        let mut o: Vec<u32> = (0..words.len() as u32).collect();
        // Stable: words that start together keep their input order.
        o.sort_by_key(|&i| words[i as usize].start);
        Some(o)
    }
}

impl Params {
    /// The parameters of one layout: `cps` is the reading pace `auto` picked (`None` for the
    /// other profiles), `pause_end` whether sentence ends are guessed from pauses (the words have
    /// no sentence punctuation).
    fn for_run(
        settings: &Settings,
        fr: FrameRate,
        forbid: Option<&prepare::Forbid>,
        cps: Option<i64>,
        pause_end: bool,
    ) -> Params {
        let mut p = Params::new(settings, fr, forbid);
        p.set_cps(cps.unwrap_or(p.cps));
        // A transcript without any sentence punctuation (a recogniser that gives none): its
        // sentence ends are guessed from its pauses, so cues still end where sentences do.
        if p.smart && pause_end {
            p.inner_cost = segment::GUESSED_INNER_COST;
        }
        p
    }
}

/// What the layout carries from one chunk to the next: everything the rest of the transcript's
/// layout depends on besides the words not yet read. Two runs in the same state at the same word
/// lay out the rest identically, which is what makes [`Layout::update`] exact.
#[derive(Clone)]
struct State {
    /// Words read (in reading order).
    k: usize,
    /// Units before `base` are laid out (one is kept as the next chunk's context).
    base: usize,
    /// The context unit and the units read but not yet laid out.
    units: Vec<prepare::Unit>,
    /// Display texts of the units that differ from their words' own.
    arena: String,
    prep: prepare::PrepState,
    /// The last cue, waiting for the next one's start to be timed.
    pending: Option<timing::Pending>,
    /// Cues finished before this state.
    cues: usize,
}

impl State {
    fn start() -> State {
        State {
            k: 0,
            base: 0,
            units: Vec::new(),
            arena: String::new(),
            prep: prepare::PrepState::START,
            pending: None,
            cues: 0,
        }
    }

    /// Whether `self` (of the words before an edit) is `other` (of the words after it) with
    /// every word position `shift` further on, `same_text` comparing the display texts of two
    /// units (with the states' arenas).
    fn same_as(
        &self,
        other: &State,
        shift: isize,
        same_text: impl Fn(&prepare::Unit, &str, &prepare::Unit, &str) -> bool,
    ) -> bool {
        let moved = |w: usize| w.checked_add_signed(shift);
        moved(self.k) == Some(other.k)
            && self.base == other.base
            && self.prep == other.prep
            && (self.cues > 0 || self.pending.is_some())
                == (other.cues > 0 || other.pending.is_some())
            && match (&self.pending, &other.pending) {
                (Some(a), Some(b)) => moved(a.lo) == Some(b.lo) && a.same_but_lo(b),
                (None, None) => true,
                _ => false,
            }
            && self.arena == other.arena
            && self.units.len() == other.units.len()
            && self.units.iter().zip(&other.units).all(|(a, b)| {
                moved(a.word as usize) == Some(b.word as usize)
                    && a.same_but_word(b)
                    && same_text(a, &self.arena, b, &other.arena)
            })
    }

    /// Moves every word position `shift` further on and every cue count `cue_shift`.
    fn shift(&mut self, shift: isize, cue_shift: isize) {
        let moved = |w: usize| w.saturating_add_signed(shift);
        self.k = moved(self.k);
        self.cues = self.cues.saturating_add_signed(cue_shift);
        if let Some(p) = &mut self.pending {
            p.lo = moved(p.lo);
        }
        for u in &mut self.units {
            u.word = moved(u.word as usize) as u32;
        }
    }
}

/// One layout's fixed inputs.
struct Run<'a> {
    p: &'a Params,
    fr: FrameRate,
    texts: Texts<'a>,
    forbid: Option<&'a prepare::Forbid>,
    pause_end: Option<i64>,
    /// Where to record the breaks that pin each cue and its lines ([`pinned::pin`]).
    record: Option<std::cell::RefCell<&'a mut Vec<(usize, Break)>>>,
}

impl Run<'_> {
    /// Lays out from `state` to the end of the words, recording the state after every chunk in
    /// `marks` when given. After each chunk `stop` may end the run early (when the rest is known
    /// to equal an earlier layout's): then the last cue is left pending and the second value is
    /// what `stop` returned. Returns the cues finished in this run.
    fn go(
        &self,
        mut st: State,
        mut marks: Option<&mut Vec<State>>,
        mut stop: impl FnMut(&State) -> Option<usize>,
    ) -> (Vec<Cue>, Option<usize>) {
        let (p, word_texts) = (self.p, self.texts);
        let words = word_texts.words;
        let n = words.len();
        // Over-long words are cut so that a piece with a `...` still fits a line.
        let reserve = if p.ellipsis { p.ell_len } else { 0 };
        let mut prep = prepare::Preparer::resume(
            prepare::PrepOptions {
                capitalise: p.smart,
                forbid: self.forbid,
                chunk: p.max_chars.saturating_sub(reserve).max(1),
                pause_end: self.pause_end,
            },
            st.prep,
        );
        let mut units = std::mem::take(&mut st.units);
        units.reserve((3 * CHUNK).min(n - st.k.min(n) + 1));
        let mut arena = std::mem::take(&mut st.arena);
        let mut seg = segment::SegScratch::default();
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        let mut scratch = lines::Scratch::default();
        let mut emitter = timing::Emitter::resume(
            p,
            self.fr,
            word_texts,
            (n - st.k.min(n)) / 6 + 1,
            st.cues,
            st.pending.take(),
        );
        let word_at = |k: usize| words.get(word_texts.index(k));
        // `units[..base]` is already laid out (one unit kept as the context of the next chunk).
        let mut base = st.base;
        let mut k = st.k;
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
            } else if p.pinned {
                pinned::chunk_end(&units, base, base + CHUNK, base + CHUNK + LOOKAHEAD)
            } else {
                segment::chunk_end(p, &units, base + CHUNK, base + CHUNK + LOOKAHEAD)
            };
            segment::segment(p, &units, (base, end), &mut seg, &mut ranges);
            let texts = Texts {
                arena: &arena,
                ..word_texts
            };
            for &(i, j) in &ranges {
                let r = lines::render(p, &units, texts, (i, j), &mut scratch);
                if let Some(rec) = &self.record {
                    pinned::record(&units, (i, j), scratch.starts(), &mut rec.borrow_mut());
                }
                let first = &units[i];
                let span = timing::Span {
                    start: first.start,
                    end: units[j - 1].end,
                    chars: r.chars,
                    timed: units[j - 1].extra & prepare::TIMED != 0,
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
            if base >= units.len() {
                // Nothing left to lay out: no state worth recording.
                continue;
            }
            if let Some(marks) = marks.as_deref_mut() {
                let (cues, pending) = emitter.state();
                let mark = State {
                    k,
                    base,
                    units: units.clone(),
                    arena: arena.clone(),
                    prep: prep.state(),
                    pending: pending.cloned(),
                    cues,
                };
                let found = stop(&mark);
                marks.push(mark);
                if found.is_some() {
                    return (emitter.into_finished(), found);
                }
            }
        }
        (emitter.finish(n), None)
    }
}

/// Replaces `removed` cues of `list` from `from` by `cues`, and says which cues changed: the
/// ones of `cues` that show the same as the cues they replace at either end are left alone.
/// The cues after the change are numbered anew.
fn splice_cues(list: &mut Vec<Cue>, from: usize, removed: usize, cues: Vec<Cue>) -> CueSplice {
    let was = &list[from..from + removed];
    let head = was
        .iter()
        .zip(&cues)
        .take_while(|(a, b)| same_cue(a, b))
        .count();
    let tail = was[head..]
        .iter()
        .rev()
        .zip(cues[head..].iter().rev())
        .take_while(|(a, b)| same_cue(a, b))
        .count();
    let shift = cues.len() != removed;
    let (from, removed, inserted) = (from + head, removed - head - tail, cues.len() - head - tail);
    let end = cues.len() - tail;
    list.splice(from..from + removed, cues.into_iter().take(end).skip(head));
    if shift {
        for (i, c) in list.iter_mut().enumerate().skip(from + inserted) {
            c.index = i as u32 + 1;
        }
    }
    CueSplice {
        from,
        removed,
        inserted,
    }
}

/// Whether two cues show the same (their numbers aside).
fn same_cue(a: &Cue, b: &Cue) -> bool {
    a.start == b.start
        && a.end == b.end
        && a.speaker == b.speaker
        && a.lines == b.lines
        && a.words == b.words
}

/// The display text of unit `u` of `words`, with the arena of its state.
fn unit_text<'a>(words: &'a [Word], arena: &'a str, u: &prepare::Unit) -> Option<&'a str> {
    let (lo, hi) = (u.lo as usize, u.hi as usize);
    if u.has(prepare::IN_ARENA) {
        arena.get(lo..hi)
    } else {
        words.get(u.word as usize)?.text.get(lo..hi)
    }
}

/// Words with a sentence end, and the sums `auto` judges the pace by: what [`Layout::update`]
/// adjusts by the words an edit changed instead of reading every word again.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct Tally {
    /// Words whose text ends a sentence.
    sentence_ends: usize,
    /// [`auto_cps`]'s characters and milliseconds of speaking time.
    chars: i64,
    ms: i64,
}

impl Tally {
    /// The tally of `words` (in reading order), the word before them ending at `prev_end` (ms;
    /// `None` when there is none with visible text); with the end of their last word with visible
    /// text (or `prev_end`).
    fn of(words: &[Word], mut prev_end: Option<i64>) -> (Tally, Option<i64>) {
        let mut t = Tally::default();
        for w in words {
            if prepare::any_sentence_end(std::slice::from_ref(w)) {
                t.sentence_ends += 1;
            }
            let (c, ms, end) = speech(w, prev_end);
            t.chars += c;
            t.ms += ms;
            if end.is_some() {
                prev_end = end;
            }
        }
        (t, prev_end)
    }

    /// The reading pace `auto` picks for these sums (as [`auto_cps`]).
    fn cps(&self) -> i64 {
        cps_of(self.chars, self.ms)
    }
}

/// What word `w` adds to [`auto_cps`]'s sums after a word with visible text that ended at
/// `prev_end`: (characters, ms, its own end when it has visible text).
fn speech(w: &Word, prev_end: Option<i64>) -> (i64, i64, Option<i64>) {
    let t = w.text.trim();
    if t.is_empty() {
        return (0, 0, None);
    }
    let start = w.start.0.max(0);
    let end = w.end.0.max(start);
    let mut ms = end - start;
    if let Some(pe) = prev_end {
        let gap = start - pe;
        if (0..1000).contains(&gap) {
            ms += gap;
        }
    }
    (prepare::measure(t).0 as i64 + 1, ms, Some(end))
}

/// What a [`Layout`] was laid out under; an update under anything else lays out again.
#[derive(Clone, PartialEq)]
struct Under {
    settings: Settings,
    frame_rate: FrameRate,
    /// The shot changes' times, as given.
    shots: Vec<Millis>,
}

/// A layout that can follow edits of its words: [`Layout::update`] lays out again only from the
/// chunk before the first changed word to the first chunk after the edit whose end state equals
/// the previous layout's at the same word, and takes the rest from the previous layout. Its cues
/// always equal [`layout`]'s of the same words.
#[derive(Clone)]
pub struct Layout {
    /// The cues, as [`layout`] gives them.
    pub cues: Vec<Cue>,
    under: Under,
    /// The state after each chunk; empty when the words were not in reading order (an update
    /// then lays out everything again).
    marks: Vec<State>,
    tally: Tally,
    words: usize,
    /// Chunks the last [`Layout::update`] laid out (every chunk when it laid out everything).
    relaid: usize,
}

/// Which cues an update replaced: `cues[from..from + inserted]` are new, where the previous
/// layout had `removed` cues.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CueSplice {
    /// The first cue that changed (or may have).
    pub from: usize,
    /// Cues of the previous layout replaced.
    pub removed: usize,
    /// Cues in their place.
    pub inserted: usize,
}

impl Layout {
    /// Lays `words` out as [`layout`] does, keeping what an update needs.
    pub fn new(words: &[Word], settings: &Settings, frame_rate: FrameRate) -> Layout {
        Layout::with_shots(words, settings, frame_rate, &[])
    }

    /// Lays `words` out as [`layout_with_shots`] does, keeping what an update needs; updates
    /// keep timing to the same shot changes.
    pub fn with_shots(
        words: &[Word],
        settings: &Settings,
        frame_rate: FrameRate,
        shot_changes: &[Millis],
    ) -> Layout {
        let n = words.len().min(u32::MAX as usize - 1);
        let words = &words[..n];
        let under = Under {
            settings: settings.clone(),
            frame_rate,
            shots: shot_changes.to_vec(),
        };
        let order = reading_order(words);
        if order.is_some() {
            return Layout {
                cues: layout_with_shots(words, settings, frame_rate, shot_changes),
                under,
                marks: Vec::new(),
                tally: Tally::default(),
                words: n,
                relaid: usize::MAX,
            };
        }
        let (tally, _) = Tally::of(words, None);
        let mut marks = Vec::new();
        let cues = Layout::run(
            words,
            &under,
            tally,
            State::start(),
            Some(&mut marks),
            |_| None,
        )
        .0;
        Layout {
            relaid: marks.len() + 1,
            cues,
            under,
            marks,
            tally,
            words: n,
        }
    }

    /// Lays out sorted `words` from `state` (see [`Run::go`]).
    fn run(
        words: &[Word],
        under: &Under,
        tally: Tally,
        state: State,
        marks: Option<&mut Vec<State>>,
        stop: impl FnMut(&State) -> Option<usize>,
    ) -> (Vec<Cue>, Option<usize>) {
        let forbid = prepare::Forbid::new(&under.settings.forbidden_characters);
        let auto = under.settings.content_profile == ContentProfile::Auto;
        let pause_end = tally.sentence_ends == 0;
        let mut p = Params::for_run(
            &under.settings,
            under.frame_rate,
            forbid.as_ref(),
            auto.then(|| tally.cps()),
            pause_end,
        );
        p.set_cuts(&under.shots, under.frame_rate);
        let texts = Texts {
            words,
            order: None,
            arena: "",
        };
        p.pinned = pinned::is_pinned(texts);
        let run = Run {
            p: &p,
            fr: under.frame_rate,
            texts: Texts {
                words,
                order: None,
                arena: "",
            },
            forbid: forbid.as_ref(),
            pause_end: (p.smart && pause_end).then_some(PAUSE_SENTENCE_MS),
            record: None,
        };
        run.go(state, marks, stop)
    }

    /// Brings the layout from `old` (the words it was laid out from) to `new` under `settings`
    /// and `frame_rate`, and says which cues changed. Afterwards `self.cues` equals
    /// `layout(new, settings, frame_rate)`; only the chunks around the changed words are laid
    /// out again, unless the settings changed, the words are not in reading order, or the edit
    /// changed what the whole layout depends on (the pace `auto` picks, whether the transcript
    /// has sentence punctuation).
    pub fn update(
        &mut self,
        old: &[Word],
        new: &[Word],
        settings: &Settings,
        frame_rate: FrameRate,
    ) -> CueSplice {
        let old = &old[..old.len().min(u32::MAX as usize - 1)];
        let new = &new[..new.len().min(u32::MAX as usize - 1)];
        let same_under = *settings == self.under.settings && frame_rate == self.under.frame_rate;
        // The changed words: `old[from..from + removed]` became `new[from..from + inserted]`.
        let from = old.iter().zip(new).take_while(|(a, b)| a == b).count();
        let tail = old[from..]
            .iter()
            .rev()
            .zip(new[from..].iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let (removed, inserted) = (old.len() - from - tail, new.len() - from - tail);
        let sorted = |w: &[Word]| w.windows(2).all(|p| p[0].start <= p[1].start);
        // Pinned or not: what the last word's break says (whether a cue is timed by hand is
        // its own, read with its words).
        let pinning = |w: &[Word]| {
            w.last()
                .and_then(|w| w.break_after)
                .is_some_and(|b| matches!(b, Break::Cue | Break::Timed))
        };
        let usable = same_under
            && old.len() == self.words
            && pinning(old) == pinning(new)
            && !self.marks.is_empty()
            && sorted(&new[from.saturating_sub(1)..(from + inserted + 1).min(new.len())]);
        let tally = usable
            .then(|| self.tally_after(old, new, from, removed, inserted))
            .flatten();
        let Some(tally) = tally else {
            let shots = std::mem::take(&mut self.under.shots);
            return self.replace(Layout::with_shots(new, settings, frame_rate, &shots));
        };
        if removed == 0 && inserted == 0 {
            return CueSplice {
                from: self.cues.len(),
                removed: 0,
                inserted: 0,
            };
        }
        // The last state that read no changed word (a word's unit also reads the next word's
        // start), or the transcript's start.
        let resume = self.marks.partition_point(|m| m.k < from);
        let start = match resume.checked_sub(1) {
            Some(m) => self.marks[m].clone(),
            None => State::start(),
        };
        let first_cue = start.cues;
        let shift = inserted as isize - removed as isize;
        let old_marks = &self.marks;
        let mut marks = Vec::new();
        let (cues, met) = Layout::run(new, &self.under, tally, start, Some(&mut marks), |st| {
            // The previous layout's state at the same word, past the edit, if it is the same.
            let k_old = st.k.checked_add_signed(-shift)?;
            if k_old < from + removed {
                return None;
            }
            let m = old_marks.partition_point(|m| m.k < k_old);
            let o = old_marks.get(m).filter(|o| o.k == k_old)?;
            // The cues kept from the previous layout hold no changed word: they start with the
            // pending one.
            if o.pending.as_ref().is_some_and(|p| p.lo < from + removed) {
                return None;
            }
            // A unit of a changed word may keep its size and flags with other text.
            let same_text = |a: &prepare::Unit, aa: &str, b: &prepare::Unit, ba: &str| {
                (a.word as usize) >= from + removed
                    || unit_text(old, aa, a) == unit_text(new, ba, b)
            };
            o.same_as(st, shift, same_text).then_some(m)
        });
        // From the previous layout's state `m` on, its cues are the new layout's.
        let cue_end = met.map_or(self.cues.len(), |m| old_marks[m].cues);
        let removed_cues = cue_end - first_cue;
        let cue_shift = cues.len() as isize - removed_cues as isize;
        let changed = splice_cues(&mut self.cues, first_cue, removed_cues, cues);
        let kept_from = match met {
            Some(m) => m + 1,
            None => self.marks.len(),
        };
        self.relaid = marks.len() + usize::from(met.is_none());
        let mut later = self.marks.split_off(kept_from);
        for m in &mut later {
            m.shift(shift, cue_shift);
        }
        self.marks.truncate(resume);
        self.marks.extend(marks);
        self.marks.extend(later);
        self.tally = tally;
        self.words = new.len();
        changed
    }

    /// The tally of `new` from the one of `old` and the words that changed; `None` when the edit
    /// changes what every chunk is laid out under (the pace `auto` picks, or whether sentence
    /// ends are guessed from pauses).
    fn tally_after(
        &self,
        old: &[Word],
        new: &[Word],
        from: usize,
        removed: usize,
        inserted: usize,
    ) -> Option<Tally> {
        // The word with visible text before the edit, and the changed words with the first word
        // with visible text after them (its pause term reads the end of the word before it).
        let prev_end = old[..from].iter().rev().find_map(|w| speech(w, None).2);
        let reach = |words: &[Word], end: usize| {
            words[end..]
                .iter()
                .position(|w| !w.text.trim().is_empty())
                .map_or(words.len(), |k| end + k + 1)
        };
        let (was, _) = Tally::of(&old[from..reach(old, from + removed)], prev_end);
        let (now, _) = Tally::of(&new[from..reach(new, from + inserted)], prev_end);
        let t = Tally {
            sentence_ends: (self.tally.sentence_ends + now.sentence_ends)
                .checked_sub(was.sentence_ends)?,
            chars: self.tally.chars - was.chars + now.chars,
            ms: self.tally.ms - was.ms + now.ms,
        };
        let auto = self.under.settings.content_profile == ContentProfile::Auto;
        let same = (t.sentence_ends == 0) == (self.tally.sentence_ends == 0)
            && (!auto || t.cps() == self.tally.cps());
        same.then_some(t)
    }

    /// Replaces the layout by `fresh`: every cue changed.
    fn replace(&mut self, mut fresh: Layout) -> CueSplice {
        let cues = std::mem::replace(&mut fresh.cues, std::mem::take(&mut self.cues));
        let removed = fresh.cues.len();
        let changed = splice_cues(&mut fresh.cues, 0, removed, cues);
        *self = fresh;
        changed
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Break, Millis};

    /// A small deterministic generator (xorshift), so the comparison needs no dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Words of `sentences`, 30 ms apart inside a sentence and `pause` ms between sentences.
    fn spoken(sentences: &[&str], pause: i64) -> Vec<Word> {
        let mut t = 0;
        let mut words = Vec::new();
        for s in sentences {
            for w in s.split(' ') {
                words.push(Word::new(w, Millis(t), Millis(t + 250), 0));
                t += 280;
            }
            t += pause - 30;
        }
        words
    }

    fn texts(cues: &[Cue]) -> Vec<String> {
        cues.iter().map(|c| c.lines.join(" / ")).collect()
    }

    #[test]
    fn unpunctuated_speech_ends_cues_at_its_pauses_without_adding_capitals() {
        let sentences = [
            "so we went home early",
            "then it rained all night",
            "nobody slept much",
        ];
        let cues = layout(
            &spoken(&sentences, 450),
            &Settings::default(),
            FrameRate::FPS_25,
        );
        // The first word of the transcript is capitalised, as always in smart mode; the words
        // after a pause are not (no full stop was heard).
        assert_eq!(
            texts(&cues),
            [
                "So we went home early",
                "then it rained all night",
                "nobody slept much"
            ]
        );
        // Without the pauses the same words run together into one cue.
        let cues = layout(
            &spoken(&sentences, 30),
            &Settings::default(),
            FrameRate::FPS_25,
        );
        assert_eq!(cues.len(), 1, "{:?}", texts(&cues));
        // With punctuation anywhere, pauses are pauses: sentence ends come from the text.
        let mut words = spoken(&sentences, 450);
        words[4] = Word::new("early.", words[4].start, words[4].end, 0);
        let cues = layout(&words, &Settings::default(), FrameRate::FPS_25);
        assert_eq!(texts(&cues)[0], "So we went home early.");
        assert!(
            texts(&cues)[1].starts_with("Then it rained"),
            "{:?}",
            texts(&cues)
        );
    }

    #[test]
    fn a_join_keeps_two_cues_together_within_the_hard_limits_only() {
        // Two sentences with a pause: two cues in smart mode, one with a join.
        let two = ["The river moved quickly.", "Then the valley flooded."];
        for smart in [true, false] {
            let settings = Settings {
                format_subtitles: smart,
                ..Settings::default()
            };
            let fr = FrameRate::FPS_25;
            let mut words = spoken(&two, 800);
            if smart {
                // (Greedy mode fills the cue to its limits: one cue already.)
                assert_eq!(layout(&words, &settings, fr).len(), 2);
            }
            words[3].break_after = Some(Break::Join);
            let cues = layout(&words, &settings, fr);
            assert_eq!(cues.len(), 1, "smart {smart}: {:?}", texts(&cues));
            assert_eq!(cues[0].words.len(), 8);
            // When both sentences do not fit one cue, the words either side of the join still
            // share one: the layout cuts elsewhere.
            let narrow = Settings {
                max_chars_per_line: 24,
                max_lines_per_subtitle: 1,
                ..settings.clone()
            };
            let cues = texts(&layout(&words, &narrow, fr));
            assert!(
                cues.iter().any(|c| c.contains("quickly. Then")),
                "smart {smart}: {cues:?}"
            );
            // When not even they fit one line, the join is cut: the limits come first.
            let tiny = Settings {
                max_chars_per_line: 10,
                max_lines_per_subtitle: 1,
                ..settings.clone()
            };
            let cues = texts(&layout(&words, &tiny, fr));
            assert!(
                cues.iter().any(|c| c.ends_with("quickly.")),
                "smart {smart}: {cues:?}"
            );
            // A long pause is a hard boundary a join does not override.
            let mut apart = spoken(&two, 2500);
            apart[3].break_after = Some(Break::Join);
            assert_eq!(layout(&apart, &settings, fr).len(), 2, "smart {smart}");
        }
    }

    #[test]
    fn a_sentence_stays_whole_for_a_hair_over_the_pace_and_gives_way_to_a_real_overrun() {
        // Two sentences `pause` ms apart, then a long silence before a third. The first sentence
        // alone (32 characters, 1.88 s at 17 a second) may stay up from its first word until
        // 3 frames before the second: 1370 + pause - 120 ms.
        let words_with = |pause: i64| {
            let mut words = spoken(&["Flooding has closed the railway."], 0);
            let mut second = spoken(&["Engineers are working."], 0);
            let mut third = spoken(&["Good night."], 0);
            let at = 1370 + pause;
            for w in &mut second {
                w.start = w.start + Millis(at);
                w.end = w.end + Millis(at);
            }
            for w in &mut third {
                w.start = w.start + Millis(at + 3300);
                w.end = w.end + Millis(at + 3300);
            }
            words.extend(second);
            words.extend(third);
            words
        };
        let layout_of = |pause| {
            texts(&layout(
                &words_with(pause),
                &Settings::default(),
                FrameRate::FPS_25,
            ))
        };
        // 620 ms: 1.87 s for 1.88 s of reading, under 1.5% short: the sentences stay apart.
        assert_eq!(
            layout_of(620),
            [
                "Flooding has closed the railway.",
                "Engineers are working.",
                "Good night."
            ]
        );
        // 500 ms: 6% short. Reading pace wins: both sentences share one cue and its time.
        assert_eq!(
            layout_of(500),
            [
                "Flooding has closed the railway. / Engineers are working.",
                "Good night."
            ]
        );
    }

    #[test]
    fn two_short_whole_sentences_share_a_line_rather_than_flash_by() {
        // "Fifteen minutes. Fine. Fine. I can do fifteen minutes." (drama-platform): each "Fine."
        // alone would stay up under 5/6 s (the next word follows 0.25 s after it), so the two
        // make one cue; the longer sentences around them keep a cue each.
        let mut words = spoken(&["Fifteen minutes."], 0);
        let mut at = 1_200;
        for text in ["Fine.", "Fine."] {
            words.push(Word::new(text, Millis(at), Millis(at + 250), 0));
            at += 500;
        }
        words.extend(
            spoken(&["I can do fifteen minutes."], 0)
                .into_iter()
                .map(|mut w| {
                    w.start = w.start + Millis(at);
                    w.end = w.end + Millis(at);
                    w
                }),
        );
        let cues = layout(&words, &Settings::default(), FrameRate::FPS_25);
        assert_eq!(
            texts(&cues),
            [
                "Fifteen minutes.",
                "Fine. Fine.",
                "I can do fifteen minutes."
            ]
        );
        assert!(cues[1].end.0 - cues[1].start.0 >= segment::FLASH_MS);
        // A single "Fine." there is one short cue still: no sentence is joined to save one flash.
        let one: Vec<Word> = words
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != 3)
            .map(|(_, w)| w.clone())
            .collect();
        assert_eq!(
            texts(&layout(&one, &Settings::default(), FrameRate::FPS_25)),
            ["Fifteen minutes.", "Fine.", "I can do fifteen minutes."]
        );
    }

    #[test]
    fn a_pause_after_a_weak_word_is_a_hesitation_not_a_sentence_end() {
        let mut words = spoken(&["we walked to the", "station in the rain"], 450);
        words.extend(spoken(&["and waited"], 0).into_iter().map(|mut w| {
            w.start = w.start + Millis(4000);
            w.end = w.end + Millis(4000);
            w
        }));
        let cues = layout(&words, &Settings::default(), FrameRate::FPS_25);
        assert_eq!(texts(&cues)[0], "We walked to the station in the rain");
    }

    /// Words of the random transcripts: punctuated, short and long, three scripts.
    const VOCAB: [&str; 19] = [
        "the",
        "and",
        "river",
        "valley,",
        "moved.",
        "quickly?",
        "I",
        "of",
        "station",
        "yes!",
        "workshop",
        "a",
        "sediment;",
        "ten",
        "thousand",
        "years.",
        "électricité",
        "東京で",
        "counterrevolutionaries",
    ];

    /// `n` words of a random transcript (some unpunctuated, some with breaks, three speakers).
    fn random_words(rng: &mut Rng, n: usize, unpunctuated: bool) -> Vec<Word> {
        let mut t = 0i64;
        (0..n)
            .map(|_| {
                let text = VOCAB[rng.below(VOCAB.len() as u64) as usize];
                let text = if unpunctuated {
                    text.trim_end_matches(['.', ',', '?', '!']).to_lowercase()
                } else {
                    text.to_string()
                };
                t += [10, 40, 80, 250, 400, 800, 2500][rng.below(7) as usize];
                let d = 100 + rng.below(500) as i64;
                let mut w = Word::new(text, Millis(t), Millis(t + d), (rng.below(40) == 0) as u32);
                if rng.below(60) == 0 {
                    w.break_after =
                        Some([Break::Line, Break::Cue, Break::Join][rng.below(3) as usize]);
                }
                t += d;
                w
            })
            .collect()
    }

    /// One edit of the kind the editor makes, somewhere in `words`.
    fn random_edit(rng: &mut Rng, words: &[Word]) -> Vec<Word> {
        let mut w = words.to_vec();
        let n = w.len();
        // Often at either end of the transcript.
        let at = match rng.below(10) {
            0 => 0,
            1 => n - 1,
            _ => rng.below(n as u64) as usize,
        };
        match rng.below(8) {
            // A word corrected (sometimes gaining or losing its full stop).
            0 => {
                w[at].text =
                    ["river.", "Valley", "stations", "", "and,"][rng.below(5) as usize].into()
            }
            // Words inserted inside the gap after `at`.
            1 => {
                let (s, e) = (
                    w[at].end,
                    w.get(at + 1).map_or(w[at].end + Millis(300), |x| x.start),
                );
                let k = 1 + rng.below(3) as usize;
                let step = (e - s).0.max(0) / (k as i64 + 1);
                for j in 0..k {
                    let t = s + Millis(step * (j as i64 + 1));
                    w.insert(at + 1 + j, Word::new("new", t, t, 0));
                }
            }
            // Words removed.
            2 => {
                let k = (1 + rng.below(4) as usize).min(n - at);
                w.drain(at..at + k);
            }
            // A split, a line break or a join.
            3 => {
                w[at].break_after = [None, Some(Break::Cue), Some(Break::Line), Some(Break::Join)]
                    [rng.below(4) as usize]
            }
            // A speaker changed.
            4 => w[at].speaker = 1 - w[at].speaker.min(1),
            // An end nudged by a frame.
            5 => {
                w[at].end = (w[at].end + Millis(40))
                    .min(w.get(at + 1).map_or(Millis(i64::MAX), |x| x.start))
            }
            // Nothing changed.
            6 => {}
            // Find and replace over a stretch.
            _ => {
                let k = (rng.below(200) as usize).min(n - at);
                for x in &mut w[at..at + k] {
                    if &*x.text == "the" {
                        x.text = "a".into();
                    }
                }
            }
        }
        w
    }

    #[test]
    fn an_updated_layout_equals_a_fresh_layout_of_the_edited_words() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut local = 0;
        let mut edits = 0;
        for case in 0..10 {
            // Long enough for several chunks (2,048 units each).
            let n = 8000 + rng.below(8000) as usize;
            let mut words = random_words(&mut rng, n, case % 4 == 3);
            let settings = Settings {
                max_chars_per_line: [20, 32, 42][rng.below(3) as usize],
                max_lines_per_subtitle: 1 + rng.below(2) as u32,
                content_profile: [ContentProfile::Balanced, ContentProfile::Auto]
                    [rng.below(2) as usize],
                em_dash_on_speaker_change: rng.below(3) != 0,
                ellipsis_continuation: rng.below(3) == 0,
                format_subtitles: case % 5 != 4,
                min_frames_between_subtitles: rng.below(4) as u32,
                split_on_punctuation: rng.below(6) == 0,
                shift_ms: [0, 0, 200, -300][rng.below(4) as usize],
                max_duration: (rng.below(4) == 0).then_some(Millis(3000)),
                subtitle_mode: if rng.below(6) == 0 {
                    SubtitleMode::Audiogram
                } else {
                    SubtitleMode::Default
                },
                forbidden_characters: if rng.below(3) == 0 {
                    vec![crate::ForbiddenRule {
                        chars: "vé".into(),
                        replacement: "w".into(),
                    }]
                } else {
                    Vec::new()
                },
                ..Settings::default()
            };
            let fr = [
                FrameRate::FPS_25,
                FrameRate {
                    num: 30000,
                    den: 1001,
                },
            ][case % 2];
            if case % 3 == 2 {
                // Pinned words (the editor's): updates must follow them as exactly.
                words = pin(&words, &settings, fr);
            }
            let mut laid = Layout::new(&words, &settings, fr);
            assert_eq!(laid.cues, layout(&words, &settings, fr), "case {case}");
            for step in 0..20 {
                let edited = random_edit(&mut rng, &words);
                let before = laid.cues.clone();
                let changed = laid.update(&words, &edited, &settings, fr);
                let fresh = Layout::new(&edited, &settings, fr);
                if laid.cues != fresh.cues {
                    let d = laid.cues.iter().zip(&fresh.cues).position(|(a, b)| a != b);
                    let show = |c: &[Cue], k: Option<usize>| {
                        k.and_then(|k| c.get(k.saturating_sub(1)..k + 2))
                            .map(|c| format!("{c:?}"))
                    };
                    panic!(
                        "case {case} step {step}: {changed:?}, {} vs {} cues, first difference at {d:?}\nupdated {:?}\nfresh {:?}",
                        laid.cues.len(),
                        fresh.cues.len(),
                        show(&laid.cues, d),
                        show(&fresh.cues, d)
                    );
                }
                assert_eq!(
                    laid.cues,
                    layout(&edited, &settings, fr),
                    "case {case} step {step}"
                );
                // The saved states are a fresh layout's, so the next update is exact too.
                assert_eq!(
                    laid.marks.len(),
                    fresh.marks.len(),
                    "case {case} step {step}"
                );
                for (a, b) in laid.marks.iter().zip(&fresh.marks) {
                    let same_text = |x: &prepare::Unit, xa: &str, y: &prepare::Unit, ya: &str| {
                        unit_text(&edited, xa, x) == unit_text(&edited, ya, y)
                    };
                    assert!(
                        a.same_as(b, 0, same_text) && a.cues == b.cues,
                        "case {case} step {step}"
                    );
                }
                assert_eq!(laid.tally, fresh.tally);
                // The cues outside the splice are the previous ones (numbered anew).
                let CueSplice {
                    from,
                    removed,
                    inserted,
                } = changed;
                assert_eq!(before.len() - removed + inserted, laid.cues.len());
                assert_eq!(before[..from], laid.cues[..from]);
                for (a, b) in before[from + removed..]
                    .iter()
                    .zip(&laid.cues[from + inserted..])
                {
                    assert_eq!(
                        (&a.lines, a.start, a.end, &a.words),
                        (&b.lines, b.start, b.end, &b.words)
                    );
                }
                // Laid out again: the chunk with the edit and (when the word count changed) the
                // next, whose lookahead read other words.
                if laid.relaid <= 2 {
                    local += 1;
                }
                edits += 1;
                words = edited;
            }
        }
        // Most edits are laid out again locally (the others changed the pace `auto` picks or
        // whether the transcript has any sentence punctuation).
        assert!(
            local * 10 >= edits * 8,
            "{local} of {edits} edits were local"
        );
    }

    #[test]
    fn pinned_words_show_the_cues_they_were_pinned_from() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..40 {
            let n = 50 + rng.below(3000) as usize;
            let words = random_words(&mut rng, n, case % 4 == 3);
            let settings = Settings {
                // Every word fits a line: a word cut over a boundary cannot be pinned.
                max_chars_per_line: [32, 42][rng.below(2) as usize],
                max_lines_per_subtitle: 1 + rng.below(3) as u32,
                content_profile: [ContentProfile::Balanced, ContentProfile::Dense]
                    [rng.below(2) as usize],
                em_dash_on_speaker_change: rng.below(3) != 0,
                ellipsis_continuation: rng.below(3) == 0,
                format_subtitles: case % 5 != 4,
                split_on_punctuation: rng.below(6) == 0,
                max_duration: (rng.below(4) == 0).then_some(Millis(3000)),
                ..Settings::default()
            };
            let fr = FrameRate::FPS_25;
            let cues = layout(&words, &settings, fr);
            let pinned = pin(&words, &settings, fr);
            let mut again = layout(&pinned, &settings, fr);
            for w in again.iter_mut().flat_map(|c| c.words.iter_mut()) {
                w.break_after = None;
            }
            let mut plain = cues.clone();
            for w in plain.iter_mut().flat_map(|c| c.words.iter_mut()) {
                w.break_after = None;
            }
            if let Some(k) = plain.iter().zip(&again).position(|(a, b)| a != b) {
                panic!(
                    "case {case}: cue {k}\n{:?}\n{:?}",
                    plain.get(k),
                    again.get(k)
                );
            }
            assert_eq!(plain.len(), again.len(), "case {case}");
        }
    }

    #[test]
    fn an_update_lays_out_only_the_chunks_around_the_edit() {
        let mut rng = Rng(7);
        let words = random_words(&mut rng, 20_000, false);
        let (settings, fr) = (Settings::default(), FrameRate::FPS_25);
        let mut laid = Layout::new(&words, &settings, fr);
        let chunks = laid.relaid;
        assert!(chunks >= 8, "{chunks} chunks");
        let before = laid.cues.clone();
        // A word corrected in the middle: its own chunk is laid out again.
        let mut edited = words.clone();
        edited[10_000].text = "station.".into();
        let changed = laid.update(&words, &edited, &settings, fr);
        assert_eq!(laid.cues, layout(&edited, &settings, fr));
        assert_eq!(laid.relaid, 1);
        // Only the cue with the word and the few its new full stop cut again are reported, not
        // the hundreds of its chunk.
        assert!(changed.removed <= 8 && changed.inserted <= 8, "{changed:?}");
        assert_eq!(before[..changed.from], laid.cues[..changed.from]);
        // A word inserted: its chunk and the next, whose lookahead read one word less.
        let mut longer = edited.clone();
        let t = longer[5_000].end;
        longer.insert(5_001, Word::new("and", t, t, 0));
        laid.update(&edited, &longer, &settings, fr);
        assert_eq!(laid.cues, layout(&longer, &settings, fr));
        assert_eq!(laid.relaid, 2);
    }

    #[test]
    fn words_at_the_far_end_of_time_are_laid_out_as_the_general_walk_lays_them() {
        // 2^53 ms is the latest time a word read from JSON can have; 2^60 ms only a caller of the
        // engine can give. The fast walk's pace keys would overflow there: it goes without them.
        for origin in [(1i64 << 53) - 3_600_000, 1 << 53, 1 << 60] {
            let mut t = origin;
            let words: Vec<Word> = (0..400)
                .map(|k| {
                    t += [40, 90, 250, 800][k % 4];
                    let text = VOCAB[k * 7 % VOCAB.len()];
                    let w = Word::new(text, Millis(t), Millis(t + 180 + (k % 5) as i64 * 60), 0);
                    t += 180 + (k % 5) as i64 * 60;
                    w
                })
                .collect();
            let settings = Settings::default();
            let fast = layout_with(&words, &settings, FrameRate::FPS_25, &[], false, None);
            let general = layout_with(&words, &settings, FrameRate::FPS_25, &[], true, None);
            assert!(!fast.is_empty());
            assert_eq!(fast, general, "origin {origin}");
        }
    }

    #[test]
    fn the_fast_walk_chooses_the_cues_the_general_walk_chooses() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..4000 {
            let n = 1 + rng.below(160) as usize;
            let unpunctuated = rng.below(4) == 0;
            let mut t = 0i64;
            let words: Vec<Word> = (0..n)
                .map(|_| {
                    let text = VOCAB[rng.below(VOCAB.len() as u64) as usize];
                    let text = if unpunctuated {
                        text.trim_end_matches(['.', ',', '?', '!', ';'])
                            .to_lowercase()
                    } else {
                        text.to_string()
                    };
                    t += [10, 40, 80, 250, 400, 800, 2500][rng.below(7) as usize];
                    let d = 100 + rng.below(500) as i64;
                    let mut w = Word::new(text, Millis(t), Millis(t + d), rng.below(3) as u32);
                    if rng.below(40) == 0 {
                        w.break_after =
                            Some([Break::Line, Break::Cue, Break::Join][rng.below(3) as usize]);
                    }
                    t += d;
                    w
                })
                .collect();
            let settings = Settings {
                max_chars_per_line: [12, 20, 32, 42, 60][rng.below(5) as usize],
                max_lines_per_subtitle: 1 + rng.below(3) as u32,
                content_profile: [
                    ContentProfile::Balanced,
                    ContentProfile::Dense,
                    ContentProfile::Dramatic,
                    ContentProfile::Auto,
                ][rng.below(4) as usize],
                em_dash_on_speaker_change: rng.below(3) != 0,
                split_on_punctuation: rng.below(5) == 0,
                min_duration: (rng.below(4) == 0).then_some(Millis(1500)),
                max_duration: (rng.below(4) == 0).then_some(Millis(3000)),
                min_frames_between_subtitles: rng.below(6) as u32,
                shift_ms: [0, 0, 300, -500][rng.below(4) as usize],
                subtitle_mode: if rng.below(8) == 0 {
                    SubtitleMode::Audiogram
                } else {
                    SubtitleMode::Default
                },
                ..Settings::default()
            };
            let fr = [
                FrameRate::FPS_25,
                FrameRate {
                    num: 30000,
                    den: 1001,
                },
            ][rng.below(2) as usize];
            let fast = layout_with(&words, &settings, fr, &[], false, None);
            let general = layout_with(&words, &settings, fr, &[], true, None);
            assert_eq!(fast, general, "case {case}: {settings:?}");
        }
    }
}
