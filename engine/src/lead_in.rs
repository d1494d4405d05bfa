//! The in-cue lead-in: cues shown a few frames before their first word, as a subtitler sets it
//! for a project (`inCueLeadInFrames`). The layout never applies it (its cues start at their first
//! word); the editor's downloads apply it to the laid-out cues, the API never does.

use crate::{Cue, FrameRate, Millis};

/// The largest lead-in a project may set: one second at 25 fps (professional lead-ins are a few
/// frames; more than this reads as a subtitle shown before anyone speaks).
pub const MAX_LEAD_IN_FRAMES: u32 = 25;

/// Starts every cue of `cues` (in time order) up to `frames` frames earlier at `frame_rate`: never
/// before 0, never within `gap_frames` frames of the previous cue's end (the job's
/// minFramesBetweenSubtitles), never later than it was. Ends, text and words are unchanged. The
/// new start is a frame boundary; a cue that cannot move keeps its start exactly, so 0 frames (or
/// no room) leaves the list as it was.
pub fn apply_lead_in(cues: &mut [Cue], frame_rate: FrameRate, frames: u32, gap_frames: u32) {
    if frames == 0 {
        return;
    }
    let mut prev_end: Option<Millis> = None;
    for cue in cues.iter_mut() {
        let start_frame = frame_rate.frame_round(cue.start);
        let mut earliest = start_frame.saturating_sub(i64::from(frames)).max(0);
        if let Some(end) = prev_end {
            // The first frame the gap allows: the previous end's frame (rounded up when it is not
            // on a boundary) plus the gap.
            let mut end_frame = frame_rate.frame_floor(end);
            if frame_rate.frame_start(end_frame) < end {
                end_frame += 1;
            }
            earliest = earliest.max(end_frame.saturating_add(i64::from(gap_frames)));
        }
        let start = frame_rate.frame_start(earliest);
        if earliest < start_frame && start < cue.start {
            cue.start = start;
        }
        prev_end = Some(match prev_end {
            Some(p) => p.max(cue.end),
            None => cue.end,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cue(index: u32, start: i64, end: i64) -> Cue {
        Cue::from_lines(
            index,
            Millis(start),
            Millis(end),
            vec![format!("cue {index}")],
        )
    }

    fn starts(cues: &[Cue]) -> Vec<i64> {
        cues.iter().map(|c| c.start.0).collect()
    }

    #[test]
    fn zero_frames_is_the_identity() {
        let before = vec![cue(1, 1000, 2000), cue(2, 2040, 3000), cue(3, 5000, 6000)];
        let mut after = before.clone();
        apply_lead_in(&mut after, FrameRate::FPS_25, 0, 3);
        assert_eq!(after, before);
    }

    #[test]
    fn starts_move_whole_frames_earlier_and_ends_stay() {
        // 25 fps: a frame is 40 ms; 3 frames = 120 ms.
        let mut cues = vec![cue(1, 1000, 2000), cue(2, 4000, 5000)];
        apply_lead_in(&mut cues, FrameRate::FPS_25, 3, 2);
        assert_eq!(starts(&cues), vec![880, 3880]);
        assert_eq!(cues[0].end, Millis(2000));
        assert_eq!(cues[1].end, Millis(5000));
        assert_eq!(cues[0].lines, vec!["cue 1".to_string()]);
    }

    #[test]
    fn never_before_zero() {
        let mut cues = vec![cue(1, 40, 1000)];
        apply_lead_in(&mut cues, FrameRate::FPS_25, 5, 0);
        assert_eq!(starts(&cues), vec![0]);
        let mut at_zero = vec![cue(1, 0, 1000)];
        apply_lead_in(&mut at_zero, FrameRate::FPS_25, 5, 0);
        assert_eq!(starts(&at_zero), vec![0]);
    }

    #[test]
    fn keeps_the_gap_to_the_previous_cue() {
        // The previous cue ends at frame 50 (2000 ms); with a 2-frame gap the next may start at
        // frame 52 (2080 ms) at the earliest, though 5 frames would take it to 2000 ms.
        let mut cues = vec![cue(1, 1000, 2000), cue(2, 2200, 3000)];
        apply_lead_in(&mut cues, FrameRate::FPS_25, 5, 2);
        assert_eq!(starts(&cues), vec![800, 2080]);
        // Already at the gap: it stays.
        let mut tight = vec![cue(1, 1000, 2000), cue(2, 2080, 3000)];
        apply_lead_in(&mut tight, FrameRate::FPS_25, 5, 2);
        assert_eq!(starts(&tight), vec![800, 2080]);
        // Closer than the gap already (an edit did that): never later than it was.
        let mut close = vec![cue(1, 1000, 2000), cue(2, 2040, 3000)];
        apply_lead_in(&mut close, FrameRate::FPS_25, 5, 2);
        assert_eq!(starts(&close), vec![800, 2040]);
        // A gap of 0 lets it start on the previous end, never into the previous cue.
        let mut touching = vec![cue(1, 1000, 2000), cue(2, 2100, 3000)];
        apply_lead_in(&mut touching, FrameRate::FPS_25, 5, 0);
        assert_eq!(starts(&touching), vec![800, 2000]);
    }

    #[test]
    fn frame_exact_at_ntsc_rates() {
        let fr = FrameRate::new(30000, 1001).expect("rate");
        // Frame 90 starts at 3003 ms; 2 frames earlier is frame 88 at 2936.27 -> 2936 ms.
        let mut cues = vec![cue(1, fr.frame_start(90).0, 4000)];
        apply_lead_in(&mut cues, fr, 2, 0);
        assert_eq!(cues[0].start, fr.frame_start(88));
        assert_eq!(fr.frame_round(cues[0].start), 88);
        // Every moved start is a frame boundary and at most `frames` frames earlier.
        let mut many: Vec<Cue> = (0..50)
            .map(|k| {
                let s = fr.frame_start(k * 7 + 1).0;
                cue(k as u32 + 1, s, fr.frame_start(k * 7 + 5).0)
            })
            .collect();
        let before = many.clone();
        apply_lead_in(&mut many, fr, 3, 1);
        for (k, (a, b)) in many.iter().zip(&before).enumerate() {
            let moved = fr.frame_round(b.start) - fr.frame_round(a.start);
            assert!((0..=3).contains(&moved), "cue {k} moved {moved} frames");
            assert_eq!(fr.frame_start(fr.frame_round(a.start)), a.start);
            assert_eq!(a.end, b.end);
            if k > 0 {
                let gap = fr.frame_round(a.start) - fr.frame_round(many[k - 1].end);
                assert!(gap >= 1, "cue {k} is {gap} frames after the previous end");
            }
        }
        // Here every cue has room for 2 of the 3 frames (the gap is 4 frames minus 1 kept).
        assert!(many
            .iter()
            .zip(&before)
            .skip(1)
            .all(|(a, b)| fr.frame_round(b.start) - fr.frame_round(a.start) == 2));
    }
}
