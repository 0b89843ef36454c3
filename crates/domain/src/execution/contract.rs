//! The contract every [`ExecutionSessionStore`] adapter must honour, as executable checks.

use std::collections::BTreeMap;
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
use crate::error::{DomainError, Error, StoreError};
use crate::ports::Fresh;
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

fn is_not_found(result: &Result<impl std::fmt::Debug, Error>) -> bool {
    matches!(result, Err(Error::Store(StoreError::NotFound { .. })))
}

fn is_already_exists(result: &Result<impl std::fmt::Debug, Error>) -> bool {
    matches!(result, Err(Error::Store(StoreError::AlreadyExists { .. })))
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

/// Runs every check, each against a fresh store from `new_store`.
pub async fn run_execution_session_store_contract(
    new_store: &mut dyn FnMut() -> Fresh<dyn ExecutionSessionStore>,
) {
    empty_store_has_no_session(new_store().store.as_ref()).await;
    start_writes_the_new_session(new_store().store.as_ref()).await;
    refused_start_writes_nothing(new_store().store.as_ref()).await;
    start_never_overwrites_leftovers(new_store().store.as_ref()).await;
    start_archives_leftovers_when_told(new_store().store.as_ref()).await;
    progress_updates_are_read_modify_write(new_store().store.as_ref()).await;
    task_records_append_in_order(new_store().store.as_ref()).await;
    context_update_consumes_only_named_task_contexts(new_store().store.as_ref()).await;
    finish_moves_everything_and_empties_live(new_store().store.as_ref()).await;
    finish_refuses_an_existing_archive(new_store().store.as_ref()).await;
    archive_live_moves_leftovers(new_store().store.as_ref()).await;
    unsafe_names_are_refused(new_store().store.as_ref()).await;
    concurrent_updates_are_not_lost(new_store().store.as_ref()).await;
}

async fn empty_store_has_no_session(store: &dyn ExecutionSessionStore) {
    assert!(
        store.read_live().await.unwrap().is_empty(),
        "a fresh store must have an empty live session"
    );
    assert!(
        store.list_archives().await.unwrap().is_empty(),
        "a fresh store must have no archives"
    );
    assert!(
        is_not_found(&store.read_archive("nope-20260101-000000").await),
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
        !store
            .archive_live("interrupted-20260101-000000")
            .await
            .unwrap(),
        "archiving an empty live dir moves nothing"
    );
    assert!(
        store.list_archives().await.unwrap().is_empty(),
        "archiving an empty live dir must not create an archive"
    );
}

async fn start_writes_the_new_session(store: &dyn ExecutionSessionStore) {
    let previous = start(store, "s-20260205-140000", None)
        .await
        .expect("start on an empty store");
    assert!(
        previous.is_empty(),
        "start must report the (empty) previous live session"
    );
    let live = store.read_live().await.unwrap();
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

async fn refused_start_writes_nothing(store: &dyn ExecutionSessionStore) {
    let result = store.start(Box::new(|live| {
        assert!(live.is_empty(), "the decision must see the live session");
        Err(refusal())
    }));
    assert!(
        matches!(result.await, Err(Error::Domain(e)) if e == refusal()),
        "a refused start must return the refusal"
    );
    assert!(
        store.read_live().await.unwrap().is_empty(),
        "a refused start must write nothing"
    );
}

async fn start_never_overwrites_leftovers(store: &dyn ExecutionSessionStore) {
    start(store, "old-20260205-140000", None).await.unwrap();
    let before = store.read_live().await.unwrap();
    assert!(
        is_already_exists(&start(store, "new-20260205-150000", None).await),
        "start over leftovers without an archive must be AlreadyExists"
    );
    assert_eq!(
        store.read_live().await.unwrap(),
        before,
        "a start refused for leftovers must change nothing"
    );
    store
        .archive_live("interrupted-20260205-150000")
        .await
        .unwrap();
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
        store.read_live().await.unwrap(),
        before,
        "a start refused for its archive must change nothing"
    );
}

async fn start_archives_leftovers_when_told(store: &dyn ExecutionSessionStore) {
    start(store, "old-20260205-140000", None).await.unwrap();
    store
        .write_task_context("4", &report("- learned\n"))
        .await
        .unwrap();
    let before = store.read_live().await.unwrap();
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
            .read_archive("interrupted-20260205-150000")
            .await
            .unwrap(),
        before,
        "the archive must hold the leftovers unchanged"
    );
    let live = store.read_live().await.unwrap();
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
        store.list_archives().await.unwrap(),
        ["interrupted-20260205-150000"],
        "exactly one archive must exist"
    );
}

async fn progress_updates_are_read_modify_write(store: &dyn ExecutionSessionStore) {
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
        store.read_live().await.unwrap().progress,
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
        store.read_live().await.unwrap().progress,
        Some(written),
        "a refused update must change nothing"
    );
}

