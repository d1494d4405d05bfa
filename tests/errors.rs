//! Every error code of the contract's error table (and the upload URL's own codes), each produced
//! by a real request against the real server, and a check that none is left uncovered.

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{python, raw_request, request, str_field, Server, SEEN_CODES};

/// The contract's error table, code by code.
const CONTRACT_CODES: [&str; 26] = [
    "invalid_json",
    "invalid_request",
    "invalid_job_id",
    "invalid_transcript_id",
    "invalid_format",
    "invalid_max_chars",
    "unsupported_format",
    "invalid_offset",
    "missing_api_key",
    "malformed_api_key",
    "invalid_api_key",
    "insufficient_credits",
    "platform_quota_reached",
    "folder_not_found",
    "preset_not_found",
    "job_not_found",
    "transcript_not_found",
    "no_active_owner",
    "job_not_ready",
    "transcript_not_ready",
    "job_failed",
    "transcript_failed",
    "plan_limit_exceeded",
    "rate_limited",
    "source_url_not_supported",
    "billing_unavailable",
];

/// Codes beyond the contract's table: routing and the presigned upload.
const HOST_CODES: [&str; 14] = [
    "not_found",
    "method_not_allowed",
    "invalid_signature",
    "upload_expired",
    "content_type_mismatch",
    "length_mismatch",
    "already_uploaded",
    "upload_in_progress",
    "body_too_large",
    "malformed_request",
    "uri_too_long",
    "headers_too_large",
    "idempotency_key_reused",
    "idempotency_key_in_use",
];

fn job_body(size: usize) -> Value {
    json!({"filename": "clip.wav", "contentType": "audio/wav", "sizeBytes": size, "durationSeconds": 3})
}

/// Creates a job for `data` and uploads it; returns (id, created body).
fn uploaded(server: &Server, key: &str, data: &[u8], language: &str) -> String {
    let mut body = job_body(data.len());
    body["settings"] = json!({"language": language});
    let created = server.create_job(key, &body);
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    let up = server.upload(&created, data);
    assert_eq!(up.status, 200, "{}", up.text());
    str_field(&created, "id")
}

#[test]
fn every_error_code_is_produced_by_a_real_request() {
    // The scenarios poll a lot with one key: the rate limit gets its own server at the default.
    // The upload codes are the service's own upload route's, which only a local media directory
    // uses (with S3 the bucket refuses, tests/media_store.rs): media in the data directory.
    let server = Server::start(&[
        "--workers",
        "1",
        "--price-cents-per-minute",
        "10",
        "--rate-limit-per-minute",
        "100000",
        crate::common::LOCAL_MEDIA[0],
        crate::common::LOCAL_MEDIA[1],
    ]);
    let org = server.org(10_000, &[]);
    let key = org.key.as_str();
    let port = server.port;
    let media = std::fs::read(server.tone(3)).expect("media");

    auth_errors(&server, &org);
    routing_errors(&server, key);
    creation_errors(&server, &org, &media);
    idempotency_errors(&server, &org);
    upload_errors(&server, key, &media);
    concurrent_uploads(&server, key, &media);
    result_errors(&server, key, &media);
    billing_unavailable(&server, key);
    rate_limited(&Server::start(&[]));
    let _ = port;

    let seen = SEEN_CODES.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let missing: Vec<&str> = CONTRACT_CODES
        .iter()
        .chain(HOST_CODES.iter())
        .copied()
        .filter(|c| !seen.contains(*c))
        .collect();
    assert!(
        missing.is_empty(),
        "error codes never produced: {missing:?}"
    );
}

