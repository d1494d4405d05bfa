//! Helpers of the end-to-end tests: start the real `cuecraft` binary on a free loopback port with
//! a temporary data directory, run `cuecraft admin`, and speak HTTP/1.1 over a plain TCP socket.
#![allow(dead_code)] // Each test module uses a different subset.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

#[cfg(feature = "s3")]
pub mod s3;
pub mod tls;

/// Whether the suite runs its servers on the S3 media store (`CUECRAFT_TEST_MEDIA=s3`: a
/// SeaweedFS bucket started by the tests, `--media s3://...`) instead of the data directory.
pub fn media_is_s3() -> bool {
    std::env::var("CUECRAFT_TEST_MEDIA").is_ok_and(|v| v == "s3")
}

/// `serve` arguments that keep a server's media in its data directory even when the suite runs
/// on S3: for the tests of the service's own upload route (`PUT /upload/{id}`), which only a
/// local media directory uses. `<data-dir>` is replaced by the server's data directory.
pub const LOCAL_MEDIA: [&str; 2] = ["--media", "file://<data-dir>/media"];

/// PUTs `body` to an absolute `http://127.0.0.1:PORT/...` URL that is not this service's (a
/// bucket's presigned upload URL), with exactly `headers` besides `Host` and `Connection`.
pub fn put_url(url: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let port: u16 = authority
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .expect("a port in the URL");
    let mut head = format!("PUT {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    stream.write_all(head.as_bytes()).expect("send head");
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    parse_response(&raw)
}

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_cuecraft");

/// Error codes seen in responses, for the coverage check of the error table.
pub static SEEN_CODES: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// A response as received.
#[derive(Debug, Clone)]
pub struct Resp {
    /// HTTP status.
    pub status: u16,
    /// Headers, names lowercased, in order.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Resp {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (panics with the body when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): status {} {:?}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The error code of a JSON error body.
    pub fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or_default().to_string()
    }

    /// Asserts the status and error code, checks the error body's shape, and records the code.
    pub fn expect_error(&self, status: u16, code: &str) -> Value {
        let body = self.json();
        assert_eq!(
            (self.status, body["code"].as_str().unwrap_or("")),
            (status, code),
            "unexpected response: {body}"
        );
        assert!(
            body["error"].as_str().is_some_and(|m| !m.is_empty()),
            "error message missing: {body}"
        );
        assert!(
            self.header("content-type")
                .is_some_and(|t| t.starts_with("application/json")),
            "error content type: {:?}",
            self.header("content-type")
        );
        SEEN_CODES
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(code.to_string());
        body
    }
}

fn parse_response(raw: &[u8]) -> Resp {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        let mut out = Vec::new();
        let mut r = rest;
        while let Some(eol) = r.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(
                String::from_utf8_lossy(&r[..eol])
                    .split(';')
                    .next()
                    .unwrap_or("0")
                    .trim(),
                16,
            )
            .unwrap_or(0);
            if size == 0 {
                break;
            }
            let start = eol + 2;
            out.extend_from_slice(&r[start..(start + size).min(r.len())]);
            r = &r[(start + size + 2).min(r.len())..];
        }
        out
    } else {
        let len = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(rest.len());
        rest[..len.min(rest.len())].to_vec()
    };
    Resp {
        status,
        headers,
        body,
    }
}

/// Sends one HTTP/1.1 request (with `Connection: close`) and reads the whole response. Every
/// response must carry `Cache-Control: no-store`; this helper checks it for every test.
pub fn raw_request(port: u16, head: &str, body: &[u8]) -> Resp {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    stream.write_all(head.as_bytes()).expect("send head");
    // The server may refuse a body early and close; a failed write then still has a response.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let resp = parse_response(&raw);
    assert_eq!(
        resp.header("cache-control"),
        Some("no-store"),
        "every response must be no-store: {head}"
    );
    resp
}

