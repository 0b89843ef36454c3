//! The whole lifecycle of a project, end to end, through the real binary.

use crate::support::{Repo, code};

#[test]
fn a_project_from_init_to_recovery_and_a_clean_doctor() {
    let repo = Repo::with_project();

    // Tasks with dependencies.
    let setup = repo.add(&[
        "Set up the repository",
        "--priority",
        "HIGH",
        "--estimate",
        "20",
    ]);
    let core = repo.add(&["Build the core", "--depends", &setup]);
    let docs = repo.add(&["Write the docs", "--depends", &format!("{setup},{core}")]);
    assert_eq!(
        (setup.as_str(), core.as_str(), docs.as_str()),
        ("T-001", "T-002", "T-003")
    );

    // `next` hands out the only ready task.
    assert_eq!(repo.json(&["task", "next"])["id"], "T-001");

    // Illegal transitions are refused with exit 4 and change nothing on disk.
    let before = std::fs::read(repo.tasks_file()).unwrap();
    let refused = repo.fails(&["task", "complete", &core], code::REFUSED);
    assert!(
        refused
            .stderr
            .contains("cannot move from PENDING to COMPLETE"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("hint: "), "{}", refused.stderr);
    let unmet = repo.fails(&["task", "start", &core], code::REFUSED);
    assert!(unmet.stderr.contains("T-001"), "{}", unmet.stderr);
    assert_eq!(
        std::fs::read(repo.tasks_file()).unwrap(),
        before,
        "a refused command left tasks.json untouched"
    );

    // Start and complete: completion 1.
    repo.start_and_complete(&setup);
    assert_eq!(repo.status_of(&setup), "COMPLETE");

    // Decompose the core into three subtasks; the parent moves to IN_PROGRESS.
    let decomposed = repo.json(&[
        "task",
        "decompose",
        &core,
        "--into",
        "Parse the input",
        "--into",
        "Model the data",
        "--into",
        "Print the output",
    ]);
    assert_eq!(decomposed["parent"]["id"], "T-002");
    assert_eq!(decomposed["parent"]["status"], "IN_PROGRESS");
    let children: Vec<String> = decomposed["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(children, ["T-004", "T-005", "T-006"]);

    // A parent is never worked on directly.
    repo.fails(&["task", "complete", &core], code::REFUSED);

    // Completions 2-4; the last one completes the parent by itself (completion 5).
    for (i, child) in children.iter().enumerate() {
        let out = repo.start_and_complete(child);
        if i + 1 < children.len() {
            assert_eq!(repo.status_of(&core), "IN_PROGRESS");
        } else {
            assert!(out.contains("also T-002"), "the cascade is reported: {out}");
        }
    }
    assert_eq!(repo.status_of(&core), "COMPLETE");

    // Completion 6, then four more: the tenth writes checkpoint-001, not before.
    repo.start_and_complete(&docs);
    let extra: Vec<String> = (1..=4)
        .map(|i| repo.add(&[&format!("Polish item {i}")]))
        .collect();
    for (i, id) in extra.iter().enumerate() {
        assert!(
            repo.checkpoint_files().is_empty(),
            "no checkpoint before the tenth completion (after {})",
            6 + i
        );
        let out = repo.start_and_complete(id);
        if i == 3 {
            assert!(out.contains("checkpoint-001 written"), "{out}");
        }
    }
    assert_eq!(repo.checkpoint_files(), ["checkpoint-001.json"]);

    // Work after the checkpoint, then a crash leaves tasks.json truncated.
    repo.add(&["Work after the checkpoint"]);
    let text = std::fs::read(repo.tasks_file()).unwrap();
    std::fs::write(repo.tasks_file(), &text[..text.len() / 3]).unwrap();

    // The next command recovers from the checkpoint and the log after it (#16: nothing is lost),
    // says so on stderr, and goes on.
    let run = repo.run(&["--json", "task", "list"]);
    assert_eq!(run.code, code::OK, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "tasks.json was damaged and rebuilt: kept 11 tasks (0 from the damaged file, 10 from checkpoint 1, 1 replayed from the progress log), dropped none"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("the damaged file is kept at"),
        "{}",
        run.stderr
    );
    let listed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        listed["total"], 11,
        "the checkpoint's tasks and the one added after it are back"
    );
    assert!(
        std::fs::read_dir(repo.project_dir("web"))
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e
                .file_name()
                .to_string_lossy()
                .starts_with("tasks.json.corrupt")),
        "the damaged copy is kept beside tasks.json"
    );

    // The recovery happened once: the next command has nothing to say.
    let again = repo.run(&["task", "list"]);
    assert_eq!(again.code, code::OK);
    assert_eq!(again.stderr, "");

    // The log records the recovery; doctor finds the store clean.
    let errors = repo.items(&["log", "--event", "ERROR"]);
    assert!(
        errors
            .iter()
            .any(|e| e["fields"].as_object().unwrap().values().any(|v| v
                .as_str()
                .unwrap_or_default()
                .contains("10 from checkpoint 1"))),
        "{errors:?}"
    );
    let doctor = repo.run(&["doctor"]);
    assert_eq!(doctor.code, code::OK, "{}{}", doctor.stdout, doctor.stderr);
    assert!(doctor.stdout.contains("healthy"), "{}", doctor.stdout);
    assert_eq!(repo.json(&["doctor"])["clean"], true);
}

