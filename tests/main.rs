//! The end-to-end tests: the real `cuecraft` binary, real HTTP over loopback, real SQLite files and
//! real ffmpeg. One test binary, one module per behaviour area (`cli`: `cuecraft convert` on files
//! and pipes).

mod common;

mod api;
mod browser;
mod cli;
mod errors;
mod media;
mod pipeline;
mod web;
