//! `cairn session …` end to end: a run through the real binary on a scratch repository and a
//! scratch Claude configuration directory.

use std::process::Stdio;

use crate::support::{Repo, cairn_command, code};

/// Runs `cairn` with the Claude configuration in the scratch repository (never the real `~`).
pub(crate) fn session(repo: &Repo, args: &[&str]) -> crate::support::Run {
    let config = repo.root().join("claude-config");
    let config = config.to_str().expect("utf-8 path");
    repo.run_env(args, &[("CLAUDE_CONFIG_DIR", config)])
}

pub(crate) fn ok(repo: &Repo, args: &[&str]) -> String {
    let run = session(repo, args);
    assert_eq!(
        run.code,
        code::OK,
        "cairn {args:?}\n{}\n{}",
        run.stdout,
        run.stderr
    );
    run.stdout
}

/// Six tasks: T-004..T-006 wait on T-001..T-003, so two waves of three.
pub(crate) fn six_tasks() -> Repo {
    let repo = Repo::with_project();
    for n in 1..=6 {
        repo.add(&[&format!("Task number {n}")]);
    }
    for (task, on) in [("T-004", "T-001"), ("T-005", "T-002"), ("T-006", "T-003")] {
        repo.ok(&["task", "depend", task, "--on", on]);
    }
    repo
}

