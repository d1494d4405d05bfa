//! GET /jobs/{jobId}/transcript and GET /jobs/{jobId}/subtitles: cues derived on every read from
//! the stored words, the job's effective settings and its frame rate, never stored.
//!
//! Order of checks: job id shape (400) -> query parameters (400 `invalid_format`,
//! `invalid_max_chars`, `unsupported_format`, `invalid_offset`, `invalid_transcript_id`) -> the job
//! in the caller's organisation (404) -> the job's status (409 `job_not_ready` / `job_failed`,
//! whatever transcript was asked for) -> the transcript (404 `transcript_not_found` with the list)
//! -> the transcript's status (409 `transcript_not_ready` / `transcript_failed`).

use std::sync::Arc;

use cuecraft_engine::text::{transcript_text, truncate_cues};
use cuecraft_engine::{layout_with_shots, Cue, FrameRate, Millis, PartialSettings, Settings, Word};
use cuecraft_formats::{Format, WriteOptions};
use hyper::header::{HeaderValue, CONTENT_DISPOSITION, CONTENT_TYPE};
use hyper::{HeaderMap, Response};
use serde_json::{json, Value};

use crate::api::jobs::{load_org_job, transcript_json};
use crate::http::error::ApiError;
use crate::http::{json_response, App, Body, Caller};
use crate::store::{JobRow, TranscriptRow};
use crate::util::{is_id, parse_query, percent_encode};
use crate::words::seconds;

/// Which transcript a request names.
#[derive(Debug, Clone, Default)]
struct Selector {
    transcript_id: Option<String>,
    language: Option<String>,
}

/// A ready transcript with everything needed to lay it out.
struct Loaded {
    job: JobRow,
    transcript: TranscriptRow,
    words: Vec<Word>,
    /// What its files are named by ([`file_tag`]).
    tag: String,
}

/// What a transcript's subtitle files are named by (`{job name}_{tag}.{ext}`), so that every
/// transcript of a job downloads under its own name: the original its language (`en`), the clean
/// version `en_clean`, a translation its language (`nl`), with its place in the job's list
/// (`nl_4`) when an earlier transcript already goes by that name. `list` is the job's
/// transcripts in order as `(id, kind, language)`; `None` when `id` is not among them.
pub fn file_tag<'a>(
    list: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
    id: &str,
) -> Option<String> {
    let mut used = std::collections::HashSet::new();
    for (pos, (tid, kind, language)) in list.into_iter().enumerate() {
        let base = match kind {
            "clean" => format!("{language}_clean"),
            _ => language.to_string(),
        };
        let tag = if used.contains(&base) {
            format!("{base}_{}", pos + 1)
        } else {
            base
        };
        if tid == id {
            return Some(tag);
        }
        used.insert(tag);
    }
    None
}

/// The job's effective settings, as layered at creation.
pub fn job_settings(job: &JobRow) -> Result<Settings, ApiError> {
    let value: Value = serde_json::from_str(&job.settings)
        .map_err(|e| ApiError::Internal(format!("job settings: {e}")))?;
    PartialSettings::from_json(&value, "settings")
        .map(|p| p.resolve())
        .map_err(|_| ApiError::Internal("job settings do not validate".into()))
}

/// The job's shot changes: the video's, none for audio-only jobs (the layout then ignores the
/// picture). Every layout of a job's words is timed to them: the API's and the editor's.
pub fn job_shot_changes(job: &JobRow) -> &[Millis] {
    job.shot_changes.as_deref().unwrap_or_default()
}

/// The job's frame rate: the video's, 25/1 for audio-only or before probing.
pub fn job_frame_rate(job: &JobRow) -> FrameRate {
    match (job.frame_num, job.frame_den) {
        (Some(n), Some(d)) => FrameRate::new(n, d).unwrap_or(FrameRate::FPS_25),
        _ => FrameRate::FPS_25,
    }
}

impl Loaded {
    fn settings(&self) -> Result<Settings, ApiError> {
        job_settings(&self.job)
    }

    fn frame_rate(&self) -> FrameRate {
        job_frame_rate(&self.job)
    }

    fn cues(&self, settings: &Settings) -> Vec<Cue> {
        layout_with_shots(
            &self.words,
            settings,
            self.frame_rate(),
            job_shot_changes(&self.job),
        )
    }
}

/// Picks the transcript: `transcriptId` wins; else with `language` the original when it has that
/// language, then the oldest with it; else the original.
fn select<'a>(list: &'a [TranscriptRow], sel: &Selector) -> Option<&'a TranscriptRow> {
    if let Some(id) = &sel.transcript_id {
        return list.iter().find(|t| &t.id == id);
    }
    let original = list.iter().find(|t| t.kind == "original");
    match &sel.language {
        None => original,
        Some(lang) => original
            .filter(|t| t.language.eq_ignore_ascii_case(lang))
            .or_else(|| list.iter().find(|t| t.language.eq_ignore_ascii_case(lang))),
    }
}