fn auth_errors(server: &Server, org: &crate::common::Org) {
    let port = server.port;
    let path = "/v1/jobs/0123456789abcdef01234567";
    request(port, "GET", path, &[], b"").expect_error(401, "missing_api_key");
    request(port, "GET", path, &[("Authorization", "")], b"").expect_error(401, "missing_api_key");
    request(port, "GET", path, &[("Authorization", "Bearer abc")], b"")
        .expect_error(401, "malformed_api_key");
    let basic = format!("Basic {}", org.key);
    request(port, "GET", path, &[("Authorization", &basic)], b"")
        .expect_error(401, "malformed_api_key");
    let unknown = format!("cc_live_{}", "0".repeat(64));
    server
        .get(&unknown, path)
        .expect_error(401, "invalid_api_key");
    // A revoked key is refused like an unknown one.
    let second = server.admin(&["key", "create", "--org", &org.id, "--member", &org.owner]);
    let second_key = str_field(&second, "key");
    server
        .get(&second_key, path)
        .expect_error(404, "job_not_found");
    let revoked = server.admin(&["key", "revoke", "--key-id", &str_field(&second, "id")]);
    assert!(revoked["revokedAt"]
        .as_str()
        .is_some_and(|t| t.ends_with('Z')));
    server
        .get(&second_key, path)
        .expect_error(401, "invalid_api_key");
}

fn routing_errors(server: &Server, key: &str) {
    server
        .get(key, "/v1/nothing")
        .expect_error(404, "not_found");
    // Requests hyper could not parse are answered by the check in front of it (`front`).
    raw_request(server.port, "GARBAGE\r\n\r\n", b"").expect_error(400, "malformed_request");
    let long = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000));
    raw_request(server.port, &long, b"").expect_error(414, "uri_too_long");
    let big = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX: {}\r\n\r\n",
        "a".repeat(70_000)
    );
    raw_request(server.port, &big, b"").expect_error(431, "headers_too_large");
    // Outside /v1 is the web application: `/` leads to the project list, and an unknown path
    // asked for as JSON gets the same error shape.
    let root = request(server.port, "GET", "/", &[], b"");
    assert_eq!(
        (root.status, root.header("location")),
        (303, Some("/projects"))
    );
    request(
        server.port,
        "GET",
        "/nothing",
        &[("Accept", "application/json")],
        b"",
    )
    .expect_error(404, "not_found");
    let r = server.call(key, "DELETE", "/v1/jobs/0123456789abcdef01234567", b"");
    r.expect_error(405, "method_not_allowed");
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
    let r = server.get(key, "/v1/jobs");
    r.expect_error(405, "method_not_allowed");
    assert_eq!(r.header("allow"), Some("POST"));
    server
        .get(key, "/v1/jobs/NOT-AN-ID")
        .expect_error(400, "invalid_job_id");
    server
        .get(key, "/v1/jobs/0123456789ABCDEF01234567")
        .expect_error(400, "invalid_job_id");
    server
        .get(key, "/v1/jobs/0123456789abcdef01234567")
        .expect_error(404, "job_not_found");
}

/// A key reused with another body; a key whose first request is still creating its job (that
/// request is simulated by its claim, written into the database as the server writes it).
fn idempotency_errors(server: &Server, org: &crate::common::Org) {
    let auth = format!("Bearer {}", org.key);
    let post = |key: &str, body: &Value| {
        request(
            server.port,
            "POST",
            "/v1/jobs",
            &[("Authorization", auth.as_str()), ("Idempotency-Key", key)],
            body.to_string().as_bytes(),
        )
    };
    assert_eq!(post("e-1", &job_body(10)).status, 201);
    post("e-1", &job_body(11)).expect_error(409, "idempotency_key_reused");
    // A claim of 'e-2' for another body, then for this body, as a request in flight leaves it.
    let hash = python(&format!(
        "import hashlib,json\nprint(hashlib.sha256(json.dumps(json.loads({:?}),sort_keys=True,separators=(',',':')).encode()).hexdigest())",
        job_body(10).to_string()
    ));
    let bytes = |hex: &str| match server.pg.is_some() {
        true => format!("decode('{hex}', 'hex')"),
        false => format!("x'{hex}'"),
    };
    let claim = |hex: &str| {
        format!(
            "DELETE FROM idempotency_keys WHERE key = 'e-2'; INSERT INTO idempotency_keys (org_id, key, body_hash, created_at) VALUES ('{}', 'e-2', {}, {})",
            org.id,
            bytes(hex),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0)
        )
    };
    server.sql(&claim("00"));
    post("e-2", &job_body(10)).expect_error(409, "idempotency_key_reused");
    server.sql(&claim(hash.trim()));
    let started = Instant::now();
    post("e-2", &job_body(10)).expect_error(409, "idempotency_key_in_use");
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "it waited for the first request"
    );
}