#[test]
fn research_reset_block_unblock_cancel_and_move() {
    let repo = Repo::with_project();
    let a = repo.add(&["Investigate the options"]);
    let b = repo.add(&["Pick a database"]);

    assert_eq!(
        repo.json(&["task", "research", &a])["status"],
        "IN_RESEARCH"
    );
    let brief = repo.root().join("brief.md");
    std::fs::write(&brief, "# Options\n\nPostgres or SQLite.\n").unwrap();
    let done = repo.json(&[
        "task",
        "research",
        &a,
        "--done",
        "--brief",
        brief.to_str().unwrap(),
    ]);
    assert_eq!(done["status"], "RESEARCHED");
    assert!(
        repo.project_dir("web")
            .join("research")
            .join("T-001.md")
            .exists()
    );
    assert!(repo.ok(&["task", "show", &a]).contains("brief written"));

    assert_eq!(repo.json(&["task", "start", &a])["status"], "IN_PROGRESS");
    assert_eq!(repo.json(&["task", "validate", &a])["status"], "VALIDATING");
    assert_eq!(repo.json(&["task", "reset", &a])["status"], "PENDING");

    // Blocking needs a reason (clap refuses without one) and is left only by unblocking.
    repo.fails(&["task", "block", &b], code::USAGE);
    let blocked = repo.json(&["task", "block", &b, "--reason", "waiting for a licence"]);
    assert_eq!(blocked["status"], "BLOCKED");
    assert_eq!(blocked["blocked_reason"], "waiting for a licence");
    repo.fails(&["task", "cancel", &b], code::REFUSED);
    assert_eq!(repo.items(&["task", "list", "--blocked"]).len(), 1);
    let unblocked = repo.json(&["task", "unblock", &b]);
    assert_eq!(unblocked["status"], "PENDING");
    assert!(unblocked.get("blocked_reason").is_none());
    assert_eq!(repo.json(&["task", "cancel", &b])["status"], "CANCELLED");
    repo.fails(&["task", "start", &b], code::REFUSED);

    // `move` takes any status spelling scripts might use.
    assert_eq!(
        repo.json(&["task", "move", &a, "--to", "in-progress"])["status"],
        "IN_PROGRESS"
    );
    let complete = repo.json(&["task", "move", &a, "--to", "COMPLETE", "--actual", "42"]);
    assert_eq!(complete["actual_minutes"], 42);
    repo.fails(&["task", "move", &a, "--to", "DONE"], code::INVALID);
}

