//! The contract every [`ProjectStore`] adapter must honour, as an executable suite.
//!
//! Each check is a `pub async fn` taking a fresh, empty store; an adapter's tests turn every one
//! into its own `#[test]` with [`project_store_contract!`](crate::project_store_contract). Each
//! check names the guarantee it tests, so a failure says which promise was broken.

use std::sync::Arc;

use chrono::{Duration, TimeZone, Utc};

use crate::error::Entity;
use crate::error::Error;
use crate::ports::on_threads;
use crate::time::Timestamp;

use super::events::ProjectEvent;
use super::model::*;
use super::store::{Changes, Mutation, ProjectStore};
use super::tasks::{MoveDetail, NewTask};

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5)
        .single()
        .unwrap_or_default()
}

fn project(id: &str) -> Project {
    Project {
        id: id
            .parse()
            .unwrap_or_else(|e| panic!("test project id: {e}")),
        name: format!("Project {id}"),
        goal: "Keep the contract honest".into(),
        kind: ProjectType::Software,
        status: ProjectStatus::Ready,
        phases: Vec::new(),
        created_at: t0(),
        updated_at: t0(),
        extra: Default::default(),
    }
}

/// How many entries of `kind` the log of `project` holds.
async fn logged(store: &dyn ProjectStore, project: &ProjectId, kind: &str) -> usize {
    store
        .read_log(project, None)
        .await
        .unwrap_or_else(|e| panic!("contract: reading the log must succeed: {e}"))
        .records
        .iter()
        .filter(|r| r.kind == kind)
        .count()
}

/// A new, empty project `id` in `store`.
async fn created(store: &dyn ProjectStore, id: &str) -> Project {
    let p = project(id);
    store
        .create(&p, t0(), vec![])
        .await
        .unwrap_or_else(|e| panic!("contract: creating project {id} must succeed: {e}"));
    p
}

async fn add(store: &dyn ProjectStore, id: &ProjectId, title: &str) -> TaskId {
    let title = title.to_owned();
    let (_, created) = store
        .transact_with(id, t0(), |s: &mut ProjectState| {
            let (task, events) = s.tasks.add_task(NewTask::titled(title), t0())?;
            Ok((Changes::events(events), task))
        })
        .await
        .unwrap_or_else(|e| panic!("contract: adding a task must succeed: {e}"));
    created
}

/// Generates one `#[test]` per check of this suite, in a module `$name`, each on a fresh store
/// from `$fresh` (a `fn() -> Fresh<dyn ProjectStore>` in scope): `project_store_contract!(memory,
/// fresh);`. Adapters that several processes share also run [`concurrency_writer`] from separate
/// processes (see `crates/storage-fs/tests/project_store.rs`).
#[macro_export]
macro_rules! project_store_contract {
    ($name:ident, $fresh:ident) => {
        $crate::contract_tests!($name, $fresh; project;
            create_then_load_round_trips,
            create_twice_is_refused,
            unknown_project_is_not_found,
            list_is_sorted,
            refused_mutation_writes_nothing,
            transaction_saves_state_and_logs_in_order,
            transact_with_returns_the_mutation_value,
            unknown_fields_survive_a_transaction,
            concurrent_transactions_lose_no_update,
            checkpoints_number_from_one_and_keep_ten,
            keep_checkpoint_never_answers_with_an_older_list,
            transaction_checkpoint_is_written_and_logged,
            restore_checkpoint_round_trips,
            log_tail_returns_the_newest,
            research_briefs_round_trip,
            velocity_round_trips,
            concurrent_velocity_updates_lose_none,
            a_transaction_saves_the_velocity_it_says_it_saved,
            export_then_import_round_trips,
        );
    };
}

pub async fn create_then_load_round_trips(store: Arc<dyn ProjectStore>) {
    let p = project("alpha");
    store
        .create(
            &p,
            t0(),
            vec![ProjectEvent::ProjectCreated {
                project: p.id.clone(),
                name: p.name.clone(),
            }],
        )
        .await
        .unwrap_or_else(|e| panic!("create: {e}"));
    let loaded = store
        .load(&p.id)
        .await
        .unwrap_or_else(|e| panic!("load: {e}"));
    assert_eq!(
        loaded.state.project, p,
        "contract: load returns the created project unchanged"
    );
    assert!(
        loaded.state.tasks.tasks.is_empty(),
        "contract: a new project has no tasks"
    );
    assert_eq!(
        loaded.recovered, None,
        "contract: a healthy store reports no recovery"
    );
    assert_eq!(
        store
            .load_project(&p.id)
            .await
            .unwrap_or_else(|e| panic!("load_project: {e}")),
        p
    );
    let log = store
        .read_log(&p.id, None)
        .await
        .unwrap_or_else(|e| panic!("read_log: {e}"));
    assert_eq!(
        log.records.len(),
        1,
        "contract: create logs the events given"
    );
    assert_eq!(log.records[0].kind, "PROJECT_CREATED");
}

