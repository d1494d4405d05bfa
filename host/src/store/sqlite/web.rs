//! The SQL the web application needs: members and their sign-in (one-time links, passwords,
//! sessions), the project list, and the transcript's words with their revision history. Handlers
//! call these functions; no SQL is written in `web`.

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::jobs::load_job;
use super::pages;
use crate::store::pages::Geometry;
use crate::store::{
    is_token, new_token, Cursor, JobRow, Member, ProjectQuery, ProjectRow, RevisionRow, Saved,
    Session, Sort, StoreError, StoredWords, TranscriptInfo, WordsEdit, LOGIN_LINK_TTL_MS,
    SESSION_TTL_MS,
};
use crate::util::{hex, random_bytes, sha256};

fn member_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Member> {
    Ok(Member {
        id: r.get(0)?,
        org_id: r.get(1)?,
        org_name: r.get(2)?,
        email: r.get(3)?,
        role: r.get(4)?,
    })
}

const MEMBER_COLUMNS: &str = "m.id, m.org_id, o.name, m.email, m.role";

/// An active member by id.
pub fn active_member(c: &Connection, member_id: &str) -> rusqlite::Result<Option<Member>> {
    c.prepare_cached(&format!(
        "SELECT {MEMBER_COLUMNS} FROM members m JOIN orgs o ON o.id = m.org_id
         WHERE m.id = ?1 AND m.left_at IS NULL"
    ))?
    .query_row([member_id], member_from_row)
    .optional()
}

/// Creates a one-time sign-in link token for an active member, valid for 15 minutes.
pub fn create_login_link(c: &Connection, member_id: &str, now: i64) -> Result<String, StoreError> {
    if active_member(c, member_id)?.is_none() {
        return Err(StoreError::NoActiveMember);
    }
    let (token, hash) = new_token()?;
    c.execute(
        "INSERT INTO login_links (token_hash, member_id, expires_at) VALUES (?1, ?2, ?3)",
        params![hash, member_id, now + LOGIN_LINK_TTL_MS],
    )?;
    Ok(token)
}

/// Uses up a sign-in link: its active member when the link exists, is unused and unexpired.
/// One statement marks it used, so two concurrent uses cannot both succeed.
pub fn consume_login_link(
    c: &Connection,
    token: &str,
    now: i64,
) -> rusqlite::Result<Option<Member>> {
    if !is_token(token) {
        return Ok(None);
    }
    let member: Option<String> = c
        .prepare_cached(
            "UPDATE login_links SET used_at = ?1
             WHERE token_hash = ?2 AND used_at IS NULL AND expires_at > ?1
             RETURNING member_id",
        )?
        .query_row(params![now, sha256(token.as_bytes())], |r| r.get(0))
        .optional()?;
    match member {
        Some(id) => active_member(c, &id),
        None => Ok(None),
    }
}

/// Whether a sign-in link is still usable (for the confirmation page; using it is separate).
pub fn login_link_usable(c: &Connection, token: &str, now: i64) -> rusqlite::Result<bool> {
    if !is_token(token) {
        return Ok(false);
    }
    let found: Option<i64> = c
        .prepare_cached(
            "SELECT 1 FROM login_links l JOIN members m ON m.id = l.member_id
             WHERE l.token_hash = ?1 AND l.used_at IS NULL AND l.expires_at > ?2
               AND m.left_at IS NULL",
        )?
        .query_row(params![sha256(token.as_bytes()), now], |r| r.get(0))
        .optional()?;
    Ok(found.is_some())
}

/// Starts a session: (cookie token, CSRF token).
pub fn create_session(
    c: &Connection,
    member_id: &str,
    now: i64,
) -> Result<(String, String), StoreError> {
    let (token, hash) = new_token()?;
    let csrf = hex(&random_bytes::<32>()?);
    c.execute(
        "INSERT INTO sessions (token_hash, member_id, csrf, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![hash, member_id, csrf, now, now + SESSION_TTL_MS],
    )?;
    Ok((token, csrf))
}

