//! The filesystem execution-session store: the shared contract (threads and processes), then
//! crashes at every step of every move, and the files' exact shapes on disk.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cairn_domain::execution::context::ExecutionContext;
use cairn_domain::execution::contract;
use cairn_domain::execution::progress::ProgressStatus;
use cairn_domain::execution::store::{
    ExecutionSessionStore, Finale, NewSession, StartPlan, TaskRecord,
};
use cairn_domain::execution::task_log::{Attempts, TaskLog, TaskLogRow, TaskOutcome};
use cairn_domain::execution::{LiveSession, LockFile, Progress, SessionSummary, TaskContext};
use cairn_domain::ports::Fresh;
use cairn_storage_fs::FsExecutionSessionStore;
use cairn_storage_fs::execution_store::write_execution_pointer;
use chrono::{TimeZone, Utc};

mod support;

fn fresh() -> Fresh<dyn ExecutionSessionStore> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FsExecutionSessionStore::new(dir.path());
    Fresh {
        store: Arc::new(store),
        guard: Box::new(dir),
    }
}

cairn_domain::execution_session_store_contract!(fs_contract, fresh);

const OLD: &str = "old-20260205-140000";
const NEW: &str = "new-20260205-150000";
const INTERRUPTED: &str = "interrupted-20260205-150000";

fn at(minute: u32) -> cairn_domain::time::Timestamp {
    Utc.with_ymd_and_hms(2026, 2, 5, 14, minute, 0)
        .single()
        .expect("time")
}

fn new_session(id: &str) -> NewSession {
    NewSession {
        lock: LockFile::new(id, at(0)),
        execution_plan: format!("# Execution Plan\n\nplan of {id}\n"),
        context: ExecutionContext::template(),
        progress: Progress::initial(2, 3, at(0)),
    }
}

fn row(id: &str) -> TaskLogRow {
    TaskLogRow {
        task_id: id.into(),
        subject: format!("Task {id}"),
        status: TaskOutcome::Pass,
        attempts: Attempts { used: 1, max: 3 },
        duration: Some(Duration::from_secs(94)),
        token_usage: Some(1200),
    }
}

async fn start(store: &FsExecutionSessionStore, id: &str, archive: Option<&str>) {
    let plan = StartPlan {
        archive_leftovers_to: archive.map(str::to_owned),
        session: new_session(id),
    };
    store
        .start(Box::new(move |_| Ok(plan)))
        .await
        .expect("start");
}

async fn record(store: &FsExecutionSessionStore, id: &str) {
    store
        .record_task(Box::new(move |live| {
            let mut progress = live.progress.clone().expect("progress");
            progress.status = ProgressStatus::Executing;
            // Marks which record wrote this progress, so a crash test can tell.
            progress.updated = Some(at(id.parse().expect("a numeric task id")));
            Ok(TaskRecord {
                row: row(id),
                progress,
                project_move: None,
            })
        }))
        .await
        .expect("record");
}

async fn finish(store: &FsExecutionSessionStore) {
    store
        .finish(Box::new(|live| {
            let mut progress = live.progress.clone().expect("progress");
            progress.status = ProgressStatus::Complete;
            let log = live.task_log.clone().unwrap_or_default();
            Ok(Finale {
                archive_dir: OLD.into(),
                progress,
                summary: SessionSummary::new(OLD, Some(at(0)), at(30), None, &log),
            })
        }))
        .await
        .expect("finish");
}

/// A live session `OLD` with one logged task and one unmerged task context.
async fn running(root: &Path) -> FsExecutionSessionStore {
    let store = FsExecutionSessionStore::new(root);
    start(&store, OLD, None).await;
    record(&store, "1").await;
    store
        .write_task_context("2", &TaskContext::from_lines(["- learned".to_owned()]))
        .await
        .expect("task context");
    store
}

