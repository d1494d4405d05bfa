//! Direct timing (issue 22, item 4): a cue's start or end set to a time (`settime`, a typed time or
//! a dragged edge) or moved by whole frames (`nudge`). The edge lands on the frame grid; a
//! neighbour in the way is moved to keep the minimum gap, or the operation is refused, saying
//! why, when that would leave the neighbour no time. After the layout has timed the result, an
//! edge that did not move at all is refused too (a rule holds it: reading pace, the minimum
//! duration, chaining of short gaps...), so a refused or empty operation writes no revision.

use cuecraft_engine::{Cue, FrameRate, Millis, Settings, Word};
use serde_json::Value;

use super::super::cache::View;
use super::super::WebError;
use super::usize_field;

/// A cue as the page showed it: its times and its stored words `[from, to)`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shown {
    pub start: Millis,
    pub end: Millis,
    pub from: usize,
    pub to: usize,
    pub index: u32,
}

/// The cues of a layout as shown.
pub(super) fn shown(cues: &[Cue]) -> Vec<Shown> {
    let mut from = 0;
    cues.iter()
        .map(|c| {
            from += c.words.len();
            Shown {
                start: c.start,
                end: c.end,
                from: from - c.words.len(),
                to: from,
                index: c.index,
            }
        })
        .collect()
}

/// What a timing operation asked for, checked against the layout of its result.
#[derive(Clone, Debug)]
pub(super) struct Timed {
    /// The history's note.
    pub note: String,
    /// The cue (position) and whether its start (else its end) was set.
    pub cue: usize,
    pub start: bool,
    /// A stored word of the cue that stays in it: the cue is found by it after the layout.
    pub word: usize,
    /// The edge as shown before, and where it was asked to go (on the frame grid).
    pub before: Millis,
    pub asked: Millis,
}

/// Seconds as the editor's notices show them.
fn secs(t: Millis) -> String {
    format!("{:.3} s", t.0 as f64 / 1000.0)
}

/// The refusal of cue `n`'s start (`start`) or end at `asked` when the cue before it (or after
/// it), `other`, has no room left to keep the minimum gap: it would have to end before its own
/// start (or start after its own end).
fn no_room(n: u32, start: bool, asked: Millis, other: &Shown, settings: &Settings) -> WebError {
    let (what, its, at, must, side) = if start {
        ("start", "starts", other.start, "end", "before")
    } else {
        ("end", "ends", other.end, "start", "after")
    };
    let frames = settings.min_frames_between_subtitles;
    WebError::BadRequest(format!(
        "Cue {n} cannot {what} at {}: cue {} {its} at {} and must {must} {frames} frame{} {side} it.",
        secs(asked),
        other.index,
        secs(at),
        if frames == 1 { "" } else { "s" },
    ))
}

