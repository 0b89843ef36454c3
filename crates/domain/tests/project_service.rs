//! ProjectService: interactions with the port (mockall) and whole scenarios (in-memory store).

use std::sync::Arc;

use async_trait::async_trait;
use cairn_domain::log::LogRecord;
use cairn_domain::ports::FixedClock;
use cairn_domain::project::memory::MemoryProjectStore;
use cairn_domain::project::policy::{STALE_TWICE_REASON, Velocity};
use cairn_domain::project::service::{InitProject, Moved, ProjectService, ReconcileScope};
use cairn_domain::project::store::*;
use cairn_domain::project::*;
use cairn_domain::time::Timestamp;
use cairn_domain::{DomainError, Entity, Error, StoreError};
use chrono::{Duration, TimeZone, Utc};
use mockall::predicate::always;

mockall::mock! {
    /// The port's methods minus the mutation closure, which mockall cannot hold (it borrows the
    /// caller's locals): the interactions are what these tests are about.
    Port {
        fn list(&self) -> Result<Vec<ProjectId>, StoreError>;
        fn load_project(&self, id: &ProjectId) -> Result<Project, StoreError>;
        fn load(&self, id: &ProjectId) -> Result<Loaded, StoreError>;
        fn transact(&self, id: &ProjectId) -> Result<Committed, Error>;
        fn append_log(&self, id: &ProjectId, events: Vec<ProjectEvent>) -> Result<(), StoreError>;
        fn read_log(&self, id: &ProjectId, tail: Option<usize>) -> Result<LogRead, StoreError>;
        fn write_velocity(&self, id: &ProjectId, velocity: &Velocity) -> Result<(), StoreError>;
        /// The velocity stored when the update runs (the update itself is applied by `Mocked`).
        fn stored_velocity(&self, id: &ProjectId) -> Result<Option<Velocity>, StoreError>;
    }
}

struct Mocked(MockPort);

impl std::fmt::Debug for Mocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mocked")
    }
}

fn unexpected(method: &'static str) -> StoreError {
    StoreError::not_found(Entity::Project, format!("unexpected call to {method}"))
}

