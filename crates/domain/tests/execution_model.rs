//! The execution-session lifecycle and lock rule, checked against a reference model: random
//! sequences of clock moves, starts (forced or not), waves, task results, context writes and
//! merges, and finishes, run through `ExecutionService` over the in-memory store.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use cairn_domain::execution::memory::MemoryExecutionSessionStore;
use cairn_domain::execution::progress::{ActiveTask, ProgressStatus};
use cairn_domain::execution::service::{StartRequest, TaskResult, TaskSnapshot};
use cairn_domain::execution::task_log::Attempts;
use cairn_domain::execution::{
    ExecutionError, ExecutionService, ExecutionSessionStore, SessionPhase, TaskContext, TaskOutcome,
};
use cairn_domain::ports::FixedClock;
use cairn_domain::tasklist::ClaudeTaskStatus;
use cairn_domain::time::Timestamp;
use cairn_domain::{DomainError, Error, StoreError};
use chrono::{TimeDelta, TimeZone};
use proptest::prelude::*;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};

const STALE_MINUTES: i64 = 4 * 60;

fn base() -> Timestamp {
    chrono::Utc.with_ymd_and_hms(2026, 2, 5, 8, 0, 0).unwrap()
}

fn stamp(minutes: i64) -> String {
    (base() + TimeDelta::minutes(minutes))
        .format("%Y%m%d-%H%M%S")
        .to_string()
}

/// How the task list names groups, which decides the session id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grouping {
    Explicit,
    AllShared,
    Mixed,
}

#[derive(Debug, Clone)]
enum Op {
    Advance(i64),
    Start {
        force: bool,
        grouping: Grouping,
        total_waves: u32,
    },
    BeginWave(u32),
    Record {
        task: u8,
        outcome: TaskOutcome,
    },
    WriteContext(u8),
    Merge,
    Finish,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Ok,
    Locked,
    NotFound,
    AlreadyExists,
    Illegal,
    NotActive,
    NoLive,
    WaveOrder,
}

#[derive(Debug, Clone, PartialEq)]
struct LiveModel {
    id: String,
    locked_at: i64,
    phase: SessionPhase,
    wave: u32,
    total: u32,
    /// Latest outcome per task, plus the row count.
    outcomes: BTreeMap<u8, TaskOutcome>,
    rows: usize,
    pending_contexts: BTreeSet<u8>,
}

#[derive(Debug, Clone)]
struct Model {
    now: i64,
    live: Option<LiveModel>,
    archives: BTreeSet<String>,
    /// What the last operation should have returned (set by `apply`, read by the SUT step).
    expect: Expect,
    /// For a start over leftovers: which in-progress tasks must be reset / completed.
    expected_recovery: Option<(Vec<String>, Vec<String>)>,
}

/// Every start reports tasks 1..=3 as in progress in the task list.
const IN_PROGRESS: [u8; 3] = [1, 2, 3];

impl Model {
    fn step(mut self, op: &Op) -> Self {
        self.expected_recovery = None;
        self.expect = Expect::Ok;
        match op {
            Op::Advance(minutes) => self.now += minutes,
            Op::Start {
                force,
                grouping,
                total_waves,
            } => {
                if let Some(live) = &self.live {
                    let age = self.now - live.locked_at;
                    if age < STALE_MINUTES && !force {
                        self.expect = Expect::Locked;
                        return self;
                    }
                    let archive = format!("interrupted-{}", stamp(self.now));
                    if self.archives.contains(&archive) {
                        self.expect = Expect::AlreadyExists;
                        return self;
                    }
                    let (mut reset, mut complete) = (vec![], vec![]);
                    for task in IN_PROGRESS {
                        if live.outcomes.get(&task) == Some(&TaskOutcome::Pass) {
                            &mut complete
                        } else {
                            &mut reset
                        }
                        .push(task.to_string());
                    }
                    self.expected_recovery = Some((reset, complete));
                    self.archives.insert(archive);
                }
                let prefix = match grouping {
                    Grouping::Explicit => "alpha",
                    Grouping::AllShared => "beta",
                    Grouping::Mixed => "exec-session",
                };
                self.live = Some(LiveModel {
                    id: format!("{prefix}-{}", stamp(self.now)),
                    locked_at: self.now,
                    phase: SessionPhase::Creation,
                    wave: 0,
                    total: *total_waves,
                    outcomes: BTreeMap::new(),
                    rows: 0,
                    pending_contexts: BTreeSet::new(),
                });
            }
            Op::BeginWave(wave) => match &mut self.live {
                None => self.expect = Expect::NotFound,
                Some(live) if *wave <= live.wave || *wave > live.total => {
                    self.expect = Expect::WaveOrder
                }
                Some(live) => {
                    live.phase = SessionPhase::Active;
                    live.wave = *wave;
                }
            },
            Op::Record { task, outcome } => match &mut self.live {
                None => self.expect = Expect::NotFound,
                Some(live) if live.phase != SessionPhase::Active => self.expect = Expect::NotActive,
                Some(live) => {
                    live.outcomes.insert(*task, *outcome);
                    live.rows += 1;
                }
            },
            Op::WriteContext(task) => match &mut self.live {
                None => self.expect = Expect::NoLive,
                Some(live) if live.phase != SessionPhase::Active => self.expect = Expect::NotActive,
                Some(live) => {
                    live.pending_contexts.insert(*task);
                }
            },
            Op::Merge => match &mut self.live {
                None => self.expect = Expect::NotFound,
                Some(live) if live.phase != SessionPhase::Active => self.expect = Expect::NotActive,
                Some(live) => live.pending_contexts.clear(),
            },
            Op::Finish => match &self.live {
                None => self.expect = Expect::NoLive,
                Some(live) if live.phase != SessionPhase::Active => self.expect = Expect::Illegal,
                Some(live) if self.archives.contains(&live.id) => {
                    // The pending contexts are merged before the archive clash is found.
                    let mut live = live.clone();
                    live.pending_contexts.clear();
                    self.live = Some(live);
                    self.expect = Expect::AlreadyExists;
                }
                Some(live) => {
                    self.archives.insert(live.id.clone());
                    self.live = None;
                }
            },
        }
        self
    }
}

