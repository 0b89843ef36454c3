//! Each kind of failure exits with its documented code and says what to do.

use crate::support::{Repo, code};

#[test]
fn usage_errors_exit_2() {
    let repo = Repo::new();
    let run = repo.run(&["task", "frobnicate"]);
    assert_eq!(run.code, code::USAGE);
    let run = repo.run_env(&["status"], &[("CAIRN_NOW", "yesterday")]);
    assert_eq!(run.code, code::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("hint: "), "{}", run.stderr);
}

#[test]
fn not_found_exits_3_with_a_hint() {
    let repo = Repo::with_project();
    let run = repo.fails(&["task", "show", "T-042"], code::NOT_FOUND);
    assert!(run.stderr.contains("T-042"), "{}", run.stderr);
    assert!(
        run.stderr.contains("hint: `cairn task list`"),
        "{}",
        run.stderr
    );
    let empty = Repo::new();
    let run = empty.fails(&["status"], code::NOT_FOUND);
    assert!(run.stderr.contains("cairn init"), "{}", run.stderr);
}

#[test]
fn invalid_input_exits_5_and_writes_nothing() {
    let repo = Repo::with_project();
    let before = std::fs::read(repo.tasks_file()).unwrap();
    repo.fails(&["task", "add", "ab"], code::INVALID);
    repo.fails(
        &["task", "add", "Valid title", "--estimate", "999"],
        code::INVALID,
    );
    repo.fails(
        &["task", "add", "Valid title", "--criterion", "tiny"],
        code::INVALID,
    );
    repo.fails(
        &["task", "add", "Valid title", "--priority", "URGENT"],
        code::INVALID,
    );
    repo.fails(
        &["task", "add", "Valid title", "--phase", "Not Valid"],
        code::INVALID,
    );
    repo.fails(&["task", "show", "banana"], code::INVALID);
    assert_eq!(std::fs::read(repo.tasks_file()).unwrap(), before);
    let bad = Repo::new();
    bad.fails(
        &[
            "init",
            "--id",
            "Bad Id",
            "--name",
            "X",
            "--goal",
            "long enough goal",
        ],
        code::INVALID,
    );
    bad.fails(
        &["init", "--id", "ok", "--name", "X", "--goal", "short"],
        code::INVALID,
    );
}

#[test]
fn an_existing_project_exits_8() {
    let repo = Repo::with_project();
    let run = repo.fails(
        &[
            "init",
            "--id",
            "web",
            "--name",
            "Again",
            "--goal",
            "The same id a second time",
        ],
        code::ALREADY_EXISTS,
    );
    assert!(run.stderr.contains("hint: "), "{}", run.stderr);
}

#[test]
fn a_held_lock_exits_6_after_the_timeout() {
    let repo = Repo::with_project();
    let lock = repo.project_dir("web").join(".lock");
    let _held = cairn_storage_fs::lock::lock_exclusive(&lock, std::time::Duration::from_secs(5))
        .expect("take the project lock");
    let run = repo.run_env(
        &["task", "add", "Blocked by the lock"],
        &[("CAIRN_LOCK_TIMEOUT_MS", "200")],
    );
    assert_eq!(run.code, code::LOCK_TIMEOUT, "{}", run.stderr);
    assert!(run.stderr.contains("hint: retry"), "{}", run.stderr);
}

#[test]
fn a_damaged_file_with_no_checkpoint_exits_7() {
    let repo = Repo::with_project();
    repo.add(&["A task that will be lost"]);
    std::fs::write(repo.tasks_file(), "{\"version\": 1, \"tasks\": [").unwrap();
    // The log could rebuild it (#16): lost too, nothing is left to recover from.
    std::fs::remove_file(repo.tasks_file().with_file_name("progress/log.md")).unwrap();
    let run = repo.fails(&["task", "list"], code::CORRUPT);
    assert!(run.stderr.contains("cairn doctor"), "{}", run.stderr);
}