#[async_trait]
impl ProjectStore for Mocked {
    async fn list(&self) -> Result<Vec<ProjectId>, StoreError> {
        self.0.list()
    }
    async fn create(
        &self,
        _: &Project,
        _: Timestamp,
        _: Vec<ProjectEvent>,
    ) -> Result<(), StoreError> {
        Err(unexpected("create"))
    }
    async fn load_project(&self, id: &ProjectId) -> Result<Project, StoreError> {
        self.0.load_project(id)
    }
    async fn load(&self, id: &ProjectId) -> Result<Loaded, StoreError> {
        self.0.load(id)
    }
    /// The mock supplies the state before the transaction; the mutation runs on it as a real
    /// store would run it, so that what the service computes in it comes back.
    async fn transact(
        &self,
        id: &ProjectId,
        _: Timestamp,
        mutation: Mutation<'_>,
    ) -> Result<Committed, Error> {
        let mut committed = self.0.transact(id)?;
        mutation(&mut committed.state)?;
        Ok(committed)
    }
    async fn append_log(
        &self,
        id: &ProjectId,
        _: Timestamp,
        events: Vec<ProjectEvent>,
    ) -> Result<(), StoreError> {
        self.0.append_log(id, events)
    }
    async fn read_log(&self, id: &ProjectId, tail: Option<usize>) -> Result<LogRead, StoreError> {
        self.0.read_log(id, tail)
    }
    async fn research_modified(
        &self,
        _: &ProjectId,
        _: &TaskId,
    ) -> Result<Option<Timestamp>, StoreError> {
        Ok(None)
    }
    async fn read_research(&self, _: &ProjectId, _: &TaskId) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
    async fn write_research(
        &self,
        _: &ProjectId,
        _: &TaskId,
        _: &str,
        _: Timestamp,
    ) -> Result<(), StoreError> {
        Err(unexpected("write_research"))
    }
    async fn list_checkpoints(&self, _: &ProjectId) -> Result<Vec<CheckpointInfo>, StoreError> {
        Ok(vec![])
    }
    async fn write_checkpoint(
        &self,
        _: &ProjectId,
        _: Timestamp,
    ) -> Result<CheckpointInfo, StoreError> {
        Err(unexpected("write_checkpoint"))
    }
    async fn restore_checkpoint(
        &self,
        _: &ProjectId,
        _: u32,
        _: Timestamp,
    ) -> Result<Committed, StoreError> {
        Err(unexpected("restore_checkpoint"))
    }
    async fn read_velocity(&self, _: &ProjectId) -> Result<Option<Velocity>, StoreError> {
        Ok(None)
    }
    async fn write_velocity(&self, id: &ProjectId, velocity: &Velocity) -> Result<(), StoreError> {
        self.0.write_velocity(id, velocity)
    }
    async fn update_velocity(
        &self,
        id: &ProjectId,
        update: &(dyn Fn(Option<Velocity>) -> Option<Velocity> + Send + Sync),
    ) -> Result<Option<Velocity>, StoreError> {
        Ok(update(self.0.stored_velocity(id)?))
    }
    async fn clean_debris(&self, _: &ProjectId, _: Timestamp) -> Result<Vec<String>, StoreError> {
        Ok(vec![])
    }
    async fn health(
        &self,
        _: &ProjectId,
        _: Timestamp,
        _: Scrutiny,
    ) -> Result<StoreHealth, StoreError> {
        Ok(StoreHealth::default())
    }
    async fn export_project(&self, _: &ProjectId) -> Result<ProjectDump, StoreError> {
        Err(unexpected("export_project"))
    }
    async fn import_project(&self, _: &ProjectDump, _: bool) -> Result<(), StoreError> {
        Err(unexpected("import_project"))
    }
}

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 4, 1, 9, 0, 0)
        .single()
        .expect("time")
}

fn pid() -> ProjectId {
    "demo".parse().expect("id")
}

fn tid(n: u64) -> TaskId {
    TaskId::from_number(n)
}

fn init() -> InitProject {
    InitProject {
        id: pid(),
        name: "Demo".into(),
        goal: "Ship the demo project".into(),
        kind: ProjectType::Software,
    }
}

async fn memory_service() -> (ProjectService, Arc<FixedClock>) {
    let clock = Arc::new(FixedClock::new(t0()));
    let service = ProjectService::new(Arc::new(MemoryProjectStore::new()), clock.clone());
    service.init(init()).await.expect("init");
    (service, clock)
}

#[tokio::test]
async fn a_store_validation_failure_stops_the_use_case_before_any_other_write() {
    let mut store = MockPort::new();
    store.expect_transact().times(1).returning(|_| {
        Err(Error::Store(StoreError::Invalid {
            path: "tasks.json".into(),
            detail: "/tasks/0/title: too short".into(),
        }))
    });
    // A completion would normally refresh velocity; after a refused write it must not.
    store.expect_read_log().times(0);
    store.expect_write_velocity().times(0);
    let result = complete_t1(store).await;
    assert!(
        matches!(result, Err(Error::Store(StoreError::Invalid { .. }))),
        "{result:?}"
    );
}

/// Completes T-001 through a service over `store`.
async fn complete_t1(store: MockPort) -> Result<Moved, Error> {
    let service = ProjectService::new(Arc::new(Mocked(store)), Arc::new(FixedClock::new(t0())));
    service
        .move_task(&pid(), &tid(1), TaskStatus::Complete, MoveDetail::default())
        .await
}

