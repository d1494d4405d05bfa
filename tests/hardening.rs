//! What a security review or a careless client finds: no server path in a job's error, whichever
//! program failed.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::Server;

/// Writes an executable shell script `name` into `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    let status = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status()
        .expect("chmod");
    assert!(status.success());
    path
}

/// Runs a job on `server` and returns the failed job's `error`, checking that it holds no path of
/// the server's file system, names what went wrong (`expected`), and that the operator's log
/// keeps the full text (`logged`).
fn failed_job_error(server: &Server, expected: &str, logged: &str) -> String {
    let org = server.org(1000, &[]);
    let media = server.tone(2);
    let job: Value = server.run_job(&org.key, &media, json!({}));
    assert_eq!(job["status"], "failed", "{job}");
    let error = job["error"].as_str().expect("error").to_string();
    let tmp = server.tmp.path().to_string_lossy().into_owned();
    assert!(!error.contains(&tmp), "server path in {error:?}");
    assert!(!error.contains('/'), "a path in {error:?}");
    assert!(
        error.contains(expected),
        "{error:?} should say {expected:?}"
    );
    let log = server.log();
    assert!(
        log.contains(logged),
        "the log keeps the full text ({logged:?}): {log}"
    );
    error
}

#[test]
fn a_command_recognizers_messages_reach_the_job_without_server_paths() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let rec = script(
        tmp.path(),
        "rec.sh",
        r#"cat > /dev/null; echo "error: failed to read audio file '$1'" >&2; exit 1"#,
    );
    let server = Server::start_in(
        tmp,
        &["--recognizer".into(), format!("command:{}", rec.display())],
        &[],
    );
    let work = server.data_dir().join("work");
    let error = failed_job_error(
        &server,
        "failed to read audio file",
        &work.to_string_lossy(),
    );
    assert!(error.contains("[path]"), "{error}");
}

#[test]
fn a_command_recognizer_that_cannot_start_is_not_named_by_its_path() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let rec = tmp.path().join("rec.py");
    std::fs::write(&rec, "print('never runs')\n").expect("write");
    let server = Server::start_in(
        tmp,
        &["--recognizer".into(), format!("command:{}", rec.display())],
        &[],
    );
    failed_job_error(&server, "Permission denied", &rec.to_string_lossy());
}

#[test]
fn whisper_cpp_messages_reach_the_job_without_server_paths() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // Run as `BIN -m MODEL -f WAV ...`: it complains about the model and the audio by path.
    let bin = script(
        tmp.path(),
        "whisper-cli",
        r#"echo "whisper_init_from_file: failed to load model from '$2'" >&2
echo "error: failed to open '$4' as WAV file" >&2
exit 2"#,
    );
    let model = tmp.path().join("models").join("ggml-base.en.bin");
    let server = Server::start_in(
        tmp,
        &[
            "--recognizer".into(),
            format!("whisper-cpp:{}:{}", bin.display(), model.display()),
        ],
        &[],
    );
    failed_job_error(&server, "failed to load model", &model.to_string_lossy());
}

/// `PATH` with `dir` first, so a tool of that name there is found before the real one.
fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn pocketsphinx_messages_reach_the_job_without_server_paths() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    // The decoder, given the installed models' paths, fails the way a broken model does.
    script(
        &bin,
        "pocketsphinx_continuous",
        r#"while [ $# -gt 0 ]; do [ "$1" = -hmm ] && hmm=$2; shift; done
echo "INFO: cmd_ln.c(703): Parsing command line:" >&2
echo "ERROR: \"acmod.c\", line 79: Folder '$hmm' does not contain acoustic model definition 'mdef'" >&2
exit 1"#,
    );
    let server = Server::start_in(
        tmp,
        &["--recognizer".into(), "pocketsphinx".into()],
        &[("PATH", path_with(&bin))],
    );
    failed_job_error(
        &server,
        "does not contain acoustic model definition",
        "/usr/share/pocketsphinx/model",
    );
}

