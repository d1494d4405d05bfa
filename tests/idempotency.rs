//! `Idempotency-Key` on `POST /jobs`: a retried creation answers the first response instead of
//! making a second job, a key reused with another body is refused, concurrent requests with one
//! key make one job, and a refused request records nothing.

use std::sync::{Arc, Barrier};

use serde_json::{json, Value};

use crate::common::{request, Resp, Server};

fn body(size: u64) -> Value {
    json!({"filename": "talk.wav", "contentType": "audio/wav", "sizeBytes": size,
           "durationSeconds": 30, "settings": {"language": "en", "maxCharsPerLine": 30}})
}

fn create(server: &Server, api_key: &str, idem: &str, body: &str) -> Resp {
    let auth = format!("Bearer {api_key}");
    request(
        server.port,
        "POST",
        "/v1/jobs",
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("Idempotency-Key", idem),
        ],
        body.as_bytes(),
    )
}

/// The organisation's jobs, counted in the database itself.
fn job_count(server: &Server, org: &str) -> i64 {
    server.sql_number(&format!("SELECT COUNT(*) FROM jobs WHERE org_id = '{org}'"))
}

#[test]
fn a_retried_creation_answers_the_first_response() {
    let server = Server::start(&["--workers", "1"]);
    let org = server.org(10_000, &[]);
    let media = std::fs::read(server.tone(2)).expect("media");
    let first_body = body(media.len() as u64).to_string();

    let first = create(&server, &org.key, "order-7f3a", &first_body);
    assert_eq!(first.status, 201, "{}", first.text());
    assert_eq!(first.header("idempotent-replayed"), None);

    // The same request sent again, serialised differently (member order, whitespace): the same
    // job and the same upload URL, marked as a replay, and no second job.
    let reordered = r#"{ "settings": {"maxCharsPerLine": 30, "language": "en"},
        "durationSeconds": 30, "sizeBytes": SIZE, "contentType": "audio/wav", "filename": "talk.wav" }"#
        .replace("SIZE", &media.len().to_string());
    let again = create(&server, &org.key, "order-7f3a", &reordered);
    assert_eq!(again.status, 201, "{}", again.text());
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json());
    assert_eq!(job_count(&server, &org.id), 1);

    // The key with another body is refused, and creates nothing.
    let other = body(media.len() as u64 + 1).to_string();
    let refused = create(&server, &org.key, "order-7f3a", &other);
    let err = refused.expect_error(409, "idempotency_key_reused");
    assert!(err["error"]
        .as_str()
        .unwrap_or("")
        .contains("Idempotency-Key"));
    assert_eq!(job_count(&server, &org.id), 1);

    // Another key is another job; another organisation's key of the same name is its own.
    let second = create(&server, &org.key, "order-7f3b", &first_body);
    assert_eq!(second.status, 201);
    assert_ne!(second.json()["id"], first.json()["id"]);
    let org2 = server.org(10_000, &[]);
    let theirs = create(&server, &org2.key, "order-7f3a", &first_body);
    assert_eq!(theirs.status, 201);
    assert_eq!(theirs.header("idempotent-replayed"), None);
    assert_ne!(theirs.json()["id"], first.json()["id"]);

    // The replayed upload URL is the job's: the upload goes through and the job runs, once.
    let created = again.json();
    let up = server.upload(&created, &media);
    assert_eq!(up.status, 200, "{}", up.text());
    let id = created["id"].as_str().unwrap_or_default();
    let job = server.wait_for(&org.key, id, &["ready", "failed"]);
    assert_eq!(job["status"], "ready", "{job}");
    let replay_after = create(&server, &org.key, "order-7f3a", &first_body);
    assert_eq!(replay_after.status, 201);
    assert_eq!(replay_after.json()["id"], first.json()["id"]);
    let charges = server
        .ledger(id)
        .iter()
        .filter(|(kind, _)| kind == "charge")
        .count();
    assert_eq!(charges, 1);
}

#[test]
fn concurrent_requests_with_one_key_create_one_job() {
    let server = Server::start(&["--workers", "0"]);
    let org = server.org(10_000, &[]);
    let payload = body(1000).to_string();
    let barrier = Arc::new(Barrier::new(16));
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let (barrier, payload, key, port) = (
                barrier.clone(),
                payload.clone(),
                org.key.clone(),
                server.port,
            );
            std::thread::spawn(move || {
                barrier.wait();
                let auth = format!("Bearer {key}");
                let r = request(
                    port,
                    "POST",
                    "/v1/jobs",
                    &[
                        ("Authorization", auth.as_str()),
                        ("Content-Type", "application/json"),
                        ("Idempotency-Key", "burst"),
                    ],
                    payload.as_bytes(),
                );
                (r.status, r.json()["id"].clone())
            })
        })
        .collect();
    let answers: Vec<(u16, Value)> = threads.into_iter().filter_map(|t| t.join().ok()).collect();
    assert_eq!(answers.len(), 16);
    assert!(answers.iter().all(|(s, _)| *s == 201), "{answers:?}");
    assert!(
        answers.iter().all(|(_, id)| *id == answers[0].1),
        "{answers:?}"
    );
    assert_eq!(job_count(&server, &org.id), 1);
}

#[test]
fn a_refused_request_records_nothing_and_a_bad_key_is_named() {
    let server = Server::start(&["--workers", "0", "--price-cents-per-minute", "10"]);
    let org = server.org(0, &[]);
    let payload = body(1000).to_string();
    create(&server, &org.key, "k-1", &payload).expect_error(402, "insufficient_credits");
    server.admin(&["credits", "add", "--org", &org.id, "--cents", "100"]);
    let retried = create(&server, &org.key, "k-1", &payload);
    assert_eq!(retried.status, 201, "{}", retried.text());
    assert_eq!(retried.header("idempotent-replayed"), None);

    let long = "x".repeat(256);
    for bad in ["", "has space", "caf\u{e9}", long.as_str()] {
        let err = create(&server, &org.key, bad, &payload).expect_error(400, "invalid_request");
        assert_eq!(
            err["fields"][0]["field"], "Idempotency-Key",
            "{bad:?}: {err}"
        );
    }
    assert_eq!(job_count(&server, &org.id), 1);
}
