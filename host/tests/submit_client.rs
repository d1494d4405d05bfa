//! `cuecraft submit` against a scripted stand-in server: the request sequence, the streamed upload,
//! 429 handling, atomic output and error reporting. (The e2e test against the real server is in
//! the root package's tests/media.rs.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use cuecraft_host::submit::{run, SubmitArgs};

/// One request as the stand-in server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Handler = Box<dyn FnMut(&Seen) -> (u16, Vec<(&'static str, String)>, String) + Send>;

/// Serves connections one by one with `handler` until the test ends; returns the base URL and
/// the log of requests.
fn serve(mut handler: Handler) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = Arc::clone(&log);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or_default().to_string();
            let target = parts.next().unwrap_or_default().to_string();
            let mut headers = Vec::new();
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                let h = h.trim_end();
                if h.is_empty() {
                    break;
                }
                let (n, v) = h.split_once(':').unwrap();
                headers.push((n.trim().to_string(), v.trim().to_string()));
            }
            let len: usize = headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                .map_or(0, |(_, v)| v.parse().unwrap());
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            let seen = Seen {
                method,
                target,
                headers,
                body,
            };
            let (status, extra, body) = handler(&seen);
            log2.lock().unwrap().push(seen);
            let mut out = stream;
            let mut head = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\n", body.len());
            for (n, v) in extra {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            head.push_str("Connection: close\r\n\r\n");
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(body.as_bytes());
        }
    });
    (base, log)
}

const SRT: &str = "1\r\n00:00:00,500 --> 00:00:02,000\r\nHello there.\r\n\r\n";

fn args(file: PathBuf, api: &str, output: PathBuf) -> SubmitArgs {
    SubmitArgs {
        file,
        settings: Some(r#"{"language":"en","maxCharsPerLine":32}"#.into()),
        format: "srt".into(),
        output: Some(output),
        api: format!("{api}/v1"),
        key: Some("ck_test_key".into()),
        ca_file: None,
        poll_interval: 0.05,
        name: None,
        content_type: None,
        duration: Some(12.5),
    }
}

/// A server that accepts the job, rate-limits the first poll, reports `final_status` on the third.
fn scripted(final_status: &'static str) -> Handler {
    let mut polls = 0;
    Box::new(move |r: &Seen| {
        let job = |status: &str| {
            format!(
                r#"{{"id":"0123456789abcdef01234567","status":"{status}","error":{},"language":"en"}}"#,
                if status == "failed" {
                    r#""the file has no audio stream""#
                } else {
                    "null"
                }
            )
        };
        match (r.method.as_str(), r.target.as_str()) {
            ("POST", "/v1/jobs") => {
                let host = r.header("host").unwrap_or_default();
                let upload_url =
                    format!("http://{host}/upload/0123456789abcdef01234567?expires=1&signature=ab");
                let body = format!(
                    r#"{{"id":"0123456789abcdef01234567","status":"uploading","name":"talk","editorUrl":"http://x/e","upload":{{"method":"PUT","url":"{upload_url}","headers":{{"Content-Type":"audio/mpeg","Content-Length":"{}"}},"expiresAt":"2030-01-01T00:00:00Z"}},"links":{{}}}}"#,
                    20_000
                );
                (201, vec![], body)
            }
            ("PUT", t) if t.starts_with("/upload/") => (200, vec![], String::new()),
            ("GET", "/v1/jobs/0123456789abcdef01234567") => {
                polls += 1;
                match polls {
                    1 => (
                        429,
                        vec![("Retry-After", "1".to_string())],
                        r#"{"error":"slow down","code":"rate_limited"}"#.into(),
                    ),
                    2 => (200, vec![], job("transcribing")),
                    _ => (200, vec![], job(final_status)),
                }
            }
            ("GET", "/v1/jobs/0123456789abcdef01234567/subtitles?format=srt") => (
                200,
                vec![("Content-Type", "application/x-subrip".into())],
                SRT.into(),
            ),
            _ => (
                404,
                vec![],
                r#"{"error":"no such route","code":"not_found"}"#.into(),
            ),
        }
    })
}

fn media_file(dir: &std::path::Path) -> PathBuf {
    let file = dir.join("talk.mp3");
    let bytes: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&file, bytes).unwrap();
    file
}

