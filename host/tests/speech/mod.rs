//! Test speech: plain English paragraphs spoken by `flite -voice slt`, in WAV, MP3 and MP4 with a
//! video stream, and the word error rate of a transcript against the text that was spoken.
//!
//! Shared by the host crate's recognizer tests and the root e2e tests (`tests/media.rs` includes it
//! with `#[path]`). Each sentence is synthesised on its own and followed by 0.6 s of silence, as a
//! speaker pauses between sentences: pocketsphinx segments utterances on those pauses, and without
//! them its word error rate on the same text roughly doubles (measured: 8% vs 16%).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Four short paragraphs of short, plain sentences (120 words).
pub const PARAGRAPHS: [&str; 4] = [
    "Good morning and welcome to the show. Today we talk about water. Water is very important \
     for all living things. People need to drink water every day.",
    "Most of the water on our planet is in the sea. Seawater has a lot of salt in it. We cannot \
     drink it. Only a small part of the water is fresh.",
    "Rain falls from the sky and fills the rivers and lakes. Farmers use water to grow food. \
     Please do not waste water at home. Thank you for listening.",
    "Clean water keeps us healthy. Some countries do not have enough of it. Many people work \
     hard to bring water to every village. We can all help by using less water each day.",
];

/// The spoken text as one string.
pub fn script() -> String {
    PARAGRAPHS.join("\n")
}

/// Runs a tool and panics with its stderr when it fails: a test cannot go on without its input.
fn run(program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} must be installed (scripts/setup): {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ffmpeg(args: &[&str]) {
    let mut all = vec!["-nostdin", "-v", "error", "-y"];
    all.extend_from_slice(args);
    run("ffmpeg", &all);
}

/// A path as an argument; test directories are UTF-8.
fn arg(path: &Path) -> &str {
    path.to_str().expect("test paths are UTF-8")
}

/// Splits a paragraph into sentences, keeping their final punctuation.
fn sentences(paragraph: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in paragraph.chars() {
        current.push(c);
        if matches!(c, '.' | '?' | '!') {
            out.push(current.trim().to_string());
            current.clear();
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}

/// Speaks `paragraphs` with flite's slt voice into `dir/speech.wav` (16 kHz mono PCM).
pub fn speak(dir: &Path, paragraphs: &[&str]) -> PathBuf {
    let gap = dir.join("gap.wav");
    #[rustfmt::skip]
    ffmpeg(&["-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", "0.6",
             "-c:a", "pcm_s16le", arg(&gap)]);
    let mut list = String::new();
    let mut n = 0;
    for paragraph in paragraphs {
        for sentence in sentences(paragraph) {
            n += 1;
            let wav = dir.join(format!("sentence-{n:03}.wav"));
            run(
                "flite",
                &["-voice", "slt", "-t", &sentence, "-o", arg(&wav)],
            );
            list.push_str(&format!(
                "file '{}'\nfile '{}'\n",
                wav.display(),
                gap.display()
            ));
        }
    }
    let list_path = dir.join("sentences.txt");
    std::fs::write(&list_path, list).expect("write concat list");
    let speech = dir.join("speech.wav");
    #[rustfmt::skip]
    ffmpeg(&["-f", "concat", "-safe", "0", "-i", arg(&list_path),
             "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", arg(&speech)]);
    speech
}

/// `wav` as a 64 kbit/s MP3 at `dir/name`.
pub fn to_mp3(wav: &Path, dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    ffmpeg(&[
        "-i",
        arg(wav),
        "-c:a",
        "libmp3lame",
        "-b:a",
        "64k",
        arg(&out),
    ]);
    out
}

/// `wav` as the sound of an H.264 + AAC MP4 whose picture is ffmpeg's 25 fps test pattern.
pub fn to_mp4(wav: &Path, dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    #[rustfmt::skip]
    ffmpeg(&["-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-i", arg(wav), "-shortest",
             "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac",
             arg(&out)]);
    out
}

/// A silent H.264 MP4 without any audio stream, `seconds` long.
pub fn video_only(dir: &Path, name: &str, seconds: u32) -> PathBuf {
    let out = dir.join(name);
    let source = format!("testsrc=size=320x240:rate=25:duration={seconds}");
    #[rustfmt::skip]
    ffmpeg(&["-f", "lavfi", "-i", &source, "-c:v", "libx264", "-preset", "ultrafast",
             "-pix_fmt", "yuv420p", arg(&out)]);
    out
}

/// A recognizer's words as one line of text, one space between words.
pub fn transcript(words: &[cuecraft_engine::RawWord]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Words for scoring: lowercase, letters, digits and inner apostrophes only.
pub fn normalise(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\''))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Word error rate of `hypothesis` against `reference`: (substitutions + deletions + insertions) /
/// reference words, by word-level Levenshtein distance, ignoring case and punctuation.
pub fn word_error_rate(reference: &str, hypothesis: &str) -> f64 {
    let r = normalise(reference);
    let h = normalise(hypothesis);
    if r.is_empty() {
        return if h.is_empty() { 0.0 } else { 1.0 };
    }
    let mut row: Vec<usize> = (0..=h.len()).collect();
    for (i, rw) in r.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, hw) in h.iter().enumerate() {
            let substitute = diagonal + usize::from(rw != hw);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[h.len()] as f64 / r.len() as f64
}

#[test]
fn word_error_rate_counts_edits_per_reference_word() {
    assert_eq!(word_error_rate("The cat sat.", "the cat sat"), 0.0);
    assert_eq!(
        word_error_rate("the cat sat on the mat", "the cat sat on mat"),
        1.0 / 6.0
    );
    assert_eq!(word_error_rate("a b c d", "a x c d e"), 2.0 / 4.0);
    assert_eq!(word_error_rate("don't stop", "Don't, stop!"), 0.0);
    assert_eq!(word_error_rate("", "x"), 1.0);
}
