//! `cuecraft convert` as users run it: the real binary on real files, standard input and output,
//! checked against what the formats library writes for the same cues; `cuecraft serve` refusing to
//! start without the whisper model.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use cuecraft_engine::{Cue, Millis};
use cuecraft_formats::{parse, to_vec, Format, WriteOptions};

use crate::common::BIN;

/// `n` cues 1.5 s apart with one or two lines of mixed-script text: over 64 KiB of SRT for a few
/// thousand cues, so the one-pass conversion reads several chunks.
fn cues(n: usize) -> Vec<Cue> {
    let words = [
        "Zürich",
        "東京",
        "café & <b>",
        "naïve",
        "שלום",
        "okay",
        "{\\an8}",
        "forty-two",
    ];
    (0..n)
        .map(|i| {
            let start = i as i64 * 1_500;
            let mut lines = vec![format!("{} cue {i} {}", words[i % 8], words[(i + 3) % 8])];
            if i % 3 == 0 {
                lines.push(format!("second line {}", words[(i + 5) % 8]));
            }
            Cue::from_lines(0, Millis(start), Millis(start + 1_200), lines)
        })
        .collect()
}

/// What the library writes in `to` for the cues it reads from `srt`.
fn library(to: Format, srt: &[u8]) -> Vec<u8> {
    to_vec(
        to,
        &parse(Format::Srt, srt).unwrap(),
        &WriteOptions::default(),
    )
    .unwrap()
}

