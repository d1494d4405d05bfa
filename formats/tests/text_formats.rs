//! SRT, WebVTT and ASS against the shared fixtures: golden snapshots (every byte, line endings made
//! visible), read-back equal to what the fixture means, write -> read -> write byte-identical, and
//! real-world-shaped inputs (BOM, CRLF/LF/CR mix, Windows-1252, NOTE/STYLE blocks, Aegisub files).

mod common;

use common::{fixtures, Expected};
use cuecraft_engine::{Cue, Millis};
use cuecraft_formats::{parse, to_vec, Format};

/// The text formats, their golden directory and their time unit in milliseconds.
const TEXT_FORMATS: [(Format, &str, i64); 3] = [
    (Format::Srt, "srt", 1),
    (Format::WebVtt, "vtt", 1),
    (Format::Ass, "ass", 10),
];

/// The output as reviewable text that still pins every byte: CR shown as `␍`, LF as `␊` before the
/// real line break (so trailing spaces and final blank lines are visible to the snapshot), and the
/// invisible U+200B that protects ASS backslashes as `⟦U+200B⟧`.
fn render(bytes: &[u8]) -> String {
    let s = std::str::from_utf8(bytes).expect("writers emit UTF-8");
    assert!(
        !s.contains(['␍', '␊']) && !s.contains("⟦U+200B⟧"),
        "fixture text must not contain the markers"
    );
    s.replace('\r', "␍")
        .replace('\n', "␊\n")
        .replace('\u{200B}', "⟦U+200B⟧")
}

#[test]
fn golden_snapshots_of_every_fixture() {
    for (format, dir, _) in TEXT_FORMATS {
        for f in fixtures() {
            let out = to_vec(format, &f.cues, &f.opts).expect("writing to a Vec cannot fail");
            if let Ok(dump) = std::env::var("CUECRAFT_FORMATS_DUMP") {
                let path = std::path::Path::new(&dump).join(format!("{}.{}", f.name, dir));
                std::fs::write(path, &out).expect("dump dir is writable");
            }
            insta::with_settings!({
                snapshot_path => format!("../../golden/formats/{dir}"),
                prepend_module_to_snapshot => false,
                omit_expression => true,
                description => format!("{dir} output of fixture `{}`; ␍ = CR, ␊ = LF, ⟦U+200B⟧ = zero-width space", f.name),
            }, {
                insta::assert_snapshot!(f.name, render(&out));
            });
        }
    }
}

#[test]
fn read_back_equals_the_fixture_and_rewrite_is_byte_identical() {
    for (format, dir, unit) in TEXT_FORMATS {
        for f in fixtures() {
            let first = to_vec(format, &f.cues, &f.opts).unwrap();
            let cues = parse(format, &first)
                .unwrap_or_else(|e| panic!("{dir}/{}: own output unreadable: {e}", f.name));
            assert_eq!(
                Expected::from_cues(&cues),
                f.expected(unit),
                "{dir}/{}",
                f.name
            );
            let second = to_vec(format, &cues, &f.rewrite_opts()).unwrap();
            assert!(
                first == second,
                "{dir}/{}: round trip changed bytes:\n{}\n---\n{}",
                f.name,
                render(&first),
                render(&second)
            );
        }
    }
}

/// Cues whose exact times are in one order but whose written times are in the other: the first
/// pair starts 5 ms apart and rounds to the same centisecond (ASS), the second pair clamps to the
/// same zero start under a negative offset. Found by the `roundtrip_writers` fuzz target.
#[test]
fn cues_that_tie_once_written_keep_their_order_through_a_round_trip() {
    let cue = |start: i64, end: i64, text: &str| {
        Cue::from_lines(0, Millis(start), Millis(end), vec![text.to_string()])
    };
    let rounding = vec![
        cue(3_402_287_817, 3_402_306_800, "long"),
        cue(3_402_287_822, 3_402_287_830, "short"),
    ];
    let clamping = vec![cue(500, 1_100, "long"), cue(700, 1_050, "short")];
    for (format, _, unit) in TEXT_FORMATS {
        // At millisecond precision the first pair does not tie: it keeps its order.
        let rounding_order = if unit == 1 {
            ["long", "short"]
        } else {
            ["short", "long"]
        };
        common::assert_written_order_round_trips(format, &rounding, 0, &rounding_order);
        common::assert_written_order_round_trips(format, &clamping, -1_000, &["short", "long"]);
    }
}