/// Every file of a session directory, sorted, with its exact text: the golden form of a session.
/// The lock's pid and host and the scratch repository's path are the only things masked.
fn session_files(repo: &Repo, dir: &str) -> String {
    fn walk(dir: &std::path::Path, rel: &str, out: &mut Vec<(String, Option<String>)>) {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .expect("session directory")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let path = dir.join(&name);
            let rel = format!("{rel}{name}");
            if path.is_dir() {
                out.push((format!("{rel}/"), None));
                walk(&path, &format!("{rel}/"), out);
            } else {
                out.push((
                    rel,
                    Some(std::fs::read_to_string(&path).expect("utf-8 file")),
                ));
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &repo.root().join(".claude/sessions").join(dir),
        "",
        &mut files,
    );
    let root = repo.root().display().to_string();
    let mut out = String::new();
    for (name, text) in files {
        out += &format!("==> {name}\n");
        let Some(text) = text else { continue };
        for line in text.split_inclusive('\n') {
            let line = if name == ".lock" && line.starts_with("pid: ") {
                "pid: <pid>\n".to_owned()
            } else if name == ".lock" && line.starts_with("host: ") {
                "host: <host>\n".to_owned()
            } else {
                line.replace(&root, "<repo>")
            };
            out += &line;
        }
        if !text.ends_with('\n') {
            out += "<no newline at end of file>\n";
        }
    }
    out
}

const LIVE: &str = "__live_session__";

fn live(repo: &Repo, name: &str) -> String {
    std::fs::read_to_string(
        repo.root()
            .join(".claude/sessions/__live_session__")
            .join(name),
    )
    .unwrap_or_default()
}

#[test]
fn a_full_run_with_a_failure_and_a_retry_archives_the_session() {
    let repo = six_tasks();
    let started: serde_json::Value = serde_json::from_str(&ok(
        &repo,
        &["--json", "session", "start", "--max-parallel", "3"],
    ))
    .expect("json");
    assert_eq!(started["total_waves"], 2, "{started}");
    insta::assert_snapshot!("session_01_started", session_files(&repo, LIVE));
    let pointer = repo
        .root()
        .join("claude-config/tasks/web/execution_pointer.md");
    insta::assert_snapshot!(
        "session_pointer",
        std::fs::read_to_string(&pointer)
            .expect("the task list is linked")
            .replace(&repo.root().display().to_string(), "<repo>")
    );
    for t in ["T-001", "T-002", "T-003"] {
        ok(&repo, &["session", "task", "start", t]);
    }
    ok(
        &repo,
        &[
            "session",
            "task",
            "done",
            "T-001",
            "--duration",
            "2m34s",
            "--tokens",
            "1200",
        ],
    );
    ok(
        &repo,
        &["session", "task", "fail", "T-002", "--note", "tests red"],
    );
    assert_eq!(
        repo.status_of("T-002"),
        "PENDING",
        "a failure goes back for a retry"
    );
    ok(
        &repo,
        &[
            "session",
            "context",
            "add",
            "--task",
            "T-001",
            "Uses barrel exports",
        ],
    );
    ok(&repo, &["session", "task", "start", "T-002"]);
    ok(
        &repo,
        &["session", "task", "done", "T-002", "--duration", "1m"],
    );
    ok(&repo, &["session", "task", "done", "T-003"]);
    insta::assert_snapshot!("session_02_wave_1_done", session_files(&repo, LIVE));
    ok(&repo, &["session", "wave", "next"]);
    insta::assert_snapshot!("session_03_wave_2_started", session_files(&repo, LIVE));
    for t in ["T-004", "T-005", "T-006"] {
        ok(&repo, &["session", "task", "start", t]);
        ok(&repo, &["session", "task", "done", t]);
    }
    let status = ok(&repo, &["session", "status"]);
    assert!(status.contains("wave 2 of 2"), "{status}");
    ok(&repo, &["session", "finish"]);
    insta::assert_snapshot!(
        "session_04_archived",
        session_files(&repo, "exec-session-20260115-093000")
    );
    for n in 1..=6 {
        assert_eq!(repo.status_of(&format!("T-00{n}")), "COMPLETE");
    }
    let archive = repo
        .root()
        .join(".claude/sessions/exec-session-20260115-093000");
    let log = std::fs::read_to_string(archive.join("task_log.md")).expect("log");
    assert_eq!(
        log.lines().skip(4).take(3).collect::<Vec<_>>(),
        [
            "| 1 | Task number 1 | PASS | 1/3 | 2m 34s | 1200 |",
            "| 2 | Task number 2 | FAIL | 1/3 | N/A | N/A |",
            "| 2 | Task number 2 | PASS | 2/3 | 1m 0s | N/A |",
        ]
    );
    let context = std::fs::read_to_string(archive.join("execution_context.md")).expect("ctx");
    assert!(context.contains("Uses barrel exports"), "{context}");
    assert!(archive.join("session_summary.md").is_file());
    assert_eq!(
        std::fs::read_dir(repo.root().join(".claude/sessions/__live_session__"))
            .expect("live")
            .count(),
        0
    );
    let list = ok(&repo, &["session", "list"]);
    assert!(
        list.contains("exec-session-20260115-093000  finished  6 PASS"),
        "{list}"
    );
}

#[test]
fn a_fresh_lock_refuses_a_second_start_and_changes_nothing() {
    let repo = six_tasks();
    ok(&repo, &["session", "start"]);
    let before = live(&repo, ".lock");
    let run = session(&repo, &["session", "start"]);
    assert_eq!(run.code, code::REFUSED, "{}", run.stderr);
    assert!(
        run.stderr.contains("--force") || run.stderr.contains("forcing"),
        "{}",
        run.stderr
    );
    assert_eq!(
        live(&repo, ".lock"),
        before,
        "the running session's lock is untouched"
    );
    ok(&repo, &["session", "start", "--force"]);
    assert_eq!(
        std::fs::read_dir(repo.root().join(".claude/sessions"))
            .expect("sessions")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("interrupted-"))
            .count(),
        1,
        "the forced-out session is archived as interrupted"
    );
}

#[test]
fn start_links_the_list_the_bridge_resolves_from_settings_and_refuses_a_bad_id() {
    let repo = six_tasks();
    std::fs::write(
        repo.root().join(".claude/settings.json"),
        r#"{"env": {"CLAUDE_CODE_TASK_LIST_ID": "from-settings"}}"#,
    )
    .expect("settings");
    let run = session(&repo, &["session", "start", "--list", "../escape"]);
    assert_eq!(
        run.code,
        code::USAGE,
        "as `tasklist` refuses it: {}",
        run.stderr
    );
    assert!(run.stderr.contains("../escape"), "{}", run.stderr);
    assert!(
        !repo
            .root()
            .join(".claude/sessions/__live_session__/.lock")
            .exists(),
        "a refused list id starts nothing"
    );
    let started: serde_json::Value =
        serde_json::from_str(&ok(&repo, &["--json", "session", "start"])).expect("json");
    assert_eq!(started["list"], "from-settings", "{started}");
    let tasks = repo.root().join("claude-config/tasks");
    assert!(
        tasks.join("from-settings/execution_pointer.md").is_file(),
        "the settings' list is linked"
    );
    assert!(!tasks.join("web").exists(), "not the project's list");
    // The same resolution as the bridge: push writes into the list the session linked.
    ok(&repo, &["tasklist", "push"]);
    assert!(tasks.join("from-settings/1.json").is_file());
}

