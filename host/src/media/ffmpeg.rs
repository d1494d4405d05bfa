//! ffprobe and ffmpeg: probing, extraction of 16 kHz mono PCM, the editor's proxy and peaks.
//!
//! Both tools are run as child processes (Debian's ffmpeg, installed by `scripts/setup`): they read
//! every container and codec a customer may upload, and a crash or hang in a decoder stays outside
//! the server. Inputs are passed as `file:PATH` so that a file name can never be taken for an
//! ffmpeg protocol or option.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cuecraft_engine::FrameRate;
use serde::Deserialize;

/// What ffprobe found in a media file.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Length of the media, seconds (the container's duration, else its longest stream).
    pub duration_seconds: f64,
    /// The file has at least one audio stream.
    pub has_audio: bool,
    /// The file has at least one video stream that is not an attached picture (cover art).
    pub has_video: bool,
    /// Frame rate of the first video stream; `None` for audio-only files.
    pub frame_rate: Option<FrameRate>,
}

/// Why a media file could not be probed or converted. The `Display` text is meant for the user
/// (it becomes the job's `error`); it never contains the server's file paths.
#[derive(Debug)]
#[non_exhaustive]
pub enum MediaError {
    /// The file was read, but it holds no audio to transcribe.
    NoAudio,
    /// ffmpeg or ffprobe could not read the file: not media, truncated, or an unknown codec.
    Unreadable(String),
    /// ffmpeg or ffprobe could not be started (not installed, not on `PATH`).
    Tool {
        /// `ffmpeg` or `ffprobe`.
        tool: &'static str,
        /// Why starting it failed.
        source: io::Error,
    },
    /// The extracted audio could not be written or moved into place.
    Io(io::Error),
}

impl fmt::Display for MediaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MediaError::NoAudio => f.write_str("the file has no audio stream"),
            MediaError::Unreadable(detail) => write!(f, "ffmpeg could not read the file: {detail}"),
            MediaError::Tool { tool, source } => write!(f, "could not run {tool}: {source}"),
            MediaError::Io(e) => write!(f, "could not store the extracted audio: {e}"),
        }
    }
}

impl std::error::Error for MediaError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MediaError::Tool { source, .. } => Some(source),
            MediaError::Io(e) => Some(e),
            MediaError::NoAudio | MediaError::Unreadable(_) => None,
        }
    }
}

/// Probes `path` with `ffprobe -show_format -show_streams`.
///
/// Fails with [`MediaError::Unreadable`] when ffprobe cannot read the file or finds no duration.
/// A file without audio is *not* an error here (`has_audio` is false): the caller decides.
pub fn probe(path: &Path) -> Result<Probe, MediaError> {
    let out = run(
        "ffprobe",
        Command::new("ffprobe")
            .args(["-v", "error", "-print_format", "json"])
            .args(["-show_format", "-show_streams"])
            .arg(file_url(path)),
    )?;
    if !out.status.success() {
        return Err(MediaError::Unreadable(tool_message(&out.stderr, path)));
    }
    parse_probe(&out.stdout).map_err(MediaError::Unreadable)
}

/// Converts the first audio stream of `input` to a 16 kHz mono 16-bit PCM WAV file at `output`.
///
/// ffmpeg writes `OUTPUT.tmp` first, which is renamed over `output` only once it is complete, so a
/// crash never leaves a truncated WAV where a worker would take it for a finished one.
pub fn extract_wav(input: &Path, output: &Path) -> Result<(), MediaError> {
    let tmp = tmp_path(output);
    let out = run(
        "ffmpeg",
        Command::new("ffmpeg")
            .args(["-nostdin", "-v", "error", "-y", "-i"])
            .arg(file_url(input))
            .args(["-vn", "-sn", "-dn", "-map", "0:a:0"])
            .args(["-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", "-f", "wav"])
            .arg(file_url(&tmp)),
    )?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        // ffmpeg's words for "no audio" vary between versions; asking ffprobe is reliable.
        if let Ok(p) = probe(input) {
            if !p.has_audio {
                return Err(MediaError::NoAudio);
            }
        }
        return Err(MediaError::Unreadable(tool_message(&out.stderr, input)));
    }
    std::fs::rename(&tmp, output).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        MediaError::Io(e)
    })
}

