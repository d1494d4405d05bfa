//! The end-to-end tests: the real `cuecraft` binary, real HTTP over loopback, real SQLite files and
//! real ffmpeg. One test binary, one module per behaviour area.

mod common;

mod api;
mod errors;
mod media;
mod pipeline;