/// Applies a `settime` (`{from, to, edge, time}`, time in ms) or `nudge` (`{from, to, edge,
/// frames}`) to `words`, the cue `[from, to)` being one of `cues` as shown.
pub(super) fn set_time(
    words: &mut [Word],
    cues: &[Shown],
    op: &Value,
    settings: &Settings,
    fr: FrameRate,
) -> Result<Timed, WebError> {
    let (from, to) = (usize_field(op, "from")?, usize_field(op, "to")?);
    let k = cues
        .iter()
        .position(|c| c.from == from && c.to == to && to <= words.len())
        .ok_or_else(|| {
            WebError::BadRequest("That is not a cue as shown: reload the page.".into())
        })?;
    let cue = cues[k];
    let start = match op.get("edge").and_then(Value::as_str) {
        Some("start") => true,
        Some("end") => false,
        _ => return Err(WebError::BadRequest("`edge` must be start or end.".into())),
    };
    let frame = fr.frames_duration(1);
    let before = if start { cue.start } else { cue.end };
    let wanted = match op.get("op").and_then(Value::as_str) {
        Some("nudge") => {
            let n = op
                .get("frames")
                .and_then(Value::as_i64)
                .filter(|n| *n != 0 && n.abs() <= 250)
                .ok_or_else(|| {
                    WebError::BadRequest(
                        "`frames` must be a whole number of frames, ±1 to ±250.".into(),
                    )
                })?;
            before.0 + n * frame.0
        }
        _ => op
            .get("time")
            .and_then(Value::as_i64)
            .filter(|t| (0..=100 * 3_600_000).contains(t))
            .ok_or_else(|| {
                WebError::BadRequest(
                    "`time` must be milliseconds from the start (0 or more).".into(),
                )
            })?,
    };
    let asked = fr.frame_start(fr.frame_round(Millis(wanted.max(0))));
    let n = cue.index;
    let what = if start { "start" } else { "end" };
    if asked == before {
        return Err(WebError::BadRequest(format!(
            "Cue {n} already {}s at {}: nothing to change.",
            what,
            secs(before)
        )));
    }
    let gap = fr.frames_duration(settings.min_frames_between_subtitles);
    let shift = i64::from(settings.shift_ms);
    // The stored words' time of a time on screen (the layout adds the shift).
    let word_time = |t: Millis| Millis((t.0 - shift).max(0));
    let visible = |w: &Word| !w.text.trim().is_empty();
    let first = (from..to).find(|&i| visible(&words[i]));
    let last = (from..to).rev().find(|&i| visible(&words[i]));
    let (Some(first), Some(last)) = (first, last) else {
        return Err(WebError::BadRequest(format!("Cue {n} has no words.")));
    };
    let mut moved = None;
    if start {
        if asked.0 + frame.0 > cue.end.0 {
            return Err(WebError::BadRequest(format!(
                "Cue {n} cannot start at {}: it ends at {}.",
                secs(asked),
                secs(cue.end)
            )));
        }
        if let Some(prev) = k.checked_sub(1).map(|p| cues[p]) {
            // The cue before ends the minimum gap before the new start, or the start is refused.
            let end = Millis(asked.0 - gap.0);
            if prev.end > end {
                if end.0 < prev.start.0 + frame.0 {
                    return Err(no_room(n, true, asked, &prev, settings));
                }
                let t = word_time(end);
                for w in &mut words[prev.from..prev.to] {
                    if w.end > t {
                        w.end = t;
                        w.start = w.start.min(t);
                    }
                }
                moved = Some(k - 1);
            }
        }
        let t = word_time(asked);
        words[first].start = t;
        for w in &mut words[first..to] {
            if w.start < t {
                w.start = t;
            }
            if w.end < w.start {
                w.end = w.start;
            }
        }
    } else {
        if asked.0 < cue.start.0 + frame.0 {
            return Err(WebError::BadRequest(format!(
                "Cue {n} cannot end at {}: it starts at {}.",
                secs(asked),
                secs(cue.start)
            )));
        }
        if let Some(next) = cues.get(k + 1).copied() {
            // The cue after starts the minimum gap after the new end, or the end is refused.
            let begin = Millis(asked.0 + gap.0);
            if next.start < begin {
                if begin.0 + frame.0 > next.end.0 {
                    return Err(no_room(n, false, asked, &next, settings));
                }
                let t = word_time(begin);
                for w in &mut words[next.from..next.to] {
                    if w.start < t {
                        w.start = t;
                        w.end = w.end.max(t);
                    }
                }
                moved = Some(k + 1);
            }
        }
        let t = word_time(asked);
        words[last].end = t;
        for w in &mut words[from..=last] {
            if w.end > t {
                w.end = t;
            }
            if w.start > w.end {
                w.start = w.end;
            }
        }
    }
    let mut note = format!("Set cue {n}'s {what} to {}", secs(asked));
    if let Some(m) = moved {
        let other = if start { "end" } else { "start" };
        note.push_str(&format!(
            " (cue {}'s {other} moved to keep the gap)",
            cues[m].index
        ));
    }
    Ok(Timed {
        note,
        cue: k,
        start,
        word: if start { first } else { last },
        before,
        asked,
    })
}