fn run(tool: &'static str, cmd: &mut Command) -> Result<Output, MediaError> {
    crate::child::ends_with_server(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|source| MediaError::Tool { tool, source })
}

/// `file:PATH`, so that ffmpeg never reads a path as a protocol (`http:`) or an option (`-x`).
fn file_url(path: &Path) -> std::ffi::OsString {
    let mut url = std::ffi::OsString::from("file:");
    url.push(path.as_os_str());
    url
}

fn tmp_path(output: &Path) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// The tool's stderr made fit for a user: the server-side path removed, one line, bounded length.
fn tool_message(stderr: &[u8], path: &Path) -> String {
    let text = String::from_utf8_lossy(stderr);
    let url = file_url(path);
    let url = url.to_string_lossy();
    let plain = path.to_string_lossy();
    let mut lines: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line
            .replace(&format!("{url}: "), "")
            .replace(&format!("{plain}: "), "")
            .replace(url.as_ref(), "the file")
            .replace(plain.as_ref(), "the file");
        let line = line.trim().to_string();
        if !line.is_empty() && !lines.contains(&line) {
            lines.push(line);
        }
    }
    let joined = lines.join("; ");
    let message = if joined.is_empty() {
        "unknown error".to_string()
    } else {
        joined
    };
    // Keep the job's error readable even when a decoder prints a page of complaints.
    let mut bounded: String = message.chars().take(300).collect();
    if bounded.len() < message.len() {
        bounded.push('…');
    }
    bounded
}

#[derive(Deserialize)]
struct FfprobeOutput {
    #[serde(default)]
    streams: Vec<FfprobeStream>,
    format: Option<FfprobeFormat>,
}

#[derive(Deserialize)]
struct FfprobeStream {
    codec_type: Option<String>,
    r_frame_rate: Option<String>,
    avg_frame_rate: Option<String>,
    duration: Option<String>,
    #[serde(default)]
    disposition: Disposition,
}

#[derive(Deserialize, Default)]
struct Disposition {
    #[serde(default)]
    attached_pic: u8,
}

#[derive(Deserialize)]
struct FfprobeFormat {
    duration: Option<String>,
}

fn parse_probe(json: &[u8]) -> Result<Probe, String> {
    let parsed: FfprobeOutput =
        serde_json::from_slice(json).map_err(|e| format!("ffprobe printed invalid JSON: {e}"))?;
    if parsed.format.is_none() && parsed.streams.is_empty() {
        return Err("no media streams found".to_string());
    }
    let has_audio = parsed
        .streams
        .iter()
        .any(|s| s.codec_type.as_deref() == Some("audio"));
    let video = parsed
        .streams
        .iter()
        .find(|s| s.codec_type.as_deref() == Some("video") && s.disposition.attached_pic == 0);
    let frame_rate = video.and_then(|v| {
        pick_frame_rate(
            v.r_frame_rate.as_deref().and_then(parse_rational),
            v.avg_frame_rate.as_deref().and_then(parse_rational),
        )
    });
    let container = parsed
        .format
        .as_ref()
        .and_then(|f| f.duration.as_deref())
        .and_then(parse_seconds);
    let longest_stream = parsed
        .streams
        .iter()
        .filter_map(|s| s.duration.as_deref().and_then(parse_seconds))
        .fold(None, |acc: Option<f64>, d| {
            Some(acc.map_or(d, |a| a.max(d)))
        });
    let duration_seconds = container
        .or(longest_stream)
        .ok_or_else(|| "the media has no duration".to_string())?;
    Ok(Probe {
        duration_seconds,
        has_audio,
        has_video: video.is_some(),
        frame_rate,
    })
}

fn parse_seconds(text: &str) -> Option<f64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|d| d.is_finite() && *d >= 0.0)
}

