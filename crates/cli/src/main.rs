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
mod page;
mod progress;
mod wiring;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches};

use crate::exit::{Code, Failure};

#[global_allocator]
static HEAP: cairn_heap::Heap = cairn_heap::Heap;

fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let parsed = cli::Cli::command()
        .try_get_matches_from(&args)
        .and_then(|matches| {
            let mut cli = cli::Cli::from_arg_matches(&matches)?;
            cli.global.project_on_command_line = matches
                .value_source("project")
                .is_some_and(|s| s == clap::parser::ValueSource::CommandLine);
            Ok(cli)
        });
    match parsed {
        Ok(cli) => {
            // `mcp` and `board` live for hours: they keep glibc's defaults, which give memory
            // back, and take their task lists apart when done with them.
            if !matches!(cli.command, cli::Command::Mcp | cli::Command::Board(_)) {
                cairn_heap::tune_for_a_short_process();
                cairn_domain::project::forget_lists_when_dropped();
            }
            commands::run(cli).into()
        }
        Err(e) if wants_json(&args) && !is_help(e.kind()) => {
            commands::fail(&usage_failure(&e), true).into()
        }
        Err(e) => e.exit(),
    }
}

/// Whether `--json` was on the command line, for errors found before it could be parsed.
fn wants_json(args: &[std::ffi::OsString]) -> bool {
    args.iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a == "--json")
}

/// Help and version are answers, not errors: they print as clap prints them.
fn is_help(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    )
}

/// clap's message without its `error: ` prefix, and its usage line as the hint.
fn usage_failure(e: &clap::Error) -> Failure {
    let rendered = e.render().to_string();
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let message = lines
        .next()
        .unwrap_or("bad arguments")
        .trim_start_matches("error:")
        .trim()
        .to_owned();
    let usage = lines.find(|l| l.starts_with("Usage:"));
    let hint = match usage {
        Some(usage) => format!("{usage}; add --help for every option"),
        None => "add --help for the usage".to_owned(),
    };
    Failure::new(Code::Usage, message).with_hint(hint)
}
