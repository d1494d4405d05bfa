//! The job pipeline: a pool of worker threads driven by the persisted queue table.
//!
//! Statuses: uploading -> transcribing -> formatting -> ready, or failed with `error`. Each step
//! is idempotent, so a worker killed at any moment (kill -9 included) simply repeats its step
//! after the restart:
//!
//! - transcribing: charge (INSERT OR IGNORE, normally already written at upload) -> probe ->
//!   extract 16 kHz mono WAV -> recognize -> customVocabulary -> settle against the measured
//!   duration (one ledger row, at most once) -> one transaction storing the original transcript
//!   and moving the job to `formatting`;
//! - formatting: layout and, when asked, highlights and chapters -> one transaction storing them,
//!   adding the pending clean version with its own queue row, and moving the job to `ready`;
//! - clean: the clean version (filler words removed) of the original, `ready`, or `failed` when
//!   nothing is left once the fillers are gone.
//!
//! A failure refunds the job in full (one ledger row, net zero) before the job is marked failed.
//! When the ledger is unavailable the step is retried later rather than failed.

pub mod recognizers;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use cuecraft_engine::analysis::{chapters, highlights};
use cuecraft_engine::text::{apply_vocabulary, clean_words};
use cuecraft_engine::{layout, words_from_raw, FrameRate, PartialSettings, Settings};
use rusqlite::{params, OptionalExtension};
use serde_json::{json, Value};

use crate::api::jobs::{load_job, JobRow};
use crate::api::uploads::media_path;
use crate::pipeline::recognizers::Recognizer;
use crate::store::sqlite::SqliteStore;
use crate::util::{new_id, now_ms};
use crate::words::{encode, seconds};

/// How many highlights a job keeps.
const HIGHLIGHTS: usize = 5;
/// The label of the clean version.
pub const CLEAN_LABEL: &str = "Clean version";

/// The in-process side of the queue: which rows are being worked on, and the wake-up signal.
#[derive(Default)]
pub struct Queue {
    claimed: Mutex<HashSet<i64>>,
    wake: Mutex<u64>,
    cond: Condvar,
    stop: AtomicBool,
}

impl Queue {
    /// Wakes the workers: there is new work.
    pub fn notify(&self) {
        if let Ok(mut n) = self.wake.lock() {
            *n += 1;
        }
        self.cond.notify_all();
    }

    /// Asks the workers to stop after their current step.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.notify();
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// The wake-up counter, read before looking for work so that a notification arriving in
    /// between is not missed.
    fn epoch(&self) -> u64 {
        self.wake.lock().map(|n| *n).unwrap_or(0)
    }

    /// Waits until notified after `seen`, stopped, or `timeout`.
    fn wait(&self, seen: u64, timeout: Duration) {
        if let Ok(guard) = self.wake.lock() {
            let _ = self
                .cond
                .wait_timeout_while(guard, timeout, |n| *n == seen && !self.stopped());
        }
    }

    fn release(&self, seq: i64) {
        if let Ok(mut c) = self.claimed.lock() {
            c.remove(&seq);
        }
    }
}

/// One row of the queue table.
#[derive(Debug, Clone)]
struct Task {
    seq: i64,
    job_id: String,
    kind: String,
}

/// Why a step did not finish.
enum StepError {
    /// The job cannot succeed: fail it with this message (and refund).
    Fail(String),
    /// Something transient (the ledger, the database): try again later.
    Retry(String),
}

impl From<rusqlite::Error> for StepError {
    fn from(e: rusqlite::Error) -> Self {
        StepError::Retry(format!("database: {e}"))
    }
}

/// What the workers share.
pub struct Pipeline {
    /// The databases.
    pub store: Arc<SqliteStore>,
    /// The queue signal.
    pub queue: Arc<Queue>,
    /// The recognizer.
    pub recognizer: Arc<dyn Recognizer>,
    /// The data directory.
    pub data_dir: PathBuf,
}