fn convert(args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("convert")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn convert_writes_the_library_bytes_for_a_large_file() {
    let dir = tempfile::tempdir().unwrap();
    let srt = to_vec(Format::Srt, &cues(4_000), &WriteOptions::default()).unwrap();
    assert!(srt.len() > 4 * 64 * 1024);
    let input = dir.path().join("in.srt");
    std::fs::write(&input, &srt).unwrap();
    for (ext, format) in [
        ("vtt", Format::WebVtt),
        ("ass", Format::Ass),
        ("srt", Format::Srt),
    ] {
        let out = dir.path().join(format!("out.{ext}"));
        let run = convert(&[
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--title",
            "",
        ]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(
            std::fs::read(&out).unwrap() == library(format, &srt),
            "{ext}: differs from the library's output"
        );
    }
    // Through the cue list (EBU-STL cannot be written a cue at a time): every cue arrives.
    let stl = dir.path().join("out.stl");
    let run = convert(&[input.to_str().unwrap(), "-o", stl.to_str().unwrap()]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        parse(Format::EbuStl, &std::fs::read(&stl).unwrap())
            .unwrap()
            .len(),
        4_000
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn cues_out_of_order_deep_in_a_file_are_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let mut list = cues(3_000);
    // Past the first chunk, two cues trade places: the one-pass conversion has written a lot by
    // the time it notices, and must start over through the cue list.
    list.swap(2_500, 2_501);
    let srt = to_vec(Format::Srt, &list, &WriteOptions::default()).unwrap();
    let srt = String::from_utf8(srt).unwrap();
    // The writer sorted them: swap the two blocks back in the file itself.
    let blocks: Vec<&str> = srt.split("\r\n\r\n").collect();
    let mut shuffled = blocks.clone();
    shuffled.swap(2_500, 2_501);
    let shuffled = shuffled.join("\r\n\r\n");
    assert_ne!(shuffled, srt);
    let (input, out) = (dir.path().join("in.srt"), dir.path().join("out.vtt"));
    std::fs::write(&input, &shuffled).unwrap();
    let run = convert(&[input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let written = parse(Format::WebVtt, &std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(written.len(), 3_000);
    assert!(written.windows(2).all(|w| w[0].start <= w[1].start));
    assert!(!dir.path().join("out.vtt.tmp").exists());
}

#[test]
fn convert_reads_standard_input_and_writes_standard_output() {
    let srt = to_vec(Format::Srt, &cues(500), &WriteOptions::default()).unwrap();
    let mut child = Command::new(BIN)
        .args(["convert", "-", "-o", "-", "--from", "srt", "--to", "vtt"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feed = {
        let srt = srt.clone();
        std::thread::spawn(move || stdin.write_all(&srt).unwrap())
    };
    let out = child.wait_with_output().unwrap();
    feed.join().unwrap();
    assert!(out.status.success());
    assert!(out.stdout == library(Format::WebVtt, &srt));
}

#[test]
fn a_bad_file_fails_with_where_and_why_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut srt = to_vec(Format::Srt, &cues(3_000), &WriteOptions::default()).unwrap();
    // A malformed timing line near the end, after several chunks were written.
    srt.extend_from_slice(b"3001\r\n00:61:00,000 --> 00:62:00,000\r\nbroken\r\n\r\n");
    let (input, out) = (dir.path().join("in.srt"), dir.path().join("out.vtt"));
    std::fs::write(&input, &srt).unwrap();
    let run = convert(&[input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("cannot read") && stderr.contains("minutes 61"),
        "{stderr}"
    );
    assert!(!out.exists() && !dir.path().join("out.vtt.tmp").exists());
}

#[test]
fn serve_refuses_to_start_without_the_whisper_model_in_one_line_naming_the_fix() {
    let dir = tempfile::tempdir().expect("temp dir");
    let model = dir.path().join("whisper-base");
    std::fs::create_dir(&model).expect("mkdir");
    for (missing, wanted) in [
        (true, "config.json is missing: run scripts/setup"),
        (
            false,
            "does not match its SHA-256 checksum: run scripts/setup",
        ),
    ] {
        if !missing {
            // Every file present, one of them altered.
            let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join(".models/whisper-base");
            for name in ["config.json", "tokenizer.json", "vocabulary.txt"] {
                std::fs::copy(shipped.join(name), model.join(name)).expect("copy");
            }
            std::fs::write(model.join("model.bin"), b"not the model").expect("write");
        }
        let out = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path().join("data"))
            .arg("--whisper-model")
            .arg(&model)
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE")
            .output()
            .expect("run serve");
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(wanted), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            !dir.path().join("data").exists(),
            "nothing is created: {stderr}"
        );
    }
}

/// `cuecraft submit` over https: a TLS proxy with a certificate of a test CA (for `localhost`)
/// in front of the real server, as a deployment's reverse proxy is. The API calls (create, poll,
/// download) go through it; the upload URL is the server's own `--public-url`.
#[test]
fn submit_speaks_https_and_checks_the_certificate_against_the_ca_file() {
    let certs = cuecraft_pgtest::TestCerts::make();
    let proxy = crate::common::tls::TlsProxy::start(&certs.cert, &certs.key);
    // Behind the proxy, as a deployment is: every link the server gives, the upload URL among
    // them, is https (the media in the data directory, so the upload goes to the server too).
    let public = format!("https://localhost:{}", proxy.port);
    let server = crate::common::Server::start(&[
        "--workers",
        "1",
        "--public-url",
        &public,
        crate::common::LOCAL_MEDIA[0],
        crate::common::LOCAL_MEDIA[1],
    ]);
    proxy.forward_to(server.port);
    let org = server.org(10_000, &[]);
    let media = server.tone(3);
    let dir = tempfile::tempdir().expect("temp dir");
    let submit = |api: &str, out: &Path| {
        let mut cmd = Command::new(BIN);
        cmd.arg("submit")
            .arg(&media)
            .args(["--api", api, "--key", &org.key, "--poll-interval", "0.2"])
            .arg("-o")
            .arg(out)
            .env_remove("CUECRAFT_CA_FILE");
        cmd
    };
    let api = format!("https://localhost:{}/v1", proxy.port);

    let out = dir.path().join("tone.srt");
    let run = submit(&api, &out)
        .arg("--ca-file")
        .arg(&certs.ca)
        .output()
        .expect("run cuecraft submit");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}\n{}", server.log());
    assert!(stderr.contains("ready"), "{stderr}");
    let srt = std::fs::read(&out).expect("srt written");
    let cues = parse(Format::Srt, &srt).expect("valid SRT");
    assert!(!cues.is_empty(), "{}", String::from_utf8_lossy(&srt));
    assert!(
        proxy.handshakes() >= 4,
        "create, upload, poll and download went through TLS: {}",
        proxy.handshakes()
    );
    assert!(
        server.log().contains("upload complete"),
        "the upload reached the server through the proxy:\n{}",
        server.log()
    );

    // The same CA from the environment.
    let out = dir.path().join("env.srt");
    let run = submit(&api, &out)
        .env("CUECRAFT_CA_FILE", &certs.ca)
        .output()
        .expect("run cuecraft submit");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(out.exists());

    // Without the CA (the system's roots do not know it): refused before anything is sent.
    let out = dir.path().join("refused.srt");
    let run = submit(&api, &out).output().expect("run cuecraft submit");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        stderr.contains("invalid peer certificate: UnknownIssuer") && stderr.contains("--ca-file"),
        "{stderr}"
    );
    assert!(!out.exists());

    // The certificate names localhost, not 127.0.0.1.
    let run = submit(&format!("https://127.0.0.1:{}/v1", proxy.port), &out)
        .arg("--ca-file")
        .arg(&certs.ca)
        .output()
        .expect("run cuecraft submit");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(stderr.contains("not valid for name"), "{stderr}");
}
