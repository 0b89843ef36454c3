//! Scenario 5 of issue 17, the wings: one test per wing that reaches Claude Code, each a
//! session like the others in `main.rs` — a [`Scratch`] repository, `cairn setup claude`, a
//! script of [`Turn`]s, assertions on [`FakeApi::tool_results`] and the files.
//!
//! Claude Code 2.1.330 offers some tools only as *deferred* tools: the model sees their names
//! and must load their schemas with `ToolSearch` (`select:<names>`) before it may call them. Its
//! native task tools (`TaskCreate`, `TaskUpdate`, `TaskList`, `TaskGet`) are among them, and in
//! a headless session they are offered only with `CLAUDE_CODE_ENABLE_TODO_TOOLS` set (without
//! it, not even by name, and there is no `TodoWrite`); the MCP server's tools are deferred too.
//! So each of these scripts starts with a `ToolSearch` turn, as a real model's would.

use serde_json::json;

use crate::api::{FakeApi, Turn};
use crate::harness::Scratch;

/// The model loading deferred tools' schemas, as it must before calling them.
fn load_tools(names: &[&str]) -> Turn {
    Turn::tool(
        "ToolSearch",
        json!({"query": format!("select:{}", names.join(",")), "max_results": names.len()}),
    )
}

fn json_of(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

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

/// Task lists: the repository's local settings point Claude Code at list `demo` and turn its
/// task tools on; `cairn tasklist push` mirrors the project there. The model's native
/// `TaskUpdate`s (start, complete, a new subject) and `TaskCreate` reach the project through
/// cairn's PostToolUse pull: T-001 COMPLETE, T-002 retitled, a new T-003, each logged.
#[test]
fn native_task_tools_reach_the_project_through_post_tool_use() {
    let repo = Scratch::new().with_project();
    repo.cairn(&["setup", "claude"]);
    std::fs::write(
        repo.root.join(".claude/settings.local.json"),
        json!({"env": {"CLAUDE_CODE_TASK_LIST_ID": "demo", "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}})
            .to_string(),
    )
    .unwrap();
    let pushed = json_of(&repo.cairn(&["--json", "tasklist", "push"]));
    assert_eq!(pushed["list"], "demo", "{pushed}");
    assert_eq!(pushed["list_source"], "settings", "{pushed}");

    let update = |input: serde_json::Value| Turn::tool("TaskUpdate", input);
    let api = FakeApi::start(vec![
        load_tools(&["TaskList", "TaskUpdate", "TaskCreate"]),
        Turn::tool("TaskList", json!({})),
        update(json!({"taskId": "1", "status": "in_progress"})),
        update(json!({"taskId": "1", "status": "completed"})),
        update(json!({"taskId": "2", "subject": "Ship the parser to crates.io"})),
        Turn::tool(
            "TaskCreate",
            json!({"subject": "Document the parser", "description": "A page in docs/"}),
        ),
        Turn::text("The parser is written."),
    ]);
    let session = repo.claude(&api, "Work through the task list.", &[], true);
    session.assert_completed(&api);
    session.assert_hooks_accepted();
    let results = api.tool_results();
    assert_eq!(results.len(), 6, "{results:#?}");
    assert!(results.iter().all(|(_, error)| !error), "{results:#?}");
    let listed = &results[1].0;
    assert!(
        listed.contains("Write the parser") && listed.contains("Ship the parser"),
        "the pushed tasks did not reach the model's TaskList: {listed}"
    );
    assert!(results[5].0.contains("Document the parser"), "{results:#?}");

    let tasks = json_of(&repo.cairn(&["--json", "task", "list"]));
    let task = |id: &str| {
        tasks["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no {id} in {tasks}"))
    };
    assert_eq!(task("T-001")["status"], "COMPLETE", "{tasks}");
    assert_eq!(task("T-002")["title"], "Ship the parser to crates.io");
    assert_eq!(task("T-003")["title"], "Document the parser");
    assert_eq!(
        repo.log_entries("TASK_COMPLETE", &["T-001"]),
        1,
        "{}",
        repo.progress_log()
    );
    assert_eq!(
        repo.log_entries("TASK_UPDATED", &["T-002", "crates.io"]),
        1,
        "{}",
        repo.progress_log()
    );
    assert_eq!(
        repo.log_entries("TASK_CREATED", &["T-003"]),
        1,
        "{}",
        repo.progress_log()
    );
    assert_eq!(repo.hook_errors(), "", "the hook reported errors");
}

/// MCP: Claude Code starts the server `cairn setup claude` registered in the repository's
/// `.mcp.json` (`cairn mcp` on stdio; a headless session needs no approval for it). Scripted
/// calls of its `next`, `start` and `complete` tools come back with cairn's answers — `next`
/// names T-001 — and change tasks.json.
#[test]
fn the_registered_mcp_server_answers_next_and_complete() {
    let repo = Scratch::new().with_project();
    repo.cairn(&["setup", "claude"]);
    let mcp = json_of(&std::fs::read_to_string(repo.root.join(".mcp.json")).unwrap());
    assert_eq!(mcp["mcpServers"]["cairn"]["args"], json!(["mcp"]), "{mcp}");

    let tools = [
        "mcp__cairn__next",
        "mcp__cairn__start",
        "mcp__cairn__complete",
    ];
    let api = FakeApi::start(vec![
        load_tools(&tools),
        Turn::tool("mcp__cairn__next", json!({})),
        Turn::tool("mcp__cairn__start", json!({"id": "T-001"})),
        Turn::tool("mcp__cairn__complete", json!({"id": "T-001", "actual": 25})),
        Turn::text("T-001 is done."),
    ]);
    let allowed = tools.join(",");
    let session = repo.claude(
        &api,
        "Do the next task.",
        &["--allowedTools", &allowed],
        true,
    );
    session.assert_completed(&api);
    session.assert_hooks_accepted();
    let results = api.tool_results();
    assert_eq!(results.len(), 4, "{results:#?}");
    assert!(results.iter().all(|(_, error)| !error), "{results:#?}");
    let next = json_of(&results[1].0);
    assert_eq!(next["task"]["id"], "T-001", "{next}");
    assert_eq!(next["task"]["title"], "Write the parser", "{next}");
    let completed = json_of(&results[3].0);
    assert_eq!(completed["status"], "COMPLETE", "{completed}");

    let tasks = json_of(&std::fs::read_to_string(repo.tasks_json()).unwrap());
    let first = tasks["tasks"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["id"] == "T-001"))
        .unwrap_or_else(|| panic!("no T-001 in {tasks}"));
    assert_eq!(first["status"], "COMPLETE", "{first}");
    assert_eq!(first["actual_minutes"], 25, "{first}");
    assert_eq!(repo.log_entries("TASK_COMPLETE", &["T-001"]), 1);
    assert_eq!(repo.hook_errors(), "", "the hook reported errors");
}
