//! Media: where a job's bytes live ([`MediaStore`]: a local directory, or an S3-compatible bucket
//! with the `s3` feature) and what ffprobe/ffmpeg make of them ([`ffmpeg`]: probe, extract, proxy,
//! peaks).
//!
//! Every media byte — the upload, the editor's WebM proxy, the waveform peaks — is read and
//! written through a [`MediaStore`]; handlers and the pipeline name objects ([`Object`] of a job
//! id), never file paths. ffmpeg needs a file, so the pipeline asks for a [`LocalFile`] (the
//! stored file itself for a local directory, a downloaded copy in the work directory for S3) and
//! hands it to the [`ffmpeg`] functions.
//!
//! The trait is synchronous (blocking I/O): it is called from the pipeline's threads and, in the
//! handlers, from `spawn_blocking`, as rusqlite is. docs/decisions/media.md says why.

pub mod ffmpeg;
mod local;
mod part;
pub mod peaks;
#[cfg(feature = "s3")]
mod s3;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use ffmpeg::{
    compute_peaks, detect_shot_changes, extract_wav, make_proxy, probe, MediaError, Probe,
    PEAKS_PER_SECOND,
};
pub use local::LocalDirectory;
pub use part::sweep_parts;
use part::PartWriter;
#[cfg(feature = "s3")]
pub use s3::S3Bucket;

/// One of a job's media objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Object {
    /// The uploaded file, as uploaded.
    Original,
    /// The editor's proxy of a video: WebM, VP8 and Opus.
    VideoProxy,
    /// The editor's proxy of audio-only media: WebM, Opus.
    AudioProxy,
    /// The waveform's peaks: one byte per 1/[`PEAKS_PER_SECOND`] s.
    Peaks,
    /// The waveform's coarser levels, made from the peaks ([`peaks::coarser_levels`]).
    PeakLevels,
}

impl Object {
    /// Every kind, in the order a job's objects are made.
    pub const ALL: [Object; 5] = [
        Object::Original,
        Object::VideoProxy,
        Object::AudioProxy,
        Object::Peaks,
        Object::PeakLevels,
    ];
}

/// Where a job's media objects are kept. Blocking: call it from a blocking thread (the pipeline's
/// workers, `spawn_blocking`), never on an async worker.
///
/// Writes are all or nothing: an object is visible only once complete ([`ObjectWriter::commit`],
/// [`MediaStore::put_file`]); an abandoned write leaves nothing behind.
pub trait MediaStore: fmt::Debug + Send + Sync {
    /// Where the media live, for logs (`file:///srv/cuecraft/media`, `s3://bucket/prefix`).
    fn describe(&self) -> String;

    /// Whether the store can be reached now (the readiness check, `GET /readyz`): the directory
    /// and its `tmp/` exist, or the bucket answers a request for an object (one that need not
    /// exist: "not found" is an answer).
    fn check(&self) -> io::Result<()>;

    /// The object's size in bytes, `None` when there is no such object.
    fn size(&self, job_id: &str, object: Object) -> io::Result<Option<u64>>;

    /// `len` bytes of the object from byte `first` (the caller keeps the range inside the
    /// object). `NotFound` when there is no such object.
    fn read_range(&self, job_id: &str, object: Object, first: u64, len: u64)
        -> io::Result<Vec<u8>>;

    /// The whole object, `None` when there is none. For small objects (peaks).
    fn read(&self, job_id: &str, object: Object) -> io::Result<Option<Vec<u8>>>;

    /// Starts writing the object. Nothing is visible until [`ObjectWriter::commit`]; a writer
    /// dropped without it leaves nothing behind. A committed object replaces one of the same name.
    fn create(&self, job_id: &str, object: Object) -> io::Result<Box<dyn ObjectWriter>>;

    /// Stores the complete local file `file` as the object and removes the local file (moved
    /// into place on a local directory, uploaded to a bucket).
    fn put_file(&self, job_id: &str, object: Object, file: &Path) -> io::Result<()>;

    /// The object as a local file ffmpeg can read: the stored file itself on a local directory,
    /// else a copy downloaded into `work_dir` that is removed when the [`LocalFile`] is dropped.
    /// `NotFound` when there is no such object.
    fn local_file(&self, job_id: &str, object: Object, work_dir: &Path) -> io::Result<LocalFile>;

    /// Removes every object of the job, the upload included. Removing what is not there is not an
    /// error.
    fn delete_job(&self, job_id: &str) -> io::Result<()>;

    /// Removes one object of the job. Removing what is not there is not an error.
    fn delete(&self, job_id: &str, object: Object) -> io::Result<()>;

    /// Removes the temporary files of writes whose process has ended (a crash mid-upload), never
    /// one still being written ([`sweep_parts`]); how many were removed. Run when the store opens
    /// and periodically by every process.
    fn sweep(&self) -> usize;

