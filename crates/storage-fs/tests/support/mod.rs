//! Children for the tests that need real processes, shared by every test binary that has them.
//!
//! **How the children are made.** Every child is the test binary that spawns it, re-executed
//! with `--exact child_process_entry --nocapture --test-threads=1` and its role in
//! `CAIRN_CRASH_CHILD`; each such binary has a `#[test] fn child_process_entry` that asks
//! [`child_call`] what to do and does nothing in an ordinary run. Going through libtest's own
//! command line — rather than a `harness = false` binary with its own `main` — keeps the target
//! listable and runnable by both `cargo test` and cargo-nextest.

// Each test binary that includes this module uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cairn_storage_fs::failpoints::FAILPOINT_ENV;

/// The name of the `#[test]` that children run; `--exact` selects it.
pub const CHILD_TEST: &str = "child_process_entry";
/// The child's role. Unset means "not a child": the entry test then does nothing.
pub const ROLE_ENV: &str = "CAIRN_CRASH_CHILD";
/// The directory a child works in (a scratch directory, or the repository root of a store).
pub const DIR_ENV: &str = "CAIRN_CRASH_DIR";
/// A role-specific argument (a writer's name and seed, a task count, …).
pub const ARG_ENV: &str = "CAIRN_CRASH_ARG";

/// What a child was started to do.
#[derive(Debug)]
pub struct ChildCall {
    pub role: String,
    pub dir: PathBuf,
    pub arg: String,
}

/// The call this process was started for, or `None` in an ordinary test run.
pub fn child_call() -> Option<ChildCall> {
    let role = std::env::var(ROLE_ENV).ok()?;
    let dir = PathBuf::from(std::env::var_os(DIR_ENV).expect("a child needs CAIRN_CRASH_DIR"));
    let arg = std::env::var(ARG_ENV).unwrap_or_default();
    Some(ChildCall { role, dir, arg })
}

/// The command that starts this test binary as a child with `role`.
pub fn child_command(role: &str, dir: &Path, arg: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args([
            "--exact",
            CHILD_TEST,
            "--nocapture",
            "--test-threads=1",
            "--quiet",
        ])
        .env(ROLE_ENV, role)
        .env(DIR_ENV, dir)
        .env(ARG_ENV, arg)
        .env_remove(FAILPOINT_ENV)
        .stdin(Stdio::null());
    command
}

pub fn describe(output: &Output) -> String {
    format!(
        "{:?}\n--- stdout\n{}--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Starts one child with `role` per argument, all at once, and waits for every one; each must
/// succeed.
pub fn run_together(role: &str, dir: &Path, args: &[String]) {
    let children: Vec<_> = args
        .iter()
        .map(|arg| {
            child_command(role, dir, arg)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn a child")
        })
        .collect();
    for (arg, child) in args.iter().zip(children) {
        let output = child.wait_with_output().expect("wait for a child");
        assert!(
            output.status.success(),
            "child {role} {arg}: {}",
            describe(&output)
        );
    }
}

/// Runs the child `role` with `failpoint` armed; the child must die there (abort, signal 6).
pub fn run_crashing_at(role: &str, dir: &Path, arg: &str, failpoint: &str) {
    let output = child_command(role, dir, arg)
        .env(FAILPOINT_ENV, failpoint)
        .output()
        .expect("run the child");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&output.status),
        Some(6),
        "the child must abort at {failpoint}: {}",
        describe(&output)
    );
}

pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
        .block_on(future)
}
