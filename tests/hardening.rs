//! What a security review or a careless client finds: no server path in a job's error, whichever
//! program failed.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::Server;

/// Writes an executable shell script `name` into `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    let status = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status()
        .expect("chmod");
    assert!(status.success());
    path
}

/// Runs a job on `server` and returns the failed job's `error`, checking that it holds no path of
/// the server's file system, names what went wrong (`expected`), and that the operator's log
/// keeps the full text (`logged`).
fn failed_job_error(server: &Server, expected: &str, logged: &str) -> String {
    let org = server.org(1000, &[]);
    let media = server.tone(2);
    let job: Value = server.run_job(&org.key, &media, json!({}));
    assert_eq!(job["status"], "failed", "{job}");
    let error = job["error"].as_str().expect("error").to_string();
    let tmp = server.tmp.path().to_string_lossy().into_owned();
    assert!(!error.contains(&tmp), "server path in {error:?}");
    assert!(!error.contains('/'), "a path in {error:?}");
    assert!(
        error.contains(expected),
        "{error:?} should say {expected:?}"
    );
    let log = server.log();
    assert!(
        log.contains(logged),
        "the log keeps the full text ({logged:?}): {log}"
    );
    error
}

#[test]
fn a_command_recognizers_messages_reach_the_job_without_server_paths() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let rec = script(
        tmp.path(),
        "rec.sh",
        r#"cat > /dev/null; echo "error: failed to read audio file '$1'" >&2; exit 1"#,
    );
    let server = Server::start_in(
        tmp,
        &["--recognizer".into(), format!("command:{}", rec.display())],
        &[],
    );
    let work = server.data_dir().join("work");
    let error = failed_job_error(
        &server,
        "failed to read audio file",
        &work.to_string_lossy(),
    );
    assert!(error.contains("[path]"), "{error}");
}

#[test]
fn a_command_recognizer_that_cannot_start_is_not_named_by_its_path() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let rec = tmp.path().join("rec.py");
    std::fs::write(&rec, "print('never runs')\n").expect("write");
    let server = Server::start_in(
        tmp,
        &["--recognizer".into(), format!("command:{}", rec.display())],
        &[],
    );
    failed_job_error(&server, "Permission denied", &rec.to_string_lossy());
}

#[test]
fn whisper_cpp_messages_reach_the_job_without_server_paths() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // Run as `BIN -m MODEL -f WAV ...`: it complains about the model and the audio by path.
    let bin = script(
        tmp.path(),
        "whisper-cli",
        r#"echo "whisper_init_from_file: failed to load model from '$2'" >&2
echo "error: failed to open '$4' as WAV file" >&2
exit 2"#,
    );
    let model = tmp.path().join("models").join("ggml-base.en.bin");
    let server = Server::start_in(
        tmp,
        &[
            "--recognizer".into(),
            format!("whisper-cpp:{}:{}", bin.display(), model.display()),
        ],
        &[],
    );
    failed_job_error(&server, "failed to load model", &model.to_string_lossy());
}

/// `PATH` with `dir` first, so a tool of that name there is found before the real one.
fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn pocketsphinx_messages_reach_the_job_without_server_paths() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    // The decoder, given the installed models' paths, fails the way a broken model does.
    script(
        &bin,
        "pocketsphinx_continuous",
        r#"while [ $# -gt 0 ]; do [ "$1" = -hmm ] && hmm=$2; shift; done
echo "INFO: cmd_ln.c(703): Parsing command line:" >&2
echo "ERROR: \"acmod.c\", line 79: Folder '$hmm' does not contain acoustic model definition 'mdef'" >&2
exit 1"#,
    );
    let server = Server::start_in(tmp, &[], &[("PATH", path_with(&bin))]);
    failed_job_error(
        &server,
        "does not contain acoustic model definition",
        "/usr/share/pocketsphinx/model",
    );
}

#[test]
fn ffmpeg_messages_reach_the_job_without_server_paths() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    // ffmpeg cannot write its output (the last argument): the disk is full.
    script(
        &bin,
        "ffmpeg",
        r#"for a; do last=$a; done; echo "$last: No space left on device" >&2; exit 1"#,
    );
    let rec = script(tmp.path(), "rec.sh", "cat > /dev/null; exit 1");
    let server = Server::start_in(
        tmp,
        &["--recognizer".into(), format!("command:{}", rec.display())],
        &[("PATH", path_with(&bin))],
    );
    let work = server.data_dir().join("work");
    failed_job_error(&server, "No space left on device", &work.to_string_lossy());
}

#[test]
fn scripts_run_starts_the_binary_cargo_built_wherever_the_target_directory_is() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // The target directory elsewhere, as CARGO_TARGET_DIR makes it. Its `cuecraft` records that
    // it ran, then is the real binary; the `cargo` first on PATH skips `build` (the binary is
    // there already, and a build into an empty directory would take minutes) and is the real
    // cargo for everything else, `metadata` included.
    let target = tmp.path().join("elsewhere");
    let release = target.join("release");
    std::fs::create_dir_all(&release).expect("mkdir");
    let marker = tmp.path().join("ran");
    script(
        &release,
        "cuecraft",
        &format!(
            "touch '{}'\nexec '{}' \"$@\"",
            marker.display(),
            crate::common::BIN
        ),
    );
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    script(
        &bin,
        "cargo",
        &format!("[ \"$1\" = build ] && exit 0\nexec '{cargo}' \"$@\""),
    );
    let out = std::process::Command::new("scripts/run")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("--help")
        .env("CARGO_TARGET_DIR", &target)
        .env("PATH", path_with(&bin))
        .output()
        .expect("scripts/run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("--data-dir"));
    assert!(
        marker.exists(),
        "scripts/run did not run {}",
        release.display()
    );
}
