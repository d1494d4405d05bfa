//! `cuecraft submit`: a client that creates a job, uploads, polls and writes the subtitles.
//!
//! It follows the contract's client flow step by step: probe the file locally (size, content type
//! from the extension, duration with ffprobe), `POST /jobs`, one `PUT` of the file to the presigned
//! URL with a progress bar on stderr, `GET /jobs/{id}` every `--poll-interval` seconds with a
//! status line, then `GET /jobs/{id}/subtitles?format=F`, written to `-o` through a temporary file
//! and a rename. A 429 is waited out for its `Retry-After`; an API error prints its `error` and
//! `code` and the command exits non-zero.

mod http;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use serde_json::{json, Value};

use crate::media;
use http::{Body, Response, Tls, Url};

/// Longest wait honoured from a `Retry-After` header.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);
/// Network failures in a row tolerated while polling (the server may be restarting).
const MAX_POLL_FAILURES: u32 = 30;
/// Attempts at the upload when the connection breaks; the presigned URL stays valid for an hour.
const UPLOAD_ATTEMPTS: u32 = 3;

/// Submit a media file to a cuecraft server and write its subtitles.
#[derive(Debug, clap::Args)]
pub struct SubmitArgs {
    /// The audio or video file to transcribe.
    pub file: PathBuf,
    /// Job settings as a JSON object, or `@PATH` of a file holding one.
    #[arg(long)]
    pub settings: Option<String>,
    /// Subtitle format to download: srt, vtt, webvtt, ttml, ass or ebu-stl.
    #[arg(long, default_value = "srt")]
    pub format: String,
    /// Where to write the subtitles (`-` for stdout); default: FILE with the format's extension.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Base URL of the API, including `/v1`, e.g. https://subtitles.example.com/v1 or
    /// http://127.0.0.1:8080/v1.
    #[arg(long)]
    pub api: String,
    /// PEM certificate(s) of a private CA to trust for https (the API and the upload URL)
    /// instead of the system's roots.
    #[arg(long, env = "CUECRAFT_CA_FILE", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// API key; default: the CUECRAFT_API_KEY environment variable.
    #[arg(long)]
    pub key: Option<String>,
    /// Seconds between status polls.
    #[arg(long, default_value_t = 10.0)]
    pub poll_interval: f64,
    /// Job name; default: the file name without its extension (chosen by the server).
    #[arg(long)]
    pub name: Option<String>,
    /// Content type to declare; default: from the file's extension.
    #[arg(long)]
    pub content_type: Option<String>,
    /// Duration to declare, seconds; default: measured with ffprobe.
    #[arg(long)]
    pub duration: Option<f64>,
}

/// Runs the client.
pub fn run(args: SubmitArgs) -> anyhow::Result<()> {
    let key = match &args.key {
        Some(k) => k.clone(),
        None => std::env::var("CUECRAFT_API_KEY")
            .map_err(|_| anyhow!("no API key: pass --key or set CUECRAFT_API_KEY"))?,
    };
    let api = Url::parse(args.api.trim_end_matches('/')).map_err(|e| anyhow!("--api {e}"))?;
    let extension = extension_of(&args.format)?;
    if !(args.poll_interval.is_finite() && args.poll_interval > 0.0) {
        bail!("--poll-interval must be a positive number of seconds");
    }
    let poll_interval = Duration::from_secs_f64(args.poll_interval.min(3600.0));
    let settings = match &args.settings {
        Some(text) => Some(read_settings(text)?),
        None => None,
    };
    let output = match &args.output {
        Some(o) => o.clone(),
        None => args.file.with_extension(extension),
    };

    let client = Client {
        api,
        key,
        tls: Tls::new(args.ca_file.clone()),
    };
    let job = describe_file(&args)?;
    eprintln!(
        "{}: {}, {} bytes, {:.1} s",
        job.filename, job.content_type, job.size, job.duration
    );

    let mut request = json!({
        "filename": job.filename,
        "contentType": job.content_type,
        "sizeBytes": job.size,
        "durationSeconds": job.duration,
    });
    if let Some(name) = &args.name {
        request["name"] = json!(name);
    }
    if let Some(settings) = settings {
        request["settings"] = settings;
    }
    let created = client.call_json("POST", "/jobs", Some(&request))?;
    let id = str_field(&created, "id")?.to_string();
    eprintln!("job {id} created");
    if let Some(editor) = created.get("editorUrl").and_then(Value::as_str) {
        eprintln!("editor: {editor}");
    }

    upload(&client.tls, &created, &args.file, job.size)?;
    let ready = poll(&client, &id, poll_interval)?;
    let language = ready.get("language").and_then(Value::as_str).unwrap_or("?");
    let subtitles = client.call(
        "GET",
        &format!("/jobs/{id}/subtitles?format={}", args.format),
        None,
    )?;
    write_output(&output, &subtitles.body)?;
    if output != Path::new("-") {
        eprintln!(
            "wrote {} ({} bytes, language {language})",
            output.display(),
            subtitles.body.len()
        );
    }
    Ok(())
}

