//! The filesystem plan store: the shared contract, then what only a disk can get wrong.

use std::path::Path;
use std::sync::Arc;

use cairn_domain::plan::{
    DecisionDraft, PlanError, PlanId, PlanRecord, PlanState, PlanStore, UserApproval,
};
use cairn_domain::ports::Fresh;
use cairn_domain::{DomainError, Error, StoreError};
use cairn_storage_fs::FsPlanStore;
use chrono::{TimeZone, Utc};

mod support;

fn fresh() -> Fresh<dyn PlanStore> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FsPlanStore::new(dir.path());
    Fresh {
        store: Arc::new(store),
        guard: Box::new(dir),
    }
}

cairn_domain::plan_store_contract!(fs_contract, fresh);

const ID: &str = ".plan_2026-03-14_0000abcd";
/// Child processes in [`separate_processes_lose_no_update_and_share_no_number`]: three, because
/// three failures in one area is as many as the rule records.
const PROCESSES: usize = 3;
const APPENDS: usize = 5;

fn at(minute: u32) -> cairn_domain::time::Timestamp {
    Utc.with_ymd_and_hms(2026, 3, 14, 9, minute, 0)
        .single()
        .expect("time")
}

fn plan_id() -> PlanId {
    PlanId::parse(ID).expect("id")
}

fn record() -> PlanRecord {
    PlanRecord::new(plan_id(), "move sessions to tokens", at(0)).expect("record")
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(".claude").join(rel)).expect("read")
}

async fn created(root: &Path) -> FsPlanStore {
    let store = FsPlanStore::new(root);
    store.create(&record(), false).await.expect("create");
    store
}

/// The body of every child process of the process test; a no-op in an ordinary run (see
/// `support/mod.rs`).
#[test]
fn child_process_entry() {
    let Some(call) = support::child_call() else {
        return;
    };
    match call.role.as_str() {
        "plan-writer" => {
            let store = FsPlanStore::new(&call.dir);
            support::block_on(async {
                store
                    .transact(
                        &plan_id(),
                        Box::new(|p| {
                            p.record_failure("area")?;
                            Ok(Vec::new())
                        }),
                    )
                    .await
                    .expect("record a failure");
                for i in 0..APPENDS {
                    let draft = DecisionDraft::new(
                        PlanState::Execute,
                        PlanState::Execute,
                        at(0).date_naive(),
                        &format!("writer {} entry {i}", call.arg),
                    )
                    .expect("draft");
                    store
                        .append_decision(&plan_id(), draft)
                        .await
                        .expect("append");
                }
            });
        }
        "plan-create" => {
            let store = FsPlanStore::new(&call.dir);
            support::block_on(store.create(&record(), false)).expect("create");
        }
        "plan-transact" => {
            let store = FsPlanStore::new(&call.dir);
            support::block_on(store.transact(
                &plan_id(),
                Box::new(|p| {
                    p.record_failure("area")?;
                    let draft = DecisionDraft::new(
                        PlanState::Execute,
                        PlanState::Execute,
                        at(0).date_naive(),
                        "a failure in area",
                    )?;
                    Ok(vec![draft])
                }),
            ))
            .expect("transact");
        }
        other => panic!("unknown child role {other}"),
    }
}

/// A created plan, approved into EXECUTE (where failures and fix attempts are recorded).
async fn executing(root: &Path) -> FsPlanStore {
    let store = created(root).await;
    let approval = UserApproval::from_user("go").expect("approval");
    store
        .transact(
            &plan_id(),
            Box::new(move |p| {
                p.transition(PlanState::Plan, "ready", None, at(1))?;
                p.transition(PlanState::Execute, "approved", Some(&approval), at(2))?;
                Ok(Vec::new())
            }),
        )
        .await
        .expect("reach EXECUTE");
    store
}

/// The lock must serialise writers that share nothing but the files.
#[test]
fn separate_processes_lose_no_update_and_share_no_number() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::block_on(executing(dir.path()));
    let args: Vec<String> = (0..PROCESSES).map(|w| w.to_string()).collect();
    support::run_together("plan-writer", dir.path(), &args);
    support::block_on(async {
        let loaded = store.load(&plan_id()).await.expect("load");
        assert_eq!(
            loaded.strikes_on("area"),
            3,
            "every process's update is kept"
        );
        let numbers: Vec<u32> = store
            .decisions(&plan_id())
            .await
            .expect("decisions")
            .iter()
            .map(|d| d.number)
            .collect();
        let total = u32::try_from(PROCESSES * APPENDS).expect("small");
        assert_eq!(numbers, (1..=total).collect::<Vec<_>>());
    });
}

