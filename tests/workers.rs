//! Separate processes on one store: `serve --workers 0` answers the API and `cuecraft worker`
//! processes run the pipeline, sharing the store's queue; a worker killed with -9 has its job
//! taken over once its lease runs out, and the job is charged once.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{str_field, Server, Worker, BIN};

/// Creates a job for `data` in `language` and uploads it; the created job.
fn submit(server: &Server, key: &str, data: &[u8], language: &str, seconds: u32) -> Value {
    let created = server
        .create_job(
            key,
            &json!({"filename": "talk.wav", "contentType": "audio/wav", "sizeBytes": data.len(),
                    "durationSeconds": seconds, "settings": {"language": language}}),
        )
        .json();
    assert_eq!(server.upload(&created, data).status, 200);
    created
}

/// Rows left in the store's queue.
/// The job of 30 declared seconds (5 cents) measured at 3 s was charged and settled once (4 cents
/// back, the organisation's 1,000 down to 999), and the queue is empty.
fn assert_charged_once_and_drained(server: &Server, org_id: &str, id: &str) {
    assert_eq!(
        server.ledger(id),
        vec![("charge".to_string(), -5), ("settle".to_string(), 4)]
    );
    assert_eq!(server.balance(org_id), 999);
    assert_eq!(queue_rows(server), 0);
}

fn queue_rows(server: &Server) -> i64 {
    server.sql_number("SELECT COUNT(*) FROM queue")
}

