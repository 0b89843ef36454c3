//! `cairn tasklist push|pull|status` through the binary, on a scratch repository and a scratch
//! Claude Code configuration directory (`CLAUDE_CONFIG_DIR`), editing the list files the way
//! Claude Code does: rewriting a whole file on TaskUpdate, adding the next number on TaskCreate.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Repo, Run, code};

/// A repository with project `web` (T-001, T-002 waiting on it) and an empty Claude Code
/// configuration directory of its own.
struct Bridge {
    repo: Repo,
    config: tempfile::TempDir,
}

impl Bridge {
    fn new() -> Self {
        let repo = Repo::with_project();
        repo.add(&["Write the parser"]);
        repo.add(&["Wire the CLI", "--depends", "T-001"]);
        Self::around(repo)
    }

    fn around(repo: Repo) -> Self {
        Self {
            repo,
            config: tempfile::tempdir().expect("config dir"),
        }
    }

    fn env(&self) -> [(&str, &str); 2] {
        let config = self.config.path().to_str().expect("utf-8 temp path");
        [("CLAUDE_CONFIG_DIR", config), ("HOME", config)]
    }

    fn run(&self, args: &[&str]) -> Run {
        self.repo.run_env(args, &self.env())
    }

    fn run_with(&self, args: &[&str], extra: (&str, &str)) -> Run {
        let [a, b] = self.env();
        self.repo.run_env(args, &[a, b, extra])
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let run = self.run(&all);
        assert_eq!(
            run.code,
            code::OK,
            "cairn {all:?}\n{}\n{}",
            run.stdout,
            run.stderr
        );
        serde_json::from_str(&run.stdout).expect("JSON on stdout")
    }

    fn list_dir(&self, list: &str) -> PathBuf {
        self.config.path().join("tasks").join(list)
    }

    fn file(&self, list: &str, id: &str) -> Value {
        let text = std::fs::read_to_string(self.list_dir(list).join(format!("{id}.json")))
            .expect("task file");
        serde_json::from_str(&text).expect("task file is JSON")
    }

