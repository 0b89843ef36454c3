//! A session task's end is one unit across the session and the project (issue #16): killed at
//! every step between the two stores' writes, the next command — of either wing, never
//! `session recover` — finds them agreeing, with nothing applied twice.

use std::process::Stdio;

use crate::session::{ok, session, six_tasks};
use crate::support::{Repo, cairn_command, code};

/// Every step of `session task done|fail|skip` a process can die at, in order: inside the
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

#[test]
fn a_task_end_killed_between_the_stores_is_finished_by_the_next_command() {
    // (command, the project status it leads to, the session row it writes)
    let ends = [
        ("done", "COMPLETE", Some("PASS")),
        ("fail", "PENDING", Some("FAIL")),
        ("skip", "PENDING", None),
    ];
    for failpoint in FAILPOINTS {
        for (end, status, row) in ends {
            let what = format!("{end} killed at {failpoint}");
            let repo = six_tasks();
            ok(&repo, &["session", "start"]);
            ok(&repo, &["session", "task", "start", "T-001"]);
            killed(&repo, &["session", "task", end, "T-001"], failpoint);

            // The next command of the project's wing sees the finished state.
            let next = session(&repo, &["--json", "task", "next"]);
            assert_eq!(next.code, code::OK, "{what}: {}", next.stderr);
            assert_eq!(repo.status_of("T-001"), status, "{what}");
            assert_eq!(moves_to(&repo, "T-001", status), 1, "{what}: moved once");
            let rows = rows_of(&repo, "1");
            match row {
                Some(word) => {
                    assert_eq!(rows.len(), 1, "{what}: {rows:?}");
                    assert!(rows[0].contains(word), "{what}: {rows:?}");
                }
                None => assert!(rows.is_empty(), "{what}: {rows:?}"),
            }
            let status_json: serde_json::Value =
                serde_json::from_str(&ok(&repo, &["--json", "session", "status"])).expect("json");
            assert_eq!(status_json["active"], serde_json::json!([]), "{what}");
            assert!(
                !repo
                    .root()
                    .join(".claude/sessions/.cairn-project-moves")
                    .exists(),
                "{what}: the recorded move is forgotten"
            );
            assert!(
                !repo.root().join(".claude/sessions/.cairn-journal").exists(),
                "{what}"
            );
        }
    }
}

#[test]
fn the_retry_of_a_killed_done_logs_and_moves_nothing_twice() {
    for failpoint in FAILPOINTS {
        let repo = six_tasks();
        ok(&repo, &["session", "start"]);
        ok(&repo, &["session", "task", "start", "T-002"]);
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
