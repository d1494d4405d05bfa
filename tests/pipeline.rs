//! The job pipeline as a user meets it: failures refund in full, and a server killed with SIGKILL
//! mid-job finishes the job after a restart without charging twice.

use serde_json::json;

use crate::common::{str_field, Server};

#[test]
fn unreadable_media_fails_the_job_with_a_reason_and_a_full_refund() {
    let server = Server::start(&["--price-cents-per-minute", "10"]);
    let org = server.org(100, &[]);
    let junk = vec![7u8; 4096];
    let created = server
        .create_job(
            &org.key,
            &json!({"filename": "junk.wav", "contentType": "audio/wav", "sizeBytes": junk.len(), "durationSeconds": 120}),
        )
        .json();
    assert_eq!(server.upload(&created, &junk).status, 200);
    let id = str_field(&created, "id");
    let job = server.wait_for(&org.key, &id, &["ready", "failed"]);
    assert_eq!(job["status"], "failed");
    assert!(
        job["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{job}"
    );
    assert_eq!(
        server.ledger(&id),
        vec![("charge".to_string(), -20), ("refund".to_string(), 20)]
    );
    assert_eq!(server.balance(&org.id), 100);
}

#[test]
fn a_job_survives_kill_9_while_transcribing_and_is_charged_once() {
    // `fr` makes the test recognizer take 3 s: the server is killed in the middle of it. Its
    // claim on the job lapses 1 s after its last heartbeat, and the restarted server takes it.
    let mut server = Server::start(&[
        "--workers",
        "1",
        "--price-cents-per-minute",
        "10",
        "--lease-ms",
        "1000",
    ]);
    let org = server.org(1000, &[]);
    let data = std::fs::read(server.tone(3)).expect("media");
    let created = server
        .create_job(
            &org.key,
            &json!({"filename": "slow.wav", "contentType": "audio/wav", "sizeBytes": data.len(),
                    "durationSeconds": 30, "settings": {"language": "fr"}}),
        )
        .json();
    assert_eq!(server.upload(&created, &data).status, 200);
    let id = str_field(&created, "id");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(
        server.get(&org.key, &format!("/v1/jobs/{id}")).json()["status"],
        "transcribing"
    );
    server.kill9();
    server.spawn();
    let job = server.wait_for(&org.key, &id, &["ready", "failed"]);
    assert_eq!(job["status"], "ready", "{}", server.log());
    // Declared 30 s (5 cents) charged once; settled once to the measured 3 s (1 cent).
    assert_eq!(
        server.ledger(&id),
        vec![("charge".to_string(), -5), ("settle".to_string(), 4)]
    );
    assert_eq!(server.balance(&org.id), 999);
    let t = server.get(&org.key, &format!("/v1/jobs/{id}/transcript"));
    assert_eq!(t.status, 200);
}

/// Rewinds a job's status straight in the database, as a crash between a step's ledger row and
/// its transition would leave it.
fn rewind(server: &Server, id: &str, status: &str) {
    server.sql(&format!(
        "UPDATE jobs SET status = '{status}' WHERE id = '{id}'; DELETE FROM queue"
    ));
}

#[test]
fn replayed_steps_after_a_crash_never_move_money_twice() {
    let mut server = Server::start(&["--price-cents-per-minute", "10"]);
    let org = server.org(1000, &[]);
    let media = server.tone(3);
    let job = server.run_job(&org.key, &media, json!({"language": "en"}));
    assert_eq!(job["status"], "ready");
    let id = str_field(&job, "id");
    let once = vec![("charge".to_string(), -1), ("settle".to_string(), 0)];
    assert_eq!(server.ledger(&id), once);

    // Crash after the settlement, before the transcript was stored: recognition runs again.
    server.kill9();
    rewind(&server, &id, "transcribing");
    server.spawn();
    let job = server.wait_for(&org.key, &id, &["ready", "failed"]);
    assert_eq!(job["status"], "ready", "{}", server.log());
    assert_eq!(server.ledger(&id), once);

    // Crash after the upload's charge, before the job moved on: the restart completes it.
    server.kill9();
    rewind(&server, &id, "uploading");
    server.spawn();
    let job = server.wait_for(&org.key, &id, &["ready", "failed"]);
    assert_eq!(job["status"], "ready", "{}", server.log());
    assert_eq!(server.ledger(&id), once);
    let kinds: Vec<String> = job["transcripts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|t| str_field(t, "kind"))
        .collect();
    assert_eq!(kinds, ["original", "clean"]);
    assert_eq!(server.balance(&org.id), 999);
}
