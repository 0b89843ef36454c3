//! The contract every [`PlanStore`] adapter must pass. Each check is a `pub async fn` taking a
//! fresh, empty store; an adapter's tests turn every one into its own `#[test]` with
//! [`plan_store_contract!`](crate::plan_store_contract).

use std::sync::Arc;

use chrono::{TimeZone, Utc};

use super::decision::DecisionDraft;
use super::document::PlanDocument;
use super::error::PlanError;
use super::id::PlanId;
use super::record::PlanRecord;
use super::state::{PlanState, UserApproval};
use super::store::{Finding, PlanStore};
use crate::ports::{AsStoreError, on_threads};
use crate::time::Timestamp;
use crate::{DomainError, Entity, Error, StoreError};

fn at(minute: u32) -> Timestamp {
    Utc.with_ymd_and_hms(2026, 3, 14, 9, minute, 0)
        .single()
        .expect("valid test instant")
}

fn id(hex: &str) -> PlanId {
    PlanId::parse(&format!(".plan_2026-03-14_{hex}")).expect("valid test id")
}

fn record(hex: &str, goal: &str) -> PlanRecord {
    PlanRecord::new(id(hex), goal, at(0)).expect("valid test record")
}

fn is_not_found<E: AsStoreError>(error: &E) -> bool {
    matches!(
        error.as_store_error(),
        Some(StoreError::NotFound {
            entity: Entity::Plan | Entity::PlanDocument,
            ..
        })
    )
}

/// Generates one `#[test]` per check of this suite, in a module `$name`, each on a fresh store
/// from `$fresh` (a `fn() -> Fresh<dyn PlanStore>` in scope).
#[macro_export]
macro_rules! plan_store_contract {
    ($name:ident, $fresh:ident) => {
        $crate::contract_tests!($name, $fresh; plan;
            empty_store,
            create_and_read_back,
            create_refuses_over_an_active_plan,
            create_replaces_closed_or_dangling_pointer,
            update_writes_or_changes_nothing,
            transact_with_returns_the_mutation_value,
            decisions_number_monotonically,
            concurrent_appends_get_distinct_numbers,
            concurrent_updates_lose_nothing,
            missing_plans_are_not_found,
            checkpoints_number_on_and_keep_the_plan,
            findings_are_appended_in_order,
        );
    };
}

pub async fn empty_store(store: Arc<dyn PlanStore>) {
    let store: &dyn PlanStore = &*store;
    assert_eq!(
        store.current().await.expect("current"),
        None,
        "a fresh store must have no pointer"
    );
    assert!(
        store.list().await.expect("list").is_empty(),
        "a fresh store must list no plans"
    );
    assert_eq!(
        store.clear_current().await.expect("clear"),
        None,
        "clearing a missing pointer must be a no-op"
    );
}

