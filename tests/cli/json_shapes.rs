//! Every `--json` output parses and has its documented shape (crates/cli/src/json.rs). Tasks and
//! projects are checked against the same JSON Schemas the store validates files with.

use cairn_storage_fs::schema::{SchemaKind, validate};
use serde_json::Value;

use crate::support::Repo;

fn assert_schema(kind: SchemaKind, value: &Value) {
    if let Err(errors) = validate(kind, value) {
        panic!("not a valid {kind:?}: {errors:?}\n{value:#}");
    }
}

fn assert_task(value: &Value) {
    assert_schema(SchemaKind::Task, value);
}

fn assert_tasks(value: &Value) {
    let items = value
        .as_array()
        .unwrap_or_else(|| panic!("an array: {value}"));
    items.iter().for_each(assert_task);
}

/// The paging fields every JSON list carries.
const PAGE: [&str; 5] = ["total", "offset", "returned", "truncated", "next_offset"];

/// A list envelope: the paging fields and `items`; returns the items.
fn assert_page(value: &Value) -> &Vec<Value> {
    let mut keys = PAGE.to_vec();
    keys.push("items");
    assert_keys(value, &keys);
    let items = value["items"].as_array().unwrap();
    assert_eq!(value["returned"], items.len(), "{value}");
    assert!(
        value["total"].is_u64() && value["offset"].is_u64(),
        "{value}"
    );
    assert!(value["truncated"].is_boolean(), "{value}");
    assert!(
        value["next_offset"].is_null() || value["next_offset"].is_u64(),
        "{value}"
    );
    items
}

fn assert_task_page(value: &Value) {
    assert_page(value).iter().for_each(assert_task);
}

