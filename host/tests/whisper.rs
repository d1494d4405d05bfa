//! The `whisper` recognizer against the real runtime and model that scripts/setup installs
//! (faster-whisper in .venv, Whisper base in .models/whisper-base): flite and espeak-ng speech,
//! silence, a file longer than one 30 s window; and, with a stand-in interpreter that speaks the
//! worker protocol, workers that die, hang or cannot start.

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

/// A stand-in interpreter that speaks the worker protocol of whisper_worker.py (see its header):
/// each start is counted in `starts` (the start's number is `$n` in the snippets) and each request
/// kept in `requests`. `on_start` runs before it says it is ready; `windows` answers a `windows`
/// request and `decode` a `decode` request (the request's id is `$id`, the window's first sample
/// `$start`). `detect` answers English. Any other request is answered with an error.
fn protocol_stand_in(dir: &Path, on_start: &str, windows: &str, decode: &str) -> PathBuf {
    let path = dir.join("python3");
    let script = format!(
        r#"#!/bin/sh
echo started >> '{starts}'
n=$(wc -l < '{starts}')
{on_start}
echo '{{"ready": true}}'
while read -r line; do
  printf '%s\n' "$line" >> '{requests}'
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  case "$line" in
    *'"op":"windows"'*)
      {windows}
      ;;
    *'"op":"detect"'*) echo "{{\"id\": $id, \"done\": true, \"language\": \"en\"}}" ;;
    *'"op":"decode"'*)
      start=$(printf '%s' "$line" | sed 's/.*"start":\([0-9]*\).*/\1/')
      {decode}
      ;;
    *) echo "{{\"id\": $id, \"error\": \"unexpected request\"}}" ;;
  esac
done
"#,
        starts = dir.join("starts").display(),
        requests = dir.join("requests").display(),
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A `windows` answer: these speech windows (samples), then the file's length.
fn answer_windows(windows: &[(u64, u64)], samples: u64) -> String {
    let mut sh = String::new();
    for (s, e) in windows {
        sh.push_str(&format!(
            "echo \"{{\\\"id\\\": $id, \\\"window\\\": [{s}, {e}]}}\"\n"
        ));
    }
    sh.push_str(&format!(
        "echo \"{{\\\"id\\\": $id, \\\"done\\\": true, \\\"samples\\\": {samples}}}\""
    ));
    sh
}

/// A `decode` answer of one word piece per window: " w<first sample>", one second long.
const ANSWER_ONE_WORD: &str = r#"echo "{\"id\": $id, \"done\": true, \"language\": \"en\", \"words\": [{\"w\": \" w$start\", \"s\": $((start / 16000)), \"e\": $((start / 16000 + 1))}]}""#;

fn starts(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("starts"))
        .unwrap_or_default()
        .lines()
        .count()
}

