//! The Postgres store: the same data as the SQLite store in one Postgres database, for
//! deployments with several API and worker processes (`--store postgres://...`).
//!
//! The ledger is the schema `billing` of the same database, reached through its own small pool
//! whose sessions give up on a lock after 300 ms (`lock_timeout`) and on any statement after
//! 5 s: a ledger that is locked or slow answers `billing_unavailable` quickly, as SQLite's
//! separate `billing.sqlite` does, while jobs go on. A separate database was not chosen: it would
//! be a second URL to configure and back up consistently with the first, for no isolation a
//! schema with its own sessions does not give (an operator can still move it by granting the
//! store's role nothing but `billing`).
//!
//! The store is synchronous (called from blocking threads, like rusqlite) with the `postgres`
//! crate, which drives each connection on a small runtime of its own.

mod error;
pub mod ledger;
pub mod migrations;
pub mod pages;
pub mod pool;
pub mod queue;
mod store;
pub mod tls;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::store::{LocalWake, Wake};

pub use error::PgError;
use pool::{Conn, Pool};

/// Connections of the main pool per process.
const MAIN_CONNECTIONS: usize = 16;
/// Connections of the ledger's pool per process.
const BILLING_CONNECTIONS: usize = 4;
/// How long a checkout waits for a connection of a full pool.
const POOL_WAIT: Duration = Duration::from_secs(10);
/// Session settings of the ledger's connections: fail fast when the ledger is locked.
const BILLING_SETUP: &str = "SET lock_timeout = '300ms'; SET statement_timeout = '5s'";

/// The store: a main pool and the ledger's pool on one database.
pub struct PostgresStore {
    main: Arc<Pool>,
    billing: Pool,
    wake: Arc<PgWake>,
    /// How transcripts' words are cut into pages (tests make them small).
    pub(crate) pages: crate::store::pages::Geometry,
}

/// The wake-up of a Postgres store: the process's [`LocalWake`], notified by a thread listening
/// for the `NOTIFY` every enqueue sends in its transaction, whichever process enqueued. The
/// thread (and its connection) starts when a worker first waits, so `admin` and API-only
/// processes hold no listening connection.
pub struct PgWake {
    local: Arc<LocalWake>,
    pool: Arc<Pool>,
    listener: OnceLock<Option<queue::Listener>>,
}

impl PgWake {
    fn listen(&self) {
        self.listener.get_or_init(|| {
            let local = self.local.clone();
            match queue::Listener::start(self.pool.clone(), Arc::new(move || local.notify())) {
                Ok(l) => Some(l),
                Err(e) => {
                    tracing::warn!("no queue listener thread ({e}): workers poll the queue");
                    None
                }
            }
        });
    }
}

impl Wake for PgWake {
    /// The enqueue's own NOTIFY reaches every process (this one through its listener); this
    /// wakes this process's workers at once as well.
    fn notify(&self) {
        self.local.notify();
    }

    fn epoch(&self) -> u64 {
        self.listen();
        self.local.epoch()
    }

    fn wait(&self, seen: u64, timeout: Duration) {
        self.local.wait(seen, timeout);
    }
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user:password@host:port/db?...`, libpq's URL form; a Unix
    /// socket as `?host=/run/postgresql`; TLS by libpq's `sslmode` and `sslrootcert`, see
    /// [`tls`]) and applies the migrations not yet applied.
    pub fn open(url: &str) -> anyhow::Result<PostgresStore> {
        let (mut config, settings) =
            tls::parse_url(url).map_err(|e| anyhow::anyhow!("invalid Postgres URL: {e}"))?;
        let connector = tls::Connector::new(&settings).map_err(|e| anyhow::anyhow!("{e}"))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("cuecraft");
        }
        let main = Pool::new(
            config.clone(),
            connector.clone(),
            "",
            MAIN_CONNECTIONS,
            POOL_WAIT,
        );
        {
            let mut conn = main.get()?;
            migrations::migrate(&mut conn.client)?;
        }
        let billing = Pool::new(
            config,
            connector,
            BILLING_SETUP,
            BILLING_CONNECTIONS,
            POOL_WAIT,
        );
        let main = Arc::new(main);
        Ok(PostgresStore {
            wake: Arc::new(PgWake {
                local: Arc::new(LocalWake::default()),
                pool: main.clone(),
                listener: OnceLock::new(),
            }),
            main,
            billing,
            pages: crate::store::pages::Geometry::DEFAULT,
        })
    }

    /// Runs `f` with a main connection (blocking; call from a blocking thread). A connection an
    /// error may have left in an unknown state is not reused.
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut Conn) -> Result<T, postgres::Error>,
    ) -> Result<T, PgError> {
        run(&self.main, f)
    }

    /// Runs `f` with a ledger connection.
    pub fn with_billing<T>(
        &self,
        f: impl FnOnce(&mut Conn) -> Result<T, postgres::Error>,
    ) -> Result<T, PgError> {
        run(&self.billing, f)
    }

    /// The main pool (the queue's listener makes its own connection from its settings).
    pub fn main_pool(&self) -> Arc<Pool> {
        self.main.clone()
    }

    /// Counts a request of the key with hash `key` against `limit` per rolling minute, shared by
    /// every process on this database: `Ok` when allowed, else `Err(seconds to wait)`.
    pub fn shared_rate_check(&self, key: &str, limit: u32) -> Result<Result<(), u64>, PgError> {
        self.with(|c| {
            let st = c.prepared("SELECT rate_check($1, $2)")?;
            let wait: i64 = c
                .client
                .query_one(&st, &[&key, &i64::from(limit.max(1))])?
                .get(0);
            Ok(if wait <= 0 { Ok(()) } else { Err(wait as u64) })
        })
    }
}

fn run<T>(
    pool: &Pool,
    f: impl FnOnce(&mut Conn) -> Result<T, postgres::Error>,
) -> Result<T, PgError> {
    let mut conn = pool.get()?;
    match f(&mut conn) {
        Ok(v) => Ok(v),
        Err(e) => {
            // A server-side error (constraint, lock timeout) leaves the session usable, and a
            // Transaction rolls itself back when dropped; anything else (I/O, protocol) may not.
            if e.as_db_error().is_none() {
                conn.discard();
            }
            Err(PgError::Db(e))
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