#[test]
fn ffmpeg_messages_reach_the_job_without_server_paths() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    // ffmpeg cannot write its output (the last argument): the disk is full.
    script(
        &bin,
        "ffmpeg",
        r#"for a; do last=$a; done; echo "$last: No space left on device" >&2; exit 1"#,
    );
    let rec = script(tmp.path(), "rec.sh", "cat > /dev/null; exit 1");
    let server = Server::start_in(
        tmp,
        &["--recognizer".into(), format!("command:{}", rec.display())],
        &[("PATH", path_with(&bin))],
    );
    let work = server.data_dir().join("work");
    failed_job_error(&server, "No space left on device", &work.to_string_lossy());
}

#[test]
fn scripts_run_starts_the_binary_cargo_built_wherever_the_target_directory_is() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // The target directory elsewhere, as CARGO_TARGET_DIR makes it. Its `cuecraft` records that
    // it ran, then is the real binary; the `cargo` first on PATH skips `build` (the binary is
    // there already, and a build into an empty directory would take minutes) and is the real
    // cargo for everything else, `metadata` included.
    let target = tmp.path().join("elsewhere");
    let release = target.join("release");
    std::fs::create_dir_all(&release).expect("mkdir");
    let marker = tmp.path().join("ran");
    script(
        &release,
        "cuecraft",
        &format!(
            "touch '{}'\nexec '{}' \"$@\"",
            marker.display(),
            crate::common::BIN
        ),
    );
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    // The real cargo by its full path: a bare `cargo` would find this very script first on the
    // PATH below and exec itself for ever (the test binary run without cargo has no $CARGO).
    let cargo = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|d| d.join("cargo"))
                .find(|c| c.is_file())
        })
        .expect("cargo: $CARGO or on the PATH");
    let cargo = cargo.display();
    script(
        &bin,
        "cargo",
        &format!("[ \"$1\" = build ] && exit 0\nexec '{cargo}' \"$@\""),
    );
    let out = std::process::Command::new("scripts/run")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("--help")
        .env("CARGO_TARGET_DIR", &target)
        .env("PATH", path_with(&bin))
        .output()
        .expect("scripts/run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("--data-dir"));
    assert!(
        marker.exists(),
        "scripts/run did not run {}",
        release.display()
    );
}

