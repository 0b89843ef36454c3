//! The contract every [`OrchestrationStore`] adapter must honour. Run it from the adapter's tests:
//! `run_orchestration_store_contract(&mut || Fresh { .. }).await`.

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use super::archive::{ArchivedFile, Location, archived_session_path};
use super::error::OrchestrationError;
use super::log::LogEntry;
use super::model::{Session, SessionStatus, TokenCounts, WorkflowMode};
use super::phase::UserDecision;
use super::session::{NewPhase, NewSession};
use super::store::OrchestrationStore;
use crate::error::{DomainError, Error, StoreError};
use crate::ports::Fresh;
use crate::time::Timestamp;

fn at(hour: u32) -> Timestamp {
    Utc.with_ymd_and_hms(2026, 3, 14, hour, 0, 0)
        .single()
        .unwrap_or_default()
}

/// A session with one of everything, unknown fields at every level included, and no documents
/// (so archiving it depends only on the port, not on files the suite cannot create).
fn sample(topic: &str) -> Session {
    let spec = NewSession {
        topic: topic.to_owned(),
        task: "Build the thing".to_owned(),
        workflow_mode: WorkflowMode::Express,
        design_document: None,
        implementation_plan: None,
        execution_mode: Some("sequential".to_owned()),
        execution_backend: None,
        task_complexity: Some("medium".to_owned()),
        phases: vec![
            NewPhase {
                name: "Schema".to_owned(),
                agents: vec!["coder".to_owned()],
                parallel: false,
                blocked_by: vec![],
            },
            NewPhase {
                name: "Tests".to_owned(),
                agents: vec![],
                parallel: true,
                blocked_by: vec![1],
            },
        ],
    };
    let mut session = match Session::new(spec, at(9)) {
        Ok(session) => session,
        Err(e) => panic!("contract fixture: Session::new refused a valid spec: {e}"),
    };
    session
        .state
        .extra
        .insert("x_tool_note".to_owned(), json!({"kept": true}));
    session
        .state
        .token_usage
        .extra
        .insert("x_budget".to_owned(), json!(100));
    session.state.phases[0]
        .extra
        .insert("x_phase".to_owned(), json!("kept"));
    session.state.phases[0]
        .downstream_context
        .extra
        .insert("x_ctx".to_owned(), Value::Null);
    session
        .log
        .push(LogEntry::Text("free-form log text".to_owned()));
    session
}

fn is_already_exists(result: &Error) -> bool {
    matches!(result, Error::Store(StoreError::AlreadyExists { .. }))
}

fn is_not_found(result: &Error) -> bool {
    matches!(result, Error::Store(StoreError::NotFound { .. }))
}

/// Checks every guarantee documented on [`OrchestrationStore`].
pub async fn run_orchestration_store_contract(
    new_store: &mut dyn FnMut() -> Fresh<dyn OrchestrationStore>,
) {
    empty_store(new_store().store.as_ref()).await;
    create_and_load(new_store().store.as_ref()).await;
    update(new_store().store.as_ref()).await;
    archive(new_store().store.as_ref()).await;
}

async fn empty_store(store: &dyn OrchestrationStore) {
    assert!(
        matches!(store.load_active().await, Ok(None)),
        "a fresh store must have no active session"
    );
    assert!(
        matches!(store.list_archived().await.as_deref(), Ok([])),
        "a fresh store must list no archived sessions"
    );
    let id = sample("anything").id().clone();
    assert!(
        matches!(store.load_archived(&id).await, Ok(None)),
        "a fresh store must have no archived session"
    );
    let update = store.update_active(Box::new(|_| Ok(()))).await;
    assert!(
        update.as_ref().is_err_and(is_not_found),
        "update without an active session must be NotFound: {update:?}"
    );
    let archive = store
        .archive_active(Box::new(|s| {
            s.prepare_archive(None, at(10)).map_err(DomainError::from)
        }))
        .await;
    assert!(
        archive.as_ref().is_err_and(is_not_found),
        "archive without an active session must be NotFound: {archive:?}"
    );
}

async fn create_and_load(store: &dyn OrchestrationStore) {
    let session = sample("round trip");
    let created = store.create_active(session.clone()).await;
    assert!(
        matches!(&created, Ok(s) if *s == session),
        "create_active must return the session as given: {created:?}"
    );
    let loaded = store.load_active().await;
    assert!(
        matches!(&loaded, Ok(Some(s)) if *s == session),
        "load_active must return the created session unchanged, unknown fields and log included: {loaded:?}"
    );

    let second = store.create_active(sample("another topic")).await;
    assert!(
        second.as_ref().is_err_and(is_already_exists),
        "a second create_active must be AlreadyExists: {second:?}"
    );
    let still = store.load_active().await;
    assert!(
        matches!(&still, Ok(Some(s)) if *s == session),
        "a refused create_active must leave the active session untouched"
    );
}