/// A project whose one task, T-001, is IN_PROGRESS: what a completion starts from.
async fn one_task_in_progress() -> ProjectState {
    let (memory, _) = memory_service().await;
    memory
        .add_task(&pid(), NewTask::titled("finish me"))
        .await
        .expect("add");
    memory
        .move_task(
            &pid(),
            &tid(1),
            TaskStatus::InProgress,
            MoveDetail::default(),
        )
        .await
        .expect("start");
    memory.load(&pid()).await.expect("load")
}

/// A port whose one transaction commits `state`, saying it saved `velocity` with it.
fn transacting(state: ProjectState, velocity: Option<Velocity>) -> MockPort {
    let mut store = MockPort::new();
    store.expect_transact().times(1).returning(move |_| {
        Ok(Committed {
            state: state.clone(),
            checkpoint: None,
            recovered: None,
            velocity: velocity.clone(),
        })
    });
    store
}

/// A port whose one transaction starts from `before`, with `stored` as the saved velocity.
fn completing(before: ProjectState, stored: Option<Velocity>) -> MockPort {
    let mut store = transacting(before, None);
    store
        .expect_stored_velocity()
        .times(1)
        .returning(move |_| Ok(stored.clone()));
    store
}

#[tokio::test]
async fn a_velocity_refresh_failing_after_a_saved_completion_says_the_move_was_saved() {
    // No window saved yet: the refresh recomputes from the log.
    let mut store = completing(one_task_in_progress().await, None);
    store.expect_read_log().times(1).returning(|_, _| {
        Ok(LogRead {
            records: vec![],
            torn_tail: None,
        })
    });
    store.expect_write_velocity().times(1).returning(|_, _| {
        Err(StoreError::Io {
            op: "write",
            path: "progress/velocity.json".into(),
            source: std::io::Error::other("disk full"),
        })
    });
    let result = complete_t1(store).await;
    assert!(
        matches!(
            &result,
            Err(Error::Store(StoreError::AfterCommit { source }))
                if matches!(**source, StoreError::Io { .. })
        ),
        "the move is saved, so its caller must be told not to repeat it: {result:?}"
    );
}

#[tokio::test]
async fn a_completion_updates_the_saved_velocity_window_without_reading_the_log() {
    let before = one_task_in_progress().await;
    let saved = cairn_domain::project::policy::velocity(&[], &before.tasks, t0());
    let mut store = completing(before, Some(saved));
    // The log of a large store is megabytes: a completion must not read it.
    store.expect_read_log().times(0);
    store.expect_write_velocity().times(0);
    complete_t1(store).await.expect("complete");
}

/// A store that takes the completions into the velocity inside the transaction (as the file
/// store does) leaves nothing for a second step: no velocity read, update or write after it.
#[tokio::test]
async fn a_velocity_saved_with_the_completion_is_not_refreshed_again() {
    let before = one_task_in_progress().await;
    let saved = cairn_domain::project::policy::velocity(&[], &before.tasks, t0());
    let mut store = transacting(before, Some(saved));
    store.expect_stored_velocity().times(0);
    store.expect_read_log().times(0);
    store.expect_write_velocity().times(0);
    complete_t1(store).await.expect("complete");
}

#[tokio::test]
async fn a_refused_rule_never_reaches_the_disk_beyond_the_transaction() {
    let mut store = MockPort::new();
    store.expect_transact().times(1).returning(|_| {
        Err(Error::Domain(DomainError::Project(
            ProjectError::UnknownTask { task: tid(9) },
        )))
    });
    store.expect_write_velocity().times(0);
    store.expect_append_log().times(0);
    let service = ProjectService::new(Arc::new(Mocked(store)), Arc::new(FixedClock::new(t0())));
    let result = service
        .move_task(
            &pid(),
            &tid(9),
            TaskStatus::InProgress,
            MoveDetail::default(),
        )
        .await;
    assert!(matches!(result, Err(Error::Domain(_))));
}