/// A fresh clone has none of the files git ignores — no `temp/`, no stamps, no read cache —
/// and its first `doctor --full` keeps its verdicts all the same, so the next one does not
/// validate every document again.
#[test]
fn a_full_check_in_a_fresh_clone_keeps_its_verdicts() {
    let repo = Repo::with_project();
    repo.add(&["First task"]);
    repo.ok(&["checkpoint", "write"]);
    repo.add(&["Second task, after the checkpoint"]);
    let dir = repo.tasks_file().with_file_name("");
    for ignored in [
        ".tasks.json.validated",
        ".project.json.validated",
        ".tasks.json.cache",
    ] {
        let _ = std::fs::remove_file(dir.join(ignored));
    }
    let _ = std::fs::remove_file(dir.join(".checkpoints.validated"));
    std::fs::remove_dir_all(dir.join("temp")).unwrap();
    assert_eq!(repo.json(&["doctor", "--full"])["clean"], true);
    let remembered = std::fs::read_to_string(dir.join(".checkpoints.validated"));
    assert!(
        remembered.is_ok_and(|t| t.lines().count() == 2),
        "tasks.json and the checkpoint"
    );
}

/// The usual doctor checks what every read relies on, at the cost of a read: a checkpoint cut
/// short and a torn log are found; a checkpoint whose ends are whole but whose content another
/// tool broke takes `--full`, which validates every file.
#[test]
fn doctor_finds_cut_short_files_and_full_validates_every_checkpoint() {
    let repo = Repo::with_project();
    repo.add(&["First task"]);
    repo.ok(&["checkpoint", "write"]);
    repo.ok(&["checkpoint", "write"]);
    let dir = repo.tasks_file().with_file_name("checkpoints");
    let [first, second] = ["checkpoint-001.json", "checkpoint-002.json"].map(|n| dir.join(n));
    assert_eq!(repo.json(&["doctor"])["clean"], true);
    // A full check remembers the bytes that passed; damage changes them, and is found below.
    assert_eq!(repo.json(&["doctor", "--full"])["clean"], true);
    let remembered = repo.tasks_file().with_file_name(".checkpoints.validated");
    assert!(std::fs::read_to_string(&remembered).is_ok_and(|t| !t.is_empty()));

    let text = std::fs::read_to_string(&first).unwrap();
    std::fs::write(&first, &text[..text.len() / 2]).unwrap();
    let broken =
        std::fs::read_to_string(&second)
            .unwrap()
            .replacen("\"PENDING\"", "\"SOMEDAY\"", 1);
    std::fs::write(&second, broken).unwrap();
    let usual = repo.run(&["doctor"]);
    assert_eq!(
        usual.code,
        code::UNHEALTHY,
        "{}{}",
        usual.stdout,
        usual.stderr
    );
    assert!(
        usual.stdout.contains("checkpoint-001.json: cut short"),
        "{}",
        usual.stdout
    );
    assert!(!usual.stdout.contains("checkpoint-002"), "{}", usual.stdout);
    let full = repo.json_exiting(&["doctor", "--full"], code::UNHEALTHY);
    let damaged: Vec<&str> = full["damaged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert!(
        damaged.len() == 2 && damaged[1].ends_with("checkpoint-002.json"),
        "{full}"
    );
    assert!(
        full["damaged"][1]["detail"]
            .as_str()
            .unwrap()
            .contains("schema"),
        "{full}"
    );

    std::fs::write(&first, &text).unwrap();
    std::fs::write(&second, &text).unwrap();
    let log = repo.tasks_file().with_file_name("progress/log.md");
    let mut torn = std::fs::read_to_string(&log).unwrap();
    torn.push_str("## 2026-11-24T05:00:00Z \u{2014} TASK_COMPLETE\n- task: T-0");
    std::fs::write(&log, torn).unwrap();
    for args in [&["doctor"][..], &["doctor", "--full"]] {
        let report = repo.json_exiting(args, code::UNHEALTHY);
        assert_eq!(
            (report["torn_log"].as_bool(), report["clean"].as_bool()),
            (Some(true), Some(false)),
            "{args:?}: {report}"
        );
    }
}

