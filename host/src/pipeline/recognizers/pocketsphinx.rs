//! `pocketsphinx`: the default recognizer, Debian's CMU PocketSphinx with the models it installs.
//!
//! It runs `pocketsphinx_continuous -infile WAV -time yes -hmm .. -lm .. -dict ..` (Debian bookworm
//! ships PocketSphinx 5prealpha, whose continuous decoder prints each utterance's hypothesis and then
//! one `word start end confidence` line per word). It needs nothing at run time but the packages
//! `pocketsphinx` and `pocketsphinx-en-us`, works offline, and is fast enough on one core.
//!
//! Models are found under `/usr/share/pocketsphinx/model/<dir>/`, one directory per language
//! (`en-us` holds the acoustic model `en-us/`, the language model `en-us.lm.bin` and the dictionary
//! `cmudict-en-us.dict`); the language code is the part of the directory name before the first `-`.
//!
//! Custom vocabulary is not passed to PocketSphinx: its decoder takes no prompt, and a term outside
//! the model's dictionary has no pronunciation to add. The pipeline's customVocabulary rewrite is what
//! applies the terms to its words.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cuecraft_engine::RawWord;

use super::process::{run_limited, TimeLimit};
use super::{Recognition, RecognizeError, Recognizer};

/// Where Debian's `pocketsphinx-*` model packages install their models.
pub const DEBIAN_MODEL_ROOT: &str = "/usr/share/pocketsphinx/model";

/// The decoder binary of Debian's `pocketsphinx` package.
pub const DEBIAN_PROGRAM: &str = "pocketsphinx_continuous";

/// Default time limit: PocketSphinx runs at about a quarter of real time on one core; four times
/// real time leaves room for a loaded machine.
pub const DEFAULT_TIME_LIMIT: TimeLimit = TimeLimit {
    min: Duration::from_secs(120),
    per_audio_second: 4.0,
};

/// Length of one PocketSphinx frame, seconds: word ends are printed as the start of their last frame.
const FRAME_SECONDS: f64 = 0.01;

/// The PocketSphinx recognizer.
#[derive(Debug, Clone)]
pub struct PocketsphinxRecognizer {
    program: PathBuf,
    model_root: PathBuf,
    time_limit: TimeLimit,
}

/// One installed language: its code and the three files the decoder needs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Model {
    /// `en`.
    language: String,
    /// `en-us`: the model directory's name.
    variant: String,
    hmm: PathBuf,
    lm: PathBuf,
    dict: PathBuf,
}

impl Default for PocketsphinxRecognizer {
    fn default() -> Self {
        PocketsphinxRecognizer::new(DEBIAN_PROGRAM, DEBIAN_MODEL_ROOT)
    }
}

impl PocketsphinxRecognizer {
    /// A recognizer running `program` with the models under `model_root`.
    pub fn new(program: impl Into<PathBuf>, model_root: impl Into<PathBuf>) -> Self {
        PocketsphinxRecognizer {
            program: program.into(),
            model_root: model_root.into(),
            time_limit: DEFAULT_TIME_LIMIT,
        }
    }

    /// The same recognizer, stopped (and its job failed) when it runs longer than `limit`.
    pub fn with_time_limit(mut self, limit: TimeLimit) -> Self {
        self.time_limit = limit;
        self
    }

    /// Language codes of the installed models (`["en"]` with `pocketsphinx-en-us`), sorted.
    pub fn languages(&self) -> Vec<String> {
        let mut codes: Vec<String> = self.models().into_iter().map(|m| m.language).collect();
        codes.dedup();
        codes
    }

    fn models(&self) -> Vec<Model> {
        let Ok(entries) = std::fs::read_dir(&self.model_root) else {
            return Vec::new();
        };
        let mut models: Vec<Model> = entries
            .filter_map(Result::ok)
            .filter_map(|e| model_in(&e.path()))
            .collect();
        models.sort_by(|a, b| (&a.language, &a.variant).cmp(&(&b.language, &b.variant)));
        models
    }

