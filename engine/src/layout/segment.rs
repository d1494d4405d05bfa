//! Cue boundaries: where one cue ends and the next begins. Smart mode scores every feasible cue
//! in a bounded window (a DP over break points); greedy mode fills each cue to the limits.

use super::prepare::{Unit, CLAUSE, CUE_AFTER, LINE_AFTER, MID_WORD, SENT_END, WEAK};
use super::Params;

/// Cost units: one "point" is roughly what one badly placed break is worth.
const CUE_COST: i64 = 70;
const SENTENCE_ORPHAN_COST: i64 = 40;
const INTERNAL_PAUSE_COST: i64 = 150;
const DIALOGUE_COST: i64 = 10;
/// A new sentence that starts inside a cue and runs on into the next one.
const TAIL_COST: i64 = 100;
/// A cue that opens with the end of the previous cue's sentence and then starts another.
const HEAD_COST: i64 = 50;
/// A cue shorter than this (ms) flashes by: 5/6 s.
pub const FLASH_MS: i64 = 833;

/// The decorations a cue [i, j) carries: `...` before and after (ellipsisContinuation).
#[inline]
pub fn pre(p: &Params, units: &[Unit], i: usize) -> u32 {
    if !p.ellipsis || i == 0 {
        return 0;
    }
    let (a, b) = (&units[i - 1], &units[i]);
    if !a.has(SENT_END) && a.speaker == b.speaker {
        p.ell_len
    } else {
        0
    }
}

/// `...` after the cue ending before unit `j`.
#[inline]
pub fn suf(p: &Params, units: &[Unit], j: usize) -> u32 {
    if !p.ellipsis || j == 0 || j >= units.len() {
        return 0;
    }
    let (a, b) = (&units[j - 1], &units[j]);
    if !a.has(SENT_END) && a.speaker == b.speaker {
        p.ell_len
    } else {
        0
    }
}

/// Whether a new cue must start at unit `u` (u >= 1).
#[inline]
fn hard_before(p: &Params, units: &[Unit], u: usize) -> bool {
    let (a, b) = (&units[u - 1], &units[u]);
    a.has(CUE_AFTER)
        || (a.speaker != b.speaker && !p.dialogue)
        || (p.split_on_punctuation && a.has(SENT_END))
        || b.start - a.end >= p.hard_pause
}

