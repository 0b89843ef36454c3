//! The contract every [`ExecutionSessionStore`] adapter must honour, as executable checks. Each
//! check is a `pub async fn` taking a fresh, empty store; an adapter's tests turn every one into
//! its own `#[test]` with [`execution_session_store_contract!`](crate::execution_session_store_contract).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::TimeZone;

use super::context::{ExecutionContext, TaskContext};
use super::lock::LockFile;
use super::progress::{ActiveTask, Progress, ProgressStatus};
use super::state::{LiveSession, SessionSummary};
use super::store::{
    ContextUpdate, ExecutionSessionStore, Finale, NewSession, StartPlan, TaskRecord,
};
use super::task_log::{Attempts, TaskLog, TaskLogRow, TaskOutcome};
use crate::error::{DomainError, Entity, Error, StoreError};
use crate::ports::{AsStoreError, on_threads};
use crate::time::Timestamp;

fn at(minute: u32) -> Timestamp {
    chrono::Utc
        .with_ymd_and_hms(2026, 2, 5, 14, minute, 0)
        .unwrap()
}

fn new_session(id: &str, minute: u32) -> NewSession {
    let mut context = ExecutionContext::template();
    context.project_patterns.push(format!("pattern of {id}"));
    NewSession {
        lock: LockFile::new(id, at(minute)),
        execution_plan: format!("# Execution Plan\n\nplan of {id}\n"),
        context,
        progress: Progress::initial(3, 2, at(minute)),
    }
}

fn row(id: &str, subject: &str) -> TaskLogRow {
    TaskLogRow {
        task_id: id.into(),
        subject: subject.into(),
        status: TaskOutcome::Pass,
        attempts: Attempts { used: 1, max: 3 },
        duration: Some(Duration::from_secs(154)),
        token_usage: None,
    }
}

/// A task's report of loose lines, as an executor without section headings writes it.
fn report(text: &str) -> TaskContext {
    TaskContext::from_lines(text.lines())
}

fn summary(id: &str) -> SessionSummary {
    SessionSummary::new(
        id,
        Some(at(0)),
        at(30),
        None,
        &TaskLog {
            rows: vec![row("1", "One")],
        },
    )
}

fn refusal() -> DomainError {
    DomainError::invalid("contract", "refused on purpose")
}

fn is_not_found<T, E: AsStoreError>(result: &Result<T, E>) -> bool {
    matches!(
        result.as_ref().err().and_then(AsStoreError::as_store_error),
        Some(StoreError::NotFound {
            entity: Entity::ExecutionSession | Entity::ExecutionArchive,
            ..
        })
    )
}

fn is_already_exists<T, E: AsStoreError>(result: &Result<T, E>) -> bool {
    matches!(
        result.as_ref().err().and_then(AsStoreError::as_store_error),
        Some(StoreError::AlreadyExists { .. })
    )
}

fn is_invalid<T, E: AsStoreError>(result: &Result<T, E>) -> bool {
    matches!(
        result.as_ref().err().and_then(AsStoreError::as_store_error),
        Some(StoreError::Invalid { .. })
    )
}

async fn start(
    store: &dyn ExecutionSessionStore,
    id: &str,
    archive: Option<&str>,
) -> Result<LiveSession, Error> {
    let plan = StartPlan {
        archive_leftovers_to: archive.map(str::to_owned),
        session: new_session(id, 0),
    };
    store
        .start(Box::new(move |_| Ok(plan)))
        .await
        .map(|s| s.previous)
}

/// Generates one `#[test]` per check of this suite, in a module `$name`, each on a fresh store
/// from `$fresh` (a `fn() -> Fresh<dyn ExecutionSessionStore>` in scope).
#[macro_export]
macro_rules! execution_session_store_contract {
    ($name:ident, $fresh:ident) => {
        $crate::contract_tests!($name, $fresh; execution;
            empty_store_has_no_session,
            start_writes_the_new_session,
            refused_start_writes_nothing,
            start_never_overwrites_leftovers,
            start_archives_leftovers_when_told,
            progress_updates_are_read_modify_write,
            task_records_append_in_order,
            project_moves_are_recorded_with_the_session_write,
            context_update_consumes_only_named_task_contexts,
            finish_moves_everything_and_empties_live,
            finish_refuses_an_existing_archive,
            archive_live_moves_leftovers,
            archive_if_decides_under_the_lock,
            unsafe_names_are_refused,
            concurrent_updates_are_not_lost,
        );
    };
}

