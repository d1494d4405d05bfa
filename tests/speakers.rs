//! Speakers through the real server (issue 23): a two-voice recording made with flite gives two
//! speakers on the cues, a blank line in the text transcript at each speaker change between cues
//! (after a dashed cue, where its second speaker hands over) and a dashed cue where both people
//! speak in one cue; silence and one-word media are ready,
//! never failed. The recognizer is a command plug-in that prints the words of the recording (their
//! times placed inside each spoken turn), with speaker 0 on every word, so the speakers come from
//! the service's own diarization of the real audio, in seconds rather than a Whisper run.
//! pocketsphinx's words (speaker 0 on every word) get their speakers the same way, and a
//! plug-in that names its own speakers keeps them. A stereo interview, one person per side, is
//! labelled by channel; the same people mixed onto both sides are not.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::common::{Org, Server};

/// Polling several times a second outruns the default 120 requests a minute.
const RATE: [&str; 2] = ["--rate-limit-per-minute", "100000"];

/// The plug-in: the words file for the job's language (`$2`), read next to the script.
const RECOGNIZER: &str = r#"#!/bin/sh
cat > /dev/null
cat "$(dirname "$0")/words-$2.json"
"#;

/// The conversation: (voice, text). Both people speak several seconds (a voice with less is taken
/// for a stray sound) and trade a quick question and a one-word answer.
const TURNS: [(&str, &str); 6] = [
    (
        "slt",
        "Good morning, and welcome to the programme. Today we are talking about the new railway \
         line across the valley.",
    ),
    (
        "rms",
        "Thank you for having me. The line opens next spring, and it will carry freight as well \
         as passengers.",
    ),
    ("slt", "Will it be ready on time?"),
    ("rms", "Yes."),
    ("slt", "And the cost?"),
    (
        "rms",
        "Lower than we feared. The tunnels were the hardest part, but the rock was kinder than \
         the surveys said.",
    ),
];

fn run(cmd: &mut Command) {
    let st = cmd.status().expect("flite, sox (scripts/setup)");
    assert!(st.success(), "{cmd:?}");
}

/// `text` in flite's `voice`, 16 kHz mono, trimmed to its speech; returns the file and seconds.
fn say(dir: &Path, k: usize, voice: &str, text: &str) -> (PathBuf, f64) {
    let raw = dir.join(format!("raw{k}.wav"));
    run(Command::new("flite")
        .args(["-voice", voice, "-t", text, "-o"])
        .arg(&raw));
    let wav = dir.join(format!("turn{k}.wav"));
    #[rustfmt::skip]
    run(Command::new("sox").arg(&raw).args(["-r", "16000", "-c", "1", "-b", "16"]).arg(&wav)
        .args(["silence", "1", "0.01", "-40d", "reverse", "silence", "1", "0.01", "-40d",
               "reverse"]));
    let out = Command::new("soxi")
        .arg("-D")
        .arg(&wav)
        .output()
        .expect("soxi");
    let secs: f64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("duration");
    (wav, secs)
}

/// Silence of `secs` seconds, 16 kHz mono.
fn silence(dir: &Path, name: &str, secs: f64) -> PathBuf {
    let wav = dir.join(format!("{name}.wav"));
    #[rustfmt::skip]
    run(Command::new("sox").args(["-n", "-r", "16000", "-c", "1", "-b", "16"]).arg(&wav)
        .args(["trim", "0", &format!("{secs}")]));
    wav
}

/// Words of a turn spoken from `start` for `secs`, each placed by its characters.
fn words_of(text: &str, start: f64, secs: f64) -> Vec<Value> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let total: usize = parts.iter().map(|w| w.len() + 1).sum();
    let mut at = start;
    parts
        .iter()
        .map(|w| {
            let d = secs * (w.len() + 1) as f64 / total as f64;
            let word = json!({"text": w, "start": at, "end": at + d * 0.9});
            at += d;
            word
        })
        .collect()
}

/// Writes the conversation's WAV into `dir` and its words as `words-en.json`; returns the WAV
/// and each word's true speaker (0 for the first voice).
fn conversation(dir: &Path) -> (PathBuf, Vec<u32>) {
    let r = recording(dir, ["slt", "rms"]);
    (r.mix, r.truth)
}

/// A recording of the conversation: the mix of both people, each person's own track (silence
/// while the other speaks), and each word's speaker (0 for the person who opens).
struct Recording {
    mix: PathBuf,
    tracks: [PathBuf; 2],
    truth: Vec<u32>,
}

