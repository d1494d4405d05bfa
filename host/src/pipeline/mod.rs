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
//!
//! A step may outlive its lease (a process stalled longer than the lease: its heartbeats stop)
//! and another worker may then run the same step. Before it writes its outcome — the settle and
//! the original, the formatted job, the clean version, a failure and its refund — a step renews
//! its lease ([`Pipeline::renew`]): a worker that lost it writes nothing, so a slow machine never
//! fails, refunds or rewrites a job another worker has taken over; a renewed lease holds for a
//! whole lease again, so no other worker can claim the row while the write runs.

pub mod onsets;
pub mod recognizers;
pub mod speakers;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use cuecraft_engine::analysis::{chapters, highlights};
use cuecraft_engine::text::{apply_vocabulary, clean_words};
use cuecraft_engine::{layout, words_from_raw, FrameRate, PartialSettings, Settings};
use serde_json::{json, Value};

use crate::media::{MediaStore, Object};
use crate::pipeline::recognizers::{Progress, Recognizer};
use crate::store::{Formatted, JobProgress, JobRow, Recognized, Store, StoreError, Task, Wake};
use crate::util::{new_id, now_ms};
use crate::words::{encode, seconds};

/// A video's shot changes (the first frame of each new shot).
type Shots = Vec<cuecraft_engine::Millis>;

/// How many highlights a job keeps.
const HIGHLIGHTS: usize = 5;
/// How often a running recognition's progress is written to the store.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);
/// The label of the clean version.
pub const CLEAN_LABEL: &str = "Clean version";

/// Why a step did not finish.
enum StepError {
    /// The job cannot succeed: fail it with this message (and refund).
    Fail(String),
    /// Something transient (the ledger, the database): try again later.
    Retry(String),
    /// Another worker holds the task now: this worker's lease ran out while the step ran (a
    /// stalled or starved process) and the row was claimed again. The step's outcome is dropped,
    /// whatever it was; the other worker's run stands.
    Lost,
}

impl From<StoreError> for StepError {
    fn from(e: StoreError) -> Self {
        StepError::Retry(format!("database: {e}"))
    }
}

/// Why an upload could not be accepted.
#[derive(Debug)]
pub enum UploadError {
    /// The ledger could not be written: not charged, so not accepted.
    Billing(StoreError),
    /// The store failed.
    Store(StoreError),
}

/// Accepts a job whose media is in place: charges it (one ledger row, idempotent), then moves it
/// to `transcribing` with its queue row in one transaction; the ledger row is written first, so a
/// crash in between leaves a charged `uploading` job that the next attempt or the recovery sweep
/// completes without charging again. Returns false when the job was no longer uploading.
pub fn accept_upload(store: &dyn Store, job: &JobRow) -> Result<bool, UploadError> {
    let cents = crate::billing::required_cents(job.declared_seconds, job.price_cents_per_minute);
    store
        .charge(&job.org_id, &job.id, cents)
        .map_err(UploadError::Billing)?;
    store
        .start_transcribing(&job.id, now_ms())
        .map_err(UploadError::Store)
}

/// Whether the media of a job that is still `uploading` has arrived whole in the media store
/// without passing through the service's own upload route — a client's PUT to the bucket's
/// presigned URL ([`MediaStore::accept_upload`]), or on a local directory an upload renamed into
/// place just before a restart — and if so accepts it ([`accept_upload`]: charge, `transcribing`,
/// queue row), then removes the client's object. Safe to run again and from several processes at
/// once (the charge is one row per job, the transition happens once). Returns whether this call
/// moved the job; errors are for the log (a later look tries again).
pub fn check_arrived(
    store: &dyn Store,
    media: &dyn MediaStore,
    job: &JobRow,
) -> Result<bool, String> {
    arrived(store, media, job, false)
}

/// [`check_arrived`] at start-up, once per uploading job: with a bucket it also takes a job whose
/// original is already in place (accepted by a process that crashed before the transition and
/// whose client object is gone), which the frequent looks skip to spend one request, not two.
fn check_arrived_at_start(
    store: &dyn Store,
    media: &dyn MediaStore,
    job: &JobRow,
) -> Result<bool, String> {
    arrived(store, media, job, true)
}

