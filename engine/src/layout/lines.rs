//! Line breaking inside one cue and the cue's text: balanced lines (smart) or greedy fill, em
//! dashes for two speakers, `...` for sentences that run over a cue boundary.

use super::breaks::{line_break_cost, pre, suf};
use super::prepare::{Texts, Unit, LINE_AFTER};
use super::Params;

/// Scratch buffers reused from cue to cue, so balancing allocates nothing per cue.
#[derive(Default)]
pub struct Scratch {
    dp: Vec<i64>,
    parent: Vec<u32>,
    /// Line start offsets (relative to the cue's first unit).
    starts: Vec<u32>,
}

impl Scratch {
    /// The line starts of the cue [`render`] rendered last (relative to its first unit).
    pub fn starts(&self) -> &[u32] {
        &self.starts
    }
}

/// A laid-out cue's text.
pub struct Rendered {
    /// The lines.
    pub lines: Vec<String>,
    /// Graphemes of the lines joined by one space (for reading pace).
    pub chars: u32,
}

/// Lays out the text of the cue made of `units[i..j]`.
pub fn render(
    p: &Params,
    units: &[Unit],
    texts: Texts<'_>,
    (i, j): (usize, usize),
    scratch: &mut Scratch,
) -> Rendered {
    let cue = &units[i..j];
    let mut prefix = pre(p, units, i);
    let mut suffix = suf(p, units, j);
    let change = cue.windows(2).position(|w| w[0].speaker != w[1].speaker);
    if let Some(c) = change {
        // Two speakers, one line each, each starting with the dash.
        let a_len = line_len(&cue[..=c]);
        let b_len = line_len(&cue[c + 1..]);
        if a_len + p.dash_len + prefix > p.max_chars {
            prefix = 0;
        }
        if b_len + p.dash_len + suffix > p.max_chars {
            suffix = 0;
        }
        let mut l1 = String::with_capacity(p.dash.len() + line_bytes(p, &cue[..=c], prefix, 0));
        l1.push_str(&p.dash);
        let g1 = push_line(p, texts, &cue[..=c], prefix, 0, &mut l1) + p.dash_len;
        let mut l2 = String::with_capacity(p.dash.len() + line_bytes(p, &cue[c + 1..], 0, suffix));
        l2.push_str(&p.dash);
        let g2 = push_line(p, texts, &cue[c + 1..], 0, suffix, &mut l2) + p.dash_len;
        scratch.starts.clear();
        scratch.starts.extend([0, c as u32 + 1]);
        return Rendered {
            lines: vec![l1, l2],
            chars: g1 + g2 + 1,
        };
    }
    if p.pinned {
        // The lines the subtitler pinned; a decoration is dropped where it would lengthen a line
        // past the limit.
        super::pinned::line_starts(cue, &mut scratch.starts);
        let last = *scratch.starts.last().unwrap_or(&0) as usize;
        let first_end = scratch.starts.get(1).map_or(cue.len(), |&e| e as usize);
        if line_len(&cue[last..]) + suffix > p.max_chars {
            suffix = 0;
        }
        if line_len(&cue[..first_end]) + prefix + if first_end == cue.len() { suffix } else { 0 }
            > p.max_chars
        {
            prefix = 0;
        }
        return finish(p, cue, texts, prefix, suffix, scratch);
    }
    // Decorations are dropped where they cannot fit (a one-unit cue that fills its lines).
    let mut k = count_lines(p, cue, prefix, suffix);
    if !fits(p, cue, prefix, suffix, k) {
        suffix = 0;
        k = count_lines(p, cue, prefix, 0);
        if !fits(p, cue, prefix, 0, k) {
            prefix = 0;
            k = count_lines(p, cue, 0, 0);
        }
    }
    scratch.starts.clear();
    if p.smart && k == 2 {
        balance_two(p, cue, prefix, suffix, scratch);
    } else if p.smart && k >= 2 {
        balance(p, cue, prefix, suffix, k, scratch);
    } else {
        greedy_breaks(p, cue, prefix, suffix, &mut scratch.starts);
    }
    finish(p, cue, texts, prefix, suffix, scratch)
}

