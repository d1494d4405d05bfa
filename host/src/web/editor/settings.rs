//! POST /editor/{id}/settings: the job's layout settings and the project's lead-in, changed as a
//! revision of the transcript on screen (so undo and restore bring them back).

use std::sync::Arc;

use cuecraft_engine::MAX_LEAD_IN_FRAMES;
use hyper::Response;
use serde_json::{json, Value};

use crate::api::results::job_settings;
use crate::http::{App, Body};
use crate::store::{JobRow, Saved};
use crate::util::{is_id, now_ms};

use super::super::{check_csrf, db, require_session, WebError, WebRequest};
use super::view::{editor_json, load_stored, settings_json};
use super::{body_json, check_id, json_bytes, visible, LEAD_IN};

/// The settings the editor may change: how the words are laid out. Recognition settings
/// (language, vocabulary, prompt) and the analyses were used once, when the job ran.
pub const EDITABLE_SETTINGS: &[&str] = &[
    "formatSubtitles",
    "maxCharsPerLine",
    "maxLinesPerSubtitle",
    "minDuration",
    "maxDuration",
    "minFramesBetweenSubtitles",
    "contentProfile",
    "subtitleMode",
    "splitOnPunctuation",
    "emDashOnSpeakerChange",
    "ellipsisContinuation",
    "shiftMs",
];

/// The lead-in a request sets: a whole number of frames from 0 to `MAX_LEAD_IN_FRAMES`.
pub(super) fn lead_in_frames(v: &Value) -> Result<u32, WebError> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n <= MAX_LEAD_IN_FRAMES)
        .ok_or_else(|| {
            WebError::BadRequest(format!(
                "settings.{LEAD_IN}: the lead-in must be a whole number of frames from 0 to \
                 {MAX_LEAD_IN_FRAMES}."
            ))
        })
}

/// POST /editor/{id}/settings: `{settings: {...}}` layered over the job's settings (the API's
/// validation, every problem named), stored, and the cues re-laid out at once. The settings may
/// carry the project's lead-in (`inCueLeadInFrames`), stored with the job apart from them.
pub async fn settings(
    app: &Arc<App>,
    req: &WebRequest,
    id: &str,
) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    check_csrf(req, &session)?;
    let body = body_json(req)?;
    let Some(new) = body.get("settings").and_then(Value::as_object) else {
        return Err(WebError::BadRequest("`settings` must be an object.".into()));
    };
    // The lead-in is the project's own, not one of the API's settings: it is stored apart.
    let mut new = new.clone();
    let lead_in = new
        .remove(LEAD_IN)
        .map(|v| lead_in_frames(&v))
        .transpose()?;
    if let Some(k) = new
        .keys()
        .find(|k| !EDITABLE_SETTINGS.contains(&k.as_str()))
    {
        return Err(WebError::BadRequest(format!(
            "settings.{k} cannot be changed in the editor."
        )));
    }
    let partial =
        cuecraft_engine::PartialSettings::from_json(&Value::Object(new.clone()), "settings")
            .map_err(|errs| {
                WebError::BadRequest(
                    errs.iter()
                        .map(|e| format!("{}: {}", e.field, e.message))
                        .collect::<Vec<_>>()
                        .join("; "),
                )
            })?;
    let jid = id.to_string();
    let app2 = app.clone();
    let value = db(app, move |c| {
        let job = visible(c, &session.member, &jid)?;
        let current: Value = serde_json::from_str(&job.settings)
            .map_err(|e| WebError::Internal(format!("job settings: {e}")))?;
        let current = cuecraft_engine::PartialSettings::from_json(&current, "settings")
            .map_err(|_| WebError::Internal("job settings do not validate".into()))?;
        let merged = partial.over(&current);
        let problems = merged.check_combined("settings");
        if !problems.is_empty() {
            return Err(WebError::BadRequest(
                problems
                    .iter()
                    .map(|e| format!("{}: {}", e.field, e.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            ));
        }
        let transcript = match body.get("transcript").and_then(Value::as_str) {
            Some(t) if is_id(t) => Some(t.to_string()),
            _ => None,
        };
        let new_json = merged.to_json();
        let new_lead_in = lead_in.unwrap_or(job.lead_in_frames);
        let lead_in_changed = new_lead_in != job.lead_in_frames;
        if job.status != "ready" {
            c.set_job_settings(&jid, &new_json.to_string(), now_ms())?;
            if lead_in_changed {
                c.set_job_lead_in(&jid, new_lead_in, now_ms())?;
            }
            let job = c.job(&jid)?.ok_or(WebError::NotFound)?;
            return editor_json(&app2, c, &job, transcript.as_deref(), None, false);
        }
        // A revision of the transcript on screen: its words unchanged, the history entry the
        // settings before and after, so undo and restore bring them back. Compare-and-swap on
        // the revision the page showed (the current one when the request names none).
        let (tid, revision, stored) = load_stored(c, &jid, transcript.as_deref())?;
        let expected = body
            .get("revision")
            .and_then(Value::as_i64)
            .unwrap_or(revision);
        if expected != revision {
            return Err(WebError::Conflict(revision));
        }
        let old_json = current.to_json();
        // What changed, as the editor shows the settings (defaults included).
        let shown = |j: &JobRow| -> Result<Value, WebError> {
            let mut v =
                settings_json(&job_settings(j).map_err(|e| WebError::Internal(e.message()))?);
            v[LEAD_IN] = json!(j.lead_in_frames);
            Ok(v)
        };
        let old_shown = shown(&job)?;
        let new_shown = shown(&JobRow {
            settings: new_json.to_string(),
            lead_in_frames: new_lead_in,
            ..job.clone()
        })?;
        let changed: Vec<String> = new_shown
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| old_shown.get(k.as_str()) != Some(v))
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if changed.is_empty() {
            return editor_json(&app2, c, &job, Some(&tid), None, false);
        }
        let mut change = json!({
            "from": 0, "remove": 0, "insert": [],
            "settings": new_json, "before": old_json,
        });
        if lead_in_changed {
            // The lead-in before and after, as `lead_in_at` reads them back for undo and restore.
            change["leadIn"] = json!(new_lead_in);
            change["leadInBefore"] = json!(job.lead_in_frames);
        }
        // The words stay; the settings are stored in the edit's transaction.
        let saved = c.save_words(&crate::store::WordsEdit {
            job_id: &jid,
            transcript_id: &tid,
            expected,
            from: 0,
            remove: 0,
            insert: "[]",
            change: &change.to_string(),
            member_id: &session.member.id,
            note: &format!("Layout settings: {}", changed.join(", ")),
            settings: Some(&new_json.to_string()),
            lead_in_frames: lead_in_changed.then_some(new_lead_in),
            now: now_ms(),
        })?;
        let new_revision = match saved {
            Saved::Revision(r) => r,
            Saved::Conflict(r) => return Err(WebError::Conflict(r)),
        };
        let job = c.job(&jid)?.ok_or(WebError::NotFound)?;
        editor_json(
            &app2,
            c,
            &job,
            None,
            Some((tid, new_revision, stored)),
            false,
        )
    })
    .await?;
    Ok(json_bytes(value))
}