#[tokio::test]
async fn reconcile_with_nothing_to_do_writes_nothing() {
    let mut store = MockPort::new();
    let state = ProjectState {
        project: Project {
            id: pid(),
            name: "Demo".into(),
            goal: "Ship the demo project".into(),
            kind: ProjectType::Software,
            status: ProjectStatus::Planned,
            phases: vec![],
            created_at: t0(),
            updated_at: t0(),
            extra: Default::default(),
        },
        tasks: TaskDoc::new(pid()),
    };
    store.expect_load().times(1).returning(move |_| {
        Ok(Loaded {
            state: state.clone(),
            recovered: None,
        })
    });
    store.expect_transact().times(0);
    store.expect_read_log().times(0);
    let service = ProjectService::new(Arc::new(Mocked(store)), Arc::new(FixedClock::new(t0())));
    let report = service
        .reconcile(&pid(), ReconcileScope::Resume, false)
        .await
        .expect("reconcile");
    assert!(report.reconciled.is_empty() && report.stale.is_empty());
}

#[tokio::test]
async fn recoveries_reported_by_the_store_reach_the_caller() {
    let mut store = MockPort::new();
    let (service_for_state, _) = memory_service().await;
    let state = service_for_state.load(&pid()).await.expect("state");
    let recovery = Recovery {
        checkpoint: Some(3),
        kept: vec![KeptTask {
            id: TaskId::from_number(1),
            source: TaskSource::Checkpoint(3),
        }],
        dropped: vec![DroppedTask {
            id: Some("T-2".into()),
            index: 1,
            source: TaskSource::DamagedFile,
            reason: "fails its schema".into(),
            replaced_from: None,
        }],
        damaged_copy: "x/tasks.json.corrupt-1".into(),
    };
    let r = recovery.clone();
    store.expect_load().with(always()).returning(move |_| {
        Ok(Loaded {
            state: state.clone(),
            recovered: Some(r.clone()),
        })
    });
    let service = ProjectService::new(Arc::new(Mocked(store)), Arc::new(FixedClock::new(t0())));
    service.next(&pid()).await.expect("next");
    assert_eq!(service.take_recoveries(), vec![recovery]);
    assert!(
        service.take_recoveries().is_empty(),
        "each recovery is reported once"
    );
}

#[tokio::test]
async fn the_whole_lifecycle_on_the_memory_store() {
    let (service, clock) = memory_service().await;
    let design = service
        .add_task(
            &pid(),
            NewTask {
                estimate_minutes: Some(30),
                ..NewTask::titled("Design the API")
            },
        )
        .await
        .expect("add");
    let build = service
        .add_task(
            &pid(),
            NewTask {
                dependencies: vec![design.id.clone()],
                priority: Some(Priority::High),
                ..NewTask::titled("Build the API")
            },
        )
        .await
        .expect("add");
    assert_eq!(
        service.load(&pid()).await.expect("load").project.status,
        ProjectStatus::Planned,
        "tasks make the project PLANNED"
    );
    assert_eq!(
        service.next(&pid()).await.expect("next").map(|t| t.id),
        Some(design.id.clone()),
        "the dependency comes first"
    );

    let refused = service
        .move_task(
            &pid(),
            &build.id,
            TaskStatus::InProgress,
            MoveDetail::default(),
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(Error::Domain(DomainError::Project(
                ProjectError::DependenciesUnmet { .. }
            )))
        ),
        "{refused:?}"
    );

    service
        .move_task(
            &pid(),
            &design.id,
            TaskStatus::InProgress,
            MoveDetail::default(),
        )
        .await
        .expect("start");
    assert_eq!(
        service.load(&pid()).await.expect("load").project.status,
        ProjectStatus::InProgress
    );
    clock.advance(Duration::minutes(25));
    let done = service
        .move_task(
            &pid(),
            &design.id,
            TaskStatus::Complete,
            MoveDetail::default(),
        )
        .await
        .expect("complete");
    assert_eq!(
        done.task.actual_minutes,
        Some(25.into()),
        "actual minutes are measured from the start when not given"
    );

    let (parent, children) = service
        .decompose(
            &pid(),
            &build.id,
            vec![NewTask::titled("Routes"), NewTask::titled("Handlers")],
        )
        .await
        .expect("decompose");
    assert_eq!(parent.status, TaskStatus::InProgress);
    assert_eq!(
        children.iter().map(|c| c.level).collect::<Vec<_>>(),
        [Level::Subtask, Level::Subtask]
    );
    for child in &children {
        service
            .move_task(
                &pid(),
                &child.id,
                TaskStatus::InProgress,
                MoveDetail::default(),
            )
            .await
            .expect("start child");
    }
    service
        .move_task(
            &pid(),
            &children[0].id,
            TaskStatus::Complete,
            MoveDetail::default(),
        )
        .await
        .expect("complete child");
    let last = service
        .move_task(
            &pid(),
            &children[1].id,
            TaskStatus::Complete,
            MoveDetail::default(),
        )
        .await
        .expect("complete child");
    assert!(
        last.changes.contains(&(
            build.id.clone(),
            TaskStatus::InProgress,
            TaskStatus::Complete
        )),
        "the parent completes by itself: {:?}",
        last.changes
    );
    let velocity = service.velocity(&pid()).await.expect("velocity");
    assert_eq!(
        velocity.completed_count, 3,
        "velocity counts leaf completions only"
    );
}

