//! Timing to the picture through the real service (issue 24): a video's shot changes are found
//! by the pipeline's proxy pass and the API's cues keep the shot-change rules — a cue starts on
//! the cut its speech follows, a cue that would hang over a cut ends 2 frames before it — while
//! audio-only media and `formatSubtitles: false` keep the cues they had; the editor shows the
//! cuts and its downloads equal the API's byte for byte. The words are the test recognizer's
//! (fixed times: "Hello world." 0.10-0.95 s, the next sentence from 1.20 s), so the cuts can sit
//! at known frames around them.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::common::{str_field, Org, Server};
use crate::web::Web;

/// A 4 s, 25 fps MP4 with sound whose picture cuts once, at `cut` (a frame number).
fn video(dir: &Path, name: &str, cut: u32) -> PathBuf {
    let path = dir.join(name);
    let first = f64::from(cut) / 25.0;
    let status = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-y"])
        .args(["-f", "lavfi", "-i"])
        .arg(format!("testsrc2=s=320x180:r=25:d={first}"))
        .args(["-f", "lavfi", "-i"])
        .arg(format!("smptehdbars=s=320x180:r=25:d={}", 4.0 - first))
        .args(["-f", "lavfi", "-i", "anoisesrc=d=4:a=0.02"])
        .args(["-filter_complex", "[0:v][1:v]concat=n=2:v=1:a=0[v]"])
        .args([
            "-map", "[v]", "-map", "2:a", "-c:v", "libx264", "-c:a", "aac",
        ])
        .arg(&path)
        .status()
        .expect("ffmpeg");
    assert!(status.success());
    path
}