fn arrived(
    store: &dyn Store,
    media: &dyn MediaStore,
    job: &JobRow,
    thorough: bool,
) -> Result<bool, String> {
    if job.status != "uploading" {
        return Ok(false);
    }
    let original = || media.size(&job.id, Object::Original).map(|s| s.is_some());
    let arrived = if media.takes_direct_uploads() {
        match media.accept_upload(&job.id, job.size_bytes as u64) {
            Ok(false) if thorough => original(),
            other => other,
        }
    } else {
        original()
    };
    if !arrived.map_err(|e| format!("media store: {e}"))? {
        return Ok(false);
    }
    let moved = accept_upload(store, job).map_err(|e| format!("{e:?}"))?;
    if let Err(e) = media.discard_upload(&job.id) {
        tracing::warn!(job = %job.id, "could not remove the client's upload object: {e}");
    }
    Ok(moved)
}

/// The store as this process's workers see it: an outage is logged when it starts and when it
/// ends, not at every claim of every worker.
static STORE_OUTAGE: crate::ops::outage::Outage =
    crate::ops::outage::Outage::new("the store (as the workers see it)");

/// The media store as the sweep of direct uploads sees it (a HEAD per uploading job).
static UPLOAD_LOOK_OUTAGE: crate::ops::outage::Outage =
    crate::ops::outage::Outage::new("the media store (looking for direct uploads)");

/// The default lease of a claimed queue row: a worker that stops heartbeating (killed) loses its
/// row this long after its last heartbeat.
pub const DEFAULT_LEASE_MS: i64 = 30_000;

/// What the workers share.
pub struct Pipeline {
    /// The store.
    pub store: Arc<dyn Store>,
    /// The signal idle workers wait on (the store's).
    pub queue: Arc<dyn Wake>,
    /// Set to stop the workers after their current step.
    pub stop: AtomicBool,
    /// The recognizer (`None` in an API-only process, which runs no worker).
    pub recognizer: Option<Arc<dyn Recognizer>>,
    /// The data directory.
    pub data_dir: PathBuf,
    /// This process's scratch directory (`None` in an API-only process).
    pub work: Option<WorkDir>,
    /// Where media bytes live.
    pub media: Arc<dyn MediaStore>,
    /// How long a claim holds without a heartbeat (heartbeats come every third of it).
    pub lease_ms: i64,
    /// The task each worker thread holds now (worker id -> queue row).
    pub running: Mutex<HashMap<String, i64>>,
    /// How often this process removes what ended processes left ([`Pipeline::sweep_leftovers`]).
    pub sweep_every: Duration,
}

impl Pipeline {
    /// Asks the workers to stop after their current step.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.queue.notify();
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Gives the tasks still held by this process's workers back to the queue, due at once (at
    /// shutdown, for workers that did not finish their step in time): the next worker redoes
    /// the step rather than waiting out the lease.
    pub fn release_running(&self) {
        let running = self.running.lock().map(|r| r.clone()).unwrap_or_default();
        for (worker, seq) in running {
            match self.store.release_task(seq, &worker, now_ms()) {
                Ok(()) => tracing::info!(
                    task = seq,
                    "stopping: gave an unfinished task back to the queue for another worker"
                ),
                Err(e) => tracing::warn!("giving a task back failed: {e}"),
            }
        }
    }

