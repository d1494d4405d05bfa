//! The web application in real headless Chromium (`tests/browser/editor.py`, Playwright for Python
//! driving Debian's /usr/bin/chromium): sign in with a link, list and search projects, open the
//! editor, play and seek, edit a word, split and merge, set a line break, undo and redo, two pages
//! editing the same project (the second gets the conflict), restore a revision, download every
//! format and compare with the API's bytes, another organisation's project is 404. Screenshots of
//! the list and of the editor (audio and video job) are saved to `target/screenshots/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use cuecraft_host::media::Object;

use crate::common::Server;
use crate::web::{link_path, ready_job};

/// Speech for the audio job (flite), and a video with a test picture cut to colour bars at 2 s
/// and the same speech.
fn media(dir: &Path) -> (PathBuf, PathBuf) {
    let wav = dir.join("speech.wav");
    let status = Command::new("flite")
        .args([
            "-voice",
            "slt",
            "-t",
            "Hello world. This is a test of the subtitles, read aloud.",
        ])
        .arg("-o")
        .arg(&wav)
        .status()
        .expect("flite (scripts/setup installs it)");
    assert!(status.success());
    let mp4 = dir.join("video.mp4");
    let status = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            // Two shots: the test card, then colour bars from 2 s (frame 50), a cut the
            // timeline draws.
            "testsrc=size=640x360:rate=25:duration=2[a];smptebars=size=640x360:rate=25[b];\
             [a][b]concat=n=2:v=1:a=0[out0]",
            "-i",
        ])
        .arg(&wav)
        .args([
            "-shortest",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
        ])
        .arg(&mp4)
        .status()
        .expect("ffmpeg");
    assert!(status.success());
    (wav, mp4)
}

#[test]
fn the_editor_works_in_chromium() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv/bin/python");
    assert!(
        python.exists() && Path::new("/usr/bin/chromium").exists(),
        "run scripts/setup: it installs chromium and Playwright into .venv"
    );
    // Several jobs are polled to ready while other tests load the machine: the rate limit is not
    // what this test is about.
    let server = Server::start(&["--rate-limit-per-minute", "100000"]);
    let org = server.org(100_000, &[]);
    let other = server.org(100_000, &[]);
    let (wav, mp4) = media(server.tmp.path());
    let audio = ready_job(&server, &org.key, "Lecture (audio)", &wav, "audio/wav");
    let video = ready_job(&server, &org.key, "Interview (video)", &mp4, "video/mp4");
    let foreign = ready_job(&server, &other.key, "Foreign", &wav, "audio/wav");
    // A job still waiting for its upload: the browser uploads it while the list is open, and the
    // row's status must follow without a reload.
    let size = std::fs::metadata(&wav).expect("wav").len();
    let pending = server.create_job(
        &org.key,
        &json!({"filename": "late.wav", "contentType": "audio/wav", "sizeBytes": size, "durationSeconds": 4, "name": "Pending upload"}),
    );
    assert_eq!(pending.status, 201, "{}", pending.text());
    let pending = pending.json();
    // A GET without Range has the whole proxy, byte for byte, its length announced (the
    // browser's own requests below ask for ranges).
    let web = crate::web::Web::sign_in(&server, &org.owner);
    let media = server.media_store();
    for (id, object) in [(&audio, Object::AudioProxy), (&video, Object::VideoProxy)] {
        let proxy = media.read(id, object).expect("read").expect("the proxy");
        let whole = web.get(&format!("/editor/{id}/media"));
        assert_eq!(whole.status, 200, "{id}");
        assert_eq!(
            whole.header("content-length"),
            Some(proxy.len().to_string().as_str())
        );
        assert_eq!(whole.header("accept-ranges"), Some("bytes"));
        assert!(whole.body == proxy, "{id}: the body differs from the proxy");
    }
    let shots = root.join("target/screenshots");
    std::fs::create_dir_all(&shots).expect("screenshot dir");
    let cfg = json!({
        "base": server.base(),
        "link": link_path(&server, &org.owner),
        "key": org.key,
        "audio": audio,
        "video": video,
        "foreign": foreign,
        "pending": {"id": pending["id"], "url": pending["upload"]["url"], "media": wav},
        "shots": shots,
        "profile": server.tmp.path().join("chromium-profile"),
    });
    let out = Command::new(&python)
        .arg(root.join("tests/browser/editor.py"))
        .arg(cfg.to_string())
        .output()
        .expect("run the browser script");
    let report = format!(
        "{}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
    assert!(out.status.success(), "{report}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("browser checks passed"),
        "{report}"
    );
    for shot in ["list.png", "editor-audio.png", "editor-video.png"] {
        assert!(
            shots.join(shot).metadata().is_ok_and(|m| m.len() > 10_000),
            "{shot}"
        );
    }
}
