//! Running the service: health and readiness for load balancers (`/healthz`, `/readyz` on the
//! API's listener and on `cuecraft worker --listen`), and a store outage that is reported by
//! readiness and logged once, not once per retry.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{free_port, postgres_run, request, Resp, Server, LOCAL_MEDIA};

fn get(port: u16, path: &str) -> Resp {
    request(port, "GET", path, &[], b"")
}

/// Polls `path` until it answers `status` (up to 20 s); the last response.
fn wait_status(port: u16, path: &str, status: u16) -> Resp {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = get(port, path);
        if r.status == status {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "{path} stayed {} (wanted {status}): {}",
            r.status,
            r.text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn not_ready(r: &Resp) -> Vec<String> {
    r.json()["notReady"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

#[test]
fn health_and_readiness_answer_without_a_key_and_name_what_is_not_ready() {
    // The media in the data directory on both backends, so that the test can take it away.
    let server = Server::start(&LOCAL_MEDIA);
    let alive = get(server.port, "/healthz");
    assert_eq!(alive.status, 200);
    assert_eq!(alive.json()["status"], "alive");
    let ready = get(server.port, "/readyz");
    assert_eq!(ready.status, 200, "{}", ready.text());
    let body = ready.json();
    assert_eq!(body["status"], "ready");
    assert_eq!(body["notReady"], serde_json::json!([]));
    for check in ["store", "migrations", "media", "recognizer"] {
        assert_eq!(body["checks"][check]["ok"], true, "{check}: {body}");
    }
    assert!(body["checks"]["recognizer"]["name"]
        .as_str()
        .is_some_and(|n| n.starts_with("command:")));
    // Only GET and HEAD.
    let post = request(server.port, "POST", "/readyz", &[], b"");
    post.expect_error(405, "method_not_allowed");
    let head = request(server.port, "HEAD", "/readyz", &[], b"");
    assert_eq!((head.status, head.body.len()), (200, 0));

    // The media directory goes away: not ready, naming the media store; back: ready again.
    let tmp = server.data_dir().join("media").join("tmp");
    std::fs::remove_dir(&tmp).expect("remove media/tmp");
    let r = wait_status(server.port, "/readyz", 503);
    assert_eq!(not_ready(&r), ["media"], "{}", r.text());
    assert_eq!(r.json()["checks"]["store"]["ok"], true);
    assert!(
        !r.text().contains(&server.data_dir().display().to_string()),
        "no server path in a public answer: {}",
        r.text()
    );
    assert_eq!(get(server.port, "/healthz").status, 200, "still alive");
    std::fs::create_dir(&tmp).expect("recreate media/tmp");
    wait_status(server.port, "/readyz", 200);

    // A worker process serves the same on --listen, with its recognizer.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let worker = server.worker("health", &["--listen", &listen, "--workers", "1"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "worker: {}", worker.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(get(port, "/healthz").json()["status"], "alive");
    let r = get(port, "/readyz");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["checks"]["recognizer"]["ok"], true);
    get(port, "/v1/jobs").expect_error(404, "not_found");
}

/// PostgreSQL stops under a server with workers and starts again: `/readyz` answers 503 naming
/// the store while it is down and 200 once it is back, `/healthz` stays 200, and the log grows by
/// a handful of lines (before, the queue listener logged millions of lines a second).
#[test]
fn a_store_outage_is_reported_by_readiness_and_logged_once() {
    if !postgres_run() {
        return;
    }
    let cluster = cuecraft_pgtest::private_cluster(|url| {
        cuecraft_host::store::postgres::PostgresStore::open(url)
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    let db = cluster.fresh_db();
    let server = Server::start_on(Some(&db), &["--workers", "2"]);
    wait_status(server.port, "/readyz", 200);
    // The workers are waiting on the queue, with the listener's connection open.
    std::thread::sleep(Duration::from_millis(1500));
    let before = server.log().lines().count();

    cluster.stop();
    let r = wait_status(server.port, "/readyz", 503);
    let names = not_ready(&r);
    assert!(names.contains(&"store".to_string()), "{}", r.text());
    assert_eq!(r.json()["checks"]["store"]["ok"], false);
    assert_eq!(get(server.port, "/healthz").status, 200);
    // Down for a while: the workers poll, the listener retries.
    std::thread::sleep(Duration::from_secs(4));
    let during = server.log().lines().count();
    cluster.restart();
    wait_status(server.port, "/readyz", 200);
    // The listener reconnects (its backoff is at most 5 s) and says so once.
    let deadline = Instant::now() + Duration::from_secs(15);
    while !server
        .log()
        .contains("queue listener's Postgres connection is reachable again")
    {
        assert!(Instant::now() < deadline, "{}", server.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    let after = server.log().lines().count();
    let log = server.log();
    let new: Vec<&str> = log.lines().skip(before).collect();
    assert!(
        after - before <= 12 && during - before <= 8,
        "{} lines during the outage, {} in all:\n{}",
        during - before,
        after - before,
        new.join("\n")
    );
    for (what, n) in [("is unreachable", 1usize), ("reachable again", 1)] {
        let listener = new
            .iter()
            .filter(|l| l.contains("queue listener") && l.contains(what))
            .count();
        assert_eq!(listener, n, "{what}:\n{}", new.join("\n"));
    }
}

/// "old password 1" as earlier versions stored it: PBKDF2-HMAC-SHA256, 210,000 iterations, salt
/// 10..1f (made with Python's hashlib.pbkdf2_hmac).
const OLD_HASH: &str = "pbkdf2-sha256$210000$101112131415161718191a1b1c1d1e1f$\
                        9507590011f2745b697377ebdf4d972622c608e0797ef67a95a9297045c7a0e8";

#[test]
fn a_password_hashed_by_an_earlier_version_signs_in_and_is_rehashed_with_argon2id() {
    let server = Server::start(&[]);
    let org = server.org(0, &[]);
    server.sql(&format!(
        "UPDATE members SET password_hash = '{OLD_HASH}' WHERE id = '{}'",
        org.owner
    ));
    let argon2id = || {
        server.sql_number(&format!(
            "SELECT COUNT(*) FROM members WHERE id = '{}' \
             AND password_hash LIKE '$argon2id$v=19$m=19456,t=2,p=1$%'",
            org.owner
        ))
    };
    let form = get(server.port, "/login");
    let (pre, _) = crate::web::set_cookie(&form, "cc_signin").expect("sign-in cookie");
    let login = |pw: &str| {
        request(
            server.port,
            "POST",
            "/login",
            &[
                ("Cookie", &format!("cc_signin={pre}")),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            format!("_csrf={pre}&email=owner%40example.com&password={pw}&next=%2Fprojects")
                .as_bytes(),
        )
    };
    assert_eq!(login("old+password+2").status, 401);
    assert_eq!(argon2id(), 0, "a wrong password changes nothing");
    let ok = login("old+password+1");
    assert_eq!(ok.status, 303, "{}", ok.text());
    assert!(crate::web::set_cookie(&ok, "cc_session").is_some());
    assert_eq!(argon2id(), 1, "upgraded at sign-in: {}", server.log());
    // The new hash signs in, and the old password is still the password.
    assert_eq!(login("old+password+1").status, 303);
    assert_eq!(login("old+password+2").status, 401);
}

/// The JSON log lines (`--log-format json`) of `server`; anything else on stderr is skipped.
fn json_lines(server: &Server) -> Vec<Value> {
    server
        .log()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

/// A field of a JSON log line: the event's own, or one of the spans it was logged in.
fn field<'a>(line: &'a Value, name: &str) -> Option<&'a str> {
    line.get("fields")
        .and_then(|f| f.get(name))
        .or_else(|| {
            line["spans"]
                .as_array()
                .into_iter()
                .flatten()
                .find_map(|s| s.get(name))
        })
        .and_then(Value::as_str)
}

#[test]
fn a_request_id_follows_a_job_through_the_json_log_and_no_secret_is_logged() {
    let server = Server::start_env(
        &[
            "--workers",
            "1",
            "--log-format",
            "json",
            "--trust-request-id",
        ],
        &[("RUST_LOG", "debug")],
    );
    let org = server.org(10_000, &[]);

    // An id is made for a request that brings none, and a malformed one is replaced.
    let made = server.get(&org.key, "/v1/jobs/0123456789abcdef01234567");
    assert_eq!(made.status, 404);
    let made_id = made
        .header("x-request-id")
        .expect("a request id")
        .to_string();
    assert!(crate::common::is_id(&made_id), "{made_id}");
    let auth = format!("Bearer {}", org.key);
    let bad = request(
        server.port,
        "GET",
        "/v1/jobs/0123456789abcdef01234567",
        &[("Authorization", &auth), ("X-Request-Id", "two words")],
        b"",
    );
    assert!(crate::common::is_id(
        bad.header("x-request-id").unwrap_or("")
    ));

    // A proxy's id is kept: answered, and on the request's line and its job's pipeline lines.
    let tone = server.tone(2);
    let data = std::fs::read(&tone).expect("tone");
    let body = serde_json::json!({
        "filename": "tone.wav", "contentType": "audio/wav",
        "sizeBytes": data.len(), "durationSeconds": 2,
    });
    let created = request(
        server.port,
        "POST",
        "/v1/jobs",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("X-Request-Id", "lb-7f3a:42"),
        ],
        body.to_string().as_bytes(),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.header("x-request-id"), Some("lb-7f3a:42"));
    let created = created.json();
    let job_id = created["id"].as_str().expect("job id").to_string();
    let upload_url = created["upload"]["url"]
        .as_str()
        .expect("upload url")
        .to_string();
    assert_eq!(server.upload(&created, &data).status, 200);
    let done = server.wait_for(&org.key, &job_id, &["ready", "failed"]);
    assert_eq!(done["status"], "ready", "{done}");

    // Signing in: a one-time link, then a session cookie.
    let link = crate::web::link_path(&server, &org.owner);
    let token = link.rsplit('/').next().expect("token").to_string();
    let signed_in = crate::web::use_link(server.port, &link);
    assert_eq!(signed_in.status, 303, "{}", signed_in.text());
    let (cookie, _) = crate::web::set_cookie(&signed_in, "cc_session").expect("session cookie");
    let projects = request(
        server.port,
        "GET",
        "/projects",
        &[("Cookie", &format!("cc_session={cookie}"))],
        b"",
    );
    assert_eq!(projects.status, 200);

    let lines = json_lines(&server);
    let of_request: Vec<&Value> = lines
        .iter()
        .filter(|l| field(l, "request_id") == Some("lb-7f3a:42"))
        .collect();
    assert!(
        of_request
            .iter()
            .any(|l| field(l, "message") == Some("request")
                && l["fields"]["status"] == 201
                && field(l, "path") == Some("/v1/jobs")),
        "no request line for lb-7f3a:42 in:\n{}",
        server.log()
    );
    for step in ["recognizing", "ready"] {
        assert!(
            of_request
                .iter()
                .any(|l| field(l, "message") == Some(step) && field(l, "job") == Some(&job_id)),
            "the pipeline's {step:?} line lacks the request id:\n{}",
            server.log()
        );
    }
    assert!(lines
        .iter()
        .any(|l| field(l, "request_id") == Some(made_id.as_str())));
    // Every line is JSON, with a level and a timestamp.
    let log = server.log();
    for l in log.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert!(v["level"].is_string() && v["timestamp"].is_string(), "{l}");
    }

    // No secret at debug level: the API key, the sign-in token, the session cookie, the
    // upload URL's signature.
    let signature = upload_url
        .split("signature=")
        .nth(1)
        .map(|s| s.split('&').next().unwrap_or(s).to_string());
    let mut secrets = vec![
        ("API key", org.key.clone()),
        ("sign-in token", token),
        ("session", cookie),
    ];
    if let Some(sig) = signature {
        secrets.push(("upload signature", sig));
    }
    for (what, secret) in secrets {
        assert!(!secret.is_empty());
        assert!(!log.contains(&secret), "the {what} is in the log:\n{log}");
    }
}

/// The value of the sample `name` (with its labels exactly as written, `{a="b"}`) in a
/// Prometheus text exposition; `None` when absent.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[test]
fn metrics_count_jobs_requests_and_the_queue_and_pass_promtool() {
    let metrics_port = free_port();
    let listen = format!("127.0.0.1:{metrics_port}");
    let server = Server::start(&["--workers", "1", "--metrics-listen", &listen]);
    let org = server.org(10_000, &[]);
    let tone = server.tone(2);
    let ready = server.run_job(&org.key, &tone, serde_json::json!({}));
    assert_eq!(ready["status"], "ready", "{ready}");
    // The test recognizer has no model for German: the job fails (and is refunded).
    let failed = server.run_job(&org.key, &tone, serde_json::json!({"language": "de"}));
    assert_eq!(failed["status"], "failed", "{failed}");

    // A worker counts a job finished just after the store says so: poll until both are counted.
    let deadline = Instant::now() + Duration::from_secs(20);
    let r = loop {
        let r = get(metrics_port, "/metrics");
        let text = r.text();
        let finished = ["ready", "failed"].iter().all(|s| {
            sample(
                &text,
                &format!("cuecraft_jobs_finished_total{{status=\"{s}\"}}"),
            )
            .is_some()
        });
        if r.status != 200 || finished || Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r
        .header("content-type")
        .unwrap_or("")
        .starts_with("text/plain; version=0.0.4"));
    let text = r.text();
    let value =
        |name: &str| sample(&text, name).unwrap_or_else(|| panic!("no sample {name} in:\n{text}"));
    assert_eq!(value("cuecraft_jobs_created_total"), 2.0);
    assert_eq!(value("cuecraft_jobs_finished_total{status=\"ready\"}"), 1.0);
    assert_eq!(
        value("cuecraft_jobs_finished_total{status=\"failed\"}"),
        1.0
    );
    assert_eq!(
        value("cuecraft_http_requests_total{route=\"/v1/jobs\",method=\"POST\",status=\"201\"}"),
        2.0
    );
    assert_eq!(value("cuecraft_queue_waiting_tasks"), 0.0);
    assert_eq!(value("cuecraft_queue_running_tasks"), 0.0);
    assert_eq!(value("cuecraft_queue_oldest_waiting_age_seconds"), 0.0);
    assert_eq!(value("cuecraft_store_up"), 1.0);
    if !crate::common::media_is_s3() {
        // Uploads pass through the server only to a local media directory (a bucket takes
        // them itself).
        assert_eq!(value("cuecraft_uploads_in_flight"), 0.0);
    }
    assert_eq!(value("cuecraft_workers{state=\"idle\"}"), 1.0);
    assert_eq!(value("cuecraft_workers{state=\"busy\"}"), 0.0);
    // Two recognitions by the test recognizer (a `command:` plug-in).
    let recognized = text
        .lines()
        .find(|l| l.starts_with("cuecraft_recognition_duration_seconds_count{recognizer="))
        .unwrap_or_else(|| panic!("no recognition histogram in:\n{text}"));
    assert!(recognized.ends_with(" 2"), "{recognized}");

    // Prometheus's own checker (and linter) accepts the exposition.
    let mut check = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus, installed by scripts/setup)");
    use std::io::Write as _;
    check
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write to promtool");
    let out = check.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "promtool: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Not on the API's address, and nothing but /metrics on its own.
    let api = get(server.port, "/metrics");
    assert!(!api.text().contains("cuecraft_"), "{}", api.text());
    assert_eq!(get(metrics_port, "/v1/jobs").status, 404);
}

/// The partial upload files of `job` in the data directory's `media/tmp/`.
fn parts_of(server: &Server, job: &str) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(server.data_dir().join("media").join("tmp"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(job))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Starts the PUT of `created`'s upload to the process on `port` and sends all of `data` but its
/// last 100 bytes; the connection, left open.
fn start_upload(port: u16, created: &Value, data: &[u8]) -> TcpStream {
    use std::io::Write;
    let url = created["upload"]["url"].as_str().expect("upload url");
    let path = &url[url.find("/upload/").expect("an upload path")..];
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: audio/wav\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        data.len()
    );
    conn.write_all(head.as_bytes()).expect("head");
    conn.write_all(&data[..data.len() - 100]).expect("body");
    conn.flush().expect("flush");
    conn
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_process_killed_mid_upload_leaves_no_part_after_the_next_sweep_and_a_live_upload_is_untouched()
{
    // Two API processes and a worker on one data directory (the service's own upload route, so
    // the media are local on both backends), each sweeping every second.
    let sweep = ["--sweep-seconds", "1"];
    let server = Server::start(&[
        "--workers",
        "0",
        sweep[0],
        sweep[1],
        LOCAL_MEDIA[0],
        LOCAL_MEDIA[1],
    ]);
    let org = server.org(1000, &[]);
    let data = std::fs::read(server.tone(3)).expect("media");
    let body = serde_json::json!({"filename": "talk.wav", "contentType": "audio/wav",
        "sizeBytes": data.len(), "durationSeconds": 3});
    let killed = server.create_job(&org.key, &body).json();
    let live = server.create_job(&org.key, &body).json();
    let (killed_id, live_id) = (
        killed["id"].as_str().expect("id").to_string(),
        live["id"].as_str().expect("id").to_string(),
    );
    let (mut other, other_port) = crate::scaleout::second_api(&server, &sweep);

    // An upload in flight on each API process.
    let _dying = start_upload(other_port, &killed, &data);
    wait_until("the killed process's part exists", || {
        !parts_of(&server, &killed_id).is_empty()
    });
    let mut going_on = start_upload(server.port, &live, &data);
    wait_until("the live upload's part exists", || {
        !parts_of(&server, &live_id).is_empty()
    });
    let live_part = parts_of(&server, &live_id);

    // The second process crashes mid-upload; a worker process starts beside the first.
    let _ = other.kill();
    let _ = other.wait();
    let worker = server.worker("sweeper", &["--workers", "1", sweep[0], sweep[1]]);
    wait_until("the crashed upload's part is removed", || {
        parts_of(&server, &killed_id).is_empty()
    });
    // Both live processes have swept a few more times: the part still being written is theirs
    // to leave alone, whoever sweeps.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(parts_of(&server, &live_id), live_part);
    let swept = format!("{}{}", server.log(), worker.log());
    assert!(
        swept.contains("removed the temporary files of writes whose process has ended"),
        "{swept}"
    );

    // The live upload completes whole, and the job goes through.
    {
        use std::io::{Read, Write};
        going_on
            .write_all(&data[data.len() - 100..])
            .expect("rest of the body");
        let mut answer = String::new();
        let _ = going_on.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    let job = server.wait_for(&org.key, &live_id, &["ready", "failed"]);
    assert_eq!(job["status"], "ready", "{job}\n{}", worker.log());
    // The crashed one's client sends it again, to the process that is still up.
    assert_eq!(server.upload(&killed, &data).status, 200);
    let job = server.wait_for(&org.key, &killed_id, &["ready", "failed"]);
    assert_eq!(job["status"], "ready", "{job}\n{}", worker.log());
    assert!(parts_of(&server, &killed_id).is_empty());
    assert!(parts_of(&server, &live_id).is_empty());
}