    /// Writes a task file as Claude Code does: the whole object, 2-space indent.
    fn write(&self, list: &str, id: &str, value: &Value) {
        let dir = self.list_dir(list);
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = serde_json::to_string_pretty(value).unwrap();
        text.push('\n');
        std::fs::write(dir.join(format!("{id}.json")), text).unwrap();
    }
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn push_then_edit_like_claude_code_then_pull() {
    let b = Bridge::new();
    let pushed = b.json(&["tasklist", "push"]);
    assert_eq!(pushed["list"], "web", "the list defaults to the project id");
    assert_eq!(pushed["list_source"], "project");
    assert_eq!(files(&b.list_dir("web")), ["1.json", "2.json"]);
    assert_eq!(
        b.file("web", "2"),
        json!({
            "id": "2", "subject": "Wire the CLI", "description": "", "activeForm": "Wire the CLI",
            "status": "pending", "blocks": [], "blockedBy": ["1"],
            "metadata": {"cairn": {"project": "web", "task": "T-002", "status": "PENDING",
                "level": "task", "priority": "MEDIUM", "subject": "Wire the CLI",
                "description": ""}}
        })
    );
    assert_eq!(b.file("web", "1")["blocks"], json!(["2"]));

    // TaskUpdate: task 1 completed (Claude Code rewrites the file, keeping metadata).
    let mut one = b.file("web", "1");
    one["status"] = json!("completed");
    one["activeForm"] = json!("Writing the parser");
    b.write("web", "1", &one);
    // TaskCreate, then TaskUpdate addBlockedBy: the next number, no cairn metadata, blocked by
    // 2 — and Claude Code records the other side in 2's `blocks`.
    let mut two = b.file("web", "2");
    two["blocks"] = json!(["3"]);
    b.write("web", "2", &two);
    b.write(
        "web",
        "3",
        &json!({"id": "3", "subject": "Document the CLI", "description": "README section",
            "activeForm": "Documenting the CLI", "status": "pending", "blocks": [], "blockedBy": ["2"]}),
    );

    let status = b.json(&["tasklist", "status"]);
    assert_eq!(status["pull_would_move"][0]["task"], "T-001");
    assert_eq!(
        status["pull_would_move"][0]["to"],
        json!(["IN_PROGRESS", "COMPLETE"])
    );
    assert_eq!(
        status["pull_would_create"][0]["subject"],
        "Document the CLI"
    );

    let pulled = b.json(&["tasklist", "pull"]);
    assert_eq!(pulled["moved"][0]["task"], "T-001", "{pulled}");
    assert_eq!(pulled["created"][0]["task"], "T-003", "{pulled}");
    assert_eq!(pulled["refused"], json!([]));
    assert_eq!(b.repo.status_of("T-001"), "COMPLETE");
    let created = b.repo.task("T-003");
    assert_eq!(created["title"], "Document the CLI");
    assert_eq!(created["description"], "README section");
    assert_eq!(created["dependencies"], json!(["T-002"]));
    assert_eq!(
        b.file("web", "3")["metadata"]["cairn"]["task"],
        "T-003",
        "the new list task is linked to its project task"
    );
    assert_eq!(
        b.file("web", "1")["activeForm"],
        "Writing the parser",
        "pull keeps Claude Code's fields"
    );

    let again = b.json(&["tasklist", "pull"]);
    assert_eq!(
        (again["moved"].clone(), again["created"].clone()),
        (json!([]), json!([])),
        "a second pull changes nothing: {again}"
    );
    let status = b.json(&["tasklist", "status"]);
    assert_eq!(status["in_sync"], 3, "{status}");
    assert_eq!(status["push_would_write"], json!([]), "{status}");

    let human = b.run(&["tasklist", "status"]);
    assert_eq!(human.code, code::OK);
    assert!(
        human.stdout.contains("in sync (3 tasks)"),
        "{}",
        human.stdout
    );
}

/// A subject and description edited in the list (TaskUpdate) come into the project as a
/// logged edit; a title changed on both sides since the push is refused, both values named,
/// until `cairn task edit` settles it.
#[test]
fn subjects_and_descriptions_edited_in_the_list_are_pulled_and_clashes_refused() {
    let b = Bridge::new();
    b.json(&["tasklist", "push"]);
    let mut one = b.file("web", "1");
    one["subject"] = json!("Write the YAML parser");
    one["description"] = json!("Streaming, no DOM");
    b.write("web", "1", &one);
    let mut two = b.file("web", "2");
    two["subject"] = json!("Wire the CLI flags");
    b.write("web", "2", &two);
    let edited = b.run(&["task", "edit", "T-002", "--title", "Wire the CLI commands"]);
    assert_eq!(edited.code, code::OK, "{}", edited.stderr);

    let status = b.json(&["tasklist", "status"]);
    assert_eq!(status["pull_would_edit"][0]["task"], "T-001", "{status}");
    assert_eq!(status["edit_clashes"][0]["task"], "T-002", "{status}");

    let human = b.run(&["tasklist", "pull"]);
    assert_eq!(human.code, code::OK, "a refusal is reported, not an error");
    assert!(
        human.stdout.contains("1 edited")
            && human
                .stdout
                .contains("T-001 title: Write the parser → Write the YAML parser")
            && human
                .stdout
                .contains("refused T-002 (2.json edits its subject)")
            && human.stdout.contains("\"Wire the CLI flags\"")
            && human.stdout.contains("\"Wire the CLI commands\"")
            && human
                .stdout
                .contains("`cairn task edit T-002` takes the list's value"),
        "{}",
        human.stdout
    );
    let one = b.repo.task("T-001");
    assert_eq!(one["title"], "Write the YAML parser");
    assert_eq!(one["description"], "Streaming, no DOM");
    assert_eq!(b.repo.task("T-002")["title"], "Wire the CLI commands");
    let log = b.run(&["log", "--event", "TASK_UPDATED", "--task", "T-001"]);
    assert!(
        log.stdout.contains("TASK_UPDATED") && log.stdout.contains("Write the YAML parser"),
        "the edit is logged like any edit:\n{}",
        log.stdout
    );

    let again = b.json(&["tasklist", "pull"]);
    assert_eq!(again["edited"], json!([]), "{again}");
    assert_eq!(again["refused"][0]["fields"], json!(["subject"]), "{again}");

    // The project takes the list's title: nothing left to pull, push records it.
    let settle = b.run(&["task", "edit", "T-002", "--title", "Wire the CLI flags"]);
    assert_eq!(settle.code, code::OK, "{}", settle.stderr);
    let settled = b.json(&["tasklist", "pull"]);
    assert_eq!(settled["refused"], json!([]), "{settled}");
    b.json(&["tasklist", "push"]);
    let status = b.json(&["tasklist", "status"]);
    assert_eq!(status["in_sync"], 2, "{status}");
}

#[test]
fn a_change_the_rules_refuse_is_reported_and_nothing_is_forced() {
    let b = Bridge::new();
    b.json(&["tasklist", "push"]);
    let mut two = b.file("web", "2");
    two["status"] = json!("completed");
    b.write("web", "2", &two);
    let before = std::fs::read(b.repo.tasks_file()).unwrap();

    let run = b.run(&["tasklist", "pull"]);
    assert_eq!(run.code, code::OK, "{}", run.stderr);
    assert!(run.stdout.contains("refused T-002"), "{}", run.stdout);
    assert!(
        run.stdout.contains("T-001"),
        "the reason names the blocker: {}",
        run.stdout
    );
    assert_eq!(b.repo.status_of("T-002"), "PENDING");
    assert_eq!(
        std::fs::read(b.repo.tasks_file()).unwrap(),
        before,
        "a refused move writes nothing"
    );
    assert_eq!(
        b.file("web", "2")["status"],
        "completed",
        "the list keeps what Claude Code wrote"
    );
}

#[test]
fn list_ids_that_leave_the_tasks_directory_are_refused() {
    let b = Bridge::new();
    let before = std::fs::read(b.repo.tasks_file()).unwrap();
    for args in [
        ["tasklist", "push", "--list", "../escape"],
        ["tasklist", "push", "--list", "a/b"],
        ["tasklist", "pull", "--list", ".."],
        ["tasklist", "status", "--list", "x/../../y"],
    ] {
        let run = b.run(&args);
        assert_eq!(run.code, code::USAGE, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.starts_with("error: task list id"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("hint: "), "{}", run.stderr);
    }
    let run = b.run_with(
        &["--json", "tasklist", "push"],
        ("CLAUDE_CODE_TASK_LIST_ID", "../../etc"),
    );
    assert_eq!(run.code, code::USAGE);
    let error: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(error["error"]["kind"], "invalid_list_id");
    assert_eq!(
        files(b.config.path()),
        Vec::<String>::new(),
        "nothing written"
    );
    assert_eq!(std::fs::read(b.repo.tasks_file()).unwrap(), before);
}

#[test]
fn the_list_id_comes_from_the_environment_then_the_settings_file() {
    let b = Bridge::new();
    std::fs::create_dir_all(b.repo.root().join(".claude")).unwrap();
    std::fs::write(
        b.repo.root().join(".claude/settings.json"),
        r#"{"env": {"CLAUDE_CODE_TASK_LIST_ID": "shared-list"}}"#,
    )
    .unwrap();
    let pushed = b.json(&["tasklist", "push"]);
    assert_eq!(
        (pushed["list"].clone(), pushed["list_source"].clone()),
        (json!("shared-list"), json!("settings"))
    );
    let run = b.run_with(
        &["--json", "tasklist", "status"],
        ("CLAUDE_CODE_TASK_LIST_ID", "from-env"),
    );
    let status: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(status["list"], "from-env");
    assert_eq!(status["push_would_write"].as_array().unwrap().len(), 2);
    let flagged = b.json(&["tasklist", "status", "--list", "shared-list"]);
    assert_eq!(flagged["list_source"], "flag");
    assert_eq!(flagged["in_sync"], 2);
}

#[test]
fn garbage_list_files_are_reported_not_fatal() {
    let b = Bridge::new();
    let dir = b.list_dir("web");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("4.json"), "{\"id\": \"4\", \"subj").unwrap();
    std::fs::write(
        dir.join("5.json"),
        r#"{"id": 5, "description": "no subject"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("6.json"),
        r#"{"id": 6, "subject": "Numeric id, odd status", "status": "done", "blockedBy": [1, null]}"#,
    )
    .unwrap();
    std::fs::write(dir.join("execution_pointer.md"), "/somewhere/else\n").unwrap();

    let status = b.json(&["tasklist", "status"]);
    let problems: Vec<(String, bool)> = status["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["file"].as_str().unwrap().to_owned(), p["skipped"] == true))
        .collect();
    assert_eq!(
        problems,
        [
            ("4.json".to_owned(), true),
            ("5.json".to_owned(), true),
            ("6.json".to_owned(), false),
            ("6.json".to_owned(), false)
        ],
        "{status}"
    );
    let run = b.run(&["tasklist", "pull"]);
    assert_eq!(run.code, code::OK, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("warning: 5.json task 5 has no subject; skipped"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("created T-003 Numeric id, odd status [PENDING]"),
        "{}",
        run.stdout
    );
    assert_eq!(b.repo.task("T-003")["dependencies"], json!([]));
}

#[test]
fn a_task_file_cairn_did_not_write_survives_push() {
    let b = Bridge::new();
    let claudes = json!({"id": "1", "subject": "Claude's own task", "description": "",
        "activeForm": "Working", "status": "in_progress", "blocks": [], "blockedBy": []});
    b.write("web", "1", &claudes);
    b.write(
        "web",
        "9",
        &json!({"id": "9", "subject": "Another one", "status": "pending"}),
    );
    let one_before = std::fs::read(b.list_dir("web").join("1.json")).unwrap();
    let nine_before = std::fs::read(b.list_dir("web").join("9.json")).unwrap();

    let pushed = b.json(&["tasklist", "push"]);
    assert_eq!(pushed["conflicts"][0]["task"], "T-001", "{pushed}");
    assert_eq!(pushed["conflicts"][0]["held_by"]["kind"], "not_cairn");
    b.repo.ok(&[
        "task",
        "cancel",
        "T-002",
        "--reason",
        "not needed after all",
    ]);
    let pushed = b.json(&["tasklist", "push"]);
    assert_eq!(pushed["removed"], json!(["2"]), "{pushed}");
    assert_eq!(
        std::fs::read(b.list_dir("web").join("1.json")).unwrap(),
        one_before
    );
    assert_eq!(
        std::fs::read(b.list_dir("web").join("9.json")).unwrap(),
        nine_before
    );
    assert_eq!(files(&b.list_dir("web")), ["1.json", "9.json"]);
}

#[test]
fn an_execution_pointer_outside_home_is_refused() {
    let b = Bridge::new();
    let dir = b.list_dir("web");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("execution_pointer.md"), "/etc/cairn-elsewhere/\n").unwrap();
    let status = b.json(&["tasklist", "status"]);
    assert_eq!(status["execution_pointer"]["state"], "refused", "{status}");
    let human = b.run(&["tasklist", "status"]);
    assert!(
        human.stdout.contains("execution pointer `/etc/cairn-elsewhere/` refused: it resolves outside the home directory"),
        "{}",
        human.stdout
    );

    let live = b
        .config
        .path()
        .join("repo/.claude/sessions/__live_session__");
    std::fs::write(
        dir.join("execution_pointer.md"),
        format!("{}/\n", live.display()),
    )
    .unwrap();
    let status = b.json(&["tasklist", "status"]);
    assert_eq!(
        status["execution_pointer"],
        json!({"state": "accepted", "dir": live.display().to_string()})
    );
}

/// What a push or a pull did, or a status would do, is one page of lines per list, ending with
/// how many were left out; `--json` lists them all. (At 100,000 tasks `tasklist status` printed
/// 3 MB, a line per task.)
#[test]
fn push_pull_and_status_print_one_page_of_each_list() {
    let bridge = Bridge::around(crate::agent_output::with_tasks(
        60,
        crate::agent_output::numbered,
    ));
    let status = bridge.run(&["tasklist", "status"]);
    assert_eq!(status.code, code::OK, "{}", status.stderr);
    let rows = |text: &str| text.lines().filter(|l| l.contains(".json (")).count();
    assert_eq!(rows(&status.stdout), 50, "{}", status.stdout);
    assert!(
        status
            .stdout
            .contains("  … and 10 more files to write or remove (`--json` lists them all)"),
        "{}",
        status.stdout
    );
    let json = bridge.json(&["tasklist", "status"]);
    assert_eq!(json["push_would_write"].as_array().unwrap().len(), 60);

    let push = bridge.run(&["tasklist", "push"]);
    assert_eq!(push.code, code::OK, "{}", push.stderr);
    assert_eq!(rows(&push.stdout), 50, "{}", push.stdout);
    assert!(
        push.stdout
            .contains("  … and 10 more files written or removed (`--json` lists them all)"),
        "{}",
        push.stdout
    );
    assert_eq!(files(&bridge.list_dir("web")).len(), 60);

    for i in 1..=60 {
        let id = i.to_string();
        let mut file = bridge.file("web", &id);
        file["subject"] = format!("Task number {i}, renamed in Claude Code").into();
        bridge.write("web", &id, &file);
    }
    let status = bridge.run(&["tasklist", "status"]);
    let edits = |text: &str| text.lines().filter(|l| l.contains(" title: ")).count();
    assert_eq!(edits(&status.stdout), 50, "{}", status.stdout);
    assert!(
        status
            .stdout
            .contains("  … and 10 more changes (`--json` lists them all)"),
        "{}",
        status.stdout
    );
    let pull = bridge.run(&["tasklist", "pull"]);
    assert_eq!(pull.code, code::OK, "{}", pull.stderr);
    assert!(
        pull.stdout.contains("0 moved, 60 edited"),
        "{}",
        pull.stdout
    );
    assert_eq!(edits(&pull.stdout), 50, "{}", pull.stdout);
    assert!(
        pull.stdout.contains(
            "  … and 10 more changes or refusals (`--json` lists them all; `cairn log` records each change)"
        ),
        "{}",
        pull.stdout
    );
    assert_eq!(
        bridge.repo.task("T-060")["title"],
        "Task number 60, renamed in Claude Code"
    );
}