pub async fn empty_store_has_no_session(store: Arc<dyn ExecutionSessionStore>) {
    let store: &dyn ExecutionSessionStore = &*store;
    assert!(
        store.load().await.unwrap().is_empty(),
        "a fresh store must have an empty live session"
    );
    assert!(
        store.list_archived().await.unwrap().is_empty(),
        "a fresh store must have no archives"
    );
    assert!(
        is_not_found(&store.load_archived("nope-20260101-000000").await),
        "reading a missing archive must be NotFound"
    );
    assert!(
        is_not_found(&store.update_progress(Box::new(|_| Err(refusal()))).await),
        "update_progress without a live session must be NotFound"
    );
    assert!(
        is_not_found(&store.record_task(Box::new(|_| Err(refusal()))).await),
        "record_task without a live session must be NotFound"
    );
    assert!(
        is_not_found(&store.update_context(Box::new(|_| Err(refusal()))).await),
        "update_context without a live session must be NotFound"
    );
    assert!(
        is_not_found(&store.finish(Box::new(|_| Err(refusal()))).await),
        "finish without a live session must be NotFound"
    );
    assert!(
        is_not_found(&store.write_task_context("1", &report("x")).await),
        "write_task_context without a live session must be NotFound"
    );
    assert!(
        !store.archive("interrupted-20260101-000000").await.unwrap(),
        "archiving an empty live dir moves nothing"
    );
    assert!(
        store.list_archived().await.unwrap().is_empty(),
        "archiving an empty live dir must not create an archive"
    );
}

pub async fn start_writes_the_new_session(store: Arc<dyn ExecutionSessionStore>) {
    let store: &dyn ExecutionSessionStore = &*store;
    let previous = start(store, "s-20260205-140000", None)
        .await
        .expect("start on an empty store");
    assert!(
        previous.is_empty(),
        "start must report the (empty) previous live session"
    );
    let live = store.load().await.unwrap();
    let expected = new_session("s-20260205-140000", 0);
    assert_eq!(
        live.lock.as_ref(),
        Some(&expected.lock),
        "start must write the lock"
    );
    assert_eq!(
        live.execution_plan.as_ref(),
        Some(&expected.execution_plan),
        "start must write the plan"
    );
    assert_eq!(
        live.context.as_ref(),
        Some(&expected.context),
        "start must write the context"
    );
    assert_eq!(
        live.progress.as_ref(),
        Some(&expected.progress),
        "start must write the progress"
    );
    assert_eq!(
        live.task_log.as_ref().map(|l| l.rows.len()),
        Some(0),
        "start must write a header-only task log"
    );
    assert!(
        live.task_contexts.is_empty() && live.summary.is_none(),
        "start must write nothing else"
    );
}

pub async fn refused_start_writes_nothing(store: Arc<dyn ExecutionSessionStore>) {
    let store: &dyn ExecutionSessionStore = &*store;
    let result = store.start(Box::new(|live| {
        assert!(live.is_empty(), "the decision must see the live session");
        Err(refusal())
    }));
    assert!(
        matches!(result.await, Err(Error::Domain(e)) if e == refusal()),
        "a refused start must return the refusal"
    );
    assert!(
        store.load().await.unwrap().is_empty(),
        "a refused start must write nothing"
    );
}

pub async fn start_never_overwrites_leftovers(store: Arc<dyn ExecutionSessionStore>) {
    let store: &dyn ExecutionSessionStore = &*store;
    start(store, "old-20260205-140000", None).await.unwrap();
    let before = store.load().await.unwrap();
    assert!(
        is_already_exists(&start(store, "new-20260205-150000", None).await),
        "start over leftovers without an archive must be AlreadyExists"
    );
    assert_eq!(
        store.load().await.unwrap(),
        before,
        "a start refused for leftovers must change nothing"
    );
    store.archive("interrupted-20260205-150000").await.unwrap();
    start(store, "old-20260205-140000", None).await.unwrap();
    assert!(
        is_already_exists(
            &start(
                store,
                "new-20260205-150000",
                Some("interrupted-20260205-150000")
            )
            .await
        ),
        "archiving leftovers onto an existing archive must be AlreadyExists"
    );
    assert_eq!(
        store.load().await.unwrap(),
        before,
        "a start refused for its archive must change nothing"
    );
}