/// The body of every child process; a no-op in an ordinary run (see `support/mod.rs`).
#[test]
fn child_process_entry() {
    let Some(call) = support::child_call() else {
        return;
    };
    let store = FsExecutionSessionStore::new(&call.dir);
    support::block_on(async {
        match call.role.as_str() {
            "contract-writer" => {
                let (writer, updates) = call.arg.split_once('/').expect("writer/updates");
                contract::concurrency_writer(
                    &store,
                    writer.parse().expect("a writer number"),
                    updates.parse().expect("an update count"),
                )
                .await;
            }
            "start-over-leftovers" => start(&store, NEW, Some(INTERRUPTED)).await,
            "record" => record(&store, "3").await,
            "finish" => finish(&store).await,
            "archive" => {
                store.archive(INTERRUPTED).await.expect("archive");
            }
            "merge" => {
                store
                    .update_context(Box::new(|live| {
                        let mut context = live.context.clone().expect("context");
                        context.known_issues.push("merged".into());
                        Ok(cairn_domain::execution::store::ContextUpdate {
                            context,
                            consumed_task_contexts: vec!["2".into()],
                        })
                    }))
                    .await
                    .expect("merge");
            }
            other => panic!("unknown child role {other}"),
        }
    });
}

/// The contract's concurrency check with a process per writer instead of a thread: the sidecar
/// lock must serialise writers that share nothing but the files.
#[test]
fn fs_contract_processes_lose_no_update() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FsExecutionSessionStore::new(dir.path());
    support::block_on(contract::concurrency_setup(&store));
    let args: Vec<String> = (0..contract::WRITERS)
        .map(|w| format!("{w}/{}", contract::UPDATES))
        .collect();
    support::run_together("contract-writer", dir.path(), &args);
    support::block_on(contract::concurrency_verify(
        &store,
        contract::WRITERS,
        contract::UPDATES,
    ));
}

/// Runs the child `role` with `failpoint` armed; the child must die there (SIGABRT).
fn run_crashing_at(role: &str, root: &Path, failpoint: &str) {
    let output = support::child_command(role, root, "")
        .env(cairn_storage_fs::failpoints::FAILPOINT_ENV, failpoint)
        .output()
        .expect("run the child");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&output.status),
        Some(6),
        "the child must abort at {failpoint}: {}",
        support::describe(&output)
    );
}

/// Where one session's files are after a crash: whole in one place, never split.
#[derive(Debug, PartialEq)]
enum Place {
    Live,
    Archive,
}

/// The session that was live before the crash is whole in exactly one place (the live
/// directory or `archive`), and the other place holds nothing of it.
async fn whole_in_one_place(
    store: &FsExecutionSessionStore,
    before: &LiveSession,
    archive: &str,
    what: &str,
) -> Place {
    let live = store.load().await.expect("load");
    let archived = store.load_archived(archive).await.ok();
    let same = |s: &LiveSession| {
        s.lock == before.lock
            && s.execution_plan == before.execution_plan
            && s.task_log == before.task_log
            && s.task_contexts == before.task_contexts
            && s.context == before.context
    };
    match archived {
        Some(archived) => {
            assert!(
                same(&archived),
                "{what}: the archive holds the session whole"
            );
            assert!(
                live.session_id() != before.session_id(),
                "{what}: nothing of the archived session stays live"
            );
            Place::Archive
        }
        None => {
            assert!(same(&live), "{what}: the live session is whole");
            Place::Live
        }
    }
}