fn requests(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("requests"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn fake_wav(dir: &Path, name: &str) -> PathBuf {
    let wav = dir.join(name);
    std::fs::write(&wav, b"RIFF").unwrap();
    wav
}

#[test]
fn a_worker_that_keeps_dying_fails_its_job_after_three_processes_not_in_a_loop() {
    // Every process ends at its first request (a crash on this audio): the question is asked of
    // a fresh process three times in all (docs/decisions/pipeline.md, "three tries"), then the
    // job fails with a message that does not show the server's path.
    let dir = tempfile::tempdir().unwrap();
    let wav = fake_wav(dir.path(), "secret-server-path.wav");
    let opts = WhisperOptions {
        python: protocol_stand_in(dir.path(), "", "exit 3", "exit 3"),
        ..WhisperOptions::default()
    };
    let recognizer = WhisperRecognizer::new(opts);
    let err = recognizer.recognize(&wav, "en", &[]).unwrap_err();
    assert!(err.0.contains("process ended"), "{err}");
    assert!(!err.0.contains("secret-server-path"), "{err}");
    assert_eq!(starts(dir.path()), 3);
    // The dead processes are not kept: the next job starts its own, with the same bound.
    recognizer.recognize(&wav, "en", &[]).unwrap_err();
    assert_eq!(starts(dir.path()), 6);
    assert_eq!(recognizer.workers_started(), 6);
}

#[test]
fn a_worker_killed_mid_window_is_replaced_once_and_its_window_decoded_again() {
    // The first process ends while decoding the second of three windows (a kill -9): one fresh
    // process takes its place and decodes that window again; no word is lost or doubled.
    let dir = tempfile::tempdir().unwrap();
    let wav = fake_wav(dir.path(), "a.wav");
    let windows = [(0, 32_000), (48_000, 80_000), (96_000, 128_000)];
    let decode = format!(
        "if [ \"$n\" -eq 1 ] && [ \"$start\" -eq 48000 ]; then exit 9; fi\n{ANSWER_ONE_WORD}"
    );
    let opts = WhisperOptions {
        python: protocol_stand_in(dir.path(), "", &answer_windows(&windows, 160_000), &decode),
        ..WhisperOptions::default()
    };
    let recognizer = WhisperRecognizer::new(opts);
    let heard = recognizer.recognize(&wav, "en", &[]).unwrap();
    assert_eq!(speech::transcript(&heard.words), "w0 w48000 w96000");
    assert_eq!(starts(dir.path()), 2);
    assert_eq!(decoded_starts(dir.path()), [0, 48_000, 48_000, 96_000]);
    // The replacement stays in the pool: the next job loads no model.
    recognizer.recognize(&wav, "en", &[]).unwrap();
    assert_eq!(starts(dir.path()), 2);
}

#[test]
fn a_process_that_cannot_start_is_not_started_again_and_again_for_a_lone_job() {
    // Two processes allowed: the lone job borrows a second one for its windows, but every
    // process after the first fails to start (its model cannot load). The job is decoded on its
    // own process, and the failed start is not retried for every window.
    let dir = tempfile::tempdir().unwrap();
    let wav = fake_wav(dir.path(), "a.wav");
    let windows: Vec<(u64, u64)> = (0..6).map(|k| (k * 48_000, k * 48_000 + 32_000)).collect();
    let opts = WhisperOptions {
        python: protocol_stand_in(
            dir.path(),
            "if [ \"$n\" -gt 1 ]; then echo '{\"fatal\": \"no memory\"}'; exit 1; fi",
            &answer_windows(&windows, 300_000),
            &format!("sleep 0.3\n{ANSWER_ONE_WORD}"),
        ),
        processes: 2,
        ..WhisperOptions::default()
    };
    let recognizer = WhisperRecognizer::new(opts);
    let heard = recognizer.recognize(&wav, "en", &[]).unwrap();
    assert_eq!(heard.words.len(), 6);
    assert_eq!(starts(dir.path()), 2);
}

#[test]
fn a_worker_that_hangs_is_stopped_at_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let wav = fake_wav(dir.path(), "a.wav");
    let opts = WhisperOptions {
        python: protocol_stand_in(dir.path(), "", "exec sleep 600", "exec sleep 600"),
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
    // A stand-in worker that answers as whisper_worker.py does: two speech windows, then each
    // window's pieces (times in seconds of the whole file), with a line of noise before each
    // answer. The second window's first piece has no leading space: it still starts a word.
    let dir = tempfile::tempdir().unwrap();
    let first = r#"[{"w": " At", "s": 0.1, "e": 0.3, "p": 0.9}, {"w": " o", "s": 0.3, "e": 0.4},
        {"w": "'clock,", "s": 0.4, "e": 0.8}, {"w": " Cuecraft", "s": 1.0, "e": 1.5},
        {"w": " sold", "s": 1.5, "e": 1.8}, {"w": " 2", "s": 1.9, "e": 2.1},
        {"w": ",000.", "s": 2.1, "e": 2.6}]"#;
    let second = r#"[{"w": "Next", "s": 3.1, "e": 3.4}]"#;
    for (name, pieces) in [("0.json", first), ("48000.json", second)] {
        let line = format!(r#"{{"id": ID, "done": true, "language": "en", "words": {pieces}}}"#);
        std::fs::write(dir.path().join(name), line.replace('\n', " ") + "\n").unwrap();
    }
    let decode = format!(
        "echo 'noise that is not JSON'\nsed \"s/ID/$id/\" '{}'/$start.json",
        dir.path().display()
    );
    let python = protocol_stand_in(
        dir.path(),
        "",
        &format!(
            "echo 'noise that is not JSON'\n{}",
            answer_windows(&[(0, 48_000), (48_000, 96_000)], 96_000)
        ),
        &decode,
    );
    let wav = fake_wav(dir.path(), "a.wav");
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
    // The windows are found in the file, then each is decoded in the job's language with the
    // vocabulary as Whisper's prompt.
    let sent = requests(dir.path());
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[0]["op"], "windows");
    assert_eq!(sent[0]["wav"], wav.to_str().unwrap());
    for (request, (start, end)) in sent[1..].iter().zip([(0, 48_000), (48_000, 96_000)]) {
        assert_eq!(request["op"], "decode");
        assert_eq!(
            (request["start"].as_u64(), request["end"].as_u64()),
            (Some(start), Some(end))
        );
        assert_eq!(request["language"], "en");
        assert_eq!(request["prompt"], "Glossary: Cuecraft, EBU-STL.");
        assert_eq!(request["wav"], wav.to_str().unwrap());
    }
}

#[test]
fn a_run_on_window_is_tried_again_greedily_and_kept_only_when_that_try_is_better() {
    // The first decode of the one window comes back run-on (14 words, lowercase, no sentence
    // end). It is decoded again with a punctuated prompt and `greedy` (temperature 0 only: a
    // sampling fallback holds five candidates at once, about 100 MB more in the worker). A
    // retry that failed Whisper's checks answers no words, and the first try's words stand; a
    // retry with more sentence ends replaces them.
    let run_on: Vec<String> = (0..14)
        .map(|k| format!(r#"{{"w": " word{k}", "s": {k}.0, "e": {k}.5}}"#))
        .collect();
    let punctuated = r#"[{"w": " One.", "s": 0.0, "e": 0.5}, {"w": " Two.", "s": 1.0, "e": 1.5}]"#;
    for (retry, expected) in [
        (
            "[]",
            (0..14)
                .map(|k| format!("word{k}"))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        (punctuated, "One. Two.".to_string()),
    ] {
        let dir = tempfile::tempdir().unwrap();
        for (name, pieces) in [
            ("first.json", format!("[{}]", run_on.join(", "))),
            ("retry.json", retry.to_string()),
        ] {
            let line =
                format!(r#"{{"id": ID, "done": true, "language": "en", "words": {pieces}}}"#);
            std::fs::write(dir.path().join(name), line + "\n").unwrap();
        }
        let decode = format!(
            "case \"$line\" in *'\"greedy\":true'*) f=retry.json ;; *) f=first.json ;; esac\n\
             sed \"s/ID/$id/\" '{}'/$f",
            dir.path().display()
        );
        let python = protocol_stand_in(
            dir.path(),
            "",
            &answer_windows(&[(0, 480_000)], 480_000),
            &decode,
        );
        let wav = fake_wav(dir.path(), "a.wav");
        let recognizer = WhisperRecognizer::new(WhisperOptions {
            python,
            ..WhisperOptions::default()
        });
        let heard = recognizer.recognize(&wav, "en", &[]).unwrap();
        assert_eq!(speech::transcript(&heard.words), expected);
        let decodes: Vec<serde_json::Value> = requests(dir.path())
            .into_iter()
            .filter(|r| r["op"] == "decode")
            .collect();
        assert_eq!(decodes.len(), 2, "{decodes:?}");
        assert_eq!(decodes[0]["greedy"], false);
        assert!(decodes[0]["prompt"].is_null(), "{decodes:?}");
        assert_eq!(decodes[1]["greedy"], true);
        assert!(
            decodes[1]["prompt"]
                .as_str()
                .is_some_and(|p| p.ends_with('.')),
            "{decodes:?}"
        );
    }
}

/// Shell that waits (at most 30 s) until a process has decoded a window, then writes whether
/// one had into `overlap` (`yes` / `no`).
fn wait_for_a_decode(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "i=0; while [ ! -e '{d}/decoded' ] && [ $i -lt 150 ]; do sleep 0.2; i=$((i+1)); done\n\
         if [ -e '{d}/decoded' ]; then echo yes > '{d}/overlap'; else echo no > '{d}/overlap'; fi\n"
    )
}

/// The starts of the decoded windows, in the order they were asked for.
fn decoded_starts(dir: &Path) -> Vec<u64> {
    requests(dir)
        .iter()
        .filter(|r| r["op"] == "decode")
        .map(|r| r["start"].as_u64().unwrap())
        .collect()
}

#[test]
fn a_lone_job_decodes_its_first_windows_while_its_own_process_still_reads_the_file() {
    // Two processes allowed, language `auto`: the job's own process sends three windows and then
    // holds the rest of its pass until a window has been decoded. The borrowed process detects
    // the language on those three and decodes them meanwhile; the words are in window order.
    let dir = tempfile::tempdir().unwrap();
    let wav = fake_wav(dir.path(), "a.wav");
    let windows: Vec<(u64, u64)> = (0..5).map(|k| (k * 48_000, k * 48_000 + 32_000)).collect();
    let pass = format!(
        "{}{}{}",
        answer_windows(&windows[..3], 0)
            .lines()
            .take(3)
            .collect::<Vec<_>>()
            .join("\n")
            + "\n",
        wait_for_a_decode(dir.path()),
        answer_windows(&windows[3..], 300_000)
    );
    let decode = format!(
        "touch '{}/decoded'\n{ANSWER_ONE_WORD}",
        dir.path().display()
    );
    let opts = WhisperOptions {
        python: protocol_stand_in(dir.path(), "", &pass, &decode),
        processes: 2,
        ..WhisperOptions::default()
    };
    let recognizer = WhisperRecognizer::new(opts);
    let heard = recognizer.recognize(&wav, "auto", &[]).unwrap();
    let overlap = std::fs::read_to_string(dir.path().join("overlap")).unwrap();
    assert_eq!(
        overlap.trim(),
        "yes",
        "no window was decoded during the pass"
    );
    assert_eq!(
        speech::transcript(&heard.words),
        "w0 w48000 w96000 w144000 w192000"
    );
    assert_eq!(heard.language, "en");
    let sent = requests(dir.path());
    let detect: Vec<&serde_json::Value> = sent.iter().filter(|r| r["op"] == "detect").collect();
    assert_eq!(detect.len(), 1, "{sent:?}");
    assert_eq!(
        detect[0]["windows"],
        serde_json::json!([[0, 32_000], [48_000, 80_000], [96_000, 128_000]])
    );
    let mut decoded = decoded_starts(dir.path());
    decoded.sort_unstable();
    assert_eq!(decoded, [0, 48_000, 96_000, 144_000, 192_000]);
    assert!(sent
        .iter()
        .filter(|r| r["op"] == "decode")
        .all(|r| r["language"] == "en"));
    assert_eq!(starts(dir.path()), 2);
}

#[test]
fn a_process_killed_while_reading_the_file_neither_repeats_nor_loses_a_window() {
    // The job's own process sends two windows, waits until the borrowed process has decoded one,
    // then dies mid-pass (a kill -9). A fresh process reads the file again and finds the same
    // windows: the two already sent are not sent again, the rest are; each window is decoded
    // once and the words are in order.
    let dir = tempfile::tempdir().unwrap();
    let wav = fake_wav(dir.path(), "a.wav");
    let windows: Vec<(u64, u64)> = (0..4).map(|k| (k * 48_000, k * 48_000 + 32_000)).collect();
    let first_two: String = answer_windows(&windows[..2], 0)
        .lines()
        .take(2)
        .map(|l| format!("{l}\n"))
        .collect();
    let pass = format!(
        "if [ \"$n\" -eq 1 ]; then\n{first_two}{}exit 9\nfi\n{}",
        wait_for_a_decode(dir.path()),
        answer_windows(&windows, 240_000)
    );
    let decode = format!(
        "touch '{}/decoded'\n{ANSWER_ONE_WORD}",
        dir.path().display()
    );
    let opts = WhisperOptions {
        python: protocol_stand_in(dir.path(), "", &pass, &decode),
        processes: 2,
        ..WhisperOptions::default()
    };
    let recognizer = WhisperRecognizer::new(opts);
    let heard = recognizer.recognize(&wav, "en", &[]).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("overlap"))
            .unwrap()
            .trim(),
        "yes"
    );
    assert_eq!(speech::transcript(&heard.words), "w0 w48000 w96000 w144000");
    let mut decoded = decoded_starts(dir.path());
    decoded.sort_unstable();
    assert_eq!(decoded, [0, 48_000, 96_000, 144_000]);
    let passes = requests(dir.path())
        .iter()
        .filter(|r| r["op"] == "windows")
        .count();
    assert_eq!(passes, 2);
    // The job's process, the borrowed one, the one that took over the pass.
    assert_eq!(starts(dir.path()), 3);
}
