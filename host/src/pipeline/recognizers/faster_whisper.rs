//! `whisper` (the default): Whisper base, multilingual, on CTranslate2 through faster-whisper,
//! run as long-lived managed worker processes.
//!
//! Each worker is `python3 -c <whisper_worker.py>` from the project's venv: it loads the model
//! once and then answers one JSON request per line (see the script's header). A pipeline worker
//! thread takes an idle process from the pool (starting one the first time, so the model is
//! loaded once per worker, not once per job) and gives it back after a job; a process that fails,
//! stops answering or runs past the job's time limit is killed and replaced on the next job. The
//! processes are started with `PR_SET_PDEATHSIG`, so they end with the server.
//!
//! The script cuts the audio into windows of at most 30 s at pauses (Silero VAD, shipped inside
//! faster-whisper), drops windows without speech and transcribes each window on its own, with the
//! window's offset added back. This module turns Whisper's word pieces into words
//! ([`join_pieces`]), collapses repetition loops ([`collapse_loops`]) and maps the contract's
//! language codes to Whisper's ([`WhisperLanguage`]).

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use cuecraft_engine::RawWord;
use serde::Deserialize;

use super::process::TimeLimit;
use super::whisper::{prompt, whisper_language};
use super::{Progress, Recognition, RecognizeError, Recognizer};

/// The worker script, embedded so the binary needs no file beside it.
const WORKER_SCRIPT: &str = include_str!("whisper_worker.py");

/// SHA-256 of every file of the Whisper base model directory (`sha256sum` format), the same file
/// `scripts/setup` checks the assembled model against.
pub const MODEL_SUMS: &str = include_str!("whisper-base.sha256");

/// Default time limit: loading plus a generous multiple of the ~0.1 real-time factor, so a busy
/// machine does not fail jobs but a decoder stuck in a loop is stopped.
pub const DEFAULT_TIME_LIMIT: TimeLimit = TimeLimit {
    min: Duration::from_secs(120),
    per_audio_second: 3.0,
};

/// How long a worker may take to load the model before it is given up.
const STARTUP_LIMIT: Duration = Duration::from_secs(180);

/// Where the recognizer finds its runtime and model, and how it decodes.
#[derive(Debug, Clone, PartialEq)]
pub struct WhisperOptions {
    /// The Python interpreter of the venv that holds faster-whisper (`.venv/bin/python3`).
    pub python: PathBuf,
    /// The CTranslate2 model directory (`.models/whisper-base`).
    pub model: PathBuf,
    /// Beam size (1 = greedy; 2, the default: as accurate as 5 on the held-out recognition corpus
    /// for 12-14% less decoding CPU).
    pub beam: u32,
    /// CPU threads per worker process.
    pub threads: usize,
    /// How many worker processes may run at once: the pipeline's worker threads, one process a
    /// job, the idle ones lent to a job's windows.
    pub processes: usize,
}

impl Default for WhisperOptions {
    fn default() -> Self {
        WhisperOptions {
            python: PathBuf::from(".venv/bin/python3"),
            model: PathBuf::from(".models/whisper-base"),
            beam: 2,
            threads: 1,
            processes: 1,
        }
    }
}

/// Checks that the model directory holds every file with the committed SHA-256, and that the
/// interpreter exists. The error is one line naming what is missing and the command that fixes it.
pub fn check_installation(opts: &WhisperOptions) -> Result<(), String> {
    use sha2::{Digest, Sha256};
    let fix = "run scripts/setup in the cuecraft checkout, or choose another --recognizer";
    if !opts.python.is_file() {
        return Err(format!(
            "the whisper recognizer needs the Python runtime {} (faster-whisper), which is missing: {fix}",
            opts.python.display()
        ));
    }
    for line in MODEL_SUMS.lines().filter(|l| !l.trim().is_empty()) {
        let Some((sum, name)) = line.split_once("  ") else {
            continue;
        };
        let path = opts.model.join(name.trim());
        let mut file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(_) => {
                return Err(format!(
                    "the Whisper model file {} is missing: {fix}",
                    path.display()
                ))
            }
        };
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => hasher.update(&buf[..n]),
                Err(e) => return Err(format!("reading {}: {e}: {fix}", path.display())),
            }
        }
        if crate::util::hex(&hasher.finalize()) != sum {
            return Err(format!(
                "the Whisper model file {} does not match its SHA-256 checksum: {fix}",
                path.display()
            ));
        }
    }
    Ok(())
}

/// The whisper recognizer: a pool of worker processes shared by this process's jobs.
///
/// A job takes one process for itself ([`Pool::take`]) and, while no other job waits for one,
/// borrows the idle ones (or starts one, up to [`WhisperOptions::processes`]) to decode its
/// speech windows side by side: a lone long recording uses every core. A borrowed process goes
/// back to the pool after the window it is decoding as soon as another job asks for one, so a
/// busy queue runs one job per process as before.
pub struct WhisperRecognizer {
    opts: WhisperOptions,
    time_limit: TimeLimit,
    pool: Pool,
    next_id: AtomicU64,
    started: AtomicU64,
}

/// The worker processes: the idle ones, how many exist (idle, working or starting) and how many
/// jobs wait for one.
struct Pool {
    state: Mutex<PoolState>,
    freed: Condvar,
    capacity: usize,
}

struct PoolState {
    idle: Vec<Worker>,
    alive: usize,
    waiting: usize,
}

impl Pool {
    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An idle process, or the right to start one (`None`), waiting while every process is busy.
    fn take(&self) -> Option<Worker> {
        let mut state = self.lock();
        loop {
            if let Some(w) = state.idle.pop() {
                return Some(w);
            }
            if state.alive < self.capacity {
                state.alive += 1;
                return None;
            }
            state.waiting += 1;
            state = self
                .freed
                .wait_timeout(state, Duration::from_millis(500))
                .unwrap_or_else(|p| p.into_inner())
                .0;
            state.waiting -= 1;
        }
    }

    /// A process to lend to a job's windows when no job waits for one: an idle one, or the right
    /// to start one (`Some(None)`).
    fn lend(&self) -> Option<Option<Worker>> {
        let mut state = self.lock();
        if state.waiting > 0 {
            return None;
        }
        if let Some(w) = state.idle.pop() {
            return Some(Some(w));
        }
        if state.alive < self.capacity {
            state.alive += 1;
            return Some(None);
        }
        None
    }

