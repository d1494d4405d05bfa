//! The recognizers against real tools: pocketsphinx on flite speech (word error rate), and the
//! whisper.cpp driver on recorded whisper.cpp output, through a stand-in binary.

mod speech;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cuecraft_host::media;
use cuecraft_host::pipeline::recognizers::{
    from_spec, parse_whisper_json, PocketsphinxRecognizer, Recognizer, TimeLimit,
    WhisperCppRecognizer,
};

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../golden/inputs/media")
        .join(name)
}

#[test]
fn pocketsphinx_transcribes_flite_speech_within_ten_percent_word_errors() {
    let dir = tempfile::tempdir().unwrap();
    let spoken = speech::speak(dir.path(), &speech::PARAGRAPHS);
    let wav = dir.path().join("audio.wav");
    media::extract_wav(&spoken, &wav).unwrap();
    let duration = media::probe(&wav).unwrap().duration_seconds;

    let recognizer = from_spec("pocketsphinx").unwrap();
    let heard = recognizer.recognize(&wav, "auto", &[]).unwrap();
    let text = speech::transcript(&heard.words);
    let wer = speech::word_error_rate(&speech::script(), &text);
    eprintln!(
        "pocketsphinx WER on flite speech: {:.1}% ({text})",
        wer * 100.0
    );
    assert!(wer <= 0.10, "word error rate {wer:.3}: {text}");
    assert_eq!(heard.language, "en");

    // Timings: in order, inside the audio, and no filler or pronunciation markers left.
    let mut previous_end = 0.0;
    for w in &heard.words {
        assert!(w.start >= previous_end - 1e-9 && w.end > w.start, "{w:?}");
        assert!(w.end <= duration + 0.05, "{w:?} beyond {duration}");
        assert!(
            w.text.chars().all(|c| c.is_ascii_lowercase() || c == '\''),
            "{w:?}"
        );
        previous_end = w.end;
    }
    // Speech starts at once, and most of the ten "water"s of the script are heard.
    assert!(heard.words[0].start < 1.0);
    assert!(heard.words.iter().filter(|w| w.text == "water").count() >= 8);
}

#[test]
fn pocketsphinx_refuses_a_language_it_has_no_model_for() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("audio.wav");
    media::extract_wav(&speech::speak(dir.path(), &["Hello."]), &wav).unwrap();
    let err = PocketsphinxRecognizer::default()
        .recognize(&wav, "nl", &[])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no pocketsphinx model for language nl; installed: en"
    );
    let heard = PocketsphinxRecognizer::default()
        .recognize(&wav, "en-US", &[])
        .unwrap();
    assert_eq!(heard.language, "en");
}

#[test]
fn pocketsphinx_reports_unreadable_audio_without_server_paths() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("audio.wav");
    std::fs::write(&wav, b"RIFF\x10\0\0\0WAVEjunkjunkjunkjunk").unwrap();
    let err = PocketsphinxRecognizer::default()
        .recognize(&wav, "auto", &[])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("pocketsphinx failed"), "{err}");
    assert!(!err.contains(dir.path().to_str().unwrap()), "{err}");
}

#[test]
fn recorded_whisper_output_becomes_timed_words() {
    let json = std::fs::read(golden("whisper-base-ml1-sow.json")).unwrap();
    let heard = parse_whisper_json(&json).unwrap();
    assert_eq!(heard.language, "en");
    assert_eq!(
        speech::transcript(&heard.words),
        "Welcome to Cuecraft. Today we test the subtitles of a short café interview, \
         with \"quoted\" words. Thank you."
    );
    let first = &heard.words[0];
    assert_eq!((first.start, first.end), (1.08, 1.34));
    let last = heard.words.last().unwrap();
    assert_eq!(
        (last.text.as_str(), last.start, last.end),
        ("you.", 7.31, 7.65)
    );
}

