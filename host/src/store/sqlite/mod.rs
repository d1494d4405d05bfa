//! The SQLite store: the main database (organisations, keys, jobs, transcripts, the work queue)
//! and the billing ledger in its own file, each with versioned migrations.
//!
//! The ledger lives in `billing.sqlite` beside `cuecraft.sqlite` so that the billing store can
//! fail on its own (the API then answers `billing_unavailable`) without taking jobs down. Ledger
//! rows are idempotent per (job, kind), which is what makes every charge crash-safe across the
//! two files: each pipeline step writes its ledger row first (`INSERT OR IGNORE`) and its job
//! transition second, so a step repeated after a crash never moves money twice.

pub mod web;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// File name of the main database inside the data directory.
pub const MAIN_DB: &str = "cuecraft.sqlite";
/// File name of the billing ledger inside the data directory.
pub const BILLING_DB: &str = "billing.sqlite";

/// How long a main-database statement waits for a lock held by another process (the admin CLI).
const MAIN_BUSY: Duration = Duration::from_secs(5);
/// How long the ledger waits for a lock before billing counts as unavailable: short, so that the
/// API answers 503 quickly rather than hanging.
const BILLING_BUSY: Duration = Duration::from_millis(300);

const MAIN_MIGRATIONS: &[&str] = &[
    // 1: the whole first schema. Times are Unix milliseconds.
    "CREATE TABLE orgs (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        max_bytes INTEGER NOT NULL,
        max_seconds REAL NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE members (
        id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL REFERENCES orgs(id),
        email TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
        joined_at INTEGER NOT NULL,
        left_at INTEGER
    );
    CREATE INDEX members_org ON members(org_id);
    CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL REFERENCES orgs(id),
        member_id TEXT NOT NULL REFERENCES members(id),
        key_hash BLOB NOT NULL UNIQUE,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
    );
    CREATE TABLE folders (
        id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL REFERENCES orgs(id),
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE presets (
        id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL REFERENCES orgs(id),
        name TEXT NOT NULL,
        settings TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE platform (
        key TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    );
    CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL REFERENCES orgs(id),
        owner_member_id TEXT NOT NULL REFERENCES members(id),
        api_key_id TEXT NOT NULL,
        folder_id TEXT,
        preset_id TEXT,
        name TEXT NOT NULL,
        filename TEXT NOT NULL,
        content_type TEXT NOT NULL,
        size_bytes INTEGER NOT NULL,
        declared_seconds REAL NOT NULL,
        measured_seconds REAL,
        price_cents_per_minute INTEGER NOT NULL,
        settings TEXT NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        language TEXT NOT NULL,
        frame_num INTEGER,
        frame_den INTEGER,
        upload_expires_at INTEGER NOT NULL,
        uploaded_at INTEGER,
        highlights TEXT,
        chapters TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE INDEX jobs_org ON jobs(org_id);
    CREATE INDEX jobs_created ON jobs(created_at);
    CREATE TABLE transcripts (
        id TEXT PRIMARY KEY,
        job_id TEXT NOT NULL REFERENCES jobs(id),
        seq INTEGER NOT NULL,
        language TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('original', 'clean', 'translation')),
        label TEXT,
        status TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'ready', 'failed')),
        error TEXT,
        words TEXT,
        revision INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        UNIQUE (job_id, seq)
    );
    CREATE TABLE queue (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        job_id TEXT NOT NULL,
        task TEXT NOT NULL CHECK (task IN ('job', 'clean')),
        enqueued_at INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        UNIQUE (job_id, task)
    );",
    // 2: the web application: passwords, one-time sign-in links, sessions, folder members, the
    // transcript's revision history, editor media, and the indexes of the project list's sorts
    // (keyset pagination on (org, key, id)).
    "ALTER TABLE members ADD COLUMN password_hash TEXT;
    CREATE TABLE login_links (
        token_hash BLOB PRIMARY KEY,
        member_id TEXT NOT NULL REFERENCES members(id),
        expires_at INTEGER NOT NULL,
        used_at INTEGER
    );
    CREATE TABLE sessions (
        token_hash BLOB PRIMARY KEY,
        member_id TEXT NOT NULL REFERENCES members(id),
        csrf TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
    );
    CREATE INDEX sessions_member ON sessions(member_id);
    CREATE TABLE folder_members (
        folder_id TEXT NOT NULL REFERENCES folders(id),
        member_id TEXT NOT NULL REFERENCES members(id),
        PRIMARY KEY (folder_id, member_id)
    );
    CREATE INDEX folder_members_member ON folder_members(member_id);
    CREATE TABLE revisions (
        transcript_id TEXT NOT NULL REFERENCES transcripts(id),
        revision INTEGER NOT NULL,
        words TEXT NOT NULL,
        member_id TEXT,
        note TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (transcript_id, revision)
    );
    CREATE INDEX jobs_org_created ON jobs(org_id, created_at, id);
    CREATE INDEX jobs_org_updated ON jobs(org_id, updated_at, id);
    CREATE INDEX jobs_org_name ON jobs(org_id, name, id);
    CREATE INDEX jobs_owner_created ON jobs(owner_member_id, created_at, id);",
    // 3: a member's folder projects found from the folder, so a member's list costs what they
    // may see, not the organisation's size.
    "CREATE INDEX jobs_folder ON jobs(folder_id, created_at, id);",
];

