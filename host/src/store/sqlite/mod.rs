//! The SQLite store: the main database (organisations, keys, jobs, transcripts, the work queue)
//! and the billing ledger in its own file, each with versioned migrations applied on open.
//!
//! The ledger lives in `billing.sqlite` beside `cuecraft.sqlite` so that the billing store can
//! fail on its own (the API then answers `billing_unavailable`) without taking jobs down. Ledger
//! rows are idempotent per (job, kind), which is what makes every charge crash-safe across the
//! two files: each pipeline step writes its ledger row first (`INSERT OR IGNORE`) and its job
//! transition second, so a step repeated after a crash never moves money twice.

pub mod idempotency;
pub mod jobs;
pub mod ledger;
pub mod pages;
pub mod web;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use crate::store::pages::Geometry;
use crate::store::{
    Caller, CleanSource, Formatted, JobProgress, JobRow, KeyClaim, LocalWake, Member,
    MigrationState, NewJob, NewOrgOwner, ProjectQuery, ProjectRow, QueueStats, Recognized,
    RevisionRow, Saved, Session, Store, StoreError, StoreResult, StoredWords, Task, TranscriptInfo,
    TranscriptRow, Wake, WordsEdit,
};

/// File name of the main database inside the data directory.
pub const MAIN_DB: &str = "cuecraft.sqlite";
/// File name of the billing ledger inside the data directory.
pub const BILLING_DB: &str = "billing.sqlite";

/// How long a main-database statement waits for a lock held by another process (the admin CLI).
const MAIN_BUSY: Duration = Duration::from_secs(5);
/// How long the ledger waits for a lock before billing counts as unavailable: short, so that the
/// API answers 503 quickly rather than hanging.
const BILLING_BUSY: Duration = Duration::from_millis(300);

pub(crate) const MAIN_MIGRATIONS: &[&str] = &[
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
    // 4: the queue's leases: a claimed row names its worker and how long the claim holds; a row
    // whose lease ran out (its worker died) is claimable again. A released row keeps a
    // `lease_until` in the future as its retry delay.
    "ALTER TABLE queue ADD COLUMN worker TEXT;
    ALTER TABLE queue ADD COLUMN lease_until INTEGER;",
    // 5: Idempotency-Key claims of POST /jobs: one row per organisation and key; `response` is
    // NULL while the first request is creating its job. Rows older than a day are deleted on the
    // next claim (`created_at` index).
    "CREATE TABLE idempotency_keys (
        org_id TEXT NOT NULL,
        key TEXT NOT NULL,
        body_hash BLOB NOT NULL,
        job_id TEXT,
        response TEXT,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (org_id, key)
    );
    CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);",
    // 6: a transcript's words in pages of about 1,000 words (`store::pages`), so that an edit
    // rewrites the pages it touches instead of the whole list. `n` (the page's word count) comes
    // before `words` so that the page directory is read without the text. The data step
    // ([`MAIN_STEPS`]) moves every list into pages and drops `transcripts.words`.
    "CREATE TABLE word_pages (
        transcript_id TEXT NOT NULL REFERENCES transcripts(id) ON DELETE CASCADE,
        page INTEGER NOT NULL,
        n INTEGER NOT NULL,
        words TEXT NOT NULL,
        PRIMARY KEY (transcript_id, page)
    );",
    // 7: the project's lead-in in frames (`inCueLeadInFrames`), set in the editor's settings and
    // applied by the editor's downloads only; 0 (none) for every job until a member sets it.
    "ALTER TABLE jobs ADD COLUMN lead_in_frames INTEGER NOT NULL DEFAULT 0;",
    // 8: how far a running job's recognition has come (`Store::set_progress`): one row per job,
    // replaced every few seconds while it recognises.
    "CREATE TABLE job_progress (
        job_id TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
        share REAL NOT NULL,
        seconds_left REAL,
        at INTEGER NOT NULL
    );",
    // 9: the id of the request that created the job, written on the log lines of its pipeline
    // steps (NULL for jobs created before).
    "ALTER TABLE jobs ADD COLUMN request_id TEXT;",
    // 10: a video job's shot changes (`Store::set_shot_changes`: milliseconds, comma-separated;
    // NULL for audio-only jobs and jobs made before).
    "ALTER TABLE jobs ADD COLUMN shot_changes TEXT;",
    // 11: the project's speaker names (`Store::set_speaker_names`: a JSON object by speaker
    // number; NULL for none).
    "ALTER TABLE jobs ADD COLUMN speaker_names TEXT;",
    // 12: words timed by hand marked per cue (`store::pages::TIMED_PER_CUE`).
    crate::store::pages::TIMED_PER_CUE,
];

