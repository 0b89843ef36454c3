//! The contract every [`OrchestrationStore`] adapter must honour. Each check is a `pub async fn`
//! taking a fresh, empty store and the adapter's [`CanonicalLog`]; an adapter's tests turn every
//! one into its own `#[test]` with
//! [`orchestration_store_contract!`](crate::orchestration_store_contract).
//!
//! A session is compared exactly — front matter, unknown keys at every level — except its log,
//! which is compared in the adapter's canonical form (see [`OrchestrationStore::load`]): a
//! Markdown log cannot hold the phase snapshots its entries were rendered from.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use super::archive::{ArchivedFile, Location, archived_session_path};
use super::error::OrchestrationError;
use super::log::LogEntry;
use super::model::{PhaseId, PhaseStatus, Session, SessionStatus, TokenCounts, WorkflowMode};
use super::phase::UserDecision;
use super::session::{FileChanges, NewPhase, NewSession};
use super::store::{OrchestrationStore, SessionMutation};
use crate::error::{DomainError, Entity, Error, StoreError};
use crate::ports::on_threads;
use crate::time::Timestamp;

fn at(hour: u32) -> Timestamp {
    Utc.with_ymd_and_hms(2026, 3, 14, hour, 0, 0)
        .single()
        .unwrap_or_default()
}

/// The spec of [`sample`]: no documents, two phases, the second blocked by the first.
fn sample_spec(topic: &str) -> NewSession {
    NewSession {
        id: None,
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
                id: None,
                files: Vec::new(),
                name: "Schema".to_owned(),
                agents: vec!["coder".to_owned()],
                parallel: false,
                blocked_by: vec![],
            },
            NewPhase {
                id: None,
                files: Vec::new(),
                name: "Tests".to_owned(),
                agents: vec![],
                parallel: true,
                blocked_by: vec![1],
            },
        ],
    }
}

/// A session with one of everything, unknown fields at every level included, and no documents
/// (so archiving it depends only on the port, not on files the suite cannot create).
fn sample(topic: &str) -> Session {
    let mut session = match Session::new(sample_spec(topic), at(9)) {
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

/// What an adapter's `load` makes of a log it was given: the identity for an adapter that keeps
/// the entries, "render, then read back" for one that stores text. Must be idempotent.
pub type CanonicalLog = fn(Vec<LogEntry>) -> Vec<LogEntry>;

/// The canonicaliser of an adapter that keeps log entries as they are (the in-memory one).
pub fn identity_log(log: Vec<LogEntry>) -> Vec<LogEntry> {
    log
}

/// Whether `a` and `b` are the same session once both logs are in the adapter's canonical form.
/// Everything else is compared exactly.
pub fn same_session(a: &Session, b: &Session, canonical: CanonicalLog) -> bool {
    a.state == b.state && canonical(a.log.clone()) == canonical(b.log.clone())
}

fn is_already_exists(result: &StoreError) -> bool {
    matches!(result, StoreError::AlreadyExists { .. })
}

fn is_not_found(result: &Error) -> bool {
    matches!(
        result,
        Error::Store(StoreError::NotFound {
            entity: Entity::Session,
            ..
        })
    )
}

/// Generates one `#[test]` per check of this suite, in a module `$name`, each on a fresh store
/// from `$fresh` (a `fn() -> Fresh<dyn OrchestrationStore>` in scope) with `$canonical_log`, the
/// adapter's [`CanonicalLog`] (an expression in scope where the macro is called, e.g.
/// `cairn_domain::orchestration::contract::identity_log` for an adapter that keeps log entries,
/// or a function that renders a log and reads it back for one that stores Markdown). Every check
/// compares logs through it and everything else in a session exactly.
#[macro_export]
macro_rules! orchestration_store_contract {
    ($name:ident, $fresh:ident, $canonical_log:expr) => {
        $crate::orchestration_store_contract!(@checks $name, $fresh, $canonical_log;
            empty_store,
            create_and_load,
            update,
            archive,
            transact_with_returns_the_mutation_value,
            concurrent_updates_lose_nothing,
            concurrent_phase_completions_lose_nothing,
        );
    };
    (@checks $name:ident, $fresh:ident, $canonical_log:expr; $($check:ident),+ $(,)?) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $check() {
                    $crate::ports::run_check(super::$fresh, |store| {
                        $crate::orchestration::contract::$check(store, $canonical_log)
                    });
                }
            )+
        }
    };
}

