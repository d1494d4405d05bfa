//! Pinned layouts: a segmentation that belongs to the subtitler (docs/decisions/layout.md,
//! "Pinned layouts").
//!
//! Words are *pinned* when the last of them (in reading order) carries a manual cue break, which
//! has no other meaning (nothing follows it). Then the manual breaks are the whole
//! segmentation: each cue is exactly the words from one manual cue break to the next, and its
//! lines break exactly at its manual line breaks (a two-speaker cue still shows one dashed line
//! per speaker). No other rule cuts or joins: a cue over the line length, the line count, the
//! pace or maxDuration stays as it is (QC reports it). Timing is unchanged (shift, frames, pace,
//! minimum and maximum duration, gap, chaining), and it reads a cue and the next cue's start
//! only, so an edit of one cue's words inside its own time changes that cue alone. A cue whose
//! manual cue break is `Break::Timed` is timed by hand (its words' times, no rule), each cue by
//! its own mark.
//!
//! [`pin`] turns any words into pinned words that lay out to the same cues (what the editor does
//! before the first edit of a transcript); [`relayout`] lays a range of pinned words out again
//! under every rule and pins the result.

use super::prepare::{Texts, Unit, CUE_AFTER, LINE_AFTER, MID_WORD};
use crate::{Break, FrameRate, Settings, Word};

/// Whether `words` are pinned: the last word in reading order has a manual cue break (a
/// `Break::Timed` one too).
pub(super) fn is_pinned(texts: Texts<'_>) -> bool {
    matches!(last_break(texts), Some(Break::Cue | Break::Timed))
}

/// The manual break after the last word in reading order.
fn last_break(texts: Texts<'_>) -> Option<Break> {
    let n = texts.words.len();
    (n > 0)
        .then(|| texts.words.get(texts.index(n - 1)))
        .flatten()
        .and_then(|w| w.break_after)
}

/// The cues of units `[base, end)` of pinned words: cut after every unit with a manual cue
/// break, nowhere else.
pub(super) fn segment(units: &[Unit], (base, end): (usize, usize), cues: &mut Vec<(usize, usize)>) {
    let mut a = base;
    for (u, unit) in units.iter().enumerate().take(end).skip(base) {
        if unit.has(CUE_AFTER) || u + 1 == end {
            cues.push((a, u + 1));
            a = u + 1;
        }
    }
}

/// Where a chunk of pinned units ends: after the first manual cue break in `[min - 1, max - 1)`,
/// else after the last one before it (after `base`), else at `max` (a cue of thousands of units
/// is cut there: the one place a pinned cue is not kept whole).
pub(super) fn chunk_end(units: &[Unit], base: usize, min: usize, max: usize) -> usize {
    let max = max.min(units.len().saturating_sub(1)).max(min);
    if let Some(u) = (min..max).find(|&u| u >= 1 && units[u - 1].has(CUE_AFTER)) {
        return u;
    }
    if let Some(u) = (base + 1..min).rev().find(|&u| units[u - 1].has(CUE_AFTER)) {
        return u;
    }
    max.max(1)
}

/// The line starts of a pinned cue (relative to its first unit): after each manual line break.
pub(super) fn line_starts(cue: &[Unit], starts: &mut Vec<u32>) {
    starts.clear();
    starts.push(0);
    for k in 1..cue.len() {
        if cue[k - 1].has(LINE_AFTER) {
            starts.push(k as u32);
        }
    }
}

/// The manual breaks that pin a laid-out cue: `(reading position, break)` after the units that end
/// its lines (`line_starts`, relative to `i`) and the cue (`[i, j)`). A line that ends inside a
/// word cut into pieces cannot be pinned and is left out.
pub(super) fn record(
    units: &[Unit],
    (i, j): (usize, usize),
    line_starts: &[u32],
    out: &mut Vec<(usize, Break)>,
) {
    for &s in line_starts.iter().skip(1) {
        let u = &units[i + s as usize - 1];
        if !u.has(MID_WORD) {
            out.push((u.word as usize, Break::Line));
        }
    }
    out.push((units[j - 1].word as usize, Break::Cue));
}

