//! The revision history: the list (GET /editor/{id}/revisions), restore, undo and redo (POST
//! /editor/{id}/restore: an earlier revision's words saved as a new revision), and the history
//! entries themselves (one splice per revision, settings changes with their before and after),
//! replayed to any revision.

use std::sync::Arc;

use cuecraft_engine::Word;
use hyper::Response;
use serde_json::{json, Value};

use crate::http::{App, Body};
use crate::store::JobRow;
use crate::util::rfc3339;
use crate::words::decode;
#[cfg(test)]
use crate::words::encode;

use super::super::cache::View;
use super::super::{check_csrf, db, json_ok, require_session, WebError, WebRequest};
use super::edit::load_for_edit;
use super::save::{save, Saving};
use super::{body_json, check_id, json_bytes, transcript_param, visible};

/// GET /editor/{id}/revisions?transcript=T: the history, newest first.
pub async fn revision_list(
    app: &Arc<App>,
    req: &WebRequest,
    id: &str,
) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    let transcript = transcript_param(&req.params())?;
    let viewer = session.member.clone();
    let jid = id.to_string();
    let list = db(app, move |c| {
        visible(c, &viewer, &jid)?;
        let (tid, _) = c
            .transcript_head(&jid, transcript.as_deref())?
            .ok_or(WebError::NotFound)?;
        Ok(c.revisions(&tid)?)
    })
    .await?;
    let items: Vec<Value> = list
        .into_iter()
        .map(|r| {
            json!({
                "revision": r.revision,
                "note": r.note,
                "by": r.email,
                "at": rfc3339(r.created_at),
            })
        })
        .collect();
    Ok(json_ok(&json!({ "revisions": items })))
}

/// POST /editor/{id}/restore: `{transcript, revision, restore, note?, answer?}` saves an earlier
/// revision's words as a new revision (restore, undo and redo).
pub async fn restore(
    app: &Arc<App>,
    req: &WebRequest,
    id: &str,
) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    check_csrf(req, &session)?;
    let body = body_json(req)?;
    let jid = id.to_string();
    let app2 = app.clone();
    let value = db(app, move |c| {
        let member = session.member;
        let (job, tid, expected, stored) = load_for_edit(c, &member, &jid, &body)?;
        let wanted = body
            .get("restore")
            .and_then(Value::as_i64)
            .ok_or_else(|| WebError::BadRequest("`restore` must be a revision.".into()))?;
        let all = c.revision_entries(&tid, expected)?;
        let upto = usize::try_from(wanted).ok().map(|w| w + 1);
        let Some(entries) = upto.and_then(|n| all.get(..n)).filter(|e| !e.is_empty()) else {
            return Err(WebError::BadRequest(format!(
                "There is no revision {wanted}."
            )));
        };
        let words = replay(entries).ok_or_else(|| WebError::Internal("stored history".into()))?;
        // The layout settings and the lead-in in force at that revision, when this history
        // changed them: saved with the words in one transaction, and the words laid out under
        // them.
        let restored = settings_at(&all, entries.len())
            .filter(|s| serde_json::from_str::<Value>(&job.settings).ok().as_ref() != Some(s))
            .map(|s| s.to_string());
        let lead_in = lead_in_at(&all, entries.len()).filter(|f| *f != job.lead_in_frames);
        let job = JobRow {
            settings: restored.clone().unwrap_or(job.settings),
            lead_in_frames: lead_in.unwrap_or(job.lead_in_frames),
            ..job
        };
        let note = match body.get("note").and_then(Value::as_str) {
            Some("undo") => format!("Undo (back to revision {wanted})"),
            Some("redo") => format!("Redo (revision {wanted})"),
            _ => format!("Restored revision {wanted}"),
        };
        save(
            &app2,
            c,
            &job,
            &tid,
            expected,
            &stored,
            words,
            &member,
            &note,
            &body,
            Saving {
                settings: restored.as_deref(),
                lead_in_frames: lead_in,
                check: |_: &View| Ok(()),
            },
        )
    })
    .await?;
    Ok(json_bytes(value))
}

/// Where `new` differs from `old`: `(from, remove, insert)`, the words between their common
/// start and common end (`old[from..from + remove]` became `new[from..from + insert]`).
pub fn splice_range(old: &[Word], new: &[Word]) -> (usize, usize, usize) {
    let mut from = 0;
    while from < old.len() && from < new.len() && old[from] == new[from] {
        from += 1;
    }
    let mut tail = 0;
    while tail < old.len() - from
        && tail < new.len() - from
        && old[old.len() - 1 - tail] == new[new.len() - 1 - tail]
    {
        tail += 1;
    }
    (from, old.len() - tail - from, new.len() - tail - from)
}

/// A history entry: `{"from":i,"remove":n,"insert":[stored words]}`, so an entry of a 10-hour
/// transcript is the size of the edit, not 5 MB.
pub(super) fn splice_json(from: usize, remove: usize, insert: &str) -> String {
    format!("{{\"from\":{from},\"remove\":{remove},\"insert\":{insert}}}")
}

/// The change from `old` to `new` as one splice, for the revision history.
#[cfg(test)]
pub fn splice_diff(old: &[Word], new: &[Word]) -> String {
    let (from, remove, insert) = splice_range(old, new);
    splice_json(from, remove, &encode(&new[from..from + insert]))
}

