//! The in-process claims of streaming uploads (`PUT /upload/{jobId}`), held in [`crate::http::App`]
//! and taken by the upload handler.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The jobs whose upload is streaming right now: at most one PUT per job at a time.
///
/// In memory, because one server process serves a data directory; a restart ends every upload in
/// flight anyway (their clients see the connection drop and retry).
#[derive(Debug, Default)]
pub struct UploadClaims {
    jobs: Arc<Mutex<HashSet<String>>>,
}

impl UploadClaims {
    /// Claims `job_id` for one upload; `None` while another upload holds it. The claim is released
    /// when the returned guard is dropped, whatever way the upload ends (refused, failed, finished,
    /// or its connection dropped mid-body).
    pub fn claim(&self, job_id: &str) -> Option<UploadClaim> {
        let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        if !jobs.insert(job_id.to_string()) {
            return None;
        }
        Some(UploadClaim {
            jobs: self.jobs.clone(),
            job_id: job_id.to_string(),
            tmp: None,
        })
    }

    /// Whether an upload of `job_id` is streaming.
    pub fn is_claimed(&self, job_id: &str) -> bool {
        self.jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(job_id)
    }
}

/// One upload's hold on its job, and its temporary file until it is renamed into place.
#[derive(Debug)]
pub struct UploadClaim {
    jobs: Arc<Mutex<HashSet<String>>>,
    job_id: String,
    /// The upload's temporary file, removed on drop unless taken out (renamed into place).
    pub tmp: Option<PathBuf>,
}

impl Drop for UploadClaim {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            // Not renamed into place: the upload did not win, so its bytes go.
            let _ = std::fs::remove_file(tmp);
        }
        self.jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.job_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_claim_per_job_released_on_drop_with_its_temporary_file() {
        let claims = UploadClaims::default();
        let dir = tempfile::tempdir().expect("temp dir");
        let tmp = dir.path().join("job.part");
        std::fs::write(&tmp, b"partial").expect("write");

        let mut first = claims.claim("job").expect("first claim");
        first.tmp = Some(tmp.clone());
        assert!(claims.claim("job").is_none(), "a second upload is refused");
        let other = claims
            .claim("another job")
            .expect("other jobs are independent");
        assert!(claims.is_claimed("job") && claims.is_claimed("another job"));

        drop(first);
        assert!(!tmp.exists(), "a losing upload's file is removed");
        assert!(!claims.is_claimed("job"));
        let retry = claims.claim("job").expect("released: the retry claims it");
        drop(retry);
        drop(other);
        assert!(!claims.is_claimed("job") && !claims.is_claimed("another job"));
    }
}
