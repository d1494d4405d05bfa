//! `whisper-cpp:BIN:MODEL`: drives a whisper.cpp command-line binary and ggml model the operator
//! provides (nothing is downloaded by cuecraft).
//!
//! It runs `BIN -m MODEL -f WAV -l LANG -oj -ml 1 -sow -of PREFIX [--prompt HINTS]`: with a maximum
//! segment length of one character and splitting on words, every JSON segment is one word with its
//! own `offsets` (milliseconds). Segments, unlike the sub-word tokens of `-ojf`, always hold whole
//! UTF-8 characters. whisper.cpp writes `PREFIX.json`, which is read and removed.
//!
//! Custom vocabulary goes into whisper's initial prompt (`--prompt "Glossary: a, b, c."`), which
//! biases it toward those spellings; the prompt is capped because whisper reads at most half its
//! text context (224 tokens) of it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cuecraft_engine::RawWord;
use serde::Deserialize;

use super::process::{run_limited, TimeLimit};
use super::{Recognition, RecognizeError, Recognizer};

/// Characters of custom vocabulary put in the prompt; about 200 tokens of English.
const MAX_PROMPT_CHARS: usize = 600;

/// Default time limit: large whisper models on a CPU can run slower than real time.
pub const DEFAULT_TIME_LIMIT: TimeLimit = TimeLimit {
    min: Duration::from_secs(300),
    per_audio_second: 20.0,
};

/// The whisper.cpp recognizer.
#[derive(Debug, Clone)]
pub struct WhisperCppRecognizer {
    program: PathBuf,
    model: PathBuf,
    time_limit: TimeLimit,
}

impl WhisperCppRecognizer {
    /// A recognizer running `program` with the ggml model file `model`.
    pub fn new(program: impl Into<PathBuf>, model: impl Into<PathBuf>) -> Self {
        WhisperCppRecognizer {
            program: program.into(),
            model: model.into(),
            time_limit: DEFAULT_TIME_LIMIT,
        }
    }

    /// The same recognizer, stopped (and its job failed) when it runs longer than `limit`.
    pub fn with_time_limit(mut self, limit: TimeLimit) -> Self {
        self.time_limit = limit;
        self
    }
}

impl Recognizer for WhisperCppRecognizer {
    fn name(&self) -> String {
        format!(
            "whisper-cpp:{}:{}",
            self.program.display(),
            self.model.display()
        )
    }

    fn recognize(
        &self,
        wav: &Path,
        language: &str,
        hints: &[String],
    ) -> Result<Recognition, RecognizeError> {
        let wanted = whisper_language(language);
        let mut prefix = wav.as_os_str().to_owned();
        prefix.push(".whisper");
        let prefix = PathBuf::from(prefix);
        let mut json_path = prefix.as_os_str().to_owned();
        json_path.push(".json");
        let json_path = PathBuf::from(json_path);
        // A file left by an earlier, interrupted attempt must not pass for this run's output.
        let _ = std::fs::remove_file(&json_path);

        let mut cmd = Command::new(&self.program);
        cmd.arg("-m")
            .arg(&self.model)
            .arg("-f")
            .arg(wav)
            .arg("-l")
            .arg(wanted.as_deref().unwrap_or("auto"))
            .args(["-oj", "-ml", "1", "-sow", "-of"])
            .arg(&prefix);
        if let Some(prompt) = prompt(hints) {
            cmd.arg("--prompt").arg(prompt);
        }
        let out = run_limited(&mut cmd, self.time_limit.for_wav(wav), "whisper.cpp")?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let json = std::fs::read(&json_path);
        let _ = std::fs::remove_file(&json_path);
        if !out.status.success() {
            return Err(RecognizeError(format!(
                "whisper.cpp failed ({}): {}",
                out.status,
                error_lines(&stderr, wav)
            )));
        }
        let json = match json {
            Ok(bytes) => bytes,
            // whisper.cpp exits 0 after printing its usage for an unknown language.
            Err(_) if stderr.contains("unknown language") => {
                return Err(RecognizeError(format!(
                    "whisper.cpp does not know language {}",
                    language.trim()
                )))
            }
            Err(_) => {
                return Err(RecognizeError(format!(
                    "whisper.cpp wrote no JSON output: {}",
                    error_lines(&stderr, wav)
                )))
            }
        };
        let recognition = parse_json(&json)?;
        if let Some(wanted) = wanted {
            // An English-only model ignores `-l` and transcribes as English anyway.
            if recognition.language != wanted {
                return Err(RecognizeError(format!(
                    "the whisper.cpp model does not support language {}; it recognised {}",
                    language.trim(),
                    recognition.language
                )));
            }
        }
        Ok(recognition)
    }
}

/// whisper's language argument: `None` for automatic detection, else the primary subtag
/// (`en-US` -> `en`, `zh-TW` -> `zh`), which is how whisper names its languages.
pub(super) fn whisper_language(requested: &str) -> Option<String> {
    let lc = requested.trim().to_ascii_lowercase();
    if matches!(lc.as_str(), "" | "auto" | "multilingual") {
        return None;
    }
    lc.split(['-', '_'])
        .next()
        .filter(|p| !p.is_empty())
        .map(str::to_string)
}