struct Reference;

impl ReferenceStateMachine for Reference {
    type State = Model;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Model> {
        Just(Model {
            now: 0,
            live: None,
            archives: BTreeSet::new(),
            expect: Expect::Ok,
            expected_recovery: None,
        })
        .boxed()
    }

    fn transitions(_: &Model) -> BoxedStrategy<Op> {
        let outcome = prop_oneof![
            Just(TaskOutcome::Pass),
            Just(TaskOutcome::Partial),
            Just(TaskOutcome::Fail)
        ];
        let grouping = prop_oneof![
            Just(Grouping::Explicit),
            Just(Grouping::AllShared),
            Just(Grouping::Mixed)
        ];
        prop_oneof![
            2 => prop_oneof![Just(0i64), 1i64..60, 200i64..300].prop_map(Op::Advance),
            2 => (any::<bool>(), grouping, 1u32..4).prop_map(|(force, grouping, total_waves)| Op::Start { force, grouping, total_waves }),
            3 => (0u32..5).prop_map(Op::BeginWave),
            3 => (1u8..5, outcome).prop_map(|(task, outcome)| Op::Record { task, outcome }),
            1 => (1u8..5).prop_map(Op::WriteContext),
            1 => Just(Op::Merge),
            2 => Just(Op::Finish),
        ]
        .boxed()
    }

    fn apply(state: Model, op: &Op) -> Model {
        state.step(op)
    }
}

struct Sut {
    runtime: tokio::runtime::Runtime,
    store: Arc<MemoryExecutionSessionStore>,
    clock: Arc<FixedClock>,
    service: ExecutionService,
}

fn classify(result: &Result<(), Error>) -> Expect {
    match result {
        Ok(()) => Expect::Ok,
        Err(Error::Store(StoreError::NotFound { .. })) => Expect::NotFound,
        Err(Error::Store(StoreError::AlreadyExists { .. })) => Expect::AlreadyExists,
        Err(Error::Domain(DomainError::Execution(e))) => match e {
            ExecutionError::SessionLocked { .. } => Expect::Locked,
            ExecutionError::IllegalTransition { .. } => Expect::Illegal,
            ExecutionError::NotActive { .. } => Expect::NotActive,
            ExecutionError::NoLiveSession => Expect::NoLive,
            ExecutionError::WaveOutOfOrder { .. } => Expect::WaveOrder,
            other => panic!("unexpected refusal: {other}"),
        },
        Err(other) => panic!("unexpected error: {other}"),
    }
}

struct LifecycleTest;

impl StateMachineTest for LifecycleTest {
    type SystemUnderTest = Sut;
    type Reference = Reference;

