//! One-pass conversion (`convert_streaming`) against the cue-list path it replaces: for every input
//! the two must give the same bytes, the same error, or a clear "out of order" that sends the caller
//! back to the cue list.

mod common;

use common::fixtures;
use cuecraft_engine::Millis;
use cuecraft_formats::{
    convert_streaming, convert_streaming_read_chunked, parse, to_vec, ConvertError, Format,
    Streamed, WriteOptions,
};
use proptest::prelude::*;

/// The pairs that stream.
const TARGETS: [Format; 3] = [Format::Srt, Format::WebVtt, Format::Ass];

/// What the cue-list path gives: the bytes, or the reader's error.
fn through_cues(to: Format, input: &[u8], opts: &WriteOptions) -> Result<Vec<u8>, String> {
    let cues = parse(Format::Srt, input).map_err(|e| e.to_string())?;
    Ok(to_vec(to, &cues, opts).expect("writing to memory"))
}

/// The one-pass conversion from memory (`chunk` = None) or read `chunk` bytes at a time.
fn streamed_in(
    to: Format,
    input: &[u8],
    opts: &WriteOptions,
    chunk: Option<usize>,
) -> (Result<Streamed, String>, Vec<u8>) {
    let mut out = Vec::new();
    let r = match chunk {
        None => convert_streaming(Format::Srt, to, input, opts, &mut out),
        Some(n) => {
            convert_streaming_read_chunked(Format::Srt, to, &mut &input[..], n, opts, &mut out)
        }
    };
    let r = r.map_err(|e| match e {
        ConvertError::Read(e) => e.to_string(),
        other => panic!("reading or writing memory failed: {other}"),
    });
    (r, out)
}

fn streamed(to: Format, input: &[u8], opts: &WriteOptions) -> (Result<Streamed, String>, Vec<u8>) {
    streamed_in(to, input, opts, None)
}

/// Chunk sizes that put chunk edges everywhere (1 byte) and in realistic places.
const CHUNKS: [usize; 6] = [1, 2, 7, 33, 200, 64 * 1024];

/// The streamed result equals the cue-list result, or says honestly that it could not stream:
/// from memory, and read in chunks of every size in [`CHUNKS`] (which may also say the input is
/// not UTF-8, and only then).
fn assert_same(to: Format, input: &[u8], opts: &WriteOptions) -> Streamed {
    let whole = assert_same_in(to, input, opts, None);
    let body = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    for n in CHUNKS {
        let r = assert_same_in(to, input, opts, Some(n));
        if r == Streamed::NotUtf8 {
            assert!(
                std::str::from_utf8(body).is_err(),
                "{to:?}: UTF-8 input refused in chunks of {n}"
            );
        } else {
            assert_eq!(
                r, whole,
                "{to:?}: chunks of {n} disagree with the whole input"
            );
        }
    }
    whole
}

fn assert_same_in(to: Format, input: &[u8], opts: &WriteOptions, chunk: Option<usize>) -> Streamed {
    let expected = through_cues(to, input, opts);
    let (r, out) = streamed_in(to, input, opts, chunk);
    match (&r, &expected) {
        (Ok(Streamed::NotUtf8), _) if chunk.is_some() => {}
        (Ok(Streamed::Written), Ok(bytes)) => assert!(
            &out == bytes,
            "{to:?} (chunk {chunk:?}): streamed bytes differ\n{}\n---\n{}",
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(bytes)
        ),
        (Err(a), Err(b)) => assert_eq!(a, b, "{to:?} (chunk {chunk:?}): different errors"),
        (Ok(Streamed::OutOfOrder), Ok(_)) => {
            // Only when the cue list would really be reordered by the writer.
            let cues = parse(Format::Srt, input).unwrap();
            let unit = if to == Format::Ass { 10 } else { 1 };
            let key = |c: &cuecraft_engine::Cue| {
                let at = |t: Millis| {
                    let ms = t.0.saturating_add(opts.offset.0).max(0) as u64;
                    ms.saturating_add(unit / 2) / unit
                };
                let start = at(c.start);
                (start, at(c.end).max(start + 1))
            };
            assert!(
                cues.windows(2).any(|w| key(&w[0]) > key(&w[1])),
                "{to:?}: out of order reported for cues in order"
            );
        }
        // A parse error found after an out-of-order pair: the cue-list path reports it.
        (Ok(Streamed::OutOfOrder), Err(_)) => {}
        _ => panic!("{to:?} (chunk {chunk:?}): streamed {r:?}, cue list {expected:?}"),
    }
    r.unwrap_or(Streamed::Written)
}

