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

use cuecraft_engine::{FrameRate, Millis};
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

/// ffmpeg `scdet`'s scene score (0-100) from which a frame starts a new shot. Chosen by
/// measurement (`scripts/score-timing`, BENCHMARKS.md "Timing to the picture"): after the proxy's
/// scaling, 5 finds every hard cut of the timing corpus on its frame with no false cut on the
/// static shot or the slow fade.
pub const SHOT_THRESHOLD: u32 = 5;
/// A change detected fewer frames than this after the previous one is the same change (a shot of
/// under a quarter of a second), as `scripts/score-timing` counts it.
const MIN_SHOT_FRAMES: u64 = 6;

/// The picture's filter chain of the editor's proxy, with the shot-change detector writing the
/// frames that start a shot to `shots` (ffmpeg's `metadata` filter, `frame:N ... pts_time:T`
/// lines).
fn picture_chain(shots: &Path) -> std::ffi::OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let mut chain = format!(
        "scale=-2:'min(360,ih)':flags=bilinear,format=yuv420p,scdet=threshold={SHOT_THRESHOLD},\
         metadata=mode=print:key=lavfi.scd.time:file="
    )
    .into_bytes();
    let mut url = b"file:".to_vec();
    url.extend_from_slice(shots.as_os_str().as_bytes());
    chain.extend(escape_filter_value(&url));
    std::ffi::OsString::from_vec(chain)
}

/// `value` escaped for a filter option inside a filter graph: once for the option parser
/// (`\ ' :`), then once more for the graph's parser (`\ ' [ ] , ;`), so any file name reaches
/// the filter as it is.
fn escape_filter_value(value: &[u8]) -> Vec<u8> {
    let escape = |bytes: &[u8], special: &[u8]| {
        let mut out = Vec::with_capacity(bytes.len() + 8);
        for &b in bytes {
            if special.contains(&b) {
                out.push(b'\\');
            }
            out.push(b);
        }
        out
    };
    escape(&escape(value, b"\\':"), b"\\'[],;")
}

/// The shot changes in the `metadata` filter's output: the time of the first frame of each new
/// shot, in order, a change within [`MIN_SHOT_FRAMES`] of the one before dropped.
fn parse_shot_changes(text: &str) -> Vec<Millis> {
    let mut out = Vec::new();
    let mut last: Option<u64> = None;
    let mut frame: Option<(u64, Option<f64>)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("frame:") {
            let n = rest.split_whitespace().next().and_then(|n| n.parse().ok());
            let t = rest
                .split_whitespace()
                .find_map(|f| f.strip_prefix("pts_time:"))
                .and_then(parse_seconds);
            frame = n.map(|n| (n, t));
        } else if let Some(value) = line.strip_prefix("lavfi.scd.time=") {
            let Some((n, t)) = frame.take() else { continue };
            let Some(t) = t.or_else(|| parse_seconds(value)) else {
                continue;
            };
            if last.is_some_and(|l| n < l + MIN_SHOT_FRAMES) {
                continue;
            }
            last = Some(n);
            out.push(Millis((t * 1000.0).round() as i64));
        }
    }
    out
}

/// Reads and removes the detector's output file.
fn take_shot_changes(shots: &Path) -> Result<Vec<Millis>, MediaError> {
    let text = std::fs::read(shots).map_err(MediaError::Io);
    let _ = std::fs::remove_file(shots);
    Ok(parse_shot_changes(&String::from_utf8_lossy(&text?)))
}

/// The shot changes of `input`'s first video stream (the times of the first frame of each new
/// shot), found as the editor's proxy finds them ([`make_proxy`]) but without encoding anything;
/// the detector writes to `scratch` (removed after). For media without a proxy at hand: `cuecraft
/// check --media` and a pipeline step repeated after its proxy was stored.
pub fn detect_shot_changes(input: &Path, scratch: &Path) -> Result<Vec<Millis>, MediaError> {
    let out = run(
        "ffmpeg",
        Command::new("ffmpeg")
            .args(["-nostdin", "-v", "error", "-i"])
            .arg(file_url(input))
            .args(["-an", "-sn", "-dn", "-map", "0:v:0", "-vf"])
            .arg(picture_chain(scratch))
            .args(["-f", "null", "-"]),
    )?;
    if !out.status.success() {
        let _ = std::fs::remove_file(scratch);
        return Err(MediaError::Unreadable(tool_message(&out.stderr, input)));
    }
    take_shot_changes(scratch)
}