/// The cue's lines from `scratch.starts`, the prefix on the first and the suffix on the last.
fn finish(
    p: &Params,
    cue: &[Unit],
    texts: Texts<'_>,
    prefix: u32,
    suffix: u32,
    scratch: &Scratch,
) -> Rendered {
    let n = scratch.starts.len();
    let mut lines = Vec::with_capacity(n);
    let mut chars = 0u32;
    for (l, &s) in scratch.starts.iter().enumerate() {
        let e = scratch.starts.get(l + 1).map_or(cue.len(), |&e| e as usize);
        let s = s as usize;
        let pr = if l == 0 { prefix } else { 0 };
        let sf = if l + 1 == n { suffix } else { 0 };
        let mut line = String::with_capacity(line_bytes(p, &cue[s..e], pr, sf));
        chars += push_line(p, texts, &cue[s..e], pr, sf, &mut line);
        lines.push(line);
    }
    chars += n.saturating_sub(1) as u32;
    Rendered { lines, chars }
}

/// Graphemes of `us` on one line.
fn line_len(us: &[Unit]) -> u32 {
    us.iter()
        .enumerate()
        .map(|(k, u)| u.g + (k > 0 && u.sep) as u32)
        .sum()
}

/// The bytes [`push_line`] appends for these units at most (exactly, unless the ellipsis replaces
/// a trailing comma), so each line is allocated once at its size.
fn line_bytes(p: &Params, us: &[Unit], prefix: u32, suffix: u32) -> usize {
    let text: usize = us
        .iter()
        .enumerate()
        .map(|(k, u)| (u.hi - u.lo) as usize + usize::from(k > 0 && u.sep))
        .sum();
    let deco = usize::from(prefix > 0) + usize::from(suffix > 0);
    text + deco * p.ell.len()
}

/// Appends the units' text (and decorations) to `out`; returns its graphemes.
fn push_line(
    p: &Params,
    texts: Texts<'_>,
    us: &[Unit],
    prefix: u32,
    suffix: u32,
    out: &mut String,
) -> u32 {
    let mut g = 0;
    if prefix > 0 {
        out.push_str(&p.ell);
        g += p.ell_len;
    }
    let last = us.len().saturating_sub(1);
    for (k, u) in us.iter().enumerate() {
        if k > 0 && u.sep {
            out.push(' ');
            g += 1;
        }
        let mut t = texts.get(u);
        g += u.g;
        if k == last && suffix > 0 {
            // The ellipsis replaces a trailing comma.
            if let Some(s) = t.strip_suffix([',', '，', '、']) {
                if !s.is_empty() {
                    t = s;
                    g -= 1;
                }
            }
        }
        out.push_str(t);
    }
    if suffix > 0 {
        out.push_str(&p.ell);
        g += p.ell_len;
    }
    g
}

/// Decorated length of unit `k` of a cue of `n` units.
#[inline]
fn dlen(u: &Unit, k: usize, n: usize, prefix: u32, suffix: u32) -> u32 {
    u.g + if k == 0 { prefix } else { 0 } + if k + 1 == n { suffix } else { 0 }
}

/// Whether `k` greedy lines are within the limits: few enough, and no decorated unit wider than a
/// line on its own.
fn fits(p: &Params, cue: &[Unit], prefix: u32, suffix: u32, k: u32) -> bool {
    let n = cue.len();
    k <= p.max_lines
        && dlen(&cue[0], 0, n, prefix, suffix) <= p.max_chars
        && dlen(&cue[n - 1], n - 1, n, prefix, suffix) <= p.max_chars
}

