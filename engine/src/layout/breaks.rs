//! What a break between two units costs or adds, read by both the cue segmenter (`segment`) and
//! the line breaker (`lines`): the cost of a line break after a unit inside a cue, and the `...`
//! a cue boundary inside a sentence puts on either side (ellipsisContinuation).

use super::prepare::{Unit, CLAUSE, COMMA, LINE_AFTER, MID_WORD, SENT_END, WEAK};
use super::Params;

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

/// Cost of a line break after unit `u` (inside a cue).
pub fn line_break_cost(p: &Params, u: &Unit) -> i64 {
    if u.has(MID_WORD) || u.has(SENT_END) || u.has(LINE_AFTER) {
        0
    } else if u.has(CLAUSE) {
        if p.split_on_punctuation && u.extra & COMMA != 0 {
            0
        } else {
            10
        }
    } else if u.has(WEAK) {
        300
    } else {
        60
    }
}
