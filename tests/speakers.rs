//! Speakers through the real server (issue 23): a two-voice recording made with flite gives two
//! speakers on the cues, a blank line in the text transcript at each speaker change between cues
//! (after a dashed cue, where its second speaker hands over) and a dashed cue where both people
//! speak in one cue; silence and one-word media are ready,
//! never failed. The recognizer is a command plug-in that prints the words of the recording (their
//! times placed inside each spoken turn), with speaker 0 on every word, so the speakers come from
//! the service's own diarization of the real audio, in seconds rather than a Whisper run.

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
    let gap = 0.3;
    let pause = silence(dir, "gap", gap);
    let mut parts = vec![silence(dir, "lead", 0.5)];
    let (mut words, mut truth) = (Vec::new(), Vec::new());
    let mut t = 0.5;
    for (k, (voice, text)) in TURNS.iter().enumerate() {
        let (wav, secs) = say(dir, k, voice, text);
        let w = words_of(text, t, secs);
        truth.extend(std::iter::repeat_n(u32::from(*voice == "rms"), w.len()));
        words.extend(w);
        parts.push(wav);
        parts.push(pause.clone());
        t += secs + gap;
    }
    let out = dir.join("conversation.wav");
    run(Command::new("sox").args(&parts).arg(&out));
    let recognized = json!({"language": "en", "words": words});
    std::fs::write(dir.join("words-en.json"), recognized.to_string()).expect("words");
    (out, truth)
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

fn server_in(tmp: tempfile::TempDir) -> Server {
    let script = tmp.path().join("recognizer.sh");
    std::fs::write(&script, RECOGNIZER).expect("script");
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