/// Sends `method path` with `headers` and `body`.
pub fn request(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    let mut has_length = false;
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("content-length") {
            has_length = true;
        }
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !has_length && (!body.is_empty() || method == "POST" || method == "PUT") {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    raw_request(port, &head, body)
}

/// An organisation set up through `cuecraft admin`: its id, its owner and a key the owner made.
#[derive(Debug, Clone)]
pub struct Org {
    /// Organisation id.
    pub id: String,
    /// The owner's member id.
    pub owner: String,
    /// An API key created by the owner.
    pub key: String,
    /// That key's id.
    pub key_id: String,
}

/// A running `cuecraft serve` with its own data directory; killed when dropped.
pub struct Server {
    /// The process.
    pub child: Option<Child>,
    /// Loopback port.
    pub port: u16,
    /// Temporary directory holding the data directory, the recognizer script and test media.
    pub tmp: tempfile::TempDir,
    /// Extra `serve` arguments it was started with (kept for restarts).
    args: Vec<String>,
    /// Extra environment of the process (kept for restarts).
    env: Vec<(String, String)>,
    /// The server's own Postgres database when the run is on Postgres ([`postgres_run`]);
    /// dropped (after the process is killed) with the server.
    pub pg: Option<cuecraft_pgtest::TestDb>,
}

/// Whether this run puts the servers' records in Postgres: `CUECRAFT_TEST_STORE=postgres`
/// (`scripts/test` runs the suite a second time so). Every server then gets a fresh database of
/// the test binary's own cluster (pgtest), named to `serve`, `worker` and `admin` through
/// `CUECRAFT_STORE`, so a test that names its own `--store` still chooses. Media stay in the data
/// directory.
pub fn postgres_run() -> bool {
    std::env::var("CUECRAFT_TEST_STORE").is_ok_and(|v| v == "postgres")
}

/// A fresh database for one server on a Postgres run.
fn fresh_pg() -> Option<cuecraft_pgtest::TestDb> {
    postgres_run().then(pg_db)
}

/// A fresh Postgres database of the test binary's cluster, migrated (in the template) by the
/// store itself.
pub fn pg_db() -> cuecraft_pgtest::TestDb {
    cuecraft_pgtest::fresh_db(|url| {
        cuecraft_host::store::postgres::PostgresStore::open(url)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
}

/// What `cuecraft serve` logs once it listens (host/src/cli.rs).
const SERVING: &str = "cuecraft serving";

/// A free loopback port.
pub fn free_port() -> u16 {
    cuecraft_pgtest::free_port()
}

/// The test recognizer: a shell script that prints deterministic words for the job's language
/// argument, so API tests do not depend on speech recognition.
///
/// - `fr`: sleeps 3 s first (a slow job, to hold a worker);
/// - `de`: fails (exit 1), so the job fails;
/// - `nl`: only filler words, so the clean version has nothing left and fails;
/// - `it`: the first run (per server) fails after 3 s, later runs succeed at once (a worker that
///   stalls past its lease fails while another has taken its job over);
/// - `es`: the first run (per server) takes 30 s, later runs answer at once (a worker stopped
///   mid-recognition hands the job to another, which need not wait as long);
/// - anything else: a short English transcript with one filler.
pub const RECOGNIZER: &str = r#"#!/bin/sh
cat > /dev/null
case "$2" in
  de) echo "no model for de" >&2; exit 1 ;;
  it) if mkdir "$0.it-ran" 2>/dev/null; then sleep 3; echo "first run fails" >&2; exit 1; fi ;;
  nl) echo '{"language":"nl","words":[{"text":"uh","start":0.2,"end":0.5},{"text":"um","start":0.7,"end":1.0}]}'; exit 0 ;;
  fr) sleep 3 ;;
  es) if mkdir "$0.es-ran" 2>/dev/null; then sleep 30; fi ;;
esac
echo '{"language":"en","words":[
 {"text":"Hello","start":0.10,"end":0.45},{"text":"world.","start":0.50,"end":0.95},
 {"text":"Um,","start":1.20,"end":1.40},{"text":"this","start":1.50,"end":1.70},
 {"text":"is","start":1.75,"end":1.85},{"text":"a","start":1.90,"end":1.95},
 {"text":"test","start":2.00,"end":2.30},{"text":"of","start":2.35,"end":2.45},
 {"text":"the","start":2.50,"end":2.60},{"text":"subtitles.","start":2.65,"end":2.95}]}'
