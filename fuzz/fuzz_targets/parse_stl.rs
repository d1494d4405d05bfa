//! Fuzz target `parse_stl`: any bytes given to the EBU-STL reader must give cues or an error, never
//! a panic; cues it returns must survive a write and read back unchanged.
#![no_main]

use cuecraft_formats::{parse, to_vec, Format, WriteOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Most random inputs fail the GSI check; give half of them a valid GSI so the fuzzer spends
    // its time in the TTI blocks and the text-field decoder.
    let mut input = data.to_vec();
    if data.first().is_some_and(|b| b & 1 == 1) {
        let mut gsi = vec![b' '; 1024];
        gsi[0..16].copy_from_slice(b"850STL25.0110009");
        gsi[12..14].copy_from_slice(match data.get(1).map(|b| b % 5) {
            Some(1) => b"01",
            Some(3) => b"03",
            _ => b"00",
        });
        let body = data.get(2..).unwrap_or_default();
        let blocks = body.len() / 128;
        gsi.extend_from_slice(&body[..blocks * 128]);
        input = gsi;
    }
    let Ok(cues) = parse(Format::EbuStl, &input) else {
        return;
    };
    for c in &cues {
        assert!(
            c.start.0 >= 0 && c.end >= c.start,
            "reader returned a backwards cue"
        );
    }
    let opts = WriteOptions::default();
    let once = to_vec(Format::EbuStl, &cues, &opts).expect("writing to a Vec cannot fail");
    let again = parse(Format::EbuStl, &once).expect("our own output must parse");
    let twice = to_vec(Format::EbuStl, &again, &opts).expect("writing to a Vec cannot fail");
    assert!(once == twice, "write -> read -> write is not the identity");
});
