//! The editor's data (GET /editor/{id}/data): a transcript's words laid out by the same
//! `engine::layout` as the API's downloads, each cue with the index range of the stored words it
//! shows, its labelled QC signals and (beside a clean version or translation) the original's text
//! over the same time. The view is kept in memory (`web::cache`) and brought up to date after an
//! edit, whose answer carries only the cues that changed.

use std::sync::Arc;

use cuecraft_engine::qc::{check, QcStyle, Rule};
use cuecraft_engine::{layout_with_shots, Break, Cue, FrameRate, Layout, Settings, Word};
use hyper::Response;
use serde_json::{json, Value};

use crate::api::results::{job_frame_rate, job_settings, job_shot_changes};
use crate::http::{App, Body};
use crate::store::JobRow;
use crate::util::rfc3339;
use crate::words::decode;

use super::super::cache::{self, Since, Stored, View, ViewKey};
use super::super::{db, require_session, WebError, WebRequest};
use super::media::proxy;
use super::{check_id, json_bytes, transcript_param, visible, LEAD_IN};

/// The words of a job's ready transcript at its current revision (the original when `transcript`
/// is `None`): kept in memory from an earlier request, else read and decoded.
pub(super) fn load_stored(
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
pub(super) fn signals(
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
pub(super) fn build_view(
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
            let layout = Layout::with_shots(words, settings, fr, &key.shots);
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
pub(super) fn view_key(
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
        shots: job_shot_changes(job).to_vec(),
        source: original.filter(|(id, _)| id != transcript_id),
    })
}

/// The original's cues a view under `key` shows beside its own (none beside the original): the
/// original's kept view, or its words laid out.
pub(super) fn source_cues(
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
        None => SourceCues::Laid(layout_with_shots(
            &sw.words,
            settings,
            job_frame_rate(job),
            job_shot_changes(job),
        )),
    }))
}

/// The original's cues beside a clean version or translation.
pub(super) enum SourceCues {
    Kept(Arc<View>),
    Laid(Vec<Cue>),
}

impl SourceCues {
    pub(super) fn cues(&self) -> &[Cue] {
        match self {
            SourceCues::Kept(v) => &v.layout.cues,
            SourceCues::Laid(c) => c,
        }
    }
}

/// The layout settings as the editor shows and sends them.
pub(super) fn settings_json(settings: &cuecraft_engine::Settings) -> Value {
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
pub(super) fn editor_json(
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
    // The pyramid's level sizes (made here once for a job from before it existed).
    let peak_levels = crate::media::peaks::ensure_levels(app.media.as_ref(), &job.id)
        .map_err(|e| WebError::Internal(format!("media store: {e}")))?;
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
            // Milliseconds of the first frame of each shot; the timeline draws them.
            "shotChanges": job_shot_changes(job).iter().map(|m| m.0).collect::<Vec<_>>(),
        },
        "media": media,
        "peaks": match peak_levels {
            Some(levels) => json!({
                "url": format!("/editor/{}/peaks", job.id),
                "perSecond": crate::media::PEAKS_PER_SECOND,
                "levels": levels,
                "factor": crate::media::peaks::FACTOR,
            }),
            None => Value::Null,
        },
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
    // Each with its revision: the page carries an edit of the original to the clean version
    // at the revision it names (`versions::carry`).
    let mut listed = Vec::with_capacity(list.len());
    for t in &list {
        let rev = c.transcript_head(&job.id, Some(&t.id))?.map(|h| h.1);
        listed.push(json!({"id": t.id, "kind": t.kind, "language": t.language, "label": t.label, "revision": rev}));
    }
    out["transcripts"] = Value::Array(listed);
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
    let this = list.iter().find(|t| t.id == transcript_id);
    let kind = this.map(|t| t.kind.clone()).unwrap_or_default();
    // Beside a translation: its cues whose source changed since (`versions`).
    let marks = match (&view.key.source, this) {
        (Some((sid, srev)), Some(t)) if t.kind == "translation" => {
            let spans: Vec<(i64, i64)> = view
                .layout
                .cues
                .iter()
                .map(|c| {
                    let s = c.words.first().map_or(c.start.0, |w| w.start.0);
                    (s, c.words.iter().map(|w| w.end.0).max().unwrap_or(s))
                })
                .collect();
            super::versions::marks(
                c,
                (sid, *srev),
                (&transcript_id, revision),
                t.created_at,
                &spans,
            )?
        }
        _ => Vec::new(),
    };
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
                        speaker: w.speaker,
                        set: w.speaker_set,
                        br: match w.break_after {
                            Some(Break::Line) => "line",
                            Some(Break::Cue) => "cue",
                            Some(Break::Join) => "join",
                            Some(Break::Timed) => "timed",
                            None => "",
                        },
                    }
                })
                .collect(),
            warnings: view.warnings.get(k).map(Vec::as_slice).unwrap_or_default(),
            source: view.sources.get(k).map(String::as_str),
            source_changed: marks.get(k).copied().unwrap_or(false),
        }
    };
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
    // The project's speaker names and the speakers the words have (number, word count).
    out["speakers"] = json!({
        "names": job.speaker_names.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "used": speakers_used(words).iter().map(|(s, n)| json!({"speaker": s, "words": n})).collect::<Vec<_>>(),
    });
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
pub(super) struct WordOut<'a> {
    i: usize,
    text: &'a str,
    start: i64,
    end: i64,
    /// The word's speaker; `set` when a person set it (re-detection keeps it).
    speaker: u32,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    set: bool,
    br: &'static str,
}