#[test]
fn doctor_exits_9_on_problems_and_fix_repairs_the_safe_ones() {
    let repo = Repo::with_project();
    repo.add(&["Parent-to-be task"]);
    repo.add(&["Second task"]);
    // Another tool left a dangling dependency behind.
    let mut doc = repo.tasks_json();
    doc["tasks"][1]["dependencies"] = serde_json::json!(["T-077"]);
    std::fs::write(
        repo.tasks_file(),
        serde_json::to_string_pretty(&doc).unwrap(),
    )
    .unwrap();

    let run = repo.run(&["doctor"]);
    assert_eq!(run.code, code::UNHEALTHY, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("dangling-dependency"), "{}", run.stdout);
    assert!(run.stdout.contains("cairn doctor --fix"), "{}", run.stdout);

    let fixed = repo.json(&["doctor", "--fix"]);
    assert_eq!(fixed["clean"], true, "{fixed}");
    assert!(
        fixed["repaired"][0].as_str().unwrap().contains("T-077"),
        "{fixed}"
    );
    let repairs = repo.items(&["log", "--event", "REPAIRED"]);
    assert_eq!(repairs.len(), 1, "each repair is logged: {repairs:?}");
    assert_eq!(repo.run(&["doctor"]).code, code::OK);
}

#[test]
fn completions_print_a_script_without_a_project() {
    let repo = Repo::new();
    let script = repo.ok(&["completions", "bash"]);
    assert!(script.contains("cairn"), "{script}");
}

/// git checks a file out by writing it in place (unlink, create, write): during a `git pull` a
/// command can find tasks.json half written. It waits for the writer and reads what it wrote —
/// never takes the half for damage, rebuilds the list from the log and sets git's file aside.
#[test]
fn a_tasks_json_being_written_in_place_is_waited_for_not_rebuilt() {
    use std::io::Write as _;
    let repo = Repo::with_project();
    repo.add(&["A task from before the pull"]);
    let path = repo.tasks_file();
    // The pulled version: another clone renamed the task.
    let pulled = std::fs::read_to_string(&path)
        .unwrap()
        .replace("A task from before the pull", "Renamed in the other clone");
    std::fs::remove_file(&path).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    let half = pulled.len() / 2;
    file.write_all(&pulled.as_bytes()[..half]).unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(700));
        file.write_all(&pulled.as_bytes()[half..]).unwrap();
        pulled
    });
    // A reader that finds damage takes the lock to recover it: that is where it waits.
    let shown = repo.json(&["task", "show", "T-001"]);
    let pulled = writer.join().unwrap();
    assert_eq!(shown["title"], "Renamed in the other clone");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), pulled);
    assert_eq!(repo.set_aside_files(), Vec::<String>::new());
}

/// An append torn by a crash or a full disk leaves a payload's first bytes at the log's end; it
/// is no commit. Writes after it — the first after another tool's edit, numbered above every
/// commit, among them — are numbered so that a rebuild reaches every one.
#[test]
fn writes_after_a_torn_append_survive_a_rebuild() {
    use std::io::Write as _;
    let repo = Repo::with_project();
    repo.add(&["First task"]);
    repo.ok(&["checkpoint", "write"]);
    repo.add(&["Second task"]);
    let log = repo.project_dir("web").join("progress/log.md");
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    file.write_all(
        "## 2026-01-15T09:30:00Z \u{2014} STATE_SAVED\n- replay: {\"seq\":9,\"base\":{\"tas"
            .as_bytes(),
    )
    .unwrap();
    drop(file);
    // Another tool's edit to project.json: the next write starts a base.
    let project = repo.project_dir("web").join("project.json");
    let text = std::fs::read_to_string(&project).unwrap();
    std::fs::write(&project, text.replacen('{', "{ ", 1)).unwrap();
    repo.add(&["Third task"]);
    repo.add(&["Fourth task"]);
    let before = repo.tasks_json()["tasks"].clone();
    assert_eq!(before.as_array().map(Vec::len), Some(4), "{before}");
    std::fs::write(repo.tasks_file(), "").unwrap();
    repo.ok(&["task", "list"]);
    assert_eq!(repo.tasks_json()["tasks"], before);
}
