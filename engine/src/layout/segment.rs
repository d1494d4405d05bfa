//! Cue boundaries: where one cue ends and the next begins. Smart mode scores every feasible cue
//! in a bounded window (a DP over break points); greedy mode fills each cue to the limits.

use super::breaks::{line_break_cost, pre, suf};
use super::prepare::{
    Unit, CLAUSE, CUE_AFTER, JOIN, LINE_AFTER, MID_WORD, PAUSE_END, SENT_END, WEAK,
};
use super::Params;

/// Cost units: one "point" is roughly what one badly placed break is worth.
const CUE_COST: i64 = 70;
const SENTENCE_ORPHAN_COST: i64 = 40;
const INTERNAL_PAUSE_COST: i64 = 150;
const DIALOGUE_COST: i64 = 80;
/// A two-speaker cue whose first line would open with the tail of a sentence begun in the cue
/// before (same speaker, no sentence end before it): never chosen, since the dash reads as a third
/// voice. More than every manual join of a chunk together (`JOIN_COST`), and always avoidable: the
/// cue can end at the speaker change instead.
const DASH_TAIL_COST: i64 = 1 << 56;
/// A new sentence that starts inside a cue and runs on into the next one.
const TAIL_COST: i64 = 100;
/// A cue that opens with the end of the previous cue's sentence and then starts another.
const HEAD_COST: i64 = 50;
/// A cue that cannot be read at the pace in the time it may stay up: this, plus `PACE_SHARE`
/// times the share of that time it lacks (up to `PACE_SHARE_CAP`). Reading pace and sentence
/// ends outweigh every other term (docs/decisions/layout.md).
const PACE_STEP: i64 = 3000;
const PACE_SHARE: f32 = 30_000.0;
const PACE_SHARE_CAP: f32 = 3000.0;
/// Each sentence that ends inside a cue rather than at its end (the end of a speaker's line in a
/// two-speaker cue excepted): as much as a cue 1.5% short of its reading time, so a sentence
/// stays whole at the cost of an overrun no viewer notices, and pace wins over any larger one.
pub const INNER_COST: i64 = PACE_STEP + (PACE_SHARE * 0.015) as i64;
/// The same in a one-line cue that holds whole sentences only (it starts after a sentence end and
/// ends with one: "Fine. Fine."), which reads as one utterance: no sentence is cut, so it costs
/// less than two flash steps (one cue of two short sentences beats two cues that both flash by)
/// and more than any break or line term (so each sentence keeps a cue of its own otherwise). Two
/// lines of two sentences keep `INNER_COST`: a sentence stays whole for a hair over the pace.
pub const WHOLE_INNER_COST: i64 = 2 * FLASH_STEP;
/// The same for a sentence end guessed from a pause in a transcript without punctuation: under a
/// third, since the guess is often wrong.
pub const GUESSED_INNER_COST: i64 = 1000;
/// A cue shorter than this (ms) flashes by: 5/6 s.
pub const FLASH_MS: i64 = 833;
/// A cue that flashes by (the next cue leaves it less than `FLASH_MS`) costs this more: a fault
/// of its own however little it lacks, about as bad as a guessed sentence end inside a cue (so
/// two pieces of an unpunctuated sentence join rather than flash), far less than a real one or
/// an overrun.
const FLASH_STEP: i64 = 900;

/// Whether a new cue must start at unit `u` (u >= 1).
#[inline]
fn hard_before(p: &Params, units: &[Unit], u: usize) -> bool {
    let (a, b) = (&units[u - 1], &units[u]);
    a.has(CUE_AFTER)
        || (a.speaker != b.speaker && !p.dialogue)
        || (p.split_on_punctuation && a.has(SENT_END) && a.extra & PAUSE_END == 0)
        || b.start - a.end >= p.hard_pause
}

/// Buffers of [`fast_walk`], reused from cue end to cue end.
#[derive(Default)]
struct FastScratch {
    /// Each start's lower bound and line count.
    lower: Vec<(i64, u32)>,
    /// The starts (as indices into `lower`) that may still win.
    pick: Vec<u32>,
    /// `headed[i]`: `best[i]` and the head cost of a cue starting at `i` that cuts a sentence
    /// (`HEAD_COST` when unit `i - 1` does not end a sentence and has unit `i`'s speaker; 0 at
    /// the run's start), so the first pass reads one number per start.
    headed: Vec<i64>,
    /// `counted[i]`: `headed[i]` less `inner_cost` for each sentence end before unit `i`
    /// (`Sums::sent`), so a cue `[i, j)` adds its inner sentence ends' cost as
    /// `counted[i] + inner_cost * sent[j - 1]`.
    counted: Vec<i64>,
}

/// Buffers the segmentation reuses from chunk to chunk.
#[derive(Default)]
pub struct SegScratch {
    best: Vec<i64>,
    back: Vec<u32>,
    /// `fit_start[e]`: the first unit of the longest line ending before unit `e` (see
    /// [`fast_walk`]).
    fit_start: Vec<u32>,
    /// The fast walk's buffers (see [`fast_walk`]).
    fast: FastScratch,
    sums: Sums,
}

