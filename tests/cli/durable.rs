//! A session task's start and end are each one unit across the session and the project (issue
//! #16): killed at every step between the two stores' writes, the next command — of either wing,
//! never `session recover` — finds them agreeing, with nothing applied twice.

use std::process::Stdio;

use crate::session::{ok, session, six_tasks};
use crate::support::{Repo, cairn_command, code};

/// Every step of `session task start|done|fail|skip` a process can die at, in order: inside the
/// session's intent, between the stores, inside the project transaction, before the record of
/// the move is forgotten.
const FAILPOINTS: [&str; 7] = [
    "session:journal-after-intent",
    "session:journal-after-first-file",
    "session:journal-after-files",
    "session:after-move-recorded",
    "project:after-log-append",
    "project:after-state-write",
    "session:before-forget-move",
];

/// Project log entries that moved `task` to `status`.
fn moves_to(repo: &Repo, task: &str, status: &str) -> usize {
    let log = std::fs::read_to_string(repo.project_dir("web").join("progress/log.md"))
        .expect("progress log");
    log.split("\n## ")
        .filter(|e| e.contains(&format!("- task: {task}\n")))
        .filter(|e| e.contains(&format!("- new_status: {status}\n")))
        .count()
}

/// Rows of the live session's task log for task-list id `id`.
fn rows_of(repo: &Repo, id: &str) -> Vec<String> {
    let log = repo
        .root()
        .join(".claude/sessions/__live_session__/task_log.md");
    std::fs::read_to_string(log)
        .expect("task log")
        .lines()
        .filter(|l| l.starts_with(&format!("| {id} |")))
        .map(str::to_owned)
        .collect()
}

fn killed(repo: &Repo, args: &[&str], failpoint: &str) {
    let out = cairn_command(repo.root(), args)
        .env("CLAUDE_CONFIG_DIR", repo.root().join("claude-config"))
        .env("CAIRN_FAILPOINT", failpoint)
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert!(!out.status.success(), "{args:?} must die at {failpoint}");
}

fn assert_no_move_left(repo: &Repo, what: &str) {
    assert!(
        !repo
            .root()
            .join(".claude/sessions/.cairn-project-moves")
            .exists(),
        "{what}: the recorded move is made and forgotten"
    );
}

/// Three independent tasks, all started in a session.
fn three_started() -> Repo {
    let repo = Repo::with_project();
    for n in 1..=3 {
        repo.add(&[&format!("Task number {n}")]);
    }
    ok(&repo, &["session", "start"]);
    for task in ["T-001", "T-002", "T-003"] {
        ok(&repo, &["session", "task", "start", task]);
    }
    repo
}

#[test]
fn a_task_end_killed_between_the_stores_is_finished_by_the_next_command() {
    // (task, command, the project status it leads to, the session row it writes, the next
    // command: of the project's wing or the session's)
    let ends = [
        ("T-001", "done", "COMPLETE", Some("PASS"), ["task", "next"]),
        (
            "T-002",
            "fail",
            "PENDING",
            Some("FAIL"),
            ["session", "status"],
        ),
        ("T-003", "skip", "PENDING", None, ["task", "next"]),
    ];
    for failpoint in FAILPOINTS {
        let repo = three_started();
        for (task, end, status, row, next) in ends {
            let what = format!("{end} killed at {failpoint}, then {next:?}");
            killed(&repo, &["session", "task", end, task], failpoint);
            ok(&repo, &next);
            assert_no_move_left(&repo, &what);
            assert!(
                !repo.root().join(".claude/sessions/.cairn-journal").exists(),
                "{what}"
            );
            assert_eq!(repo.status_of(task), status, "{what}");
            assert_eq!(moves_to(&repo, task, status), 1, "{what}: moved once");
            let rows = rows_of(&repo, &task[4..]);
            match row {
                Some(word) => {
                    assert_eq!(rows.len(), 1, "{what}: {rows:?}");
                    assert!(rows[0].contains(word), "{what}: {rows:?}");
                }
                None => assert!(rows.is_empty(), "{what}: {rows:?}"),
            }
            let live: serde_json::Value =
                serde_json::from_str(&ok(&repo, &["--json", "session", "status"])).expect("json");
            let active = live["active"].to_string();
            assert!(
                !active.contains(&format!("\"{}\"", &task[4..])),
                "{what}: {live}"
            );
        }
    }
}

