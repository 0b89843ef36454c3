//! ExecutionService scenarios over the in-memory store: a whole session, recovery after a
//! crash, inheritance, and the refusals.

use std::sync::Arc;
use std::time::Duration;

use cairn_domain::execution::memory::MemoryExecutionSessionStore;
use cairn_domain::execution::progress::{ActiveTask, ProgressStatus};
use cairn_domain::execution::service::{StartRequest, TaskResult, TaskSnapshot};
use cairn_domain::execution::task_log::Attempts;
use cairn_domain::execution::{
    ExecutionError, ExecutionService, ExecutionSessionStore, LockDecision, SessionPhase,
    TaskContext, TaskOutcome,
};
use cairn_domain::ports::FixedClock;
use cairn_domain::tasklist::ClaudeTaskStatus;
use cairn_domain::{DomainError, Error};
use chrono::{TimeDelta, TimeZone};

fn setup() -> (
    Arc<MemoryExecutionSessionStore>,
    Arc<FixedClock>,
    ExecutionService,
) {
    let store = Arc::new(MemoryExecutionSessionStore::new());
    let clock = Arc::new(FixedClock::new(
        chrono::Utc
            .with_ymd_and_hms(2026, 2, 5, 14, 30, 22)
            .unwrap(),
    ));
    let service = ExecutionService::new(store.clone(), clock.clone());
    (store, clock, service)
}

fn task(id: &str, status: ClaudeTaskStatus) -> TaskSnapshot {
    TaskSnapshot {
        id: id.into(),
        status,
        task_group: Some("user-auth".into()),
    }
}

fn request(force: bool) -> StartRequest {
    StartRequest {
        task_group: None,
        tasks: vec![
            task("1", ClaudeTaskStatus::Pending),
            task("2", ClaudeTaskStatus::InProgress),
            task("3", ClaudeTaskStatus::InProgress),
        ],
        execution_plan: "# Execution Plan\n".into(),
        total_waves: 2,
        max_parallel: 2,
        force,
    }
}

fn result(id: &str, outcome: TaskOutcome, secs: u64) -> TaskResult {
    TaskResult {
        task_id: id.into(),
        subject: format!("Task {id}"),
        outcome,
        attempts: Attempts { used: 1, max: 3 },
        duration: Some(Duration::from_secs(secs)),
        token_usage: None,
    }
}

fn execution_error(err: Error) -> ExecutionError {
    match err {
        Error::Domain(DomainError::Execution(e)) => e,
        other => panic!("expected an execution refusal, got {other}"),
    }
}

#[tokio::test]
async fn a_whole_session_from_start_to_archive() {
    let (store, clock, service) = setup();
    let outcome = service.start(request(false)).await.unwrap();
    assert_eq!(outcome.session_id, "user-auth-20260205-143022");
    assert_eq!(outcome.lock, LockDecision::Proceed);
    assert_eq!(
        service.state().await.unwrap().unwrap().phase,
        SessionPhase::Creation
    );

    let active = vec![ActiveTask {
        id: "1".into(),
        subject: "Task 1".into(),
        phase: "Phase 1".into(),
    }];
    service.begin_wave(1, active).await.unwrap();
    service
        .set_task_phase("1", "Phase 2 \u{2014} Implementing")
        .await
        .unwrap();
    service
        .write_task_context("1", &TaskContext::from_lines(["- Uses pnpm"]))
        .await
        .unwrap();
    clock.advance(TimeDelta::seconds(154));
    let progress = service
        .record_task_result(result("1", TaskOutcome::Pass, 154))
        .await
        .unwrap();
    assert!(progress.active.is_empty());
    assert_eq!(progress.completed[0].result, TaskOutcome::Pass);
    assert_eq!(service.merge_wave_context().await.unwrap(), ["1"]);
    let live = store.load().await.unwrap();
    assert_eq!(live.context.unwrap().task_history[0].task_id, "1");
    assert!(live.task_contexts.is_empty());

    service.begin_wave(2, vec![]).await.unwrap();
    service
        .write_task_context("2", &TaskContext::from_lines(["- Known flaky test"]))
        .await
        .unwrap();
    service
        .record_task_result(result("2", TaskOutcome::Partial, 60))
        .await
        .unwrap();
    let finished = service.finish().await.unwrap();
    assert_eq!(finished.archive_dir, "user-auth-20260205-143022");
    assert_eq!(
        finished.merged_task_contexts,
        ["2"],
        "leftover per-task contexts are merged before archiving"
    );
    assert_eq!(
        (
            finished.tally.pass,
            finished.tally.partial,
            finished.tally.fail
        ),
        (1, 1, 0)
    );
    assert!(store.load().await.unwrap().is_empty());
    let archived = store
        .load_archived("user-auth-20260205-143022")
        .await
        .unwrap();
    assert_eq!(archived.progress.unwrap().status, ProgressStatus::Complete);
    // How the summary reads on disk is tested with its format (storage-fs).
    let summary = archived.summary.unwrap();
    let tally = summary.tally();
    assert_eq!(
        (tally.pass, tally.partial, tally.fail),
        (1, 1, 0),
        "{summary:?}"
    );
    assert_eq!(
        summary.elapsed(),
        Some(Duration::from_secs(154)),
        "{summary:?}"
    );
}

