//! `impl Store for PostgresStore`: every record of the host in Postgres, with the SQLite store's
//! meaning (`store/sqlite`), statement for statement. Where Postgres spells a thing differently:
//! `ON CONFLICT DO NOTHING` for `INSERT OR IGNORE`, `GREATEST` for the two-argument `MAX`,
//! `strpos` for `instr`, and parameters numbered only as they are used (Postgres must know each
//! parameter's type, so the SQLite store's `?3 IS NULL` placeholders are left out). Transitions
//! that make work due send the queue's NOTIFY in their transaction.

use std::sync::Arc;

use postgres::types::ToSql;
use postgres::{GenericClient, Row};

use super::error::from_pg;
use super::pool::Conn;
use super::{ledger, pages, queue, PostgresStore};
use crate::store::{
    is_token, new_token, Caller, CleanSource, Cursor, Formatted, JobProgress, JobRow, KeyClaim,
    Member, MigrationState, NewJob, NewOrgOwner, ProjectQuery, ProjectRow, QueueStats, Recognized,
    RevisionRow, Saved, Session, Sort, Store, StoreError, StoreResult, StoredWords, Task,
    TranscriptInfo, TranscriptRow, Wake, WordsEdit, IDEMPOTENCY_ABANDONED_MS, IDEMPOTENCY_TTL_MS,
    LOGIN_LINK_TTL_MS, SESSION_TTL_MS,
};
use crate::util::{hex, random_bytes, sha256};

/// The stored list of the transcript whose id is `$t` (a column or parameter of the query) as one
/// text: its pages' texts in key order inside `[` `]` (`[]` when it has none), assembled in the
/// statement that reads the transcript, so both are of one snapshot.
macro_rules! words_of {
    ($t:literal) => {
        concat!(
            "'[' || COALESCE((SELECT string_agg(p.words, ',' ORDER BY p.page) FROM word_pages p WHERE p.transcript_id = ",
            $t,
            "), '') || ']'"
        )
    };
}

impl PostgresStore {
    fn main<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T, postgres::Error>) -> StoreResult<T> {
        self.with(f).map_err(StoreError::from)
    }

    /// The ledger: any failure means billing is unavailable.
    fn ledger<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T, postgres::Error>) -> StoreResult<T> {
        self.with_billing(f)
            .map_err(|e| StoreError::Unavailable(format!("ledger: {e}")))
    }

    /// Runs `f` on a main connection where `f` may fail with a `StoreError` of its own.
    fn main_store<T>(&self, f: impl FnOnce(&mut Conn) -> StoreResult<T>) -> StoreResult<T> {
        let mut out = None;
        let r = self.with(|c| {
            out = Some(f(c));
            Ok(())
        });
        r.map_err(StoreError::from)?;
        out.unwrap_or_else(|| Err(StoreError::Other("no result".into())))
    }
}

fn err(e: postgres::Error) -> StoreError {
    from_pg(e)
}

/// One prepared statement on `c`, run: rows.
fn query(
    c: &mut Conn,
    sql: &str,
    args: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, postgres::Error> {
    let st = c.prepared(sql)?;
    c.client.query(&st, args)
}

fn query_opt(
    c: &mut Conn,
    sql: &str,
    args: &[&(dyn ToSql + Sync)],
) -> Result<Option<Row>, postgres::Error> {
    let st = c.prepared(sql)?;
    c.client.query_opt(&st, args)
}

fn execute(c: &mut Conn, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<u64, postgres::Error> {
    let st = c.prepared(sql)?;
    c.client.execute(&st, args)
}

/// Inserts a new job (`uploading`) on a connection or in a transaction.
fn insert_job_in(c: &mut impl GenericClient, j: &NewJob) -> Result<u64, postgres::Error> {
    c.execute(
        "INSERT INTO jobs (id, org_id, owner_member_id, api_key_id, folder_id, preset_id,
            name, filename, content_type, size_bytes, declared_seconds,
            price_cents_per_minute, settings, status, language, upload_expires_at,
            created_at, updated_at, request_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'uploading',
            $14, $15, $16, $16, $17)",
        &[
            &j.id,
            &j.org_id,
            &j.owner_member_id,
            &j.api_key_id,
            &j.folder_id,
            &j.preset_id,
            &pg_text(&j.name),
            &pg_text(&j.filename),
            &j.content_type,
            &j.size_bytes,
            &j.declared_seconds,
            &j.price_cents_per_minute,
            &j.settings,
            &j.language,
            &j.upload_expires_at,
            &j.created_at,
            &j.request_id,
        ],
    )
}

/// Postgres text cannot hold NUL, which SQLite stores and a job's name or file name may carry
/// (the API takes any JSON string). Text a client chose is stored with NUL written as
/// U+FFFE '0' and U+FFFE itself doubled, and read back exactly.
const ESCAPE: char = '\u{FFFE}';

fn pg_text(s: &str) -> String {
    if !s.contains(['\0', ESCAPE]) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 4);
    for ch in s.chars() {
        match ch {
            '\0' => {
                out.push(ESCAPE);
                out.push('0');
            }
            ESCAPE => {
                out.push(ESCAPE);
                out.push(ESCAPE);
            }
            c => out.push(c),
        }
    }
    out
}

