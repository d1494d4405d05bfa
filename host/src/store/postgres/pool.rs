//! A small pool of Postgres connections, each with its own prepared statements.
//!
//! Hand-kept rather than r2d2_postgres or deadpool: the store is synchronous and runs on blocking
//! threads, as the SQLite store does with the same `Mutex<Vec<_>>` shape. A checkout costs no
//! round trip (r2d2 tests each connection with a query by default), and no background thread is
//! started. A connection the server closed (`is_closed`) is dropped instead of being returned,
//! and the number of open connections is bounded: a checkout beyond it waits for one to be
//! returned, so N API processes and M workers stay within the server's `max_connections`.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use postgres::{Client, Config, Statement};

use super::tls::Connector;

/// A connection and the statements prepared on it.
pub struct Conn {
    /// The client.
    pub client: Client,
    statements: HashMap<String, Statement>,
}

impl Conn {
    /// `sql` prepared on this connection once, then reused (one round trip saved per use).
    pub fn prepared(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        // Bounded: the project list builds its SQL from the filters used (a few dozen shapes).
        if self.statements.len() < 256 {
            self.statements.insert(sql.to_string(), s.clone());
        }
        Ok(s)
    }
}

struct State {
    idle: Vec<Conn>,
    open: usize,
}

/// The pool.
pub struct Pool {
    config: Config,
    /// TLS of every connection (the URL's sslmode, `super::tls`).
    tls: Connector,
    /// SQL run on every new connection (session settings).
    setup: &'static str,
    max: usize,
    wait: Duration,
    state: Mutex<State>,
    returned: Condvar,
}

/// Why no connection could be had.
#[derive(Debug)]
pub enum PoolError {
    /// Connecting (or the session setup) failed.
    Connect(postgres::Error),
    /// Every connection stayed in use for the whole wait.
    Exhausted,
}

impl std::fmt::Display for PoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PoolError::Connect(e) => write!(f, "connecting to Postgres: {e}"),
            PoolError::Exhausted => write!(f, "every Postgres connection of the pool is in use"),
        }
    }
}

impl std::error::Error for PoolError {}

impl Pool {
    /// A pool of at most `max` connections made from `config` through `tls`, each set up with
    /// `setup`.
    pub fn new(
        config: Config,
        tls: Connector,
        setup: &'static str,
        max: usize,
        wait: Duration,
    ) -> Pool {
        Pool {
            config,
            tls,
            setup,
            max: max.max(1),
            wait,
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
            }),
            returned: Condvar::new(),
        }
    }

    /// A new connection outside the pool (the queue's listener).
    pub fn connect(&self) -> Result<Client, postgres::Error> {
        let mut client = self.config.connect(self.tls.clone())?;
        if !self.setup.is_empty() {
            client.batch_execute(self.setup)?;
        }
        Ok(client)
    }

    /// A connection: an idle one, a new one while fewer than `max` are open, else the first one
    /// returned within the wait.
    pub fn get(&self) -> Result<Pooled<'_>, PoolError> {
        let deadline = std::time::Instant::now() + self.wait;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            while let Some(conn) = state.idle.pop() {
                if conn.client.is_closed() {
                    state.open -= 1;
                    continue;
                }
                return Ok(Pooled {
                    pool: self,
                    conn: Some(conn),
                });
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                return match self.connect() {
                    Ok(client) => Ok(Pooled {
                        pool: self,
                        conn: Some(Conn {
                            client,
                            statements: HashMap::new(),
                        }),
                    }),
                    Err(e) => {
                        self.forget();
                        Err(PoolError::Connect(e))
                    }
                };
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(PoolError::Exhausted);
            }
            state = self
                .returned
                .wait_timeout(state, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// A connection that will not come back was closed: make room for a new one.
    fn forget(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.open = state.open.saturating_sub(1);
        drop(state);
        self.returned.notify_one();
    }

    fn put(&self, conn: Conn) {
        if conn.client.is_closed() {
            self.forget();
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.idle.push(conn);
        drop(state);
        self.returned.notify_one();
    }
}

/// A checked-out connection, returned to the pool when dropped.
pub struct Pooled<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
}

impl Pooled<'_> {
    /// Drops the connection instead of returning it (after an error that may have left it in an
    /// unknown state).
    pub fn discard(mut self) {
        if self.conn.take().is_some() {
            self.pool.forget();
        }
    }
}

impl Deref for Pooled<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.put(conn);
        }
    }
}
