//! Fuzz target `parse_ttml`: any bytes given to the TTML reader must give cues or an error, never
//! a panic; cues it returns must survive a write and read back unchanged.
#![no_main]

use cuecraft_formats::{parse, to_vec, Format, WriteOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(cues) = parse(Format::Ttml, data) else {
        return;
    };
    for c in &cues {
        assert!(
            c.start.0 >= 0 && c.end > c.start,
            "reader returned an empty or negative cue"
        );
    }
    // Whatever was read can be written, and the written file reads back as a fixed point.
    let opts = WriteOptions::default();
    let once = to_vec(Format::Ttml, &cues, &opts).expect("writing to a Vec cannot fail");
    let again = parse(Format::Ttml, &once).expect("our own output must parse");
    let twice = to_vec(Format::Ttml, &again, &opts).expect("writing to a Vec cannot fail");
    assert_eq!(once, twice, "write -> read -> write is not the identity");
});