    fn init_test(_: &Model) -> Sut {
        let store = Arc::new(MemoryExecutionSessionStore::new());
        let clock = Arc::new(FixedClock::new(base()));
        let service = ExecutionService::new(store.clone(), clock.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        Sut {
            runtime,
            store,
            clock,
            service,
        }
    }

    fn apply(sut: Sut, model: &Model, op: Op) -> Sut {
        let service = &sut.service;
        let result: Result<(), Error> = sut.runtime.block_on(async {
            match op {
                Op::Advance(minutes) => {
                    sut.clock.advance(TimeDelta::minutes(minutes));
                    Ok(())
                }
                Op::Start {
                    force,
                    grouping,
                    total_waves,
                } => {
                    let group = |g: &str| Some(g.to_owned());
                    let mut tasks: Vec<TaskSnapshot> = IN_PROGRESS
                        .iter()
                        .map(|id| TaskSnapshot {
                            id: id.to_string(),
                            status: ClaudeTaskStatus::InProgress,
                            task_group: if grouping == Grouping::Mixed && *id == 2 {
                                group("gamma")
                            } else {
                                group("beta")
                            },
                        })
                        .collect();
                    tasks.push(TaskSnapshot {
                        id: "9".into(),
                        status: ClaudeTaskStatus::Completed,
                        task_group: None,
                    });
                    let outcome = service
                        .start(StartRequest {
                            task_group: (grouping == Grouping::Explicit)
                                .then(|| "alpha".to_owned()),
                            tasks,
                            execution_plan: "# Execution Plan\n".into(),
                            total_waves,
                            max_parallel: 2,
                            force,
                        })
                        .await?;
                    assert_eq!(
                        Some(&outcome.session_id),
                        model.live.as_ref().map(|l| &l.id),
                        "session id"
                    );
                    let recovery = (
                        outcome.recovery.reset_to_pending,
                        outcome.recovery.mark_completed,
                    );
                    match &model.expected_recovery {
                        Some(expected) => assert_eq!(&recovery, expected, "recovery plan"),
                        None => assert_eq!(recovery, (vec![], vec![]), "no leftovers, no recovery"),
                    }
                    assert_eq!(
                        outcome.interrupted_archive.is_some(),
                        model.expected_recovery.is_some(),
                        "interrupted archive"
                    );
                    Ok(())
                }
                Op::BeginWave(wave) => {
                    let active = vec![ActiveTask {
                        id: "1".into(),
                        subject: "One".into(),
                        phase: "Phase 1".into(),
                    }];
                    service.begin_wave(wave, active).await.map(drop)
                }
                Op::Record { task, outcome } => service
                    .record_task_result(TaskResult {
                        task_id: task.to_string(),
                        subject: format!("Task {task}"),
                        outcome,
                        attempts: Attempts { used: 1, max: 3 },
                        duration: Some(Duration::from_secs(90)),
                        token_usage: None,
                    })
                    .await
                    .map(drop),
                Op::WriteContext(task) => {
                    service
                        .write_task_context(
                            &task.to_string(),
                            &TaskContext::from_lines([format!("- learned in {task}")]),
                        )
                        .await
                }
                Op::Merge => service.merge_wave_context().await.map(drop),
                Op::Finish => service.finish().await.map(drop),
            }
        });
        assert_eq!(
            classify(&result),
            model.expect,
            "outcome of {op:?}: {result:?}"
        );
        sut
    }

    fn check_invariants(sut: &Sut, model: &Model) {
        let (live, archives) = sut.runtime.block_on(async {
            (
                sut.store.load().await.unwrap(),
                sut.store.list_archived().await.unwrap(),
            )
        });
        assert_eq!(
            archives.into_iter().collect::<BTreeSet<_>>(),
            model.archives,
            "archives"
        );
        match &model.live {
            None => assert!(live.is_empty(), "live session must be empty: {live:?}"),
            Some(expected) => {
                let state = live.state().expect("a live session");
                assert_eq!(state.id, expected.id, "session id");
                assert_eq!(state.phase, expected.phase, "phase");
                assert_eq!(
                    state.wave.map(|w| (w.current, w.total)),
                    Some((expected.wave, expected.total)),
                    "wave"
                );
                assert_eq!(
                    live.lock.and_then(|l| l.timestamp),
                    Some(base() + TimeDelta::minutes(expected.locked_at)),
                    "lock time"
                );
                assert_eq!(
                    live.task_log.map(|l| l.rows.len()),
                    Some(expected.rows),
                    "task log rows"
                );
                let pending: BTreeSet<u8> = live
                    .task_contexts
                    .keys()
                    .map(|k| k.parse().unwrap())
                    .collect();
                assert_eq!(pending, expected.pending_contexts, "per-task contexts");
                let tally = state.tally;
                assert_eq!(
                    tally.total(),
                    expected.outcomes.len(),
                    "tally counts one row per task"
                );
                let status = live.progress.unwrap().status;
                let expected_status = if expected.phase == SessionPhase::Creation {
                    ProgressStatus::Initializing
                } else {
                    ProgressStatus::Executing
                };
                assert_eq!(status, expected_status, "progress status");
            }
        }
    }
}

prop_state_machine! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn execution_lifecycle_matches_the_model(sequential 1..40 => LifecycleTest);
}