#[test]
fn a_task_start_killed_between_the_stores_is_finished_by_the_next_command() {
    for failpoint in FAILPOINTS {
        let repo = Repo::with_project();
        repo.add(&["Task number 1"]);
        ok(&repo, &["session", "start"]);
        killed(&repo, &["session", "task", "start", "T-001"], failpoint);
        let what = format!("start killed at {failpoint}");
        let live: serde_json::Value =
            serde_json::from_str(&ok(&repo, &["--json", "session", "status"])).expect("json");
        let active = live["active"].to_string();
        assert_no_move_left(&repo, &what);
        // Every failpoint is past the durable intent: the start happened, on both sides, once.
        assert!(active.contains("\"1\""), "{what}: {live}");
        assert_eq!(repo.status_of("T-001"), "IN_PROGRESS", "{what}");
        assert_eq!(
            moves_to(&repo, "T-001", "IN_PROGRESS"),
            1,
            "{what}: moved once"
        );
        // And a retry of the start is harmless either way.
        ok(&repo, &["session", "task", "start", "T-001"]);
        assert_eq!(repo.status_of("T-001"), "IN_PROGRESS", "{what}");
        assert_eq!(moves_to(&repo, "T-001", "IN_PROGRESS"), 1, "{what}");
    }
}

#[test]
fn the_retry_of_a_killed_done_logs_and_moves_nothing_twice() {
    for failpoint in FAILPOINTS {
        let repo = three_started();
        killed(&repo, &["session", "task", "done", "T-002"], failpoint);
        let retry: serde_json::Value =
            serde_json::from_str(&ok(&repo, &["--json", "session", "task", "done", "T-002"]))
                .expect("json");
        assert_eq!(retry["status"], "COMPLETE", "{failpoint}: {retry}");
        assert_eq!(rows_of(&repo, "2").len(), 1, "{failpoint}: one PASS row");
        assert_eq!(moves_to(&repo, "T-002", "COMPLETE"), 1, "{failpoint}");
    }
}

#[test]
fn an_empty_progress_file_comes_back_from_the_task_log() {
    let repo = six_tasks();
    ok(&repo, &["session", "start"]);
    ok(&repo, &["session", "task", "start", "T-001"]);
    ok(&repo, &["session", "task", "done", "T-001"]);
    let progress = repo
        .root()
        .join(".claude/sessions/__live_session__/progress.md");
    std::fs::write(&progress, "").expect("empty progress.md");
    // Before the fix the session read as never begun and refused every task command (exit 4).
    ok(&repo, &["session", "task", "start", "T-002"]);
    let status: serde_json::Value =
        serde_json::from_str(&ok(&repo, &["--json", "session", "status"])).expect("json");
    assert_eq!(status["phase"], "Active", "{status}");
    assert_eq!(status["tally"]["pass"], 1, "{status}");
    let text = std::fs::read_to_string(&progress).expect("progress.md");
    assert!(text.contains("[1]") && text.contains("[2]"), "{text}");
}

#[test]
fn an_empty_plan_state_names_the_way_out_and_the_way_works() {
    let repo = Repo::new();
    ok(&repo, &["plan", "new", "do a thing"]);
    let pointer = repo.root().join(".claude/.current_plan");
    let plan = std::fs::read_to_string(&pointer).expect("pointer");
    let state = repo
        .root()
        .join(".claude")
        .join(plan.trim())
        .join("state.md");
    std::fs::write(&state, "").expect("empty state.md");
    let run = session(&repo, &["plan", "status"]);
    assert_eq!(run.code, code::CORRUPT, "{}", run.stderr);
    assert!(
        run.stderr.contains("the file is empty") && run.stderr.contains("cairn plan new"),
        "{}",
        run.stderr
    );
    std::fs::remove_file(&pointer).expect("set the plan aside");
    ok(&repo, &["plan", "new", "another thing"]);
}

#[test]
fn an_empty_orchestration_session_names_the_way_out_and_the_way_works() {
    let repo = Repo::new();
    ok(
        &repo,
        &[
            "orch",
            "start",
            "--topic",
            "power test",
            "--phase",
            "a:coder",
        ],
    );
    let active = repo.root().join("docs/maestro/state/active-session.md");
    std::fs::write(&active, "").expect("empty active-session.md");
    let run = session(&repo, &["orch", "status"]);
    assert_eq!(run.code, code::CORRUPT, "{}", run.stderr);
    assert!(
        run.stderr.contains("the file is empty") && run.stderr.contains("cairn orch start"),
        "{}",
        run.stderr
    );
    std::fs::remove_file(&active).expect("set it aside");
    ok(
        &repo,
        &["orch", "start", "--topic", "again", "--phase", "a:coder"],
    );
}
