//! `cuecraft convert`: read a subtitle file in any supported format, optionally re-lay it out with
//! the engine's settings, and write it in another format without ever leaving a partial output file.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use cuecraft_engine::{Cue, FrameRate, Millis, PartialSettings, Word};
use cuecraft_formats::{ConvertError, Format, Streamed, WriteOptions};

/// Convert a subtitle file between formats, optionally re-laid out.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The subtitle file to read (`-` for standard input).
    pub input: PathBuf,
    /// Where to write (`-` for standard output). Written to `OUT.tmp`, then renamed.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Input format (srt, vtt, ttml, ass, stl); detected from the content, then the extension.
    #[arg(long, value_name = "F")]
    pub from: Option<String>,
    /// Output format; taken from the output file's extension when absent.
    #[arg(long, value_name = "F")]
    pub to: Option<String>,
    /// Seconds added to every cue time (may be negative; times clamp at zero). Ignored for EBU-STL.
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    pub offset: Option<f64>,
    /// Frame rate for EBU-STL/TTML output and re-layout: 25, 29.97, 30000/1001 ...
    #[arg(long, value_name = "R", default_value = "25")]
    pub frame_rate: String,
    /// Language code written where the format has one (TTML xml:lang, EBU-STL, ASS).
    #[arg(long, value_name = "CODE")]
    pub language: Option<String>,
    /// Title written where the format has one (ASS, EBU-STL); default: the input file's name.
    #[arg(long)]
    pub title: Option<String>,
    /// Engine settings for an optional re-layout.
    #[command(flatten)]
    pub layout: LayoutFlags,
}

/// Engine settings as flags. Giving any of them (or `--relayout`) re-lays the cues out: their text
/// becomes timed words (each cue's time spread over its words by length) and goes through the
/// layout engine with these settings over the defaults.
#[derive(Debug, Default, clap::Args)]
pub struct LayoutFlags {
    /// Re-lay out with the default settings even when no other setting is given.
    #[arg(long)]
    pub relayout: bool,
    /// Settings file: a JSON object with the API's names (`{"maxCharsPerLine": 37}`); flags win.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Hard limit of characters per line (10-250).
    #[arg(long, value_name = "N")]
    pub max_chars_per_line: Option<u32>,
    /// Hard limit of lines per cue (1-5).
    #[arg(long, value_name = "N")]
    pub max_lines_per_subtitle: Option<u32>,
    /// Shortest cue, seconds (0-60).
    #[arg(long, value_name = "S")]
    pub min_duration: Option<f64>,
    /// Longest cue, seconds (0.1-60).
    #[arg(long, value_name = "S")]
    pub max_duration: Option<f64>,
    /// Frames kept free between cues (0-100).
    #[arg(long, value_name = "N")]
    pub min_frames_between_subtitles: Option<u32>,
    /// Reading pace: balanced, dramatic, dense or auto.
    #[arg(long, value_name = "P")]
    pub content_profile: Option<String>,
    /// default or audiogram.
    #[arg(long, value_name = "M")]
    pub subtitle_mode: Option<String>,
    /// Smart formatting (true) or greedy fill (false).
    #[arg(long, value_name = "BOOL")]
    pub format_subtitles: Option<bool>,
    /// Sentence-ending punctuation always ends a cue.
    #[arg(long, value_name = "BOOL")]
    pub split_on_punctuation: Option<bool>,
    /// Two speakers may share a cue, each line starting with an em dash.
    #[arg(long, value_name = "BOOL")]
    pub em_dash_on_speaker_change: Option<bool>,
    /// `...` on both sides of a sentence running over a cue boundary.
    #[arg(long, value_name = "BOOL")]
    pub ellipsis_continuation: Option<bool>,
    /// Moves every cue by this many milliseconds (-10000 to 10000).
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    pub shift_ms: Option<i32>,
}

