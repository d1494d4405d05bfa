//! The media store (`host::media::MediaStore`): one contract, checked on both implementations —
//! the local directory, and (with the `s3` feature) an S3 bucket on a real SeaweedFS server the
//! tests start — and, on S3, the presigned upload the bucket enforces and a job end to end
//! through the API with its bytes never passing through the service.

use std::io::Write;
use std::path::Path;

use cuecraft_host::media::{LocalDirectory, MediaStore, Object};

const JOB: &str = "0123456789abcdef0123abcd";
const OTHER: &str = "fedcba9876543210fedcba98";

/// Bytes that differ everywhere, so a misplaced range shows.
fn pattern(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// What every media store promises.
fn contract(store: &dyn MediaStore, work: &Path) {
    // Nothing there yet.
    for object in Object::ALL {
        assert_eq!(store.size(JOB, object).expect("size"), None, "{object:?}");
    }
    assert!(store.read(JOB, Object::Peaks).expect("read").is_none());
    let missing = store.local_file(JOB, Object::Original, work).unwrap_err();
    assert_eq!(missing.kind(), std::io::ErrorKind::NotFound, "{missing}");
    assert!(store.read_range(JOB, Object::Original, 0, 1).is_err());

    // A write that is not committed leaves nothing, however far it got.
    let data = pattern(3 * 1024 * 1024 + 17);
    let mut w = store.create(JOB, Object::Original).expect("create");
    w.write_all(&data[..1 << 20]).expect("write");
    drop(w);
    assert_eq!(store.size(JOB, Object::Original).expect("size"), None);

    // Nothing is visible before the commit; all of it after. A sweep of leftovers while the
    // write goes on (another process's, or this one's) leaves it alone.
    let mut w = store.create(JOB, Object::Original).expect("create");
    for (i, piece) in data.chunks(100_000).enumerate() {
        w.write_all(piece).expect("write");
        if i == 15 {
            store.sweep();
        }
    }
    assert_eq!(store.size(JOB, Object::Original).expect("size"), None);
    w.commit().expect("commit");
    assert_eq!(
        store.size(JOB, Object::Original).expect("size"),
        Some(data.len() as u64)
    );
    assert_eq!(
        store.read(JOB, Object::Original).expect("read").as_deref(),
        Some(&data[..])
    );
    for (first, len) in [(0u64, 1u64), (1000, 5000), (data.len() as u64 - 10, 10)] {
        assert_eq!(
            store
                .read_range(JOB, Object::Original, first, len)
                .expect("range"),
            data[first as usize..(first + len) as usize],
            "range {first}+{len}"
        );
    }
    assert!(
        store
            .read_range(JOB, Object::Original, data.len() as u64 - 10, 11)
            .is_err(),
        "a range past the end is an error, not a short read"
    );

    // A file ffmpeg can read, with the same bytes.
    let local = store
        .local_file(JOB, Object::Original, work)
        .expect("local file");
    let path = local.as_ref().to_path_buf();
    assert_eq!(std::fs::read(&path).expect("read local"), data);
    drop(local);
    // A downloaded copy goes with its handle; the stored file of a local directory stays.
    assert_eq!(
        path.exists(),
        store.describe().starts_with("file://"),
        "{}",
        path.display()
    );
    assert_eq!(
        store.size(JOB, Object::Original).expect("size"),
        Some(data.len() as u64)
    );

    // put_file moves a finished file in (replacing), and the local file is gone.
    for (object, bytes) in [
        (Object::AudioProxy, pattern(70_000)),
        (Object::Peaks, vec![1, 2, 3, 250]),
        (Object::Peaks, vec![9, 8, 7]),
    ] {
        let file = work.join("made.tmp");
        std::fs::write(&file, &bytes).expect("write");
        store.put_file(JOB, object, &file).expect("put file");
        assert!(!file.exists(), "the local file is moved or removed");
        assert_eq!(
            store.read(JOB, object).expect("read").as_deref(),
            Some(&bytes[..])
        );
    }
    // Another job's objects.
    let file = work.join("other.tmp");
    std::fs::write(&file, b"other").expect("write");
    store
        .put_file(OTHER, Object::Original, &file)
        .expect("put other");

    // Names are job ids, never paths.
    for bad in ["../../etc/passwd", "", "0123456789ABCDEF0123ABCD", "a/b"] {
        assert!(store.size(bad, Object::Original).is_err(), "{bad:?}");
        assert!(store.create(bad, Object::Original).is_err(), "{bad:?}");
    }

    // Deleting a job removes every object of it (twice is fine) and nothing of another job.
    store.delete_job(JOB).expect("delete");
    store.delete_job(JOB).expect("delete again");
    for object in Object::ALL {
        assert_eq!(store.size(JOB, object).expect("size"), None, "{object:?}");
    }
    assert_eq!(
        store
            .read(OTHER, Object::Original)
            .expect("read")
            .as_deref(),
        Some(&b"other"[..])
    );
    store.delete_job(OTHER).expect("delete other");
}

#[test]
fn local_directory_keeps_the_media_store_contract() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("media");
    let store = LocalDirectory::open(&dir).expect("open");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).expect("work");
    contract(&store, &work);

    // The same files as before the trait: DIR/{id}, {id}.video.webm, {id}.audio.webm, {id}.peaks.
    let file = work.join("x");
    for (object, name) in [
        (Object::Original, JOB.to_string()),
        (Object::VideoProxy, format!("{JOB}.video.webm")),
        (Object::AudioProxy, format!("{JOB}.audio.webm")),
        (Object::Peaks, format!("{JOB}.peaks")),
    ] {
        std::fs::write(&file, name.as_bytes()).expect("write");
        store.put_file(JOB, object, &file).expect("put");
        assert_eq!(
            std::fs::read(dir.join(&name)).expect("file in place"),
            name.as_bytes()
        );
    }
    // A local directory takes uploads through the service's own PUT route.
    assert!(!store.takes_direct_uploads());
    assert_eq!(
        store
            .presign_upload(JOB, "audio/wav", 10, i64::MAX / 2)
            .expect("presign"),
        None
    );
    store.delete_job(JOB).expect("delete");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("list")
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "tmp")
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        std::fs::read_dir(dir.join("tmp")).expect("tmp").count(),
        0,
        "no temporary file is left behind"
    );
}