#[test]
fn every_fixture_streams_to_the_bytes_of_the_cue_list_path() {
    for f in fixtures() {
        // The fixture as SRT at its own precision, then converted with the fixture's options
        // (offsets, title, language) to each streaming target.
        let srt = to_vec(Format::Srt, &f.cues, &WriteOptions::default()).unwrap();
        for to in TARGETS {
            let r = assert_same(to, &srt, &f.opts);
            assert_eq!(r, Streamed::Written, "{} -> {to:?}", f.name);
        }
    }
}

#[test]
fn real_world_srt_files_stream_like_the_cue_list() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../golden/inputs/formats");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "srt") {
            let input = std::fs::read(&path).unwrap();
            for to in TARGETS {
                let opts = WriteOptions {
                    offset: Millis(-1_250),
                    ..WriteOptions::default()
                };
                assert_eq!(assert_same(to, &input, &opts), Streamed::Written);
                assert_eq!(
                    assert_same(to, &input, &WriteOptions::default()),
                    Streamed::Written
                );
            }
            seen += 1;
        }
    }
    assert!(
        seen >= 2,
        "the real-world SRT inputs are in {}",
        dir.display()
    );
}

#[test]
fn chunked_reading_takes_utf8_with_or_without_bom_and_hands_back_other_encodings() {
    let srt = "1\r\n00:00:01,000 --> 00:00:02,000\r\ncafé\r\n\r\n2\r\n00:00:03,000 --> 00:00:04,000\r\nthé\r\n";
    let bom = [b"\xEF\xBB\xBF".as_slice(), srt.as_bytes()].concat();
    for input in [srt.as_bytes(), &bom] {
        for n in CHUNKS {
            let (r, out) = streamed_in(Format::WebVtt, input, &WriteOptions::default(), Some(n));
            assert_eq!(r, Ok(Streamed::Written), "chunks of {n}");
            assert_eq!(
                out,
                through_cues(Format::WebVtt, input, &WriteOptions::default()).unwrap()
            );
        }
    }
    // A read error's offset counts the BOM, as the cue-list path does.
    let bad = [
        b"\xEF\xBB\xBF".as_slice(),
        b"1\n00:00:01,000 --> 00:00:02,000\na\n\n00:61:00,000 --> 00:62:00,000\nb\n",
    ]
    .concat();
    assert!(through_cues(Format::Srt, &bad, &WriteOptions::default())
        .unwrap_err()
        .contains("byte 38:"));
    assert_same(Format::Srt, &bad, &WriteOptions::default());
    // Windows-1252 and UTF-16 text is decoded as a whole: the chunked reader says so.
    let legacy = b"1\n00:00:01,000 --> 00:00:02,000\ncaf\xE9\n";
    let utf16 = b"\xFF\xFE1\x00\n\x00";
    for input in [&legacy[..], &utf16[..]] {
        let (r, _) = streamed_in(
            Format::Srt,
            input,
            &WriteOptions::default(),
            Some(64 * 1024),
        );
        assert_eq!(r, Ok(Streamed::NotUtf8));
    }
}

#[test]
fn a_zero_length_cue_is_written_one_millisecond_long_as_the_cue_list_writes_it() {
    // The timing line cannot be copied from the input: the writers give every cue at least one
    // unit. (Found by the parse_srt fuzz target.)
    let input =
        b"1\n00:00:06,000 --> 00:00:06,000\nzero\n\n2\n00:00:07,000 --> 00:00:08,000\nnext\n";
    for to in TARGETS {
        assert_eq!(
            assert_same(to, input, &WriteOptions::default()),
            Streamed::Written
        );
    }
    let mut vtt = Vec::new();
    let done = convert_streaming(
        Format::Srt,
        Format::WebVtt,
        input,
        &WriteOptions::default(),
        &mut vtt,
    );
    assert_eq!(done.unwrap(), Streamed::Written);
    assert!(String::from_utf8(vtt)
        .unwrap()
        .contains("00:00:06.000 --> 00:00:06.001\nzero"));
    let found =
        b"1\r\n00:00:00,000 --> 00:00:02,000\xA9\r\n\r\n3\r\n00:00:06,000 --> 00:00:06,000\rm\nac";
    for to in TARGETS {
        assert_same(to, found, &WriteOptions::default());
    }
}

