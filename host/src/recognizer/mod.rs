//! Speech recognizers behind one trait: `pocketsphinx` (default), `whisper-cpp:BIN:MODEL`,
//! `command:PATH`. Each turns a 16 kHz mono WAV file into timed words.

mod command;

use std::path::Path;

use cuecraft_engine::RawWord;

pub use command::CommandRecognizer;

/// What a recognizer heard.
#[derive(Debug, Clone, PartialEq)]
pub struct Recognition {
    /// Language code of the speech (`en`).
    pub language: String,
    /// Timed words, in order, cleaned of filler and silence tokens.
    pub words: Vec<RawWord>,
}

/// Why recognition failed; the message is shown to the user as the job's `error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecognizeError(pub String);

impl std::fmt::Display for RecognizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RecognizeError {}

/// A speech recognizer. Blocking: the pipeline calls it from a worker thread.
pub trait Recognizer: Send + Sync {
    /// The spec it was built from, for logs.
    fn name(&self) -> String;

    /// Recognises `wav` (16 kHz mono 16-bit PCM). `language` is the job's requested language
    /// (`auto`, `multilingual` or a code); `hints` is the custom vocabulary.
    fn recognize(
        &self,
        wav: &Path,
        language: &str,
        hints: &[String],
    ) -> Result<Recognition, RecognizeError>;
}

/// Builds a recognizer from its command-line spec.
pub fn from_spec(spec: &str) -> Result<Box<dyn Recognizer>, String> {
    if let Some(path) = spec.strip_prefix("command:") {
        return Ok(Box::new(CommandRecognizer::new(path)));
    }
    Err(format!(
        "unknown recognizer {spec:?}: expected pocketsphinx, whisper-cpp:BIN:MODEL or command:PATH"
    ))
}