/// [`TURNS`] spoken by two people in the flite `voices` given (the first for the turns of
/// `slt`, the second for those of `rms`), written into `dir` with the words as `words-en.json`.
fn recording(dir: &Path, voices: [&str; 2]) -> Recording {
    let gap = 0.3;
    let pause = silence(dir, "gap", gap);
    let lead = silence(dir, "lead", 0.5);
    let mut parts = vec![lead.clone()];
    let mut tracks = [vec![lead.clone()], vec![lead]];
    let (mut words, mut truth) = (Vec::new(), Vec::new());
    let mut t = 0.5;
    for (k, (voice, text)) in TURNS.iter().enumerate() {
        let person = usize::from(*voice == "rms");
        let (wav, secs) = say(dir, k, voices[person], text);
        let w = words_of(text, t, secs);
        truth.extend(std::iter::repeat_n(person as u32, w.len()));
        words.extend(w);
        tracks[1 - person].push(silence(dir, &format!("quiet{k}"), secs));
        tracks[person].push(wav.clone());
        parts.push(wav);
        parts.push(pause.clone());
        tracks.iter_mut().for_each(|t| t.push(pause.clone()));
        t += secs + gap;
    }
    let mix = dir.join("conversation.wav");
    run(Command::new("sox").args(&parts).arg(&mix));
    let tracks = [0, 1].map(|p| {
        let out = dir.join(format!("person{p}.wav"));
        run(Command::new("sox").args(&tracks[p]).arg(&out));
        out
    });
    let recognized = json!({"language": "en", "words": words});
    std::fs::write(dir.join("words-en.json"), recognized.to_string()).expect("words");
    Recording { mix, tracks, truth }
}

