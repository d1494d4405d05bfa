//! The scale-out shape on loopback: two API processes (`serve --workers 0`) and two worker
//! processes on one store and one media location (Postgres and a bucket in the Postgres run,
//! SQLite and a directory otherwise). A worker is killed with -9 in the middle of recognition and
//! an API process in the middle of a request; every job still ends `ready`, charged once and
//! settled once, and nothing is left in the queue.

use std::io::Write;
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{free_port, request, str_field, Resp, Server, BIN};

/// A second `serve --workers 0` on the first server's store and media, on its own port, with
/// `extra` arguments. Its links carry the first server's public URL, as every process behind one
/// proxy would.
pub fn second_api(server: &Server, extra: &[&str]) -> (Child, u16) {
    let port = free_port();
    let child = Command::new(BIN)
        .arg("serve")
        .arg("--data-dir")
        .arg(server.data_dir())
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--public-url")
        .arg(server.base())
        .args(["--workers", "0", "--rate-limit-per-minute", "100000"])
        .args(extra)
        .args(server.media_args())
        .envs(server.store_env())
        .envs(server.media_env())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the second API process");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "second API process did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, port)
}

fn create(port: u16, key: &str, idem: &str, body: &Value) -> Resp {
    let auth = format!("Bearer {key}");
    request(
        port,
        "POST",
        "/v1/jobs",
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("Idempotency-Key", idem),
        ],
        body.to_string().as_bytes(),
    )
}

#[test]
fn two_api_processes_and_two_workers_survive_kill_9_and_charge_every_job_once() {
    let server = Server::start(&[
        "--workers",
        "0",
        "--price-cents-per-minute",
        "10",
        "--rate-limit-per-minute",
        "100000",
    ]);
    let (mut api_b, port_b) = second_api(&server, &[]);
    let org = server.org(100_000, &[]);
    let data = std::fs::read(server.tone(3)).expect("media");
    let lease = ["--workers", "1", "--lease-ms", "1500"];
    let mut w1 = server.worker("1", &lease);
    let _w2 = server.worker("2", &lease);

    // 20 jobs, created alternately through each API process; every fourth is `fr`, whose
    // recognition takes 3 s, so there is recognition under way to interrupt.
    let mut ids = Vec::new();
    for i in 0..20 {
        let language = if i % 4 == 0 { "fr" } else { "en" };
        let body = json!({"filename": format!("talk{i}.wav"), "contentType": "audio/wav",
            "sizeBytes": data.len(), "durationSeconds": 3, "settings": {"language": language}});
        let port = if i % 2 == 0 { server.port } else { port_b };
        let created = create(port, &org.key, &format!("job-{i}"), &body);
        assert_eq!(created.status, 201, "{}", created.text());
        let created = created.json();
        let up = server.upload(&created, &data);
        assert_eq!(up.status, 200, "{}", up.text());
        ids.push(str_field(&created, "id"));
        if i == 4 {
            // Worker 1 dies in the middle of a recognition; a new worker takes its place.
            w1.wait_log("recognizing");
            w1.kill9();
        }
    }
    let _w3 = server.worker("3", &lease);

    // API process B dies with a creation request half-sent to it; the client retries the same
    // request, with the same Idempotency-Key, on process A and gets one job.
    let body = json!({"filename": "late.wav", "contentType": "audio/wav",
        "sizeBytes": data.len(), "durationSeconds": 3, "settings": {"language": "en"}});
    let text = body.to_string();
    let mut half = TcpStream::connect(("127.0.0.1", port_b)).expect("connect to B");
    write!(
        half,
        "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nIdempotency-Key: late\r\nContent-Length: {}\r\n\r\n{}",
        org.key,
        text.len(),
        &text[..text.len() / 2]
    )
    .expect("half a request");
    half.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(200));
    let _ = api_b.kill();
    let _ = api_b.wait();
    let retried = create(server.port, &org.key, "late", &body);
    assert_eq!(retried.status, 201, "{}", retried.text());
    assert_eq!(retried.header("idempotent-replayed"), None);
    let retried = retried.json();
    assert_eq!(server.upload(&retried, &data).status, 200);
    ids.push(str_field(&retried, "id"));

    for id in &ids {
        let job = server.wait_for(&org.key, id, &["ready", "failed"]);
        assert_eq!(job["status"], "ready", "{job}");
        // Declared and measured 3 s: 1 cent, charged once, settled once.
        assert_eq!(
            server.ledger(id),
            vec![("charge".to_string(), -1), ("settle".to_string(), 0)],
            "job {id}"
        );
    }
    assert_eq!(server.balance(&org.id), 100_000 - 21);
    assert_eq!(
        server.sql_number(&format!(
            "SELECT COUNT(*) FROM jobs WHERE org_id = '{}'",
            org.id
        )),
        21
    );
    // The clean versions finish after the jobs; then the queue is empty.
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.sql_number("SELECT COUNT(*) FROM queue") > 0 {
        assert!(Instant::now() < deadline, "work left in the queue");
        std::thread::sleep(Duration::from_millis(200));
    }
}
