//! `cairn import` / `cairn export` through the real binary, on fixtures written from each tool's
//! documented format (see fixtures/import/README.md); Taskwarrior's is made by the real `task`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Repo, code};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/cli/fixtures/import")
        .join(name)
}

/// Every file of the project, by path: "nothing changed" means this is equal.
fn files(repo: &Repo) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if !path.ends_with(".tasks.json.cache") {
                // The read cache is derived from tasks.json: any read may write it.
                out.insert(path.clone(), std::fs::read(&path).expect("read"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&repo.project_dir("web"), &mut out);
    out
}

/// Every file at or under `path` with its modification time.
fn modified_under(path: &Path) -> BTreeMap<PathBuf, std::time::SystemTime> {
    let mut out = BTreeMap::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(
                std::fs::read_dir(&path)
                    .expect("read dir")
                    .flatten()
                    .map(|e| e.path()),
            );
        } else {
            let modified = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .expect("mtime");
            out.insert(path, modified);
        }
    }
    out
}

/// (title, status, parent title, dependency titles) of every task, in file order.
fn shape(repo: &Repo) -> Vec<(String, String, Option<String>, Vec<String>)> {
    let doc = repo.tasks_json();
    let tasks = doc["tasks"].as_array().expect("tasks").clone();
    let title = |id: &Value| {
        tasks
            .iter()
            .find(|t| t["id"] == *id)
            .map(|t| t["title"].as_str().expect("title").to_owned())
    };
    tasks
        .iter()
        .map(|t| {
            (
                t["title"].as_str().expect("title").to_owned(),
                t["status"].as_str().expect("status").to_owned(),
                title(&t["parent_id"]),
                t["dependencies"]
                    .as_array()
                    .expect("deps")
                    .iter()
                    .filter_map(title)
                    .collect(),
            )
        })
        .collect()
}

fn row(
    title: &str,
    status: &str,
    parent: Option<&str>,
    deps: &[&str],
) -> (String, String, Option<String>, Vec<String>) {
    (
        title.to_owned(),
        status.to_owned(),
        parent.map(str::to_owned),
        deps.iter().map(|d| (*d).to_owned()).collect(),
    )
}