fn creation_errors(server: &Server, org: &crate::common::Org, media: &[u8]) {
    let key = org.key.as_str();
    server
        .call(key, "POST", "/v1/jobs", b"{\"filename\":")
        .expect_error(400, "invalid_json");
    server
        .call(key, "POST", "/v1/jobs", &vec![b' '; 3 << 20])
        .expect_error(413, "body_too_large");
    server
        .create_job(key, &json!({"sourceUrl": "https://example.com/a.mp3"}))
        .expect_error(501, "source_url_not_supported");

    // Every problem is named, at both levels.
    let body = server
        .create_job(
            key,
            &json!({
                "filename": "x".repeat(256),
                "contentType": "text/plain",
                "sizeBytes": 5_368_709_121u64,
                "durationSeconds": -1,
                "name": "n".repeat(201),
                "color": "red",
                "settings": {
                    "maxCharsPerLine": 300,
                    "language": 5,
                    "minDuration": 5,
                    "maxDuration": 2,
                    "forbiddenCharacters": [{"chars": ""}],
                    "customVocabulary": ["ok", "v".repeat(101)],
                    "shiny": true
                }
            }),
        )
        .expect_error(400, "invalid_request");
    let mut fields: Vec<String> = body["fields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|f| {
            assert!(f["message"].as_str().is_some_and(|m| !m.is_empty()), "{f}");
            f["field"].as_str().unwrap_or("").to_string()
        })
        .collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "color",
            "contentType",
            "durationSeconds",
            "filename",
            "name",
            "settings.customVocabulary[1]",
            "settings.forbiddenCharacters[0].chars",
            "settings.forbiddenCharacters[0].replacement",
            "settings.language",
            "settings.maxCharsPerLine",
            "settings.minDuration",
            "settings.shiny",
            "sizeBytes",
        ]
    );

    // Folders and presets of the organisation only.
    let other = server.org(0, &[]);
    let other_folder = str_field(
        &server.admin(&["folder", "create", "--org", &other.id, "--name", "Theirs"]),
        "id",
    );
    let mut b = job_body(media.len());
    b["folderId"] = json!(other_folder);
    server
        .create_job(key, &b)
        .expect_error(404, "folder_not_found");
    b["folderId"] = json!("not-even-an-id");
    server
        .create_job(key, &b)
        .expect_error(404, "folder_not_found");
    let folder = str_field(
        &server.admin(&["folder", "create", "--org", &org.id, "--name", "Ours"]),
        "id",
    );
    b["folderId"] = json!(folder);
    assert_eq!(server.create_job(key, &b).status, 201);

    let mut b = job_body(media.len());
    b["presetId"] = json!("0123456789abcdef01234567");
    server
        .create_job(key, &b)
        .expect_error(404, "preset_not_found");
    // Layering: the preset's maxDuration under the request's minDuration.
    let preset = str_field(
        &server.admin(&[
            "preset",
            "create",
            "--org",
            &org.id,
            "--name",
            "Short",
            "--settings",
            r#"{"maxDuration": 1.5, "maxCharsPerLine": 20}"#,
        ]),
        "id",
    );
    b["presetId"] = json!(preset);
    b["settings"] = json!({"minDuration": 2});
    let body = server
        .create_job(key, &b)
        .expect_error(400, "invalid_request");
    assert_eq!(body["fields"][0]["field"], "settings.minDuration");
    b["settings"] = json!({"minDuration": 1});
    assert_eq!(server.create_job(key, &b).status, 201);
    server.admin_fails(&[
        "preset",
        "create",
        "--org",
        &org.id,
        "--name",
        "Bad",
        "--settings",
        r#"{"maxCharsPerLine": 2}"#,
    ]);

    // Credits: 3 s at 10 cents a minute cost 1 cent.
    let poor = server.org(0, &[]);
    let body = server
        .create_job(&poor.key, &job_body(media.len()))
        .expect_error(402, "insufficient_credits");
    assert_eq!(
        (
            body["requiredCents"].clone(),
            body["availableCents"].clone()
        ),
        (json!(1), json!(0))
    );
    let mut long = job_body(media.len());
    long["durationSeconds"] = json!(601);
    server.admin(&["credits", "add", "--org", &poor.id, "--cents", "100"]);
    let body = server
        .create_job(&poor.key, &long)
        .expect_error(402, "insufficient_credits");
    assert_eq!(
        (
            body["requiredCents"].clone(),
            body["availableCents"].clone()
        ),
        (json!(101), json!(100))
    );

    // Plan limits.
    let small = server.org(1000, &["--max-bytes", "1000", "--max-seconds", "60"]);
    let body = server
        .create_job(&small.key, &job_body(1500))
        .expect_error(413, "plan_limit_exceeded");
    assert_eq!(
        body["details"],
        json!({"limit": "maxBytes", "allowed": 1000, "requested": 1500, "exceededBy": 500})
    );
    let mut b = job_body(100);
    b["durationSeconds"] = json!(90);
    let body = server
        .create_job(&small.key, &b)
        .expect_error(413, "plan_limit_exceeded");
    assert_eq!(body["details"]["limit"], "maxSeconds");
    assert_eq!(body["details"]["exceededBy"], 30.0);

    // The job's owner: the key's creator while active, else the longest-standing owner.
    let team = server.org(1000, &[]);
    let admin_member = str_field(
        &server.admin(&[
            "member",
            "add",
            "--org",
            &team.id,
            "--email",
            "a@example.com",
            "--role",
            "admin",
        ]),
        "id",
    );
    let admin_key = str_field(
        &server.admin(&[
            "key",
            "create",
            "--org",
            &team.id,
            "--member",
            &admin_member,
        ]),
        "key",
    );
    let plain = str_field(
        &server.admin(&[
            "member",
            "add",
            "--org",
            &team.id,
            "--email",
            "m@example.com",
            "--role",
            "member",
        ]),
        "id",
    );
    assert!(server
        .admin_fails(&["key", "create", "--org", &team.id, "--member", &plain])
        .contains("owner or admin"));
    let left = server.admin(&[
        "member",
        "remove",
        "--org",
        &team.id,
        "--member",
        &admin_member,
    ]);
    assert!(left["leftAt"].as_str().is_some());
    // The admin left: the owner takes the job.
    assert_eq!(server.create_job(&admin_key, &job_body(10)).status, 201);
    server.admin(&[
        "member",
        "remove",
        "--org",
        &team.id,
        "--member",
        &team.owner,
    ]);
    server
        .create_job(&admin_key, &job_body(10))
        .expect_error(409, "no_active_owner");

    // The platform quota: this month's bytes across every organisation.
    server.admin(&["quota", "set", "--monthly-bytes", "1"]);
    server
        .create_job(key, &job_body(media.len()))
        .expect_error(403, "platform_quota_reached");
    let q = server.admin(&["quota", "set", "--monthly-bytes", "100000000000"]);
    assert_eq!(q["monthlyBytes"], 100_000_000_000i64);
    assert_eq!(server.create_job(key, &job_body(media.len())).status, 201);
}