    /// Whether a job waits for a process.
    fn wanted(&self) -> bool {
        self.lock().waiting > 0
    }

    fn give_back(&self, worker: Worker) {
        self.lock().idle.push(worker);
        self.freed.notify_all();
    }

    /// A process ended (or never started): its place is free.
    fn forget(&self) {
        let mut state = self.lock();
        state.alive = state.alive.saturating_sub(1);
        drop(state);
        self.freed.notify_all();
    }
}

impl WhisperRecognizer {
    /// A recognizer with these options (nothing is started until the first job).
    pub fn new(opts: WhisperOptions) -> Self {
        let capacity = opts.processes.max(1);
        WhisperRecognizer {
            opts,
            time_limit: DEFAULT_TIME_LIMIT,
            pool: Pool {
                state: Mutex::new(PoolState {
                    idle: Vec::new(),
                    alive: 0,
                    waiting: 0,
                }),
                freed: Condvar::new(),
                capacity,
            },
            next_id: AtomicU64::new(1),
            started: AtomicU64::new(0),
        }
    }

    /// The same recognizer, stopped (and its job failed) when a job runs longer than `limit`.
    pub fn with_time_limit(mut self, limit: TimeLimit) -> Self {
        self.time_limit = limit;
        self
    }

    /// How many worker processes this recognizer has started (each loads the model once).
    pub fn workers_started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// Starts a process in a place the pool has counted; the place is freed when it fails.
    fn start(&self) -> Result<Worker, RecognizeError> {
        self.started.fetch_add(1, Ordering::Relaxed);
        Worker::start(&self.opts).inspect_err(|_| self.pool.forget())
    }

    /// A process of the job's own, waiting for one when all are busy.
    fn take(&self) -> Result<Worker, RecognizeError> {
        match self.pool.take() {
            Some(w) => Ok(w),
            None => self.start(),
        }
    }

    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Runs `ask` on the job's process; a process that ends (killed, crashed) is replaced and
    /// the question asked again, up to [`ATTEMPTS`] times in all.
    fn on_own<T>(
        &self,
        worker: &mut Option<Worker>,
        deadline: Instant,
        mut ask: impl FnMut(&mut Worker, u64) -> Result<T, AskError>,
    ) -> Result<T, AskError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut w = match worker.take() {
                Some(w) => w,
                None => self.take().map_err(|e| AskError::Failed(e.0))?,
            };
            match ask(&mut w, self.id()) {
                Ok(v) => {
                    *worker = Some(w);
                    return Ok(v);
                }
                Err(AskError::Broken(why)) => {
                    drop(w);
                    self.pool.forget();
                    if attempt >= ATTEMPTS || Instant::now() >= deadline {
                        return Err(AskError::Broken(why));
                    }
                    tracing::warn!("whisper worker lost ({why}); asking a new one");
                }
                Err(e) => {
                    *worker = Some(w);
                    return Err(e);
                }
            }
        }
    }
}

/// How many times a question (a window) is asked of a fresh process when its process ends
/// while answering: a killed worker loses nothing, a window that crashes every process fails
/// the job.
const ATTEMPTS: u32 = 3;

impl Recognizer for WhisperRecognizer {
    fn name(&self) -> String {
        "whisper".to_string()
    }

    fn recognize(
        &self,
        wav: &Path,
        language: &str,
        hints: &[String],
    ) -> Result<Recognition, RecognizeError> {
        self.recognize_reporting(wav, language, hints, &|_| {})
    }

    fn recognize_reporting(
        &self,
        wav: &Path,
        language: &str,
        hints: &[String],
        report: &dyn Fn(Progress),
    ) -> Result<Recognition, RecognizeError> {
        let target = WhisperLanguage::from_requested(language)?;
        let deadline = Instant::now() + self.time_limit.for_wav(wav);
        let fail = |e: AskError| RecognizeError(e.message(wav));
        let own = self.take()?;
        // The language each window is decoded in: a code, `Some(None)` (detected in every
        // window), or `None` for `auto` until the first windows tell it.
        let known = match &target {
            WhisperLanguage::Forced { whisper, .. } => Some(Some(whisper.clone())),
            WhisperLanguage::PerWindow => Some(None),
            WhisperLanguage::Auto => None,
        };
        let plan = Plan {
            wav,
            prompt: prompt(hints),
            deadline,
        };
        let decoded = self.decode_all(&plan, own, known, report).map_err(fail)?;
        report(Progress::DONE);
        if decoded.spans.is_empty() {
            let language = match &target {
                WhisperLanguage::Forced { requested, .. } => requested.clone(),
                _ => "und".to_string(),
            };
            return Ok(Recognition {
                language,
                words: Vec::new(),
            });
        }
        // Pieces join within their window only, by the window's language.
        let mut words = Vec::new();
        for (span, run) in decoded.spans.iter().zip(&decoded.pieces) {
            let unspaced = span.2.as_deref().is_some_and(is_unspaced_language);
            words.extend(join_pieces(run, !unspaced));
        }
        let words = collapse_loops(words);
        let language = match &target {
            WhisperLanguage::Forced { requested, .. } => requested.clone(),
            WhisperLanguage::Auto | WhisperLanguage::PerWindow => dominant_language(&decoded.spans)
                .or(decoded.language)
                .unwrap_or_else(|| "und".to_string()),
        };
        Ok(Recognition { language, words })
    }
}

/// What a job's windows are decoded with.
struct Plan<'a> {
    wav: &'a Path,
    prompt: Option<String>,
    deadline: Instant,
}

/// A job's windows decoded: the spans (start, end seconds, language), each window's pieces, and
/// the job's language when it was given or detected once (`None`: detected in every window).
struct Decoding {
    spans: Vec<(f64, f64, Option<String>)>,
    pieces: Vec<Vec<Piece>>,
    language: Option<String>,
}

/// A question on the board: one window to decode (first as it is, or again with the text before
/// it as prompt), or the job's language from its first windows.
#[derive(Debug, Clone)]
struct Item {
    window: usize,
    work: Work,
    attempts: u32,
}

