//! `cuecraft check` as a subtitler or a CI job runs it: the real binary on a file of each of the
//! five formats, human and JSON output, the exit status, JSON cues with their words, and a job's
//! transcript read through the API (`--job`).

use std::process::{Command, Output};

use cuecraft_engine::{Cue, Millis};
use cuecraft_formats::{to_vec, Format, WriteOptions};
use serde_json::Value;

use crate::common::BIN;

fn check(args: &[&str]) -> Output {
    Command::new(BIN).arg("check").args(args).output().unwrap()
}

fn cue(start: i64, end: i64, lines: &[&str]) -> Cue {
    Cue::from_lines(
        0,
        Millis(start),
        Millis(end),
        lines.iter().map(|l| l.to_string()).collect(),
    )
}

/// Four cues, each breaking one rule under Netflix's English style at 25 fps (times that every
/// format keeps exactly: whole frames, whole centiseconds):
/// 1. ends one frame (40 ms) before cue 2 starts: `gap`, an error;
/// 2. 46 characters in 1.6 s, 28.8 per second: `reading-pace`, a warning;
/// 3. a line of 43 characters: `line-length`, an error;
/// 4. 0.4 s: `duration-short`, a warning.
fn flawed() -> Vec<Cue> {
    vec![
        cue(1_000, 3_000, &["We met on the first day of term."]),
        cue(
            3_040,
            4_640,
            &["And everything went wrong", "from that moment on."],
        ),
        cue(
            5_200,
            8_200,
            &[
                "Nobody expected the report to be that long,",
                "really, truly.",
            ],
        ),
        cue(9_000, 9_400, &["Fine."]),
    ]
}

