//! Throwaway PostgreSQL for tests: one cluster per test binary, one fresh database per test.
//!
//! The first call of [`cluster`] in a test binary runs `initdb` in a new temporary directory and
//! starts the server with `pg_ctl` on a Unix socket in that directory (`listen_addresses=''`: no
//! TCP port is opened, so runs never collide), then migrates a template database with the
//! caller's migrations. Every [`Cluster::fresh_db`] is `CREATE DATABASE ... TEMPLATE` of it
//! (about 0.1 s), so each test starts from the migrated schema and nothing else.
//!
//! Nothing outlives the test binary: a watchdog shell started beside the server reads a pipe
//! whose only writer is this process. When the process ends, however it ends (a normal exit, a
//! panic, `kill -9`), the pipe closes, and the watchdog stops the server (`pg_ctl stop -m
//! immediate`) and removes the directory. A static is never dropped at exit, so a `Drop` guard
//! alone could not do this, and `PR_SET_PDEATHSIG` fires when the *thread* that spawned the child
//! ends, which for a test is the end of that test, not of the binary.
//!
//! Run as root (as CI and the development machines do), `initdb`, `pg_ctl` and the server run
//! as the `postgres` user through `runuser`, since PostgreSQL refuses to run as root; as any other
//! user they run as that user. The binaries are found in `$CUECRAFT_PG_BIN`, else the newest
//! `/usr/lib/postgresql/*/bin` (Debian's `postgresql` package, installed by `scripts/setup`),
//! else on `PATH`.
//!
//! For the TLS tests, [`tcp_cluster`] starts a cluster of its own that also listens on
//! 127.0.0.1 (a free port), with `ssl=on` and a certificate [`TestCerts::make`] made with the
//! `openssl` command (installed by `scripts/setup`).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The port number names the socket file (`.s.PGSQL.5432`); with no TCP listener it is private
/// to the cluster's directory.
const PORT: u16 = 5432;
/// The migrated template every test database is copied from.
const TEMPLATE: &str = "cuecraft_template";

/// A running cluster of this test binary.
pub struct Cluster {
    dir: PathBuf,
    /// The port: of the socket file's name, and of the TCP listener of a [`tcp_cluster`].
    port: u16,
    /// Whether it listens on 127.0.0.1 too.
    tcp: bool,
    /// The server's options (`pg_ctl -o`), kept for a restart.
    options: String,
    next: AtomicU64,
    /// The watchdog, holding the write end of its pipe (its stdin): closed only when the
    /// process ends. Never waited for: it outlives the process on purpose.
    _watchdog: Mutex<Child>,
}

/// A database of its own for one test, dropped (with its connections) when this is dropped.
pub struct TestDb {
    /// `postgres://` URL of the database, for the store and for `cuecraft --store`.
    pub url: String,
    /// The database name.
    pub name: String,
    cluster: &'static Cluster,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// The test binary's cluster, started on first use with a template database prepared by
/// `migrate(url)` (the store's own migrations). Later calls return the same cluster and ignore
/// `migrate`. Panics with the server's log when PostgreSQL cannot be started.
pub fn cluster(migrate: impl FnOnce(&str) -> Result<(), String>) -> &'static Cluster {
    CLUSTER.get_or_init(|| {
        let cluster = Cluster::start();
        cluster.admin_sql(&format!("CREATE DATABASE {TEMPLATE}"));
        if let Err(e) = migrate(&cluster.url(TEMPLATE)) {
            panic!("migrating the template database failed: {e}");
        }
        cluster
    })
}

/// A cluster of its own for a test that stops and starts its server (the shared one must keep
/// running for the other tests), with a template database prepared by `migrate(url)`. It lives
/// until the test binary ends, like the shared one.
pub fn private_cluster(migrate: impl FnOnce(&str) -> Result<(), String>) -> &'static Cluster {
    let cluster: &'static Cluster = Box::leak(Box::new(Cluster::start()));
    cluster.admin_sql(&format!("CREATE DATABASE {TEMPLATE}"));
    if let Err(e) = migrate(&cluster.url(TEMPLATE)) {
        panic!("migrating the template database failed: {e}");
    }
    cluster
}

