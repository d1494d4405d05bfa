//! Speakers in the editor (issue 23 item 4): the project's speaker names
//! (`POST /editor/{id}/speakers`, stored with the job, not a revision) and the speaker operations
//! on the words (`apply`, called by `ops::apply_op`): set the speaker of a range of words (a cue
//! or the selected cues), of a turn (from a word to the next speaker change), and merge one
//! speaker into another. Every word whose speaker a person set is marked (`Word::speaker_set`).
//! `redetect` finds the speakers again from the media with a count the person gives (called by
//! `edit` for `{"op": "redetect"}`), keeping every word a person gave a speaker.

use std::sync::Arc;

use cuecraft_engine::Word;
use hyper::Response;
use serde_json::Value;

use crate::http::{App, Body};
use crate::media::Object;
use crate::pipeline::speakers::MAX_SPEAKERS;
use crate::pipeline::WorkDir;
use crate::store::SpeakerNames;
use crate::util::{is_id, now_ms};

use super::super::{check_csrf, db, require_session, WebError, WebRequest};
use super::view::editor_json;
use super::{body_json, check_id, json_bytes, usize_field, visible};

/// Speaker numbers the editor sets: 0 to 99 (as the API's `speaker`).
pub const MAX_SPEAKER: u32 = 99;
/// The longest speaker name, in characters.
pub const MAX_NAME_CHARS: usize = 60;

fn speaker_field(op: &Value, name: &str) -> Result<u32, WebError> {
    op.get(name)
        .and_then(Value::as_u64)
        .and_then(|s| u32::try_from(s).ok())
        .filter(|s| *s <= MAX_SPEAKER)
        .ok_or_else(|| WebError::BadRequest(format!("`{name}` must be 0 to {MAX_SPEAKER}.")))
}

/// Gives `words[range]` speaker `s`, marked as set by a person; `false` when every one of them
/// already had it (then nothing is touched, and the edit writes no revision).
fn set(words: &mut [Word], s: u32) -> bool {
    if words.iter().all(|w| w.speaker == s) {
        return false;
    }
    for w in words {
        w.speaker = s;
        w.speaker_set = true;
    }
    true
}

/// The speaker operations; the note for the history.
///
/// - `{"op": "speaker", "from", "to", "speaker"}`: the words `[from, to)` (a cue, or the selected
///   cues from the first's first word to the last's end). With `"everywhere": true` every word of
///   `words[from]`'s speaker instead (as `mergespeakers`).
/// - `{"op": "speakerturn", "at", "speaker"}`: from word `at` to the next speaker change (the
///   run of words after it with its speaker).
/// - `{"op": "mergespeakers", "speaker": a, "into": b}`: every word of speaker a becomes b's.
///
/// Words that already have the speaker asked for are left as they are; an operation that
/// changes no word is refused ("That changes nothing") and writes no revision.
pub fn apply(words: &mut [Word], op: &Value, kind: &str) -> Result<String, WebError> {
    let nothing = || WebError::BadRequest("That changes nothing.".into());
    match kind {
        "speaker" if op.get("everywhere").and_then(Value::as_bool) == Some(true) => {
            let from = usize_field(op, "from")?;
            let old = words
                .get(from)
                .map(|w| w.speaker)
                .ok_or_else(|| WebError::BadRequest("The cue's words are out of range.".into()))?;
            let into = speaker_field(op, "speaker")?;
            merge(words, old, into)
        }
        "speaker" => {
            let from = usize_field(op, "from")?;
            let to = usize_field(op, "to")?;
            if from >= to || to > words.len() {
                return Err(WebError::BadRequest(
                    "The cue's words are out of range.".into(),
                ));
            }
            let s = speaker_field(op, "speaker")?;
            if !set(&mut words[from..to], s) {
                return Err(nothing());
            }
            Ok(format!("Speaker {s} for {} words", to - from))
        }
        "speakerturn" => {
            let at = usize_field(op, "at")?;
            let s = speaker_field(op, "speaker")?;
            let old = words
                .get(at)
                .map(|w| w.speaker)
                .ok_or_else(|| WebError::BadRequest("There is no word there.".into()))?;
            let end = words[at..]
                .iter()
                .position(|w| w.speaker != old)
                .map_or(words.len(), |n| at + n);
            if !set(&mut words[at..end], s) {
                return Err(nothing());
            }
            Ok(format!(
                "Speaker {s} to the next speaker change ({} words)",
                end - at
            ))
        }
        "mergespeakers" => {
            let old = speaker_field(op, "speaker")?;
            let into = speaker_field(op, "into")?;
            merge(words, old, into)
        }
        _ => Err(WebError::BadRequest("Unknown operation.".into())),
    }
}

