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
    use std::sync::{Arc, Barrier};

    use crate::store::sqlite::SqliteStore;
    use crate::store::{KeyClaim, NewJob, NewOrgOwner, Store, StoreError, IDEMPOTENCY_TTL_MS};

    fn store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(dir.path()).expect("store");
        store
            .create_org_with_owner(&NewOrgOwner {
                org_id: "o",
                org_name: "Org",
                max_bytes: 1 << 30,
                max_seconds: 36000.0,
                member_id: "m",
                email: "m@example.com",
                key_id: "k",
                key_hash: b"hash",
                now: 0,
            })
            .expect("org");
        (dir, store)
    }

    fn job(id: &str) -> NewJob {
        NewJob {
            id: id.into(),
            org_id: "o".into(),
            owner_member_id: "m".into(),
            api_key_id: "k".into(),
            folder_id: None,
            preset_id: None,
            name: "n".into(),
            filename: "n.wav".into(),
            content_type: "audio/wav".into(),
            size_bytes: 10,
            declared_seconds: 1.0,
            price_cents_per_minute: 1,
            settings: "{}".into(),
            language: "en".into(),
            upload_expires_at: 0,
            created_at: 0,
        }
    }

    #[test]
    fn a_key_is_new_in_flight_replayed_or_reused() {
        let (_dir, s) = store();
        let claim = |hash: &[u8], now| s.claim_idempotency_key("o", "key", hash, now).ok();
        assert_eq!(claim(b"a", 1000), Some(KeyClaim::New));
        assert_eq!(claim(b"a", 1001), Some(KeyClaim::InFlight));
        assert_eq!(claim(b"b", 1002), Some(KeyClaim::Reused));
        s.insert_job_for_key(&job("j1"), "key", b"a", "{\"id\":\"j1\"}")
            .expect("insert");
        assert!(s.job("j1").ok().flatten().is_some());
        assert_eq!(
            claim(b"a", 1003),
            Some(KeyClaim::Replay("{\"id\":\"j1\"}".into()))
        );
        assert_eq!(claim(b"b", 1004), Some(KeyClaim::Reused));
        // Another organisation's key of the same name is its own.
        assert_eq!(
            s.claim_idempotency_key("o2", "key", b"b", 1005).ok(),
            Some(KeyClaim::New)
        );
        // A day later the key is free again.
        assert_eq!(claim(b"b", 1000 + IDEMPOTENCY_TTL_MS), Some(KeyClaim::New));
    }

    #[test]
    fn a_failed_or_abandoned_claim_frees_the_key() {
        let (_dir, s) = store();
        let claim = |now| s.claim_idempotency_key("o", "key", b"a", now).ok();
        assert_eq!(claim(0), Some(KeyClaim::New));
        s.release_idempotency_key("o", "key", b"a")
            .expect("release");
        assert_eq!(claim(10), Some(KeyClaim::New));
        assert_eq!(claim(20), Some(KeyClaim::InFlight));
        // Its request died: after a minute without a response the key is taken afresh, and the
        // first request can no longer complete it.
        assert_eq!(claim(70_000), Some(KeyClaim::New));
        s.insert_job_for_key(&job("j2"), "key", b"a", "second")
            .expect("the new claim completes");
        assert!(matches!(
            s.insert_job_for_key(&job("j3"), "key", b"a", "first"),
            Err(StoreError::Conflict(_))
        ));
        assert!(s.job("j3").ok().flatten().is_none(), "nothing half-written");
    }

    #[test]
    fn of_concurrent_claims_exactly_one_is_new() {
        let (_dir, s) = store();
        let s = Arc::new(s);
        let barrier = Arc::new(Barrier::new(16));
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let (s, barrier) = (s.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    s.claim_idempotency_key("o", "race", b"a", 5).ok()
                })
            })
            .collect();
        let claims: Vec<_> = handles.into_iter().filter_map(|h| h.join().ok()).collect();
        assert_eq!(claims.len(), 16);
        let new = claims.iter().filter(|c| **c == Some(KeyClaim::New)).count();
        let in_flight = claims
            .iter()
            .filter(|c| **c == Some(KeyClaim::InFlight))
            .count();
        assert_eq!((new, in_flight), (1, 15), "{claims:?}");
    }
}
