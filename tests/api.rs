//! The API's happy path: create -> PUT -> poll -> transcript (json, text) -> subtitles in every
//! format, and what a client relies on along the way (links, headers, charges, clean version).

use serde_json::json;

use crate::common::{is_id, request, Server};

#[test]
fn job_runs_from_creation_to_subtitles_in_every_format() {
    let server = Server::start(&["--workers", "2", "--price-cents-per-minute", "10"]);
    let org = server.org(1000, &[]);
    let media = server.tone(3);
    let data = std::fs::read(&media).expect("media");

    // Declared as a minute: 10 cents are checked now and charged at upload; the measured 3 s
    // cost 1 cent, so the settlement gives 9 back.
    let created = server.create_job(
        &org.key,
        &json!({
            "filename": "Café talk.wav",
            "contentType": "audio/wav",
            "sizeBytes": data.len(),
            "durationSeconds": 60,
            "settings": {"language": "en", "maxCharsPerLine": 30}
        }),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    let id = created["id"].as_str().unwrap_or_default().to_string();
    assert!(is_id(&id), "{id}");
    assert_eq!(created["status"], "uploading");
    assert_eq!(created["name"], "Café talk");
    let base = server.base();
    assert_eq!(created["links"]["self"], format!("{base}/v1/jobs/{id}"));
    assert_eq!(
        created["links"]["transcript"],
        format!("{base}/v1/jobs/{id}/transcript")
    );
    assert_eq!(
        created["links"]["subtitles"],
        format!("{base}/v1/jobs/{id}/subtitles?format=srt")
    );
    assert_eq!(created["editorUrl"], created["links"]["editor"]);
    assert_eq!(created["upload"]["method"], "PUT");
    assert_eq!(created["upload"]["headers"]["Content-Type"], "audio/wav");
    assert_eq!(
        created["upload"]["headers"]["Content-Length"],
        data.len().to_string()
    );
    // On S3 the URL is the bucket's own presigned PUT (tests/media_store.rs).
    if !crate::common::media_is_s3() {
        assert!(created["upload"]["url"]
            .as_str()
            .is_some_and(|u| u.starts_with(&format!("{base}/upload/{id}?expires="))));
    }
    assert!(created["upload"]["expiresAt"]
        .as_str()
        .is_some_and(|t| t.ends_with('Z')));

    // Before the upload the job waits, and the result endpoints say so.
    let job = server.get(&org.key, &format!("/v1/jobs/{id}")).json();
    assert_eq!(job["status"], "uploading");
    assert_eq!(job["language"], "en");
    assert_eq!(job["transcripts"], json!([]));
    assert_eq!(
        server.balance(&org.id),
        1000,
        "nothing is charged before the upload"
    );

    let up = server.upload(&created, &data);
    assert_eq!(up.status, 200, "{}", up.text());
    if !crate::common::media_is_s3() {
        // The service's own upload route answers with the job (a bucket answers for itself).
        assert_eq!(up.json()["status"], "transcribing");
    }

    let job = server.wait_for(&org.key, &id, &["ready", "failed"]);
    assert_eq!(job["status"], "ready", "{job}\n{}", server.log());
    assert_eq!(job["error"], serde_json::Value::Null);
    assert_eq!(job["language"], "en");
    assert_eq!(job["media"]["filename"], "Café talk.wav");
    assert_eq!(job["media"]["sizeBytes"], data.len());
    let measured = job["media"]["durationSeconds"].as_f64().unwrap_or(0.0);
    assert!((measured - 3.0).abs() < 0.1, "measured {measured}");
    let transcripts = job["transcripts"].as_array().cloned().unwrap_or_default();
    assert_eq!(transcripts[0]["kind"], "original");
    assert_eq!(transcripts[0]["status"], "ready");
    assert_eq!(transcripts[0]["label"], serde_json::Value::Null);

    // One charge at upload, one settlement on the measured duration.
    assert_eq!(
        server.ledger(&id),
        vec![("charge".to_string(), -10), ("settle".to_string(), 9)]
    );
    assert_eq!(server.balance(&org.id), 999);

    // The transcript as JSON: cues derived from the stored words.
    let t = server.get(&org.key, &format!("/v1/jobs/{id}/transcript"));
    assert_eq!(t.status, 200, "{}", t.text());
    let t = t.json();
    assert_eq!(t["jobId"], id.as_str());
    assert_eq!(t["transcript"]["kind"], "original");
    assert_eq!(t["truncated"], false);
    let cues = t["cues"].as_array().cloned().unwrap_or_default();
    assert_eq!(t["cueCount"], cues.len());
    assert!(!cues.is_empty());
    let all_words: Vec<String> = cues
        .iter()
        .flat_map(|c| c["words"].as_array().cloned().unwrap_or_default())
        .map(|w| w["text"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(all_words.first().map(String::as_str), Some("Hello"));
    assert_eq!(all_words.len(), 10);
    assert_eq!(
        cues[0]["words"][0]["start"], 0.1,
        "word timings are as detected"
    );
    for c in &cues {
        for line in c["lines"].as_array().cloned().unwrap_or_default() {
            assert!(line.as_str().unwrap_or("").chars().count() <= 30, "{line}");
        }
        assert!(c["end"].as_f64() > c["start"].as_f64());
    }

    // maxChars keeps whole cues and at least one.
    let t1 = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript?maxChars=1"))
        .json();
    assert_eq!(t1["cues"].as_array().map(Vec::len), Some(1));
    assert_eq!(t1["cueCount"], t["cueCount"]);
    assert_eq!(t1["truncated"], cues.len() > 1);

    // The text form, by query and by Accept header.
    let text = server.get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"));
    assert_eq!(text.status, 200);
    assert!(text
        .header("content-type")
        .is_some_and(|c| c.starts_with("text/plain")));
    let body = text.text();
    assert!(body.starts_with("Hello world."), "{body:?}");
    assert!(body.ends_with('\n'));
    assert_eq!(body.lines().count(), cues.len());
    let auth = format!("Bearer {}", org.key);
    let accept = request(
        server.port,
        "GET",
        &format!("/v1/jobs/{id}/transcript"),
        &[("Authorization", &auth), ("Accept", "text/plain")],
        b"",
    );
    assert_eq!(accept.text(), body);
    let cut = server.get(
        &org.key,
        &format!("/v1/jobs/{id}/transcript?format=text&maxChars=8"),
    );
    assert_eq!(cut.header("x-truncated"), Some("true"));
    assert_eq!(cut.text(), "Hello\n");

    // The clean version can be read; it has no filler.
    let clean_id = transcripts
        .iter()
        .find(|t| t["kind"] == "clean")
        .map(|t| t["id"].as_str().unwrap_or("").to_string());
    let clean_id = clean_id.unwrap_or_else(|| panic!("no clean transcript in {job}"));
    let job = server.wait_for(&org.key, &id, &["ready"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let r = server.get(
            &org.key,
            &format!("/v1/jobs/{id}/transcript?format=text&transcriptId={clean_id}"),
        );
        if r.status == 200 {
            assert!(!r.text().contains("Um"), "{}", r.text());
            assert!(r.text().contains("This is a test"), "{}", r.text());
            break;
        }
        assert_eq!(r.code(), "transcript_not_ready");
        assert!(
            std::time::Instant::now() < deadline,
            "clean version never ready"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = job;

    // Subtitles in all six format values.
    let expect = [
        ("srt", "application/x-subrip", "srt"),
        ("vtt", "text/vtt", "vtt"),
        ("webvtt", "text/vtt", "vtt"),
        ("ttml", "application/ttml+xml", "ttml"),
        ("ass", "text/x-ssa", "ass"),
        ("ebu-stl", "application/octet-stream", "stl"),
    ];
    for (format, content_type, ext) in expect {
        let r = server.get(
            &org.key,
            &format!("/v1/jobs/{id}/subtitles?format={format}"),
        );
        assert_eq!(r.status, 200, "{format}: {}", r.text());
        assert_eq!(r.header("content-type"), Some(content_type), "{format}");
        assert_eq!(
            r.header("content-disposition"),
            Some(
                format!(
                    "attachment; filename=\"Caf_ talk_en.{ext}\"; filename*=UTF-8''Caf%C3%A9%20talk_en.{ext}"
                )
                .as_str()
            ),
            "{format}"
        );
        let b = &r.body;
        match format {
            "srt" => assert!(b.starts_with(b"1\r\n00:00:00,"), "{}", r.text()),
            "vtt" | "webvtt" => assert!(b.starts_with(b"WEBVTT"), "{}", r.text()),
            "ttml" => assert!(r.text().contains("<tt") && r.text().contains("xml:lang=\"en\"")),
            "ass" => assert!(b.starts_with(b"[Script Info]") || r.text().contains("[Script Info]")),
            _ => {
                assert_eq!(b.get(3..11), Some(&b"STL25.01"[..]), "GSI DFC");
                assert_eq!(b.len() % 128, 0, "GSI and TTI blocks");
            }
        }
        assert!(r.text().contains("Hello") || format == "ebu-stl");
    }
    // The default is SRT; offsetSeconds moves every cue.
    let srt = server.get(&org.key, &format!("/v1/jobs/{id}/subtitles"));
    assert_eq!(srt.header("content-type"), Some("application/x-subrip"));
    let shifted = server.get(
        &org.key,
        &format!("/v1/jobs/{id}/subtitles?offsetSeconds=36000"),
    );
    assert!(
        shifted.text().starts_with("1\r\n10:00:00,"),
        "{}",
        shifted.text()
    );
    // The same read twice gives the same bytes.
    let again = server.get(&org.key, &format!("/v1/jobs/{id}/subtitles"));
    assert_eq!(srt.body, again.body);
}

#[test]
fn openapi_document_is_served_without_a_key() {
    let server = Server::start(&[]);
    let r = request(server.port, "GET", "/v1/openapi.json", &[], b"");
    assert_eq!(r.status, 200);
    let doc = r.json();
    assert!(doc["openapi"]
        .as_str()
        .is_some_and(|v| v.starts_with("3.1")));
}

#[test]
fn server_stops_cleanly_on_sigterm_and_keeps_its_data() {
    let mut server = Server::start(&[]);
    let org = server.org(100, &[]);
    let created = server.create_job(
        &org.key,
        &json!({"filename": "a.wav", "contentType": "audio/wav", "sizeBytes": 10, "durationSeconds": 1}),
    );
    assert_eq!(created.status, 201);
    let id = created.json()["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // The upload-signing secret was generated on first start, readable by the owner only.
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(server.data_dir().join("signing.key"))
            .expect("signing secret")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let secret = std::fs::read(server.data_dir().join("signing.key")).expect("secret");
    assert!(
        server.terminate(std::time::Duration::from_secs(15)),
        "{}",
        server.log()
    );
    server.spawn();
    let job = server.get(&org.key, &format!("/v1/jobs/{id}"));
    assert_eq!(job.status, 200);
    assert_eq!(job.json()["status"], "uploading");
    // The same secret signs after the restart, so the URL handed out before it still works.
    assert_eq!(
        std::fs::read(server.data_dir().join("signing.key")).ok(),
        Some(secret)
    );
    let data = vec![0u8; 10];
    let up = server.upload(&created.json(), &data);
    assert_eq!(up.status, 200, "{}", up.text());
}