/// Lays out units `[base, end)` (a hard boundary at `end`), appending cue unit ranges to `cues`.
/// `units[base - 1]` (if any) is the unit before, `units[end]` (if any) the unit after.
pub fn segment(
    p: &Params,
    units: &[Unit],
    (base, end): (usize, usize),
    scratch: &mut SegScratch,
    cues: &mut Vec<(usize, usize)>,
) {
    if p.pinned {
        return super::pinned::segment(units, (base, end), cues);
    }
    if p.smart {
        // Sized, not cleared: a run writes every entry it reads first (`best[a]` and `headed[a]`
        // at its start, the others at each cue end), so zeroing them was wasted work.
        let n = units.len() + 1;
        scratch.best.resize(n, 0);
        scratch.back.resize(n, 0);
        scratch.fit_start.resize(n, 0);
        scratch.fast.headed.resize(n, 0);
        scratch.fast.counted.resize(n, 0);
        // Prefix sums of graphemes and separators (the length of units [a, b) on one line is
        // `len[b] - len[a] - sep(a)`) and of manual line breaks, so a two-line cue is scored in
        // O(1) per break position.
        let sums = &mut scratch.sums;
        // Sized, then written through slices: pushing to the six of them checked and stored
        // each one's length once per unit.
        let m = units.len();
        sums.len.resize(m + 1, 0);
        sums.lead.resize(m, 0);
        sums.line_after.resize(m + 1, 0);
        sums.line_cost.resize(m, 0);
        sums.pause.resize(m, 0);
        sums.head.resize(m, 0);
        sums.sent.resize(m + 1, 0);
        sums.snap.clear();
        if p.pace {
            // Each unit's start as timing will show it: shifted and snapped to the grid. In
            // floating point, without the two integer divisions per unit that timing's exact
            // arithmetic takes: IEEE arithmetic gives the same result everywhere, and at an exact
            // half frame, where it may round the other way, it only moves a cost by a frame.
            let (per_ms, ms) = (p.frames_per_ms, p.ms_per_frame);
            sums.snap.extend(units.iter().map(|u| {
                let t = (u.start + p.shift) as f64;
                floor(floor(t * per_ms + 0.5) as f64 * ms + 0.5)
            }));
        }
        sums.len[0] = 0;
        sums.line_after[0] = 0;
        let mut all_fit = true;
        let (mut t, mut l) = (0u64, 0u32);
        let mut prev: Option<&Unit> = None;
        let mut sent = 0;
        let out = sums
            .lead
            .iter_mut()
            .zip(&mut sums.len[1..])
            .zip(&mut sums.line_after[1..])
            .zip(&mut sums.line_cost)
            .zip(&mut sums.pause)
            .zip(&mut sums.head)
            .zip(&mut sums.sent);
        for (u, ((((((lead, len), line_after), line_cost), pause), head), sent_before)) in
            units.iter().zip(out)
        {
            *lead = t + u.sep as u64;
            t += u.g as u64 + u.sep as u64;
            l += u.has(LINE_AFTER) as u32;
            *len = t;
            *line_after = l;
            *line_cost = line_break_cost(p, u);
            all_fit &= u.g <= p.max_chars;
            (*pause, *head) = match prev {
                Some(a) => {
                    let same = a.speaker == u.speaker;
                    sent += u32::from(a.has(SENT_END) & same);
                    (
                        pause_cost(p, u.start - a.end),
                        if !a.has(SENT_END) && same {
                            HEAD_COST
                        } else {
                            0
                        },
                    )
                }
                None => (0, 0),
            };
            *sent_before = sent;
            prev = Some(u);
        }
        sums.all_fit = all_fit;
        // The last unit ends no sentence that a later unit carries on.
        sums.sent[m] = sent;
        sums.pace_key.clear();
        sums.cap_key.clear();
        // The keys and the ends' figures they are compared with stay well inside i64 when every
        // time is within 2^52 ms (142,000 years) and the text within 2^31 graphemes; past that
        // (no real media) the first pass goes without them.
        const LIM: i64 = 1 << 52;
        let within = |t: i64| t > -LIM && t < LIM;
        let last_room = units
            .last()
            .and_then(|u| u.end.checked_add(p.shift)?.checked_add(60_000));
        sums.keys = p.pace
            && p.us_per_char > 1000
            && sums.len[m] < 1 << 31
            && last_room.is_some_and(within);
        if sums.keys {
            let us = p.us_per_char;
            for (&lead, &snap) in sums.lead.iter().zip(&sums.snap) {
                sums.keys &= within(snap);
                let (lead, snap) = (lead as i64, snap.clamp(-LIM, LIM));
                sums.pace_key.push(pace_key(lead, us, snap, 1000));
                sums.cap_key.push(pace_key(lead, us, snap, 1100));
            }
        } else {
            sums.pace_key.resize(m, 0);
            sums.cap_key.resize(m, 0);
        }
    }
    let mut a = base;
    while a < end {
        let mut b = a + 1;
        while b < end && !hard_before(p, units, b) {
            b += 1;
        }
        if p.smart {
            let SegScratch {
                best,
                back,
                fit_start,
                fast,
                sums,
            } = scratch;
            smart_run(p, units, sums, (a, b), best, back, fit_start, fast, cues);
        } else {
            greedy_run(p, units, a, b, cues);
        }
        a = b;
    }
}

/// Where to end a chunk of at least `min` units that has more units after it: the first hard
/// boundary in `[min, max)`, else the cheapest break there (a sentence end, a speaker change).
pub fn chunk_end(p: &Params, units: &[Unit], min: usize, max: usize) -> usize {
    let max = max.min(units.len().saturating_sub(1)).max(min);
    let mut best = min;
    let mut best_cost = i64::MAX;
    for u in min..max {
        if u == 0 {
            continue;
        }
        if hard_before(p, units, u) {
            return u;
        }
        let c = break_cost(p, units, u - 1);
        if c < best_cost {
            best_cost = c;
            best = u;
        }
    }
    best.max(1)
}

/// Prefix sums over the units.
#[derive(Default)]
struct Sums {
    /// `len[x]`: graphemes and separators of units [0, x).
    len: Vec<u64>,
    /// `lead[x]`: `len[x]` and the separator before unit x (which a line starting at x drops).
    lead: Vec<u64>,
    line_after: Vec<u32>,
    /// Cost of a line break after each unit.
    line_cost: Vec<i64>,
    /// Every unit fits a line on its own.
    all_fit: bool,
    /// The pace keys below hold (see `segment`); without them the first pass adds no overrun.
    keys: bool,
    /// `pause[k]`: the pause cost of the silence before unit k (0 for the first unit).
    pause: Vec<i64>,
    /// `head[k]`: `HEAD_COST` when unit k - 1 does not end a sentence and has unit k's speaker.
    head: Vec<i64>,
    /// `sent[x]`: the units before unit x that end a sentence the same speaker carries on from
    /// (a sentence end inside a cue that holds them and the next unit).
    sent: Vec<u32>,
    /// `snap[k]`: unit k's start shifted and snapped to the frame grid, as timing shows a cue
    /// starting with it (with reading pace only).
    snap: Vec<i64>,
    /// `pace_key[i]`: `lead[i] * us_per_char - 1000 * snap[i]` (with reading pace only). A cue
    /// `[i, j)` of the fast walk (no decorations) needs more than its room when
    /// `len[j] * us_per_char - 1000 * room_end > pace_key[i]`: its text takes
    /// `(len[j] - lead[i]) * us_per_char` microseconds to read and its room is
    /// `room_end - snap[i]` milliseconds (or less, under maxDuration). One compare a start, so the
    /// first pass's bounds hold the overrun step.
    pace_key: Vec<i64>,
    /// `cap_key[i]`: `lead[i] * us_per_char - 1100 * snap[i]`: the same for a text that needs more
    /// than 1.1 times the room, whose overrun share is at its cap (`PACE_SHARE` times a tenth:
    /// `PACE_SHARE_CAP`, exactly, since f32 rounding moves the share by far less than the
    /// margin a whole millisecond of lack gives).
    cap_key: Vec<i64>,
}

impl Sums {
    /// Graphemes of units [x, y) on one line.
    #[inline]
    fn line(&self, x: usize, y: usize) -> i64 {
        (self.len[y] - self.lead[x]) as i64
    }

    /// Manual line breaks after units [x, y).
    #[inline]
    fn breaks(&self, x: usize, y: usize) -> u32 {
        self.line_after[y] - self.line_after[x]
    }
}

/// Incremental line fit of a cue built backwards from its last unit.
struct BackFit {
    lines: u32,
    /// Length of the first line so far (graphemes).
    cur: u32,
    /// Index where the second speaker starts, once seen.
    dialogue: bool,
    /// Length of the first speaker's line (dialogue only).
    a_len: u32,
}