/// Runs `create` in a child that aborts at `failpoint`; the child must die there.
fn create_crashing_at(root: &Path, failpoint: &str) {
    run_crashing_at("plan-create", root, failpoint);
}

/// Runs the child `role` with `failpoint` armed; the child must die there.
fn run_crashing_at(role: &str, root: &Path, failpoint: &str) {
    support::run_crashing_at(role, root, "", failpoint);
}

#[test]
fn a_crash_before_the_plan_directory_is_renamed_leaves_no_plan() {
    let dir = tempfile::tempdir().expect("tempdir");
    create_crashing_at(dir.path(), "plan:before-dir-rename");
    let store = FsPlanStore::new(dir.path());
    support::block_on(async {
        assert!(
            store.list().await.expect("list").is_empty(),
            "no half-built plan is listed"
        );
        assert_eq!(store.current().await.expect("current"), None);
        let temp = dir.path().join(".claude/.plan-temp");
        let entries = |temp: &Path| std::fs::read_dir(temp).map_or(0, |d| d.count());
        assert_eq!(
            entries(&temp),
            1,
            "the half-built directory is left as debris"
        );
        store
            .create(&record(), false)
            .await
            .expect("a retry succeeds");
        assert_eq!(store.load(&plan_id()).await.expect("load"), record());
        assert_eq!(entries(&temp), 0, "the next create removes the debris");
    });
}

#[test]
fn a_crash_before_the_pointer_moves_leaves_a_whole_plan_not_current() {
    let dir = tempfile::tempdir().expect("tempdir");
    create_crashing_at(dir.path(), "plan:after-dir-create");
    let store = FsPlanStore::new(dir.path());
    support::block_on(async {
        assert_eq!(store.load(&plan_id()).await.expect("whole plan"), record());
        assert_eq!(store.current().await.expect("current"), None);
        store
            .set_current(&plan_id())
            .await
            .expect("the plan can be pointed at by hand");
    });
}

/// Issue #16: a transaction writes its intent ahead (`.cairn-journal`), so a crash at any step —
/// before a file is replaced, between state.md and decisions.md, after both — ends, at the next
/// open, in the new state with its decision logged exactly once, and the log numbering on.
#[test]
fn a_crash_at_any_step_of_a_transaction_ends_with_state_and_decision_together() {
    for failpoint in [
        "plan:journal-after-intent",
        "plan:journal-after-first-file",
        "plan:journal-after-files",
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = support::block_on(executing(dir.path()));
        let journal = dir.path().join(format!(".claude/{ID}/.cairn-journal"));
        run_crashing_at("plan-transact", dir.path(), failpoint);
        assert!(
            journal.is_file(),
            "{failpoint}: the intent is left for the next open"
        );
        support::block_on(async {
            let loaded = store.load(&plan_id()).await.expect("state.md reads");
            assert_eq!(
                loaded.strikes_on("area"),
                1,
                "{failpoint}: the change stands"
            );
            assert!(
                !journal.exists(),
                "{failpoint}: the open finished the intent"
            );
            let decisions = store.decisions(&plan_id()).await.expect("decisions");
            let logged = decisions
                .iter()
                .filter(|d| d.body.contains("a failure in area"))
                .count();
            assert_eq!(logged, 1, "{failpoint}: the decision is logged once");
            let draft = DecisionDraft::new(
                PlanState::Execute,
                PlanState::Execute,
                at(0).date_naive(),
                "after the crash",
            )
            .expect("draft");
            let next = store
                .append_decision(&plan_id(), draft)
                .await
                .expect("append");
            assert_eq!(next.number as usize, decisions.len() + 1, "{failpoint}");
        });
    }
}

/// The transaction's change is decided before anything is written: a crash before the intent
/// is durable changes nothing at all.
#[test]
fn a_crash_before_the_intent_is_durable_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::block_on(executing(dir.path()));
    let before = (
        read(dir.path(), &format!("{ID}/state.md")),
        read(dir.path(), &format!("{ID}/decisions.md")),
    );
    run_crashing_at("plan-transact", dir.path(), "atomic:after-temp-fsync");
    support::block_on(async {
        store.load(&plan_id()).await.expect("load");
    });
    assert_eq!(
        before,
        (
            read(dir.path(), &format!("{ID}/state.md")),
            read(dir.path(), &format!("{ID}/decisions.md")),
        )
    );
}

