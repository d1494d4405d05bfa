//! Every SRT, WebVTT and ASS output of the shared fixtures read by two parsers this project did not
//! write, ffmpeg (ffprobe for cue count and times, `-f ass` for the decoded text) and pysubs2, and
//! compared with what the fixture means: same cue count, same times (to the format's precision),
//! same text. Where a tool is known to read a valid file differently, the test asserts that exact
//! deviation for that fixture (it is not skipped), so a change in the tool or in our output shows.
//!
//! The tools must be installed (`scripts/setup`): a missing tool fails the test.

mod common;

use std::path::Path;
use std::process::Command;

use common::{fixtures, Expected, Fixture};
use cuecraft_formats::{to_vec, Format};

#[derive(Debug, Clone, PartialEq, Eq)]
struct Reported {
    start: i64,
    end: i64,
    lines: Vec<String>,
}

fn run(cmd: &mut Command) -> std::process::Output {
    cmd.output().unwrap_or_else(|e| {
        panic!(
            "cannot run {:?} ({e}); install the validators with scripts/setup",
            cmd.get_program()
        )
    })
}

/// Cue times as ffprobe reports them (one packet per cue), in milliseconds.
fn ffprobe_times(path: &Path) -> Result<Vec<(i64, i64)>, String> {
    let out = run(Command::new("ffprobe")
        .args(["-v", "error", "-show_entries"])
        .args(["packet=pts_time,duration_time", "-of", "csv"])
        .arg(path));
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let text = String::from_utf8(out.stdout).expect("ffprobe prints ASCII");
    Ok(text
        .lines()
        .filter(|l| l.starts_with("packet,"))
        .map(|l| {
            let f: Vec<f64> = l
                .split(',')
                .skip(1)
                .map(|x| x.parse().unwrap_or_else(|_| panic!("ffprobe line {l:?}")))
                .collect();
            let start = (f[0] * 1000.0).round() as i64;
            (start, start + (f[1] * 1000.0).round() as i64)
        })
        .collect())
}

/// The event texts ffmpeg decodes (converted to ASS markup by its decoders), in order.
fn ffmpeg_texts(path: &Path) -> Result<Vec<String>, String> {
    let out = run(Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-i"])
        .arg(path)
        .args(["-f", "ass", "-"]));
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let text = String::from_utf8(out.stdout).expect("ffmpeg writes UTF-8 ASS");
    Ok(text
        .lines()
        .filter_map(|l| l.strip_prefix("Dialogue:"))
        .map(|l| {
            l.splitn(10, ',')
                .nth(9)
                .unwrap_or("")
                .trim_end_matches('\r')
                .to_string()
        })
        .collect())
}

fn ffmpeg_report(path: &Path) -> Result<Vec<Reported>, String> {
    let times = ffprobe_times(path)?;
    let texts = ffmpeg_texts(path)?;
    assert_eq!(
        times.len(),
        texts.len(),
        "{}: ffprobe and ffmpeg disagree on the cue count",
        path.display()
    );
    Ok(times
        .into_iter()
        .zip(texts)
        .map(|((start, end), t)| Reported {
            start,
            end,
            lines: libass_lines(&t),
        })
        .collect())
}

/// What libass displays for an event text, line by line (an oracle written for this test, from the
/// libass rules in formats.md): `{...}` with a closing brace is an override block and hidden, `\N`
/// breaks the line, `\n` is a space, `\h` a no-break space, `\{` and `\}` literal braces, any other
/// backslash is shown. U+200B (zero width, invisible) is removed from the displayed lines.
fn libass_lines(text: &str) -> Vec<String> {
    let mut lines = vec![String::new()];
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let cur = lines.last_mut().expect("never empty");
        match (c, chars.get(i + 1)) {
            ('\\', Some('N')) => {
                lines.push(String::new());
                i += 2;
            }
            ('\\', Some('n')) => {
                cur.push(' ');
                i += 2;
            }
            ('\\', Some('h')) => {
                cur.push('\u{A0}');
                i += 2;
            }
            ('\\', Some(&b @ ('{' | '}'))) => {
                cur.push(b);
                i += 2;
            }
            ('{', _) => match chars[i..].iter().position(|&x| x == '}') {
                Some(n) => i += n + 1,
                None => {
                    cur.push('{');
                    i += 1;
                }
            },
            _ => {
                cur.push(c);
                i += 1;
            }
        }
    }
    // Invisible on screen, so not part of what the viewer reads.
    for l in &mut lines {
        l.retain(|c| c != '\u{200B}');
    }
    lines
}

