//! Speech recognizers behind one trait: `whisper` (default: Whisper base through faster-whisper),
//! `pocketsphinx`, `whisper-cpp:BIN:MODEL`, `command:PATH`. Each turns a 16 kHz mono WAV file
//! into timed words.

mod command;
mod faster_whisper;
mod pocketsphinx;
mod process;
mod whisper;

use std::path::Path;

use cuecraft_engine::RawWord;

pub use command::CommandRecognizer;
pub use faster_whisper::{
    check_installation as check_whisper_installation, collapse_loops, join_pieces, Piece,
    WhisperLanguage, WhisperOptions, WhisperRecognizer, WHISPER_LANGUAGES,
};
pub use pocketsphinx::PocketsphinxRecognizer;
pub use process::TimeLimit;
pub use whisper::{parse_json as parse_whisper_json, WhisperCppRecognizer};

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

/// How far a recognition has come: handed to the pipeline, which keeps it for the people waiting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// The share of the recording recognised, 0 to 1: up to the end of the last window done in
    /// order (silence between windows counts as done once passed).
    pub share: f64,
    /// The time left, from the decoding time of the speech done so far and the speech left;
    /// `None` until a window is done.
    pub seconds_left: Option<f64>,
}

impl Progress {
    /// Finished.
    pub const DONE: Progress = Progress {
        share: 1.0,
        seconds_left: Some(0.0),
    };
}

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

    /// [`Recognizer::recognize`], telling `report` how far it has come as it goes (whisper does,
    /// window by window; the others only finish).
    fn recognize_reporting(
        &self,
        wav: &Path,
        language: &str,
        hints: &[String],
        report: &dyn Fn(Progress),
    ) -> Result<Recognition, RecognizeError> {
        let recognition = self.recognize(wav, language, hints)?;
        report(Progress::DONE);
        Ok(recognition)
    }
}

/// Builds a recognizer from its command-line spec with the default whisper options.
pub fn from_spec(spec: &str) -> Result<Box<dyn Recognizer>, String> {
    from_spec_with(spec, &WhisperOptions::default())
}

/// Builds a recognizer from its command-line spec.
///
/// `whisper` (the default) runs Whisper base through faster-whisper as `whisper` describes
/// (`opts`: the venv's interpreter, the model directory, beam and threads); `pocketsphinx` uses Debian's models under `/usr/share/pocketsphinx/model`;
/// `whisper-cpp:BIN:MODEL` runs the whisper.cpp binary `BIN` with the model file `MODEL` (the first
/// `:` after `BIN` separates them, so `BIN` cannot contain one); `command:PATH` runs any program.
pub fn from_spec_with(spec: &str, opts: &WhisperOptions) -> Result<Box<dyn Recognizer>, String> {
    if spec == "whisper" {
        return Ok(Box::new(WhisperRecognizer::new(opts.clone())));
    }
    if spec == "pocketsphinx" {
        return Ok(Box::new(PocketsphinxRecognizer::default()));
    }
    if let Some(rest) = spec.strip_prefix("whisper-cpp:") {
        return match rest.split_once(':') {
            Some((bin, model)) if !bin.is_empty() && !model.is_empty() => {
                Ok(Box::new(WhisperCppRecognizer::new(bin, model)))
            }
            _ => Err(format!(
                "recognizer {spec:?}: expected whisper-cpp:BIN:MODEL (the whisper.cpp binary and its model file)"
            )),
        };
    }
    if let Some(path) = spec.strip_prefix("command:").filter(|p| !p.is_empty()) {
        return Ok(Box::new(CommandRecognizer::new(path)));
    }
    Err(format!(
        "unknown recognizer {spec:?}: expected whisper, pocketsphinx, whisper-cpp:BIN:MODEL or command:PATH"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_their_recognizer() {
        assert_eq!(from_spec("whisper").unwrap().name(), "whisper");
        assert_eq!(from_spec("pocketsphinx").unwrap().name(), "pocketsphinx");
        assert_eq!(
            from_spec("whisper-cpp:/opt/w/whisper-cli:/opt/w/ggml-base.bin")
                .unwrap()
                .name(),
            "whisper-cpp:/opt/w/whisper-cli:/opt/w/ggml-base.bin"
        );
        assert_eq!(
            from_spec("command:/usr/local/bin/asr").unwrap().name(),
            "command:/usr/local/bin/asr"
        );
    }

    #[test]
    fn incomplete_specs_are_refused() {
        for spec in [
            "",
            "whisper:",
            "whisper-cpp:",
            "whisper-cpp:/bin/w",
            "whisper-cpp::m",
            "command:",
        ] {
            assert!(from_spec(spec).is_err(), "{spec:?}");
        }
    }
}