/// A cue as the editor receives it: the layout's cue, the range of stored words it shows, and its
/// warnings.
#[derive(serde::Serialize)]
pub(super) struct CueOut<'a> {
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
    /// A translation's cue whose source changed since the cue was made or last edited.
    #[serde(rename = "sourceChanged", skip_serializing_if = "std::ops::Not::not")]
    source_changed: bool,
}

/// The editor's data: the small fields as a JSON object, the cues serialized straight from the
/// layout (a 10-hour transcript has 100,000 words: no JSON tree is built for them). An edit's
/// answer may carry a `patch` instead of `cues`.
#[derive(serde::Serialize)]
pub(super) struct EditorData<'a> {
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
pub(super) struct Patch<'a> {
    from: usize,
    remove: usize,
    cues: Vec<CueOut<'a>>,
    word_delta: i64,
    cue_count: usize,
    /// The number of cues the patch applies to (the page checks it holds that many).
    base_cue_count: usize,
}

pub(super) fn to_bytes(data: &EditorData<'_>) -> Result<Vec<u8>, WebError> {
    serde_json::to_vec(data).map_err(|e| WebError::Internal(format!("editor data: {e}")))
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
        Rule::ShotChangeIn => "Starts near a shot change".into(),
        Rule::ShotChangeOut => "Hangs over a shot change".into(),
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

/// The speakers of `words` in number order, each with its word count (the editor's Speakers panel).
fn speakers_used(words: &[cuecraft_engine::Word]) -> Vec<(u32, usize)> {
    let mut counts = std::collections::BTreeMap::new();
    for w in words {
        *counts.entry(w.speaker).or_insert(0usize) += 1;
    }
    counts.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::editor::ops::apply_op;
    use cuecraft_engine::Millis;
    use serde_json::json;

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
            let key = ViewKey { settings: String::new(), frame_rate: (25, 1), shots: Vec::new(), source: None };
            let old = build_view(&words, &settings, fr, None, key.clone(), None);
            let at = 1 + at % (words.len().max(2) - 1).max(1);
            let mut edited = words.clone();
            let to = at.min(edited.len());
            let result = match op {
                0 => apply_op(&mut edited, &json!({"op": "split", "at": at})),
                1 => apply_op(&mut edited, &json!({"op": "text", "from": at - 1, "to": to, "text": "a much longer replacement, with several words."})),
                2 => {
                    // A word's end a frame earlier (what a nudge of a cue's end does to its words).
                    let w = &mut edited[to - 1];
                    w.end = Millis((w.end.0 - 40).max(w.start.0));
                    Ok(String::new())
                }
                _ => apply_op(&mut edited, &json!({"op": "text", "from": at - 1, "to": to, "text": "x"})),
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
}