/// Fewest lines the cue can take (greedy fill is optimal for that).
fn count_lines(p: &Params, cue: &[Unit], prefix: u32, suffix: u32) -> u32 {
    let n = cue.len();
    let mut lines = 1;
    let mut cur = dlen(&cue[0], 0, n, prefix, suffix);
    for k in 1..n {
        let u = &cue[k];
        let l = dlen(u, k, n, prefix, suffix);
        if cue[k - 1].has(LINE_AFTER) || cur + u.sep as u32 + l > p.max_chars {
            lines += 1;
            cur = l;
        } else {
            cur += u.sep as u32 + l;
        }
    }
    lines
}

fn greedy_breaks(p: &Params, cue: &[Unit], prefix: u32, suffix: u32, starts: &mut Vec<u32>) {
    let n = cue.len();
    starts.push(0);
    let mut cur = dlen(&cue[0], 0, n, prefix, suffix);
    for k in 1..n {
        let u = &cue[k];
        let l = dlen(u, k, n, prefix, suffix);
        if cue[k - 1].has(LINE_AFTER) || cur + u.sep as u32 + l > p.max_chars {
            starts.push(k as u32);
            cur = l;
        } else {
            cur += u.sep as u32 + l;
        }
    }
}

/// [`balance`] for two lines, in one pass over the break positions instead of a DP over every
/// line.
///
/// With two lines, `balance`'s DP comes down to: the second line `[q, n)` is grown backwards from
/// the cue's end while it fits (no manual break inside, at most `max_chars` graphemes), and each
/// such `q` whose first line `[0, q)` also fits costs `cost(0, q) + cost(q, n)`; the lowest cost
/// wins, the largest `q` on ties (the DP visits `q` downwards and keeps the first of equal costs).
/// Line lengths and widths come from the cue's totals and sums over `[q, n)` kept as `q` comes
/// down, so each `q` costs O(1); the costs are the DP's, term for term.
fn balance_two(p: &Params, cue: &[Unit], prefix: u32, suffix: u32, s: &mut Scratch) {
    let n = cue.len();
    let deco = |idx: usize| -> u32 {
        (if idx == 0 { prefix } else { 0 }) + if idx + 1 == n { suffix } else { 0 }
    };
    // Graphemes and width of all units, each counted with the separator before it; the line
    // [q, n) is its suffix sums less `sep(q)`, the line [0, q) the rest less `sep(0)`. Summed
    // from the end as `q` comes down, so no per-unit sums are stored.
    let (mut all_len, mut all_wid) = (0i64, 0u32);
    // The first unit with a manual line break after it, if any before the last unit.
    let mut first_manual = n;
    for (x, u) in cue.iter().enumerate() {
        let sep = u.sep as u32;
        all_len += (u.g + deco(x) + sep) as i64;
        all_wid += u.w + deco(x) + sep;
        if x + 1 < n && u.has(LINE_AFTER) && first_manual == n {
            first_manual = x;
        }
    }
    let sep = |x: usize| cue[x].sep as i64;
    let all_wid = all_wid as i64;
    let total = all_wid - sep(0);
    let max = p.max_chars as i64;
    let orphan_below = p.max_chars / 3;
    // A line's cost as `balance` works it out with k = 2 (`brk`: the break after it), for the
    // line [q, e) of width `wid`.
    let line_cost = |q: usize, e: usize, wid: i64, brk: i64| -> i64 {
        let dev = wid * 2 - total;
        let mut cost = dev * dev / 16 + brk;
        if e - q == 1 && n > 2 && cue[q].g < orphan_below {
            cost += 200;
        }
        cost
    };
    let mut best = i64::MAX;
    let mut best_q = 0;
    // Graphemes and width of units [q, n), with their separators.
    let (mut tail_len, mut tail_wid) = (0i64, 0i64);
    let mut q = n;
    while q > 1 {
        q -= 1;
        let u = &cue[q];
        let sep_q = u.sep as u32;
        tail_len += (u.g + deco(q) + sep_q) as i64;
        tail_wid += (u.w + deco(q) + sep_q) as i64;
        // The second line [q, n): no manual break before its last unit, and it fits.
        if (q + 1 < n && u.has(LINE_AFTER)) || tail_len - sep(q) > max {
            break;
        }
        // The first line [0, q): the same.
        if first_manual < q - 1 || all_len - tail_len - sep(0) > max {
            continue;
        }
        let first = all_wid - tail_wid - sep(0);
        let second = tail_wid - sep(q);
        let c =
            line_cost(0, q, first, line_break_cost(p, &cue[q - 1])) + line_cost(q, n, second, 0);
        if c < best {
            best = c;
            best_q = q;
        }
    }
    if best == i64::MAX {
        // Cannot happen when two is the greedy count; fall back to greedy as `balance` does.
        greedy_breaks(p, cue, prefix, suffix, &mut s.starts);
        return;
    }
    s.starts.push(0);
    s.starts.push(best_q as u32);
}