#[test]
fn dependencies_cycles_scheduling_and_phases() {
    let repo = Repo::with_project();
    let a = repo.add(&["Lay the foundation", "--phase", "build", "--estimate", "60"]);
    let b = repo.add(&["Raise the walls", "--phase", "build", "--estimate", "30"]);
    let c = repo.add(&["Paint the walls", "--priority", "LOW"]);

    repo.json(&["task", "depend", &b, "--on", &a]);
    let cycle = repo.fails(&["task", "depend", &a, "--on", &b], code::REFUSED);
    assert!(cycle.stderr.contains("cycle"), "{}", cycle.stderr);
    repo.fails(&["task", "depend", &a, "--on", "T-099"], code::NOT_FOUND);

    let waves = repo.json(&["task", "waves"]);
    assert_eq!(waves["waves"][0], serde_json::json!([a, c]));
    assert_eq!(waves["waves"][1], serde_json::json!([b]));
    let ready: Vec<String> = repo
        .items(&["task", "ready"])
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ready, [a.clone(), c.clone()], "MEDIUM before LOW");

    let removed = repo.json(&["task", "depend", &b, "--on", &a, "--remove"]);
    assert_eq!(removed["dependencies"], serde_json::json!([]));

    let mermaid = repo.ok(&["task", "graph"]);
    assert!(mermaid.starts_with("graph LR"), "{mermaid}");
    let dot = repo.ok(&["task", "graph", "--format", "dot"]);
    assert!(dot.starts_with("digraph"), "{dot}");

    let listed = repo.items(&["task", "list", "--phase", "build"]);
    assert_eq!(listed.len(), 2);

    // Both tasks are still open: only --force completes the phase.
    repo.fails(&["phase", "complete", "build"], code::REFUSED);
    let phase = repo.json(&["phase", "complete", "build", "--force"]);
    assert_eq!(phase["phase"]["status"], "COMPLETE");
    assert_eq!(phase["still_open"], serde_json::json!([a, b]));
    assert_eq!(
        phase["checkpoint"], 1,
        "a phase completion writes a checkpoint"
    );
    repo.fails(&["phase", "complete", "build"], code::REFUSED);
    repo.fails(&["phase", "complete", "nope"], code::NOT_FOUND);

    // Restoring a checkpoint saves the current tasks first, so it can be undone.
    repo.add(&["Added after the checkpoint"]);
    let restored = repo.json(&["checkpoint", "restore", "1"]);
    assert_eq!(restored, serde_json::json!({"restored": 1, "tasks": 3}));
    assert_eq!(repo.items(&["checkpoint", "list"]).len(), 2);
    repo.fails(&["checkpoint", "restore", "99"], code::NOT_FOUND);
}

#[test]
fn project_selection_and_status() {
    let repo = Repo::new();
    repo.fails(&["task", "list"], code::NOT_FOUND);
    repo.ok(&[
        "init",
        "--id",
        "one",
        "--name",
        "One",
        "--goal",
        "The first of two projects",
    ]);
    repo.ok(&[
        "init",
        "--id",
        "two",
        "--name",
        "Two",
        "--goal",
        "The second of two projects",
    ]);
    let ambiguous = repo.fails(&["task", "list"], code::USAGE);
    assert!(
        ambiguous.stderr.contains("one, two"),
        "{}",
        ambiguous.stderr
    );
    assert!(
        ambiguous.stderr.contains("--project"),
        "{}",
        ambiguous.stderr
    );

    // The one IN_PROGRESS wins when nothing is named.
    repo.ok(&["--project", "two", "project", "set-status", "IN_PROGRESS"]);
    assert_eq!(repo.json(&["project", "show"])["id"], "two");
    let by_env = repo.run_env(&["--json", "project", "show"], &[("CAIRN_PROJECT", "one")]);
    assert!(
        by_env.stdout.contains("\"id\": \"one\""),
        "{}",
        by_env.stdout
    );

    assert_eq!(repo.items(&["project", "list"]).len(), 2);
    repo.fails(&["--project", "three", "project", "show"], code::NOT_FOUND);
    repo.fails(&["project", "set-status", "FINISHED"], code::INVALID);
}