fn from_pg_text(s: String) -> String {
    if !s.contains(ESCAPE) {
        return s;
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(ch) = chars.next() {
        if ch != ESCAPE {
            out.push(ch);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('\0'),
            Some(other) => out.push(other),
            None => out.push(ESCAPE),
        }
    }
    out
}

fn frame(v: Option<i64>) -> Option<u32> {
    v.and_then(|n| u32::try_from(n).ok())
}

fn job_from_row(r: &Row) -> JobRow {
    JobRow {
        id: r.get(0),
        org_id: r.get(1),
        name: from_pg_text(r.get(2)),
        filename: from_pg_text(r.get(3)),
        content_type: r.get(4),
        size_bytes: r.get(5),
        declared_seconds: r.get(6),
        measured_seconds: r.get(7),
        price_cents_per_minute: r.get(8),
        settings: r.get(9),
        status: r.get(10),
        error: r.get(11),
        language: r.get(12),
        frame_num: frame(r.get(13)),
        frame_den: frame(r.get(14)),
        upload_expires_at: r.get(15),
        created_at: r.get(16),
        updated_at: r.get(17),
        lead_in_frames: frame(r.get(18)).unwrap_or(0),
        request_id: r.get(19),
        shot_changes: crate::store::decode_shot_changes(r.get(20)),
        speaker_names: crate::store::decode_speaker_names(r.get(21)),
    }
}

fn load_job(c: &mut Conn, id: &str) -> Result<Option<JobRow>, postgres::Error> {
    if id.contains('\0') {
        return Ok(None); // Postgres text cannot hold it, so no id does.
    }
    const SQL: &str =
        "SELECT id, org_id, name, filename, content_type, size_bytes, declared_seconds,
        measured_seconds, price_cents_per_minute, settings, status, error, language, frame_num,
        frame_den, upload_expires_at, created_at, updated_at, lead_in_frames, request_id,
        shot_changes, speaker_names FROM jobs WHERE id = $1";
    Ok(query_opt(c, SQL, &[&id])?.map(|r| job_from_row(&r)))
}

const MEMBER_COLUMNS: &str = "m.id, m.org_id, o.name, m.email, m.role";

fn member_from_row(r: &Row) -> Member {
    Member {
        id: r.get(0),
        org_id: r.get(1),
        org_name: r.get(2),
        email: r.get(3),
        role: r.get(4),
    }
}

fn active_member(c: &mut Conn, member_id: &str) -> Result<Option<Member>, postgres::Error> {
    let sql = format!(
        "SELECT {MEMBER_COLUMNS} FROM members m JOIN orgs o ON o.id = m.org_id
         WHERE m.id = $1 AND m.left_at IS NULL"
    );
    Ok(query_opt(c, &sql, &[&member_id])?.map(|r| member_from_row(&r)))
}

/// Ends every session and unused sign-in link of a member.
fn revoke_member(tx: &mut impl GenericClient, member_id: &str) -> Result<(), postgres::Error> {
    tx.execute("DELETE FROM sessions WHERE member_id = $1", &[&member_id])?;
    tx.execute(
        "DELETE FROM login_links WHERE member_id = $1 AND used_at IS NULL",
        &[&member_id],
    )?;
    Ok(())
}

/// The visibility rule over `j` for member `$2` (owners and admins see everything).
const MEMBER_SEES: &str = "(j.owner_member_id = $2
    OR j.folder_id IN (SELECT folder_id FROM folder_members WHERE member_id = $2))";

fn visible_job(c: &mut Conn, viewer: &Member, id: &str) -> Result<Option<JobRow>, postgres::Error> {
    let Some(job) = load_job(c, id)? else {
        return Ok(None);
    };
    if job.org_id != viewer.org_id {
        return Ok(None);
    }
    if viewer.sees_everything() {
        return Ok(Some(job));
    }
    let sql = format!("SELECT 1 FROM jobs j WHERE j.id = $3 AND j.org_id = $1 AND {MEMBER_SEES}");
    let sees = query_opt(c, &sql, &[&viewer.org_id, &viewer.id, &id])?;
    Ok(sees.map(|_| job))
}

impl Store for PostgresStore {
    fn migrations(&self) -> StoreResult<Vec<MigrationState>> {
        let applied = |schema: &str| {
            let sql = format!("SELECT COALESCE(MAX(version), 0)::BIGINT FROM {schema}.migrations");
            move |c: &mut Conn| -> Result<i64, postgres::Error> {
                Ok(c.client.query_one(&sql, &[])?.get(0))
            }
        };
        let main = self.main(applied("public"))?;
        let billing = self.ledger(applied("billing"))?;
        Ok(vec![
            MigrationState {
                schema: "main",
                applied: main,
                known: super::migrations::MAIN.len() as i64,
            },
            MigrationState {
                schema: "billing",
                applied: billing,
                known: super::migrations::BILLING.len() as i64,
            },
        ])
    }

    fn wake(&self) -> Arc<dyn Wake> {
        self.wake.clone()
    }

    fn rate_check(&self, key: &str, limit: u32) -> Option<StoreResult<Result<(), u64>>> {
        Some(self.shared_rate_check(key, limit).map_err(StoreError::from))
    }