/// Every word of speaker `old` becomes `into`'s, marked as set by a person.
fn merge(words: &mut [Word], old: u32, into: u32) -> Result<String, WebError> {
    if old == into {
        return Err(WebError::BadRequest("That changes nothing.".into()));
    }
    let mut n = 0;
    for w in words.iter_mut().filter(|w| w.speaker == old) {
        w.speaker = into;
        w.speaker_set = true;
        n += 1;
    }
    if n == 0 {
        return Err(WebError::BadRequest(format!("Speaker {old} has no words.")));
    }
    Ok(format!(
        "Speaker {old} merged into speaker {into} ({n} words)"
    ))
}

/// `{"op": "redetect", "speakers": k}` (1 to 8): the speakers of `words` found again from the
/// job's media with `k` speakers, as the pipeline's diarization finds them but with the count
/// fixed. The original is read through the media store (a bucket's copy is downloaded into a work
/// directory of this process and removed after). Words a person gave a speaker keep it; the
/// others take the speaker of their voice's cluster, numbered by [`numbering`] so that a voice
/// keeps the number (and so the name) a person gave its words. The note for the history.
pub fn redetect(
    app: &App,
    job_id: &str,
    words: &mut [Word],
    op: &Value,
) -> Result<String, WebError> {
    let count = op
        .get("speakers")
        .and_then(Value::as_u64)
        .filter(|k| (1..=MAX_SPEAKERS as u64).contains(k))
        .ok_or_else(|| WebError::BadRequest(format!("`speakers` must be 1 to {MAX_SPEAKERS}.")))?
        as usize;
    if words.is_empty() {
        return Err(WebError::BadRequest("That changes nothing.".into()));
    }
    let mut raw: Vec<cuecraft_engine::RawWord> = words
        .iter()
        .map(|w| cuecraft_engine::RawWord {
            text: w.text.to_string(),
            start: w.start.0 as f64 / 1000.0,
            end: w.end.0 as f64 / 1000.0,
            speaker: 0,
        })
        .collect();
    if count > 1 {
        let work = WorkDir::claim(&app.config.data_dir.join("work"))
            .map_err(|e| WebError::Internal(format!("work directory: {e}")))?;
        let found = app
            .media
            .local_file(job_id, Object::Original, work.path())
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => WebError::BadRequest(
                    "The project's media are no longer stored: speakers cannot be detected again."
                        .into(),
                ),
                _ => WebError::Internal(format!("reading the media: {e}")),
            })
            .and_then(|media| {
                crate::pipeline::speakers::redetect(&media, &mut raw, count)
                    .map_err(|e| WebError::Internal(format!("detecting speakers: {e}")))
            });
        let dir = work.path().to_path_buf();
        drop(work);
        let _ = std::fs::remove_dir_all(dir);
        found?;
    }
    let labels: Vec<usize> = raw.iter().map(|w| w.speaker as usize).collect();
    let numbers = numbering(words, &labels);
    let mut kept = 0;
    for (w, l) in words.iter_mut().zip(&labels) {
        if w.speaker_set {
            kept += 1;
        } else {
            w.speaker = numbers[*l];
        }
    }
    let found: std::collections::BTreeSet<u32> = words.iter().map(|w| w.speaker).collect();
    let mut note = format!(
        "Speakers detected again: {} (asked for {count})",
        found.len()
    );
    if kept > 0 {
        note.push_str(&format!(
            ", {kept} word{} set by hand kept",
            if kept == 1 { "" } else { "s" }
        ));
    }
    Ok(note)
}