#[test]
fn line_endings_encoding_and_framing() {
    for f in fixtures() {
        for (format, dir, _) in TEXT_FORMATS {
            let out = to_vec(format, &f.cues, &f.opts).unwrap();
            let s = String::from_utf8(out).unwrap();
            assert!(!s.starts_with('\u{FEFF}'), "{dir}: no BOM");
            match format {
                Format::WebVtt => {
                    assert!(!s.contains('\r'), "vtt/{}: LF only", f.name);
                    assert!(s.starts_with("WEBVTT\n\n"));
                    assert!(s.ends_with("\n\n"));
                    // A payload never contains `-->` or a raw `<` or `&`.
                    for block in s.split("\n\n").skip(1) {
                        for line in block.lines().skip(1) {
                            assert!(!line.contains("-->") && !line.contains('<'), "{line}");
                        }
                    }
                }
                _ => {
                    let bare_lf = s
                        .char_indices()
                        .any(|(i, c)| c == '\n' && !s[..i].ends_with('\r'));
                    let bare_cr = s
                        .char_indices()
                        .any(|(i, c)| c == '\r' && !s[i + 1..].starts_with('\n'));
                    assert!(!bare_lf && !bare_cr, "{dir}/{}: CRLF only", f.name);
                    assert!(s.is_empty() || s.ends_with("\r\n"));
                }
            }
        }
    }
}

#[test]
fn identical_input_gives_identical_bytes() {
    for (format, _, _) in TEXT_FORMATS {
        for f in fixtures() {
            assert_eq!(
                to_vec(format, &f.cues, &f.opts).unwrap(),
                to_vec(format, &f.cues, &f.opts).unwrap()
            );
        }
    }
}

fn input(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../golden/inputs/formats")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn summary(cues: &[Cue]) -> Vec<(i64, i64, String)> {
    cues.iter()
        .map(|c| (c.start.0, c.end.0, c.lines.join("|")))
        .collect()
}

#[test]
fn real_world_srt_variants() {
    // BOM, CRLF, no final blank line.
    let bom = parse(Format::Srt, &input("bom_crlf_no_final_blank.srt")).unwrap();
    assert_eq!(
        summary(&bom),
        vec![
            (1_000, 3_000, "Première ligne|deuxième ligne".to_string()),
            (3_500, 5_250, "<i>Italique</i> {\\an8}en haut".to_string()),
        ]
    );
    // Windows-1252 bytes (é, €, curly quotes, ellipsis), LF and CR mixed, `.` separator, 1-digit
    // and 3-digit hours, no counters on some cues, a blank line inside a cue's text.
    let legacy = parse(Format::Srt, &input("windows1252_mixed.srt")).unwrap();
    assert_eq!(
        summary(&legacy),
        vec![
            (500, 2_000, "Café – 5 €".to_string()),
            (2_000, 4_000, "“Quoted”…|second line".to_string()),
            (360_000_000, 360_001_500, "a hundred hours".to_string()),
            (
                360_002_000,
                360_003_000,
                "after a blank line|text continues".to_string()
            ),
        ]
    );
}

#[test]
fn real_world_vtt_variants() {
    let cues = parse(Format::WebVtt, &input("blocks_settings_entities.vtt")).unwrap();
    assert_eq!(
        summary(&cues),
        vec![
            (1_000, 4_000, "Never drink liquid nitrogen.".to_string()),
            (
                5_000,
                9_000,
                "— It will perforate your stomach.|— You could die.".to_string()
            ),
            (10_000, 12_500, "Tom & Jerry <3 \u{a0}x\u{200e}".to_string()),
            (13_000, 14_000, "Anna: hi".to_string()),
        ]
    );
}

#[test]
fn real_world_ass_variants() {
    let cues = parse(Format::Ass, &input("aegisub_like.ass")).unwrap();
    assert_eq!(
        summary(&cues),
        vec![
            (1_000, 2_500, "Hello world|second line".to_string()),
            (3_000, 4_990, "Sign: {literal} braces".to_string()),
            (36_000_000, 36_001_000, "Ten hours in".to_string()),
        ]
    );
}

#[test]
fn hostile_inputs_are_errors_not_panics() {
    let cases: &[(Format, &[u8])] = &[
        (
            Format::Srt,
            b"1\n99999999999999999999:00:00,000 --> 0:0:0\nx",
        ),
        (Format::Srt, b"\xFF\xFE\x00"),
        (Format::Srt, b"1\n00:00:01,000 --> "),
        (Format::WebVtt, b"WEBVTT\n\n00:00.000 --> 00:99.000\nx"),
        (Format::WebVtt, b"\xEF\xBB\xBF"),
        (Format::Ass, b"[Events]\nFormat: Text\n"),
        (Format::Ass, b"[Events]\nDialogue: 0,1:2:3.4\n"),
    ];
    for (format, bytes) in cases {
        let r = parse(*format, bytes);
        if let Err(e) = r {
            assert_eq!(e.format, *format);
            assert!(e.offset <= bytes.len(), "{e}");
            assert!(!e.message.is_empty());
        }
    }
    assert!(parse(Format::Srt, b"junk before any cue\n").is_err());
    assert!(parse(Format::WebVtt, b"").is_err());
}
