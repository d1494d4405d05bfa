//! `cuecraft layout`: lay timed words (JSON) out as cues with the engine, and print them as JSON or
//! write them as a subtitle file, so the engine can be used and checked without the server.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context};
use cuecraft_engine::{words_from_raw, Cue, FrameRate, PartialSettings, RawWord};
use cuecraft_formats::{Format, WriteOptions};
use cuecraft_host::json;
use serde_json::Value;

/// Lay out timed words as cues.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Words: a JSON array of `{"text", "start", "end", "speaker"}`, times in seconds (`-` for
    /// standard input).
    #[arg(long, value_name = "FILE")]
    pub words: PathBuf,
    /// Settings: a JSON object with the API's names (`{"maxCharsPerLine": 37}`); unset fields keep
    /// the contract's defaults.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Frame rate of the media: 25, 29.97, 30000/1001 ...
    #[arg(long, value_name = "R", default_value = "25")]
    pub frame_rate: String,
    /// Write a subtitle file (srt, vtt, ttml, ass, ebu-stl) instead of printing JSON cues.
    #[arg(long, value_name = "F")]
    pub format: Option<String>,
    /// Where to write the subtitle file; standard output when absent.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Language code written where the format has one.
    #[arg(long, value_name = "CODE", default_value = "")]
    pub language: String,
    /// The video's shot changes: a JSON array of seconds or one time in seconds per line. Cues
    /// are then timed to the picture (formatSubtitles only): in-times on a cut when speech starts
    /// within half a second after it, out-times two frames before a cut they would cross.
    #[arg(long, value_name = "FILE")]
    pub shot_changes: Option<PathBuf>,
}

fn read(path: &PathBuf) -> anyhow::Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .context("reading standard input")?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    }
}

/// A cue as the API's Cue object (seconds as numbers), fields in the contract's order.
#[derive(serde::Serialize)]
struct CueJson<'a> {
    index: u32,
    start: f64,
    end: f64,
    speaker: u32,
    lines: &'a [String],
    words: Vec<WordJson<'a>>,
}

#[derive(serde::Serialize)]
struct WordJson<'a> {
    text: &'a str,
    start: f64,
    end: f64,
}

fn cues_json(cues: &[Cue]) -> Vec<CueJson<'_>> {
    cues.iter()
        .map(|c| CueJson {
            index: c.index,
            start: c.start.as_secs_f64(),
            end: c.end.as_secs_f64(),
            speaker: c.speaker,
            lines: &c.lines,
            words: c
                .words
                .iter()
                .map(|w| WordJson {
                    text: &w.text,
                    start: w.start.as_secs_f64(),
                    end: w.end.as_secs_f64(),
                })
                .collect(),
        })
        .collect()
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<()> {
    let frame_rate = FrameRate::parse(&args.frame_rate)
        .with_context(|| format!("--frame-rate {:?} is not a frame rate", args.frame_rate))?;
    let raw: Vec<RawWord> = json::from_slice(read(&args.words)?.as_bytes()).with_context(|| {
        format!(
            "{}: expected a JSON array of {{text, start, end, speaker}}",
            args.words.display()
        )
    })?;
    let words = words_from_raw(&raw).with_context(|| args.words.display().to_string())?;
    let partial = match &args.settings {
        None => PartialSettings::default(),
        Some(path) => {
            let value: Value = json::value(read(path)?.as_bytes())
                .with_context(|| format!("{}: not JSON", path.display()))?;
            match PartialSettings::from_json(&value, "") {
                Ok(p) => p,
                Err(errors) => {
                    for e in &errors {
                        eprintln!("{}: {}: {}", path.display(), e.field, e.message);
                    }
                    bail!(
                        "{}: {} invalid setting{}",
                        path.display(),
                        errors.len(),
                        if errors.len() == 1 { "" } else { "s" }
                    );
                }
            }
        }
    };
    let settings = partial.resolve();
    let shots = match &args.shot_changes {
        Some(path) => crate::shot_list::read(path)?,
        None => Vec::new(),
    };
    let cues = cuecraft_engine::layout_with_shots(&words, &settings, frame_rate, &shots);
    let bytes = match &args.format {
        None => {
            let mut s = serde_json::to_string_pretty(&cues_json(&cues))?;
            s.push('\n');
            s.into_bytes()
        }
        Some(name) => {
            let Some(format) = Format::from_name(name) else {
                bail!("--format {name:?}: expected srt, vtt, ttml, ass or ebu-stl");
            };
            let opts = WriteOptions {
                frame_rate,
                language: args.language.clone(),
                max_chars_per_line: settings.max_chars_per_line,
                ..WriteOptions::default()
            };
            cuecraft_formats::to_vec(format, &cues, &opts)
                .with_context(|| format!("writing {}", format.extension()))?
        }
    };
    match &args.output {
        Some(path) if path.as_os_str() != "-" => {
            std::fs::write(path, &bytes).with_context(|| format!("writing {}", path.display()))?
        }
        _ => {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes)?;
            out.flush()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: &std::path::Path, settings: Option<&str>, format: Option<&str>) -> Args {
        let words = dir.join("words.json");
        std::fs::write(
            &words,
            r#"[{"text":"Hello","start":0,"end":0.4,"speaker":0},
                {"text":"world.","start":0.45,"end":0.9,"speaker":0}]"#,
        )
        .unwrap();
        let settings = settings.map(|s| {
            let p = dir.join("settings.json");
            std::fs::write(&p, s).unwrap();
            p
        });
        Args {
            words,
            settings,
            frame_rate: "25".into(),
            format: format.map(str::to_string),
            output: Some(dir.join("out")),
            language: "en".into(),
            shot_changes: None,
        }
    }

    #[test]
    fn prints_cues_as_contract_json() {
        let dir = tempfile::tempdir().unwrap();
        run(args(dir.path(), Some(r#"{"minDuration": 2}"#), None)).unwrap();
        let out: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("out")).unwrap()).unwrap();
        assert_eq!(out[0]["lines"], serde_json::json!(["Hello world."]));
        assert_eq!(out[0]["start"], 0.0);
        assert_eq!(out[0]["end"], 2.0);
        assert_eq!(out[0]["words"][1]["text"], "world.");
    }

    #[test]
    fn refuses_invalid_settings() {
        let dir = tempfile::tempdir().unwrap();
        let err = run(args(
            dir.path(),
            Some(r#"{"maxCharsPerLine": 5, "x": 1}"#),
            None,
        ))
        .unwrap_err();
        assert!(err.to_string().contains("2 invalid settings"), "{err}");
        assert!(!dir.path().join("out").exists());
    }

    #[test]
    fn refuses_unknown_format() {
        let dir = tempfile::tempdir().unwrap();
        assert!(run(args(dir.path(), None, Some("docx"))).is_err());
    }
}