/// Steps of migrations that SQL alone cannot take, run after that version's SQL in its
/// transaction: (version, step).
type Step = fn(&Connection) -> rusqlite::Result<()>;
const MAIN_STEPS: &[(i64, Step)] = &[(6, pages::move_words_to_pages)];

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

/// Applies the migrations not yet recorded in the `migrations` table, each in one transaction
/// with its data step (`steps`), if it has one.
fn migrate(
    conn: &mut Connection,
    migrations: &[&str],
    steps: &[(i64, Step)],
) -> rusqlite::Result<()> {
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
        for (_, step) in steps.iter().filter(|(v, _)| *v == version) {
            step(&tx)?;
        }
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
    wake: Arc<LocalWake>,
    /// How transcripts' words are cut into pages (tests make them small).
    pub(crate) pages: Geometry,
}

impl SqliteStore {
    /// Opens (creating and migrating when needed) the databases in `data_dir`.
    pub fn open(data_dir: &Path) -> anyhow::Result<SqliteStore> {
        std::fs::create_dir_all(data_dir)?;
        let main_path = data_dir.join(MAIN_DB);
        let billing_path = data_dir.join(BILLING_DB);
        let mut main = open_main(&main_path)?;
        migrate(&mut main, MAIN_MIGRATIONS, MAIN_STEPS)?;
        let mut billing = open_billing(&billing_path)?;
        migrate(&mut billing, BILLING_MIGRATIONS, &[])?;
        Ok(SqliteStore {
            data_dir: data_dir.to_path_buf(),
            main_path,
            billing_path,
            pool: Mutex::new(vec![main]),
            billing: Mutex::new(Some(billing)),
            wake: Arc::new(LocalWake::default()),
            pages: Geometry::DEFAULT,
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

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        match &e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
                    StoreError::Unavailable(e.to_string())
                }
                ErrorCode::ConstraintViolation => StoreError::Conflict(e.to_string()),
                _ => StoreError::Other(e.to_string()),
            },
            rusqlite::Error::QueryReturnedNoRows => StoreError::NotFound(e.to_string()),
            _ => StoreError::Other(e.to_string()),
        }
    }
}