#[test]
fn submit_creates_uploads_polls_and_writes_the_subtitles() {
    let dir = tempfile::tempdir().unwrap();
    let file = media_file(dir.path());
    let (api, log) = serve(scripted("ready"));
    let out = dir.path().join("out.srt");
    run(args(file.clone(), &api, out.clone())).unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), SRT);
    assert!(!dir.path().join("out.srt.tmp").exists());

    let log = log.lock().unwrap();
    let calls: Vec<String> = log
        .iter()
        .map(|s| format!("{} {}", s.method, s.target))
        .collect();
    assert_eq!(calls[0], "POST /v1/jobs");
    assert!(calls[1].starts_with("PUT /upload/0123456789abcdef01234567?expires=1"));
    assert_eq!(
        calls
            .iter()
            .filter(|c| c.starts_with("GET /v1/jobs/0123456789abcdef01234567"))
            .count(),
        4
    );

    let create: serde_json::Value = serde_json::from_slice(&log[0].body).unwrap();
    assert_eq!(
        create,
        serde_json::json!({"filename": "talk.mp3", "contentType": "audio/mpeg", "sizeBytes": 20000,
            "durationSeconds": 12.5, "settings": {"language": "en", "maxCharsPerLine": 32}})
    );
    assert_eq!(log[0].header("authorization"), Some("Bearer ck_test_key"));
    // The upload carries the signed headers and exactly the file's bytes, and no API key.
    assert_eq!(log[1].header("content-type"), Some("audio/mpeg"));
    assert_eq!(log[1].body, std::fs::read(&file).unwrap());
    assert_eq!(log[1].header("authorization"), None);
}

#[test]
fn submit_reports_a_failed_job_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let (api, _) = serve(scripted("failed"));
    let out = dir.path().join("out.srt");
    let err = run(args(media_file(dir.path()), &api, out.clone())).unwrap_err();
    assert_eq!(
        format!("{err:#}"),
        "job 0123456789abcdef01234567 failed: the file has no audio stream"
    );
    assert!(!out.exists());
}

#[test]
fn submit_prints_the_api_error_and_code() {
    let dir = tempfile::tempdir().unwrap();
    let (api, log) = serve(Box::new(|_: &Seen| {
        (402, vec![], r#"{"error":"the organisation has too few credits","code":"insufficient_credits","requiredCents":13,"availableCents":0}"#.into())
    }));
    let err = run(args(media_file(dir.path()), &api, dir.path().join("o.srt"))).unwrap_err();
    assert_eq!(
        format!("{err:#}"),
        "POST /jobs: the organisation has too few credits (insufficient_credits, HTTP 402); the job needs 13 cents, the organisation has 0"
    );
    assert_eq!(
        log.lock().unwrap().len(),
        1,
        "nothing is uploaded after a refusal"
    );
}

#[test]
fn submit_refuses_bad_arguments_before_calling_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let file = media_file(dir.path());
    let mut a = args(file.clone(), "ftp://example.com", dir.path().join("o.srt"));
    assert!(format!("{:#}", run(a).unwrap_err()).contains("expected an http:// or https:// URL"));
    a = args(file.clone(), "http://127.0.0.1:9", dir.path().join("o.srt"));
    a.format = "docx".into();
    assert!(format!("{:#}", run(a).unwrap_err()).contains("unsupported --format"));
    a = args(file, "http://127.0.0.1:9", dir.path().join("o.srt"));
    a.settings = Some("[]".into());
    assert!(format!("{:#}", run(a).unwrap_err()).contains("must be a JSON object"));
}