#[derive(Debug, Clone)]
enum Work {
    /// The language of `auto`, from these windows (up to three).
    Detect(Vec<(u64, u64)>),
    /// A window (samples), in this language (`None`: detected in it), with this prompt; `retry`:
    /// the run-on window's greedy second try.
    Decode {
        span: (u64, u64),
        language: Option<String>,
        prompt: Option<String>,
        retry: bool,
    },
}

impl Item {
    fn retry(&self) -> bool {
        matches!(self.work, Work::Decode { retry: true, .. })
    }

    /// Samples of audio the question reads.
    fn length(&self) -> u64 {
        match &self.work {
            Work::Detect(_) => u64::MAX,
            Work::Decode { span, .. } => span.1.saturating_sub(span.0),
        }
    }
}

/// A question's answer.
#[derive(Debug, Clone)]
enum Answer {
    Language(Option<String>),
    Words(Decoded),
}

/// A window's answer.
#[derive(Debug, Clone)]
struct Decoded {
    language: Option<String>,
    words: Vec<Piece>,
}

/// What the job's processes tell the job's loop.
enum Event {
    /// The pass over the file found the next speech window (samples).
    Window((u64, u64)),
    /// The pass is done: the file's length in samples.
    Samples(u64),
    /// The pass failed.
    Failed(AskError),
    /// A question's answer.
    Answer(Item, Result<Answer, AskError>),
}

/// The questions waiting for a process, shared by the processes working on a job.
struct Board {
    queue: VecDeque<Item>,
    stop: bool,
    /// Processes taking questions off the board.
    runners: usize,
    /// The job's own process is still finding the windows.
    passing: bool,
    /// A process could not be started for this job: it borrows no more (each try would load
    /// the model again, for every window).
    no_start: bool,
}

/// The pieces' sentence ends.
fn sentence_ends(words: &[Piece]) -> usize {
    const ENDS: [char; 7] = ['.', '?', '!', '。', '？', '！', '…'];
    words
        .iter()
        .filter(|w| w.text.trim().ends_with(ENDS))
        .count()
}

/// Whether a window reads as one run-on sentence: fewer than one end per 25 words.
fn run_on(words: &[Piece]) -> bool {
    words.len() >= 12 && sentence_ends(words) * 25 < words.len()
}

/// The neutral punctuated sentence the first English window is decoded again with when it comes
/// back run-on.
const NEUTRAL_EN: &str = "Hello, and welcome. Are you ready? Let's begin.";

/// The samples of a 16 kHz mono 16-bit WAV file from its size on disk: the share recognised
/// before the pass over the file has given the exact length.
fn samples_on_disk(wav: &Path) -> u64 {
    std::fs::metadata(wav)
        .map(|m| m.len().saturating_sub(44) / 2)
        .unwrap_or(0)
}

/// The board, also when a process's thread panicked holding it.
fn lock(board: &Mutex<Board>) -> std::sync::MutexGuard<'_, Board> {
    board.lock().unwrap_or_else(|p| p.into_inner())
}