pub async fn create_and_read_back(store: Arc<dyn PlanStore>) {
    let store: &dyn PlanStore = &*store;
    let plan = record("0000000a", "migrate sessions to tokens");
    let previous = store
        .create(&plan, false)
        .await
        .expect("create on an empty store");
    assert_eq!(
        previous, None,
        "create on an empty store must report no previous plan"
    );
    assert_eq!(
        store.current().await.expect("current"),
        Some(plan.id().clone()),
        "create must set the pointer"
    );
    assert_eq!(
        store.load(plan.id()).await.expect("load"),
        plan,
        "load must return the record as created"
    );
    assert!(
        store
            .decisions(plan.id())
            .await
            .expect("decisions")
            .is_empty(),
        "a new plan must have no decisions"
    );
    // What a created document starts with is the adapter's format (the filesystem adapter's
    // templates are tested with it); every adapter must create each of them.
    for doc in PlanDocument::CREATED {
        let created = store.read_document(plan.id(), doc).await;
        assert!(
            created.is_ok(),
            "{} must exist once the plan is created: {created:?}",
            doc.file_name()
        );
    }
    let summary = store.read_document(plan.id(), PlanDocument::Summary).await;
    assert!(
        summary.as_ref().is_err_and(is_not_found),
        "summary.md must not exist before CLOSE: {summary:?}"
    );

    let listed = store.list().await.expect("list");
    assert_eq!(listed.len(), 1, "list must show the created plan");
    assert!(
        listed[0].current && listed[0].id == *plan.id(),
        "list must mark the pointed-at plan current"
    );
    assert_eq!(
        listed[0].state,
        PlanState::Explore,
        "list must report the state"
    );
    assert_eq!(listed[0].goal, plan.goal(), "list must report the goal");

    let again = store.create(&plan, true).await;
    assert!(
        matches!(again, Err(Error::Store(StoreError::AlreadyExists { .. }))),
        "creating an existing id must be AlreadyExists, got {again:?}"
    );

    assert_eq!(
        store.clear_current().await.expect("clear"),
        Some(plan.id().clone()),
        "clear must return the old pointer"
    );
    assert_eq!(
        store.current().await.expect("current"),
        None,
        "clear must remove the pointer"
    );
    assert_eq!(
        store.load(plan.id()).await.expect("load"),
        plan,
        "clearing the pointer must keep the plan"
    );
    store
        .set_current(plan.id())
        .await
        .expect("set_current on an existing plan");
    assert_eq!(
        store.current().await.expect("current"),
        Some(plan.id().clone()),
        "set_current must set the pointer"
    );
}

pub async fn create_refuses_over_an_active_plan(store: Arc<dyn PlanStore>) {
    let store: &dyn PlanStore = &*store;
    let first = record("0000000b", "first");
    let second = record("0000000c", "second");
    store.create(&first, false).await.expect("create first");
    let refused = store.create(&second, false).await;
    match refused {
        Err(Error::Domain(DomainError::Plan(PlanError::ActivePlanExists { current }))) => {
            assert_eq!(
                current,
                *first.id(),
                "the refusal must name the active plan"
            )
        }
        other => {
            panic!("creating over an active plan without force must be refused, got {other:?}")
        }
    }
    assert_eq!(
        store.list().await.expect("list").len(),
        1,
        "a refused create must write nothing"
    );
    assert!(
        store
            .load(second.id())
            .await
            .is_err_and(|e| is_not_found(&e)),
        "a refused create must not create the plan"
    );
    assert_eq!(
        store.current().await.expect("current"),
        Some(first.id().clone()),
        "a refused create must keep the pointer"
    );

    let previous = store.create(&second, true).await.expect("forced create");
    assert_eq!(
        previous,
        Some(first.id().clone()),
        "a forced create must report the plan it displaced"
    );
    assert_eq!(
        store.current().await.expect("current"),
        Some(second.id().clone()),
        "a forced create must move the pointer"
    );
    assert_eq!(
        store.load(first.id()).await.expect("load first"),
        first,
        "a forced create must keep the old plan"
    );
    let listed = store.list().await.expect("list");
    let ids: Vec<_> = listed.iter().map(|s| (s.id.clone(), s.current)).collect();
    assert_eq!(
        ids,
        vec![(first.id().clone(), false), (second.id().clone(), true)],
        "list must be ordered by id"
    );
}

async fn close_plan(store: &dyn PlanStore, id: &PlanId) {
    let approval = UserApproval::from_user("go").expect("approval");
    store
        .transact(
            id,
            Box::new(move |plan| {
                let mut drafts = Vec::new();
                for (to, minute) in [
                    (PlanState::Plan, 1),
                    (PlanState::Execute, 2),
                    (PlanState::Reflect, 3),
                    (PlanState::Close, 4),
                ] {
                    drafts.extend(
                        plan.transition(to, "done", Some(&approval), at(minute))?
                            .decision,
                    );
                }
                Ok(drafts)
            }),
        )
        .await
        .expect("walk the plan to CLOSE");
}

