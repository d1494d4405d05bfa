//! `cuecraft submit`: a client that creates a job, uploads, polls and writes the subtitles.

/// Arguments of `cuecraft submit`.
#[derive(Debug, clap::Args)]
pub struct SubmitArgs {}

/// Runs the client.
pub fn run(args: SubmitArgs) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("submit is not implemented yet")
}
