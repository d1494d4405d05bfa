//! Timing to the picture: the shot-change rules, in whole frames of the job's frame rate.
//!
//! - In-time: a cue whose speech starts within half a second after a shot change starts on it
//!   (unless that would take time the previous cue needs); one that would start at most
//!   [`SHOT_GAP`] frames before a shot change starts on it instead of flashing over the cut.
//! - Out-time: a cue that would cross a shot change and end less than half a second after it (or
//!   end less than [`SHOT_GAP`] frames before it) ends [`SHOT_GAP`] frames before it, unless its
//!   speech, reading pace or minimum duration need the time; then it ends on the cut when they
//!   need no more than the frames up to it, and stays up half a second past the cut when they
//!   cross it (and the next cue and the maximum duration leave room), so no cue hangs over a cut
//!   by a few frames.
//!
//! [`crate::qc`]'s `shot-change-in` and `shot-change-out` rules flag exactly what these rules
//! could have kept and did not. Pure integer arithmetic; never panics.

use crate::{FrameRate, Millis};

/// Frames between a cue's out-time and the shot change it ends before.
pub const SHOT_GAP: i64 = 2;

/// Half a second in frames of `fr`, rounded to the nearest frame (half down): 12 at 23.976, 24
/// and 25 fps, 15 at 29.97 fps.
pub fn half_second(fr: FrameRate) -> i64 {
    let (num, den) = (fr.num as i64, fr.den.max(1) as i64);
    let (q, r) = (num / (2 * den), num % (2 * den));
    if r > den {
        q + 1
    } else {
        q
    }
}

/// The frames shot changes fall on (the first frame of each new shot), sorted, without
/// duplicates or negative times.
pub fn shot_frames(shots: &[Millis], fr: FrameRate) -> Vec<i64> {
    let mut f: Vec<i64> = shots
        .iter()
        .filter(|t| t.0 >= 0)
        .map(|&t| fr.frame_round(t))
        .collect();
    f.sort_unstable();
    f.dedup();
    f
}

/// `cuts.partition_point(pred)`, searched from the front: the layout passes the cuts from just
/// before the cue on (see `timing::Emitter`), so the answer is a step or two in, where a binary
/// search over all of a long video's cuts took a dozen.
pub fn point(cuts: &[i64], pred: impl Fn(i64) -> bool) -> usize {
    // `pred` holds for every cut before `lo`; the probe doubles its distance each step.
    let (mut lo, mut step) = (0, 1);
    loop {
        let probe = lo + step - 1;
        let Some(&c) = cuts.get(probe) else {
            return lo + cuts[lo..].partition_point(|&c| pred(c));
        };
        if !pred(c) {
            return lo + cuts[lo..probe].partition_point(|&c| pred(c));
        }
        lo = probe + 1;
        step *= 2;
    }
}

/// The shot change a cue that would start at frame `s` should start on: one within [`SHOT_GAP`]
/// frames after `s` (the cue would otherwise flash over the cut; the last of cuts that close
/// together), else the last within `half` frames before it.
pub fn start_cut(cuts: &[i64], s: i64, half: i64) -> Option<i64> {
    let i = point(cuts, |c| c <= s);
    // On to the cut, and on again while another follows as closely (bounded all the same).
    let mut on = None;
    for c in cuts.iter().skip(i).take(8) {
        if *c - on.unwrap_or(s) > SHOT_GAP {
            break;
        }
        on = Some(*c);
    }
    if on.is_some() {
        return on;
    }
    let c = *cuts.get(i.checked_sub(1)?)?;
    (c < s && s - c <= half).then_some(c)
}

/// The shot change an out-time `e` of a cue starting at `s` hangs over: the last cut after `s`
/// that `e` is less than half a second after or less than [`SHOT_GAP`] frames before.
pub fn hung_cut(cuts: &[i64], s: i64, e: i64, half: i64) -> Option<i64> {
    // Cuts c with e - half < c < e + SHOT_GAP and c > s.
    let i = point(cuts, |c| c < e.saturating_add(SHOT_GAP));
    let c = *cuts.get(i.checked_sub(1)?)?;
    (c > s && c > e.saturating_sub(half)).then_some(c)
}