    /// Re-queues work left behind by a previous run: uploads that completed on disk without their
    /// transition, and jobs or clean versions whose queue row is missing.
    pub fn recover(&self) -> anyhow::Result<()> {
        let uploaded = self.store.uploading_jobs()?;
        for id in uploaded {
            if let Some(job) = self.store.job(&id)? {
                match check_arrived_at_start(self.store.as_ref(), self.media.as_ref(), &job) {
                    Ok(true) => {
                        tracing::info!(job = %id, "completed an upload interrupted by a restart")
                    }
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(job = %id, "could not complete an interrupted upload: {e}")
                    }
                }
            }
        }
        let now = now_ms();
        let n = self.store.requeue_unfinished(now)?;
        let waiting = self.store.queue_len()?;
        tracing::info!(requeued = n, waiting, "work queue recovered");
        Ok(())
    }

    /// Starts `n` worker threads (none for 0), the sweep of what ended processes left, and the
    /// sweep of direct uploads when the media store takes them.
    pub fn start(self: &Arc<Self>, n: usize) -> Vec<std::thread::JoinHandle<()>> {
        let me = self.clone();
        let leftovers = std::thread::Builder::new()
            .name("leftovers-sweep".into())
            .spawn(move || me.sweep_leftovers());
        if let Err(e) = leftovers {
            tracing::error!("could not start the sweep of leftovers: {e}");
        }
        if self.media.takes_direct_uploads() {
            let me = self.clone();
            let sweep = std::thread::Builder::new()
                .name("upload-sweep".into())
                .spawn(move || me.sweep_uploads());
            if let Err(e) = sweep {
                tracing::error!("could not start the upload sweep: {e}");
            }
        }
        let tag = new_id().unwrap_or_else(|_| format!("{}", now_ms()));
        (0..n)
            .map(|i| {
                let me = self.clone();
                let worker = format!("{}-{}-{i}", std::process::id(), &tag[..tag.len().min(8)]);
                std::thread::Builder::new()
                    .name(format!("worker-{i}"))
                    .spawn(move || me.work(&worker))
                    .unwrap_or_else(|e| panic!("could not start a worker thread: {e}"))
            })
            .collect()
    }

    fn work(&self, worker: &str) {
        use crate::ops::metrics::{store_call, worker_state};
        worker_state(None, Some("idle"));
        while !self.stopped() {
            let seen = self.queue.epoch();
            let claiming = std::time::Instant::now();
            let claimed = self.store.claim_task(worker, now_ms(), self.lease_ms);
            store_call("worker", claiming);
            let task = match claimed {
                Ok(Some(task)) => task,
                Ok(None) => {
                    // Polling is the fallback for work enqueued by another process.
                    self.queue.wait(seen, Duration::from_secs(1));
                    continue;
                }
                Err(e) => {
                    // Logged once per outage, however many workers and retries.
                    STORE_OUTAGE.failed(&e);
                    self.queue.wait(seen, Duration::from_secs(1));
                    continue;
                }
            };
            STORE_OUTAGE.succeeded();
            if let Ok(mut r) = self.running.lock() {
                r.insert(worker.to_string(), task.seq);
            }
            worker_state(Some("idle"), Some("busy"));
            let retry = self.run_leased(worker, &task);
            worker_state(Some("busy"), Some("idle"));
            if let Ok(mut r) = self.running.lock() {
                r.remove(worker);
            }
            if retry {
                // Claimable again in 2 s, by this worker or any other.
                let not_before = now_ms() + 2_000;
                if let Err(e) = self.store.release_task(task.seq, worker, not_before) {
                    tracing::warn!(job = %task.job_id, "releasing a task failed: {e}");
                }
            }
        }
        worker_state(Some("idle"), None);
    }

    /// Runs a claimed task while a heartbeat keeps its lease; whether it should be retried.
    fn run_leased(&self, worker: &str, task: &Task) -> bool {
        let done = Mutex::new(false);
        let cond = Condvar::new();
        let period = Duration::from_millis((self.lease_ms / 3).max(1) as u64);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut finished = done.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    // The step may have ended before this thread first took the lock.
                    if *finished {
                        return;
                    }
                    let (guard, _) = cond
                        .wait_timeout(finished, period)
                        .unwrap_or_else(|p| p.into_inner());
                    finished = guard;
                    if *finished {
                        return;
                    }
                    let until = now_ms() + self.lease_ms;
                    match self.store.extend_lease(task.seq, worker, until) {
                        Ok(true) => {}
                        Ok(false) => {
                            tracing::warn!(job = %task.job_id, "lost the lease of a task");
                            return;
                        }
                        Err(e) => tracing::warn!(job = %task.job_id, "heartbeat failed: {e}"),
                    }
                }
            });
            // Every line of the step carries the job, and the id of the request that created it
            // once the job is read.
            let span = tracing::info_span!("step", job = %task.job_id, task = %task.kind,
                request_id = tracing::field::Empty);
            let outcome = span.in_scope(|| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run(task, worker)))
            });
            *done.lock().unwrap_or_else(|p| p.into_inner()) = true;
            cond.notify_all();
            match outcome {
                Ok(Ok(())) => false,
                Ok(Err(why)) => {
                    tracing::warn!(job = %task.job_id, task = %task.kind, "will retry: {why}");
                    true
                }
                Err(_) => {
                    tracing::error!(job = %task.job_id, task = %task.kind, "step panicked; failing it");
                    let failed = if task.kind == "clean" {
                        self.fail_clean(task, worker, "internal error")
                    } else {
                        self.fail_job(task, worker, "internal error while processing the job")
                    };
                    failed.is_err()
                }
            }
        })
    }

    /// Runs one task to its end; `Err` means "retry later".
    fn run(&self, task: &Task, worker: &str) -> Result<(), String> {
        if task.kind == "clean" {
            return match self.clean(task, worker) {
                Ok(()) => Ok(()),
                Err(StepError::Fail(why)) => self.fail_clean(task, worker, &why),
                Err(StepError::Retry(why)) => Err(why),
                Err(StepError::Lost) => {
                    lost(task);
                    Ok(())
                }
            };
        }
        loop {
            let job = self.store.job(&task.job_id).map_err(|e| e.to_string())?;
            let Some(job) = job else {
                return self.finish(task);
            };
            if let Some(id) = &job.request_id {
                tracing::Span::current().record("request_id", id.as_str());
            }
            let step = match job.status.as_str() {
                "transcribing" => self.transcribe(&job, task, worker),
                "formatting" => self.format(&job, task, worker),
                _ => return self.finish(task),
            };
            match step {
                Ok(()) => continue,
                Err(StepError::Fail(why)) => return self.fail_job(task, worker, &why),
                Err(StepError::Retry(why)) => return Err(why),
                Err(StepError::Lost) => {
                    lost(task);
                    return Ok(());
                }
            }
        }
    }

    /// At once and then every `sweep_every`, until the process stops: removes the partial media
    /// files ([`MediaStore::sweep`]) and the work directories ([`WorkDir::sweep_ended`]) of
    /// processes that have ended, a crash included. What a live process is writing is locked by
    /// it and stays; so a crash's 5 GiB part leaves within one interval, not at a later restart.
    fn sweep_leftovers(&self) {
        let work = self.data_dir.join("work");
        loop {
            let parts = self.media.sweep();
            let dirs = WorkDir::sweep_ended(&work);
            if dirs > 0 {
                tracing::info!(
                    removed = dirs,
                    "removed the work directories of ended processes"
                );
            }
            tracing::debug!(parts, dirs, "swept leftovers");
            let until = std::time::Instant::now() + self.sweep_every;
            while std::time::Instant::now() < until {
                if self.stopped() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// Every [`UPLOAD_SWEEP`], moves on the uploading jobs whose media has arrived in the bucket
    /// ([`check_arrived`]), so a job starts without anyone polling it. Jobs whose upload
    /// URL expired more than [`UPLOAD_GRACE`] ago are no longer looked at: a PUT accepted by the
    /// bucket just before the expiry has had that long to finish.
    fn sweep_uploads(&self) {
        let mut stale = std::collections::HashSet::new();
        loop {
            // A sleep that notices a stop within 100 ms.
            let until = std::time::Instant::now() + UPLOAD_SWEEP;
            while std::time::Instant::now() < until && !self.stopped() {
                std::thread::sleep(Duration::from_millis(100));
            }
            if self.stopped() {
                return;
            }
            let since = now_ms() - UPLOAD_GRACE.as_millis() as i64;
            let waiting = match self.store.uploading_jobs() {
                Ok(ids) => {
                    STORE_OUTAGE.succeeded();
                    ids
                }
                Err(e) => {
                    STORE_OUTAGE.failed(&e);
                    continue;
                }
            };
            for id in waiting {
                if stale.contains(&id) {
                    continue;
                }
                let job = match self.store.job(&id) {
                    Ok(Some(job)) => job,
                    Ok(None) => continue,
                    Err(e) => {
                        STORE_OUTAGE.failed(&e);
                        continue;
                    }
                };
                if job.upload_expires_at <= since {
                    // Its URL is long expired: nothing can arrive any more.
                    stale.insert(id);
                    continue;
                }
                // A bucket that does not answer fails every job's look: one line per outage.
                match check_arrived(self.store.as_ref(), self.media.as_ref(), &job) {
                    Ok(true) => {
                        UPLOAD_LOOK_OUTAGE.succeeded();
                        tracing::info!(job = %id, "upload arrived in the bucket");
                        self.queue.notify();
                    }
                    Ok(false) => {
                        UPLOAD_LOOK_OUTAGE.succeeded();
                    }
                    Err(e) => {
                        UPLOAD_LOOK_OUTAGE.failed(&e);
                    }
                }
            }
        }
    }

    /// Renews `worker`'s lease on `task` for a whole lease from now, just before the step writes
    /// its outcome: `Lost` when another worker has claimed the row since this worker's lease ran
    /// out (or the row is gone: the work was done by another worker).
    fn renew(&self, task: &Task, worker: &str) -> Result<(), StepError> {
        match self
            .store
            .extend_lease(task.seq, worker, now_ms() + self.lease_ms)
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(StepError::Lost),
            Err(e) => Err(StepError::Retry(format!("database: {e}"))),
        }
    }

    /// Removes a finished task's queue row.
    fn finish(&self, task: &Task) -> Result<(), String> {
        self.store.finish_task(task.seq).map_err(|e| e.to_string())
    }

    fn transcribe(&self, job: &JobRow, task: &Task, worker: &str) -> Result<(), StepError> {
        let billing = |e: StoreError| {
            crate::ops::metrics::ledger_error();
            StepError::Retry(format!("billing: {e}"))
        };
        let cents =
            crate::billing::required_cents(job.declared_seconds, job.price_cents_per_minute);
        self.store
            .charge(&job.org_id, &job.id, cents)
            .map_err(billing)?;
        let settings = job_settings(job).map_err(StepError::Fail)?;
        let (Some(recognizer), Some(work)) = (&self.recognizer, &self.work) else {
            return Err(StepError::Retry("this process runs no recognizer".into()));
        };
        // A bucket's copy is downloaded into this process's work directory (removed when
        // `media` drops).
        let media = self
            .media
            .local_file(&job.id, Object::Original, work.path())
            .map_err(|e| StepError::Retry(format!("reading the media: {e}")))?;
        let probe = crate::media::probe(&media).map_err(|e| StepError::Fail(e.to_string()))?;
        if !probe.has_audio {
            return Err(StepError::Fail(
                crate::media::MediaError::NoAudio.to_string(),
            ));
        }
        // Named for the worker thread too: a thread of this process that took the task over from
        // a stalled one must not extract into (or remove) the file the other is reading.
        let wav = work.path().join(format!("{}.{worker}.wav", job.id));
        // The editor's proxy and peaks do not depend on the words: they are made beside
        // extraction and recognition, from the same copy of the original, so `ready` follows the
        // last word instead of waiting for them.
        let recognized = std::thread::scope(|scope| {
            // Shot changes are wanted again when a repeated step finds the proxy made.
            let want_shots = job.shot_changes.is_none();
            let input: &Path = &media;
            let beside = scope.spawn(move || self.editor_media(job, Some(input), want_shots));
            let recognized = crate::media::extract_wav(&media, &wav)
                .map_err(|e| StepError::Fail(e.to_string()))
                .and_then(|()| {
                    tracing::info!(job = %job.id, recognizer = %recognizer.name(), "recognizing");
                    let last = std::cell::Cell::new(0);
                    self.progress(
                        &job.id,
                        Progress {
                            share: 0.0,
                            seconds_left: None,
                        },
                        &last,
                    );
                    let started = std::time::Instant::now();
                    let words = recognizer
                        .recognize_reporting(
                            &wav,
                            &settings.language,
                            &settings.custom_vocabulary,
                            &|p| self.progress(&job.id, p, &last),
                        )
                        .map_err(|e| StepError::Fail(e.to_string()));
                    crate::ops::metrics::recognition(
                        &recognizer.name(),
                        probe.duration_seconds,
                        started.elapsed(),
                    );
                    words
                })
                // Speakers for a recognizer that gives none, from the WAV before it goes: a
                // failure keeps speaker 0 on every word and never fails the job.
                .map(|mut recognition| {
                    if recognition.words.iter().all(|w| w.speaker == 0) {
                        let began = std::time::Instant::now();
                        match speakers::label(&wav, &media, &mut recognition.words) {
                            Ok(found) => tracing::info!(job = %job.id, speakers = found.speakers, mode = ?found.mode, ms = began.elapsed().as_millis() as u64, "speakers"),
                            Err(e) => {
                                recognition.words.iter_mut().for_each(|w| w.speaker = 0);
                                tracing::warn!(job = %job.id, "speakers not found, all words are speaker 0: {e}");
                            }
                        }
                    }
                    // A recognizer without punctuation (pocketsphinx, some plug-ins) gets
                    // sentences from its pauses as it gave them, so its subtitles are not one
                    // run-on lowercase sentence.
                    let language = if recognition.language.trim().is_empty() {
                        settings.language.clone()
                    } else {
                        recognition.language.trim().to_string()
                    };
                    if cuecraft_engine::punctuate::punctuate_by_pauses(&mut recognition.words, &language) {
                        tracing::info!(job = %job.id, "no punctuation from the recognizer: sentences from pauses");
                    }
                    // Then starts after a pause and ends before one on the sound itself
                    // (docs/decisions/pipeline.md, "Speech onsets"): a failure keeps the
                    // recognizer's times and never fails the job.
                    match onsets::refine(&wav, &mut recognition.words) {
                        Ok(moved) => tracing::info!(job = %job.id, starts = moved.starts, ends = moved.ends, "word times refined on the sound"),
                        Err(e) => tracing::warn!(job = %job.id, "word times kept as recognised: {e}"),
                    }
                    (recognition, language)
                });
            let _ = std::fs::remove_file(&wav);
            let shots = beside.join().unwrap_or_else(|_| {
                tracing::error!(job = %job.id, "making the editor media panicked");
                None
            });
            recognized.map(|r| (r, shots))
        });
        let ((recognition, language), shots) = recognized?;
        let words = words_from_raw(&recognition.words)
            .map_err(|e| StepError::Fail(format!("the recognizer gave invalid words: {e}")))?;
        let words = apply_vocabulary(&words, &settings.custom_vocabulary);
        let frame_rate = if probe.has_video {
            probe.frame_rate.unwrap_or(FrameRate::FPS_25)
        } else {
            FrameRate::FPS_25
        };
        let measured =
            crate::billing::required_cents(probe.duration_seconds, job.price_cents_per_minute);
        self.renew(task, worker)?;
        self.store_shots(job, shots.filter(|_| probe.has_video))?;
        self.store
            .settle(&job.org_id, &job.id, measured)
            .map_err(billing)?;
        let transcript_id = new_id().map_err(|e| StepError::Retry(format!("random: {e}")))?;
        let stored = encode(&words);
        let recognized = Recognized {
            transcript_id,
            language: language.clone(),
            words: stored,
            measured_seconds: probe.duration_seconds,
            frame_num: frame_rate.num,
            frame_den: frame_rate.den,
        };
        self.store.store_original(&job.id, &recognized, now_ms())?;
        tracing::info!(job = %job.id, words = words.len(), %language, "transcribed");
        Ok(())
    }

    fn format(&self, job: &JobRow, task: &Task, worker: &str) -> Result<(), StepError> {
        let settings = job_settings(job).map_err(StepError::Fail)?;
        let original = self.store.original_words(&job.id)?;
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
        // Made beside recognition; only what is missing (a step repeated after a crash, a
        // failure) is made here, with the shot changes of a video proxy made now.
        let shots = self.editor_media(job, None, false);
        let clean_id = new_id().map_err(|e| StepError::Retry(format!("random: {e}")))?;
        let formatted = Formatted {
            clean_id,
            clean_label: CLEAN_LABEL.to_string(),
            language,
            highlights: found_highlights,
            chapters: found_chapters,
        };
        self.renew(task, worker)?;
        self.store_shots(job, shots)?;
        self.store
            .finish_formatting(&job.id, &formatted, task.seq, now_ms())?;
        self.queue.notify();
        tracing::info!(job = %job.id, cues = cues.len(), "ready");
        crate::ops::metrics::job_finished("ready");
        Ok(())
    }

    /// Makes the editor's media once: a browser-playable proxy (picture and sound for video,
    /// sound for audio-only) and the waveform's peaks, beside the upload. A failure is logged and
    /// leaves the job's result alone (the editor then shows no playback); a step repeated after a
    /// crash skips what is already there.
    ///
    /// The proxy's decoding also finds a video's shot changes, which are returned (with
    /// `want_shots`, also when the proxy was made before: a step repeated after a crash).
    fn editor_media(&self, job: &JobRow, input: Option<&Path>, want_shots: bool) -> Option<Shots> {
        let work = self.work.as_ref()?;
        let made = crate::media::make_editor_media_from(
            self.media.as_ref(),
            &job.id,
            input,
            work.path(),
            want_shots,
        );
        if let Err(e) = made.made {
            tracing::warn!(job = %job.id, "editor media: {e}");
        }
        made.shot_changes
    }

    /// Keeps a video's shot changes with its job, before the words that will be laid out to them.
    fn store_shots(&self, job: &JobRow, shots: Option<Shots>) -> Result<(), StepError> {
        if let Some(cuts) = shots {
            tracing::info!(job = %job.id, shot_changes = cuts.len(), "shot changes");
            self.store.set_shot_changes(&job.id, &cuts)?;
        }
        Ok(())
    }

    /// Keeps a running recognition's progress in the store for the people waiting (the project
    /// list, the editor, `cuecraft submit`): at most every [`PROGRESS_EVERY`], and always the
    /// last. A store that cannot take it costs a log line, never the job.
    fn progress(&self, job_id: &str, p: Progress, last: &std::cell::Cell<i64>) {
        let now = now_ms();
        if p.share < 1.0 && now - last.get() < PROGRESS_EVERY.as_millis() as i64 {
            return;
        }
        last.set(now);
        let row = JobProgress {
            share: p.share.clamp(0.0, 1.0),
            seconds_left: p.seconds_left.map(|s| s.max(0.0)),
            at: now,
        };
        if let Err(e) = self.store.set_progress(job_id, &row) {
            tracing::warn!(job = %job_id, "could not keep the job's progress: {e}");
        }
    }

    fn clean(&self, task: &Task, worker: &str) -> Result<(), StepError> {
        let Some(source) = self.store.clean_source(&task.job_id)? else {
            self.finish(task).map_err(StepError::Retry)?;
            return Ok(());
        };
        if source.status == "ready" || source.status == "failed" {
            self.finish(task).map_err(StepError::Retry)?;
            return Ok(());
        }
        self.store.mark_processing(&source.transcript_id)?;
        let (language, stored) = (source.language.as_str(), source.words.as_str());
        let words = crate::words::decode(stored)
            .ok_or_else(|| StepError::Fail("the original transcript is unreadable".into()))?;
        let cleaned = clean_words(&words, language);
        if cleaned.is_empty() && !words.is_empty() {
            return Err(StepError::Fail(
                "nothing is left once the filler words are removed".into(),
            ));
        }
        let stored = encode(&cleaned);
        self.renew(task, worker)?;
        self.store
            .finish_clean(&source.transcript_id, &stored, task.seq)?;
        tracing::info!(job = %task.job_id, "clean version ready");
        Ok(())
    }

    fn fail_clean(&self, task: &Task, worker: &str, why: &str) -> Result<(), String> {
        match self.renew(task, worker) {
            Ok(()) => {}
            Err(StepError::Retry(e)) => return Err(e),
            Err(_) => {
                lost(task);
                return Ok(());
            }
        }
        tracing::warn!(job = %task.job_id, "clean version failed: {why}");
        // The log keeps the whole message; the transcript's `error` shows no server path.
        let why = crate::redact::message(why);
        self.store
            .fail_clean(&task.job_id, &why, task.seq)
            .map_err(|e| e.to_string())
    }

    /// Refunds the job in full, then marks it failed and drops its task — unless another worker
    /// has taken the task over ([`Pipeline::renew`]) or the job is no longer in the pipeline's
    /// hands (ready or failed already): then nothing is refunded or failed.
    fn fail_job(&self, task: &Task, worker: &str, why: &str) -> Result<(), String> {
        match self.renew(task, worker) {
            Ok(()) => {}
            Err(StepError::Retry(e)) => return Err(e),
            Err(_) => {
                tracing::warn!(job = %task.job_id, "the step failed ({why}), but its lease had run out");
                lost(task);
                return Ok(());
            }
        }
        let job = self.store.job(&task.job_id).map_err(|e| e.to_string())?;
        let Some(job) = job else {
            return self.finish(task);
        };
        if job.status != "transcribing" && job.status != "formatting" {
            tracing::warn!(job = %job.id, status = %job.status, "not failing a job that is no longer processed: {why}");
            return self.finish(task);
        }
        self.store
            .refund(&job.org_id, &job.id)
            .map_err(|e| format!("billing: {e}"))?;
        tracing::warn!(job = %job.id, "job failed: {why}");
        // The log keeps the whole message; the job's `error` shows no server path.
        let why = crate::redact::message(why);
        self.store
            .fail_job(&job.id, &why, task.seq, now_ms())
            .map_err(|e| e.to_string())?;
        // The editor's proxy and peaks, made beside recognition, are of no use for a failed job:
        // it keeps only its original, as a job failed before them did. A store that cannot
        // remove them now costs a log line (and their bytes), never the failure.
        if let Err(e) = crate::media::remove_editor_media(self.media.as_ref(), &job.id) {
            tracing::warn!(job = %job.id, "could not remove a failed job's editor media: {e}");
        }
        crate::ops::metrics::job_finished("failed");
        Ok(())
    }
}

/// Logs that a step's outcome was dropped because another worker took its task over.
fn lost(task: &Task) {
    tracing::warn!(job = %task.job_id, task = %task.kind,
        "this worker's lease ran out mid-step and another worker took the task over: its outcome stands, this one is dropped");
}

/// The job's effective settings (defaults <- preset <- request, as layered at creation).
fn job_settings(job: &JobRow) -> Result<Settings, String> {
    let value: Value =
        serde_json::from_str(&job.settings).map_err(|e| format!("job settings: {e}"))?;
    PartialSettings::from_json(&value, "settings")
        .map(|p| p.resolve())
        .map_err(|_| "the job's settings do not validate".to_string())
}

/// How often the uploading jobs are checked for media that arrived in the bucket.
const UPLOAD_SWEEP: Duration = Duration::from_secs(5);
/// How long after its upload URL expired a job is still checked.
const UPLOAD_GRACE: Duration = Duration::from_secs(3600);

/// A process's own scratch directory under `DIR/work` (extracted audio), held with an exclusive
/// `flock` on its `.lock` file for the life of the process. Several processes (a server and
/// workers) may share one data directory: at start each removes only the directories whose lock
/// it can take, whose process has ended (a crash included: the kernel drops the lock). The lock
/// file is locked under another name (`.lock.new`) and only then renamed to `.lock`, so a `.lock`
/// that can be taken always means an ended process — never one starting at the same moment
/// that has made its file but not yet locked it (whose directory would be removed under it).
#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
    _lock: std::fs::File,
}

