//! The end-to-end tests: the real `cuecraft` binary, real HTTP over loopback, real SQLite files and
//! real ffmpeg. One test binary, one module per behaviour area (`cli`: `cuecraft convert` on files
//! and pipes; `check`: `cuecraft check` on a file of each format).

mod common;

mod api;
mod browser;
mod check;
mod cli;
mod errors;
mod hardening;
mod idempotency;
mod media;
mod media_store;
mod ops;
mod pipeline;
mod postgres;
mod scaleout;
mod shots;
mod speakers;
mod web;
mod workers;
