//! cairn inside the real Claude Code CLI (issue 17).
//!
//! Each test runs the pinned Claude Code (`cargo xtask claude-code` installs it) headless on a
//! scratch repository with a scratch `HOME`, its model replaced by a scripted fake of the
//! Messages API ([`api::FakeApi`]), and the real `cairn` and `cairn-hook` doing the work. A test
//! asserts on what reached the model (the requests the fake recorded), on the files in the
//! repository, and on Claude Code's JSON result. See README.md, "Claude Code in the loop".

mod api;
mod harness;
mod wings;

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
    let api = FakeApi::start(vec![Turn::text("Nothing to do.")]);
    let session = repo.claude(&api, "What is next?", &[], true);

    session.assert_completed(&api);

    session.assert_hooks_accepted();
    let first = &api.messages()[0];
    let sent = first["messages"].to_string();
    assert!(
        sent.contains("Claude loop demo") && sent.contains("T-001 Write the parser"),
        "the SessionStart context did not reach the model: {sent}"
    );
    let id = session.session_id();
    for event in ["SESSION_START", "SESSION_END"] {
        assert_eq!(
            repo.log_entries(event, &[id]),
            1,
            "no single {event} entry for session {id} in the progress log:\n{}",
            repo.progress_log()
        );
    }
    assert_eq!(repo.hook_errors(), "", "the hook reported errors");
}

/// Claude Code started in a subdirectory of the repository, cairn set up for the user
/// (`--global`): Claude Code sets `$CLAUDE_PROJECT_DIR` to that subdirectory, yet the hooks find
/// the store at the repository root, as `cairn` itself does from there.
#[test]
fn a_session_started_in_a_subdirectory_finds_the_store_at_the_root() {
    let repo = Scratch::new().with_project();
    repo.cairn(&["setup", "claude", "--global"]);
    let sub = repo.root.join("src").join("deep");
    std::fs::create_dir_all(&sub).unwrap();
    let api = FakeApi::start(vec![
        Turn::bash("cairn task next"),
        Turn::text("Next is T-001."),
    ]);
    let session = repo.claude_in(&sub, &api, "What is next?", &[], true);
    session.assert_completed(&api);
    session.assert_hooks_accepted();
    let first = api.messages()[0]["messages"].to_string();
    assert!(
        first.contains("Claude loop demo"),
        "the SessionStart context did not reach the model: {first}"
    );
    assert_eq!(
        repo.log_entries("SESSION_START", &[session.session_id()]),
        1
    );
    let results = api.tool_results();
    assert!(
        !results[0].1 && results[0].0.contains("T-001 Write the parser"),
        "{results:#?}"
    );
    assert!(
        !sub.join(".claude").exists(),
        "nothing is written in the subdirectory"
    );
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
        Turn::text("I will use cairn instead."),
    ]);
    let session = repo.claude(&api, "Mark T-001 done by editing the file.", &[], true);
    session.assert_completed(&api);
    session.assert_hooks_accepted();

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
        Turn::text("T-001 is done."),
    ]);
    let session = repo.claude(&api, "Do T-001 with cairn.", &[], true);
    session.assert_completed(&api);
    session.assert_hooks_accepted();
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

/// Scenario 4: a session whose context fills up is compacted by Claude Code on its own; the
/// PreCompact hook writes a checkpoint of the task list, and the SessionStart that follows
/// (source `compact`) keeps the agent's in-progress work and tells the model so.
///
/// Compaction is driven the way it happens to users: the scripted answer to the first request
/// reports a context all but full, so Claude Code compacts (PreCompact with trigger `auto`,
/// its summary requests, SessionStart with source `compact`) before asking the model again.
#[test]
fn compaction_checkpoints_the_task_list_and_keeps_the_work() {
    let repo = Scratch::new().with_project();
    repo.cairn(&["setup", "claude"]);
    // After the tool call every answer is text: the summary requests Claude Code sends while
    // compacting run in parallel, so which of them gets which text must not matter.
    let api = FakeApi::start(vec![
        Turn::bash("cairn task start T-001").filling_the_context(),
        Turn::text("Summary: T-001 is in progress."),
    ]);
    let session = repo.claude(&api, "Start on the parser.", &[], true);
    session.assert_completed(&api);
    session.assert_hooks_accepted();
    let id = session.session_id().to_owned();

    let log = repo.progress_log();
    assert_eq!(
        repo.log_entries("SESSION_PRECOMPACT", &[&id, "trigger: auto; checkpoint: 1"]),
        1,
        "no PreCompact checkpoint in the log:\n{log}"
    );
    assert_eq!(
        repo.log_entries("SESSION_START", &[&id, "source: compact"]),
        1,
        "no SessionStart after the compaction:\n{log}"
    );
    let checkpoint = std::fs::read_to_string(
        repo.root
            .join(".claude/projects/demo/checkpoints/checkpoint-001.json"),
    )
    .expect("checkpoint 1");
    assert!(checkpoint.contains("IN_PROGRESS"), "{checkpoint}");
    // Claude Code compacts in forked agents whose SubagentStop carries `"agent_type": ""`.
    assert!(
        !log.contains("agent:  ("),
        "a nameless agent was logged with an empty name:\n{log}"
    );

    // The request after the compaction carries cairn's compact context with the work in it.
    let last = api.messages().pop().unwrap().to_string();
    assert!(
        last.contains("context compacted") && last.contains("checkpoint 1"),
        "the compact context did not reach the model: {last}"
    );
    // The session ends with T-001 open: cairn's Stop reminder is shown, not refused.
    let reminders = session.hook_system_messages("Stop");
    assert!(
        reminders.iter().any(|m| m.contains("T-001")),
        "no Stop reminder of T-001: {reminders:#?}"
    );
    let show = repo.cairn(&["task", "show", "T-001", "--json"]);
    assert!(
        show.contains("\"IN_PROGRESS\""),
        "the compaction lost the work: {show}"
    );
    assert_eq!(repo.hook_errors(), "", "the hook reported errors");
}