fn with_page(keys: &[&'static str]) -> Vec<&'static str> {
    let mut all = keys.to_vec();
    all.extend(PAGE);
    all
}

fn assert_keys(value: &Value, keys: &[&str]) {
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("an object: {value}"));
    let mut actual: Vec<&str> = object.keys().map(String::as_str).collect();
    actual.sort_unstable();
    let mut expected = keys.to_vec();
    expected.sort_unstable();
    assert_eq!(actual, expected, "keys of {value:#}");
}

#[test]
fn every_json_output_has_its_documented_shape() {
    let repo = Repo::new();
    let project = repo.json(&[
        "init",
        "--id",
        "web",
        "--name",
        "Web app",
        "--goal",
        "Ship the first public release",
    ]);
    assert_schema(SchemaKind::Project, &project);
    assert_schema(SchemaKind::Project, &repo.json(&["project", "show"]));
    let list = repo.json(&["project", "list"]);
    assert_page(&list)
        .iter()
        .for_each(|p| assert_schema(SchemaKind::Project, p));
    assert_schema(
        SchemaKind::Project,
        &repo.json(&["project", "set-status", "PLANNED"]),
    );

    // `task next` on an empty project is null.
    assert_eq!(repo.json(&["task", "next"]), Value::Null);

    let a = repo.json(&[
        "task",
        "add",
        "First task",
        "--estimate",
        "30",
        "--criterion",
        "it is done",
        "--phase",
        "one",
    ]);
    assert_task(&a);
    let b = repo.json(&[
        "task",
        "add",
        "Second task",
        "--depends",
        "T-001",
        "--tag",
        "x",
    ]);
    assert_task(&b);
    assert_task(&repo.json(&["task", "show", "T-001"]));
    assert_task_page(&repo.json(&["task", "list"]));
    assert_task_page(&repo.json(&["task", "list", "--ready"]));
    assert_task_page(&repo.json(&["task", "ready"]));
    let first = repo.json(&["task", "list", "--limit", "1"]);
    assert_task_page(&first);
    assert_eq!(first["truncated"], true);
    assert_eq!(first["next_offset"], 1);
    assert_task(&repo.json(&["task", "next"]));

    for args in [
        vec!["task", "research", "T-001"],
        vec!["task", "research", "T-001", "--done"],
        vec!["task", "start", "T-001"],
        vec!["task", "validate", "T-001"],
        vec!["task", "complete", "T-001", "--actual", "12"],
        vec!["task", "block", "T-002", "--reason", "waiting on review"],
        vec!["task", "unblock", "T-002"],
        vec!["task", "depend", "T-002", "--on", "T-001", "--remove"],
        vec!["task", "depend", "T-002", "--on", "T-001"],
        vec!["task", "move", "T-002", "--to", "IN_PROGRESS"],
        vec!["task", "reset", "T-002"],
        vec!["task", "edit", "T-002", "--title", "Second task, renamed"],
    ] {
        let task = repo.json(&args);
        assert_task(&task);
        assert_eq!(
            task["id"],
            args[2].to_uppercase(),
            "{args:?} prints the task it changed"
        );
    }

    let decomposed = repo.json(&[
        "task",
        "decompose",
        "T-002",
        "--into",
        "Part one",
        "--into",
        "Part two",
    ]);
    assert_keys(&decomposed, &["parent", "children"]);
    assert_task(&decomposed["parent"]);
    assert_tasks(&decomposed["children"]);
    assert_task(&repo.json(&["task", "cancel", "T-004"]));

    let waves = repo.json(&["task", "waves"]);
    assert_keys(&waves, &with_page(&["waves", "stuck", "first_wave"]));
    assert!(
        waves["waves"].as_array().unwrap().iter().all(|w| w
            .as_array()
            .unwrap()
            .iter()
            .all(Value::is_string))
    );

    let graph = repo.json(&["task", "graph", "--format", "dot"]);
    assert_keys(&graph, &with_page(&["format", "graph"]));
    assert_eq!(graph["format"], "dot");

    let added = repo.json(&["phase", "add", "two", "--name", "Phase two"]);
    assert_keys(&added, &["id", "name", "status"]);
    assert_keys(
        &repo.json(&["phase", "start", "two"]),
        &["id", "name", "status"],
    );
    for p in repo.json(&["phase", "list"]).as_array().unwrap() {
        assert_keys(
            p,
            &["id", "name", "status", "tasks", "complete", "open", "more"],
        );
    }
    let phase = repo.json(&["phase", "complete", "one"]);
    assert_keys(&phase, &["phase", "still_open", "more", "checkpoint"]);
    assert_keys(&phase["phase"], &["id", "name", "status"]);

    let written = repo.json(&["checkpoint", "write"]);
    assert_keys(&written, &["number", "name", "written_at", "size_bytes"]);
    assert_eq!(written["name"], "checkpoint-002");
    let checkpoints = repo.json(&["checkpoint", "list"]);
    for c in assert_page(&checkpoints) {
        assert_keys(c, &["number", "name", "written_at", "size_bytes"]);
    }
    assert_keys(
        &repo.json(&["checkpoint", "restore", "2"]),
        &["restored", "tasks"],
    );

    let log = repo.json(&["log", "--tail", "3"]);
    let entries = assert_page(&log);
    assert_eq!(entries.len(), 3);
    for e in entries {
        assert_keys(e, &["at", "event", "fields"]);
        assert!(e["fields"].is_object());
    }

    let velocity = repo.json(&["velocity"]);
    assert_schema(SchemaKind::Velocity, &velocity);

    let reconcile = repo.json(&["reconcile", "--dry-run"]);
    assert_keys(&reconcile, &["applied", "reconciled", "stale"]);
    assert_eq!(reconcile["applied"], false);
    for change in reconcile["reconciled"].as_array().unwrap() {
        assert_keys(change, &["task", "from", "to", "reason"]);
    }

    let doctor = repo.json(&["doctor"]);
    assert_keys(
        &doctor,
        &with_page(&[
            "clean",
            "scrutiny",
            "findings",
            "damaged",
            "debris",
            "torn_log",
            "unmerged_log",
            "repaired",
            "debris_removed",
            "plan_pointer",
            "git",
        ]),
    );
    assert_eq!(doctor["scrutiny"], "usual");
    assert_eq!(repo.json(&["doctor", "--full"])["scrutiny"], "full");

    let status = repo.json(&["status"]);
    assert_keys(
        &status,
        &[
            "project",
            "name",
            "goal",
            "status",
            "total",
            "leaves_total",
            "leaves_complete",
            "counts",
            "in_progress",
            "claims",
            "blocked",
            "next",
            "phases",
            "current_phase",
            "critical_path",
            "more",
        ],
    );
    assert_keys(
        &status["more"],
        &["in_progress", "claims", "blocked", "critical_path"],
    );
    assert_keys(&status["critical_path"], &["tasks", "remaining_minutes"]);
    assert_keys(
        &status["current_phase"],
        &["id", "name", "status", "tasks", "complete"],
    );
    let counts: Vec<&String> = status["counts"].as_object().unwrap().keys().collect();
    assert_eq!(
        counts,
        [
            "PENDING",
            "IN_RESEARCH",
            "RESEARCHED",
            "IN_PROGRESS",
            "VALIDATING",
            "COMPLETE",
            "BLOCKED",
            "CANCELLED"
        ],
        "every status, in table order"
    );
    for r in status["next"].as_array().unwrap() {
        assert_keys(r, &["id", "title"]);
    }

    let prime = repo.json(&["prime"]);
    assert_keys(&prime, &["prime", "chars"]);
    assert_eq!(
        prime["chars"].as_u64().unwrap() as usize,
        prime["prime"].as_str().unwrap().chars().count()
    );
}

#[test]
fn prime_stays_under_two_thousand_characters_however_large_the_project() {
    let repo = Repo::with_project();
    let mut tasks = Vec::new();
    for i in 0..150 {
        tasks.push(serde_json::json!({
            "id": format!("T-{:03}", i + 1),
            "title": format!("A deliberately long task title number {i} that goes on and on to fill the context budget"),
            "level": "task",
            "status": if i % 3 == 0 { "IN_PROGRESS" } else if i % 7 == 0 { "BLOCKED" } else { "PENDING" },
            "blocked_reason": "waiting on something that takes a while to explain in words",
            "priority": "MEDIUM",
            "dependencies": [],
            "completion_criteria": [],
            "created_at": crate::support::NOW,
        }));
    }
    let doc = serde_json::json!({"version": 1, "project_id": "web", "tasks": tasks});
    std::fs::write(
        repo.tasks_file(),
        serde_json::to_string_pretty(&doc).unwrap(),
    )
    .unwrap();
    let text = repo.ok(&["prime"]);
    assert!(
        text.chars().count() <= 2_000 + 1,
        "{} chars",
        text.chars().count()
    );
    assert!(
        text.contains("more"),
        "cut lists say how many were left out:\n{text}"
    );
}