pub async fn create_twice_is_refused(store: Arc<dyn ProjectStore>) {
    let p = project("beta");
    store
        .create(&p, t0(), vec![])
        .await
        .unwrap_or_else(|e| panic!("create: {e}"));
    let mut other = p.clone();
    other.name = "Impostor".into();
    let err = store.create(&other, t0(), vec![]).await;
    assert!(
        matches!(
            err,
            Err(crate::StoreError::AlreadyExists {
                entity: Entity::Project,
                ..
            })
        ),
        "contract: creating an existing project fails with AlreadyExists, got {err:?}"
    );
    assert_eq!(
        store.load_project(&p.id).await.map(|p| p.name).ok(),
        Some(p.name),
        "contract: a refused create changes nothing"
    );
}

pub async fn unknown_project_is_not_found(store: Arc<dyn ProjectStore>) {
    let id: ProjectId = "nowhere".parse().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(
            store.load(&id).await,
            Err(crate::StoreError::NotFound {
                entity: Entity::Project,
                ..
            })
        ),
        "contract: load of an unknown project is NotFound"
    );
    let tx = store
        .transact(
            &id,
            t0(),
            Box::new(|_: &mut ProjectState| Ok(Changes::default())),
        )
        .await;
    assert!(
        matches!(
            tx,
            Err(Error::Store(crate::StoreError::NotFound {
                entity: Entity::Project,
                ..
            }))
        ),
        "contract: transact on an unknown project is NotFound"
    );
}

pub async fn list_is_sorted(store: Arc<dyn ProjectStore>) {
    assert!(
        store
            .list()
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "contract: a fresh store lists no projects"
    );
    for id in ["zeta", "alpha", "mid-1"] {
        store
            .create(&project(id), t0(), vec![])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let ids: Vec<String> = store
        .list()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|i| i.to_string())
        .collect();
    assert_eq!(ids, ["alpha", "mid-1", "zeta"], "contract: list is sorted");
}

