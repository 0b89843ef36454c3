//! End-to-end tests of `cairn-hook`: realistic payloads through the real binary, on real project
//! stores on disk, asserting the exact stdout, the exit code, and what changed in the store.
//!
//! `fixtures/<name>.json` are payloads shaped like Claude Code's (Windows-style paths, unknown
//! fields); `expected/<name>.stdout` is what the hook must print for each, byte for byte (an empty
//! file: nothing). Run with `CAIRN_BLESS=1` to rewrite the expected files after a deliberate
//! change, then review the diff.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_domain::project::service::{InitProject, LogQuery, ProjectService};
use cairn_domain::project::tasks::{MoveDetail, NewTask};
use cairn_domain::project::{ProjectId, ProjectStatus, ProjectType, TaskStatus};
use cairn_storage_fs::{FsProjectStore, SystemClock};

mod execution;
mod orchestration;
mod plan;
mod postgres;
mod project_dir;
mod tasklist;

const BIN: &str = env!("CARGO_BIN_EXE_cairn-hook");

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/hook/fixtures")
}

fn expected_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/hook/expected")
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixtures_dir().join(format!("{name}.json")))
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn service(root: &Path) -> ProjectService {
    ProjectService::new(Arc::new(FsProjectStore::new(root)), Arc::new(SystemClock))
}

fn demo() -> ProjectId {
    "demo".parse().unwrap()
}

/// A repository with one project: T-001 in progress (interrupted work), T-002 waiting on it,
/// T-003 blocked, T-004 ready.
struct Repo {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Repo {
    fn bare() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        Self { _dir: dir, root }
    }

    fn with_project() -> Self {
        let repo = Self::bare();
        repo.add_project("demo", true);
        repo
    }

