//! The project store in PostgreSQL: chosen by `--store`, `CAIRN_STORE` or `.claude/cairn.toml`,
//! used by every project command exactly like the files, on a real server (a fresh database per
//! test, see `cairn_storage_pg::testkit`).

use cairn_storage_pg::testkit::TestDb;

use crate::support::{INIT_WEB, Repo, code};

fn init(repo: &Repo, env: &[(&str, &str)]) {
    repo.ok_env(INIT_WEB, env);
}

#[test]
fn every_day_commands_work_on_postgres_and_write_no_project_files() {
    let db = TestDb::new();
    let repo = Repo::new();
    let env = [("CAIRN_STORE", db.url.as_str())];
    init(&repo, &env);
    repo.ok_env(&["task", "add", "Design the schema"], &env);
    repo.ok_env(&["task", "add", "Write the migration"], &env);
    let next = repo.ok_env(&["task", "next"], &env);
    assert!(next.contains("Design the schema"), "{next}");
    repo.ok_env(&["task", "start", "T-001"], &env);
    repo.ok_env(&["task", "complete", "T-001"], &env);
    let list = repo.ok_env(&["--json", "task", "list", "--status", "COMPLETE"], &env);
    assert!(list.contains("T-001") && !list.contains("T-002"), "{list}");
    let log = repo.ok_env(&["log"], &env);
    assert!(log.contains("TASK_COMPLETE"), "{log}");
    assert!(
        !repo.root().join(".claude/projects").exists(),
        "the project lives in the database only"
    );
    // The files stay the default: without the variable, there is no project.
    repo.fails(&["task", "list"], code::NOT_FOUND);
}

#[test]
fn the_flag_and_the_config_file_select_the_database_too() {
    let db = TestDb::new();
    let repo = Repo::new();
    init(&repo, &[]);
    repo.ok(&[
        "--store",
        &db.url,
        "init",
        "--id",
        "team",
        "--name",
        "Team",
        "--goal",
        "Work as a team on one store",
    ]);
    std::fs::write(
        repo.root().join(".claude/cairn.toml"),
        format!("# the team's shared store\nstore = \"{}\"\n", db.url),
    )
    .unwrap();
    let listed = repo.ok(&["project", "list"]);
    assert!(
        listed.contains("team") && !listed.contains("web"),
        "{listed}"
    );
}

