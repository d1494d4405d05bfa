//! SQLite: the credit ledger (`billing.sqlite`). Every movement is one row; the balance is their
//! sum; UNIQUE (job_id, kind) makes every job's movement happen at most once.

use rusqlite::{params, Connection, OptionalExtension};

use crate::util::now_ms;

pub fn balance(conn: &Connection, org_id: &str) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT COALESCE(SUM(amount_cents), 0) FROM ledger WHERE org_id = ?1",
        [org_id],
        |r| r.get(0),
    )
}

pub fn add_credit(conn: &mut Connection, org_id: &str, cents: i64) -> rusqlite::Result<i64> {
    let tx = conn.transaction()?;
    tx.execute(
        "INSERT INTO ledger (org_id, job_id, kind, amount_cents, note, created_at)
         VALUES (?1, NULL, 'credit', ?2, 'credits added', ?3)",
        params![org_id, cents, now_ms()],
    )?;
    let b = balance(&tx, org_id)?;
    tx.commit()?;
    Ok(b)
}

pub fn charge(conn: &Connection, org_id: &str, job_id: &str, cents: i64) -> rusqlite::Result<bool> {
    let n = conn.execute(
        "INSERT OR IGNORE INTO ledger (org_id, job_id, kind, amount_cents, note, created_at)
         VALUES (?1, ?2, 'charge', ?3, 'transcription started', ?4)",
        params![org_id, job_id, -cents, now_ms()],
    )?;
    Ok(n == 1)
}

pub fn settle(
    conn: &mut Connection,
    org_id: &str,
    job_id: &str,
    measured_cents: i64,
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    let exists: Option<i64> = tx
        .query_row(
            "SELECT id FROM ledger WHERE job_id = ?1 AND kind = 'settle'",
            [job_id],
            |r| r.get(0),
        )
        .optional()?;
    if exists.is_none() {
        let charged: i64 = tx.query_row(
            "SELECT COALESCE(SUM(amount_cents), 0) FROM ledger WHERE job_id = ?1 AND kind = 'charge'",
            [job_id],
            |r| r.get(0),
        )?;
        // charged is negative: -charged is what was taken.
        let delta = -charged - measured_cents;
        tx.execute(
            "INSERT INTO ledger (org_id, job_id, kind, amount_cents, note, created_at)
             VALUES (?1, ?2, 'settle', ?3, 'settled on measured duration', ?4)",
            params![org_id, job_id, delta, now_ms()],
        )?;
    }
    tx.commit()
}

pub fn refund(conn: &mut Connection, org_id: &str, job_id: &str) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    let net: i64 = tx.query_row(
        "SELECT COALESCE(SUM(amount_cents), 0) FROM ledger WHERE job_id = ?1 AND kind != 'refund'",
        [job_id],
        |r| r.get(0),
    )?;
    tx.execute(
        "INSERT OR IGNORE INTO ledger (org_id, job_id, kind, amount_cents, note, created_at)
         VALUES (?1, ?2, 'refund', ?3, 'job failed', ?4)",
        params![org_id, job_id, -net, now_ms()],
    )?;
    tx.commit()
}
