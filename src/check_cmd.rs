//! `cuecraft check`: the QC a subtitler runs before delivery. Reads a subtitle file in any of the
//! five formats (or JSON cues as `cuecraft layout` prints them and the API's transcript returns
//! them, words included), runs the engine's `qc::check` against a style, and prints one line per
//! finding and a summary — or, with `--json`, one stable JSON document for CI. Exit status: 0 when
//! no error-level rule fails, 1 when one does, 2 when the check could not run.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{bail, Context};
use cuecraft_engine::qc::{self, QcStyle, Report, Rule};
use cuecraft_engine::{words_from_raw, Cue, FrameRate, Millis, PartialSettings, RawWord};
use cuecraft_formats::Format;
use serde_json::{json, Value};

/// Check a subtitle file (or a job's transcript) against a style: reading pace, line limits,
/// durations, gaps, line breaks, sentence ends. Exit status 1 when an error-level rule fails.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The file to check: SRT, WebVTT, TTML, ASS, EBU-STL, or JSON cues (`-` for standard input).
    #[arg(required_unless_present = "job", conflicts_with = "job")]
    pub file: Option<PathBuf>,
    /// The style: netflix-en, bbc, or a settings JSON file (the API's names) whose limits the
    /// cues should keep.
    #[arg(long, value_name = "STYLE", default_value = "netflix-en")]
    pub style: String,
    /// Frame rate of the media, for the frame gaps: 25, 29.97, 30000/1001 ... (default: the
    /// video's with --media, else 25)
    #[arg(long, value_name = "R")]
    pub frame_rate: Option<String>,
    /// Input format (srt, vtt, ttml, ass, stl, json); detected from the content, then the extension.
    #[arg(long, value_name = "F")]
    pub from: Option<String>,
    /// Print the report as one JSON document.
    #[arg(long)]
    pub json: bool,
    /// The video's shot changes (a JSON array of seconds or one time in seconds per line): also
    /// check the shot-change rules (shot-change-in, shot-change-out).
    #[arg(long, value_name = "FILE", conflicts_with = "media")]
    pub shot_changes: Option<PathBuf>,
    /// The video itself: its shot changes are found as the service finds them (ffmpeg's scene
    /// detection, as in the editor's proxy) and checked as with --shot-changes. Needs ffmpeg.
    #[arg(long, value_name = "FILE")]
    pub media: Option<PathBuf>,
    /// Check a job's original transcript, read through the API (with its words).
    #[arg(long, value_name = "ID", requires = "api")]
    pub job: Option<String>,
    /// Base URL of the API with `/v1` (for --job), e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL")]
    pub api: Option<String>,
    /// API key for --job; default: the CUECRAFT_API_KEY environment variable.
    #[arg(long)]
    pub key: Option<String>,
}

/// Runs the command and exits: 0 passed, 1 an error-level rule failed, 2 the check could not run.
pub fn run(args: Args) -> ! {
    let code = match check(&args) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("Error: {e:#}");
            2
        }
    };
    std::process::exit(code)
}

/// Checks and prints; `Ok(true)` when no error-level rule failed.
fn check(args: &Args) -> anyhow::Result<bool> {
    let media = args.media.as_deref().map(media_shots).transpose()?;
    let frame_rate = match (&args.frame_rate, &media) {
        (Some(r), _) => FrameRate::parse(r).with_context(|| {
            format!("--frame-rate {r:?} is not a frame rate (25, 29.97, 30000/1001 ...)")
        })?,
        (None, Some((rate, _))) => *rate,
        (None, None) => FrameRate::FPS_25,
    };
    let (name, cues) = match (&args.job, &args.file) {
        (Some(job), _) => {
            let api = args.api.as_deref().unwrap_or_default();
            let value = cuecraft_host::submit::get_json(
                api,
                args.key.as_deref(),
                &format!("/jobs/{job}/transcript?format=json"),
            )?;
            (format!("job {job}"), cues_from_json(&value)?)
        }
        (None, Some(path)) => {
            let name = path.display().to_string();
            let bytes = read(path)?;
            let cues = read_cues(&bytes, &name, args.from.as_deref())?;
            (name, cues)
        }
        (None, None) => bail!("give a FILE or --job ID"),
    };
    let style = style(&args.style, &cues)?;
    let shots = match (&args.shot_changes, media) {
        (Some(path), _) => Some(crate::shot_list::read(path)?),
        (None, Some((_, shots))) => Some(shots),
        (None, None) => None,
    };
    let report = qc::check_with_shots(&cues, &style, frame_rate, shots.as_deref().unwrap_or(&[]));
    let floor = qc::pace_floor(&cues, &style, frame_rate);
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let outcome = Outcome {
        report: &report,
        floor,
        shots: shots.as_deref(),
    };
    if args.json {
        let doc = report_json(&name, &style, frame_rate, &cues, &outcome);
        serde_json::to_writer_pretty(&mut out, &doc)?;
        out.write_all(b"\n")?;
    } else {
        print_human(&mut out, &name, &style, frame_rate, &cues, &outcome)?;
    }
    out.flush()?;
    Ok(!report.has_errors())
}