/// `claude --continue` resumes under the same session id, and its SessionStart (source
/// `resume`) reconciles: this session's interrupted work is reset and the model is told, while
/// another agent's live claim is left alone.
#[test]
fn a_resumed_session_reconciles_its_own_work_and_spares_other_claims() {
    let repo = Scratch::new().with_project();
    repo.cairn(&["task", "add", "Review the docs"]);
    repo.cairn(&[
        "task",
        "claim",
        "T-003",
        "--agent",
        "other-agent",
        "--lease",
        "1h",
    ]);
    repo.cairn(&["setup", "claude"]);
    let api = FakeApi::start(vec![
        Turn::bash("cairn task start T-001"),
        Turn::text("Started."),
    ]);
    let first = repo.claude(&api, "Start on the parser.", &[], true);
    first.assert_completed(&api);
    first.assert_hooks_accepted();

    let api = FakeApi::start(vec![Turn::text("Picking T-001 up again.")]);
    let resumed = repo.claude(&api, "Go on.", &["--continue"], true);
    resumed.assert_completed(&api);
    resumed.assert_hooks_accepted();
    assert_eq!(resumed.session_id(), first.session_id());

    let sent = api.messages()[0]["messages"].to_string();
    assert!(
        sent.contains("session resumed") && sent.contains("T-001 IN_PROGRESS → PENDING"),
        "the resume context did not reach the model: {sent}"
    );
    assert_eq!(
        repo.log_entries(
            "SESSION_START",
            &[resumed.session_id(), "source: resume; reconciled: 1"]
        ),
        1,
        "{}",
        repo.progress_log()
    );
    let t1 = repo.cairn(&["task", "show", "T-001", "--json"]);
    assert!(t1.contains("\"PENDING\""), "{t1}");
    let t3 = repo.cairn(&["task", "show", "T-003", "--json"]);
    assert!(
        t3.contains("\"IN_PROGRESS\"") && t3.contains("other-agent"),
        "another agent's claim was reset: {t3}"
    );
    assert_eq!(repo.hook_errors(), "", "the hook reported errors");
}

/// Scenario 6a: a damaged store — task list and log both garbled, so not even the write-ahead log
/// can rebuild it. cairn-hook reports its failure to its error log, and Claude Code goes on: tools
/// run, nothing is blocked by accident, the damaged file is kept.
#[test]
fn a_damaged_store_blocks_nothing() {
    let repo = Scratch::new().with_project();
    repo.cairn(&["setup", "claude"]);
    std::fs::write(repo.tasks_json(), "{ this is not json").unwrap();
    let log = repo.tasks_json().with_file_name("progress").join("log.md");
    std::fs::write(&log, "garbled\n").unwrap();
    let api = FakeApi::start(vec![
        Turn::bash("echo fine > notes.txt && cat notes.txt"),
        Turn::tool(
            "Write",
            json!({"file_path": repo.root.join("more.txt").display().to_string(), "content": "more\n"}),
        ),
        Turn::text("Done."),
    ]);
    let session = repo.claude(&api, "Write some notes.", &[], true);
    session.assert_completed(&api);
    // cairn-hook's own failure stays its own: Claude Code saw a hook that succeeded.
    session.assert_hooks_accepted();
    let results = api.tool_results();
    assert_eq!(results.len(), 2, "{results:#?}");
    assert!(
        results.iter().all(|(_, is_error)| !is_error),
        "{results:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.root.join("notes.txt")).unwrap(),
        "fine\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.root.join("more.txt")).unwrap(),
        "more\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.tasks_json()).unwrap(),
        "{ this is not json"
    );
    assert_ne!(repo.hook_errors(), "", "the failure was not logged");
}

