//! The revision history: the list (GET /editor/{id}/revisions), restore, undo and redo (POST
//! /editor/{id}/restore: an earlier revision's words saved as a new revision). The entries
//! themselves, and how they replay, are `entries`.

use std::sync::Arc;

use hyper::Response;
use serde_json::{json, Value};

use crate::http::{App, Body};
use crate::store::JobRow;
use crate::util::rfc3339;

use super::super::cache::View;
use super::super::{check_csrf, db, json_ok, require_session, WebError, WebRequest};
use super::edit::load_for_edit;
use super::entries::{lead_in_at, replay, settings_at};
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
        // What they replace, recorded in the restore's own history entry (see `save`).
        let settings_before = serde_json::from_str::<Value>(&job.settings)
            .map_or_else(|_| "{}".to_string(), |v| v.to_string());
        let lead_in_before = job.lead_in_frames;
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
                settings: restored.as_deref().map(|s| (s, settings_before.as_str())),
                lead_in_frames: lead_in.map(|f| (f, lead_in_before)),
                check: |_: &View| Ok(None),
            },
        )
    })
    .await?;
    Ok(json_bytes(value))
}