impl Pipeline {
    /// Re-queues work left behind by a previous run: uploads that completed on disk without their
    /// transition, and jobs or clean versions whose queue row is missing.
    pub fn recover(&self) -> anyhow::Result<()> {
        let uploaded: Vec<String> = self.store.with(|c| {
            let mut stmt = c.prepare("SELECT id FROM jobs WHERE status = 'uploading'")?;
            let ids = stmt.query_map([], |r| r.get::<_, String>(0))?;
            ids.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        for id in uploaded {
            if media_path(&self.data_dir, &id).is_file() {
                if let Some(job) = self.store.with(|c| load_job(c, &id))? {
                    match crate::api::uploads::complete_upload(&self.store, &job) {
                        Ok(_) => {
                            tracing::info!(job = %id, "completed an upload interrupted by a restart")
                        }
                        Err(e) => {
                            tracing::warn!(job = %id, "could not complete an interrupted upload: {e}")
                        }
                    }
                }
            }
        }
        let now = now_ms();
        let n = self.store.with(|c| {
            let a = c.execute(
                "INSERT OR IGNORE INTO queue (job_id, task, enqueued_at)
                 SELECT id, 'job', ?1 FROM jobs WHERE status IN ('transcribing', 'formatting')
                 ORDER BY updated_at",
                [now],
            )?;
            let b = c.execute(
                "INSERT OR IGNORE INTO queue (job_id, task, enqueued_at)
                 SELECT job_id, 'clean', ?1 FROM transcripts
                 WHERE kind = 'clean' AND status IN ('pending', 'processing')",
                [now],
            )?;
            Ok::<_, rusqlite::Error>(a + b)
        })?;
        let waiting: i64 = self
            .store
            .with(|c| c.query_row("SELECT COUNT(*) FROM queue", [], |r| r.get(0)))?;
        tracing::info!(requeued = n, waiting, "work queue recovered");
        Ok(())
    }

    /// Starts `n` worker threads.
    pub fn start(self: &Arc<Self>, n: usize) -> Vec<std::thread::JoinHandle<()>> {
        (0..n.max(1))
            .map(|i| {
                let me = self.clone();
                std::thread::Builder::new()
                    .name(format!("worker-{i}"))
                    .spawn(move || me.work())
                    .unwrap_or_else(|e| panic!("could not start a worker thread: {e}"))
            })
            .collect()
    }

    fn claim(&self) -> Option<Task> {
        let mut claimed = self.queue.claimed.lock().ok()?;
        let tasks: Vec<Task> = self
            .store
            .with(|c| {
                let mut stmt =
                    c.prepare_cached("SELECT seq, job_id, task FROM queue ORDER BY seq LIMIT 256")?;
                let rows = stmt.query_map([], |r| {
                    Ok(Task {
                        seq: r.get(0)?,
                        job_id: r.get(1)?,
                        kind: r.get(2)?,
                    })
                })?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })
            .ok()?;
        let task = tasks.into_iter().find(|t| !claimed.contains(&t.seq))?;
        claimed.insert(task.seq);
        Some(task)
    }

    fn work(&self) {
        while !self.queue.stopped() {
            let seen = self.queue.epoch();
            let Some(task) = self.claim() else {
                self.queue.wait(seen, Duration::from_secs(1));
                continue;
            };
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run(&task)));
            let retry = match outcome {
                Ok(Ok(())) => false,
                Ok(Err(why)) => {
                    tracing::warn!(job = %task.job_id, task = %task.kind, "will retry: {why}");
                    true
                }
                Err(_) => {
                    tracing::error!(job = %task.job_id, task = %task.kind, "step panicked; failing it");
                    let failed = if task.kind == "clean" {
                        self.fail_clean(&task, "internal error")
                    } else {
                        self.fail_job(&task, "internal error while processing the job")
                    };
                    failed.is_err()
                }
            };
            self.queue.release(task.seq);
            if retry {
                let seen = self.queue.epoch();
                self.queue.wait(seen, Duration::from_secs(2));
            }
        }
    }

    /// Runs one task to its end; `Err` means "retry later".
    fn run(&self, task: &Task) -> Result<(), String> {
        if task.kind == "clean" {
            return match self.clean(task) {
                Ok(()) => Ok(()),
                Err(StepError::Fail(why)) => self.fail_clean(task, &why),
                Err(StepError::Retry(why)) => Err(why),
            };
        }
        loop {
            let job = self
                .store
                .with(|c| load_job(c, &task.job_id))
                .map_err(|e| e.to_string())?;
            let Some(job) = job else {
                return self.finish(task);
            };
            let step = match job.status.as_str() {
                "transcribing" => self.transcribe(&job),
                "formatting" => self.format(&job, task),
                _ => return self.finish(task),
            };
            match step {
                Ok(()) => continue,
                Err(StepError::Fail(why)) => return self.fail_job(task, &why),
                Err(StepError::Retry(why)) => return Err(why),
            }
        }
    }

