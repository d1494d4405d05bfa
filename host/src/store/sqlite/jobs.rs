//! SQLite: API keys, jobs, transcripts, the pipeline's transitions and the work queue.

use rusqlite::{params, Connection, OptionalExtension};

use super::pages;
use crate::store::pages::Geometry;
use crate::store::{
    Caller, CleanSource, Formatted, JobProgress, JobRow, NewJob, QueueStats, Recognized, Task,
    TranscriptRow,
};

const JOB_COLUMNS: &str = "id, org_id, name, filename, content_type, size_bytes, declared_seconds,
    measured_seconds, price_cents_per_minute, settings, status, error, language, frame_num,
    frame_den, upload_expires_at, created_at, updated_at, lead_in_frames, request_id,
    shot_changes, speaker_names";

fn job_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<JobRow> {
    Ok(JobRow {
        id: r.get(0)?,
        org_id: r.get(1)?,
        name: r.get(2)?,
        filename: r.get(3)?,
        content_type: r.get(4)?,
        size_bytes: r.get(5)?,
        declared_seconds: r.get(6)?,
        measured_seconds: r.get(7)?,
        price_cents_per_minute: r.get(8)?,
        settings: r.get(9)?,
        status: r.get(10)?,
        error: r.get(11)?,
        language: r.get(12)?,
        frame_num: r.get(13)?,
        frame_den: r.get(14)?,
        upload_expires_at: r.get(15)?,
        created_at: r.get(16)?,
        updated_at: r.get(17)?,
        lead_in_frames: r.get(18)?,
        request_id: r.get(19)?,
        shot_changes: crate::store::decode_shot_changes(r.get(20)?),
        speaker_names: crate::store::decode_speaker_names(r.get(21)?),
    })
}

/// Loads a job by id, whatever its organisation.
pub fn load_job(c: &Connection, id: &str) -> rusqlite::Result<Option<JobRow>> {
    c.prepare_cached(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"))?
        .query_row([id], job_from_row)
        .optional()
}

/// The job's transcripts: the original first, then the others oldest first.
pub fn load_transcripts(c: &Connection, job_id: &str) -> rusqlite::Result<Vec<TranscriptRow>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, language, kind, label, status FROM transcripts WHERE job_id = ?1
         ORDER BY kind != 'original', seq",
    )?;
    let rows = stmt.query_map([job_id], |r| {
        Ok(TranscriptRow {
            id: r.get(0)?,
            language: r.get(1)?,
            kind: r.get(2)?,
            label: r.get(3)?,
            status: r.get(4)?,
        })
    })?;
    rows.collect()
}

/// The caller of a key hash; `None` when unknown or revoked.
pub fn find_key(c: &Connection, key_hash: &[u8]) -> rusqlite::Result<Option<Caller>> {
    let row: Option<(String, String, String, Option<i64>)> = c
        .prepare_cached(
            "SELECT id, org_id, member_id, revoked_at FROM api_keys WHERE key_hash = ?1",
        )?
        .query_row([key_hash], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?;
    Ok(match row {
        Some((key_id, org_id, member_id, None)) => Some(Caller {
            key_id,
            org_id,
            member_id,
        }),
        _ => None,
    })
}

pub fn job_owner(
    c: &Connection,
    org_id: &str,
    member_id: &str,
) -> rusqlite::Result<Option<String>> {
    let creator: Option<String> = c
        .query_row(
            "SELECT id FROM members WHERE id = ?1 AND org_id = ?2 AND left_at IS NULL",
            [member_id, org_id],
            |r| r.get(0),
        )
        .optional()?;
    if creator.is_some() {
        return Ok(creator);
    }
    c.query_row(
        "SELECT id FROM members WHERE org_id = ?1 AND role = 'owner' AND left_at IS NULL
         ORDER BY joined_at, id LIMIT 1",
        [org_id],
        |r| r.get(0),
    )
    .optional()
}

pub fn bytes_this_month(c: &Connection, month_start: i64, now: i64) -> rusqlite::Result<i64> {
    c.query_row(
        "SELECT COALESCE(SUM(size_bytes), 0) FROM jobs
         WHERE created_at >= ?1 AND (status != 'uploading' OR upload_expires_at > ?2)",
        params![month_start, now],
        |r| r.get(0),
    )
}

pub fn insert_job(c: &Connection, j: &NewJob) -> rusqlite::Result<()> {
    c.execute(
        "INSERT INTO jobs (id, org_id, owner_member_id, api_key_id, folder_id, preset_id,
            name, filename, content_type, size_bytes, declared_seconds,
            price_cents_per_minute, settings, status, language, upload_expires_at,
            created_at, updated_at, request_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 'uploading',
            ?14, ?15, ?16, ?16, ?17)",
        params![
            j.id,
            j.org_id,
            j.owner_member_id,
            j.api_key_id,
            j.folder_id,
            j.preset_id,
            j.name,
            j.filename,
            j.content_type,
            j.size_bytes,
            j.declared_seconds,
            j.price_cents_per_minute,
            j.settings,
            j.language,
            j.upload_expires_at,
            j.created_at,
            j.request_id,
        ],
    )?;
    Ok(())
}