/// The out-time of a cue from frame `s` to `e` under the rules: `need` is the earliest frame it
/// may end on (its speech, reading pace and minimum duration), `room` the latest (the next cue
/// less the frame gap, the maximum duration). Two frames before a cut it hangs over; on the cut
/// when its needs end in the two frames before it (the issue's "extend to it when pace needs the
/// time"); half a second past it when its needs cross it. Where no out-time between them keeps
/// the rules (cuts closer together than half a second), the cue ends before the latest cut it
/// can.
pub fn end_at_cuts(cuts: &[i64], s: i64, e: i64, need: i64, room: i64, half: i64) -> i64 {
    let mut e = e;
    // Each step ends the cue before an earlier cut, so a few suffice; bounded all the same.
    for _ in 0..8 {
        let Some(c) = hung_cut(cuts, s, e, half) else {
            break;
        };
        let before = c - SHOT_GAP;
        if before > s && before >= need {
            e = before;
            continue;
        }
        // Its needs end in the last two frames before the cut: it ends on the cut, with the
        // picture, rather than half a second into the next shot where nothing of it is said.
        if need <= c && c > s && c <= room {
            e = c;
            break;
        }
        // Half a second past the cut, unless that hangs over the next one.
        let after = c.saturating_add(half);
        if after > e && after <= room && hung_cut(cuts, s, after, half).is_none() {
            e = after;
        }
        break;
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_a_second_at_each_rate() {
        let rates = [
            (24000, 1001, 12),
            (24, 1, 12),
            (25, 1, 12),
            (30000, 1001, 15),
        ];
        for (num, den, half) in rates {
            assert_eq!(
                half_second(FrameRate::new(num, den).unwrap()),
                half,
                "{num}/{den}"
            );
        }
        assert_eq!(half_second(FrameRate::new(50, 1).unwrap()), 25);
    }

    #[test]
    fn cuts_are_frames_sorted_once() {
        let fr = FrameRate::FPS_25;
        let shots = [Millis(2000), Millis(-40), Millis(1010), Millis(1000)];
        assert_eq!(shot_frames(&shots, fr), vec![25, 50]);
    }

    #[test]
    fn a_start_just_after_a_cut_moves_back_to_it_and_one_just_before_moves_on() {
        let cuts = [100, 200];
        assert_eq!(start_cut(&cuts, 105, 12), Some(100));
        assert_eq!(start_cut(&cuts, 112, 12), Some(100));
        assert_eq!(start_cut(&cuts, 113, 12), None);
        assert_eq!(start_cut(&cuts, 100, 12), None);
        assert_eq!(start_cut(&cuts, 198, 12), Some(200));
        assert_eq!(start_cut(&cuts, 197, 12), None);
        assert_eq!(start_cut(&[10, 12, 13, 20], 9, 12), Some(13));
    }

    #[test]
    fn an_end_over_a_cut_moves_before_it_or_past_half_a_second() {
        let cuts = [100];
        // Crossing by 5 frames, speech done by 90: two frames before the cut.
        assert_eq!(end_at_cuts(&cuts, 50, 105, 90, 1000, 12), 98);
        // One frame before the cut: two frames before it.
        assert_eq!(end_at_cuts(&cuts, 50, 99, 90, 1000, 12), 98);
        // Exactly two before, or half a second after: kept.
        assert_eq!(end_at_cuts(&cuts, 50, 98, 90, 1000, 12), 98);
        assert_eq!(end_at_cuts(&cuts, 50, 112, 90, 1000, 12), 112);
        // Speech runs to 101: half a second past the cut when the next cue leaves room.
        assert_eq!(end_at_cuts(&cuts, 50, 103, 101, 1000, 12), 112);
        // No room: left as it is.
        assert_eq!(end_at_cuts(&cuts, 50, 103, 101, 110, 12), 103);
        // Half a second past the cut would hang over the next cut: left as it is.
        assert_eq!(end_at_cuts(&[100, 110], 50, 103, 101, 1000, 12), 103);
        // A cut at the cue's own start is not crossed.
        assert_eq!(end_at_cuts(&cuts, 100, 105, 101, 1000, 12), 105);
    }

    #[test]
    fn an_end_whose_needs_stop_just_before_a_cut_ends_on_it() {
        let cuts = [100];
        // Speech to frame 99 or 100 (one frame less than two before the cut): on the cut, not
        // half a second past it.
        assert_eq!(end_at_cuts(&cuts, 50, 99, 99, 1000, 12), 100);
        assert_eq!(end_at_cuts(&cuts, 50, 100, 100, 1000, 12), 100);
        // Held past the cut by chaining with the needs before it: back on the cut.
        assert_eq!(end_at_cuts(&cuts, 50, 105, 99, 1000, 12), 100);
        // The next cue leaves no room up to the cut: left as it is.
        assert_eq!(end_at_cuts(&cuts, 50, 99, 99, 99, 12), 99);
        // The needs cross the cut: still half a second past it.
        assert_eq!(end_at_cuts(&cuts, 50, 101, 101, 1000, 12), 112);
    }
}