    fn add_project(&self, id: &str, with_tasks: bool) {
        seed(&service(&self.root), id, with_tasks);
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(&self.root)
            .env_remove("CAIRN_PROJECT")
            .env_remove("CAIRN_STORE")
            .env("CLAUDE_PROJECT_DIR", &self.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    fn run(&self, payload: &[u8]) -> Output {
        run_with(self.command(), payload)
    }

    fn status(&self, task: &str) -> TaskStatus {
        let svc = service(&self.root);
        runtime().block_on(async {
            let state = svc.load(&demo()).await.unwrap();
            state.tasks.get(&task.parse().unwrap()).unwrap().status
        })
    }

    /// Log entry kinds, oldest first.
    fn log_kinds(&self) -> Vec<String> {
        let svc = service(&self.root);
        runtime().block_on(async {
            let (records, _) = svc.log(&demo(), &LogQuery::default()).await.unwrap();
            records.into_iter().map(|r| r.kind).collect()
        })
    }

    fn log_count(&self, kind: &str) -> usize {
        self.log_kinds().iter().filter(|k| *k == kind).count()
    }

    fn checkpoints(&self) -> Vec<u32> {
        let svc = service(&self.root);
        runtime().block_on(async {
            svc.checkpoints(&demo())
                .await
                .unwrap()
                .into_iter()
                .map(|c| c.number)
                .collect()
        })
    }

    fn error_log(&self) -> Option<String> {
        std::fs::read_to_string(self.root.join(".claude/cairn/hook-errors.log")).ok()
    }
}

/// Project `id` in `svc`'s store; with tasks: T-001 in progress (interrupted work), T-002
/// waiting on it, T-003 blocked, T-004 ready.
fn seed(svc: &ProjectService, id: &str, with_tasks: bool) {
    runtime().block_on(async {
        let id: ProjectId = id.parse().unwrap();
        svc.init(InitProject {
            id: id.clone(),
            name: "Demo project".into(),
            goal: "Ship the demo feature end to end".into(),
            kind: ProjectType::Software,
        })
        .await
        .unwrap();
        if !with_tasks {
            return;
        }
        let mut design = NewTask::titled("Design the schema");
        design.estimate_minutes = Some(30);
        let t1 = svc.add_task(&id, design).await.unwrap().id;
        let mut store = NewTask::titled("Implement the store");
        store.dependencies = vec![t1.clone()];
        svc.add_task(&id, store).await.unwrap();
        let t3 = svc
            .add_task(&id, NewTask::titled("Write the docs"))
            .await
            .unwrap()
            .id;
        svc.add_task(&id, NewTask::titled("Set up CI"))
            .await
            .unwrap();
        svc.move_task(&id, &t1, TaskStatus::InProgress, MoveDetail::default())
            .await
            .unwrap();
        svc.move_task(
            &id,
            &t3,
            TaskStatus::Blocked,
            MoveDetail {
                actual_minutes: None,
                reason: Some("waiting for the API review".into()),
            },
        )
        .await
        .unwrap();
    });
}

fn run_with(mut cmd: Command, payload: &[u8]) -> Output {
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The hook may stop reading early (oversized input); a broken pipe is its right.
    let _ = stdin.write_all(payload);
    drop(stdin);
    wait_with_deadline(child, Duration::from_secs(30))
}

fn wait_with_deadline(mut child: Child, deadline: Duration) -> Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > deadline {
            let _ = child.kill();
            panic!("cairn-hook still running after {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Exit 0 and a quiet stderr, whatever happened.
fn assert_well_behaved(output: &Output, what: &str) {
    assert_eq!(output.status.code(), Some(0), "{what}: exit code");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "",
        "{what}: stderr must stay empty"
    );
    let out = stdout(output);
    if !out.is_empty() {
        assert!(
            out.ends_with('\n') && out.matches('\n').count() == 1,
            "{what}: one line"
        );
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(value.is_object(), "{what}: one JSON object");
        assert!(!out.contains("\"allow\""), "{what}: never answers allow");
    }
}

fn check_expected(name: &str, actual: &str) {
    let path = expected_dir().join(format!("{name}.stdout"));
    if std::env::var_os("CAIRN_BLESS").is_some() {
        std::fs::create_dir_all(expected_dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with CAIRN_BLESS=1)", path.display()));
    assert_eq!(actual, expected, "stdout of {name}");
}

/// Every fixture, through the binary, against a fresh copy of the demo project.
#[test]
fn every_fixture_prints_exactly_what_is_expected() {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".json").map(str::to_owned)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 20, "fixtures missing: {names:?}");
    for name in names {
        let repo = Repo::with_project();
        let output = repo.run(&fixture(&name));
        assert_well_behaved(&output, &name);
        check_expected(&name, &stdout(&output));
        assert_eq!(repo.error_log(), None, "{name}: no hook error expected");
    }
}

#[test]
fn guarded_writes_are_denied_with_the_documented_shape() {
    let repo = Repo::bare();
    let output = repo.run(&fixture("pre_tool_use_write_tasks_windows"));
    assert_well_behaved(&output, "deny");
    assert_eq!(
        stdout(&output),
        concat!(
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","#,
            r#""permissionDecisionReason":"cairn: `C:\\Users\\dev\\repo\\.claude\\projects\\demo\\tasks.json` "#,
            r#"is cairn's task list and must not be written directly: cairn replaces it atomically under a lock, "#,
            r#"validates it and logs every change. Instead, use `cairn task add|edit|start|complete|block|decompose|depend …` "#,
            r#"(see `cairn task --help`); read it with `cairn prime` or `cairn task next`."}}"#,
            "\n"
        )
    );
}

#[test]
fn session_start_reconciles_interrupted_work_and_gives_the_prime_text() {
    let repo = Repo::with_project();
    assert_eq!(repo.status("T-001"), TaskStatus::InProgress);
    let output = repo.run(&fixture("session_start_startup"));
    assert_well_behaved(&output, "SessionStart");
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let context = value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert_eq!(value["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(context.starts_with("cairn — session start."));
    assert!(context.contains("T-001 IN_PROGRESS → PENDING"), "{context}");
    assert!(context.contains("cairn project `demo`"), "{context}");
    assert!(context.contains("T-003"), "blocked task listed: {context}");
    assert!(context.chars().count() <= 10_000);
    assert_eq!(repo.status("T-001"), TaskStatus::Pending);
    assert_eq!(repo.log_count("SESSION_START"), 1);
}

#[test]
fn after_compaction_in_progress_work_is_kept_and_the_checkpoint_named() {
    let repo = Repo::with_project();
    let output = repo.run(&fixture("pre_compact_auto"));
    assert_well_behaved(&output, "PreCompact");
    assert_eq!(stdout(&output), "");
    assert_eq!(repo.checkpoints(), [1]);
    let kinds = repo.log_kinds();
    assert_eq!(
        kinds[kinds.len() - 2..],
        ["CHECKPOINT_WRITTEN", "SESSION_PRECOMPACT"]
    );
    let output = repo.run(&fixture("session_start_compact"));
    assert_well_behaved(&output, "SessionStart compact");
    let context = stdout(&output);
    assert!(context.contains("context compacted"), "{context}");
    assert!(
        context.contains("checkpoint 1 (`cairn checkpoint restore 1`"),
        "{context}"
    );
    assert_eq!(
        repo.status("T-001"),
        TaskStatus::InProgress,
        "staleness only"
    );
}

/// A compaction keeps the list in a checkpoint: a new one when the list changed since the
/// newest, else that one, named in the log — ten compactions with nothing done between them
/// pushed every older, different checkpoint out of the ten kept.
#[test]
fn a_compaction_with_nothing_changed_names_the_checkpoint_that_holds_the_list() {
    let repo = Repo::with_project();
    let compact = |session: &str| {
        let payload = format!(
            r#"{{"hook_event_name":"PreCompact","session_id":"{session}","trigger":"auto","cwd":"x"}}"#
        );
        assert_well_behaved(&repo.run(payload.as_bytes()), "PreCompact");
    };
    compact("s1");
    compact("s2");
    assert_eq!(repo.checkpoints(), [1]);
    let details = || {
        let svc = service(&repo.root);
        runtime().block_on(async {
            let (records, _) = svc.log(&demo(), &LogQuery::default()).await.unwrap();
            records
                .into_iter()
                .filter(|r| r.kind == "SESSION_PRECOMPACT")
                .map(|r| format!("{:?}", r.fields))
                .collect::<Vec<_>>()
        })
    };
    let seen = details();
    assert!(
        seen[0].contains("checkpoint: 1\"")
            && seen[1].contains("checkpoint: 1 (already the current list)"),
        "{seen:?}"
    );
    runtime()
        .block_on(service(&repo.root).add_task(&demo(), NewTask::titled("A change since")))
        .unwrap();
    compact("s3");
    assert_eq!(repo.checkpoints(), [1, 2]);
    assert_eq!(repo.log_count("CHECKPOINT_WRITTEN"), 2);
}

#[test]
fn logging_events_record_one_entry_each() {
    let repo = Repo::with_project();
    for (name, kind) in [
        ("session_end", "SESSION_END"),
        ("subagent_start", "SESSION_SUBAGENT_START"),
        ("subagent_stop", "SESSION_SUBAGENT_STOP"),
    ] {
        let output = repo.run(&fixture(name));
        assert_well_behaved(&output, name);
        assert_eq!(repo.log_count(kind), 1, "{name}");
    }
    let before = repo.log_kinds().len();
    for name in [
        "stop",
        "post_tool_use_write",
        "user_prompt_submit",
        "notification_unknown_event",
    ] {
        assert_well_behaved(&repo.run(&fixture(name)), name);
    }
    assert_eq!(
        repo.log_kinds().len(),
        before,
        "frequent events are not logged"
    );
}

#[test]
fn the_same_event_twice_acts_once() {
    let repo = Repo::with_project();
    let first = repo.run(&fixture("pre_compact_auto"));
    let second = repo.run(&fixture("pre_compact_auto"));
    assert_well_behaved(&first, "first");
    assert_well_behaved(&second, "second");
    assert_eq!(repo.checkpoints(), [1]);
    assert_eq!(repo.log_count("SESSION_PRECOMPACT"), 1);

    let first = repo.run(&fixture("session_start_startup"));
    let second = repo.run(&fixture("session_start_startup"));
    assert!(!stdout(&first).is_empty());
    assert_eq!(
        stdout(&second),
        "",
        "the first delivery already gave the context"
    );
    assert_eq!(repo.log_count("SESSION_START"), 1);
}

#[test]
fn parallel_hooks_on_one_event_give_one_answer_and_lose_nothing() {
    let repo = Repo::with_project();
    let payload = fixture("session_start_resume");
    let children: Vec<Child> = (0..6)
        .map(|_| {
            let mut child = repo.command().spawn().unwrap();
            child.stdin.take().unwrap().write_all(&payload).unwrap();
            child
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| wait_with_deadline(c, Duration::from_secs(30)))
        .collect();
    for o in &outputs {
        assert_well_behaved(o, "parallel SessionStart");
    }
    let answers = outputs.iter().filter(|o| !o.stdout.is_empty()).count();
    assert_eq!(answers, 1);
    assert_eq!(repo.log_count("SESSION_START"), 1);
    assert_eq!(repo.status("T-001"), TaskStatus::Pending);

    // Different sessions compacting at once, nothing changed between them: one checkpoint holds
    // the list, and the others name it instead of pushing older checkpoints out with copies.
    let children: Vec<Child> = (0..4)
        .map(|i| {
            let payload = format!(
                r#"{{"hook_event_name":"PreCompact","session_id":"s{i}","trigger":"manual","cwd":"x"}}"#
            );
            let mut child = repo.command().spawn().unwrap();
            child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
            child
        })
        .collect();
    for c in children {
        assert_well_behaved(
            &wait_with_deadline(c, Duration::from_secs(30)),
            "parallel PreCompact",
        );
    }
    assert_eq!(repo.checkpoints(), [1]);
    assert_eq!(repo.log_count("SESSION_PRECOMPACT"), 4);
    assert_eq!(repo.error_log(), None);
}

#[test]
fn the_root_comes_from_the_payload_cwd_when_claude_project_dir_is_unset() {
    let repo = Repo::with_project();
    let sub = repo.root.join("src").join("deep");
    std::fs::create_dir_all(&sub).unwrap();
    let payload = serde_json::json!({
        "hook_event_name": "SessionStart", "source": "startup", "session_id": "s", "cwd": sub,
    });
    let mut cmd = repo.command();
    cmd.env_remove("CLAUDE_PROJECT_DIR")
        .current_dir(std::env::temp_dir());
    let output = run_with(cmd, payload.to_string().as_bytes());
    assert_well_behaved(&output, "cwd root");
    assert!(stdout(&output).contains("cairn project `demo`"));
}

#[test]
fn a_repository_without_cairn_gets_silence_and_no_files() {
    let repo = Repo::bare();
    for name in [
        "session_start_startup",
        "pre_compact_auto",
        "session_end",
        "pre_tool_use_write_source",
    ] {
        let output = repo.run(&fixture(name));
        assert_well_behaved(&output, name);
        assert_eq!(stdout(&output), "", "{name}");
    }
    assert!(
        !repo.root.join(".claude").exists(),
        "nothing written into a foreign repo"
    );
    // Malformed input there is not logged either.
    assert_well_behaved(&repo.run(b"{oops"), "malformed");
    assert!(!repo.root.join(".claude").exists());
}

#[test]
fn a_damaged_store_is_reported_to_the_error_log_not_to_claude() {
    let repo = Repo::with_project();
    let project_dir = repo.root.join(".claude/projects/demo");
    std::fs::write(project_dir.join("tasks.json"), "{ this is not json").unwrap();
    std::fs::write(project_dir.join("project.json"), "garbage").unwrap();
    // The log could rebuild both (#16): garbage too, nothing is left to recover from.
    std::fs::write(project_dir.join("progress/log.md"), "garbage").unwrap();
    let output = repo.run(&fixture("session_start_startup"));
    assert_well_behaved(&output, "damaged");
    assert_eq!(stdout(&output), "");
    let log = repo.error_log().expect("the failure is logged");
    assert!(log.contains(" SessionStart: "), "{log}");
}

#[test]
fn several_projects_are_listed_with_how_to_choose_one() {
    let repo = Repo::with_project();
    repo.add_project("other", true);
    // Both have work under way, so both are IN_PROGRESS and neither is picked.
    let output = repo.run(&fixture("session_start_startup"));
    assert_well_behaved(&output, "ambiguous");
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let context = value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.starts_with("cairn — session start."), "{context}");
    for line in [
        "- `demo` Demo project — IN_PROGRESS, 0/4 tasks complete",
        "- `other` Demo project — IN_PROGRESS, 0/4 tasks complete",
        "set CAIRN_PROJECT=demo",
        "`cairn --project demo status`",
        "`cairn --project demo project set-status IN_PROGRESS`",
        "2 projects are IN_PROGRESS now; pause the others (`cairn --project other project set-status PAUSED`)",
    ] {
        assert!(context.contains(line), "{line:?} missing from {context}");
    }
    assert!(repo.error_log().unwrap().contains("CAIRN_PROJECT"));

    // CAIRN_PROJECT picks one.
    let mut cmd = repo.command();
    cmd.env("CAIRN_PROJECT", "other");
    let output = run_with(cmd, &fixture("session_start_clear"));
    assert_well_behaved(&output, "CAIRN_PROJECT");
    assert!(stdout(&output).contains("cairn project `other`"));

    // Doing what the text says works: with `other` paused, `demo` is the only IN_PROGRESS
    // project and is picked by itself, by the hook as by the CLI.
    runtime().block_on(async {
        service(&repo.root)
            .set_project_status(&"other".parse().unwrap(), ProjectStatus::Paused)
            .await
            .unwrap();
    });
    let output = repo.run(&fixture("session_start_resume"));
    assert_well_behaved(&output, "one IN_PROGRESS");
    assert!(stdout(&output).contains("cairn project `demo`"));
}

fn stop_payload(session: &str, active: bool) -> Vec<u8> {
    serde_json::json!({
        "hook_event_name": "Stop", "session_id": session, "cwd": "/x",
        "stop_hook_active": active, "last_assistant_message": "Done.",
    })
    .to_string()
    .into_bytes()
}

fn start_payload(session: &str) -> Vec<u8> {
    serde_json::json!({
        "hook_event_name": "SessionStart", "session_id": session, "source": "startup", "cwd": "/x",
    })
    .to_string()
    .into_bytes()
}

fn start_task(repo: &Repo, task: &str) {
    runtime().block_on(async {
        service(&repo.root)
            .move_task(
                &demo(),
                &task.parse().unwrap(),
                TaskStatus::InProgress,
                MoveDetail::default(),
            )
            .await
            .unwrap();
    });
}

#[test]
fn stop_reminds_of_work_this_session_left_in_progress() {
    let repo = Repo::with_project();
    assert_well_behaved(&repo.run(&start_payload("s1")), "SessionStart");
    // Nothing started in this session yet (T-001 was reconciled at the start): silence.
    let output = repo.run(&stop_payload("s1", false));
    assert_well_behaved(&output, "Stop, nothing open");
    assert_eq!(stdout(&output), "");

    start_task(&repo, "T-004");
    let output = repo.run(&stop_payload("s1", false));
    assert_well_behaved(&output, "Stop, T-004 open");
    assert_eq!(
        stdout(&output),
        concat!(
            r#"{"systemMessage":"cairn: T-004 Set up CI is still IN_PROGRESS — complete it or block it with a reason: "#,
            r#"`cairn task complete T-004` or `cairn task block T-004 --reason \"…\"`."}"#,
            "\n"
        )
    );
    assert!(!stdout(&output).contains("decision"), "never blocks");
    // Every turn may remind again: Stop writes nothing and is not deduplicated.
    assert_eq!(repo.run(&stop_payload("s1", false)).stdout, output.stdout);

    // Claude already continuing because of a Stop hook: silence, so nothing can loop.
    let output = repo.run(&stop_payload("s1", true));
    assert_well_behaved(&output, "stop_hook_active");
    assert_eq!(stdout(&output), "");

    // Another session did not start T-004.
    assert_well_behaved(&repo.run(&start_payload("s2")), "SessionStart s2");
    let output = repo.run(&stop_payload("s2", false));
    assert_eq!(stdout(&output), "", "not started by s2");
    // A session cairn never saw start gets nothing either.
    assert_eq!(stdout(&repo.run(&stop_payload("unknown", false))), "");

    // Two open tasks: listed with the steps for each.
    let repo = Repo::with_project();
    assert_well_behaved(&repo.run(&start_payload("s1")), "SessionStart");
    start_task(&repo, "T-004");
    start_task(&repo, "T-001");
    let text = stdout(&repo.run(&stop_payload("s1", false)));
    assert!(
        text.contains("2 tasks started in this session are still IN_PROGRESS"),
        "{text}"
    );
    assert!(text.contains("T-001 Design the schema: `cairn task complete T-001`"));
    assert_eq!(repo.error_log(), None);
}

#[test]
fn malformed_and_empty_input_exit_quietly_and_are_logged() {
    let repo = Repo::with_project();
    for (payload, logged) in [
        (&b"{\"hook_event_name\": \"PreToolUse\", "[..], "not JSON"),
        (b"", "empty hook input"),
        (b"[1, 2, 3]", "not an object"),
        (b"{\"tool_name\": \"Write\"}", "no hook_event_name"),
        (b"\xff\xfe garbage", "not JSON"),
    ] {
        let output = repo.run(payload);
        assert_well_behaved(&output, logged);
        assert_eq!(stdout(&output), "");
        assert!(repo.error_log().unwrap().contains(logged), "{logged}");
    }
}

#[test]
fn huge_payloads_are_read_up_to_the_cap() {
    let repo = Repo::with_project();
    // 1.5 MiB of tool response: read and handled normally.
    let big = "x".repeat(1536 * 1024);
    let post = serde_json::json!({
        "hook_event_name": "PostToolUse", "session_id": "s", "cwd": "C:\\repo", "tool_name": "Bash",
        "tool_input": {"command": "cat big.log"}, "tool_response": {"stdout": big},
    });
    let output = repo.run(post.to_string().as_bytes());
    assert_well_behaved(&output, "1.5 MiB PostToolUse");
    assert_eq!(stdout(&output), "");
    let write = serde_json::json!({
        "hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/r", "tool_name": "Write",
        "tool_input": {"file_path": "/r/.claude/projects/demo/tasks.json", "content": big},
    });
    let output = repo.run(write.to_string().as_bytes());
    assert_well_behaved(&output, "1.5 MiB PreToolUse");
    assert!(stdout(&output).contains("\"permissionDecision\":\"deny\""));
    assert_eq!(repo.error_log(), None);

    // Past the 4 MiB cap: refused quietly, logged.
    let huge = serde_json::json!({
        "hook_event_name": "PostToolUse", "tool_response": {"stdout": "y".repeat(5 * 1024 * 1024)},
    });
    let output = repo.run(huge.to_string().as_bytes());
    assert_well_behaved(&output, "5 MiB");
    assert_eq!(stdout(&output), "");
    assert!(repo.error_log().unwrap().contains("larger than the cap"));
}

#[test]
fn a_stdin_that_never_closes_does_not_hang_the_hook() {
    let repo = Repo::with_project();
    // Half a payload and then nothing, with the pipe held open.
    let mut child = repo.command().spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(br#"{"hook_event_name": "PreToolUse", "tool_na"#)
        .unwrap();
    stdin.flush().unwrap();
    let started = Instant::now();
    let output = wait_with_deadline(child, Duration::from_secs(15));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_well_behaved(&output, "never closes, incomplete");
    assert_eq!(stdout(&output), "");
    assert!(
        repo.error_log()
            .unwrap()
            .contains("not closed before the read deadline")
    );
    drop(stdin);

    // A complete payload on a pipe left open is still answered.
    let mut child = repo.command().spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(&fixture("pre_tool_use_edit_project_json"))
        .unwrap();
    stdin.flush().unwrap();
    let output = wait_with_deadline(child, Duration::from_secs(15));
    assert_well_behaved(&output, "never closes, complete");
    assert!(stdout(&output).contains("cairn's project record"));
    drop(stdin);
}

/// A writer process piped into the real binary, as a shell pipeline would: it writes `payload`,
/// pauses (so the hook has already read the payload), then writes `trailing_spaces` more bytes.
/// Returns the hook's output and whether the writer finished on its own (not by SIGPIPE/EPIPE).
fn pipe_from_writer(repo: &Repo, payload: &str, trailing_spaces: usize) -> (Output, bool) {
    let script = format!(
        "printf '%s' \"$PAYLOAD\" && sleep 0.3 && head -c {trailing_spaces} /dev/zero | tr '\\000' ' '"
    );
    let mut writer = Command::new("sh")
        .args(["-c", &script])
        .env("PAYLOAD", payload)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut cmd = repo.command();
    cmd.stdin(Stdio::from(writer.stdout.take().unwrap()));
    let hook = cmd.spawn().unwrap();
    // The Command holds its copy of the pipe's read end; only the hook may keep one open.
    drop(cmd);
    let output = wait_with_deadline(hook, Duration::from_secs(30));
    let status = writer.wait().unwrap();
    (output, status.success())
}

#[test]
fn stdin_is_drained_so_a_slow_writer_never_gets_a_broken_pipe() {
    let repo = Repo::with_project();
    let payload = String::from_utf8(fixture("pre_tool_use_edit_project_json")).unwrap();
    // A payload followed, after a pause, by trailing whitespace.
    let (output, writer_ok) = pipe_from_writer(&repo, &payload, 256 * 1024);
    assert_well_behaved(&output, "payload + trailing whitespace");
    assert!(stdout(&output).contains("cairn's project record"));
    assert!(writer_ok, "the writer must not get EPIPE/SIGPIPE");
    // Past the 4 MiB cap: still drained to the end, and decided from what was read (the payload
    // is complete within the cap).
    let (output, writer_ok) = pipe_from_writer(&repo, &payload, 5 * 1024 * 1024);
    assert_well_behaved(&output, "payload + 5 MiB");
    assert!(stdout(&output).contains("cairn's project record"));
    assert!(
        writer_ok,
        "past the cap the writer must not get EPIPE/SIGPIPE either"
    );
    assert_eq!(repo.error_log(), None);
}

#[test]
fn bash_commands_naming_the_store_are_denied_unless_they_read() {
    let repo = Repo::with_project();
    let bash = |command: &str| {
        let payload = serde_json::json!({
            "hook_event_name": "PreToolUse", "session_id": "s", "cwd": repo.root,
            "tool_name": "Bash", "tool_input": {"command": command},
        });
        let output = repo.run(payload.to_string().as_bytes());
        assert_well_behaved(&output, command);
        stdout(&output)
    };
    for command in [
        "rm -rf .claude/projects",
        "python3 -c \"open('.claude/projects/demo/tasks.json','w').write('{}')\"",
        "node -e \"require('fs').writeFileSync('.claude/projects/demo/tasks.json','{}')\"",
    ] {
        let out = bash(command);
        assert!(
            out.contains("\"permissionDecision\":\"deny\""),
            "{command}: {out}"
        );
        assert!(
            out.contains("`cairn "),
            "{command}: the reason names a cairn command"
        );
    }
    assert_eq!(bash("cat .claude/projects/demo/tasks.json | jq ."), "");
    assert_eq!(bash("cairn task start T-004"), "");
    assert!(repo.root.join(".claude/projects/demo/tasks.json").is_file());
}

fn claim(repo: &Repo, task: &str, agent: &str) {
    runtime().block_on(async {
        service(&repo.root)
            .claim(
                &demo(),
                &cairn_domain::project::ClaimTarget::Task(task.parse().unwrap()),
                agent,
                Duration::from_secs(30 * 60),
            )
            .await
            .unwrap();
    });
}

/// A second session starting in the same repository leaves the first one's claimed work alone;
/// the holder's own session (its id is the agent name) resets it on resume.
#[test]
fn session_start_spares_another_sessions_live_claim() {
    let repo = Repo::with_project();
    claim(&repo, "T-004", "session-a");
    assert_well_behaved(&repo.run(&start_payload("session-b")), "SessionStart b");
    assert_eq!(
        repo.status("T-004"),
        TaskStatus::InProgress,
        "a's work kept"
    );
    assert_eq!(
        repo.status("T-001"),
        TaskStatus::Pending,
        "unclaimed work reset"
    );
    assert_well_behaved(&repo.run(&start_payload("session-a")), "SessionStart a");
    assert_eq!(
        repo.status("T-004"),
        TaskStatus::Pending,
        "its own claim reset"
    );
}
