//! `cuecraft serve` and `cuecraft admin`: argument shapes and entry points.

/// Arguments of `cuecraft serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {}

/// Arguments of `cuecraft admin`.
#[derive(Debug, clap::Args)]
pub struct AdminArgs {}

/// Runs the server until it is stopped.
pub fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("serve is not implemented yet")
}

/// Runs one admin command, printing one JSON object.
pub fn admin(args: AdminArgs) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("admin is not implemented yet")
}
