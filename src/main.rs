//! The `cuecraft` binary: argument parsing, then a call into a library crate.

fn main() {}