async fn load(app: &App, caller: Caller, id: String, sel: Selector) -> Result<Loaded, ApiError> {
    app.db(move |store| {
        let job = load_org_job(store, &caller.org_id, &id)?;
        match job.status.as_str() {
            "ready" => {}
            "failed" => return Err(ApiError::JobFailed),
            other => {
                return Err(ApiError::JobNotReady {
                    status: other.to_string(),
                })
            }
        }
        let list = store.transcripts(&id)?;
        let Some(transcript) = select(&list, &sel).cloned() else {
            return Err(ApiError::TranscriptNotFound {
                transcripts: list.iter().map(transcript_json).collect(),
            });
        };
        match transcript.status.as_str() {
            "ready" => {}
            "failed" => return Err(ApiError::TranscriptFailed),
            other => {
                return Err(ApiError::TranscriptNotReady {
                    status: other.to_string(),
                })
            }
        }
        let stored = store
            .transcript_words(&id, Some(&transcript.id))?
            .map(|s| s.words);
        let words = crate::words::decode(stored.as_deref().unwrap_or("[]"))
            .ok_or_else(|| ApiError::Internal(format!("words of {}", transcript.id)))?;
        let tag = file_tag(
            list.iter()
                .map(|t| (t.id.as_str(), t.kind.as_str(), t.language.as_str())),
            &transcript.id,
        )
        .unwrap_or_else(|| transcript.language.clone());
        Ok(Loaded {
            job,
            transcript,
            words,
            tag,
        })
    })
    .await
}

/// Reads `language` and `transcriptId`.
fn selector(params: &[(String, String)]) -> Result<Selector, ApiError> {
    let mut sel = Selector::default();
    for (k, v) in params {
        match k.as_str() {
            "transcriptId" if sel.transcript_id.is_none() => {
                if !is_id(v) {
                    return Err(ApiError::InvalidTranscriptId);
                }
                sel.transcript_id = Some(v.clone());
            }
            "language" if sel.language.is_none() => sel.language = Some(v.clone()),
            _ => {}
        }
    }
    Ok(sel)
}

fn first<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Whether the Accept header prefers plain text (it lists text/plain before any JSON type).
fn accepts_text(headers: &HeaderMap) -> bool {
    let Some(accept) = headers
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    for range in accept.split(',') {
        let media = range.split(';').next().unwrap_or("").trim();
        if media.eq_ignore_ascii_case("text/plain") {
            return true;
        }
        if media.eq_ignore_ascii_case("application/json") {
            return false;
        }
    }
    false
}

/// The cue of the JSON transcript.
fn cue_json(cue: &Cue) -> Value {
    json!({
        "index": cue.index,
        "start": seconds(cue.start),
        "end": seconds(cue.end),
        "speaker": cue.speaker,
        "lines": cue.lines,
        "words": cue.words.iter().map(|w| json!({
            "text": &*w.text,
            "start": seconds(w.start),
            "end": seconds(w.end),
        })).collect::<Vec<_>>(),
    })
}

/// GET /jobs/{jobId}/transcript.
pub async fn transcript(
    app: Arc<App>,
    caller: Caller,
    id: String,
    query: &str,
    headers: &HeaderMap,
) -> Result<Response<Body>, ApiError> {
    if !is_id(&id) {
        return Err(ApiError::InvalidJobId);
    }
    let params = parse_query(query);
    let text = match first(&params, "format") {
        None => accepts_text(headers),
        Some("json") => false,
        Some("text") => true,
        Some(_) => return Err(ApiError::InvalidFormat),
    };
    let max_chars = match first(&params, "maxChars") {
        None => None,
        Some(v) => {
            let n: Option<usize> = if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
                v.parse().ok()
            } else {
                None
            };
            match n {
                Some(n) if (1..=1_000_000).contains(&n) => Some(n),
                _ => return Err(ApiError::InvalidMaxChars),
            }
        }
    };
    let sel = selector(&params)?;
    let loaded = load(&app, caller, id, sel).await?;
    let settings = loaded.settings()?;
    let cues = loaded.cues(&settings);
    if text {
        let (body, truncated) = transcript_text(&cues, max_chars);
        let mut resp = Response::new(Body::full(body));
        resp.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        resp.headers_mut().insert(
            "X-Truncated",
            HeaderValue::from_static(if truncated { "true" } else { "false" }),
        );
        return Ok(resp);
    }
    let (kept, truncated) = truncate_cues(&cues, max_chars);
    let body = json!({
        "jobId": loaded.job.id,
        "transcript": transcript_json(&loaded.transcript),
        "truncated": truncated,
        "cueCount": cues.len(),
        "cues": cues.iter().take(kept).map(cue_json).collect::<Vec<_>>(),
    });
    Ok(json_response(200, &body))
}

/// The contract's six `format` values.
pub fn subtitle_format(name: &str) -> Option<Format> {
    match name.to_ascii_lowercase().as_str() {
        "srt" | "vtt" | "webvtt" | "ttml" | "ass" | "ebu-stl" => Format::from_name(name),
        _ => None,
    }
}