/// The cost of ending a cue after unit `u` when unit `u + 1` follows in the same run.
fn break_cost(p: &Params, units: &[Unit], u: usize) -> i64 {
    let a = &units[u];
    let b = &units[u + 1];
    // Looked up and selected without branches: which term applies follows the words'
    // punctuation and pauses, which a branch predictor cannot guess (cachegrind's branch
    // simulation counted about one misprediction per cue end in the branchy form).
    // `BREAK_TERMS[flags]` is the cost by punctuation (before a speaker change and the pause)
    // and the weak-word cost.
    const fn base(f: u8) -> i64 {
        if f & SENT_END != 0 {
            0
        } else if f & CLAUSE != 0 {
            30
        } else if f & LINE_AFTER != 0 {
            10
        } else {
            160
        }
    }
    const fn weak(f: u8) -> i64 {
        if f & WEAK != 0 && f & (CLAUSE | SENT_END) == 0 {
            200
        } else {
            0
        }
    }
    // The four flags the terms depend on are the low four bits.
    const TERM_FLAGS: u8 = SENT_END | CLAUSE | WEAK | LINE_AFTER;
    const _: () = assert!(TERM_FLAGS == 15);
    const BREAK_TERMS: [(i64, i64); 16] = {
        let mut t = [(0, 0); 16];
        let mut f = 0;
        while f < 16 {
            t[f] = (base(f as u8), weak(f as u8));
            f += 1;
        }
        t
    };
    let (by_punctuation, weak) = BREAK_TERMS[usize::from(a.flags & TERM_FLAGS)];
    let c = if a.speaker != b.speaker {
        0
    } else {
        by_punctuation
    };
    // A pause makes the break cheaper, down to nothing at `pause_threshold`.
    let gap = b.start - a.end;
    let g = gap.clamp(0, p.pause_threshold);
    let c = if gap >= p.pause_threshold {
        0
    } else {
        // `c * g` is at most 160 times the threshold: well under 2^32.
        c - ((u128::from((c * g) as u64) * u128::from(p.pause_div)) >> 64) as i64
    };
    // A manual join costs more than any cutting within the limits (without a branch: joins
    // are rare, and this runs for every cue end).
    let join = JOIN_COST * i64::from((a.extra & JOIN) >> 2);
    join + if a.has(MID_WORD) { 400 } else { c + weak }
}

/// The cost of a cue end after a manually joined word: more than the costs of all the cue ends a
/// transcript's chunk can hold, so the layout cuts a join only when the hard limits leave no other
/// cutting.
const JOIN_COST: i64 = 1 << 40;

/// What the cost of a cue `[i, j)` needs of its end `j`, worked out once per end.
struct End<'a> {
    j: usize,
    last: &'a Unit,
    /// `...` after the cue.
    suffix: u32,
    /// Cost of the break after the cue (0 at the run's end).
    brk: i64,
    /// How far the cue may run on: up to the next cue minus the frame gap.
    room_end: i64,
    max_dur: i64,
    /// The cue ends inside a sentence that the next cue (same speaker) carries on.
    open_end: bool,
    /// The run `[a, b)`.
    a: usize,
    b: usize,
    /// The first break position after which the last line `[r + 1, j)` fits (see
    /// [`two_line_cost`]).
    first_r: usize,
    /// No decorations and no manual line break among the starts walked (the fast walk): every
    /// two-line split from `first_r` on has a fitting last line and no manual break.
    plain: bool,
}

/// What the backward walk knows of a candidate start `i` of the cue ending at `End::j`.
struct Cand {
    i: usize,
    /// Lines the cue takes (decorations included).
    lines: u32,
    /// Two speakers, one line each.
    dialogue: bool,
    /// The longest silence between two of the cue's units (0 when none).
    max_gap: i64,
    /// A sentence ends inside the cue (before its last unit).
    inner_end: bool,
    /// Sentences that end inside the cue other than at the end of a speaker's line.
    inner_sent: i64,
    /// Graphemes of units `[i, j)` on one line.
    chars: i64,
    /// `...` before the cue.
    prefix: u32,
}

/// The cost of the cue `[c.i, e.j)` added to `best[c.i]`, or `None` once it is known to be at
/// least `best_cost` (every term is >= 0, so the terms are added cheapest first and the candidate
/// dropped as soon as it loses).
#[inline(always)]
fn cue_cost(
    p: &Params,
    units: &[Unit],
    sums: &Sums,
    best: &[i64],
    e: &End<'_>,
    c: &Cand,
    best_cost: i64,
) -> Option<i64> {
    let (i, j) = (c.i, e.j);
    let u = &units[i];
    let single = i == j - 1;
    let mut cost = best[i] + CUE_COST + e.brk + (c.lines as i64 - 1) * p.line_cost;
    if single && e.b - e.a > 1 {
        // `|` and `&` rather than `||` and `&&`: no branch on the punctuation.
        let after_end = units[i.saturating_sub(1)].has(SENT_END);
        let whole = ((i == 0) | after_end | (i == e.a)) & (u.has(SENT_END) | (j == e.b));
        cost += if whole {
            SENTENCE_ORPHAN_COST.min(p.orphan_cost)
        } else {
            p.orphan_cost
        };
    }
    cost += pause_cost(p, c.max_gap);
    cost += inner_cost(p, units, i, e.last, c.lines) * c.inner_sent;
    if c.inner_end {
        if e.open_end {
            cost += TAIL_COST;
        }
        if i > e.a && !units[i - 1].has(SENT_END) && units[i - 1].speaker == u.speaker {
            cost += HEAD_COST;
        }
    }
    if c.dialogue {
        cost += DIALOGUE_COST + dash_tail(sums, i);
    }
    if cost >= best_cost {
        return None;
    }
    rest_cost(p, units, sums, e, c, cost, best_cost)
}

/// The cost of each sentence end inside the cue from unit `i` to `last` on `lines` lines:
/// `WHOLE_INNER_COST` when it is one line of whole sentences (and that is cheaper), else
/// `Params::inner_cost`.
#[inline(always)]
fn inner_cost(p: &Params, units: &[Unit], i: usize, last: &Unit, lines: u32) -> i64 {
    if (lines == 1) & whole_start(units, i) & last.has(SENT_END) {
        p.inner_cost.min(WHOLE_INNER_COST)
    } else {
        p.inner_cost
    }
}

/// Whether a cue starting at unit `i` starts a sentence: the first unit, or one after a sentence
/// end.
#[inline(always)]
fn whole_start(units: &[Unit], i: usize) -> bool {
    i == 0 || units[i - 1].has(SENT_END)
}

/// `DASH_TAIL_COST` when a two-speaker cue starting at unit `i` would open with the tail of a
/// sentence the same speaker began before it, else 0.
#[inline(always)]
fn dash_tail(sums: &Sums, i: usize) -> i64 {
    if sums.head[i] != 0 {
        DASH_TAIL_COST
    } else {
        0
    }
}

/// `x` rounded down to an integer (`f64::floor` is a library call on the baseline x86-64 target).
#[inline(always)]
fn floor(x: f64) -> i64 {
    let t = x as i64;
    t - i64::from(x < t as f64)
}

/// The cost of a cue whose longest silence is `max_gap`.
#[inline(always)]
fn pause_cost(p: &Params, max_gap: i64) -> i64 {
    if max_gap >= p.pause_threshold {
        INTERNAL_PAUSE_COST + ((max_gap - p.pause_threshold) / 10).min(500)
    } else {
        0
    }
}