"#;

impl Server {
    /// Starts a server with the test recognizer and `extra` arguments (`--workers 1` ...).
    pub fn start(extra: &[&str]) -> Server {
        Server::start_on(None, extra)
    }

    /// Starts a server with the test recognizer on the Postgres database `db` (another server's,
    /// to run several API processes on one store), whatever the run's backend.
    pub fn start_on(db: Option<&cuecraft_pgtest::TestDb>, extra: &[&str]) -> Server {
        Server::start_with(db, extra, &[])
    }

    /// Starts a server with the test recognizer, `extra` arguments and extra environment `env`
    /// (`RUST_LOG=debug`, ...).
    pub fn start_env(extra: &[&str], env: &[(&str, &str)]) -> Server {
        Server::start_with(None, extra, env)
    }

    fn start_with(
        db: Option<&cuecraft_pgtest::TestDb>,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let tmp = tempfile::tempdir().expect("temp dir");
        let script = tmp.path().join("recognizer.sh");
        std::fs::write(&script, RECOGNIZER).expect("write recognizer");
        let status = Command::new("chmod")
            .arg("+x")
            .arg(&script)
            .status()
            .expect("chmod");
        assert!(status.success());
        let mut args: Vec<String> = vec![
            "--recognizer".into(),
            format!("command:{}", script.display()),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut server = Server {
            child: None,
            port: free_port(),
            tmp,
            args,
            env: db
                .map(|db| ("CUECRAFT_STORE".to_string(), db.url.clone()))
                .into_iter()
                .chain(env.iter().map(|(k, v)| (k.to_string(), v.to_string())))
                .collect(),
            pg: if db.is_some() { None } else { fresh_pg() },
        };
        server.spawn();
        server
    }

    /// Starts a server with the default recognizer (whisper) and `extra` arguments, for the
    /// tests of real speech (tests/media.rs).
    pub fn start_default_recognizer(extra: &[&str]) -> Server {
        let mut server = Server {
            child: None,
            port: free_port(),
            tmp: tempfile::tempdir().expect("temp dir"),
            args: extra.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
            pg: fresh_pg(),
        };
        server.spawn();
        server
    }

    /// Starts a server in `tmp` (which may hold the scripts the arguments name) with `args` and
    /// extra environment `env` (a `PATH` with a failing tool first, to inject a fault).
    pub fn start_in(tmp: tempfile::TempDir, args: &[String], env: &[(&str, String)]) -> Server {
        let mut server = Server {
            child: None,
            port: free_port(),
            tmp,
            args: args.to_vec(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            pg: fresh_pg(),
        };
        server.spawn();
        server
    }

    /// The environment naming this server's store to a `cuecraft` process: empty on SQLite
    /// (the data directory), `CUECRAFT_STORE=postgres://...` on Postgres.
    pub fn store_env(&self) -> Vec<(&'static str, String)> {
        if let Some((_, url)) = self.env.iter().find(|(k, _)| k == "CUECRAFT_STORE") {
            return vec![("CUECRAFT_STORE", url.clone())];
        }
        self.pg
            .iter()
            .map(|db| ("CUECRAFT_STORE", db.url.clone()))
            .collect()
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Starts the process and waits until it accepts connections.
    pub fn spawn(&mut self) {
        if media_is_s3() && !self.args.iter().any(|a| a == "--media") {
            // Kept in the arguments, so a restart finds the same bucket prefix.
            #[cfg(feature = "s3")]
            {
                let weed = s3::seaweed();
                self.args.push("--media".into());
                self.args.push(weed.media_url());
                self.env
                    .extend(weed.env().into_iter().map(|(k, v)| (k.to_string(), v)));
            }
            #[cfg(not(feature = "s3"))]
            panic!("CUECRAFT_TEST_MEDIA=s3 needs the tests built with --features s3");
        }
        let data_dir = self.data_dir().display().to_string();
        for a in self.args.iter_mut() {
            if a.contains("<data-dir>") {
                *a = a.replace("<data-dir>", &data_dir);
            }
        }
        // Ready once this process has logged its listening line (after the bind): a port that
        // answers could be another's, if this server failed to bind it.
        let serving = |log: &str| log.matches(SERVING).count();
        let before = serving(&self.log());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.tmp.path().join("server.log"))
            .expect("log file");
        let child = Command::new(BIN)
            .arg("serve")
            .arg("--data-dir")
            .arg(self.data_dir())
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", self.port))
            // Its own address, unless the test puts it behind something (a TLS proxy).
            .args(
                (!self.args.iter().any(|a| a == "--public-url"))
                    .then(|| ["--public-url".to_string(), self.base()])
                    .into_iter()
                    .flatten(),
            )
            .args(&self.args)
            .envs(self.store_env())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start cuecraft serve");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while serving(&self.log()) == before
            || TcpStream::connect(("127.0.0.1", self.port)).is_err()
        {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    panic!("server exited with {status}: {}", self.log());
                }
            }
            assert!(
                Instant::now() < deadline,
                "server did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        if self.pg.is_some() && !self.args.iter().any(|a| a == "--store") {
            assert!(
                !self.data_dir().join("cuecraft.sqlite").exists(),
                "a Postgres run must keep no records in the data directory"
            );
        }
    }

    /// Kills the process with SIGKILL (as a crash would) and waits for it.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Sends SIGTERM and waits for the exit; returns whether it exited successfully in time.
    pub fn terminate(&mut self, within: Duration) -> bool {
        let Some(mut c) = self.child.take() else {
            return false;
        };
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(c.id().to_string())
            .status();
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = c.try_wait() {
                return status.success();
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.tmp.path().join("server.log")).unwrap_or_default()
    }

    /// Runs `cuecraft admin --data-dir DIR args...` and returns its JSON output.
    pub fn admin(&self, args: &[&str]) -> Value {
        admin_in(&self.data_dir(), &self.store_env(), args)
    }

    /// Runs an admin command that must fail; returns its stderr.
    pub fn admin_fails(&self, args: &[&str]) -> String {
        let out = Command::new(BIN)
            .arg("admin")
            .arg("--data-dir")
            .arg(self.data_dir())
            .args(args)
            .envs(self.store_env())
            .output()
            .expect("run admin");
        assert!(!out.status.success(), "admin {args:?} should fail");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Creates an organisation with an owner and a key.
    pub fn org(&self, credits_cents: i64, extra: &[&str]) -> Org {
        let credits = credits_cents.to_string();
        let mut args = vec![
            "org",
            "create",
            "--name",
            "Acme",
            "--credits-cents",
            &credits,
        ];
        args.extend_from_slice(extra);
        let id = str_field(&self.admin(&args), "id");
        let owner = str_field(
            &self.admin(&[
                "member",
                "add",
                "--org",
                &id,
                "--email",
                "owner@example.com",
                "--role",
                "owner",
                "--joined",
                "2020-01-01T00:00:00Z",
            ]),
            "id",
        );
        let key = self.admin(&["key", "create", "--org", &id, "--member", &owner]);
        Org {
            id,
            owner,
            key: str_field(&key, "key"),
            key_id: str_field(&key, "id"),
        }
    }

    /// A request with the key's bearer header.
    pub fn call(&self, key: &str, method: &str, path: &str, body: &[u8]) -> Resp {
        let auth = format!("Bearer {key}");
        let mut headers = vec![("Authorization", auth.as_str())];
        if !body.is_empty() {
            headers.push(("Content-Type", "application/json"));
        }
        request(self.port, method, path, &headers, body)
    }

    /// GET with the key.
    pub fn get(&self, key: &str, path: &str) -> Resp {
        self.call(key, "GET", path, b"")
    }

    /// POST /v1/jobs with `body`.
    pub fn create_job(&self, key: &str, body: &Value) -> Resp {
        self.call(key, "POST", "/v1/jobs", body.to_string().as_bytes())
    }

    /// PUTs `data` to a created job's upload URL with its headers, as a client would: to this
    /// server, or to the bucket's presigned URL when the media are in S3 (whose answer is the
    /// bucket's, with no body to speak of).
    pub fn upload(&self, created: &Value, data: &[u8]) -> Resp {
        let url = created["upload"]["url"].as_str().expect("upload url");
        let ct = created["upload"]["headers"]["Content-Type"]
            .as_str()
            .expect("content type");
        let len = created["upload"]["headers"]["Content-Length"]
            .as_str()
            .expect("content length");
        let Some(path) = url.strip_prefix(&self.base()) else {
            return put_url(url, &[("Content-Type", ct), ("Content-Length", len)], data);
        };
        request(
            self.port,
            "PUT",
            path,
            &[("Content-Type", ct), ("Content-Length", len)],
            data,
        )
    }

    /// Polls the job until its status is one of `wanted` (30 s at most); returns the job.
    pub fn wait_for(&self, key: &str, id: &str, wanted: &[&str]) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = self.get(key, &format!("/v1/jobs/{id}"));
            assert_eq!(r.status, 200, "{}", r.text());
            let job = r.json();
            if wanted.contains(&job["status"].as_str().unwrap_or("")) {
                return job;
            }
            assert!(
                Instant::now() < deadline,
                "job {id} stuck in {}; log:\n{}",
                job["status"],
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Creates a job for `media`, uploads it and waits until it is ready or failed.
    pub fn run_job(&self, key: &str, media: &Path, settings: Value) -> Value {
        let data = std::fs::read(media).expect("media");
        let created = self.create_job(
            key,
            &serde_json::json!({
                "filename": media.file_name().and_then(|n| n.to_str()).unwrap_or("media.wav"),
                "contentType": "audio/wav",
                "sizeBytes": data.len(),
                "durationSeconds": 3,
                "settings": settings,
            }),
        );
        assert_eq!(created.status, 201, "{}", created.text());
        let created = created.json();
        let up = self.upload(&created, &data);
        assert_eq!(up.status, 200, "{}", up.text());
        self.wait_for(
            key,
            created["id"].as_str().unwrap_or(""),
            &["ready", "failed"],
        )
    }

    /// A WAV of `seconds` of a 440 Hz tone, made with ffmpeg in the temporary directory.
    pub fn tone(&self, seconds: u32) -> PathBuf {
        tone(self.tmp.path(), seconds)
    }

    /// Ledger rows of `job_id` as (kind, amount_cents), read straight from the ledger
    /// (billing.sqlite, or the schema `billing` on Postgres).
    pub fn ledger(&self, job_id: &str) -> Vec<(String, i64)> {
        if let Some(db) = &self.pg {
            return db
                .connect()
                .query(
                    "SELECT kind, amount_cents FROM billing.ledger WHERE job_id = $1 ORDER BY id",
                    &[&job_id],
                )
                .expect("ledger rows")
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
        }
        let out = python(&format!(
            "import sqlite3,json\nc=sqlite3.connect({:?})\nprint(json.dumps(c.execute(\"SELECT kind, amount_cents FROM ledger WHERE job_id=? ORDER BY id\", ({job_id:?},)).fetchall()))",
            self.data_dir().join("billing.sqlite").display().to_string()
        ));
        let rows: Vec<(String, i64)> = serde_json::from_str(out.trim()).expect("ledger rows");
        rows
    }

    /// The organisation's balance, from the ledger.
    pub fn balance(&self, org: &str) -> i64 {
        if let Some(db) = &self.pg {
            return db
                .connect()
                .query_one(
                    "SELECT COALESCE(SUM(amount_cents), 0)::BIGINT FROM billing.ledger WHERE org_id = $1",
                    &[&org],
                )
                .expect("balance")
                .get(0);
        }
        let out = python(&format!(
            "import sqlite3\nc=sqlite3.connect({:?})\nprint(c.execute(\"SELECT COALESCE(SUM(amount_cents),0) FROM ledger WHERE org_id=?\", ({org:?},)).fetchone()[0])",
            self.data_dir().join("billing.sqlite").display().to_string()
        ));
        out.trim().parse().expect("balance")
    }

    /// Runs `statements` (`;`-separated, no parameters) on the main records, straight, as a
    /// crash or an operator would leave them (cuecraft.sqlite, or the Postgres database).
    pub fn sql(&self, statements: &str) {
        if let Some(db) = &self.pg {
            db.connect()
                .batch_execute(statements)
                .unwrap_or_else(|e| panic!("{statements}: {e}"));
            return;
        }
        python(&format!(
            "import sqlite3\nc=sqlite3.connect({:?})\nc.executescript({statements:?})\nc.commit()",
            self.data_dir()
                .join("cuecraft.sqlite")
                .display()
                .to_string()
        ));
    }

    /// A number read from the main records by `query` (one row, one column).
    pub fn sql_number(&self, query: &str) -> i64 {
        if let Some(db) = &self.pg {
            let row = db
                .connect()
                .simple_query(query)
                .unwrap_or_else(|e| panic!("{query}: {e}"))
                .into_iter()
                .find_map(|m| match m {
                    postgres::SimpleQueryMessage::Row(r) => r.get(0).and_then(|v| v.parse().ok()),
                    _ => None,
                });
            return row.unwrap_or_else(|| panic!("{query}: no number"));
        }
        python(&format!(
            "import sqlite3\nprint(sqlite3.connect({:?}).execute({query:?}).fetchone()[0])",
            self.data_dir()
                .join("cuecraft.sqlite")
                .display()
                .to_string()
        ))
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{query}: no number"))
    }

    /// Holds the ledger exclusively, as another process could, until the guard is dropped:
    /// billing.sqlite under `BEGIN EXCLUSIVE`, or `billing.ledger` under `LOCK TABLE ... ACCESS
    /// EXCLUSIVE` in an open transaction.
    pub fn lock_ledger(&self) -> LedgerLock {
        if let Some(db) = &self.pg {
            let mut client = db.connect();
            client
                .batch_execute("BEGIN; LOCK TABLE billing.ledger IN ACCESS EXCLUSIVE MODE")
                .expect("lock the ledger");
            return LedgerLock::Postgres(Box::new(client));
        }
        let mut locker = Command::new("python3")
            .arg("-c")
            .arg(format!(
                "import sqlite3,sys\nc=sqlite3.connect({:?}, isolation_level=None)\nc.execute('PRAGMA journal_mode=DELETE')\nc.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\nsys.stdin.read()",
                self.data_dir().join("billing.sqlite").display().to_string()
            ))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        wait_line(&mut locker, "locked");
        LedgerLock::Sqlite(locker)
    }
}

/// The ledger held exclusively ([`Server::lock_ledger`]); released when dropped.
pub enum LedgerLock {
    /// The python process holding billing.sqlite: released when its stdin closes.
    Sqlite(Child),
    /// The connection whose open transaction holds the lock: released when it closes.
    Postgres(Box<postgres::Client>),
}

impl Drop for LedgerLock {
    fn drop(&mut self) {
        if let LedgerLock::Sqlite(child) = self {
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A running `cuecraft worker` on a server's data directory, with the test recognizer; killed
/// when dropped.
pub struct Worker {
    /// The process.
    pub child: Option<Child>,
    /// Its log file.
    pub log: PathBuf,
}

impl Server {
    /// The server's `--media` argument and its value (none: the data directory), for the worker
    /// processes that share its media.
    pub fn media_args(&self) -> Vec<String> {
        self.args
            .windows(2)
            .find(|w| w[0] == "--media")
            .map(|w| w.to_vec())
            .unwrap_or_default()
    }

    /// The server's media store, opened as the server opened it (its data directory, or the
    /// bucket prefix of `--media s3://...`), to read what it stored.
    pub fn media_store(&self) -> Box<dyn cuecraft_host::media::MediaStore> {
        let spec = self.media_args().get(1).cloned();
        if let Some(url) = spec.as_deref().filter(|s| s.starts_with("s3://")) {
            #[cfg(feature = "s3")]
            return Box::new(s3::seaweed().store_at(url));
            #[cfg(not(feature = "s3"))]
            panic!("{url}: the tests need --features s3");
        }
        let dir = spec
            .as_deref()
            .and_then(|s| s.strip_prefix("file://"))
            .map(PathBuf::from)
            .unwrap_or_else(|| self.data_dir().join("media"));
        Box::new(cuecraft_host::media::LocalDirectory::open(&dir).expect("media directory"))
    }

    /// The environment the server's media store needs (the bucket's credentials; none for a
    /// directory), for the other processes that share its media.
    pub fn media_env(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .filter(|(k, _)| k.starts_with("AWS_"))
            .cloned()
            .collect()
    }

    /// Starts a `cuecraft worker` process on this server's data directory with `extra` arguments;
    /// its log goes to `worker-NAME.log` in the temporary directory.
    pub fn worker(&self, name: &str, extra: &[&str]) -> Worker {
        let log = self.tmp.path().join(format!("worker-{name}.log"));
        let file = std::fs::File::create(&log).expect("worker log");
        let child = Command::new(BIN)
            .arg("worker")
            .arg("--data-dir")
            .arg(self.data_dir())
            .arg("--recognizer")
            .arg(format!(
                "command:{}",
                self.tmp.path().join("recognizer.sh").display()
            ))
            .args(extra)
            .args(self.media_args())
            .envs(self.store_env())
            .envs(self.media_env())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start cuecraft worker");
        Worker {
            child: Some(child),
            log,
        }
    }
}

impl Worker {
    /// The worker's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (up to 20 s) until the worker's log holds `text`.
    pub fn wait_log(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.log().contains(text) {
            assert!(
                Instant::now() < deadline,
                "worker log never said {text:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends the process `signal` (`STOP`, `CONT`) with kill(1).
    pub fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("running worker").id();
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{signal} {pid}");
    }

    /// Kills the process with SIGKILL (as a crash would) and waits for it.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Runs `cuecraft admin --data-dir dir args...`; panics unless it prints one JSON object.
pub fn admin(dir: &Path, args: &[&str]) -> Value {
    admin_in(dir, &[], args)
}

/// Runs `cuecraft admin --data-dir dir args...` with `env` (the store's).
pub fn admin_in(dir: &Path, env: &[(&str, String)], args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .arg("admin")
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run admin");
    assert!(
        out.status.success(),
        "admin {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "admin {args:?} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert!(v.is_object(), "admin output must be one object: {v}");
    v
}

/// A string field of a JSON object.
pub fn str_field(v: &Value, name: &str) -> String {
    v[name]
        .as_str()
        .unwrap_or_else(|| panic!("no {name} in {v}"))
        .to_string()
}

/// Runs a Python 3 snippet and returns its stdout.
pub fn python(code: &str) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(code)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A WAV of `seconds` of a 440 Hz tone (16 kHz mono), made with ffmpeg in `dir`.
pub fn tone(dir: &Path, seconds: u32) -> PathBuf {
    let path = dir.join(format!("tone{seconds}.wav"));
    if !path.exists() {
        let status = Command::new("ffmpeg")
            .args(["-loglevel", "error", "-y", "-f", "lavfi", "-i"])
            .arg(format!("sine=frequency=440:duration={seconds}"))
            .args(["-ar", "16000", "-ac", "1"])
            .arg(&path)
            .status()
            .expect("ffmpeg must be installed (scripts/setup)");
        assert!(status.success(), "ffmpeg failed");
    }
    path
}

/// Whether `s` is 24 lowercase hex characters.
pub fn is_id(s: &str) -> bool {
    s.len() == 24
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Reads lines from a child's stdout until one equals `line`.
pub fn wait_line(child: &mut Child, line: &str) {
    let out = child.stdout.take().expect("piped stdout");
    let mut reader = BufReader::new(out);
    let mut buf = String::new();
    loop {
        buf.clear();
        let n = reader.read_line(&mut buf).expect("read child");
        assert!(n > 0, "child ended before printing {line:?}");
        if buf.trim() == line {
            return;
        }
    }
}