/// Buffers the segmentation reuses from chunk to chunk.
#[derive(Default)]
pub struct SegScratch {
    best: Vec<i64>,
    back: Vec<u32>,
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
    if p.smart {
        let n = units.len() + 1;
        scratch.best.clear();
        scratch.best.resize(n, 0);
        scratch.back.clear();
        scratch.back.resize(n, 0);
        // Prefix sums of graphemes and separators (the length of units [a, b) on one line is
        // `len[b] - len[a] - sep(a)`) and of manual line breaks, so a two-line cue is scored in
        // O(1) per break position.
        let sums = &mut scratch.sums;
        sums.len.clear();
        sums.line_after.clear();
        sums.line_cost.clear();
        let (mut t, mut l) = (0u64, 0u32);
        sums.len.push(0);
        sums.line_after.push(0);
        for u in units {
            t += u.g as u64 + u.sep as u64;
            l += u.has(LINE_AFTER) as u32;
            sums.len.push(t);
            sums.line_after.push(l);
            sums.line_cost.push(super::lines::line_break_cost(p, u));
        }
    }
    let mut a = base;
    while a < end {
        let mut b = a + 1;
        while b < end && !hard_before(p, units, b) {
            b += 1;
        }
        if p.smart {
            let SegScratch { best, back, sums } = scratch;
            smart_run(p, units, sums, (a, b), best, back, cues);
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
    len: Vec<u64>,
    line_after: Vec<u32>,
    /// Cost of a line break after each unit.
    line_cost: Vec<i64>,
}

impl Sums {
    /// Graphemes of units [x, y) on one line.
    #[inline]
    fn line(&self, units: &[Unit], x: usize, y: usize) -> i64 {
        (self.len[y] - self.len[x]) as i64 - units[x].sep as i64
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
    if a.has(MID_WORD) {
        return 400;
    }
    let mut c: i64 = if a.has(SENT_END) || a.speaker != b.speaker {
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
    c
}

#[allow(clippy::too_many_arguments)]
fn smart_run(
    p: &Params,
    units: &[Unit],
    sums: &Sums,
    (a, b): (usize, usize),
    best: &mut [i64],
    back: &mut [u32],
    cues: &mut Vec<(usize, usize)>,
) {
    best[a] = 0;
    let run_len = b - a;
    let max_dur = p.max_dur.unwrap_or(i64::MAX);
    for j in a + 1..=b {
        let last = &units[j - 1];
        let suffix = suf(p, units, j);
        let brk = if j == b {
            0
        } else {
            break_cost(p, units, j - 1)
        };
        // How far the cue may run on: up to the next cue minus the frame gap.
        let room_end = if j < units.len() {
            units[j].start - p.gap_ms
        } else {
            last.end + 60_000
        };
        // The first break position after which the last line [r + 1, j) fits.
        let mut first_r = j - 1;
        while first_r > a && sums.line(units, first_r, j) + suffix as i64 <= p.max_chars as i64 {
            first_r -= 1;
        }
        let mut fit = BackFit {
            lines: 1,
            cur: last.g + suffix,
            dialogue: false,
            a_len: 0,
        };
        let mut chars: i64 = last.g as i64;
        let mut max_gap: i64 = 0;
        // Whether a sentence ends inside the cue (before its last unit).
        let mut inner_end = false;
        let open_end = j < b && !last.has(SENT_END) && units[j].speaker == last.speaker;
        let mut best_cost = i64::MAX;
        let mut best_i = j - 1;
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
                if gap > max_gap {
                    max_gap = gap;
                }
                if u.has(SENT_END) {
                    inner_end = true;
                }
                if i < i_lim || last.end - u.start > max_dur {
                    break;
                }
                chars += u.g as i64 + sep as i64;
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
            let base = best[i] + CUE_COST + brk;
            let prefix = if base >= best_cost {
                0
            } else {
                pre(p, units, i)
            };
            let single = i == j - 1;
            let lines_eff = if base >= best_cost {
                None
            } else if fit.dialogue {
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
                _ if single && base < best_cost => Some(p.max_lines.min(2)),
                _ => None,
            };
            // The terms are added cheapest first, and the candidate dropped as soon as it loses.
            if let Some(lines) = lines_eff {
                'eval: {
                    let mut cost = base + (lines as i64 - 1) * p.line_cost;
                    if single && run_len > 1 {
                        let whole = (i == 0 || units[i - 1].has(SENT_END) || i == a)
                            && (u.has(SENT_END) || j == b);
                        cost += if whole {
                            SENTENCE_ORPHAN_COST.min(p.orphan_cost)
                        } else {
                            p.orphan_cost
                        };
                    }
                    if max_gap >= p.pause_threshold {
                        cost += INTERNAL_PAUSE_COST + ((max_gap - p.pause_threshold) / 10).min(500);
                    }
                    if inner_end {
                        if open_end {
                            cost += TAIL_COST;
                        }
                        if i > a && !units[i - 1].has(SENT_END) && units[i - 1].speaker == u.speaker
                        {
                            cost += HEAD_COST;
                        }
                    }
                    if fit.dialogue {
                        cost += DIALOGUE_COST;
                    }
                    if cost >= best_cost {
                        break 'eval;
                    }
                    if p.pace {
                        let span = (last.end - u.start).max(1);
                        let text = chars + (prefix + suffix) as i64;
                        let needed = text * p.us_per_char / 1000;
                        let avail = (room_end - u.start).min(max_dur).max(span).max(1);
                        if needed > avail {
                            // A float division: this is the hottest line of the layout, and IEEE
                            // division is exact and deterministic on every platform.
                            let over = (needed - avail) as f32 * 400.0 / avail as f32;
                            cost += over.min(2000.0) as i64;
                        }
                        if p.avoid_flash {
                            let shown = needed.max(span).max(p.min_dur).min(avail);
                            if shown < FLASH_MS {
                                cost += (FLASH_MS - shown) / 4;
                            }
                        }
                        if cost >= best_cost {
                            break 'eval;
                        }
                    }
                    if lines == 2 && !single && !fit.dialogue {
                        cost += two_line_cost(p, units, sums, (i, j), (prefix, suffix), first_r);
                    }
                    if cost < best_cost {
                        best_cost = cost;
                        best_i = i;
                    }
                }
            }
            if i == a {
                break;
            }
            i -= 1;
        }
        best[j] = best_cost;
        back[j] = best_i as u32;
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
        // `ok` is the longest end that fits with its closing decoration.
        let mut ok = i + 1;
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
            if fit.push(p, &units[j - 1], u).is_none() {
                break;
            }
            if fit.lines > p.max_lines {
                break;
            }
            j += 1;
            if fit.closes(p, suf(p, units, j)) {
                ok = j;
            }
        }
        cues.push((i, ok));
        i = ok;
    }
}

/// The cost of the best line break of the two-line cue [i, j): break quality plus imbalance, as
/// the line balancer will see it. Only the breaks where both lines fit are tried: from `first_r`
/// (the last line fits) while the first line fits.
fn two_line_cost(
    p: &Params,
    units: &[Unit],
    sums: &Sums,
    (i, j): (usize, usize),
    (prefix, suffix): (u32, u32),
    first_r: usize,
) -> i64 {
    let max = p.max_chars as i64;
    let mut best = i64::MAX;
    for r in first_r.max(i)..j - 1 {
        let l1 = sums.line(units, i, r + 1) + prefix as i64;
        if l1 > max {
            break;
        }
        let l2 = sums.line(units, r + 1, j) + suffix as i64;
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