/// [`cue_cost`] from `cost` (every term up to the dialogue cost) on: reading pace and line
/// balance.
#[inline(always)]
fn rest_cost(
    p: &Params,
    units: &[Unit],
    sums: &Sums,
    e: &End<'_>,
    c: &Cand,
    mut cost: i64,
    best_cost: i64,
) -> Option<i64> {
    let (i, j) = (c.i, e.j);
    let u = &units[i];
    let single = i == j - 1;
    if p.pace {
        let span = (e.last.end - u.start).max(1);
        let text = c.chars + (c.prefix + e.suffix) as i64;
        // Unsigned (both are >= 0): a division by a constant is then a multiply and a shift.
        // `div_ceil` also works out the remainder (1.2% more instructions for the whole layout).
        #[allow(clippy::manual_div_ceil)]
        let needed = ((text as u64 * p.us_per_char as u64 + 999) / 1000) as i64;
        // Not beyond the next cue minus the gap even when the words run on: timing then pulls
        // the end back to keep the gap.
        let room = e.room_end - sums.snap[i];
        let avail = room.min(e.max_dur).max(1);
        // Worked out without branches: they would be mispredicted half of the time.
        let shown = needed.max(span).max(p.min_dur).min(avail);
        let flash = if p.avoid_flash && shown < FLASH_MS {
            // Timing keeps a cue up for 5/6 s where the next cue leaves room: only a cue
            // without that room really flashes.
            FLASH_MS - shown + if room < FLASH_MS { FLASH_STEP } else { 0 }
        } else {
            0
        };
        cost += flash;
        // A branch, so the division is only waited for where the text needs more than the room:
        // 3.4% less time for the whole 10-hour layout than the branchless form (whose division
        // gave 0.0 otherwise) in builds run in turns, the output identical.
        if needed > avail {
            // A float division: IEEE division is exact and deterministic on every platform.
            let over = (needed - avail) as f32 * PACE_SHARE / avail as f32;
            cost += over.min(PACE_SHARE_CAP) as i64 + PACE_STEP;
        }
        if cost >= best_cost {
            return None;
        }
    }
    if c.lines == 2 && !single && !c.dialogue {
        cost += if e.plain {
            two_line_cost_plain(p, sums, (i, j), e.first_r)
        } else {
            two_line_cost(p, sums, (i, j), (c.prefix, e.suffix), e.first_r)
        };
    }
    (cost < best_cost).then_some(cost)
}

/// The backward walk over the starts of the cue ending at `End::j`, in its general form: the
/// line fit is built unit by unit, so manual line breaks, decorations and a second speaker are all
/// handled. Returns the best cost and start, the first (largest) start on ties.
#[allow(clippy::too_many_arguments)]
fn walk_general(
    p: &Params,
    units: &[Unit],
    sums: &Sums,
    best: &[i64],
    e: &End<'_>,
) -> (i64, usize) {
    let (j, last) = (e.j, e.last);
    let (mut best_cost, mut best_i) = (i64::MAX, j - 1);
    // The state after start i + 1: the fit, graphemes and silences of units [i + 1, j).
    let mut w = Walk {
        chars: last.g as i64,
        max_gap: 0,
        inner_end: false,
        inner_sent: 0,
    };
    let fit = &mut BackFit {
        lines: 1,
        cur: last.g + e.suffix,
        dialogue: false,
        a_len: 0,
    };
    // `j - i > max_words` as a bound on `i`.
    let i_lim = j.saturating_sub(p.max_words as usize);
    let mut i = j - 1;
    loop {
        let u = &units[i];
        if i < j - 1 {
            // Add unit i in front of unit i + 1.
            let nx = &units[i + 1];
            let sep = nx.sep as u32;
            let gap = nx.start - u.end;
            if gap > w.max_gap {
                w.max_gap = gap;
            }
            if u.has(SENT_END) {
                w.inner_end = true;
                // A sentence end before a speaker change ends a speaker's line, not the cue's
                // text.
                w.inner_sent += i64::from(u.speaker == nx.speaker);
            }
            if i < i_lim || last.end - u.start > e.max_dur {
                break;
            }
            w.chars += u.g as i64 + sep as i64;
            if u.speaker != nx.speaker {
                if fit.dialogue
                    || !p.dialogue
                    || fit.lines != 1
                    || fit.cur + p.dash_len > p.max_chars
                {
                    break;
                }
                fit.dialogue = true;
                fit.lines = 2;
                fit.a_len = u.g;
            } else if fit.dialogue {
                if u.has(LINE_AFTER) {
                    break;
                }
                fit.a_len += sep + u.g;
                if fit.a_len + p.dash_len > p.max_chars {
                    break;
                }
            } else if u.has(LINE_AFTER) || fit.cur + sep + u.g > p.max_chars {
                fit.lines += 1;
                fit.cur = u.g;
                if fit.lines > p.max_lines {
                    break;
                }
            } else {
                fit.cur += sep + u.g;
            }
        }
        // Every other term is >= 0: a candidate whose base already loses is skipped before
        // its line count is worked out.
        let base = best[i] + CUE_COST + e.brk;
        if base < best_cost {
            let prefix = pre(p, units, i);
            let single = i == j - 1;
            let lines_eff = if fit.dialogue {
                if fit.a_len + p.dash_len + prefix > p.max_chars {
                    None
                } else {
                    Some(2)
                }
            } else if fit.cur + prefix > p.max_chars {
                Some(fit.lines + 1)
            } else {
                Some(fit.lines)
            };
            let lines_eff = match lines_eff {
                Some(l) if l <= p.max_lines => Some(l),
                _ if single => Some(p.max_lines.min(2)),
                _ => None,
            };
            if let Some(lines) = lines_eff {
                let c = Cand {
                    i,
                    lines,
                    dialogue: fit.dialogue,
                    max_gap: w.max_gap,
                    inner_end: w.inner_end,
                    inner_sent: w.inner_sent,
                    chars: w.chars,
                    prefix,
                };
                if let Some(cost) = cue_cost(p, units, sums, best, e, &c, best_cost) {
                    best_cost = cost;
                    best_i = i;
                }
            }
        }
        if i == e.a {
            break;
        }
        i -= 1;
    }
    (best_cost, best_i)
}

/// What the general walk carries from start to start besides the line fit.
struct Walk {
    chars: i64,
    max_gap: i64,
    inner_end: bool,
    inner_sent: i64,
}

