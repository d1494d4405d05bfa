//! TTML and EBU-STL against the shared fixtures: golden snapshots, write → read → write round
//! trips, files shaped like other tools' output, and ttconv (a parser this project did not write)
//! reading every golden file.

mod common;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use common::{Expected, Fixture};
use cuecraft_engine::{Cue, FrameRate, Millis};
use cuecraft_formats::{parse, stl, to_vec, Format, WriteOptions};
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

// ---------------------------------------------------------------------------------------------
// What a reader must report
// ---------------------------------------------------------------------------------------------

/// TTML collapses whitespace (XML's default `xml:space`): runs become one space, ends are trimmed.
fn collapse(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn expected_ttml(f: &Fixture) -> Vec<Expected> {
    f.expected(1)
        .into_iter()
        .map(|e| Expected {
            lines: e.lines.iter().map(|l| collapse(l)).collect(),
            ..e
        })
        .collect()
}

/// The letters EBU-STL code table 00 has, besides printable ASCII (formats.md §5, transcribed
/// independently of the writer's table).
const ISO6937_REPERTOIRE: &str = "ÀÈÌÒÙàèìòùÁĆÉÍĹŃÓŔŚÚÝŹáćéģíĺńóŕśúýźÂĈÊĜĤÎĴÔŜÛŴŶâĉêĝĥîĵôŝûŵŷ\
ÃĨÑÕŨãĩñõũĀĒĪŌŪāēīōūĂĞŬăğŭĊĖĠİŻċėġżÄËÏÖÜŸäëïöüÿÅŮåůÇĢĶĻŅŖŞŢçķļņŗşţŐŰőűĄĘĮŲąęįų\
ČĎĚĽŇŘŠŤŽčďěľňřšťž\u{A0}¡¢£¥§¤‘“«←↑→↓°±²³×µ¶·÷’”»¼½¾¿—¹®©™♪¬¦⅛⅜⅝⅞ΩÆÐªĦĲĿŁØŒºÞŦŊŉĸæđðħıĳŀłøœßþŧŋ\u{AD}";

/// A line as EBU-STL carries it: NFC, trimmed, each grapheme itself when code table 00 has it
/// (Đ is shown as Ð, the letter the table's E2h decodes to) and `?` otherwise.
fn stl_line(line: &str) -> String {
    let nfc: String = line.trim().nfc().collect();
    nfc.graphemes(true)
        .map(|g| {
            let mut chars = g.chars();
            match (chars.next(), chars.next()) {
                (Some('Đ'), None) => "Ð".to_string(),
                (Some(c), None) if (' '..='~').contains(&c) || ISO6937_REPERTOIRE.contains(c) => {
                    c.to_string()
                }
                _ => "?".to_string(),
            }
        })
        .collect()
}

/// TCI hours are one binary byte: cues from 256 h on are not written.
const STL_LIMIT_MS: i64 = 256 * 3_600_000;

/// What an EBU-STL reader must report at 25 fps: times rounded to 40 ms frames, text as above,
/// cues from 256 h on left out.
fn expected_stl(f: &Fixture) -> Vec<Expected> {
    let no_offset = Fixture {
        opts: WriteOptions {
            offset: Millis::ZERO,
            ..f.opts.clone()
        },
        ..f.clone()
    };
    no_offset
        .expected(40)
        .into_iter()
        .filter(|e| e.start < STL_LIMIT_MS)
        .map(|e| Expected {
            lines: e.lines.iter().map(|l| stl_line(l)).collect(),
            ..e
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Golden snapshots and round trips
// ---------------------------------------------------------------------------------------------

#[test]
fn ttml_golden_files_match_the_snapshots() {
    for f in common::fixtures() {
        let bytes = to_vec(Format::Ttml, &f.cues, &f.opts).unwrap();
        let text = String::from_utf8(bytes).expect("ttml is utf-8");
        assert!(!text.contains('\r'), "{}: LF line ends only", f.name);
        insta::with_settings!({snapshot_path => "../../golden/formats/ttml", prepend_module_to_snapshot => false, omit_expression => true}, {
            insta::assert_snapshot!(f.name, text);
        });
    }
}

#[test]
fn stl_golden_files_match_the_annotated_dumps() {
    for f in common::fixtures() {
        let bytes = to_vec(Format::EbuStl, &f.cues, &f.opts).unwrap();
        let dump = dump_stl(&bytes);
        insta::with_settings!({snapshot_path => "../../golden/formats/stl", prepend_module_to_snapshot => false, omit_expression => true}, {
            insta::assert_snapshot!(f.name, dump);
        });
    }
}

#[test]
fn ttml_reads_back_what_it_wrote() {
    for f in common::fixtures() {
        let bytes = to_vec(Format::Ttml, &f.cues, &f.opts).unwrap();
        let cues = parse(Format::Ttml, &bytes).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        assert_eq!(Expected::from_cues(&cues), expected_ttml(&f), "{}", f.name);
        let again = to_vec(Format::Ttml, &cues, &f.rewrite_opts()).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&again),
            String::from_utf8_lossy(&bytes),
            "{}: write -> read -> write must be byte-identical",
            f.name
        );
    }
}

#[test]
fn stl_reads_back_what_it_wrote() {
    for f in common::fixtures() {
        let bytes = to_vec(Format::EbuStl, &f.cues, &f.opts).unwrap();
        let cues = parse(Format::EbuStl, &bytes).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        assert_eq!(Expected::from_cues(&cues), expected_stl(&f), "{}", f.name);
        let again = to_vec(Format::EbuStl, &cues, &f.rewrite_opts()).unwrap();
        assert!(
            again == bytes,
            "{}: write -> read -> write must be byte-identical\n{}\n---\n{}",
            f.name,
            dump_stl(&bytes),
            dump_stl(&again)
        );
    }
}

#[test]
fn stl_round_trips_at_30_fps_too() {
    let opts = WriteOptions {
        frame_rate: FrameRate::new(30000, 1001).unwrap(),
        ..WriteOptions::default()
    };
    for f in common::fixtures() {
        let bytes = to_vec(Format::EbuStl, &f.cues, &opts).unwrap();
        assert_eq!(&bytes[3..11], b"STL30.01");
        let cues = parse(Format::EbuStl, &bytes).unwrap();
        for c in &cues {
            // 30 fps frames: every time is a whole frame, rounded to the millisecond.
            let frame = (c.start.0 * 30 + 500) / 1000;
            assert_eq!((frame * 1000 * 2 + 30) / 60, c.start.0, "{}", f.name);
        }
        assert_eq!(
            to_vec(Format::EbuStl, &cues, &opts).unwrap(),
            bytes,
            "{}",
            f.name
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Writer details a user relies on
// ---------------------------------------------------------------------------------------------

fn cue(start: i64, end: i64, lines: &[&str]) -> Cue {
    Cue::from_lines(
        1,
        Millis(start),
        Millis(end),
        lines.iter().map(|s| s.to_string()).collect(),
    )
}

/// Cues whose exact times are in one order and whose written times tie: in EBU-STL two starts
/// 10 ms apart fall on one 25 fps frame; in TTML two starts clamp to zero under a negative offset.
/// The writers order them by the written times, so reading back and writing again gives the same
/// bytes.
#[test]
fn cues_that_tie_once_written_keep_their_order_through_a_round_trip() {
    let stl_pair = [cue(1_000, 3_000, &["long"]), cue(1_010, 1_500, &["short"])];
    let ttml_pair = [cue(500, 1_100, &["long"]), cue(700, 1_050, &["short"])];
    common::assert_written_order_round_trips(Format::EbuStl, &stl_pair, 0, &["short", "long"]);
    common::assert_written_order_round_trips(Format::Ttml, &ttml_pair, -1_000, &["short", "long"]);
}

#[test]
fn stl_gsi_carries_the_job_settings() {
    let opts = WriteOptions {
        language: "de-AT".into(),
        title: "Straßenfeger – Folge 1 and a title far longer than thirty-two bytes".into(),
        max_chars_per_line: 37,
        frame_rate: FrameRate::new(60, 1).unwrap(),
        ..WriteOptions::default()
    };
    let bytes = to_vec(
        Format::EbuStl,
        &[cue(3_600_000, 3_601_000, &["Hallo"])],
        &opts,
    )
    .unwrap();
    assert_eq!(bytes.len(), 1024 + 128);
    assert_eq!(&bytes[0..14], b"850STL30.01100");
    assert_eq!(&bytes[14..16], b"08", "LC German");
    // CP850: ß is E1h; the en dash has no code and becomes `?`; cut at 32 bytes.
    assert_eq!(&bytes[16..48], b"Stra\xE1enfeger ? Folge 1 and a tit");
    assert_eq!(&bytes[224..236], b"000101000101", "fixed CD and RD");
    assert_eq!(&bytes[236..256], b"01000010000100137231");
    assert_eq!(&bytes[256..274], b"000000000100000011");
    assert!(bytes[274..1024].iter().all(|&b| b == b' '));
    // TTI: SN 1 little-endian, one block, TCI 01:00:00:00 at 30 fps, VP 22 for one line.
    assert_eq!(
        &bytes[1024..1040],
        &[0, 1, 0, 0xFF, 0, 1, 0, 0, 0, 1, 0, 1, 0, 22, 2, 0]
    );
    assert_eq!(&bytes[1040..1050], b"\x0d\x0b\x0bHallo\x0a\x0a");
    assert!(bytes[1050..].iter().all(|&b| b == 0x8F));
}

#[test]
fn stl_dated_writer_stamps_cd_and_rd() {
    let mut out = Vec::new();
    stl::write_with_date(&[], &WriteOptions::default(), (2026, 11, 21), &mut out).unwrap();
    assert_eq!(&out[224..236], b"261121261121");
    assert_eq!(out.len(), 1024);
    assert_eq!(&out[238..248], b"0000000000", "no blocks, no subtitles");
}

#[test]
fn stl_long_text_goes_into_extension_blocks_without_splitting_accents() {
    // 40 × "é" = 80 bytes per line, three lines: 3 × 80 + codes > 112, so extension blocks.
    let line = "é".repeat(40);
    let cues = [cue(1_000, 2_000, &[&line, &line, &line])];
    let bytes = to_vec(Format::EbuStl, &cues, &WriteOptions::default()).unwrap();
    let blocks: Vec<&[u8]> = bytes[1024..].chunks(128).collect();
    assert_eq!(blocks.len(), 3);
    assert_eq!(&bytes[238..243], b"00003", "TNB counts extension blocks");
    assert_eq!(&bytes[243..248], b"00001", "TNS does not");
    assert_eq!(
        blocks.iter().map(|b| b[3]).collect::<Vec<_>>(),
        [0x00, 0x01, 0xFF]
    );
    for b in &blocks {
        assert_eq!(&b[1..3], &[1, 0], "extension blocks repeat the SN");
        assert_eq!(&b[5..13], &blocks[0][5..13], "and the times");
        let tf: Vec<u8> = b[16..].iter().copied().filter(|&x| x != 0x8F).collect();
        // A block never ends on a diacritic: its letter is in the same block.
        assert_ne!(tf.last().map(|&x| (0xC1..=0xCF).contains(&x)), Some(true));
    }
    let read = parse(Format::EbuStl, &bytes).unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].lines, vec![line.clone(), line.clone(), line]);
    assert_eq!(
        to_vec(Format::EbuStl, &read, &WriteOptions::default()).unwrap(),
        bytes
    );
}

#[test]
fn stl_ignores_the_offset_and_ttml_applies_it() {
    let cues = [cue(10_000, 12_000, &["x"])];
    let shifted = WriteOptions {
        offset: Millis(36_000_000),
        ..WriteOptions::default()
    };
    assert_eq!(
        to_vec(Format::EbuStl, &cues, &shifted).unwrap(),
        to_vec(Format::EbuStl, &cues, &WriteOptions::default()).unwrap()
    );
    let ttml = String::from_utf8(to_vec(Format::Ttml, &cues, &shifted).unwrap()).unwrap();
    assert!(
        ttml.contains(r#"begin="10:00:10.000" end="10:00:12.000""#),
        "{ttml}"
    );
}

#[test]
fn ttml_language_and_text_are_escaped() {
    let opts = WriteOptions {
        language: "x\"<&".into(),
        ..WriteOptions::default()
    };
    let text =
        String::from_utf8(to_vec(Format::Ttml, &[cue(0, 1, &["a<b & c>d"])], &opts).unwrap())
            .unwrap();
    assert!(text.contains(r#"xml:lang="x&quot;&lt;&amp;""#), "{text}");
    assert!(text.contains(">a&lt;b &amp; c&gt;d</p>"), "{text}");
    let unknown =
        String::from_utf8(to_vec(Format::Ttml, &[], &WriteOptions::default()).unwrap()).unwrap();
    assert!(unknown.contains(r#"xml:lang="""#));
}

// ---------------------------------------------------------------------------------------------
// TTML written by other tools
// ---------------------------------------------------------------------------------------------

fn ttml_cues(doc: &str) -> Vec<(i64, i64, Vec<String>)> {
    parse(Format::Ttml, doc.as_bytes())
        .unwrap_or_else(|e| panic!("{e}\n{doc}"))
        .into_iter()
        .map(|c| (c.start.0, c.end.0, c.lines))
        .collect()
}

fn lines(l: &[&str]) -> Vec<String> {
    l.iter().map(|s| s.to_string()).collect()
}

#[test]
fn ttml_reader_takes_other_prefixes_nested_divs_and_relative_times() {
    let doc = "\u{FEFF}<?xml version=\"1.0\" encoding=\"UTF-8\"?>
<!-- exported by some tool -->
<t:tt xmlns:t=\"http://www.w3.org/ns/ttml\" xmlns:p=\"http://www.w3.org/ns/ttml#parameter\"
      xmlns:s=\"http://www.w3.org/ns/ttml#styling\" xml:lang=\"en\"
      p:frameRate=\"25\" p:tickRate=\"10000000\">
  <t:head><t:styling><t:style xml:id=\"a\" s:color=\"red\"/></t:styling>
    <t:metadata><t:p begin=\"0s\" end=\"1s\">not a cue</t:p></t:metadata></t:head>
  <t:body begin=\"1s\">
    <t:div begin=\"00:00:10.000\">
      <t:div>
        <t:p begin=\"00:00:01:05\" end=\"00:00:02:00\">
            Hello
            <t:span s:color=\"yellow\">big</t:span> world<t:br/>
            second   line
        </t:p>
      </t:div>
      <t:p begin=\"5s\" dur=\"500ms\">A &amp; B &lt;3 &#160;&#x263A;</t:p>
      <t:p begin=\"10000000t\" end=\"2m\"><![CDATA[<raw> & text]]></t:p>
    </t:div>
  </t:body>
</t:tt>";
    assert_eq!(
        ttml_cues(doc),
        vec![
            (12_000, 131_000, lines(&["<raw> & text"])),
            (12_200, 13_000, lines(&["Hello big world", "second line"])),
            (16_000, 16_500, lines(&["A & B <3 \u{A0}\u{263A}"])),
        ]
    );
}

#[test]
fn ttml_reader_keeps_preserved_spaces_and_line_feeds() {
    let doc = "<tt xmlns=\"http://www.w3.org/ns/ttml\"><body><div>\
        <p begin=\"1s\" end=\"2s\" xml:space=\"preserve\">kept  spaces\nand a line</p>\
        </div></body></tt>";
    assert_eq!(
        ttml_cues(doc),
        vec![(1000, 2000, lines(&["kept  spaces", "and a line"]))]
    );
}

#[test]
fn ttml_reader_handles_ntsc_frames_offsets_and_inherited_end() {
    let doc = r#"<tt xmlns="http://www.w3.org/ns/ttml" xmlns:ttp="http://www.w3.org/ns/ttml#parameter"
        ttp:frameRate="30" ttp:frameRateMultiplier="1000 1001">
      <body><div begin="1h" end="01:00:05.000">
        <p begin="00:00:01:15">until the div ends</p>
        <p begin="45f" end="1.5h">clipped by the div</p>
        <p begin="0.25m" end="20s">starts after the div ends: never shown</p>
      </div></body></tt>"#;
    assert_eq!(
        ttml_cues(doc),
        vec![
            (3_601_501, 3_605_000, lines(&["until the div ends"])),
            (3_601_502, 3_605_000, lines(&["clipped by the div"])),
        ]
    );
}

#[test]
fn ttml_reader_reports_where_a_document_is_wrong() {
    let bad = |doc: &str, offset: usize, needle: &str| {
        let e = parse(Format::Ttml, doc.as_bytes()).unwrap_err();
        assert_eq!(e.format, Format::Ttml);
        assert!(e.message.contains(needle), "{doc}: {e}");
        assert_eq!(e.offset, offset, "{doc}: {e}");
    };
    bad("", 0, "no tt element");
    bad("<tt><body/></tt>", 0, "root element");
    bad(
        r#"<tt xmlns="http://www.w3.org/2006/04/ttaf2"/>"#,
        0,
        "root element",
    );
    let ns = r#"<tt xmlns="http://www.w3.org/ns/ttml"><body><div>"#;
    bad(
        &format!(r#"{ns}<p begin="00:00:02,500" end="1s">x</p></div></body></tt>"#),
        ns.len(),
        "begin",
    );
    bad(
        &format!(r#"{ns}<p begin="1s">no end</p></div></body></tt>"#),
        ns.len(),
        "no end time",
    );
    bad(
        &format!("{ns}<p begin=\"1s\" end=\"2s\">&nbsp;</p></div></body></tt>"),
        ns.len() + 23,
        "entity",
    );
    bad(
        &format!("{ns}<p begin=\"1s\" end=\"2s\">x</div></body></tt>"),
        ns.len() + 24,
        "malformed",
    );
    bad(
        &format!("{ns}<p begin=\"1s\" end=\"2s\">x</p>"),
        ns.len() + 28,
        "ends inside",
    );
}

#[test]
fn ttml_reader_accepts_the_legacy_dfxp_namespace_and_utf16() {
    let doc = r#"<?xml version="1.0"?><tt xmlns="http://www.w3.org/2006/10/ttaf1"><body><div><p begin="1s" end="2s">old</p></div></body></tt>"#;
    assert_eq!(ttml_cues(doc), vec![(1000, 2000, lines(&["old"]))]);
    let mut utf16 = vec![0xFF, 0xFE];
    for u in doc.replace("old", "ölđ").encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    let cues = parse(Format::Ttml, &utf16).unwrap();
    assert_eq!(cues[0].lines, lines(&["ölđ"]));
}

// ---------------------------------------------------------------------------------------------
// EBU-STL written by other tools
// ---------------------------------------------------------------------------------------------

/// Builds an EBU-STL file the way another tool (Subtitle Edit-like) lays it out: space-padded
/// numbers, SN from 0, JC 00, single 8Ah breaks, italics codes, TCP 10:00:00:00, a user-data
/// block, a comment block, and an ISO 8859-7 or ISO 6937 text field.
struct StlBuilder {
    gsi: [u8; 1024],
    blocks: Vec<[u8; 128]>,
}

impl StlBuilder {
    fn new(dfc: &[u8; 8], cct: &[u8; 2]) -> StlBuilder {
        let mut gsi = [b' '; 1024];
        let mut put = |at: usize, v: &[u8]| gsi[at..at + v.len()].copy_from_slice(v);
        put(0, b"437");
        put(3, dfc);
        put(11, b"0");
        put(12, cct);
        put(14, b"0A");
        put(16, b"\x8Eu\xA4o"); // CP437: Äuño
        put(224, b"250101");
        put(230, b"      "); // blank RD
        put(238, b"   4 "); // space-padded TNB
        put(243, b"    3"); // TNS
        put(251, b"38");
        put(253, b"  "); // blank MNR
        put(256, b"10000000"); // TCP 10:00:00:00
        StlBuilder {
            gsi,
            blocks: Vec::new(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn block(&mut self, sn: u16, ebn: u8, cf: u8, tci: [u8; 4], tco: [u8; 4], vp: u8, tf: &[u8]) {
        let mut b = [0x8Fu8; 128];
        b[0] = 0;
        b[1..3].copy_from_slice(&sn.to_le_bytes());
        b[3] = ebn;
        b[4] = 0;
        b[5..9].copy_from_slice(&tci);
        b[9..13].copy_from_slice(&tco);
        b[13] = vp;
        b[14] = 0; // JC unchanged
        b[15] = cf;
        b[16..16 + tf.len()].copy_from_slice(tf);
        self.blocks.push(b);
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = self.gsi.to_vec();
        for b in &self.blocks {
            out.extend_from_slice(b);
        }
        out
    }
}

#[test]
fn stl_from_another_tool_reads_correctly() {
    let mut f = StlBuilder::new(b"STL25.01", b"00");
    // SN 0: open-subtitle style, single 8A, italics around a word, an accent pair.
    f.block(
        0,
        0xFF,
        0,
        [10, 0, 1, 0],
        [10, 0, 3, 12],
        22,
        b"\x80Caf\xC2e\x81 ouvert\x8aseconde ligne",
    );
    // A user-data block and a comment in between: skipped.
    f.block(
        0x1234,
        0xFE,
        0,
        [0; 4],
        [0; 4],
        0,
        b"user data that is not text",
    );
    f.block(
        1,
        0xFF,
        1,
        [10, 0, 4, 0],
        [10, 0, 5, 0],
        22,
        b"a comment for the translator",
    );
    // SN 2 split into an extension block, teletext codes with a colour change between words.
    f.block(
        2,
        0x00,
        0,
        [10, 0, 6, 5],
        [10, 0, 8, 24],
        20,
        b"\x0d\x0b\x0b\x03Yellow\x07white ",
    );
    f.block(
        2,
        0xFF,
        0,
        [10, 0, 6, 5],
        [10, 0, 8, 24],
        20,
        b"  text\x0a\x0a\x8a\x8a\x0d\x0b\x0b\xCF\x5Aluva\x0a\x0a",
    );
    let bytes = f.bytes();
    let cues = parse(Format::EbuStl, &bytes).unwrap();
    let got: Vec<(i64, i64, Vec<String>)> = cues
        .into_iter()
        .map(|c| (c.start.0, c.end.0, c.lines))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                36_001_000,
                36_003_480,
                lines(&["Café ouvert", "seconde ligne"])
            ),
            (
                36_006_200,
                36_008_960,
                lines(&["Yellow white   text", "Žluva"])
            ),
        ]
    );
    let gsi = stl::parse_gsi(&bytes).unwrap();
    assert_eq!(
        (gsi.fps, gsi.title.as_str(), gsi.language.as_str()),
        (25, "Äuño", "0A")
    );
    assert_eq!(gsi.programme_start, "10000000");
}

#[test]
fn stl_reads_greek_text_at_30_fps() {
    let mut f = StlBuilder::new(b"STL30.01", b"03");
    // ISO 8859-7: C3h = Γ, E5h = ε, E9h = ι, 20h space, E1h = α.
    f.block(
        1,
        0xFF,
        0,
        [0, 0, 1, 15],
        [0, 0, 2, 29],
        22,
        b"\xC3\xE5\xE9\xE1 \xF3\xEF\xF5",
    );
    let cues = parse(Format::EbuStl, &f.bytes()).unwrap();
    assert_eq!(cues[0].lines, lines(&["Γεια σου"]));
    // STL30.01 is 30 fps non-drop: frame 15 is 500 ms.
    assert_eq!((cues[0].start.0, cues[0].end.0), (1_500, 2_967));
}

#[test]
fn stl_reader_refuses_broken_files_with_a_place_and_reason() {
    let bad = |bytes: &[u8], offset: usize, needle: &str| {
        let e = parse(Format::EbuStl, bytes).unwrap_err();
        assert_eq!(e.format, Format::EbuStl);
        assert!(e.message.contains(needle), "{e}");
        assert_eq!(e.offset, offset, "{e}");
    };
    bad(b"", 0, "shorter than");
    bad(&[b' '; 1000], 1000, "shorter than");
    let good = StlBuilder::new(b"STL25.01", b"00").bytes();
    let mut dfc = good.clone();
    dfc[3..11].copy_from_slice(b"STL99.01");
    bad(&dfc, 3, "dfc");
    let mut cct = good.clone();
    cct[12..14].copy_from_slice(b"09");
    bad(&cct, 12, "cct");
    let mut short = good.clone();
    short.extend_from_slice(&[0; 200]);
    bad(&short, 1024 + 128, "truncated tti block");
    assert_eq!(parse(Format::EbuStl, &good).unwrap(), vec![]);
}

// ---------------------------------------------------------------------------------------------
// ttconv: an independent reader
// ---------------------------------------------------------------------------------------------

/// Runs `tt convert` to SRT and returns its cues; any warning or error it logs is a failure.
fn ttconv_to_srt(input: &Path, itype: &str, allowed_warning: Option<&str>) -> Vec<Expected> {
    let out = input.with_extension("srt");
    let result = Command::new(common::tool("tt"))
        .args(["convert", "--itype", itype, "--otype", "srt", "-i"])
        .arg(input)
        .arg("-o")
        .arg(&out)
        // Without progress bars and below WARN level, anything on stderr is a complaint.
        .args([
            "--config",
            r#"{"general":{"progress_bar":false,"log_level":"WARN"}}"#,
        ])
        .output()
        .expect("ttconv's `tt` must be installed (scripts/setup)");
    let stderr = String::from_utf8_lossy(&result.stderr).replace('\r', "\n");
    assert!(
        result.status.success(),
        "tt failed on {}: {stderr}",
        input.display()
    );
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        let tolerated = allowed_warning.is_some_and(|w| line.contains(w));
        assert!(
            tolerated,
            "ttconv complained about {}: {line}",
            input.display()
        );
    }
    let srt = std::fs::read_to_string(&out).expect("tt wrote the srt");
    parse_srt(&srt)
}

/// A small SRT reader for ttconv's output (index, `HH:MM:SS,mmm --> HH:MM:SS,mmm`, lines).
fn parse_srt(srt: &str) -> Vec<Expected> {
    let srt = srt.replace("\r\n", "\n");
    let ts = |s: &str| -> i64 {
        let (hms, ms) = s.trim().split_once(',').expect("srt time has a comma");
        let mut p = hms
            .split(':')
            .map(|x| x.parse::<i64>().expect("srt time digits"));
        let (h, m, s) = (p.next().unwrap(), p.next().unwrap(), p.next().unwrap());
        ((h * 60 + m) * 60 + s) * 1000 + ms.parse::<i64>().unwrap()
    };
    srt.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let mut it = block.lines();
            it.next().expect("index");
            let (a, b) = it
                .next()
                .expect("times")
                .split_once(" --> ")
                .expect("arrow");
            Expected {
                start: ts(a),
                end: ts(b),
                lines: it.map(str::to_string).collect(),
            }
        })
        .collect()
}

/// What ttconv's SRT writer shows for a cue list: one SRT cue per interval between the times at
/// which something appears or disappears, holding every cue shown then (overlaps are merged).
fn as_intervals(cues: &[Expected]) -> Vec<Expected> {
    let mut times: Vec<i64> = cues.iter().flat_map(|c| [c.start, c.end]).collect();
    times.sort_unstable();
    times.dedup();
    times
        .windows(2)
        .filter_map(|w| {
            let shown: Vec<String> = cues
                .iter()
                .filter(|c| c.start <= w[0] && c.end >= w[1])
                .flat_map(|c| c.lines.clone())
                .collect();
            (!shown.is_empty()).then(|| Expected {
                start: w[0],
                end: w[1],
                lines: shown,
            })
        })
        .collect()
}

#[test]
fn ttconv_reads_every_ttml_golden_file_as_written() {
    let dir = tempfile::tempdir().unwrap();
    for f in common::fixtures() {
        let path = dir.path().join(format!("{}.ttml", f.name));
        std::fs::write(&path, to_vec(Format::Ttml, &f.cues, &f.opts).unwrap()).unwrap();
        let expected = expected_ttml(&f);
        // ttconv's SRT writer says so when it merges cues shown at the same time; only fixtures
        // with overlapping cues may make it.
        let overlap = expected.windows(2).any(|w| w[1].start < w[0].end);
        let allowed = overlap.then_some("Merging ISD paragraphs");
        let got = ttconv_to_srt(&path, "ttml", allowed);
        assert_eq!(got, as_intervals(&expected), "{}", f.name);
    }
}

#[test]
fn ttconv_reads_every_stl_golden_file_as_written() {
    let dir = tempfile::tempdir().unwrap();
    for f in common::fixtures() {
        let path = dir.path().join(format!("{}.stl", f.name));
        std::fs::write(&path, to_vec(Format::EbuStl, &f.cues, &f.opts).unwrap()).unwrap();
        let expected = expected_stl(&f);
        // In non-cumulative files ttconv moves a TCI that overlaps the previous TCO (and says
        // so); only fixtures whose frame-rounded cues overlap may trigger that warning.
        let mut adjusted = expected.clone();
        let mut overlap = false;
        for i in 1..adjusted.len() {
            if adjusted[i].start < adjusted[i - 1].end {
                adjusted[i].start = adjusted[i - 1].end;
                overlap = true;
            }
        }
        let allowed = overlap.then_some("TCI is less than previous TCO");
        let got = ttconv_to_srt(&path, "stl", allowed);
        assert_eq!(got, as_intervals(&adjusted), "{}", f.name);
    }
}

// ---------------------------------------------------------------------------------------------
// The annotated EBU-STL dump used by the golden files
// ---------------------------------------------------------------------------------------------

/// GSI fields: code, offset, length.
const GSI_FIELDS: [(&str, usize, usize); 31] = [
    ("CPN", 0, 3),
    ("DFC", 3, 8),
    ("DSC", 11, 1),
    ("CCT", 12, 2),
    ("LC", 14, 2),
    ("OPT", 16, 32),
    ("OET", 48, 32),
    ("TPT", 80, 32),
    ("TET", 112, 32),
    ("TN", 144, 32),
    ("TCD", 176, 32),
    ("SLR", 208, 16),
    ("CD", 224, 6),
    ("RD", 230, 6),
    ("RN", 236, 2),
    ("TNB", 238, 5),
    ("TNS", 243, 5),
    ("TNG", 248, 3),
    ("MNC", 251, 2),
    ("MNR", 253, 2),
    ("TCS", 255, 1),
    ("TCP", 256, 8),
    ("TCF", 264, 8),
    ("TND", 272, 1),
    ("DSN", 273, 1),
    ("CO", 274, 3),
    ("PUB", 277, 32),
    ("EN", 309, 32),
    ("ECD", 341, 32),
    ("spare", 373, 75),
    ("UDA", 448, 576),
];

/// Bytes as a quoted string, non-ASCII as `\xNN`.
fn quoted(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for &b in bytes {
        match b {
            b'"' | b'\\' => {
                s.push('\\');
                s.push(b as char);
            }
            0x20..=0x7E => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02X}");
            }
        }
    }
    s.push('"');
    s
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

fn ms_clock(ms: i64) -> String {
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// A field-by-field text dump of an EBU-STL file: a reviewer reads meaning, not hex.
fn dump_stl(bytes: &[u8]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "EBU-STL: {} bytes = 1024 (GSI) + {} x 128 (TTI); FNV-1a-64 {:016x}",
        bytes.len(),
        bytes.len().saturating_sub(1024) / 128,
        fnv1a64(bytes)
    );
    s.push_str("\nGSI\n");
    for (code, at, len) in GSI_FIELDS {
        let field = &bytes[at..at + len];
        let value = if field.iter().all(|&b| b == b' ') {
            format!("({len} spaces)")
        } else {
            quoted(field)
        };
        let _ = writeln!(s, "  {code:<5} @{at:<4} {value}");
    }
    for (i, b) in bytes[1024..].chunks(128).enumerate() {
        let tc = |t: &[u8]| format!("{:02}:{:02}:{:02}:{:02}", t[0], t[1], t[2], t[3]);
        let _ = writeln!(
            s,
            "\nTTI {}  SGN {}  SN {}  EBN {:02X}  CS {:02X}  TCI {}  TCO {}  VP {}  JC {:02X}  CF {:02X}",
            i + 1,
            b[0],
            u16::from_le_bytes([b[1], b[2]]),
            b[3],
            b[4],
            tc(&b[5..9]),
            tc(&b[9..13]),
            b[13],
            b[14],
            b[15]
        );
        let tf = &b[16..];
        let used = tf.iter().rposition(|&x| x != 0x8F).map_or(0, |p| p + 1);
        for row in tf[..used].chunks(16) {
            let hex: Vec<String> = row.iter().map(|x| format!("{x:02X}")).collect();
            let _ = writeln!(s, "  TF  {}", hex.join(" "));
        }
        let _ = writeln!(s, "  TF  + {} x 8F", tf.len() - used);
    }
    s.push_str("\nread back\n");
    match parse(Format::EbuStl, bytes) {
        Ok(cues) => {
            for c in cues {
                let _ = writeln!(
                    s,
                    "  {}  {} --> {}  {:?}",
                    c.index,
                    ms_clock(c.start.0),
                    ms_clock(c.end.0),
                    c.lines
                );
            }
        }
        Err(e) => {
            let _ = writeln!(s, "  error: {e}");
        }
    }
    s
}
