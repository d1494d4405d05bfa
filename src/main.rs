//! The `cuecraft` binary: argument parsing, then a call into a library crate.

mod check_cmd;
mod convert_cmd;
mod layout_cmd;
mod shot_list;

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
#[command(defer = true)]
enum Command {
    /// Run the /v1 job API (and, unless `--workers 0`, the media pipeline in the same process).
    Serve(cuecraft_host::cli::ServeArgs),
    /// Run the media pipeline without serving HTTP: claims jobs from the store's queue.
    Worker(cuecraft_host::cli::WorkerArgs),
    /// Manage organisations, members, keys, folders, presets, credits and the quota.
    Admin(cuecraft_host::cli::AdminArgs),
    /// Convert a subtitle file between formats, optionally re-laid out.
    Convert(convert_cmd::Args),
    /// Lay out timed words as cues.
    Layout(layout_cmd::Args),
    /// Check a subtitle file (or a job's transcript) against a style: reading pace, line limits,
    /// durations, gaps, line breaks, sentence ends. Exit status 1 when an error-level rule fails.
    Check(check_cmd::Args),
    /// Submit a media file to a cuecraft server and write its subtitles.
    Submit(cuecraft_host::submit::SubmitArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(a) => cuecraft_host::cli::serve(a),
        Command::Worker(a) => cuecraft_host::cli::worker(a),
        Command::Admin(a) => cuecraft_host::cli::admin(a),
        Command::Convert(a) => convert_cmd::run(a),
        Command::Layout(a) => layout_cmd::run(a),
        Command::Check(a) => check_cmd::run(a),
        Command::Submit(a) => cuecraft_host::submit::run(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn each_command_describes_itself_as_the_list_does() {
        // A subcommand's arguments are defined only when it runs (`cuecraft convert` starts
        // without defining those of `serve` and `admin`), and the text they bring must agree with
        // what `cuecraft --help` lists.
        let listed = Cli::command();
        let mut built = Cli::command();
        built.build();
        for sub in listed.get_subcommands() {
            let name = sub.get_name();
            let full = built.find_subcommand(name).unwrap();
            assert_eq!(
                full.get_about().map(ToString::to_string),
                sub.get_about().map(ToString::to_string),
                "{name}"
            );
            assert!(
                name == "help" || full.get_arguments().count() > sub.get_arguments().count(),
                "{name}: its arguments were not defined"
            );
        }
    }
}
