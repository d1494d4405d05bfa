//! The editor (`/editor/{jobId}`, the API's `editorUrl`), one file per concern:
//!
//! - `page`: the page shell (HTML); `editor.js` loads the rest.
//! - `view`: the editor's data: cues laid out by the same `engine::layout` as the API's
//!   downloads, with the index range of the stored words each cue shows, their QC signals and
//!   (beside a clean version or translation) the original's text; an edit's answer as a patch.
//! - `media`: the media proxy (HTTP Range); `peaks`: the waveform's peaks.
//! - `download`: downloads that answer exactly the API's bytes (plus the project's lead-in).
//! - `ops`: the edit operations on the stored words (`apply_op`); `timing`: a cue's start or
//!   end set to a time or moved by frames (a neighbour moved to keep the gap, or refused).
//! - `find`: find and replace a phrase over the words (across cues; case and whole-word options).
//! - `edit`: POST edit (loads, applies an operation, refuses a merge the layout cannot keep);
//!   `save`: the compare-and-swap save of a revision and the view brought up to date;
//!   `ranges`: the stored words each cue shows (a leaf `edit` and `ops`' tests share).
//! - `history`: the revision list, restore/undo/redo; `entries`: the history's entries (splices,
//!   settings and lead-in changes), replayed to any revision.
//! - `settings`: the layout settings and the lead-in, changed as a revision.
//! - `speakers`: the project's speaker names and the speaker operations (a cue, a selection,
//!   a turn, merging two speakers).
//! - `translations`: adding a translation (a copy of the original or an imported file);
//!   `versions`: an edit of the original carried to the clean version, and the translation
//!   cues whose source changed since they were made or last edited.
//!
//! Every edit names the transcript's revision it was made on; the server applies it to the stored
//! words and saves with compare-and-swap, so a second tab or a colleague gets a conflict rather
//! than overwriting silently. Undo, redo and restore are saves of an earlier revision's words
//! (the history is append-only).

mod download;
mod edit;
mod entries;
mod find;
mod history;
mod media;
mod ops;
mod page;
mod peaks;
mod ranges;
mod save;
mod settings;
mod speakers;
mod timing;
mod translations;
mod versions;
mod view;

#[cfg(test)]
use cuecraft_engine::{Millis, Word};
use hyper::Response;
use serde_json::Value;

use crate::http::Body;
use crate::store::{JobRow, Member};
use crate::util::is_id;

use super::{field, respond_bytes, WebError, WebRequest};

pub use download::download;
pub use edit::edit;
pub use history::{restore, revision_list};
pub use media::media;
pub use page::page;
pub use peaks::peaks;
pub use settings::settings;
pub use speakers::speakers;
pub use translations::add_translation;
pub use view::data;

/// The editor's name of the project's lead-in (frames), shown and sent beside the layout settings
/// but stored apart from the job's settings (`JobRow::lead_in_frames`): not one of the API's.
pub const LEAD_IN: &str = "inCueLeadInFrames";

fn check_id(id: &str) -> Result<(), WebError> {
    if is_id(id) {
        Ok(())
    } else {
        Err(WebError::NotFound)
    }
}

/// The job when the member may see it (404 otherwise, another organisation's included).
fn visible(c: &dyn crate::store::Store, viewer: &Member, id: &str) -> Result<JobRow, WebError> {
    c.visible_job(viewer, id)?.ok_or(WebError::NotFound)
}

/// Which transcript a request names (`transcript` parameter), the original by default.
fn transcript_param(pairs: &[(String, String)]) -> Result<Option<String>, WebError> {
    match field(pairs, "transcript").filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) if is_id(t) => Ok(Some(t.to_string())),
        Some(_) => Err(WebError::NotFound),
    }
}

/// A JSON answer of already serialized bytes.
fn json_bytes(bytes: Vec<u8>) -> Response<Body> {
    respond_bytes(200, "application/json; charset=utf-8", bytes)
}

/// The JSON body of an edit or restore.
fn body_json(req: &WebRequest) -> Result<Value, WebError> {
    serde_json::from_slice(&req.body)
        .map_err(|_| WebError::BadRequest("The body is not JSON.".into()))
}

fn usize_field(v: &Value, name: &str) -> Result<usize, WebError> {
    v.get(name)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| WebError::BadRequest(format!("`{name}` must be a word index.")))
}

/// Three words of two speakers, for the unit tests.
#[cfg(test)]
pub fn test_words() -> Vec<Word> {
    vec![
        Word::new("one", Millis(0), Millis(400), 0),
        Word::new("two", Millis(500), Millis(900), 0),
        Word::new("three", Millis(1000), Millis(1500), 1),
    ]
}