/// Checks the layout of a timing operation's result: refused (no revision) when the edge did
/// not move at all, saying which rule holds it; else the notice for the page when the edge is
/// not where it was asked to go, or a neighbour's edge moved.
pub(super) fn check(
    t: &Timed,
    view: &View,
    old: &[Shown],
    settings: &Settings,
    fr: FrameRate,
) -> Result<Option<String>, WebError> {
    let cues = &view.layout.cues;
    let k = view
        .starts
        .iter()
        .rposition(|&s| s <= t.word)
        .ok_or_else(|| WebError::Internal("timing: no cue".into()))?;
    let cue = &cues[k];
    let got = if t.start { cue.start } else { cue.end };
    let n = cue.index;
    let what = if t.start { "start" } else { "end" };
    let mut notes = Vec::new();
    if got != t.asked {
        let why = why_held(view, k, t, settings, fr);
        if got == t.before {
            return Err(WebError::BadRequest(format!(
                "Cue {n}'s {what} stays at {}: {why}.",
                secs(got)
            )));
        }
        notes.push(format!(
            "Cue {n}'s {what} is at {}, not {}: {why}.",
            secs(got),
            secs(t.asked)
        ));
    }
    // The cue's other edge (reading pace may move an end on with a later start), a neighbour
    // moved by the gap (asked for) or by a rule (a short gap chained).
    let other = old
        .get(t.cue)
        .map(|c| if t.start { c.end } else { c.start });
    let now = if t.start { cue.end } else { cue.start };
    if other.is_some_and(|o| o != now) {
        let which = if t.start { "end" } else { "start" };
        notes.push(format!("Cue {n}'s {which} moved to {} with it.", secs(now)));
    }
    for (m, their) in [
        (t.cue.checked_sub(1), k.checked_sub(1)),
        (Some(t.cue + 1), Some(k + 1)),
    ] {
        let (Some(m), Some(their)) = (m, their) else {
            continue;
        };
        let (Some(a), Some(b)) = (old.get(m), cues.get(their)) else {
            continue;
        };
        if a.start != b.start {
            notes.push(format!(
                "Cue {}'s start moved to {}.",
                b.index,
                secs(b.start)
            ));
        }
        if a.end != b.end {
            notes.push(format!("Cue {}'s end moved to {}.", b.index, secs(b.end)));
        }
    }
    Ok((!notes.is_empty()).then(|| notes.join(" ")))
}