/// The rule and cue number of every finding of a `--json` report.
fn findings(report: &Value) -> Vec<(String, u64)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["cue"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn check_reads_every_format_and_fails_on_an_error_level_rule() {
    let dir = tempfile::tempdir().unwrap();
    let expected = [
        ("gap".to_string(), 1),
        ("reading-pace".to_string(), 2),
        ("line-length".to_string(), 3),
        ("duration-short".to_string(), 4),
    ];
    for format in [
        Format::Srt,
        Format::WebVtt,
        Format::Ttml,
        Format::Ass,
        Format::EbuStl,
    ] {
        let path = dir.path().join(format!("flawed.{}", format.extension()));
        std::fs::write(
            &path,
            to_vec(format, &flawed(), &WriteOptions::default()).unwrap(),
        )
        .unwrap();
        let out = check(&[path.to_str().unwrap(), "--json"]);
        assert_eq!(out.status.code(), Some(1), "{format:?}: {out:?}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(findings(&report), expected, "{format:?}");
        assert_eq!(report["style"], "netflix-en");
        assert_eq!(report["passed"], false);
        assert_eq!(
            (report["errors"].as_u64(), report["warnings"].as_u64()),
            (Some(2), Some(2))
        );
        assert_eq!(report["rules"]["line-length"]["count"], 1);
        assert_eq!(
            report["rules"]["line-length"]["of"], 6,
            "{format:?}: six lines in all"
        );
        assert_eq!(report["findings"][2]["start"], 5.2);
    }
}

#[test]
fn human_output_has_a_line_per_finding_with_cue_number_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flawed.srt");
    std::fs::write(
        &path,
        to_vec(Format::Srt, &flawed(), &WriteOptions::default()).unwrap(),
    )
    .unwrap();
    let out = check(&[path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        &lines[..4],
        [
            "cue 1 at 0:00:01.000: error gap: 1 frame before the next cue, under 2",
            "cue 2 at 0:00:03.040: warning reading-pace: 28.8 characters per second, over 20",
            "cue 3 at 0:00:05.200: error line-length: line 1 has 43 characters, over 42",
            "cue 4 at 0:00:09.000: warning duration-short: lasts 0.400 s, under 0.833 s",
        ]
    );
    assert!(
        text.contains("4 cues checked against netflix-en at 25 fps: 2 errors, 2 warnings"),
        "{text}"
    );
    // The BBC style: 37 characters a line.
    let out = check(&[path.to_str().unwrap(), "--style", "bbc"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("checked against bbc"), "{text}");
    assert!(text.contains("line 1 has 43 characters, over 37"), "{text}");
}

#[test]
fn a_clean_file_passes_with_status_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clean.vtt");
    let cues = vec![
        cue(1_000, 3_000, &["We met on the first day of term."]),
        cue(
            3_080,
            5_600,
            &["And everything went wrong", "from that moment on."],
        ),
    ];
    std::fs::write(
        &path,
        to_vec(Format::WebVtt, &cues, &WriteOptions::default()).unwrap(),
    )
    .unwrap();
    let out = check(&[path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(&format!(
        "{}: 2 cues checked against netflix-en at 25 fps: 0 errors, 0 warnings",
        path.display()
    )));
    // Gaps are counted in the frames of the media's rate: 80 ms is 2 frames at 25 fps but under
    // 3 at 50 (two frames there are 40 ms, so it passes Netflix's 2 frames either way).
    let out = check(&[path.to_str().unwrap(), "--frame-rate", "50", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["frameRate"], "50");
}

#[test]
fn laid_out_json_cues_are_checked_with_their_words_against_their_settings() {
    let dir = tempfile::tempdir().unwrap();
    // Two sentences with a 3 s silence between them, then a fast run of words.
    let mut words = vec![
        serde_json::json!({"text": "Welcome back.", "start": 0.0, "end": 0.9, "speaker": 0}),
        serde_json::json!({"text": "Today", "start": 3.9, "end": 4.2, "speaker": 0}),
    ];
    for (i, w) in "we look at how the river changed the valley over ten thousand years."
        .split(' ')
        .enumerate()
    {
        let t = 4.25 + i as f64 * 0.22;
        words.push(serde_json::json!({"text": w, "start": t, "end": t + 0.2, "speaker": 0}));
    }
    let words_path = dir.path().join("words.json");
    std::fs::write(&words_path, serde_json::to_vec(&words).unwrap()).unwrap();
    let settings_path = dir.path().join("settings.json");
    std::fs::write(&settings_path, br#"{"maxCharsPerLine": 32}"#).unwrap();
    let layout = Command::new(BIN)
        .args(["layout", "--words"])
        .arg(&words_path)
        .arg("--settings")
        .arg(&settings_path)
        .output()
        .unwrap();
    assert!(layout.status.success());
    let cues_path = dir.path().join("cues.json");
    std::fs::write(&cues_path, &layout.stdout).unwrap();
    let out = check(&[
        cues_path.to_str().unwrap(),
        "--style",
        settings_path.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["style"], "settings");
    assert_eq!(report["rules"]["silence-bridged"]["count"], 0);
    // The floor needs the words, which JSON cues carry.
    let floor = &report["paceFloor"];
    assert_eq!(floor["cues"], report["cues"]);
    assert!(
        floor["over"].as_u64().unwrap()
            <= report["rules"]["reading-pace"]["count"].as_u64().unwrap()
    );
    // Stretching the first cue over the silence is what silence-bridged is for.
    let mut cues: Value = serde_json::from_slice(&layout.stdout).unwrap();
    cues[0]["end"] = serde_json::json!(3.4);
    std::fs::write(&cues_path, serde_json::to_vec(&cues).unwrap()).unwrap();
    let out = check(&[
        cues_path.to_str().unwrap(),
        "--style",
        settings_path.to_str().unwrap(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(
            "cue 1 at 0:00:00.000: warning silence-bridged: stays up 2.50 s after its last word"
        ),
        "{text}"
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "a warning does not fail the check"
    );
}

#[test]
fn a_file_that_cannot_be_checked_exits_with_two_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "just some text\n").unwrap();
    let out = check(&[path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("cannot tell the format of"), "{err}");
    let out = check(&[path.to_str().unwrap(), "--style", "youtube"]);
    assert_eq!(out.status.code(), Some(2));
    let missing = check(&[dir.path().join("nope.srt").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8(missing.stderr)
        .unwrap()
        .contains("cannot read"));
}

#[test]
fn check_reads_a_jobs_transcript_through_the_api() {
    let server = crate::common::Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = crate::web::ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let api = format!("{}/v1", server.base());
    let out = Command::new(BIN)
        .args(["check", "--job", &id, "--api", &api, "--json"])
        .env("CUECRAFT_API_KEY", &org.key)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let transcript = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
        .json();
    assert_eq!(report["file"], format!("job {id}"));
    assert_eq!(report["cues"], transcript["cueCount"]);
    // The API's cues carry their words, so the floor is worked out.
    assert_eq!(report["paceFloor"]["cues"], transcript["cueCount"]);
    // A wrong key is the API's error, and the check could not run.
    let out = Command::new(BIN)
        .args([
            "check",
            "--job",
            &id,
            "--api",
            &api,
            "--key",
            "cc_live_0000",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("401") || err.contains("unauthorized"), "{err}");
}

/// Words of three sentences of a scene: each starts a few frames after a cut at 25 fps (the
/// first on frame 5 after the cut at 2.0 s, the second on frame 8 after the cut at 6.0 s), and
/// the third runs to 1 frame before the cut at 12.0 s.
fn scene_words() -> Vec<Value> {
    let mut words = Vec::new();
    let mut say = |text: &str, start: f64, step: f64| {
        for (i, w) in text.split(' ').enumerate() {
            let t = start + i as f64 * step;
            words.push(
                serde_json::json!({"text": w, "start": t, "end": t + step - 0.04, "speaker": 0}),
            );
        }
    };
    say("The river rose overnight.", 2.2, 0.3);
    say("By morning the road was gone.", 6.32, 0.3);
    say("Nobody could reach the farm for a week.", 9.72, 0.28);
    words
}

#[test]
fn layout_times_cues_to_a_shot_list_and_check_reports_the_shot_rules() {
    let dir = tempfile::tempdir().unwrap();
    let words_path = dir.path().join("words.json");
    std::fs::write(&words_path, serde_json::to_vec(&scene_words()).unwrap()).unwrap();
    // Subtitle Edit's text form: one time in seconds per line.
    let shots_path = dir.path().join("shots.txt");
    std::fs::write(&shots_path, "# cuts\n2.0\n6.0\n12.0\n").unwrap();
    let layout = |shots: bool| {
        let mut cmd = Command::new(BIN);
        cmd.args(["layout", "--words"]).arg(&words_path);
        if shots {
            cmd.arg("--shot-changes").arg(&shots_path);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let path = dir
            .path()
            .join(if shots { "timed.json" } else { "plain.json" });
        std::fs::write(&path, &out.stdout).unwrap();
        let cues: Value = serde_json::from_slice(&out.stdout).unwrap();
        (path, cues)
    };
    let (timed_path, timed) = layout(true);
    let (plain_path, plain) = layout(false);
    let starts = |c: &Value| -> Vec<f64> {
        c.as_array()
            .unwrap()
            .iter()
            .map(|c| c["start"].as_f64().unwrap())
            .collect()
    };
    assert_eq!(starts(&plain), [2.2, 6.32, 9.72]);
    // In on the cuts; the last sentence's speech runs on to 1 frame before the cut at 12.0 s, so
    // it stays up half a second (12 frames) past the cut.
    assert_eq!(starts(&timed), [2.0, 6.0, 9.72]);
    assert_eq!(timed[2]["end"], 12.48);
    let report = |path: &std::path::Path| -> Value {
        let out = check(&[
            path.to_str().unwrap(),
            "--shot-changes",
            shots_path.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let r = report(&timed_path);
    assert_eq!(r["shotChanges"], 3);
    assert_eq!(r["rules"]["shot-change-in"]["count"], 0);
    assert_eq!(r["rules"]["shot-change-out"]["count"], 0);
    let r = report(&plain_path);
    assert_eq!(
        findings(&r)
            .into_iter()
            .filter(|(rule, _)| rule.starts_with("shot-change"))
            .collect::<Vec<_>>(),
        [
            ("shot-change-in".to_string(), 1),
            ("shot-change-in".to_string(), 2),
            ("shot-change-out".to_string(), 3)
        ]
    );
    // The video itself: its cuts found as the service finds them, the same findings, and its
    // frame rate taken when none is given.
    let video = dir.path().join("scene.mkv");
    let status = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-y"])
        .args(["-f", "lavfi", "-i", "testsrc2=s=320x180:r=25:d=2"])
        .args(["-f", "lavfi", "-i", "smptehdbars=s=320x180:r=25:d=4"])
        .args(["-f", "lavfi", "-i", "rgbtestsrc=s=320x180:r=25:d=6"])
        .args(["-f", "lavfi", "-i", "testsrc=s=320x180:r=25:d=2"])
        .args([
            "-filter_complex",
            "[0:v][1:v][2:v][3:v]concat=n=4:v=1:a=0[v]",
        ])
        .args(["-map", "[v]", "-c:v", "libx264"])
        .arg(&video)
        .status()
        .unwrap();
    assert!(status.success());
    let out = check(&[
        plain_path.to_str().unwrap(),
        "--media",
        video.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let by_media: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(by_media["shotChanges"], 3);
    assert_eq!(findings(&by_media), findings(&r));
    let out = check(&[
        timed_path.to_str().unwrap(),
        "--media",
        video.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // Audio is no picture: the check says so and could not run.
    let sound = dir.path().join("sound.wav");
    let status = Command::new("ffmpeg")
        .args([
            "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=d=1",
        ])
        .arg(&sound)
        .status()
        .unwrap();
    assert!(status.success());
    let out = check(&[
        plain_path.to_str().unwrap(),
        "--media",
        sound.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no picture"));
    // Without a shot list the shot rules are not reported at all.
    let out = check(&[plain_path.to_str().unwrap(), "--json"]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["rules"].get("shot-change-in").is_none());
    assert_eq!(r["shotChanges"], Value::Null);
}

#[test]
fn a_bad_shot_list_stops_layout_and_check_with_the_line_at_fault() {
    let dir = tempfile::tempdir().unwrap();
    let words_path = dir.path().join("words.json");
    std::fs::write(&words_path, serde_json::to_vec(&scene_words()).unwrap()).unwrap();
    let shots_path = dir.path().join("shots.txt");
    std::fs::write(&shots_path, "2.0\n6,0\n").unwrap();
    let out_path = dir.path().join("out.srt");
    let out = Command::new(BIN)
        .args(["layout", "--format", "srt", "--words"])
        .arg(&words_path)
        .arg("--shot-changes")
        .arg(&shots_path)
        .arg("-o")
        .arg(&out_path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("line 2: \"6,0\" is not a number of seconds"),
        "{err}"
    );
    assert!(!out_path.exists(), "no partial file");
    let srt = dir.path().join("a.srt");
    std::fs::write(&srt, "1\n00:00:01,000 --> 00:00:02,000\nHi.\n").unwrap();
    let out = check(&[
        srt.to_str().unwrap(),
        "--shot-changes",
        shots_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// Words of a quick exchange between two speakers: a question (speaker 0), a one-word answer
/// (speaker 1) 0.1 s after it, then after a pause a sentence of each.
fn dialogue_words() -> Vec<Value> {
    let mut words = Vec::new();
    let mut at = 1.0;
    for (speaker, text, pause) in [
        (0, "Are you coming with us tonight?", 0.0),
        (1, "Yes.", 0.1),
        (
            0,
            "Then bring your coat, the wind is cold on the hill.",
            1.5,
        ),
        (1, "I will bring two.", 0.8),
    ] {
        at += pause;
        for w in text.split(' ') {
            words.push(
                serde_json::json!({"text": w, "start": at, "end": at + 0.26, "speaker": speaker}),
            );
            at += 0.3;
        }
    }
    words
}

/// Issue 23 item 3: `cuecraft layout` and `cuecraft check` honour speakers. Laid out with the
/// contract's default (`emDashOnSpeakerChange` on), the question and its one-word answer share a
/// cue, one dashed line per speaker, and every cue says whose it is; with the setting off the
/// answer is a cue of its own, speaker 1, and no line has a dash. `check` takes a dashed line as
/// a speaker's turn: the dialogue cue breaks no rule (JSON cues and the SRT `layout` writes
/// alike), where the same text without its dashes is a sentence ending inside the cue, a one-word
/// line and text that fits one line.
#[test]
fn layout_and_check_honour_two_speakers() {
    let dir = tempfile::tempdir().unwrap();
    let words_path = dir.path().join("words.json");
    std::fs::write(&words_path, serde_json::to_vec(&dialogue_words()).unwrap()).unwrap();
    let no_dashes = dir.path().join("no-dashes.json");
    std::fs::write(&no_dashes, br#"{"emDashOnSpeakerChange": false}"#).unwrap();
    let layout = |extra: &[&std::ffi::OsStr]| -> Vec<u8> {
        let out = Command::new(BIN)
            .args(["layout", "--words"])
            .arg(&words_path)
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        out.stdout
    };
    let shape = |json: &[u8]| -> Vec<(u64, Vec<String>)> {
        let cues: Value = serde_json::from_slice(json).unwrap();
        cues.as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let lines = c["lines"].as_array().unwrap();
                let lines = lines.iter().map(|l| l.as_str().unwrap().to_string());
                (c["speaker"].as_u64().unwrap(), lines.collect())
            })
            .collect()
    };
    let dashed = layout(&[]);
    let lines = |l: &[&str]| -> Vec<String> { l.iter().map(|s| s.to_string()).collect() };
    assert_eq!(
        shape(&dashed),
        [
            (
                0,
                lines(&["\u{2014}Are you coming with us tonight?", "\u{2014}Yes."])
            ),
            (
                0,
                lines(&["Then bring your coat,", "the wind is cold on the hill."])
            ),
            (1, lines(&["I will bring two."])),
        ]
    );
    let split = layout(&["--settings".as_ref(), no_dashes.as_os_str()]);
    assert_eq!(
        shape(&split),
        [
            (0, lines(&["Are you coming with us tonight?"])),
            (1, lines(&["Yes."])),
            (
                0,
                lines(&["Then bring your coat,", "the wind is cold on the hill."])
            ),
            (1, lines(&["I will bring two."])),
        ]
    );

    // The rules a dialogue line is excused from, counted for each file checked.
    let dialogue_rules = |path: &std::path::Path| -> Vec<(String, u64)> {
        let out = check(&[path.to_str().unwrap(), "--json"]);
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        findings(&report)
            .into_iter()
            .filter(|(rule, _)| {
                ["sentence-inside", "one-word-line", "needless-lines"].contains(&rule.as_str())
            })
            .collect()
    };
    let cues_path = dir.path().join("dashed.json");
    std::fs::write(&cues_path, &dashed).unwrap();
    assert_eq!(dialogue_rules(&cues_path), []);
    let srt_path = dir.path().join("dashed.srt");
    let srt = layout(&["--format".as_ref(), "srt".as_ref()]);
    let text = String::from_utf8_lossy(&srt).replace("\r\n", "\n");
    assert!(
        text.contains("\n\u{2014}Are you coming with us tonight?\n\u{2014}Yes.\n\n"),
        "{text}"
    );
    std::fs::write(&srt_path, &srt).unwrap();
    assert_eq!(dialogue_rules(&srt_path), []);
    let split_path = dir.path().join("split.json");
    std::fs::write(&split_path, &split).unwrap();
    assert_eq!(dialogue_rules(&split_path), []);
    // The dialogue cue without its dashes: one speaker's cue, and three rules say so.
    let mut undashed: Value = serde_json::from_slice(&dashed).unwrap();
    for line in undashed[0]["lines"].as_array_mut().unwrap() {
        *line = Value::from(line.as_str().unwrap().trim_start_matches('\u{2014}'));
    }
    let undashed_path = dir.path().join("undashed.json");
    std::fs::write(&undashed_path, serde_json::to_vec(&undashed).unwrap()).unwrap();
    let mut flagged = dialogue_rules(&undashed_path);
    flagged.sort();
    assert_eq!(
        flagged,
        [
            ("needless-lines".to_string(), 1),
            ("one-word-line".to_string(), 1),
            ("sentence-inside".to_string(), 1)
        ]
    );
}
