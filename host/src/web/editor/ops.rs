//! The edit operations on a transcript's stored words (`apply_op`): text, split, merge, line
//! break, nudge, speaker, replace. Each answers the note the history shows.

use cuecraft_engine::{Break, Millis, Word};
use serde_json::Value;

use super::super::WebError;
use super::usize_field;

/// Applies one edit operation to `words`; the note for the history.
pub fn apply_op(words: &mut Vec<Word>, op: &Value, frame: Millis) -> Result<String, WebError> {
    let kind = op.get("op").and_then(Value::as_str).unwrap_or("");
    let range = |words: &Vec<Word>| -> Result<(usize, usize), WebError> {
        let from = usize_field(op, "from")?;
        let to = usize_field(op, "to")?;
        if from >= to || to > words.len() {
            return Err(WebError::BadRequest(
                "The cue's words are out of range.".into(),
            ));
        }
        Ok((from, to))
    };
    match kind {
        "text" => {
            let (from, to) = range(words)?;
            let text = op
                .get("text")
                .and_then(Value::as_str)
                .ok_or_else(|| WebError::BadRequest("`text` must be a string.".into()))?;
            if text.len() > 10_000 {
                return Err(WebError::BadRequest(
                    "The text is too long for one cue.".into(),
                ));
            }
            let lo = if from > 0 {
                words[from - 1].end
            } else {
                Millis::ZERO
            };
            let hi = words.get(to).map(|w| w.start).unwrap_or(words[to - 1].end);
            let new = super::super::align_text(&words[from..to], text, lo, hi);
            words.splice(from..to, new);
            Ok("Edited text".into())
        }
        "merge" => {
            // The merged cue's words [from, to) (the two cues), `at` the first of the second: a
            // join after each but the last (a manual split goes; a manual line break stays), so
            // the layout keeps them one cue within its hard limits (`edit` refuses the merge when
            // it cannot).
            let at = usize_field(op, "at")?;
            let from = op
                .get("from")
                .map(|_| usize_field(op, "from"))
                .transpose()?;
            let to = op.get("to").map(|_| usize_field(op, "to")).transpose()?;
            let (from, to) = (from.unwrap_or(at.saturating_sub(1)), to.unwrap_or(at + 1));
            if at == 0 || at >= words.len() || from >= at || to <= at || to > words.len() {
                return Err(WebError::BadRequest(
                    "There is no word boundary there.".into(),
                ));
            }
            for w in &mut words[from..to - 1] {
                if w.break_after != Some(Break::Line) {
                    w.break_after = Some(Break::Join);
                }
            }
            Ok("Merged cues".into())
        }
        "split" | "linebreak" => {
            let at = usize_field(op, "at")?;
            if at == 0 || at >= words.len() {
                return Err(WebError::BadRequest(
                    "There is no word boundary there.".into(),
                ));
            }
            let w = &mut words[at - 1];
            match kind {
                "split" => {
                    w.break_after = Some(Break::Cue);
                    Ok("Split a cue".into())
                }
                _ => {
                    w.break_after = if w.break_after == Some(Break::Line) {
                        None
                    } else {
                        Some(Break::Line)
                    };
                    Ok("Line break".into())
                }
            }
        }
        "nudge" => {
            let (from, to) = range(words)?;
            let delta = match op.get("frames").and_then(Value::as_i64) {
                Some(1) => frame.0,
                Some(-1) => -frame.0,
                _ => return Err(WebError::BadRequest("`frames` must be 1 or -1.".into())),
            };
            // `time` is the cue's edge as shown (the layout may have moved it off its word, for
            // the frame grid, reading pace or a gap): the nudge moves from there.
            let shown = op.get("time").and_then(Value::as_i64).map(Millis);
            match op.get("edge").and_then(Value::as_str) {
                Some("start") => {
                    let floor = if from > 0 {
                        words[from - 1].start
                    } else {
                        Millis::ZERO
                    };
                    let w = &mut words[from];
                    let base = shown
                        .filter(|t| (t.0 - w.start.0).abs() <= 60_000)
                        .unwrap_or(w.start);
                    let t = Millis((base.0 + delta).max(floor.0).max(0)).min(w.end);
                    w.start = t;
                    Ok("Moved a cue's start".into())
                }
                Some("end") => {
                    let ceiling = words.get(to).map(|w| w.start);
                    let w = &mut words[to - 1];
                    let base = shown
                        .filter(|t| (t.0 - w.end.0).abs() <= 60_000)
                        .unwrap_or(w.end);
                    let mut t = Millis(base.0 + delta).max(w.start);
                    if let Some(c) = ceiling {
                        t = t.min(c);
                    }
                    w.end = t;
                    Ok("Moved a cue's end".into())
                }
                _ => Err(WebError::BadRequest("`edge` must be start or end.".into())),
            }
        }
        "speaker" => {
            let (from, to) = range(words)?;
            let speaker = op
                .get("speaker")
                .and_then(Value::as_u64)
                .and_then(|s| u32::try_from(s).ok())
                .filter(|s| *s < 100)
                .ok_or_else(|| WebError::BadRequest("`speaker` must be 0 to 99.".into()))?;
            if op.get("everywhere").and_then(Value::as_bool) == Some(true) {
                let old = words[from].speaker;
                for w in words.iter_mut().filter(|w| w.speaker == old) {
                    w.speaker = speaker;
                }
                Ok(format!("Speaker {old} is now {speaker} everywhere"))
            } else {
                for w in &mut words[from..to] {
                    w.speaker = speaker;
                }
                Ok("Changed a cue's speaker".into())
            }
        }
        "replace" => {
            let find = op.get("find").and_then(Value::as_str).unwrap_or("");
            let with = op.get("replace").and_then(Value::as_str).unwrap_or("");
            if find.trim().is_empty() || find.split_whitespace().count() != 1 {
                return Err(WebError::BadRequest(
                    "Find one word or part of a word (no spaces).".into(),
                ));
            }
            let mut n = 0;
            let mut out = Vec::with_capacity(words.len());
            for w in words.drain(..) {
                if !w.text.contains(find) {
                    out.push(w);
                    continue;
                }
                n += 1;
                let replaced = w.text.replace(find, with);
                out.extend(super::super::align_text(
                    std::slice::from_ref(&w),
                    &replaced,
                    w.start,
                    w.end,
                ));
            }
            *words = out;
            if n == 0 {
                return Err(WebError::BadRequest(format!("“{find}” was not found.")));
            }
            Ok(format!("Replaced “{find}” with “{with}” in {n} words"))
        }
        _ => Err(WebError::BadRequest("Unknown operation.".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::editor::test_words as words;
    use serde_json::json;

    #[test]
    fn splits_line_breaks_and_merges_are_manual_breaks_on_words() {
        let mut w = words();
        apply_op(&mut w, &json!({"op": "split", "at": 1}), Millis(40)).expect("split");
        assert_eq!(w[0].break_after, Some(Break::Cue));
        apply_op(&mut w, &json!({"op": "merge", "at": 1}), Millis(40)).expect("merge");
        assert_eq!(w[0].break_after, Some(Break::Join));
        apply_op(&mut w, &json!({"op": "merge", "at": 2}), Millis(40)).expect("merge");
        assert_eq!(w[1].break_after, Some(Break::Join));
        assert!(apply_op(&mut w, &json!({"op": "merge", "at": 3}), Millis(40)).is_err());
        apply_op(&mut w, &json!({"op": "linebreak", "at": 2}), Millis(40)).expect("line");
        assert_eq!(w[1].break_after, Some(Break::Line));
        assert!(apply_op(&mut w, &json!({"op": "split", "at": 3}), Millis(40)).is_err());
    }

    #[test]
    fn nudges_move_a_frame_and_speakers_change_per_cue_or_everywhere() {
        let mut w = words();
        apply_op(
            &mut w,
            &json!({"op": "nudge", "from": 1, "to": 2, "edge": "start", "frames": 1}),
            Millis(40),
        )
        .expect("nudge");
        assert_eq!(w[1].start, Millis(540));
        apply_op(
            &mut w,
            &json!({"op": "nudge", "from": 0, "to": 2, "edge": "end", "frames": -1}),
            Millis(40),
        )
        .expect("nudge");
        assert_eq!(w[1].end, Millis(860));
        apply_op(
            &mut w,
            &json!({"op": "speaker", "from": 2, "to": 3, "speaker": 4, "everywhere": true}),
            Millis(40),
        )
        .expect("speaker");
        assert_eq!(w.iter().map(|w| w.speaker).collect::<Vec<_>>(), [0, 0, 4]);
        apply_op(
            &mut w,
            &json!({"op": "speaker", "from": 0, "to": 1, "speaker": 2}),
            Millis(40),
        )
        .expect("speaker");
        assert_eq!(w.iter().map(|w| w.speaker).collect::<Vec<_>>(), [2, 0, 4]);
    }

    #[test]
    fn replace_all_keeps_timings_and_refuses_what_is_absent() {
        let mut w = words();
        let note = apply_op(
            &mut w,
            &json!({"op": "replace", "find": "o", "replace": "0"}),
            Millis(40),
        )
        .expect("replace");
        assert!(note.contains("2 words"), "{note}");
        assert_eq!(&*w[0].text, "0ne");
        assert_eq!((w[1].start, w[1].end), (Millis(500), Millis(900)));
        assert!(apply_op(
            &mut w,
            &json!({"op": "replace", "find": "zz", "replace": "y"}),
            Millis(40)
        )
        .is_err());
    }
}