/// `GET {api}{path}` with the key from `key` or `CUECRAFT_API_KEY`, its JSON answer; an API error
/// becomes an error carrying its `error` and `code`, a 429 is waited out. For `cuecraft check
/// --job`, which reads a job's transcript; https is checked against `CUECRAFT_CA_FILE` when set,
/// else the system's roots.
pub fn get_json(api: &str, key: Option<&str>, path: &str) -> anyhow::Result<Value> {
    let key = match key {
        Some(k) => k.to_string(),
        None => std::env::var("CUECRAFT_API_KEY")
            .map_err(|_| anyhow!("no API key: pass --key or set CUECRAFT_API_KEY"))?,
    };
    let api = Url::parse(api.trim_end_matches('/')).map_err(|e| anyhow!("--api {e}"))?;
    let tls = Tls::new(std::env::var_os("CUECRAFT_CA_FILE").map(PathBuf::from));
    Client { api, key, tls }.call_json("GET", path, None)
}

/// What `POST /jobs` declares about the file.
struct FileFacts {
    filename: String,
    content_type: String,
    size: u64,
    duration: f64,
}

fn describe_file(args: &SubmitArgs) -> anyhow::Result<FileFacts> {
    let path = &args.file;
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a file", path.display());
    }
    let filename = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| anyhow!("{} has no file name", path.display()))?;
    let content_type = match &args.content_type {
        Some(t) => t.clone(),
        None => content_type_for(path)
            .ok_or_else(|| {
                anyhow!(
                    "cannot tell the content type of {filename} from its extension; pass --content-type (audio/... or video/...)"
                )
            })?
            .to_string(),
    };
    let duration = match args.duration {
        Some(d) => d,
        None => {
            media::probe(path)
                .with_context(|| format!("cannot measure the duration of {filename}"))?
                .duration_seconds
        }
    };
    if !(duration.is_finite() && duration > 0.0) {
        bail!("{filename} has no duration to declare; pass --duration SECONDS");
    }
    Ok(FileFacts {
        filename,
        content_type,
        size: meta.len(),
        duration,
    })
}

/// The content type of a media file by its extension.
pub fn content_type_for(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        "m4a" => "audio/mp4",
        "aac" => "audio/aac",
        "flac" => "audio/flac",
        "ogg" | "oga" => "audio/ogg",
        "opus" => "audio/opus",
        "wma" => "audio/x-ms-wma",
        "aif" | "aiff" => "audio/aiff",
        "amr" => "audio/amr",
        "weba" => "audio/webm",
        "mp4" => "video/mp4",
        "m4v" => "video/x-m4v",
        "mov" => "video/quicktime",
        "mkv" => "video/x-matroska",
        "webm" => "video/webm",
        "avi" => "video/x-msvideo",
        "wmv" => "video/x-ms-wmv",
        "mpg" | "mpeg" => "video/mpeg",
        "ts" | "mts" | "m2ts" => "video/mp2t",
        "3gp" => "video/3gpp",
        "flv" => "video/x-flv",
        "ogv" => "video/ogg",
        _ => return None,
    })
}

fn extension_of(format: &str) -> anyhow::Result<&'static str> {
    Ok(match format {
        "srt" => "srt",
        "vtt" | "webvtt" => "vtt",
        "ttml" => "ttml",
        "ass" => "ass",
        "ebu-stl" => "stl",
        other => {
            bail!("unsupported --format {other:?}: expected srt, vtt, webvtt, ttml, ass or ebu-stl")
        }
    })
}