#[tokio::test]
async fn the_files_on_disk_have_the_documented_shapes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = created(dir.path()).await;
    let root = dir.path();
    assert_eq!(read(root, ".current_plan"), format!("{ID}\n"));
    let state = read(root, &format!("{ID}/state.md"));
    assert!(state.starts_with("# Current State: EXPLORE\n"), "{state}");
    assert!(state.contains("\n## Iteration: 0\n"), "{state}");
    assert!(state.contains("\n## Current Plan Step: N/A\n"), "{state}");
    assert_eq!(
        read(root, &format!("{ID}/decisions.md")),
        "# Decision Log\n\n"
    );
    let plan = read(root, &format!("{ID}/plan.md"));
    assert!(
        plan.starts_with("# Plan v1: move sessions to tokens\n"),
        "{plan}"
    );
    assert!(read(root, &format!("{ID}/findings.md")).starts_with("# Findings\n"));
    assert!(read(root, &format!("{ID}/progress.md")).starts_with("# Progress\n"));
    for sub in ["findings", "checkpoints"] {
        assert!(root.join(".claude").join(ID).join(sub).is_dir(), "{sub}/");
    }
    assert!(
        !root.join(".claude").join(ID).join("summary.md").exists(),
        "summary.md is the agent's, at CLOSE"
    );

    store
        .transact(
            &plan_id(),
            Box::new(|p| {
                Ok(p.transition(PlanState::Plan, "found enough", None, at(5))?
                    .decision
                    .into_iter()
                    .collect())
            }),
        )
        .await
        .expect("transition");
    let state = read(root, &format!("{ID}/state.md"));
    assert!(state.starts_with("# Current State: PLAN\n"), "{state}");
    let log = read(root, &format!("{ID}/decisions.md"));
    assert!(
        log.starts_with("# Decision Log\n\n## D-001 | EXPLORE → PLAN | 2026-03-14\n"),
        "{log}"
    );
}

#[tokio::test]
async fn appending_keeps_every_earlier_byte_of_the_decision_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = created(dir.path()).await;
    let path = dir.path().join(".claude").join(ID).join("decisions.md");
    // A hand-written entry, including a number cairn never gave out: numbering goes on above it.
    let by_hand = "# Decision Log\n\nnotes kept by hand\n\n## D-007 | EXPLORE → EXPLORE | 2026-03-01\nwritten by hand";
    std::fs::write(&path, by_hand).expect("write");
    let draft = DecisionDraft::new(
        PlanState::Explore,
        PlanState::Explore,
        at(0).date_naive(),
        "next",
    )
    .expect("draft");
    let decision = store
        .append_decision(&plan_id(), draft)
        .await
        .expect("append");
    assert_eq!(decision.number, 8);
    let after = std::fs::read_to_string(&path).expect("read");
    assert!(after.starts_with(by_hand), "{after}");
    assert!(after.ends_with("## D-008 | EXPLORE → EXPLORE | 2026-03-14\nnext\n\n"));
}

