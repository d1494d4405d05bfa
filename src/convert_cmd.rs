//! `cuecraft convert`.

/// Arguments of `cuecraft convert`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("convert is not implemented yet")
}
