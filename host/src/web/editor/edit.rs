//! POST /editor/{id}/edit: loads the transcript at the revision the page showed, applies one
//! operation (`ops`) and saves the result as the next revision (`save`); a merge the layout
//! cannot keep is refused, saying why.

use std::sync::Arc;

use cuecraft_engine::{layout, layout_with_shots, Cue, Word};
use hyper::Response;
use serde_json::{json, Value};

use crate::api::results::{job_frame_rate, job_settings, job_shot_changes};
use crate::http::{App, Body};
use crate::store::{JobRow, Member};
use crate::util::is_id;

use super::super::cache::{self, Stored, View};
use super::super::{check_csrf, db, require_session, WebError, WebRequest};
use super::ops::{apply_op, pinned};
use super::save::{save, Saving};
use super::timing::{self, set_time, shown, Shown};
use super::view::{load_stored, view_key};
use super::{body_json, check_id, json_bytes, usize_field, visible};

/// Loads what an edit needs: the job (visible, ready), the transcript's words, and checks the
/// revision the edit was made on.
pub(super) fn load_for_edit(
    c: &dyn crate::store::Store,
    viewer: &Member,
    id: &str,
    body: &Value,
) -> Result<(JobRow, String, i64, Arc<Stored>), WebError> {
    let job = visible(c, viewer, id)?;
    if job.status != "ready" {
        return Err(WebError::BadRequest("The project is not ready yet.".into()));
    }
    let transcript = match body.get("transcript").and_then(Value::as_str) {
        Some(t) if is_id(t) => Some(t.to_string()),
        Some(_) => return Err(WebError::NotFound),
        None => None,
    };
    let expected = body
        .get("revision")
        .and_then(Value::as_i64)
        .ok_or_else(|| WebError::BadRequest("`revision` is required.".into()))?;
    let (tid, revision) = c
        .transcript_head(id, transcript.as_deref())?
        .ok_or(WebError::NotFound)?;
    if revision != expected {
        return Err(WebError::Conflict(revision));
    }
    let (tid, revision, stored) = load_stored(c, id, Some(&tid))?;
    if revision != expected {
        return Err(WebError::Conflict(revision));
    }
    Ok((job, tid, expected, stored))
}

/// POST /editor/{id}/edit: `{transcript, revision, op, ..., answer?}`; answers the editor data.
pub async fn edit(app: &Arc<App>, req: &WebRequest, id: &str) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    check_csrf(req, &session)?;
    let body = body_json(req)?;
    let jid = id.to_string();
    let app2 = app.clone();
    let value = db(app, move |c| {
        let member = session.member;
        let (job, tid, expected, stored) = load_for_edit(c, &member, &jid, &body)?;
        let fr = job_frame_rate(&job);
        let settings = job_settings(&job).map_err(|e| WebError::Internal(e.message()))?;
        // The first edit pins the segmentation as it is shown: from then on every cue boundary
        // and line break is the subtitler's (docs/decisions/editor.md, "Local edits").
        let mut words = cuecraft_engine::pin(&stored.words, &settings, fr);
        let mut body = body;
        if body.get("op").and_then(Value::as_str) == Some("relayout")
            && body.get("dryRun").and_then(Value::as_bool) == Some(true)
        {
            let range = relayout_range(&body, words.len())?;
            let again = cuecraft_engine::relayout(&words, &settings, fr, range);
            return Ok(
                serde_json::to_vec(&relayout_preview(&stored.words, &again, &settings, fr))
                    .unwrap_or_default(),
            );
        }
        let kind = body
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let merge = kind == "merge";
        let timing = kind == "nudge" || kind == "settime";
        // The cues as the page showed them (a merge names two, a timing operation one).
        let shown_cues = || -> Result<Vec<Shown>, WebError> {
            let key = view_key(c, &job, &tid)?;
            Ok(match cache::view(&tid, expected, &key) {
                Some(v) => shown(&v.layout.cues),
                None => shown(&layout_with_shots(
                    &stored.words,
                    &settings,
                    fr,
                    job_shot_changes(&job),
                )),
            })
        };
        let mut merged = (0, 0);
        if merge {
            // The two cues as the page showed them: the one ending before `at` and the next.
            let old: Vec<(usize, usize)> = shown_cues()?.iter().map(|c| (c.from, c.to)).collect();
            let at = usize_field(&body, "at")?;
            let first = old
                .iter()
                .position(|r| r.1 == at)
                .filter(|&k| k + 1 < old.len())
                .ok_or_else(|| WebError::BadRequest("That is not the start of a cue.".into()))?;
            merged = (old[first].0, old[first + 1].1);
            body["from"] = json!(merged.0);
            body["to"] = json!(merged.1);
        }
        // The words before the operation: an operation that changes nothing writes no
        // revision (once pinned, `save` sees that from the splice; the first edit compares).
        let unpinned = (!pinned(&stored.words)).then(|| words.clone());
        let mut timed = None;
        let old = if timing { shown_cues()? } else { Vec::new() };
        let note = match kind.as_str() {
            "relayout" => {
                let range = relayout_range(&body, words.len())?;
                words = cuecraft_engine::relayout(&words, &settings, fr, range);
                "Laid cues out again".to_string()
            }
            "redetect" => super::speakers::redetect(&app2, &jid, &mut words, &body)?,
            "carry" => {
                // An edit of the original (its revision `sourceRevision`) made here too.
                let r = body
                    .get("sourceRevision")
                    .and_then(Value::as_i64)
                    .filter(|r| *r >= 1)
                    .ok_or_else(|| WebError::BadRequest("Name the original's revision.".into()))?;
                let clean = c
                    .ready_transcripts(&job.id)?
                    .into_iter()
                    .any(|t| t.id == tid && t.kind == "clean");
                let original = c.transcript_head(&job.id, None)?.map(|h| h.0);
                let Some(sid) = original.filter(|_| clean) else {
                    return Err(WebError::BadRequest(
                        "Only the clean version takes the original's edits.".into(),
                    ));
                };
                super::versions::carry(&mut words, &c.revision_entries(&sid, r)?)?
            }
            _ if timing => {
                let t = set_time(&mut words, &old, &body, &settings, fr)?;
                let note = t.note.clone();
                timed = Some(t);
                note
            }
            _ => apply_op(&mut words, &body)?,
        };
        if unpinned.as_ref() == Some(&words) {
            return Err(WebError::BadRequest(
                "That changes nothing: no revision was written.".into(),
            ));
        }
        // A merge the layout cannot keep is refused (the merged words not in one cue), saying
        // why; a time a rule holds where it was is refused, one held elsewhere is a notice.
        let merged_words = words.get(merged.0..merged.1).unwrap_or_default().to_vec();
        let check = |view: &View| match (&timed, merge) {
            (Some(t), _) => timing::check(t, view, &old, &settings, fr),
            (None, true) => {
                check_merge(&merged_words, merged, &settings, &view.layout.cues).map(|()| None)
            }
            (None, false) => Ok(None),
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
                settings: None,
                lead_in_frames: None,
                check,
            },
        )
    })
    .await?;
    Ok(json_bytes(value))
}

