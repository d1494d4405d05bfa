//! The media store of one machine: a directory (by default `DATA_DIR/media`).
//!
//! Layout (unchanged from before the trait): `{id}` the upload, `{id}.video.webm` or
//! `{id}.audio.webm` the editor's proxy, `{id}.peaks` the waveform (`{id}.peaks.levels` its coarser levels), `tmp/` objects being written
//! (`*.part`, renamed into place when complete, so a reader never sees half an object; locked by
//! the process writing them, so that a crashed process's parts are told apart and swept).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::{LocalFile, MediaStore, Object, ObjectWriter, PartWriter};

/// A directory of media files.
#[derive(Debug)]
pub struct LocalDirectory {
    dir: PathBuf,
}

impl LocalDirectory {
    /// Opens (creating) `dir` and removes the temporary files of writes whose process has ended
    /// (a process killed mid-upload; [`super::sweep_parts`]); another process sharing the
    /// directory keeps its uploads in flight, which it holds locked.
    pub fn open(dir: &Path) -> Result<LocalDirectory, String> {
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|e| format!("creating {}: {e}", tmp.display()))?;
        let dir = std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let store = LocalDirectory { dir };
        store.sweep();
        Ok(store)
    }

    fn path(&self, job_id: &str, object: Object) -> io::Result<PathBuf> {
        Ok(self.dir.join(file_name(job_id, object)?))
    }

    fn temp_path(&self, job_id: &str, object: Object) -> io::Result<PathBuf> {
        let suffix = crate::util::hex(&crate::util::random_bytes::<6>()?);
        Ok(self
            .dir
            .join("tmp")
            .join(format!("{}.{suffix}.part", file_name(job_id, object)?)))
    }
}

/// The file name of a job's object. The job id is checked (24 lowercase hex) so that no name
/// can leave the directory.
fn file_name(job_id: &str, object: Object) -> io::Result<String> {
    if !crate::util::is_id(job_id) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a job id"));
    }
    Ok(match object {
        Object::Original => job_id.to_string(),
        Object::VideoProxy => format!("{job_id}.video.webm"),
        Object::AudioProxy => format!("{job_id}.audio.webm"),
        Object::Peaks => format!("{job_id}.peaks"),
        Object::PeakLevels => format!("{job_id}.peaks.levels"),
    })
}

fn absent_is_none<T>(r: io::Result<T>) -> io::Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl MediaStore for LocalDirectory {
    fn describe(&self) -> String {
        format!("file://{}", self.dir.display())
    }

    fn check(&self) -> io::Result<()> {
        for dir in [self.dir.clone(), self.dir.join("tmp")] {
            if !std::fs::metadata(&dir)?.is_dir() {
                return Err(io::Error::other(format!(
                    "{} is not a directory",
                    dir.display()
                )));
            }
        }
        Ok(())
    }

    fn size(&self, job_id: &str, object: Object) -> io::Result<Option<u64>> {
        let meta = absent_is_none(std::fs::metadata(self.path(job_id, object)?))?;
        Ok(meta.filter(|m| m.is_file()).map(|m| m.len()))
    }

    fn read_range(
        &self,
        job_id: &str,
        object: Object,
        first: u64,
        len: u64,
    ) -> io::Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = File::open(self.path(job_id, object)?)?;
        f.seek(SeekFrom::Start(first))?;
        let len = usize::try_from(len).map_err(|_| io::Error::other("range too large"))?;
        let mut out = vec![0u8; len];
        f.read_exact(&mut out)?;
        Ok(out)
    }

    fn read(&self, job_id: &str, object: Object) -> io::Result<Option<Vec<u8>>> {
        absent_is_none(std::fs::read(self.path(job_id, object)?))
    }

    fn create(&self, job_id: &str, object: Object) -> io::Result<Box<dyn ObjectWriter>> {
        let tmp = self.temp_path(job_id, object)?;
        let dest = self.path(job_id, object)?;
        PartWriter::create(tmp, move |tmp| std::fs::rename(tmp, dest))
    }

    fn put_file(&self, job_id: &str, object: Object, file: &Path) -> io::Result<()> {
        let dest = self.path(job_id, object)?;
        match std::fs::rename(file, &dest) {
            Ok(()) => Ok(()),
            // Another file system (a work directory elsewhere): copy under a temporary name, then
            // rename, so the object still appears whole.
            Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
                let tmp = self.temp_path(job_id, object)?;
                let copied = std::fs::copy(file, &tmp).and_then(|_| std::fs::rename(&tmp, &dest));
                if copied.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                copied?;
                std::fs::remove_file(file)
            }
            Err(e) => Err(e),
        }
    }

    fn local_file(&self, job_id: &str, object: Object, _work_dir: &Path) -> io::Result<LocalFile> {
        let path = self.path(job_id, object)?;
        std::fs::metadata(&path)?;
        Ok(LocalFile::stored(path))
    }

    fn delete(&self, job_id: &str, object: Object) -> io::Result<()> {
        match std::fs::remove_file(self.path(job_id, object)?) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    fn sweep(&self) -> usize {
        super::sweep_parts(&self.dir.join("tmp"), |_| true)
    }

    fn delete_job(&self, job_id: &str) -> io::Result<()> {
        for object in Object::ALL {
            match std::fs::remove_file(self.path(job_id, object)?) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        // Writes in flight of this job (an upload streaming right now) lose their file too.
        if let Ok(entries) = std::fs::read_dir(self.dir.join("tmp")) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name.starts_with(job_id) && name.ends_with(".part") {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        Ok(())
    }

    fn presign_upload(
        &self,
        _job_id: &str,
        _content_type: &str,
        _size_bytes: u64,
        _expires_unix: i64,
    ) -> io::Result<Option<String>> {
        Ok(None)
    }

    fn accept_upload(&self, _job_id: &str, _size_bytes: u64) -> io::Result<bool> {
        Ok(false)
    }

    fn discard_upload(&self, _job_id: &str) -> io::Result<()> {
        Ok(())
    }
}