    /// The model for a job's requested language: `auto`, `multilingual` and an empty request take
    /// English when installed, else the first model; `en`, `en-US` and `en-us` all pick `en-us`.
    fn model_for(&self, requested: &str) -> Result<Model, RecognizeError> {
        let models = self.models();
        let installed = || {
            let codes = self.languages();
            if codes.is_empty() {
                "none".to_string()
            } else {
                codes.join(", ")
            }
        };
        let requested_lc = requested.trim().to_ascii_lowercase();
        let chosen = if matches!(requested_lc.as_str(), "" | "auto" | "multilingual") {
            models
                .iter()
                .find(|m| m.language == "en")
                .or(models.first())
        } else {
            let primary = requested_lc.split(['-', '_']).next().unwrap_or_default();
            models
                .iter()
                .find(|m| m.variant == requested_lc.replace('_', "-"))
                .or_else(|| models.iter().find(|m| m.language == primary))
        };
        match chosen {
            Some(m) => Ok(m.clone()),
            None if models.is_empty() => Err(RecognizeError(format!(
                "no pocketsphinx model is installed under {}",
                self.model_root.display()
            ))),
            None => Err(RecognizeError(format!(
                "no pocketsphinx model for language {}; installed: {}",
                requested.trim(),
                installed()
            ))),
        }
    }
}

/// A model directory is usable when it holds an acoustic model directory, a `.lm.bin` or `.lm`
/// language model and a `.dict` dictionary.
fn model_in(dir: &Path) -> Option<Model> {
    let variant = dir.file_name()?.to_str()?.to_string();
    let hmm = dir.join(&variant);
    if !hmm.join("mdef").is_file() {
        return None;
    }
    let lm = [format!("{variant}.lm.bin"), format!("{variant}.lm")]
        .into_iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())?;
    let mut dicts: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "dict") && p.is_file())
        .collect();
    dicts.sort();
    let dict = dicts.into_iter().next()?;
    let language = variant.split('-').next()?.to_ascii_lowercase();
    Some(Model {
        language,
        variant,
        hmm,
        lm,
        dict,
    })
}

impl Recognizer for PocketsphinxRecognizer {
    fn name(&self) -> String {
        "pocketsphinx".to_string()
    }

    fn recognize(
        &self,
        wav: &Path,
        language: &str,
        _hints: &[String],
    ) -> Result<Recognition, RecognizeError> {
        let model = self.model_for(language)?;
        let out = run_limited(
            Command::new(&self.program)
                .arg("-infile")
                .arg(wav)
                .args(["-time", "yes"])
                .arg("-hmm")
                .arg(&model.hmm)
                .arg("-lm")
                .arg(&model.lm)
                .arg("-dict")
                .arg(&model.dict),
            self.time_limit.for_wav(wav),
            "pocketsphinx",
        )?;
        if !out.status.success() {
            return Err(RecognizeError(format!(
                "pocketsphinx failed ({}): {}",
                out.status,
                error_lines(&String::from_utf8_lossy(&out.stderr), wav)
            )));
        }
        Ok(Recognition {
            language: model.language,
            words: parse_output(&String::from_utf8_lossy(&out.stdout)),
        })
    }
}

/// The decoder's `ERROR:` and `FATAL` lines (its log is mostly `INFO:`), else its last line, with
/// the server's path of the audio file replaced: the message becomes the job's `error`.
fn error_lines(log: &str, wav: &Path) -> String {
    let errors: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("ERROR") || l.starts_with("FATAL"))
        .map(str::trim)
        .collect();
    let text = if errors.is_empty() {
        log.lines().last().unwrap_or("no output").trim().to_string()
    } else {
        errors.join("; ")
    };
    let text = text.replace(wav.to_string_lossy().as_ref(), "the audio");
    text.chars().take(500).collect()
}

/// Parses `pocketsphinx_continuous -time yes` output: timing lines `word start end confidence`
/// (times with a decimal point) become words; hypothesis lines, silence and filler tokens go.
fn parse_output(stdout: &str) -> Vec<RawWord> {
    let mut words = Vec::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [token, start, end, confidence] = fields[..] else {
            continue;
        };
        let (Some(start), Some(end), Some(_)) = (seconds(start), seconds(end), seconds(confidence))
        else {
            continue;
        };
        let Some(text) = clean_token(token) else {
            continue;
        };
        words.push(RawWord {
            text: text.to_string(),
            start,
            end: end.max(start) + FRAME_SECONDS,
            speaker: 0,
        });
    }
    words
}