#[tokio::test]
async fn stale_twice_is_blocked_for_a_human() {
    let (service, clock) = memory_service().await;
    let t = service
        .add_task(
            &pid(),
            NewTask {
                estimate_minutes: Some(10),
                ..NewTask::titled("Flaky work")
            },
        )
        .await
        .expect("add");
    for round in 1..=2 {
        service
            .move_task(&pid(), &t.id, TaskStatus::InProgress, MoveDetail::default())
            .await
            .expect("start");
        clock.advance(Duration::minutes(41));
        let report = service
            .reconcile(&pid(), ReconcileScope::StalenessOnly, false)
            .await
            .expect("reconcile");
        assert_eq!(report.stale.len(), 1, "round {round}: {report:?}");
    }
    let task = service
        .load(&pid())
        .await
        .expect("load")
        .tasks
        .get(&t.id)
        .cloned()
        .expect("task");
    assert_eq!(task.status, TaskStatus::Blocked);
    assert_eq!(task.blocked_reason.as_deref(), Some(STALE_TWICE_REASON));
    assert_eq!(task.estimate_minutes, Some(10), "the estimate is kept");
    let (log, _) = service.log(&pid(), &Default::default()).await.expect("log");
    assert_eq!(
        log.iter()
            .filter(|r: &&LogRecord| r.kind == "ERROR")
            .count(),
        2,
        "each stale reset logs an ERROR"
    );
}

#[tokio::test]
async fn a_completed_task_is_not_stale_even_if_tasks_json_lost_the_update() {
    let (service, clock) = memory_service().await;
    let t = service
        .add_task(
            &pid(),
            NewTask {
                estimate_minutes: Some(5),
                ..NewTask::titled("Quick job")
            },
        )
        .await
        .expect("add");
    service
        .move_task(&pid(), &t.id, TaskStatus::InProgress, MoveDetail::default())
        .await
        .expect("start");
    // The log says it completed (the state write is what got lost).
    service
        .store()
        .append_log(
            &pid(),
            t0(),
            vec![ProjectEvent::TaskMoved {
                task: t.id.clone(),
                from: TaskStatus::InProgress,
                to: TaskStatus::Complete,
                actual_minutes: Some(4),
                reason: None,
            }],
        )
        .await
        .expect("append");
    clock.advance(Duration::minutes(60));
    let report = service
        .reconcile(&pid(), ReconcileScope::StalenessOnly, false)
        .await
        .expect("reconcile");
    assert!(
        report.stale.is_empty(),
        "a TASK_COMPLETE in the log means not stale: {report:?}"
    );
}

