//! Saving an edited word list as the next revision: compare-and-swap on the revision the edit was
//! made on, the history entry as one splice, the kept view brought up to date, and the answer
//! (the editor data, or only the cues that changed).

use std::sync::Arc;

use cuecraft_engine::Word;
use serde_json::Value;

use crate::api::results::{job_frame_rate, job_settings};
use crate::http::App;
use crate::store::{JobRow, Member, Saved};
use crate::util::now_ms;
use crate::words::encode;

use super::super::cache::{self, Stored, View};
use super::super::WebError;
use super::entries::{splice_json, splice_range};
use super::view::{build_view, editor_json, source_cues, view_key, SourceCues};

/// What a save stores besides the words, and what it checks first.
pub(super) struct Saving<'a, C> {
    /// The job's new settings and those they replace (a restore of a revision laid out under
    /// others), stored in the same transaction and recorded in the history entry as a settings
    /// change is, so a later restore's search of the history finds them; `job.settings` are
    /// already the new ones.
    pub(super) settings: Option<(&'a str, &'a str)>,
    /// The job's new lead-in and the one it replaces (a restore of a revision under another),
    /// stored and recorded the same way; `job.lead_in_frames` is already the new one.
    pub(super) lead_in_frames: Option<(u32, u32)>,
    /// Refuses the edit from the view of the new words (a merge the layout cannot keep, a time
    /// a rule holds), or answers a notice for the page (an edge held off the time asked).
    pub(super) check: C,
}

/// Saves `words` (the words of `stored` after an operation) as the next revision when the
/// transcript is still at `expected` and `how.check` accepts their view: the history gets the one
/// splice that changed, the store rewrites only the word pages it touches. The view is the kept
/// view of `expected` brought up to date. Answers the editor data, only the changed cues when the
/// body asks for a patch (`"answer": "patch"`).
#[allow(clippy::too_many_arguments)]
pub(super) fn save(
    app: &App,
    c: &dyn crate::store::Store,
    job: &JobRow,
    transcript_id: &str,
    expected: i64,
    stored: &Stored,
    words: Vec<Word>,
    member: &Member,
    note: &str,
    body: &Value,
    how: Saving<'_, impl FnOnce(&View) -> Result<Option<String>, WebError>>,
) -> Result<Vec<u8>, WebError> {
    let (from, remove, insert) = splice_range(&stored.words, &words);
    if remove == 0 && insert == 0 && how.settings.is_none() && how.lead_in_frames.is_none() {
        // Nothing would change: no revision.
        return Err(WebError::BadRequest(
            "That changes nothing: no revision was written.".into(),
        ));
    }
    let inserted = encode(&words[from..from + insert]);
    let mut change = splice_json(from, remove, &inserted);
    if let Some((new, before)) = how.settings {
        // `{"from",...,"settings":{...},"before":{...}}`: what `settings_at` reads back.
        change.pop();
        change.push_str(&format!(",\"settings\":{new},\"before\":{before}}}"));
    }
    if let Some((new, before)) = how.lead_in_frames {
        change.pop();
        change.push_str(&format!(",\"leadIn\":{new},\"leadInBefore\":{before}}}"));
    }
    let settings = job_settings(job).map_err(|e| WebError::Internal(e.message()))?;
    let key = view_key(c, job, transcript_id)?;
    let source = source_cues(c, job, &key, &settings)?;
    let source = source.as_ref().map(SourceCues::cues);
    let fr = job_frame_rate(job);
    // The view of `expected`, taken from the memory and brought up to date.
    let previous = cache::take_view(transcript_id, expected, &key);
    let view = build_view(
        &words,
        &settings,
        fr,
        source,
        key,
        previous.map(|v| (v, &stored.words[..])),
    );
    // When the edit is refused or not saved, the view of `expected` goes back to the memory.
    let put_back = |view: View| {
        let key = view.key.clone();
        let back = build_view(
            &stored.words,
            &settings,
            fr,
            source,
            key,
            Some((view, &words[..])),
        );
        cache::put_view(transcript_id, expected, back);
    };
    let notice = match (how.check)(&view) {
        Ok(notice) => notice,
        Err(e) => {
            put_back(view);
            return Err(e);
        }
    };
    let saved = c.save_words(&crate::store::WordsEdit {
        job_id: &job.id,
        transcript_id,
        expected,
        from,
        remove,
        insert: &inserted,
        change: &change,
        member_id: &member.id,
        note,
        settings: how.settings.map(|s| s.0),
        lead_in_frames: how.lead_in_frames.map(|f| f.0),
        now: now_ms(),
    });
    let revision = match saved {
        Ok(Saved::Revision(revision)) => revision,
        // Someone saved first: the view of `expected` is out of date anyway.
        Ok(Saved::Conflict(rev)) => return Err(WebError::Conflict(rev)),
        Err(e) => {
            put_back(view);
            return Err(e.into());
        }
    };
    let job = c.job(&job.id)?.ok_or(WebError::NotFound)?;
    let kept = Arc::new(Stored { words });
    // The words just saved and their view are kept: no second read, decode or layout.
    cache::keep(transcript_id, revision, kept.clone(), Some(Arc::new(view)));
    let patch = body.get("answer").and_then(Value::as_str) == Some("patch");
    let mut answer = editor_json(
        app,
        c,
        &job,
        None,
        Some((transcript_id.to_string(), revision, kept)),
        patch,
    )?;
    if let Some(n) = notice {
        // `{"notice":"...",` before the answer's other fields.
        let field = format!("{{\"notice\":{},", Value::String(n));
        answer.splice(..1, field.into_bytes());
    }
    Ok(answer)
}