/// A timing field: a decimal number with a point. Words in the dictionary never look like that, so
/// a four-word hypothesis line is never mistaken for a timing line.
fn seconds(field: &str) -> Option<f64> {
    if !field.contains('.') {
        return None;
    }
    field
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// `word(2)` -> `word`; `<s>`, `</s>`, `<sil>`, `[NOISE]`, `[SPEECH]`, `++UH++`, `+um+` -> dropped.
fn clean_token(token: &str) -> Option<&str> {
    let is_filler = (token.starts_with('<') && token.ends_with('>'))
        || (token.starts_with('[') && token.ends_with(']'))
        || (token.starts_with('+') && token.ends_with('+'));
    if is_filler {
        return None;
    }
    let word = match token.rfind('(') {
        Some(open)
            if token.ends_with(')')
                && open > 0
                && token[open + 1..token.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_digit()) =>
        {
            &token[..open]
        }
        _ => token,
    };
    (!word.is_empty()).then_some(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(output: &str, expected: &[(&str, f64, f64)]) {
        let got: Vec<(String, f64, f64)> = parse_output(output)
            .into_iter()
            .map(|w| (w.text, w.start, w.end))
            .collect();
        let expected: Vec<(String, f64, f64)> = expected
            .iter()
            .map(|(t, s, e)| (t.to_string(), *s, *e))
            .collect();
        assert_eq!(got.len(), expected.len(), "{got:?}");
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!(g.0, e.0);
            assert!(
                (g.1 - e.1).abs() < 1e-9 && (g.2 - e.2).abs() < 1e-9,
                "{g:?} vs {e:?}"
            );
        }
    }

    #[test]
    fn timing_lines_become_words_and_silence_goes() {
        check(
            "we went to the market\n\
             <s> 0.110 0.180 0.999800\n\
             we 0.190 0.350 0.999200\n\
             went 0.360 0.580 0.998801\n\
             to(2) 0.590 0.670 0.909909\n\
             <sil> 0.680 0.700 0.638935\n\
             [NOISE] 0.710 0.900 0.5\n\
             the 0.910 1.000 0.737613\n\
             market(2) 1.010 1.150 0.715096\n\
             ++BREATH++ 1.160 1.300 0.2\n\
             [SPEECH] 1.310 1.400 0.2\n\
             </s> 1.410 1.500 1.000000\n",
            &[
                ("we", 0.19, 0.36),
                ("went", 0.36, 0.59),
                ("to", 0.59, 0.68),
                ("the", 0.91, 1.01),
                ("market", 1.01, 1.16),
            ],
        );
    }

    #[test]
    fn four_word_hypothesis_is_not_a_timing_line() {
        check(
            "one two three four\nfour 1.000 1.200 0.9\n",
            &[("four", 1.0, 1.21)],
        );
    }

    #[test]
    fn malformed_lines_are_skipped_without_panicking() {
        check(
            "x NaN.0 1.0 1.0\ny 1.0\n(2) 1.0 2.0 0.5\nz -1.0 2.0 0.5\nok 2.000 1.000 0.5\n",
            &[("(2)", 1.0, 2.01), ("ok", 2.0, 2.01)],
        );
    }

    #[test]
    fn alternate_pronunciation_markers_are_removed_but_other_parens_stay() {
        assert_eq!(clean_token("read(3)"), Some("read"));
        assert_eq!(clean_token("'bout"), Some("'bout"));
        assert_eq!(clean_token("a(b)"), Some("a(b)"));
        assert_eq!(clean_token("<sil>"), None);
        assert_eq!(clean_token("+um+"), None);
    }

    fn fake_models(dirs: &[&str]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for d in dirs {
            let dir = root.path().join(d);
            std::fs::create_dir_all(dir.join(d)).unwrap();
            std::fs::write(dir.join(d).join("mdef"), "").unwrap();
            std::fs::write(dir.join(format!("{d}.lm.bin")), "").unwrap();
            std::fs::write(dir.join("words.dict"), "").unwrap();
        }
        // An incomplete model directory is not a language.
        std::fs::create_dir_all(root.path().join("de-de")).unwrap();
        root
    }

    #[test]
    fn auto_and_multilingual_take_english() {
        let root = fake_models(&["en-us", "fr-fr"]);
        let r = PocketsphinxRecognizer::new("unused", root.path());
        assert_eq!(r.languages(), ["en", "fr"]);
        for requested in ["auto", "multilingual", "", "en", "EN-us", "en_GB"] {
            assert_eq!(
                r.model_for(requested).unwrap().variant,
                "en-us",
                "{requested}"
            );
        }
        assert_eq!(r.model_for("fr").unwrap().variant, "fr-fr");
    }

    #[test]
    fn language_without_model_is_refused_with_the_installed_ones() {
        let root = fake_models(&["en-us"]);
        let r = PocketsphinxRecognizer::new("unused", root.path());
        assert_eq!(
            r.model_for("nl").unwrap_err().to_string(),
            "no pocketsphinx model for language nl; installed: en"
        );
        let empty = tempfile::tempdir().unwrap();
        let r = PocketsphinxRecognizer::new("unused", empty.path());
        assert!(r
            .model_for("auto")
            .unwrap_err()
            .to_string()
            .starts_with("no pocketsphinx model is installed"));
    }
}