#[test]
fn an_unreachable_database_is_exit_1_with_a_hint_that_hides_the_password() {
    let repo = Repo::new();
    let run = repo.fails(
        &[
            "--store",
            "postgres://cairn:hunter2@127.0.0.1:1/team",
            "task",
            "list",
        ],
        1,
    );
    assert!(
        run.stderr
            .contains("hint: check that the database at postgres://cairn@127.0.0.1:1/team"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
}

#[test]
fn a_store_that_is_not_a_postgres_url_is_a_usage_error() {
    let repo = Repo::new();
    let run = repo.fails(&["--store", "/srv/team", "task", "list"], code::USAGE);
    assert!(
        run.stderr.contains("not a postgres:// URL"),
        "{}",
        run.stderr
    );
}

/// A project of the files with a history worth keeping: tasks in every state, a checkpoint, a
/// research brief, velocity, a restore, and a log of all of it.
fn files_project_with_history(repo: &Repo) {
    init(repo, &[]);
    repo.ok(&["task", "add", "Design the schema"]);
    repo.ok(&["task", "add", "Write the migration"]);
    repo.ok(&["task", "add", "Backfill"]);
    repo.ok(&["task", "start", "T-001"]);
    repo.ok(&["task", "complete", "T-001"]);
    repo.ok(&["checkpoint", "write"]);
    let brief = repo.root().join("brief.md");
    std::fs::write(&brief, "# Findings\n\nUse COPY, not INSERT.\n").unwrap();
    repo.ok(&["task", "research", "T-002"]);
    repo.ok(&[
        "task",
        "research",
        "T-002",
        "--done",
        "--brief",
        brief.to_str().unwrap(),
    ]);
    repo.ok(&["task", "start", "T-003"]);
    repo.ok(&["checkpoint", "write"]);
    repo.ok(&["velocity"]);
}

/// The store's files of project `id` under `root`, each as the fields it holds: JSON parsed with
/// the filesystem store's own `log_seq` commit marker left out, the log as its entries without
/// the store's `replay` payloads, anything else as text; with each checkpoint's and brief's
/// modification time.
fn fields_of(root: &std::path::Path, id: &str) -> std::collections::BTreeMap<String, String> {
    let dir = root.join(".claude/projects").join(id);
    let mut files = std::collections::BTreeMap::new();
    let mut stack = vec![dir.clone()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            let name = path.strip_prefix(&dir).unwrap().display().to_string();
            if path.is_dir() {
                if name != "temp" {
                    stack.push(path);
                }
                continue;
            }
            if name.starts_with('.') {
                continue; // the lock and the validation stamp: per-machine state
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let fields = if name.ends_with(".json") {
                let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
                value.as_object_mut().unwrap().remove("log_seq");
                value.to_string()
            } else if name.ends_with("log.md") {
                text.split("\n## ")
                    .filter(|entry| !entry.contains("STATE_SAVED"))
                    .map(|entry| {
                        entry
                            .lines()
                            .filter(|l| !l.starts_with("- replay: "))
                            .collect::<Vec<_>>()
                            .join("\n")
                            .trim_end()
                            .to_owned()
                    })
                    .collect::<Vec<_>>()
                    .join("\n## ")
            } else {
                text
            };
            let stamped = if name.starts_with("checkpoints/") || name.starts_with("research/") {
                let modified = entry.metadata().unwrap().modified().unwrap();
                format!("{fields}\nmodified: {modified:?}")
            } else {
                fields
            };
            files.insert(name, stamped);
        }
    }
    files
}

#[test]
fn a_files_project_round_trips_through_the_database_field_for_field() {
    let db = TestDb::new();
    let repo = Repo::new();
    files_project_with_history(&repo);
    let before = fields_of(repo.root(), "web");
    for file in [
        "project.json",
        "tasks.json",
        "progress/log.md",
        "progress/velocity.json",
        "research/T-002.md",
        "checkpoints/checkpoint-001.json",
        "checkpoints/checkpoint-002.json",
    ] {
        assert!(
            before.contains_key(file),
            "{file} missing: {:?}",
            before.keys()
        );
    }

    let store = ["--store", db.url.as_str()];
    let here = repo.root().to_str().unwrap();
    let imported = repo.ok(&[&store[..], &["store", "import", here]].concat());
    assert!(imported.contains("imported 1 project"), "{imported}");
    // The database now serves the project as the files did.
    let list = repo.ok(&[&store[..], &["task", "list"]].concat());
    assert!(list.contains("Backfill"), "{list}");

    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().to_str().unwrap();
    let exported = repo.ok(&[&store[..], &["--json", "store", "export", out_dir]].concat());
    let exported: serde_json::Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(exported["projects"][0]["project"], "web", "{exported}");
    assert_eq!(exported["projects"][0]["checkpoints"], 2, "{exported}");
    assert_eq!(fields_of(out.path(), "web"), before);

    // The exported files are a working store.
    let again = Repo::new();
    let next = crate::support::cairn_command(out.path(), &["task", "next"])
        .output()
        .unwrap();
    assert!(next.status.success(), "{next:?}");
    drop(again);
}

#[test]
fn an_import_over_an_existing_project_is_refused_unless_replace() {
    let db = TestDb::new();
    let repo = Repo::new();
    files_project_with_history(&repo);
    let env = [("CAIRN_STORE", db.url.as_str())];
    let here = repo.root().to_str().unwrap();
    repo.ok_env(&["store", "import", here], &env);
    repo.ok_env(&["task", "add", "Only in the database"], &env);

    let refused = repo.run_env(&["store", "import", here], &env);
    assert_eq!(refused.code, code::ALREADY_EXISTS, "{refused:?}");
    assert!(refused.stderr.contains("--replace"), "{}", refused.stderr);
    let list = repo.ok_env(&["task", "list"], &env);
    assert!(
        list.contains("Only in the database"),
        "nothing changed: {list}"
    );

    repo.ok_env(&["store", "import", here, "--replace"], &env);
    let list = repo.ok_env(&["task", "list"], &env);
    assert!(!list.contains("Only in the database"), "replaced: {list}");

    // An export over a directory that has the project is refused the same way.
    let refused = repo.run_env(&["store", "export", here], &env);
    assert_eq!(refused.code, code::ALREADY_EXISTS, "{refused:?}");
    let missing = repo.run_env(&["store", "import", "/nonexistent/dir"], &env);
    assert_eq!(missing.code, code::NOT_FOUND, "{missing:?}");
}

#[test]
fn migrate_applies_the_schema_once_and_is_a_no_op_on_the_files() {
    let db = TestDb::new();
    let repo = Repo::new();
    let env = [("CAIRN_STORE", db.url.as_str())];
    let first = repo.ok_env(&["--json", "store", "migrate"], &env);
    let first: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["applied"][0]["version"], 1, "{first}");
    assert_eq!(first["applied"][0]["name"], "project_store", "{first}");
    let second = repo.ok_env(&["store", "migrate"], &env);
    assert!(second.contains("nothing to migrate"), "{second}");
    assert!(second.contains("version 1"), "{second}");
    let files = repo.ok(&["store", "migrate"]);
    assert!(files.contains("filesystem store has no schema"), "{files}");
}

#[test]
fn a_client_killed_mid_transaction_leaves_nothing_half_written() {
    let db = TestDb::new();
    let repo = Repo::new();
    let env = [("CAIRN_STORE", db.url.as_str())];
    init(&repo, &env);
    repo.ok_env(&["task", "add", "Before the crash"], &env);
    // The process dies (abort: no destructor, no goodbye to the server) after writing the task
    // row and its log entry, before the commit.
    let killed = repo.run_env(
        &["task", "add", "Half written"],
        &[
            ("CAIRN_STORE", db.url.as_str()),
            ("CAIRN_FAILPOINT", "pg:before-commit"),
        ],
    );
    assert_eq!(killed.code, -1, "killed by a signal: {killed:?}");
    let list = repo.ok_env(&["--json", "task", "list"], &env);
    assert!(!list.contains("Half written"), "{list}");
    let created = repo.ok_env(&["--json", "log", "--event", "TASK_CREATED"], &env);
    assert!(!created.contains("T-002"), "no log entry either: {created}");
    // The next command finds the project's row unlocked and the numbering intact.
    let started = std::time::Instant::now();
    let added = repo.ok_env(&["--json", "task", "add", "After the crash"], &env);
    assert!(added.contains("\"T-002\""), "{added}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let created = repo.ok_env(&["--json", "log", "--event", "TASK_CREATED"], &env);
    assert_eq!(created.matches("TASK_CREATED").count(), 2, "{created}");
}