/// The frame rate and shot changes of a video, found as the pipeline finds them.
fn media_shots(path: &std::path::Path) -> anyhow::Result<(FrameRate, Vec<Millis>)> {
    use cuecraft_host::media;
    let probe = media::probe(path).with_context(|| format!("--media {}", path.display()))?;
    if !probe.has_video {
        bail!("--media {}: the file has no picture", path.display());
    }
    // A directory of our own (created, never reused), so the detector's output cannot be
    // redirected through a name someone else made.
    let dir = std::env::temp_dir().join(format!(
        "cuecraft-check-{}-{}",
        std::process::id(),
        cuecraft_host::util::now_ms()
    ));
    std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let shots = media::detect_shot_changes(path, &dir.join("shots.txt"));
    let _ = std::fs::remove_dir_all(&dir);
    let shots = shots.with_context(|| format!("--media {}", path.display()))?;
    Ok((probe.frame_rate.unwrap_or(FrameRate::FPS_25), shots))
}

fn read(path: &PathBuf) -> anyhow::Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        Ok(bytes)
    } else {
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
    }
}

/// Whether `bytes` look like JSON (after a BOM and whitespace: `[` or `{`).
fn looks_like_json(bytes: &[u8]) -> bool {
    let b = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    matches!(
        b.iter().find(|c| !c.is_ascii_whitespace()),
        Some(b'[' | b'{')
    )
}

/// The cues of a file in `from` (or the detected format).
fn read_cues(bytes: &[u8], name: &str, from: Option<&str>) -> anyhow::Result<Vec<Cue>> {
    // A subtitle format is recognised first: an ASS file opens with `[Script Info]`, which also
    // looks like the start of a JSON array.
    let format =
        match from {
            Some("json") => None,
            Some(f) => Some(Format::from_name(f).with_context(|| {
                format!("--from {f:?}: expected srt, vtt, ttml, ass, stl or json")
            })?),
            None => cuecraft_formats::detect(bytes).or_else(|| {
                if looks_like_json(bytes) {
                    None
                } else {
                    Format::from_path(name)
                }
            }),
        };
    let Some(format) = format else {
        if from.is_none() && !looks_like_json(bytes) {
            bail!("cannot tell the format of {name}; pass --from srt|vtt|ttml|ass|stl|json");
        }
        let value: Value =
            cuecraft_host::json::value(bytes).with_context(|| format!("{name}: not JSON"))?;
        return cues_from_json(&value).with_context(|| name.to_string());
    };
    cuecraft_formats::parse(format, bytes)
        .with_context(|| format!("cannot read {name} as {}", format.extension()))
}