#[tokio::test]
async fn resume_prefers_a_fresh_research_brief() {
    let (service, clock) = memory_service().await;
    let a = service
        .add_task(&pid(), NewTask::titled("Researched then interrupted"))
        .await
        .expect("add");
    let b = service
        .add_task(&pid(), NewTask::titled("Interrupted without research"))
        .await
        .expect("add");
    for t in [&a, &b] {
        service
            .move_task(&pid(), &t.id, TaskStatus::InProgress, MoveDetail::default())
            .await
            .expect("start");
    }
    clock.advance(Duration::minutes(1));
    service
        .write_research(&pid(), &a.id, "# Notes\n")
        .await
        .expect("brief");
    let dry = service
        .reconcile(&pid(), ReconcileScope::Resume, true)
        .await
        .expect("dry run");
    assert!(!dry.applied);
    assert_eq!(
        service
            .load(&pid())
            .await
            .expect("load")
            .tasks
            .get(&a.id)
            .map(|t| t.status),
        Some(TaskStatus::InProgress),
        "a dry run changes nothing"
    );
    let report = service
        .reconcile(&pid(), ReconcileScope::Resume, false)
        .await
        .expect("reconcile");
    let moves: Vec<(TaskId, TaskStatus)> = report
        .reconciled
        .iter()
        .map(|r| (r.task.clone(), r.to))
        .collect();
    assert_eq!(
        moves,
        [
            (a.id.clone(), TaskStatus::Researched),
            (b.id.clone(), TaskStatus::Pending)
        ]
    );
    let compact = service
        .reconcile(&pid(), ReconcileScope::StalenessOnly, false)
        .await
        .expect("again");
    assert!(
        compact.reconciled.is_empty(),
        "a compaction does not reconcile"
    );
}

#[tokio::test]
async fn phase_completion_checkpoints_and_unknown_phases_are_refused() {
    let (service, _) = memory_service().await;
    service
        .add_task(
            &pid(),
            NewTask {
                phase_id: Some("design".into()),
                ..NewTask::titled("Sketch it")
            },
        )
        .await
        .expect("add");
    let open = service.complete_phase(&pid(), "design", false).await;
    assert!(
        matches!(
            &open,
            Err(Error::Domain(DomainError::Project(
                ProjectError::PhaseHasOpenTasks { open, .. }
            ))) if open.len() == 1
        ),
        "a phase with open tasks needs force: {open:?}"
    );
    let committed = service
        .complete_phase(&pid(), "design", true)
        .await
        .expect("phase");
    assert_eq!(committed.checkpoint, Some(1));
    assert_eq!(committed.still_open, vec!["T-001".parse().unwrap()]);
    let again = service.complete_phase(&pid(), "design", true).await;
    assert!(matches!(
        again,
        Err(Error::Domain(DomainError::Project(
            ProjectError::PhaseClosed { .. }
        )))
    ));
    let unknown = service
        .complete_phase(&pid(), "nope", true)
        .await
        .expect_err("unknown phase");
    assert!(
        unknown.to_string().contains("design"),
        "the error lists known phases: {unknown}"
    );
}

#[tokio::test]
async fn resolve_picks_the_only_or_the_in_progress_project() {
    let (service, _) = memory_service().await;
    assert_eq!(service.resolve(None).await.expect("only one"), pid());
    service
        .init(InitProject {
            id: "other".parse().expect("id"),
            name: "Other".into(),
            goal: "A second project here".into(),
            kind: ProjectType::Auto,
        })
        .await
        .expect("init");
    let err = service
        .resolve(None)
        .await
        .expect_err("two projects, none in progress");
    assert!(
        err.to_string().contains("demo") && err.to_string().contains("other"),
        "{err}"
    );
    service
        .set_project_status(&pid(), ProjectStatus::InProgress)
        .await
        .expect("status");
    assert_eq!(service.resolve(None).await.expect("the active one"), pid());
}