pub async fn create_replaces_closed_or_dangling_pointer(store: Arc<dyn PlanStore>) {
    let store: &dyn PlanStore = &*store;
    let closed = record("0000000d", "closed");
    store.create(&closed, false).await.expect("create");
    close_plan(store, closed.id()).await;
    let next = record("0000000e", "next");
    let previous = store
        .create(&next, false)
        .await
        .expect("create over a closed plan needs no force");
    assert_eq!(
        previous,
        Some(closed.id().clone()),
        "create must report the closed plan it replaced"
    );
    assert_eq!(
        store.current().await.expect("current"),
        Some(next.id().clone()),
        "the pointer must move"
    );

    let missing = id("deadbeef");
    let set = store.set_current(&missing).await;
    assert!(
        set.is_err_and(|e| is_not_found(&e)),
        "set_current on a missing plan must be NotFound"
    );
    assert_eq!(
        store.current().await.expect("current"),
        Some(next.id().clone()),
        "a refused set_current must keep the pointer"
    );
}

pub async fn update_writes_or_changes_nothing(store: Arc<dyn PlanStore>) {
    let store: &dyn PlanStore = &*store;
    let plan = record("0000000f", "update");
    store.create(&plan, false).await.expect("create");
    let (updated, decisions) = store
        .transact(
            plan.id(),
            Box::new(|p| {
                Ok(p.transition(PlanState::Plan, "found enough", None, at(5))?
                    .decision
                    .into_iter()
                    .collect())
            }),
        )
        .await
        .expect("a legal update");
    assert_eq!(
        updated.state(),
        PlanState::Plan,
        "update must return the changed record"
    );
    assert_eq!(
        store.load(plan.id()).await.expect("load"),
        updated,
        "update must write what it returned"
    );
    assert_eq!(
        decisions.len(),
        1,
        "update must append the decisions the mutation returned"
    );
    assert_eq!(decisions[0].number, 1, "the first decision must be D-001");
    assert_eq!(
        store.decisions(plan.id()).await.expect("decisions"),
        decisions,
        "appended decisions must be readable"
    );

    let refused = store
        .transact(
            plan.id(),
            Box::new(|p| {
                // Changes first, then refuses: the store must drop the half-done change.
                p.transition(
                    PlanState::Execute,
                    "go",
                    Some(&UserApproval::from_user("yes")?),
                    at(6),
                )?;
                p.transition(PlanState::Close, "skip reflection", None, at(7))?;
                Ok(Vec::new())
            }),
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(Error::Domain(DomainError::Plan(
                PlanError::IllegalTransition { .. }
            )))
        ),
        "a refused mutation must come back as Error::Domain, got {refused:?}"
    );
    assert_eq!(
        store.load(plan.id()).await.expect("load"),
        updated,
        "a refused mutation must change nothing"
    );
    assert_eq!(
        store.decisions(plan.id()).await.expect("decisions").len(),
        1,
        "a refused mutation must append nothing"
    );
}

pub async fn decisions_number_monotonically(store: Arc<dyn PlanStore>) {
    let store: &dyn PlanStore = &*store;
    let plan = record("00000010", "decisions");
    store.create(&plan, false).await.expect("create");
    let date = at(0).date_naive();
    let mut numbers = Vec::new();
    for body in ["first", "second", "third"] {
        let draft =
            DecisionDraft::new(PlanState::Explore, PlanState::Explore, date, body).expect("draft");
        let decision = store
            .append_decision(plan.id(), draft)
            .await
            .expect("append");
        assert_eq!(decision.body, body, "append must keep the body");
        numbers.push(decision.number);
    }
    let (_, from_update) = store
        .transact(
            plan.id(),
            Box::new(|p| {
                Ok(p.transition(PlanState::Plan, "ready", None, at(8))?
                    .decision
                    .into_iter()
                    .collect())
            }),
        )
        .await
        .expect("update");
    numbers.extend(from_update.iter().map(|d| d.number));
    assert_eq!(
        numbers,
        vec![1, 2, 3, 4],
        "decision numbers must rise by one across append and update"
    );
    let stored: Vec<u32> = store
        .decisions(plan.id())
        .await
        .expect("decisions")
        .iter()
        .map(|d| d.number)
        .collect();
    assert_eq!(stored, numbers, "decisions must read back in order");
}

