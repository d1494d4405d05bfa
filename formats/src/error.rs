//! Errors of the readers and writers.

use crate::Format;

/// A file that could not be read: which format, where (byte offset) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParseError {
    /// The format being read.
    pub format: Format,
    /// Byte offset in the input where the problem was found.
    pub offset: usize,
    /// What is wrong, lowercase, no trailing period.
    pub message: String,
}

impl ParseError {
    /// A problem at `offset`.
    pub fn new(format: Format, offset: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            format,
            offset,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at byte {}: {}",
            self.format.extension(),
            self.offset,
            self.message
        )
    }
}

impl std::error::Error for ParseError {}

/// A writer failed: only the output can fail, the cues always have a representation.
#[derive(Debug)]
#[non_exhaustive]
pub enum WriteError {
    /// Writing to the output failed.
    Io(std::io::Error),
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Io(e) => write!(f, "writing subtitles failed: {e}"),
        }
    }
}

impl std::error::Error for WriteError {}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError::Io(e)
    }
}

/// A one-pass conversion failed: reading the input or writing the output.
#[derive(Debug)]
pub enum ConvertError {
    /// Reading the input failed.
    Input(std::io::Error),
    /// The input is not valid in its format.
    Read(ParseError),
    /// Writing the output failed.
    Write(WriteError),
}

impl std::fmt::Display for ConvertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConvertError::Input(e) => write!(f, "reading subtitles failed: {e}"),
            ConvertError::Read(e) => e.fmt(f),
            ConvertError::Write(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ConvertError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConvertError::Input(e) => Some(e),
            ConvertError::Read(e) => Some(e),
            ConvertError::Write(e) => Some(e),
        }
    }
}