pub fn uploading_jobs(c: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = c.prepare("SELECT id FROM jobs WHERE status = 'uploading'")?;
    let ids = stmt.query_map([], |r| r.get::<_, String>(0))?;
    ids.collect()
}

pub fn start_transcribing(c: &mut Connection, job_id: &str, now: i64) -> rusqlite::Result<bool> {
    let tx = c.transaction()?;
    let n = tx.execute(
        "UPDATE jobs SET status = 'transcribing', uploaded_at = ?1, updated_at = ?1
         WHERE id = ?2 AND status = 'uploading'",
        params![now, job_id],
    )?;
    if n == 1 {
        tx.execute(
            "INSERT OR IGNORE INTO queue (job_id, task, enqueued_at) VALUES (?1, 'job', ?2)",
            params![job_id, now],
        )?;
    }
    tx.commit()?;
    Ok(n == 1)
}

pub fn store_original(
    c: &mut Connection,
    job_id: &str,
    r: &Recognized,
    now: i64,
    g: Geometry,
) -> rusqlite::Result<()> {
    let tx = c.transaction()?;
    // A transcript an editor has changed (revision > 0) is kept: a re-run of recognition never
    // overwrites human edits.
    tx.execute(
        "DELETE FROM transcripts WHERE job_id = ?1 AND kind = 'original' AND revision = 0",
        [job_id],
    )?;
    let added = tx.execute(
        "INSERT OR IGNORE INTO transcripts (id, job_id, seq, language, kind, label, status, created_at)
         VALUES (?1, ?2, 1, ?3, 'original', NULL, 'ready', ?4)",
        params![r.transcript_id, job_id, r.language, now],
    )?;
    if added == 1 {
        pages::replace_words(&tx, &r.transcript_id, &r.words, g)?;
    }
    tx.execute(
        "UPDATE jobs SET status = 'formatting', language = ?1, measured_seconds = ?2,
            frame_num = ?3, frame_den = ?4, updated_at = ?5
         WHERE id = ?6 AND status = 'transcribing'",
        params![
            r.language,
            r.measured_seconds,
            r.frame_num,
            r.frame_den,
            now,
            job_id
        ],
    )?;
    tx.commit()
}