/// The words `[from, to)` a re-layout names (the words of a range of cues, or all of them).
fn relayout_range(body: &Value, n: usize) -> Result<(usize, usize), WebError> {
    let (from, to) = (usize_field(body, "from")?, usize_field(body, "to")?);
    if from >= to || to > n {
        return Err(WebError::BadRequest(
            "The cues' words are out of range.".into(),
        ));
    }
    Ok((from, to))
}

/// What laying words out again would change, for the page's confirmation: `{changes, cues,
/// after}` (cues of the new layout that are not cues of the old one, and the two counts).
fn relayout_preview(
    old: &[Word],
    pinned: &[Word],
    settings: &cuecraft_engine::Settings,
    fr: cuecraft_engine::FrameRate,
) -> Value {
    let before = layout(old, settings, fr);
    let after = layout(pinned, settings, fr);
    let shown: std::collections::HashSet<_> =
        before.iter().map(|c| (c.start, c.end, &c.lines)).collect();
    let changes = after
        .iter()
        .filter(|c| !shown.contains(&(c.start, c.end, &c.lines)))
        .count();
    json!({"changes": changes, "cues": before.len(), "after": after.len()})
}

/// Refuses a merge the layout cannot keep (the merged words `[lo, hi)`, `merged`, not in one of
/// `cues`), saying why: a hard boundary between them (another speaker, a long silence, split on punctuation) or
/// the limits.
pub(super) fn check_merge(
    merged: &[Word],
    (lo, hi): (usize, usize),
    settings: &cuecraft_engine::Settings,
    cues: &[Cue],
) -> Result<(), WebError> {
    if super::ranges::cue_ranges(cues)
        .iter()
        .any(|r| r.0 <= lo && hi <= r.1)
    {
        return Ok(());
    }
    let dialogue = settings.em_dash_on_speaker_change && settings.max_lines_per_subtitle >= 2;
    let pairs = || merged.windows(2);
    let why = if pairs().any(|p| p[0].speaker != p[1].speaker && !dialogue) {
        "two speakers would share it (with “Dash on speaker change” they may, one line each)"
            .to_string()
    } else if let Some(p) = pairs().find(|p| (p[1].start - p[0].end).0 >= 2000) {
        format!(
            "a {:.1} s silence lies between them, and a silence of 2 s or more always ends a cue",
            (p[1].start - p[0].end).0 as f64 / 1000.0
        )
    } else if settings.split_on_punctuation
        && pairs().any(|p| cuecraft_engine::punctuate::ends_sentence(&p[0].text))
    {
        "“Split on punctuation” ends a cue at every sentence end".to_string()
    } else {
        let most = settings
            .max_duration
            .map(|d| format!(", at most {:.1} s", d.as_secs_f64()))
            .unwrap_or_default();
        let lines = settings.max_lines_per_subtitle;
        format!(
            "together they do not fit the limits ({lines} line{} of {} characters{most})",
            if lines == 1 { "" } else { "s" },
            settings.max_chars_per_line
        )
    };
    Err(WebError::BadRequest(format!(
        "These cues cannot be merged: {why}."
    )))
}