/// A cluster of its own listening on 127.0.0.1 as well as on its socket (the port is free when it
/// starts; [`TestDb::tcp_url`]), with TLS (`ssl=on`) from the PEM certificate chain and key
/// `tls` when given, without TLS otherwise, and a template database prepared by `migrate(url)`.
/// It lives until the test binary ends.
pub fn tcp_cluster(
    tls: Option<(&Path, &Path)>,
    migrate: impl FnOnce(&str) -> Result<(), String>,
) -> &'static Cluster {
    let cluster: &'static Cluster = Box::leak(Box::new(Cluster::start_with(Some(tls))));
    cluster.admin_sql(&format!("CREATE DATABASE {TEMPLATE}"));
    if let Err(e) = migrate(&cluster.url(TEMPLATE)) {
        panic!("migrating the template database failed: {e}");
    }
    cluster
}

/// A test CA and a server certificate it signed for the name `localhost` only, made with the
/// `openssl` command, plus a second CA that signed nothing (for a refused chain).
pub struct TestCerts {
    /// The CA's certificate (PEM).
    pub ca: PathBuf,
    /// A CA certificate that did not sign the server's.
    pub other_ca: PathBuf,
    /// The server's certificate (PEM), for `localhost`.
    pub cert: PathBuf,
    /// The server's private key (PEM, PKCS#8).
    pub key: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestCerts {
    /// Makes the files in a temporary directory (removed when this is dropped). Panics with
    /// openssl's output when it fails.
    pub fn make() -> TestCerts {
        let dir = tempfile::Builder::new()
            .prefix("cuecraft-certs-")
            .tempdir()
            .expect("temporary directory for certificates");
        let at = |name: &str| dir.path().join(name);
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .output()
                .unwrap_or_else(|e| panic!("openssl: cannot run ({e}); see scripts/setup"));
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        for (key, cert, name) in [
            ("ca.key", "ca.pem", "cuecraft test CA"),
            ("other.key", "other-ca.pem", "another test CA"),
        ] {
            let subject = format!("/CN={name}");
            let mut args = vec!["req", "-x509"];
            args.extend(ec);
            args.extend([
                "-keyout", key, "-out", cert, "-days", "2", "-subj", &subject,
            ]);
            openssl(&args);
        }
        let mut args = vec!["req", "-new"];
        args.extend(ec);
        args.extend([
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ]);
        openssl(&args);
        std::fs::write(
            at("server.ext"),
            "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n\
             keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .expect("write server.ext");
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ]);
        TestCerts {
            ca: at("ca.pem"),
            other_ca: at("other-ca.pem"),
            cert: at("server.crt"),
            key: at("server.key"),
            _dir: dir,
        }
    }
}

/// A fresh, migrated database in the test binary's cluster.
pub fn fresh_db(migrate: impl FnOnce(&str) -> Result<(), String>) -> TestDb {
    cluster(migrate).fresh_db()
}

fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CUECRAFT_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).unwrap_or_default()
}

/// A TCP port of 127.0.0.1 free at the time of the call, and never handed out before in this
/// process. The port is released before the caller binds it, so two tests running side by side
/// could otherwise be given the same one: the second server then fails to bind, and its test talks
/// to the first test's server (CI saw one answer nothing while the other test stopped it).
pub fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port on 127.0.0.1");
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

fn is_root() -> bool {
    // std has no geteuid; the owner of /proc/self is the process's effective user.
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// A command for a PostgreSQL program, run as `postgres` when this process is root.
fn pg_command(program: &str) -> Command {
    let path = bin_dir().join(program);
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(path);
        c
    } else {
        Command::new(path)
    }
}