/// `words` pinned: every manual break removed, then a manual cue break after the last word with
/// visible text of each cue [`layout`] gives them and a manual line break after the last word of
/// each of its lines but the last, and a cue break after the last word. Their layout is the same
/// cues (but where a long word was cut over a cue or line boundary: the word then stays whole in
/// the first). Words already pinned are returned as they are.
pub fn pin(words: &[Word], settings: &Settings, frame_rate: FrameRate) -> Vec<Word> {
    let n = words.len().min(u32::MAX as usize - 1);
    let words = &words[..n];
    let order = super::reading_order(words);
    let texts = Texts {
        words,
        order: order.as_deref(),
        arena: "",
    };
    if is_pinned(texts) {
        return words.to_vec();
    }
    let mut breaks = Vec::new();
    super::layout_recording(words, settings, frame_rate, &mut breaks);
    let mut out = words.to_vec();
    for w in &mut out {
        w.break_after = None;
    }
    for (k, b) in breaks {
        if let Some(w) = out.get_mut(texts.index(k)) {
            // A cue break wins over a line break recorded for the same word.
            if w.break_after != Some(Break::Cue) {
                w.break_after = Some(b);
            }
        }
    }
    if let Some(last) = (n > 0).then(|| texts.index(n - 1)) {
        out[last].break_after = Some(Break::Cue);
    }
    out
}