impl WhisperRecognizer {
    /// Finds the speech windows on the job's own process and decodes them on every process the
    /// job has, from the first window found: while the own process still reads the file, a
    /// borrowed one decodes the windows found so far (for `auto`, it first detects the language
    /// on the first three). The answers are merged in window order: the spans (start, end
    /// seconds, language) and each window's pieces.
    ///
    /// Whisper sometimes writes a whole window in lowercase without punctuation. Such a window is
    /// decoded once more with the text of the last well-punctuated window of its language before
    /// it as the prompt (what Whisper's own conditioning on previous text does, but only here,
    /// where it cannot start a loop; for the first English window a neutral punctuated
    /// sentence), and the retry is kept when it has more sentence ends. That prompt depends on
    /// the windows before, so windows are first decoded side by side without it and only a
    /// run-on window waits for the ones before it: the words are those of one process decoding
    /// the windows in order.
    fn decode_all(
        &self,
        plan: &Plan<'_>,
        own: Worker,
        known: Option<Option<String>>,
        report: &dyn Fn(Progress),
    ) -> Result<Decoding, AskError> {
        let board = Mutex::new(Board {
            queue: VecDeque::new(),
            stop: false,
            runners: 0,
            passing: true,
            no_start: false,
        });
        let changed = Condvar::new();
        let (tx, rx) = mpsc::channel::<Event>();
        let began = Instant::now();
        let on_disk = samples_on_disk(plan.wav);
        std::thread::scope(|scope| {
            let run = |worker: Option<Worker>, lent: bool| {
                let tx = tx.clone();
                let (board, changed) = (&board, &changed);
                lock(board).runners += 1;
                scope.spawn(move || {
                    let back = self.runner(plan, worker, lent, board, changed, &tx);
                    if let Some(w) = back {
                        self.pool.give_back(w);
                    }
                    lock(board).runners -= 1;
                    changed.notify_all();
                })
            };
            // The job's own process finds the windows, then decodes like the others.
            {
                let tx = tx.clone();
                let (board, changed) = (&board, &changed);
                scope.spawn(move || {
                    let mut own = Some(own);
                    let mut sent = 0usize;
                    let found = self.on_own(&mut own, plan.deadline, |w, id| {
                        // A process that takes over from one that ended mid-pass finds the same
                        // windows again (the pass is the same bits every time): only the ones
                        // not yet sent go on, so no window is lost or decoded twice.
                        let mut k = 0usize;
                        w.windows(plan.wav, id, plan.deadline, |window| {
                            if k >= sent {
                                let _ = tx.send(Event::Window(window));
                                sent += 1;
                            }
                            k += 1;
                        })
                    });
                    // The outcome is sent before the board says the pass ended: the job's loop
                    // reads the board first, then its messages.
                    let worker = match found {
                        Ok(samples) => {
                            let _ = tx.send(Event::Samples(samples));
                            own.take()
                        }
                        Err(e) => {
                            let _ = tx.send(Event::Failed(e));
                            if let Some(w) = own.take() {
                                self.pool.give_back(w);
                            }
                            None
                        }
                    };
                    {
                        let mut b = lock(board);
                        b.passing = false;
                        if worker.is_some() {
                            b.runners += 1;
                        }
                    }
                    changed.notify_all();
                    if let Some(worker) = worker {
                        let back = self.runner(plan, Some(worker), false, board, changed, &tx);
                        if let Some(w) = back {
                            self.pool.give_back(w);
                        }
                        lock(board).runners -= 1;
                        changed.notify_all();
                    }
                });
            }
            let mut processes = 1;
            let mut windows: Vec<(u64, u64)> = Vec::new();
            let mut samples: Option<u64> = None;
            let mut language = known;
            let mut detecting = false;
            let mut queued = 0;
            let mut tail_ordered = false;
            let mut first: Vec<Option<Decoded>> = Vec::new();
            let mut second: Vec<Option<Decoded>> = Vec::new();
            let mut retrying: Vec<bool> = Vec::new();
            let mut context: HashMap<String, String> = HashMap::new();
            let mut spans = Vec::new();
            let mut pieces: Vec<Vec<Piece>> = Vec::new();
            let (mut speech_found, mut speech_done) = (0.0, 0.0);
            let outcome = loop {
                // Whether every process has ended, read before the messages they sent.
                let idle = {
                    let b = lock(&board);
                    b.runners == 0 && !b.passing
                };
                let mut events: Vec<Event> = rx
                    .recv_timeout(Duration::from_millis(250))
                    .into_iter()
                    .collect();
                events.extend(rx.try_iter());
                let mut failed = None;
                for event in events {
                    match event {
                        Event::Window(w) => {
                            speech_found += w.1.saturating_sub(w.0) as f64;
                            windows.push(w);
                            first.push(None);
                            second.push(None);
                            retrying.push(false);
                        }
                        Event::Samples(n) => {
                            tracing::info!(windows = windows.len(), "speech windows found");
                            samples = Some(n);
                        }
                        Event::Failed(e) | Event::Answer(_, Err(e)) => {
                            failed = Some(e);
                            break;
                        }
                        Event::Answer(_, Ok(Answer::Language(l))) => language = Some(l),
                        Event::Answer(item, Ok(Answer::Words(d))) => {
                            if item.retry() {
                                second[item.window] = Some(d);
                            } else {
                                first[item.window] = Some(d);
                            }
                        }
                    }
                }
                if let Some(e) = failed {
                    break Err(e);
                }
                // `auto`: the language of the first three windows, before any is decoded.
                let enough = windows.len() >= 3 || (samples.is_some() && !windows.is_empty());
                if language.is_none() && !detecting && enough {
                    detecting = true;
                    let head = windows[..windows.len().min(3)].to_vec();
                    lock(&board).queue.push_front(Item {
                        window: 0,
                        work: Work::Detect(head),
                        attempts: 0,
                    });
                    changed.notify_all();
                }
                if let Some(lang) = &language {
                    if queued < windows.len() {
                        let mut b = lock(&board);
                        for (k, span) in windows.iter().enumerate().skip(queued) {
                            b.queue.push_back(Item {
                                window: k,
                                work: Work::Decode {
                                    span: *span,
                                    language: lang.clone(),
                                    prompt: plan.prompt.clone(),
                                    retry: false,
                                },
                                attempts: 0,
                            });
                        }
                        queued = windows.len();
                        drop(b);
                        changed.notify_all();
                    }
                    // The last windows longest first, so the processes finish together
                    // rather than one decoding a long last window while the others wait.
                    if samples.is_some() && !tail_ordered {
                        tail_ordered = true;
                        let mut b = lock(&board);
                        let tail = (2 * self.pool.capacity).min(b.queue.len());
                        let from = b.queue.len() - tail;
                        b.queue.make_contiguous()[from..]
                            .sort_by_key(|i| std::cmp::Reverse(i.length()));
                    }
                }
                // Borrow a process while more questions wait than processes answer them.
                {
                    let b = lock(&board);
                    let more = b.queue.len() > b.runners && !b.no_start;
                    drop(b);
                    if more {
                        if let Some(lent) = self.pool.lend() {
                            run(lent, true);
                            processes += 1;
                        }
                    }
                }
                // Take the windows that are done, in order.
                while pieces.len() < windows.len() {
                    let k = pieces.len();
                    let Some(done) = &first[k] else { break };
                    let lang = language.clone().flatten().or(done.language.clone());
                    if let Some(lang) = &lang {
                        if lang == "en" {
                            context
                                .entry(lang.clone())
                                .or_insert_with(|| NEUTRAL_EN.to_string());
                        }
                    }
                    let mut words = done.words.clone();
                    let retry_prompt = lang
                        .as_ref()
                        .and_then(|l| context.get(l))
                        .filter(|_| run_on(&done.words))
                        .map(|c| match &plan.prompt {
                            Some(p) => format!("{p} {c}"),
                            None => c.clone(),
                        });
                    if let Some(p) = retry_prompt {
                        if !retrying[k] {
                            retrying[k] = true;
                            lock(&board).queue.push_front(Item {
                                window: k,
                                work: Work::Decode {
                                    span: windows[k],
                                    language: language.clone().flatten(),
                                    prompt: Some(p),
                                    retry: true,
                                },
                                attempts: 0,
                            });
                            changed.notify_all();
                        }
                        let Some(again) = &second[k] else { break };
                        if sentence_ends(&again.words) > sentence_ends(&words) {
                            words = again.words.clone();
                        }
                    }
                    if let Some(lang) = &lang {
                        if !words.is_empty() && !run_on(&words) {
                            let text: String = words.iter().map(|w| w.text.as_str()).collect();
                            let text = text.trim();
                            let skip = text.chars().count().saturating_sub(300);
                            context.insert(lang.clone(), text.chars().skip(skip).collect());
                        }
                    }
                    let (s, e) = windows[k];
                    speech_done += e.saturating_sub(s) as f64;
                    spans.push((secs(s), secs(e), lang));
                    pieces.push(words);
                    first[k] = None;
                    second[k] = None;
                    // Until the pass ends, the speech left is that found so far, scaled to
                    // the whole file.
                    let length = samples.unwrap_or(on_disk).max(1) as f64;
                    let speech_total = match (samples, windows.last()) {
                        (None, Some(&(_, end))) if end > 0 => speech_found * length / end as f64,
                        _ => speech_found,
                    };
                    let rate = began.elapsed().as_secs_f64() / speech_done.max(1.0);
                    report(Progress {
                        share: (e as f64 / length).clamp(0.0, 1.0),
                        seconds_left: Some(rate * (speech_total - speech_done).max(0.0)),
                    });
                }
                if samples.is_some() && pieces.len() == windows.len() {
                    tracing::info!(windows = windows.len(), processes, "speech windows decoded");
                    break Ok(Decoding {
                        spans: std::mem::take(&mut spans),
                        pieces: std::mem::take(&mut pieces),
                        language: language.clone().flatten(),
                    });
                }
                if idle {
                    // Every process ended and none could be started again.
                    break Err(AskError::Broken("no worker process is left".into()));
                }
            };
            lock(&board).stop = true;
            changed.notify_all();
            outcome
        })
    }