#[tokio::test]
async fn prime_summarizes_a_huge_store_with_the_first_ready_tasks() {
    let (service, _) = memory_service().await;
    let store = service.store().clone();
    store
        .transact(
            &pid(),
            t0(),
            Box::new(|s: &mut ProjectState| {
                for i in 0..3000 {
                    let title = format!(
                        "A long task title number {i} that goes on and on to fill space quickly"
                    );
                    s.tasks.add_task(NewTask::titled(title), t0())?;
                }
                for i in 1..=40u64 {
                    s.tasks.move_task(
                        &tid(i),
                        TaskStatus::InProgress,
                        MoveDetail::default(),
                        t0(),
                    )?;
                }
                Ok(Changes::default())
            }),
        )
        .await
        .expect("bulk");
    let prime = service.prime(&pid()).await.expect("prime");
    assert_eq!(prime.in_progress.len(), 40);
    assert_eq!(prime.next.len(), report::PRIME_NEXT_TASKS);
    assert_eq!(prime.next[0].0, tid(41), "the first ready task leads");
    assert_eq!(
        prime.next_steps(),
        vec![cairn_domain::NextStep::Start { task: tid(41) }]
    );
}

#[tokio::test]
async fn a_research_brief_is_fresh_for_a_day() {
    let (service, clock) = memory_service().await;
    let t = service
        .add_task(&pid(), NewTask::titled("Look into caching"))
        .await
        .expect("add");
    assert_eq!(
        service.research_brief(&pid(), &t.id).await.expect("brief"),
        None
    );
    service
        .write_research(&pid(), &t.id, "# Caching\n")
        .await
        .expect("write");
    assert_eq!(
        service
            .research_brief(&pid(), &t.id)
            .await
            .expect("brief")
            .map(|b| b.fresh),
        Some(true)
    );
    clock.advance(Duration::hours(24) + Duration::seconds(1));
    assert_eq!(
        service
            .research_brief(&pid(), &t.id)
            .await
            .expect("brief")
            .map(|b| b.fresh),
        Some(false),
        "older than 24 h is stale"
    );
}

#[tokio::test]
async fn a_decomposed_parent_alone_gives_resume_nothing_to_do() {
    let (service, _) = memory_service().await;
    let epic = service
        .add_task(&pid(), NewTask::titled("Ship the release"))
        .await
        .expect("add");
    service
        .decompose(&pid(), &epic.id, vec![NewTask::titled("Write notes")])
        .await
        .expect("decompose");
    let state = service.load(&pid()).await.expect("load");
    assert_eq!(
        state.tasks.get(&epic.id).map(|t| t.status),
        Some(TaskStatus::InProgress)
    );
    assert!(
        !ReconcileScope::Resume.has_work(&state.tasks, t0()),
        "a parent is IN_PROGRESS by construction, not interrupted: SessionStart must stay on its fast path"
    );
    let child = state
        .tasks
        .tasks
        .last()
        .map(|t| t.id.clone())
        .expect("child");
    service
        .move_task(
            &pid(),
            &child,
            TaskStatus::InProgress,
            MoveDetail::default(),
        )
        .await
        .expect("start");
    let state = service.load(&pid()).await.expect("load");
    assert!(
        ReconcileScope::Resume.has_work(&state.tasks, t0()),
        "an interrupted leaf is work"
    );
    assert!(
        !ReconcileScope::StalenessOnly.has_work(&state.tasks, t0()),
        "not stale yet"
    );
}

