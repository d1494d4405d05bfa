//! Real speech through the real server with the default recognizer (whisper): flite speech in WAV,
//! MP3 and MP4 with video is transcribed within 10% word errors, punctuated and capitalised, and
//! downloads in every format; German is detected or forced; silence is ready with no cues; a 70 s
//! file crosses a window cut without losing or doubling a word; media without audio, unreadable
//! media and unknown languages fail with a reason, a full refund and no editor media; a kill -9 during recognition
//! loses nothing and charges once; `cuecraft submit` writes an SRT. Pocketsphinx, the light
//! option, gets sentences from its pauses. Long recordings: a lone job's windows shared by two
//! whisper processes give one process's words (and its progress is told while it runs), also
//! when one of them is killed mid-job (charged once); a 3-hour file keeps each worker under
//! 600 MB.

#[path = "../host/tests/speech/mod.rs"]
mod speech;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use cuecraft_formats::Format;
use cuecraft_host::media::Object;
use serde_json::{json, Value};

use crate::common::{str_field, Org, Server, BIN};

/// Recognition shares two cores with whatever else runs: wait generously, poll often.
const JOB_DEADLINE: Duration = Duration::from_secs(600);

/// Polling several times a second outruns the default 120 requests a minute; the rate limit has
/// its own tests.
const RATE: [&str; 2] = ["--rate-limit-per-minute", "100000"];

/// A server with the default recognizer (whisper), `workers` workers, 10 cents a minute.
fn default_server(workers: &str) -> Server {
    Server::start_default_recognizer(&[
        "--workers",
        workers,
        "--price-cents-per-minute",
        "10",
        RATE[0],
        RATE[1],
    ])
}

/// A server with the light recognizer, pocketsphinx.
fn pocketsphinx_server(workers: &str) -> Server {
    Server::start_default_recognizer(&[
        "--recognizer",
        "pocketsphinx",
        "--workers",
        workers,
        "--price-cents-per-minute",
        "10",
        RATE[0],
        RATE[1],
    ])
}

const FORMATS: [&str; 6] = ["srt", "vtt", "webvtt", "ttml", "ass", "ebu-stl"];

fn duration_of(path: &Path) -> f64 {
    cuecraft_host::media::probe(path)
        .expect("probe test media")
        .duration_seconds
}