#[allow(clippy::too_many_arguments)]
fn smart_run(
    p: &Params,
    units: &[Unit],
    sums: &Sums,
    (a, b): (usize, usize),
    best: &mut [i64],
    back: &mut [u32],
    fit_start: &mut [u32],
    fast_scratch: &mut FastScratch,
    cues: &mut Vec<(usize, usize)>,
) {
    best[a] = 0;
    fast_scratch.headed[a] = 0;
    fast_scratch.counted[a] = -p.inner_cost * sums.sent[a] as i64;
    let max_dur = p.max_dur.unwrap_or(i64::MAX);
    let max_chars = p.max_chars as i64;
    // The fast walk (below) needs every line to be free of decorations and every unit to fit a
    // line on its own, which holds unless ellipsisContinuation is on.
    let fast = !p.ellipsis && sums.all_fit && !p.general_only;
    // Two pointers, both only moving forward as `j` grows: the first unit of the longest line
    // ending before `j`, and the first unit a cue ending at `j` may start with under maxDuration
    // (unit ends never decrease, since overlaps are trimmed).
    let mut fit_ptr = a;
    let mut dur_ptr = a;
    // The last speaker change (between units c and c + 1) and sentence end before unit j - 1.
    let mut last_change: Option<usize> = None;
    // The speaker change before `last_change`.
    let mut prev_change: Option<usize> = None;
    let mut last_sent: Option<usize> = None;
    // The last sentence end before unit j - 1 that the same speaker carries on from.
    let mut last_sent_same: Option<usize> = None;
    for j in a + 1..=b {
        let last = &units[j - 1];
        if j >= a + 2 {
            let k = j - 2;
            if units[k].speaker != last.speaker {
                prev_change = last_change;
                last_change = Some(k);
            }
            if units[k].has(SENT_END) {
                last_sent = Some(k);
            }
            if units[k].has(SENT_END) & (units[k].speaker == last.speaker) {
                last_sent_same = Some(k);
            }
        }
        // Usually one step per cue end: the first two are taken without a branch (a loop's exit
        // after a varying count is mispredicted).
        for _ in 0..2 {
            fit_ptr += usize::from((fit_ptr + 1 < j) & (sums.line(fit_ptr, j) > max_chars));
        }
        while fit_ptr + 1 < j && sums.line(fit_ptr, j) > max_chars {
            fit_ptr += 1;
        }
        fit_start[j] = fit_ptr as u32;
        // Without maxDuration (the default) every start is within it.
        if p.max_dur.is_some() {
            while dur_ptr + 1 < j && last.end - units[dur_ptr].start > max_dur {
                dur_ptr += 1;
            }
        }
        let suffix = suf(p, units, j);
        let brk = if j == b {
            0
        } else {
            break_cost(p, units, j - 1)
        };
        let room_end = if j < units.len() {
            if p.pace {
                sums.snap[j] - p.room_gap
            } else {
                0
            }
        } else {
            last.end + p.shift + 60_000
        };
        // `&` rather than `&&`: no branch on the punctuation.
        let next_same = units.get(j).is_some_and(|n| n.speaker == last.speaker);
        let open_end = (j < b) & !last.has(SENT_END) & next_same;
        let (best_cost, best_i) = if fast {
            let mut e = End {
                j,
                last,
                suffix,
                brk,
                room_end,
                max_dur,
                open_end,
                a,
                b,
                first_r: 0,
                plain: true,
            };
            fast_walk(
                p,
                units,
                sums,
                best,
                fit_start,
                fast_scratch,
                &mut e,
                dur_ptr,
                (prev_change, last_change),
                (last_sent, last_sent_same),
            )
        } else {
            None
        }
        .unwrap_or_else(|| {
            // The first break position after which the last line [r + 1, j) fits.
            let mut first_r = j - 1;
            while first_r > a && sums.line(first_r, j) + suffix as i64 <= p.max_chars as i64 {
                first_r -= 1;
            }
            let e = End {
                j,
                last,
                suffix,
                brk,
                room_end,
                max_dur,
                open_end,
                a,
                b,
                first_r,
                plain: false,
            };
            walk_general(p, units, sums, best, &e)
        });
        best[j] = best_cost;
        back[j] = best_i as u32;
        let headed = best_cost + if j < b { sums.head[j] } else { 0 };
        fast_scratch.headed[j] = headed;
        fast_scratch.counted[j] = headed - p.inner_cost * sums.sent[j] as i64;
    }
    // Walk the best path back from the run's end.
    let first = cues.len();
    let mut j = b;
    while j > a {
        let i = (back[j] as usize).clamp(a, j - 1);
        cues.push((i, j));
        j = i;
    }
    cues[first..].reverse();
}