/// Waits until the job is ready and all its transcripts (the clean version too) are ready; on a
/// failure shows the job and the logs of the server and of `workers`.
fn wait_all_ready(server: &Server, workers: &[&Worker], key: &str, id: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let job = server.wait_for(key, id, &["ready", "failed"]);
        if job["status"] != "ready" {
            let logs: Vec<String> = workers.iter().map(|w| w.log()).collect();
            panic!(
                "{job}\nserver log:\n{}\nworker logs:\n{}",
                server.log(),
                logs.join("\n----\n")
            );
        }
        let done = job["transcripts"]
            .as_array()
            .is_some_and(|t| t.len() == 2 && t.iter().all(|t| t["status"] == "ready"));
        if done {
            return job;
        }
        assert!(std::time::Instant::now() < deadline, "{job}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_api_only_server_and_two_worker_processes_complete_every_job_charged_once() {
    let server = Server::start(&[
        "--workers",
        "0",
        "--price-cents-per-minute",
        "10",
        "--rate-limit-per-minute",
        "100000",
    ]);
    let org = server.org(1000, &[]);
    let data = std::fs::read(server.tone(3)).expect("media");
    // Two slow jobs (`fr`: the recognizer takes 3 s) first, then four quick ones.
    let mut ids = Vec::new();
    for language in ["fr", "fr", "en", "en", "en", "en"] {
        ids.push(str_field(
            &submit(&server, &org.key, &data, language, 3),
            "id",
        ));
    }
    // The API-only server processes nothing.
    std::thread::sleep(Duration::from_millis(1500));
    for id in &ids {
        let job = server.get(&org.key, &format!("/v1/jobs/{id}")).json();
        assert_eq!(job["status"], "transcribing", "{job}");
    }
    let a = server.worker("a", &["--workers", "1"]);
    let b = server.worker("b", &["--workers", "1"]);
    for id in &ids {
        wait_all_ready(&server, &[&a, &b], &org.key, id);
        // Declared and measured 3 s: 1 cent, charged once, settled once.
        assert_eq!(
            server.ledger(id),
            vec![("charge".to_string(), -1), ("settle".to_string(), 0)]
        );
    }
    assert_eq!(server.balance(&org.id), 1000 - 6);
    assert_eq!(queue_rows(&server), 0);
    // Each of the two slow jobs held one worker for 3 s, so both processes worked.
    for w in [&a, &b] {
        assert!(w.log().contains("recognizing"), "{}", w.log());
    }
}

#[test]
fn a_worker_killed_with_kill_9_mid_job_is_replaced_after_its_lease_and_charges_once() {
    let server = Server::start(&["--workers", "0", "--price-cents-per-minute", "10"]);
    let org = server.org(1000, &[]);
    let data = std::fs::read(server.tone(3)).expect("media");
    // `fr`: recognition takes 3 s; declared 30 s (5 cents), measured 3 s (1 cent).
    let id = str_field(&submit(&server, &org.key, &data, "fr", 30), "id");
    let lease = ["--workers", "1", "--lease-ms", "1000"];
    let mut first = server.worker("first", &lease);
    first.wait_log("recognizing");
    first.kill9();
    let second = server.worker("second", &lease);
    let job = wait_all_ready(&server, &[&first, &second], &org.key, &id);
    assert!(second.log().contains("recognizing"), "{}", second.log());
    assert_eq!(job["media"]["durationSeconds"], 3.0);
    assert_charged_once_and_drained(&server, &org.id, &id);
}

#[test]
fn a_worker_stalled_past_its_lease_neither_fails_nor_refunds_the_job_another_worker_took_over() {
    let server = Server::start(&["--workers", "0", "--price-cents-per-minute", "10"]);
    let org = server.org(1000, &[]);
    let data = std::fs::read(server.tone(3)).expect("media");
    // `it`: the first recognition fails after 3 s, the next succeeds; declared 30 s (5 cents).
    let id = str_field(&submit(&server, &org.key, &data, "it", 30), "id");
    let lease = ["--workers", "1", "--lease-ms", "300"];
    let stalled = server.worker("stalled", &lease);
    stalled.wait_log("recognizing");
    // The recognizer has started (the script marks its first run) ...
    let first_run = server.data_dir().with_file_name("recognizer.sh.it-ran");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !first_run.exists() {
        assert!(std::time::Instant::now() < deadline, "{}", stalled.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    // ... when the process is starved of CPU: its heartbeats stop, its recognizer runs on (and
    // fails).
    stalled.signal("STOP");
    let fresh = server.worker("fresh", &lease);
    let ready = wait_all_ready(&server, &[&stalled, &fresh], &org.key, &id);
    assert!(fresh.log().contains("recognizing"), "{}", fresh.log());
    stalled.signal("CONT");
    // Its recognition failed meanwhile; the failure is dropped, not written.
    stalled.wait_log("another worker took the task over");
    let job = server.get(&org.key, &format!("/v1/jobs/{id}")).json();
    assert_eq!(job["status"], "ready", "{job}\n{}", stalled.log());
    assert_eq!(job["transcripts"], ready["transcripts"]);
    assert_charged_once_and_drained(&server, &org.id, &id);
}

#[test]
fn store_urls_choose_the_store_and_a_postgres_url_is_refused_without_its_password() {
    // Records in a directory of their own, named by --store and by CUECRAFT_STORE.
    let tmp = tempfile::tempdir().expect("temp dir");
    let records = tmp.path().join("records");
    let url = format!("sqlite://{}", records.display());
    let mut server = Server::start(&["--store", &url]);
    let out = std::process::Command::new(BIN)
        .args(["admin", "--data-dir"])
        .arg(server.data_dir())
        .args([
            "quickstart",
            "--org-name",
            "Acme",
            "--email",
            "o@example.com",
        ])
        .env("CUECRAFT_STORE", &url)
        .output()
        .expect("admin");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made: Value = serde_json::from_slice(&out.stdout).expect("json");
    let key = str_field(&made, "key");
    let r = server.create_job(
        &key,
        &json!({"filename": "a.wav", "contentType": "audio/wav", "sizeBytes": 10, "durationSeconds": 1}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(records.join("cuecraft.sqlite").is_file());
    assert!(!server.data_dir().join("cuecraft.sqlite").exists());
    server.kill9();

    let out = std::process::Command::new(BIN)
        .args(["serve", "--store", "postgres://cue:hunter2@127.0.0.1:1/cue"])
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .output()
        .expect("serve");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--store"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    for bad in ["mysql://x", "sqlite://"] {
        let out = std::process::Command::new(BIN)
            .args(["worker", "--store", bad])
            .arg("--data-dir")
            .arg(tmp.path().join("data"))
            .output()
            .expect("worker");
        assert!(!out.status.success(), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--store"),
            "{bad}"
        );
    }
}

#[test]
fn a_worker_stopped_with_sigterm_mid_recognition_hands_its_job_to_another_at_once_charged_once() {
    let server = Server::start(&["--workers", "0", "--price-cents-per-minute", "10"]);
    let org = server.org(1000, &[]);
    let data = std::fs::read(server.tone(3)).expect("media");
    // `es`: the first recognition takes 30 s; declared 30 s (5 cents), measured 3 s.
    let id = str_field(&submit(&server, &org.key, &data, "es", 30), "id");
    // A lease far longer than the test waits: the job can only move on because it was handed
    // back, not because a lease ran out.
    let lease = ["--workers", "1", "--lease-ms", "600000"];
    let mut stopping = server.worker("stopping", &lease);
    stopping.wait_log("recognizing");
    let other = server.worker("other", &lease);
    stopping.signal("TERM");
    let child = stopping.child.as_mut().expect("running worker");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "SIGTERM did not stop the worker:\n{}",
            stopping.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}\n{}", stopping.log());
    assert!(
        stopping.log().contains("gave an unfinished task back"),
        "{}",
        stopping.log()
    );
    let job = wait_all_ready(&server, &[&stopping, &other], &org.key, &id);
    assert!(other.log().contains("recognizing"), "{}", other.log());
    assert_eq!(job["media"]["durationSeconds"], 3.0);
    assert_charged_once_and_drained(&server, &org.id, &id);
}
