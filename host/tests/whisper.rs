//! The `whisper` recognizer against the real runtime and model that scripts/setup installs
//! (faster-whisper in .venv, Whisper base in .models/whisper-base): flite and espeak-ng speech,
//! silence, a file longer than one 30 s window, and a worker that dies (a stand-in interpreter).

mod speech;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cuecraft_host::media;
use cuecraft_host::pipeline::recognizers::{
    check_whisper_installation, Recognizer, TimeLimit, WhisperOptions, WhisperRecognizer,
};

fn options() -> WhisperOptions {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let opts = WhisperOptions {
        python: root.join(".venv/bin/python3"),
        model: root.join(".models/whisper-base"),
        beam: 5,
        threads: 2,
        processes: 1,
    };
    check_whisper_installation(&opts)
        .expect("scripts/setup installs the whisper runtime and model");
    opts
}

fn wav_of(dir: &Path, paragraphs: &[&str]) -> PathBuf {
    let wav = dir.join("audio.wav");
    media::extract_wav(&speech::speak(dir, paragraphs), &wav).unwrap();
    wav
}

#[test]
fn whisper_writes_punctuated_capitalised_timed_words_in_english() {
    let dir = tempfile::tempdir().unwrap();
    let wav = wav_of(dir.path(), &speech::PARAGRAPHS);
    let duration = media::probe(&wav).unwrap().duration_seconds;
    let recognizer = WhisperRecognizer::new(options());
    let heard = recognizer.recognize(&wav, "auto", &[]).unwrap();
    let said = speech::transcript(&heard.words);
    let wer = speech::word_error_rate(&speech::script(), &said);
    eprintln!("whisper WER on flite speech: {:.1}% ({said})", wer * 100.0);
    assert!(wer <= 0.06, "word error rate {wer:.3}: {said}");
    // `auto` stores the detected language.
    assert_eq!(heard.language, "en");
    // Sentences end with punctuation and start with a capital, as written.
    let ends = heard
        .words
        .iter()
        .filter(|w| w.text.ends_with(['.', '?', '!']))
        .count();
    assert!(ends >= 12, "{ends} sentence ends in: {said}");
    assert!(
        heard.words[0].text.starts_with(char::is_uppercase),
        "{said}"
    );
    let mut previous_start = 0.0;
    for w in &heard.words {
        assert!(!w.text.contains(char::is_whitespace), "{w:?}");
        assert!(w.start >= previous_start && w.end >= w.start, "{w:?}");
        assert!(w.end <= duration + 0.05, "{w:?} beyond {duration}");
        previous_start = w.start;
    }
    // The same worker takes the next job: the model is loaded once.
    let again = recognizer.recognize(&wav, "en", &[]).unwrap();
    assert_eq!(again.language, "en");
    assert_eq!(recognizer.workers_started(), 1);
}

#[test]
fn a_long_file_is_cut_at_pauses_without_losing_or_doubling_words() {
    // About 95 s: three 30 s windows at least, every cut in a pause between sentences.
    let dir = tempfile::tempdir().unwrap();
    let mut paragraphs = speech::PARAGRAPHS.to_vec();
    paragraphs.extend_from_slice(&speech::PARAGRAPHS);
    let wav = wav_of(dir.path(), &paragraphs);
    let duration = media::probe(&wav).unwrap().duration_seconds;
    assert!(duration > 70.0, "{duration}");
    let heard = WhisperRecognizer::new(options())
        .recognize(&wav, "en", &[])
        .unwrap();
    let said = speech::transcript(&heard.words);
    let reference = paragraphs.join("\n");
    let wer = speech::word_error_rate(&reference, &said);
    assert!(wer <= 0.06, "word error rate {wer:.3}: {said}");
    // A word lost or doubled at a cut changes the count; each paragraph's last sentence is there
    // twice, no more, no less.
    let n = speech::normalise(&said).len() as f64;
    let expected = speech::normalise(&reference).len() as f64;
    assert!(
        (n - expected).abs() / expected <= 0.03,
        "{n} words for {expected}"
    );
    assert_eq!(said.matches("Thank you for listening").count(), 2, "{said}");
    assert_eq!(said.matches("each day").count(), 2, "{said}");
    assert!(heard.words.last().unwrap().end > duration - 3.0);
}

/// `text` spoken by espeak-ng in `voice` as 16 kHz mono WAV.
fn espeak(dir: &Path, voice: &str, text: &str) -> PathBuf {
    let raw = dir.join(format!("{voice}.raw.wav"));
    let st = std::process::Command::new("espeak-ng")
        .args(["-v", voice, "-w"])
        .arg(&raw)
        .arg(text)
        .status()
        .expect("espeak-ng (scripts/setup)");
    assert!(st.success());
    let wav = dir.join(format!("{voice}.wav"));
    media::extract_wav(&raw, &wav).unwrap();
    wav
}

const GERMAN: &str = "Guten Morgen und willkommen. Heute sprechen wir über das Wetter. \
    Morgen wird es regnen, aber am Wochenende scheint die Sonne.";

#[test]
fn german_is_detected_and_can_be_forced_and_a_region_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let wav = espeak(dir.path(), "de", GERMAN);
    let recognizer = WhisperRecognizer::new(options());
    let auto = recognizer.recognize(&wav, "auto", &[]).unwrap();
    assert_eq!(auto.language, "de");
    let said = speech::transcript(&auto.words);
    assert!(said.contains("Guten Morgen"), "{said}");
    assert!(said.contains("Sonne"), "{said}");
    let forced = recognizer.recognize(&wav, "de-AT", &[]).unwrap();
    assert_eq!(forced.language, "de-AT");
    let multi = recognizer.recognize(&wav, "multilingual", &[]).unwrap();
    assert_eq!(multi.language, "de");
}