/// How many writers the concurrency checks run at once.
pub const WRITERS: usize = 4;
/// How many decisions each writer appends in [`concurrent_appends_get_distinct_numbers`].
pub const APPENDS: usize = 5;

pub async fn concurrent_appends_get_distinct_numbers(store: Arc<dyn PlanStore>) {
    let plan = record("00000011", "concurrency");
    store.create(&plan, false).await.expect("create");
    let date = at(0).date_naive();
    let numbers = std::sync::Mutex::new(Vec::new());
    on_threads(&store, WRITERS, |store, writer| {
        let id = plan.id().clone();
        let numbers = &numbers;
        async move {
            for i in 0..APPENDS {
                let draft = DecisionDraft::new(
                    PlanState::Explore,
                    PlanState::Explore,
                    date,
                    &format!("writer {writer} entry {i}"),
                )
                .expect("draft");
                let number = store
                    .append_decision(&id, draft)
                    .await
                    .expect("concurrent append")
                    .number;
                numbers
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(number);
            }
        }
    });
    let mut numbers = numbers.into_inner().unwrap_or_else(|e| e.into_inner());
    numbers.sort_unstable();
    let total = (WRITERS * APPENDS) as u32;
    assert_eq!(
        numbers,
        (1..=total).collect::<Vec<_>>(),
        "concurrent appends must get distinct consecutive numbers"
    );
    assert_eq!(
        store.decisions(plan.id()).await.expect("decisions").len(),
        WRITERS * APPENDS,
        "every concurrent append must be kept"
    );
}

/// Each thread records one failure on each of two areas, three threads in all: a lost update
/// shows as fewer than three strikes on an area (three is as many as the rule allows).
pub async fn concurrent_updates_lose_nothing(store: Arc<dyn PlanStore>) {
    let plan = record("00000012", "lost updates");
    store.create(&plan, false).await.expect("create");
    let approval = UserApproval::from_user("ok").expect("approval");
    store
        .transact(
            plan.id(),
            Box::new(move |p| {
                p.transition(PlanState::Plan, "ready", None, at(1))?;
                p.transition(PlanState::Execute, "approved", Some(&approval), at(2))?;
                Ok(Vec::new())
            }),
        )
        .await
        .expect("reach EXECUTE");
    on_threads(&store, 3, |store, writer| {
        let id = plan.id().clone();
        async move {
            for area in ["area-0", "area-1"] {
                store
                    .transact(
                        &id,
                        Box::new(move |p| {
                            p.record_failure(area)?;
                            Ok(Vec::new())
                        }),
                    )
                    .await
                    .unwrap_or_else(|e| panic!("writer {writer}, {area}: {e}"));
            }
        }
    });
    let loaded = store.load(plan.id()).await.expect("load");
    assert_eq!(
        (loaded.strikes_on("area-0"), loaded.strikes_on("area-1")),
        (3, 3),
        "every concurrent update must be kept"
    );
}

pub async fn transact_with_returns_the_mutation_value(store: Arc<dyn PlanStore>) {
    let plan = record("00000013", "valued");
    store.create(&plan, false).await.expect("create");
    let (written, decisions, value) = store
        .transact_with(plan.id(), |p| {
            let outcome = p.transition(PlanState::Plan, "ready", None, at(1))?;
            Ok((outcome.to, outcome.decision.into_iter().collect()))
        })
        .await
        .expect("transition");
    assert_eq!(
        (value, written.state()),
        (PlanState::Plan, PlanState::Plan),
        "transact_with must hand back what the mutation computed, with the record as written"
    );
    assert_eq!(
        store.decisions(plan.id()).await.expect("decisions"),
        decisions,
        "the decisions returned are the ones appended"
    );
}

