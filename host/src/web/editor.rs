//! The editor (`/editor/{jobId}`, the API's `editorUrl`): the page shell, its data (cues laid out
//! by the same `engine::layout` as the API's downloads, with the index range of the stored words
//! each cue shows), the media proxy (HTTP Range) and waveform peaks, the edit operations and the
//! revision history, and downloads that answer exactly the API's bytes.
//!
//! Every edit names the transcript's revision it was made on; the server applies it to the stored
//! words and saves with compare-and-swap, so a second tab or a colleague gets a conflict rather
//! than overwriting silently. Undo, redo and restore are saves of an earlier revision's words
//! (the history is append-only).

use std::sync::Arc;

use cuecraft_engine::qc::{check, QcStyle, Rule};
use cuecraft_engine::{
    apply_lead_in, layout, Break, Cue, FrameRate, Layout, Millis, Settings, Word,
    MAX_LEAD_IN_FRAMES,
};
use cuecraft_formats::{Format, WriteOptions};
use hyper::header::{
    HeaderValue, ACCEPT_RANGES, CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE,
};
use hyper::Response;
use serde_json::{json, Value};

use crate::api::results::{
    content_disposition, job_frame_rate, job_settings, subtitle_format, subtitle_response,
};
use crate::http::{App, Body};
use crate::media::{MediaStore, Object};
use crate::store::{JobRow, Member, Saved};
use crate::util::{is_id, now_ms, rfc3339};
use crate::words::{decode, encode};

use super::cache::{self, Since, Stored, View, ViewKey};

use super::{
    check_csrf, db, esc, field, html, json_ok, page as html_page, require_session, respond_bytes,
    WebError, WebRequest,
};

/// The largest piece of media one range response carries; the browser asks for the rest.
const MAX_RANGE: u64 = 8 << 20;
/// The media proxy is streamed in pieces of this size (one range read of the media store each):
/// a response holds a few of them in memory, whatever the proxy's size.
const MEDIA_PIECE: u64 = 1 << 20;

fn check_id(id: &str) -> Result<(), WebError> {
    if is_id(id) {
        Ok(())
    } else {
        Err(WebError::NotFound)
    }
}

/// The job when the member may see it (404 otherwise, another organisation's included).
fn visible(c: &dyn crate::store::Store, viewer: &Member, id: &str) -> Result<JobRow, WebError> {
    c.visible_job(viewer, id)?.ok_or(WebError::NotFound)
}