    /// One process's loop over a job's questions: takes the next one off the board, answers it
    /// and sends the answer. A process that ends while answering puts its question back for
    /// the next process and is replaced. A lent process goes back as soon as another job waits
    /// for one. Returns the process to give back to the pool.
    fn runner(
        &self,
        plan: &Plan<'_>,
        worker: Option<Worker>,
        lent: bool,
        board: &Mutex<Board>,
        changed: &Condvar,
        tx: &mpsc::Sender<Event>,
    ) -> Option<Worker> {
        let cannot_start = || board.lock().unwrap_or_else(|p| p.into_inner()).no_start = true;
        let mut worker = match worker {
            Some(w) => w,
            None => match self.start() {
                Ok(w) => w,
                Err(_) => {
                    cannot_start();
                    return None;
                }
            },
        };
        loop {
            let item = {
                let mut b = board.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    if b.stop || (lent && self.pool.wanted()) {
                        break None;
                    }
                    if let Some(item) = b.queue.pop_front() {
                        break Some(item);
                    }
                    b = changed
                        .wait_timeout(b, Duration::from_millis(200))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            };
            let Some(item) = item else {
                return Some(worker);
            };
            let answer = match &item.work {
                Work::Detect(head) => worker
                    .detect(plan.wav, head, self.id(), plan.deadline)
                    .map(Answer::Language),
                Work::Decode {
                    span,
                    language,
                    prompt,
                    retry,
                } => worker
                    .decode(
                        plan.wav,
                        *span,
                        language.as_deref(),
                        prompt.as_deref(),
                        *retry,
                        self.id(),
                        plan.deadline,
                    )
                    .map(Answer::Words),
            };
            match answer {
                Err(AskError::Broken(why)) => {
                    drop(worker);
                    let timed_out = Instant::now() >= plan.deadline;
                    if timed_out || item.attempts + 1 >= ATTEMPTS {
                        self.pool.forget();
                        let _ = tx.send(Event::Answer(item, Err(AskError::Broken(why))));
                        return None;
                    }
                    tracing::warn!(
                        window = item.window,
                        "whisper worker lost ({why}); its question goes to another"
                    );
                    let mut b = board.lock().unwrap_or_else(|p| p.into_inner());
                    b.queue.push_front(Item {
                        attempts: item.attempts + 1,
                        ..item
                    });
                    drop(b);
                    changed.notify_all();
                    self.started.fetch_add(1, Ordering::Relaxed);
                    match Worker::start(&self.opts) {
                        Ok(w) => worker = w,
                        Err(_) => {
                            self.pool.forget();
                            cannot_start();
                            return None;
                        }
                    }
                }
                answer => {
                    if tx.send(Event::Answer(item, answer)).is_err() {
                        return Some(worker);
                    }
                }
            }
        }
    }
}

fn secs(samples: u64) -> f64 {
    (samples as f64 / 16.0).round() / 1000.0
}

/// The job's language as the worker takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhisperLanguage {
    /// `auto`: detect once from the first windows of speech.
    Auto,
    /// `multilingual`: detect in every window; the job stores the dominant language.
    PerWindow,
    /// A code: Whisper's name for it, and the code the job keeps (`zh-TW` -> `zh`, kept `zh-TW`).
    Forced {
        /// Whisper's code.
        whisper: String,
        /// The code the job was created with.
        requested: String,
    },
}

impl WhisperLanguage {
    /// Maps the contract's `language` to Whisper's; a language Whisper does not know is an error
    /// the user can read (the job fails and is refunded).
    pub fn from_requested(requested: &str) -> Result<Self, RecognizeError> {
        let trimmed = requested.trim();
        if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("auto") {
            return Ok(WhisperLanguage::Auto);
        }
        if trimmed.eq_ignore_ascii_case("multilingual") {
            return Ok(WhisperLanguage::PerWindow);
        }
        let primary = whisper_language(trimmed).unwrap_or_default();
        // ISO 639-1 codes Whisper spells otherwise, and Norwegian Bokmål as plain Norwegian.
        let whisper = match primary.as_str() {
            "jv" => "jw",
            "iw" => "he",
            "nb" => "no",
            "fil" => "tl",
            "zh" if trimmed.to_ascii_lowercase().contains("yue") => "yue",
            other => other,
        };
        if !WHISPER_LANGUAGES.contains(&whisper) {
            return Err(RecognizeError(format!(
                "the whisper recognizer does not know language {trimmed}"
            )));
        }
        Ok(WhisperLanguage::Forced {
            whisper: whisper.to_string(),
            requested: trimmed.to_string(),
        })
    }

    #[cfg(test)]
    fn code(&self) -> &str {
        match self {
            WhisperLanguage::Auto => "auto",
            WhisperLanguage::PerWindow => "multilingual",
            WhisperLanguage::Forced { whisper, .. } => whisper,
        }
    }
}

/// The language codes Whisper's multilingual models know (their tokenizer's list).
pub const WHISPER_LANGUAGES: &[&str] = &[
    "af", "am", "ar", "as", "az", "ba", "be", "bg", "bn", "bo", "br", "bs", "ca", "cs", "cy", "da",
    "de", "el", "en", "es", "et", "eu", "fa", "fi", "fo", "fr", "gl", "gu", "ha", "haw", "he",
    "hi", "hr", "ht", "hu", "hy", "id", "is", "it", "ja", "jw", "ka", "kk", "km", "kn", "ko", "la",
    "lb", "ln", "lo", "lt", "lv", "mg", "mi", "mk", "ml", "mn", "mr", "ms", "mt", "my", "ne", "nl",
    "nn", "no", "oc", "pa", "pl", "ps", "pt", "ro", "ru", "sa", "sd", "si", "sk", "sl", "sn", "so",
    "sq", "sr", "su", "sv", "sw", "ta", "te", "tg", "th", "tk", "tl", "tr", "tt", "uk", "ur", "uz",
    "vi", "yi", "yo", "zh", "yue",
];

