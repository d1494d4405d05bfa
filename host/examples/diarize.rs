//! Tuning aid for the diarization constants (host/src/pipeline/speakers): runs the diarization
//! alone on the corpus of `scripts/diarization-corpus`, with words placed from the reference
//! (each turn's words spread over the turn by their letters), and prints each file's speaker count
//! and word-level speaker error. The real scores come from `scripts/score-diarization`, through
//! the service and Whisper's words; this only makes trying constants quick.
//!
//! Usage: cargo run --release --example diarize -- DIR PART [name=value ...] [words=SAVED]
//! (PART: tune or held; names are the fields of `Tuning`). With `words=SAVED`, each file's words
//! are the service's instead: SAVED/NAME.json holding the JSON transcript (`{"cues": [...]}`) of
//! that file from a run of the service, each word's reference speaker the turn holding its
//! midpoint (as `scripts/score-diarization` scores it).

use std::path::Path;

use cuecraft_engine::RawWord;
use cuecraft_host::pipeline::speakers::{label_with, Tuning};
use serde_json::Value;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: diarize DIR PART [name=value ...]");
        std::process::exit(2);
    }
    let (dir, part) = (Path::new(&args[1]), args[2].as_str());
    let mut t = Tuning::default();
    let mut recognized: Option<&Path> = None;
    for kv in &args[3..] {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        if k == "words" {
            recognized = Some(Path::new(v));
            continue;
        }
        let v: f64 = v.parse().unwrap_or_else(|_| panic!("bad value in {kv}"));
        match k {
            "kappa" => t.kappa = v,
            "threshold" => t.threshold = v,
            "tau" => t.tau = v,
            "min_frames" => t.min_frames = v,
            "min_cluster_frames" => t.min_cluster_frames = v,
            "switch_at_boundary" => t.switch_at_boundary = v,
            "switch_inside" => t.switch_inside = v,
            "min_reply_frames" => t.min_reply_frames = v,
            "reply_fit" => t.reply_fit = v,
            "min_replies" => t.min_replies = v,
            _ => panic!("unknown constant {k}"),
        }
    }
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .expect("corpus dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{part}-")))
        })
        .collect();
    names.sort();
    let tmp = tempfile::tempdir().expect("tempdir");
    let (mut wrong, mut total) = (0usize, 0usize);
    for json in names {
        let reference: Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("read")).expect("json");
        let wav = json.with_extension("wav");
        let mut truth = Vec::new();
        let mut words = Vec::new();
        let turns = reference["turns"].as_array().expect("turns");
        if let Some(from) = recognized {
            // The service's words (a transcript saved from scripts/score-diarization's run):
            // each word's reference speaker is the turn holding its midpoint, else the nearest.
            let name = json.file_name().expect("name");
            let saved: Value =
                serde_json::from_str(&std::fs::read_to_string(from.join(name)).expect("saved"))
                    .expect("saved json");
            for cue in saved["cues"].as_array().into_iter().flatten() {
                for w in cue["words"].as_array().into_iter().flatten() {
                    let (start, end) = (w["start"].as_f64().unwrap(), w["end"].as_f64().unwrap());
                    let mid = (start + end) / 2.0;
                    let edge = |u: &Value| {
                        let (a, b) = (u["start"].as_f64().unwrap(), u["end"].as_f64().unwrap());
                        if a <= mid && mid <= b {
                            0.0
                        } else {
                            (a - mid).abs().min((b - mid).abs())
                        }
                    };
                    let turn = turns
                        .iter()
                        .min_by(|a, b| edge(a).total_cmp(&edge(b)))
                        .expect("a turn");
                    truth.push(turn["speaker"].as_u64().unwrap() as usize);
                    words.push(RawWord {
                        text: w["text"].as_str().unwrap_or("").to_string(),
                        start,
                        end,
                        speaker: 0,
                    });
                }
            }
        }
        for turn in turns.iter().filter(|_| recognized.is_none()) {
            let (start, end) = (
                turn["start"].as_f64().unwrap(),
                turn["end"].as_f64().unwrap(),
            );
            let speaker = turn["speaker"].as_u64().unwrap() as usize;
            let texts: Vec<&str> = turn["text"].as_str().unwrap().split_whitespace().collect();
            let letters: usize = texts.iter().map(|w| w.len() + 1).sum();
            let mut at = start;
            for w in texts {
                let d = (end - start) * (w.len() + 1) as f64 / letters as f64;
                words.push(RawWord {
                    text: w.to_string(),
                    start: at,
                    end: at + d * 0.9,
                    speaker: 0,
                });
                truth.push(speaker);
                at += d;
            }
        }
        let mono = if reference["channels"].as_u64() == Some(2) {
            let out = tmp.path().join("mono.wav");
            let ok = std::process::Command::new("sox")
                .arg(&wav)
                .args(["-c", "1"])
                .arg(&out)
                .status()
                .expect("sox");
            assert!(ok.success());
            out
        } else {
            wav.clone()
        };
        let outcome = label_with(&mono, &wav, &mut words, &t).expect("diarization");
        let hyp: Vec<usize> = words.iter().map(|w| w.speaker as usize).collect();
        let errors = hyp.len() - best_matches(&truth, &hyp);
        wrong += errors;
        total += hyp.len();
        println!(
            "{:<16} speakers {} (ref {})  {:?}  WDER {:5.1}%",
            reference["name"].as_str().unwrap_or("?"),
            outcome.speakers,
            reference["speakers"],
            outcome.mode,
            100.0 * errors as f64 / hyp.len().max(1) as f64
        );
    }
    println!(
        "pooled WDER {:.2}% over {total} words",
        100.0 * wrong as f64 / total.max(1) as f64
    );
}

/// Words on which reference and hypothesis agree under the best one-to-one mapping of labels.
fn best_matches(truth: &[usize], hyp: &[usize]) -> usize {
    let r = truth.iter().max().map_or(0, |m| m + 1);
    let h = hyp.iter().max().map_or(0, |m| m + 1);
    let mut counts = vec![vec![0usize; h]; r];
    for (&a, &b) in truth.iter().zip(hyp) {
        counts[a][b] += 1;
    }
    fn go(counts: &[Vec<usize>], row: usize, used: &mut Vec<bool>) -> usize {
        if row == counts.len() {
            return 0;
        }
        let mut best = go(counts, row + 1, used);
        for c in 0..used.len() {
            if !used[c] {
                used[c] = true;
                best = best.max(counts[row][c] + go(counts, row + 1, used));
                used[c] = false;
            }
        }
        best
    }
    go(&counts, 0, &mut vec![false; h])
}
