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
    /// The job's new settings (a restore of a revision laid out under others), stored in the
    /// same transaction; `job.settings` are already these.
    pub(super) settings: Option<&'a str>,
    /// The job's new lead-in (a restore of a revision under another), stored in the same
    /// transaction; `job.lead_in_frames` is already this.
    pub(super) lead_in_frames: Option<u32>,
    /// Refuses the edit from the view of the new words (a merge the layout cannot keep).
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
    how: Saving<'_, impl FnOnce(&View) -> Result<(), WebError>>,
) -> Result<Vec<u8>, WebError> {
    let (from, remove, insert) = splice_range(&stored.words, &words);
    let inserted = encode(&words[from..from + insert]);
    let change = splice_json(from, remove, &inserted);
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
    if let Err(e) = (how.check)(&view) {
        put_back(view);
        return Err(e);
    }
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
        settings: how.settings,
        lead_in_frames: how.lead_in_frames,
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
    let notice = held_end(body, &view, &settings, fr);
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

/// When an edit pulled a cue's end earlier (`nudge`, end, -1 frame) and the layout kept it later
/// than asked, why: the layout's rules come first (reading pace, the minimum duration, no flashes
/// under 5/6 s, a short gap chained to the next cue), and the editor says so instead of silently
/// showing the old end.
pub(super) fn held_end(
    body: &Value,
    view: &View,
    settings: &cuecraft_engine::Settings,
    fr: cuecraft_engine::FrameRate,
) -> Option<String> {
    if body.get("op")?.as_str()? != "nudge"
        || body.get("edge")?.as_str()? != "end"
        || body.get("frames")?.as_i64()? != -1
    {
        return None;
    }
    let last = usize::try_from(body.get("to")?.as_u64()?)
        .ok()?
        .checked_sub(1)?;
    let asked = body.get("time")?.as_i64()? - fr.frames_duration(1).0;
    let k = view.starts.iter().rposition(|&s| s <= last)?;
    let cue = &view.layout.cues[k];
    if cue.end.0 <= asked {
        return None;
    }
    let shown = cue.end.0 as f64 / 1000.0;
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
    let gap = fr.frames_duration(settings.min_frames_between_subtitles).0;
    let why = match view.layout.cues.get(k + 1) {
        Some(next) if next.start.0 - cue.end.0 <= gap && next.start.0 - asked <= 500 + gap => {
            format!(
            "the gap to the next cue would be under 0.5 s, and short gaps are closed to {} frames",
            settings.min_frames_between_subtitles
        )
        }
        _ if pace >= min.max(flash) && has <= pace + fr.frames_duration(1).0 => format!(
            "its {chars} characters need {:.2} s at {cps} characters a second",
            pace as f64 / 1000.0
        ),
        _ if min >= flash && has <= min + fr.frames_duration(1).0 => {
            format!("the minimum duration is {:.2} s", min as f64 / 1000.0)
        }
        _ if has <= flash + fr.frames_duration(1).0 => {
            "a cue shorter than 5/6 s would flash by".to_string()
        }
        _ => "the layout's timing rules keep it there".to_string(),
    };
    Some(format!(
        "Cue {}'s end stays at {shown:.3} s: {why}. The text is still on screen until then.",
        cue.index
    ))
}