/// Dialogue events (start ms, end ms, text) of one file, or the error pysubs2 raised.
type PyResult = Result<Vec<(i64, i64, String)>, String>;

/// Runs pysubs2 on every file (one Python process), returning per file either its Dialogue events
/// (start ms, end ms, text in pysubs2's ASS markup) or the error pysubs2 raised.
fn pysubs2_load(files: &[(String, &str)]) -> Vec<PyResult> {
    // One output line per event or error: `file-index TAB start TAB end TAB hex(utf-8 text)` or
    // `file-index TAB ERROR TAB message`; plain text so the test needs no JSON parser.
    const SCRIPT: &str = r#"
import sys, pysubs2
args = sys.argv[1:]
for n in range(0, len(args), 2):
    path, fmt = args[n], args[n + 1]
    try:
        subs = pysubs2.load(path, encoding="utf-8", format_=fmt)
        for e in subs:
            if e.type == "Dialogue":
                print(n // 2, e.start, e.end, e.text.encode("utf-8").hex(), sep="\t")
    except Exception as ex:
        print(n // 2, "ERROR", (type(ex).__name__ + ": " + str(ex)).replace("\n", " "), sep="\t")
"#;
    let mut cmd = Command::new(common::python());
    cmd.args(["-c", SCRIPT]);
    for (path, fmt) in files {
        cmd.args([path.as_str(), fmt]);
    }
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "pysubs2 script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut results: Vec<PyResult> = files.iter().map(|_| Ok(Vec::new())).collect();
    for line in String::from_utf8(out.stdout).expect("ASCII").lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let n: usize = f[0].parse().expect("file index");
        if f[1] == "ERROR" {
            results[n] = Err(f[2].to_string());
            continue;
        }
        let bytes: Vec<u8> = (0..f[3].len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&f[3][i..i + 2], 16).expect("hex"))
            .collect();
        let text = String::from_utf8(bytes).expect("pysubs2 text is UTF-8");
        if let Ok(events) = &mut results[n] {
            events.push((
                f[1].parse().expect("start"),
                f[2].parse().expect("end"),
                text,
            ));
        }
    }
    results
}