    /// A presigned URL the client PUTs the original to directly, with `content_type` and
    /// `size_bytes` signed into it and valid until `expires_unix` (seconds); `None` when the media
    /// arrive through the service's own `PUT /upload/{id}` (a local directory).
    fn presign_upload(
        &self,
        job_id: &str,
        content_type: &str,
        size_bytes: u64,
        expires_unix: i64,
    ) -> io::Result<Option<String>>;

    /// Whether clients upload straight to the store ([`MediaStore::presign_upload`] gives URLs),
    /// so that someone has to look for uploads that arrived ([`MediaStore::accept_upload`]).
    fn takes_direct_uploads(&self) -> bool {
        false
    }

    /// For direct uploads: whether a complete upload of `size_bytes` has arrived at the presigned
    /// URL, in which case it is now the job's [`Object::Original`] (copied out of the client's
    /// reach, so a later PUT to the same URL cannot change it). Always false on a local directory.
    /// Safe to call again, from any process.
    fn accept_upload(&self, job_id: &str, size_bytes: u64) -> io::Result<bool>;

    /// For direct uploads: removes the client's copy once the job has moved on (after
    /// [`MediaStore::accept_upload`] and the status change). Nothing to do on a local directory.
    fn discard_upload(&self, job_id: &str) -> io::Result<()>;
}

/// An object being written; see [`MediaStore::create`].
pub trait ObjectWriter: io::Write + Send {
    /// Makes the written bytes the object.
    fn commit(self: Box<Self>) -> io::Result<()>;
}

/// A media object as a file on this machine, for ffmpeg. A downloaded copy is removed on drop.
#[derive(Debug)]
pub struct LocalFile {
    path: PathBuf,
    temporary: bool,
}

impl LocalFile {
    /// A stored file, left alone on drop.
    pub fn stored(path: PathBuf) -> LocalFile {
        LocalFile {
            path,
            temporary: false,
        }
    }

    /// A copy, removed on drop.
    pub fn copy(path: PathBuf) -> LocalFile {
        LocalFile {
            path,
            temporary: true,
        }
    }
}