#[test]
fn task_commands_without_a_session_or_with_bad_input_refuse() {
    let repo = six_tasks();
    let run = session(&repo, &["session", "task", "start", "T-001"]);
    assert_eq!(run.code, code::REFUSED, "{}", run.stderr);
    assert_eq!(repo.status_of("T-001"), "PENDING");
    ok(&repo, &["session", "start"]);
    let run = session(
        &repo,
        &["session", "task", "done", "T-001", "--duration", "soon"],
    );
    assert_eq!(run.code, code::INVALID, "{}", run.stderr);
    let run = session(&repo, &["session", "task", "start", "T-004"]);
    assert_eq!(run.code, code::REFUSED, "unmet dependency: {}", run.stderr);
    assert_eq!(repo.status_of("T-004"), "PENDING");
    assert!(!live(&repo, "progress.md").contains("[4]"));
}

#[test]
fn recovery_after_a_crash_mid_wave_resets_and_completes_the_sessions_tasks() {
    let repo = six_tasks();
    ok(&repo, &["session", "start"]);
    for t in ["T-001", "T-002", "T-003"] {
        ok(&repo, &["session", "task", "start", t]);
    }
    // Dies between the PASS row and the project move, with no cleanup at all.
    let config = repo.root().join("claude-config");
    let out = cairn_command(repo.root(), &["session", "task", "done", "T-001"])
        .env("CLAUDE_CONFIG_DIR", &config)
        .env("CAIRN_FAILPOINT", "session:journal-after-first-file")
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert!(!out.status.success(), "the command died");
    // The row was the commit point: the next command finishes the project move (issue #16).
    assert_eq!(repo.status_of("T-001"), "COMPLETE");
    let run = session(&repo, &["session", "recover"]);
    assert_eq!(
        run.code,
        code::REFUSED,
        "a fresh lock needs --force: {}",
        run.stderr
    );
    let recovered: serde_json::Value =
        serde_json::from_str(&ok(&repo, &["--json", "session", "recover", "--force"]))
            .expect("json");
    assert_eq!(recovered["completed"], serde_json::json!([]), "{recovered}");
    assert_eq!(
        recovered["reset"],
        serde_json::json!(["T-002", "T-003"]),
        "{recovered}"
    );
    assert_eq!(repo.status_of("T-001"), "COMPLETE");
    assert_eq!(repo.status_of("T-002"), "PENDING");
    assert_eq!(repo.status_of("T-003"), "PENDING");
    assert!(
        recovered["archive"]
            .as_str()
            .is_some_and(|a| a.starts_with("interrupted-")),
        "{recovered}"
    );
    assert_eq!(live(&repo, ".lock"), "", "nothing is live any more");
}

#[test]
fn two_racing_starts_exactly_one_wins() {
    let repo = six_tasks();
    let children: Vec<_> = (0..2)
        .map(|_| spawn_quiet(&repo, &["session", "start"]))
        .collect();
    let codes: Vec<i32> = children
        .into_iter()
        .map(|c| {
            c.wait_with_output()
                .expect("wait")
                .status
                .code()
                .unwrap_or(-1)
        })
        .collect();
    let mut sorted = codes.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [code::OK, code::REFUSED], "{codes:?}");
}