/// pysubs2 keeps WebVTT payloads verbatim apart from turning line breaks into `\N`: decode the
/// character references any WebVTT renderer decodes.
fn vtt_entities(line: &str) -> String {
    line.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn pysubs2_report(format: Format, events: Vec<(i64, i64, String)>) -> Vec<Reported> {
    events
        .into_iter()
        .map(|(start, end, text)| Reported {
            start,
            end,
            lines: match format {
                // pysubs2 stores text in ASS markup: SRT tags become overrides, ASS is kept as is.
                Format::Srt | Format::Ass => libass_lines(&text),
                _ => text.split("\\N").map(vtt_entities).collect(),
            },
        })
        .collect()
}

fn expected_report(f: &Fixture, unit: i64) -> Vec<Reported> {
    f.expected(unit)
        .into_iter()
        .map(|Expected { start, end, lines }| Reported { start, end, lines })
        .collect()
}

fn lines(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// What the tool reports instead of the fixture, when that is a documented deviation.
enum Deviation {
    /// The tool cannot read the file at all; its error contains this text.
    Unreadable(&'static str),
    /// Times are right but the text of these cues (by position) is shown differently.
    Text(Vec<(usize, Vec<String>)>),
    /// pysubs2's SRT reader keeps only the last two digits of the hours.
    HoursModulo100,
}

fn deviation(tool: &str, format: Format, fixture: &str) -> Option<Deviation> {
    use Deviation::*;
    Some(match (tool, format, fixture) {
        // An empty cue list is an empty SRT file: ffmpeg's probe finds no SRT in it.
        ("ffmpeg", Format::Srt, "empty") => Unreadable("Invalid data found when processing input"),
        // SRT has no escaping: `< ... >` is read as an HTML tag, `{...}` as an ASS override and
        // `\N` / `\h` as ASS escapes, by both tools (formats.md §1, gotcha 5). Cue 5 is unaffected.
        ("ffmpeg", Format::Srt, "markup_chars") => Text(vec![
            (0, lines(&["if a  d", "Tom & Jerry"])),
            (1, lines(&["x --> y", "not italic"])),
            (2, lines(&[" and tags", "a } b { c"])),
            (
                3,
                lines(&["C:\\path\\to\\file", "literal ", " and \u{A0} and \\"]),
            ),
        ]),
        ("pysubs2", Format::Srt, "markup_chars") => Text(vec![
            (0, lines(&["if a  d", "Tom & Jerry"])),
            (1, lines(&["x --> y", "not italic"])),
            (2, lines(&[" and tags", "a } b { c"])),
            (
                3,
                lines(&["C:\\path\\to\\file", "literal ", " and \u{A0} and \\"]),
            ),
        ]),
        // ffmpeg's WebVTT decoder escapes braces but not backslashes, so a literal `\N` or `\h`
        // in WebVTT text becomes a line break / no-break space in its ASS output.
        ("ffmpeg", Format::WebVtt, "markup_chars") => Text(vec![(
            3,
            lines(&["C:\\path\\to\\file", "literal ", " and \u{A0} and \\"]),
        )]),
        // pysubs2 joins WebVTT lines with `\N` without escaping, so a literal `\N` in the text is
        // indistinguishable from a line break.
        ("pysubs2", Format::WebVtt, "markup_chars") => Text(vec![(
            3,
            lines(&["C:\\path\\to\\file", "literal ", " and \\h and \\"]),
        )]),
        // formats.md §1 gotcha 4: pysubs2 drops SRT hour digits beyond two.
        ("pysubs2", Format::Srt, "past_100_hours") => HoursModulo100,
        // pysubs2 1.8.1 parses ASS hours with at most two digits; ffmpeg and libass read more.
        ("pysubs2", Format::Ass, "past_100_hours") => Unreadable("Failed to parse timestamp"),
        _ => return None,
    })
}

fn check(
    tool: &str,
    format: Format,
    f: &Fixture,
    unit: i64,
    reported: Result<Vec<Reported>, String>,
) {
    let what = format!("{tool} reading {}.{}", f.name, format.extension());
    let mut expected = expected_report(f, unit);
    match deviation(tool, format, f.name) {
        Some(Deviation::Unreadable(msg)) => {
            let err = reported.expect_err(&format!("{what}: documented as unreadable"));
            assert!(err.contains(msg), "{what}: unexpected error {err:?}");
            return;
        }
        Some(Deviation::Text(cues)) => {
            for (i, l) in cues {
                expected[i].lines = l;
            }
        }
        Some(Deviation::HoursModulo100) => {
            const H100: i64 = 100 * 3_600_000;
            for e in &mut expected {
                let strip = |t: i64| t - t / H100 * H100;
                e.start = strip(e.start);
                e.end = strip(e.end);
            }
        }
        None => {}
    }
    let reported = reported.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(reported, expected, "{what}");
}

#[test]
fn ffmpeg_and_pysubs2_read_every_golden_output_as_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (format, pyfmt, unit) in [
        (Format::Srt, "srt", 1),
        (Format::WebVtt, "vtt", 1),
        (Format::Ass, "ass", 10),
    ] {
        let all = fixtures();
        let mut files = Vec::new();
        for f in &all {
            let path = dir
                .path()
                .join(format!("{}.{}", f.name, format.extension()));
            std::fs::write(&path, to_vec(format, &f.cues, &f.opts).unwrap()).unwrap();
            files.push((path.to_string_lossy().into_owned(), pyfmt));
        }
        for (f, (path, _)) in all.iter().zip(&files) {
            check("ffmpeg", format, f, unit, ffmpeg_report(Path::new(path)));
        }
        let py = pysubs2_load(&files);
        for (f, events) in all.iter().zip(py) {
            check(
                "pysubs2",
                format,
                f,
                unit,
                events.map(|e| pysubs2_report(format, e)),
            );
        }
    }
}

#[test]
fn the_libass_oracle_follows_the_documented_rules() {
    assert_eq!(
        libass_lines("a{\\i1}b\\Nc\\hd \\{e\\} {f \\x\u{200B}"),
        vec!["ab", "c\u{A0}d {e} {f \\x"]
    );
}

/// The other direction: files written by ffmpeg and pysubs2 (from our SRT of each fixture) are read
/// by our readers with the fixture's cues, times within the written format's precision.
#[test]
fn files_written_by_ffmpeg_and_pysubs2_read_back_as_the_fixture() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Fixtures whose text and times every tool can carry (no markup-like characters, hours < 10).
    let names = [
        "multi_line",
        "two_speakers",
        "iso6937_diacritics",
        "cjk",
        "rtl",
        "emoji",
        "rounding_edges",
        "negative_offset",
        "untidy_lines",
    ];
    for f in fixtures().iter().filter(|f| names.contains(&f.name)) {
        let src = dir.path().join(format!("{}.srt", f.name));
        std::fs::write(&src, to_vec(Format::Srt, &f.cues, &f.opts).unwrap()).unwrap();
        let expected = f.expected(1);
        for (format, ext, tolerance) in [
            (Format::Srt, "srt", 0),
            (Format::WebVtt, "vtt", 0),
            (Format::Ass, "ass", 10),
        ] {
            let by_ffmpeg = dir.path().join(format!("{}.ffmpeg.{ext}", f.name));
            let out = run(Command::new("ffmpeg")
                .args(["-nostdin", "-v", "error", "-y", "-i"])
                .arg(&src)
                .arg(&by_ffmpeg));
            assert!(
                out.status.success(),
                "ffmpeg: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let by_pysubs2 = dir.path().join(format!("{}.pysubs2.{ext}", f.name));
            let out = run(Command::new(common::python()).args([
                "-c",
                "import pysubs2,sys; pysubs2.load(sys.argv[1], encoding='utf-8').save(sys.argv[2])",
            ])
            .arg(&src)
            .arg(&by_pysubs2));
            assert!(
                out.status.success(),
                "pysubs2: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            for path in [by_ffmpeg, by_pysubs2] {
                let bytes = std::fs::read(&path).unwrap();
                let cues = cuecraft_formats::parse(format, &bytes)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let what = path.display().to_string();
                assert_eq!(cues.len(), expected.len(), "{what}: cue count");
                for (c, e) in cues.iter().zip(&expected) {
                    assert_eq!(c.lines, e.lines, "{what}");
                    // ASS keeps centiseconds: a writer may round or truncate, so within one.
                    let close = |a: i64, b: i64| (a - b).abs() <= tolerance;
                    assert!(
                        close(c.start.0, e.start) && close(c.end.0, e.end),
                        "{what}: {:?} vs {:?}",
                        (c.start, c.end),
                        (e.start, e.end)
                    );
                }
            }
        }
    }
}

/// How many events libass itself reads from the ASS file `name` in `dir`, through ffmpeg's `ass`
/// filter, which hands the file to libass's own reader (the `subtitles` filter and `-i` go
/// through ffmpeg's demuxer instead). libass says `Added subtitle file: 'NAME' (S styles, E
/// events)`; `None` when it did not take the file.
fn libass_events(dir: &Path, name: &str) -> Option<usize> {
    let out = run(Command::new("ffmpeg")
        .current_dir(dir)
        .args(["-nostdin", "-hide_banner", "-f", "lavfi", "-i"])
        .arg("color=size=64x64:duration=0.04")
        .arg("-vf")
        .arg(format!("ass={name}"))
        .args(["-frames:v", "1", "-f", "null", "-"]));
    let log = String::from_utf8_lossy(&out.stderr);
    let line = log.lines().find(|l| l.contains("Added subtitle file"))?;
    let counts = line.rsplit_once('(')?.1;
    let events = counts.split(", ").nth(1)?.split(' ').next()?;
    events.parse().ok()
}

#[test]
fn libass_reads_every_event_of_every_ass_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    for f in fixtures() {
        let name = format!("{}.ass", f.name);
        std::fs::write(
            dir.path().join(&name),
            to_vec(Format::Ass, &f.cues, &f.opts).expect("write"),
        )
        .expect("save");
        assert_eq!(
            libass_events(dir.path(), &name),
            Some(f.expected(10).len()),
            "{}",
            f.name
        );
    }
}
