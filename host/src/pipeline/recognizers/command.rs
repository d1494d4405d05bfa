//! `command:PATH`: any program that prints `{"language", "words": [{text,start,end,speaker}]}` for a WAV.
//!
//! The program is run as `PATH WAV LANGUAGE`, with the custom vocabulary one term per line on its
//! standard input. A non-zero exit or unreadable output fails the job with the program's stderr.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cuecraft_engine::RawWord;
use serde::Deserialize;

use super::{Recognition, RecognizeError, Recognizer};

/// Runs an external program as the recognizer.
#[derive(Debug, Clone)]
pub struct CommandRecognizer {
    program: PathBuf,
}

impl CommandRecognizer {
    /// A recognizer that runs `program`.
    pub fn new(program: impl Into<PathBuf>) -> CommandRecognizer {
        CommandRecognizer {
            program: program.into(),
        }
    }
}

#[derive(Deserialize)]
struct Output {
    language: String,
    words: Vec<RawWord>,
}

impl Recognizer for CommandRecognizer {
    fn name(&self) -> String {
        format!("command:{}", self.program.display())
    }

    fn recognize(
        &self,
        wav: &Path,
        language: &str,
        hints: &[String],
    ) -> Result<Recognition, RecognizeError> {
        let mut child = crate::child::ends_with_server(&mut Command::new(&self.program))
            .arg(wav)
            .arg(language)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                RecognizeError(format!(
                    "could not start recognizer {}: {e}",
                    self.program.display()
                ))
            })?;
        if let Some(mut stdin) = child.stdin.take() {
            // A program that ignores its input may close it early; that is not an error.
            let _ = stdin.write_all(hints.join("\n").as_bytes());
        }
        let out = child
            .wait_with_output()
            .map_err(|e| RecognizeError(format!("recognizer failed: {e}")))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(RecognizeError(format!(
                "recognizer exited with {}: {}",
                out.status,
                stderr.trim()
            )));
        }
        let parsed: Output = serde_json::from_slice(&out.stdout)
            .map_err(|e| RecognizeError(format!("recognizer printed invalid JSON: {e}")))?;
        Ok(Recognition {
            language: parsed.language,
            words: parsed.words,
        })
    }
}
