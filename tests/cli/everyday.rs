//! The everyday commands of issue #18 through the real binary: `task edit`, `phase
//! add | list | start | complete`, the current phase and critical path in `status`, and the
//! project completing by itself.

use serde_json::Value;

use crate::support::{Repo, code};

/// The log entries of one kind, as `cairn --json log` prints them.
fn log_of(repo: &Repo, kind: &str) -> Vec<Value> {
    repo.items(&["log", "--event", kind])
}

#[test]
fn task_edit_changes_fields_logs_them_and_keeps_unknown_fields() {
    let repo = Repo::with_project();
    let id = repo.add(&[
        "Desing the API",
        "--criterion",
        "Endpoints documented",
        "--criterion",
        "Reviewed by someone",
        "--tag",
        "frontend",
    ]);
    // Another tool's field on the task must survive the edit.
    let mut doc = repo.tasks_json();
    doc["tasks"][0]["x_owner"] = Value::from("ana");
    std::fs::write(
        repo.tasks_file(),
        serde_json::to_string_pretty(&doc).unwrap(),
    )
    .unwrap();

    let task = repo.json(&[
        "task",
        "edit",
        &id,
        "--title",
        "Design the API",
        "--priority",
        "high",
        "--estimate",
        "90",
        "--remove-criterion",
        "1",
        "--add-criterion",
        "Endpoints listed in docs/api.md",
        "--tag",
        "backend",
        "--untag",
        "frontend",
        "--external-id",
        "GH-42",
        "--description",
        "The public HTTP API",
        "--phase",
        "design",
    ]);
    assert_eq!(task["title"], "Design the API");
    assert_eq!(task["priority"], "HIGH");
    assert_eq!(task["estimate_minutes"], 90);
    assert_eq!(
        task["completion_criteria"],
        serde_json::json!(["Reviewed by someone", "Endpoints listed in docs/api.md"])
    );
    assert_eq!(task["tags"], serde_json::json!(["backend"]));
    assert_eq!(task["external_id"], "GH-42");
    assert_eq!(task["description"], "The public HTTP API");
    assert_eq!(task["phase_id"], "design");
    assert_eq!(task["status"], "PENDING", "an edit never moves a task");
    let on_disk = &repo.tasks_json()["tasks"][0];
    assert_eq!(on_disk["title"], "Design the API");
    assert_eq!(on_disk["x_owner"], "ana", "unknown fields survive an edit");

    let updated = log_of(&repo, "TASK_UPDATED");
    assert_eq!(updated.len(), 1);
    let detail = updated[0]["fields"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("title: Desing the API → Design the API")
            && detail.contains("priority: MEDIUM → HIGH")
            && detail.contains("estimate: (none) → 90m"),
        "{detail}"
    );

    // The human form lists each change; the same values again change nothing and log nothing.
    let text = repo.ok(&["task", "edit", &id, "--title", "Design the public API"]);
    assert!(
        text.contains("title: Design the API → Design the public API"),
        "{text}"
    );
    let same = repo.ok(&["task", "edit", &id, "--title", "Design the public API"]);
    assert!(same.contains("nothing changed"), "{same}");
    assert_eq!(log_of(&repo, "TASK_UPDATED").len(), 2);

    // Empty values clear optional fields.
    let cleared = repo.json(&["task", "edit", &id, "--phase", "", "--external-id", ""]);
    assert!(cleared.get("phase_id").is_none(), "{cleared}");
    assert!(cleared.get("external_id").is_none(), "{cleared}");
}

#[test]
fn task_edit_refuses_bad_input_and_changes_nothing() {
    let repo = Repo::with_project();
    let id = repo.add(&["Write the parser", "--criterion", "Parses the sample"]);
    let before = std::fs::read(repo.tasks_file()).unwrap();
    let unchanged = |what: &str| {
        assert_eq!(
            std::fs::read(repo.tasks_file()).unwrap(),
            before,
            "{what} left tasks.json as it was"
        );
    };

    let none = repo.fails(&["task", "edit", &id], code::USAGE);
    assert!(none.stderr.contains("nothing to edit"), "{}", none.stderr);
    unchanged("an edit with no field");

    for (args, expected, says) in [
        (vec!["--title", "ab"], code::INVALID, "too short"),
        (vec!["--estimate", "0"], code::INVALID, "out of range"),
        (vec!["--estimate", "481"], code::INVALID, "out of range"),
        (vec!["--priority", "urgent"], code::INVALID, "not one of"),
        (
            vec!["--remove-criterion", "2"],
            code::INVALID,
            "no criterion 2",
        ),
        (vec!["--add-criterion", "tiny"], code::INVALID, "too short"),
        (
            vec!["--phase", "Design Phase"],
            code::INVALID,
            "not a valid phase id",
        ),
        (
            vec!["--title", "A fine new title", "--estimate", "999"],
            code::INVALID,
            "out of range",
        ),
    ] {
        let mut all = vec!["task", "edit", id.as_str()];
        all.extend_from_slice(&args);
        let run = repo.fails(&all, expected);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
        unchanged(&format!("{args:?}"));
    }
    repo.fails(
        &["task", "edit", "T-099", "--title", "Nobody"],
        code::NOT_FOUND,
    );
    repo.fails(
        &["task", "edit", &id, "--remove-criterion", "x"],
        code::USAGE,
    );
    unchanged("an unknown task");
}

