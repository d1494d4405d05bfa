//! What a failure of Postgres means: the pool's and the driver's errors (`PgError`), and each as
//! the store trait's error (`StoreError`), which every file of the Postgres store returns.

use super::pool::PoolError;
use crate::store::StoreError;

/// What failed in the Postgres store.
#[derive(Debug)]
pub enum PgError {
    /// No connection could be had.
    Pool(PoolError),
    /// A statement failed.
    Db(postgres::Error),
}

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PgError::Pool(e) => e.fmt(f),
            PgError::Db(e) => write!(f, "postgres: {e}"),
        }
    }
}

impl std::error::Error for PgError {}

impl From<postgres::Error> for PgError {
    fn from(e: postgres::Error) -> Self {
        PgError::Db(e)
    }
}

impl From<PoolError> for PgError {
    fn from(e: PoolError) -> Self {
        PgError::Pool(e)
    }
}

impl From<PgError> for StoreError {
    fn from(e: PgError) -> Self {
        match e {
            PgError::Pool(p) => StoreError::Unavailable(p.to_string()),
            PgError::Db(e) => from_pg(e),
        }
    }
}

/// A Postgres error as the trait's error: integrity violations are conflicts; lock and statement
/// timeouts, serialization failures, deadlocks, a server shutting down or refusing connections,
/// and a lost connection are "unavailable" (try again); the rest is a bug.
pub fn from_pg(e: postgres::Error) -> StoreError {
    let Some(db) = e.as_db_error() else {
        return StoreError::Unavailable(e.to_string());
    };
    let code = db.code().code();
    if code.starts_with("23") {
        StoreError::Conflict(e.to_string())
    } else if code.starts_with("08")
        || code.starts_with("53")
        || code.starts_with("57")
        || matches!(code, "55P03" | "40001" | "40P01")
    {
        StoreError::Unavailable(e.to_string())
    } else {
        StoreError::Other(e.to_string())
    }
}