#[tokio::test]
async fn a_fresh_lock_refuses_and_changes_nothing() {
    let (store, clock, service) = setup();
    service.start(request(false)).await.unwrap();
    let before = store.load().await.unwrap();
    clock.advance(TimeDelta::minutes(72));
    let err = execution_error(service.start(request(false)).await.unwrap_err());
    assert!(
        matches!(&err, ExecutionError::SessionLocked { session, .. } if session == "user-auth-20260205-143022")
    );
    assert!(
        err.to_string().contains("taken 1h 12m ago")
            && err.to_string().contains("forcing the lock"),
        "{err}"
    );
    assert_eq!(store.load().await.unwrap(), before);
    assert!(store.list_archived().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_stale_session_is_archived_as_interrupted_and_its_tasks_recovered() {
    let (store, clock, service) = setup();
    service.start(request(false)).await.unwrap();
    service.begin_wave(1, vec![]).await.unwrap();
    service
        .record_task_result(result("2", TaskOutcome::Pass, 10))
        .await
        .unwrap();
    service
        .write_task_context("3", &TaskContext::from_lines(["- half-done insight"]))
        .await
        .unwrap();
    let mut seeded = store.load().await.unwrap();
    seeded
        .context
        .as_mut()
        .unwrap()
        .project_patterns
        .push("Barrel exports".into());
    store.seed_live(seeded);

    clock.advance(TimeDelta::hours(4));
    let outcome = service.start(request(false)).await.unwrap();
    assert!(matches!(outcome.lock, LockDecision::Stale { .. }));
    assert_eq!(
        outcome.interrupted_archive.as_deref(),
        Some("interrupted-20260205-183022")
    );
    assert_eq!(outcome.recovery.reset_to_pending, ["3"]);
    assert_eq!(outcome.recovery.mark_completed, ["2"]);
    assert_eq!(
        outcome.inherited_from.as_deref(),
        Some("interrupted-20260205-183022")
    );
    let live = store.load().await.unwrap();
    assert_eq!(live.session_id(), Some("user-auth-20260205-183022"));
    let context = live.context.unwrap();
    assert_eq!(
        context.project_patterns,
        ["Barrel exports"],
        "the interrupted session's learnings are inherited"
    );
    assert!(context.task_history.is_empty());
    let archived = store
        .load_archived("interrupted-20260205-183022")
        .await
        .unwrap();
    assert!(
        archived.task_contexts.contains_key("3"),
        "unmerged learnings are archived, not lost"
    );
}

#[tokio::test]
async fn a_new_session_inherits_from_the_most_recent_archive() {
    let (store, clock, service) = setup();
    service.start(request(false)).await.unwrap();
    service.begin_wave(1, vec![]).await.unwrap();
    service
        .write_task_context("1", &{
            let mut report = TaskContext::default();
            report.context.key_decisions.push("Chose Zod".into());
            report
        })
        .await
        .unwrap();
    service.finish().await.unwrap();
    clock.advance(TimeDelta::days(1));
    let outcome = service
        .start(StartRequest {
            task_group: Some("billing".into()),
            ..request(false)
        })
        .await
        .unwrap();
    assert_eq!(outcome.session_id, "billing-20260206-143022");
    assert_eq!(
        outcome.inherited_from.as_deref(),
        Some("user-auth-20260205-143022")
    );
    assert_eq!(
        outcome.recovery,
        Default::default(),
        "nothing to recover without leftovers"
    );
    assert_eq!(
        store.load().await.unwrap().context.unwrap().key_decisions,
        ["Chose Zod"]
    );
}

#[tokio::test]
async fn refusals_name_what_is_wrong() {
    let (_, _, service) = setup();
    assert_eq!(
        execution_error(service.finish().await.unwrap_err()),
        ExecutionError::NoLiveSession
    );
    let bad_group = service
        .start(StartRequest {
            task_group: Some("../x".into()),
            ..request(false)
        })
        .await
        .unwrap_err();
    assert!(matches!(
        execution_error(bad_group),
        ExecutionError::InvalidTaskGroup { .. }
    ));

    service.start(request(false)).await.unwrap();
    let err = execution_error(
        service
            .record_task_result(result("1", TaskOutcome::Pass, 1))
            .await
            .unwrap_err(),
    );
    assert!(
        matches!(
            err,
            ExecutionError::NotActive {
                phase: SessionPhase::Creation,
                ..
            }
        ),
        "{err}"
    );
    let err = execution_error(service.finish().await.unwrap_err());
    assert!(matches!(
        err,
        ExecutionError::IllegalTransition {
            from: SessionPhase::Creation,
            to: SessionPhase::Archival,
            ..
        }
    ));
    assert!(matches!(
        execution_error(service.begin_wave(3, vec![]).await.unwrap_err()),
        ExecutionError::WaveOutOfOrder { total: 2, .. }
    ));
    service.begin_wave(1, vec![]).await.unwrap();
    assert!(matches!(
        execution_error(service.begin_wave(1, vec![]).await.unwrap_err()),
        ExecutionError::WaveOutOfOrder { current: 1, .. }
    ));
    assert!(matches!(
        execution_error(service.set_task_phase("9", "Phase 1").await.unwrap_err()),
        ExecutionError::UnknownActiveTask { .. }
    ));
    let zero = TaskResult {
        attempts: Attempts { used: 0, max: 3 },
        ..result("1", TaskOutcome::Fail, 1)
    };
    assert!(matches!(
        execution_error(service.record_task_result(zero).await.unwrap_err()),
        ExecutionError::InvalidAttempts { .. }
    ));
    let over = TaskResult {
        attempts: Attempts { used: 4, max: 3 },
        ..result("1", TaskOutcome::Fail, 1)
    };
    assert!(service.record_task_result(over).await.is_err());
    assert!(matches!(
        service
            .write_task_context("../x", &TaskContext::from_lines(["x"]))
            .await,
        Err(Error::Domain(DomainError::Invalid { .. }))
    ));
}

#[tokio::test]
async fn force_takes_over_a_fresh_lock() {
    let (_, clock, service) = setup();
    service.start(request(false)).await.unwrap();
    clock.advance(TimeDelta::minutes(5));
    let outcome = service.start(request(true)).await.unwrap();
    assert!(
        matches!(outcome.lock, LockDecision::Forced { age: Some(age), .. } if age == TimeDelta::minutes(5))
    );
    assert_eq!(
        outcome.interrupted_archive.as_deref(),
        Some("interrupted-20260205-143522")
    );
    assert_eq!(outcome.recovery.reset_to_pending, ["2", "3"]);
}

#[tokio::test]
async fn recovery_never_moves_a_session_started_after_it_looked() {
    let (store, clock, service) = setup();
    service.start(request(false)).await.unwrap();
    clock.advance(TimeDelta::hours(4));
    let (seen, decision) = service.interrupted(false).await.unwrap().unwrap();
    assert!(matches!(decision, LockDecision::Stale { .. }));
    // Another process takes the stale session over between the look and the move.
    service.start(request(false)).await.unwrap();
    let newer = store.load().await.unwrap();
    let refused = service.archive_interrupted(&seen, false).await.unwrap_err();
    assert!(matches!(
        execution_error(refused),
        ExecutionError::SessionLocked { .. }
    ));
    assert_eq!(
        store.load().await.unwrap(),
        newer,
        "the new session stays live"
    );
    // `force` was given for the session recovery saw, not for the one that replaced it.
    assert!(service.archive_interrupted(&seen, true).await.is_err());
    assert_eq!(store.load().await.unwrap(), newer);
    // Once recovery looks at the new session itself (a second later: archive names differ).
    clock.advance(TimeDelta::seconds(1));
    let (seen, _) = service.interrupted(true).await.unwrap().unwrap();
    let (dir, archived) = service
        .archive_interrupted(&seen, true)
        .await
        .unwrap()
        .unwrap();
    assert!(dir.starts_with("interrupted-"), "{dir}");
    assert_eq!(archived.session_id(), newer.session_id());
    assert!(store.load().await.unwrap().is_empty());
}
