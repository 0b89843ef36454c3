//! cairn inside the real Claude Code CLI (issue 17).
//!
//! Each test runs the pinned Claude Code (`cargo xtask claude-code` installs it) headless on a
//! scratch repository with a scratch `HOME`, its model replaced by a scripted fake of the
//! Messages API ([`api::FakeApi`]), and the real `cairn` and `cairn-hook` doing the work. A test
//! asserts on what reached the model (the requests the fake recorded), on the files in the
//! repository, and on Claude Code's JSON result. See README.md, "Claude Code in the loop".

mod api;
mod harness;

use api::{FakeApi, Turn};
use harness::Scratch;

/// The installed Claude Code is the pinned one, and it runs here. Its version is printed so a
/// run's output says which host the suite proved cairn against.
#[test]
fn the_pinned_claude_code_runs() {
    let version = harness::claude_version();
    println!("Claude Code under test: {version}");
    assert!(
        version.starts_with(&harness::pinned_version()),
        "installed {version}, pinned {}: run `cargo xtask claude-code`",
        harness::pinned_version()
    );
}

/// Scenario 1: `cairn setup claude`, then one session. The SessionStart context reaches the
/// model's first request, and SessionStart and SessionEnd land in the progress log under Claude
/// Code's real session id.
#[test]
fn settings_bring_the_project_into_the_session_and_log_it() {
    let repo = Scratch::new().with_project();
    repo.cairn(&["setup", "claude"]);
    let api = FakeApi::start(vec![Turn::Text("Nothing to do.".into())]);
    let session = repo.claude(&api, "What is next?", &[], true);

    assert_eq!(session.result["is_error"], false, "{:?}", session.result);
    let first = &api.messages()[0];
    let sent = first["messages"].to_string();
    assert!(
        sent.contains("Claude loop demo") && sent.contains("T-001 Write the parser"),
        "the SessionStart context did not reach the model: {sent}"
    );
    let log = repo.progress_log();
    let id = session.session_id();
    for event in ["SESSION_START", "SESSION_END"] {
        assert!(
            log.lines().any(|l| l.contains(event) && l.contains(id))
                || log.split("\n\n").any(|entry| entry.contains(event) && entry.contains(id)),
            "no {event} entry for session {id} in the progress log:\n{log}"
        );
    }
    assert_eq!(repo.hook_errors(), "", "the hook reported errors");
}
