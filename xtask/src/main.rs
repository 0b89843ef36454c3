//! cairn's automation, in Rust (matklad's `cargo xtask` pattern): `cargo xtask <job>`.
//!
//! - `ci`     — what CI runs: format check, tidy, clippy with warnings denied, the whole test suite,
//!   a short fuzz budget.
//! - `tidy`   — the repository's own consistency checks (see `tidy/mod.rs`).
//! - `test`   — the test suite alone (cargo-nextest when installed, else cargo test).
//! - `bench`  — benchmarks, each reported as a ratio to a floor measured in the same run.
//! - `crash`  — the long crash-safety run (thousands of SIGKILLs).
//! - `fuzz`   — long fuzz runs of every parser, a budget in minutes split across the targets.
//! - `plugin` — assembles an installable Claude Code plugin directory.
//! - `claude-code` — installs the pinned Claude Code CLI the `tests/claude` suite runs cairn in.
//! - `mcp-sdk` — installs the pinned MCP TypeScript SDK whose client `tests/cli/mcp_node.rs` runs.
//! - `demo`   — builds cairn and runs a real session on a scratch repository.

mod bench;
mod claude_code;
mod crash;
mod demo;
mod fuzz;
mod mcp_sdk;
mod npm;
mod pg;
mod plugin;
mod tidy;
mod util;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (job, rest) = match args.split_first() {
        Some((job, rest)) => (job.as_str(), rest),
        None => ("help", &[][..]),
    };
    let result = match job {
        "ci" => ci(),
        "test" => test(),
        "tidy" => tidy::run(rest),
        "bench" => bench::run(rest),
        "crash" => crash::run(rest),
        "fuzz" => fuzz::run(rest),
        "demo" => demo::run(rest),
        "plugin" => plugin::run(rest),
        "claude-code" => claude_code::run(rest),
        "mcp-sdk" => mcp_sdk::run(rest),
        "help" | "-h" | "--help" => {
            print_help();
            Ok(())
        }
        other => Err(format!("unknown job `{other}`; run `cargo xtask help`")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn print_help() {
    eprintln!(
        "usage: cargo xtask <job>\n\n  ci       fmt check, tidy, clippy -D warnings, all tests\n  tidy     dependency directions, adapter confinement, code map, exit codes, unused deps, docs: cargo xtask tidy [--no-doc]\n  test     all tests\n  bench    benchmarks (ratios to a floor measured in the same run)\n  crash    long crash-safety run: cargo xtask crash [--kills N] | --power HISTORIES\n  fuzz     fuzz every parser: cargo xtask fuzz [--minutes N | --seconds S] (default 10 minutes)\n  plugin   build the Claude Code plugin: cargo xtask plugin [--out DIR] [--no-build] [--bin-dir DIR]\n  claude-code  install the pinned Claude Code CLI the tests/claude suite runs\n  mcp-sdk  install the pinned MCP TypeScript SDK the tests/cli/mcp_node.rs client runs\n  demo     run a real cairn session on a scratch repository: cargo xtask demo [--keep DIR]"
    );
}

fn ci() -> Result<(), String> {
    util::cargo(&["fmt", "--all", "--", "--check"])?;
    tidy::run(&[])?;
    util::cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    test()?;
    fuzz::budgeted(fuzz::CI_SECONDS)
}

fn test() -> Result<(), String> {
    // The suite in tests/claude runs cairn inside the real Claude Code; install it first (a
    // no-op when the pinned version is installed).
    claude_code::run(&[])?;
    // The MCP tests in tests/cli/mcp_node.rs run the official TypeScript SDK's client.
    mcp_sdk::run(&[])?;
    // One PostgreSQL for every test process, stopped when this function returns, however.
    let pg = pg::Cluster::start()?;
    // The races run at #14's sizes here (1,600 adds; 64 agents on 1,000 tasks, on both stores);
    // a plain `cargo nextest run` keeps the small default so that a quick local run stays quick.
    let mut env = pg.env().to_vec();
    env.extend([("CAIRN_ADD_RACE", "8x200"), ("CAIRN_CLAIM_RACE", "64x1000")]);
    if util::has_nextest() {
        // nextest does not run doctests. They run first so that nextest's summary, which counts
        // every test, is the run's closing line.
        util::cargo_with_env(&["test", "--workspace", "--doc"], &env)?;
        util::cargo_with_env(&["nextest", "run", "--workspace", "--no-fail-fast"], &env)
    } else {
        util::cargo_with_env(&["test", "--workspace", "--no-fail-fast"], &env)
    }
}