pub async fn start_archives_leftovers_when_told(store: Arc<dyn ExecutionSessionStore>) {
    let store: &dyn ExecutionSessionStore = &*store;
    start(store, "old-20260205-140000", None).await.unwrap();
    store
        .write_task_context("4", &report("- learned\n"))
        .await
        .unwrap();
    let before = store.load().await.unwrap();
    let previous = store
        .start(Box::new(|live| {
            assert_eq!(
                live.session_id(),
                Some("old-20260205-140000"),
                "the decision must see the leftovers"
            );
            Ok(StartPlan {
                archive_leftovers_to: Some("interrupted-20260205-150000".into()),
                session: new_session("new-20260205-150000", 0),
            })
        }))
        .await
        .expect("start archiving leftovers")
        .previous;
    assert_eq!(
        previous, before,
        "start must report the leftovers it archived"
    );
    assert_eq!(
        store
            .load_archived("interrupted-20260205-150000")
            .await
            .unwrap(),
        before,
        "the archive must hold the leftovers unchanged"
    );
    let live = store.load().await.unwrap();
    assert_eq!(
        live.session_id(),
        Some("new-20260205-150000"),
        "the new session must be live"
    );
    assert!(
        live.task_contexts.is_empty(),
        "no leftover may stay in the new live session"
    );
    assert_eq!(
        store.list_archived().await.unwrap(),
        ["interrupted-20260205-150000"],
        "exactly one archive must exist"
    );
}

pub async fn progress_updates_are_read_modify_write(store: Arc<dyn ExecutionSessionStore>) {
    let store: &dyn ExecutionSessionStore = &*store;
    start(store, "s-20260205-140000", None).await.unwrap();
    let written = store
        .update_progress(Box::new(|live| {
            let mut progress = live
                .progress
                .clone()
                .expect("the decision must see the progress");
            progress.status = ProgressStatus::Executing;
            progress.active.push(ActiveTask {
                id: "1".into(),
                subject: "One".into(),
                phase: "Phase 1".into(),
            });
            Ok(progress)
        }))
        .await
        .unwrap();
    assert_eq!(
        store.load().await.unwrap().progress,
        Some(written.clone()),
        "update_progress must persist what it returns"
    );
    assert!(
        store
            .update_progress(Box::new(|_| Err(refusal())))
            .await
            .is_err(),
        "a refused update must fail"
    );
    assert_eq!(
        store.load().await.unwrap().progress,
        Some(written),
        "a refused update must change nothing"
    );
}

pub async fn task_records_append_in_order(store: Arc<dyn ExecutionSessionStore>) {
    let store: &dyn ExecutionSessionStore = &*store;
    start(store, "s-20260205-140000", None).await.unwrap();
    for (id, subject) in [("2", "Two | with pipe"), ("1", "One"), ("2", "Two again")] {
        store
            .record_task(Box::new(move |live| {
                let mut progress = live.progress.clone().unwrap();
                progress.max_parallel = Some(progress.max_parallel.unwrap_or(0) + 1);
                Ok(TaskRecord {
                    row: row(id, subject),
                    progress,
                    project_move: None,
                })
            }))
            .await
            .unwrap();
    }
    assert!(
        store
            .record_task(Box::new(|_| Err(refusal())))
            .await
            .is_err(),
        "a refused record must fail"
    );
    let live = store.load().await.unwrap();
    let rows: Vec<_> = live
        .task_log
        .unwrap()
        .rows
        .into_iter()
        .map(|r| (r.task_id, r.subject))
        .collect();
    assert_eq!(
        rows,
        [
            ("2".into(), "Two | with pipe".into()),
            ("1".into(), "One".into()),
            ("2".into(), "Two again".into())
        ],
        "task log rows must be appended in order, never rewritten, and survive a `|` in the subject"
    );
    assert_eq!(
        live.progress.unwrap().max_parallel,
        Some(5),
        "each record must write its progress on top of the previous"
    );
}