const BILLING_MIGRATIONS: &[&str] = &[
    // 1: the ledger. amount_cents > 0 adds credit; < 0 spends it. One row per (job, kind).
    "CREATE TABLE ledger (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        org_id TEXT NOT NULL,
        job_id TEXT,
        kind TEXT NOT NULL CHECK (kind IN ('credit', 'charge', 'settle', 'refund')),
        amount_cents INTEGER NOT NULL,
        note TEXT,
        created_at INTEGER NOT NULL,
        UNIQUE (job_id, kind)
    );
    CREATE INDEX ledger_org ON ledger(org_id);",
];

/// Applies the migrations not yet recorded in the `migrations` table, each in one transaction.
fn migrate(conn: &mut Connection, migrations: &[&str]) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)",
    )?;
    let done: i64 = conn.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM migrations",
        [],
        |r| r.get(0),
    )?;
    for (i, sql) in migrations.iter().enumerate() {
        let version = i as i64 + 1;
        if version <= done {
            continue;
        }
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.execute(
            "INSERT INTO migrations (version, applied_at) VALUES (?1, ?2)",
            (version, crate::util::now_ms()),
        )?;
        tx.commit()?;
    }
    Ok(())
}

fn open_main(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(MAIN_BUSY)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

fn open_billing(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BILLING_BUSY)?;
    // A rollback journal: money movements are rare, and a plain journal lets an operator (or a
    // test) lock the ledger exclusively.
    conn.pragma_update(None, "journal_mode", "DELETE")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

/// Both databases of a data directory, with a small pool of main connections.
pub struct SqliteStore {
    data_dir: PathBuf,
    main_path: PathBuf,
    billing_path: PathBuf,
    pool: Mutex<Vec<Connection>>,
    billing: Mutex<Option<Connection>>,
}

impl SqliteStore {
    /// Opens (creating and migrating when needed) the databases in `data_dir`.
    pub fn open(data_dir: &Path) -> anyhow::Result<SqliteStore> {
        std::fs::create_dir_all(data_dir)?;
        let main_path = data_dir.join(MAIN_DB);
        let billing_path = data_dir.join(BILLING_DB);
        let mut main = open_main(&main_path)?;
        migrate(&mut main, MAIN_MIGRATIONS)?;
        let mut billing = open_billing(&billing_path)?;
        migrate(&mut billing, BILLING_MIGRATIONS)?;
        Ok(SqliteStore {
            data_dir: data_dir.to_path_buf(),
            main_path,
            billing_path,
            pool: Mutex::new(vec![main]),
            billing: Mutex::new(Some(billing)),
        })
    }

    /// The data directory the store lives in.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Runs `f` with a main-database connection (blocking; call from a blocking thread).
    pub fn with<T, E: From<rusqlite::Error>>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        let conn = self.pool.lock().ok().and_then(|mut p| p.pop());
        let mut conn = match conn {
            Some(c) => c,
            None => open_main(&self.main_path)?,
        };
        let out = f(&mut conn);
        if let Ok(mut p) = self.pool.lock() {
            if p.len() < 16 {
                p.push(conn);
            }
        }
        out
    }

    /// Runs `f` with the ledger connection (blocking). The connection is reopened when a previous
    /// use left it broken.
    pub fn with_billing<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let mut guard = self
            .billing
            .lock()
            .map_err(|_| rusqlite::Error::InvalidQuery)?;
        if guard.is_none() {
            *guard = Some(open_billing(&self.billing_path)?);
        }
        let Some(conn) = guard.as_mut() else {
            return Err(rusqlite::Error::InvalidQuery);
        };
        let out = f(conn);
        if out.is_err() {
            // Start afresh next time: the file may have been replaced or repaired meanwhile.
            *guard = None;
        }
        out
    }
}