/// Creates a job for `media` in `language`, uploads it and waits until it is ready or failed.
fn job(server: &Server, org: &Org, media: &Path, language: &str) -> Value {
    let data = std::fs::read(media).expect("media");
    let secs = cuecraft_host::media::probe(media)
        .expect("probe")
        .duration_seconds;
    let created = server.create_job(
        &org.key,
        &json!({
            "filename": "talk.wav",
            "contentType": "audio/wav",
            "sizeBytes": data.len(),
            "durationSeconds": secs.ceil(),
            "settings": {"language": language},
        }),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    let up = server.upload(&created, &data);
    assert_eq!(up.status, 200, "{}", up.text());
    let id = created["id"].as_str().expect("id").to_string();
    server.wait_for(&org.key, &id, &["ready", "failed"])
}

/// [`job`], asserted ready: its id.
fn ready_job(server: &Server, org: &Org, media: &Path, language: &str) -> String {
    let job = job(server, org, media, language);
    assert_eq!(job["status"], "ready", "{job}\n{}", server.log());
    job["id"].as_str().expect("id").to_string()
}

fn server_in(tmp: tempfile::TempDir) -> Server {
    server_running(tmp, RECOGNIZER)
}

/// A server whose recognizer is the plug-in `script`, written into `tmp`.
fn server_running(tmp: tempfile::TempDir, plug_in: &str) -> Server {
    let script = tmp.path().join("recognizer.sh");
    std::fs::write(&script, plug_in).expect("script");
    run(Command::new("chmod").arg("+x").arg(&script));
    let args: Vec<String> = [
        "--recognizer",
        &format!("command:{}", script.display()),
        "--workers",
        "1",
        RATE[0],
        RATE[1],
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Server::start_in(tmp, &args, &[])
}

#[test]
fn two_voices_give_two_speakers_blank_lines_and_a_dashed_cue() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (media, truth) = conversation(tmp.path());
    let server = server_in(tmp);
    let org = server.org(100_000, &[]);
    let job = job(&server, &org, &media, "en");
    assert_eq!(job["status"], "ready", "{job}\n{}", server.log());
    let id = job["id"].as_str().expect("id");

    let body = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
        .json();
    let cues = body["cues"].as_array().expect("cues");
    // Every word's speaker, read from the cues: a cue's words are its speaker's, except in a
    // dashed two-speaker cue, whose second line is the other speaker's (its words counted on the
    // first line, one per space-separated piece).
    let mut labels = Vec::new();
    let mut dashed = 0;
    for c in cues {
        let lines: Vec<&str> = c["lines"]
            .as_array()
            .expect("lines")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let n = c["words"].as_array().expect("words").len();
        let speaker = c["speaker"].as_u64().expect("speaker") as u32;
        if lines.len() == 2 && lines.iter().all(|l| l.starts_with('\u{2014}')) {
            dashed += 1;
            let first = lines[0].split_whitespace().count();
            // Two voices here: the second line is the other one's.
            let other = 1 - speaker.min(1);
            labels.extend(std::iter::repeat_n(speaker, first));
            labels.extend(std::iter::repeat_n(other, n - first));
        } else {
            labels.extend(std::iter::repeat_n(speaker, n));
        }
    }
    assert_eq!(labels.len(), truth.len(), "{body}");
    // The voices are found up to their numbering, which is by first appearance: the first
    // voice is speaker 0. Every word is right (a word cut between two turns at most).
    let wrong = labels.iter().zip(&truth).filter(|(a, b)| a != b).count();
    assert!(
        wrong <= 1,
        "{wrong} of {} words on the wrong speaker\n{body}",
        truth.len()
    );
    let speakers: std::collections::BTreeSet<_> =
        cues.iter().map(|c| c["speaker"].as_u64()).collect();
    assert_eq!(speakers.len(), 2, "{body}");
    // "Yes." is too short for a cue of its own: it shares one with the question, dashed.
    assert!(dashed >= 1, "no dashed cue\n{body}");

    // The text transcript: one cue a line, a blank line where the speaker changes from the end
    // of one cue to the start of the next (inside a dashed cue its dashes show the change).
    let text = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"))
        .text();
    // Who speaks last in each cue: in a dashed cue the second line's speaker.
    let last: Vec<u64> = cues
        .iter()
        .map(|c| {
            let s = c["speaker"].as_u64().unwrap_or(0);
            let lines = c["lines"].as_array().map_or(0, Vec::len);
            let dashed = lines == 2
                && c["lines"].as_array().is_some_and(|l| {
                    l.iter()
                        .all(|x| x.as_str().is_some_and(|x| x.starts_with('\u{2014}')))
                });
            if dashed {
                1 - s.min(1)
            } else {
                s
            }
        })
        .collect();
    let changes = cues
        .iter()
        .skip(1)
        .zip(&last)
        .filter(|(next, before)| next["speaker"].as_u64() != Some(**before))
        .count();
    assert!(changes >= 2, "{body}");
    assert_eq!(text.matches("\n\n").count(), changes, "{text}");
    let first_turn = text.split("\n\n").next().unwrap_or("");
    assert!(
        first_turn.contains("valley.") && !first_turn.contains("Thank you"),
        "{text}"
    );

    // The clean version (issue 23 item 3) keeps every cue's speaker: nothing here is a filler,
    // so its cues are the original's, speakers, dashes and words alike.
    let clean = job["transcripts"]
        .as_array()
        .and_then(|l| l.iter().find(|t| t["kind"] == "clean"))
        .and_then(|t| t["id"].as_str())
        .unwrap_or_else(|| panic!("no clean version in {job}"))
        .to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let cleaned = loop {
        let r = server.get(
            &org.key,
            &format!("/v1/jobs/{id}/transcript?transcriptId={clean}"),
        );
        if r.status == 200 {
            break r.json();
        }
        assert_eq!(r.code(), "transcript_not_ready", "{}", r.text());
        assert!(
            std::time::Instant::now() < deadline,
            "clean version never ready"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let shape = |cues: &[Value]| -> Vec<(Value, Value, usize)> {
        cues.iter()
            .map(|c| {
                let words = c["words"].as_array().map_or(0, Vec::len);
                (c["speaker"].clone(), c["lines"].clone(), words)
            })
            .collect()
    };
    let clean_cues = cleaned["cues"].as_array().expect("clean cues");
    assert_eq!(shape(clean_cues), shape(cues), "{cleaned}");
}

#[test]
fn silence_and_one_word_are_ready_never_failed() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // Silence with a word the recognizer made up (as Whisper does on silence).
    let quiet = silence(tmp.path(), "quiet", 4.0);
    let made_up = json!({"language": "en", "words": [{"text": "You.", "start": 1.0, "end": 1.4}]});
    std::fs::write(tmp.path().join("words-fr.json"), made_up.to_string()).expect("words");
    // One word, spoken.
    let (hello, secs) = say(tmp.path(), 0, "slt", "Hello.");
    let one = json!({"language": "en", "words": [{"text": "Hello.", "start": 0.0, "end": secs}]});
    std::fs::write(tmp.path().join("words-de.json"), one.to_string()).expect("words");
    // Nothing at all.
    std::fs::write(
        tmp.path().join("words-nl.json"),
        json!({"language": "en", "words": []}).to_string(),
    )
    .expect("words");
    let server = server_in(tmp);
    let org = server.org(100_000, &[]);
    for (media, language, cues) in [(&quiet, "fr", 1), (&hello, "de", 1), (&quiet, "nl", 0)] {
        let job = job(&server, &org, media, language);
        assert_eq!(
            job["status"],
            "ready",
            "{language}: {job}\n{}",
            server.log()
        );
        let id = job["id"].as_str().expect("id");
        let body = server
            .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
            .json();
        let got = body["cues"].as_array().expect("cues");
        assert_eq!(got.len(), cues, "{language}: {body}");
        assert!(got.iter().all(|c| c["speaker"] == 0), "{language}: {body}");
    }
}

/// A plug-in that empties the WAV it was given once it has read it (as a full disk or a temporary
/// directory's cleaner would), then prints the words: the diarization, which reads that WAV after
/// the recognizer, cannot.
const EMPTIES_THE_WAV: &str = r#"#!/bin/sh
cat > /dev/null
: > "$1"
cat "$(dirname "$0")/words-$2.json"
"#;

/// Issue 23 item 6: a failure inside the diarization keeps every word with speaker 0, says so in
/// the log and never fails the job. The two-voice conversation (two speakers when the WAV can be
/// read: two_voices_give_two_speakers_blank_lines_and_a_dashed_cue) with a WAV the diarization
/// cannot read.
#[test]
fn a_diarization_failure_keeps_the_words_with_speaker_0_and_the_job_ready() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (media, truth) = conversation(tmp.path());
    let server = server_running(tmp, EMPTIES_THE_WAV);
    let org = server.org(100_000, &[]);
    let id = &ready_job(&server, &org, &media, "en");
    let body = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
        .json();
    let cues = body["cues"].as_array().expect("cues");
    let words: usize = cues
        .iter()
        .map(|c| c["words"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(words, truth.len(), "every word kept: {body}");
    assert!(cues.iter().all(|c| c["speaker"] == 0), "{body}");
    let log = server.log();
    let warning = log
        .lines()
        .find(|l| l.contains("speakers not found, all words are speaker 0"))
        .unwrap_or_else(|| panic!("no warning in the log:\n{log}"));
    assert!(
        warning.contains("WARN") && warning.contains(id),
        "{warning}"
    );
}

/// The editor's words of a ready job replaced by `words` (stored form), before the editor has
/// read them.
fn store_words(server: &Server, id: &str, words: &[Value]) {
    let list = Value::Array(words.to_vec()).to_string();
    let original =
        format!("SELECT id FROM transcripts WHERE job_id = '{id}' AND kind = 'original'");
    server.sql(&format!(
        "DELETE FROM word_pages WHERE transcript_id IN ({original});
         INSERT INTO word_pages (transcript_id, page, n, words)
         SELECT id, 0, {}, '{}' FROM transcripts WHERE id IN ({original})",
        words.len(),
        &list[1..list.len() - 1]
    ));
}

/// Speakers in the editor (issue 23 item 4): set the speaker of a cue, of several cues and of a
/// turn, merge two speakers, name them. Each operation is one revision whose other cues the API
/// serves byte for byte as before; one that changes nothing is refused and writes no revision; a
/// speaker a person set is marked on its words; undo brings the speakers back; names are the
/// project's (no revision) and, as docs/decisions/formats.md decides, reach no file: the
/// editor's downloads stay equal to the API's.
#[test]
fn the_editor_sets_merges_and_names_speakers_one_revision_each() {
    use crate::web::{ready_job, Web};
    let server = Server::start(&RATE);
    let org = server.org(10_000, &[]);
    let id = ready_job(&server, &org.key, "panel", &server.tone(12), "audio/wav");
    // Six sentences of four words, speakers 0 1 1 0 2 0, 600 ms between sentences: a cue each.
    let turns = [0, 1, 1, 0, 2, 0];
    let mut words = Vec::new();
    let mut t = 0;
    for (s, p) in turns.iter().enumerate() {
        for k in 0..4 {
            let text = if k == 3 {
                format!("end{s}.")
            } else {
                format!("word{k}")
            };
            words.push(json!({"t": text, "s": t, "e": t + 300, "p": p}));
            t += 350;
        }
        t += 600;
    }
    store_words(&server, &id, &words);
    let web = Web::sign_in(&server, &org.owner);
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    let cues = data["cues"].as_array().expect("cues").clone();
    assert_eq!(cues.len(), 6, "{data}");
    let range = |k: usize| (cues[k]["from"].clone(), cues[k]["to"].clone());
    let api_cues = || -> Vec<String> {
        let r = server.get(&org.key, &format!("/v1/jobs/{id}/transcript"));
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()["cues"]
            .as_array()
            .expect("cues")
            .iter()
            .map(Value::to_string)
            .collect()
    };
    let speakers = |cues: &[String]| -> Vec<u64> {
        cues.iter()
            .map(|c| {
                serde_json::from_str::<Value>(c).expect("cue")["speaker"]
                    .as_u64()
                    .unwrap_or(99)
            })
            .collect()
    };
    let revisions = || {
        web.get_json(&format!("/editor/{id}/revisions")).json()["revisions"]
            .as_array()
            .map_or(0, |r| r.len())
    };
    let rev = std::cell::Cell::new(0i64);
    // One operation: 200, one revision more, and only the cues in `changed` differ at the API.
    let edit = |op: Value, changed: &[usize]| -> Value {
        let before = api_cues();
        let old = rev.get();
        let mut body = op;
        body["revision"] = json!(rev.get());
        let r = web.post_json(&format!("/editor/{id}/edit"), &body);
        assert_eq!(r.status, 200, "{body}: {}", r.text());
        let d = r.json();
        rev.set(d["transcript"]["revision"].as_i64().expect("revision"));
        assert_eq!(rev.get(), old + 1, "{body}: one revision");
        let after = api_cues();
        assert_eq!(after.len(), before.len(), "{body}");
        for k in 0..before.len() {
            if changed.contains(&k) {
                assert_ne!(after[k], before[k], "{body}: cue {k} should change");
            } else {
                assert_eq!(
                    after[k], before[k],
                    "{body}: cue {k} untouched, byte for byte"
                );
            }
        }
        d
    };
    // A cue.
    let (from, to) = range(1);
    let d = edit(
        json!({"op": "speaker", "from": from, "to": to, "speaker": 3}),
        &[1],
    );
    assert_eq!(speakers(&api_cues()), [0, 3, 1, 0, 2, 0]);
    // Its words are marked as set by a person; the other cues' words are not.
    let marked = |d: &Value, k: usize| -> Vec<bool> {
        d["cues"][k]["words"]
            .as_array()
            .expect("words")
            .iter()
            .map(|w| w["set"] == true)
            .collect()
    };
    let full = web.get_json(&format!("/editor/{id}/data")).json();
    assert_eq!(marked(&full, 1), [true; 4]);
    assert_eq!(marked(&full, 2), [false; 4]);
    assert_eq!(d["transcript"]["revision"], 1);
    // The same again changes nothing: refused, and no revision.
    let n = revisions();
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": rev.get(), "op": "speaker", "from": from, "to": to, "speaker": 3}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"], "That changes nothing.");
    assert_eq!(revisions(), n);
    // Two cues at once (the selection of cues 3 and 4).
    let (from, _) = range(3);
    let (_, to) = range(4);
    edit(
        json!({"op": "speaker", "from": from, "to": to, "speaker": 1}),
        &[3, 4],
    );
    assert_eq!(speakers(&api_cues()), [0, 3, 1, 1, 1, 0]);
    // A turn: from cue 2's first word to the next speaker change runs over cues 2, 3 and 4.
    let (at, _) = range(2);
    edit(
        json!({"op": "speakerturn", "at": at, "speaker": 4}),
        &[2, 3, 4],
    );
    assert_eq!(speakers(&api_cues()), [0, 3, 4, 4, 4, 0]);
    // Merge speaker 4 into 3: every word of it, one revision.
    edit(
        json!({"op": "mergespeakers", "speaker": 4, "into": 3}),
        &[2, 3, 4],
    );
    assert_eq!(speakers(&api_cues()), [0, 3, 3, 3, 3, 0]);
    let n = revisions();
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": rev.get(), "op": "mergespeakers", "speaker": 4, "into": 3}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        revisions(),
        n,
        "merging a speaker without words writes no revision"
    );
    // Undo brings the speakers of before the merge back.
    let r = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": rev.get(), "restore": rev.get() - 1, "note": "undo"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    rev.set(
        r.json()["transcript"]["revision"]
            .as_i64()
            .expect("revision"),
    );
    assert_eq!(speakers(&api_cues()), [0, 3, 4, 4, 4, 0]);
    // Names: the project's, no revision; the data lists every speaker the words have.
    let downloads = |w: &Web| -> Vec<(Vec<u8>, Vec<u8>)> {
        ["srt", "vtt", "ttml", "ass", "ebu-stl"]
            .iter()
            .map(|f| {
                let api = server.get(&org.key, &format!("/v1/jobs/{id}/subtitles?format={f}"));
                let ed = w.get(&format!("/editor/{id}/download?format={f}"));
                assert_eq!(api.status, 200, "{f}: {}", api.text());
                assert_eq!(ed.status, 200, "{f}: {}", ed.text());
                (api.body, ed.body)
            })
            .chain(std::iter::once({
                let t = server.get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"));
                (t.body.clone(), t.body)
            }))
            .collect()
    };
    let before = downloads(&web);
    let n = revisions();
    let updated =
        |w: &Web| w.get_json(&format!("/editor/{id}/data")).json()["job"]["updatedAt"].clone();
    let was = updated(&web);
    let r = web.post_json(
        &format!("/editor/{id}/speakers"),
        &json!({"revision": rev.get(), "names": {"3": " Anna ", "4": "Ben"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let d = r.json();
    assert_eq!(d["speakers"]["names"], json!({"3": "Anna", "4": "Ben"}));
    assert_eq!(
        d["speakers"]["used"],
        json!([{"speaker": 0, "words": 8}, {"speaker": 3, "words": 4}, {"speaker": 4, "words": 12}])
    );
    assert_eq!(revisions(), n, "a name is no revision");
    assert_ne!(updated(&web), was, "a name moves the project's updatedAt");
    // A name taken away, one kept; nonsense refused.
    let r = web.post_json(
        &format!("/editor/{id}/speakers"),
        &json!({"names": {"4": ""}}),
    );
    assert_eq!(r.json()["speakers"]["names"], json!({"3": "Anna"}));
    for bad in [
        json!({"names": {"x": "A"}}),
        json!({"names": {"1": "a\nb"}}),
        json!({"names": 3}),
    ] {
        let r = web.post_json(&format!("/editor/{id}/speakers"), &bad);
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
    }
    // Names reach no file yet: every download as before, and the editor's equal to the API's.
    let after = downloads(&web);
    for ((api, ed), (api0, _)) in after.iter().zip(&before) {
        assert!(
            api == ed,
            "the editor's download equals the API's byte for byte"
        );
        assert!(api == api0, "names change no file");
    }
}

/// Every word of the editor's data: (index, speaker, set by a person).
fn editor_words(data: &Value) -> Vec<(u64, u64, bool)> {
    data["cues"]
        .as_array()
        .expect("cues")
        .iter()
        .flat_map(|c| c["words"].as_array().expect("words").clone())
        .map(|w| {
            (
                w["i"].as_u64().expect("i"),
                w["speaker"].as_u64().expect("speaker"),
                w["set"] == true,
            )
        })
        .collect()
}

/// "Detect speakers again" in the editor (issue 23 item 4): on the two-voice conversation, a
/// person gives one of the second voice's cues speaker 7; detecting again with 2 speakers finds
/// the two voices (the second voice's words all take the 7 the person gave it, the first's keep
/// their 0), with 1 every word is one speaker; the words set by hand keep speaker 7 and their
/// mark each time, each detection is one revision, and undo brings the speakers back. The media
/// are read through the media store (a bucket's copy under CUECRAFT_TEST_MEDIA=s3).
#[test]
fn detecting_speakers_again_takes_the_count_asked_and_keeps_what_a_person_set() {
    use crate::web::Web;
    let tmp = tempfile::tempdir().expect("temp dir");
    let (media, truth) = conversation(tmp.path());
    let server = server_in(tmp);
    let org = server.org(100_000, &[]);
    let id = &ready_job(&server, &org, &media, "en");
    let web = Web::sign_in(&server, &org.owner);
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    assert_eq!(
        data["speakers"]["used"].as_array().map(Vec::len),
        Some(2),
        "{}",
        data["speakers"]
    );
    // A cue of the second voice only, given speaker 7 by hand.
    let cue = data["cues"]
        .as_array()
        .expect("cues")
        .iter()
        .find(|c| {
            let (from, to) = (
                c["from"].as_u64().unwrap_or(0),
                c["to"].as_u64().unwrap_or(0),
            );
            (from..to).all(|i| truth.get(i as usize) == Some(&1))
        })
        .expect("a cue of the second voice")
        .clone();
    let (from, to) = (
        cue["from"].as_u64().expect("from"),
        cue["to"].as_u64().expect("to"),
    );
    // An edit, then the editor's whole data (an edit answers only what changed).
    let post = |body: Value| -> Value {
        let r = web.post_json(&format!("/editor/{id}/edit"), &body);
        assert_eq!(r.status, 200, "{body}: {}\n{}", r.text(), server.log());
        web.get_json(&format!("/editor/{id}/data")).json()
    };
    let d = post(json!({"revision": 0, "op": "speaker", "from": from, "to": to, "speaker": 7}));
    let hand = |d: &Value| -> Vec<(u64, u64, bool)> {
        editor_words(d)
            .into_iter()
            .filter(|w| (from..to).contains(&w.0))
            .collect()
    };
    assert!(hand(&d).iter().all(|w| w.1 == 7 && w.2), "{:?}", hand(&d));

    // Two speakers: the two voices, the hand-set words' 7 for the second.
    let d = post(json!({"revision": 1, "op": "redetect", "speakers": 2}));
    assert_eq!(d["transcript"]["revision"], 2, "one revision");
    let words = editor_words(&d);
    assert_eq!(words.len(), truth.len());
    let right = words
        .iter()
        .filter(|w| w.1 == [0, 7][truth[w.0 as usize] as usize])
        .count();
    assert!(
        right + 2 >= truth.len(),
        "{right} of {} words of the right voice: {words:?}",
        truth.len()
    );
    let used = |d: &Value| -> Vec<u64> {
        d["speakers"]["used"]
            .as_array()
            .expect("used")
            .iter()
            .map(|u| u["speaker"].as_u64().expect("speaker"))
            .collect()
    };
    assert_eq!(used(&d), [0, 7], "{}", d["speakers"]);
    assert!(hand(&d).iter().all(|w| w.1 == 7 && w.2), "{:?}", hand(&d));
    // Only the hand-set words are marked: the detected ones are not a person's.
    assert!(words.iter().all(|w| w.2 == (from..to).contains(&w.0)));
    let api: Vec<Value> = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
        .json()["cues"]
        .as_array()
        .expect("cues")
        .iter()
        .map(|c| c["speaker"].clone())
        .collect();
    assert!(
        api.contains(&json!(0)) && api.contains(&json!(7)),
        "{api:?}"
    );

    // One speaker: every word the hand-set words' 7.
    let d = post(json!({"revision": 2, "op": "redetect", "speakers": 1}));
    assert_eq!(d["transcript"]["revision"], 3, "one revision");
    assert_eq!(used(&d), [7], "{}", d["speakers"]);
    assert!(hand(&d).iter().all(|w| w.1 == 7 && w.2), "{:?}", hand(&d));

    // Undo brings the two speakers back.
    let r = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": 3, "restore": 2, "note": "undo"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        used(&web.get_json(&format!("/editor/{id}/data")).json()),
        [0, 7]
    );

    // A count outside 1 to 8 is refused and writes no revision.
    for bad in [json!(0), json!(9), json!("2")] {
        let r = web.post_json(
            &format!("/editor/{id}/edit"),
            &json!({"revision": 4, "op": "redetect", "speakers": bad}),
        );
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
    }
    let d = web.get_json(&format!("/editor/{id}/data")).json();
    assert_eq!(d["transcript"]["revision"], 4);
}

/// Runs sox with `args`.
fn sox(args: &[&str]) {
    run(Command::new("sox").args(args));
}

/// The song's lyric lines: when each starts (s) and its words.
const SONG_LINES: [(f64, &str); 5] = [
    (1.5, "Walking down the river in the morning light"),
    (6.0, "Every little window has a story to tell"),
    (12.5, "Hold on, hold on, the summer will be ours"),
    (16.5, "Oh the night is young and we are singing along"),
    (20.5, "Walking down the river, walking home again"),
];

/// A song of 24 s in `dir` (issue 23 item 6) whose accompaniment changes half-way, as songs do: a
/// verse (0-12 s) over a quiet noise hi-hat on every quarter of a second, then a chorus (12-24 s)
/// over loud plucked chords (C, Am, F, G, a second each) with the hi-hat; five lyric lines in one
/// voice (flite's `rms`), two in the verse and three in the chorus, each line's words placed in
/// it. Writes the words as `words-{language}.json`; returns the song.
fn song(dir: &Path, language: &str) -> PathBuf {
    let p = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let r = ["-r", "16000", "-b", "16"];
    let mut chords = Vec::new();
    for (k, notes) in [
        ["C3", "E3", "G3"],
        ["A2", "C3", "E3"],
        ["F2", "A2", "C3"],
        ["G2", "B2", "D3"],
    ]
    .iter()
    .enumerate()
    {
        let three = p(&format!("chord{k}-3.wav"));
        #[rustfmt::skip]
        sox(&["-n", r[0], r[1], r[2], r[3], "-c", "3", &three, "synth", "1",
              "pluck", notes[0], "pluck", notes[1], "pluck", notes[2]]);
        let one = p(&format!("chord{k}.wav"));
        sox(&[&three, "-c", "1", &one, "gain", "-3"]);
        chords.push(one);
    }
    let bar = p("bar.wav");
    let mut args: Vec<&str> = chords.iter().map(String::as_str).collect();
    args.push(&bar);
    sox(&args);
    // Three bars of chords: the chorus's 12 s.
    let chords = p("chords.wav");
    sox(&[&bar, &bar, &bar, &chords]);
    let hat = p("hat.wav");
    #[rustfmt::skip]
    sox(&["-n", r[0], r[1], r[2], r[3], "-c", "1", &hat, "synth", "0.04", "whitenoise",
          "highpass", "6000", "fade", "0", "0.04", "0.035", "pad", "0", "0.21", "repeat", "47"]);
    let verse = p("verse.wav");
    sox(&[&hat, &verse, "vol", "0.3"]);
    let chorus = p("chorus.wav");
    sox(&["-m", &chords, "-v", "0.5", &hat, &chorus]);
    let music = p("music.wav");
    sox(&[&verse, &chorus, &music]);
    let mut parts = Vec::new();
    let mut words = Vec::new();
    for (k, (start, text)) in SONG_LINES.iter().enumerate() {
        let (wav, secs) = say(dir, 100 + k, "rms", text);
        words.extend(words_of(text, *start, secs));
        let placed = p(&format!("line{k}.wav"));
        sox(&[
            &wav.to_string_lossy(),
            &placed,
            "pad",
            &format!("{start}"),
            "0",
        ]);
        parts.push(placed);
    }
    let voice = p("voice.wav");
    let mut args = vec!["-m"];
    args.extend(parts.iter().map(String::as_str));
    args.push(&voice);
    sox(&args);
    // The voice at the level of its lines, the accompaniment at half its own.
    let out = dir.join(format!("song-{language}.wav"));
    #[rustfmt::skip]
    sox(&["-m", "-v", "1", &voice, "-v", "0.5", &music, &out.to_string_lossy(),
          "trim", "0", "24"]);
    let recognized = json!({"language": "en", "words": words});
    std::fs::write(
        dir.join(format!("words-{language}.json")),
        recognized.to_string(),
    )
    .expect("words");
    out
}

/// Music (issue 23 item 6): a song, one voice singing over an accompaniment that changes from
/// verse to chorus, is one speaker, never two (the accompaniment's change is not a second voice),
/// and the job is ready with every word sung, in order.
#[test]
fn a_song_is_one_speaker_and_ready_with_its_words() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let media = song(tmp.path(), "en");
    let server = server_in(tmp);
    let org = server.org(100_000, &[]);
    let id = &ready_job(&server, &org, &media, "en");
    let body = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
        .json();
    let cues = body["cues"].as_array().expect("cues");
    assert!(cues.len() >= 5, "{body}");
    assert!(cues.iter().all(|c| c["speaker"] == 0), "{body}");
    let text = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"))
        .text();
    // Sentences from pauses give the words capitals and punctuation: compare the words alone.
    let tokens = |s: &str| -> Vec<String> {
        s.split_whitespace()
            .map(|w| {
                w.chars()
                    .filter(|c| c.is_alphanumeric())
                    .collect::<String>()
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect()
    };
    assert_eq!(
        tokens(&text),
        tokens(&SONG_LINES.map(|(_, l)| l).join(" ")),
        "{text}"
    );
    assert!(!text.contains("\n\n"), "no speaker break: {text}");
}

/// Each cue's speaker, in order.
fn cue_speakers(server: &Server, org: &Org, id: &str) -> (Vec<u64>, Value) {
    let body = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
        .json();
    let speakers = body["cues"]
        .as_array()
        .expect("cues")
        .iter()
        .map(|c| c["speaker"].as_u64().expect("speaker"))
        .collect();
    (speakers, body)
}

#[test]
fn pocketsphinx_words_get_speakers_from_the_service() {
    // pocketsphinx gives every word speaker 0: the two voices come from the diarization.
    let tmp = tempfile::tempdir().expect("temp dir");
    let (media, _) = conversation(tmp.path());
    let server = Server::start_default_recognizer(&[
        "--recognizer",
        "pocketsphinx",
        "--workers",
        "1",
        RATE[0],
        RATE[1],
    ]);
    let org = server.org(100_000, &[]);
    let id = ready_job(&server, &org, &media, "en");
    let (speakers, body) = cue_speakers(&server, &org, &id);
    let found: std::collections::BTreeSet<_> = speakers.iter().collect();
    assert_eq!(found.len(), 2, "{body}");
    // The host opens (speaker 0) and the guest's long answer closes the recording.
    assert_eq!(speakers.first(), Some(&0), "{body}");
    assert_eq!(speakers.last(), Some(&1), "{body}");
}

#[test]
fn a_plug_ins_own_speakers_are_kept() {
    // The plug-in names three speakers (sentence k is speaker k mod 3) on a recording of two
    // voices: the service's diarization, which finds two here, must not replace them.
    let tmp = tempfile::tempdir().expect("temp dir");
    let (media, _) = conversation(tmp.path());
    let path = tmp.path().join("words-en.json");
    let mut recognized: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("words")).expect("json");
    let mut k = 0;
    for w in recognized["words"].as_array_mut().expect("words") {
        w["speaker"] = json!(k % 3);
        if w["text"].as_str().is_some_and(|t| t.ends_with(['.', '?'])) {
            k += 1;
        }
    }
    std::fs::write(&path, recognized.to_string()).expect("words");
    let server = server_in(tmp);
    let org = server.org(100_000, &[]);
    let id = ready_job(&server, &org, &media, "en");
    let (speakers, body) = cue_speakers(&server, &org, &id);
    let found: std::collections::BTreeSet<_> = speakers.iter().copied().collect();
    assert_eq!(found, [0, 1, 2].into(), "{body}");
}

/// Channel mode (issue 23 item 2): two people with the same voice (flite's `slt`), one
/// microphone each, the other's voice 26 dB down on each side (bleed). By voice they cannot be
/// told apart; by channel every word's speaker is its side, found without being asked for: the
/// left person, who opens, speaker 0. The same two tracks mixed onto both sides (a mono mix in a
/// stereo file) are not labelled by channel: one voice, one speaker.
#[test]
fn a_stereo_interview_is_labelled_by_channel_and_its_mono_mix_is_not() {
    use crate::web::Web;
    let tmp = tempfile::tempdir().expect("temp dir");
    let r = recording(tmp.path(), ["slt", "slt"]);
    let [left, right] = r
        .tracks
        .each_ref()
        .map(|p| p.to_string_lossy().into_owned());
    let stereo = tmp.path().join("stereo.wav");
    let dual = tmp.path().join("dual-mono.wav");
    #[rustfmt::skip]
    sox(&["-M", &left, &right, &stereo.to_string_lossy(), "remix", "-m", "1,2v0.05", "2,1v0.05"]);
    sox(&[
        "-M",
        &left,
        &right,
        &dual.to_string_lossy(),
        "remix",
        "-m",
        "1,2",
        "1,2",
    ]);
    let server = server_in(tmp);
    let org = server.org(100_000, &[]);
    let web = Web::sign_in(&server, &org.owner);
    let speakers = |media: &Path| -> (Vec<u32>, String) {
        let id = ready_job(&server, &org, media, "en");
        let data = web.get_json(&format!("/editor/{id}/data")).json();
        let words = editor_words(&data);
        let labels: Vec<u32> = words.iter().map(|w| w.1 as u32).collect();
        // How the speakers were found, as the job's log line says.
        let log = server.log();
        let line = log
            .lines()
            .find(|l| l.contains(&id) && l.contains("speakers") && l.contains("mode="))
            .unwrap_or_else(|| panic!("no speakers line for {id}\n{log}"))
            .to_string();
        (labels, line)
    };
    let (labels, line) = speakers(&stereo);
    assert_eq!(labels, r.truth, "{line}");
    assert!(line.contains("mode=Channel"), "{line}");
    let (labels, line) = speakers(&dual);
    assert_eq!(labels.len(), r.truth.len());
    assert!(labels.iter().all(|&s| s == 0), "{labels:?}\n{line}");
    assert!(line.contains("mode=Voice"), "{line}");
}