#[tokio::test]
async fn open_work_of_a_session_is_what_it_started_and_left_in_progress() {
    use cairn_domain::project::service::OpenWork;
    let (service, clock) = memory_service().await;
    let mut ids = Vec::new();
    for title in ["Started before", "Started in the session", "Finished in it"] {
        let task = service
            .add_task(&pid(), NewTask::titled(title))
            .await
            .expect("add");
        ids.push(task.id);
    }
    let start = |id: TaskId, to: TaskStatus| {
        let service = &service;
        async move {
            service
                .move_task(&pid(), &id, to, MoveDetail::default())
                .await
                .expect("move");
        }
    };
    start(ids[0].clone(), TaskStatus::InProgress).await;
    assert!(
        service
            .open_work_of_session(&pid(), "s1")
            .await
            .expect("open work")
            .is_empty(),
        "a session cairn never saw start has no work of its own"
    );
    clock.advance(Duration::minutes(1));
    service
        .record_session_event(&pid(), "START", "s1", None)
        .await
        .expect("log");
    assert!(
        service
            .open_work_of_session(&pid(), "s1")
            .await
            .expect("open work")
            .is_empty(),
        "work started before the session is not its own"
    );
    clock.advance(Duration::minutes(1));
    start(ids[1].clone(), TaskStatus::InProgress).await;
    start(ids[2].clone(), TaskStatus::InProgress).await;
    start(ids[2].clone(), TaskStatus::Complete).await;
    // A compaction logs another start for the same session: its earlier work still counts.
    clock.advance(Duration::minutes(1));
    service
        .record_session_event(&pid(), "START", "s1", None)
        .await
        .expect("log");
    assert_eq!(
        service
            .open_work_of_session(&pid(), "s1")
            .await
            .expect("open work"),
        [OpenWork {
            task: ids[1].clone(),
            title: "Started in the session".into()
        }]
    );
    assert!(
        service
            .open_work_of_session(&pid(), "s2")
            .await
            .expect("open work")
            .is_empty()
    );
}

#[tokio::test]
async fn the_overview_lists_every_project_with_its_progress() {
    let (service, _) = memory_service().await;
    let mut other = init();
    other.id = "other".parse().expect("id");
    other.name = "Other".into();
    service.init(other).await.expect("init");
    let task = service
        .add_task(&pid(), NewTask::titled("Only task"))
        .await
        .expect("add");
    service
        .move_task(
            &pid(),
            &task.id,
            TaskStatus::InProgress,
            MoveDetail::default(),
        )
        .await
        .expect("start");
    service
        .move_task(
            &pid(),
            &task.id,
            TaskStatus::Complete,
            MoveDetail::default(),
        )
        .await
        .expect("complete");
    let overview = service.overview().await.expect("overview");
    let rows: Vec<_> = overview
        .iter()
        .map(|p| (p.id.to_string(), p.leaves_complete, p.leaves_total))
        .collect();
    assert_eq!(
        rows,
        [(pid().to_string(), 1, 1), ("other".to_owned(), 0, 0)]
    );
}

#[test]
fn a_velocity_updated_from_its_window_equals_one_recomputed_from_every_completion() {
    use cairn_domain::project::policy::{self, Completion};
    let doc = TaskDoc::new(pid());
    let all: Vec<Completion> = (0..45u32)
        .map(|i| Completion {
            task: tid(u64::from(i) + 1),
            at: t0() + chrono::Duration::minutes(i64::from(i * i)),
            actual_minutes: (i % 3 != 0).then_some(i + 1),
            estimate_minutes: (i % 4 != 0).then_some(30),
        })
        .collect();
    for n in 0..=all.len() {
        for split in 0..=n {
            let (before, after) = all[..n].split_at(split);
            let saved = policy::velocity(before, &doc, t0());
            let updated = policy::velocity_after(&saved, after, &doc, t0())
                .unwrap_or_else(|| panic!("a velocity cairn wrote carries its window"));
            assert_eq!(
                updated,
                policy::velocity(&all[..n], &doc, t0()),
                "{split} completions saved, {} more",
                n - split
            );
        }
    }
}