/// The speaker number of each cluster (`labels[i]` is word i's, numbered from 0): each cluster
/// takes the number its words have now where that is one-to-one — the words a person gave a
/// speaker count a thousand times, so a voice keeps the number (and name) a person gave it —
/// largest overlap first; the other clusters take the smallest numbers no cluster took and no
/// word set by hand keeps, in order of first appearance.
fn numbering(words: &[Word], labels: &[usize]) -> Vec<u32> {
    let k = labels.iter().max().map_or(0, |m| m + 1);
    let mut overlap: std::collections::BTreeMap<(usize, u32), u64> = Default::default();
    for (w, &l) in words.iter().zip(labels) {
        *overlap.entry((l, w.speaker)).or_default() += if w.speaker_set { 1000 } else { 1 };
    }
    let mut pairs: Vec<((usize, u32), u64)> = overlap.into_iter().collect();
    pairs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut number: Vec<Option<u32>> = vec![None; k];
    let mut taken: std::collections::BTreeSet<u32> = words
        .iter()
        .filter(|w| w.speaker_set)
        .map(|w| w.speaker)
        .collect();
    let mut given = std::collections::BTreeSet::new();
    for ((c, s), _) in pairs {
        if number[c].is_none() && given.insert(s) {
            number[c] = Some(s);
            taken.insert(s);
        }
    }
    let mut fresh = (0..).filter(|n| !taken.contains(n));
    let mut order: Vec<usize> = Vec::new();
    for &l in labels {
        if !order.contains(&l) {
            order.push(l);
        }
    }
    for c in order {
        if number[c].is_none() {
            number[c] = fresh.next();
        }
    }
    number.into_iter().map(|n| n.unwrap_or(0)).collect()
}

/// The names a request sets: `{"2": "Anna", ...}`, every speaker named 0 to 99, each name
/// trimmed, at most 60 characters and no control characters; an empty name takes it away.
fn parse_names(v: &Value) -> Result<SpeakerNames, WebError> {
    let Some(map) = v.as_object() else {
        return Err(WebError::BadRequest(
            "`names` must be an object of speaker numbers and names.".into(),
        ));
    };
    let mut out = SpeakerNames::new();
    for (k, v) in map {
        let n = k
            .parse::<u32>()
            .ok()
            .filter(|n| *n <= MAX_SPEAKER && k == &n.to_string())
            .ok_or_else(|| {
                WebError::BadRequest(format!("names.{k}: a speaker is 0 to {MAX_SPEAKER}."))
            })?;
        let name = v
            .as_str()
            .ok_or_else(|| WebError::BadRequest(format!("names.{k} must be text.")))?
            .trim();
        if name.chars().count() > MAX_NAME_CHARS {
            return Err(WebError::BadRequest(format!(
                "names.{k}: a name is at most {MAX_NAME_CHARS} characters."
            )));
        }
        if name.chars().any(char::is_control) {
            return Err(WebError::BadRequest(format!(
                "names.{k}: a name is one line of text."
            )));
        }
        if !name.is_empty() {
            out.insert(n, name.to_string());
        }
    }
    Ok(out)
}