fn run(mut cmd: Command, what: &str, log: &Path) {
    let out = cmd.stdin(Stdio::null()).output().unwrap_or_else(|e| {
        panic!("{what}: cannot run ({e}); is PostgreSQL installed (scripts/setup)?")
    });
    if !out.status.success() {
        panic!(
            "{what} failed ({}): {}{}\nserver log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(log).unwrap_or_default()
        );
    }
}

impl Cluster {
    fn start() -> Cluster {
        Cluster::start_with(None)
    }

    /// `tcp`: None for a socket only; Some(tls) to listen on 127.0.0.1 too, with TLS when given.
    fn start_with(tcp: Option<Option<(&Path, &Path)>>) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("cuecraft-pg-")
            .tempdir()
            .expect("temporary directory for PostgreSQL")
            .keep();
        if is_root() {
            let status = Command::new("chown")
                .arg("postgres:")
                .arg(&dir)
                .status()
                .expect("chown");
            assert!(status.success(), "chown postgres {}", dir.display());
        }
        let data = dir.join("data");
        let log = dir.join("server.log");

        // The watchdog first, so that a failing start still leaves nothing behind. Its own
        // process group: a Ctrl-C on the test run must not kill it before it has cleaned up.
        let pg_ctl = bin_dir().join("pg_ctl");
        let as_postgres = if is_root() {
            "runuser -u postgres -- "
        } else {
            ""
        };
        let script = format!(
            "cat >/dev/null; {as_postgres}\"$0\" -D \"$1\" -m immediate stop >/dev/null 2>&1; rm -rf \"$2\""
        );
        let watchdog = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(&pg_ctl)
            .arg(&data)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start the PostgreSQL watchdog");

        let mut initdb = pg_command("initdb");
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C"])
            .args(["--no-sync", "--no-instructions"]);
        run(initdb, "initdb", &log);

        let (port, listen) = match tcp {
            None => (PORT, "''"),
            Some(_) => (free_port(), "'127.0.0.1'"),
        };
        let mut ssl = String::new();
        if let Some(Some((cert, key))) = tcp {
            // PostgreSQL reads the key only when its owner (the server's user) alone can.
            let (to_cert, to_key) = (dir.join("server.crt"), dir.join("server.key"));
            std::fs::copy(cert, &to_cert).expect("copy the server certificate");
            std::fs::copy(key, &to_key).expect("copy the server key");
            std::fs::set_permissions(&to_key, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .expect("chmod the server key");
            if is_root() {
                let status = Command::new("chown")
                    .arg("postgres:")
                    .arg(&to_cert)
                    .arg(&to_key)
                    .status()
                    .expect("chown");
                assert!(status.success(), "chown postgres the server's certificate");
            }
            ssl = format!(
                " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                to_cert.display(),
                to_key.display()
            );
        }
        // Durability is of no use to a test database: no fsync, no full-page writes.
        let options = format!(
            "-k {} -p {port} -c listen_addresses={listen} -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=400{ssl}",
            dir.display()
        );
        let cluster = Cluster {
            dir,
            port,
            tcp: tcp.is_some(),
            options,
            next: AtomicU64::new(0),
            _watchdog: Mutex::new(watchdog),
        };
        cluster.start_server();
        cluster
    }

    fn start_server(&self) {
        let log = self.dir.join("server.log");
        let mut start = pg_command("pg_ctl");
        start
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("-l")
            .arg(&log)
            .args(["-w", "-t", "60", "-o", &self.options, "start"])
            .process_group(0);
        run(start, "pg_ctl start", &log);
    }

    /// Stops the server (`pg_ctl stop -m fast`: open connections are closed), as an outage or a
    /// failover would. Only for a [`private_cluster`].
    pub fn stop(&self) {
        let mut stop = pg_command("pg_ctl");
        stop.arg("-D")
            .arg(self.dir.join("data"))
            .args(["-w", "-t", "60", "-m", "fast", "stop"]);
        run(stop, "pg_ctl stop", &self.dir.join("server.log"));
    }