/// The backward walk over the starts of the cue ending at `e.j` when there are no decorations
/// (no ellipsisContinuation) and no manual line break among the candidates; `None` (nothing
/// done) when a manual line break is in the way.
///
/// Without those, the walk's line fit of `[i, j)` is the same for every cue ending at `j`: its
/// last line is the longest line ending at `j`, `[s1, j)` with `s1 = fit_start[j]`, the line
/// before it `[s2, s1)` with `s2 = fit_start[s1]`, and so on. So start `i` takes `m` lines when
/// `s_m <= i < s_(m-1)`, and the walk stops below `s_max_lines`, below `max_words` units, or
/// when maxDuration is exceeded. Every other term of the walk (graphemes, sentence ends, longest
/// silence) comes from prefix sums or a running maximum.
///
/// That makes the order of evaluation free. A first pass works out each start's cost up to the
/// reading pace (`lower`, a lower bound of its cost: the later terms are >= 0); the start with the
/// lowest bound is then costed in full first, which usually makes it the bar every other start
/// must beat, so most of them are dropped on their bound. Ties go to the largest start, as in the
/// general walk (which visits starts largest first and keeps the first of equal costs): a start
/// above the current best wins on an equal cost, one below it does not.
///
/// A second speaker (dialogue) only starts at the last speaker change `c` before `j`: the general
/// walk, once it reaches `c`, makes the cue a dialogue if `[c + 1, j)` is one line that fits with
/// the dash, and then goes on while the first speaker's part `[i, c + 1)` fits with the dash (a
/// manual line break or another speaker change ends it). Those starts take two lines and the
/// dialogue cost; the fast walk bounds them like the others.
#[allow(clippy::too_many_arguments)]
fn fast_walk(
    p: &Params,
    units: &[Unit],
    sums: &Sums,
    best: &[i64],
    fit_start: &[u32],
    FastScratch {
        lower,
        pick,
        headed,
        counted,
    }: &mut FastScratch,
    e: &mut End<'_>,
    dur_lo: usize,
    (prev_change, last_change): (Option<usize>, Option<usize>),
    (last_sent, last_sent_same): (Option<usize>, Option<usize>),
) -> Option<(i64, usize)> {
    let (a, j) = (e.a, e.j);
    let max_chars = p.max_chars as i64;
    let s1 = fit_start[j] as usize;
    if sums.line(s1, j) > max_chars {
        return None;
    }
    e.first_r = s1.saturating_sub(1).max(a);
    // The lowest start the line fit allows.
    let mut fit_lo = s1;
    let mut lines = 1;
    while lines < p.max_lines && fit_lo > a {
        fit_lo = fit_start[fit_lo] as usize;
        lines += 1;
    }
    let i_lim = j.saturating_sub(p.max_words as usize);
    let lo_fit = fit_lo.max(i_lim).max(dur_lo).max(a);
    // Whether the walk reaches the speaker change c: every start in (c, j - 1) fits.
    let change = last_change.filter(|&c| c + 1 >= lo_fit || c + 1 == j - 1);
    let lo = match change {
        Some(c) => c + 1,
        None => lo_fit,
    };
    // The dialogue starts [d_lo, lo) before the speaker change, if the general walk would turn
    // the cue into a dialogue at c: it does when start c + 1 is one line that fits with the dash
    // and c is within maxWords and maxDuration; it then goes on while the first speaker's line
    // (with the dash) fits, before another speaker change and before a manual line break.
    let mut d_lo = lo;
    if let Some(c) = change {
        let turns = c + 1 >= s1
            && sums.line(c + 1, j) + i64::from(p.dash_len) <= max_chars
            && c >= i_lim.max(dur_lo);
        if turns && p.max_lines >= 2 {
            let floor = i_lim.max(dur_lo).max(prev_change.map_or(a, |c2| c2 + 1));
            d_lo = c;
            while d_lo > floor && sums.line(d_lo - 1, c + 1) + i64::from(p.dash_len) <= max_chars {
                d_lo -= 1;
            }
            if d_lo == c && units[c].g + p.dash_len > p.max_chars {
                // Not even the speaker change's unit fits with the dash: no dialogue start.
                d_lo = lo;
            } else if sums.breaks(d_lo, c) > 0 {
                return None;
            }
        }
    }
    if lo + 1 < j && sums.breaks(lo, j - 1) > 0 {
        return None;
    }
    // A sentence ends inside the cue [i, j) when i < sent_end.
    let sent_end = last_sent.map_or(0, |s| s + 1);
    let inner_end = |i: usize| i < sent_end;
    // And other than at the end of a speaker's line when i < sent_same (<= sent_end).
    let sent_same = last_sent_same.map_or(0, |s| s + 1);
    let cand = |i: usize, lines: u32| Cand {
        i,
        lines,
        dialogue: i < lo,
        max_gap: 0,
        inner_end: inner_end(i),
        // Read by `cue_cost` only, for the one-unit cue (which holds no inner sentence end);
        // the other starts' inner sentence ends are in their bounds (`Sources::inner`).
        inner_sent: 0,
        chars: sums.line(i, j),
        prefix: 0,
    };
    // Pass 1: the starts in (d_lo..j - 1).rev(), in lines 1, 2, ... of the fit, then the dialogue
    // starts, with their lower bounds.
    let tail = if e.open_end { TAIL_COST } else { 0 };
    // Start k of the buffer is j - 2 - k.
    let count = (j - 1).saturating_sub(d_lo);
    if lower.len() < count {
        lower.resize(count, (0, 0));
    }
    let lower = &mut lower[..count];
    let mut low = Lowest {
        pause: 0,
        min: i64::MAX,
        at: 0,
        second: i64::MAX,
    };
    // The starts are taken in ranges that share their line count and fixed costs: the lines of
    // the fit, then the dialogue starts.
    let srcs = Sources {
        best,
        headed,
        counted,
        pauses: &sums.pause,
        sent_end,
        sent_same,
        tail,
        inner: p.inner_cost * sums.sent[j - 1] as i64,
        j,
        keys: &sums.pace_key,
        caps: &sums.cap_key,
        cap: if sums.keys {
            pace_key(sums.len[j] as i64, p.us_per_char, e.room_end, 1100)
        } else {
            i64::MIN
        },
        // (A cue with no room at all is given 1 ms, in which a pace under 1,000 characters a
        // second never reads a character: `Sums::keys` needs `us_per_char > 1000`.)
        over: if sums.keys {
            pace_key(sums.len[j] as i64, p.us_per_char, e.room_end, 1000)
        } else {
            i64::MIN
        },
    };
    // The overrun step and capped share a start's bound holds (see `Sums::pace_key` and
    // `Sums::cap_key`), taken off again before it is costed in full (`rest_cost` adds them).
    let step = |i: usize| {
        PACE_STEP * i64::from(srcs.over > sums.pace_key[i])
            + CAP_STEP * i64::from(srcs.cap > sums.cap_key[i])
    };
    let mut hi = j - 1;
    let mut line_start = s1;
    let mut m = 1;
    let mut fixed = CUE_COST + e.brk;
    while hi > lo {
        while hi <= line_start {
            line_start = fit_start[line_start] as usize;
            m += 1;
            fixed += p.line_cost;
        }
        let seg_lo = line_start.max(lo);
        low = low.add(lower, &srcs, (seg_lo, hi), fixed, m);
        hi = seg_lo;
    }
    if d_lo < lo {
        // Largest first, in pieces that open with a sentence's tail (`dash_tail`) or not.
        let fixed = CUE_COST + e.brk + p.line_cost + DIALOGUE_COST;
        let mut hi = lo;
        while hi > d_lo {
            let tail = dash_tail(sums, hi - 1);
            let mut piece_lo = hi - 1;
            while piece_lo > d_lo && dash_tail(sums, piece_lo - 1) == tail {
                piece_lo -= 1;
            }
            low = low.add(lower, &srcs, (piece_lo, hi), fixed + tail, 2);
            hi = piece_lo;
        }
    }
    // A one-line cue that ends a sentence and starts after one holds whole sentences only: its
    // inner sentence ends cost `WHOLE_INNER_COST` each rather than `inner_cost` (as `cue_cost`
    // has it), so those starts' bounds come down and the lowest two are found again.
    let discount = p.inner_cost - p.inner_cost.min(WHOLE_INNER_COST);
    if discount > 0 && e.last.has(SENT_END) && sent_same > d_lo {
        let total = i64::from(sums.sent[j - 1]);
        low.min = i64::MAX;
        low.second = i64::MAX;
        for (k, slot) in lower.iter_mut().enumerate() {
            let i = j - 2 - k;
            if i < sent_same && slot.1 == 1 && whole_start(units, i) {
                slot.0 -= discount * (total - i64::from(sums.sent[i]));
            }
            let cost = slot.0;
            if cost < low.min {
                (low.second, low.min, low.at) = (low.min, cost, k);
            } else {
                low.second = low.second.min(cost);
            }
        }
    }
    let Lowest {
        at: min_at, second, ..
    } = low;
    let mut best_cost = i64::MAX;
    let mut best_i = j - 1;
    // Pass 2: the lowest bound first, then the others largest start first.
    let at = |k: usize| j - 2 - k;
    if let Some(&(cost, m)) = lower.get(min_at) {
        let i = at(min_at);
        if let Some(c) = rest_cost(p, units, sums, e, &cand(i, m), cost - step(i), best_cost) {
            (best_cost, best_i) = (c, i);
        }
    }
    // The one-unit cue: the largest start, so it wins an equal cost.
    let bar = best_cost.saturating_add(i64::from(best_i < j - 1));
    if let Some(c) = cue_cost(p, units, sums, best, e, &cand(j - 1, 1), bar) {
        (best_cost, best_i) = (c, j - 1);
    }
    // The starts that may still win: the bar only comes down from here, so this keeps a superset
    // (without a branch per start).
    let bar = best_cost.saturating_add(1);
    if second >= bar {
        return Some((best_cost, best_i));
    }
    if pick.len() < count {
        pick.resize(count, 0);
    }
    // A slice, so its start and length stay in registers (a store through the `Vec` made the
    // loop load them again for every start).
    let pick = &mut pick[..count];
    let mut kept = 0;
    for (k, &(cost, _)) in lower.iter().enumerate() {
        pick[kept] = k as u32;
        kept += usize::from(cost < bar && k != min_at);
    }
    for &k in &pick[..kept] {
        let (cost, m) = lower[k as usize];
        let i = at(k as usize);
        // On an equal cost a larger start wins.
        let bar = best_cost.saturating_add(i64::from(i > best_i));
        if cost < bar {
            if let Some(c) = rest_cost(p, units, sums, e, &cand(i, m), cost - step(i), bar) {
                (best_cost, best_i) = (c, i);
            }
        }
    }
    Some((best_cost, best_i))
}