#[test]
fn a_start_over_leftovers_crashing_at_each_step_leaves_old_or_new_whole() {
    for (failpoint, expect) in [
        ("atomic:after-temp-write", Place::Live),
        ("session:after-build", Place::Live),
        ("session:before-archive-rename", Place::Live),
        ("session:after-archive-rename", Place::Archive),
        ("session:before-live-rename", Place::Archive),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = support::block_on(running(dir.path()));
        let before = support::block_on(store.load()).expect("load");
        run_crashing_at("start-over-leftovers", dir.path(), failpoint);
        support::block_on(async {
            let place = whole_in_one_place(&store, &before, INTERRUPTED, failpoint).await;
            assert_eq!(place, expect, "{failpoint}");
            if place == Place::Archive {
                assert!(
                    store.load().await.expect("load").is_empty(),
                    "{failpoint}: the leftovers are archived and nothing else is live"
                );
            }
            // What the crash left is debris or a whole state: the next start goes through.
            let archive = (place == Place::Live).then_some(INTERRUPTED);
            start(&store, NEW, archive).await;
            assert_eq!(store.load().await.expect("load").session_id(), Some(NEW));
            let temp = dir.path().join(".claude/sessions/.session-temp");
            let debris: Vec<_> = std::fs::read_dir(&temp)
                .map(|d| d.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
            assert!(
                debris.iter().all(|p| !p.is_dir()),
                "{failpoint}: no half-built session is left behind: {debris:?}"
            );
        });
    }
}

#[test]
fn a_finish_crashing_at_each_step_keeps_the_session_whole_in_one_place() {
    for (failpoint, expect) in [
        ("session:journal-after-intent", Place::Live),
        ("session:journal-after-first-file", Place::Live),
        ("session:journal-after-files", Place::Live),
        ("session:before-archive-rename", Place::Live),
        ("session:after-archive-rename", Place::Archive),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = support::block_on(running(dir.path()));
        let before = support::block_on(store.load()).expect("load");
        run_crashing_at("finish", dir.path(), failpoint);
        support::block_on(async {
            assert_eq!(
                whole_in_one_place(&store, &before, OLD, failpoint).await,
                expect,
                "{failpoint}"
            );
            if expect == Place::Live {
                let live = store.load().await.expect("load");
                assert_eq!(
                    live.progress.expect("progress").status,
                    ProgressStatus::Complete,
                    "{failpoint}: the final progress stands"
                );
                assert!(live.summary.is_some(), "{failpoint}: with its summary");
            }
            if expect == Place::Archive {
                let archived = store.load_archived(OLD).await.expect("archive");
                assert!(archived.summary.is_some(), "{failpoint}: summary archived");
                assert!(
                    !dir.path()
                        .join(".claude/sessions/__live_session__/.lock")
                        .exists(),
                    "{failpoint}: no lock stays live"
                );
            }
        });
    }
}

#[test]
fn an_archive_crashing_around_the_rename_is_old_or_new() {
    for (failpoint, expect) in [
        ("session:before-archive-rename", Place::Live),
        ("session:after-archive-rename", Place::Archive),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = support::block_on(running(dir.path()));
        let before = support::block_on(store.load()).expect("load");
        run_crashing_at("archive", dir.path(), failpoint);
        support::block_on(async {
            let place = whole_in_one_place(&store, &before, INTERRUPTED, failpoint).await;
            assert_eq!(place, expect, "{failpoint}");
            // A missing live directory reads as empty and the next start recreates it.
            let archive = (place == Place::Live).then_some(INTERRUPTED);
            start(&store, NEW, archive).await;
            assert_eq!(store.load().await.expect("load").session_id(), Some(NEW));
        });
    }
}

/// The failpoints of a multi-file write, in order (see `intent.rs`).
const JOURNAL_STEPS: [&str; 3] = [
    "session:journal-after-intent",
    "session:journal-after-first-file",
    "session:journal-after-files",
];

/// Issue #16: a task's row and the progress that counts it are written through an intent; a
/// crash at any step ends, at the next open, with both, the row once, and nothing else moved.
#[test]
fn a_record_crashing_at_any_step_ends_with_the_row_and_its_progress_together() {
    for failpoint in JOURNAL_STEPS {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = support::block_on(running(dir.path()));
        let log_path = dir
            .path()
            .join(".claude/sessions/__live_session__/task_log.md");
        let old_log = std::fs::read_to_string(&log_path).expect("log");
        run_crashing_at("record", dir.path(), failpoint);
        assert!(
            dir.path().join(".claude/sessions/.cairn-journal").is_file(),
            "{failpoint}: the intent is left for the next open"
        );
        let after = support::block_on(store.load()).expect("load");
        let new_log = std::fs::read_to_string(&log_path).expect("log");
        assert!(
            new_log.starts_with(&old_log),
            "{failpoint}: earlier rows kept"
        );
        let rows = after.task_log.expect("log").rows;
        assert_eq!(rows.last(), Some(&row("3")), "{failpoint}");
        assert_eq!(rows.iter().filter(|r| r.task_id == "3").count(), 1);
        let progress = after.progress.expect("progress");
        assert_eq!(
            progress.updated,
            Some(at(3)),
            "{failpoint}: the progress is the one written with the row"
        );
        assert!(
            !dir.path().join(".claude/sessions/.cairn-journal").exists(),
            "{failpoint}: the open finished the intent"
        );
        assert!(
            after.other_files.is_empty(),
            "{failpoint}: the intent is no file of the session: {:?}",
            after.other_files
        );
    }
}

/// A crash before the intent is durable changes nothing.
#[test]
fn a_record_crashing_before_its_intent_is_durable_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::block_on(running(dir.path()));
    let before = support::block_on(store.load()).expect("load");
    run_crashing_at("record", dir.path(), "atomic:after-temp-fsync");
    assert_eq!(support::block_on(store.load()).expect("load"), before);
}