/// Makes the editor's browser-playable proxy of `input` at `output`: WebM with VP8 picture
/// (at most 360 lines, realtime speed) and Opus sound for video, Opus sound alone for audio-only
/// media. Written to a temp name and renamed, like the extracted audio. For video, the same
/// decoding finds the shot changes (ffmpeg's `scdet` on the scaled picture, [`SHOT_THRESHOLD`]):
/// they are returned, empty for audio-only media.
pub fn make_proxy(input: &Path, output: &Path, video: bool) -> Result<Vec<Millis>, MediaError> {
    let tmp = tmp_path(output);
    let mut shots = tmp.as_os_str().to_owned();
    shots.push(".shots");
    let shots = PathBuf::from(shots);
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-v", "error", "-y", "-i"])
        .arg(file_url(input))
        .args(["-sn", "-dn"]);
    if video {
        cmd.args(["-map", "0:v:0", "-map", "0:a:0"])
            .arg("-vf")
            .arg(picture_chain(&shots))
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
        let _ = std::fs::remove_file(&shots);
        return Err(MediaError::Unreadable(tool_message(&out.stderr, input)));
    }
    let found = if video {
        take_shot_changes(&shots)
    } else {
        Ok(Vec::new())
    };
    let found = found.inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    std::fs::rename(&tmp, output).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        MediaError::Io(e)
    })?;
    Ok(found)
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
    fn shot_changes_are_read_from_the_detector_output_one_per_shot() {
        let text = "frame:0    pts:0       pts_time:0\n\
                    frame:30   pts:1200    pts_time:1.2\nlavfi.scd.time=1.2\n\
                    frame:33   pts:1320    pts_time:1.32\nlavfi.scd.time=1.32\n\
                    frame:55   pts:2200    pts_time:2.2\nlavfi.scd.time=2.2\n\
                    lavfi.scd.time=9\nframe:x\nlavfi.scd.time=3\n";
        // The change 3 frames after a cut is the same change; a value without its frame line
        // is skipped.
        assert_eq!(parse_shot_changes(text), vec![Millis(1200), Millis(2200)]);
        assert!(parse_shot_changes("").is_empty());
    }

    #[test]
    fn filter_values_are_escaped_for_both_parsers() {
        assert_eq!(
            escape_filter_value(b"file:/a,b [c];d'e\\f"),
            b"file\\\\:/a\\,b \\[c\\]\\;d\\\\\\'e\\\\\\\\f".to_vec()
        );
    }

    /// A video of three shots of 25 fps, cut at frames 30 and 55, with sound.
    fn video_with_cuts(dir: &Path) -> PathBuf {
        let path = dir.join("cuts.mkv");
        let status = Command::new("ffmpeg")
            .args(["-nostdin", "-v", "error", "-y"])
            .args(["-f", "lavfi", "-i", "testsrc2=s=320x180:r=25:d=1.2"])
            .args(["-f", "lavfi", "-i", "smptehdbars=s=320x180:r=25:d=1"])
            .args(["-f", "lavfi", "-i", "rgbtestsrc=s=320x180:r=25:d=1"])
            .args(["-f", "lavfi", "-i", "sine=d=3.2"])
            .args(["-filter_complex", "[0:v][1:v][2:v]concat=n=3:v=1:a=0[v]"])
            .args([
                "-map", "[v]", "-map", "3:a", "-c:v", "libx264", "-c:a", "flac",
            ])
            .arg(file_url(&path))
            .status()
            .expect("ffmpeg");
        assert!(status.success());
        path
    }

    #[test]
    fn the_proxy_pass_finds_the_cuts_on_their_frames_whatever_the_directory_name() {
        let tmp = tempfile::tempdir().expect("tmp");
        // Every character the filter graph or its options treat specially.
        let dir = tmp.path().join("a,b [c];d'e:f\\g");
        std::fs::create_dir(&dir).expect("dir");
        let video = video_with_cuts(&dir);
        let cuts = vec![Millis(1200), Millis(2200)];
        let proxy = dir.join("p.webm");
        assert_eq!(make_proxy(&video, &proxy, true).expect("proxy"), cuts);
        assert!(proxy.exists());
        assert_eq!(
            detect_shot_changes(&video, &dir.join("scratch")).expect("detect"),
            cuts
        );
        // Nothing of the detector is left behind.
        let mut left: Vec<_> = std::fs::read_dir(&dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        left.sort();
        assert_eq!(left, ["cuts.mkv", "p.webm"]);
        // Audio-only media has none, and its proxy is made as before.
        assert_eq!(
            make_proxy(&video, &dir.join("a.webm"), false).ok(),
            Some(vec![])
        );
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