    /// Removes a finished task's queue row.
    fn finish(&self, task: &Task) -> Result<(), String> {
        self.store
            .with(|c| c.execute("DELETE FROM queue WHERE seq = ?1", [task.seq]))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn transcribe(&self, job: &JobRow) -> Result<(), StepError> {
        let billing = |e: rusqlite::Error| StepError::Retry(format!("billing: {e}"));
        let cents =
            crate::billing::required_cents(job.declared_seconds, job.price_cents_per_minute);
        self.store
            .with_billing(|c| crate::billing::charge(c, &job.org_id, &job.id, cents))
            .map_err(billing)?;
        let settings = job_settings(job).map_err(StepError::Fail)?;
        let media = media_path(&self.data_dir, &job.id);
        let probe = crate::media::probe(&media).map_err(|e| StepError::Fail(e.to_string()))?;
        if !probe.has_audio {
            return Err(StepError::Fail(
                crate::media::MediaError::NoAudio.to_string(),
            ));
        }
        let work = self.data_dir.join("work");
        std::fs::create_dir_all(&work)
            .map_err(|e| StepError::Retry(format!("creating the work directory: {e}")))?;
        let wav = work.join(format!("{}.wav", job.id));
        let extracted = crate::media::extract_wav(&media, &wav);
        let recognized = extracted
            .map_err(|e| StepError::Fail(e.to_string()))
            .and_then(|()| {
                tracing::info!(job = %job.id, recognizer = %self.recognizer.name(), "recognizing");
                self.recognizer
                    .recognize(&wav, &settings.language, &settings.custom_vocabulary)
                    .map_err(|e| StepError::Fail(e.to_string()))
            });
        let _ = std::fs::remove_file(&wav);
        let recognition = recognized?;
        let language = if recognition.language.trim().is_empty() {
            settings.language.clone()
        } else {
            recognition.language.trim().to_string()
        };
        // A recognizer without punctuation (pocketsphinx, some plug-ins) gets sentences from its
        // pauses, so its subtitles are not one run-on lowercase sentence.
        let mut raw = recognition.words;
        if cuecraft_engine::punctuate::punctuate_by_pauses(&mut raw, &language) {
            tracing::info!(job = %job.id, "no punctuation from the recognizer: sentences from pauses");
        }
        let words = words_from_raw(&raw)
            .map_err(|e| StepError::Fail(format!("the recognizer gave invalid words: {e}")))?;
        let words = apply_vocabulary(&words, &settings.custom_vocabulary);
        let frame_rate = if probe.has_video {
            probe.frame_rate.unwrap_or(FrameRate::FPS_25)
        } else {
            FrameRate::FPS_25
        };
        let measured =
            crate::billing::required_cents(probe.duration_seconds, job.price_cents_per_minute);
        self.store
            .with_billing(|c| crate::billing::settle(c, &job.org_id, &job.id, measured))
            .map_err(billing)?;
        let transcript_id = new_id().map_err(|e| StepError::Retry(format!("random: {e}")))?;
        let stored = encode(&words);
        self.store.with(|c| {
            let tx = c.transaction()?;
            let now = now_ms();
            // A transcript an editor has changed (revision > 0) is kept: a re-run of recognition
            // never overwrites human edits.
            tx.execute(
                "DELETE FROM transcripts WHERE job_id = ?1 AND kind = 'original' AND revision = 0",
                [&job.id],
            )?;
            tx.execute(
                "INSERT OR IGNORE INTO transcripts (id, job_id, seq, language, kind, label, status, words, created_at)
                 VALUES (?1, ?2, 1, ?3, 'original', NULL, 'ready', ?4, ?5)",
                params![transcript_id, job.id, language, stored, now],
            )?;
            tx.execute(
                "UPDATE jobs SET status = 'formatting', language = ?1, measured_seconds = ?2,
                    frame_num = ?3, frame_den = ?4, updated_at = ?5
                 WHERE id = ?6 AND status = 'transcribing'",
                params![
                    language,
                    probe.duration_seconds,
                    frame_rate.num,
                    frame_rate.den,
                    now,
                    job.id
                ],
            )?;
            tx.commit()
        })?;
        tracing::info!(job = %job.id, words = words.len(), %language, "transcribed");
        Ok(())
    }

    fn format(&self, job: &JobRow, task: &Task) -> Result<(), StepError> {
        let settings = job_settings(job).map_err(StepError::Fail)?;
        let original: Option<(String, String)> =
            self.store.with(|c| {
                c.query_row(
                "SELECT language, words FROM transcripts WHERE job_id = ?1 AND kind = 'original'",
                [&job.id],
                |r| Ok((r.get(0)?, r.get::<_, Option<String>>(1)?.unwrap_or_default())),
            )
            .optional()
            })?;
        let Some((language, stored)) = original else {
            return Err(StepError::Fail("the transcript is missing".into()));
        };
        let words = crate::words::decode(&stored)
            .ok_or_else(|| StepError::Fail("the stored transcript is unreadable".into()))?;
        let frame_rate = match (job.frame_num, job.frame_den) {
            (Some(n), Some(d)) => FrameRate::new(n, d).unwrap_or(FrameRate::FPS_25),
            _ => FrameRate::FPS_25,
        };
        // Cues are derived again on every read; laying them out here proves the words lay out.
        let cues = layout(&words, &settings, frame_rate);
        let found_highlights = settings.create_highlights.then(|| {
            Value::Array(
                highlights(&words, HIGHLIGHTS)
                    .into_iter()
                    .map(|h| json!({"start": seconds(h.start), "end": seconds(h.end), "text": h.text}))
                    .collect(),
            )
            .to_string()
        });
        let found_chapters = settings.create_chapters.then(|| {
            Value::Array(
                chapters(&words)
                    .into_iter()
                    .map(|c| json!({"start": seconds(c.start), "title": c.title}))
                    .collect(),
            )
            .to_string()
        });
        self.editor_media(job);
        let clean_id = new_id().map_err(|e| StepError::Retry(format!("random: {e}")))?;
        self.store.with(|c| {
            let tx = c.transaction()?;
            let now = now_ms();
            tx.execute(
                "INSERT OR IGNORE INTO transcripts (id, job_id, seq, language, kind, label, status, created_at)
                 VALUES (?1, ?2, 2, ?3, 'clean', ?4, 'pending', ?5)",
                params![clean_id, job.id, language, CLEAN_LABEL, now],
            )?;
            tx.execute(
                "INSERT OR IGNORE INTO queue (job_id, task, enqueued_at) VALUES (?1, 'clean', ?2)",
                params![job.id, now],
            )?;
            tx.execute(
                "UPDATE jobs SET status = 'ready', highlights = ?1, chapters = ?2, updated_at = ?3
                 WHERE id = ?4 AND status = 'formatting'",
                params![found_highlights, found_chapters, now, job.id],
            )?;
            tx.execute("DELETE FROM queue WHERE seq = ?1", [task.seq])?;
            tx.commit()
        })?;
        self.queue.notify();
        tracing::info!(job = %job.id, cues = cues.len(), "ready");
        Ok(())
    }

    /// Makes the editor's media once: a browser-playable proxy (picture and sound for video,
    /// sound for audio-only) and the waveform's peaks, beside the upload. A failure is logged and
    /// leaves the job's result alone (the editor then shows no playback); a step repeated after a
    /// crash skips what is already there.
    fn editor_media(&self, job: &JobRow) {
        let media = media_path(&self.data_dir, &job.id);
        let (video, audio, peaks) = editor_media_paths(&self.data_dir, &job.id);
        if !(video.is_file() || audio.is_file()) {
            let made = crate::media::probe(&media).and_then(|p| {
                let out = if p.has_video { &video } else { &audio };
                crate::media::make_proxy(&media, out, p.has_video)
            });
            if let Err(e) = made {
                tracing::warn!(job = %job.id, "no playback proxy for the editor: {e}");
            }
        }
        if !peaks.is_file() {
            let tmp = peaks.with_extension("peaks.tmp");
            let written = crate::media::compute_peaks(&media).and_then(|p| {
                std::fs::write(&tmp, p)
                    .and_then(|()| std::fs::rename(&tmp, &peaks))
                    .map_err(crate::media::MediaError::Io)
            });
            if let Err(e) = written {
                let _ = std::fs::remove_file(&tmp);
                tracing::warn!(job = %job.id, "no waveform peaks for the editor: {e}");
            }
        }
    }

    fn clean(&self, task: &Task) -> Result<(), StepError> {
        let row: Option<(String, String, String)> = self.store.with(|c| {
            c.query_row(
                "SELECT t.id, t.status, o.language || char(10) || COALESCE(o.words, '[]')
                 FROM transcripts t JOIN transcripts o ON o.job_id = t.job_id AND o.kind = 'original'
                 WHERE t.job_id = ?1 AND t.kind = 'clean'",
                [&task.job_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
        })?;
        let Some((id, status, source)) = row else {
            self.finish(task).map_err(StepError::Retry)?;
            return Ok(());
        };
        if status == "ready" || status == "failed" {
            self.finish(task).map_err(StepError::Retry)?;
            return Ok(());
        }
        self.store.with(|c| {
            c.execute(
                "UPDATE transcripts SET status = 'processing' WHERE id = ?1",
                [&id],
            )
        })?;
        let (language, stored) = source.split_once('\n').unwrap_or(("", "[]"));
        let words = crate::words::decode(stored)
            .ok_or_else(|| StepError::Fail("the original transcript is unreadable".into()))?;
        let cleaned = clean_words(&words, language);
        if cleaned.is_empty() && !words.is_empty() {
            return Err(StepError::Fail(
                "nothing is left once the filler words are removed".into(),
            ));
        }
        let stored = encode(&cleaned);
        self.store.with(|c| {
            let tx = c.transaction()?;
            tx.execute(
                "UPDATE transcripts SET status = 'ready', words = ?1 WHERE id = ?2",
                params![stored, id],
            )?;
            tx.execute("DELETE FROM queue WHERE seq = ?1", [task.seq])?;
            tx.commit()
        })?;
        tracing::info!(job = %task.job_id, "clean version ready");
        Ok(())
    }

    fn fail_clean(&self, task: &Task, why: &str) -> Result<(), String> {
        tracing::warn!(job = %task.job_id, "clean version failed: {why}");
        // The log keeps the whole message; the transcript's `error` shows no server path.
        let why = crate::redact::message(why);
        self.store
            .with(|c| {
                let tx = c.transaction()?;
                tx.execute(
                    "UPDATE transcripts SET status = 'failed', error = ?1
                     WHERE job_id = ?2 AND kind = 'clean'",
                    params![why, task.job_id],
                )?;
                tx.execute("DELETE FROM queue WHERE seq = ?1", [task.seq])?;
                tx.commit()
            })
            .map_err(|e| e.to_string())
    }

    /// Refunds the job in full, then marks it failed and drops its task.
    fn fail_job(&self, task: &Task, why: &str) -> Result<(), String> {
        let job = self
            .store
            .with(|c| load_job(c, &task.job_id))
            .map_err(|e| e.to_string())?;
        let Some(job) = job else {
            return self.finish(task);
        };
        self.store
            .with_billing(|c| crate::billing::refund(c, &job.org_id, &job.id))
            .map_err(|e| format!("billing: {e}"))?;
        tracing::warn!(job = %job.id, "job failed: {why}");
        // The log keeps the whole message; the job's `error` shows no server path.
        let why = crate::redact::message(why);
        self.store
            .with(|c| {
                let tx = c.transaction()?;
                tx.execute(
                    "UPDATE jobs SET status = 'failed', error = ?1, updated_at = ?2
                     WHERE id = ?3 AND status IN ('transcribing', 'formatting')",
                    params![why, now_ms(), job.id],
                )?;
                tx.execute(
                    "UPDATE transcripts SET status = 'failed' WHERE job_id = ?1 AND status != 'ready'",
                    [&job.id],
                )?;
                tx.execute("DELETE FROM queue WHERE seq = ?1", [task.seq])?;
                tx.commit()
            })
            .map_err(|e| e.to_string())
    }
}

/// The job's effective settings (defaults <- preset <- request, as layered at creation).
fn job_settings(job: &JobRow) -> Result<Settings, String> {
    let value: Value =
        serde_json::from_str(&job.settings).map_err(|e| format!("job settings: {e}"))?;
    PartialSettings::from_json(&value, "settings")
        .map(|p| p.resolve())
        .map_err(|_| "the job's settings do not validate".to_string())
}

/// Where the editor's media of a job live: (video proxy, audio proxy, peaks). One of the two
/// proxies exists once the job is ready.
pub fn editor_media_paths(data_dir: &std::path::Path, job_id: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = data_dir.join("media");
    (
        dir.join(format!("{job_id}.video.webm")),
        dir.join(format!("{job_id}.audio.webm")),
        dir.join(format!("{job_id}.peaks")),
    )
}