/// Languages written without spaces between words: Whisper's pieces are words of their own.
fn is_unspaced_language(code: &str) -> bool {
    matches!(code, "zh" | "yue" | "ja" | "th" | "lo" | "my" | "km" | "bo")
}

/// The language that holds the most speech among the windows.
fn dominant_language(spans: &[(f64, f64, Option<String>)]) -> Option<String> {
    let mut seconds: Vec<(String, f64)> = Vec::new();
    for (start, end, lang) in spans {
        let Some(lang) = lang else { continue };
        let d = (end - start).max(0.0);
        match seconds.iter_mut().find(|(l, _)| l == lang) {
            Some((_, s)) => *s += d,
            None => seconds.push((lang.clone(), d)),
        }
    }
    // The first of the languages with the most speech (min_by keeps the first of equals).
    seconds
        .into_iter()
        .min_by(|a, b| b.1.total_cmp(&a.1))
        .map(|(l, _)| l)
}

/// One piece of a word as Whisper writes it: a leading space starts a new word.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Piece {
    /// The text, with Whisper's leading space.
    #[serde(rename = "w")]
    pub text: String,
    /// Start, seconds.
    #[serde(rename = "s")]
    pub start: f64,
    /// End, seconds.
    #[serde(rename = "e")]
    pub end: f64,
}

/// Joins Whisper's pieces into written words: a piece without a leading space continues the word
/// before it (`o` + `'clock`, `2` + `,000`, `l` + `'hôtel`), keeping the first piece's start and
/// the last one's end. In languages written without spaces every piece is a word. Pieces that are
/// empty after trimming, and Whisper's bracketed non-speech markers, are dropped; times are kept
/// in order (a piece never ends before it starts, a word never starts before the one before it).
pub fn join_pieces(pieces: &[Piece], space_separated: bool) -> Vec<RawWord> {
    let mut words: Vec<RawWord> = Vec::with_capacity(pieces.len());
    let mut open = false; // whether the last word may still grow
    for p in pieces {
        let trimmed = p.text.trim();
        if trimmed.is_empty() {
            continue;
        }
        if !p.start.is_finite() || !p.end.is_finite() {
            continue;
        }
        let is_marker = trimmed.starts_with('[') && trimmed.ends_with(']')
            || trimmed.starts_with('(') && trimmed.ends_with(')') && trimmed.len() > 2;
        if is_marker {
            open = false;
            continue;
        }
        let starts_word = p.text.starts_with(char::is_whitespace);
        let floor = words.last().map_or(0.0, |w| w.start);
        let start = p.start.max(floor).max(0.0);
        let end = p.end.max(start);
        match words.last_mut() {
            Some(last) if open && space_separated && !starts_word => {
                last.text.push_str(trimmed);
                last.end = last.end.max(end);
            }
            _ => words.push(RawWord {
                text: trimmed.to_string(),
                start,
                end,
                speaker: 0,
            }),
        }
        open = true;
    }
    words
}