fn project_move(task: &str, to: crate::project::TaskStatus) -> super::store::ProjectMove {
    super::store::ProjectMove {
        project: "demo".parse().unwrap(),
        task: task.parse().unwrap(),
        session: "s-20260205-140000".into(),
        before: format!("{{\"id\":\"{task}\"}}"),
        steps: vec![super::store::MoveStep {
            to,
            actual_minutes: Some(3),
            reason: Some("why".into()),
        }],
    }
}

pub async fn project_moves_are_recorded_with_the_session_write(
    store: Arc<dyn ExecutionSessionStore>,
) {
    use crate::project::TaskStatus;
    let store: &dyn ExecutionSessionStore = &*store;
    assert_eq!(store.project_moves().await.unwrap(), []);
    start(store, "s-20260205-140000", None).await.unwrap();
    let done = project_move("T-001", TaskStatus::Complete);
    let skipped = project_move("T-002", TaskStatus::Pending);
    let moving = done.clone();
    store
        .record_task(Box::new(move |live| {
            Ok(TaskRecord {
                row: row("1", "One"),
                progress: live.progress.clone().unwrap(),
                project_move: Some(moving),
            })
        }))
        .await
        .unwrap();
    assert!(
        store
            .update_progress_moving(Box::new(|_| Err(refusal())), skipped.clone())
            .await
            .is_err()
    );
    assert_eq!(
        store.project_moves().await.unwrap(),
        vec![done.clone()],
        "a refused update records no move"
    );
    store
        .update_progress_moving(
            Box::new(|live| Ok(live.progress.clone().unwrap())),
            skipped.clone(),
        )
        .await
        .unwrap();
    assert_eq!(
        store.project_moves().await.unwrap(),
        [done.clone(), skipped.clone()]
    );
    store.forget_project_move(&done).await.unwrap();
    store.forget_project_move(&done).await.unwrap();
    assert_eq!(
        store.project_moves().await.unwrap(),
        vec![skipped.clone()],
        "forgetting one move keeps the others"
    );
    store.forget_project_move(&skipped).await.unwrap();
    assert_eq!(store.project_moves().await.unwrap(), []);
}

pub async fn context_update_consumes_only_named_task_contexts(
    store: Arc<dyn ExecutionSessionStore>,
) {
    let store: &dyn ExecutionSessionStore = &*store;
    start(store, "s-20260205-140000", None).await.unwrap();
    store
        .write_task_context("1", &report("- one\n"))
        .await
        .unwrap();
    store
        .write_task_context("2", &report("- two\n"))
        .await
        .unwrap();
    store
        .write_task_context("2", &report("- two, rewritten\n"))
        .await
        .unwrap();
    let live = store.load().await.unwrap();
    assert_eq!(
        live.task_contexts,
        BTreeMap::from([
            ("1".to_owned(), report("- one\n")),
            ("2".to_owned(), report("- two, rewritten\n"))
        ]),
        "per-task contexts must be stored by id, a rewrite replacing the file"
    );
    assert!(
        store
            .update_context(Box::new(|_| Err(refusal())))
            .await
            .is_err(),
        "a refused context update must fail"
    );
    assert_eq!(
        store.load().await.unwrap(),
        live,
        "a refused context update must change nothing"
    );
    let update = store
        .update_context(Box::new(|live| {
            let mut context = live.context.clone().unwrap();
            context.known_issues.push("merged".into());
            Ok(ContextUpdate {
                context,
                consumed_task_contexts: vec!["1".into()],
            })
        }))
        .await
        .unwrap();
    let live = store.load().await.unwrap();
    assert_eq!(
        live.context,
        Some(update.context),
        "update_context must persist the context"
    );
    assert_eq!(
        live.task_contexts.keys().collect::<Vec<_>>(),
        ["2"],
        "only the named per-task contexts may be deleted"
    );
}