/// The live session of a cookie token: unexpired, and its member still active (a member who left
/// is refused at once, whatever sessions remain).
pub fn session(c: &Connection, token: &str, now: i64) -> rusqlite::Result<Option<Session>> {
    if !is_token(token) {
        return Ok(None);
    }
    c.prepare_cached(&format!(
        "SELECT {MEMBER_COLUMNS}, s.csrf FROM sessions s
         JOIN members m ON m.id = s.member_id JOIN orgs o ON o.id = m.org_id
         WHERE s.token_hash = ?1 AND s.expires_at > ?2 AND m.left_at IS NULL"
    ))?
    .query_row(params![sha256(token.as_bytes()), now], |r| {
        Ok(Session {
            member: member_from_row(r)?,
            csrf: r.get(5)?,
        })
    })
    .optional()
}

/// Ends a session (sign-out).
pub fn delete_session(c: &Connection, token: &str) -> rusqlite::Result<()> {
    c.execute(
        "DELETE FROM sessions WHERE token_hash = ?1",
        [sha256(token.as_bytes())],
    )?;
    Ok(())
}

/// Ends every session and unused sign-in link of a member (when the member leaves).
pub fn revoke_member(c: &Connection, member_id: &str) -> rusqlite::Result<usize> {
    let n = c.execute("DELETE FROM sessions WHERE member_id = ?1", [member_id])?;
    c.execute(
        "DELETE FROM login_links WHERE member_id = ?1 AND used_at IS NULL",
        [member_id],
    )?;
    Ok(n)
}

/// Stores a member's password hash.
pub fn set_password(c: &Connection, member_id: &str, hash: &str) -> rusqlite::Result<()> {
    c.execute(
        "UPDATE members SET password_hash = ?1 WHERE id = ?2",
        params![hash, member_id],
    )?;
    Ok(())
}

/// Active members with this e-mail address (any organisation) and a password: (id, hash).
pub fn password_candidates(c: &Connection, email: &str) -> rusqlite::Result<Vec<(String, String)>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, password_hash FROM members
         WHERE lower(email) = lower(?1) AND left_at IS NULL AND password_hash IS NOT NULL
         ORDER BY joined_at",
    )?;
    let rows = stmt.query_map([email], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// Adds a member to a folder (both of the same organisation; checked by the caller).
pub fn add_folder_member(c: &Connection, folder_id: &str, member_id: &str) -> rusqlite::Result<()> {
    c.execute(
        "INSERT OR IGNORE INTO folder_members (folder_id, member_id) VALUES (?1, ?2)",
        params![folder_id, member_id],
    )?;
    Ok(())
}

/// Whether the organisation store holds no organisation yet (a fresh data directory).
pub fn is_empty(c: &Connection) -> rusqlite::Result<bool> {
    let n: i64 = c.query_row("SELECT COUNT(*) FROM orgs", [], |r| r.get(0))?;
    Ok(n == 0)
}

// ---------------------------------------------------------------------------------------------
// The project list.

/// The visibility rule, as SQL over `j` with `?1` = organisation and `?2` = member: the job's
/// owner (the key's creator, or the longest-standing owner when the creator had left), the
/// members of the job's folder, and the organisation's owners and admins (who see everything, so
/// the rule is left out for them).
const MEMBER_SEES: &str = "(j.owner_member_id = ?2
    OR j.folder_id IN (SELECT folder_id FROM folder_members WHERE member_id = ?2))";

