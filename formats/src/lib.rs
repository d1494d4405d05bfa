//! cuecraft-formats: cues <-> bytes for SRT, WebVTT, TTML (IMSC 1.1 text), ASS and EBU-STL.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