#[tokio::test]
async fn a_refused_mutation_leaves_state_md_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = created(dir.path()).await;
    let path = dir.path().join(".claude").join(ID).join("state.md");
    let before = std::fs::read(&path).expect("read");
    let refused = store
        .transact(
            &plan_id(),
            Box::new(|p| {
                p.transition(PlanState::Plan, "ready", None, at(1))?;
                p.transition(PlanState::Close, "skip", None, at(2))?;
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
        "{refused:?}"
    );
    assert_eq!(std::fs::read(&path).expect("read"), before);
    let temp = dir.path().join(".claude/.plan-temp");
    let debris = std::fs::read_dir(&temp).map_or(0, |d| d.count());
    assert_eq!(debris, 0, "no staged write is left behind");
}

#[tokio::test]
async fn a_malformed_pointer_is_corrupt_and_names_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = created(dir.path()).await;
    let pointer = dir.path().join(".claude/.current_plan");
    std::fs::write(&pointer, "../../etc\n").expect("write");
    match store.current().await {
        Err(StoreError::Corrupt { path, .. }) => assert!(path.ends_with(".current_plan"), "{path}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let listed = store
        .list()
        .await
        .expect("a bad pointer does not hide the plans");
    assert_eq!(listed.len(), 1);
    assert!(!listed[0].current);
    // A pointer written by `echo` is fine.
    std::fs::write(&pointer, format!("{ID}\n")).expect("write");
    assert_eq!(store.current().await.expect("current"), Some(plan_id()));
}

#[tokio::test]
async fn an_unreadable_pointer_refuses_create_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A directory where the pointer goes: it cannot be read, so whether a plan is active is
    // unknown and create must not guess.
    std::fs::create_dir_all(dir.path().join(".claude/.current_plan/blocked")).expect("block");
    let store = FsPlanStore::new(dir.path());
    let result = store.create(&record(), false).await;
    assert!(
        matches!(result, Err(Error::Store(StoreError::Io { .. }))),
        "{result:?}"
    );
    assert!(
        store
            .load(&plan_id())
            .await
            .is_err_and(|e| matches!(e, StoreError::NotFound { .. })),
        "no plan directory is written"
    );
}

#[tokio::test]
async fn an_unreadable_state_md_is_corrupt_not_missing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = created(dir.path()).await;
    let path = dir.path().join(".claude").join(ID).join("state.md");
    std::fs::write(&path, "# Current State: DANCING\n").expect("write");
    match store.load(&plan_id()).await {
        Err(StoreError::Corrupt { path, detail }) => {
            assert!(path.ends_with("state.md"), "{path}");
            assert!(detail.contains("DANCING"), "{detail}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[tokio::test]
async fn a_damaged_state_md_is_listed_as_damaged_beside_the_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = created(dir.path()).await;
    let other = PlanRecord::new(
        PlanId::parse(".plan_2026-03-15_0000beef").expect("id"),
        "the second plan",
        at(1),
    )
    .expect("record");
    store.create(&other, true).await.expect("create");
    std::fs::write(
        dir.path().join(".claude").join(ID).join("state.md"),
        "# Current State: SLEEPING\n",
    )
    .expect("damage");
    let listed = store
        .list()
        .await
        .expect("one damaged plan must not fail the listing");
    assert_eq!(listed.len(), 2);
    let damage = listed[0]
        .damaged
        .as_deref()
        .expect("the damaged plan is marked");
    assert!(damage.contains("state.md"), "{damage}");
    assert_eq!(listed[1].damaged, None);
    assert_eq!(listed[1].goal, "the second plan");
    assert!(listed[1].current);
}

#[tokio::test]
async fn peek_active_reads_only_the_pointer_and_the_state_heading() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(
        cairn_storage_fs::peek_active(dir.path()).expect("no pointer"),
        None
    );
    let _store = created(dir.path()).await;
    assert_eq!(
        cairn_storage_fs::peek_active(dir.path()).expect("peek"),
        Some((plan_id(), PlanState::Explore))
    );
    // A huge state.md is read only as far as its first bytes: the heading decides.
    let state = dir.path().join(".claude").join(ID).join("state.md");
    let mut text = "# Current State: REFLECT\n".to_owned();
    text.push_str(&"- filler line that is never read\n".repeat(100_000));
    std::fs::write(&state, &text).expect("write");
    assert_eq!(
        cairn_storage_fs::peek_active(dir.path()).expect("peek"),
        Some((plan_id(), PlanState::Reflect))
    );
    std::fs::write(&state, "# Current State: CLOSE\n").expect("write");
    assert_eq!(
        cairn_storage_fs::peek_active(dir.path()).expect("closed"),
        None
    );
    std::fs::write(&state, "garbage\n").expect("write");
    assert!(matches!(
        cairn_storage_fs::peek_active(dir.path()),
        Err(StoreError::Corrupt { .. })
    ));
    // A pointer naming a missing directory is no active plan.
    std::fs::remove_dir_all(dir.path().join(".claude").join(ID)).expect("remove");
    assert_eq!(
        cairn_storage_fs::peek_active(dir.path()).expect("dangling"),
        None
    );
}

#[tokio::test]
async fn a_checkpoint_copies_state_and_plan_into_checkpoints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = created(dir.path()).await;
    let name = store
        .write_checkpoint(&plan_id(), "precompact")
        .await
        .expect("checkpoint");
    assert_eq!(name, "001-precompact");
    let copy = dir
        .path()
        .join(".claude")
        .join(ID)
        .join("checkpoints")
        .join(&name);
    assert_eq!(
        std::fs::read_to_string(copy.join("state.md")).expect("state copy"),
        read(dir.path(), &format!("{ID}/state.md"))
    );
    assert_eq!(
        std::fs::read_to_string(copy.join("plan.md")).expect("plan copy"),
        read(dir.path(), &format!("{ID}/plan.md"))
    );
    let temp = dir.path().join(".claude/.plan-temp");
    let debris = std::fs::read_dir(&temp).map_or(0, |d| d.count());
    assert_eq!(debris, 0, "no staged checkpoint is left behind");
}