    fn is_empty(&self) -> StoreResult<bool> {
        self.main(|c| {
            let n: i64 = query(c, "SELECT COUNT(*) FROM orgs", &[])?[0].get(0);
            Ok(n == 0)
        })
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
            execute(
                c,
                "INSERT INTO orgs (id, name, max_bytes, max_seconds, created_at) VALUES ($1, $2, $3, $4, $5)",
                &[&id, &name, &max_bytes, &max_seconds, &now],
            )
            .map(|_| ())
        })
    }

    fn create_org_with_owner(&self, n: &NewOrgOwner<'_>) -> StoreResult<()> {
        self.main(|c| {
            let mut tx = c.client.transaction()?;
            tx.execute(
                "INSERT INTO orgs (id, name, max_bytes, max_seconds, created_at) VALUES ($1, $2, $3, $4, $5)",
                &[&n.org_id, &n.org_name, &n.max_bytes, &n.max_seconds, &n.now],
            )?;
            tx.execute(
                "INSERT INTO members (id, org_id, email, role, joined_at) VALUES ($1, $2, $3, 'owner', $4)",
                &[&n.member_id, &n.org_id, &n.email, &n.now],
            )?;
            tx.execute(
                "INSERT INTO api_keys (id, org_id, member_id, key_hash, created_at) VALUES ($1, $2, $3, $4, $5)",
                &[&n.key_id, &n.org_id, &n.member_id, &n.key_hash, &n.now],
            )?;
            tx.commit()
        })
    }

    fn org_exists(&self, org_id: &str) -> StoreResult<bool> {
        self.main(|c| Ok(query_opt(c, "SELECT 1 FROM orgs WHERE id = $1", &[&org_id])?.is_some()))
    }

    fn plan_limits(&self, org_id: &str) -> StoreResult<(i64, f64)> {
        let row = self.main(|c| {
            query_opt(
                c,
                "SELECT max_bytes, max_seconds FROM orgs WHERE id = $1",
                &[&org_id],
            )
        })?;
        row.map(|r| (r.get(0), r.get(1)))
            .ok_or_else(|| StoreError::NotFound(format!("organisation {org_id}")))
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
            execute(
                c,
                "INSERT INTO members (id, org_id, email, role, joined_at) VALUES ($1, $2, $3, $4, $5)",
                &[&id, &org_id, &email, &role, &joined_at],
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
            Ok(query_opt(
                c,
                "SELECT role, left_at FROM members WHERE id = $1 AND org_id = $2",
                &[&member_id, &org_id],
            )?
            .map(|r| (r.get(0), r.get(1))))
        })
    }

    fn remove_member(&self, member_id: &str, now: i64) -> StoreResult<i64> {
        self.main_store(|c| {
            let mut tx = c.client.transaction().map_err(err)?;
            let left: Option<Option<i64>> = tx
                .query_opt(
                    "SELECT left_at FROM members WHERE id = $1 FOR UPDATE",
                    &[&member_id],
                )
                .map_err(err)?
                .map(|r| r.get(0));
            let Some(left) = left else {
                return Err(StoreError::NotFound(format!("member {member_id}")));
            };
            if let Some(left) = left {
                return Ok(left);
            }
            tx.execute(
                "UPDATE members SET left_at = $1 WHERE id = $2",
                &[&now, &member_id],
            )
            .map_err(err)?;
            revoke_member(&mut tx, member_id).map_err(err)?;
            tx.commit().map_err(err)?;
            Ok(now)
        })
    }

    fn active_member(&self, member_id: &str) -> StoreResult<Option<Member>> {
        self.main(|c| active_member(c, member_id))
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
            execute(
                c,
                "INSERT INTO api_keys (id, org_id, member_id, key_hash, created_at) VALUES ($1, $2, $3, $4, $5)",
                &[&id, &org_id, &member_id, &key_hash, &now],
            )
            .map(|_| ())
        })
    }

    fn revoke_key(&self, key_id: &str, now: i64) -> StoreResult<i64> {
        self.main_store(|c| {
            let mut tx = c.client.transaction().map_err(err)?;
            let revoked: Option<Option<i64>> = tx
                .query_opt(
                    "SELECT revoked_at FROM api_keys WHERE id = $1 FOR UPDATE",
                    &[&key_id],
                )
                .map_err(err)?
                .map(|r| r.get(0));
            let Some(revoked) = revoked else {
                return Err(StoreError::NotFound(format!("key {key_id}")));
            };
            if let Some(at) = revoked {
                return Ok(at);
            }
            tx.execute(
                "UPDATE api_keys SET revoked_at = $1 WHERE id = $2",
                &[&now, &key_id],
            )
            .map_err(err)?;
            tx.commit().map_err(err)?;
            Ok(now)
        })
    }

    fn find_key(&self, key_hash: &[u8]) -> StoreResult<Option<Caller>> {
        self.main(|c| {
            let row = query_opt(
                c,
                "SELECT id, org_id, member_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL",
                &[&key_hash],
            )?;
            Ok(row.map(|r| Caller {
                key_id: r.get(0),
                org_id: r.get(1),
                member_id: r.get(2),
            }))
        })
    }

    fn create_folder(&self, id: &str, org_id: &str, name: &str, now: i64) -> StoreResult<()> {
        self.main(|c| {
            execute(
                c,
                "INSERT INTO folders (id, org_id, name, created_at) VALUES ($1, $2, $3, $4)",
                &[&id, &org_id, &name, &now],
            )
            .map(|_| ())
        })
    }

    fn folder_in_org(&self, org_id: &str, folder_id: &str) -> StoreResult<bool> {
        self.main(|c| {
            Ok(query_opt(
                c,
                "SELECT 1 FROM folders WHERE id = $1 AND org_id = $2",
                &[&folder_id, &org_id],
            )?
            .is_some())
        })
    }

    fn folder_shares_org(&self, folder_id: &str, member_id: &str) -> StoreResult<bool> {
        self.main(|c| {
            Ok(query_opt(
                c,
                "SELECT 1 FROM folders f JOIN members m ON m.org_id = f.org_id
                 WHERE f.id = $1 AND m.id = $2 AND m.left_at IS NULL",
                &[&folder_id, &member_id],
            )?
            .is_some())
        })
    }

    fn add_folder_member(&self, folder_id: &str, member_id: &str) -> StoreResult<()> {
        self.main(|c| {
            execute(
                c,
                "INSERT INTO folder_members (folder_id, member_id) VALUES ($1, $2)
                 ON CONFLICT DO NOTHING",
                &[&folder_id, &member_id],
            )
            .map(|_| ())
        })
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
            execute(
                c,
                "INSERT INTO presets (id, org_id, name, settings, created_at) VALUES ($1, $2, $3, $4, $5)",
                &[&id, &org_id, &name, &settings, &now],
            )
            .map(|_| ())
        })
    }

    fn preset_settings(&self, org_id: &str, preset_id: &str) -> StoreResult<Option<String>> {
        self.main(|c| {
            Ok(query_opt(
                c,
                "SELECT settings FROM presets WHERE id = $1 AND org_id = $2",
                &[&preset_id, &org_id],
            )?
            .map(|r| r.get(0)))
        })
    }

    fn set_monthly_quota(&self, bytes: i64) -> StoreResult<()> {
        self.main(|c| {
            execute(
                c,
                "INSERT INTO platform (key, value) VALUES ('monthly_bytes', $1)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&bytes],
            )
            .map(|_| ())
        })
    }

    fn monthly_quota(&self) -> StoreResult<Option<i64>> {
        self.main(|c| {
            Ok(query_opt(
                c,
                "SELECT value FROM platform WHERE key = 'monthly_bytes'",
                &[],
            )?
            .map(|r| r.get(0)))
        })
    }

    fn job_owner(&self, org_id: &str, member_id: &str) -> StoreResult<Option<String>> {
        self.main(|c| {
            if let Some(r) = query_opt(
                c,
                "SELECT id FROM members WHERE id = $1 AND org_id = $2 AND left_at IS NULL",
                &[&member_id, &org_id],
            )? {
                return Ok(Some(r.get(0)));
            }
            Ok(query_opt(
                c,
                "SELECT id FROM members WHERE org_id = $1 AND role = 'owner' AND left_at IS NULL
                 ORDER BY joined_at, id LIMIT 1",
                &[&org_id],
            )?
            .map(|r| r.get(0)))
        })
    }

    fn bytes_this_month(&self, month_start: i64, now: i64) -> StoreResult<i64> {
        self.main(|c| {
            Ok(query(
                c,
                "SELECT COALESCE(SUM(size_bytes), 0)::BIGINT FROM jobs
                 WHERE created_at >= $1 AND (status <> 'uploading' OR upload_expires_at > $2)",
                &[&month_start, &now],
            )?[0]
                .get(0))
        })
    }

    fn insert_job(&self, j: &NewJob) -> StoreResult<()> {
        self.main(|c| insert_job_in(&mut c.client, j).map(|_| ()))
    }

    fn claim_idempotency_key(
        &self,
        org_id: &str,
        key: &str,
        body_hash: &[u8],
        now: i64,
    ) -> StoreResult<KeyClaim> {
        self.main(|c| {
            let mut tx = c.client.transaction()?;
            tx.execute(
                "DELETE FROM idempotency_keys WHERE created_at <= $1",
                &[&(now - IDEMPOTENCY_TTL_MS)],
            )?;
            tx.execute(
                "DELETE FROM idempotency_keys
                 WHERE org_id = $1 AND key = $2 AND response IS NULL AND created_at <= $3",
                &[&org_id, &key, &(now - IDEMPOTENCY_ABANDONED_MS)],
            )?;
            // A concurrent insert of the same key waits here for the first one's commit, then
            // does nothing: the primary key decides.
            let taken = tx.execute(
                "INSERT INTO idempotency_keys (org_id, key, body_hash, created_at)
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                &[&org_id, &key, &body_hash, &now],
            )?;
            let found = if taken == 1 {
                KeyClaim::New
            } else {
                let row = tx.query_one(
                    "SELECT body_hash, response FROM idempotency_keys
                     WHERE org_id = $1 AND key = $2",
                    &[&org_id, &key],
                )?;
                let hash: Vec<u8> = row.get(0);
                match row.get::<_, Option<String>>(1) {
                    _ if hash != body_hash => KeyClaim::Reused,
                    Some(response) => KeyClaim::Replay(response),
                    None => KeyClaim::InFlight,
                }
            };
            tx.commit()?;
            Ok(found)
        })
    }

    fn insert_job_for_key(
        &self,
        job: &NewJob,
        key: &str,
        body_hash: &[u8],
        response: &str,
    ) -> StoreResult<()> {
        let done = self.main(|c| {
            let mut tx = c.client.transaction()?;
            let completed = tx.execute(
                "UPDATE idempotency_keys SET job_id = $1, response = $2
                 WHERE org_id = $3 AND key = $4 AND body_hash = $5 AND response IS NULL",
                &[&job.id, &response, &job.org_id, &key, &body_hash],
            )?;
            if completed != 1 {
                return Ok(false);
            }
            insert_job_in(&mut tx, job)?;
            tx.commit()?;
            Ok(true)
        })?;
        match done {
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
        self.main(|c| {
            execute(
                c,
                "DELETE FROM idempotency_keys
                 WHERE org_id = $1 AND key = $2 AND body_hash = $3 AND response IS NULL",
                &[&org_id, &key, &body_hash],
            )
            .map(|_| ())
        })
    }

    fn job(&self, id: &str) -> StoreResult<Option<JobRow>> {
        self.main(|c| load_job(c, id))
    }

    fn transcripts(&self, job_id: &str) -> StoreResult<Vec<TranscriptRow>> {
        self.main(|c| {
            Ok(query(
                c,
                "SELECT id, language, kind, label, status FROM transcripts WHERE job_id = $1
                 ORDER BY kind <> 'original', seq",
                &[&job_id],
            )?
            .iter()
            .map(|r| TranscriptRow {
                id: r.get(0),
                language: r.get(1),
                kind: r.get(2),
                label: r.get::<_, Option<String>>(3).map(from_pg_text),
                status: r.get(4),
            })
            .collect())
        })
    }

    fn transcript_words(
        &self,
        job_id: &str,
        transcript_id: Option<&str>,
    ) -> StoreResult<Option<StoredWords>> {
        if job_id.contains('\0') || transcript_id.is_some_and(|t| t.contains('\0')) {
            return Ok(None);
        }
        self.main(|c| {
            let row = match transcript_id {
                None => query_opt(
                    c,
                    concat!(
                        "SELECT t.id, t.revision, ",
                        words_of!("t.id"),
                        " FROM transcripts t
                         WHERE t.job_id = $1 AND t.status = 'ready' AND t.kind = 'original'"
                    ),
                    &[&job_id],
                )?,
                Some(t) => query_opt(
                    c,
                    concat!(
                        "SELECT t.id, t.revision, ",
                        words_of!("t.id"),
                        " FROM transcripts t
                         WHERE t.job_id = $1 AND t.status = 'ready' AND t.id = $2"
                    ),
                    &[&job_id, &t],
                )?,
            };
            Ok(row.map(|r| StoredWords {
                transcript_id: r.get(0),
                revision: r.get(1),
                words: r.get(2),
            }))
        })
    }

    fn transcript_head(
        &self,
        job_id: &str,
        transcript_id: Option<&str>,
    ) -> StoreResult<Option<(String, i64)>> {
        if job_id.contains('\0') || transcript_id.is_some_and(|t| t.contains('\0')) {
            return Ok(None);
        }
        self.main(|c| {
            let row = match transcript_id {
                None => query_opt(
                    c,
                    "SELECT id, revision FROM transcripts
                     WHERE job_id = $1 AND status = 'ready' AND kind = 'original'",
                    &[&job_id],
                )?,
                Some(t) => query_opt(
                    c,
                    "SELECT id, revision FROM transcripts
                     WHERE job_id = $1 AND status = 'ready' AND id = $2",
                    &[&job_id, &t],
                )?,
            };
            Ok(row.map(|r| (r.get(0), r.get(1))))
        })
    }

    fn ready_transcripts(&self, job_id: &str) -> StoreResult<Vec<TranscriptInfo>> {
        self.main(|c| {
            Ok(query(
                c,
                "SELECT id, kind, language, label, created_at FROM transcripts
                 WHERE job_id = $1 AND status = 'ready' ORDER BY kind <> 'original', seq",
                &[&job_id],
            )?
            .iter()
            .map(|r| TranscriptInfo {
                id: r.get(0),
                kind: r.get(1),
                language: r.get(2),
                label: r.get::<_, Option<String>>(3).map(from_pg_text),
                created_at: r.get(4),
            })
            .collect())
        })
    }

    fn uploading_jobs(&self) -> StoreResult<Vec<String>> {
        self.main(|c| {
            Ok(
                query(c, "SELECT id FROM jobs WHERE status = 'uploading'", &[])?
                    .iter()
                    .map(|r| r.get(0))
                    .collect(),
            )
        })
    }

    fn start_transcribing(&self, job_id: &str, now: i64) -> StoreResult<bool> {
        self.main(|c| {
            let mut tx = c.client.transaction()?;
            let n = tx.execute(
                "UPDATE jobs SET status = 'transcribing', uploaded_at = $1, updated_at = $1
                 WHERE id = $2 AND status = 'uploading'",
                &[&now, &job_id],
            )?;
            if n == 1 {
                queue::enqueue(&mut tx, job_id, "job", now)?;
            }
            tx.commit()?;
            Ok(n == 1)
        })
    }

    fn store_original(&self, job_id: &str, r: &Recognized, now: i64) -> StoreResult<()> {
        self.main_store(|c| {
            let mut tx = c.client.transaction().map_err(err)?;
            // A transcript an editor has changed (revision > 0) is kept.
            tx.execute(
                "DELETE FROM transcripts WHERE job_id = $1 AND kind = 'original' AND revision = 0",
                &[&job_id],
            )
            .map_err(err)?;
            let added = tx
                .execute(
                    "INSERT INTO transcripts (id, job_id, seq, language, kind, label, status, created_at)
                     VALUES ($1, $2, 1, $3, 'original', NULL, 'ready', $4)
                     ON CONFLICT DO NOTHING",
                    &[&r.transcript_id, &job_id, &r.language, &now],
                )
                .map_err(err)?;
            if added == 1 {
                pages::replace_words(&mut tx, &r.transcript_id, &r.words, self.pages)?;
            }
            tx.execute(
                "UPDATE jobs SET status = 'formatting', language = $1, measured_seconds = $2,
                    frame_num = $3, frame_den = $4, updated_at = $5
                 WHERE id = $6 AND status = 'transcribing'",
                &[
                    &r.language,
                    &r.measured_seconds,
                    &i64::from(r.frame_num),
                    &i64::from(r.frame_den),
                    &now,
                    &job_id,
                ],
            )
            .map_err(err)?;
            tx.commit().map_err(err)
        })
    }

    fn original_words(&self, job_id: &str) -> StoreResult<Option<(String, String)>> {
        self.main(|c| {
            Ok(query_opt(
                c,
                concat!(
                    "SELECT t.language, ",
                    words_of!("t.id"),
                    " FROM transcripts t WHERE t.job_id = $1 AND t.kind = 'original'"
                ),
                &[&job_id],
            )?
            .map(|r| (r.get(0), r.get(1))))
        })
    }

    fn finish_formatting(
        &self,
        job_id: &str,
        f: &Formatted,
        seq: i64,
        now: i64,
    ) -> StoreResult<()> {
        self.main(|c| {
            let mut tx = c.client.transaction()?;
            tx.execute(
                "INSERT INTO transcripts (id, job_id, seq, language, kind, label, status, created_at)
                 VALUES ($1, $2, 2, $3, 'clean', $4, 'pending', $5)
                 ON CONFLICT DO NOTHING",
                &[&f.clean_id, &job_id, &f.language, &f.clean_label, &now],
            )?;
            queue::enqueue(&mut tx, job_id, "clean", now)?;
            tx.execute(
                "UPDATE jobs SET status = 'ready', highlights = $1, chapters = $2, updated_at = $3
                 WHERE id = $4 AND status = 'formatting'",
                &[&f.highlights, &f.chapters, &now, &job_id],
            )?;
            queue::finish(&mut tx, seq)?;
            tx.commit()
        })
    }

    fn clean_source(&self, job_id: &str) -> StoreResult<Option<CleanSource>> {
        self.main(|c| {
            Ok(query_opt(
                c,
                concat!(
                    "SELECT t.id, t.status, o.language, ",
                    words_of!("o.id"),
                    " FROM transcripts t JOIN transcripts o ON o.job_id = t.job_id AND o.kind = 'original'
                     WHERE t.job_id = $1 AND t.kind = 'clean'"
                ),
                &[&job_id],
            )?
            .map(|r| CleanSource {
                transcript_id: r.get(0),
                status: r.get(1),
                language: r.get(2),
                words: r.get(3),
            }))
        })
    }

    fn mark_processing(&self, transcript_id: &str) -> StoreResult<()> {
        self.main(|c| {
            execute(
                c,
                "UPDATE transcripts SET status = 'processing' WHERE id = $1",
                &[&transcript_id],
            )
            .map(|_| ())
        })
    }

    fn finish_clean(&self, transcript_id: &str, words: &str, seq: i64) -> StoreResult<()> {
        self.main_store(|c| {
            let mut tx = c.client.transaction().map_err(err)?;
            let updated = tx
                .execute(
                    "UPDATE transcripts SET status = 'ready' WHERE id = $1",
                    &[&transcript_id],
                )
                .map_err(err)?;
            if updated == 1 {
                pages::replace_words(&mut tx, transcript_id, words, self.pages)?;
            }
            queue::finish(&mut tx, seq).map_err(err)?;
            tx.commit().map_err(err)
        })
    }

    fn fail_clean(&self, job_id: &str, why: &str, seq: i64) -> StoreResult<()> {
        self.main(|c| {
            let mut tx = c.client.transaction()?;
            tx.execute(
                "UPDATE transcripts SET status = 'failed', error = $1
                 WHERE job_id = $2 AND kind = 'clean'",
                &[&why, &job_id],
            )?;
            queue::finish(&mut tx, seq)?;
            tx.commit()
        })
    }

    fn fail_job(&self, job_id: &str, why: &str, seq: i64, now: i64) -> StoreResult<()> {
        self.main(|c| {
            let mut tx = c.client.transaction()?;
            tx.execute(
                "UPDATE jobs SET status = 'failed', error = $1, updated_at = $2
                 WHERE id = $3 AND status IN ('transcribing', 'formatting')",
                &[&why, &now, &job_id],
            )?;
            tx.execute(
                "UPDATE transcripts SET status = 'failed' WHERE job_id = $1 AND status <> 'ready'",
                &[&job_id],
            )?;
            queue::finish(&mut tx, seq)?;
            tx.commit()
        })
    }

    fn requeue_unfinished(&self, now: i64) -> StoreResult<usize> {
        self.main(|c| {
            let mut tx = c.client.transaction()?;
            let a = tx.execute(
                "INSERT INTO queue (job_id, task, enqueued_at)
                 SELECT id, 'job', $1 FROM jobs WHERE status IN ('transcribing', 'formatting')
                 ORDER BY updated_at
                 ON CONFLICT (job_id, task) DO NOTHING",
                &[&now],
            )?;
            let b = tx.execute(
                "INSERT INTO queue (job_id, task, enqueued_at)
                 SELECT job_id, 'clean', $1 FROM transcripts
                 WHERE kind = 'clean' AND status IN ('pending', 'processing')
                 ON CONFLICT (job_id, task) DO NOTHING",
                &[&now],
            )?;
            if a + b > 0 {
                queue::notify(&mut tx)?;
            }
            tx.commit()?;
            Ok((a + b) as usize)
        })
    }

    fn claim_task(&self, worker: &str, now: i64, lease_ms: i64) -> StoreResult<Option<Task>> {
        self.main(|c| queue::claim(c, worker, now, lease_ms))
    }

    fn extend_lease(&self, seq: i64, worker: &str, until: i64) -> StoreResult<bool> {
        self.main(|c| queue::extend(c, seq, worker, until))
    }

    fn release_task(&self, seq: i64, worker: &str, not_before: i64) -> StoreResult<()> {
        self.main(|c| queue::release(c, seq, worker, not_before))
    }

    fn finish_task(&self, seq: i64) -> StoreResult<()> {
        self.main(|c| execute(c, "DELETE FROM queue WHERE seq = $1", &[&seq]).map(|_| ()))
    }

    fn queue_len(&self) -> StoreResult<i64> {
        self.main(queue::len)
    }

    fn queue_stats(&self, now: i64) -> StoreResult<QueueStats> {
        self.main(|c| queue::stats(c, now))
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
        self.main_store(|c| {
            if active_member(c, member_id).map_err(err)?.is_none() {
                return Err(StoreError::NoActiveMember);
            }
            let (token, hash) = new_token()?;
            execute(
                c,
                "INSERT INTO login_links (token_hash, member_id, expires_at) VALUES ($1, $2, $3)",
                &[&hash, &member_id, &(now + LOGIN_LINK_TTL_MS)],
            )
            .map_err(err)?;
            Ok(token)
        })
    }

    fn consume_login_link(&self, token: &str, now: i64) -> StoreResult<Option<Member>> {
        if !is_token(token) {
            return Ok(None);
        }
        self.main(|c| {
            let member = query_opt(
                c,
                "UPDATE login_links SET used_at = $1
                 WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1
                 RETURNING member_id",
                &[&now, &sha256(token.as_bytes())],
            )?;
            match member {
                Some(r) => {
                    let id: String = r.get(0);
                    active_member(c, &id)
                }
                None => Ok(None),
            }
        })
    }

    fn login_link_usable(&self, token: &str, now: i64) -> StoreResult<bool> {
        if !is_token(token) {
            return Ok(false);
        }
        self.main(|c| {
            Ok(query_opt(
                c,
                "SELECT 1 FROM login_links l JOIN members m ON m.id = l.member_id
                 WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > $2
                   AND m.left_at IS NULL",
                &[&sha256(token.as_bytes()), &now],
            )?
            .is_some())
        })
    }

    fn create_session(&self, member_id: &str, now: i64) -> StoreResult<(String, String)> {
        let (token, hash) = new_token()?;
        let csrf = hex(&random_bytes::<32>()?);
        self.main(|c| {
            execute(
                c,
                "INSERT INTO sessions (token_hash, member_id, csrf, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5)",
                &[&hash, &member_id, &csrf, &now, &(now + SESSION_TTL_MS)],
            )
        })?;
        Ok((token, csrf))
    }

    fn session(&self, token: &str, now: i64) -> StoreResult<Option<Session>> {
        if !is_token(token) {
            return Ok(None);
        }
        let sql = format!(
            "SELECT {MEMBER_COLUMNS}, s.csrf FROM sessions s
             JOIN members m ON m.id = s.member_id JOIN orgs o ON o.id = m.org_id
             WHERE s.token_hash = $1 AND s.expires_at > $2 AND m.left_at IS NULL"
        );
        self.main(|c| {
            Ok(
                query_opt(c, &sql, &[&sha256(token.as_bytes()), &now])?.map(|r| Session {
                    member: member_from_row(&r),
                    csrf: r.get(5),
                }),
            )
        })
    }

    fn delete_session(&self, token: &str) -> StoreResult<()> {
        self.main(|c| {
            execute(
                c,
                "DELETE FROM sessions WHERE token_hash = $1",
                &[&sha256(token.as_bytes())],
            )
            .map(|_| ())
        })
    }

    fn set_password(&self, member_id: &str, hash: &str) -> StoreResult<()> {
        self.main(|c| {
            execute(
                c,
                "UPDATE members SET password_hash = $1 WHERE id = $2",
                &[&hash, &member_id],
            )
            .map(|_| ())
        })
    }

    fn password_candidates(&self, email: &str) -> StoreResult<Vec<(String, String)>> {
        if email.contains('\0') {
            // No stored address holds one (Postgres text cannot).
            return Ok(Vec::new());
        }
        self.main(|c| {
            Ok(query(
                c,
                "SELECT id, password_hash FROM members
                 WHERE lower(email) = lower($1) AND left_at IS NULL AND password_hash IS NOT NULL
                 ORDER BY joined_at",
                &[&email],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
        })
    }

    fn list_projects(&self, viewer: &Member, q: &ProjectQuery) -> StoreResult<Vec<ProjectRow>> {
        // Parameters are numbered as they are added: $1 organisation, $2 member, then the
        // filters in use. A member's rows are gathered from the owner and folder indexes first.
        let mut args: Vec<Box<dyn ToSql + Sync>> =
            vec![Box::new(viewer.org_id.clone()), Box::new(viewer.id.clone())];
        let source = if viewer.sees_everything() {
            "jobs j"
        } else {
            "(SELECT * FROM jobs WHERE owner_member_id = $2
              UNION
              SELECT * FROM jobs WHERE folder_id IN
                (SELECT folder_id FROM folder_members WHERE member_id = $2)) j"
        };
        let mut sql = format!(
            "SELECT j.id, j.name, j.status, f.name, COALESCE(j.measured_seconds, j.declared_seconds),
                    j.created_at, j.updated_at
             FROM {source} LEFT JOIN folders f ON f.id = j.folder_id
             WHERE j.org_id = $1 AND $2::TEXT IS NOT NULL"
        );
        if let Some(search) = &q.search {
            args.push(Box::new(pg_text(search)));
            sql.push_str(&format!(
                " AND strpos(lower(j.name), lower(${})) > 0",
                args.len()
            ));
        }
        if let Some(status) = &q.status {
            args.push(Box::new(status.clone()));
            sql.push_str(&format!(" AND j.status = ${}", args.len()));
        }
        if let Some(folder) = &q.folder {
            args.push(Box::new(folder.clone()));
            sql.push_str(&format!(" AND j.folder_id = ${}", args.len()));
        }
        let (key_col, desc) = match q.sort {
            Sort::Created => ("j.created_at", true),
            Sort::Updated => ("j.updated_at", true),
            Sort::Name => ("j.name", false),
        };
        let after: Option<(Box<dyn ToSql + Sync>, String)> = match &q.after {
            Some(Cursor::Time(t, id)) if q.sort != Sort::Name => Some((Box::new(*t), id.clone())),
            Some(Cursor::Name(n, id)) if q.sort == Sort::Name => {
                Some((Box::new(pg_text(n)), id.clone()))
            }
            _ => None,
        };
        if let Some((key, id)) = after {
            args.push(key);
            args.push(Box::new(id));
            let op = if desc { "<" } else { ">" };
            sql.push_str(&format!(
                " AND ({key_col}, j.id) {op} (${}, ${})",
                args.len() - 1,
                args.len()
            ));
        }
        let dir = if desc { "DESC" } else { "ASC" };
        sql.push_str(&format!(
            " ORDER BY {key_col} {dir}, j.id {dir} LIMIT {}",
            q.limit + 1
        ));
        let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a.as_ref()).collect();
        self.main(|c| {
            Ok(query(c, &sql, &refs)?
                .iter()
                .map(|r| ProjectRow {
                    id: r.get(0),
                    name: from_pg_text(r.get(1)),
                    status: r.get(2),
                    folder: r.get(3),
                    duration_seconds: r.get(4),
                    created_at: r.get(5),
                    updated_at: r.get(6),
                })
                .collect())
        })
    }

    fn project_statuses(
        &self,
        viewer: &Member,
        ids: &[String],
    ) -> StoreResult<Vec<(String, String, i64)>> {
        self.main(|c| {
            let mut out = Vec::new();
            for id in ids.iter().take(200) {
                if let Some(job) = visible_job(c, viewer, id)? {
                    out.push((job.id, job.status, job.updated_at));
                }
            }
            Ok(out)
        })
    }

    fn folders(&self, viewer: &Member) -> StoreResult<Vec<(String, String)>> {
        self.main(|c| {
            let rows = if viewer.sees_everything() {
                query(
                    c,
                    "SELECT id, name FROM folders WHERE org_id = $1 ORDER BY name, id",
                    &[&viewer.org_id],
                )?
            } else {
                query(
                    c,
                    "SELECT f.id, f.name FROM folders f JOIN folder_members fm ON fm.folder_id = f.id
                     WHERE f.org_id = $1 AND fm.member_id = $2 ORDER BY f.name, f.id",
                    &[&viewer.org_id, &viewer.id],
                )?
            };
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn visible_job(&self, viewer: &Member, id: &str) -> StoreResult<Option<JobRow>> {
        self.main(|c| visible_job(c, viewer, id))
    }

    fn save_words(&self, e: &WordsEdit<'_>) -> StoreResult<Saved> {
        self.main_store(|c| {
            let mut tx = c.client.transaction().map_err(err)?;
            // FOR UPDATE: two saves of one revision from two processes are serialised here, and
            // the second sees the first's revision (a conflict), as SQLite's write lock gives.
            let current: Option<i64> = tx
                .query_opt(
                    "SELECT revision FROM transcripts WHERE id = $1 AND job_id = $2 FOR UPDATE",
                    &[&e.transcript_id, &e.job_id],
                )
                .map_err(err)?
                .map(|r| r.get(0));
            let Some(revision) = current else {
                return Ok(Saved::Conflict(-1));
            };
            if revision != e.expected {
                return Ok(Saved::Conflict(revision));
            }
            if revision == 0 {
                tx.execute(
                    concat!(
                        "INSERT INTO revisions (transcript_id, revision, words, member_id, note, created_at)
                         SELECT t.id, 0, ",
                        words_of!("t.id"),
                        ", NULL, 'As recognised', $2 FROM transcripts t WHERE t.id = $1
                         ON CONFLICT DO NOTHING"
                    ),
                    &[&e.transcript_id, &e.now],
                )
                .map_err(err)?;
            }
            pages::splice_words(
                &mut tx,
                e.transcript_id,
                (e.from, e.remove, e.insert),
                self.pages,
            )?;
            let next = revision + 1;
            tx.execute(
                "UPDATE transcripts SET revision = $1 WHERE id = $2 AND revision = $3",
                &[&next, &e.transcript_id, &revision],
            )
            .map_err(err)?;
            tx.execute(
                "INSERT INTO revisions (transcript_id, revision, words, member_id, note, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &e.transcript_id,
                    &next,
                    &e.change,
                    &e.member_id,
                    &e.note,
                    &e.now,
                ],
            )
            .map_err(err)?;
            match e.settings {
                Some(settings) => tx.execute(
                    "UPDATE jobs SET settings = $1, updated_at = GREATEST($2, updated_at + 1)
                     WHERE id = $3",
                    &[&settings, &e.now, &e.job_id],
                ),
                None => tx.execute(
                    "UPDATE jobs SET updated_at = GREATEST($1, updated_at + 1) WHERE id = $2",
                    &[&e.now, &e.job_id],
                ),
            }
            .map_err(err)?;
            if let Some(frames) = e.lead_in_frames {
                tx.execute(
                    "UPDATE jobs SET lead_in_frames = $1 WHERE id = $2",
                    &[&i64::from(frames), &e.job_id],
                )
                .map_err(err)?;
            }
            tx.commit().map_err(err)?;
            Ok(Saved::Revision(next))
        })
    }

    fn revisions(&self, transcript_id: &str) -> StoreResult<Vec<RevisionRow>> {
        self.main(|c| {
            Ok(query(
                c,
                "SELECT r.revision, r.note, m.email, r.created_at FROM revisions r
                 LEFT JOIN members m ON m.id = r.member_id
                 WHERE r.transcript_id = $1 ORDER BY r.revision DESC LIMIT 500",
                &[&transcript_id],
            )?
            .iter()
            .map(|r| RevisionRow {
                revision: r.get(0),
                note: r.get(1),
                email: r.get(2),
                created_at: r.get(3),
            })
            .collect())
        })
    }

    fn revision_entries(&self, transcript_id: &str, revision: i64) -> StoreResult<Vec<String>> {
        self.main(|c| {
            let rows: Vec<String> = query(
                c,
                "SELECT words FROM revisions WHERE transcript_id = $1 AND revision <= $2
                 ORDER BY revision",
                &[&transcript_id, &revision],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
            Ok(if rows.len() as i64 == revision + 1 {
                rows
            } else {
                Vec::new()
            })
        })
    }

    fn set_job_settings(&self, job_id: &str, settings: &str, now: i64) -> StoreResult<()> {
        self.main(|c| {
            execute(
                c,
                "UPDATE jobs SET settings = $1, updated_at = GREATEST($2, updated_at + 1) WHERE id = $3",
                &[&settings, &now, &job_id],
            )
            .map(|_| ())
        })
    }

    fn set_progress(&self, job_id: &str, p: &JobProgress) -> StoreResult<()> {
        self.main(|c| {
            execute(
                c,
                "INSERT INTO job_progress (job_id, share, seconds_left, at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (job_id) DO UPDATE SET share = $2, seconds_left = $3, at = $4",
                &[&job_id, &p.share, &p.seconds_left, &p.at],
            )
            .map(|_| ())
        })
    }

    fn set_shot_changes(&self, job_id: &str, cuts: &[cuecraft_engine::Millis]) -> StoreResult<()> {
        let text = crate::store::encode_shot_changes(cuts);
        self.main(|c| {
            execute(
                c,
                "UPDATE jobs SET shot_changes = $1 WHERE id = $2",
                &[&text, &job_id],
            )
            .map(|_| ())
        })
    }

    fn set_speaker_names(
        &self,
        job_id: &str,
        names: &crate::store::SpeakerNames,
        now: i64,
    ) -> StoreResult<()> {
        let text = crate::store::encode_speaker_names(names);
        self.main(|c| {
            execute(
                c,
                "UPDATE jobs SET speaker_names = $1, updated_at = GREATEST($2, updated_at + 1)
                 WHERE id = $3",
                &[&text, &now, &job_id],
            )
            .map(|_| ())
        })
    }

    fn progress(&self, job_ids: &[String]) -> StoreResult<Vec<(String, JobProgress)>> {
        self.main(|c| {
            let mut out = Vec::new();
            for id in job_ids.iter().take(200) {
                let row = query_opt(
                    c,
                    "SELECT share, seconds_left, at FROM job_progress WHERE job_id = $1",
                    &[id],
                )?;
                if let Some(r) = row {
                    out.push((
                        id.clone(),
                        JobProgress {
                            share: r.get(0),
                            seconds_left: r.get(1),
                            at: r.get(2),
                        },
                    ));
                }
            }
            Ok(out)
        })
    }

    fn set_job_lead_in(&self, job_id: &str, frames: u32, now: i64) -> StoreResult<()> {
        self.main(|c| {
            execute(
                c,
                "UPDATE jobs SET lead_in_frames = $1, updated_at = GREATEST($2, updated_at + 1)
                 WHERE id = $3",
                &[&i64::from(frames), &now, &job_id],
            )
            .map(|_| ())
        })
    }

    fn add_translation(
        &self,
        job_id: &str,
        language: &str,
        label: &str,
        words: &str,
        now: i64,
    ) -> StoreResult<String> {
        let id = crate::util::new_id()?;
        self.main_store(|c| {
            let mut tx = c.client.transaction().map_err(err)?;
            // The job's row lock orders two translations added at once (seq stays unique).
            tx.execute("SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE", &[&job_id])
                .map_err(err)?;
            tx.execute(
                "INSERT INTO transcripts (id, job_id, seq, language, kind, label, status, created_at)
                 SELECT $1, $2, COALESCE(MAX(seq), 0) + 1, $3, 'translation', $4, 'ready', $5
                 FROM transcripts WHERE job_id = $2",
                &[&id, &job_id, &language, &pg_text(label), &now],
            )
            .map_err(err)?;
            pages::replace_words(&mut tx, &id, words, self.pages)?;
            tx.execute(
                "UPDATE jobs SET updated_at = GREATEST($1, updated_at + 1) WHERE id = $2",
                &[&now, &job_id],
            )
            .map_err(err)?;
            tx.commit().map_err(err)
        })?;
        Ok(id)
    }
}