fn read_settings(text: &str) -> anyhow::Result<Value> {
    let (source, raw) = match text.strip_prefix('@') {
        Some(path) => (
            path.to_string(),
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read settings file {path}"))?,
        ),
        None => ("--settings".to_string(), text.to_string()),
    };
    let value: Value = crate::json::value(raw.as_bytes())
        .with_context(|| format!("{source} is not valid JSON"))?;
    if !value.is_object() {
        bail!("{source} must be a JSON object");
    }
    Ok(value)
}

fn str_field<'a>(value: &'a Value, field: &str) -> anyhow::Result<&'a str> {
    value
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("the server's answer has no {field:?}"))
}

struct Client {
    api: Url,
    key: String,
    tls: Tls,
}

impl Client {
    /// One API call; waits out 429s; any other non-2xx status becomes an error carrying the API's
    /// `error` and `code`.
    fn call(&self, method: &str, path: &str, json: Option<&Value>) -> anyhow::Result<Response> {
        let url = self.api.join(path);
        let auth = format!("Bearer {}", self.key);
        let body = json.map(|v| v.to_string());
        loop {
            let mut headers = vec![
                ("Authorization", auth.as_str()),
                ("Accept", "application/json"),
            ];
            if body.is_some() {
                headers.push(("Content-Type", "application/json"));
            }
            let response = http::request(
                &self.tls,
                method,
                &url,
                &headers,
                match &body {
                    Some(b) => Body::Bytes(b.as_bytes()),
                    None => Body::Empty,
                },
            )
            .with_context(|| format!("{method} {}: cannot reach the server", url.target))?;
            if response.status == 429 {
                wait_retry_after(&response);
                continue;
            }
            if !(200..300).contains(&response.status) {
                bail!("{method} {path}: {}", api_error(&response));
            }
            return Ok(response);
        }
    }

    fn call_json(&self, method: &str, path: &str, json: Option<&Value>) -> anyhow::Result<Value> {
        let response = self.call(method, path, json)?;
        serde_json::from_slice(&response.body)
            .with_context(|| format!("{method} {path}: the server's answer is not JSON"))
    }
}

fn wait_retry_after(response: &Response) {
    let wait = response
        .header("retry-after")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(1), Duration::from_secs)
        .min(MAX_RETRY_AFTER);
    eprintln!("rate limited; retrying in {} s", wait.as_secs());
    std::thread::sleep(wait);
}

/// `error (code, HTTP status)`, plus the extra fields the contract defines for some codes.
fn api_error(response: &Response) -> String {
    let Ok(body) = serde_json::from_slice::<Value>(&response.body) else {
        let text = String::from_utf8_lossy(&response.body);
        return format!(
            "HTTP {}: {}",
            response.status,
            text.trim().chars().take(300).collect::<String>()
        );
    };
    let error = body.get("error").and_then(Value::as_str).unwrap_or("error");
    let code = body
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let mut message = format!("{error} ({code}, HTTP {})", response.status);
    if let Some(fields) = body.get("fields").and_then(Value::as_array) {
        for f in fields {
            let field = f.get("field").and_then(Value::as_str).unwrap_or("?");
            let why = f.get("message").and_then(Value::as_str).unwrap_or("?");
            message.push_str(&format!("\n  {field}: {why}"));
        }
    }
    if let (Some(required), Some(available)) = (
        body.get("requiredCents").and_then(Value::as_i64),
        body.get("availableCents").and_then(Value::as_i64),
    ) {
        message.push_str(&format!(
            "; the job needs {required} cents, the organisation has {available}"
        ));
    }
    message
}