/// Why the layout kept cue `k`'s edge off the time asked: the rule that holds it.
fn why_held(view: &View, k: usize, t: &Timed, settings: &Settings, fr: FrameRate) -> String {
    let cues = &view.layout.cues;
    let cue = &cues[k];
    let frame = fr.frames_duration(1).0;
    let gap = fr.frames_duration(settings.min_frames_between_subtitles).0;
    if t.start {
        return match k.checked_sub(1).map(|p| &cues[p]) {
            Some(prev) if cue.start.0 - prev.end.0 <= gap => format!(
                "cue {} ends {} frames before it, the minimum gap",
                prev.index, settings.min_frames_between_subtitles
            ),
            _ if settings.shift_ms != 0 => format!(
                "the layout's shift of {} ms and the frame grid put it there",
                settings.shift_ms
            ),
            _ => "the layout's timing rules keep it there".into(),
        };
    }
    let chars = cue.lines.join(" ").chars().count();
    let cps = view.style_cps.unwrap_or(0) as usize;
    let pace = if cps > 0 {
        (chars * 1000).div_ceil(cps)
    } else {
        0
    } as i64;
    let min = settings.min_duration.map_or(0, |m| m.0);
    let flash = if settings.format_subtitles {
        cuecraft_engine::qc::FLASH.0
    } else {
        0
    };
    let has = cue.end.0 - cue.start.0;
    if cue.end < t.asked {
        return match settings.max_duration {
            Some(md) if has + frame > md.0 => {
                format!("the maximum duration is {:.2} s", md.as_secs_f64())
            }
            _ => match cues.get(k + 1) {
                Some(next) => format!(
                    "cue {} starts at {} and the gap before it is {} frames",
                    next.index,
                    secs(next.start),
                    settings.min_frames_between_subtitles
                ),
                None => "the layout's timing rules keep it there".into(),
            },
        };
    }
    match cues.get(k + 1) {
        Some(next) if next.start.0 - cue.end.0 <= gap && next.start.0 - t.asked.0 <= 500 + gap => {
            format!(
                "the gap to cue {} would be under 0.5 s, and short gaps are closed to {} frames",
                next.index, settings.min_frames_between_subtitles
            )
        }
        _ if pace >= min.max(flash) && has <= pace + frame => format!(
            "its {chars} characters need {:.2} s at {cps} characters a second",
            pace as f64 / 1000.0
        ),
        _ if min >= flash && has <= min + frame => {
            format!("the minimum duration is {:.2} s", min as f64 / 1000.0)
        }
        _ if has <= flash + frame => "a cue shorter than 5/6 s would flash by".to_string(),
        _ => "the layout's timing rules keep it there".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuecraft_engine::{layout, pin};
    use serde_json::json;

    /// Two sentences far apart, pinned as laid out: two cues.
    fn words() -> Vec<Word> {
        let mut w = Vec::new();
        for (k, t) in ["One", "two", "three."].iter().enumerate() {
            w.push(Word::new(
                *t,
                Millis(k as i64 * 400),
                Millis(k as i64 * 400 + 350),
                0,
            ));
        }
        for (k, t) in ["Four", "five", "six."].iter().enumerate() {
            w.push(Word::new(
                *t,
                Millis(3000 + k as i64 * 400),
                Millis(3350 + k as i64 * 400),
                0,
            ));
        }
        pin(&w, &Settings::default(), FrameRate::FPS_25)
    }

    fn cues(w: &[Word]) -> Vec<Shown> {
        shown(&layout(w, &Settings::default(), FrameRate::FPS_25))
    }

    fn op(w: &[Word], k: usize, edge: &str, time: i64) -> Value {
        let c = cues(w)[k];
        json!({"op": "settime", "from": c.from, "to": c.to, "edge": edge, "time": time})
    }

    #[test]
    fn a_typed_time_lands_on_the_frame_grid_and_moves_only_that_edge() {
        let mut w = words();
        let before = cues(&w);
        assert_eq!(before.len(), 2);
        let o = op(&w, 1, "start", 2_810);
        let t =
            set_time(&mut w, &before, &o, &Settings::default(), FrameRate::FPS_25).expect("set");
        assert_eq!(t.asked, Millis(2_800));
        let after = cues(&w);
        assert_eq!(after[1].start, Millis(2_800));
        assert_eq!(
            (after[0].start, after[0].end),
            (before[0].start, before[0].end)
        );
        assert_eq!(after[1].end, before[1].end);
    }

    #[test]
    fn a_neighbour_in_the_way_moves_to_keep_the_gap_or_the_edit_is_refused() {
        let mut w = words();
        let before = cues(&w);
        // The first cue's end into the second: the second starts 2 frames (80 ms) later.
        let o = op(&w, 0, "end", 3_200);
        let t =
            set_time(&mut w, &before, &o, &Settings::default(), FrameRate::FPS_25).expect("set");
        assert!(
            t.note.contains("cue 2's start moved to keep the gap"),
            "{}",
            t.note
        );
        let after = cues(&w);
        assert_eq!(after[0].end, Millis(3_200));
        let gap =
            FrameRate::FPS_25.frames_duration(Settings::default().min_frames_between_subtitles);
        assert_eq!(after[1].start, Millis(3_200 + gap.0));
        assert_eq!(after[1].end, before[1].end);
        // Past the second cue's end: refused, the words untouched.
        let mut w2 = w.clone();
        let e = set_time(
            &mut w2,
            &after,
            &op(&w, 0, "end", 4_500),
            &Settings::default(),
            FrameRate::FPS_25,
        );
        assert!(
            matches!(e, Err(WebError::BadRequest(ref m)) if m.contains("cue 2 ends at") && m.ends_with("must start 3 frames after it.")),
            "{e:?}"
        );
        assert_eq!(w2, w);
        // The second cue's start before the first cue's: refused, the words untouched.
        let e = set_time(
            &mut w2,
            &after,
            &op(&w, 1, "start", 0),
            &Settings::default(),
            FrameRate::FPS_25,
        );
        assert!(
            matches!(e, Err(WebError::BadRequest(ref m)) if m.contains("cue 1 starts at") && m.ends_with("must end 3 frames before it.")),
            "{e:?}"
        );
        assert_eq!(w2, w);
        // The same time again changes nothing: refused.
        let e = set_time(
            &mut w2,
            &after,
            &op(&w, 0, "end", 3_200),
            &Settings::default(),
            FrameRate::FPS_25,
        );
        assert!(matches!(e, Err(WebError::BadRequest(m)) if m.contains("nothing to change")));
        // A start after the cue's own end: refused.
        let e = set_time(
            &mut w2,
            &after,
            &op(&w, 0, "start", 3_400),
            &Settings::default(),
            FrameRate::FPS_25,
        );
        assert!(matches!(e, Err(WebError::BadRequest(m)) if m.contains("it ends at")));
    }

    #[test]
    fn nudges_move_whole_frames_from_the_edge_as_shown() {
        let mut w = words();
        let before = cues(&w);
        let c = before[1];
        let t = set_time(
            &mut w,
            &before,
            &json!({"op": "nudge", "from": c.from, "to": c.to, "edge": "end", "frames": 3}),
            &Settings::default(),
            FrameRate::FPS_25,
        )
        .expect("nudge");
        assert_eq!(t.asked, Millis(c.end.0 + 120));
        assert_eq!(cues(&w)[1].end, Millis(c.end.0 + 120));
        for bad in [json!(0), json!(251), json!("1")] {
            let e = set_time(
                &mut w.clone(),
                &cues(&w),
                &json!({"op": "nudge", "from": c.from, "to": c.to, "edge": "end", "frames": bad}),
                &Settings::default(),
                FrameRate::FPS_25,
            );
            assert!(e.is_err());
        }
    }
}