/// GET /editor/{id}: the page shell; `editor.js` loads the rest.
pub async fn page(app: &Arc<App>, req: &WebRequest, id: &str) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    let viewer = session.member.clone();
    let jid = id.to_string();
    let job = db(app, move |c| visible(c, &viewer, &jid)).await?;
    let formats = [
        ("srt", "SRT"),
        ("vtt", "WebVTT"),
        ("ttml", "TTML"),
        ("ass", "ASS"),
        ("ebu-stl", "EBU-STL"),
    ];
    let downloads: String = formats
        .iter()
        .map(|(f, label)| {
            format!("<a class=\"button download\" data-format=\"{f}\" href=\"/editor/{id}/download?format={f}\">{label}</a>")
        })
        .collect();
    let body = format!(
        "<section class=\"editor\" id=\"editor\" data-job=\"{id}\">\
         <div class=\"bar\"><h1 id=\"job-name\">{name}</h1>\
         <span class=\"status status-{status}\" id=\"job-status\">{status}</span>\
         <span id=\"save-state\" role=\"status\" aria-live=\"polite\"></span>\
         <span id=\"qc\" class=\"qc\" title=\"Checked against the job's settings\"></span>\
         <select id=\"transcript\" aria-label=\"Transcript\"></select>\
         <button type=\"button\" id=\"help-open\" aria-haspopup=\"dialog\">Shortcuts (?)</button></div>\
         <div id=\"conflict\" class=\"banner\" role=\"alert\" hidden>Someone else changed this \
         transcript (now revision <span id=\"conflict-rev\"></span>). Your last change was not saved. \
         <button type=\"button\" id=\"conflict-reload\">Load their version</button></div>\
         <div id=\"problem\" class=\"banner\" role=\"alert\" hidden></div>\
         <div id=\"notice\" class=\"banner notice\" role=\"status\" hidden></div>\
         <div class=\"player\"><div id=\"picture\"></div>\
         <canvas id=\"wave\" height=\"96\" aria-label=\"Waveform: click to seek\"></canvas>\
         <div class=\"transport\"><button type=\"button\" id=\"play\">Play</button>\
         <span id=\"clock\">0:00.000</span></div></div>\
         <div class=\"tools\">\
         <button type=\"button\" id=\"undo\" disabled>Undo</button>\
         <button type=\"button\" id=\"redo\" disabled>Redo</button>\
         <button type=\"button\" id=\"split\">Split at word</button>\
         <button type=\"button\" id=\"merge\">Merge with next</button>\
         <button type=\"button\" id=\"linebreak\">Line break before word</button>\
         <span class=\"group\">Start <button type=\"button\" id=\"start-minus\">−1f</button>\
         <button type=\"button\" id=\"start-plus\">+1f</button></span>\
         <span class=\"group\">End <button type=\"button\" id=\"end-minus\">−1f</button>\
         <button type=\"button\" id=\"end-plus\">+1f</button></span>\
         <span class=\"group\"><label>Speaker <input type=\"number\" id=\"speaker\" min=\"0\" max=\"99\" value=\"0\"></label>\
         <button type=\"button\" id=\"speaker-cue\">Set for cue</button>\
         <button type=\"button\" id=\"speaker-all\">Set everywhere</button></span>\
         <form id=\"find-form\" class=\"group\"><input id=\"find\" placeholder=\"Find\" aria-label=\"Find\">\
         <input id=\"replace\" placeholder=\"Replace with\" aria-label=\"Replace with\">\
         <button type=\"submit\">Replace all</button></form></div>\
         <div class=\"columns\"><div class=\"cue-pane\">\
         <div id=\"beside-head\" class=\"beside-head\" hidden><span id=\"beside-this\"></span>\
         <span id=\"beside-original\"></span></div>\
         <ol id=\"cues\" class=\"cues\" aria-label=\"Cues\"></ol></div>\
         <aside><details id=\"settings-panel\"><summary>Layout settings</summary>\
         <form id=\"settings-form\" class=\"settings\">\
         <label>Characters per line <input type=\"number\" name=\"maxCharsPerLine\" min=\"10\" max=\"250\"></label>\
         <label>Lines per subtitle <input type=\"number\" name=\"maxLinesPerSubtitle\" min=\"1\" max=\"5\"></label>\
         <label>Frames between subtitles <input type=\"number\" name=\"minFramesBetweenSubtitles\" min=\"0\" max=\"100\"></label>\
         <label>Reading pace <select name=\"contentProfile\"><option value=\"balanced\">balanced (17 CPS)</option>\
         <option value=\"dense\">dense (20 CPS)</option><option value=\"dramatic\">dramatic (15 CPS)</option>\
         <option value=\"auto\">auto</option></select></label>\
         <label>Mode <select name=\"subtitleMode\"><option value=\"default\">default</option>\
         <option value=\"audiogram\">audiogram</option></select></label>\
         <label>Shift (ms) <input type=\"number\" name=\"shiftMs\" min=\"-10000\" max=\"10000\"></label>\
         <label title=\"Downloads from the editor show each subtitle this many frames before its first word\">\
         Lead-in (frames) <input type=\"number\" name=\"inCueLeadInFrames\" min=\"0\" max=\"25\"></label>\
         <label><input type=\"checkbox\" name=\"formatSubtitles\"> Smart formatting</label>\
         <label><input type=\"checkbox\" name=\"splitOnPunctuation\"> Split on punctuation</label>\
         <label><input type=\"checkbox\" name=\"emDashOnSpeakerChange\"> Dash on speaker change</label>\
         <label><input type=\"checkbox\" name=\"ellipsisContinuation\"> Ellipsis continuation</label>\
         <button type=\"submit\">Apply settings</button></form></details>\
         <details id=\"translate-panel\"><summary>Add a translation</summary>\
         <form id=\"translate-form\" class=\"settings\">\
         <label>Language <input name=\"language\" placeholder=\"nl\" required maxlength=\"20\"></label>\
         <label>Label <input name=\"label\" placeholder=\"Dutch\" maxlength=\"100\"></label>\
         <label><input type=\"radio\" name=\"from\" value=\"original\" checked> Copy the original to type over</label>\
         <label><input type=\"radio\" name=\"from\" value=\"file\"> Import a subtitle file</label>\
         <input type=\"file\" name=\"file\" accept=\".srt,.vtt,.ttml,.xml,.dfxp,.ass,.ssa,.stl\" aria-label=\"Subtitle file\">\
         <button type=\"submit\">Add translation</button></form></details>\
         <h2>Download</h2><div class=\"downloads\">{downloads}</div>\
         <h2>History</h2><ol id=\"history\" class=\"history\"></ol></aside></div>\
         <dialog id=\"help\" aria-label=\"Keyboard shortcuts\"><h2>Keyboard shortcuts</h2><dl>\
         <dt>Ctrl+Space or Alt+P</dt><dd>Play / pause</dd>\
         <dt>Alt+↓ / Alt+↑ (or J / K outside a text box)</dt><dd>Next / previous cue</dd>\
         <dt>Enter on a cue</dt><dd>Edit its text (Enter saves, Escape cancels)</dd>\
         <dt>← / → on a cue</dt><dd>Previous / next word (seeks to it)</dd>\
         <dt>Alt+S</dt><dd>Split the cue before the selected word</dd>\
         <dt>Alt+M</dt><dd>Merge the cue with the next</dd>\
         <dt>Alt+L</dt><dd>Line break before the selected word</dd>\
         <dt>Alt+[ / Alt+]</dt><dd>Cue start one frame earlier / later</dd>\
         <dt>Alt+{{ / Alt+}}</dt><dd>Cue end one frame earlier / later</dd>\
         <dt>Ctrl+Z / Ctrl+Shift+Z</dt><dd>Undo / redo</dd>\
         <dt>?</dt><dd>This sheet</dd></dl>\
         <button type=\"button\" id=\"help-close\">Close</button></dialog></section>",
        id = esc(id),
        name = esc(&job.name),
        status = esc(&job.status),
    );
    Ok(html(
        200,
        html_page(&job.name, Some(&session), &body, &["editor.js"]),
    ))
}