/// Pinned `words` with `words[lo..hi]` laid out again under every rule of `settings`, as if they
/// were a transcript of their own: their manual breaks are replaced by the cues and lines that
/// layout gives them, pinned, and a cue break stays after `words[hi - 1]` (the range stays its
/// own cues; the words before and after it keep theirs). The range's cues are timed by the rules
/// (ordinary cue breaks); a cue outside it timed by hand (`Break::Timed`) stays so. Out-of-range
/// bounds are clamped.
pub fn relayout(
    words: &[Word],
    settings: &Settings,
    frame_rate: FrameRate,
    (lo, hi): (usize, usize),
) -> Vec<Word> {
    let hi = hi.min(words.len());
    let lo = lo.min(hi);
    let mut out = words.to_vec();
    let mut part: Vec<Word> = words[lo..hi].to_vec();
    for w in &mut part {
        w.break_after = None;
    }
    let part = pin(&part, settings, frame_rate);
    out.splice(lo..hi, part);
    if let Some(last) = out
        .last_mut()
        .filter(|w| !matches!(w.break_after, Some(Break::Cue | Break::Timed)))
    {
        last.break_after = Some(Break::Cue);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{layout, Layout};
    use crate::{Cue, Millis};

    fn spoken(text: &str) -> Vec<Word> {
        said(text, 250, 290, 900)
    }

    /// `text`'s words, each lasting `dur` ms, one starting every `step` ms, `pause` ms after a
    /// sentence's end.
    fn said(text: &str, dur: i64, step: i64, pause: i64) -> Vec<Word> {
        let mut t = 0;
        text.split(' ')
            .map(|w| {
                let word = Word::new(w, crate::Millis(t), crate::Millis(t + dur), 0);
                t += if w.ends_with('.') { pause } else { step };
                word
            })
            .collect()
    }

    /// What a cue shows: its times, speaker, lines and words (without their manual breaks).
    fn shown(cues: &[Cue]) -> Vec<Cue> {
        let mut cues = cues.to_vec();
        for w in cues.iter_mut().flat_map(|c| c.words.iter_mut()) {
            w.break_after = None;
        }
        cues
    }

    const TEXT: &str = "The river moved quickly past the old mill. Then the valley flooded and \
        nobody in the village could reach the station before night fell. We waited. In the \
        morning the water had gone down enough for the first boats to come through the square.";

    #[test]
    fn pinned_words_lay_out_to_the_same_cues_and_keep_them_through_a_settings_change() {
        let words = spoken(TEXT);
        let s = Settings::default();
        let fr = FrameRate::FPS_25;
        let cues = layout(&words, &s, fr);
        assert!(cues.len() >= 4, "{cues:?}");
        let pinned = pin(&words, &s, fr);
        assert_eq!(shown(&layout(&pinned, &s, fr)), cues);
        assert_eq!(pin(&pinned, &s, fr), pinned);
        // A narrower line: the unpinned words re-flow, the pinned ones keep every cue and line.
        let narrow = Settings {
            max_chars_per_line: 20,
            ..Settings::default()
        };
        let lines = |cs: &[Cue]| cs.iter().map(|c| c.lines.clone()).collect::<Vec<_>>();
        assert_ne!(lines(&layout(&words, &narrow, fr)), lines(&cues));
        assert_eq!(lines(&layout(&pinned, &narrow, fr)), lines(&cues));
        // Laid out again, everything follows the new setting and stays pinned.
        let again = relayout(&pinned, &narrow, fr, (0, pinned.len()));
        assert_eq!(
            shown(&layout(&again, &narrow, fr)),
            layout(&words, &narrow, fr)
        );
        assert_eq!(again.last().and_then(|w| w.break_after), Some(Break::Cue));
    }

    #[test]
    fn a_pinned_cue_over_the_limits_stays_one_cue_and_the_others_do_not_move() {
        let s = Settings::default();
        let fr = FrameRate::FPS_25;
        let mut words = pin(&spoken(TEXT), &s, fr);
        let before = layout(&words, &s, fr);
        // Lengthen a middle cue's first word far beyond a line.
        let k = before[0].words.len();
        let w = &mut words[k];
        w.text = "Then-the-valley-flooded-and-kept-on-flooding-for-days-on-end".into();
        let after = layout(&words, &s, fr);
        assert_eq!(after.len(), before.len());
        for (a, b) in after.iter().zip(&before).filter(|(a, _)| a.index != 2) {
            assert_eq!(a, b);
        }
        let mut l = Layout::new(&pin(&spoken(TEXT), &s, fr), &s, fr);
        l.update(&pin(&spoken(TEXT), &s, fr), &words, &s, fr);
        assert_eq!(l.cues, after);
        assert_eq!(after[0].end, before[0].end);
        assert!(after[1].start == before[1].start && after[1].start > Millis(0));
    }

    #[test]
    fn relaying_out_a_range_leaves_the_cues_around_it() {
        let s = Settings::default();
        let fr = FrameRate::FPS_25;
        let words = pin(&spoken(TEXT), &s, fr);
        let before = layout(&words, &s, fr);
        let n1 = before[0].words.len();
        let n2 = n1 + before[1].words.len();
        // Merge cues 2 and 3 by hand into one over-long cue, then lay that range out again.
        let mut merged = words.clone();
        merged[n2 - 1].break_after = None;
        let n3 = n2 + before[2].words.len();
        let again = relayout(&merged, &s, fr, (n1, n3));
        let after = layout(&again, &s, fr);
        assert_eq!(after[0], before[0]);
        let tail = before.len() - 3;
        for (a, b) in after.iter().rev().zip(before.iter().rev()).take(tail) {
            assert_eq!((a.start, a.end, &a.lines), (b.start, b.end, &b.lines));
        }
    }

    /// `words` (pinned) with every manual cue break marked timed by hand, as an imported file's.
    fn by_hand(words: &[Word]) -> Vec<Word> {
        let mut words = words.to_vec();
        for w in &mut words {
            if w.break_after == Some(Break::Cue) {
                w.break_after = Some(Break::Timed);
            }
        }
        words
    }

    /// Quick speech: every cue's words take less time than its text needs at any reading pace,
    /// so the rules lengthen what a hand leaves as spoken.
    fn quick(text: &str) -> Vec<Word> {
        said(text, 120, 140, 1400)
    }

    /// A cue timed by hand as its words are: first word's start to last word's end, on frames.
    fn as_spoken(c: &Cue, fr: FrameRate) -> (Millis, Millis) {
        let first = c.words.iter().map(|w| w.start).min().unwrap_or_default();
        let last = c.words.iter().map(|w| w.end).max().unwrap_or_default();
        (fr.snap(first), fr.snap(last))
    }

    #[test]
    fn each_cue_is_timed_by_hand_or_by_the_rules_by_its_own_mark() {
        let s = Settings::default();
        let fr = FrameRate::FPS_25;
        let ruled = pin(&quick(TEXT), &s, fr);
        let hand = by_hand(&ruled);
        let by_rules = layout(&ruled, &s, fr);
        let cues = layout(&hand, &s, fr);
        assert_eq!(cues.len(), by_rules.len());
        assert!(cues.len() >= 4, "{cues:?}");
        for c in &cues {
            assert_eq!((c.start, c.end), as_spoken(c, fr), "{c:?}");
        }
        // The rules give the cues their reading time, or end them the gap before the next.
        for (a, b) in cues.iter().zip(&by_rules) {
            assert_eq!(a.lines, b.lines);
            assert_ne!(a.end, b.end, "{a:?} {b:?}");
        }
        // Cue 2 alone timed by the rules again: it ends where the rules end it (its neighbours
        // start and end as before), and every other cue keeps its hand-made times.
        let end2 = cues[0].words.len() + cues[1].words.len() - 1;
        let mut mixed = hand.clone();
        mixed[end2].break_after = Some(Break::Cue);
        let after = layout(&mixed, &s, fr);
        assert_eq!(after.len(), cues.len());
        for (k, (a, b)) in after.iter().zip(&cues).enumerate() {
            if k == 1 {
                assert_eq!((a.start, a.end), (by_rules[1].start, by_rules[1].end));
            } else {
                assert_eq!(
                    shown(std::slice::from_ref(a)),
                    shown(std::slice::from_ref(b))
                );
            }
        }
        // The layout brought up to date after the change is the layout of the changed words.
        let mut l = Layout::new(&hand, &s, fr);
        l.update(&hand, &mixed, &s, fr);
        assert_eq!(l.cues, after);
    }

    #[test]
    fn a_cue_timed_by_the_rules_keeps_the_gap_to_the_hand_timed_cues_around_it() {
        let s = Settings::default();
        let fr = FrameRate::FPS_25;
        // Cue 2's words start inside the gap after cue 1 and run into cue 3's start.
        let mut words = vec![
            Word::new("One.", Millis(0), Millis(1000), 0),
            Word::new("Two", Millis(1010), Millis(1200), 0),
            Word::new("two.", Millis(1200), Millis(1990), 0),
            Word::new("Three.", Millis(2000), Millis(3000), 0),
        ];
        words[0].break_after = Some(Break::Timed);
        words[2].break_after = Some(Break::Cue);
        words[3].break_after = Some(Break::Timed);
        let cues = layout(&words, &s, fr);
        assert_eq!(cues.len(), 3, "{cues:?}");
        assert_eq!((cues[0].start, cues[0].end), (Millis(0), Millis(1000)));
        assert_eq!((cues[2].start, cues[2].end), (Millis(2000), Millis(3000)));
        let gap = fr.frames_duration(s.min_frames_between_subtitles);
        assert!(cues[1].start >= cues[0].end + gap, "{cues:?}");
        assert!(cues[1].end + gap <= cues[2].start, "{cues:?}");
    }

    #[test]
    fn laying_out_a_range_of_hand_timed_cues_again_leaves_the_others_timed_by_hand() {
        let s = Settings::default();
        let fr = FrameRate::FPS_25;
        let hand = by_hand(&pin(&quick(TEXT), &s, fr));
        let before = layout(&hand, &s, fr);
        let n1 = before[0].words.len();
        let n3 = n1 + before[1].words.len() + before[2].words.len();
        let again = relayout(&hand, &s, fr, (n1, n3));
        assert_eq!(again[n3 - 1].break_after, Some(Break::Cue));
        assert_eq!(again.last().and_then(|w| w.break_after), Some(Break::Timed));
        let after = layout(&again, &s, fr);
        assert_eq!(after.len(), before.len());
        let mut refitted = 0;
        for (k, (a, b)) in after.iter().zip(&before).enumerate() {
            if k == 1 || k == 2 {
                refitted += usize::from(a.end != b.end);
            } else {
                assert_eq!(
                    shown(std::slice::from_ref(a)),
                    shown(std::slice::from_ref(b))
                );
            }
        }
        assert_eq!(refitted, 2, "{after:?}");
        // The whole file laid out again: every cue timed by the rules.
        let all = relayout(&again, &s, fr, (0, again.len()));
        assert!(all.iter().all(|w| w.break_after != Some(Break::Timed)));
        assert_eq!(shown(&layout(&all, &s, fr)), layout(&quick(TEXT), &s, fr));
    }
}