/// `cairn args` started in the background, its output discarded.
fn spawn_quiet(repo: &Repo, args: &[&str]) -> std::process::Child {
    cairn_command(repo.root(), args)
        .env("CLAUDE_CONFIG_DIR", repo.root().join("claude-config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn")
}

/// Archives of recovered sessions, by name.
fn interrupted_archives(repo: &Repo) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo.root().join(".claude/sessions"))
        .expect("sessions")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("interrupted-"))
        .collect();
    names.sort();
    names
}

/// After recovery: nothing live, one whole archive, and each of the wave's tasks COMPLETE exactly
/// when the archived log passed it, else PENDING; none left IN_PROGRESS.
fn assert_recovered_whole(repo: &Repo, wave: &[&str]) {
    assert_eq!(live(repo, ".lock"), "", "nothing is live any more");
    let archives = interrupted_archives(repo);
    assert_eq!(archives.len(), 1, "{archives:?}");
    let dir = repo.root().join(".claude/sessions").join(&archives[0]);
    for file in [
        ".lock",
        "execution_plan.md",
        "execution_context.md",
        "progress.md",
    ] {
        assert!(dir.join(file).is_file(), "{file} is in the archive");
    }
    let log = std::fs::read_to_string(dir.join("task_log.md")).expect("task_log.md");
    for task in wave {
        let list_id = task.trim_start_matches("T-").trim_start_matches('0');
        let passed = log
            .lines()
            .any(|l| l.starts_with(&format!("| {list_id} |")) && l.contains("| PASS |"));
        let want = if passed { "COMPLETE" } else { "PENDING" };
        assert_eq!(repo.status_of(task), want, "{task}; log:\n{log}");
    }
}

#[test]
fn a_sigkill_in_the_middle_of_a_wave_then_recover_settles_every_task() {
    let wave = ["T-001", "T-002", "T-003"];
    // Kills land at different points of the three commands: before, inside and after their writes.
    for delay_ms in [0, 10] {
        let repo = six_tasks();
        ok(&repo, &["session", "start"]);
        for t in wave {
            ok(&repo, &["session", "task", "start", t]);
        }
        let children: Vec<_> = [
            ["session", "task", "done", "T-001"],
            ["session", "task", "fail", "T-002"],
            ["session", "task", "done", "T-003"],
        ]
        .iter()
        .map(|args| spawn_quiet(&repo, args))
        .collect();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        for mut child in children {
            let _ = child.kill(); // SIGKILL; it may have finished already
            child.wait().expect("wait");
        }
        let recovered = session(&repo, &["--json", "session", "recover", "--force"]);
        assert_eq!(recovered.code, code::OK, "{}", recovered.stderr);
        assert_recovered_whole(&repo, &wave);
        for t in ["T-004", "T-005", "T-006"] {
            assert_eq!(repo.status_of(t), "PENDING", "{t} was never started");
        }
        // The repository is usable: a new session starts over what is left.
        ok(&repo, &["session", "start"]);
    }
}

#[test]
fn a_kill_inside_recover_is_finished_by_the_next_recover_or_start() {
    for failpoint in [
        "session:before-archive-rename",
        "session:after-archive-rename",
    ] {
        let repo = six_tasks();
        ok(&repo, &["session", "start"]);
        for t in ["T-001", "T-002"] {
            ok(&repo, &["session", "task", "start", t]);
        }
        ok(&repo, &["session", "task", "done", "T-001"]);
        let out = cairn_command(repo.root(), &["session", "recover", "--force"])
            .env("CLAUDE_CONFIG_DIR", repo.root().join("claude-config"))
            .env("CAIRN_FAILPOINT", failpoint)
            .stdin(Stdio::null())
            .output()
            .expect("run");
        assert!(!out.status.success(), "recover died at {failpoint}");
        // The project side is settled before the move, so no task is left under way with no
        // session to recover it from.
        assert_eq!(repo.status_of("T-002"), "PENDING", "{failpoint}");
        let again = session(&repo, &["--json", "session", "recover", "--force"]);
        assert_eq!(again.code, code::OK, "{failpoint}: {}", again.stderr);
        assert_recovered_whole(&repo, &["T-001", "T-002", "T-003"]);
        ok(&repo, &["session", "start"]);
    }
}