/// Which transcript a request names (`transcript` parameter), the original by default.
fn transcript_param(pairs: &[(String, String)]) -> Result<Option<String>, WebError> {
    match field(pairs, "transcript").filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) if is_id(t) => Ok(Some(t.to_string())),
        Some(_) => Err(WebError::NotFound),
    }
}

/// The words of a job's ready transcript at its current revision (the original when `transcript`
/// is `None`): kept in memory from an earlier request, else read and decoded.
fn load_stored(
    c: &dyn crate::store::Store,
    job_id: &str,
    transcript: Option<&str>,
) -> Result<(String, i64, Arc<Stored>), WebError> {
    let (tid, revision) = c
        .transcript_head(job_id, transcript)?
        .ok_or(WebError::NotFound)?;
    if let Some(kept) = cache::stored(&tid, revision) {
        return Ok((tid, revision, kept));
    }
    let stored = c
        .transcript_words(job_id, Some(&tid))?
        .ok_or(WebError::NotFound)?;
    let words = decode(&stored.words)
        .ok_or_else(|| WebError::Internal(format!("words of {}", stored.transcript_id)))?;
    let kept = Arc::new(Stored { words });
    cache::keep(&stored.transcript_id, stored.revision, kept.clone(), None);
    Ok((stored.transcript_id, stored.revision, kept))
}

/// The labelled signals of `cues[lo..hi]` (the QC of `cues[lo..hi + 1]`: a cue's gap and
/// chaining findings look at the next cue), with each cue's error and warning count.
fn signals(
    cues: &[cuecraft_engine::Cue],
    (lo, hi): (usize, usize),
    style: &QcStyle,
    fr: cuecraft_engine::FrameRate,
) -> (Vec<Vec<Value>>, Vec<(u32, u32)>) {
    let report = check(&cues[lo..(hi + 1).min(cues.len())], style, fr);
    let mut warnings: Vec<Vec<Value>> = vec![Vec::new(); hi - lo];
    let mut counts = vec![(0u32, 0u32); hi - lo];
    for f in &report.findings {
        let (Some(list), Some(n)) = (warnings.get_mut(f.cue), counts.get_mut(f.cue)) else {
            continue;
        };
        match f.level {
            cuecraft_engine::qc::Level::Error => n.0 += 1,
            cuecraft_engine::qc::Level::Warning => n.1 += 1,
        }
        if list.iter().any(|w| w["rule"] == f.rule.id()) {
            continue;
        }
        list.push(json!({
            "rule": f.rule.id(),
            "level": f.level.as_str(),
            "label": rule_label(f.rule, style),
            "message": f.message,
        }));
    }
    (warnings, counts)
}

/// Lays out `words` for the editor: cues, each one's first stored word, its labelled signals and
/// (beside a clean version or translation) the original's text over the same time. With the view
/// of the words before an edit (`previous`: that view, taken from the memory, and its words),
/// its layout is brought up to date (only the chunks around the changed words are laid out
/// again), the QC runs only over the cues that changed and the one before (a cue's findings
/// depend on it and the next cue only), and the view records which cues differ (`since`).
fn build_view(
    words: &[Word],
    settings: &Settings,
    fr: FrameRate,
    source: Option<&[Cue]>,
    key: ViewKey,
    previous: Option<(View, &[Word])>,
) -> View {
    // Live warnings: the engine's QC rules against what the job's settings promise, one labelled
    // signal per rule and cue (the same check `cuecraft check` runs).
    let style = QcStyle::from_settings(settings, words);
    let previous = previous.filter(|(p, _)| p.key == key && p.style_cps == style.max_cps);
    let mut view = match previous {
        Some((mut view, old_words)) => {
            let (base_cues, base_words) = (view.layout.cues.len(), view.word_count);
            let changed = view.layout.update(old_words, words, settings, fr);
            let cues = &view.layout.cues;
            // The changed cues and the one before them (its gap to the next may have changed).
            let lo = changed.from.saturating_sub(1);
            let (old_hi, hi) = (
                changed.from + changed.removed,
                changed.from + changed.inserted,
            );
            let (warnings, counts) = signals(cues, (lo, hi), &style, fr);
            view.warnings.splice(lo..old_hi, warnings);
            view.counts.splice(lo..old_hi, counts);
            if let Some(s) = source {
                let texts = overlapping_text(&cues[changed.from..hi], s);
                view.sources.splice(changed.from..old_hi, texts);
            }
            view.since = Some(Since {
                from: lo,
                remove: old_hi - lo,
                insert: hi - lo,
                base_cues,
                base_words,
            });
            view
        }
        None => {
            let layout = Layout::new(words, settings, fr);
            let (warnings, counts) = signals(&layout.cues, (0, layout.cues.len()), &style, fr);
            let sources = source
                .map(|s| overlapping_text(&layout.cues, s))
                .unwrap_or_default();
            View {
                key,
                layout,
                since: None,
                starts: Vec::new(),
                warnings,
                counts,
                sources,
                style_cps: style.max_cps,
                errors: 0,
                warning_count: 0,
                word_count: 0,
            }
        }
    };
    view.starts.clear();
    let mut from = 0usize;
    for cue in &view.layout.cues {
        view.starts.push(from);
        from = (from + cue.words.len()).min(words.len());
    }
    view.errors = view.counts.iter().map(|c| c.0 as usize).sum();
    view.warning_count = view.counts.iter().map(|c| c.1 as usize).sum();
    view.word_count = words.len();
    view
}