async fn update(store: &dyn OrchestrationStore) {
    let session = sample("updates");
    assert!(
        store.create_active(session.clone()).await.is_ok(),
        "create_active on a fresh store must succeed"
    );

    let updated = store
        .update_active(Box::new(|s| {
            s.start_phase(1, &[], at(10)).map_err(DomainError::from)
        }))
        .await;
    let Ok(updated) = updated else {
        panic!("a valid update must succeed: {updated:?}")
    };
    assert_eq!(
        updated.state.phases[0].status.as_str(),
        "in_progress",
        "update must return the mutated session"
    );
    assert!(
        matches!(store.load_active().await, Ok(Some(s)) if s == updated),
        "update_active must persist exactly the session it returns"
    );

    // Each update sees the previous one's result: none is lost.
    for n in 0..5u64 {
        let result = store
            .update_active(Box::new(move |s| {
                s.record_tokens(
                    "coder",
                    TokenCounts {
                        input: n,
                        output: 1,
                        cached: 0,
                    },
                    at(11),
                )
                .map_err(DomainError::from)
            }))
            .await;
        assert!(result.is_ok(), "token update {n} must succeed: {result:?}");
    }
    let Ok(Some(after)) = store.load_active().await else {
        panic!("the active session must still load")
    };
    assert_eq!(
        after.state.token_usage.total_output, 5,
        "five sequential updates must all be applied"
    );

    let refusal = OrchestrationError::Blank { field: "contract" };
    let refused = store
        .update_active(Box::new(move |s| {
            s.state.task = "changed before refusing".to_owned();
            Err(refusal.into())
        }))
        .await;
    assert!(
        matches!(
            &refused,
            Err(Error::Domain(DomainError::Orchestration(
                OrchestrationError::Blank { field: "contract" }
            )))
        ),
        "a refusing mutation must come back as Error::Domain with its own error: {refused:?}"
    );
    assert!(
        matches!(store.load_active().await, Ok(Some(s)) if s == after),
        "a refused mutation must write nothing, even what it changed before refusing"
    );
}

async fn archive(store: &dyn OrchestrationStore) {
    let session = sample("archive me");
    let id = session.id().clone();
    assert!(
        store.create_active(session.clone()).await.is_ok(),
        "create_active on a fresh store must succeed"
    );

    let refused = store
        .archive_active(Box::new(|s| {
            s.prepare_archive(None, at(10)).map_err(DomainError::from)
        }))
        .await;
    assert!(
        matches!(
            &refused,
            Err(Error::Domain(DomainError::Orchestration(
                OrchestrationError::ArchiveBlocked { .. }
            )))
        ),
        "archiving unfinished phases without a user decision must be refused by the preparation: {refused:?}"
    );
    assert!(
        matches!(store.load_active().await, Ok(Some(s)) if s == session),
        "a refused archive must leave the active session untouched"
    );
    assert!(
        matches!(store.list_archived().await.as_deref(), Ok([])),
        "a refused archive must archive nothing"
    );

    let outcome = store
        .archive_active(Box::new(|s| {
            s.start_phase(1, &[], at(10))?;
            s.complete_phase(1, at(11))?;
            s.start_phase(2, &[], at(11))?;
            s.complete_phase(2, at(12))?;
            s.prepare_archive(None, at(12)).map_err(DomainError::from)
        }))
        .await;
    let Ok(outcome) = outcome else {
        panic!("archiving a finished session must succeed: {outcome:?}")
    };
    assert!(
        outcome.verification.is_complete(),
        "the archive must leave nothing behind: {:?}",
        outcome.verification
    );
    assert!(
        outcome.moved.iter().any(|m| m.file == ArchivedFile::Session
            && m.to == Location::StateDir(archived_session_path(&id))),
        "the outcome must report the session move to state/archive/<id>.md: {:?}",
        outcome.moved
    );
    assert_eq!(
        outcome.session.state.status,
        SessionStatus::Completed,
        "the archived session must be the prepared one, whose phases are all done"
    );
    assert!(
        matches!(store.load_active().await, Ok(None)),
        "after archiving there must be no active session"
    );
    assert!(
        matches!(store.list_archived().await.as_deref(), Ok([listed]) if *listed == id),
        "list_archived must list the archived session"
    );
    let archived = store.load_archived(&id).await;
    assert!(
        matches!(&archived, Ok(Some(s)) if *s == outcome.session),
        "load_archived must return the session as prepared for archiving: {archived:?}"
    );

    let reused = store.create_active(sample("archive me")).await;
    assert!(
        reused.as_ref().is_err_and(is_already_exists),
        "create_active with an already archived id must be AlreadyExists: {reused:?}"
    );
    assert!(
        matches!(store.load_active().await, Ok(None)),
        "a refused create_active must create nothing"
    );

    // A same-id session slipped in by hand (created later) must not overwrite the archive.
    let mut clash = sample("archive me");
    clash
        .state
        .extra
        .insert("marker".to_owned(), json!("second"));
    let other = sample("second session");
    assert!(
        store.create_active(other.clone()).await.is_ok(),
        "a new session may start after archiving"
    );
    let overwrite = store
        .archive_active(Box::new(move |s| {
            *s = clash;
            let decision = UserDecision::by_user("contract: archive unfinished work")?;
            s.prepare_archive(Some(&decision), at(13))
                .map_err(DomainError::from)
        }))
        .await;
    assert!(
        overwrite.as_ref().is_err_and(is_already_exists),
        "archiving onto an existing archive file must be AlreadyExists: {overwrite:?}"
    );
    assert!(
        matches!(store.load_archived(&id).await, Ok(Some(s)) if s == outcome.session),
        "a refused archive must not overwrite the archived session"
    );
    assert!(
        matches!(store.load_active().await, Ok(Some(s)) if s == other),
        "a refused archive must leave the active session in place"
    );
}