impl SqliteStore {
    /// Runs `f` on a main connection, its error as a `StoreError`.
    fn main<T>(&self, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> StoreResult<T> {
        self.with(|c| f(c).map_err(StoreError::from))
    }

    /// Runs `f` on the ledger: any failure means billing is unavailable.
    fn ledger<T>(&self, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> StoreResult<T> {
        self.with_billing(f)
            .map_err(|e| StoreError::Unavailable(format!("ledger: {e}")))
    }
}

fn exists(c: &Connection, sql: &str, args: impl rusqlite::Params) -> rusqlite::Result<bool> {
    Ok(c.query_row(sql, args, |_| Ok(())).optional()?.is_some())
}

impl Store for SqliteStore {
    fn wake(&self) -> Arc<dyn Wake> {
        self.wake.clone()
    }

    fn migrations(&self) -> StoreResult<Vec<MigrationState>> {
        const APPLIED: &str = "SELECT COALESCE(MAX(version), 0) FROM migrations";
        let main = self.main(|c| c.query_row(APPLIED, [], |r| r.get(0)))?;
        let billing = self.ledger(|c| c.query_row(APPLIED, [], |r| r.get(0)))?;
        Ok(vec![
            MigrationState {
                schema: "main",
                applied: main,
                known: MAIN_MIGRATIONS.len() as i64,
            },
            MigrationState {
                schema: "billing",
                applied: billing,
                known: BILLING_MIGRATIONS.len() as i64,
            },
        ])
    }

    fn is_empty(&self) -> StoreResult<bool> {
        self.main(|c| web::is_empty(c))
    }

    fn create_org(
        &self,
        id: &str,
        name: &str,
        max_bytes: i64,
        max_seconds: f64,
        now: i64,
    ) -> StoreResult<()> {
        self.main(|c| {
            c.execute(
                "INSERT INTO orgs (id, name, max_bytes, max_seconds, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, name, max_bytes, max_seconds, now],
            )
            .map(|_| ())
        })
    }

    fn create_org_with_owner(&self, n: &NewOrgOwner<'_>) -> StoreResult<()> {
        self.main(|c| {
            let tx = c.transaction()?;
            tx.execute(
                "INSERT INTO orgs (id, name, max_bytes, max_seconds, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![n.org_id, n.org_name, n.max_bytes, n.max_seconds, n.now],
            )?;
            tx.execute(
                "INSERT INTO members (id, org_id, email, role, joined_at) VALUES (?1, ?2, ?3, 'owner', ?4)",
                params![n.member_id, n.org_id, n.email, n.now],
            )?;
            tx.execute(
                "INSERT INTO api_keys (id, org_id, member_id, key_hash, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![n.key_id, n.org_id, n.member_id, n.key_hash, n.now],
            )?;
            tx.commit()
        })
    }

    fn org_exists(&self, org_id: &str) -> StoreResult<bool> {
        self.main(|c| exists(c, "SELECT 1 FROM orgs WHERE id = ?1", [org_id]))
    }

    fn plan_limits(&self, org_id: &str) -> StoreResult<(i64, f64)> {
        self.main(|c| {
            c.query_row(
                "SELECT max_bytes, max_seconds FROM orgs WHERE id = ?1",
                [org_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
    }

    fn add_member(
        &self,
        id: &str,
        org_id: &str,
        email: &str,
        role: &str,
        joined_at: i64,
    ) -> StoreResult<()> {
        self.main(|c| {
            c.execute(
                "INSERT INTO members (id, org_id, email, role, joined_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, org_id, email, role, joined_at],
            )
            .map(|_| ())
        })
    }

    fn member_of(
        &self,
        org_id: &str,
        member_id: &str,
    ) -> StoreResult<Option<(String, Option<i64>)>> {
        self.main(|c| {
            c.query_row(
                "SELECT role, left_at FROM members WHERE id = ?1 AND org_id = ?2",
                [member_id, org_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })
    }

    fn remove_member(&self, member_id: &str, now: i64) -> StoreResult<i64> {
        self.main(|c| {
            let tx = c.transaction()?;
            let left: Option<i64> = tx.query_row(
                "SELECT left_at FROM members WHERE id = ?1",
                [member_id],
                |r| r.get(0),
            )?;
            if let Some(left) = left {
                return Ok(left);
            }
            tx.execute(
                "UPDATE members SET left_at = ?1 WHERE id = ?2",
                params![now, member_id],
            )?;
            web::revoke_member(&tx, member_id)?;
            tx.commit()?;
            Ok(now)
        })
    }

    fn active_member(&self, member_id: &str) -> StoreResult<Option<Member>> {
        self.main(|c| web::active_member(c, member_id))
    }

    fn create_key(
        &self,
        id: &str,
        org_id: &str,
        member_id: &str,
        key_hash: &[u8],
        now: i64,
    ) -> StoreResult<()> {
        self.main(|c| {
            c.execute(
                "INSERT INTO api_keys (id, org_id, member_id, key_hash, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, org_id, member_id, key_hash, now],
            )
            .map(|_| ())
        })
    }

    fn revoke_key(&self, key_id: &str, now: i64) -> StoreResult<i64> {
        self.main(|c| {
            let tx = c.transaction()?;
            let revoked: Option<i64> = tx.query_row(
                "SELECT revoked_at FROM api_keys WHERE id = ?1",
                [key_id],
                |r| r.get(0),
            )?;
            if let Some(at) = revoked {
                return Ok(at);
            }
            tx.execute(
                "UPDATE api_keys SET revoked_at = ?1 WHERE id = ?2",
                params![now, key_id],
            )?;
            tx.commit()?;
            Ok(now)
        })
    }

    fn find_key(&self, key_hash: &[u8]) -> StoreResult<Option<Caller>> {
        self.main(|c| jobs::find_key(c, key_hash))
    }

    fn create_folder(&self, id: &str, org_id: &str, name: &str, now: i64) -> StoreResult<()> {
        self.main(|c| {
            c.execute(
                "INSERT INTO folders (id, org_id, name, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![id, org_id, name, now],
            )
            .map(|_| ())
        })
    }

    fn folder_in_org(&self, org_id: &str, folder_id: &str) -> StoreResult<bool> {
        self.main(|c| {
            exists(
                c,
                "SELECT 1 FROM folders WHERE id = ?1 AND org_id = ?2",
                [folder_id, org_id],
            )
        })
    }

    fn folder_shares_org(&self, folder_id: &str, member_id: &str) -> StoreResult<bool> {
        self.main(|c| {
            exists(
                c,
                "SELECT 1 FROM folders f JOIN members m ON m.org_id = f.org_id
                 WHERE f.id = ?1 AND m.id = ?2 AND m.left_at IS NULL",
                [folder_id, member_id],
            )
        })
    }

    fn add_folder_member(&self, folder_id: &str, member_id: &str) -> StoreResult<()> {
        self.main(|c| web::add_folder_member(c, folder_id, member_id))
    }

    fn create_preset(
        &self,
        id: &str,
        org_id: &str,
        name: &str,
        settings: &str,
        now: i64,
    ) -> StoreResult<()> {
        self.main(|c| {
            c.execute(
                "INSERT INTO presets (id, org_id, name, settings, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, org_id, name, settings, now],
            )
            .map(|_| ())
        })
    }

    fn preset_settings(&self, org_id: &str, preset_id: &str) -> StoreResult<Option<String>> {
        self.main(|c| {
            c.query_row(
                "SELECT settings FROM presets WHERE id = ?1 AND org_id = ?2",
                [preset_id, org_id],
                |r| r.get(0),
            )
            .optional()
        })
    }

    fn set_monthly_quota(&self, bytes: i64) -> StoreResult<()> {
        self.main(|c| {
            c.execute(
                "INSERT INTO platform (key, value) VALUES ('monthly_bytes', ?1)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [bytes],
            )
            .map(|_| ())
        })
    }

    fn monthly_quota(&self) -> StoreResult<Option<i64>> {
        self.main(|c| {
            c.query_row(
                "SELECT value FROM platform WHERE key = 'monthly_bytes'",
                [],
                |r| r.get(0),
            )
            .optional()
        })
    }

    fn job_owner(&self, org_id: &str, member_id: &str) -> StoreResult<Option<String>> {
        self.main(|c| jobs::job_owner(c, org_id, member_id))
    }

    fn bytes_this_month(&self, month_start: i64, now: i64) -> StoreResult<i64> {
        self.main(|c| jobs::bytes_this_month(c, month_start, now))
    }

    fn insert_job(&self, job: &NewJob) -> StoreResult<()> {
        self.main(|c| jobs::insert_job(c, job))
    }

    fn claim_idempotency_key(
        &self,
        org_id: &str,
        key: &str,
        body_hash: &[u8],
        now: i64,
    ) -> StoreResult<KeyClaim> {
        self.main(|c| idempotency::claim(c, org_id, key, body_hash, now))
    }

    fn insert_job_for_key(
        &self,
        job: &NewJob,
        key: &str,
        body_hash: &[u8],
        response: &str,
    ) -> StoreResult<()> {
        match self.main(|c| idempotency::insert_job_for_key(c, job, key, body_hash, response))? {
            true => Ok(()),
            false => Err(StoreError::Conflict(format!(
                "the claim of idempotency key {key:?} is no longer this request's"
            ))),
        }
    }

    fn release_idempotency_key(
        &self,
        org_id: &str,
        key: &str,
        body_hash: &[u8],
    ) -> StoreResult<()> {
        self.main(|c| idempotency::release(c, org_id, key, body_hash))
    }

    fn job(&self, id: &str) -> StoreResult<Option<JobRow>> {
        self.main(|c| jobs::load_job(c, id))
    }

    fn transcripts(&self, job_id: &str) -> StoreResult<Vec<TranscriptRow>> {
        self.main(|c| jobs::load_transcripts(c, job_id))
    }

    fn transcript_words(
        &self,
        job_id: &str,
        transcript_id: Option<&str>,
    ) -> StoreResult<Option<StoredWords>> {
        self.main(|c| web::transcript_words(c, job_id, transcript_id))
    }

    fn transcript_head(
        &self,
        job_id: &str,
        transcript_id: Option<&str>,
    ) -> StoreResult<Option<(String, i64)>> {
        self.main(|c| web::transcript_head(c, job_id, transcript_id))
    }

    fn ready_transcripts(&self, job_id: &str) -> StoreResult<Vec<TranscriptInfo>> {
        self.main(|c| web::ready_transcripts(c, job_id))
    }

    fn uploading_jobs(&self) -> StoreResult<Vec<String>> {
        self.main(|c| jobs::uploading_jobs(c))
    }

    fn start_transcribing(&self, job_id: &str, now: i64) -> StoreResult<bool> {
        self.main(|c| jobs::start_transcribing(c, job_id, now))
    }

    fn store_original(&self, job_id: &str, r: &Recognized, now: i64) -> StoreResult<()> {
        self.main(|c| jobs::store_original(c, job_id, r, now, self.pages))
    }

    fn original_words(&self, job_id: &str) -> StoreResult<Option<(String, String)>> {
        self.main(|c| jobs::original_words(c, job_id))
    }

    fn finish_formatting(
        &self,
        job_id: &str,
        f: &Formatted,
        seq: i64,
        now: i64,
    ) -> StoreResult<()> {
        self.main(|c| jobs::finish_formatting(c, job_id, f, seq, now))
    }

    fn clean_source(&self, job_id: &str) -> StoreResult<Option<CleanSource>> {
        self.main(|c| jobs::clean_source(c, job_id))
    }

    fn mark_processing(&self, transcript_id: &str) -> StoreResult<()> {
        self.main(|c| {
            c.execute(
                "UPDATE transcripts SET status = 'processing' WHERE id = ?1",
                [transcript_id],
            )
            .map(|_| ())
        })
    }

    fn finish_clean(&self, transcript_id: &str, words: &str, seq: i64) -> StoreResult<()> {
        self.main(|c| jobs::finish_clean(c, transcript_id, words, seq, self.pages))
    }

    fn fail_clean(&self, job_id: &str, why: &str, seq: i64) -> StoreResult<()> {
        self.main(|c| jobs::fail_clean(c, job_id, why, seq))
    }

    fn fail_job(&self, job_id: &str, why: &str, seq: i64, now: i64) -> StoreResult<()> {
        self.main(|c| jobs::fail_job(c, job_id, why, seq, now))
    }

    fn requeue_unfinished(&self, now: i64) -> StoreResult<usize> {
        self.main(|c| jobs::requeue_unfinished(c, now))
    }

    fn claim_task(&self, worker: &str, now: i64, lease_ms: i64) -> StoreResult<Option<Task>> {
        self.main(|c| jobs::claim_task(c, worker, now, lease_ms))
    }

    fn extend_lease(&self, seq: i64, worker: &str, until: i64) -> StoreResult<bool> {
        self.main(|c| jobs::extend_lease(c, seq, worker, until))
    }

    fn release_task(&self, seq: i64, worker: &str, not_before: i64) -> StoreResult<()> {
        self.main(|c| jobs::release_task(c, seq, worker, not_before))
    }

    fn finish_task(&self, seq: i64) -> StoreResult<()> {
        self.main(|c| {
            c.execute("DELETE FROM queue WHERE seq = ?1", [seq])
                .map(|_| ())
        })
    }

    fn queue_len(&self) -> StoreResult<i64> {
        self.main(|c| c.query_row("SELECT COUNT(*) FROM queue", [], |r| r.get(0)))
    }

    fn queue_stats(&self, now: i64) -> StoreResult<QueueStats> {
        self.main(|c| jobs::queue_stats(c, now))
    }

    fn balance(&self, org_id: &str) -> StoreResult<i64> {
        self.ledger(|c| ledger::balance(c, org_id))
    }

    fn add_credit(&self, org_id: &str, cents: i64) -> StoreResult<i64> {
        self.ledger(|c| ledger::add_credit(c, org_id, cents))
    }

    fn charge(&self, org_id: &str, job_id: &str, cents: i64) -> StoreResult<bool> {
        self.ledger(|c| ledger::charge(c, org_id, job_id, cents))
    }

    fn settle(&self, org_id: &str, job_id: &str, measured_cents: i64) -> StoreResult<()> {
        self.ledger(|c| ledger::settle(c, org_id, job_id, measured_cents))
    }

    fn refund(&self, org_id: &str, job_id: &str) -> StoreResult<()> {
        self.ledger(|c| ledger::refund(c, org_id, job_id))
    }

    fn create_login_link(&self, member_id: &str, now: i64) -> StoreResult<String> {
        self.with(|c| web::create_login_link(c, member_id, now))
    }

    fn consume_login_link(&self, token: &str, now: i64) -> StoreResult<Option<Member>> {
        self.main(|c| web::consume_login_link(c, token, now))
    }

    fn login_link_usable(&self, token: &str, now: i64) -> StoreResult<bool> {
        self.main(|c| web::login_link_usable(c, token, now))
    }

    fn create_session(&self, member_id: &str, now: i64) -> StoreResult<(String, String)> {
        self.with(|c| web::create_session(c, member_id, now))
    }

    fn session(&self, token: &str, now: i64) -> StoreResult<Option<Session>> {
        self.main(|c| web::session(c, token, now))
    }

    fn delete_session(&self, token: &str) -> StoreResult<()> {
        self.main(|c| web::delete_session(c, token))
    }

    fn set_password(&self, member_id: &str, hash: &str) -> StoreResult<()> {
        self.main(|c| web::set_password(c, member_id, hash))
    }

    fn password_candidates(&self, email: &str) -> StoreResult<Vec<(String, String)>> {
        self.main(|c| web::password_candidates(c, email))
    }

    fn list_projects(&self, viewer: &Member, q: &ProjectQuery) -> StoreResult<Vec<ProjectRow>> {
        self.main(|c| web::list_projects(c, viewer, q))
    }

    fn project_statuses(
        &self,
        viewer: &Member,
        ids: &[String],
    ) -> StoreResult<Vec<(String, String, i64)>> {
        self.main(|c| web::project_statuses(c, viewer, ids))
    }

    fn folders(&self, viewer: &Member) -> StoreResult<Vec<(String, String)>> {
        self.main(|c| web::folders(c, viewer))
    }

    fn visible_job(&self, viewer: &Member, id: &str) -> StoreResult<Option<JobRow>> {
        self.main(|c| web::visible_job(c, viewer, id))
    }

    fn save_words(&self, e: &WordsEdit<'_>) -> StoreResult<Saved> {
        self.main(|c| web::save_words(c, e, self.pages))
    }

    fn revisions(&self, transcript_id: &str) -> StoreResult<Vec<RevisionRow>> {
        self.main(|c| web::revisions(c, transcript_id))
    }

    fn revision_entries(&self, transcript_id: &str, revision: i64) -> StoreResult<Vec<String>> {
        self.main(|c| web::revision_entries(c, transcript_id, revision))
    }

    fn set_job_settings(&self, job_id: &str, settings: &str, now: i64) -> StoreResult<()> {
        self.main(|c| web::set_job_settings(c, job_id, settings, now))
    }

    fn set_job_lead_in(&self, job_id: &str, frames: u32, now: i64) -> StoreResult<()> {
        self.main(|c| web::set_job_lead_in(c, job_id, frames, now))
    }

    fn set_progress(&self, job_id: &str, p: &JobProgress) -> StoreResult<()> {
        self.main(|c| jobs::set_progress(c, job_id, p))
    }

    fn set_shot_changes(&self, job_id: &str, cuts: &[cuecraft_engine::Millis]) -> StoreResult<()> {
        self.main(|c| jobs::set_shot_changes(c, job_id, cuts))
    }

    fn set_speaker_names(
        &self,
        job_id: &str,
        names: &crate::store::SpeakerNames,
        now: i64,
    ) -> StoreResult<()> {
        self.main(|c| jobs::set_speaker_names(c, job_id, names, now))
    }

    fn progress(&self, job_ids: &[String]) -> StoreResult<Vec<(String, JobProgress)>> {
        self.main(|c| jobs::progress(c, job_ids))
    }

    fn add_translation(
        &self,
        job_id: &str,
        language: &str,
        label: &str,
        words: &str,
        now: i64,
    ) -> StoreResult<String> {
        self.with(|c| web::add_translation(c, job_id, language, label, words, now, self.pages))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(dir.path()).expect("store");
        (dir, store)
    }

    fn enqueue(store: &SqliteStore, n: usize) {
        store
            .main(|c| {
                for i in 0..n {
                    c.execute(
                        "INSERT INTO queue (job_id, task, enqueued_at) VALUES (?1, 'job', 0)",
                        [format!("job{i}")],
                    )?;
                }
                Ok(())
            })
            .expect("enqueue");
    }

    #[test]
    fn the_sqlite_store_keeps_the_speaker_names_contract() {
        let (_dir, s) = store();
        crate::store::contract::speaker_names(&s);
    }

    #[test]
    fn the_sqlite_store_keeps_the_shot_changes_contract() {
        let (_dir, s) = store();
        crate::store::contract::shot_changes(&s);
    }

    #[test]
    fn the_sqlite_store_keeps_the_queue_stats_contract() {
        let (_dir, s) = store();
        crate::store::contract::queue_stats(&s);
    }

    #[test]
    fn charge_settle_refund_are_idempotent_and_net_out() {
        let (_dir, s) = store();
        assert_eq!(s.add_credit("o", 100).ok(), Some(100));
        assert!(s.charge("o", "j", 30).unwrap_or(false));
        assert!(!s.charge("o", "j", 30).unwrap_or(true));
        assert_eq!(s.balance("o").ok(), Some(70));
        s.settle("o", "j", 20).expect("settle");
        s.settle("o", "j", 50).expect("settle again");
        assert_eq!(s.balance("o").ok(), Some(80));
        s.refund("o", "j").expect("refund");
        s.refund("o", "j").expect("refund again");
        assert_eq!(s.balance("o").ok(), Some(100));
    }

    #[test]
    fn eight_threads_claiming_never_get_one_row_twice() {
        let (_dir, s) = store();
        enqueue(&s, 200);
        let s = Arc::new(s);
        let threads: Vec<_> = (0..8)
            .map(|w| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    while let Some(t) = s
                        .claim_task(&format!("w{w}"), 1_000, 60_000)
                        .expect("claim")
                    {
                        got.push(t.seq);
                    }
                    got
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in threads {
            all.extend(t.join().expect("thread"));
        }
        let distinct: HashSet<i64> = all.iter().copied().collect();
        assert_eq!(all.len(), 200, "every row claimed once");
        assert_eq!(distinct.len(), 200, "no row claimed twice");
    }

    #[test]
    fn an_expired_lease_is_claimable_again_and_a_live_one_is_not() {
        let (_dir, s) = store();
        enqueue(&s, 1);
        let first = s
            .claim_task("a", 1_000, 500)
            .expect("claim")
            .expect("a row");
        assert!(s.claim_task("b", 1_400, 500).expect("claim").is_none());
        // A heartbeat keeps it.
        assert!(s.extend_lease(first.seq, "a", 2_000).expect("extend"));
        assert!(s.claim_task("b", 1_900, 500).expect("claim").is_none());
        // Past the lease, another worker takes it; the first one's heartbeat then fails.
        let again = s
            .claim_task("b", 2_001, 500)
            .expect("claim")
            .expect("reclaimed");
        assert_eq!(again.seq, first.seq);
        assert!(!s.extend_lease(first.seq, "a", 3_000).expect("extend"));
        // A released row waits for its retry time; a finished one is gone.
        s.release_task(again.seq, "b", 5_000).expect("release");
        assert!(s.claim_task("c", 4_999, 500).expect("claim").is_none());
        let retried = s.claim_task("c", 5_000, 500).expect("claim").expect("due");
        s.finish_task(retried.seq).expect("finish");
        assert_eq!(s.queue_len().ok(), Some(0));
        assert!(s.claim_task("c", 99_999, 500).expect("claim").is_none());
    }
}