/// What the editor's view of transcript `transcript_id` is laid out under.
fn view_key(
    c: &dyn crate::store::Store,
    job: &JobRow,
    transcript_id: &str,
) -> Result<ViewKey, WebError> {
    let fr = job_frame_rate(job);
    // Beside a clean version or a translation: the original's text over the same time.
    let original = c.transcript_head(&job.id, None)?;
    Ok(ViewKey {
        settings: job.settings.clone(),
        frame_rate: (fr.num, fr.den),
        source: original.filter(|(id, _)| id != transcript_id),
    })
}

/// The original's cues a view under `key` shows beside its own (none beside the original): the
/// original's kept view, or its words laid out.
fn source_cues(
    c: &dyn crate::store::Store,
    job: &JobRow,
    key: &ViewKey,
    settings: &Settings,
) -> Result<Option<SourceCues>, WebError> {
    let Some((sid, _)) = &key.source else {
        return Ok(None);
    };
    let (sid, srev, sw) = load_stored(c, &job.id, Some(sid))?;
    let own_key = ViewKey {
        source: None,
        ..key.clone()
    };
    Ok(Some(match cache::view(&sid, srev, &own_key) {
        Some(v) => SourceCues::Kept(v),
        None => SourceCues::Laid(layout(&sw.words, settings, job_frame_rate(job))),
    }))
}

/// The original's cues beside a clean version or translation.
enum SourceCues {
    Kept(Arc<View>),
    Laid(Vec<Cue>),
}

impl SourceCues {
    fn cues(&self) -> &[Cue] {
        match self {
            SourceCues::Kept(v) => &v.layout.cues,
            SourceCues::Laid(c) => c,
        }
    }
}

/// The layout settings as the editor shows and sends them.
fn settings_json(settings: &cuecraft_engine::Settings) -> Value {
    json!({
        "formatSubtitles": settings.format_subtitles,
        "maxCharsPerLine": settings.max_chars_per_line,
        "maxLinesPerSubtitle": settings.max_lines_per_subtitle,
        "minFramesBetweenSubtitles": settings.min_frames_between_subtitles,
        "contentProfile": settings.content_profile.as_str(),
        "subtitleMode": settings.subtitle_mode.as_str(),
        "splitOnPunctuation": settings.split_on_punctuation,
        "emDashOnSpeakerChange": settings.em_dash_on_speaker_change,
        "ellipsisContinuation": settings.ellipsis_continuation,
        "shiftMs": settings.shift_ms,
        "minDuration": settings.min_duration.map(|m| m.as_secs_f64()),
        "maxDuration": settings.max_duration.map(|m| m.as_secs_f64()),
    })
}

/// Everything the editor shows for one transcript of a job, as JSON. `loaded` is the transcript
/// an edit just saved (id, revision, words); with `patch`, the answer carries only the cues that
/// changed since the revision the edit was made on (when the view knows them, [`View::since`]).
fn editor_json(
    app: &App,
    c: &dyn crate::store::Store,
    job: &JobRow,
    transcript: Option<&str>,
    loaded: Option<(String, i64, Arc<Stored>)>,
    patch: bool,
) -> Result<Vec<u8>, WebError> {
    let media = match proxy(app.media.as_ref(), &job.id)? {
        Some((_, _, ct)) => {
            json!({"kind": &ct[..5], "url": format!("/editor/{}/media", job.id)})
        }
        None => Value::Null,
    };
    let has_peaks = app
        .media
        .size(&job.id, Object::Peaks)
        .map_err(|e| WebError::Internal(format!("media store: {e}")))?
        .is_some();
    let fr = job_frame_rate(job);
    let mut out = json!({
        "job": {
            "id": job.id,
            "name": job.name,
            "status": job.status,
            "error": job.error,
            "updatedAt": rfc3339(job.updated_at),
            "durationSeconds": job.measured_seconds.unwrap_or(job.declared_seconds),
            "frameRate": {"num": fr.num, "den": fr.den},
        },
        "media": media,
        "peaks": if has_peaks {
            json!({"url": format!("/editor/{}/peaks", job.id), "perSecond": crate::media::PEAKS_PER_SECOND})
        } else { Value::Null },
        "transcripts": [],
    });
    if job.status != "ready" {
        return to_bytes(&EditorData {
            meta: out,
            cues: Some(Vec::new()),
            patch: None,
        });
    }
    let list = c.ready_transcripts(&job.id)?;
    out["transcripts"] = Value::Array(
        list.iter()
            .map(|t| json!({"id": t.id, "kind": t.kind, "language": t.language, "label": t.label}))
            .collect(),
    );
    let (transcript_id, revision, stored) = match loaded {
        Some(l) => l,
        None => load_stored(c, &job.id, transcript)?,
    };
    let words = &stored.words;
    let settings = job_settings(job).map_err(|e| WebError::Internal(e.message()))?;
    let key = view_key(c, job, &transcript_id)?;
    let view = match cache::view(&transcript_id, revision, &key) {
        Some(v) => v,
        None => {
            let source = source_cues(c, job, &key, &settings)?;
            Arc::new(build_view(
                words,
                &settings,
                fr,
                source.as_ref().map(SourceCues::cues),
                key,
                None,
            ))
        }
    };
    cache::keep(&transcript_id, revision, stored.clone(), Some(view.clone()));
    let cue_out = |k: usize| {
        let cue = &view.layout.cues[k];
        let from = view.starts[k];
        let to = (from + cue.words.len()).min(words.len());
        CueOut {
            index: cue.index,
            start: cue.start.0,
            end: cue.end.0,
            speaker: cue.speaker,
            lines: &cue.lines,
            from,
            to,
            words: (from..to)
                .map(|i| {
                    let w = &words[i];
                    WordOut {
                        i,
                        text: &w.text,
                        start: w.start.0,
                        end: w.end.0,
                        br: match w.break_after {
                            Some(Break::Line) => "line",
                            Some(Break::Cue) => "cue",
                            Some(Break::Join) => "join",
                            None => "",
                        },
                    }
                })
                .collect(),
            warnings: view.warnings.get(k).map(Vec::as_slice).unwrap_or_default(),
            source: view.sources.get(k).map(String::as_str),
        }
    };
    let kind = list
        .iter()
        .find(|t| t.id == transcript_id)
        .map(|t| t.kind.clone())
        .unwrap_or_default();
    out["transcript"] = json!({
        "id": transcript_id,
        "revision": revision,
        "kind": kind,
        "wordCount": words.len(),
    });
    out["qc"] = json!({
        "errors": view.errors,
        "warnings": view.warning_count,
    });
    out["settings"] = settings_json(&settings);
    out["settings"][LEAD_IN] = json!(job.lead_in_frames);
    let n = view.layout.cues.len();
    let (cues, patch) = match view.since.filter(|_| patch) {
        Some(since) => {
            let patch = Patch {
                from: since.from,
                remove: since.remove,
                cues: (since.from..since.from + since.insert)
                    .map(cue_out)
                    .collect(),
                word_delta: view.word_count as i64 - since.base_words as i64,
                cue_count: n,
                base_cue_count: since.base_cues,
            };
            (None, Some(patch))
        }
        None => (Some((0..n).map(cue_out).collect()), None),
    };
    to_bytes(&EditorData {
        meta: out,
        cues,
        patch,
    })
}

