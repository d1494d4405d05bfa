//! The ledger on Postgres (schema `billing`): the same idempotent money movements as the SQLite
//! ledger, each one statement, so a movement is written at most once even when two processes
//! race on it (the UNIQUE (job_id, kind) constraint decides, `ON CONFLICT DO NOTHING`).

use super::pool::Conn;

/// The organisation's balance in cents.
pub fn balance(conn: &mut Conn, org_id: &str) -> Result<i64, postgres::Error> {
    let st = conn.prepared(
        "SELECT COALESCE(SUM(amount_cents), 0)::BIGINT FROM billing.ledger WHERE org_id = $1",
    )?;
    Ok(conn.client.query_one(&st, &[&org_id])?.get(0))
}

/// Adds `cents` of credit; returns the new balance.
pub fn add_credit(conn: &mut Conn, org_id: &str, cents: i64) -> Result<i64, postgres::Error> {
    let st = conn.prepared(
        "WITH added AS (
             INSERT INTO billing.ledger (org_id, job_id, kind, amount_cents, note, created_at)
             VALUES ($1, NULL, 'credit', $2, 'credits added', $3) RETURNING amount_cents)
         SELECT (COALESCE((SELECT SUM(amount_cents) FROM billing.ledger WHERE org_id = $1), 0)
                 + (SELECT amount_cents FROM added))::BIGINT",
    )?;
    Ok(conn
        .client
        .query_one(&st, &[&org_id, &cents, &crate::util::now_ms()])?
        .get(0))
}

/// Charges a job `cents`; false when it was charged before.
pub fn charge(
    conn: &mut Conn,
    org_id: &str,
    job_id: &str,
    cents: i64,
) -> Result<bool, postgres::Error> {
    let st = conn.prepared(
        "INSERT INTO billing.ledger (org_id, job_id, kind, amount_cents, note, created_at)
         VALUES ($1, $2, 'charge', $3, 'transcription started', $4)
         ON CONFLICT (job_id, kind) DO NOTHING",
    )?;
    let n = conn
        .client
        .execute(&st, &[&org_id, &job_id, &-cents, &crate::util::now_ms()])?;
    Ok(n == 1)
}

/// Settles a job's charge against its measured cost: one row moving the difference, at most once.
pub fn settle(
    conn: &mut Conn,
    org_id: &str,
    job_id: &str,
    measured_cents: i64,
) -> Result<(), postgres::Error> {
    let st = conn.prepared(
        "INSERT INTO billing.ledger (org_id, job_id, kind, amount_cents, note, created_at)
         SELECT $1, $2, 'settle', -COALESCE(SUM(amount_cents), 0)::BIGINT - $3,
                'settled on measured duration', $4
         FROM billing.ledger WHERE job_id = $2 AND kind = 'charge'
         ON CONFLICT (job_id, kind) DO NOTHING",
    )?;
    conn.client.execute(
        &st,
        &[&org_id, &job_id, &measured_cents, &crate::util::now_ms()],
    )?;
    Ok(())
}

/// Refunds everything a failed job was charged (net zero for the job), at most once.
pub fn refund(conn: &mut Conn, org_id: &str, job_id: &str) -> Result<(), postgres::Error> {
    let st = conn.prepared(
        "INSERT INTO billing.ledger (org_id, job_id, kind, amount_cents, note, created_at)
         SELECT $1, $2, 'refund', -COALESCE(SUM(amount_cents), 0)::BIGINT, 'job failed', $3
         FROM billing.ledger WHERE job_id = $2 AND kind <> 'refund'
         ON CONFLICT (job_id, kind) DO NOTHING",
    )?;
    conn.client
        .execute(&st, &[&org_id, &job_id, &crate::util::now_ms()])?;
    Ok(())
}

/// A job's ledger rows as (kind, amount_cents), oldest first.
pub fn rows(conn: &mut Conn, job_id: &str) -> Result<Vec<(String, i64)>, postgres::Error> {
    let st = conn
        .prepared("SELECT kind, amount_cents FROM billing.ledger WHERE job_id = $1 ORDER BY id")?;
    Ok(conn
        .client
        .query(&st, &[&job_id])?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
}