/// One page of the projects `viewer` may see, `limit` + 1 rows at most (the extra row tells the
/// caller that another page follows). Keyset pagination over the (org, key, id) indexes, so a page
/// deep into 100,000 projects costs what the first one does.
pub fn list_projects(
    c: &Connection,
    viewer: &Member,
    q: &ProjectQuery,
) -> rusqlite::Result<Vec<ProjectRow>> {
    // Owners and admins read the organisation's (org, key, id) index in order; a member's rows
    // are gathered from the owner and folder indexes first (what they may see, usually far
    // fewer), then ordered. The indexes are named: with statistics from ANALYZE on an
    // organisation where one owner holds most jobs, SQLite would otherwise scan the table.
    let source = if viewer.sees_everything() {
        "jobs j"
    } else {
        "(SELECT * FROM jobs INDEXED BY jobs_owner_created WHERE owner_member_id = ?2
          UNION
          SELECT * FROM jobs INDEXED BY jobs_folder WHERE folder_id IN
            (SELECT folder_id FROM folder_members WHERE member_id = ?2)) j"
    };
    let mut sql = format!(
        "SELECT j.id, j.name, j.status, f.name, COALESCE(j.measured_seconds, j.declared_seconds),
                j.created_at, j.updated_at
         FROM {source} LEFT JOIN folders f ON f.id = j.folder_id
         WHERE j.org_id = ?1 AND ?2 IS NOT NULL"
    );
    if q.search.is_some() {
        sql.push_str(" AND instr(lower(j.name), lower(?3)) > 0");
    } else {
        sql.push_str(" AND ?3 IS NULL");
    }
    if q.status.is_some() {
        sql.push_str(" AND j.status = ?4");
    } else {
        sql.push_str(" AND ?4 IS NULL");
    }
    if q.folder.is_some() {
        sql.push_str(" AND j.folder_id = ?5");
    } else {
        sql.push_str(" AND ?5 IS NULL");
    }
    let (key_col, desc) = match q.sort {
        Sort::Created => ("j.created_at", true),
        Sort::Updated => ("j.updated_at", true),
        Sort::Name => ("j.name", false),
    };
    let (after_key, after_id): (rusqlite::types::Value, Option<String>) = match &q.after {
        Some(Cursor::Time(t, id)) if q.sort != Sort::Name => ((*t).into(), Some(id.clone())),
        Some(Cursor::Name(n, id)) if q.sort == Sort::Name => (n.clone().into(), Some(id.clone())),
        _ => (rusqlite::types::Value::Null, None),
    };
    if after_id.is_some() {
        let op = if desc { "<" } else { ">" };
        sql.push_str(&format!(" AND ({key_col}, j.id) {op} (?6, ?7)"));
    } else {
        sql.push_str(" AND ?6 IS NULL AND ?7 IS NULL");
    }
    let dir = if desc { "DESC" } else { "ASC" };
    sql.push_str(&format!(
        " ORDER BY {key_col} {dir}, j.id {dir} LIMIT {}",
        q.limit + 1
    ));
    let mut stmt = c.prepare_cached(&sql)?;
    let rows = stmt.query_map(
        params![
            viewer.org_id,
            viewer.id,
            q.search,
            q.status,
            q.folder,
            after_key,
            after_id
        ],
        |r| {
            Ok(ProjectRow {
                id: r.get(0)?,
                name: r.get(1)?,
                status: r.get(2)?,
                folder: r.get(3)?,
                duration_seconds: r.get(4)?,
                created_at: r.get(5)?,
                updated_at: r.get(6)?,
            })
        },
    )?;
    rows.collect()
}

/// The statuses of the listed jobs `viewer` may see: (id, status, updated_at).
pub fn project_statuses(
    c: &Connection,
    viewer: &Member,
    ids: &[String],
) -> rusqlite::Result<Vec<(String, String, i64)>> {
    let mut out = Vec::new();
    for id in ids.iter().take(200) {
        if let Some(job) = visible_job(c, viewer, id)? {
            out.push((job.id, job.status, job.updated_at));
        }
    }
    Ok(out)
}

