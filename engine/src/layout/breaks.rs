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

/// Cost of a line break after unit `u` (inside a cue): after a piece of a cut word, a sentence end
/// or a manual line break 0; after clause punctuation 10 (0 for a comma or semicolon under
/// splitOnPunctuation); after a weak word 300; anywhere else 60. Read from a table: the chain of
/// tests mispredicted on the line balancer's few break positions a cue.
#[inline]
pub fn line_break_cost(p: &Params, u: &Unit) -> i64 {
    const FLAGS: u8 = MID_WORD | SENT_END | LINE_AFTER | CLAUSE | WEAK;
    const FREE_COMMA: usize = 64;
    const _: () = assert!(FLAGS < FREE_COMMA as u8);
    const TABLE: [i16; 128] = {
        let mut t = [0i16; 128];
        let mut k = 0;
        while k < 128 {
            let f = (k & 63) as u8;
            t[k] = if f & (MID_WORD | SENT_END | LINE_AFTER) != 0 {
                0
            } else if f & CLAUSE != 0 {
                if k & FREE_COMMA != 0 {
                    0
                } else {
                    10
                }
            } else if f & WEAK != 0 {
                300
            } else {
                60
            };
            k += 1;
        }
        t
    };
    let free_comma = usize::from(p.split_on_punctuation & (u.extra & COMMA != 0)) * FREE_COMMA;
    i64::from(TABLE[usize::from(u.flags & FLAGS) | free_comma])
}