fn run(server: &Server, org: &Org, media: &Path, content_type: &str, settings: Value) -> String {
    let data = std::fs::read(media).expect("media");
    let created = server.create_job(
        &org.key,
        &json!({
            "filename": media.file_name().and_then(|n| n.to_str()).unwrap_or("media"),
            "contentType": content_type,
            "sizeBytes": data.len(),
            "durationSeconds": 4,
            "settings": settings,
        }),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    let up = server.upload(&created, &data);
    assert_eq!(up.status, 200, "{}", up.text());
    let id = str_field(&created, "id");
    let job = server.wait_for(&org.key, &id, &["ready", "failed"]);
    assert_eq!(job["status"], "ready", "{job}\n{}", server.log());
    id
}

/// (start, end) of each of the API's cues, seconds.
fn times(server: &Server, org: &Org, id: &str) -> Vec<(f64, f64)> {
    let r = server.get(&org.key, &format!("/v1/jobs/{id}/transcript"));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["cues"]
        .as_array()
        .expect("cues")
        .iter()
        .map(|c| {
            (
                c["start"].as_f64().expect("start"),
                c["end"].as_f64().expect("end"),
            )
        })
        .collect()
}

#[test]
fn cues_start_on_a_cut_and_end_two_frames_before_one_while_audio_keeps_its_timing() {
    // wait_for polls several times a second: more than the default 120 requests a minute.
    let server = Server::start(&["--workers", "2", "--rate-limit-per-minute", "100000"]);
    let org = server.org(100_000, &[]);
    let dir = tempfile::tempdir().expect("tmp");
    // Audio-only: the layout's own timing, which the cuts below would break.
    let audio = run(&server, &org, &server.tone(4), "audio/wav", json!({}));
    assert_eq!(times(&server, &org, &audio), [(0.12, 1.08), (1.2, 3.32)]);

    // A cut at frame 28 (1.12 s), 2 frames before the second sentence's speech: its cue starts
    // on the cut (the first cue ends the frame gap before it).
    let in_cut = video(dir.path(), "in.mp4", 28);
    let in_job = run(&server, &org, &in_cut, "video/mp4", json!({}));
    assert_eq!(times(&server, &org, &in_job), [(0.12, 1.0), (1.12, 3.24)]);
    // Without smart formatting the picture changes nothing.
    let greedy = run(
        &server,
        &org,
        &in_cut,
        "video/mp4",
        json!({"formatSubtitles": false}),
    );
    let greedy_audio = run(
        &server,
        &org,
        &server.tone(4),
        "audio/wav",
        json!({"formatSubtitles": false}),
    );
    assert_eq!(
        times(&server, &org, &greedy),
        times(&server, &org, &greedy_audio)
    );

    // A cut at frame 26 (1.04 s) that the first cue would hang over by a frame: it ends 2 frames
    // before the cut, still after its last word (0.95 s).
    let out_cut = video(dir.path(), "out.mp4", 26);
    let out_job = run(&server, &org, &out_cut, "video/mp4", json!({}));
    assert_eq!(times(&server, &org, &out_job), [(0.12, 0.96), (1.2, 3.32)]);

    // The editor shows the cuts (none for audio) and downloads what the API downloads.
    let web = Web::sign_in(&server, &org.owner);
    let shots =
        |id: &str| web.get_json(&format!("/editor/{id}/data")).json()["job"]["shotChanges"].clone();
    assert_eq!(shots(&in_job), json!([1120]));
    assert_eq!(shots(&out_job), json!([1040]));
    assert_eq!(shots(&audio), json!([]));
    for id in [&in_job, &out_job, &greedy] {
        for f in ["srt", "vtt", "ttml", "ass", "ebu-stl"] {
            let api = server.get(&org.key, &format!("/v1/jobs/{id}/subtitles?format={f}"));
            let ours = web.get(&format!("/editor/{id}/download?format={f}"));
            assert_eq!((api.status, ours.status), (200, 200), "{f}");
            assert_eq!(ours.body, api.body, "{id}: {f} differs");
        }
    }
    let srt = server
        .get(&org.key, &format!("/v1/jobs/{in_job}/subtitles?format=srt"))
        .text();
    assert!(srt.contains("00:00:01,120 --> 00:00:03,240"), "{srt}");
}

/// A 4 s WAV of room tone (-60 dBFS) with a voice-like sound (a 150 Hz tone and its third
/// harmonic at -20 dBFS) over each of `spans` (seconds).
fn speech(dir: &Path, spans: &[(f64, f64)]) -> PathBuf {
    let rate = 16_000usize;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let samples: Vec<i16> = (0..4 * rate)
        .map(|i| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let t = i as f64 / rate as f64;
            let noise = ((seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * 57.0;
            let ph = 2.0 * std::f64::consts::PI * t;
            let voice = if spans.iter().any(|&(a, b)| (a..b).contains(&t)) {
                3277.0 * ((150.0 * ph).sin() + 0.5 * (450.0 * ph).sin())
            } else {
                0.0
            };
            (noise + voice).round() as i16
        })
        .collect();
    let data = (samples.len() * 2) as u32;
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&(36 + data).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    for v in [
        16u32,
        1 | (1 << 16),
        rate as u32,
        2 * rate as u32,
        2 | (16 << 16),
    ] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&data.to_le_bytes());
    for s in samples {
        bytes.extend_from_slice(&s.to_le_bytes());
    }
    let path = dir.join("speech.wav");
    std::fs::write(&path, bytes).expect("write");
    path
}

#[test]
fn a_cue_starts_on_the_first_frame_of_speech_the_recognizer_placed_early() {
    // The test recognizer says "Hello" from 0.10 s and "Um," from 1.20 s; the sound of each
    // sentence starts 300 and 250 ms later (as Whisper places a first word after a pause early),
    // at frames 10 and 36 of 25 fps, and the first ends at 0.90 s (frame 22).
    let server = Server::start(&["--workers", "1", "--rate-limit-per-minute", "100000"]);
    let org = server.org(100_000, &[]);
    let dir = tempfile::tempdir().expect("tmp");
    let wav = speech(dir.path(), &[(0.40, 0.90), (1.45, 2.95)]);
    let id = run(&server, &org, &wav, "audio/wav", json!({}));
    let cues = times(&server, &org, &id);
    assert_eq!(cues.len(), 2, "{cues:?}");
    let frame = |t: f64| (t * 25.0).round() as i64;
    for ((start, _), first) in cues.iter().zip([10, 36]) {
        assert!(
            (frame(*start) - first).abs() <= 3,
            "a cue starts at frame {} where speech starts at {first}: {cues:?}",
            frame(*start)
        );
    }
    assert!(
        frame(cues[0].1) > 22,
        "the first cue ends before its speech: {cues:?}"
    );
    // The transcript's words carry the refined times: "Hello" starts on the sound.
    let r = server.get(&org.key, &format!("/v1/jobs/{id}/transcript"));
    let hello = r.json()["cues"][0]["words"][0]["start"]
        .as_f64()
        .expect("start");
    assert!((hello - 0.40).abs() < 0.02, "Hello starts at {hello}");
}