/// Scenario 6b: a cairn-hook that fails (here a stand-in that prints garbage and exits 101, as
/// a panicking Rust binary does) on every event. Claude Code goes on and blocks nothing: only
/// exit code 2 blocks, and cairn-hook never uses it.
#[test]
fn a_failing_hook_blocks_nothing() {
    let repo = Scratch::new().with_project();
    let bin = repo.home.join("broken");
    std::fs::create_dir_all(&bin).unwrap();
    let broken = bin.join("cairn-hook");
    let ran = bin.join("ran");
    std::fs::write(
        &broken,
        format!(
            "#!/bin/sh\necho ran >> '{}'\necho 'not json {{'\necho 'panicked' >&2\nexit 101\n",
            ran.display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    repo.cairn(&["setup", "claude", "--hook", &broken.display().to_string()]);
    let api = FakeApi::start(vec![
        Turn::bash("echo fine > notes.txt"),
        Turn::tool(
            "Write",
            json!({"file_path": repo.root.join("more.txt").display().to_string(), "content": "more\n"}),
        ),
        Turn::text("Done."),
    ]);
    let session = repo.claude(&api, "Write some notes.", &[], true);
    session.assert_completed(&api);
    let failures = session.hook_failures();
    assert!(
        failures
            .iter()
            .any(|f| f.contains("hook_non_blocking_error") && f.contains("SessionStart")),
        "Claude Code did not record the failing hook as non-blocking: {failures:#?}"
    );
    let results = api.tool_results();
    assert_eq!(results.len(), 2, "{results:#?}");
    assert!(
        results.iter().all(|(_, is_error)| !is_error),
        "{results:#?}"
    );
    assert!(repo.root.join("notes.txt").is_file());
    assert!(repo.root.join("more.txt").is_file());
    // SessionStart, a PreToolUse per tool call, Stop, SessionEnd: the failing hook really ran.
    let runs = std::fs::read_to_string(&ran)
        .unwrap_or_default()
        .lines()
        .count();
    assert!(runs >= 4, "the failing hook ran {runs} times");
}

/// `cargo xtask plugin`, assembled from the binaries under test into the scratch home; returns
/// its directory for `--plugin-dir`.
fn assemble_plugin(repo: &Scratch) -> String {
    let dir = repo.home.join("plugins").join("cairn");
    let mut xtask = std::process::Command::new(harness::binaries().join("xtask"));
    xtask
        .args(["plugin", "--no-build", "--bin-dir"])
        .arg(harness::binaries())
        .arg("--out")
        .arg(&dir);
    let out = harness::bounded(xtask, std::time::Duration::from_secs(60), "xtask plugin");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.display().to_string()
}

/// Scenario 2: the plugin `cargo xtask plugin` assembles, loaded with `--plugin-dir`, with no
/// cairn on PATH. Its hooks run from the plugin's `bin/`, and a Bash call of `cairn task next`
/// finds the plugin's cairn.
#[test]
fn the_plugin_runs_its_own_binaries() {
    let repo = Scratch::new().with_project();
    let plugin = assemble_plugin(&repo);
    let api = FakeApi::start(vec![
        Turn::bash("cairn task next"),
        Turn::text("T-001 is next."),
    ]);
    let session = repo.claude(&api, "What is next?", &["--plugin-dir", &plugin], false);
    session.assert_completed(&api);
    session.assert_hooks_accepted();
    let first = api.messages()[0]["messages"].to_string();
    assert!(
        first.contains("Claude loop demo"),
        "the plugin's SessionStart context did not reach the model: {first}"
    );
    let results = api.tool_results();
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        !results[0].1 && results[0].0.contains("T-001 Write the parser"),
        "`cairn task next` did not run from the plugin: {results:#?}"
    );
    assert_eq!(
        repo.log_entries("SESSION_START", &[session.session_id()]),
        1
    );
    assert_eq!(repo.hook_errors(), "", "the hook reported errors");
}

/// The plugin and `cairn setup claude` both on: Claude Code runs both cairn-hooks on every
/// event, in parallel. Each event is still handled once (one SESSION_START, one context in the
/// model's request), and the guard still denies.
#[test]
fn plugin_and_settings_together_handle_each_event_once() {
    let repo = Scratch::new().with_project();
    repo.cairn(&["setup", "claude"]);
    let plugin = assemble_plugin(&repo);
    let api = FakeApi::start(vec![
        Turn::bash("rm .claude/projects/demo/tasks.json"),
        Turn::text("Understood."),
    ]);
    let session = repo.claude(&api, "Clean up.", &["--plugin-dir", &plugin], true);
    session.assert_completed(&api);
    session.assert_hooks_accepted();
    let first = api.messages()[0]["messages"].to_string();
    assert_eq!(
        first.matches("Current project state").count(),
        1,
        "the SessionStart context should reach the model once: {first}"
    );
    let starts = repo.log_entries("SESSION_START", &[session.session_id()]);
    assert_eq!(
        starts,
        1,
        "SessionStart handled {starts} times:\n{}",
        repo.progress_log()
    );
    let results = api.tool_results();
    assert!(
        results.len() == 1 && results[0].1 && results[0].0.contains("cairn:"),
        "{results:#?}"
    );
    assert!(repo.tasks_json().is_file());
    assert_eq!(repo.hook_errors(), "", "the hook reported errors");
}