pub async fn finish_moves_everything_and_empties_live(store: Arc<dyn ExecutionSessionStore>) {
    let store: &dyn ExecutionSessionStore = &*store;
    start(store, "s-20260205-140000", None).await.unwrap();
    store
        .record_task(Box::new(|live| {
            Ok(TaskRecord {
                row: row("1", "One"),
                progress: live.progress.clone().unwrap(),
                project_move: None,
            })
        }))
        .await
        .unwrap();
    store
        .write_task_context("9", &report("- late\n"))
        .await
        .unwrap();
    let before = store.load().await.unwrap();
    assert!(
        store.finish(Box::new(|_| Err(refusal()))).await.is_err(),
        "a refused finish must fail"
    );
    assert_eq!(
        store.load().await.unwrap(),
        before,
        "a refused finish must change nothing"
    );
    let finale = store
        .finish(Box::new(|live| {
            let mut progress = live.progress.clone().unwrap();
            progress.status = ProgressStatus::Complete;
            Ok(Finale {
                archive_dir: "s-20260205-140000".into(),
                progress,
                summary: summary("s-20260205-140000"),
            })
        }))
        .await
        .unwrap();
    assert!(
        store.load().await.unwrap().is_empty(),
        "finish must leave the live session empty"
    );
    let archived = store.load_archived("s-20260205-140000").await.unwrap();
    assert_eq!(
        archived.progress,
        Some(finale.progress),
        "the archive must hold the final progress"
    );
    assert_eq!(
        archived.summary,
        Some(summary("s-20260205-140000")),
        "the archive must hold the summary"
    );
    assert_eq!(
        archived.lock, before.lock,
        "the lock must be archived with the rest"
    );
    assert_eq!(
        archived.task_log, before.task_log,
        "the task log must be archived"
    );
    assert_eq!(
        archived.task_contexts, before.task_contexts,
        "unmerged per-task contexts must be archived, not lost"
    );
    assert_eq!(
        archived.execution_plan, before.execution_plan,
        "the plan must be archived"
    );
}

pub async fn finish_refuses_an_existing_archive(store: Arc<dyn ExecutionSessionStore>) {
    let store: &dyn ExecutionSessionStore = &*store;
    start(store, "s-20260205-140000", None).await.unwrap();
    store.archive("s-20260205-140000").await.unwrap();
    start(store, "s-20260205-140000", None).await.unwrap();
    let before = store.load().await.unwrap();
    let result = store
        .finish(Box::new(|live| {
            Ok(Finale {
                archive_dir: "s-20260205-140000".into(),
                progress: live.progress.clone().unwrap(),
                summary: summary("s-20260205-140000"),
            })
        }))
        .await;
    assert!(
        is_already_exists(&result),
        "finishing onto an existing archive must be AlreadyExists"
    );
    assert_eq!(
        store.load().await.unwrap(),
        before,
        "a finish refused for its archive must change nothing"
    );
}

pub async fn archive_live_moves_leftovers(store: Arc<dyn ExecutionSessionStore>) {
    let store: &dyn ExecutionSessionStore = &*store;
    start(store, "s-20260205-140000", None).await.unwrap();
    let before = store.load().await.unwrap();
    assert!(
        store.archive("interrupted-20260205-150000").await.unwrap(),
        "archiving leftovers must report a move"
    );
    assert!(
        store.load().await.unwrap().is_empty(),
        "archive must empty the live session"
    );
    assert_eq!(
        store
            .load_archived("interrupted-20260205-150000")
            .await
            .unwrap(),
        before,
        "archive must keep the content"
    );
    start(store, "t-20260205-150000", None).await.unwrap();
    assert!(
        is_already_exists(&store.archive("interrupted-20260205-150000").await),
        "archive onto an existing archive must be AlreadyExists"
    );
    list_archives_is_sorted(store).await;
}

