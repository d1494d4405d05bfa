//! Cue times on the frame grid: shift, reading pace, minimum and maximum duration, the frame gap
//! between cues and chaining of short gaps. Works in whole frames so nothing drifts.

use super::Params;
use crate::{FrameRate, Millis};

/// What timing needs of one cue.
pub struct Span {
    /// First word's start, ms.
    pub start: i64,
    /// Last word's end, ms.
    pub end: i64,
    /// Graphemes of the cue text (for reading pace).
    pub chars: u32,
}

/// The first frame index whose start is at or after `t`.
fn frame_ceil(fr: FrameRate, t: i64) -> i64 {
    let f = fr.frame_floor(Millis(t));
    if fr.frame_start(f).0 < t {
        f + 1
    } else {
        f
    }
}

/// Chaining closes gaps up to this long (ms).
const CHAIN_MS: i64 = 500;

/// Frame-exact (start, end) of every cue, in ms on the grid. Invariants: `end > start`, and
/// `next.start - end >= N` frames, even when the words are closer together than that (then the
/// earlier cue keeps one frame and the later cue is moved on).
pub fn time(p: &Params, fr: FrameRate, spans: &[Span]) -> Vec<(Millis, Millis)> {
    let n_gap = p.gap_frames as i64;
    // Start frames after the shift (clamped at 0).
    let mut starts: Vec<i64> = spans
        .iter()
        .map(|s| fr.frame_round(Millis((s.start + p.shift).max(0))))
        .collect();
    // Starts never go backwards (cue starts are sorted word starts; clamping keeps that).
    for k in 1..starts.len() {
        if starts[k] < starts[k - 1] {
            starts[k] = starts[k - 1];
        }
    }
    let mut out = Vec::with_capacity(spans.len());
    for k in 0..spans.len() {
        let sp = &spans[k];
        let s = starts[k];
        let s_ms = fr.frame_start(s).0;
        let mut e = fr.frame_round(Millis((sp.end + p.shift).max(0))).max(s + 1);
        // The longest the cue may last, in frames (at least one).
        let max_end = p
            .max_dur
            .map(|md| (fr.frame_floor(Millis(s_ms + md))).max(s + 1));
        let mut needed = p.min_dur;
        if p.pace {
            needed = needed.max((sp.chars as i64 * 1000 + p.cps - 1) / p.cps);
        }
        if p.avoid_flash {
            needed = needed.max(super::segment::FLASH_MS);
        }
        if let Some(md) = p.max_dur {
            needed = needed.min(md);
        }
        let want = frame_ceil(fr, s_ms + needed);
        let next = starts.get(k + 1).copied();
        let limit = next.map(|ns| ns - n_gap);
        if want > e {
            // Extend into the following silence, never past the next cue minus the gap.
            e = match limit {
                Some(l) => want.min(l.max(e)),
                None => want,
            };
        }
        if let (Some(ns), Some(l)) = (next, limit) {
            let gap_ms = fr.frame_start(ns).0 - fr.frame_start(e).0;
            if gap_ms <= CHAIN_MS {
                // Chaining: the gap is closed to exactly N frames.
                e = l;
            }
            e = e.min(l);
        }
        if let Some(me) = max_end {
            e = e.min(me);
        }
        if e <= s {
            e = s + 1;
        }
        if let Some(ns) = starts.get_mut(k + 1) {
            // Words closer together than the gap: the later cue moves on.
            if *ns < e + n_gap {
                *ns = e + n_gap;
            }
        }
        out.push((fr.frame_start(s), fr.frame_start(e)));
    }
    out
}