pub async fn missing_plans_are_not_found(store: Arc<dyn PlanStore>) {
    let store: &dyn PlanStore = &*store;
    let missing = id("0badf00d");
    assert!(
        store.load(&missing).await.is_err_and(|e| is_not_found(&e)),
        "load of a missing plan must be NotFound"
    );
    let update = store.transact(&missing, Box::new(|_| Ok(Vec::new()))).await;
    assert!(
        update.is_err_and(|e| is_not_found(&e)),
        "update of a missing plan must be NotFound"
    );
    let draft = DecisionDraft::new(PlanState::Explore, PlanState::Plan, at(0).date_naive(), "x")
        .expect("draft");
    let append = store.append_decision(&missing, draft).await;
    assert!(
        append.is_err_and(|e| is_not_found(&e)),
        "append to a missing plan must be NotFound"
    );
    assert!(
        store
            .decisions(&missing)
            .await
            .is_err_and(|e| is_not_found(&e)),
        "decisions of a missing plan must be NotFound"
    );
    let doc = store.read_document(&missing, PlanDocument::Plan).await;
    assert!(
        doc.is_err_and(|e| is_not_found(&e)),
        "documents of a missing plan must be NotFound"
    );
}

pub async fn checkpoints_number_on_and_keep_the_plan(store: Arc<dyn PlanStore>) {
    let store: &dyn PlanStore = &*store;
    let plan = record("000000c1", "checkpoint me");
    store.create(&plan, false).await.expect("create");
    assert!(
        store.checkpoints(plan.id()).await.expect("list").is_empty(),
        "a new plan must have no checkpoints"
    );
    let first = store
        .write_checkpoint(plan.id(), "precompact")
        .await
        .expect("first checkpoint");
    let second = store
        .write_checkpoint(plan.id(), "execute-exit")
        .await
        .expect("second checkpoint");
    assert_eq!(first, "001-precompact", "checkpoints are numbered from 001");
    assert_eq!(second, "002-execute-exit", "numbers rise by one");
    assert_eq!(
        store.checkpoints(plan.id()).await.expect("list"),
        vec![first, second],
        "checkpoints are listed oldest first"
    );
    assert_eq!(
        store.load(plan.id()).await.expect("load"),
        plan,
        "a checkpoint must not change the plan"
    );
    let missing = id("0badf00d");
    assert!(
        store
            .write_checkpoint(&missing, "x")
            .await
            .is_err_and(|e| is_not_found(&e)),
        "a checkpoint of a missing plan must be NotFound"
    );
}

pub async fn findings_are_appended_in_order(store: Arc<dyn PlanStore>) {
    let store: &dyn PlanStore = &*store;
    let plan = record("000000f1", "find things");
    store.create(&plan, false).await.expect("create");
    let before = store
        .read_document(plan.id(), PlanDocument::Findings)
        .await
        .expect("findings");
    let one = Finding::new("the parser is lenient", None).expect("finding");
    let two = Finding::new("D-001 holds: tokens expire", Some("auth.md")).expect("finding");
    store.append_finding(plan.id(), &one).await.expect("append");
    store.append_finding(plan.id(), &two).await.expect("append");
    let after = store
        .read_document(plan.id(), PlanDocument::Findings)
        .await
        .expect("findings");
    assert!(after.starts_with(&before), "findings are only appended to");
    let added = &after[before.len()..];
    let first = added.find("the parser is lenient").expect("first finding");
    let second = added
        .find("D-001 holds: tokens expire")
        .expect("second finding");
    assert!(first < second, "findings keep their order: {added:?}");
    assert!(
        Finding::new("x", Some("../escape")).is_err(),
        "a details file outside findings/ must be refused"
    );
    assert!(
        store
            .append_finding(&id("0badf00d"), &one)
            .await
            .is_err_and(|e| is_not_found(&e)),
        "a finding for a missing plan must be NotFound"
    );
}
