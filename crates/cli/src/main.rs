//! `cairn`: the command-line interface to cairn's project store.
//!
//! main stays thin: parse the command line, then [`commands::run`] resolves the root, opens the
//! store, builds the service, dispatches, prints, and returns the exit code (see [`exit`]).

mod cli;
mod clock;
mod commands;
mod exit;
mod json;
mod output;
mod progress;
mod wiring;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    commands::run(cli).into()
}