    /// Starts the server again after [`Cluster::stop`].
    pub fn restart(&self) {
        self.start_server();
    }

    /// The directory holding the server's socket.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// The URL of database `db` in this cluster.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://postgres@localhost/{db}?host={}&port={}",
            self.dir.display(),
            self.port
        )
    }

    /// Runs SQL on the `postgres` database (creating and dropping databases).
    pub fn admin_sql(&self, sql: &str) {
        let mut client = postgres::Client::connect(&self.url("postgres"), postgres::NoTls)
            .unwrap_or_else(|e| panic!("connect to the test cluster: {e}"));
        client
            .batch_execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// A new database copied from the migrated template.
    pub fn fresh_db(&'static self) -> TestDb {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let name = format!("t{}_{n}", std::process::id());
        self.admin_sql(&format!("CREATE DATABASE {name} TEMPLATE {TEMPLATE}"));
        TestDb {
            url: self.url(&name),
            name,
            cluster: self,
        }
    }

    /// The server's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }
}

impl TestDb {
    /// The URL of this database over TCP to `host` (`localhost`, `127.0.0.1`), for a
    /// [`tcp_cluster`]; the caller adds the query (`?sslmode=...`).
    pub fn tcp_url(&self, host: &str) -> String {
        assert!(self.cluster.tcp, "tcp_url: not a tcp_cluster");
        format!(
            "postgres://postgres@{host}:{}/{}",
            self.cluster.port, self.name
        )
    }

    /// A new connection to this database.
    pub fn connect(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("connect to {}: {e}", self.name))
    }

    /// `psql` arguments reaching this database (for tests that drive the real client).
    pub fn psql_args(&self) -> Vec<String> {
        vec![
            "-h".into(),
            self.cluster.dir.display().to_string(),
            "-p".into(),
            self.cluster.port.to_string(),
            "-U".into(),
            "postgres".into(),
            "-d".into(),
            self.name.clone(),
        ]
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // WITH (FORCE) ends connections a killed server's children may still hold. A failure
        // only leaves a database in a cluster that goes away with the binary.
        if let Ok(mut c) = postgres::Client::connect(&self.cluster.url("postgres"), postgres::NoTls)
        {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_never_handed_out_twice() {
        // The kernel's free ports repeat within a few thousand asks (2,000 asks without the
        // registry gave 1,730 distinct ports here): the registry must skip the repeats.
        let ports: Vec<u16> = (0..2000).map(|_| free_port()).collect();
        let distinct: std::collections::HashSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len());
    }

    #[test]
    fn fresh_databases_are_copies_of_the_migrated_template_and_independent() {
        let migrate = |url: &str| -> Result<(), String> {
            let mut c =
                postgres::Client::connect(url, postgres::NoTls).map_err(|e| e.to_string())?;
            c.batch_execute("CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (7)")
                .map_err(|e| e.to_string())
        };
        let a = fresh_db(migrate);
        let b = fresh_db(|_| Err("the template is migrated once".into()));
        assert_ne!(a.name, b.name);
        let mut ca = a.connect();
        ca.batch_execute("INSERT INTO t VALUES (8)")
            .expect("insert");
        let count = |c: &mut postgres::Client| -> i64 {
            c.query_one("SELECT COUNT(*) FROM t", &[])
                .expect("count")
                .get(0)
        };
        assert_eq!(count(&mut ca), 2);
        assert_eq!(count(&mut b.connect()), 1, "databases share nothing");
        drop(ca);
        let name = a.name.clone();
        drop(a);
        let mut admin =
            postgres::Client::connect(&cluster(|_| Ok(())).url("postgres"), postgres::NoTls)
                .expect("connect");
        let left: i64 = admin
            .query_one(
                "SELECT COUNT(*) FROM pg_database WHERE datname = $1",
                &[&name],
            )
            .expect("query")
            .get(0);
        assert_eq!(left, 0, "a dropped TestDb drops its database");
    }
}
