//! cuecraft-host: the /v1 job API, the web application, the job pipeline, recognizers and the
//! admin commands.
//! It is the only crate that knows HTTP, JSON wire shapes, SQL or processes.

pub mod admin;
pub mod api;
pub mod backend;
pub mod billing;
pub mod child;
pub mod cli;
pub mod http;
pub mod json;
pub mod media;
pub mod ops;
pub mod pipeline;
pub mod redact;
pub mod store;
pub mod submit;
pub mod tls;
pub mod util;
pub mod web;
pub mod words;

pub use http::error::ApiError;
