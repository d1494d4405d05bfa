//! The editor's memory of recently used transcripts, so that one edit of a 10-hour transcript
//! neither decodes 5 MB of stored words, nor lays all of them out again, nor answers all of its
//! cues.
//!
//! A ready transcript's words at a revision never change (an edit saves a new revision; a re-run
//! of recognition replaces an unedited original by a new transcript id), so `(transcript id,
//! revision)` names one word list for good (an edit sends the store only the words it changed,
//! which rewrites only their pages). Kept with it: the last view laid out from it (an
//! [`cuecraft_engine::Layout`] with its cues, their signals, the original's text beside them) with
//! what that view was laid out under. An edit takes that view, brings its layout up to date (only
//! the chunks around the changed words are laid out again), checks the cues that changed and
//! their neighbour, and answers only the cues that differ ([`Since`]).

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use cuecraft_engine::{Layout, Word};
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
    pub shots: Vec<cuecraft_engine::Millis>,
    pub source: Option<(String, i64)>,
}

/// Which cues of a view differ from the view of the revision before (cues, signals or the text
/// beside them): `remove` cues from `from` replaced by `insert`, out of `base_cues` cues over
/// `base_words` words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Since {
    pub from: usize,
    pub remove: usize,
    pub insert: usize,
    pub base_cues: usize,
    pub base_words: usize,
}

/// The cues the editor shows for a transcript's words under a [`ViewKey`].
#[derive(Clone)]
pub struct View {
    pub key: ViewKey,
    /// The cues, with what brings them up to date after an edit.
    pub layout: Layout,
    /// What changed since the view of the revision this one was made from by an edit.
    pub since: Option<Since>,
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

/// The view of `transcript` at `revision` laid out under `key`, if kept, taken out of the memory
/// to be brought up to date by an edit: the view itself when nobody else holds it, else a copy.
pub fn take_view(transcript: &str, revision: i64, key: &ViewKey) -> Option<View> {
    let view = {
        let mut list = entries();
        let e = list
            .iter_mut()
            .find(|e| e.transcript == transcript && e.revision == revision)?;
        if e.view.as_ref().is_some_and(|v| &v.key != key) {
            return None;
        }
        e.view.take()?
    };
    Some(Arc::try_unwrap(view).unwrap_or_else(|shared| (*shared).clone()))
}

/// Gives back a view taken with [`take_view`] when the edit it was taken for was not saved.
pub fn put_view(transcript: &str, revision: i64, view: View) {
    let mut list = entries();
    if let Some(e) = list
        .iter_mut()
        .find(|e| e.transcript == transcript && e.revision == revision)
    {
        e.view = Some(Arc::new(view));
    }
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
