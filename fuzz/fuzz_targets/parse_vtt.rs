//! Fuzz target `parse_vtt`: arbitrary bytes into the WebVTT reader must give cues or an error, never a
//! panic; what it reads must write, and writing what it reads back is stable (write -> read ->
//! write gives the same bytes), so a file the reader accepts converts deterministically.
#![no_main]

use cuecraft_formats::{parse, to_vec, Format, WriteOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(cues) = parse(Format::WebVtt, data) else {
        return;
    };
    let opts = WriteOptions::default();
    let first = to_vec(Format::WebVtt, &cues, &opts).expect("writing to memory");
    let again = parse(Format::WebVtt, &first).expect("own output must parse");
    let second = to_vec(Format::WebVtt, &again, &opts).expect("writing to memory");
    assert_eq!(first, second, "write -> read -> write changed the bytes");
});