/// Parses ffprobe's `num/den` (`30000/1001`, `25/1`; `0/0` when unknown), reduced to fit `u32`.
fn parse_rational(text: &str) -> Option<FrameRate> {
    let (n, d) = text.trim().split_once('/')?;
    let (n, d): (u64, u64) = (n.trim().parse().ok()?, d.trim().parse().ok()?);
    if n == 0 || d == 0 {
        return None;
    }
    let g = gcd(n, d);
    FrameRate::new(u32::try_from(n / g).ok()?, u32::try_from(d / g).ok()?)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `r_frame_rate` is the nominal rate (exact NTSC rationals) but can be a timebase-like value for
/// variable-rate files; `avg_frame_rate` is the measured one. Prefer the nominal rate when both
/// agree within 1%, else the average.
fn pick_frame_rate(r: Option<FrameRate>, avg: Option<FrameRate>) -> Option<FrameRate> {
    match (r, avg) {
        (Some(r), Some(a)) => {
            let rf = f64::from(r.num) / f64::from(r.den);
            let af = f64::from(a.num) / f64::from(a.den);
            if (rf - af).abs() <= af * 0.01 {
                Some(r)
            } else {
                Some(a)
            }
        }
        (r, a) => r.or(a),
    }
}

/// Peaks per second of media in the editor's waveform (one byte each: 20 ms).
pub const PEAKS_PER_SECOND: u32 = 50;
/// The sample rate the peaks are computed from.
const PEAK_RATE: u32 = 8000;

/// Makes the editor's browser-playable proxy of `input` at `output`: WebM with VP8 picture
/// (at most 360 lines, realtime speed) and Opus sound for video, Opus sound alone for audio-only
/// media. Written to a temp name and renamed, like the extracted audio.
pub fn make_proxy(input: &Path, output: &Path, video: bool) -> Result<(), MediaError> {
    let tmp = tmp_path(output);
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-v", "error", "-y", "-i"])
        .arg(file_url(input))
        .args(["-sn", "-dn"]);
    if video {
        cmd.args(["-map", "0:v:0", "-map", "0:a:0"])
            .args([
                "-vf",
                "scale=-2:'min(360,ih)':flags=bilinear,format=yuv420p",
            ])
            .args(["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8"])
            .args(["-b:v", "700k", "-auto-alt-ref", "0"]);
    } else {
        cmd.args(["-vn", "-map", "0:a:0"]);
    }
    // Opus at its lowest complexity: five times faster than the default 10 (4.7 vs 22.3 CPU s
    // for 30 minutes), which matters now that the proxy is made while recognition uses the
    // cores; at 64 kbit/s the editor's playback of speech does not suffer from it.
    cmd.args(["-c:a", "libopus", "-b:a", "64k", "-compression_level", "0"])
        .args(["-ac", "2", "-f", "webm"])
        .arg(file_url(&tmp));
    let out = run("ffmpeg", &mut cmd)?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(MediaError::Unreadable(tool_message(&out.stderr, input)));
    }
    std::fs::rename(&tmp, output).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        MediaError::Io(e)
    })
}

