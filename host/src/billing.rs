//! The credit ledger: price, balance, and the idempotent money movements of a job.
//!
//! Every movement is one row; the balance is their sum. A job has at most one row of each kind
//! (`charge` when its upload completes, `settle` after recognition, `refund` when it fails), which
//! the table's UNIQUE (job_id, kind) constraint enforces, so repeating a step after a crash or a
//! retry is harmless.

use rusqlite::{params, Connection, OptionalExtension};

use crate::util::now_ms;

/// What a job of `seconds` costs at `price_cents_per_minute`: ceil(seconds / 60 * price), computed
/// on whole milliseconds so that no float rounding can add a cent.
pub fn required_cents(seconds: f64, price_cents_per_minute: i64) -> i64 {
    if !seconds.is_finite() || seconds <= 0.0 || price_cents_per_minute <= 0 {
        return 0;
    }
    let ms = (seconds * 1000.0).round().min(1e15) as i128;
    let num = ms * price_cents_per_minute as i128;
    ((num + 59_999) / 60_000).min(i64::MAX as i128) as i64
}

/// The organisation's balance in cents.
pub fn balance(conn: &Connection, org_id: &str) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT COALESCE(SUM(amount_cents), 0) FROM ledger WHERE org_id = ?1",
        [org_id],
        |r| r.get(0),
    )
}

/// Adds `cents` of credit (an admin top-up); returns the new balance.
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

/// Charges a job when its transcription starts. Returns whether a row was written (false when the
/// job was charged before).
pub fn charge(conn: &Connection, org_id: &str, job_id: &str, cents: i64) -> rusqlite::Result<bool> {
    let n = conn.execute(
        "INSERT OR IGNORE INTO ledger (org_id, job_id, kind, amount_cents, note, created_at)
         VALUES (?1, ?2, 'charge', ?3, 'transcription started', ?4)",
        params![org_id, job_id, -cents, now_ms()],
    )?;
    Ok(n == 1)
}

/// Settles a job's charge against its measured cost: one row moving the difference (which may be
/// zero), written at most once.
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

/// Refunds everything a failed job was charged (net zero for the job), at most once.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A ledger created by the real migrations in a temporary data directory.
    fn ledger() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().expect("temp dir");
        crate::store::sqlite::SqliteStore::open(dir.path()).expect("store");
        let conn =
            Connection::open(dir.path().join(crate::store::sqlite::BILLING_DB)).expect("ledger");
        (dir, conn)
    }

    #[test]
    fn price_is_rounded_up_to_the_cent() {
        assert_eq!(required_cents(60.0, 10), 10);
        assert_eq!(required_cents(3.0, 10), 1);
        assert_eq!(required_cents(61.0, 10), 11);
        assert_eq!(required_cents(0.001, 10), 1);
        assert_eq!(required_cents(600.0, 7), 70);
        assert_eq!(required_cents(f64::NAN, 10), 0);
    }

    #[test]
    fn charge_settle_refund_are_idempotent_and_net_out() {
        let (_dir, mut c) = ledger();
        add_credit(&mut c, "o", 100).unwrap_or_default();
        assert!(charge(&c, "o", "j", 30).unwrap_or(false));
        assert!(!charge(&c, "o", "j", 30).unwrap_or(true));
        assert_eq!(balance(&c, "o").ok(), Some(70));
        settle(&mut c, "o", "j", 20).unwrap_or_default();
        settle(&mut c, "o", "j", 50).unwrap_or_default();
        assert_eq!(balance(&c, "o").ok(), Some(80));
        refund(&mut c, "o", "j").unwrap_or_default();
        refund(&mut c, "o", "j").unwrap_or_default();
        assert_eq!(balance(&c, "o").ok(), Some(100));
    }
}