#[test]
fn reconcile_resumes_interrupted_work_and_resets_stale_tasks() {
    let repo = Repo::with_project();
    let interrupted = repo.add(&["Interrupted without a brief"]);
    let researched = repo.add(&["Interrupted with a brief"]);
    repo.ok(&["task", "start", &interrupted]);
    repo.ok(&["task", "research", &researched]);
    let brief = repo.root().join("brief.md");
    std::fs::write(&brief, "findings\n").unwrap();
    repo.ok(&[
        "task",
        "research",
        &researched,
        "--brief",
        brief.to_str().unwrap(),
    ]);

    // A dry run says what would happen and changes nothing.
    let before = std::fs::read(repo.tasks_file()).unwrap();
    let dry = repo.json(&["reconcile", "--dry-run"]);
    assert_eq!(dry["applied"], false);
    assert_eq!(dry["reconciled"].as_array().unwrap().len(), 2, "{dry}");
    assert!(repo.ok(&["reconcile", "--dry-run"]).contains("would move"));
    assert_eq!(std::fs::read(repo.tasks_file()).unwrap(), before);

    let applied = repo.json(&["reconcile"]);
    assert_eq!(applied["applied"], true);
    assert_eq!(repo.status_of(&interrupted), "PENDING");
    assert_eq!(repo.status_of(&researched), "RESEARCHED");
    assert!(repo.ok(&["reconcile"]).contains("Nothing to reconcile"));

    // Staleness: in progress for more than 4× the estimate. Reset once, blocked the second time.
    let slow = repo.add(&["Slow task", "--estimate", "10"]);
    // 41 minutes later the 10-minute task has been in progress for over 4× its estimate.
    let later = (chrono::DateTime::parse_from_rfc3339(crate::support::NOW).unwrap()
        + chrono::Duration::minutes(41))
    .to_rfc3339();
    repo.ok(&["task", "start", &slow]);
    let run = repo.run_env(
        &["--json", "reconcile", "--staleness-only"],
        &[("CAIRN_NOW", &later)],
    );
    assert_eq!(run.code, code::OK, "{}", run.stderr);
    assert_eq!(repo.status_of(&slow), "PENDING");
    repo.ok(&["task", "start", &slow]);
    let run = repo.run_env(&["reconcile", "--staleness-only"], &[("CAIRN_NOW", &later)]);
    assert_eq!(run.code, code::OK, "{}", run.stderr);
    let task = repo.task(&slow);
    assert_eq!(task["status"], "BLOCKED");
    assert_eq!(
        task["blocked_reason"],
        "Stale twice — requires human review"
    );
}

/// A task list written by the original plugin: only `tasks`, unpadded ids, a field cairn does not
/// know. cairn works on it as it is, keeps the other tool's spelling and fields, and accepts ids
/// however they are typed.
#[test]
fn a_task_list_written_by_another_tool_is_worked_on_as_it_is() {
    let repo = Repo::with_project();
    let foreign = serde_json::json!({"tasks": [
        {"id": "T-1", "title": "Collect requirements", "level": "story", "status": "PENDING",
         "priority": "HIGH", "dependencies": [], "completion_criteria": [],
         "created_at": "2026-01-10T08:00:00Z", "x_jira": {"key": "WEB-12"}},
        {"id": "T-2", "title": "Draft the schema", "level": "task", "status": "PENDING",
         "priority": "MEDIUM", "dependencies": ["T-1"], "completion_criteria": ["Reviewed by the team"],
         "created_at": "2026-01-10T08:05:00Z"}
    ]});
    std::fs::write(
        repo.tasks_file(),
        serde_json::to_string_pretty(&foreign).expect("json"),
    )
    .expect("write");

    repo.ok(&["task", "start", "t-001"]);
    repo.ok(&["task", "complete", "1"]);
    assert_eq!(
        repo.json(&["task", "next"])["id"],
        "T-2",
        "the dependency written as T-1 is met by T-001 typed"
    );
    let added = repo.json(&["task", "add", "Write the migration", "--depends", "T-0002"]);
    assert_eq!(
        added["id"], "T-003",
        "new ids continue the numbering in cairn's spelling"
    );
    assert_eq!(added["dependencies"], serde_json::json!(["T-002"]));

    let tasks = repo.tasks_json();
    assert_eq!(
        tasks["tasks"][0]["id"], "T-1",
        "the other tool's spelling is kept"
    );
    assert_eq!(
        tasks["tasks"][0]["x_jira"]["key"], "WEB-12",
        "unknown fields survive"
    );
    assert_eq!(tasks["tasks"][0]["status"], "COMPLETE");
    assert_eq!(
        repo.ok(&["doctor"]).lines().count(),
        1,
        "doctor sees nothing wrong"
    );
}