/// What the fast walk's first pass reads of each start.
struct Sources<'a> {
    best: &'a [i64],
    /// `best` and the head cost (see `FastScratch::headed`).
    headed: &'a [i64],
    /// `headed` less the inner sentence ends before each start (see `FastScratch::counted`).
    counted: &'a [i64],
    /// `Sums::pause`.
    pauses: &'a [i64],
    /// The starts below this cut a sentence.
    sent_end: usize,
    /// The starts below this also hold a sentence end other than at a speaker's line end, and
    /// add `inner_cost` for each of them (`sent_same <= sent_end`).
    sent_same: usize,
    /// `TAIL_COST` when the cue ends inside a sentence that the next cue carries on.
    tail: i64,
    /// `Params::inner_cost` for each sentence end before the cue's last unit (`Sums::sent`):
    /// with `counted`, the cost of the inner sentence ends of a start below `sent_same`.
    inner: i64,
    /// The cue's end.
    j: usize,
    /// `Sums::pace_key`.
    keys: &'a [i64],
    /// The starts whose key is below this need more than their room (`i64::MIN` without
    /// reading pace).
    over: i64,
    /// `Sums::cap_key`.
    caps: &'a [i64],
    /// The starts whose cap key is below this need more than 1.1 times their room.
    cap: i64,
}

/// `chars * us_per_char - scale * t`: a start's pace key (`chars` the graphemes before it, `t` its
/// snapped start) or, compared with it, a cue end's (`chars` the graphemes up to it, `t` its
/// room's end). The cue between them needs more than `1000 / scale` times its room when the end's
/// key is the greater (see `Sums::pace_key`).
#[inline(always)]
fn pace_key(chars: i64, us_per_char: i64, t: i64, scale: i64) -> i64 {
    chars * us_per_char - scale * t
}

/// The overrun share of a text that needs more than 1.1 times its room.
const CAP_STEP: i64 = PACE_SHARE_CAP as i64;

/// What the fast walk's first pass carries from start to start: the pause cost of the longest
/// silence so far (the pause cost never decreases with the silence, so this is
/// `pause_cost(max_gap)`), the lowest bound and where it is, and the lowest bound but one.
#[derive(Clone, Copy)]
struct Lowest {
    pause: i64,
    min: i64,
    at: usize,
    second: i64,
}

impl Lowest {
    /// Takes in the starts `[lo_i, hi_i)` of the cue ending at `src.j`, largest first, which all
    /// take `lines` lines and share the fixed costs `add`: those that cut a sentence read
    /// `src.headed` and add `src.tail`, the others read `src.best`.
    #[inline(always)]
    fn add(
        self,
        lower: &mut [(i64, u32)],
        src: &Sources<'_>,
        (lo_i, hi_i): (usize, usize),
        add: i64,
        lines: u32,
    ) -> Lowest {
        let cut = src.sent_end.clamp(lo_i, hi_i);
        let cut_same = src.sent_same.clamp(lo_i, cut);
        // Start i is slot j - 2 - i.
        let j = src.j;
        let k = j - 1 - hi_i;
        let low = self.add_piece(lower, k, (cut, hi_i), src.best, src, add, lines);
        let k = j - 1 - cut;
        let low = low.add_piece(
            lower,
            k,
            (cut_same, cut),
            src.headed,
            src,
            add + src.tail,
            lines,
        );
        let k = j - 1 - cut_same;
        low.add_piece(
            lower,
            k,
            (lo_i, cut_same),
            src.counted,
            src,
            add + src.tail + src.inner,
            lines,
        )
    }

    /// Takes in the starts `[lo_i, hi_i)`, largest first (slots from `k` on): each one's bound is
    /// `from[i] + add` and the pause cost so far, kept in `lower` with `lines`. By value and with
    /// no branch per start, so the state stays in registers (as a closure over it, the state went
    /// through memory).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn add_piece(
        self,
        lower: &mut [(i64, u32)],
        k: usize,
        (lo_i, hi_i): (usize, usize),
        from: &[i64],
        src: &Sources<'_>,
        add: i64,
        lines: u32,
    ) -> Lowest {
        // Of the three pieces a line of the fit is cut into, usually one or two hold starts (few
        // cues hold a sentence end): an empty one skips the slicing and the loop's setup (2% of
        // the layout's instructions on the 10-hour bench).
        if lo_i >= hi_i {
            return self;
        }
        let Lowest {
            mut pause,
            mut min,
            mut at,
            mut second,
        } = self;
        let slots = &mut lower[k..k + (hi_i - lo_i)];
        let froms = from[lo_i..hi_i].iter().rev();
        let pauses = src.pauses[lo_i + 1..hi_i + 1].iter().rev();
        let keys = src.keys[lo_i..hi_i].iter().rev();
        let caps = src.caps[lo_i..hi_i].iter().rev();
        let (over, cap) = (src.over, src.cap);
        for ((slot, ((&s, &pz), (&key, &ck))), k) in slots
            .iter_mut()
            .zip(froms.zip(pauses).zip(keys.zip(caps)))
            .zip(k..)
        {
            pause = pause.max(pz);
            let cost = s
                + add
                + pause
                + PACE_STEP * i64::from(over > key)
                + CAP_STEP * i64::from(cap > ck);
            *slot = (cost, lines);
            // The runner-up is the lower of the old one and the higher of the old lowest and
            // this bound: no compare of its own.
            second = second.min(min.max(cost));
            at = if cost < min { k } else { at };
            min = min.min(cost);
        }
        Lowest {
            pause,
            min,
            at,
            second,
        }
    }
}

/// Forward line fit, as greedy fill and rendering use it.
pub struct Fit {
    /// Lines so far.
    pub lines: u32,
    /// Length of the current (last) line, graphemes.
    pub cur: u32,
    /// Whether a second speaker has started.
    pub dialogue: bool,
}

impl Fit {
    /// A cue starting with `u`, `prefix` graphemes of decoration before it.
    pub fn start(u: &Unit, prefix: u32) -> Fit {
        Fit {
            lines: 1,
            cur: prefix + u.g,
            dialogue: false,
        }
    }

    /// Adds `u` after `prev`; `Some(true)` when it starts a new line, `None` when it cannot join.
    pub fn push(&mut self, p: &Params, prev: &Unit, u: &Unit) -> Option<bool> {
        let sep = u.sep as u32;
        if prev.speaker != u.speaker {
            if self.dialogue
                || !p.dialogue
                || self.lines != 1
                || self.cur + p.dash_len > p.max_chars
            {
                return None;
            }
            self.dialogue = true;
            self.lines = 2;
            self.cur = p.dash_len + u.g;
            return (self.cur <= p.max_chars).then_some(true);
        }
        if self.dialogue {
            if prev.has(LINE_AFTER) || self.cur + sep + u.g > p.max_chars {
                return None;
            }
            self.cur += sep + u.g;
            return Some(false);
        }
        if prev.has(LINE_AFTER) || self.cur + sep + u.g > p.max_chars {
            self.lines += 1;
            self.cur = u.g;
            return (self.lines <= p.max_lines).then_some(true);
        }
        self.cur += sep + u.g;
        Some(false)
    }

    /// Whether the cue still fits once `suffix` graphemes close it.
    pub fn closes(&self, p: &Params, suffix: u32) -> bool {
        if self.cur + suffix <= p.max_chars {
            true
        } else {
            !self.dialogue && self.lines < p.max_lines
        }
    }
}