/// POST /editor/{id}/speakers: `{names: {"2": "Anna"}}`, the names of the speakers it lists
/// (others keep theirs; an empty name takes one away). Answers the editor data. Names are the
/// project's, not a transcript's: no revision, and a name typed as it was changes nothing.
pub async fn speakers(
    app: &Arc<App>,
    req: &WebRequest,
    id: &str,
) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    check_csrf(req, &session)?;
    let body = body_json(req)?;
    let given = parse_names(body.get("names").unwrap_or(&Value::Null))?;
    let removed: Vec<u32> = body
        .get("names")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.parse::<u32>().ok())
        .filter(|k| !given.contains_key(k))
        .collect();
    let transcript = match body.get("transcript").and_then(Value::as_str) {
        Some(t) if is_id(t) => Some(t.to_string()),
        Some(_) => return Err(WebError::NotFound),
        None => None,
    };
    let jid = id.to_string();
    let app2 = app.clone();
    let value = db(app, move |c| {
        let job = visible(c, &session.member, &jid)?;
        let mut names = job.speaker_names.clone();
        for k in removed {
            names.remove(&k);
        }
        names.extend(given);
        if names != job.speaker_names {
            c.set_speaker_names(&jid, &names, now_ms())?;
        }
        let job = c.job(&jid)?.ok_or(WebError::NotFound)?;
        editor_json(&app2, c, &job, transcript.as_deref(), None, false)
    })
    .await?;
    Ok(json_bytes(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuecraft_engine::Millis;
    use serde_json::json;

    fn words(speakers: &[u32]) -> Vec<Word> {
        speakers
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let t = k as i64 * 500;
                Word::new(format!("w{k}"), Millis(t), Millis(t + 400), *s)
            })
            .collect()
    }

    fn speakers(w: &[Word]) -> Vec<(u32, bool)> {
        w.iter().map(|w| (w.speaker, w.speaker_set)).collect()
    }

    #[test]
    fn a_range_gets_the_speaker_marked_as_set_and_the_same_speaker_changes_nothing() {
        let mut w = words(&[0, 0, 1, 1]);
        apply(
            &mut w,
            &json!({"from": 1, "to": 3, "speaker": 2}),
            "speaker",
        )
        .expect("set");
        assert_eq!(speakers(&w), [(0, false), (2, true), (2, true), (1, false)]);
        let before = w.clone();
        let r = apply(
            &mut w,
            &json!({"from": 1, "to": 3, "speaker": 2}),
            "speaker",
        );
        assert!(matches!(r, Err(WebError::BadRequest(m)) if m == "That changes nothing."));
        assert_eq!(w, before);
        assert!(apply(
            &mut w,
            &json!({"from": 3, "to": 5, "speaker": 1}),
            "speaker"
        )
        .is_err());
        assert!(apply(
            &mut w,
            &json!({"from": 0, "to": 1, "speaker": 100}),
            "speaker"
        )
        .is_err());
    }

    #[test]
    fn a_turn_runs_from_the_word_to_the_next_speaker_change() {
        let mut w = words(&[0, 1, 1, 1, 0, 1]);
        apply(&mut w, &json!({"at": 2, "speaker": 3}), "speakerturn").expect("turn");
        assert_eq!(
            w.iter().map(|w| w.speaker).collect::<Vec<_>>(),
            [0, 1, 3, 3, 0, 1]
        );
        // The last turn runs to the end.
        apply(&mut w, &json!({"at": 5, "speaker": 0}), "speakerturn").expect("turn");
        assert_eq!(w[5].speaker, 0);
        assert!(apply(&mut w, &json!({"at": 2, "speaker": 3}), "speakerturn").is_err());
        assert!(apply(&mut w, &json!({"at": 6, "speaker": 3}), "speakerturn").is_err());
    }

    #[test]
    fn merging_moves_every_word_of_one_speaker_and_no_other() {
        let mut w = words(&[0, 1, 2, 1, 0]);
        apply(&mut w, &json!({"speaker": 1, "into": 0}), "mergespeakers").expect("merge");
        assert_eq!(
            speakers(&w),
            [(0, false), (0, true), (2, false), (0, true), (0, false)]
        );
        assert!(apply(&mut w, &json!({"speaker": 1, "into": 0}), "mergespeakers").is_err());
        assert!(apply(&mut w, &json!({"speaker": 2, "into": 2}), "mergespeakers").is_err());
        // The older form: every word of the cue's speaker.
        apply(
            &mut w,
            &json!({"from": 2, "to": 3, "speaker": 4, "everywhere": true}),
            "speaker",
        )
        .expect("everywhere");
        assert_eq!(
            w.iter().map(|w| w.speaker).collect::<Vec<_>>(),
            [0, 0, 4, 0, 0]
        );
    }

    #[test]
    fn a_detected_voice_keeps_the_number_a_person_gave_it_and_new_ones_take_free_numbers() {
        // Two voices found (clusters 0 and 1); word 1 was given speaker 5 by a person.
        let mut w = words(&[0, 5, 0, 1, 1, 0]);
        w[1].speaker_set = true;
        let labels = [0, 0, 0, 1, 1, 1];
        // Cluster 0 holds the hand-set word: it becomes 5; cluster 1 keeps 1 (its words' number).
        assert_eq!(numbering(&w, &labels), [5, 1]);
        // One voice: every word is speaker 5's.
        assert_eq!(numbering(&w, &[0; 6]), [5]);
        // Three clusters: the third's words were speaker 0's.
        assert_eq!(numbering(&w, &[0, 0, 0, 1, 2, 2]), [5, 1, 0]);
        let w = words(&[1, 1, 1, 1]);
        assert_eq!(numbering(&w, &[0, 1, 0, 2]), [1, 0, 2]);
    }

    #[test]
    fn names_are_numbers_to_one_line_of_text() {
        let n = parse_names(&json!({"2": "  Anna ", "0": "Ben", "5": ""})).expect("names");
        assert_eq!(
            n.into_iter().collect::<Vec<_>>(),
            [(0, "Ben".to_string()), (2, "Anna".to_string())]
        );
        for bad in [
            json!({"x": "A"}),
            json!({"100": "A"}),
            json!({"02": "A"}),
            json!({"1": 3}),
            json!({"1": "a\nb"}),
            json!({"1": "x".repeat(61)}),
            json!(["A"]),
        ] {
            assert!(parse_names(&bad).is_err(), "{bad}");
        }
    }
}