impl LayoutFlags {
    /// The settings the flags (and the settings file) ask for, validated by the engine with the
    /// API's rules; `None` when no re-layout was asked for.
    fn settings(&self, language: Option<&str>) -> anyhow::Result<Option<PartialSettings>> {
        let mut obj = match &self.settings {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read settings file {}", path.display()))?;
                let v = cuecraft_host::json::value(text.as_bytes())
                    .with_context(|| format!("{} is not JSON", path.display()))?;
                match v {
                    serde_json::Value::Object(m) => m,
                    _ => bail!("{}: settings must be a JSON object", path.display()),
                }
            }
            None => serde_json::Map::new(),
        };
        let mut put = |k: &str, v: Option<serde_json::Value>| {
            if let Some(v) = v {
                obj.insert(k.to_string(), v);
            }
        };
        use serde_json::json;
        put("maxCharsPerLine", self.max_chars_per_line.map(|v| json!(v)));
        put(
            "maxLinesPerSubtitle",
            self.max_lines_per_subtitle.map(|v| json!(v)),
        );
        put("minDuration", self.min_duration.map(|v| json!(v)));
        put("maxDuration", self.max_duration.map(|v| json!(v)));
        put(
            "minFramesBetweenSubtitles",
            self.min_frames_between_subtitles.map(|v| json!(v)),
        );
        put(
            "contentProfile",
            self.content_profile.as_ref().map(|v| json!(v)),
        );
        put(
            "subtitleMode",
            self.subtitle_mode.as_ref().map(|v| json!(v)),
        );
        put("formatSubtitles", self.format_subtitles.map(|v| json!(v)));
        put(
            "splitOnPunctuation",
            self.split_on_punctuation.map(|v| json!(v)),
        );
        put(
            "emDashOnSpeakerChange",
            self.em_dash_on_speaker_change.map(|v| json!(v)),
        );
        put(
            "ellipsisContinuation",
            self.ellipsis_continuation.map(|v| json!(v)),
        );
        put("shiftMs", self.shift_ms.map(|v| json!(v)));
        if !self.relayout && obj.is_empty() {
            return Ok(None);
        }
        if let Some(lang) = language {
            obj.entry("language").or_insert_with(|| json!(lang));
        }
        match PartialSettings::from_json(&serde_json::Value::Object(obj), "") {
            Ok(p) => Ok(Some(p)),
            Err(errs) => {
                let list: Vec<String> = errs
                    .iter()
                    .map(|e| format!("{}: {}", flag_name(&e.field), e.message))
                    .collect();
                bail!("invalid settings: {}", list.join("; "))
            }
        }
    }
}

