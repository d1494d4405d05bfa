//! Fuzz target `parse_srt`: arbitrary bytes into the SRT reader must give cues or an error, never a
//! panic; what it reads must write, and writing what it reads back is stable (write -> read ->
//! write gives the same bytes), so a file the reader accepts converts deterministically. The
//! one-pass conversion to WebVTT gives the same bytes or the same error as the cue list, or says
//! the cues are out of order, from memory and read in chunks.
#![no_main]

use cuecraft_formats::{
    convert_streaming, convert_streaming_read_chunked, parse, to_vec, ConvertError, Format,
    Streamed, WriteOptions,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = parse(Format::Srt, data);
    let opts = WriteOptions::default();
    let mut streamed = Vec::new();
    let one_pass = convert_streaming(Format::Srt, Format::WebVtt, data, &opts, &mut streamed);
    // Read in small chunks, the one-pass conversion agrees with itself from memory (or says the
    // input is not UTF-8 and must be decoded whole).
    let chunk = 1 + data.first().map_or(0, |&b| b as usize % 64);
    let mut chunked = Vec::new();
    let by_chunks = convert_streaming_read_chunked(
        Format::Srt,
        Format::WebVtt,
        &mut &data[..],
        chunk,
        &opts,
        &mut chunked,
    );
    match (&one_pass, &by_chunks) {
        (_, Ok(Streamed::NotUtf8)) => {}
        (Ok(Streamed::Written), Ok(Streamed::Written)) => {
            assert!(
                chunked == streamed,
                "chunks of {chunk} wrote different bytes"
            )
        }
        (Ok(a), Ok(b)) => assert_eq!(a, b, "chunks of {chunk}"),
        (Err(ConvertError::Read(a)), Err(ConvertError::Read(b))) => {
            assert_eq!(a, b, "chunks of {chunk}: different errors")
        }
        (a, b) => panic!("from memory {a:?}, in chunks of {chunk} {b:?}"),
    }
    let Ok(cues) = parsed else {
        let e = parsed.unwrap_err();
        match one_pass {
            Err(ConvertError::Read(s)) => assert_eq!(s, e, "different errors"),
            Ok(Streamed::OutOfOrder) => {}
            other => panic!("the reader failed ({e}) but one pass gave {other:?}"),
        }
        return;
    };
    match one_pass {
        Ok(Streamed::Written) => assert!(
            streamed == to_vec(Format::WebVtt, &cues, &opts).expect("writing to memory"),
            "one pass wrote different bytes"
        ),
        Ok(Streamed::OutOfOrder) => assert!(
            cues.windows(2)
                .any(|w| (w[0].start, w[0].end) > (w[1].start, w[1].end)),
            "out of order reported for cues in order"
        ),
        other => panic!("one pass gave {other:?} for a readable file"),
    }
    let first = to_vec(Format::Srt, &cues, &opts).expect("writing to memory");
    let again = parse(Format::Srt, &first).expect("own output must parse");
    let second = to_vec(Format::Srt, &again, &opts).expect("writing to memory");
    assert_eq!(first, second, "write -> read -> write changed the bytes");
});