#[test]
fn cues_out_of_order_are_reported_not_written_wrong() {
    let input =
        b"1\n00:00:05,000 --> 00:00:06,000\nlater\n\n2\n00:00:01,000 --> 00:00:02,000\nearlier\n";
    for to in TARGETS {
        assert_eq!(
            streamed(to, input, &WriteOptions::default()).0,
            Ok(Streamed::OutOfOrder)
        );
    }
    // Two starts 4 ms apart that round to one ASS centisecond, longer cue first: in order for
    // SRT, but the ASS writer orders them by the times it writes.
    let tie = b"00:00:01,001 --> 00:00:09,000\nlong\n\n00:00:01,004 --> 00:00:01,500\nshort\n";
    assert_eq!(
        assert_same(Format::Srt, tie, &WriteOptions::default()),
        Streamed::Written
    );
    assert_eq!(
        assert_same(Format::Ass, tie, &WriteOptions::default()),
        Streamed::OutOfOrder
    );
}

#[test]
fn errors_are_the_readers_and_other_pairs_do_not_stream() {
    let bad = b"1\n00:00:01,000 --> 00:00:02,000\na\n\n2\n00:61:00,000 --> 00:62:00,000\nb\n";
    for to in TARGETS {
        let (r, _) = streamed(to, bad, &WriteOptions::default());
        assert_eq!(r, Err(parse(Format::Srt, bad).unwrap_err().to_string()));
    }
    let good = b"1\n00:00:01,000 --> 00:00:02,000\na\n";
    for (from, to) in [
        (Format::Srt, Format::Ttml),
        (Format::Srt, Format::EbuStl),
        (Format::WebVtt, Format::Srt),
    ] {
        let mut out = Vec::new();
        let r = convert_streaming(from, to, good, &WriteOptions::default(), &mut out);
        assert!(matches!(r, Ok(Streamed::Unsupported)), "{from:?} -> {to:?}");
        assert!(out.is_empty());
    }
}

/// One line of an SRT-shaped file: the pieces the reader decides on (counters, timing lines good
/// and bad, text, blank and whitespace lines, text that looks like timing), with any line ending.
/// `ms` (under an hour) as an SRT timestamp.
fn srt_time(ms: i64) -> String {
    format!(
        "00:{:02}:{:02},{:03}",
        ms / 60_000,
        ms / 1000 % 60,
        ms % 1000
    )
}

fn srt_line() -> impl Strategy<Value = Vec<u8>> {
    let body = prop_oneof![
        (0u32..20).prop_map(|n| n.to_string().into_bytes()),
        // The end equal to the start, a millisecond after it, or anywhere.
        (
            0i64..30_000,
            prop_oneof![Just(0i64), Just(1), -30_000i64..30_000]
        )
            .prop_map(|(a, d)| {
                let b = (a + d).clamp(0, 29_999);
                format!("{} --> {}", srt_time(a), srt_time(b)).into_bytes()
            }),
        // A whole cue as writers write it (counter, timing, text), zero-length now and then.
        (0u32..9, 0i64..30_000, prop_oneof![Just(0i64), 1i64..5_000]).prop_map(|(n, a, d)| {
            format!(
                "{n}\n{} --> {}\ntext {n}\n",
                srt_time(a),
                srt_time((a + d).min(29_999))
            )
            .into_bytes()
        }),
        Just(b"0:00:01.5 --> 0:00:02,000 X1:10".to_vec()),
        Just(b"00:00:61,000 --> 00:00:62,000".to_vec()),
        Just(b"1 --> 2 text".to_vec()),
        Just(b"text <i>a</i> & {b}".to_vec()),
        Just("caf\u{e9} \u{202B}".as_bytes().to_vec()),
        Just(b"caf\xE9".to_vec()),
        Just(b"".to_vec()),
        Just(b" \t".to_vec()),
    ];
    let end = prop_oneof![Just(&b"\n"[..]), Just(&b"\r\n"[..]), Just(&b"\r"[..])];
    (body, end).prop_map(|(mut b, e)| {
        b.extend_from_slice(e);
        b
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn any_srt_shaped_input_streams_like_the_cue_list(
        lines in prop::collection::vec(srt_line(), 0..24),
        // No offset half of the time: the timing lines are then copied, not formatted.
        offset in prop_oneof![Just(0i64), -3_000i64..3_000],
        to in prop::sample::select(TARGETS.to_vec()),
    ) {
        let input: Vec<u8> = lines.concat();
        let opts = WriteOptions { offset: Millis(offset), ..WriteOptions::default() };
        assert_same(to, &input, &opts);
    }
}