pub fn original_words(c: &Connection, job_id: &str) -> rusqlite::Result<Option<(String, String)>> {
    // One read transaction: the transcript and its pages of one moment.
    let tx = c.unchecked_transaction()?;
    let found: Option<(String, String)> = tx
        .query_row(
            "SELECT id, language FROM transcripts WHERE job_id = ?1 AND kind = 'original'",
            [job_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((id, language)) = found else {
        return Ok(None);
    };
    let words = pages::read_words(&tx, &id)?;
    tx.commit()?;
    Ok(Some((language, words)))
}

pub fn finish_formatting(
    c: &mut Connection,
    job_id: &str,
    f: &Formatted,
    seq: i64,
    now: i64,
) -> rusqlite::Result<()> {
    let tx = c.transaction()?;
    tx.execute(
        "INSERT OR IGNORE INTO transcripts (id, job_id, seq, language, kind, label, status, created_at)
         VALUES (?1, ?2, 2, ?3, 'clean', ?4, 'pending', ?5)",
        params![f.clean_id, job_id, f.language, f.clean_label, now],
    )?;
    tx.execute(
        "INSERT OR IGNORE INTO queue (job_id, task, enqueued_at) VALUES (?1, 'clean', ?2)",
        params![job_id, now],
    )?;
    tx.execute(
        "UPDATE jobs SET status = 'ready', highlights = ?1, chapters = ?2, updated_at = ?3
         WHERE id = ?4 AND status = 'formatting'",
        params![f.highlights, f.chapters, now, job_id],
    )?;
    tx.execute("DELETE FROM queue WHERE seq = ?1", [seq])?;
    tx.commit()
}

pub fn clean_source(c: &Connection, job_id: &str) -> rusqlite::Result<Option<CleanSource>> {
    let tx = c.unchecked_transaction()?;
    let found = tx
        .query_row(
            "SELECT t.id, t.status, o.language, o.id
             FROM transcripts t JOIN transcripts o ON o.job_id = t.job_id AND o.kind = 'original'
             WHERE t.job_id = ?1 AND t.kind = 'clean'",
            [job_id],
            |r| {
                Ok((
                    CleanSource {
                        transcript_id: r.get(0)?,
                        status: r.get(1)?,
                        language: r.get(2)?,
                        words: String::new(),
                    },
                    r.get::<_, String>(3)?,
                ))
            },
        )
        .optional()?;
    let Some((mut source, original)) = found else {
        return Ok(None);
    };
    source.words = pages::read_words(&tx, &original)?;
    tx.commit()?;
    Ok(Some(source))
}

pub fn finish_clean(
    c: &mut Connection,
    transcript_id: &str,
    words: &str,
    seq: i64,
    g: Geometry,
) -> rusqlite::Result<()> {
    let tx = c.transaction()?;
    let updated = tx.execute(
        "UPDATE transcripts SET status = 'ready' WHERE id = ?1",
        [transcript_id],
    )?;
    if updated == 1 {
        pages::replace_words(&tx, transcript_id, words, g)?;
    }
    tx.execute("DELETE FROM queue WHERE seq = ?1", [seq])?;
    tx.commit()
}

pub fn fail_clean(c: &mut Connection, job_id: &str, why: &str, seq: i64) -> rusqlite::Result<()> {
    let tx = c.transaction()?;
    tx.execute(
        "UPDATE transcripts SET status = 'failed', error = ?1
         WHERE job_id = ?2 AND kind = 'clean'",
        params![why, job_id],
    )?;
    tx.execute("DELETE FROM queue WHERE seq = ?1", [seq])?;
    tx.commit()
}

pub fn fail_job(
    c: &mut Connection,
    job_id: &str,
    why: &str,
    seq: i64,
    now: i64,
) -> rusqlite::Result<()> {
    let tx = c.transaction()?;
    tx.execute(
        "UPDATE jobs SET status = 'failed', error = ?1, updated_at = ?2
         WHERE id = ?3 AND status IN ('transcribing', 'formatting')",
        params![why, now, job_id],
    )?;
    tx.execute(
        "UPDATE transcripts SET status = 'failed' WHERE job_id = ?1 AND status != 'ready'",
        [job_id],
    )?;
    tx.execute("DELETE FROM queue WHERE seq = ?1", [seq])?;
    tx.commit()
}

pub fn requeue_unfinished(c: &mut Connection, now: i64) -> rusqlite::Result<usize> {
    let tx = c.transaction()?;
    let a = tx.execute(
        "INSERT OR IGNORE INTO queue (job_id, task, enqueued_at)
         SELECT id, 'job', ?1 FROM jobs WHERE status IN ('transcribing', 'formatting')
         ORDER BY updated_at",
        [now],
    )?;
    let b = tx.execute(
        "INSERT OR IGNORE INTO queue (job_id, task, enqueued_at)
         SELECT job_id, 'clean', ?1 FROM transcripts
         WHERE kind = 'clean' AND status IN ('pending', 'processing')",
        [now],
    )?;
    tx.commit()?;
    Ok(a + b)
}

/// One UPDATE picks and leases the row: SQLite runs it under the database's write lock, so two
/// connections (threads or processes) never both match the same row.
pub fn claim_task(
    c: &Connection,
    worker: &str,
    now: i64,
    lease_ms: i64,
) -> rusqlite::Result<Option<Task>> {
    c.prepare_cached(
        "UPDATE queue SET worker = ?1, lease_until = ?2, attempts = attempts + 1
         WHERE seq = (SELECT seq FROM queue WHERE lease_until IS NULL OR lease_until <= ?3
                      ORDER BY seq LIMIT 1)
         RETURNING seq, job_id, task",
    )?
    .query_row(params![worker, now.saturating_add(lease_ms), now], |r| {
        Ok(Task {
            seq: r.get(0)?,
            job_id: r.get(1)?,
            kind: r.get(2)?,
        })
    })
    .optional()
}

pub fn extend_lease(c: &Connection, seq: i64, worker: &str, until: i64) -> rusqlite::Result<bool> {
    let n = c
        .prepare_cached("UPDATE queue SET lease_until = ?1 WHERE seq = ?2 AND worker = ?3")?
        .execute(params![until, seq, worker])?;
    Ok(n == 1)
}

/// [`crate::store::Store::queue_stats`]: a row waits when no worker holds it or its lease ran out.
pub fn queue_stats(c: &Connection, now: i64) -> rusqlite::Result<QueueStats> {
    c.prepare_cached(
        "SELECT COUNT(*) FILTER (WHERE worker IS NULL OR lease_until <= ?1),
                COUNT(*) FILTER (WHERE worker IS NOT NULL AND lease_until > ?1),
                MIN(enqueued_at) FILTER (WHERE worker IS NULL OR lease_until <= ?1)
         FROM queue",
    )?
    .query_row(params![now], |r| {
        Ok(QueueStats {
            waiting: r.get(0)?,
            running: r.get(1)?,
            oldest_waiting_at: r.get(2)?,
        })
    })
}

pub fn release_task(
    c: &Connection,
    seq: i64,
    worker: &str,
    not_before: i64,
) -> rusqlite::Result<()> {
    c.prepare_cached(
        "UPDATE queue SET worker = NULL, lease_until = ?1 WHERE seq = ?2 AND worker = ?3",
    )?
    .execute(params![not_before, seq, worker])?;
    Ok(())
}

/// Sets a job's shot changes.
pub fn set_shot_changes(
    c: &Connection,
    job_id: &str,
    cuts: &[cuecraft_engine::Millis],
) -> rusqlite::Result<()> {
    c.execute(
        "UPDATE jobs SET shot_changes = ?1 WHERE id = ?2",
        params![crate::store::encode_shot_changes(cuts), job_id],
    )?;
    Ok(())
}

/// Replaces a job's speaker names, `updated_at` moved on.
pub fn set_speaker_names(
    c: &Connection,
    job_id: &str,
    names: &crate::store::SpeakerNames,
    now: i64,
) -> rusqlite::Result<()> {
    c.execute(
        "UPDATE jobs SET speaker_names = ?1, updated_at = MAX(?2, updated_at + 1) WHERE id = ?3",
        params![crate::store::encode_speaker_names(names), now, job_id],
    )?;
    Ok(())
}

/// Replaces a job's progress row.
pub fn set_progress(c: &Connection, job_id: &str, p: &JobProgress) -> rusqlite::Result<()> {
    c.execute(
        "INSERT INTO job_progress (job_id, share, seconds_left, at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (job_id) DO UPDATE SET share = ?2, seconds_left = ?3, at = ?4",
        params![job_id, p.share, p.seconds_left, p.at],
    )?;
    Ok(())
}

/// The progress rows of `job_ids` (200 at most).
pub fn progress(
    c: &Connection,
    job_ids: &[String],
) -> rusqlite::Result<Vec<(String, JobProgress)>> {
    let mut stmt =
        c.prepare_cached("SELECT share, seconds_left, at FROM job_progress WHERE job_id = ?1")?;
    let mut out = Vec::new();
    for id in job_ids.iter().take(200) {
        let row = stmt
            .query_row(params![id], |r| {
                Ok(JobProgress {
                    share: r.get(0)?,
                    seconds_left: r.get(1)?,
                    at: r.get(2)?,
                })
            })
            .optional()?;
        if let Some(p) = row {
            out.push((id.clone(), p));
        }
    }
    Ok(out)
}
