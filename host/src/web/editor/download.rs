//! GET /editor/{id}/download: the API's subtitle file for a transcript, byte for byte (with the
//! project's lead-in when it has one).

use std::sync::Arc;

use cuecraft_engine::{apply_lead_in, layout_with_shots, Millis, Word};
use cuecraft_formats::{Format, WriteOptions};
use hyper::header::{HeaderValue, CONTENT_DISPOSITION};
use hyper::Response;

use crate::api::results::{
    content_disposition, file_tag, job_frame_rate, job_settings, job_shot_changes, subtitle_format,
    subtitle_response,
};
use crate::http::{App, Body};
use crate::store::JobRow;
use crate::words::decode;

use super::super::{db, field, require_session, respond_bytes, WebError, WebRequest};
use super::{check_id, transcript_param, visible};

/// GET /editor/{id}/download?format=F&transcript=T: the API's subtitles, byte for byte.
pub async fn download(
    app: &Arc<App>,
    req: &WebRequest,
    id: &str,
) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    let params = req.params();
    let format = subtitle_format(field(&params, "format").unwrap_or("srt"))
        .ok_or_else(|| WebError::BadRequest("Unknown subtitle format.".into()))?;
    let transcript = transcript_param(&params)?;
    let viewer = session.member.clone();
    let jid = id.to_string();
    db(app, move |c| {
        let job = visible(c, &viewer, &jid)?;
        if job.status != "ready" {
            return Err(WebError::BadRequest("The project is not ready yet.".into()));
        }
        let stored = c
            .transcript_words(&jid, transcript.as_deref())?
            .ok_or(WebError::NotFound)?;
        let list = c.transcripts(&jid)?;
        let language = list
            .iter()
            .find(|t| t.id == stored.transcript_id)
            .map(|t| t.language.clone())
            .unwrap_or_else(|| job.language.clone());
        // Each transcript under its own file name, the API's (`results::file_tag`).
        let tag = file_tag(
            list.iter()
                .map(|t| (t.id.as_str(), t.kind.as_str(), t.language.as_str())),
            &stored.transcript_id,
        )
        .unwrap_or_else(|| language.clone());
        let words =
            decode(&stored.words).ok_or_else(|| WebError::Internal("stored words".into()))?;
        if job.lead_in_frames == 0 {
            return subtitle_response(&job, &language, &tag, &words, format, Millis::ZERO)
                .map_err(|e| WebError::Internal(e.message()));
        }
        lead_in_response(&job, &language, &tag, &words, format)
    })
    .await
}

/// The editor's download with the project's lead-in: the API's file (the same layout, writer and
/// headers as `subtitle_response`) with each cue started up to `lead_in_frames` frames earlier
/// (`engine::apply_lead_in`, keeping minFramesBetweenSubtitles to the previous cue's end).
pub(super) fn lead_in_response(
    job: &JobRow,
    language: &str,
    tag: &str,
    words: &[Word],
    format: Format,
) -> Result<Response<Body>, WebError> {
    let settings = job_settings(job).map_err(|e| WebError::Internal(e.message()))?;
    let frame_rate = job_frame_rate(job);
    let mut cues = layout_with_shots(words, &settings, frame_rate, job_shot_changes(job));
    apply_lead_in(
        &mut cues,
        frame_rate,
        job.lead_in_frames,
        settings.min_frames_between_subtitles,
    );
    let opts = WriteOptions {
        offset: Millis::ZERO,
        frame_rate,
        language: language.to_string(),
        title: job.name.clone(),
        max_chars_per_line: settings.max_chars_per_line,
    };
    let bytes = cuecraft_formats::to_vec(format, &cues, &opts)
        .map_err(|e| WebError::Internal(format!("writing {}: {e}", format.extension())))?;
    let mut resp = respond_bytes(200, format.content_type(), bytes);
    let filename = format!("{}_{}.{}", job.name, tag, format.extension());
    if let Ok(v) = HeaderValue::from_str(&content_disposition(&filename)) {
        resp.headers_mut().insert(CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}