fn greedy_run(p: &Params, units: &[Unit], a: usize, b: usize, cues: &mut Vec<(usize, usize)>) {
    let mut i = a;
    while i < b {
        let prefix = pre(p, units, i);
        let mut fit = Fit::start(&units[i], prefix);
        let opens_with_tail =
            i > 0 && units[i - 1].speaker == units[i].speaker && !units[i - 1].has(SENT_END);
        // `ok` is the longest end that fits with its closing decoration; `free` the longest such
        // end not after a manually joined unit (`i` when there is none).
        let joined = |e: usize| e < b && units[e - 1].extra & JOIN != 0;
        let mut ok = i + 1;
        let mut free = if joined(i + 1) { i } else { i + 1 };
        let mut j = i + 1;
        while j < b {
            let u = &units[j];
            if (j + 1 - i) as u32 > p.max_words {
                break;
            }
            if let Some(md) = p.max_dur {
                if u.end - units[i].start > md {
                    break;
                }
            }
            // A second speaker joins only a cue that opens with its speaker's turn or sentence.
            if units[j - 1].speaker != u.speaker && opens_with_tail {
                break;
            }
            if fit.push(p, &units[j - 1], u).is_none() {
                break;
            }
            if fit.lines > p.max_lines {
                break;
            }
            j += 1;
            if fit.closes(p, suf(p, units, j)) {
                ok = j;
                if !joined(j) {
                    free = j;
                }
            }
        }
        // A join is cut only when the limits leave no other end.
        let end = if free > i { free } else { ok };
        cues.push((i, end));
        i = end;
    }
}

/// The cost of the best line break of the two-line cue [i, j): break quality plus imbalance, as
/// the line balancer will see it. Only the breaks where both lines fit are tried: from `first_r`
/// (the last line fits) while the first line fits.
fn two_line_cost(
    p: &Params,
    sums: &Sums,
    (i, j): (usize, usize),
    (prefix, suffix): (u32, u32),
    first_r: usize,
) -> i64 {
    let max = p.max_chars as i64;
    let mut best = i64::MAX;
    for r in first_r.max(i)..j - 1 {
        let l1 = sums.line(i, r + 1) + prefix as i64;
        if l1 > max {
            break;
        }
        let l2 = sums.line(r + 1, j) + suffix as i64;
        if l2 > max || sums.breaks(i, r) > 0 || sums.breaks(r + 1, j - 1) > 0 {
            continue;
        }
        let d = l1 - l2;
        let c = sums.line_cost[r] + d * d / 8;
        best = best.min(c);
    }
    if best == i64::MAX {
        0
    } else {
        best
    }
}

/// [`two_line_cost`] without decorations or manual line breaks (`End::plain`): from `first_r` on
/// the last line always fits, so only the first line is checked. The break positions' sums are
/// read through slices (no bounds check per position), and the squared imbalance, never negative,
/// is divided by a shift. Inlined into the fast walk's costings: as a call (about one per cue
/// end, for three or four break positions) it saved and restored six registers each time and
/// the fast walk's values were reloaded around it.
#[inline(always)]
fn two_line_cost_plain(p: &Params, sums: &Sums, (i, j): (usize, usize), first_r: usize) -> i64 {
    let max = p.max_chars as i64;
    let mut best = i64::MAX;
    let r0 = first_r.max(i);
    if r0 + 1 < j {
        let (lead_i, len_j) = (sums.lead[i], sums.len[j]);
        // Break after unit r: `len[r + 1]`, `lead[r + 1]` and `line_cost[r]`, for r in r0..j - 1.
        let lens = &sums.len[r0 + 1..j];
        let leads = &sums.lead[r0 + 1..j];
        let costs = &sums.line_cost[r0..j - 1];
        for ((&len, &lead), &cost) in lens.iter().zip(leads).zip(costs) {
            let l1 = (len - lead_i) as i64;
            if l1 > max {
                break;
            }
            let d = l1 - (len_j - lead) as i64;
            best = best.min(cost + ((d * d) >> 3));
        }
    }
    if best == i64::MAX {
        0
    } else {
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::prepare::{COMMA, TIMED};
    use crate::{ContentProfile, FrameRate, Settings, SubtitleMode};

    /// The cost of a cue break as its rules read, one after the other.
    fn break_cost_by_the_rules(p: &Params, a: &Unit, b: &Unit) -> i64 {
        let join = if a.extra & JOIN != 0 { JOIN_COST } else { 0 };
        if a.has(MID_WORD) {
            return join + 400;
        }
        let mut c = if a.has(SENT_END) || a.speaker != b.speaker {
            0
        } else if a.has(CLAUSE) {
            30
        } else if a.has(LINE_AFTER) {
            10
        } else {
            160
        };
        let gap = b.start - a.end;
        if gap >= p.pause_threshold {
            c = 0;
        } else if gap > 0 {
            c -= c * gap / (2 * p.pause_threshold);
        }
        if a.has(WEAK) && !a.has(CLAUSE) && !a.has(SENT_END) {
            c += 200;
        }
        join + c
    }

    /// A one-byte unit of speaker 0 from 0 to 1000 ms with `flags` and `extra`.
    fn one_byte_unit(flags: u8, extra: u16) -> Unit {
        Unit {
            word: 0,
            lo: 0,
            hi: 1,
            g: 1,
            w: 1,
            sep: true,
            start: 0,
            end: 1000,
            speaker: 0,
            flags,
            extra,
        }
    }

    #[test]
    fn the_line_break_table_gives_what_the_rules_say() {
        for split_on_punctuation in [false, true] {
            let settings = Settings {
                split_on_punctuation,
                ..Settings::default()
            };
            let p = Params::new(&settings, FrameRate::FPS_25, None);
            for flags in 0..=u8::MAX {
                for extra in [0, COMMA, PAUSE_END, COMMA | PAUSE_END | JOIN | TIMED] {
                    let u = one_byte_unit(flags, extra);
                    let has = |f: u8| flags & f != 0;
                    let by_the_rules = if has(MID_WORD) || has(SENT_END) || has(LINE_AFTER) {
                        0
                    } else if has(CLAUSE) {
                        if split_on_punctuation && extra & COMMA != 0 {
                            0
                        } else {
                            10
                        }
                    } else if has(WEAK) {
                        300
                    } else {
                        60
                    };
                    assert_eq!(
                        line_break_cost(&p, &u),
                        by_the_rules,
                        "flags {flags:08b}, extra {extra:04b}, split {split_on_punctuation}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_break_cost_tables_give_what_the_rules_say() {
        let profiles = [
            Settings::default(),
            Settings {
                content_profile: ContentProfile::Dramatic,
                ..Settings::default()
            },
            Settings {
                subtitle_mode: SubtitleMode::Audiogram,
                ..Settings::default()
            },
        ];
        // Every millisecond up to past the longest threshold, since the pause's share is worked
        // out by a multiplication that must give the division's quotient exactly.
        let gaps: Vec<i64> = [-50, 5000].into_iter().chain(0..=800).collect();
        for settings in &profiles {
            let p = Params::new(settings, FrameRate::FPS_25, None);
            for flags in 0..=u8::MAX {
                for (speaker, extra) in [(0, 0), (1, 0), (0, JOIN), (1, JOIN)] {
                    for &gap in &gaps {
                        let a = one_byte_unit(flags, extra);
                        let b = Unit {
                            start: 1000 + gap,
                            end: 2000 + gap,
                            speaker,
                            flags: 0,
                            ..a
                        };
                        assert_eq!(
                            break_cost(&p, &[a, b], 0),
                            break_cost_by_the_rules(&p, &a, &b),
                            "flags {flags:08b}, speaker {speaker}, gap {gap}"
                        );
                    }
                }
            }
        }
    }
}
