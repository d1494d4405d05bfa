//! The `cuecraft` binary: argument parsing, then a call into a library crate.

mod convert_cmd;
mod layout_cmd;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "cuecraft",
    version,
    about = "Subtitles a professional subtitler would sign off"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the /v1 job API.
    Serve(cuecraft_host::cli::ServeArgs),
    /// Manage organisations, members, keys, folders, presets, credits and the quota.
    Admin(cuecraft_host::cli::AdminArgs),
    /// Convert a subtitle file between formats, optionally re-laid out.
    Convert(convert_cmd::Args),
    /// Lay out timed words as cues.
    Layout(layout_cmd::Args),
    /// Submit a media file to a cuecraft server and write its subtitles.
    Submit(cuecraft_host::submit::SubmitArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(a) => cuecraft_host::cli::serve(a),
        Command::Admin(a) => cuecraft_host::cli::admin(a),
        Command::Convert(a) => convert_cmd::run(a),
        Command::Layout(a) => layout_cmd::run(a),
        Command::Submit(a) => cuecraft_host::submit::run(a),
    }
}
