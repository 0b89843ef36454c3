//! Scenario 5 of issue 17, the wings: one test per wing that has a hook event, each a session
//! like the others in `main.rs` — a [`Scratch`] repository, `cairn setup claude`, a script of
//! [`Turn`]s, assertions on [`FakeApi::tool_results`] and the files.
//!
//! Still to add, as they land or as the host allows:
//! - task lists: a native `TaskUpdate` call (`Turn::tool("TaskUpdate", …)`) reaches the project
//!   through PostToolUse (the task's status in `cairn task show --json`) — needs Claude Code's
//!   task tools enabled in headless mode;
//! - MCP: the server `cairn setup claude` registers answers a scripted call of its `next` tool
//!   (`Turn::tool("mcp__cairn__next", json!({}))`; the tool_result names the next task).

use serde_json::json;

use crate::api::{FakeApi, Turn};
use crate::harness::Scratch;

/// Plans: with an active plan in EXPLORE, an Edit of a source file comes back denied with
/// cairn's reason (naming the state) and the file is unchanged; once the plan is approved into
/// EXECUTE, the same Edit goes through.
#[test]
fn an_active_plan_denies_edits_before_execute_and_allows_them_in_it() {
    let repo = Scratch::new().with_project();
    repo.cairn(&["setup", "claude"]);
    let source = repo.root.join("notes.md");
    std::fs::write(&source, "draft\n").unwrap();
    let path = source.display().to_string();
    repo.cairn(&["plan", "new", "Rewrite the notes"]);
    let edit = || {
        Turn::tool(
            "Edit",
            json!({"file_path": path, "old_string": "draft", "new_string": "final"}),
        )
    };

    let api = FakeApi::start(vec![
        Turn::tool("Read", json!({"file_path": path})),
        edit(),
        Turn::text("I will plan first."),
    ]);
    let session = repo.claude(&api, "Rewrite the notes.", &[], true);
    session.assert_completed(&api);
    session.assert_hooks_accepted();
    let results = api.tool_results();
    assert_eq!(results.len(), 2, "{results:#?}");
    let (reason, denied) = &results[1];
    assert!(
        *denied && reason.contains("EXPLORE") && reason.contains("cairn plan"),
        "the Edit in EXPLORE was not denied with cairn's reason: {reason}"
    );
    assert_eq!(std::fs::read_to_string(&source).unwrap(), "draft\n");

    repo.cairn(&["plan", "go", "PLAN", "--reason", "the notes are mapped"]);
    repo.cairn(&["plan", "approve", "--yes", "--statement", "go"]);
    let status = repo.cairn(&["--json", "plan", "status"]);
    assert!(status.contains("EXECUTE"), "{status}");

    let api = FakeApi::start(vec![
        Turn::tool("Read", json!({"file_path": path})),
        edit(),
        Turn::text("Done."),
    ]);
    let session = repo.claude(&api, "Rewrite the notes now.", &[], true);
    session.assert_completed(&api);
    session.assert_hooks_accepted();
    let results = api.tool_results();
    assert_eq!(results.len(), 2, "{results:#?}");
    assert!(
        !results[1].1,
        "the Edit in EXECUTE was refused: {results:#?}"
    );
    assert_eq!(std::fs::read_to_string(&source).unwrap(), "final\n");
    assert_eq!(repo.hook_errors(), "", "the hook reported errors");
}