fn upload(tls: &Tls, created: &Value, file: &Path, size: u64) -> anyhow::Result<()> {
    let upload = created
        .get("upload")
        .ok_or_else(|| anyhow!("the server's answer has no upload URL"))?;
    let url = Url::parse(str_field(upload, "url")?).map_err(|e| anyhow!("upload URL {e}"))?;
    let method = upload
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("PUT");
    let headers: Vec<(String, String)> = upload
        .get("headers")
        .and_then(Value::as_object)
        .map(|h| {
            h.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
    {
        bail!("the upload headers carry no Content-Length");
    }
    let header_refs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();

    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut bar = ProgressBar::new(size);
        let result = http::request(
            tls,
            method,
            &url,
            &header_refs,
            Body::File {
                path: file,
                len: size,
                progress: &mut |sent| bar.update(sent),
            },
        );
        bar.finish();
        match result {
            Ok(r) if (200..300).contains(&r.status) => return Ok(()),
            Ok(r) if r.status == 429 => wait_retry_after(&r),
            Ok(r) => bail!("upload refused: {}", api_error(&r)),
            Err(e) if attempt < UPLOAD_ATTEMPTS => {
                eprintln!("upload interrupted ({e}); retrying");
                std::thread::sleep(Duration::from_secs(2));
            }
            Err(e) => return Err(anyhow!(e).context("upload failed")),
        }
    }
}

/// Polls until the job is `ready` (returns it) or `failed` (an error with the job's `error`).
fn poll(client: &Client, id: &str, interval: Duration) -> anyhow::Result<Value> {
    let started = Instant::now();
    let tty = std::io::stderr().is_terminal();
    let mut last_status = String::new();
    let mut last_tenth = None;
    let mut failures = 0;
    loop {
        let path = format!("/jobs/{id}");
        let answer = client.call("GET", &path, None).and_then(|r| {
            let job: Value = serde_json::from_slice(&r.body)
                .with_context(|| format!("GET {path}: the server's answer is not JSON"))?;
            Ok((job, r.header(PROGRESS_HEADER).and_then(describe_progress)))
        });
        let (job, progress) = match answer {
            Ok(answer) => {
                failures = 0;
                answer
            }
            // A server that restarts mid-job resumes it: keep asking for a while.
            Err(e) if is_network_error(&e) && failures < MAX_POLL_FAILURES => {
                failures += 1;
                eprintln!("{e:#}; will retry");
                std::thread::sleep(interval);
                continue;
            }
            Err(e) => return Err(e),
        };
        let status = job
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string();
        let elapsed = started.elapsed().as_secs();
        let shown = match &progress {
            Some((text, _)) => format!("{status}, {text}"),
            None => status.clone(),
        };
        let tenth = progress.as_ref().map(|(_, tenth)| *tenth);
        if tty {
            eprint!("\r\x1b[Kjob {id}: {shown} ({elapsed} s)");
            let _ = std::io::stderr().flush();
        } else if status != last_status || (tenth.is_some() && tenth != last_tenth) {
            // Not a terminal (a log): a line when the status changes and at every tenth.
            eprintln!("job {id}: {shown} ({elapsed} s)");
        }
        last_tenth = tenth;
        last_status.clone_from(&status);
        match status.as_str() {
            "ready" => {
                if tty {
                    eprintln!();
                }
                return Ok(job);
            }
            "failed" => {
                if tty {
                    eprintln!();
                }
                let error = job
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given");
                bail!("job {id} failed: {error}");
            }
            _ => std::thread::sleep(interval),
        }
    }
}

/// The header of `GET /jobs/{id}` that tells a running job's progress (outside the job's shape).
const PROGRESS_HEADER: &str = "cuecraft-progress";

/// `share=0.420; seconds-left=183` -> ("42% recognised, about 3 min left", 4): the text and the
/// tenth reached; `None` for a header it cannot read.
fn describe_progress(header: &str) -> Option<(String, u32)> {
    let mut share = None;
    let mut left = None;
    for part in header.split(';') {
        match part.trim().split_once('=') {
            Some(("share", v)) => share = v.trim().parse::<f64>().ok(),
            Some(("seconds-left", v)) => left = v.trim().parse::<f64>().ok(),
            _ => {}
        }
    }
    let share = share.filter(|s| s.is_finite())?.clamp(0.0, 1.0);
    let percent = (share * 100.0).floor() as u32;
    let mut text = format!("{percent}% recognised");
    match left.filter(|l| l.is_finite() && *l >= 0.0) {
        Some(l) if l < 60.0 => text.push_str(", under a minute left"),
        Some(l) => text.push_str(&format!(", about {} min left", (l / 60.0).round())),
        None => {}
    }
    Some((text, percent / 10))
}

fn is_network_error(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| c.downcast_ref::<std::io::Error>().is_some())
}

/// Writes `bytes` to `output` through `OUTPUT.tmp` and a rename, so a reader never sees half a
/// file; `-` writes to stdout.
fn write_output(output: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if output == Path::new("-") {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        out.flush()?;
        return Ok(());
    }
    let mut tmp = output.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, output)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow!(e).context(format!("cannot write {}", output.display())));
    }
    Ok(())
}