/// The custom vocabulary as whisper's initial prompt, cut at a whole term.
pub(super) fn prompt(hints: &[String]) -> Option<String> {
    let mut terms: Vec<&str> = Vec::new();
    let mut len = 0;
    for term in hints.iter().map(|h| h.trim()).filter(|h| !h.is_empty()) {
        let added = term.chars().count() + 2;
        if len + added > MAX_PROMPT_CHARS {
            break;
        }
        len += added;
        terms.push(term);
    }
    (!terms.is_empty()).then(|| format!("Glossary: {}.", terms.join(", ")))
}

/// whisper.cpp's error lines, else its last line, without the server's path of the audio file.
fn error_lines(stderr: &str, wav: &Path) -> String {
    let errors: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("error") || l.contains("failed"))
        .collect();
    let text = if errors.is_empty() {
        stderr
            .lines()
            .last()
            .unwrap_or("no output")
            .trim()
            .to_string()
    } else {
        errors.join("; ")
    };
    let text = text.replace(wav.to_string_lossy().as_ref(), "the audio");
    text.chars().take(500).collect()
}

#[derive(Deserialize)]
struct WhisperJson {
    result: Option<WhisperResult>,
    params: Option<WhisperParams>,
    #[serde(default)]
    transcription: Vec<Segment>,
}

#[derive(Deserialize)]
struct WhisperResult {
    language: Option<String>,
}

#[derive(Deserialize)]
struct WhisperParams {
    language: Option<String>,
}

#[derive(Deserialize)]
struct Segment {
    offsets: Offsets,
    text: String,
}

#[derive(Deserialize)]
struct Offsets {
    from: i64,
    to: i64,
}

/// Parses whisper.cpp's `-oj` JSON written with `-ml 1 -sow`: one word per segment.
///
/// Invalid UTF-8 (whisper writes raw bytes) is replaced rather than refused; empty segments and
/// whisper's non-speech markers such as `[BLANK_AUDIO]` or `[MUSIC]` are dropped.
pub fn parse_json(bytes: &[u8]) -> Result<Recognition, RecognizeError> {
    let text = String::from_utf8_lossy(bytes);
    let parsed: WhisperJson = serde_json::from_str(&text)
        .map_err(|e| RecognizeError(format!("whisper.cpp wrote invalid JSON: {e}")))?;
    let language = parsed
        .result
        .and_then(|r| r.language)
        .or_else(|| parsed.params.and_then(|p| p.language))
        .filter(|l| !l.is_empty() && l != "auto")
        .unwrap_or_else(|| "en".to_string());
    let mut words = Vec::new();
    for segment in parsed.transcription {
        let start = segment.offsets.from.max(0) as f64 / 1000.0;
        let end = segment.offsets.to.max(0) as f64 / 1000.0;
        // With -sow a segment is a word, but a long word may still carry a space inside.
        for token in segment.text.split_whitespace() {
            if token.starts_with('[') && token.ends_with(']') {
                continue;
            }
            words.push(RawWord {
                text: token.to_string(),
                start,
                end: end.max(start),
                speaker: 0,
            });
        }
    }
    Ok(Recognition { language, words })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_means_detection_and_codes_lose_their_region() {
        assert_eq!(whisper_language("auto"), None);
        assert_eq!(whisper_language("multilingual"), None);
        assert_eq!(whisper_language("en-US").as_deref(), Some("en"));
        assert_eq!(whisper_language("zh-TW").as_deref(), Some("zh"));
        assert_eq!(whisper_language("nl").as_deref(), Some("nl"));
    }

    #[test]
    fn prompt_lists_terms_and_stops_at_a_whole_term() {
        assert_eq!(prompt(&[]), None);
        assert_eq!(
            prompt(&["Cuecraft".into(), " ".into(), "EBU-STL".into()]).as_deref(),
            Some("Glossary: Cuecraft, EBU-STL.")
        );
        let many: Vec<String> = (0..1000).map(|i| format!("term{i:04}")).collect();
        let p = prompt(&many).unwrap();
        assert!(p.chars().count() <= MAX_PROMPT_CHARS + 20, "{}", p.len());
        assert!(p.ends_with("term0059."), "{p}");
    }

    #[test]
    fn blank_audio_markers_and_empty_segments_are_dropped() {
        let json = br#"{"result":{"language":"de"},"transcription":[
            {"offsets":{"from":0,"to":1000},"text":"[BLANK_AUDIO]"},
            {"offsets":{"from":1000,"to":1400},"text":" Guten"},
            {"offsets":{"from":1400,"to":1400},"text":""},
            {"offsets":{"from":1400,"to":1900},"text":" Tag."}]}"#;
        let r = parse_json(json).unwrap();
        assert_eq!(r.language, "de");
        let texts: Vec<&str> = r.words.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(texts, ["Guten", "Tag."]);
        assert_eq!((r.words[1].start, r.words[1].end), (1.4, 1.9));
    }

    #[test]
    fn invalid_utf8_and_bad_json_do_not_panic() {
        let mut json = br#"{"transcription":[{"offsets":{"from":0,"to":500},"text":" caf"#.to_vec();
        json.extend_from_slice(&[0xC3, b'"', b'}', b']', b'}']);
        let r = parse_json(&json).unwrap();
        assert_eq!(r.language, "en");
        assert_eq!(r.words[0].text, "caf\u{FFFD}");
        assert!(parse_json(b"{").is_err());
        assert!(parse_json(br#"{"transcription":[{"text":"x"}]}"#).is_err());
    }
}