pub async fn empty_store(store: Arc<dyn OrchestrationStore>, _canonical: CanonicalLog) {
    let store: &dyn OrchestrationStore = &*store;
    assert!(
        matches!(store.load().await, Ok(None)),
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
    let update = store.transact(Box::new(|_| Ok(()))).await;
    assert!(
        update.as_ref().is_err_and(is_not_found),
        "update without an active session must be NotFound: {update:?}"
    );
    let archive = store
        .archive(Box::new(|s| {
            s.prepare_archive(None, at(10)).map_err(DomainError::from)
        }))
        .await;
    assert!(
        archive.as_ref().is_err_and(is_not_found),
        "archive without an active session must be NotFound: {archive:?}"
    );
}

pub async fn create_and_load(store: Arc<dyn OrchestrationStore>, canonical: CanonicalLog) {
    let store: &dyn OrchestrationStore = &*store;
    let session = sample("round trip");
    let created = store.create(session.clone()).await;
    assert!(
        matches!(&created, Ok(s) if same_session(s, &session, canonical)),
        "create must return the session as given: {created:?}"
    );
    let loaded = store.load().await;
    assert!(
        matches!(&loaded, Ok(Some(s)) if same_session(s, &session, canonical)),
        "load must return the created session unchanged, unknown fields and log included: {loaded:?}"
    );

    let second = store.create(sample("another topic")).await;
    assert!(
        second.as_ref().is_err_and(is_already_exists),
        "a second create must be AlreadyExists: {second:?}"
    );
    let still = store.load().await;
    assert!(
        matches!(&still, Ok(Some(s)) if same_session(s, &session, canonical)),
        "a refused create must leave the active session untouched"
    );
}

pub async fn update(store: Arc<dyn OrchestrationStore>, canonical: CanonicalLog) {
    let store: &dyn OrchestrationStore = &*store;
    let session = sample("updates");
    assert!(
        store.create(session.clone()).await.is_ok(),
        "create on a fresh store must succeed"
    );

    let updated = store
        .transact(Box::new(|s| {
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
        matches!(store.load().await, Ok(Some(s)) if same_session(&s, &updated, canonical)),
        "transact must persist exactly the session it returns"
    );

    // Each update sees the previous one's result: none is lost.
    for n in 0..5u64 {
        let result = store
            .transact(Box::new(move |s| {
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
    let Ok(Some(after)) = store.load().await else {
        panic!("the active session must still load")
    };
    assert_eq!(
        after.state.token_usage.total_output, 5,
        "five sequential updates must all be applied"
    );

    let refusal = OrchestrationError::Blank { field: "contract" };
    let refused = store
        .transact(Box::new(move |s| {
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
        matches!(store.load().await, Ok(Some(s)) if same_session(&s, &after, canonical)),
        "a refused mutation must write nothing, even what it changed before refusing"
    );
}

pub async fn archive(store: Arc<dyn OrchestrationStore>, canonical: CanonicalLog) {
    let store: &dyn OrchestrationStore = &*store;
    let session = sample("archive me");
    let id = session.id().clone();
    assert!(
        store.create(session.clone()).await.is_ok(),
        "create on a fresh store must succeed"
    );

    let refused = store
        .archive(Box::new(|s| {
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
        matches!(store.load().await, Ok(Some(s)) if same_session(&s, &session, canonical)),
        "a refused archive must leave the active session untouched"
    );
    assert!(
        matches!(store.list_archived().await.as_deref(), Ok([])),
        "a refused archive must archive nothing"
    );

    let outcome = store
        .archive(Box::new(|s| {
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
        matches!(store.load().await, Ok(None)),
        "after archiving there must be no active session"
    );
    assert!(
        matches!(store.list_archived().await.as_deref(), Ok([listed]) if *listed == id),
        "list_archived must list the archived session"
    );
    let archived = store.load_archived(&id).await;
    assert!(
        matches!(&archived, Ok(Some(s)) if same_session(s, &outcome.session, canonical)),
        "load_archived must return the session as prepared for archiving: {archived:?}"
    );

    let reused = store.create(sample("archive me")).await;
    assert!(
        reused.as_ref().is_err_and(is_already_exists),
        "create with an already archived id must be AlreadyExists: {reused:?}"
    );
    assert!(
        matches!(store.load().await, Ok(None)),
        "a refused create must create nothing"
    );

    // A same-id session slipped in by hand (created later) must not overwrite the archive.
    let mut clash = sample("archive me");
    clash
        .state
        .extra
        .insert("marker".to_owned(), json!("second"));
    let other = sample("second session");
    assert!(
        store.create(other.clone()).await.is_ok(),
        "a new session may start after archiving"
    );
    let overwrite = store
        .archive(Box::new(move |s| {
            *s = clash;
            let decision = UserDecision::by_user("contract: archive unfinished work")?;
            s.prepare_archive(Some(&decision), at(13))
                .map_err(DomainError::from)
        }))
        .await;
    assert!(
        matches!(
            &overwrite,
            Err(Error::Store(StoreError::AlreadyExists { .. }))
        ),
        "archiving onto an existing archive file must be AlreadyExists: {overwrite:?}"
    );
    assert!(
        matches!(store.load_archived(&id).await, Ok(Some(s)) if same_session(&s, &outcome.session, canonical)),
        "a refused archive must not overwrite the archived session"
    );
    assert!(
        matches!(store.load().await, Ok(Some(s)) if same_session(&s, &other, canonical)),
        "a refused archive must leave the active session in place"
    );
}

/// How many writers the concurrency check runs at once, and how many updates each makes.
pub const WRITERS: usize = 4;
pub const UPDATES: usize = 10;

/// Makes the session the concurrency check updates; run once before the writers.
pub async fn concurrency_setup(store: &dyn OrchestrationStore) {
    let created = store.create(sample("concurrency")).await;
    assert!(
        created.is_ok(),
        "create on a fresh store must succeed: {created:?}"
    );
}

/// One writer: `updates` read-modify-writes of the active session, each recording one output
/// token for agent `writer-<writer>`.
pub async fn concurrency_writer(store: &dyn OrchestrationStore, writer: usize, updates: usize) {
    let agent = format!("writer-{writer}");
    for n in 0..updates {
        let agent = agent.clone();
        let result = store
            .transact(Box::new(move |s| {
                s.record_tokens(
                    &agent,
                    TokenCounts {
                        input: 1,
                        output: 1,
                        cached: 0,
                    },
                    at(11),
                )
                .map_err(DomainError::from)
            }))
            .await;
        assert!(
            result.is_ok(),
            "writer {writer}, update {n} must succeed: {result:?}"
        );
    }
}

/// What `writers` × `updates` concurrent [`concurrency_writer`] updates must leave behind.
pub async fn concurrency_verify(store: &dyn OrchestrationStore, writers: usize, updates: usize) {
    let Ok(Some(after)) = store.load().await else {
        panic!("the active session must still load")
    };
    let total = (writers * updates) as u64;
    assert_eq!(
        (
            after.state.token_usage.total_input,
            after.state.token_usage.total_output
        ),
        (total, total),
        "concurrent read-modify-writes must all land: none may be lost"
    );
    for writer in 0..writers {
        let mine = after
            .state
            .token_usage
            .by_agent
            .get(&format!("writer-{writer}"))
            .map(|t| t.output);
        assert_eq!(
            mine,
            Some(updates as u64),
            "every update of writer {writer} must land"
        );
    }
}

pub async fn concurrent_updates_lose_nothing(
    store: Arc<dyn OrchestrationStore>,
    _canonical: CanonicalLog,
) {
    concurrency_setup(&*store).await;
    on_threads(&store, WRITERS, |store, writer| async move {
        concurrency_writer(&*store, writer, UPDATES).await;
    });
    concurrency_verify(&*store, WRITERS, UPDATES).await;
}

/// Makes a session of `phases` independent phases (none blocks another), so that each writer of
/// [`phase_writer`] can run its own phase; run once before the writers.
pub async fn phases_setup(store: &dyn OrchestrationStore, phases: usize) {
    let mut spec = sample_spec("parallel batch");
    spec.phases = (1..=phases)
        .map(|n| NewPhase {
            id: None,
            files: Vec::new(),
            name: format!("Batch part {n}"),
            agents: vec![],
            parallel: true,
            blocked_by: vec![],
        })
        .collect();
    let session = match Session::new(spec, at(9)) {
        Ok(session) => session,
        Err(e) => panic!("contract fixture: Session::new refused a valid spec: {e}"),
    };
    let created = store.create(session).await;
    assert!(
        created.is_ok(),
        "create on a fresh store must succeed: {created:?}"
    );
}

/// One agent of a parallel batch: starts phase `phase`, records the file it created, completes
/// the phase — three read-modify-writes, interleaved with the other agents'.
pub async fn phase_writer(store: &dyn OrchestrationStore, phase: PhaseId) {
    let agent = format!("agent-{phase}");
    let steps: [SessionMutation<'_>; 3] = [
        Box::new(move |s| {
            s.start_phase(phase, &[agent], at(10))
                .map_err(DomainError::from)
        }),
        Box::new(move |s| {
            let changes = FileChanges {
                created: vec![format!("src/part{phase}.rs")],
                ..FileChanges::default()
            };
            s.record_files(phase, &changes, at(10))
                .map_err(DomainError::from)
        }),
        Box::new(move |s| s.complete_phase(phase, at(11)).map_err(DomainError::from)),
    ];
    for (step, mutation) in steps.into_iter().enumerate() {
        let result = store.transact(mutation).await;
        assert!(
            result.is_ok(),
            "phase {phase}, step {step} must succeed: {result:?}"
        );
    }
}

/// What [`phase_writer`] on every one of `phases` phases must leave behind.
pub async fn phases_verify(store: &dyn OrchestrationStore, phases: usize) {
    let Ok(Some(after)) = store.load().await else {
        panic!("the active session must still load")
    };
    for phase in &after.state.phases {
        assert_eq!(
            (
                phase.status,
                phase.agents.clone(),
                phase.files_created.clone()
            ),
            (
                PhaseStatus::Completed,
                vec![format!("agent-{}", phase.id)],
                vec![format!("src/part{}.rs", phase.id)]
            ),
            "every agent's start, manifest and completion of its own phase must land: none may be lost"
        );
    }
    assert_eq!(after.state.phases.len(), phases);
    assert_eq!(
        after.state.status,
        SessionStatus::Completed,
        "with every phase completed the session is completed"
    );
}

/// Agents of one parallel batch completing different phases at once lose nothing.
pub async fn concurrent_phase_completions_lose_nothing(
    store: Arc<dyn OrchestrationStore>,
    _canonical: CanonicalLog,
) {
    phases_setup(&*store, WRITERS).await;
    on_threads(&store, WRITERS, |store, writer| async move {
        let phase = PhaseId::try_from(writer + 1).unwrap_or(PhaseId::MAX);
        phase_writer(&*store, phase).await;
    });
    phases_verify(&*store, WRITERS).await;
}

pub async fn transact_with_returns_the_mutation_value(
    store: Arc<dyn OrchestrationStore>,
    canonical: CanonicalLog,
) {
    let created = store.create(sample("valued")).await;
    assert!(
        created.is_ok(),
        "create on a fresh store must succeed: {created:?}"
    );
    let result = store
        .transact_with(|s| {
            s.start_phase(1, &[], at(10)).map_err(DomainError::from)?;
            Ok(s.state.phases.len())
        })
        .await;
    let Ok((session, phases)) = result else {
        panic!("a valid update must succeed: {result:?}")
    };
    assert_eq!(
        (phases, session.state.phases[0].status.as_str()),
        (2, "in_progress"),
        "transact_with must hand back what the mutation computed, with the session as written"
    );
    assert!(
        matches!(store.load().await, Ok(Some(s)) if same_session(&s, &session, canonical)),
        "the session returned is the one written"
    );
}
