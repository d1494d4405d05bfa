//! `media::probe` and `media::extract_wav` against real ffmpeg, on files ffmpeg's lavfi generates.

use std::path::{Path, PathBuf};
use std::process::Command;

use cuecraft_engine::FrameRate;
use cuecraft_host::media::{extract_wav, probe, MediaError};

/// Runs ffmpeg with `args` writing `name` in `dir`; panics with ffmpeg's stderr when it fails,
/// since every test here needs the file it asked for.
fn generate(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let result = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-y"])
        .args(args)
        .arg(&out)
        .output()
        .expect("ffmpeg is installed (scripts/setup)");
    assert!(
        result.status.success(),
        "ffmpeg {args:?}: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    out
}

fn sine_mp3(dir: &Path) -> PathBuf {
    generate(
        dir,
        "tone.mp3",
        &[
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:duration=3",
            "-c:a",
            "libmp3lame",
        ],
    )
}

fn video_with_audio(dir: &Path) -> PathBuf {
    generate(
        dir,
        "clip.mp4",
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=160x120:rate=30000/1001:duration=2",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=300:duration=2:sample_rate=48000",
            "-ac",
            "2",
            "-shortest",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-c:a",
            "aac",
        ],
    )
}

fn video_only(dir: &Path) -> PathBuf {
    generate(
        dir,
        "silent.mp4",
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=160x120:rate=25:duration=2",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
        ],
    )
}

/// Reads the WAV header fields that matter to a recognizer: channels, rate, bits, data bytes.
fn wav_format(path: &Path) -> (u16, u32, u16, usize) {
    let bytes = std::fs::read(path).expect("wav written");
    assert_eq!(&bytes[0..4], b"RIFF");
    assert_eq!(&bytes[8..12], b"WAVE");
    let mut pos = 12;
    let mut fmt = None;
    let mut data = None;
    while pos + 8 <= bytes.len() {
        let id = &bytes[pos..pos + 4];
        let len = u32::from_le_bytes(bytes[pos + 4..pos + 8].try_into().unwrap()) as usize;
        let body = &bytes[pos + 8..(pos + 8 + len).min(bytes.len())];
        if id == b"fmt " {
            fmt = Some((
                u16::from_le_bytes([body[2], body[3]]),
                u32::from_le_bytes(body[4..8].try_into().unwrap()),
                u16::from_le_bytes([body[14], body[15]]),
            ));
        } else if id == b"data" {
            data = Some(body.len());
        }
        pos += 8 + len + (len & 1);
    }
    let (ch, rate, bits) = fmt.expect("fmt chunk");
    (ch, rate, bits, data.expect("data chunk"))
}

#[test]
fn probe_reports_audio_only_duration_without_frame_rate() {
    let dir = tempfile::tempdir().unwrap();
    let p = probe(&sine_mp3(dir.path())).unwrap();
    assert!(p.has_audio);
    assert!(!p.has_video);
    assert_eq!(p.frame_rate, None);
    assert!(
        (p.duration_seconds - 3.0).abs() < 0.1,
        "{}",
        p.duration_seconds
    );
}

#[test]
fn probe_reports_video_frame_rate_as_rational() {
    let dir = tempfile::tempdir().unwrap();
    let p = probe(&video_with_audio(dir.path())).unwrap();
    assert!(p.has_audio);
    assert!(p.has_video);
    assert_eq!(p.frame_rate, FrameRate::new(30000, 1001));
    assert!(
        (p.duration_seconds - 2.0).abs() < 0.1,
        "{}",
        p.duration_seconds
    );
}

#[test]
fn probe_ignores_cover_art() {
    let dir = tempfile::tempdir().unwrap();
    let art = generate(
        dir.path(),
        "art.png",
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=64x64:duration=1",
            "-frames:v",
            "1",
        ],
    );
    let tone = sine_mp3(dir.path());
    let tagged = generate(
        dir.path(),
        "tagged.mp3",
        &[
            "-i",
            tone.to_str().unwrap(),
            "-i",
            art.to_str().unwrap(),
            "-map",
            "0:a",
            "-map",
            "1:v",
            "-c",
            "copy",
            "-disposition:v",
            "attached_pic",
            "-id3v2_version",
            "3",
        ],
    );
    let p = probe(&tagged).unwrap();
    assert!(p.has_audio);
    assert!(!p.has_video, "cover art is not a video stream");
    assert_eq!(p.frame_rate, None);
}

#[test]
fn probe_of_video_only_file_has_no_audio() {
    let dir = tempfile::tempdir().unwrap();
    let p = probe(&video_only(dir.path())).unwrap();
    assert!(!p.has_audio);
    assert!(p.has_video);
    assert_eq!(p.frame_rate, FrameRate::new(25, 1));
}

#[test]
fn probe_of_corrupt_bytes_is_unreadable_without_leaking_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("upload.bin");
    let junk: Vec<u8> = (0..20_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&path, junk).unwrap();
    let err = probe(&path).unwrap_err();
    assert!(matches!(err, MediaError::Unreadable(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.starts_with("ffmpeg could not read the file: "),
        "{message}"
    );
    assert!(!message.contains(dir.path().to_str().unwrap()), "{message}");
}

#[test]
fn extract_wav_makes_16khz_mono_pcm_from_video() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("audio.wav");
    extract_wav(&video_with_audio(dir.path()), &wav).unwrap();
    let (channels, rate, bits, data) = wav_format(&wav);
    assert_eq!((channels, rate, bits), (1, 16000, 16));
    // 2 s at 16 kHz, 2 bytes a sample, give or take an AAC frame of priming.
    assert!((60_000..=68_000).contains(&data), "{data} bytes of samples");
    assert!(!dir.path().join("audio.wav.tmp").exists());
}

#[test]
fn extract_wav_takes_audio_only_files() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("audio.wav");
    extract_wav(&sine_mp3(dir.path()), &wav).unwrap();
    let (channels, rate, bits, data) = wav_format(&wav);
    assert_eq!((channels, rate, bits), (1, 16000, 16));
    assert!(
        (94_000..=100_000).contains(&data),
        "{data} bytes of samples"
    );
}

#[test]
fn extract_wav_of_video_only_says_no_audio() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("audio.wav");
    let err = extract_wav(&video_only(dir.path()), &wav).unwrap_err();
    assert!(matches!(err, MediaError::NoAudio), "{err:?}");
    assert_eq!(err.to_string(), "the file has no audio stream");
    assert!(!wav.exists());
    assert!(!dir.path().join("audio.wav.tmp").exists());
}

#[test]
fn extract_wav_of_corrupt_bytes_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("upload.mp4");
    std::fs::write(&path, b"\0\0\0\x18ftypmp42 this is not a movie").unwrap();
    let wav = dir.path().join("audio.wav");
    let err = extract_wav(&path, &wav).unwrap_err();
    assert!(matches!(err, MediaError::Unreadable(_)), "{err:?}");
    assert!(!wav.exists());
}

#[test]
fn extract_wav_replaces_a_stale_temp_file_left_by_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("audio.wav");
    std::fs::write(dir.path().join("audio.wav.tmp"), b"half a file").unwrap();
    extract_wav(&sine_mp3(dir.path()), &wav).unwrap();
    assert_eq!(wav_format(&wav).1, 16000);
}

#[test]
fn file_names_that_look_like_options_or_protocols_are_read_as_files() {
    let dir = tempfile::tempdir().unwrap();
    let tone = sine_mp3(dir.path());
    let odd = dir.path().join("-i http:x.mp3");
    std::fs::copy(&tone, &odd).unwrap();
    assert!(probe(&odd).unwrap().has_audio);
}
