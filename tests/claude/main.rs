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
use serde_json::json;

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

/// Scenario 3: a scripted Edit, Write and Bash redirection onto tasks.json are each denied, the
/// tool_result carries cairn's reason and the file is unchanged; `cairn task start`/`complete`
/// through Bash succeed.
#[test]
fn guards_deny_hand_edits_of_the_task_list_and_cairn_commands_work() {
    let repo = Scratch::new().with_project();
    repo.cairn(&["setup", "claude"]);
    let tasks = repo.tasks_json();
    let path = tasks.display().to_string();
    let before = std::fs::read(&tasks).unwrap();
    let api = FakeApi::start(vec![
        // Claude Code refuses to Edit or Write a file the session has not read.
        Turn::tool("Read", json!({"file_path": path})),
        Turn::tool(
            "Edit",
            json!({"file_path": path, "old_string": "Write the parser", "new_string": "Hand edit"}),
        ),
        Turn::tool("Write", json!({"file_path": path, "content": "{}\n"})),
        Turn::bash("echo '{}' > .claude/projects/demo/tasks.json"),
        Turn::Text("I will use cairn instead.".into()),
    ]);
    let session = repo.claude(&api, "Mark T-001 done by editing the file.", &[], true);
    assert_eq!(session.result["is_error"], false, "{:?}", session.result);

    let results = api.tool_results();
    assert_eq!(results.len(), 4, "{results:#?}");
    assert!(
        !results[0].1 && results[0].0.contains("Write the parser"),
        "{results:#?}"
    );
    for (tool, (text, is_error)) in ["Edit", "Write", "Bash"].iter().zip(&results[1..]) {
        assert!(
            *is_error && text.contains("cairn:") && text.contains("cairn task"),
            "the {tool} call was not denied with cairn's reason: {text}"
        );
    }
    assert_eq!(
        std::fs::read(&tasks).unwrap(),
        before,
        "tasks.json changed although every write was denied"
    );

    let api = FakeApi::start(vec![
        Turn::bash("cairn task start T-001"),
        Turn::bash("cairn task complete T-001"),
        Turn::Text("T-001 is done.".into()),
    ]);
    let session = repo.claude(&api, "Do T-001 with cairn.", &[], true);
    assert_eq!(session.result["is_error"], false, "{:?}", session.result);
    let results = api.tool_results();
    assert_eq!(results.len(), 2, "{results:#?}");
    assert!(
        !results[0].1 && results[0].0.contains("PENDING → IN_PROGRESS"),
        "{results:#?}"
    );
    assert!(
        !results[1].1 && results[1].0.contains("IN_PROGRESS → COMPLETE"),
        "{results:#?}"
    );
    let show = repo.cairn(&["task", "show", "T-001", "--json"]);
    assert!(show.contains("\"COMPLETE\""), "{show}");
    assert_eq!(repo.hook_errors(), "", "the hook reported errors");
}