#[test]
fn a_merge_crashing_at_any_step_ends_with_the_context_merged_and_the_task_file_gone() {
    for failpoint in JOURNAL_STEPS {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = support::block_on(running(dir.path()));
        run_crashing_at("merge", dir.path(), failpoint);
        let after = support::block_on(store.load()).expect("load");
        assert_eq!(
            after.context.expect("context").known_issues,
            ["merged"],
            "{failpoint}: the merged context is written"
        );
        assert!(
            !after.task_contexts.contains_key("2"),
            "{failpoint}: the merged task file is removed with it"
        );
    }
}

#[tokio::test]
async fn the_files_on_disk_have_the_seed_shapes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = running(dir.path()).await;
    let live = dir.path().join(".claude/sessions/__live_session__");
    let read = |name: &str| std::fs::read_to_string(live.join(name)).expect(name);
    assert_eq!(
        read(".lock"),
        "task_execution_id: old-20260205-140000\ntimestamp: 2026-02-05T14:00:00Z\npid: orchestrator\n"
    );
    assert_eq!(
        read("task_log.md"),
        "# Task Execution Log\n\n\
         | Task ID | Subject | Status | Attempts | Duration | Token Usage |\n\
         |---------|---------|--------|----------|----------|-------------|\n\
         | 1 | Task 1 | PASS | 1/3 | 1m 34s | 1200 |\n"
    );
    assert!(live.join("tasks").is_dir(), "tasks/ is created empty");
    assert!(live.join("context-task-2.md").is_file());
    finish(&store).await;
    assert_eq!(
        std::fs::read_dir(&live).expect("live dir").count(),
        0,
        "the live directory is left empty"
    );
    let archive = dir.path().join(".claude/sessions").join(OLD);
    for name in [
        ".lock",
        "execution_plan.md",
        "execution_context.md",
        "task_log.md",
        "progress.md",
        "session_summary.md",
        "context-task-2.md",
    ] {
        assert!(archive.join(name).is_file(), "{name} is archived");
    }
    assert_eq!(
        store.list_archived().await.expect("list"),
        [OLD],
        "the lock and temp entries are not archives"
    );
    let archived = store.load_archived(OLD).await.expect("archive");
    assert_eq!(
        archived.task_log,
        Some(TaskLog {
            rows: vec![row("1")]
        })
    );
}

#[tokio::test]
async fn the_execution_pointer_is_one_line_naming_the_live_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FsExecutionSessionStore::new(dir.path());
    let list = dir.path().join("home/.claude/tasks/web-app");
    let path = write_execution_pointer(&list, &store.live_dir()).expect("pointer");
    assert_eq!(path, list.join("execution_pointer.md"));
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        format!("{}/\n", store.live_dir().display())
    );
    let entries: Vec<_> = std::fs::read_dir(&list)
        .expect("list")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(entries.len(), 1, "no temp file is left: {entries:?}");
}