/// The checks every format gets: a dry run writes nothing, the import gives `expected`,
/// re-importing changes no byte, and exporting to the format then importing that into a fresh
/// project gives the same tasks.
fn round_trip(
    format: &str,
    path: &Path,
    expected: &[(String, String, Option<String>, Vec<String>)],
) {
    let repo = Repo::with_project();
    let p = path.to_str().expect("utf-8 path");
    let before = files(&repo);
    let dry = repo.json(&["import", format, p, "--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(
        dry["created"].as_array().unwrap().len(),
        expected.len(),
        "{dry}"
    );
    assert_eq!(files(&repo), before, "a dry run writes nothing");

    let report = repo.json(&["import", format, p]);
    assert_eq!(
        report["created"].as_array().unwrap().len(),
        expected.len(),
        "{report}"
    );
    assert_eq!(shape(&repo), expected);
    let listed = repo.ok(&["task", "list", "--all"]);
    for (title, ..) in expected {
        assert!(
            listed.contains(title.as_str()),
            "{title} missing from:\n{listed}"
        );
    }

    let imported = files(&repo);
    let again = repo.json(&["import", format, p]);
    assert_eq!(again["created"], Value::Array(vec![]), "{again}");
    assert_eq!(again["updated"], Value::Array(vec![]), "{again}");
    assert_eq!(files(&repo), imported, "re-importing changes nothing");

    let out = repo.root().join(format!("export-{format}"));
    let o = out.to_str().unwrap();
    repo.ok(&["export", format, o]);
    let written = modified_under(&out);
    std::thread::sleep(std::time::Duration::from_millis(20));
    repo.ok(&["export", format, o]);
    assert_eq!(
        modified_under(&out),
        written,
        "a re-export leaves files that already hold it alone"
    );
    let fresh = Repo::with_project();
    fresh.ok(&["import", format, o]);
    let lossless: Vec<_> = shape(&repo);
    assert_eq!(
        shape(&fresh),
        lossless,
        "{format} export then import keeps the tasks"
    );
}

#[test]
fn taskmaster_tagged_and_legacy() {
    round_trip(
        "taskmaster",
        &fixture("taskmaster-tagged.json"),
        &[
            row("Set up the repository", "COMPLETE", None, &[]),
            row(
                "Build the parser",
                "IN_PROGRESS",
                None,
                &["Set up the repository"],
            ),
            row(
                "Tokenize the input",
                "COMPLETE",
                Some("Build the parser"),
                &[],
            ),
            row(
                "Build the syntax tree",
                "PENDING",
                Some("Build the parser"),
                &["Tokenize the input"],
            ),
            row(
                "Write the documentation",
                "PENDING",
                None,
                &["Build the parser"],
            ),
        ],
    );
    let repo = Repo::with_project();
    let report = repo.json(&[
        "import",
        "taskmaster",
        fixture("taskmaster-tagged.json").to_str().unwrap(),
    ]);
    assert_eq!(
        report["unknown_references"][0]["reference"], "9",
        "{report}"
    );
    let task = &repo.tasks_json()["tasks"][0];
    assert_eq!(task["metadata"]["import"]["source"], "taskmaster");
    assert_eq!(task["metadata"]["import"]["id"], "1");
    assert_eq!(task["priority"], "HIGH");

    round_trip(
        "taskmaster",
        &fixture("taskmaster-legacy.json"),
        &[
            row("Design the schema", "COMPLETE", None, &[]),
            row(
                "Migrate the data",
                "VALIDATING",
                None,
                &["Design the schema"],
            ),
        ],
    );
}

#[test]
fn beads_issues() {
    round_trip(
        "beads",
        &fixture("issues.jsonl"),
        &[
            row("Payments epic", "IN_PROGRESS", None, &[]),
            row("Add the card form", "COMPLETE", Some("Payments epic"), &[]),
            row(
                "Charge the card",
                "IN_PROGRESS",
                Some("Payments epic"),
                &["Add the card form"],
            ),
            row("Send receipts by email", "BLOCKED", None, &[]),
        ],
    );
}

#[test]
fn claude_task_list() {
    round_trip(
        "claude",
        &fixture("claude-list"),
        &[
            row("Read the existing config loader", "COMPLETE", None, &[]),
            row(
                "Add the environment override",
                "IN_PROGRESS",
                None,
                &["Read the existing config loader"],
            ),
            row(
                "Test the override end to end",
                "PENDING",
                None,
                &["Add the environment override"],
            ),
        ],
    );
}

#[test]
fn markdown_checklist() {
    round_trip(
        "markdown",
        &fixture("checklist.md"),
        &[
            row("Ship the release", "IN_PROGRESS", None, &[]),
            row(
                "Build the artifacts",
                "COMPLETE",
                Some("Ship the release"),
                &[],
            ),
            row(
                "Write the release notes",
                "IN_PROGRESS",
                Some("Ship the release"),
                &[],
            ),
            row("Tag the commit", "PENDING", Some("Ship the release"), &[]),
            row("Fix the login bug", "COMPLETE", None, &[]),
            row("Rewrite in another language", "CANCELLED", None, &[]),
        ],
    );
}

/// The fixture comes from the real Taskwarrior (`task`, Debian package `taskwarrior`).
#[test]
fn taskwarrior_export_from_the_real_tool() {
    let scratch = tempfile::tempdir().unwrap();
    let rc = scratch.path().join("taskrc");
    std::fs::write(&rc, "").unwrap();
    let task = |args: &[&str]| {
        let out = Command::new("task")
            .env("TASKRC", &rc)
            .env("TASKDATA", scratch.path().join("data"))
            .arg("rc.confirmation=off")
            .arg("rc.verbose=nothing")
            .args(args)
            .output()
            .expect("Taskwarrior (`task`) is installed; .ci/run installs it");
        assert!(
            out.status.success(),
            "task {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    task(&[
        "add",
        "Write the parser",
        "priority:H",
        "project:cairn",
        "+api",
    ]);
    task(&["add", "Write the docs", "depends:1"]);
    task(&["add", "Drop the old format"]);
    task(&["1", "start"]);
    task(&["3", "delete"]);
    let export = scratch.path().join("tw.json");
    std::fs::write(&export, task(&["export"])).unwrap();

    round_trip(
        "taskwarrior",
        &export,
        &[
            row("Write the parser", "IN_PROGRESS", None, &[]),
            row("Write the docs", "PENDING", None, &["Write the parser"]),
            row("Drop the old format", "CANCELLED", None, &[]),
        ],
    );
    let repo = Repo::with_project();
    repo.ok(&["import", "taskwarrior", export.to_str().unwrap()]);
    let first = &repo.tasks_json()["tasks"][0];
    assert_eq!(first["priority"], "HIGH");
    assert_eq!(first["tags"], serde_json::json!(["project:cairn", "api"]));

    // And back: Taskwarrior itself reads what cairn exports.
    let back = scratch.path().join("back.json");
    repo.ok(&["export", "taskwarrior", back.to_str().unwrap()]);
    let fresh = tempfile::tempdir().unwrap();
    let out = Command::new("task")
        .env("TASKRC", &rc)
        .env("TASKDATA", fresh.path())
        .args(["rc.confirmation=off", "import"])
        .arg(&back)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn export_cairn_then_import_cairn_is_byte_identical() {
    let repo = Repo::with_project();
    repo.ok(&[
        "import",
        "markdown",
        fixture("checklist.md").to_str().unwrap(),
    ]);
    let exported = repo.ok(&["export", "cairn"]);
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(repo.tasks_file()).unwrap()).unwrap();
    let shown: Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(
        shown["tasks"], on_disk["tasks"],
        "export cairn is tasks.json's tasks"
    );
    let file = repo.root().join("backup.json");
    std::fs::write(&file, &exported).unwrap();
    let before = files(&repo);
    repo.ok(&["import", "cairn", file.to_str().unwrap()]);
    assert_eq!(files(&repo), before);

    let fresh = Repo::with_project();
    fresh.ok(&["import", "cairn", file.to_str().unwrap()]);
    assert_eq!(
        fresh.ok(&["export", "cairn"]),
        exported,
        "byte-identical round trip"
    );
}

#[test]
fn garbage_is_refused_naming_where_and_nothing_changes() {
    let repo = Repo::with_project();
    let before = files(&repo);
    let cases: [(&str, &str, &str); 5] = [
        (
            "taskmaster",
            "{\"master\": {\"tasks\": [{\"id\": 1}]}}",
            "master.tasks[0].title",
        ),
        (
            "beads",
            "{\"id\":\"bd-1\",\"title\":\"ok\"}\nnot json\n",
            "line 2",
        ),
        ("taskwarrior", "{\"not\": \"an array\"}", "(top level)"),
        ("markdown", "- [ ] fine\n- [?] what\n", "line 2"),
        ("cairn", "{\"tasks\": [{\"id\": \"T-1\"}]}", "line 1"),
    ];
    for (format, text, at) in cases {
        let file = repo.root().join(format!("bad-{format}"));
        std::fs::write(&file, text).unwrap();
        let run = repo.fails(&["import", format, file.to_str().unwrap()], code::INVALID);
        assert!(run.stderr.contains(at), "{format}: {}", run.stderr);
    }
    repo.fails(&["import", "beads", "no-such-file"], code::NOT_FOUND);
    repo.fails(&["import", "nonsense", "x"], code::USAGE);
    // Read mapped, checked as UTF-8 before any parser sees it.
    let latin1 = repo.root().join("latin1.json");
    std::fs::write(
        &latin1,
        b"{\"master\": {\"tasks\": [{\"id\": 1, \"title\": \"caf\xe9\"}]}}",
    )
    .unwrap();
    let run = repo.fails(
        &["import", "taskmaster", latin1.to_str().unwrap()],
        code::INVALID,
    );
    assert!(run.stderr.contains("utf-8"), "{}", run.stderr);
    assert_eq!(files(&repo), before);
}

/// Dependencies from another tool are added together and the graph checked once; when they close
/// a cycle they are added one by one instead, and exactly the one closing it is refused — the
/// last of the cycle in the file's order — while the rest are kept. Without a cycle all are kept.
#[test]
fn dependencies_that_close_a_cycle_are_refused_one_by_one_and_the_rest_kept() {
    let dir = tempfile::tempdir().unwrap();
    let issue = |id: &str, on: &[&str]| {
        let deps: Vec<String> = on
            .iter()
            .map(|d| format!(r#"{{"issue_id":"{id}","depends_on_id":"{d}","type":"blocks"}}"#))
            .collect();
        format!(
            r#"{{"id":"{id}","title":"Issue {id}","status":"open","dependencies":[{}]}}"#,
            deps.join(",")
        )
    };
    let write = |name: &str, lines: &[String]| {
        let path = dir.path().join(name);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    };
    let cyclic = write(
        "cyclic.jsonl",
        &[
            issue("bd-1", &["bd-3"]),
            issue("bd-2", &["bd-1"]),
            issue("bd-3", &["bd-2"]),
            issue("bd-4", &["bd-1", "bd-3"]),
        ],
    );
    let repo = Repo::with_project();
    let report = repo.json(&["import", "beads", cyclic.to_str().unwrap()]);
    let refused = report["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{report}");
    assert_eq!(refused[0]["key"], "bd-3", "{report}");
    assert!(
        refused[0]["reason"].as_str().unwrap().contains("cycle"),
        "{report}"
    );
    let waits: Vec<(String, Vec<String>)> = shape(&repo)
        .into_iter()
        .map(|(title, _, _, deps)| (title, deps))
        .collect();
    assert_eq!(
        waits,
        [
            ("Issue bd-1".to_owned(), vec!["Issue bd-3".to_owned()]),
            ("Issue bd-2".to_owned(), vec!["Issue bd-1".to_owned()]),
            ("Issue bd-3".to_owned(), vec![]),
            (
                "Issue bd-4".to_owned(),
                vec!["Issue bd-1".to_owned(), "Issue bd-3".to_owned()]
            ),
        ]
    );

    let acyclic = write(
        "acyclic.jsonl",
        &[
            issue("bd-1", &[]),
            issue("bd-2", &["bd-1", "bd-1"]),
            issue("bd-3", &["bd-2", "bd-1"]),
        ],
    );
    let repo = Repo::with_project();
    let report = repo.json(&["import", "beads", acyclic.to_str().unwrap()]);
    assert_eq!(report["refused"].as_array().unwrap().len(), 0, "{report}");
    let deps: Vec<Vec<String>> = shape(&repo).into_iter().map(|(.., d)| d).collect();
    assert_eq!(
        deps,
        [
            vec![],
            vec!["Issue bd-1".to_owned()],
            vec!["Issue bd-2".to_owned(), "Issue bd-1".to_owned()]
        ]
    );
}

/// A status the source gives that takes several moves, refused at a later one, leaves the task
/// as it was: BLOCKED, its reason kept — not half-moved back to PENDING.
#[test]
fn a_status_refused_half_way_leaves_the_task_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, first: &str, second: &str| {
        let path = dir.path().join(name);
        let lines = [
            format!(r#"{{"id":"bd-1","title":"{first}","status":"open"}}"#),
            format!(
                r#"{{"id":"bd-2","title":"Raise the walls","status":"{second}","dependencies":[{{"issue_id":"bd-2","depends_on_id":"bd-1","type":"blocks"}}]}}"#
            ),
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    };
    let repo = Repo::with_project();
    let blocked = write("blocked.jsonl", "Lay the foundation", "blocked");
    let report = repo.json(&["import", "beads", blocked.to_str().unwrap()]);
    assert_eq!(report["refused"].as_array().unwrap().len(), 0, "{report}");
    let walls = |repo: &Repo| repo.tasks_json()["tasks"][1].clone();
    assert_eq!(walls(&repo)["status"], "BLOCKED");
    let before = walls(&repo);

    // BLOCKED → IN_PROGRESS is BLOCKED → PENDING → IN_PROGRESS; the second move waits on bd-1.
    // bd-1's new title makes the import write, half-moved task or not.
    let started = write("started.jsonl", "Lay the foundation first", "in_progress");
    let report = repo.json(&["import", "beads", started.to_str().unwrap()]);
    let refused = report["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{report}");
    assert_eq!(refused[0]["key"], "bd-2", "{report}");
    assert_eq!(walls(&repo), before, "the task as it was, reason and all");
    assert_eq!(
        repo.tasks_json()["tasks"][0]["title"],
        "Lay the foundation first"
    );
}

/// An import of thousands of tasks — more events than a commit renders as it appends; those are
/// rendered beside the write of tasks.json — logs an entry per event, in order, the commit's
/// payload sealed on the last; and the list comes back byte for byte from that log when
/// tasks.json is destroyed, its sealed tasks taken without validating them again.
#[test]
fn a_large_import_is_logged_entry_by_entry_and_rebuilt_whole_from_the_log() {
    const TASKS: usize = 2_500;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.json");
    let tasks: Vec<Value> = (1..=TASKS)
        .map(|i| {
            let dependencies: Vec<usize> = (i > 1).then_some(i - 1).into_iter().collect();
            serde_json::json!({
                "id": i,
                "title": format!("Imported task number {i}"),
                "status": "pending",
                "dependencies": dependencies,
            })
        })
        .collect();
    std::fs::write(&path, serde_json::json!({ "tasks": tasks }).to_string()).unwrap();
    let repo = Repo::with_project();
    repo.ok(&["import", "taskmaster", path.to_str().unwrap()]);

    let log_path = repo.project_dir("web").join("progress/log.md");
    let log = std::fs::read_to_string(&log_path).unwrap();
    let headings: Vec<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter_map(|l| l.split_once(" — ").map(|(_, event)| event))
        .collect();
    let count = |event: &str| headings.iter().filter(|e| **e == event).count();
    assert_eq!(count("TASK_CREATED"), TASKS);
    assert_eq!(count("DEPENDENCY_ADDED"), TASKS - 1);
    let created: Vec<&str> = log
        .split("TASK_CREATED\n- task: ")
        .skip(1)
        .map(|rest| rest.lines().next().unwrap())
        .collect();
    assert_eq!(created.first().copied(), Some("T-001"));
    assert_eq!(created.last().copied(), Some("T-2500"));
    let payloads: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("- replay: "))
        .collect();
    let import = payloads.last().expect("the import's commit");
    assert!(
        import.contains("\"put_sum\":\""),
        "the import's payload is sealed"
    );
    let last_entry = log.trim_end().rsplit("\n\n").next().unwrap();
    assert!(
        last_entry.lines().last().unwrap().starts_with("- replay: "),
        "the payload is on the commit's last entry"
    );

    let tasks_json = repo.tasks_file();
    let written = std::fs::read(&tasks_json).unwrap();
    std::fs::write(&tasks_json, b"").unwrap();
    let next = repo.ok(&["task", "next"]);
    assert!(next.starts_with("T-001 "), "{next}");
    assert_eq!(
        std::fs::read(&tasks_json).unwrap(),
        written,
        "the rebuilt tasks.json is the one the import wrote"
    );
}