pub async fn refused_mutation_writes_nothing(store: Arc<dyn ProjectStore>) {
    let p = created(&*store, "gamma").await;
    let t = add(&*store, &p.id, "first task").await;
    let before = store
        .load(&p.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .state;
    let log_before = store
        .read_log(&p.id, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .records
        .len();
    let t2 = t.clone();
    let result = store
        .transact(
            &p.id,
            t0(),
            Box::new(move |s: &mut ProjectState| {
                s.project.name = "half-applied".into();
                s.tasks
                    .move_task(&t2, TaskStatus::Complete, MoveDetail::default(), t0())?;
                Ok(Changes::default())
            }),
        )
        .await;
    assert!(
        matches!(result, Err(Error::Domain(_))),
        "contract: a refusing mutation's error is returned as Error::Domain, got {result:?}"
    );
    let after = store
        .load(&p.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .state;
    assert_eq!(
        after, before,
        "contract: a refused mutation changes nothing, not even what it changed before refusing"
    );
    let log_after = store
        .read_log(&p.id, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .records
        .len();
    assert_eq!(
        log_after, log_before,
        "contract: a refused mutation logs nothing"
    );
}

pub async fn transaction_saves_state_and_logs_in_order(store: Arc<dyn ProjectStore>) {
    let p = created(&*store, "delta").await;
    let a = add(&*store, &p.id, "task a").await;
    let b = add(&*store, &p.id, "task b").await;
    assert_eq!(
        (a.as_str(), b.as_str()),
        ("T-001", "T-002"),
        "contract: ids come from the domain, densely"
    );
    let a2 = a.clone();
    let committed = store
        .transact(
            &p.id,
            t0() + Duration::minutes(5),
            Box::new(move |s: &mut ProjectState| {
                let events = s.tasks.move_task(
                    &a2,
                    TaskStatus::InProgress,
                    MoveDetail::default(),
                    t0() + Duration::minutes(5),
                )?;
                Ok(Changes::events(events))
            }),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        committed.state.tasks.get(&a).map(|t| t.status),
        Some(TaskStatus::InProgress),
        "contract: transact returns the new state"
    );
    let reloaded = store
        .load(&p.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .state;
    assert_eq!(
        reloaded, committed.state,
        "contract: what transact returns is what load reads back"
    );
    let kinds: Vec<String> = store
        .read_log(&p.id, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .records
        .into_iter()
        .map(|r| r.kind)
        .collect();
    assert_eq!(
        kinds,
        ["TASK_CREATED", "TASK_CREATED", "TASK_STARTED"],
        "contract: events are logged in order"
    );
}

pub async fn unknown_fields_survive_a_transaction(store: Arc<dyn ProjectStore>) {
    let p = created(&*store, "epsilon").await;
    let a = add(&*store, &p.id, "task a").await;
    let a2 = a.clone();
    store
        .transact(
            &p.id,
            t0(),
            Box::new(move |s: &mut ProjectState| {
                if let Some(t) = s.tasks.tasks.iter_mut().find(|t| t.id == a2) {
                    t.extra.insert(
                        "x_other_tool".into(),
                        serde_json::json!({"keep": [1, 2, 3]}),
                    );
                }
                s.project
                    .extra
                    .insert("x_owner".into(), serde_json::json!("team-a"));
                Ok(Changes::default())
            }),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    add(&*store, &p.id, "task b").await;
    let state = store
        .load(&p.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .state;
    assert_eq!(
        state
            .tasks
            .get(&a)
            .and_then(|t| t.extra.get("x_other_tool")),
        Some(&serde_json::json!({"keep": [1, 2, 3]})),
        "contract: unknown task fields survive later writes"
    );
    assert_eq!(
        state.project.extra.get("x_owner"),
        Some(&serde_json::json!("team-a")),
        "contract: unknown project fields survive"
    );
}

/// How many writers the concurrency checks run at once, and how many updates each makes.
pub const WRITERS: usize = 4;
pub const UPDATES: usize = 10;

/// The project the concurrency checks write to.
pub fn concurrency_project() -> ProjectId {
    project("zeta").id
}

/// Creates [`concurrency_project`]; run once before the writers.
pub async fn concurrency_setup(store: &dyn ProjectStore) {
    created(store, "zeta").await;
}

/// One writer of a concurrency check: `updates` transactions, each adding one task. Runs on a
/// thread of its own, or in a process of its own for adapters that processes share.
pub async fn concurrency_writer(store: &dyn ProjectStore, writer: usize, updates: usize) {
    for i in 0..updates {
        add(
            store,
            &concurrency_project(),
            &format!("worker {writer} task {i}"),
        )
        .await;
    }
}

/// What `writers` × `updates` concurrent [`concurrency_writer`] transactions must leave behind.
pub async fn concurrency_verify(store: &dyn ProjectStore, writers: usize, updates: usize) {
    let id = concurrency_project();
    let total = writers * updates;
    let state = store
        .load(&id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .state;
    assert_eq!(
        state.tasks.tasks.len(),
        total,
        "contract: concurrent transactions lose no update"
    );
    let mut ids: Vec<u64> = state.tasks.tasks.iter().map(|t| t.id.number()).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        (1..=total as u64).collect::<Vec<_>>(),
        "contract: concurrent adds never reuse an id"
    );
    for writer in 0..writers {
        let mine: Vec<&str> = state
            .tasks
            .tasks
            .iter()
            .map(|t| t.title.as_str())
            .filter(|t| t.starts_with(&format!("worker {writer} task ")))
            .collect();
        let expected: Vec<String> = (0..updates)
            .map(|i| format!("worker {writer} task {i}"))
            .collect();
        assert_eq!(
            mine, expected,
            "contract: each writer's updates land once each, in the order it made them"
        );
    }
    let created = logged(store, &id, "TASK_CREATED").await;
    assert_eq!(
        created, total,
        "contract: every committed transaction's events are logged"
    );
}

pub async fn concurrent_transactions_lose_no_update(store: Arc<dyn ProjectStore>) {
    concurrency_setup(&*store).await;
    on_threads(&store, WRITERS, |store, writer| async move {
        concurrency_writer(&*store, writer, UPDATES).await;
    });
    concurrency_verify(&*store, WRITERS, UPDATES).await;
}

pub async fn transact_with_returns_the_mutation_value(store: Arc<dyn ProjectStore>) {
    let p = created(&*store, "omicron").await;
    let (committed, (task, count)) = store
        .transact_with(&p.id, t0(), |s: &mut ProjectState| {
            let (task, events) = s.tasks.add_task(NewTask::titled("valued task"), t0())?;
            let count = s.tasks.tasks.len();
            Ok((Changes::events(events), (task, count)))
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (task.as_str(), count),
        ("T-001", 1),
        "contract: transact_with hands back what the mutation computed"
    );
    assert!(
        committed.state.tasks.get(&task).is_some(),
        "contract: the value and the committed state come from the same transaction"
    );
    let refused = store
        .transact_with(&p.id, t0(), |s: &mut ProjectState| {
            s.tasks
                .move_task(&task, TaskStatus::Complete, MoveDetail::default(), t0())?;
            Ok((Changes::default(), ()))
        })
        .await;
    assert!(
        matches!(refused, Err(Error::Domain(_))),
        "contract: a refusing mutation's error comes back from transact_with too, got {refused:?}"
    );
}

pub async fn checkpoints_number_from_one_and_keep_ten(store: Arc<dyn ProjectStore>) {
    let p = created(&*store, "eta").await;
    add(&*store, &p.id, "something").await;
    for i in 1..=12u32 {
        let info = store
            .write_checkpoint(&p.id, t0())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            info.number, i,
            "contract: checkpoints are numbered monotonically from 1"
        );
    }
    let numbers: Vec<u32> = store
        .list_checkpoints(&p.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|c| c.number)
        .collect();
    assert_eq!(
        numbers,
        (3..=12).collect::<Vec<_>>(),
        "contract: the newest ten are kept, listed in numeric order"
    );
    let written = logged(&*store, &p.id, "CHECKPOINT_WRITTEN").await;
    assert_eq!(written, 12, "contract: each checkpoint is logged");
}

/// `keep_checkpoint` answers with a checkpoint that holds the current tasks: the newest when it
/// already does (an adapter may write one anyway), never one taken before a change.
pub async fn keep_checkpoint_never_answers_with_an_older_list(store: Arc<dyn ProjectStore>) {
    let p = created(&*store, "iota").await;
    add(&*store, &p.id, "something").await;
    let keep = || async {
        store
            .keep_checkpoint(&p.id, t0())
            .await
            .unwrap_or_else(|e| panic!("keep_checkpoint: {e}"))
    };
    let newest = || async {
        let listed = store.list_checkpoints(&p.id).await;
        listed
            .unwrap_or_else(|e| panic!("{e}"))
            .last()
            .map(|c| c.number)
    };
    let (first, written) = keep().await;
    assert!(written, "contract: with no checkpoint, one is written");
    assert_eq!(newest().await, Some(first.number));
    let (again, written) = keep().await;
    assert_eq!(
        Some(again.number),
        newest().await,
        "contract: the checkpoint kept is the newest"
    );
    assert!(
        written || again.number == first.number,
        "contract: one not written now is the one that holds the list"
    );
    add(&*store, &p.id, "something else").await;
    let (after, written) = keep().await;
    assert!(
        written && after.number > again.number,
        "contract: after a change the list is written anew"
    );
    let count = logged(&*store, &p.id, "CHECKPOINT_WRITTEN").await;
    let expected = if again.number == first.number { 2 } else { 3 };
    assert_eq!(
        count, expected,
        "contract: each checkpoint written is logged"
    );
}

pub async fn transaction_checkpoint_is_written_and_logged(store: Arc<dyn ProjectStore>) {
    let p = created(&*store, "theta").await;
    add(&*store, &p.id, "something").await;
    let committed = store
        .transact(
            &p.id,
            t0(),
            Box::new(|_: &mut ProjectState| {
                Ok(Changes {
                    events: vec![ProjectEvent::PhaseComplete {
                        phase: "one".into(),
                        still_open: Vec::new(),
                    }],
                    checkpoint: true,
                    velocity: None,
                })
            }),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        committed.checkpoint,
        Some(1),
        "contract: a transaction asking for a checkpoint reports its number"
    );
    let kinds: Vec<String> = store
        .read_log(&p.id, Some(2))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .records
        .into_iter()
        .map(|r| r.kind)
        .collect();
    assert_eq!(
        kinds,
        ["PHASE_COMPLETE", "CHECKPOINT_WRITTEN"],
        "contract: the checkpoint entry follows the transaction's events"
    );
}

pub async fn restore_checkpoint_round_trips(store: Arc<dyn ProjectStore>) {
    let p = created(&*store, "iota").await;
    add(&*store, &p.id, "kept task").await;
    let cp = store
        .write_checkpoint(&p.id, t0())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    add(&*store, &p.id, "later task").await;
    let restored = store
        .restore_checkpoint(&p.id, cp.number, t0())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let titles: Vec<&str> = restored
        .state
        .tasks
        .tasks
        .iter()
        .map(|t| t.title.as_str())
        .collect();
    assert_eq!(
        titles,
        ["kept task"],
        "contract: restore brings back the checkpoint's tasks"
    );
    let numbers: Vec<u32> = store
        .list_checkpoints(&p.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|c| c.number)
        .collect();
    assert_eq!(
        numbers,
        [1, 2],
        "contract: restore first saves the replaced tasks as a new checkpoint"
    );
    assert!(
        matches!(
            store.restore_checkpoint(&p.id, 99, t0()).await,
            Err(crate::StoreError::NotFound {
                entity: Entity::Checkpoint,
                ..
            })
        ),
        "contract: restoring an unknown checkpoint is NotFound"
    );
}

pub async fn log_tail_returns_the_newest(store: Arc<dyn ProjectStore>) {
    let p = created(&*store, "kappa").await;
    for i in 0..30u32 {
        store
            .append_log(
                &p.id,
                t0(),
                vec![ProjectEvent::LoopIteration {
                    iteration: i,
                    detail: format!("pass {i}"),
                }],
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let tail = store
        .read_log(&p.id, Some(3))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let iterations: Vec<&str> = tail
        .records
        .iter()
        .filter_map(|r| r.get("iteration"))
        .collect();
    assert_eq!(
        iterations,
        ["27", "28", "29"],
        "contract: read_log with a tail returns the newest records, oldest first"
    );
    assert_eq!(tail.torn_tail, None);
    let all = store
        .read_log(&p.id, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        all.records.len(),
        30,
        "contract: append_log keeps every entry"
    );
    let typed = ProjectEvent::from_record(&all.records[5]);
    assert_eq!(
        typed,
        Some(ProjectEvent::LoopIteration {
            iteration: 5,
            detail: "pass 5".into()
        }),
        "contract: records read back as the events written"
    );
}

pub async fn research_briefs_round_trip(store: Arc<dyn ProjectStore>) {
    let p = created(&*store, "lambda").await;
    let t = add(&*store, &p.id, "researched").await;
    assert_eq!(
        store
            .research_modified(&p.id, &t)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        None,
        "contract: no brief until one is written"
    );
    store
        .write_research(&p.id, &t, "# Findings\n\nUse the index.\n", t0())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        store
            .research_modified(&p.id, &t)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_some(),
        "contract: a written brief has a modification time"
    );
    assert_eq!(
        store
            .read_research(&p.id, &t)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .as_deref(),
        Some("# Findings\n\nUse the index.\n")
    );
}

pub async fn velocity_round_trips(store: Arc<dyn ProjectStore>) {
    let p = created(&*store, "mu").await;
    assert_eq!(
        store
            .read_velocity(&p.id)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        None
    );
    let doc = TaskDoc::new(p.id.clone());
    let v = super::policy::velocity(&[], &doc, t0());
    store
        .write_velocity(&p.id, &v)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        store
            .read_velocity(&p.id)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        Some(v),
        "contract: velocity reads back as written"
    );
}

pub async fn concurrent_velocity_updates_lose_none(store: Arc<dyn ProjectStore>) {
    use super::policy::{self, Completion};
    let p = created(&*store, "xi").await;
    let doc = TaskDoc::new(p.id.clone());
    let declined = store
        .update_velocity(&p.id, &|previous| {
            assert_eq!(previous, None, "contract: an update of nothing sees None");
            None
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(declined, None);
    assert_eq!(
        store
            .read_velocity(&p.id)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        None,
        "contract: an update answering None writes nothing"
    );
    store
        .write_velocity(&p.id, &policy::velocity(&[], &doc, t0()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    const THREADS: usize = 4;
    const UPDATES: usize = 5;
    on_threads(&store, THREADS, |store, thread| {
        let (id, doc) = (p.id.clone(), doc.clone());
        async move {
            for i in 0..UPDATES {
                let done = Completion {
                    task: TaskId::from_number((thread * UPDATES + i + 1) as u64),
                    at: t0(),
                    actual_minutes: Some(5),
                    estimate_minutes: None,
                };
                store
                    .update_velocity(&id, &|previous| {
                        policy::velocity_after(&previous?, std::slice::from_ref(&done), &doc, t0())
                    })
                    .await
                    .unwrap_or_else(|e| panic!("contract: a velocity update must succeed: {e}"));
            }
        }
    });
    let last = store
        .read_velocity(&p.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("contract: the updates wrote a velocity"));
    assert_eq!(
        last.completed_count,
        THREADS * UPDATES,
        "contract: every concurrent velocity update takes effect, none is overwritten"
    );
}

/// A transaction asked to take completions into the velocity ([`Changes::velocity`]) either
/// saves the velocity it returns in [`super::store::Committed::velocity`] — the saved one's
/// window plus the new completions — or saves none and returns `None`; with no velocity saved
/// before, it has no window to add to and returns `None`.
pub async fn a_transaction_saves_the_velocity_it_says_it_saved(store: Arc<dyn ProjectStore>) {
    use super::policy::{self, Completion};
    let p = created(&*store, "velo").await;
    let task = add(&*store, &p.id, "done soon").await;
    let done = Completion {
        task,
        at: t0(),
        actual_minutes: Some(7),
        estimate_minutes: None,
    };
    let completing = |done: Completion| -> Mutation<'static> {
        Box::new(move |_: &mut ProjectState| {
            Ok(Changes {
                velocity: Some(vec![done]),
                ..Changes::default()
            })
        })
    };
    let nothing_saved = store
        .transact(&p.id, t0(), completing(done.clone()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        nothing_saved.velocity, None,
        "contract: with no velocity saved there is no window to add to"
    );
    assert_eq!(
        store
            .read_velocity(&p.id)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        None
    );
    let before = policy::velocity(&[], &nothing_saved.state.tasks, t0());
    store
        .write_velocity(&p.id, &before)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let committed = store
        .transact(&p.id, t0(), completing(done.clone()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let saved = store
        .read_velocity(&p.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    match committed.velocity {
        Some(velocity) => {
            let expected = policy::velocity_after(&before, &[done], &committed.state.tasks, t0());
            assert_eq!(Some(&velocity), expected.as_ref());
            assert_eq!(velocity.completed_count, before.completed_count + 1);
            assert_eq!(
                saved,
                Some(velocity),
                "contract: the velocity a transaction returns is the one it saved"
            );
        }
        None => assert_eq!(
            saved,
            Some(before),
            "contract: a transaction that returns no velocity saves none"
        ),
    }
}

pub async fn export_then_import_round_trips(store: Arc<dyn ProjectStore>) {
    let p = created(&*store, "nu").await;
    let first = add(&*store, &p.id, "first").await;
    add(&*store, &p.id, "second").await;
    store
        .write_checkpoint(&p.id, t0())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .write_research(&p.id, &first, "# Notes\n", t0())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let doc = TaskDoc::new(p.id.clone());
    let v = super::policy::velocity(&[], &doc, t0());
    store
        .write_velocity(&p.id, &v)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let dump = store
        .export_project(&p.id)
        .await
        .unwrap_or_else(|e| panic!("contract: export must succeed: {e}"));
    assert_eq!(dump.state.tasks.tasks.len(), 2);
    assert_eq!(dump.checkpoints.len(), 1);
    assert_eq!(dump.research.len(), 1);
    assert!(dump.velocity.is_some());
    assert!(
        dump.log.iter().any(|r| r.kind == "CHECKPOINT_WRITTEN"),
        "contract: the export holds the log"
    );
    match store.import_project(&dump, false).await {
        Err(crate::StoreError::AlreadyExists { .. }) => {}
        other => panic!("contract: importing over a project needs replace: {other:?}"),
    }
    let mut changed = dump.clone();
    changed.state.tasks.tasks.truncate(1);
    changed.log.truncate(1);
    changed.checkpoints.clear();
    changed.research.clear();
    changed.velocity = None;
    store
        .import_project(&changed, true)
        .await
        .unwrap_or_else(|e| panic!("contract: a replacing import must succeed: {e}"));
    assert_eq!(
        store
            .export_project(&p.id)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        changed,
        "contract: a replacing import leaves exactly the dump"
    );
    store
        .import_project(&dump, true)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        store
            .export_project(&p.id)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        dump,
        "contract: export then import round trips"
    );
    add(&*store, &p.id, "after the import").await;
}