/// The upload's progress on stderr: redrawn in place on a terminal, every 10% otherwise.
struct ProgressBar {
    total: u64,
    started: Instant,
    tty: bool,
    last_draw: Option<Instant>,
    last_tenth: u64,
}

impl ProgressBar {
    fn new(total: u64) -> ProgressBar {
        ProgressBar {
            total,
            started: Instant::now(),
            tty: std::io::stderr().is_terminal(),
            last_draw: None,
            last_tenth: u64::MAX,
        }
    }

    fn update(&mut self, sent: u64) {
        let total = self.total.max(1);
        let done = sent.min(total);
        let percent = done * 100 / total;
        if self.tty {
            let due = self
                .last_draw
                .is_none_or(|t| t.elapsed() >= Duration::from_millis(100));
            if due || done == total {
                self.last_draw = Some(Instant::now());
                let filled = (done * 30 / total) as usize;
                let secs = self.started.elapsed().as_secs_f64().max(0.001);
                eprint!(
                    "\r\x1b[Kuploading [{}{}] {percent:3}% {:.1}/{:.1} MB {:.1} MB/s",
                    "#".repeat(filled),
                    ".".repeat(30 - filled),
                    done as f64 / 1e6,
                    total as f64 / 1e6,
                    done as f64 / 1e6 / secs
                );
                let _ = std::io::stderr().flush();
            }
        } else if percent / 10 != self.last_tenth {
            self.last_tenth = percent / 10;
            eprintln!("uploading: {percent}% of {} bytes", self.total);
        }
    }

    fn finish(&mut self) {
        if self.tty {
            eprintln!();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_as_a_share_and_the_time_left() {
        assert_eq!(
            describe_progress("share=0.426; seconds-left=183"),
            Some(("42% recognised, about 3 min left".to_string(), 4))
        );
        assert_eq!(
            describe_progress("share=0.990; seconds-left=12"),
            Some(("99% recognised, under a minute left".to_string(), 9))
        );
        assert_eq!(
            describe_progress("share=0.000"),
            Some(("0% recognised".to_string(), 0))
        );
        assert_eq!(describe_progress("nonsense"), None);
        assert_eq!(describe_progress("share=NaN"), None);
    }

    #[test]
    fn content_types_come_from_extensions() {
        assert_eq!(
            content_type_for(Path::new("a/talk.MP3")),
            Some("audio/mpeg")
        );
        assert_eq!(content_type_for(Path::new("clip.mp4")), Some("video/mp4"));
        assert_eq!(content_type_for(Path::new("x.wav")), Some("audio/wav"));
        // MXF has no audio/* or video/* type the API would take: the user must choose one.
        assert_eq!(content_type_for(Path::new("x.mxf")), None);
        assert_eq!(content_type_for(Path::new("notes.txt")), None);
        assert_eq!(content_type_for(Path::new("noext")), None);
    }

    #[test]
    fn formats_map_to_file_extensions() {
        assert_eq!(extension_of("webvtt").unwrap(), "vtt");
        assert_eq!(extension_of("ebu-stl").unwrap(), "stl");
        assert!(extension_of("docx").is_err());
    }

    #[test]
    fn settings_must_be_a_json_object() {
        assert_eq!(
            read_settings(r#"{"language":"en"}"#).unwrap(),
            json!({"language": "en"})
        );
        assert!(read_settings("[1]").is_err());
        assert!(read_settings("{").is_err());
        assert!(read_settings("@/no/such/file.json").is_err());
    }

    fn response(status: u16, body: &str) -> Response {
        Response {
            status,
            headers: vec![],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn api_errors_show_error_code_and_details() {
        assert_eq!(
            api_error(&response(
                402,
                r#"{"error":"not enough credits","code":"insufficient_credits","requiredCents":30,"availableCents":5}"#
            )),
            "not enough credits (insufficient_credits, HTTP 402); the job needs 30 cents, the organisation has 5"
        );
        assert_eq!(
            api_error(&response(
                400,
                r#"{"error":"invalid","code":"invalid_request","fields":[{"field":"settings.maxCharsPerLine","message":"must be 10 to 250"}]}"#
            )),
            "invalid (invalid_request, HTTP 400)\n  settings.maxCharsPerLine: must be 10 to 250"
        );
        assert_eq!(
            api_error(&response(502, "Bad Gateway")),
            "HTTP 502: Bad Gateway"
        );
    }
}