/// The job's settings in force after the first `n` history entries of `entries` (all of a
/// transcript's), when a settings change is among them: the last change's settings up to there,
/// else the settings before the first change after; `None` when the history holds none.
pub fn settings_at(entries: &[String], n: usize) -> Option<Value> {
    let parsed = |e: &String| -> Option<Value> {
        if !e.starts_with('{') || !e.contains("\"settings\"") {
            return None;
        }
        serde_json::from_str::<Value>(e)
            .ok()
            .filter(|v| v.get("settings").is_some())
    };
    if let Some(v) = entries[..n.min(entries.len())]
        .iter()
        .rev()
        .find_map(parsed)
    {
        return v.get("settings").cloned();
    }
    entries
        .get(n..)?
        .iter()
        .find_map(parsed)
        .and_then(|v| v.get("before").cloned())
}

/// The lead-in in force at the revision whose history is `entries[..n]`: the last change of it
/// up to there, else the value before the first change after; `None` when the history never
/// changed it.
pub fn lead_in_at(entries: &[String], n: usize) -> Option<u32> {
    let parsed = |e: &String| -> Option<Value> {
        if !e.starts_with('{') || !e.contains("\"leadIn\"") {
            return None;
        }
        serde_json::from_str::<Value>(e)
            .ok()
            .filter(|v| v.get("leadIn").is_some())
    };
    let frames = |v: Option<&Value>| {
        v.and_then(Value::as_u64)
            .and_then(|f| u32::try_from(f).ok())
    };
    if let Some(v) = entries[..n.min(entries.len())]
        .iter()
        .rev()
        .find_map(parsed)
    {
        return frames(v.get("leadIn"));
    }
    entries
        .get(n..)?
        .iter()
        .find_map(parsed)
        .and_then(|v| frames(v.get("leadInBefore")))
}

/// The words of a revision from its history entries: the first whole, each later one a splice.
pub fn replay(entries: &[String]) -> Option<Vec<Word>> {
    let (first, rest) = entries.split_first()?;
    let mut words = decode(first)?;
    for entry in rest {
        if entry.starts_with('[') {
            // A whole word list (how the first version of the history stored every revision).
            words = decode(entry)?;
            continue;
        }
        let v: Value = serde_json::from_str(entry).ok()?;
        let from = usize::try_from(v.get("from")?.as_u64()?).ok()?;
        let remove = usize::try_from(v.get("remove")?.as_u64()?).ok()?;
        let insert = decode(&v.get("insert")?.to_string())?;
        if from.checked_add(remove)? > words.len() {
            return None;
        }
        words.splice(from..from + remove, insert);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::editor::ops::apply_op;
    use crate::web::editor::test_words as words;
    use cuecraft_engine::Millis;
    use serde_json::json;

    #[test]
    fn the_lead_in_at_a_revision_is_the_last_change_before_or_the_one_the_next_change_replaced() {
        let settings = |extra: &str| {
            format!(
                "{{\"from\":0,\"remove\":0,\"insert\":[],\"settings\":{{}},\"before\":{{}}{extra}}}"
            )
        };
        let entries = vec![
            encode(&words()),
            splice_json(0, 1, "[]"),
            settings(""),
            settings(",\"leadIn\":3,\"leadInBefore\":0"),
            splice_json(0, 0, "[]"),
            settings(",\"leadIn\":5,\"leadInBefore\":3"),
        ];
        // Revisions 0-2 (entries[..1] to entries[..3]): before the first change, its `before`.
        assert_eq!(lead_in_at(&entries, 1), Some(0));
        assert_eq!(lead_in_at(&entries, 3), Some(0));
        assert_eq!(lead_in_at(&entries, 4), Some(3));
        assert_eq!(lead_in_at(&entries, 5), Some(3));
        assert_eq!(lead_in_at(&entries, 6), Some(5));
        // A history that never changed it: none, so a restore leaves the job's alone.
        assert_eq!(lead_in_at(&entries[..3], 1), None);
        assert_eq!(lead_in_at(&entries[..3], 3), None);
    }

    #[test]
    fn history_splices_replay_to_every_revision() {
        let base = words();
        let mut edited = base.clone();
        apply_op(
            &mut edited,
            &json!({"op": "text", "from": 1, "to": 2, "text": "2 and a half"}),
            Millis(40),
        )
        .expect("text");
        let mut split = edited.clone();
        apply_op(&mut split, &json!({"op": "split", "at": 2}), Millis(40)).expect("split");
        let entries = vec![
            encode(&base),
            splice_diff(&base, &edited),
            splice_diff(&edited, &split),
            splice_diff(&split, &base),
            splice_diff(&base, &base),
        ];
        assert_eq!(replay(&entries[..1]), Some(base.clone()));
        assert_eq!(replay(&entries[..2]), Some(edited.clone()));
        assert_eq!(replay(&entries[..3]), Some(split.clone()));
        assert_eq!(replay(&entries[..4]), Some(base.clone()));
        assert_eq!(replay(&entries), Some(base.clone()));
        assert_eq!(
            splice_diff(&base, &base),
            "{\"from\":3,\"remove\":0,\"insert\":[]}"
        );
        // One word changed in 300: the entry holds that word, not the list.
        let long: Vec<Word> = (0..300)
            .map(|i| Word::new(format!("w{i}"), Millis(i * 100), Millis(i * 100 + 80), 0))
            .collect();
        let mut one = long.clone();
        one[150].text = "changed".into();
        let diff = splice_diff(&long, &one);
        assert_eq!(
            diff,
            format!(
                "{{\"from\":150,\"remove\":1,\"insert\":{}}}",
                encode(&one[150..151])
            )
        );
        assert_eq!(replay(&[encode(&long), diff]), Some(one));
        assert_eq!(
            replay(&[
                "[]".to_string(),
                "{\"from\":5,\"remove\":1,\"insert\":[]}".to_string()
            ]),
            None
        );
    }
}