/// Removes repetition loops, Whisper's known failure: a run of one to eight words repeated more
/// than three times in a row keeps its first three occurrences. Speech rarely repeats a phrase
/// four times; a decoder stuck in a loop does it dozens of times.
pub fn collapse_loops(words: Vec<RawWord>) -> Vec<RawWord> {
    const KEEP: usize = 3;
    let key = |w: &RawWord| -> String {
        w.text
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let keys: Vec<String> = words.iter().map(key).collect();
    let mut keep = vec![true; words.len()];
    let mut i = 0;
    while i < words.len() {
        let mut advanced = false;
        for n in 1..=8 {
            if i + n * (KEEP + 1) > words.len() {
                break;
            }
            let same = |a: usize, b: usize| (0..n).all(|k| keys[a + k] == keys[b + k]);
            let mut reps = 1;
            while i + (reps + 1) * n <= words.len() && same(i, i + reps * n) {
                reps += 1;
            }
            if reps > KEEP && keys[i..i + n].iter().any(|k| !k.is_empty()) {
                for flag in &mut keep[i + KEEP * n..i + reps * n] {
                    *flag = false;
                }
                i += reps * n;
                advanced = true;
                break;
            }
        }
        if !advanced {
            i += 1;
        }
    }
    words
        .into_iter()
        .zip(keep)
        .filter_map(|(w, k)| k.then_some(w))
        .collect()
}

/// Why a question to a worker process got no answer.
#[derive(Debug)]
enum AskError {
    /// The worker answered with an error (the audio could not be read or decoded): the
    /// process is fine, the job fails.
    Reply(String),
    /// The process ended, passed the time limit or answered garbage: it is killed.
    Broken(String),
    /// No process could be started.
    Failed(String),
}

impl AskError {
    /// The job's error, without the server's path of the audio.
    fn message(&self, wav: &Path) -> String {
        match self {
            AskError::Reply(e) => format!(
                "the whisper recognizer could not transcribe the audio: {}",
                scrub(e, wav)
            ),
            AskError::Broken(e) | AskError::Failed(e) => scrub(e, wav),
        }
    }
}

/// One line of a worker's answer (the script's header lists them).
#[derive(Debug, Deserialize)]
struct Line {
    id: Option<u64>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    window: Option<(u64, u64)>,
    #[serde(default)]
    samples: Option<u64>,
    #[serde(default)]
    language: Option<String>,
    #[serde(default)]
    words: Option<Vec<Piece>>,
    #[serde(default)]
    error: Option<String>,
}

/// Starts `cmd` from one thread that lives as long as the server. `PR_SET_PDEATHSIG` follows
/// the thread that started a child, and a worker process outlives the job (and the thread) that
/// started it: a process started by a job's short-lived window thread was killed with that thread
/// at the end of the job, and the next job loaded the model again.
fn spawn_from_a_lasting_thread(cmd: Command) -> std::io::Result<Child> {
    type Request = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: std::sync::OnceLock<Option<Mutex<mpsc::Sender<Request>>>> =
        std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("whisper-spawn".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let Some(spawner) = spawner else {
        return Err(std::io::Error::other("no thread to start workers from"));
    };
    let (tx, rx) = mpsc::channel();
    spawner
        .lock()
        .map_err(|_| std::io::Error::other("the worker starter failed"))?
        .send((cmd, tx))
        .map_err(|_| std::io::Error::other("the worker starter ended"))?;
    rx.recv()
        .map_err(|_| std::io::Error::other("the worker starter ended"))?
}

/// A running worker process.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Worker {
    fn start(opts: &WhisperOptions) -> Result<Worker, RecognizeError> {
        let mut cmd = Command::new(&opts.python);
        cmd.arg("-c")
            .arg(WORKER_SCRIPT)
            .arg("--model")
            .arg(&opts.model)
            .arg("--threads")
            .arg(opts.threads.max(1).to_string())
            .arg("--beam")
            .arg(opts.beam.max(1).to_string())
            .arg("--compute")
            .arg("int8")
            // Nothing may reach a model hub or report telemetry.
            .env("HF_HUB_OFFLINE", "1")
            .env("HF_HUB_DISABLE_TELEMETRY", "1")
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1");
        crate::child::ends_with_server(&mut cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn_from_a_lasting_thread(cmd).map_err(|e| {
            RecognizeError(format!(
                "could not start the whisper recognizer's Python runtime: {}",
                e.kind()
            ))
        })?;
        let stdin = child.stdin.take().ok_or_else(|| broken("no stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| broken("no stdout"))?;
        let stderr_pipe = child.stderr.take().ok_or_else(|| broken("no stderr"))?;
        let (tx, lines) = mpsc::channel();
        std::thread::Builder::new()
            .name("whisper-out".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
            .map_err(|_| broken("could not start a reader thread"))?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr.clone();
        std::thread::Builder::new()
            .name("whisper-err".into())
            .spawn(move || {
                for line in BufReader::new(stderr_pipe).lines() {
                    let Ok(line) = line else { break };
                    tracing::debug!(target: "whisper", "{line}");
                    if let Ok(mut t) = tail.lock() {
                        if t.len() == 20 {
                            t.pop_front();
                        }
                        t.push_back(line);
                    }
                }
            })
            .map_err(|_| broken("could not start a reader thread"))?;
        let mut worker = Worker {
            child,
            stdin,
            lines,
            stderr,
        };
        let deadline = Instant::now() + STARTUP_LIMIT;
        loop {
            let line = worker.next_line(deadline).map_err(|e| {
                RecognizeError(format!("the whisper recognizer did not start: {e}"))
            })?;
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if let Some(fatal) = v.get("fatal").and_then(|f| f.as_str()) {
                tracing::error!("whisper worker: {fatal}");
                return Err(RecognizeError(
                    "the whisper recognizer could not load its model".to_string(),
                ));
            }
            if v.get("ready").is_some() {
                tracing::info!("whisper worker started (model loaded)");
                return Ok(worker);
            }
        }
    }

    /// The next line of output, or why there is none.
    fn next_line(&mut self, deadline: Instant) -> Result<String, String> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(wait) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => {
                Err("it passed its time limit and was stopped".to_string())
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().ok();
                let last = self
                    .stderr
                    .lock()
                    .ok()
                    .and_then(|t| t.iter().rev().find(|l| !l.trim().is_empty()).cloned())
                    .unwrap_or_default();
                tracing::warn!(?status, last_error = %last, "whisper worker ended");
                Err(match status {
                    Some(s) => format!("its process ended ({s})"),
                    None => "its process ended".to_string(),
                })
            }
        }
    }

    /// Sends one request and hands every line of its answer to `each` until the last one
    /// (`done`), an error or `deadline`.
    fn ask(
        &mut self,
        request: &serde_json::Value,
        id: u64,
        deadline: Instant,
        mut each: impl FnMut(Line) -> Result<(), AskError>,
    ) -> Result<(), AskError> {
        let sent = self
            .stdin
            .write_all(request.to_string().as_bytes())
            .and_then(|()| self.stdin.write_all(b"\n"))
            .and_then(|()| self.stdin.flush());
        if sent.is_err() {
            return Err(AskError::Broken(
                "the whisper recognizer's process is gone".to_string(),
            ));
        }
        let started = Instant::now();
        loop {
            let line = self.next_line(deadline).map_err(|e| {
                AskError::Broken(format!(
                    "the whisper recognizer failed after {} s: {e}",
                    started.elapsed().as_secs()
                ))
            })?;
            match serde_json::from_str::<Line>(&line) {
                Ok(line) if line.id == Some(id) => {
                    if let Some(error) = line.error {
                        return Err(AskError::Reply(error));
                    }
                    let done = line.done;
                    each(line)?;
                    if done {
                        return Ok(());
                    }
                }
                _ => continue,
            }
        }
    }

    /// Hands `each` the speech windows of `wav` (samples) in order, as the pass over the file
    /// finds them; returns the file's length in samples.
    fn windows(
        &mut self,
        wav: &Path,
        id: u64,
        deadline: Instant,
        mut each: impl FnMut((u64, u64)),
    ) -> Result<u64, AskError> {
        let request = serde_json::json!({"id": id, "op": "windows", "wav": wav});
        let mut samples = 0;
        self.ask(&request, id, deadline, |line| {
            if let Some((s, e)) = line.window {
                each((s, e.max(s)));
            }
            if let Some(n) = line.samples {
                samples = n;
            }
            Ok(())
        })?;
        Ok(samples)
    }

    /// The language of the first windows (Whisper's code).
    fn detect(
        &mut self,
        wav: &Path,
        windows: &[(u64, u64)],
        id: u64,
        deadline: Instant,
    ) -> Result<Option<String>, AskError> {
        let request = serde_json::json!({"id": id, "op": "detect", "wav": wav, "windows": windows});
        let mut language = None;
        self.ask(&request, id, deadline, |line| {
            language = line.language;
            Ok(())
        })?;
        Ok(language)
    }

    /// One window's pieces and language. `greedy` (a run-on window's second try): temperature 0
    /// only, no pieces when that fails Whisper's checks (whisper_worker.py says why).
    #[allow(clippy::too_many_arguments)]
    fn decode(
        &mut self,
        wav: &Path,
        (start, end): (u64, u64),
        language: Option<&str>,
        prompt: Option<&str>,
        greedy: bool,
        id: u64,
        deadline: Instant,
    ) -> Result<Decoded, AskError> {
        let request = serde_json::json!({
            "id": id, "op": "decode", "wav": wav, "start": start, "end": end,
            "language": language, "prompt": prompt, "greedy": greedy,
        });
        let mut decoded = None;
        self.ask(&request, id, deadline, |line| {
            if line.done {
                decoded = Some(Decoded {
                    language: line.language,
                    words: line.words.unwrap_or_default(),
                });
            }
            Ok(())
        })?;
        decoded.ok_or_else(|| AskError::Broken("the whisper recognizer gave no answer".into()))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn broken(what: &str) -> RecognizeError {
    RecognizeError(format!("the whisper recognizer could not start: {what}"))
}

/// A message without the server's path of the audio file.
fn scrub(message: &str, wav: &Path) -> String {
    let text = message.replace(wav.to_string_lossy().as_ref(), "the audio");
    text.chars().take(500).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str, start: f64, end: f64) -> Piece {
        Piece {
            text: text.to_string(),
            start,
            end,
        }
    }

    fn texts(words: &[RawWord]) -> Vec<&str> {
        words.iter().map(|w| w.text.as_str()).collect()
    }

    #[test]
    fn pieces_without_a_leading_space_join_the_word_before() {
        let words = join_pieces(
            &[
                p(" At", 0.0, 0.2),
                p(" eleven", 0.2, 0.5),
                p(" o", 0.5, 0.6),
                p("'clock,", 0.6, 0.9),
                p(" 2", 1.0, 1.2),
                p(",000", 1.2, 1.5),
                p(" viewers.", 1.5, 2.0),
                p(" l", 2.1, 2.2),
                p("'hôtel", 2.2, 2.6),
            ],
            true,
        );
        assert_eq!(
            texts(&words),
            ["At", "eleven", "o'clock,", "2,000", "viewers.", "l'hôtel"]
        );
        assert_eq!((words[2].start, words[2].end), (0.5, 0.9));
        assert_eq!((words[3].start, words[3].end), (1.0, 1.5));
    }

    #[test]
    fn unspaced_languages_keep_every_piece() {
        let words = join_pieces(&[p("你好", 0.0, 0.4), p("世界", 0.4, 0.8)], false);
        assert_eq!(texts(&words), ["你好", "世界"]);
    }

    #[test]
    fn markers_blanks_and_bad_times_are_dropped_and_times_kept_in_order() {
        let words = join_pieces(
            &[
                p(" [MUSIC]", 0.0, 3.0),
                p("Hello", 3.0, 3.4),
                p(" ", 3.4, 3.5),
                p(" there", f64::NAN, 4.0),
                p(" world", 2.0, 1.0),
            ],
            true,
        );
        assert_eq!(texts(&words), ["Hello", "world"]);
        assert_eq!((words[1].start, words[1].end), (3.0, 3.0));
        // A piece after a dropped marker never joins the word before the marker.
        let words = join_pieces(
            &[
                p(" Yes", 0.0, 1.0),
                p(" [laughs]", 1.0, 2.0),
                p("no", 2.0, 3.0),
            ],
            true,
        );
        assert_eq!(texts(&words), ["Yes", "no"]);
    }

    fn w(text: &str) -> RawWord {
        RawWord {
            text: text.to_string(),
            start: 0.0,
            end: 0.0,
            speaker: 0,
        }
    }

    #[test]
    fn repetition_loops_keep_three_occurrences() {
        let mut input = vec![w("So")];
        for _ in 0..20 {
            input.push(w("thank"));
            input.push(w("you."));
        }
        input.push(w("Bye."));
        let out = collapse_loops(input);
        assert_eq!(
            texts(&out),
            ["So", "thank", "you.", "thank", "you.", "thank", "you.", "Bye."]
        );
        // Three times is speech, not a loop; so are different words.
        let speech: Vec<RawWord> = ["no,", "no,", "no!", "Stop", "it"].map(w).into();
        assert_eq!(collapse_loops(speech.clone()), speech);
    }

    #[test]
    fn language_codes_map_to_whisper_and_keep_the_request() {
        assert_eq!(
            WhisperLanguage::from_requested("auto").unwrap(),
            WhisperLanguage::Auto
        );
        assert_eq!(
            WhisperLanguage::from_requested("multilingual").unwrap(),
            WhisperLanguage::PerWindow
        );
        assert_eq!(
            WhisperLanguage::from_requested("zh-TW").unwrap(),
            WhisperLanguage::Forced {
                whisper: "zh".into(),
                requested: "zh-TW".into()
            }
        );
        assert_eq!(WhisperLanguage::from_requested("nb").unwrap().code(), "no");
        assert_eq!(
            WhisperLanguage::from_requested("en-US").unwrap().code(),
            "en"
        );
        let err = WhisperLanguage::from_requested("tlh").unwrap_err();
        assert_eq!(err.0, "the whisper recognizer does not know language tlh");
        assert!(WhisperLanguage::from_requested("x-").is_err());
    }

    #[test]
    fn the_dominant_language_holds_the_most_speech() {
        let spans = vec![
            (0.0, 10.0, Some("nl".into())),
            (10.0, 14.0, Some("en".into())),
            (14.0, 22.0, Some("en".into())),
        ];
        assert_eq!(dominant_language(&spans).as_deref(), Some("en"));
    }

    #[test]
    fn a_missing_model_is_one_line_naming_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let python = dir.path().join("python3");
        std::fs::write(&python, "").unwrap();
        let opts = WhisperOptions {
            python: python.clone(),
            model: dir.path().join("model"),
            ..WhisperOptions::default()
        };
        let err = check_installation(&opts).unwrap_err();
        assert!(err.contains("config.json is missing"), "{err}");
        assert!(err.contains("scripts/setup"), "{err}");
        assert!(!err.contains('\n'));
        // A file of the right name but other bytes fails its checksum.
        std::fs::create_dir_all(dir.path().join("model")).unwrap();
        std::fs::write(dir.path().join("model/config.json"), "{}").unwrap();
        let err = check_installation(&opts).unwrap_err();
        assert!(err.contains("does not match its SHA-256"), "{err}");
        let err = check_installation(&WhisperOptions {
            python: dir.path().join("nope"),
            ..opts
        })
        .unwrap_err();
        assert!(err.contains("Python runtime"), "{err}");
    }
}
