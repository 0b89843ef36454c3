//! The task rules through the binary: the status table is not bypassed by decomposition, new
//! tasks take canonical levels, and a parent whose subtasks were all cancelled is cancelled too.

use crate::support::{Repo, code};

#[test]
fn a_parent_whose_subtasks_are_all_cancelled_is_cancelled_too() {
    let repo = Repo::with_project();
    let parent = repo.add(&["Build the importer"]);
    repo.ok(&[
        "task",
        "decompose",
        &parent,
        "--into",
        "Parse CSV",
        "--into",
        "Parse XML",
    ]);
    repo.ok(&["task", "cancel", "T-002"]);
    assert_eq!(
        repo.status_of(&parent),
        "IN_PROGRESS",
        "one subtask is left"
    );

    let out = repo.ok(&["task", "cancel", "T-003"]);
    assert!(
        out.contains("also T-001: IN_PROGRESS → CANCELLED (all its subtasks were cancelled)"),
        "{out}"
    );
    assert_eq!(repo.status_of(&parent), "CANCELLED");
    let moves = repo.json(&["log", "--task", &parent]);
    assert!(
        moves
            .to_string()
            .contains("all its subtasks were cancelled"),
        "the log says why: {moves}"
    );
    assert_eq!(
        repo.ok(&["doctor"]).lines().count(),
        1,
        "nothing is left stuck"
    );
}

#[test]
fn doctor_reports_and_fixes_a_parent_left_stuck_by_an_older_file() {
    let repo = Repo::with_project();
    let stuck = serde_json::json!({"tasks": [
        {"id": "T-001", "title": "Build the importer", "level": "story", "status": "IN_PROGRESS",
         "priority": "HIGH", "dependencies": [], "completion_criteria": [],
         "created_at": "2026-01-10T08:00:00Z", "subtasks": ["T-002"]},
        {"id": "T-002", "title": "Parse CSV", "level": "task", "status": "CANCELLED",
         "priority": "HIGH", "dependencies": [], "completion_criteria": [],
         "created_at": "2026-01-10T08:05:00Z", "parent_id": "T-001"}
    ]});
    std::fs::write(
        repo.tasks_file(),
        serde_json::to_string_pretty(&stuck).expect("json"),
    )
    .expect("write");

    let found = repo.run(&["doctor"]);
    assert_eq!(found.code, code::UNHEALTHY, "{}", found.stderr);
    assert!(
        found.stdout.contains("parent-not-cancelled"),
        "{}",
        found.stdout
    );
    assert!(
        found.stdout.contains("cairn doctor --fix"),
        "{}",
        found.stdout
    );
    assert_eq!(
        repo.status_of("T-001"),
        "IN_PROGRESS",
        "doctor alone changes nothing"
    );

    let typed = repo.run(&["--json", "doctor"]);
    let typed: serde_json::Value = serde_json::from_str(&typed.stdout).expect("doctor JSON");
    assert_eq!(
        typed["findings"][0]["next_steps"],
        serde_json::json!([{"action": "doctor_fix"}]),
        "{typed}"
    );

    let fixed = repo.ok(&["doctor", "--fix"]);
    assert!(
        fixed.contains("T-001: cancelled: all its subtasks were cancelled"),
        "{fixed}"
    );
    assert_eq!(repo.status_of("T-001"), "CANCELLED");
    assert_eq!(
        repo.ok(&["doctor"]).lines().count(),
        1,
        "healthy afterwards"
    );
}

#[test]
fn decomposing_a_task_in_research_is_refused_with_the_way_forward() {
    let repo = Repo::with_project();
    let id = repo.add(&["Choose a storage engine"]);
    repo.ok(&["task", "research", &id]);
    let before = std::fs::read(repo.tasks_file()).expect("read");

    let refused = repo.fails(
        &["task", "decompose", &id, "--into", "Benchmark SQLite"],
        code::REFUSED,
    );
    assert!(refused.stderr.contains("IN_RESEARCH"), "{}", refused.stderr);
    assert!(
        refused.stderr.contains(
            "hint: cairn task research T-001 --done, then cairn task decompose T-001 --into TITLE …"
        ),
        "{}",
        refused.stderr
    );
    assert_eq!(std::fs::read(repo.tasks_file()).expect("read"), before);

    repo.ok(&["task", "research", &id, "--done"]);
    repo.ok(&["task", "decompose", &id, "--into", "Benchmark SQLite"]);
    assert_eq!(repo.status_of(&id), "IN_PROGRESS");
}

#[test]
fn a_new_task_takes_one_of_the_five_levels() {
    let repo = Repo::with_project();
    let before = std::fs::read(repo.tasks_file()).expect("read");
    for level in ["phase", "micro"] {
        let refused = repo.fails(
            &["task", "add", "Plan the release", "--level", level],
            code::INVALID,
        );
        assert!(
            refused
                .stderr
                .contains("epic, story, task, subtask, micro-task"),
            "{}",
            refused.stderr
        );
        assert_eq!(std::fs::read(repo.tasks_file()).expect("read"), before);
    }
    let epic = repo.json(&["task", "add", "Plan the release", "--level", "epic"]);
    assert_eq!(epic["level"], "epic");
}

#[test]
fn doctor_names_the_command_that_fixes_what_it_cannot() {
    let repo = Repo::with_project();
    let a = repo.add(&["Pick a database"]);
    let b = repo.add(&["Write the migrations", "--depends", &a]);
    repo.ok(&["task", "cancel", &a]);

    let found = repo.run(&["doctor"]);
    assert!(
        found.stdout.contains("cancelled-dependency")
            && found
                .stdout
                .contains(&format!("fix: cairn task depend {b} --on {a} --remove")),
        "{}",
        found.stdout
    );
    repo.ok(&["task", "depend", &b, "--on", &a, "--remove"]);
    assert_eq!(repo.ok(&["doctor"]).lines().count(), 1);
}

#[test]
fn a_refusal_names_the_command_to_run_first() {
    let repo = Repo::with_project();
    let id = repo.add(&["Write the changelog"]);
    let refused = repo.fails(&["task", "complete", &id], code::REFUSED);
    assert!(
        refused
            .stderr
            .contains("cannot move from PENDING to COMPLETE")
            && refused
                .stderr
                .contains(&format!("hint: cairn task start {id}")),
        "{}",
        refused.stderr
    );
    assert!(
        !refused
            .stderr
            .lines()
            .next()
            .unwrap_or("")
            .contains("cairn task"),
        "the message says why in words; the command is on the hint line: {}",
        refused.stderr
    );
}
