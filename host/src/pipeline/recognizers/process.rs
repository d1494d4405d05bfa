//! Running a recognizer program with a time limit, so that a decoder that hangs fails its job
//! (which is then refunded) instead of holding a worker for ever.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::RecognizeError;

/// How long a recognizer may run: `min` plus `per_audio_second` for every second of audio.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeLimit {
    /// Time allowed whatever the audio's length (start-up, model loading).
    pub min: Duration,
    /// Seconds allowed per second of audio.
    pub per_audio_second: f64,
}

impl TimeLimit {
    /// The limit for `wav`, whose length is read from its size (16 kHz mono 16-bit: 32000 bytes a
    /// second), so no header parsing can fail here.
    pub fn for_wav(&self, wav: &Path) -> Duration {
        let bytes = std::fs::metadata(wav).map(|m| m.len()).unwrap_or(0);
        let audio_seconds = bytes.saturating_sub(44) as f64 / 32_000.0;
        let extra = (audio_seconds * self.per_audio_second).clamp(0.0, 7.0 * 24.0 * 3600.0);
        self.min + Duration::from_secs_f64(extra)
    }
}

/// Runs `cmd` (stdin closed, stdout and stderr captured) and kills it when `limit` passes.
/// `what` names the program in error messages.
pub fn run_limited(
    cmd: &mut Command,
    limit: Duration,
    what: &str,
) -> Result<Output, RecognizeError> {
    let mut child = crate::child::ends_with_server(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| RecognizeError(format!("could not start {what}: {e}")))?;
    // Both pipes are drained on their own threads so a chatty program never blocks on a full pipe.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RecognizeError(format!(
                    "{what} ran longer than {} s and was stopped",
                    limit.as_secs()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                return Err(RecognizeError(format!(
                    "{what} could not be waited for: {e}"
                )))
            }
        }
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_past_its_limit_is_stopped() {
        let started = Instant::now();
        let err = run_limited(
            Command::new("sh").args(["-c", "echo partial; sleep 30"]),
            Duration::from_secs(1),
            "the decoder",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the decoder ran longer than 1 s and was stopped"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn output_of_a_program_within_its_limit_is_kept() {
        let out = run_limited(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(30),
            "x",
        )
        .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn limits_grow_with_the_audio() {
        let dir = tempfile::tempdir().unwrap();
        let wav = dir.path().join("a.wav");
        std::fs::write(&wav, vec![0u8; 44 + 32_000 * 10]).unwrap();
        let limit = TimeLimit {
            min: Duration::from_secs(60),
            per_audio_second: 3.0,
        };
        assert_eq!(limit.for_wav(&wav), Duration::from_secs(90));
        assert_eq!(
            limit.for_wav(&dir.path().join("missing.wav")),
            Duration::from_secs(60)
        );
    }
}