/// A word of a cue as the editor receives it; `i` is its index in the stored words.
#[derive(serde::Serialize)]
struct WordOut<'a> {
    i: usize,
    text: &'a str,
    start: i64,
    end: i64,
    br: &'static str,
}

/// A cue as the editor receives it: the layout's cue, the range of stored words it shows, and its
/// warnings.
#[derive(serde::Serialize)]
struct CueOut<'a> {
    index: u32,
    start: i64,
    end: i64,
    speaker: u32,
    lines: &'a [String],
    from: usize,
    to: usize,
    words: Vec<WordOut<'a>>,
    warnings: &'a [Value],
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
}

/// The editor's data: the small fields as a JSON object, the cues serialized straight from the
/// layout (a 10-hour transcript has 100,000 words: no JSON tree is built for them). An edit's
/// answer may carry a `patch` instead of `cues`.
#[derive(serde::Serialize)]
struct EditorData<'a> {
    #[serde(flatten)]
    meta: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cues: Option<Vec<CueOut<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<Patch<'a>>,
}

/// The cues an edit changed: cues `from..from + remove` of the revision the edit was made on are
/// replaced by `cues`; every later cue keeps its content, its number moves by the difference in
/// cue count and its word indices by `wordDelta`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Patch<'a> {
    from: usize,
    remove: usize,
    cues: Vec<CueOut<'a>>,
    word_delta: i64,
    cue_count: usize,
    /// The number of cues the patch applies to (the page checks it holds that many).
    base_cue_count: usize,
}

fn to_bytes(data: &EditorData<'_>) -> Result<Vec<u8>, WebError> {
    serde_json::to_vec(data).map_err(|e| WebError::Internal(format!("editor data: {e}")))
}

/// A JSON answer of already serialized bytes.
fn json_bytes(bytes: Vec<u8>) -> Response<Body> {
    respond_bytes(200, "application/json; charset=utf-8", bytes)
}

/// The short label a rule's signal carries in the editor.
pub fn rule_label(rule: Rule, style: &QcStyle) -> String {
    match rule {
        Rule::ReadingPace => match style.max_cps {
            Some(cps) => format!("Reading pace over {cps} CPS"),
            None => "Reading pace".into(),
        },
        Rule::LineLength => format!("Line over {} characters", style.max_chars_per_line),
        Rule::LineCount => format!("More than {} lines", style.max_lines),
        Rule::DurationShort => "Too short".into(),
        Rule::DurationLong => "Too long".into(),
        Rule::Gap => format!("Gap under {} frames", style.min_gap_frames),
        Rule::Chaining => "Gap not chained".into(),
        Rule::WeakLineEnd => "Weak line end".into(),
        Rule::OneWordLine => "One-word line".into(),
        Rule::NeedlessLines => "Fits on fewer lines".into(),
        Rule::SentenceInside => "Sentence ends inside".into(),
        Rule::SilenceBridged => "Held over a silence".into(),
    }
}

/// GET /editor/{id}/data?transcript=T.
pub async fn data(app: &Arc<App>, req: &WebRequest, id: &str) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    let transcript = transcript_param(&req.params())?;
    let viewer = session.member.clone();
    let jid = id.to_string();
    let app2 = app.clone();
    let value = db(app, move |c| {
        let job = visible(c, &viewer, &jid)?;
        editor_json(&app2, c, &job, transcript.as_deref(), None, false)
    })
    .await?;
    Ok(json_bytes(value))
}