pub async fn archive_if_decides_under_the_lock(store: Arc<dyn ExecutionSessionStore>) {
    let store: &dyn ExecutionSessionStore = &*store;
    start(store, "s-20260205-140000", None).await.unwrap();
    let before = store.load().await.unwrap();
    let refused = store
        .archive_if(
            "interrupted-20260205-150000",
            Box::new(|live| {
                assert_eq!(live.session_id(), Some("s-20260205-140000"));
                Err(DomainError::invalid(
                    "session",
                    "not the one recovery checked",
                ))
            }),
        )
        .await;
    assert!(refused.is_err(), "a refusing decide must refuse");
    assert_eq!(
        store.load().await.unwrap(),
        before,
        "a refused archive must change nothing"
    );
    assert!(
        store.list_archived().await.unwrap().is_empty(),
        "a refused archive must create no archive"
    );
    assert!(
        store
            .archive_if("interrupted-20260205-150000", Box::new(|_| Ok(())))
            .await
            .unwrap(),
        "an agreeing decide must move the session"
    );
    assert!(store.load().await.unwrap().is_empty());
    assert!(
        !store
            .archive_if(
                "interrupted-20260205-160000",
                Box::new(|_| panic!("nothing live to decide on"))
            )
            .await
            .unwrap(),
        "nothing live: nothing to decide, nothing moved"
    );
}

async fn list_archives_is_sorted(store: &dyn ExecutionSessionStore) {
    store.archive("a-20260205-150000").await.unwrap();
    assert_eq!(
        store.list_archived().await.unwrap(),
        ["a-20260205-150000", "interrupted-20260205-150000"],
        "list_archived must list every archive, sorted"
    );
}

pub async fn unsafe_names_are_refused(store: Arc<dyn ExecutionSessionStore>) {
    let store: &dyn ExecutionSessionStore = &*store;
    start(store, "s-20260205-140000", None).await.unwrap();
    for bad in ["../x", "a/b", "a\\b", "", ".."] {
        assert!(
            is_invalid(&store.write_task_context(bad, &report("x")).await),
            "task id {bad:?} must be refused as Invalid"
        );
        assert!(
            is_invalid(&store.archive(bad).await),
            "archive name {bad:?} must be refused as Invalid"
        );
    }
    let result = store
        .finish(Box::new(|live| {
            Ok(Finale {
                archive_dir: "../escape".into(),
                progress: live.progress.clone().unwrap(),
                summary: summary("s-20260205-140000"),
            })
        }))
        .await;
    assert!(
        matches!(result, Err(Error::Store(StoreError::Invalid { .. }))),
        "finish into `../escape` must be Invalid"
    );
    assert_eq!(
        store.load().await.unwrap().session_id(),
        Some("s-20260205-140000"),
        "refused names must change nothing"
    );
}

/// How many writers the concurrency check runs at once, and how many updates each makes.
pub const WRITERS: usize = 4;
pub const UPDATES: usize = 10;

/// Starts the session the concurrency check updates; run once before the writers.
pub async fn concurrency_setup(store: &dyn ExecutionSessionStore) {
    start(store, "s-20260205-140000", None).await.unwrap();
}

/// One writer: `updates` read-modify-writes of `progress.md`, each adding one to
/// `max_parallel`.
pub async fn concurrency_writer(store: &dyn ExecutionSessionStore, writer: usize, updates: usize) {
    for n in 0..updates {
        store
            .update_progress(Box::new(|live| {
                let mut progress = live.progress.clone().unwrap();
                progress.max_parallel = Some(progress.max_parallel.unwrap_or(0) + 1);
                Ok(progress)
            }))
            .await
            .unwrap_or_else(|e| panic!("writer {writer}, update {n} must succeed: {e}"));
    }
}

/// What `writers` × `updates` concurrent [`concurrency_writer`] updates must leave behind.
pub async fn concurrency_verify(store: &dyn ExecutionSessionStore, writers: usize, updates: usize) {
    assert_eq!(
        store
            .load()
            .await
            .unwrap()
            .progress
            .and_then(|p| p.max_parallel),
        Some((2 + writers * updates) as u32),
        "concurrent read-modify-writes must all land"
    );
}

pub async fn concurrent_updates_are_not_lost(store: Arc<dyn ExecutionSessionStore>) {
    concurrency_setup(&*store).await;
    on_threads(&store, WRITERS, |store, writer| async move {
        concurrency_writer(&*store, writer, UPDATES).await;
    });
    concurrency_verify(&*store, WRITERS, UPDATES).await;
}