async fn task_records_append_in_order(store: &dyn ExecutionSessionStore) {
    start(store, "s-20260205-140000", None).await.unwrap();
    for (id, subject) in [("2", "Two | with pipe"), ("1", "One"), ("2", "Two again")] {
        store
            .record_task(Box::new(move |live| {
                let mut progress = live.progress.clone().unwrap();
                progress.max_parallel = Some(progress.max_parallel.unwrap_or(0) + 1);
                Ok(TaskRecord {
                    row: row(id, subject),
                    progress,
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
    let live = store.read_live().await.unwrap();
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

async fn context_update_consumes_only_named_task_contexts(store: &dyn ExecutionSessionStore) {
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
    let live = store.read_live().await.unwrap();
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
        store.read_live().await.unwrap(),
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
    let live = store.read_live().await.unwrap();
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

async fn finish_moves_everything_and_empties_live(store: &dyn ExecutionSessionStore) {
    start(store, "s-20260205-140000", None).await.unwrap();
    store
        .record_task(Box::new(|live| {
            Ok(TaskRecord {
                row: row("1", "One"),
                progress: live.progress.clone().unwrap(),
            })
        }))
        .await
        .unwrap();
    store
        .write_task_context("9", &report("- late\n"))
        .await
        .unwrap();
    let before = store.read_live().await.unwrap();
    assert!(
        store.finish(Box::new(|_| Err(refusal()))).await.is_err(),
        "a refused finish must fail"
    );
    assert_eq!(
        store.read_live().await.unwrap(),
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
        store.read_live().await.unwrap().is_empty(),
        "finish must leave the live session empty"
    );
    let archived = store.read_archive("s-20260205-140000").await.unwrap();
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

async fn finish_refuses_an_existing_archive(store: &dyn ExecutionSessionStore) {
    start(store, "s-20260205-140000", None).await.unwrap();
    store.archive_live("s-20260205-140000").await.unwrap();
    start(store, "s-20260205-140000", None).await.unwrap();
    let before = store.read_live().await.unwrap();
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
        store.read_live().await.unwrap(),
        before,
        "a finish refused for its archive must change nothing"
    );
}

async fn archive_live_moves_leftovers(store: &dyn ExecutionSessionStore) {
    start(store, "s-20260205-140000", None).await.unwrap();
    let before = store.read_live().await.unwrap();
    assert!(
        store
            .archive_live("interrupted-20260205-150000")
            .await
            .unwrap(),
        "archiving leftovers must report a move"
    );
    assert!(
        store.read_live().await.unwrap().is_empty(),
        "archive_live must empty the live session"
    );
    assert_eq!(
        store
            .read_archive("interrupted-20260205-150000")
            .await
            .unwrap(),
        before,
        "archive_live must keep the content"
    );
    start(store, "t-20260205-150000", None).await.unwrap();
    assert!(
        is_already_exists(&store.archive_live("interrupted-20260205-150000").await),
        "archive_live onto an existing archive must be AlreadyExists"
    );
    list_archives_is_sorted(store).await;
}

async fn list_archives_is_sorted(store: &dyn ExecutionSessionStore) {
    store.archive_live("a-20260205-150000").await.unwrap();
    assert_eq!(
        store.list_archives().await.unwrap(),
        ["a-20260205-150000", "interrupted-20260205-150000"],
        "list_archives must list every archive, sorted"
    );
}

async fn unsafe_names_are_refused(store: &dyn ExecutionSessionStore) {
    start(store, "s-20260205-140000", None).await.unwrap();
    for bad in ["../x", "a/b", "a\\b", "", ".."] {
        assert!(
            matches!(
                store.write_task_context(bad, &report("x")).await,
                Err(Error::Store(StoreError::Invalid { .. }))
            ),
            "task id {bad:?} must be refused as Invalid"
        );
        assert!(
            matches!(
                store.archive_live(bad).await,
                Err(Error::Store(StoreError::Invalid { .. }))
            ),
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
        store.read_live().await.unwrap().session_id(),
        Some("s-20260205-140000"),
        "refused names must change nothing"
    );
}

async fn concurrent_updates_are_not_lost(store: &dyn ExecutionSessionStore) {
    start(store, "s-20260205-140000", None).await.unwrap();
    let bump = || {
        store.update_progress(Box::new(|live| {
            let mut progress = live.progress.clone().unwrap();
            progress.max_parallel = Some(progress.max_parallel.unwrap_or(0) + 1);
            Ok(progress)
        }))
    };
    let (a, b, c, d) = tokio_free_join4(bump(), bump(), bump(), bump()).await;
    for result in [a, b, c, d] {
        result.expect("a concurrent update must succeed");
    }
    assert_eq!(
        store
            .read_live()
            .await
            .unwrap()
            .progress
            .and_then(|p| p.max_parallel),
        Some(2 + 4),
        "four concurrent read-modify-writes must all land"
    );
}

/// Polls four futures to completion together without pulling an executor into the domain crate.
async fn tokio_free_join4<A, B, C, D>(
    a: A,
    b: B,
    c: C,
    d: D,
) -> (A::Output, B::Output, C::Output, D::Output)
where
    A: std::future::Future,
    B: std::future::Future,
    C: std::future::Future,
    D: std::future::Future,
{
    use std::pin::pin;
    use std::task::Poll;
    let (mut a, mut b, mut c, mut d) = (pin!(a), pin!(b), pin!(c), pin!(d));
    let (mut ra, mut rb, mut rc, mut rd) = (None, None, None, None);
    std::future::poll_fn(|cx| {
        macro_rules! step {
            ($fut:ident, $slot:ident) => {
                if $slot.is_none()
                    && let Poll::Ready(v) = $fut.as_mut().poll(cx)
                {
                    $slot = Some(v);
                }
            };
        }
        step!(a, ra);
        step!(b, rb);
        step!(c, rc);
        step!(d, rd);
        if ra.is_some() && rb.is_some() && rc.is_some() && rd.is_some() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    (ra.unwrap(), rb.unwrap(), rc.unwrap(), rd.unwrap())
}
