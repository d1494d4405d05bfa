//! `Idempotency-Key` claims of `POST /jobs` (table `idempotency_keys`, migration 5).
//!
//! A claim and its completion are two short transactions around the job's creation: the claim
//! takes the key (one row per organisation and key, the primary key decides between concurrent
//! claims), the completion inserts the job and writes the first response into the row together.

use rusqlite::{params, Connection, TransactionBehavior};

use crate::store::{KeyClaim, NewJob, IDEMPOTENCY_ABANDONED_MS, IDEMPOTENCY_TTL_MS};

pub fn claim(
    c: &mut Connection,
    org_id: &str,
    key: &str,
    body_hash: &[u8],
    now: i64,
) -> rusqlite::Result<KeyClaim> {
    // IMMEDIATE: the write lock is taken before the first read, so two processes cannot both
    // find the key free.
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "DELETE FROM idempotency_keys WHERE created_at <= ?1",
        [now - IDEMPOTENCY_TTL_MS],
    )?;
    tx.execute(
        "DELETE FROM idempotency_keys
         WHERE org_id = ?1 AND key = ?2 AND response IS NULL AND created_at <= ?3",
        params![org_id, key, now - IDEMPOTENCY_ABANDONED_MS],
    )?;
    let taken = tx.execute(
        "INSERT OR IGNORE INTO idempotency_keys (org_id, key, body_hash, created_at)
         VALUES (?1, ?2, ?3, ?4)",
        params![org_id, key, body_hash, now],
    )?;
    let found = if taken == 1 {
        KeyClaim::New
    } else {
        let (hash, response): (Vec<u8>, Option<String>) = tx.query_row(
            "SELECT body_hash, response FROM idempotency_keys WHERE org_id = ?1 AND key = ?2",
            params![org_id, key],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        match response {
            _ if hash != body_hash => KeyClaim::Reused,
            Some(response) => KeyClaim::Replay(response),
            None => KeyClaim::InFlight,
        }
    };
    tx.commit()?;
    Ok(found)
}

/// Inserts the job and completes the claim; `Ok(false)` (nothing written) when the claim is gone.
pub fn insert_job_for_key(
    c: &mut Connection,
    job: &NewJob,
    key: &str,
    body_hash: &[u8],
    response: &str,
) -> rusqlite::Result<bool> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let completed = tx.execute(
        "UPDATE idempotency_keys SET job_id = ?1, response = ?2
         WHERE org_id = ?3 AND key = ?4 AND body_hash = ?5 AND response IS NULL",
        params![job.id, response, job.org_id, key, body_hash],
    )?;
    if completed != 1 {
        return Ok(false);
    }
    super::jobs::insert_job(&tx, job)?;
    tx.commit()?;
    Ok(true)
}

pub fn release(c: &Connection, org_id: &str, key: &str, body_hash: &[u8]) -> rusqlite::Result<()> {
    c.execute(
        "DELETE FROM idempotency_keys
         WHERE org_id = ?1 AND key = ?2 AND body_hash = ?3 AND response IS NULL",
        params![org_id, key, body_hash],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::store::sqlite::SqliteStore;

    #[test]
    fn the_sqlite_store_keeps_the_idempotency_contract() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(dir.path()).expect("store");
        crate::store::contract::idempotency(&store);
    }
}
