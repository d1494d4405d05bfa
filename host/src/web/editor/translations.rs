//! POST /editor/{id}/translations: a translation transcript, a copy of the original to type over
//! or the cues of an imported subtitle file.

use std::sync::Arc;

use cuecraft_engine::{Break, Word};
use hyper::Response;
use serde_json::Value;

use crate::http::{App, Body};
use crate::util::now_ms;
use crate::words::{decode, encode};

use super::super::{check_csrf, db, require_session, WebError, WebRequest};
use super::view::editor_json;
use super::{body_json, check_id, json_bytes, visible};

/// Words for imported cues: each cue's lines split at whitespace, sharing the cue's time by
/// length, a manual line break after each line but the last and `Break::Timed` after the cue:
/// pinned words, each cue timed by hand, so the layout keeps the imported cues, lines and times
/// as they were (a cue until the subtitler lays it out again).
pub fn words_from_cues(cues: &[cuecraft_engine::Cue]) -> Vec<Word> {
    let mut words = Vec::new();
    let mut sorted: Vec<&cuecraft_engine::Cue> = cues.iter().collect();
    sorted.sort_by_key(|c| (c.start, c.end));
    for cue in sorted {
        let lines: Vec<Vec<&str>> = cue
            .lines
            .iter()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|l| !l.is_empty())
            .collect();
        let text: Vec<&str> = lines.iter().flatten().copied().collect();
        if text.is_empty() {
            continue;
        }
        let mut pieces =
            super::super::align_text(&[], &text.join(" "), cue.start, cue.end.max(cue.start));
        let mut at = 0;
        for (n, line) in lines.iter().enumerate() {
            at += line.len();
            if n + 1 < lines.len() {
                if let Some(w) = pieces.get_mut(at - 1) {
                    w.break_after = Some(Break::Line);
                }
            }
        }
        if let Some(last) = pieces.last_mut() {
            last.break_after = Some(Break::Timed);
        }
        words.append(&mut pieces);
    }
    words
}

/// POST /editor/{id}/translations: `{language, label?, from: "original" | "file", file?: {name,
/// base64}}` adds a `translation` transcript: a copy of the original to type over cue by cue, or
/// the cues of a subtitle file in any of the five formats (their own times, on the media's
/// timeline). The API lists and serves it like any transcript.
pub async fn add_translation(
    app: &Arc<App>,
    req: &WebRequest,
    id: &str,
) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    check_csrf(req, &session)?;
    let body = body_json(req)?;
    let language = body
        .get("language")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or("")
        .to_string();
    if !cuecraft_engine::settings::is_language_tag(&language)
        || language == "auto"
        || language == "multilingual"
    {
        return Err(WebError::BadRequest(
            "Give the translation a language code such as nl or pt-BR.".into(),
        ));
    }
    let label = body
        .get("label")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| l.chars().take(100).collect::<String>())
        .unwrap_or_else(|| format!("Translation ({language})"));
    let imported = match body.get("from").and_then(Value::as_str) {
        Some("file") => {
            let b64 = body
                .pointer("/file/base64")
                .and_then(Value::as_str)
                .ok_or_else(|| WebError::BadRequest("Choose a subtitle file.".into()))?;
            let bytes = base64_decode(b64)
                .ok_or_else(|| WebError::BadRequest("The file did not arrive intact.".into()))?;
            let name = body
                .pointer("/file/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let format = name
                .rsplit_once('.')
                .and_then(|(_, ext)| cuecraft_formats::Format::from_name(ext))
                .or_else(|| cuecraft_formats::detect(&bytes))
                .ok_or_else(|| {
                    WebError::BadRequest(
                        "That is not an SRT, WebVTT, TTML, ASS or EBU-STL file.".into(),
                    )
                })?;
            let cues = cuecraft_formats::parse(format, &bytes).map_err(|e| {
                WebError::BadRequest(format!(
                    "The {} file could not be read: {e}",
                    format.extension()
                ))
            })?;
            let words = words_from_cues(&cues);
            if words.is_empty() {
                return Err(WebError::BadRequest("The file holds no subtitles.".into()));
            }
            Some(words)
        }
        Some("original") | None => None,
        Some(_) => return Err(WebError::BadRequest("`from` is original or file.".into())),
    };
    let jid = id.to_string();
    let app2 = app.clone();
    let value = db(app, move |c| {
        let job = visible(c, &session.member, &jid)?;
        if job.status != "ready" {
            return Err(WebError::BadRequest("The project is not ready yet.".into()));
        }
        let words = match imported {
            Some(w) => w,
            None => {
                let stored = c.transcript_words(&jid, None)?.ok_or(WebError::NotFound)?;
                decode(&stored.words).ok_or_else(|| WebError::Internal("stored words".into()))?
            }
        };
        let tid = c.add_translation(&jid, &language, &label, &encode(&words), now_ms())?;
        let job = c.job(&jid)?.ok_or(WebError::NotFound)?;
        editor_json(&app2, c, &job, Some(&tid), None, false)
    })
    .await?;
    Ok(json_bytes(value))
}

/// Standard base64 (RFC 4648, padding optional, no line breaks) to bytes (the `base64` crate).
pub(super) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::engine::{general_purpose, DecodePaddingMode, Engine, GeneralPurpose};
    const STANDARD_ANY_PADDING: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        general_purpose::PAD.with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    STANDARD_ANY_PADDING.decode(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::editor::view::overlapping_text;
    use cuecraft_engine::Millis;

    #[test]
    fn base64_decodes_what_browsers_send() {
        assert_eq!(
            base64_decode("aGVsbG8gd29ybGQ="),
            Some(b"hello world".to_vec())
        );
        assert_eq!(base64_decode("YQ=="), Some(b"a".to_vec()));
        assert_eq!(base64_decode("YWI="), Some(b"ab".to_vec()));
        assert_eq!(base64_decode("Y"), None);
        assert_eq!(base64_decode("@@@@"), None);
    }

    #[test]
    fn imported_cues_keep_their_lines_times_and_boundaries() {
        let cues = vec![
            cuecraft_engine::Cue::from_lines(
                2,
                Millis(3000),
                Millis(4000),
                vec!["tot ziens".into()],
            ),
            cuecraft_engine::Cue::from_lines(
                1,
                Millis(0),
                Millis(2000),
                vec!["hallo daar,".into(), "wereld".into()],
            ),
        ];
        let words = words_from_cues(&cues);
        let texts: Vec<&str> = words.iter().map(|w| &*w.text).collect();
        assert_eq!(texts, ["hallo", "daar,", "wereld", "tot", "ziens"]);
        assert_eq!(words[0].start, Millis(0));
        assert_eq!(words[2].end, Millis(2000));
        assert_eq!(words[1].break_after, Some(Break::Line));
        assert_eq!(words[2].break_after, Some(Break::Timed));
        assert_eq!(words[4].break_after, Some(Break::Timed));
        assert_eq!(words[3].start, Millis(3000));
        let source = vec![cuecraft_engine::Cue::from_lines(
            1,
            Millis(100),
            Millis(1900),
            vec!["hello there,".into(), "world".into()],
        )];
        let back = vec![
            cuecraft_engine::Cue::from_lines(1, Millis(0), Millis(2000), vec![]),
            cuecraft_engine::Cue::from_lines(2, Millis(3000), Millis(4000), vec![]),
        ];
        assert_eq!(overlapping_text(&back, &source), ["hello there, world", ""]);
    }
}