/// Cues from the API's JSON: an array of Cue objects (`cuecraft layout`) or a transcript response
/// (`{"cues": [...]}`), words kept when present.
fn cues_from_json(value: &Value) -> anyhow::Result<Vec<Cue>> {
    let list = match value {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("cues") {
            Some(Value::Array(a)) => a,
            _ => bail!("expected an array of cues or an object with \"cues\""),
        },
        _ => bail!("expected an array of cues or an object with \"cues\""),
    };
    let secs = |v: &Value, what: &str, i: usize| -> anyhow::Result<Millis> {
        v.as_f64()
            .and_then(Millis::from_secs_f64)
            .with_context(|| format!("cue {}: {what} is not a number of seconds", i + 1))
    };
    let mut cues = Vec::with_capacity(list.len());
    for (i, c) in list.iter().enumerate() {
        let start = secs(&c["start"], "start", i)?;
        let end = secs(&c["end"], "end", i)?;
        let lines = match c.get("lines").and_then(Value::as_array) {
            Some(lines) => lines
                .iter()
                .map(|l| l.as_str().map(str::to_string))
                .collect::<Option<Vec<String>>>()
                .with_context(|| format!("cue {}: lines must be strings", i + 1))?,
            None => bail!("cue {}: no lines", i + 1),
        };
        let mut cue = Cue::from_lines(i as u32 + 1, start, end, lines);
        cue.speaker = c.get("speaker").and_then(Value::as_u64).unwrap_or(0) as u32;
        if let Some(words) = c.get("words") {
            let raw: Vec<RawWord> = serde_json::from_value(words.clone())
                .with_context(|| format!("cue {}: words must be {{text, start, end}}", i + 1))?;
            cue.words = words_from_raw(&raw).with_context(|| format!("cue {}", i + 1))?;
        }
        cues.push(cue);
    }
    Ok(cues)
}

/// The style named by `--style`: a preset, or a settings file (its `auto` pace from the words).
fn style(spec: &str, cues: &[Cue]) -> anyhow::Result<QcStyle> {
    match spec {
        "netflix-en" | "netflix" => return Ok(QcStyle::netflix_en()),
        "bbc" => return Ok(QcStyle::bbc()),
        _ => {}
    }
    let path = PathBuf::from(spec);
    if !path.exists() {
        bail!("--style {spec:?}: expected netflix-en, bbc or a settings JSON file");
    }
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let value: Value = cuecraft_host::json::value(text.as_bytes())
        .with_context(|| format!("{}: not JSON", path.display()))?;
    let partial = match PartialSettings::from_json(&value, "") {
        Ok(p) => p,
        Err(errors) => {
            for e in &errors {
                eprintln!("{}: {}: {}", path.display(), e.field, e.message);
            }
            bail!("{}: invalid settings", path.display());
        }
    };
    let combined = partial.check_combined("");
    if let Some(e) = combined.first() {
        bail!("{}: {}: {}", path.display(), e.field, e.message);
    }
    let words: Vec<_> = cues.iter().flat_map(|c| c.words.iter().cloned()).collect();
    Ok(QcStyle::from_settings(&partial.resolve(), &words))
}