/// A parsed `Range: bytes=...` header for a file of `len` bytes: (first, last) inclusive, or
/// `Err(())` when it cannot be satisfied (416).
pub fn parse_range(header: &str, len: u64) -> Option<Result<(u64, u64), ()>> {
    let spec = header.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        // Several ranges: answer the whole file instead (allowed by RFC 9110).
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    let range = if a.is_empty() {
        let n: u64 = b.parse().ok()?;
        if n == 0 || len == 0 {
            return Some(Err(()));
        }
        (len.saturating_sub(n), len - 1)
    } else {
        let first: u64 = a.parse().ok()?;
        let last = if b.is_empty() {
            len.saturating_sub(1)
        } else {
            b.parse::<u64>().ok()?.min(len.saturating_sub(1))
        };
        if first >= len || last < first {
            return Some(Err(()));
        }
        (first, last)
    };
    Some(Ok(range))
}

/// The job's editor proxy in the media store: (object, size, content type), `None` when there is
/// none (not ready yet, or ffmpeg could not make one). Blocking.
fn proxy(
    media: &dyn MediaStore,
    job_id: &str,
) -> Result<Option<(Object, u64, &'static str)>, WebError> {
    for (object, ct) in [
        (Object::VideoProxy, "video/webm"),
        (Object::AudioProxy, "audio/webm"),
    ] {
        let size = media
            .size(job_id, object)
            .map_err(|e| WebError::Internal(format!("media store: {e}")))?;
        if let Some(size) = size {
            return Ok(Some((object, size, ct)));
        }
    }
    Ok(None)
}

/// GET /editor/{id}/media: the proxy, with HTTP Range.
pub async fn media(app: &Arc<App>, req: &WebRequest, id: &str) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    let viewer = session.member.clone();
    let jid = id.to_string();
    db(app, move |c| visible(c, &viewer, &jid).map(|_| ())).await?;
    let store = app.media.clone();
    let jid = id.to_string();
    let range = req
        .headers
        .get(hyper::header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let found = {
        let store = store.clone();
        let jid = jid.clone();
        tokio::task::spawn_blocking(move || proxy(store.as_ref(), &jid))
            .await
            .map_err(|e| WebError::Internal(e.to_string()))??
    };
    let (object, len, ct) = found.ok_or(WebError::NotFound)?;
    // The bytes `first..first + n` of the proxy, streamed from the media store a piece at a
    // time (a range read each: a file's seek and read, a bucket's ranged GET).
    let stream = |first: u64, n: u64| {
        Body::stream(n, MEDIA_PIECE, move |at, piece| {
            store.read_range(&jid, object, first + at, piece)
        })
    };
    let (status, body, content_range) = match range.as_deref().and_then(|r| parse_range(r, len)) {
        None => (200, stream(0, len), None),
        Some(Err(())) => (416, Body::empty(), Some(format!("bytes */{len}"))),
        Some(Ok((first, last))) => {
            let last = last.min(first + MAX_RANGE - 1);
            let n = last - first + 1;
            (
                206,
                stream(first, n),
                Some(format!("bytes {first}-{last}/{len}")),
            )
        }
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::OK);
    let headers = resp.headers_mut();
    let content_type = if status == 416 {
        "text/plain; charset=utf-8"
    } else {
        ct
    };
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if status != 416 {
        headers.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    }
    if let Some(v) = content_range.and_then(|v| HeaderValue::from_str(&v).ok()) {
        headers.insert(CONTENT_RANGE, v);
    }
    let length = hyper::body::Body::size_hint(resp.body())
        .exact()
        .unwrap_or(0);
    resp.headers_mut()
        .insert(CONTENT_LENGTH, HeaderValue::from(length));
    Ok(resp)
}

/// GET /editor/{id}/peaks: the waveform's peaks, one byte per 1/50 s.
pub async fn peaks(app: &Arc<App>, req: &WebRequest, id: &str) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    let viewer = session.member.clone();
    let jid = id.to_string();
    db(app, move |c| visible(c, &viewer, &jid).map(|_| ())).await?;
    let store = app.media.clone();
    let jid = id.to_string();
    let bytes = tokio::task::spawn_blocking(move || store.read(&jid, Object::Peaks))
        .await
        .map_err(|e| WebError::Internal(e.to_string()))?
        .map_err(|e| WebError::Internal(format!("media store: {e}")))?
        .ok_or(WebError::NotFound)?;
    Ok(respond_bytes(200, "application/octet-stream", bytes))
}

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
        let language = c
            .ready_transcripts(&jid)?
            .into_iter()
            .find(|t| t.id == stored.transcript_id)
            .map(|t| t.language)
            .unwrap_or_else(|| job.language.clone());
        let words =
            decode(&stored.words).ok_or_else(|| WebError::Internal("stored words".into()))?;
        if job.lead_in_frames == 0 {
            return subtitle_response(&job, &language, &words, format, Millis::ZERO)
                .map_err(|e| WebError::Internal(e.message()));
        }
        lead_in_response(&job, &language, &words, format)
    })
    .await
}