/// The waveform's peaks of `input`'s first audio stream: for every 1/[`PEAKS_PER_SECOND`] s, the
/// largest absolute sample as 0-255, written to `sink` as they come. ffmpeg decodes to 8 kHz mono
/// 16-bit PCM on a pipe, read a piece at a time, so neither the audio nor the peaks of a 10-hour
/// file sit in memory.
pub fn compute_peaks(input: &Path, sink: &mut dyn std::io::Write) -> Result<(), MediaError> {
    use std::io::Read;
    let mut child = crate::child::ends_with_server(
        Command::new("ffmpeg")
            .args(["-nostdin", "-v", "error", "-i"])
            .arg(file_url(input))
            .args(["-vn", "-sn", "-dn", "-map", "0:a:0", "-ac", "1"])
            .args([
                "-ar",
                &PEAK_RATE.to_string(),
                "-f",
                "s16le",
                "-c:a",
                "pcm_s16le",
                "-",
            ]),
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .map_err(|source| MediaError::Tool {
        tool: "ffmpeg",
        source,
    })?;
    let per_peak = (PEAK_RATE / PEAKS_PER_SECOND) as usize;
    let mut peaks = Vec::with_capacity(64 * 1024 / per_peak + 1);
    let (mut n, mut max) = (0usize, 0u16);
    let mut buf = vec![0u8; 64 * 1024];
    let mut filled = 0usize;
    if let Some(mut out) = child.stdout.take() {
        loop {
            let got = out.read(&mut buf[filled..]).map_err(MediaError::Io)?;
            if got == 0 {
                break;
            }
            filled += got;
            let whole = filled & !1;
            for s in buf[..whole].chunks_exact(2) {
                max = max.max(i16::from_le_bytes([s[0], s[1]]).unsigned_abs());
                n += 1;
                if n == per_peak {
                    peaks.push((max >> 7).min(255) as u8);
                    n = 0;
                    max = 0;
                }
            }
            sink.write_all(&peaks).map_err(MediaError::Io)?;
            peaks.clear();
            // An odd byte waits for its other half.
            buf.copy_within(whole..filled, 0);
            filled -= whole;
        }
    }
    let status = child.wait().map_err(MediaError::Io)?;
    if !status.success() {
        return Err(MediaError::Unreadable("could not decode the audio".into()));
    }
    if n > 0 {
        sink.write_all(&[(max >> 7).min(255) as u8])
            .map_err(MediaError::Io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: &str, expected: Result<Probe, &str>) {
        let got = parse_probe(json.as_bytes());
        match (got, expected) {
            (Ok(g), Ok(e)) => assert_eq!(g, e),
            (Err(g), Err(e)) => assert!(g.contains(e), "{g:?} does not contain {e:?}"),
            (g, e) => panic!("got {g:?}, expected {e:?}"),
        }
    }

    fn fr(num: u32, den: u32) -> Option<FrameRate> {
        FrameRate::new(num, den)
    }

    #[test]
    fn cover_art_is_not_video() {
        check(
            r#"{"streams":[
                {"codec_type":"audio","duration":"180.5"},
                {"codec_type":"video","r_frame_rate":"90000/1","avg_frame_rate":"0/0",
                 "disposition":{"attached_pic":1}}],
              "format":{"duration":"180.500000"}}"#,
            Ok(Probe {
                duration_seconds: 180.5,
                has_audio: true,
                has_video: false,
                frame_rate: None,
            }),
        );
    }

    #[test]
    fn ntsc_rate_is_kept_as_rational() {
        check(
            r#"{"streams":[{"codec_type":"video","r_frame_rate":"30000/1001",
                "avg_frame_rate":"2997/100"}],"format":{"duration":"10"}}"#,
            Ok(Probe {
                duration_seconds: 10.0,
                has_audio: false,
                has_video: true,
                frame_rate: fr(30000, 1001),
            }),
        );
    }

    #[test]
    fn variable_rate_falls_back_to_average() {
        check(
            r#"{"streams":[{"codec_type":"video","r_frame_rate":"1000/1",
                "avg_frame_rate":"50/2"}],"format":{"duration":"3"}}"#,
            Ok(Probe {
                duration_seconds: 3.0,
                has_audio: false,
                has_video: true,
                frame_rate: fr(25, 1),
            }),
        );
    }

    #[test]
    fn stream_duration_is_used_when_container_has_none() {
        check(
            r#"{"streams":[{"codec_type":"audio","duration":"4.25"},
                {"codec_type":"audio","duration":"5.5"}],"format":{}}"#,
            Ok(Probe {
                duration_seconds: 5.5,
                has_audio: true,
                has_video: false,
                frame_rate: None,
            }),
        );
    }

    #[test]
    fn missing_duration_is_unreadable() {
        check(
            r#"{"streams":[{"codec_type":"audio"}],"format":{"duration":"N/A"}}"#,
            Err("no duration"),
        );
        check(r#"{}"#, Err("no media streams"));
        check("not json", Err("invalid JSON"));
    }

    #[test]
    fn huge_rational_is_reduced_or_refused() {
        assert_eq!(parse_rational("50000000000/2000000000"), fr(25, 1));
        assert_eq!(parse_rational("0/0"), None);
        assert_eq!(parse_rational("25"), None);
        assert_eq!(parse_rational("5000000/1"), None);
    }

    #[test]
    fn tool_message_hides_server_paths() {
        let path = Path::new("/srv/data/media/job-1/original");
        let stderr =
            b"file:/srv/data/media/job-1/original: Invalid data found when processing input\n";
        assert_eq!(
            tool_message(stderr, path),
            "Invalid data found when processing input"
        );
        assert_eq!(tool_message(b"", path), "unknown error");
    }

    #[test]
    fn errors_read_as_sentences_for_users() {
        assert_eq!(
            MediaError::NoAudio.to_string(),
            "the file has no audio stream"
        );
        assert_eq!(
            MediaError::Unreadable("Invalid data found when processing input".into()).to_string(),
            "ffmpeg could not read the file: Invalid data found when processing input"
        );
    }
}