/// Creates a job for `media` declaring `declared_seconds`, uploads it, returns the job id.
fn submit(
    server: &Server,
    org: &Org,
    media: &Path,
    content_type: &str,
    declared_seconds: f64,
    settings: Value,
) -> String {
    let data = std::fs::read(media).expect("read media");
    let created = server.create_job(
        &org.key,
        &json!({
            "filename": media.file_name().and_then(|n| n.to_str()).unwrap_or("media"),
            "contentType": content_type,
            "sizeBytes": data.len(),
            "durationSeconds": declared_seconds,
            "settings": settings,
        }),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    let up = server.upload(&created, &data);
    assert_eq!(up.status, 200, "{}", up.text());
    str_field(&created, "id")
}

/// Polls until the job is `ready` or `failed`.
fn finished(server: &Server, org: &Org, id: &str) -> Value {
    let deadline = Instant::now() + JOB_DEADLINE;
    loop {
        let r = server.get(&org.key, &format!("/v1/jobs/{id}"));
        assert_eq!(r.status, 200, "{}", r.text());
        let job = r.json();
        if matches!(job["status"].as_str(), Some("ready" | "failed")) {
            return job;
        }
        assert!(
            Instant::now() < deadline,
            "job {id} stuck: {job}\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Polls until the job shows `status`.
fn wait_status(server: &Server, org: &Org, id: &str, status: &str) {
    let deadline = Instant::now() + JOB_DEADLINE;
    while server.get(&org.key, &format!("/v1/jobs/{id}")).json()["status"] != status {
        assert!(Instant::now() < deadline, "job {id} never reached {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `parent` has a child process whose name starts with `name` (as /proc shows it,
/// cut to 15 bytes); returns its pid.
fn wait_for_child(parent: u32, name: &str) -> u32 {
    let deadline = Instant::now() + JOB_DEADLINE;
    loop {
        for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // "pid (comm) state ppid ...": comm may hold spaces, so split at the last ')'.
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let comm = &stat[open + 1..close];
            let ppid = stat[close + 1..].split_whitespace().nth(1);
            if comm.starts_with(name) && ppid == Some(parent.to_string().as_str()) {
                return stat[..open].trim().parse().expect("pid");
            }
        }
        assert!(
            Instant::now() < deadline,
            "{name} never started under {parent}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `cuecraft submit FILE --api API --key KEY`, for the caller to add options to.
fn submit_cmd(file: &Path, api: &str, key: &str) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("submit")
        .arg(file)
        .args(["--api", api, "--key", key]);
    cmd
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet) within `limit`.
fn ended_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let ended = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rfind(')')
                .and_then(|close| stat[close + 1..].split_whitespace().next())
                .is_some_and(|state| state == "Z" || state == "X"),
        };
        if ended {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn transcript_text(server: &Server, org: &Org, id: &str) -> String {
    let r = server.get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"));
    assert_eq!(r.status, 200, "{}", r.text());
    r.text()
}

/// Ledger rows of a job by kind.
fn rows(server: &Server, id: &str, kind: &str) -> Vec<i64> {
    server
        .ledger(id)
        .into_iter()
        .filter(|(k, _)| k == kind)
        .map(|(_, cents)| cents)
        .collect()
}

/// The price rule of the design: ceil(seconds / 60 * price).
fn cents_for(seconds: f64, price_per_minute: i64) -> i64 {
    (seconds / 60.0 * price_per_minute as f64).ceil() as i64
}

struct Media {
    _dir: tempfile::TempDir,
    wav: PathBuf,
    mp3: PathBuf,
    mp4: PathBuf,
}

fn speech_media() -> Media {
    let dir = tempfile::tempdir().expect("temp dir");
    let wav = speech::speak(dir.path(), &speech::PARAGRAPHS);
    let mp3 = speech::to_mp3(&wav, dir.path(), "talk.mp3");
    let mp4 = speech::to_mp4(&wav, dir.path(), "talk.mp4");
    Media {
        _dir: dir,
        wav,
        mp3,
        mp4,
    }
}

#[test]
fn speech_in_wav_mp3_and_mp4_is_transcribed_within_ten_percent_word_errors_and_downloads_in_every_format(
) {
    let server = default_server("2");
    let org = server.org(10_000, &[]);
    let media = speech_media();
    let jobs: Vec<(&str, String, f64)> = [
        (&media.wav, "audio/wav"),
        (&media.mp3, "audio/mpeg"),
        (&media.mp4, "video/mp4"),
    ]
    .into_iter()
    .map(|(path, ct)| {
        let seconds = duration_of(path);
        (
            ct,
            submit(&server, &org, path, ct, seconds, json!({})),
            seconds,
        )
    })
    .collect();

    for (content_type, id, seconds) in &jobs {
        let job = finished(&server, &org, id);
        assert_eq!(
            job["status"],
            "ready",
            "{content_type}: {job}\n{}",
            server.log()
        );
        assert_eq!(job["language"], "en", "{job}");
        assert!(
            (job["media"]["durationSeconds"].as_f64().unwrap_or(0.0) - seconds).abs() < 0.5,
            "{job}"
        );

        let text = transcript_text(&server, &org, id);
        let wer = speech::word_error_rate(&speech::script(), &text);
        eprintln!(
            "e2e {content_type}: word error rate {:.1}% over {} words",
            wer * 100.0,
            speech::normalise(&speech::script()).len()
        );
        assert!(
            wer <= 0.10,
            "{content_type}: word error rate {wer:.3}\n{text}"
        );
        // Written as a subtitler would sign off: sentences end with punctuation and start with
        // capitals.
        let ends = text.matches(['.', '?', '!']).count();
        assert!(ends >= 10, "{content_type}: {ends} sentence ends\n{text}");
        assert!(text.starts_with("Good morning"), "{text}");
        assert!(text.contains("show.\nToday we talk about water."), "{text}");

        let transcript = server
            .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
            .json();
        let cue_count = transcript["cueCount"].as_u64().expect("cueCount") as usize;
        assert!(cue_count >= 10, "{transcript}");
        for name in FORMATS {
            let r = server.get(&org.key, &format!("/v1/jobs/{id}/subtitles?format={name}"));
            assert_eq!(r.status, 200, "{name}: {}", r.text());
            let format = Format::from_name(name).expect("known format");
            let cues = cuecraft_formats::parse(format, &r.body)
                .unwrap_or_else(|e| panic!("{content_type} {name} does not parse: {e:?}"));
            assert_eq!(cues.len(), cue_count, "{content_type} {name}");
            let last = cues.last().expect("cues");
            assert!(
                last.end.0 as f64 / 1000.0 <= seconds + 0.1,
                "{name}: last cue ends after the media"
            );
        }

        // Declared the measured duration: one charge of its price; any settlement nets to it.
        let price = cents_for(*seconds, 10);
        assert_eq!(
            rows(&server, id, "charge"),
            [-price],
            "{:?}",
            server.ledger(id)
        );
        assert!(rows(&server, id, "refund").is_empty());
        let net: i64 = server.ledger(id).iter().map(|(_, c)| c).sum();
        assert_eq!(net, -price, "{:?}", server.ledger(id));
    }
}

#[test]
fn media_without_audio_unreadable_media_and_unknown_languages_fail_with_a_reason_and_a_full_refund()
{
    let server = default_server("2");
    let org = server.org(1_000, &[]);
    let dir = tempfile::tempdir().expect("temp dir");

    let silent_video = speech::video_only(dir.path(), "silent.mp4", 4);
    let speech_mp4 = speech::to_mp4(
        &speech::speak(dir.path(), &speech::PARAGRAPHS[..1]),
        dir.path(),
        "talk.mp4",
    );
    // An MP4 cut in half: its index (moov) is at the end, so nothing in it can be decoded.
    let bytes = std::fs::read(&speech_mp4).expect("mp4");
    let truncated = dir.path().join("truncated.mp4");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).expect("write");
    let junk = dir.path().join("junk.mp3");
    std::fs::write(
        &junk,
        (0..50_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect::<Vec<u8>>(),
    )
    .expect("write");

    let cases: Vec<(String, &str)> = vec![
        (
            submit(&server, &org, &silent_video, "video/mp4", 60.0, json!({})),
            "the file has no audio stream",
        ),
        (
            submit(&server, &org, &truncated, "video/mp4", 60.0, json!({})),
            "ffmpeg could not read the file: ",
        ),
        (
            submit(&server, &org, &junk, "audio/mpeg", 60.0, json!({})),
            "ffmpeg could not read the file: ",
        ),
        (
            submit(
                &server,
                &org,
                &speech_mp4,
                "video/mp4",
                60.0,
                json!({"language": "tlh"}),
            ),
            "the whisper recognizer does not know language tlh",
        ),
    ];
    for (id, reason) in &cases {
        let job = finished(&server, &org, id);
        assert_eq!(job["status"], "failed", "{job}");
        let error = job["error"].as_str().unwrap_or_default();
        assert!(
            error.starts_with(reason),
            "{error:?} should start with {reason:?}"
        );
        assert!(
            !error.contains(&server.data_dir().display().to_string()),
            "server path leaked: {error}"
        );
        assert_eq!(
            rows(&server, id, "charge"),
            [-10],
            "{:?}",
            server.ledger(id)
        );
        assert_eq!(rows(&server, id, "refund"), [10], "{:?}", server.ledger(id));
        let r = server.get(&org.key, &format!("/v1/jobs/{id}/subtitles"));
        assert_eq!((r.status, r.code()), (409, "job_failed".to_string()));
        // A failed job keeps its original and no editor media (the proxy and peaks made beside
        // the recognition that failed, for the speech with an unknown language, are removed).
        let media = server.media_store();
        assert!(media.size(id, Object::Original).expect("store").is_some());
        for object in cuecraft_host::media::EDITOR_MEDIA {
            assert_eq!(
                media.size(id, object).expect("store"),
                None,
                "{object:?} of failed job {id}"
            );
        }
    }
    assert_eq!(
        server.balance(&org.id),
        1_000,
        "every failure refunded in full"
    );
}

#[test]
fn kill_9_while_whisper_transcribes_resumes_to_ready_with_one_charge_and_one_settlement() {
    let mut server = default_server("1");
    let org = server.org(1_000, &[]);
    let dir = tempfile::tempdir().expect("temp dir");
    let wav = speech::speak(dir.path(), &speech::PARAGRAPHS);
    let seconds = duration_of(&wav);
    // Declared 120 s (20 cents), measured about 40 s: the settlement gives the difference back.
    let id = submit(&server, &org, &wav, "audio/wav", 120.0, json!({}));
    wait_status(&server, &org, &id, "transcribing");
    // Kill the server while whisper is at work on the job, whatever the machine's speed.
    let server_pid = server.child.as_ref().expect("running").id();
    let recognizer = wait_for_child(server_pid, "python3");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        server.get(&org.key, &format!("/v1/jobs/{id}")).json()["status"],
        "transcribing"
    );
    server.kill9();
    // The decoder dies with the server instead of finishing its work for nobody.
    assert!(
        ended_within(recognizer, Duration::from_secs(10)),
        "the whisper worker ({recognizer}) still running 10 s after the server was killed"
    );
    server.spawn();

    let job = finished(&server, &org, &id);
    assert_eq!(job["status"], "ready", "{job}\n{}", server.log());
    let price = cents_for(seconds, 10);
    assert_eq!(
        rows(&server, &id, "charge"),
        [-20],
        "{:?}",
        server.ledger(&id)
    );
    assert_eq!(
        rows(&server, &id, "settle"),
        [20 - price],
        "{:?}",
        server.ledger(&id)
    );
    assert!(rows(&server, &id, "refund").is_empty());
    assert_eq!(server.balance(&org.id), 1_000 - price);
    let wer = speech::word_error_rate(&speech::script(), &transcript_text(&server, &org, &id));
    eprintln!("e2e after kill -9: word error rate {:.1}%", wer * 100.0);
    assert!(wer <= 0.10, "{wer}");
}

#[test]
fn cuecraft_submit_writes_an_srt_from_the_real_server() {
    let server = default_server("1");
    let org = server.org(10_000, &[]);
    let dir = tempfile::tempdir().expect("temp dir");
    let mp3 = speech::to_mp3(
        &speech::speak(dir.path(), &speech::PARAGRAPHS[..2]),
        dir.path(),
        "talk.mp3",
    );
    let out = dir.path().join("talk.srt");
    let api = format!("{}/v1", server.base());
    let run = submit_cmd(&mp3, &api, &org.key)
        .args([
            "--poll-interval",
            "0.5",
            "--settings",
            r#"{"language":"en","maxCharsPerLine":37}"#,
        ])
        .arg("-o")
        .arg(&out)
        .output()
        .expect("run cuecraft submit");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "submit failed: {stderr}\n{}",
        server.log()
    );
    assert!(
        stderr.contains("uploading") && stderr.contains("ready"),
        "{stderr}"
    );

    let srt = std::fs::read(&out).expect("srt written");
    let cues = cuecraft_formats::parse(Format::Srt, &srt).expect("valid SRT");
    assert!(cues.len() >= 4, "{}", String::from_utf8_lossy(&srt));
    let text: Vec<String> = cues.iter().flat_map(|c| c.lines.clone()).collect();
    assert!(text.iter().all(|l| l.chars().count() <= 37), "{text:?}");
    let reference = speech::PARAGRAPHS[..2].join(" ");
    let wer = speech::word_error_rate(&reference, &text.join(" "));
    assert!(wer <= 0.15, "{wer}: {text:?}");

    // A file without audio: the job fails and submit says why, exiting non-zero.
    let silent = speech::video_only(dir.path(), "silent.mp4", 2);
    let run = submit_cmd(&silent, &api, &org.key)
        .args(["--poll-interval", "0.2"])
        .output()
        .expect("run cuecraft submit");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        stderr.contains("failed: the file has no audio stream"),
        "{stderr}"
    );
    assert!(!dir.path().join("silent.srt").exists());

    // A key the server does not know: the API's error and code are shown.
    let run = submit_cmd(
        &mp3,
        &api,
        "ck_live_0000000000000000000000000000000000000000",
    )
    .output()
    .expect("run cuecraft submit");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(stderr.contains("_api_key, HTTP 401)"), "{stderr}");
}

/// `text` spoken by espeak-ng in `voice`, as WAV.
fn espeak(dir: &Path, voice: &str, text: &str) -> PathBuf {
    let wav = dir.join(format!("{voice}.wav"));
    let st = Command::new("espeak-ng")
        .args(["-v", voice, "-w"])
        .arg(&wav)
        .arg(text)
        .status()
        .expect("espeak-ng (scripts/setup)");
    assert!(st.success());
    wav
}

#[test]
fn german_is_detected_silence_is_ready_without_cues_and_a_long_file_keeps_every_word() {
    let server = default_server("2");
    let org = server.org(100_000, &[]);
    let dir = tempfile::tempdir().expect("temp dir");
    let german = espeak(
        dir.path(),
        "de",
        "Guten Morgen und willkommen. Heute sprechen wir über das Wetter. \
         Morgen wird es regnen, aber am Wochenende scheint die Sonne.",
    );
    let silence = dir.path().join("silence.wav");
    #[rustfmt::skip]
    let st = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono",
               "-t", "12"])
        .arg(&silence)
        .status()
        .expect("ffmpeg");
    assert!(st.success());
    // Twice the four paragraphs: about 95 s, so at least three 30 s windows.
    let long_dir = tempfile::tempdir().expect("temp dir");
    let mut paragraphs = speech::PARAGRAPHS.to_vec();
    paragraphs.extend_from_slice(&speech::PARAGRAPHS);
    let long = speech::to_mp3(
        &speech::speak(long_dir.path(), &paragraphs),
        dir.path(),
        "long.mp3",
    );
    assert!(duration_of(&long) > 70.0);

    let auto = submit(&server, &org, &german, "audio/wav", 10.0, json!({}));
    let forced = submit(
        &server,
        &org,
        &german,
        "audio/wav",
        10.0,
        json!({"language": "de-AT"}),
    );
    let quiet = submit(&server, &org, &silence, "audio/wav", 12.0, json!({}));
    let long_id = submit(
        &server,
        &org,
        &long,
        "audio/mpeg",
        100.0,
        json!({"language": "en"}),
    );

    let job = finished(&server, &org, &auto);
    assert_eq!(job["status"], "ready", "{job}\n{}", server.log());
    assert_eq!(
        job["language"], "de",
        "auto stores the detected language: {job}"
    );
    let text = transcript_text(&server, &org, &auto);
    assert!(text.contains("Guten Morgen"), "{text}");
    let job = finished(&server, &org, &forced);
    assert_eq!(
        job["language"], "de-AT",
        "a forced code is kept as requested: {job}"
    );
    let srt = server.get(&org.key, &format!("/v1/jobs/{forced}/subtitles?format=srt"));
    assert!(
        srt.header("content-disposition")
            .unwrap_or_default()
            .contains("_de-AT.srt"),
        "{:?}",
        srt.header("content-disposition")
    );

    // Silence: the job is ready, with no words and no cues (and no invented text).
    let job = finished(&server, &org, &quiet);
    assert_eq!(job["status"], "ready", "{job}");
    let transcript = server
        .get(&org.key, &format!("/v1/jobs/{quiet}/transcript"))
        .json();
    assert_eq!(transcript["cueCount"], 0, "{transcript}");

    let job = finished(&server, &org, &long_id);
    assert_eq!(job["status"], "ready", "{job}");
    let text = transcript_text(&server, &org, &long_id);
    let reference = paragraphs.join("\n");
    let wer = speech::word_error_rate(&reference, &text);
    assert!(wer <= 0.10, "{wer}: {text}");
    let n = speech::normalise(&text).len() as f64;
    let expected = speech::normalise(&reference).len() as f64;
    assert!(
        (n - expected).abs() / expected <= 0.03,
        "{n} words for {expected}: {text}"
    );
    assert_eq!(text.matches("Thank you for listening").count(), 2, "{text}");
}

#[test]
fn pocketsphinx_stays_selectable_and_gets_sentences_from_its_pauses() {
    let server = pocketsphinx_server("1");
    let org = server.org(10_000, &[]);
    let dir = tempfile::tempdir().expect("temp dir");
    let wav = speech::speak(dir.path(), &speech::PARAGRAPHS);
    let id = submit(
        &server,
        &org,
        &wav,
        "audio/wav",
        duration_of(&wav),
        json!({}),
    );
    let job = finished(&server, &org, &id);
    assert_eq!(job["status"], "ready", "{job}\n{}", server.log());
    let text = transcript_text(&server, &org, &id);
    let wer = speech::word_error_rate(&speech::script(), &text);
    assert!(wer <= 0.10, "{wer}: {text}");
    // pocketsphinx writes lowercase words without punctuation; the pauses between the sentences
    // become sentence ends with capitals after them.
    let ends = text.matches('.').count();
    assert!(ends >= 10, "{ends} sentence ends: {text}");
    assert!(text.starts_with("Good morning"), "{text}");
    let err = submit(
        &server,
        &org,
        &wav,
        "audio/wav",
        60.0,
        json!({"language": "nl"}),
    );
    let job = finished(&server, &org, &err);
    assert_eq!(
        job["error"],
        "no pocketsphinx model for language nl; installed: en"
    );
}

/// The JSON cues of a job's original transcript (text and times), for comparing two runs.
fn cues(server: &Server, org: &Org, id: &str) -> Value {
    let r = server.get(&org.key, &format!("/v1/jobs/{id}/transcript"));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["cues"].clone()
}

/// The python3 children (whisper workers) of `parent`, oldest first.
fn python_children(parent: u32) -> Vec<u32> {
    let mut found: Vec<(u64, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // rest[0] = state, rest[1] = ppid, rest[19] = start time.
        if stat[open + 1..close].starts_with("python3")
            && rest.get(1) == Some(&parent.to_string().as_str())
            && rest.first() != Some(&"Z")
        {
            let started = rest.get(19).and_then(|s| s.parse().ok()).unwrap_or(0);
            found.push((started, stat[..open].trim().parse().expect("pid")));
        }
    }
    found.sort();
    found.into_iter().map(|(_, pid)| pid).collect()
}

/// 120 s of speech (the four paragraphs three times): five windows of at most 30 s.
fn two_minutes_of_speech(dir: &Path) -> PathBuf {
    let once = speech::speak(dir, &speech::PARAGRAPHS);
    let thrice = dir.join("thrice.wav");
    let list = dir.join("thrice.txt");
    let line = format!("file '{}'\n", once.display());
    std::fs::write(&list, line.repeat(3)).expect("list");
    let out = Command::new("ffmpeg")
        .args([
            "-nostdin", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i",
        ])
        .arg(&list)
        .args(["-c:a", "pcm_s16le"])
        .arg(&thrice)
        .output()
        .expect("ffmpeg");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    thrice
}

#[test]
fn a_lone_jobs_windows_shared_by_two_whisper_workers_give_one_workers_words_even_when_one_is_killed(
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let wav = two_minutes_of_speech(dir.path());
    let seconds = duration_of(&wav);

    // One worker: the windows one after the other on one process.
    let single = default_server("1");
    let org = single.org(1_000, &[]);
    let id = submit(&single, &org, &wav, "audio/wav", seconds, json!({}));
    let job = finished(&single, &org, &id);
    assert_eq!(job["status"], "ready", "{job}\n{}", single.log());
    let reference = cues(&single, &org, &id);
    let pid = single.child.as_ref().expect("running").id();
    assert_eq!(python_children(pid).len(), 1, "{}", single.log());
    drop(single);

    // Two workers, one job: its windows are shared by both processes, the words are the same.
    // While it runs, GET /jobs/{id} tells how far it has come in a header (the job's shape is
    // the contract's): a share that only grows, and the time left once a window is done.
    let server = default_server("2");
    let org = server.org(1_000, &[]);
    let id = submit(&server, &org, &wav, "audio/wav", seconds, json!({}));
    let mut shares: Vec<f64> = Vec::new();
    let mut estimated = false;
    let deadline = Instant::now() + JOB_DEADLINE;
    let job = loop {
        let r = server.get(&org.key, &format!("/v1/jobs/{id}"));
        let job = r.json();
        if let Some(p) = r.header("cuecraft-progress") {
            assert_eq!(job["status"], "transcribing", "{p}");
            let share: f64 = p
                .split(';')
                .find_map(|f| f.trim().strip_prefix("share="))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{p}"));
            estimated |= p.contains("seconds-left=");
            shares.push(share);
        }
        if matches!(job["status"].as_str(), Some("ready" | "failed")) {
            break job;
        }
        assert!(Instant::now() < deadline, "{job}\n{}", server.log());
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(job["status"], "ready", "{job}\n{}", server.log());
    assert!(
        shares.windows(2).all(|w| w[0] <= w[1]),
        "progress went back: {shares:?}"
    );
    assert!(
        shares.iter().any(|s| *s > 0.0 && *s < 1.0) && estimated,
        "no progress seen while it ran: {shares:?}"
    );
    // The pool starts a process only when one is needed: a second one for a lone job means
    // the job lent its windows to it.
    let pid = server.child.as_ref().expect("running").id();
    assert_eq!(python_children(pid).len(), 2, "{}", server.log());
    assert_eq!(cues(&server, &org, &id), reference);

    // Again, and one of the two processes is killed with -9 mid-job: its window is decoded
    // again by another process, and the job is ready with the same words, charged once and
    // settled once.
    let id = submit(&server, &org, &wav, "audio/wav", 200.0, json!({}));
    let deadline = Instant::now() + JOB_DEADLINE;
    // The pool kept both processes of the job before: this job's windows go to both at once.
    // Once the first window is done (the job tells its progress), the other process is still
    // decoding the second and at least two windows wait: kill the older process.
    loop {
        let r = server.get(&org.key, &format!("/v1/jobs/{id}"));
        let share = r
            .header("cuecraft-progress")
            .and_then(|p| p.split(';').find_map(|f| f.trim().strip_prefix("share=")))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        if share > 0.0 {
            assert!(share < 0.6, "too late to kill mid-job: {share}");
            break;
        }
        let status = r.json()["status"].clone();
        assert!(
            status != "ready" && status != "failed",
            "{status}\n{}",
            server.log()
        );
        assert!(Instant::now() < deadline, "no progress\n{}", server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    let kids = python_children(pid);
    assert_eq!(kids.len(), 2, "{}", server.log());
    let killed = Command::new("kill")
        .args(["-9", &kids[0].to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let r = server.get(&org.key, &format!("/v1/jobs/{id}"));
    assert_eq!(
        r.json()["status"],
        "transcribing",
        "the kill landed after the job"
    );
    let job = finished(&server, &org, &id);
    assert_eq!(job["status"], "ready", "{job}\n{}", server.log());
    // The killed process was replaced by one fresh process, not more.
    let after = python_children(pid);
    assert_eq!(after.len(), 2, "{}", server.log());
    assert!(!after.contains(&kids[0]), "{after:?} {kids:?}");
    assert_eq!(cues(&server, &org, &id), reference);
    let price = cents_for(seconds, 10);
    assert_eq!(
        rows(&server, &id, "charge"),
        [-34],
        "{:?}",
        server.ledger(&id)
    );
    assert_eq!(
        rows(&server, &id, "settle"),
        [34 - price],
        "{:?}",
        server.ledger(&id)
    );
    assert!(rows(&server, &id, "refund").is_empty());
}

/// Peak resident memory (VmHWM) of a process, MB.
fn peak_rss_mb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmHWM");
    kb / 1024
}

#[test]
fn a_three_hour_recording_is_transcribed_with_each_whisper_worker_under_600_mb() {
    // Three hours, mostly silence: 40 s of speech at the start, at 1:30:00 and at the end.
    // FLAC keeps the upload small (silence compresses to almost nothing).
    let dir = tempfile::tempdir().expect("temp dir");
    let speech = speech::speak(dir.path(), &speech::PARAGRAPHS);
    let speech_s = duration_of(&speech);
    let pause = (10_800.0 - 3.0 * speech_s) / 2.0;
    let long = dir.path().join("three-hours.flac");
    let filter = format!(
        "[1]atrim=0:{pause}[s1];[1]atrim=0:{pause}[s2];[0][s1][0][s2][0]concat=n=5:v=0:a=1"
    );
    let out = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-y", "-i"])
        .arg(&speech)
        .args([
            "-f",
            "lavfi",
            "-i",
            "anullsrc=r=16000:cl=mono",
            "-filter_complex",
            &filter,
        ])
        .args(["-c:a", "flac"])
        .arg(&long)
        .output()
        .expect("ffmpeg");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seconds = duration_of(&long);
    assert!((seconds - 10_800.0).abs() < 2.0, "{seconds}");

    let server = default_server("2");
    let org = server.org(100_000, &[]);
    let id = submit(&server, &org, &long, "audio/flac", seconds, json!({}));
    let job = finished(&server, &org, &id);
    assert_eq!(job["status"], "ready", "{job}\n{}", server.log());
    let text = transcript_text(&server, &org, &id);
    let script = speech::script();
    let wer = speech::word_error_rate(&[script.as_str(); 3].join("\n"), &text);
    assert!(wer <= 0.10, "{wer}: {text}");
    // The workers stay in the pool after the job: their peak is what the job took.
    let workers = python_children(server.child.as_ref().expect("running").id());
    assert!(!workers.is_empty());
    for pid in workers {
        let mb = peak_rss_mb(pid);
        eprintln!("whisper worker {pid}: peak RSS {mb} MB on a 3-hour recording");
        assert!(mb < 600, "whisper worker {pid} peaked at {mb} MB");
    }
}