/// The editor's download with the project's lead-in: the API's file (the same layout, writer and
/// headers as `subtitle_response`) with each cue started up to `lead_in_frames` frames earlier
/// (`engine::apply_lead_in`, keeping minFramesBetweenSubtitles to the previous cue's end).
fn lead_in_response(
    job: &JobRow,
    language: &str,
    words: &[Word],
    format: Format,
) -> Result<Response<Body>, WebError> {
    let settings = job_settings(job).map_err(|e| WebError::Internal(e.message()))?;
    let frame_rate = job_frame_rate(job);
    let mut cues = layout(words, &settings, frame_rate);
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
    let filename = format!("{}_{}.{}", job.name, language, format.extension());
    if let Ok(v) = HeaderValue::from_str(&content_disposition(&filename)) {
        resp.headers_mut().insert(CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}

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

/// The JSON body of an edit or restore.
fn body_json(req: &WebRequest) -> Result<Value, WebError> {
    serde_json::from_slice(&req.body)
        .map_err(|_| WebError::BadRequest("The body is not JSON.".into()))
}

fn usize_field(v: &Value, name: &str) -> Result<usize, WebError> {
    v.get(name)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| WebError::BadRequest(format!("`{name}` must be a word index.")))
}

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
            let new = super::align_text(&words[from..to], text, lo, hi);
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
                out.extend(super::align_text(
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

/// What a save stores besides the words, and what it checks first.
struct Saving<'a, C> {
    /// The job's new settings (a restore of a revision laid out under others), stored in the
    /// same transaction; `job.settings` are already these.
    settings: Option<&'a str>,
    /// The job's new lead-in (a restore of a revision under another), stored in the same
    /// transaction; `job.lead_in_frames` is already this.
    lead_in_frames: Option<u32>,
    /// Refuses the edit from the view of the new words (a merge the layout cannot keep).
    check: C,
}

/// Saves `words` (the words of `stored` after an operation) as the next revision when the
/// transcript is still at `expected` and `how.check` accepts their view: the history gets the one
/// splice that changed, the store rewrites only the word pages it touches. The view is the kept
/// view of `expected` brought up to date. Answers the editor data, only the changed cues when the
/// body asks for a patch (`"answer": "patch"`).
#[allow(clippy::too_many_arguments)]
fn save(
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
fn held_end(
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

/// Loads what an edit needs: the job (visible, ready), the transcript's words, and checks the
/// revision the edit was made on.
fn load_for_edit(
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
        let frame = job_frame_rate(&job).frames_duration(1);
        let mut words = stored.words.clone();
        let mut body = body;
        let merge = body.get("op").and_then(Value::as_str) == Some("merge");
        let mut merged = (0, 0);
        if merge {
            // The two cues as the page showed them: the one ending before `at` and the next.
            let settings = job_settings(&job).map_err(|e| WebError::Internal(e.message()))?;
            let key = view_key(c, &job, &tid)?;
            let old = match cache::view(&tid, expected, &key) {
                Some(v) => cue_ranges(&v.layout.cues),
                None => cue_ranges(&layout(&stored.words, &settings, job_frame_rate(&job))),
            };
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
        let note = apply_op(&mut words, &body, frame)?;
        // A merge the layout cannot keep is refused (the merged words not in one cue), saying
        // why.
        let merged_words = words.get(merged.0..merged.1).unwrap_or_default().to_vec();
        let settings = job_settings(&job).map_err(|e| WebError::Internal(e.message()))?;
        let check = |view: &View| match merge {
            true => check_merge(&merged_words, merged, &settings, &view.layout.cues),
            false => Ok(()),
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

/// The stored words of each cue, by index.
fn cue_ranges(cues: &[cuecraft_engine::Cue]) -> Vec<(usize, usize)> {
    let mut from = 0;
    cues.iter()
        .map(|c| {
            from += c.words.len();
            (from - c.words.len(), from)
        })
        .collect()
}

/// Refuses a merge the layout cannot keep (the merged words `[lo, hi)`, `merged`, not in one of
/// `cues`), saying why: a hard boundary between them (another speaker, a long silence, split on punctuation) or
/// the limits.
fn check_merge(
    merged: &[Word],
    (lo, hi): (usize, usize),
    settings: &cuecraft_engine::Settings,
    cues: &[Cue],
) -> Result<(), WebError> {
    if cue_ranges(cues).iter().any(|r| r.0 <= lo && hi <= r.1) {
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

/// The editor's name of the project's lead-in (frames), shown and sent beside the layout settings
/// but stored apart from the job's settings (`JobRow::lead_in_frames`): not one of the API's.
pub const LEAD_IN: &str = "inCueLeadInFrames";

/// The lead-in a request sets: a whole number of frames from 0 to `MAX_LEAD_IN_FRAMES`.
fn lead_in_frames(v: &Value) -> Result<u32, WebError> {
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

/// For each cue, the text of the `source` cues it overlaps in time (two pointers: both lists are
/// in time order).
pub fn overlapping_text(
    cues: &[cuecraft_engine::Cue],
    source: &[cuecraft_engine::Cue],
) -> Vec<String> {
    let mut out = Vec::with_capacity(cues.len());
    let mut first = 0;
    for cue in cues {
        while first < source.len() && source[first].end <= cue.start {
            first += 1;
        }
        let mut text = Vec::new();
        let mut k = first;
        while k < source.len() && source[k].start < cue.end {
            text.push(source[k].text());
            k += 1;
        }
        out.push(text.join(" "));
    }
    out
}

/// Words for imported cues: each cue's lines split at whitespace, sharing the cue's time by
/// length, a manual line break after each line but the last and a manual cue break after the
/// cue, so the layout keeps the imported cues as they were.
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
        let mut pieces = super::align_text(&[], &text.join(" "), cue.start, cue.end.max(cue.start));
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
            last.break_after = Some(Break::Cue);
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

/// Standard base64 (RFC 4648, padding optional, no line breaks) to bytes.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes: Vec<u8> = s.bytes().filter(|&b| b != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let n = match chunk.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => return None,
        };
        out.extend_from_slice(&acc.to_be_bytes()[1..1 + n]);
    }
    Some(out)
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
fn splice_json(from: usize, remove: usize, insert: &str) -> String {
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

    fn words() -> Vec<Word> {
        vec![
            Word::new("one", Millis(0), Millis(400), 0),
            Word::new("two", Millis(500), Millis(900), 0),
            Word::new("three", Millis(1000), Millis(1500), 1),
        ]
    }

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

    proptest::proptest! {
        /// After an edit, the view built from the previous one (its layout brought up to date,
        /// QC over the changed cues only) is the view built from nothing, and every cue outside
        /// the range it reports as changed shows what it showed before.
        #[test]
        fn a_view_built_on_the_previous_one_equals_a_fresh_view(
            lens in proptest::collection::vec(1usize..9, 1..40),
            pauses in proptest::collection::vec(0i64..3000, 40),
            at in 0usize..400,
            op in 0u8..4,
            gap in 0u32..4,
        ) {
            let mut words = Vec::new();
            let mut t = 0;
            for (s, n) in lens.iter().enumerate() {
                for k in 0..*n {
                    let text = if k + 1 == *n { format!("end{s}.") } else { format!("word{k}") };
                    words.push(Word::new(text, Millis(t), Millis(t + 280), (s % 3 == 0) as u32));
                    t += 300;
                }
                t += pauses[s % pauses.len()];
            }
            let settings = cuecraft_engine::Settings {
                min_frames_between_subtitles: gap,
                ..Default::default()
            };
            let fr = cuecraft_engine::FrameRate::FPS_25;
            let key = ViewKey { settings: String::new(), frame_rate: (25, 1), source: None };
            let old = build_view(&words, &settings, fr, None, key.clone(), None);
            let at = 1 + at % (words.len().max(2) - 1).max(1);
            let mut edited = words.clone();
            let to = at.min(edited.len());
            let result = match op {
                0 => apply_op(&mut edited, &json!({"op": "split", "at": at}), Millis(40)),
                1 => apply_op(&mut edited, &json!({"op": "text", "from": at - 1, "to": to, "text": "a much longer replacement, with several words."}), Millis(40)),
                2 => apply_op(&mut edited, &json!({"op": "nudge", "from": at - 1, "to": to, "edge": "end", "frames": -1}), Millis(40)),
                _ => apply_op(&mut edited, &json!({"op": "text", "from": at - 1, "to": to, "text": "x"}), Millis(40)),
            };
            proptest::prop_assume!(result.is_ok());
            let fresh = build_view(&edited, &settings, fr, None, key.clone(), None);
            let built = build_view(&edited, &settings, fr, None, key, Some((old.clone(), &words[..])));
            proptest::prop_assert_eq!(&built.layout.cues, &fresh.layout.cues);
            // Outside the cues it names as changed, the view shows what the old one showed.
            let since = built.since.unwrap();
            proptest::prop_assert_eq!((since.base_cues, since.base_words), (old.layout.cues.len(), words.len()));
            let shown = |v: &View, k: usize| {
                let c = &v.layout.cues[k];
                (c.start, c.end, c.lines.clone(), c.words.clone(), v.warnings[k].clone())
            };
            for k in 0..since.from {
                proptest::prop_assert_eq!(shown(&built, k), shown(&old, k));
            }
            let tail = old.layout.cues.len() - since.from - since.remove;
            for k in 0..tail {
                let (a, b) = (built.layout.cues.len() - 1 - k, old.layout.cues.len() - 1 - k);
                proptest::prop_assert_eq!(shown(&built, a), shown(&old, b));
            }
            proptest::prop_assert_eq!(&built.warnings, &fresh.warnings);
            proptest::prop_assert_eq!(&built.counts, &fresh.counts);
            proptest::prop_assert_eq!((built.errors, built.warning_count), (fresh.errors, fresh.warning_count));
            proptest::prop_assert_eq!(&built.starts, &fresh.starts);
        }
    }

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
        assert_eq!(words[2].break_after, Some(Break::Cue));
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

    #[test]
    fn ranges_follow_rfc9110() {
        assert_eq!(parse_range("bytes=0-", 10), Some(Ok((0, 9))));
        assert_eq!(parse_range("bytes=2-4", 10), Some(Ok((2, 4))));
        assert_eq!(parse_range("bytes=-3", 10), Some(Ok((7, 9))));
        assert_eq!(parse_range("bytes=5-100", 10), Some(Ok((5, 9))));
        assert_eq!(parse_range("bytes=10-", 10), Some(Err(())));
        assert_eq!(parse_range("bytes=0-1,3-4", 10), None);
        assert_eq!(parse_range("items=0-1", 10), None);
    }

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
