//! Placeholder until the srt writer and reader land.

use std::io::Write;

use cuecraft_engine::Cue;

use crate::{Format, ParseError, WriteError, WriteOptions};

/// Writes `cues` to `out`.
pub fn write(cues: &[Cue], opts: &WriteOptions, out: &mut dyn Write) -> Result<(), WriteError> {
    let _ = (cues, opts, out);
    Ok(())
}

/// Reads cues from `input`.
pub fn parse(input: &[u8]) -> Result<Vec<Cue>, ParseError> {
    let _ = input;
    Err(ParseError::new(Format::Srt, 0, "not implemented yet"))
}
