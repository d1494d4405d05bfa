//! cuecraft-host: the /v1 job API, the job pipeline, recognizers and the admin commands.
//! It is the only crate that knows HTTP, JSON wire shapes, SQL or processes.

pub mod cli;
pub mod media;
pub mod recognizer;
pub mod submit;
