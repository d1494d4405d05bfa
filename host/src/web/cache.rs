//! The editor's memory of recently used transcripts, so that one edit of a 10-hour transcript
//! neither decodes 5 MB of stored words nor answers all of its cues.
//!
//! A ready transcript's words at a revision never change (an edit saves a new revision; a re-run
//! of recognition replaces an unedited original by a new transcript id), so `(transcript id,
//! revision)` names one word list for good (an edit sends the store only the words it changed,
//! which rewrites only their pages). Kept with it: the last view laid out from it (cues,
//! warnings, the original's text beside them) with what that view was laid out under. An edit
//! compares the view it lays out with the view of the revision it was made on and answers only
//! the cues between their common start and common end.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use cuecraft_engine::{Cue, Word};
use serde_json::Value;

/// Transcripts kept (each a 10-hour transcript's words and cues: about 20 MB).
const CAPACITY: usize = 4;

/// A transcript's words at one revision.
pub struct Stored {
    pub words: Vec<Word>,
}

/// What a view was laid out under: the job's stored settings, its frame rate, and (beside a clean
/// version or translation) the original's transcript id and revision.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ViewKey {
    pub settings: String,
    pub frame_rate: (u32, u32),
    pub source: Option<(String, i64)>,
}

/// The cues the editor shows for a transcript's words under a [`ViewKey`].
pub struct View {
    pub key: ViewKey,
    pub cues: Vec<Cue>,
    /// The first stored word of each cue.
    pub starts: Vec<usize>,
    /// Each cue's labelled signals.
    pub warnings: Vec<Vec<Value>>,
    /// Each cue's original text (empty beside the original itself).
    pub sources: Vec<String>,
    /// Each cue's QC findings: (errors, warnings).
    pub counts: Vec<(u32, u32)>,
    /// The reading pace the QC judged by (`auto` follows the words).
    pub style_cps: Option<u32>,
    pub errors: usize,
    pub warning_count: usize,
    /// The stored words laid out.
    pub word_count: usize,
}

impl View {
    /// Whether cue `a` of this view and cue `b` of `other` show the same thing (their numbers
    /// aside, which shift when cues are added or removed before them).
    pub fn same_cue(&self, a: usize, other: &View, b: usize) -> bool {
        let (x, y) = (&self.cues[a], &other.cues[b]);
        x.start == y.start
            && x.end == y.end
            && x.speaker == y.speaker
            && x.lines == y.lines
            && x.words == y.words
            && self.warnings.get(a) == other.warnings.get(b)
            && self.sources.get(a) == other.sources.get(b)
    }

    /// The cues of `self` that differ from `old`'s: `(from, remove)` of `old` replaced by
    /// `self.cues[from..from + insert]`, as `(from, remove, insert)`.
    pub fn changed_since(&self, old: &View) -> (usize, usize, usize) {
        let (p, n) = (old.cues.len(), self.cues.len());
        let mut from = 0;
        while from < p.min(n) && self.same_cue(from, old, from) {
            from += 1;
        }
        let mut tail = 0;
        while tail < p.min(n) - from && self.same_cue(n - 1 - tail, old, p - 1 - tail) {
            tail += 1;
        }
        (from, p - tail - from, n - tail - from)
    }
}

struct Entry {
    transcript: String,
    revision: i64,
    stored: Arc<Stored>,
    view: Option<Arc<View>>,
}

fn entries() -> MutexGuard<'static, Vec<Entry>> {
    static CACHE: OnceLock<Mutex<Vec<Entry>>> = OnceLock::new();
    let m = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    // A panic while holding the lock cannot leave an entry half-written (entries are replaced
    // whole), so a poisoned cache is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The words of `transcript` at `revision`, if kept.
pub fn stored(transcript: &str, revision: i64) -> Option<Arc<Stored>> {
    let mut list = entries();
    let k = list
        .iter()
        .position(|e| e.transcript == transcript && e.revision == revision)?;
    // Most recently used last.
    let e = list.remove(k);
    let s = e.stored.clone();
    list.push(e);
    Some(s)
}

/// The view of `transcript` at `revision` laid out under `key`, if kept.
pub fn view(transcript: &str, revision: i64, key: &ViewKey) -> Option<Arc<View>> {
    let list = entries();
    list.iter()
        .find(|e| e.transcript == transcript && e.revision == revision)
        .and_then(|e| e.view.clone())
        .filter(|v| &v.key == key)
}

/// Keeps the words (and the view, when given) of `transcript` at `revision`, replacing what was
/// kept of that transcript (only its latest revision is edited further).
pub fn keep(transcript: &str, revision: i64, stored: Arc<Stored>, view: Option<Arc<View>>) {
    let mut list = entries();
    let view = match list
        .iter()
        .position(|e| e.transcript == transcript)
        .map(|k| list.remove(k))
    {
        // The same revision laid out before: keep that view unless a new one is given.
        Some(e) if e.revision == revision && view.is_none() => e.view,
        _ => view,
    };
    if list.len() >= CAPACITY {
        list.remove(0);
    }
    list.push(Entry {
        transcript: transcript.to_string(),
        revision,
        stored,
        view,
    });
}