/// Chooses `k` lines that are as even as possible in display width, preferring breaks after
/// punctuation, never after an article when another break fits, and avoiding one-word lines.
fn balance(p: &Params, cue: &[Unit], prefix: u32, suffix: u32, k: u32, s: &mut Scratch) {
    let n = cue.len();
    let k = k as usize;
    let width = |idx: usize| -> i64 {
        let u = &cue[idx];
        (u.w + if idx == 0 { prefix } else { 0 } + if idx + 1 == n { suffix } else { 0 }) as i64
    };
    let total: i64 = (0..n)
        .map(|x| width(x) + if x > 0 && cue[x].sep { 1 } else { 0 })
        .sum();
    let kk = k as i64;
    let stride = n + 1;
    s.dp.clear();
    s.dp.resize((k + 1) * stride, i64::MAX);
    s.parent.clear();
    s.parent.resize((k + 1) * stride, 0);
    s.dp[0] = 0;
    let orphan_below = p.max_chars / 3;
    // The imbalance divisor; two lines (by far the commonest) divide by a constant, which the
    // compiler turns into a shift (the dividend is a square, never negative: same result).
    let div = kk * kk * 4;
    for end in 1..=n {
        // The break after the line's last unit costs the same for every start.
        let brk = if end < n {
            line_break_cost(p, &cue[end - 1])
        } else {
            0
        };
        // Line [q, end): grow it backwards while it fits.
        let mut len = 0u32;
        let mut wid = 0i64;
        let mut q = end;
        while q > 0 {
            q -= 1;
            let u = &cue[q];
            if q + 1 < end && u.has(LINE_AFTER) {
                break;
            }
            let l = dlen(u, q, n, prefix, suffix);
            if q + 1 < end {
                let nx_sep = cue[q + 1].sep as u32;
                len += l + nx_sep;
                wid += width(q) + nx_sep as i64;
            } else {
                len += l;
                wid += width(q);
            }
            if len > p.max_chars {
                break;
            }
            let dev = wid * kk - total;
            let sq = dev * dev;
            let mut cost = if k == 2 { sq / 16 } else { sq / div } + brk;
            if end - q == 1 && n > k && cue[q].g < orphan_below {
                cost += 200;
            }
            for l in 1..=k {
                let from = s.dp[(l - 1) * stride + q];
                if from == i64::MAX {
                    continue;
                }
                let c = from + cost;
                let at = l * stride + end;
                if c < s.dp[at] {
                    s.dp[at] = c;
                    s.parent[at] = q as u32;
                }
            }
        }
    }
    if s.dp[k * stride + n] == i64::MAX {
        // Cannot happen when k is the greedy count; fall back to greedy rather than fail.
        greedy_breaks(p, cue, prefix, suffix, &mut s.starts);
        return;
    }
    let mut end = n;
    for l in (1..=k).rev() {
        let q = s.parent[l * stride + end] as usize;
        s.starts.push(q as u32);
        end = q;
    }
    s.starts.reverse();
}