#[test]
fn duplicate_json_keys_are_refused_by_the_api_naming_the_field() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let body = |settings: &str| {
        format!(
            r#"{{"filename": "a.wav", "contentType": "audio/wav", "sizeBytes": 1000,
                "durationSeconds": 3, "settings": {settings}}}"#
        )
    };
    // 300 alone is refused; with a second, valid value after it, it must not slip through.
    let alone = server.call(
        &org.key,
        "POST",
        "/v1/jobs",
        body(r#"{"maxCharsPerLine": 300}"#).as_bytes(),
    );
    alone.expect_error(400, "invalid_request");
    let twice = server.call(
        &org.key,
        "POST",
        "/v1/jobs",
        body(r#"{"maxCharsPerLine": 300, "maxCharsPerLine": 10}"#).as_bytes(),
    );
    let err = twice.expect_error(400, "invalid_request");
    assert_eq!(
        err["fields"][0]["field"], "settings.maxCharsPerLine",
        "{err}"
    );
    // At any depth, top level and inside arrays included, every repeat named.
    let deep = r#"{"filename": "a.wav", "filename": "b.wav", "contentType": "audio/wav",
        "sizeBytes": 1000, "durationSeconds": 3, "settings": {"forbiddenCharacters":
        [{"chars": "x", "replaceWith": "y"}, {"chars": "z", "chars": "q", "replaceWith": ""}]}}"#;
    let err = server
        .call(&org.key, "POST", "/v1/jobs", deep.as_bytes())
        .expect_error(400, "invalid_request");
    let fields: Vec<&str> = err["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .filter_map(|f| f["field"].as_str())
        .collect();
    assert_eq!(
        fields,
        ["filename", "settings.forbiddenCharacters[1].chars"],
        "{err}"
    );
    // The same body without the repeat is accepted.
    let once = server.call(
        &org.key,
        "POST",
        "/v1/jobs",
        body(r#"{"maxCharsPerLine": 10}"#).as_bytes(),
    );
    assert_eq!(once.status, 201, "{}", once.text());
}

#[test]
fn duplicate_json_keys_are_refused_in_every_json_the_cli_reads() {
    use crate::common::BIN;
    let dir = tempfile::tempdir().expect("temp dir");
    let dup_settings = dir.path().join("settings.json");
    std::fs::write(
        &dup_settings,
        r#"{"maxCharsPerLine": 300, "maxCharsPerLine": 10}"#,
    )
    .expect("write");
    let words = dir.path().join("words.json");
    std::fs::write(&words, r#"[{"text": "Hello", "start": 0.1, "end": 0.5}]"#).expect("write");
    let dup_words = dir.path().join("dup-words.json");
    std::fs::write(
        &dup_words,
        r#"[{"text": "Hello", "start": 0.1, "end": 0.5, "end": 9}]"#,
    )
    .expect("write");
    let srt = dir.path().join("in.srt");
    std::fs::write(&srt, "1\n00:00:01,000 --> 00:00:02,000\nHello\n\n").expect("write");
    let out_vtt = dir.path().join("out.vtt");
    let refused = |args: &[&std::ffi::OsStr], field: &str| {
        let out = std::process::Command::new(BIN)
            .args(args)
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(
            stderr.contains("duplicate key") && stderr.contains(field),
            "{args:?}: {stderr}"
        );
    };
    let os = |s: &str| std::ffi::OsStr::new(s).to_os_string();
    let p = |p: &Path| p.as_os_str().to_os_string();
    let run = |v: Vec<std::ffi::OsString>, field: &str| {
        let refs: Vec<&std::ffi::OsStr> = v.iter().map(|s| s.as_os_str()).collect();
        refused(&refs, field);
    };
    run(
        vec![
            os("layout"),
            os("--words"),
            p(&words),
            os("--settings"),
            p(&dup_settings),
        ],
        "maxCharsPerLine",
    );
    run(vec![os("layout"), os("--words"), p(&dup_words)], "[0].end");
    run(
        vec![
            os("convert"),
            p(&srt),
            os("-o"),
            p(&out_vtt),
            os("--settings"),
            p(&dup_settings),
        ],
        "maxCharsPerLine",
    );
    assert!(!out_vtt.exists(), "no output for refused settings");
    run(
        vec![os("check"), p(&srt), os("--style"), p(&dup_settings)],
        "maxCharsPerLine",
    );
    let dup_cues = dir.path().join("cues.json");
    std::fs::write(
        &dup_cues,
        r#"[{"start": 1, "end": 2, "start": 0, "lines": ["Hello"]}]"#,
    )
    .expect("write");
    run(vec![os("check"), p(&dup_cues)], "[0].start");
    let mut at = std::ffi::OsString::from("@");
    at.push(&dup_settings);
    run(
        vec![
            os("submit"),
            p(&srt),
            os("--api"),
            os("http://127.0.0.1:9/v1"),
            os("--key"),
            os("k"),
            os("--settings"),
            at,
        ],
        "maxCharsPerLine",
    );
    let data = dir.path().join("data");
    run(
        vec![
            os("admin"),
            os("--data-dir"),
            p(&data),
            os("preset"),
            os("create"),
            os("--org"),
            os("0123456789abcdef01234567"),
            os("--name"),
            os("P"),
            os("--settings"),
            os(r#"{"maxCharsPerLine": 30, "maxCharsPerLine": 31}"#),
        ],
        "maxCharsPerLine",
    );
}

/// The raw bytes of one request on its own connection (`Connection: close`).
fn raw(port: u16, head: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    s.write_all(head.as_bytes()).expect("send");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// Status line and headers (lower-case names, `date` left out) of a raw response, and its body.
fn split_response(bytes: &[u8]) -> (String, Vec<(String, String)>, Vec<u8>) {
    let end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default().to_string();
    let mut headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .filter(|(k, _)| k != "date")
        .collect();
    headers.sort();
    (status, headers, bytes[end + 4..].to_vec())
}

#[test]
fn head_answers_like_get_without_a_body_on_every_get_endpoint() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let job = server.run_job(&org.key, &server.tone(3), json!({}));
    assert_eq!(job["status"], "ready", "{job}");
    let id = job["id"].as_str().expect("id");
    let paths = [
        format!("/v1/jobs/{id}"),
        format!("/v1/jobs/{id}/transcript"),
        format!("/v1/jobs/{id}/transcript?format=text"),
        format!("/v1/jobs/{id}/subtitles?format=srt"),
        format!("/v1/jobs/{id}/subtitles?format=ebu-stl"),
        "/v1/openapi.json".to_string(),
        // The web application's pages and assets.
        "/login".to_string(),
        "/assets/app.css".to_string(),
        // Errors too: the same status and JSON headers, no body.
        "/v1/jobs/0123456789abcdef01234567".to_string(),
        "/v1/jobs/NOT-AN-ID/subtitles".to_string(),
        "/v1/nothing".to_string(),
    ];
    for path in &paths {
        let head = |method: &str| {
            format!(
                "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
                org.key
            )
        };
        // A cookie's value (the sign-in form's token) and the request id are fresh on every
        // response: compare the rest.
        let fresh_values =
            |(name, value): (String, String)| match (name.as_str(), value.split_once(';')) {
                ("set-cookie", Some((pair, attributes))) => {
                    let cookie = pair.split_once('=').map_or(pair, |(n, _)| n);
                    (name, format!("{cookie}=…;{attributes}"))
                }
                // Every response has its own request id.
                ("x-request-id", _) => (name, "…".to_string()),
                _ => (name, value),
            };
        let (get_status, get_headers, get_body) = split_response(&raw(server.port, &head("GET")));
        let get_headers: Vec<_> = get_headers.into_iter().map(fresh_values).collect();
        let (status, headers, body) = split_response(&raw(server.port, &head("HEAD")));
        let headers: Vec<_> = headers.into_iter().map(fresh_values).collect();
        assert_eq!(status, get_status, "HEAD {path}");
        assert_eq!(headers, get_headers, "HEAD {path}");
        assert!(body.is_empty(), "HEAD {path} sent a body");
        let length = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .map(|(_, v)| v.clone());
        assert_eq!(length, Some(get_body.len().to_string()), "HEAD {path}");
        assert!(!get_body.is_empty(), "GET {path}");
    }
    // A POST-only path says HEAD is not among its methods; a GET path lists it.
    let r = server.call(&org.key, "HEAD", "/v1/jobs", b"");
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("POST"));
    let r = server.call(&org.key, "DELETE", &format!("/v1/jobs/{id}"), b"");
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
}

#[test]
fn a_job_name_with_control_characters_gives_files_and_attachment_names_without_them() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let media = std::fs::read(server.tone(3)).expect("tone");
    let created = server.create_job(
        &org.key,
        &json!({"filename": "a.wav", "contentType": "audio/wav", "sizeBytes": media.len(),
                "durationSeconds": 3, "name": "before\u{0}after\u{7}\u{85}"}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    assert_eq!(server.upload(&created, &media).status, 200);
    let id = created["id"].as_str().expect("id");
    let job = server.wait_for(&org.key, id, &["ready", "failed"]);
    assert_eq!(job["status"], "ready", "{job}");
    for format in ["srt", "vtt", "ttml", "ass", "ebu-stl"] {
        let r = server.get(
            &org.key,
            &format!("/v1/jobs/{id}/subtitles?format={format}"),
        );
        assert_eq!(r.status, 200, "{format}");
        let controls = |s: &str| s.chars().any(|c| c.is_control() && c != '\r' && c != '\n');
        let disposition = r
            .header("content-disposition")
            .expect("Content-Disposition");
        assert!(!controls(disposition), "{disposition:?}");
        assert!(disposition.contains("before_after"), "{disposition}");
        if format == "ebu-stl" {
            // The programme title (GSI OPT, bytes 16..48) holds the name without its controls.
            assert_eq!(&r.body[16..27], b"beforeafter", "{:?}", &r.body[16..48]);
            assert!(r.body[16..48].iter().all(|&b| b >= 0x20));
            continue;
        }
        let text = r.text();
        assert!(!controls(&text), "{format}: {text:?}");
        if format == "ass" {
            assert!(text.contains("Title: beforeafter\r\n"), "{text}");
        }
    }
}

/// The JSON error of a raw response, checking the contract's shape: status, `no-store`, JSON.
fn contract_error(bytes: &[u8], status: u16, code: &str) {
    let (line, headers, body) = split_response(bytes);
    assert!(line.starts_with(&format!("HTTP/1.1 {status} ")), "{line}");
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(header("cache-control"), Some("no-store"), "{line}");
    assert!(header("content-type").is_some_and(|t| t.starts_with("application/json")));
    assert_eq!(
        header("content-length"),
        Some(body.len().to_string().as_str())
    );
    let v: Value = serde_json::from_slice(&body).expect("JSON body");
    assert_eq!(v["code"], code, "{v}");
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
}

#[test]
fn malformed_http_gets_the_contracts_json_errors() {
    let server = Server::start(&[]);
    let port = server.port;
    // A bad request line, a bad header line, a request target that is not a URI.
    contract_error(&raw(port, "GARBAGE\r\n\r\n"), 400, "malformed_request");
    contract_error(
        &raw(
            port,
            "GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
        ),
        400,
        "malformed_request",
    );
    contract_error(
        &raw(
            port,
            "GET /v1/openapi.json HTTP/1.1 extra\r\nHost: x\r\n\r\n",
        ),
        400,
        "malformed_request",
    );
    // HTTP/1.1 without Host, or with two (RFC 9112 3.2); HTTP/1.0 needs none.
    contract_error(
        &raw(
            port,
            "GET /v1/openapi.json HTTP/1.1\r\nConnection: close\r\n\r\n",
        ),
        400,
        "malformed_request",
    );
    contract_error(
        &raw(
            port,
            "GET /v1/openapi.json HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        ),
        400,
        "malformed_request",
    );
    let (line, _, _) = split_response(&raw(port, "GET /v1/openapi.json HTTP/1.0\r\n\r\n"));
    assert!(
        line.starts_with("HTTP/1.1 200") || line.starts_with("HTTP/1.0 200"),
        "{line}"
    );
    // Framing hyper refuses: a bad Content-Length, a Transfer-Encoding that is not chunked.
    contract_error(
        &raw(
            port,
            "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n",
        ),
        400,
        "malformed_request",
    );
    contract_error(
        &raw(
            port,
            "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
        ),
        400,
        "malformed_request",
    );
    // Too large: one huge header, too many headers, an overlong request target.
    let huge = format!(
        "GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(70_000)
    );
    contract_error(&raw(port, &huge), 431, "headers_too_large");
    let many: String = (0..101).map(|i| format!("X-{i}: 1\r\n")).collect();
    contract_error(
        &raw(
            port,
            &format!("GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n{many}\r\n"),
        ),
        431,
        "headers_too_large",
    );
    let long = format!("GET /v1/{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000));
    contract_error(&raw(port, &long), 414, "uri_too_long");
    // On a kept-alive connection the requests before a bad one are answered first.
    let both = raw(
        port,
        "GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/openapi.json HTTP\r\n\r\n",
    );
    let (first, headers, rest) = split_response(&both);
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .expect("length");
    contract_error(&rest[len..], 400, "malformed_request");
    // The server still serves well-formed requests.
    let (line, _, _) = split_response(&raw(
        port,
        "GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ));
    assert!(line.starts_with("HTTP/1.1 200"), "{line}");
}