/// The folders of the organisation `viewer` may filter by: all for owners and admins, their own
/// folders for members. (id, name), by name.
pub fn folders(c: &Connection, viewer: &Member) -> rusqlite::Result<Vec<(String, String)>> {
    let sql = if viewer.sees_everything() {
        "SELECT id, name FROM folders WHERE org_id = ?1 AND ?2 IS NOT NULL ORDER BY name, id"
    } else {
        "SELECT f.id, f.name FROM folders f JOIN folder_members fm ON fm.folder_id = f.id
         WHERE f.org_id = ?1 AND fm.member_id = ?2 ORDER BY f.name, f.id"
    };
    let mut stmt = c.prepare_cached(sql)?;
    let rows = stmt.query_map(params![viewer.org_id, viewer.id], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    rows.collect()
}

/// The job when `viewer` may see it; `None` for another organisation's job or one the member has
/// no access to (both answer 404).
pub fn visible_job(c: &Connection, viewer: &Member, id: &str) -> rusqlite::Result<Option<JobRow>> {
    let Some(job) = load_job(c, id)? else {
        return Ok(None);
    };
    if job.org_id != viewer.org_id {
        return Ok(None);
    }
    if viewer.sees_everything() {
        return Ok(Some(job));
    }
    let sees: Option<i64> = c
        .prepare_cached(&format!(
            "SELECT 1 FROM jobs j WHERE j.id = ?3 AND j.org_id = ?1 AND {MEMBER_SEES}"
        ))?
        .query_row(params![viewer.org_id, viewer.id, id], |r| r.get(0))
        .optional()?;
    Ok(sees.map(|_| job))
}

// ---------------------------------------------------------------------------------------------
// Transcript words and revisions.

/// The words and revision of a job's transcript (the original when `transcript_id` is `None`), if
/// it is ready: read in one transaction, so the words are those of the revision.
pub fn transcript_words(
    c: &Connection,
    job_id: &str,
    transcript_id: Option<&str>,
) -> rusqlite::Result<Option<StoredWords>> {
    let tx = c.unchecked_transaction()?;
    let Some((id, revision)) = transcript_head(&tx, job_id, transcript_id)? else {
        return Ok(None);
    };
    let words = pages::read_words(&tx, &id)?;
    tx.commit()?;
    Ok(Some(StoredWords {
        transcript_id: id,
        revision,
        words,
    }))
}

/// The id and revision of a job's ready transcript (the original when `transcript_id` is `None`),
/// without its words.
pub fn transcript_head(
    c: &Connection,
    job_id: &str,
    transcript_id: Option<&str>,
) -> rusqlite::Result<Option<(String, i64)>> {
    let sql = "SELECT id, revision FROM transcripts
               WHERE job_id = ?1 AND status = 'ready'
                 AND ((?2 IS NULL AND kind = 'original') OR id = ?2)";
    c.prepare_cached(sql)?
        .query_row(params![job_id, transcript_id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()
}

/// Stores an edit of a transcript at `expected` revision: one transaction bumps the revision
/// (compare-and-swap), splices the words (only the pages they are in), appends `change` to the
/// revision history (the words as recognised are recorded whole as revision 0 before the first
/// edit; later entries hold what changed), stores the new settings when the edit has them, and
/// moves the job's `updatedAt` forward (by at least one millisecond, so every edit shows in it).
pub fn save_words(c: &mut Connection, e: &WordsEdit<'_>, g: Geometry) -> rusqlite::Result<Saved> {
    // IMMEDIATE: the write lock from the start, so two saves queue on the busy timeout instead of
    // the second failing when its read turns into a write.
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let current: Option<i64> = tx
        .query_row(
            "SELECT revision FROM transcripts WHERE id = ?1 AND job_id = ?2",
            params![e.transcript_id, e.job_id],
            |r| r.get(0),
        )
        .optional()?;
    let Some(revision) = current else {
        return Ok(Saved::Conflict(-1));
    };
    if revision != e.expected {
        return Ok(Saved::Conflict(revision));
    }
    if revision == 0 {
        let recognised = pages::read_words(&tx, e.transcript_id)?;
        tx.execute(
            "INSERT OR IGNORE INTO revisions (transcript_id, revision, words, member_id, note, created_at)
             VALUES (?1, 0, ?2, NULL, 'As recognised', ?3)",
            params![e.transcript_id, recognised, e.now],
        )?;
    }
    pages::splice_words(&tx, e.transcript_id, (e.from, e.remove, e.insert), g)?;
    let next = revision + 1;
    tx.execute(
        "UPDATE transcripts SET revision = ?1 WHERE id = ?2 AND revision = ?3",
        params![next, e.transcript_id, revision],
    )?;
    tx.execute(
        "INSERT INTO revisions (transcript_id, revision, words, member_id, note, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![e.transcript_id, next, e.change, e.member_id, e.note, e.now],
    )?;
    match e.settings {
        Some(settings) => tx.execute(
            "UPDATE jobs SET settings = ?1, updated_at = MAX(?2, updated_at + 1) WHERE id = ?3",
            params![settings, e.now, e.job_id],
        )?,
        None => tx.execute(
            "UPDATE jobs SET updated_at = MAX(?1, updated_at + 1) WHERE id = ?2",
            params![e.now, e.job_id],
        )?,
    };
    if let Some(frames) = e.lead_in_frames {
        tx.execute(
            "UPDATE jobs SET lead_in_frames = ?1 WHERE id = ?2",
            params![frames, e.job_id],
        )?;
    }
    tx.commit()?;
    Ok(Saved::Revision(next))
}

/// The revision history of a transcript, newest first.
pub fn revisions(c: &Connection, transcript_id: &str) -> rusqlite::Result<Vec<RevisionRow>> {
    let mut stmt = c.prepare_cached(
        "SELECT r.revision, r.note, m.email, r.created_at FROM revisions r
         LEFT JOIN members m ON m.id = r.member_id
         WHERE r.transcript_id = ?1 ORDER BY r.revision DESC LIMIT 500",
    )?;
    let rows = stmt.query_map([transcript_id], |r| {
        Ok(RevisionRow {
            revision: r.get(0)?,
            note: r.get(1)?,
            email: r.get(2)?,
            created_at: r.get(3)?,
        })
    })?;
    rows.collect()
}

/// The history entries of revisions 0 to `revision`, in order (revision 0 holds the words as
/// recognised, each later one the change it made); empty when `revision` is not in the history.
pub fn revision_entries(
    c: &Connection,
    transcript_id: &str,
    revision: i64,
) -> rusqlite::Result<Vec<String>> {
    let mut stmt = c.prepare_cached(
        "SELECT words FROM revisions WHERE transcript_id = ?1 AND revision <= ?2 ORDER BY revision",
    )?;
    let rows = stmt.query_map(params![transcript_id, revision], |r| r.get(0))?;
    let rows: Vec<String> = rows.collect::<rusqlite::Result<_>>()?;
    Ok(if rows.len() as i64 == revision + 1 {
        rows
    } else {
        Vec::new()
    })
}

/// The ready transcripts of a job, the original first.
pub fn ready_transcripts(c: &Connection, job_id: &str) -> rusqlite::Result<Vec<TranscriptInfo>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, kind, language, label, created_at FROM transcripts
         WHERE job_id = ?1 AND status = 'ready' ORDER BY kind != 'original', seq",
    )?;
    let rows = stmt.query_map([job_id], |r| {
        Ok(TranscriptInfo {
            id: r.get(0)?,
            kind: r.get(1)?,
            language: r.get(2)?,
            label: r.get(3)?,
            created_at: r.get(4)?,
        })
    })?;
    rows.collect()
}

/// Replaces a job's stored settings (already validated and layered) and moves its `updatedAt`
/// forward: the cues, derived on every read, follow at once.
pub fn set_job_settings(
    c: &Connection,
    job_id: &str,
    settings: &str,
    now: i64,
) -> rusqlite::Result<()> {
    c.execute(
        "UPDATE jobs SET settings = ?1, updated_at = MAX(?2, updated_at + 1) WHERE id = ?3",
        params![settings, now, job_id],
    )?;
    Ok(())
}

/// Sets a job's lead-in in frames and moves its `updatedAt` forward.
pub fn set_job_lead_in(
    c: &Connection,
    job_id: &str,
    frames: u32,
    now: i64,
) -> rusqlite::Result<()> {
    c.execute(
        "UPDATE jobs SET lead_in_frames = ?1, updated_at = MAX(?2, updated_at + 1) WHERE id = ?3",
        params![frames, now, job_id],
    )?;
    Ok(())
}

/// Adds a ready `translation` transcript to a job (after its other transcripts); its id.
pub fn add_translation(
    c: &mut Connection,
    job_id: &str,
    language: &str,
    label: &str,
    words: &str,
    now: i64,
    g: Geometry,
) -> Result<String, StoreError> {
    let id = crate::util::new_id()?;
    let tx = c.transaction()?;
    tx.execute(
        "INSERT INTO transcripts (id, job_id, seq, language, kind, label, status, created_at)
         SELECT ?1, ?2, COALESCE(MAX(seq), 0) + 1, ?3, 'translation', ?4, 'ready', ?5
         FROM transcripts WHERE job_id = ?2",
        params![id, job_id, language, label, now],
    )?;
    pages::replace_words(&tx, &id, words, g)?;
    tx.execute(
        "UPDATE jobs SET updated_at = MAX(?1, updated_at + 1) WHERE id = ?2",
        params![now, job_id],
    )?;
    tx.commit()?;
    Ok(id)
}