impl AsRef<Path> for LocalFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// So that the [`ffmpeg`] functions take `&local_file` as they take a path.
impl std::ops::Deref for LocalFile {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl Drop for LocalFile {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The objects [`make_editor_media`] makes.
pub const EDITOR_MEDIA: [Object; 4] = [
    Object::VideoProxy,
    Object::AudioProxy,
    Object::Peaks,
    Object::PeakLevels,
];

/// Removes the editor's media of a job ([`EDITOR_MEDIA`]), leaving the original: a failed job's
/// proxy and peaks, made beside its recognition, are of no use to anyone.
pub fn remove_editor_media(store: &dyn MediaStore, job_id: &str) -> io::Result<()> {
    for object in EDITOR_MEDIA {
        store.delete(job_id, object)?;
    }
    Ok(())
}

/// Makes the editor's media of a job: a browser-playable proxy ([`make_proxy`]: picture and
/// sound for video, sound alone for audio-only media) and the waveform's peaks
/// ([`compute_peaks`]), each made in `work_dir` and then stored whole. What the store has already
/// is not made again (a step repeated after a crash). Errors are for the operator's log: the job
/// becomes ready without them (the editor then has no playback or no waveform).
pub fn make_editor_media(
    store: &dyn MediaStore,
    job_id: &str,
    work_dir: &Path,
) -> Result<(), String> {
    make_editor_media_from(store, job_id, None, work_dir, false).made
}

/// What [`make_editor_media_from`] did.
#[derive(Debug)]
pub struct EditorMedia {
    /// The shot changes of a video, found by the proxy's pass when the proxy was made now, or by
    /// a pass of their own when asked for and the proxy was there already; `None` for audio-only
    /// media, when neither happened, or when they could not be found.
    pub shot_changes: Option<Vec<cuecraft_engine::Millis>>,
    /// Errors for the operator's log.
    pub made: Result<(), String>,
}

/// [`make_editor_media`] from `input`, the job's original already on this machine (the
/// pipeline's copy while it recognises), or else the store's. A video's shot changes come back
/// when its proxy is made now (found by the same decoding), and with `want_shots` also when the
/// proxy was there already (a detection pass over the picture).
pub fn make_editor_media_from(
    store: &dyn MediaStore,
    job_id: &str,
    input: Option<&Path>,
    work_dir: &Path,
    want_shots: bool,
) -> EditorMedia {
    let mut shot_changes = None;
    let made = make_from(
        store,
        job_id,
        input,
        work_dir,
        want_shots,
        &mut shot_changes,
    );
    EditorMedia { shot_changes, made }
}

fn make_from(
    store: &dyn MediaStore,
    job_id: &str,
    input: Option<&Path>,
    work_dir: &Path,
    want_shots: bool,
    shot_changes: &mut Option<Vec<cuecraft_engine::Millis>>,
) -> Result<(), String> {
    let exists = |o| store.size(job_id, o).map(|s| s.is_some());
    let have_proxy = exists(Object::VideoProxy).map_err(|e| e.to_string())?
        || exists(Object::AudioProxy).map_err(|e| e.to_string())?;
    let have_peaks = exists(Object::Peaks).map_err(|e| e.to_string())?;
    if have_proxy && have_peaks && !want_shots {
        return Ok(());
    }
    std::fs::create_dir_all(work_dir).map_err(|e| format!("work directory: {e}"))?;
    let copy;
    let input: &Path = match input {
        Some(input) => input,
        None => {
            copy = store
                .local_file(job_id, Object::Original, work_dir)
                .map_err(|e| format!("reading the media: {e}"))?;
            &copy
        }
    };
    let mut problems = Vec::new();
    if !have_proxy {
        let out = work_dir.join(format!("{job_id}.proxy.tmp"));
        let made = probe(input).and_then(|p| {
            let shots = make_proxy(input, &out, p.has_video)?;
            let object = if p.has_video {
                Object::VideoProxy
            } else {
                Object::AudioProxy
            };
            store
                .put_file(job_id, object, &out)
                .map_err(MediaError::Io)?;
            *shot_changes = p.has_video.then_some(shots);
            Ok(())
        });
        if let Err(e) = made {
            let _ = std::fs::remove_file(&out);
            problems.push(format!("no playback proxy: {e}"));
        }
    } else if want_shots {
        let scratch = work_dir.join(format!("{job_id}.shots.tmp"));
        let found = probe(input).and_then(|p| {
            p.has_video
                .then(|| detect_shot_changes(input, &scratch))
                .transpose()
        });
        match found {
            Ok(found) => *shot_changes = found,
            Err(e) => problems.push(format!("no shot changes: {e}")),
        }
    }
    if !have_peaks {
        let out = work_dir.join(format!("{job_id}.peaks.tmp"));
        // The levels need every peak; 50 bytes a second (1.8 MB for 10 hours).
        let mut peaks = Vec::new();
        let made = compute_peaks(input, &mut peaks).and_then(|()| {
            std::fs::write(&out, &peaks)
                .and_then(|()| store.put_file(job_id, Object::Peaks, &out))
                .and_then(|()| peaks::store_levels(store, job_id, &peaks))
                .map_err(MediaError::Io)
        });
        if let Err(e) = made {
            let _ = std::fs::remove_file(&out);
            problems.push(format!("no waveform peaks: {e}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Opens the media store that `spec` names (`--media`, `CUECRAFT_MEDIA`):
///
/// - `None` or empty: the directory `DATA_DIR/media` (the single-machine default);
/// - `file:///absolute/path` or `file://relative/path`: that directory;
/// - `s3://bucket[/prefix]?endpoint=URL&region=NAME` (with the `s3` feature): an S3-compatible
///   bucket, credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` (and
///   `AWS_SESSION_TOKEN`); `region` defaults to `AWS_REGION`/`AWS_DEFAULT_REGION`, else
///   `us-east-1`; `endpoint` defaults to `AWS_ENDPOINT_URL`, else AWS itself.
///
/// The directory is created when missing. Errors are one line for the operator.
pub fn open(spec: Option<&str>, data_dir: &Path) -> Result<Arc<dyn MediaStore>, String> {
    let spec = spec.map(str::trim).filter(|s| !s.is_empty());
    match spec {
        None => Ok(Arc::new(LocalDirectory::open(&data_dir.join("media"))?)),
        Some(s) if s.starts_with("file://") => {
            let dir = &s["file://".len()..];
            if dir.is_empty() {
                return Err(format!("--media {s}: no directory after file://"));
            }
            Ok(Arc::new(LocalDirectory::open(Path::new(dir))?))
        }
        Some(s) if s.starts_with("s3://") => open_s3(s),
        Some(s) => Err(format!(
            "--media {s:?}: expected file://DIR or s3://BUCKET?endpoint=URL&region=NAME"
        )),
    }
}

#[cfg(feature = "s3")]
fn open_s3(spec: &str) -> Result<Arc<dyn MediaStore>, String> {
    Ok(Arc::new(S3Bucket::open(spec)?))
}

#[cfg(not(feature = "s3"))]
fn open_s3(spec: &str) -> Result<Arc<dyn MediaStore>, String> {
    Err(format!(
        "--media {spec}: this cuecraft was built without S3 support (cargo feature `s3`)"
    ))
}
