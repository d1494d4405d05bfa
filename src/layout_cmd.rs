//! `cuecraft layout`.

/// Arguments of `cuecraft layout`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("layout is not implemented yet")
}