#[cfg(feature = "s3")]
mod s3 {
    use std::time::Duration;

    use cuecraft_host::media::{MediaStore, Object};
    use serde_json::json;

    use super::{contract, pattern, JOB};
    use crate::common::s3::seaweed;
    use crate::common::{put_url, str_field, Server};

    #[test]
    fn s3_bucket_keeps_the_media_store_contract() {
        let store = seaweed().store();
        let tmp = tempfile::tempdir().expect("temp dir");
        contract(&store, tmp.path());
        assert_eq!(
            std::fs::read_dir(tmp.path()).expect("work").count(),
            0,
            "downloads leave nothing in the work directory"
        );
    }

    fn now_unix() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs() as i64
    }

    /// The presigned PUT carries the declared type and length in its signature: the bucket itself
    /// refuses another type, another length, a short body, a tampered URL and an expired one, and
    /// none of them leaves an object the service would take. The right PUT is taken once.
    #[test]
    fn presigned_uploads_are_enforced_by_the_bucket() {
        let store = seaweed().store();
        assert!(store.takes_direct_uploads());
        let data = pattern(200_000);
        let len = data.len().to_string();
        let url = store
            .presign_upload(JOB, "audio/wav", data.len() as u64, now_unix() + 3600)
            .expect("presign")
            .expect("a bucket presigns");
        assert!(url.starts_with(&seaweed().endpoint), "{url}");
        for signed in ["content-length", "content-type", "host"] {
            assert!(
                url.contains("X-Amz-SignedHeaders=") && url.contains(signed),
                "{signed} is signed: {url}"
            );
        }
        assert!(
            url.contains("X-Amz-Expires=3600") || url.contains("X-Amz-Expires=3599"),
            "{url}"
        );

        let refused = |what: &str, url: &str, headers: &[(&str, &str)], body: &[u8]| {
            let r = put_url(url, headers, body);
            assert_eq!(r.status, 403, "{what}: {} {}", r.status, r.text());
            assert!(
                !store.accept_upload(JOB, data.len() as u64).expect("check"),
                "{what} left an upload"
            );
        };
        refused(
            "another type",
            &url,
            &[("Content-Type", "audio/mpeg"), ("Content-Length", &len)],
            &data,
        );
        let longer = [&data[..], b"x"].concat();
        refused(
            "another length",
            &url,
            &[
                ("Content-Type", "audio/wav"),
                ("Content-Length", &longer.len().to_string()),
            ],
            &longer,
        );
        refused("no type", &url, &[("Content-Length", &len)], &data);
        let tampered = url.replacen("X-Amz-Signature=", "X-Amz-Signature=0", 1);
        refused(
            "a tampered signature",
            &tampered,
            &[("Content-Type", "audio/wav"), ("Content-Length", &len)],
            &data,
        );
        let other_job = url.replacen(JOB, super::OTHER, 1);
        refused(
            "another job's object",
            &other_job,
            &[("Content-Type", "audio/wav"), ("Content-Length", &len)],
            &data,
        );
        let longer_expiry = url.replacen("X-Amz-Expires=", "X-Amz-Expires=9", 1);
        refused(
            "a longer expiry",
            &longer_expiry,
            &[("Content-Type", "audio/wav"), ("Content-Length", &len)],
            &data,
        );

        // A body that ends short of its Content-Length never becomes an object.
        {
            use std::io::{Read, Write};
            let rest = url.strip_prefix("http://").expect("http");
            let (authority, path) = rest.split_at(rest.find('/').expect("path"));
            let mut s = std::net::TcpStream::connect(authority).expect("connect");
            s.set_read_timeout(Some(Duration::from_secs(30)))
                .expect("timeout");
            let head = format!(
                "PUT {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: audio/wav\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
            );
            s.write_all(head.as_bytes()).expect("head");
            s.write_all(&data[..data.len() / 2]).expect("half");
            s.shutdown(std::net::Shutdown::Write).expect("half close");
            let mut answer = Vec::new();
            let _ = s.read_to_end(&mut answer);
            assert!(
                !store.accept_upload(JOB, data.len() as u64).expect("check"),
                "a short body left an upload: {}",
                String::from_utf8_lossy(&answer)
            );
        }

        // The right PUT, then the service takes it: the original is a copy the client can no
        // longer change, and the client's object goes.
        let ok = put_url(
            &url,
            &[("Content-Type", "audio/wav"), ("Content-Length", &len)],
            &data,
        );
        assert_eq!(ok.status, 200, "{}", ok.text());
        assert!(store.accept_upload(JOB, data.len() as u64).expect("accept"));
        store.discard_upload(JOB).expect("discard");
        assert_eq!(
            store.read(JOB, Object::Original).expect("read").as_deref(),
            Some(&data[..])
        );
        assert!(!store.accept_upload(JOB, data.len() as u64).expect("check"));

        // An expired URL is refused even with everything else right.
        let short = store
            .presign_upload(super::OTHER, "audio/wav", data.len() as u64, now_unix() + 1)
            .expect("presign")
            .expect("url");
        std::thread::sleep(Duration::from_millis(2100));
        refused_other(&short, &len, &data, &store);
        store.delete_job(JOB).expect("delete");
    }

    fn refused_other(url: &str, len: &str, data: &[u8], store: &dyn MediaStore) {
        let r = put_url(
            url,
            &[("Content-Type", "audio/wav"), ("Content-Length", len)],
            data,
        );
        assert_eq!(r.status, 403, "expired: {}", r.text());
        assert!(!store
            .accept_upload(super::OTHER, data.len() as u64)
            .expect("check"));
    }

    /// A job through the API with its media in the bucket: the upload URL is the bucket's, the
    /// job starts without the client's help (the sweep, nobody polling), becomes ready, its
    /// subtitles download, the editor plays its proxy with HTTP Range, and the media objects are
    /// in the bucket (the data directory has none).
    #[test]
    fn a_job_runs_end_to_end_with_its_media_in_the_bucket() {
        let weed = seaweed();
        let media_url = weed.media_url();
        let tmp = tempfile::tempdir().expect("temp dir");
        let script = tmp.path().join("recognizer.sh");
        std::fs::write(&script, crate::common::RECOGNIZER).expect("recognizer");
        let status = std::process::Command::new("chmod")
            .arg("+x")
            .arg(&script)
            .status()
            .expect("chmod");
        assert!(status.success());
        let args = vec![
            "--recognizer".to_string(),
            format!("command:{}", script.display()),
            "--media".to_string(),
            media_url.clone(),
        ];
        let env: Vec<(&str, String)> = weed.env();
        let server = Server::start_in(tmp, &args, &env);
        let org = server.org(10_000, &[]);
        let wav = server.tone(3);
        let data = std::fs::read(&wav).expect("wav");

        let created = server.create_job(
            &org.key,
            &json!({"filename": "tone.wav", "contentType": "audio/wav",
                    "sizeBytes": data.len(), "durationSeconds": 3}),
        );
        assert_eq!(created.status, 201, "{}", created.text());
        let created = created.json();
        let id = str_field(&created, "id");
        let url = str_field(&created["upload"], "url");
        assert!(
            url.starts_with(&format!("{}/cuecraft/", weed.endpoint)),
            "the upload goes to the bucket: {url}"
        );
        assert_eq!(created["upload"]["headers"]["Content-Type"], "audio/wav");
        assert_eq!(
            created["upload"]["headers"]["Content-Length"],
            data.len().to_string()
        );
        let put = server.upload(&created, &data);
        assert_eq!(put.status, 200, "{}", put.text());
        // Nobody polls: the sweep finds the upload and the job runs.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let uploading = server.sql_number(&format!(
                "SELECT COUNT(*) FROM jobs WHERE id = '{id}' AND status = 'uploading'"
            ));
            if uploading == 0 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the upload was never noticed: {}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let job = server.wait_for(&org.key, &id, &["ready", "failed"]);
        assert_eq!(job["status"], "ready", "{job}\n{}", server.log());
        let srt = server.get(&org.key, &format!("/v1/jobs/{id}/subtitles?format=srt"));
        assert_eq!(srt.status, 200, "{}", srt.text());
        assert!(srt.text().contains("Hello world."), "{}", srt.text());

        // The editor's proxy, from the bucket, with Range.
        let web = crate::web::Web::sign_in(&server, &org.owner);
        let data_json = web.get_json(&format!("/editor/{id}/data"));
        assert_eq!(data_json.status, 200, "{}", data_json.text());
        let meta = data_json.json();
        assert_eq!(meta["media"]["kind"], "audio", "{meta}");
        assert!(meta["peaks"].is_object(), "{meta}");
        let whole = web.get(&format!("/editor/{id}/media"));
        assert_eq!(whole.status, 200);
        assert_eq!(whole.header("content-type"), Some("audio/webm"));
        assert!(whole.body.starts_with(&[0x1a, 0x45, 0xdf, 0xa3]), "WebM");
        assert_eq!(
            whole.header("content-length"),
            Some(whole.body.len().to_string().as_str())
        );
        let part = crate::common::request(
            server.port,
            "GET",
            &format!("/editor/{id}/media"),
            &[("Cookie", &web.cookie), ("Range", "bytes=10-109")],
            b"",
        );
        assert_eq!(part.status, 206);
        assert_eq!(part.body, whole.body[10..110]);
        assert_eq!(
            part.header("content-range"),
            Some(format!("bytes 10-109/{}", whole.body.len()).as_str())
        );
        let peaks = web.get(&format!("/editor/{id}/peaks"));
        assert_eq!(peaks.status, 200);
        assert_eq!(peaks.body.len(), 150, "3 s at 50 peaks a second");

        // The bytes live in the bucket: the original as uploaded, the proxy, the peaks; the
        // client's upload object is gone; the data directory holds no media.
        let store = weed.store_at(&media_url);
        assert_eq!(
            store.read(&id, Object::Original).expect("read").as_deref(),
            Some(&data[..])
        );
        assert_eq!(
            store.size(&id, Object::AudioProxy).expect("size"),
            Some(whole.body.len() as u64)
        );
        assert!(!store.accept_upload(&id, data.len() as u64).expect("check"));
        let local: Vec<_> = std::fs::read_dir(server.data_dir().join("media"))
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(
            local.is_empty(),
            "no media in the data directory: {local:?}"
        );

        // A job that is polled moves on at the poll, without waiting for the sweep.
        let created = server
            .create_job(
                &org.key,
                &json!({"filename": "t.wav", "contentType": "audio/wav",
                        "sizeBytes": data.len(), "durationSeconds": 3}),
            )
            .json();
        assert_eq!(server.upload(&created, &data).status, 200);
        let polled = server.get(&org.key, &format!("/v1/jobs/{}", str_field(&created, "id")));
        assert_ne!(polled.json()["status"], "uploading", "{}", polled.text());
        let ledger = server.ledger(&id);
        assert_eq!(
            ledger.iter().filter(|(k, _)| k == "charge").count(),
            1,
            "charged once: {ledger:?}"
        );
    }
}