#[test]
fn silence_and_noise_give_no_words() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("quiet.wav");
    let st = std::process::Command::new("sox")
        .args(["-n", "-r", "16000", "-c", "1", "-b", "16"])
        .arg(&wav)
        .args(["synth", "20", "brownnoise", "vol", "0.02"])
        .status()
        .expect("sox (scripts/setup)");
    assert!(st.success());
    let heard = WhisperRecognizer::new(options())
        .recognize(&wav, "auto", &[])
        .unwrap();
    assert!(heard.words.is_empty(), "{:?}", heard.words);
    assert_eq!(heard.language, "und");
}

#[test]
fn an_unknown_language_fails_before_any_work() {
    let opts = WhisperOptions {
        python: PathBuf::from("/nonexistent/python3"),
        ..WhisperOptions::default()
    };
    let err = WhisperRecognizer::new(opts)
        .recognize(Path::new("a.wav"), "tlh", &[])
        .unwrap_err();
    assert_eq!(err.0, "the whisper recognizer does not know language tlh");
}

/// A stand-in interpreter: it says it is ready, then ends without answering (a crash mid-job), or
/// never answers (a hang). Each start is counted in `starts`.
fn stand_in(dir: &Path, behaviour: &str) -> PathBuf {
    let path = dir.join("python3");
    let script = format!(
        "#!/bin/sh\necho started >> '{}'\necho '{{\"ready\": true}}'\nread line\n{behaviour}\n",
        dir.join("starts").display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn starts(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("starts"))
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn a_worker_that_dies_fails_its_job_and_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("secret-server-path.wav");
    std::fs::write(&wav, b"RIFF").unwrap();
    let opts = WhisperOptions {
        python: stand_in(dir.path(), "exit 3"),
        ..WhisperOptions::default()
    };
    let recognizer = WhisperRecognizer::new(opts);
    let err = recognizer.recognize(&wav, "en", &[]).unwrap_err();
    assert!(err.0.contains("process ended"), "{err}");
    assert!(!err.0.contains("secret-server-path"), "{err}");
    recognizer.recognize(&wav, "en", &[]).unwrap_err();
    assert_eq!(starts(dir.path()), 2);
}

#[test]
fn a_worker_that_hangs_is_stopped_at_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("a.wav");
    std::fs::write(&wav, b"RIFF").unwrap();
    let opts = WhisperOptions {
        python: stand_in(dir.path(), "exec sleep 600"),
        ..WhisperOptions::default()
    };
    let recognizer = WhisperRecognizer::new(opts).with_time_limit(TimeLimit {
        min: std::time::Duration::from_millis(300),
        per_audio_second: 0.0,
    });
    let started = std::time::Instant::now();
    let err = recognizer.recognize(&wav, "en", &[]).unwrap_err();
    assert!(err.0.contains("was stopped"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn the_worker_protocol_carries_the_vocabulary_prompt_and_whisper_pieces_become_words() {
    // A stand-in worker that records the request and answers as whisper_worker.py does.
    let dir = tempfile::tempdir().unwrap();
    let request = dir.path().join("request.json");
    // The second window's first piece has no leading space: it still starts a word.
    let reply = r#"{"id": ID, "language": "en", "windows": [[0.0, 3.0, "en"], [3.0, 6.0, "en"]],
        "words": [
        {"w": " At", "s": 0.1, "e": 0.3, "p": 0.9, "k": 0}, {"w": " o", "s": 0.3, "e": 0.4, "k": 0},
        {"w": "'clock,", "s": 0.4, "e": 0.8, "k": 0}, {"w": " Cuecraft", "s": 1.0, "e": 1.5, "k": 0},
        {"w": " sold", "s": 1.5, "e": 1.8, "k": 0}, {"w": " 2", "s": 1.9, "e": 2.1, "k": 0},
        {"w": ",000.", "s": 2.1, "e": 2.6, "k": 0}, {"w": "Next", "s": 3.1, "e": 3.4, "k": 1}]}"#
        .replace('\n', " ");
    let reply_file = dir.path().join("reply.json");
    std::fs::write(&reply_file, reply + "\n").unwrap();
    let script = format!(
        "#!/bin/sh\necho '{{\"ready\": true}}'\nread line\nprintf '%s\\n' \"$line\" > '{}'\n\
         id=$(printf '%s' \"$line\" | sed 's/.*\"id\": *\\([0-9]*\\).*/\\1/')\n\
         echo 'noise that is not JSON'\nsed \"s/ID/$id/\" '{}'\nread line\n",
        request.display(),
        reply_file.display()
    );
    let python = dir.path().join("python3");
    std::fs::write(&python, script).unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let wav = dir.path().join("a.wav");
    std::fs::write(&wav, b"RIFF").unwrap();
    let recognizer = WhisperRecognizer::new(WhisperOptions {
        python,
        ..WhisperOptions::default()
    });
    let hints = vec!["Cuecraft".to_string(), "EBU-STL".to_string()];
    let heard = recognizer.recognize(&wav, "en-GB", &hints).unwrap();
    assert_eq!(
        speech::transcript(&heard.words),
        "At o'clock, Cuecraft sold 2,000. Next"
    );
    assert_eq!(heard.language, "en-GB");
    assert_eq!((heard.words[1].start, heard.words[1].end), (0.3, 0.8));
    let sent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&request).unwrap()).unwrap();
    assert_eq!(sent["language"], "en");
    assert_eq!(sent["prompt"], "Glossary: Cuecraft, EBU-STL.");
    assert_eq!(sent["wav"], wav.to_str().unwrap());
}