#[test]
fn a_finished_task_keeps_its_plan_but_its_words_can_be_fixed() {
    let repo = Repo::with_project();
    let id = repo.add(&["Ship teh release", "--estimate", "30"]);
    repo.add(&["Keep the project open"]);
    repo.start_and_complete(&id);
    let before = std::fs::read(repo.tasks_file()).unwrap();

    for args in [
        vec!["--estimate", "45"],
        vec!["--priority", "LOW"],
        vec!["--add-criterion", "Tagged in git"],
        vec!["--phase", "later"],
        vec!["--title", "Ship the release", "--estimate", "45"],
    ] {
        let mut all = vec!["task", "edit", id.as_str()];
        all.extend_from_slice(&args);
        let run = repo.fails(&all, code::REFUSED);
        assert!(
            run.stderr.contains("is COMPLETE"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(
            std::fs::read(repo.tasks_file()).unwrap(),
            before,
            "{args:?}"
        );
    }
    let fixed = repo.json(&[
        "task",
        "edit",
        &id,
        "--title",
        "Ship the release",
        "--tag",
        "release",
        "--external-id",
        "GH-7",
    ]);
    assert_eq!(fixed["title"], "Ship the release");
    assert_eq!(fixed["status"], "COMPLETE");
    assert_eq!(fixed["estimate_minutes"], 30);
}

#[test]
fn phases_are_added_listed_started_and_completed_with_their_rules() {
    let repo = Repo::with_project();
    let added = repo.json(&["phase", "add", "design", "--name", "Design the API"]);
    assert_eq!(added["status"], "PENDING");
    repo.ok(&["phase", "add", "build", "--name", "Build it"]);
    let project = repo.project_dir("web").join("project.json");
    let before = std::fs::read(&project).unwrap();
    repo.fails(
        &["phase", "add", "design", "--name", "Again"],
        code::ALREADY_EXISTS,
    );
    repo.fails(
        &["phase", "add", "Design", "--name", "Upper"],
        code::INVALID,
    );
    repo.fails(&["phase", "add", "ops", "--name", "  "], code::INVALID);
    repo.fails(&["phase", "start", "nope"], code::NOT_FOUND);
    assert_eq!(
        std::fs::read(&project).unwrap(),
        before,
        "refusals change nothing"
    );

    let sketch = repo.add(&["Sketch the endpoints", "--phase", "design"]);
    let review = repo.add(&[
        "Review the sketch",
        "--phase",
        "design",
        "--depends",
        &sketch,
    ]);
    repo.add(&[
        "Build the endpoints",
        "--phase",
        "build",
        "--depends",
        &review,
    ]);

    let list = repo.json(&["phase", "list"]);
    assert_eq!(list[0]["id"], "design");
    assert_eq!(list[0]["tasks"], 2);
    assert_eq!(list[0]["complete"], 0);
    assert_eq!(list[0]["open"], serde_json::json!(["T-001", "T-002"]));
    let table = repo.ok(&["phase", "list"]);
    assert!(
        table.contains("design") && table.contains("0/2") && table.contains("T-001, T-002"),
        "{table}"
    );

    let started = repo.json(&["phase", "start", "design"]);
    assert_eq!(started["status"], "IN_PROGRESS");
    let again = repo.fails(&["phase", "start", "design"], code::REFUSED);
    assert!(
        again.stderr.contains("already IN_PROGRESS"),
        "{}",
        again.stderr
    );

    // Open tasks refuse the completion, naming them; nothing changes.
    repo.start_and_complete(&sketch);
    let before = std::fs::read(&project).unwrap();
    let checkpoints = repo.checkpoint_files();
    let refused = repo.fails(&["phase", "complete", "design"], code::REFUSED);
    assert!(
        refused.stderr.contains("T-002") && !refused.stderr.contains("T-001"),
        "names exactly the open tasks: {}",
        refused.stderr
    );
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(std::fs::read(&project).unwrap(), before);
    assert_eq!(repo.checkpoint_files(), checkpoints);

    // --force completes it, says what was open, and checkpoints as before.
    let forced = repo.ok(&["phase", "complete", "design", "--force"]);
    assert!(forced.contains("is COMPLETE"), "{forced}");
    assert!(forced.contains("still open: T-002"), "{forced}");
    assert!(forced.contains("checkpoint-"), "{forced}");
    assert_eq!(repo.checkpoint_files().len(), checkpoints.len() + 1);
    repo.fails(&["phase", "complete", "design", "--force"], code::REFUSED);

    // A phase with every task done completes without --force.
    repo.ok(&["phase", "add", "empty", "--name", "Nothing in it"]);
    let done = repo.json(&["phase", "complete", "empty"]);
    assert_eq!(done["phase"]["status"], "COMPLETE");
    assert_eq!(done["still_open"], serde_json::json!([]));

    for kind in ["PHASE_ADDED", "PHASE_STARTED", "PHASE_COMPLETE"] {
        assert!(!log_of(&repo, kind).is_empty(), "{kind} is logged");
    }
    assert_eq!(log_of(&repo, "PHASE_ADDED").len(), 3);
    // The log keeps what a forced completion skipped, and only then.
    let completions = log_of(&repo, "PHASE_COMPLETE");
    let forced_entry = &completions[0];
    assert_eq!(
        forced_entry["fields"]["still_open"], "T-002",
        "{forced_entry}"
    );
    assert!(completions[1]["fields"].get("still_open").is_none());
}

#[test]
fn status_and_prime_show_the_current_phase_and_status_the_critical_path() {
    let repo = Repo::with_project();
    repo.ok(&["phase", "add", "design", "--name", "Design the API"]);
    repo.ok(&["phase", "add", "build", "--name", "Build it"]);
    let a = repo.add(&[
        "Sketch the endpoints",
        "--phase",
        "design",
        "--estimate",
        "30",
    ]);
    let b = repo.add(&[
        "Build the endpoints",
        "--phase",
        "build",
        "--estimate",
        "90",
        "--depends",
        &a,
    ]);
    repo.add(&["Side quest", "--estimate", "10"]);

    let text = repo.ok(&["status"]);
    assert!(
        text.contains("Current phase: design — Design the API [PENDING], 0/1 tasks complete"),
        "the first PENDING phase when none is under way:\n{text}"
    );
    assert!(
        text.contains(&format!(
            "Critical path: {a} Sketch the endpoints → {b} Build the endpoints (2h left)"
        )),
        "{text}"
    );
    let prime = repo.ok(&["prime"]);
    assert!(
        prime.contains("Current phase: design — Design the API [PENDING], 0/1 tasks complete"),
        "a new session learns the phase too:\n{prime}"
    );
    repo.ok(&["phase", "start", "build"]);
    let json = repo.json(&["status"]);
    assert_eq!(
        json["current_phase"]["id"], "build",
        "the IN_PROGRESS phase"
    );
    assert_eq!(json["critical_path"]["remaining_minutes"], 120);
    assert_eq!(json["critical_path"]["tasks"][0]["id"], a.as_str());
}

#[test]
fn the_project_completes_by_itself_and_reopens_for_new_work() {
    let repo = Repo::with_project();
    let a = repo.add(&["First piece of work"]);
    let b = repo.add(&["Second piece of work"]);
    let c = repo.add(&["Work that will be dropped"]);
    repo.start_and_complete(&a);
    repo.ok(&["task", "cancel", &c]);
    assert_eq!(repo.json(&["project", "show"])["status"], "IN_PROGRESS");
    assert!(log_of(&repo, "PROJECT_COMPLETE").is_empty());

    repo.ok(&["task", "start", &b]);
    let finished = repo.ok(&["task", "complete", &b]);
    assert!(finished.contains("Project complete"), "{finished}");
    assert_eq!(repo.json(&["project", "show"])["status"], "COMPLETE");
    let status = repo.ok(&["status"]);
    assert!(status.contains("[COMPLETE]"), "{status}");
    assert!(status.contains("Project complete: 2/2 tasks"), "{status}");
    assert!(!status.contains("Critical path"), "{status}");
    let logged = log_of(&repo, "PROJECT_COMPLETE");
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0]["fields"]["tasks"], "2");

    // Later changes that finish nothing new do not log it again.
    repo.ok(&["task", "edit", &a, "--title", "First piece, renamed"]);
    assert_eq!(log_of(&repo, "PROJECT_COMPLETE").len(), 1);

    // New work reopens the project, and says so.
    let added = repo.ok(&["task", "add", "Follow-up work"]);
    assert!(added.contains("IN_PROGRESS again"), "{added}");
    assert_eq!(repo.json(&["project", "show"])["status"], "IN_PROGRESS");
}

#[test]
fn cancelling_everything_does_not_complete_the_project() {
    let repo = Repo::with_project();
    let a = repo.add(&["Only task here"]);
    repo.ok(&["task", "cancel", &a]);
    assert_ne!(repo.json(&["project", "show"])["status"], "COMPLETE");
    assert!(log_of(&repo, "PROJECT_COMPLETE").is_empty());
}