#[test]
fn a_research_brief_sets_the_tasks_research_file() {
    let repo = Repo::with_project();
    let a = repo.add(&["Investigate the options"]);
    let brief = repo.root().join("notes.md");
    std::fs::write(&brief, "# Notes\n\nSQLite is enough.\n").unwrap();
    repo.ok(&[
        "task",
        "research",
        &a,
        "--done",
        "--brief",
        brief.to_str().unwrap(),
    ]);

    let shown = repo.json(&["task", "show", &a]);
    assert_eq!(shown["research_file"], "research/T-001.md", "{shown}");
    assert_eq!(
        std::fs::read_to_string(repo.project_dir("web").join("research/T-001.md")).unwrap(),
        "# Notes\n\nSQLite is enough.\n"
    );
    let logged = repo.items(&["log", "--event", "RESEARCH_WRITTEN"]);
    assert_eq!(logged.len(), 1, "{logged:?}");
}

/// #18: another tool's schema-valid edit (`"actual_minutes": 12.5`, a new task, a status change)
/// used to be read as damage and rolled back to the last checkpoint.
#[test]
fn another_tools_fractional_minutes_are_read_and_kept_not_rolled_back() {
    let repo = Repo::with_project();
    let a = repo.add(&["Write the parser"]);
    repo.add(&["Ship it"]);
    repo.start_and_complete(&a);
    repo.ok(&["checkpoint", "write"]);

    let mut doc = repo.tasks_json();
    doc["tasks"][0]["actual_minutes"] = serde_json::json!(12.5);
    doc["tasks"][1]["status"] = serde_json::json!("CANCELLED");
    doc["tasks"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "id": "T-003", "title": "Added by another tool", "level": "task", "status": "PENDING",
            "priority": "LOW", "dependencies": [], "completion_criteria": [],
            "created_at": "2026-01-01T00:00:00Z"
        }));
    std::fs::remove_file(repo.tasks_file()).unwrap();
    std::fs::write(
        repo.tasks_file(),
        serde_json::to_string_pretty(&doc).unwrap(),
    )
    .unwrap();

    let run = repo.run(&["--json", "task", "list"]);
    assert_eq!(run.code, code::OK, "{}", run.stderr);
    assert_eq!(run.stderr, "", "nothing is recovered");
    let listed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        listed["items"].as_array().unwrap().len(),
        3,
        "nothing is rolled back"
    );
    assert_eq!(repo.status_of("T-002"), "CANCELLED");

    repo.add(&["Added by cairn"]);
    let text = std::fs::read_to_string(repo.tasks_file()).unwrap();
    assert!(
        text.contains("\"actual_minutes\":12.5"),
        "the number is kept as written:\n{text}"
    );
    assert!(
        !repo.ok(&["log"]).contains("STORE_RECOVERED"),
        "no recovery was logged"
    );
}

#[test]
fn the_recovery_notice_names_each_dropped_task_and_why() {
    let repo = Repo::with_project();
    repo.add(&["Write the parser"]);
    repo.add(&["Ship it"]);
    let mut doc = repo.tasks_json();
    doc["tasks"][1]["priority"] = serde_json::json!("WHENEVER");
    std::fs::remove_file(repo.tasks_file()).unwrap();
    std::fs::write(repo.tasks_file(), serde_json::to_string(&doc).unwrap()).unwrap();

    let run = repo.run(&["task", "list"]);
    assert_eq!(run.code, code::OK, "{}", run.stderr);
    // The broken entry comes back as the last commit left it.
    assert!(
        run.stderr
            .contains("kept 2 tasks (1 from the damaged file, 1 replayed from the progress log)")
            && run
                .stderr
                .contains("dropped 1: T-002 of the damaged file (fails its schema: /priority")
            && run
                .stderr
                .contains("its copy from the progress log was kept"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("Ship it"), "{}", run.stdout);
    assert!(
        run.stderr.contains("the damaged file is kept at"),
        "{}",
        run.stderr
    );
}