/// `maxCharsPerLine` -> `--max-chars-per-line`, for error messages about flags.
fn flag_name(field: &str) -> String {
    let mut out = String::from("--");
    for c in field.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<()> {
    let input_name = args.input.to_string_lossy();
    // Standard input, pipes and other special files are read whole, once. A regular file is only
    // looked at first (its format shows in its first bytes): a one-pass conversion reads it a
    // chunk at a time, from the start again.
    let mut input = open_input(&args.input)?;
    let head = match &mut input {
        Input::Bytes(bytes) => bytes[..bytes.len().min(HEAD)].to_vec(),
        Input::File(file) => {
            read_head(file).with_context(|| format!("cannot read {input_name}"))?
        }
    };
    let from = match &args.from {
        Some(name) => parse_format(name, "--from")?,
        None => cuecraft_formats::detect(&head)
            .or_else(|| Format::from_path(&input_name))
            .with_context(|| {
                format!("cannot tell the format of {input_name}; pass --from srt|vtt|ttml|ass|stl")
            })?,
    };
    let output_name = args.output.to_string_lossy();
    let to = match &args.to {
        Some(name) => parse_format(name, "--to")?,
        None => Format::from_path(&output_name).with_context(|| {
            format!(
                "cannot tell the output format from {output_name}; pass --to srt|vtt|ttml|ass|stl"
            )
        })?,
    };
    let frame_rate = FrameRate::parse(&args.frame_rate).with_context(|| {
        format!(
            "--frame-rate {:?} is not a frame rate (25, 29.97, 30000/1001 ...)",
            args.frame_rate
        )
    })?;
    let offset = match args.offset {
        Some(s) => {
            Millis::from_secs_f64(s).context("--offset must be a finite number of seconds")?
        }
        None => Millis::ZERO,
    };
    let language = args.language.clone().unwrap_or_default();
    let settings = args
        .layout
        .settings(args.language.as_deref().filter(|l| !l.is_empty()))?;

    let title = args.title.clone().unwrap_or_else(|| {
        args.input
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    // One pass, cue by cue, where the formats allow it (not to standard output: a pass that finds
    // the cues out of order must be able to throw away what it wrote).
    if settings.is_none() && args.output.as_os_str() != "-" {
        let pass = OnePass {
            from,
            to,
            opts: WriteOptions {
                offset,
                frame_rate,
                language: language.clone(),
                title: title.clone(),
                ..WriteOptions::default()
            },
            input_name: &input_name,
            output: &args.output,
        };
        let mut done = pass.run(&mut input)?;
        if done == Streamed::NotUtf8 {
            // A legacy code page (Windows-1252) is decoded as a whole.
            input = Input::Bytes(input.read_all(&input_name)?);
            done = pass.run(&mut input)?;
        }
        if done == Streamed::Written {
            return Ok(());
        }
    }
    let input = input.read_all(&input_name)?;
    let mut cues = cuecraft_formats::parse(from, &input)
        .with_context(|| format!("cannot read {input_name} as {}", from.extension()))?;
    let max_chars = match &settings {
        Some(partial) => {
            let settings = partial.resolve();
            cues = relayout(&cues, &settings, frame_rate);
            settings.max_chars_per_line
        }
        // Only EBU-STL records a maximum line length (its GSI header); counting the characters of
        // every line of a large file for the other formats would be work nobody reads.
        None if to == Format::EbuStl => cues
            .iter()
            .flat_map(|c| c.lines.iter())
            .map(|l| l.chars().count() as u32)
            .max()
            .unwrap_or(42)
            .max(1),
        None => WriteOptions::default().max_chars_per_line,
    };
    let opts = WriteOptions {
        offset,
        frame_rate,
        language,
        title,
        max_chars_per_line: max_chars,
    };
    write_output(&args.output, |out| {
        cuecraft_formats::write(to, &cues, &opts, out)
            .with_context(|| format!("cannot write {output_name}"))
    })
}

/// Bytes of a file enough to tell its format (what `cuecraft_formats::detect` looks at).
const HEAD: usize = 8192;

/// What `cuecraft convert` reads.
enum Input {
    /// Read whole already (standard input, a pipe, any file that is not a regular one).
    Bytes(Vec<u8>),
    /// A regular file, which can be read again from its start.
    File(std::fs::File),
}

impl Input {
    /// The bytes, read whole.
    fn read_all(self, name: &str) -> anyhow::Result<Vec<u8>> {
        match self {
            Input::Bytes(bytes) => Ok(bytes),
            Input::File(mut file) => {
                let mut bytes = Vec::new();
                file.seek(SeekFrom::Start(0))
                    .and_then(|_| file.read_to_end(&mut bytes))
                    .with_context(|| format!("cannot read {name}"))?;
                Ok(bytes)
            }
        }
    }
}

/// Opens what `cuecraft convert` reads (`-` is standard input).
fn open_input(path: &Path) -> anyhow::Result<Input> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        return Ok(Input::Bytes(bytes));
    }
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    if file.metadata().is_ok_and(|m| m.is_file()) {
        return Ok(Input::File(file));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Input::Bytes(bytes))
}

/// The first [`HEAD`] bytes of `file` (fewer if it is shorter).
fn read_head(file: &mut std::fs::File) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(HEAD);
    file.take(HEAD as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// A one-pass conversion into a file (see `cuecraft_formats::convert_streaming`).
struct OnePass<'a> {
    from: Format,
    to: Format,
    opts: WriteOptions,
    input_name: &'a str,
    output: &'a Path,
}

impl OnePass<'_> {
    /// Converts `input` into the output file through its temporary file. Anything but
    /// [`Streamed::Written`] leaves no file behind and asks for another way (the whole input for
    /// [`Streamed::NotUtf8`], the cue list otherwise); errors are final.
    fn run(&self, input: &mut Input) -> anyhow::Result<Streamed> {
        let mut outcome = Streamed::Written;
        let written = write_output(self.output, |out| {
            let r = match input {
                Input::Bytes(bytes) => {
                    cuecraft_formats::convert_streaming(self.from, self.to, bytes, &self.opts, out)
                }
                Input::File(file) => {
                    file.seek(SeekFrom::Start(0))
                        .with_context(|| format!("cannot read {}", self.input_name))?;
                    cuecraft_formats::convert_streaming_read(
                        self.from, self.to, file, &self.opts, out,
                    )
                }
            };
            match r {
                Ok(Streamed::Written) => Ok(()),
                Ok(other) => {
                    outcome = other;
                    // Not an error to report: write_output throws the temporary file away.
                    bail!("no one-pass conversion")
                }
                Err(ConvertError::Input(e)) => {
                    Err(anyhow::Error::new(e).context(format!("cannot read {}", self.input_name)))
                }
                Err(ConvertError::Read(e)) => Err(anyhow::Error::new(e).context(format!(
                    "cannot read {} as {}",
                    self.input_name,
                    self.from.extension()
                ))),
                Err(ConvertError::Write(e)) => Err(anyhow::Error::new(e)
                    .context(format!("cannot write {}", self.output.display()))),
            }
        });
        match written {
            Ok(()) => Ok(Streamed::Written),
            Err(_) if outcome != Streamed::Written => Ok(outcome),
            Err(e) => Err(e),
        }
    }
}