/// `H:MM:SS.mmm`.
fn clock(t: Millis) -> String {
    let ms = t.0.max(0);
    format!(
        "{}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

fn rate(fr: FrameRate) -> String {
    if fr.den == 1 {
        fr.num.to_string()
    } else {
        format!("{}/{}", fr.num, fr.den)
    }
}

/// What the check found: the report, the pace floor, and the shot list it was checked against.
#[derive(Clone, Copy)]
struct Outcome<'a> {
    report: &'a Report,
    floor: Option<qc::PaceFloor>,
    shots: Option<&'a [Millis]>,
}

fn print_human(
    out: &mut impl Write,
    name: &str,
    style: &QcStyle,
    fr: FrameRate,
    cues: &[Cue],
    outcome: &Outcome<'_>,
) -> std::io::Result<()> {
    let Outcome {
        report,
        floor,
        shots,
    } = *outcome;
    for f in &report.findings {
        let start = cues.get(f.cue).map_or(Millis::ZERO, |c| c.start);
        writeln!(
            out,
            "cue {} at {}: {} {}: {}",
            f.cue + 1,
            clock(start),
            f.level.as_str(),
            f.rule.id(),
            f.message
        )?;
    }
    let s = &report.summary;
    if !report.findings.is_empty() {
        writeln!(out)?;
    }
    writeln!(
        out,
        "{name}: {} cues checked against {} at {} fps: {} error{}, {} warning{}",
        s.cues,
        style.name,
        rate(fr),
        s.errors,
        if s.errors == 1 { "" } else { "s" },
        s.warnings,
        if s.warnings == 1 { "" } else { "s" }
    )?;
    for rule in Rule::ALL {
        if rule == Rule::ReadingPace && style.max_cps.is_none() || !checked(rule, shots) {
            continue;
        }
        writeln!(
            out,
            "  {:<16} {:<7} {:>6} of {:>6} {:<13} {:5.1}%",
            rule.id(),
            rule.level().as_str(),
            s.count(rule),
            s.total(rule),
            rule.unit().as_str(),
            s.percent(rule)
        )?;
    }
    if let Some(f) = floor {
        writeln!(
            out,
            "  pace floor: {} of {} cues ({:.1}%) must exceed {} characters per second however \
             the words are cut into that many cues",
            f.over,
            f.cues,
            f.percent(),
            style.max_cps.unwrap_or(0)
        )?;
    }
    Ok(())
}

fn report_json(
    name: &str,
    style: &QcStyle,
    fr: FrameRate,
    cues: &[Cue],
    outcome: &Outcome<'_>,
) -> Value {
    let Outcome {
        report,
        floor,
        shots,
    } = *outcome;
    let s = &report.summary;
    let rules: serde_json::Map<String, Value> = Rule::ALL
        .iter()
        .filter(|&&r| checked(r, shots))
        .map(|&r| {
            (
                r.id().to_string(),
                json!({
                    "level": r.level().as_str(),
                    "count": s.count(r),
                    "of": s.total(r),
                    "unit": r.unit().as_str(),
                    "percent": (s.percent(r) * 100.0).round() / 100.0,
                }),
            )
        })
        .collect();
    let findings: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            let c = cues.get(f.cue);
            json!({
                "cue": f.cue + 1,
                "start": c.map_or(0.0, |c| c.start.as_secs_f64()),
                "end": c.map_or(0.0, |c| c.end.as_secs_f64()),
                "rule": f.rule.id(),
                "level": f.level.as_str(),
                "message": f.message,
            })
        })
        .collect();
    json!({
        "file": name,
        "style": style.name,
        "frameRate": rate(fr),
        "passed": !report.has_errors(),
        "cues": s.cues,
        "lines": s.lines,
        "gaps": s.gaps,
        "sentenceEnds": s.sentence_ends,
        "errors": s.errors,
        "warnings": s.warnings,
        "rules": rules,
        "paceFloor": floor.map(|f| json!({
            "cues": f.cues,
            "over": f.over,
            "percent": (f.percent() * 100.0).round() / 100.0,
        })),
        "shotChanges": shots.map(|s| s.len()),
        "findings": findings,
    })
}

/// Whether `rule` was checked: the shot-change rules only against a shot list.
fn checked(rule: Rule, shots: Option<&[Millis]>) -> bool {
    shots.is_some() || !matches!(rule, Rule::ShotChangeIn | Rule::ShotChangeOut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_input_is_told_from_subtitle_formats_by_its_first_character() {
        assert!(looks_like_json(b"\xEF\xBB\xBF  [\n{\"index\": 1}]"));
        assert!(looks_like_json(b"{\"cues\": []}"));
        assert!(!looks_like_json(b"1\n00:00:01,000 --> 00:00:02,000\nHi\n"));
        assert!(!looks_like_json(b"WEBVTT\n"));
    }

    #[test]
    fn clock_times_are_hours_minutes_seconds_millis() {
        assert_eq!(clock(Millis(3_723_004)), "1:02:03.004");
        assert_eq!(clock(Millis(-5)), "0:00:00.000");
    }

    #[test]
    fn json_cues_keep_their_words_and_reject_bad_times() {
        let v: Value = serde_json::from_str(
            r#"{"cues": [{"index": 1, "start": 1.0, "end": 2.5, "speaker": 2, "lines": ["Hi."],
                "words": [{"text": "Hi.", "start": 1.0, "end": 1.4}]}]}"#,
        )
        .unwrap();
        let cues = cues_from_json(&v).unwrap();
        assert_eq!(
            (cues[0].start, cues[0].end, cues[0].speaker),
            (Millis(1000), Millis(2500), 2)
        );
        assert_eq!(&*cues[0].words[0].text, "Hi.");
        let bad: Value =
            serde_json::from_str(r#"[{"start": "x", "end": 1, "lines": []}]"#).unwrap();
        assert_eq!(
            cues_from_json(&bad).unwrap_err().to_string(),
            "cue 1: start is not a number of seconds"
        );
    }
}
