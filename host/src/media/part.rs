//! Objects in the making: a local file under a temporary name (`*.part`), owned by the process
//! writing it through an exclusive `flock` it holds until the write ends, and the sweep that
//! removes the parts no live process owns (a process killed mid-upload), at once and never one
//! still being written.
//!
//! A part is created as `NAME.part.new`, locked, and only then renamed to `NAME.part`: a `.part`
//! whose lock can be taken therefore always belongs to an ended process, never to one that has
//! made its file but not yet locked it. The lock belongs to the open file, so it holds under the
//! new name, and through the commit (a rename into place, or an upload to a bucket).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::ObjectWriter;

/// A `.part.new` (made, not yet locked and renamed: a window of microseconds) untouched this long
/// was left by a crash inside that window.
const UNNAMED_PART: Duration = Duration::from_secs(60);

/// An object being written through a local file under a temporary name (buffered), handed on
/// commit to `place` (renamed into place on a local directory, uploaded to a bucket); the
/// temporary file is removed when the writer drops (after a rename there is nothing left to
/// remove), so an abandoned write leaves nothing behind — and a crash leaves a part whose lock
/// the next [`sweep_parts`] can take.
pub(super) struct PartWriter<P> {
    out: Option<io::BufWriter<File>>,
    tmp: PathBuf,
    place: Option<P>,
    /// The open file that holds the lock, kept until the writer drops.
    _lock: File,
}

impl<P> PartWriter<P>
where
    P: FnOnce(&Path) -> io::Result<()> + Send + 'static,
{
    /// Creates `tmp` (which must end in `.part`) locked, to be handed to `place` on commit.
    pub(super) fn create(tmp: PathBuf, place: P) -> io::Result<Box<dyn ObjectWriter>> {
        let lock = create_locked(&tmp)?;
        let file = lock.try_clone()?;
        Ok(Box::new(PartWriter {
            out: Some(io::BufWriter::with_capacity(1 << 20, file)),
            tmp,
            place: Some(place),
            _lock: lock,
        }))
    }
}

/// Makes `path` under the name `path.new`, locks it, then renames it to `path`.
fn create_locked(path: &Path) -> io::Result<File> {
    let mut unnamed = path.as_os_str().to_owned();
    unnamed.push(".new");
    let unnamed = PathBuf::from(unnamed);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&unnamed)?;
    if !crate::util::try_lock(&file) {
        let _ = std::fs::remove_file(&unnamed);
        return Err(io::Error::other("could not lock a new temporary file"));
    }
    if let Err(e) = std::fs::rename(&unnamed, path) {
        let _ = std::fs::remove_file(&unnamed);
        return Err(e);
    }
    Ok(file)
}

impl<P: Send> Write for PartWriter<P> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out
            .as_mut()
            .ok_or_else(|| io::Error::other("written after commit"))?
            .write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.out.as_mut() {
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }
}

impl<P> ObjectWriter for PartWriter<P>
where
    P: FnOnce(&Path) -> io::Result<()> + Send + 'static,
{
    fn commit(mut self: Box<Self>) -> io::Result<()> {
        let out = self
            .out
            .take()
            .ok_or_else(|| io::Error::other("committed twice"))?;
        // Not fsynced: a process crash keeps the page cache; after a power loss a damaged
        // upload fails its job with a refund (docs/decisions/api.md, presigned upload).
        out.into_inner().map_err(|e| e.into_error())?;
        let place = self
            .place
            .take()
            .ok_or_else(|| io::Error::other("committed twice"))?;
        place(&self.tmp)
    }
}

impl<P> Drop for PartWriter<P> {
    fn drop(&mut self) {
        self.out = None;
        // Removed while still locked; the lock goes with `_lock` after this.
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// Removes the parts in `dir` whose name `ours` accepts and whose lock can be taken (their
/// process has ended), and `.part.new` files left by a crash between making and locking one;
/// how many were removed. A part being written is locked by its writer and stays.
pub fn sweep_parts(dir: &Path, ours: impl Fn(&str) -> bool) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let unnamed = name.ends_with(".part.new");
        if !(name.ends_with(".part") || unnamed) || !ours(&name) {
            continue;
        }
        if unnamed {
            let age = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok());
            if age.is_none_or(|a| a < UNNAMED_PART) {
                continue;
            }
        }
        let path = entry.path();
        // Read-only is enough for flock; a part gone meanwhile (committed) is skipped.
        let Ok(file) = File::open(&path) else {
            continue;
        };
        if !crate::util::try_lock(&file) {
            continue;
        }
        // Locked by this sweep now: no writer can hold it any more. Removed by path: a part
        // committed (renamed) since it was opened is not there, and its object stays whole.
        match std::fs::remove_file(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("could not remove {}: {e}", path.display()),
        }
    }
    if removed > 0 {
        tracing::info!(
            dir = %dir.display(),
            removed,
            "removed the temporary files of writes whose process has ended"
        );
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_part_being_written_stays_and_one_whose_writer_is_gone_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let dest = dir.join("object");
        let dest2 = dest.clone();
        let mut live =
            PartWriter::create(dir.join("a.part"), move |t| std::fs::rename(t, &dest2)).unwrap();
        live.write_all(b"half an upload").unwrap();
        live.flush().unwrap();
        // A part of a process that ended: nobody holds its lock (the kernel dropped it).
        std::fs::write(dir.join("b.part"), b"left by a crash").unwrap();
        // Not ours by name: left alone whatever its lock.
        std::fs::write(dir.join("other.part"), b"someone else's").unwrap();
        let removed = sweep_parts(dir, |n| n != "other.part");
        assert_eq!(removed, 1);
        assert_eq!(parts(dir), ["a.part", "other.part"]);
        // The live write goes on and commits whole; nothing is left in the making.
        live.write_all(b", then the rest").unwrap();
        live.commit().unwrap();
        assert_eq!(
            std::fs::read(&dest).unwrap(),
            b"half an upload, then the rest"
        );
        assert_eq!(parts(dir), ["object", "other.part"]);
        assert_eq!(sweep_parts(dir, |_| true), 1);
        assert_eq!(parts(dir), ["object"]);
    }

    #[test]
    fn an_abandoned_writer_removes_its_part_and_a_fresh_unnamed_part_stays() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut w = PartWriter::create(dir.join("a.part"), |_| Ok(())).unwrap();
        w.write_all(b"x").unwrap();
        drop(w);
        // Made but not yet locked and renamed by a process starting now: young, so it stays.
        std::fs::write(dir.join("c.part.new"), b"").unwrap();
        assert_eq!(sweep_parts(dir, |_| true), 0);
        assert_eq!(parts(dir), ["c.part.new"]);
    }
}