/// `Content-Disposition: attachment` for `filename`, with an RFC 6266 `filename*` when the name
/// is not plain ASCII.
pub fn content_disposition(filename: &str) -> String {
    let safe: String = filename
        .chars()
        .map(|c| match c {
            '/' | '\\' => '_',
            c if c.is_control() => '_',
            c => c,
        })
        .collect();
    let ascii: String = safe
        .chars()
        .map(|c| if c.is_ascii() && c != '"' { c } else { '_' })
        .collect();
    if ascii == safe {
        format!("attachment; filename=\"{ascii}\"")
    } else {
        format!(
            "attachment; filename=\"{ascii}\"; filename*=UTF-8''{}",
            percent_encode(&safe)
        )
    }
}

/// GET /jobs/{jobId}/subtitles.
pub async fn subtitles(
    app: Arc<App>,
    caller: Caller,
    id: String,
    query: &str,
) -> Result<Response<Body>, ApiError> {
    if !is_id(&id) {
        return Err(ApiError::InvalidJobId);
    }
    let params = parse_query(query);
    let format = match first(&params, "format") {
        None => Format::Srt,
        Some(name) => subtitle_format(name).ok_or(ApiError::UnsupportedFormat)?,
    };
    let offset = match first(&params, "offsetSeconds") {
        None => Millis::ZERO,
        Some(v) => match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && (-86_400.0..=86_400.0).contains(&s) => {
                Millis::from_secs_f64(s).ok_or(ApiError::InvalidOffset)?
            }
            _ => return Err(ApiError::InvalidOffset),
        },
    };
    let sel = selector(&params)?;
    let loaded = load(&app, caller, id, sel).await?;
    subtitle_response(
        &loaded.job,
        &loaded.transcript.language,
        &loaded.tag,
        &loaded.words,
        format,
        offset,
    )
}

/// The subtitle file of `words` (a transcript of `job` in `language`) as an attachment: what the
/// API's subtitles endpoint and the editor's download buttons both answer, byte for byte.
pub fn subtitle_response(
    job: &JobRow,
    language: &str,
    tag: &str,
    words: &[Word],
    format: Format,
    offset: Millis,
) -> Result<Response<Body>, ApiError> {
    let settings = job_settings(job)?;
    let frame_rate = job_frame_rate(job);
    let cues = layout_with_shots(words, &settings, frame_rate, job_shot_changes(job));
    let opts = WriteOptions {
        offset: if format == Format::EbuStl {
            Millis::ZERO
        } else {
            offset
        },
        frame_rate,
        language: language.to_string(),
        title: job.name.clone(),
        max_chars_per_line: settings.max_chars_per_line,
    };
    let bytes = cuecraft_formats::to_vec(format, &cues, &opts)
        .map_err(|e| ApiError::Internal(format!("writing {}: {e}", format.extension())))?;
    let filename = format!("{}_{}.{}", job.name, tag, format.extension());
    let mut resp = Response::new(Body::full(bytes));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    if let Ok(v) = HeaderValue::from_str(&content_disposition(&filename)) {
        resp.headers_mut().insert(CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_transcript_of_a_job_downloads_under_its_own_name() {
        let list = [
            ("a", "original", "en"),
            ("b", "clean", "en"),
            ("c", "translation", "nl"),
            ("d", "translation", "en"),
            ("e", "translation", "nl"),
        ];
        let tags: Vec<String> = list
            .iter()
            .filter_map(|t| file_tag(list.iter().copied(), t.0))
            .collect();
        assert_eq!(tags, ["en", "en_clean", "nl", "en_4", "nl_5"]);
        assert_eq!(file_tag(list.iter().copied(), "z"), None);
    }

    #[test]
    fn attachment_names_get_an_rfc6266_filename_star_when_not_ascii() {
        assert_eq!(
            content_disposition("talk_en.srt"),
            "attachment; filename=\"talk_en.srt\""
        );
        assert_eq!(
            content_disposition("Café \"x\"_fr.vtt"),
            "attachment; filename=\"Caf_ _x__fr.vtt\"; filename*=UTF-8''Caf%C3%A9%20%22x%22_fr.vtt"
        );
        assert_eq!(
            content_disposition("a/b_en.srt"),
            "attachment; filename=\"a_b_en.srt\""
        );
    }

    #[test]
    fn selection_prefers_the_id_then_the_original_then_the_oldest_of_a_language() {
        let t = |id: &str, lang: &str, kind: &str| TranscriptRow {
            id: id.into(),
            language: lang.into(),
            kind: kind.into(),
            label: None,
            status: "ready".into(),
        };
        let list = [
            t("o", "en", "original"),
            t("c", "en", "clean"),
            t("n", "nl", "translation"),
        ];
        let pick = |tid: Option<&str>, lang: Option<&str>| {
            select(
                &list,
                &Selector {
                    transcript_id: tid.map(Into::into),
                    language: lang.map(Into::into),
                },
            )
            .map(|t| t.id.clone())
        };
        assert_eq!(pick(None, None).as_deref(), Some("o"));
        assert_eq!(pick(None, Some("en")).as_deref(), Some("o"));
        assert_eq!(pick(None, Some("nl")).as_deref(), Some("n"));
        assert_eq!(pick(Some("c"), Some("nl")).as_deref(), Some("c"));
        assert_eq!(pick(None, Some("ja")), None);
    }
}