fn parse_format(name: &str, flag: &str) -> anyhow::Result<Format> {
    Format::from_name(name)
        .with_context(|| format!("{flag} {name:?}: expected srt, vtt, ttml, ass or stl"))
}

/// Writes through `write` into `OUT.tmp` next to `OUT` and renames it into place only when
/// everything succeeded; on failure the temporary file is removed and `OUT` is left untouched.
/// Errors of `write` are returned as they are (it says whether reading or writing failed).
fn write_output(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    if path.as_os_str() == "-" {
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        return write(&mut lock);
    }
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    let result = (|| {
        let file = std::fs::File::create(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
        write(&mut out)?;
        // No fsync: like cp, the file is complete once renamed; durability against power loss is
        // the file system's business, and an fsync would dominate the run time of a convert.
        out.into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("cannot write {}", path.display()))?;
        std::fs::rename(&tmp, path)
            .with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Cues read from a file, laid out again: every cue's text becomes words that share the cue's time
/// in proportion to their length; a line starting with a dash marks a change of speaker.
fn relayout(cues: &[Cue], settings: &cuecraft_engine::Settings, fps: FrameRate) -> Vec<Cue> {
    let words = cues_to_words(cues);
    cuecraft_engine::layout(&words, settings, fps)
}

fn cues_to_words(cues: &[Cue]) -> Vec<Word> {
    let mut words = Vec::new();
    let mut speaker = 0u32;
    for cue in cues {
        let mut pieces: Vec<(&str, u32)> = Vec::new();
        for line in &cue.lines {
            let trimmed = line.trim_start();
            let undashed = trimmed
                .strip_prefix('—')
                .or_else(|| trimmed.strip_prefix("- "))
                .or_else(|| trimmed.strip_prefix('–'));
            let text = match undashed {
                Some(rest) => {
                    speaker = 1 - speaker.min(1);
                    rest
                }
                None => line.as_str(),
            };
            pieces.extend(text.split_whitespace().map(|w| (w, speaker)));
        }
        let total: i64 = pieces.iter().map(|(w, _)| w.chars().count() as i64).sum();
        if total == 0 {
            continue;
        }
        let span = (cue.end.0 - cue.start.0).max(0);
        let mut before = 0i64;
        for (w, spk) in pieces {
            let len = w.chars().count() as i64;
            let at = |chars: i64| {
                Millis(
                    cue.start.0 + (i128::from(span) * i128::from(chars) / i128::from(total)) as i64,
                )
            };
            words.push(Word::new(w, at(before), at(before + len), spk));
            before += len;
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(input: &Path, output: &Path) -> Args {
        Args {
            input: input.to_path_buf(),
            output: output.to_path_buf(),
            from: None,
            to: None,
            offset: None,
            frame_rate: "25".into(),
            language: None,
            title: None,
            layout: LayoutFlags::default(),
        }
    }

    const SRT: &str = "1\r\n00:00:01,000 --> 00:00:02,500\r\nHello & <b>\r\n\r\n2\r\n00:00:03,000 --> 00:00:05,000\r\nThis second cue has a rather long line of text\r\nand another one.\r\n\r\n";

    #[test]
    fn converts_srt_to_vtt_with_an_offset() {
        let dir = tempfile::tempdir().unwrap();
        let (i, o) = (dir.path().join("in.txt"), dir.path().join("out.vtt"));
        std::fs::write(&i, SRT).unwrap();
        let mut a = args(&i, &o);
        a.offset = Some(-1.5);
        run(a).unwrap();
        assert_eq!(
            std::fs::read_to_string(&o).unwrap(),
            "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nHello &amp; &lt;b&gt;\n\n00:00:01.500 --> 00:00:03.500\nThis second cue has a rather long line of text\nand another one.\n\n"
        );
        assert!(!dir.path().join("out.vtt.tmp").exists());
    }

    #[test]
    fn relayout_respects_max_chars_per_line() {
        let dir = tempfile::tempdir().unwrap();
        let (i, o) = (dir.path().join("in.srt"), dir.path().join("out.srt"));
        std::fs::write(&i, SRT).unwrap();
        let mut a = args(&i, &o);
        a.layout.max_chars_per_line = Some(20);
        run(a).unwrap();
        let cues = cuecraft_formats::parse(Format::Srt, &std::fs::read(&o).unwrap()).unwrap();
        let text: Vec<&str> = cues
            .iter()
            .flat_map(|c| c.lines.iter().map(String::as_str))
            .collect();
        assert!(text.iter().all(|l| l.chars().count() <= 20), "{text:?}");
        let joined = text.join(" ");
        assert!(
            joined.contains("Hello &") && joined.ends_with("another one."),
            "{joined}"
        );
        assert!(cues.len() >= 3);
        // The words keep their times: nothing starts before the first word; the engine may extend
        // the last cue for reading time.
        assert!(cues.first().unwrap().start >= Millis(1_000));
        assert!(cues.windows(2).all(|w| w[0].end <= w[1].start), "{cues:?}");
    }

    #[test]
    fn errors_leave_no_output_file() {
        let dir = tempfile::tempdir().unwrap();
        let (i, o) = (dir.path().join("in.srt"), dir.path().join("out.ass"));
        std::fs::write(&i, "1\n00:99:00,000 --> 00:00:01,000\nx\n").unwrap();
        let err = run(args(&i, &o)).unwrap_err();
        assert!(format!("{err:#}").contains("minutes 99"), "{err:#}");
        assert!(!o.exists() && !dir.path().join("out.ass.tmp").exists());

        std::fs::write(&i, SRT).unwrap();
        let mut a = args(&i, &dir.path().join("out.unknown"));
        assert!(run(a).is_err());
        a = args(&i, &o);
        a.layout.max_chars_per_line = Some(5);
        let err = run(a).unwrap_err();
        assert!(
            format!("{err:#}").contains("--max-chars-per-line"),
            "{err:#}"
        );
        assert!(!o.exists());
    }

    /// Converts `srt` (as `in.srt`) to `out.vtt`, where an older `out.vtt` holds `old`: the outcome
    /// and what `out.vtt` holds afterwards, once it is checked that no temporary file is left.
    fn srt_to_vtt_over_old(srt: &[u8]) -> (anyhow::Result<()>, String) {
        let dir = tempfile::tempdir().unwrap();
        let (i, o) = (dir.path().join("in.srt"), dir.path().join("out.vtt"));
        std::fs::write(&o, "old").unwrap();
        std::fs::write(&i, srt).unwrap();
        let r = run(args(&i, &o));
        assert!(!dir.path().join("out.vtt.tmp").exists());
        (r, std::fs::read_to_string(&o).unwrap())
    }

    #[test]
    fn cues_out_of_order_are_written_sorted_over_an_older_file() {
        // The one-pass conversion writes the first cue, meets the second and gives up; the cue
        // list then sorts them. The older output is replaced whole.
        let (r, out) = srt_to_vtt_over_old(
            b"1\n00:00:05,000 --> 00:00:06,000\nlater\n\n2\n00:00:01,000 --> 00:00:02,000\nearlier\n",
        );
        r.unwrap();
        assert_eq!(
            out,
            "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nearlier\n\n00:00:05.000 --> 00:00:06.000\nlater\n\n"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_pipe_is_read_once() {
        // `cuecraft convert <(cat in.srt) -o out.vtt`: the input cannot be read twice.
        let dir = tempfile::tempdir().unwrap();
        let (fifo, o) = (dir.path().join("in.srt"), dir.path().join("out.vtt"));
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, SRT).unwrap())
        };
        // Opened a second time, the FIFO would wait for a writer forever: give the conversion
        // a deadline so that a regression fails instead of hanging the suite.
        let (done, finished) = std::sync::mpsc::channel();
        let a = args(&fifo, &o);
        std::thread::spawn(move || done.send(run(a).map_err(|e| format!("{e:#}"))));
        let r = finished.recv_timeout(std::time::Duration::from_secs(30));
        assert!(matches!(r, Ok(Ok(()))), "{r:?}");
        writer.join().unwrap();
        let cues = cuecraft_formats::parse(Format::WebVtt, &std::fs::read(&o).unwrap()).unwrap();
        assert_eq!(cues.len(), 2);
        assert_eq!(
            cues[1].lines,
            vec![
                "This second cue has a rather long line of text",
                "and another one."
            ]
        );
    }

    #[test]
    fn a_windows_1252_file_is_decoded_whole() {
        // Read in chunks this file is not UTF-8; read whole it is Windows-1252.
        let (r, out) =
            srt_to_vtt_over_old(b"1\r\n00:00:01,000 --> 00:00:02,000\r\nCaf\xE9 \x80 5\r\n");
        r.unwrap();
        assert_eq!(out, "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nCafé € 5\n\n");
    }

    #[test]
    fn a_bad_input_is_a_read_error_and_keeps_the_previous_output() {
        // The first cue is fine (and written to the temporary file) before the error is found.
        let (r, out) = srt_to_vtt_over_old(
            b"1\n00:00:01,000 --> 00:00:02,000\na\n\n2\n00:61:00,000 --> 00:62:00,000\nb\n",
        );
        let err = format!("{:#}", r.unwrap_err());
        assert!(
            err.starts_with("cannot read")
                && err.contains("in.srt as srt")
                && err.contains("minutes 61"),
            "{err}"
        );
        assert_eq!(out, "old");
    }

    #[test]
    fn a_failed_write_keeps_the_previous_output() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("keep.srt");
        std::fs::write(&out, "old").unwrap();
        let r = write_output(&out, |w| {
            w.write_all(b"partial")?;
            bail!("disk full")
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
        assert!(!dir.path().join("keep.srt.tmp").exists());
    }

    #[test]
    fn words_share_the_cue_time_and_dashes_change_speaker() {
        let cue = Cue::from_lines(
            1,
            Millis(1_000),
            Millis(2_000),
            vec!["—Are you?".into(), "—Yes.".into()],
        );
        let w = cues_to_words(&[cue]);
        let v: Vec<_> = w
            .iter()
            .map(|w| (w.text.as_ref(), w.start.0, w.end.0, w.speaker))
            .collect();
        assert_eq!(
            v,
            vec![
                ("Are", 1_000, 1_272, 1),
                ("you?", 1_272, 1_636, 1),
                ("Yes.", 1_636, 2_000, 0)
            ]
        );
    }
}
