//! Snapshots of the human output people read most. The clock is fixed (`CAIRN_NOW`) and colour
//! is off (not a terminal, and `NO_COLOR`), so the text is deterministic.

use crate::support::Repo;

/// A small project with work in every interesting state.
fn sample() -> Repo {
    let repo = Repo::with_project();
    repo.add(&[
        "Set up the repository",
        "--priority",
        "HIGH",
        "--estimate",
        "20",
        "--phase",
        "setup",
    ]);
    repo.add(&[
        "Design the data model",
        "--estimate",
        "45",
        "--criterion",
        "schema reviewed by a teammate",
        "--description",
        "Tables, keys and the migration plan.",
    ]);
    repo.add(&[
        "Build the API",
        "--depends",
        "T-002",
        "--priority",
        "CRITICAL",
    ]);
    repo.add(&[
        "Write the user guide",
        "--priority",
        "LOW",
        "--depends",
        "T-003",
    ]);
    repo.add(&["Obtain production credentials"]);
    repo.add(&["Draft the release notes", "--estimate", "15"]);
    repo.start_and_complete("T-001");
    repo.ok(&["task", "start", "T-002"]);
    repo.ok(&[
        "task",
        "decompose",
        "T-003",
        "--into",
        "Routes and handlers",
        "--into",
        "Authentication",
    ]);
    repo.ok(&[
        "task",
        "block",
        "T-005",
        "--reason",
        "ops has not answered yet",
    ]);
    repo
}

#[test]
fn status() {
    insta::assert_snapshot!(sample().ok(&["status"]));
}

#[test]
fn task_show() {
    let repo = sample();
    insta::assert_snapshot!("task_show_leaf", repo.ok(&["task", "show", "T-002"]));
    insta::assert_snapshot!("task_show_parent", repo.ok(&["task", "show", "T-003"]));
}

#[test]
fn task_list() {
    let repo = sample();
    insta::assert_snapshot!("task_list", repo.ok(&["task", "list"]));
    insta::assert_snapshot!("task_list_ready", repo.ok(&["task", "list", "--ready"]));
}

#[test]
fn prime() {
    insta::assert_snapshot!(sample().ok(&["prime"]));
}