/// A stand-in for the whisper.cpp binary (the real one and its models cannot be downloaded here):
/// it records its arguments and writes `json` where `-of` points, as whisper.cpp does.
fn fake_whisper(dir: &Path, json: Option<&Path>, stderr: &str, status: i32) -> PathBuf {
    let script = dir.join("whisper-cli");
    let args_log = dir.join("args.txt");
    let copy = match json {
        Some(j) => format!("cp '{}' \"$of.json\"", j.display()),
        None => String::new(),
    };
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n\
             printf '%s\\n' \"$@\" > '{log}'\n\
             of=''\n\
             while [ $# -gt 0 ]; do\n\
               if [ \"$1\" = -of ]; then of=\"$2\"; fi\n\
               shift\n\
             done\n\
             {copy}\n\
             printf '%s\\n' '{stderr}' >&2\n\
             exit {status}\n",
            log = args_log.display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn recorded_args(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("args.txt"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn whisper_driver_runs_the_binary_and_reads_its_json() {
    let dir = tempfile::tempdir().unwrap();
    let bin = fake_whisper(
        dir.path(),
        Some(&golden("whisper-base-ml1-sow.json")),
        "",
        0,
    );
    let wav = dir.path().join("audio.wav");
    std::fs::write(&wav, b"not read by the stand-in").unwrap();
    let spec = format!("whisper-cpp:{}:/models/ggml-base.bin", bin.display());
    let recognizer = from_spec(&spec).unwrap();
    let hints = vec!["Cuecraft".to_string(), "EBU-STL".to_string()];
    let heard = recognizer.recognize(&wav, "auto", &hints).unwrap();
    assert_eq!(heard.language, "en");
    assert_eq!(heard.words.len(), 18);

    let args = recorded_args(dir.path());
    let after = |flag: &str| {
        let i = args.iter().position(|a| a == flag).expect(flag);
        args[i + 1].clone()
    };
    assert_eq!(after("-m"), "/models/ggml-base.bin");
    assert_eq!(after("-f"), wav.to_str().unwrap());
    assert_eq!(after("-l"), "auto");
    assert_eq!(after("-ml"), "1");
    assert_eq!(after("--prompt"), "Glossary: Cuecraft, EBU-STL.");
    assert!(args.contains(&"-oj".to_string()) && args.contains(&"-sow".to_string()));
    // The JSON is read and removed; nothing is left beside the job's audio.
    assert!(!Path::new(&format!("{}.json", after("-of"))).exists());
}

#[test]
fn whisper_driver_passes_the_language_and_refuses_a_model_that_ignores_it() {
    let dir = tempfile::tempdir().unwrap();
    let bin = fake_whisper(
        dir.path(),
        Some(&golden("whisper-base-ml1-sow.json")),
        "",
        0,
    );
    let wav = dir.path().join("audio.wav");
    std::fs::write(&wav, b"").unwrap();
    let recognizer = WhisperCppRecognizer::new(&bin, "/models/ggml-base.en.bin");
    // The recorded output says "en": asked for Dutch, that is an English-only model at work.
    let err = recognizer.recognize(&wav, "nl", &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the whisper.cpp model does not support language nl; it recognised en"
    );
    let args = recorded_args(dir.path());
    assert!(args.windows(2).any(|w| w == ["-l", "nl"]), "{args:?}");
    assert!(!args.contains(&"--prompt".to_string()));
    assert!(recognizer.recognize(&wav, "en-GB", &[]).is_ok());
}

#[test]
fn whisper_driver_reports_failures_readably() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("audio.wav");
    std::fs::write(&wav, b"").unwrap();

    let crashed = fake_whisper(
        dir.path(),
        None,
        "error: failed to open 'the model' as a ggml model",
        3,
    );
    let err = WhisperCppRecognizer::new(&crashed, "/m.bin")
        .recognize(&wav, "auto", &[])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("whisper.cpp failed"), "{err}");
    assert!(err.contains("failed to open"), "{err}");

    let unknown = fake_whisper(dir.path(), None, "error: unknown language 'xx'", 0);
    let err = WhisperCppRecognizer::new(&unknown, "/m.bin")
        .recognize(&wav, "xx", &[])
        .unwrap_err()
        .to_string();
    assert_eq!(err, "whisper.cpp does not know language xx");

    let missing = WhisperCppRecognizer::new(dir.path().join("no-such-binary"), "/m.bin")
        .recognize(&wav, "auto", &[])
        .unwrap_err()
        .to_string();
    assert!(
        missing.starts_with("could not start whisper.cpp"),
        "{missing}"
    );
}

#[test]
fn a_hung_whisper_binary_is_stopped_and_the_job_fails() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("audio.wav");
    std::fs::write(&wav, b"").unwrap();
    let hung = dir.path().join("hung-whisper");
    std::fs::write(&hung, "#!/bin/sh\nexec sleep 60\n").unwrap();
    std::fs::set_permissions(&hung, std::fs::Permissions::from_mode(0o755)).unwrap();
    let started = std::time::Instant::now();
    let err = WhisperCppRecognizer::new(&hung, "/m.bin")
        .with_time_limit(TimeLimit {
            min: std::time::Duration::from_secs(1),
            per_audio_second: 0.0,
        })
        .recognize(&wav, "auto", &[])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "whisper.cpp ran longer than 1 s and was stopped"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}