impl WorkDir {
    /// Removes the directories of ended processes under `root`, then makes and locks this
    /// process's own.
    pub fn claim(root: &Path) -> std::io::Result<WorkDir> {
        WorkDir::claim_pausing(root, &mut || {})
    }

    /// [`WorkDir::claim`], calling `pause` between making the lock file and locking it (a test
    /// runs another claim there, as a process starting at the same moment would).
    fn claim_pausing(root: &Path, pause: &mut dyn FnMut()) -> std::io::Result<WorkDir> {
        std::fs::create_dir_all(root)?;
        WorkDir::sweep_ended(root);
        let tag = new_id()?;
        let path = root.join(format!(
            "{}-{}",
            std::process::id(),
            &tag[..tag.len().min(8)]
        ));
        std::fs::create_dir(&path)?;
        let locking = path.join(".lock.new");
        let lock = std::fs::File::create(&locking)?;
        pause();
        if !crate::util::try_lock(&lock) {
            return Err(std::io::Error::other("could not lock the work directory"));
        }
        // The lock belongs to the open file, so it holds under the file's new name.
        std::fs::rename(&locking, path.join(".lock"))?;
        Ok(WorkDir { path, _lock: lock })
    }

    /// Removes the directories under `root` of processes that have ended (their `.lock` can be
    /// taken: the kernel dropped it when the process ended, a crash included), and loose files
    /// of the single-process layout of earlier versions; the number of directories removed. Run
    /// at every claim and periodically ([`Pipeline::start`]), so a crashed process's extracted
    /// audio, proxy and peaks in the making do not wait for the next start-up.
    pub fn sweep_ended(root: &Path) -> usize {
        let Ok(entries) = std::fs::read_dir(root) else {
            return 0;
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                // A directory without its `.lock` yet is being made by a live process (or was
                // left, empty, by a crash in the instant between the two).
                let Ok(f) = std::fs::File::open(path.join(".lock")) else {
                    continue;
                };
                if crate::util::try_lock(&f) {
                    match std::fs::remove_dir_all(&path) {
                        Ok(()) => removed += 1,
                        Err(e) => tracing::warn!("could not remove {}: {e}", path.display()),
                    }
                }
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("wav" | "tmp")
            ) {
                let _ = std::fs::remove_file(&path);
            }
        }
        removed
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two processes starting together on one data directory: the second's clean-up runs while
    /// the first has made its lock file but not yet locked it, and must leave the first's
    /// directory alone (it removed it before, and the first process's jobs then failed: ffmpeg
    /// could not write the extracted audio).
    #[test]
    fn a_work_directory_being_claimed_is_not_removed_by_a_claim_at_the_same_moment() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("work");
        let mut second = None;
        let first = WorkDir::claim_pausing(&root, &mut || {
            second = Some(WorkDir::claim(&root).unwrap());
        })
        .unwrap();
        let second = second.unwrap();
        for dir in [&first, &second] {
            assert!(dir.path().join(".lock").is_file(), "{dir:?}");
        }
        assert_ne!(first.path(), second.path());
        // A directory whose process has ended is still removed by the next claim.
        let ended = first.path().to_path_buf();
        drop(first);
        let third = WorkDir::claim(&root).unwrap();
        assert!(!ended.exists());
        assert!(second.path().join(".lock").is_file());
        assert!(third.path().join(".lock").is_file());
    }
}