fn upload_errors(server: &Server, key: &str, media: &[u8]) {
    let created = server.create_job(key, &job_body(media.len()));
    assert_eq!(created.status, 201);
    let created = created.json();
    let id = str_field(&created, "id");
    let url = str_field(&created["upload"], "url");
    let path = url.strip_prefix(&server.base()).unwrap_or("").to_string();
    let len = media.len().to_string();
    let port = server.port;

    // Tampered signature, missing signature, wrong job.
    let last = if path.ends_with('0') { "1" } else { "0" };
    let tampered = format!("{}{last}", &path[..path.len() - 1]);
    request(
        port,
        "PUT",
        &tampered,
        &[("Content-Type", "audio/wav"), ("Content-Length", &len)],
        media,
    )
    .expect_error(403, "invalid_signature");
    let unsigned = path.split('?').next().unwrap_or("").to_string();
    request(
        port,
        "PUT",
        &unsigned,
        &[("Content-Type", "audio/wav")],
        media,
    )
    .expect_error(403, "invalid_signature");
    let other = path.replace(&id, "0123456789abcdef01234567");
    request(port, "PUT", &other, &[("Content-Type", "audio/wav")], media)
        .expect_error(404, "job_not_found");
    request(
        port,
        "PUT",
        "/upload/xyz",
        &[("Content-Type", "audio/wav")],
        media,
    )
    .expect_error(400, "invalid_job_id");
    request(port, "POST", &path, &[("Content-Type", "audio/wav")], media)
        .expect_error(405, "method_not_allowed");

    // An expired URL, correctly signed with the server's secret (as it would have been an hour ago).
    let secret = std::fs::read_to_string(server.data_dir().join("signing.key")).unwrap_or_default();
    let expired_at = 1_600_000_000i64;
    let sig = python(&format!(
        "import hmac,hashlib\nprint(hmac.new({:?}.encode(), 'PUT\\n{id}\\n{expired_at}\\naudio/wav\\n{len}'.encode(), hashlib.sha256).hexdigest())",
        secret.trim()
    ));
    let expired = format!("/upload/{id}?expires={expired_at}&signature={}", sig.trim());
    request(
        port,
        "PUT",
        &expired,
        &[("Content-Type", "audio/wav"), ("Content-Length", &len)],
        media,
    )
    .expect_error(410, "upload_expired");

    // Wrong type, wrong length, a short body, an over-long chunked body: all refused, and the job
    // stays in `uploading` so the same URL still works.
    request(
        port,
        "PUT",
        &path,
        &[("Content-Type", "audio/mpeg"), ("Content-Length", &len)],
        media,
    )
    .expect_error(415, "content_type_mismatch");
    request(port, "PUT", &path, &[("Content-Length", &len)], media)
        .expect_error(415, "content_type_mismatch");
    let shorter = (media.len() - 1).to_string();
    request(
        port,
        "PUT",
        &path,
        &[("Content-Type", "audio/wav"), ("Content-Length", &shorter)],
        &media[1..],
    )
    .expect_error(400, "length_mismatch");
    // Declares the right length but sends less, then half-closes: refused as it ends short.
    {
        let head = format!(
            "PUT {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: audio/wav\r\nContent-Length: {len}\r\n\r\n"
        );
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.write_all(head.as_bytes()).expect("head");
        s.write_all(&media[..100]).expect("part");
        s.shutdown(std::net::Shutdown::Write).expect("half close");
        let mut raw = Vec::new();
        let _ = std::io::Read::read_to_end(&mut s, &mut raw);
        let text = String::from_utf8_lossy(&raw);
        assert!(
            text.starts_with("HTTP/1.1 400") && text.contains("length_mismatch"),
            "{text}"
        );
    }
    // Chunked, longer than declared: refused the moment it exceeds.
    let mut chunked = Vec::new();
    for piece in [media, b"extra bytes".as_slice()] {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: audio/wav\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    raw_request(port, &head, &chunked).expect_error(400, "length_mismatch");
    let job = server.get(key, &format!("/v1/jobs/{id}")).json();
    assert_eq!(
        job["status"], "uploading",
        "refused uploads leave the job waiting"
    );
    assert!(
        std::fs::read_dir(server.data_dir().join("media").join("tmp"))
            .map(|d| d.count() == 0)
            .unwrap_or(true),
        "refused uploads leave no temporary file"
    );

    // The retry with the right body succeeds; a second one is refused.
    assert_eq!(server.upload(&created, media).status, 200);
    server
        .upload(&created, media)
        .expect_error(409, "already_uploaded");
    server.wait_for(key, &id, &["ready", "failed"]);
}

/// An upload that has sent its head and part of its body, held open on its own connection.
struct HeldUpload {
    stream: std::net::TcpStream,
    rest: Vec<u8>,
}

impl HeldUpload {
    /// Starts the PUT of `data` to `created`'s URL, sends half of it, and returns once the server
    /// streams it (its temporary file exists).
    fn start(server: &Server, created: &Value, data: &[u8]) -> HeldUpload {
        let tmp = server.data_dir().join("media").join("tmp");
        let before = tmp_files(&tmp);
        let url = str_field(&created["upload"], "url");
        let path = url.strip_prefix(&server.base()).unwrap_or("").to_string();
        let head = format!(
            "PUT {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: audio/wav\r\nContent-Length: {}\r\n\r\n",
            data.len()
        );
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let half = data.len() / 2;
        stream.write_all(head.as_bytes()).expect("head");
        stream.write_all(&data[..half]).expect("first half");
        let deadline = Instant::now() + Duration::from_secs(20);
        while tmp_files(&tmp) <= before {
            assert!(
                Instant::now() < deadline,
                "the held upload never started streaming"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        HeldUpload {
            stream,
            rest: data[half..].to_vec(),
        }
    }

    /// Sends the rest and reads the response.
    fn finish(mut self) -> String {
        self.stream.write_all(&self.rest).expect("second half");
        self.read()
    }

    /// Half-closes without the rest (the client went away) and reads the response.
    fn abandon(self) -> String {
        self.stream
            .shutdown(std::net::Shutdown::Write)
            .expect("half close");
        self.read()
    }

    fn read(mut self) -> String {
        let mut raw = Vec::new();
        let _ = std::io::Read::read_to_end(&mut self.stream, &mut raw);
        String::from_utf8_lossy(&raw).into_owned()
    }
}

fn tmp_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

/// Two PUTs to one job at once: the second is refused at once with 409 `upload_in_progress` and
/// never touches the job's media; the media on disk is the winner's. When the first fails, the
/// claim is released and a retry wins.
fn concurrent_uploads(server: &Server, key: &str, media: &[u8]) {
    // Same length, different bytes: silence after the WAV header.
    let mut other = media.to_vec();
    for b in other.iter_mut().skip(44) {
        *b = 0;
    }
    assert_ne!(other, media);
    let media_dir = server.data_dir().join("media");

    // The first upload completes while the second is refused.
    let created = server.create_job(key, &job_body(media.len())).json();
    let id = str_field(&created, "id");
    let first = HeldUpload::start(server, &created, media);
    let refused = server.upload(&created, &other);
    let body = refused.expect_error(409, "upload_in_progress");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|m| m.contains("in progress")),
        "{body}"
    );
    let answer = first.finish();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(
        std::fs::read(media_dir.join(&id)).expect("media in place"),
        media,
        "the job's media is the winning upload's"
    );
    server
        .upload(&created, &other)
        .expect_error(409, "already_uploaded");
    assert_eq!(std::fs::read(media_dir.join(&id)).expect("media"), media);
    server.wait_for(key, &id, &["ready", "failed"]);

    // The first upload fails: its claim is released, the job still waits, and a retry wins.
    let created = server.create_job(key, &job_body(media.len())).json();
    let id = str_field(&created, "id");
    let first = HeldUpload::start(server, &created, media);
    server
        .upload(&created, &other)
        .expect_error(409, "upload_in_progress");
    let answer = first.abandon();
    assert!(
        answer.starts_with("HTTP/1.1 400") && answer.contains("length_mismatch"),
        "{answer}"
    );
    assert_eq!(
        server.get(key, &format!("/v1/jobs/{id}")).json()["status"],
        "uploading"
    );
    let retry = server.upload(&created, &other);
    assert_eq!(retry.status, 200, "{}", retry.text());
    assert_eq!(std::fs::read(media_dir.join(&id)).expect("media"), other);
    assert_eq!(
        tmp_files(&media_dir.join("tmp")),
        0,
        "no temporary file is left"
    );
    server.wait_for(key, &id, &["ready", "failed"]);
}

fn result_errors(server: &Server, key: &str, media: &[u8]) {
    // A job still waiting for its upload.
    let waiting = server.create_job(key, &job_body(media.len())).json();
    let wid = str_field(&waiting, "id");
    for what in ["transcript", "subtitles"] {
        let body = server
            .get(
                key,
                &format!("/v1/jobs/{wid}/{what}?transcriptId=0123456789abcdef01234567"),
            )
            .expect_error(409, "job_not_ready");
        assert_eq!(body["status"], "uploading");
    }

    // A failed job (the test recognizer fails for `de`): 409 job_failed, and a full refund.
    let failed = uploaded(server, key, media, "de");
    let job = server.wait_for(key, &failed, &["ready", "failed"]);
    assert_eq!(job["status"], "failed");
    assert!(
        job["error"]
            .as_str()
            .is_some_and(|e| e.contains("no model for de")),
        "{job}"
    );
    server
        .get(key, &format!("/v1/jobs/{failed}/transcript"))
        .expect_error(409, "job_failed");
    server
        .get(key, &format!("/v1/jobs/{failed}/subtitles"))
        .expect_error(409, "job_failed");
    let rows = server.ledger(&failed);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        rows.iter().map(|r| r.1).sum::<i64>(),
        0,
        "a failed job costs nothing: {rows:?}"
    );

    // A ready job: parameter errors and transcript selection.
    let ready = uploaded(server, key, media, "en");
    server.wait_for(key, &ready, &["ready"]);
    let t = format!("/v1/jobs/{ready}/transcript");
    let s = format!("/v1/jobs/{ready}/subtitles");
    server
        .get(key, &format!("{t}?format=xml"))
        .expect_error(400, "invalid_format");
    for bad in ["0", "1000001", "1.5", "abc", "-3", ""] {
        server
            .get(key, &format!("{t}?maxChars={bad}"))
            .expect_error(400, "invalid_max_chars");
    }
    server
        .get(key, &format!("{t}?transcriptId=xyz"))
        .expect_error(400, "invalid_transcript_id");
    server
        .get(key, &format!("{s}?transcriptId=XYZ"))
        .expect_error(400, "invalid_transcript_id");
    server
        .get(key, &format!("{s}?format=docx"))
        .expect_error(400, "unsupported_format");
    server
        .get(key, &format!("{s}?format=stl"))
        .expect_error(400, "unsupported_format");
    for bad in ["86400.5", "-86401", "abc", "NaN", "inf", ""] {
        server
            .get(key, &format!("{s}?offsetSeconds={bad}"))
            .expect_error(400, "invalid_offset");
    }
    assert_eq!(
        server.get(key, &format!("{s}?offsetSeconds=-86400")).status,
        200
    );
    let body = server
        .get(key, &format!("{t}?language=ja"))
        .expect_error(404, "transcript_not_found");
    let listed = body["transcripts"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        listed.first().map(|t| t["kind"].clone()),
        Some(json!("original"))
    );
    server
        .get(key, &format!("{s}?transcriptId=0123456789abcdef01234567"))
        .expect_error(404, "transcript_not_found");

    // Another organisation's job does not exist for this key.
    let stranger = server.org(0, &[]);
    server
        .get(&stranger.key, &format!("/v1/jobs/{ready}"))
        .expect_error(404, "job_not_found");
    server
        .get(&stranger.key, &t)
        .expect_error(404, "job_not_found");

    // A clean version that fails: only filler words (`nl`).
    let fillers = uploaded(server, key, media, "nl");
    server.wait_for(key, &fillers, &["ready"]);
    let clean = clean_id(server, key, &fillers);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = server.get(
            key,
            &format!("/v1/jobs/{fillers}/transcript?transcriptId={clean}"),
        );
        if r.code() == "transcript_failed" {
            r.expect_error(409, "transcript_failed");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "clean version never failed: {}",
            r.text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The original of that job is still fine.
    assert_eq!(
        server
            .get(key, &format!("/v1/jobs/{fillers}/transcript"))
            .status,
        200
    );

    // A clean version still pending: with one worker, a slow job (`fr`, 3 s) queued before the
    // clean version holds the worker while the ready job's clean version waits.
    let quick = uploaded(server, key, media, "en");
    let slow = uploaded(server, key, media, "fr");
    server.wait_for(key, &quick, &["ready"]);
    let clean = clean_id(server, key, &quick);
    let r = server.get(
        key,
        &format!("/v1/jobs/{quick}/subtitles?transcriptId={clean}"),
    );
    let body = r.expect_error(409, "transcript_not_ready");
    assert!(
        matches!(body["status"].as_str(), Some("pending" | "processing")),
        "{body}"
    );
    server.wait_for(key, &slow, &["ready"]);
}

fn clean_id(server: &Server, key: &str, job: &str) -> String {
    let j = server.get(key, &format!("/v1/jobs/{job}")).json();
    let list = j["transcripts"].as_array().cloned().unwrap_or_default();
    let clean = list
        .iter()
        .find(|t| t["kind"] == "clean")
        .cloned()
        .unwrap_or_default();
    assert_eq!(clean["label"], "Clean version", "{j}");
    assert_eq!(
        clean["language"], list[0]["language"],
        "a clean version shares the language"
    );
    str_field(&clean, "id")
}

fn count_jobs(server: &Server) -> i64 {
    server.sql_number("SELECT COUNT(*) FROM jobs")
}

fn billing_unavailable(server: &Server, key: &str) {
    // Another process holds the ledger exclusively: credits cannot be checked.
    let locker = server.lock_ledger();
    let before = count_jobs(server);
    let started = Instant::now();
    server
        .create_job(key, &job_body(1000))
        .expect_error(503, "billing_unavailable");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "503 must come quickly"
    );
    assert_eq!(
        count_jobs(server),
        before,
        "a refused creation creates nothing"
    );
    drop(locker);
    assert_eq!(
        server.create_job(key, &job_body(1000)).status,
        201,
        "billing is back"
    );
}

fn rate_limited(server: &Server) {
    let org = server.org(0, &[]);
    let path = "/v1/jobs/0123456789abcdef01234567";
    for i in 0..120 {
        let r = server.get(&org.key, path);
        assert_eq!(r.status, 404, "request {i} is within the limit");
    }
    let r = server.get(&org.key, path);
    r.expect_error(429, "rate_limited");
    let retry: u64 = r
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "Retry-After must be an integer: {:?}",
                r.header("retry-after")
            )
        });
    assert!((1..=60).contains(&retry), "{retry}");
    // Other keys are not affected.
    let other = server.org(0, &[]);
    assert_eq!(server.get(&other.key, path).status, 404);
}
