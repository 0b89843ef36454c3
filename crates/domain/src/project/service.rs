//! The project store's use cases: what the CLI, the hook and the servers call.
//!
//! A service decides and the store persists: every change is computed by the domain inside one
//! [`ProjectStore::transact`] call, so the rule check and the write see the same state.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::error::{DomainError, Error, StoreError};
use crate::log::LogRecord;
use crate::ports::Clock;
use crate::time::Timestamp;

use super::claims::{self, Actor, ClaimTarget};
use super::error::ProjectError;
use super::events::{EventKind, ProjectEvent};
use super::graph::{self, Waves};
use super::import::{self, ImportReport, Incoming};
use super::limits::{self, Field};
use super::model::*;
use super::phases::{self, PhaseProgress};
use super::policy::{self, Completion, Reconciled, Velocity};
use super::report::{self, Finding, Summary};
use super::store::{
    Changes, CheckpointInfo, Committed, ProjectStore, Recovery, Scrutiny, StoreHealth,
};
use super::tasks::{FieldChange, MoveDetail, NewTask, TaskEdit};

/// What `init` needs.
#[derive(Debug, Clone)]
pub struct InitProject {
    pub id: ProjectId,
    pub name: String,
    pub goal: String,
    pub kind: ProjectType,
}

pub const MIN_GOAL_CHARS: usize = 10;

/// How much of the log velocity looks at: enough records to usually hold a full window of
/// completions, without reading a long log from the start.
const VELOCITY_LOG_TAIL: usize = 2_000;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moved {
    pub task: Task,
    /// Every status change this move caused (cascades included), in order.
    pub changes: Vec<(TaskId, TaskStatus, TaskStatus)>,
    pub checkpoint: Option<u32>,
    /// The project's new status when this move finished (or reopened) it.
    pub project_status: Option<ProjectStatus>,
}

/// What resume reconciliation and the staleness check did (or would do).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ReconcileReport {
    pub reconciled: Vec<Reconciled>,
    /// Tasks found stale: reset to PENDING, or BLOCKED the second time.
    pub stale: Vec<Reconciled>,
    pub applied: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileScope {
    /// A new session resumes: interrupted work is reconciled and stale tasks reset.
    Resume,
    /// Same session continuing (after a compaction, say): only stale tasks are reset, since the
    /// agent is still on its in-progress work.
    StalenessOnly,
}

impl ReconcileScope {
    /// Whether reconciling in this scope would change anything: a stale task, or (on resume) a
    /// leaf left mid-work. Lets callers that hold the state skip the transaction.
    pub fn has_work(self, doc: &TaskDoc, now: Timestamp) -> bool {
        self.has_work_for(doc, now, None)
    }

    /// [`Self::has_work`] for a resuming session that may hold claims of its own.
    pub fn has_work_for(self, doc: &TaskDoc, now: Timestamp, this_session: Option<&str>) -> bool {
        !policy::stale_candidates(doc, now).is_empty()
            || (self == ReconcileScope::Resume
                && doc
                    .tasks
                    .iter()
                    .any(|t| policy::reconcilable(t, now, this_session)))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct DoctorReport {
    /// How closely the stored files were looked at.
    pub scrutiny: Scrutiny,
    pub findings: Vec<Finding>,
    pub store: StoreHealth,
    /// Repairs made (with `fix`).
    pub repaired: Vec<String>,
    pub debris_removed: Vec<String>,
}

impl DoctorReport {
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
            && self.store.damaged.is_empty()
            && self.store.debris.is_empty()
            && !self.store.torn_log
    }
}

/// A task's research brief: when it was written, and whether it is still fresh enough to reuse
/// instead of researching again ([`policy::RESEARCH_TTL`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResearchBrief {
    pub written_at: Timestamp,
    pub fresh: bool,
}

/// Filters for `log`.
#[derive(Debug, Clone, Default)]
pub struct LogQuery {
    pub tail: Option<usize>,
    pub kind: Option<String>,
    pub task: Option<TaskId>,
}

#[derive(Debug)]
pub struct ProjectService {
    store: Arc<dyn ProjectStore>,
    clock: Arc<dyn Clock>,
    recoveries: Mutex<Vec<Recovery>>,
}

impl std::fmt::Debug for dyn Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

impl ProjectService {
    pub fn new(store: Arc<dyn ProjectStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            recoveries: Mutex::new(Vec::new()),
        }
    }

    pub fn store(&self) -> &Arc<dyn ProjectStore> {
        &self.store
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Recoveries of damaged files the store made while serving this service, oldest first.
    /// Callers tell the user about them.
    pub fn take_recoveries(&self) -> Vec<Recovery> {
        std::mem::take(&mut *self.recoveries.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn note(&self, recovered: Option<Recovery>) {
        if let Some(r) = recovered {
            self.recoveries
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(r);
        }
    }

    pub async fn init(&self, init: InitProject) -> Result<Project, Error> {
        let name = init.name.trim().to_owned();
        if name.is_empty() {
            return Err(DomainError::invalid("name", "give the project a name").into());
        }
        let goal = init.goal.trim().to_owned();
        limits::check(Field::ProjectName, &name)?;
        limits::check(Field::Goal, &goal)?;
        if goal.chars().count() < MIN_GOAL_CHARS {
            return Err(DomainError::invalid("goal", format!("`{goal}` is too short: describe the goal in at least {MIN_GOAL_CHARS} characters")).into());
        }
        let at = self.now();
        let project = Project {
            id: init.id,
            name,
            goal,
            kind: init.kind,
            status: ProjectStatus::Ready,
            phases: Vec::new(),
            created_at: at,
            updated_at: at,
            extra: Default::default(),
        };
        let event = ProjectEvent::ProjectCreated {
            project: project.id.clone(),
            name: project.name.clone(),
        };
        self.store.create(&project, at, vec![event]).await?;
        Ok(project)
    }

    pub async fn projects(&self) -> Result<Vec<Project>, Error> {
        let mut out = Vec::new();
        for id in self.store.list().await? {
            out.push(self.store.load_project(&id).await?);
        }
        Ok(out)
    }

    /// The project a command is about: the one named, else the only one, else the only one IN
    /// PROGRESS; otherwise an error listing the choices.
    pub async fn resolve(&self, explicit: Option<&str>) -> Result<ProjectId, Error> {
        if let Some(id) = explicit {
            let id: ProjectId = id.parse()?;
            self.store.load_project(&id).await?;
            return Ok(id);
        }
        let ids = self.store.list().await?;
        match ids.len() {
            0 => Err(ProjectError::NoProjects.into()),
            1 => Ok(ids[0].clone()),
            _ => {
                let mut active = Vec::new();
                for id in &ids {
                    if self.store.load_project(id).await?.status == ProjectStatus::InProgress {
                        active.push(id.clone());
                    }
                }
                if active.len() == 1 {
                    Ok(active.remove(0))
                } else {
                    Err(ProjectError::AmbiguousProject {
                        choices: ids.iter().map(|i| i.to_string()).collect(),
                    }
                    .into())
                }
            }
        }
    }

    pub async fn load(&self, id: &ProjectId) -> Result<ProjectState, Error> {
        let loaded = self.store.load(id).await?;
        self.note(loaded.recovered);
        Ok(loaded.state)
    }

    async fn transact(
        &self,
        id: &ProjectId,
        at: Timestamp,
        f: impl FnOnce(&mut ProjectState) -> Result<Changes, DomainError> + Send,
    ) -> Result<Committed, Error> {
        let committed = self.store.transact(id, at, Box::new(f)).await?;
        self.note(committed.recovered.clone());
        Ok(committed)
    }

    /// [`Self::transact`] for a mutation that also computes a value.
    async fn transact_with<T: Send>(
        &self,
        id: &ProjectId,
        at: Timestamp,
        f: impl FnOnce(&mut ProjectState) -> Result<(Changes, T), DomainError> + Send,
    ) -> Result<(Committed, T), Error> {
        let (committed, value) = self.store.transact_with(id, at, f).await?;
        self.note(committed.recovered.clone());
        Ok((committed, value))
    }

    pub async fn set_project_status(
        &self,
        id: &ProjectId,
        to: ProjectStatus,
    ) -> Result<Project, Error> {
        let at = self.now();
        let committed = self
            .transact(id, at, move |state| {
                let from = state.project.status;
                if from == to {
                    return Ok(Changes::default());
                }
                state.project.status = to;
                state.project.updated_at = at;
                Ok(Changes::events(vec![ProjectEvent::ProjectStatusChanged {
                    from,
                    to,
                }]))
            })
            .await?;
        Ok(committed.state.project)
    }

    pub async fn add_task(&self, id: &ProjectId, new: NewTask) -> Result<Task, Error> {
        Ok(self.add_task_reporting(id, new).await?.task)
    }

    /// Moves a task, then runs the completion cascade; checkpoints and velocity follow the policy.
    pub async fn move_task(
        &self,
        id: &ProjectId,
        task: &TaskId,
        to: TaskStatus,
        detail: MoveDetail,
    ) -> Result<Moved, Error> {
        self.move_task_as(id, task, to, detail, &Actor::default())
            .await
    }

    /// [`Self::move_task`] by `actor`: refused while another agent holds a live claim on the
    /// task, unless forced ([`claims::check_actor`]).
    pub async fn move_task_as(
        &self,
        id: &ProjectId,
        task: &TaskId,
        to: TaskStatus,
        detail: MoveDetail,
        actor: &Actor,
    ) -> Result<Moved, Error> {
        let moved = self
            .move_task_path_as(id, task, None, vec![(to, detail)], actor)
            .await?;
        moved.ok_or_else(|| ProjectError::UnknownTask { task: task.clone() }.into())
    }

    /// Moves a task along `path` in one transaction (each move checked as
    /// [`Self::move_task_as`] checks it), but only while the task is still exactly `before` (its
    /// JSON, as [`task_fingerprint`] gives it): `None`, and nothing written, when it has changed
    /// since. So a move recorded ahead of time is applied once however often it is replayed.
    pub async fn move_task_path_if_unchanged(
        &self,
        id: &ProjectId,
        task: &TaskId,
        before: &str,
        path: Vec<(TaskStatus, MoveDetail)>,
        actor: &Actor,
    ) -> Result<Option<Moved>, Error> {
        self.move_task_path_as(id, task, Some(before), path, actor)
            .await
    }

    async fn move_task_path_as(
        &self,
        id: &ProjectId,
        task: &TaskId,
        before: Option<&str>,
        path: Vec<(TaskStatus, MoveDetail)>,
        actor: &Actor,
    ) -> Result<Option<Moved>, Error> {
        let at = self.now();
        let (committed, applied) = self
            .transact_with(id, at, |state| {
                if let Some(before) = before
                    && state.tasks.get(task).map(task_fingerprint).as_deref() != Some(before)
                {
                    return Ok((Changes::default(), None));
                }
                let mut events = Vec::new();
                for (to, detail) in path {
                    if let Some(current) = state.tasks.get(task) {
                        claims::check_actor(current, actor, at)?;
                    }
                    events.extend(state.tasks.move_task(task, to, detail, at)?);
                }
                let moves: Vec<_> = events
                    .iter()
                    .filter_map(|e| match e {
                        ProjectEvent::TaskMoved { task, from, to, .. } => {
                            Some((task.clone(), *from, *to))
                        }
                        _ => None,
                    })
                    .collect();
                let completed =
                    policy::completions(events.iter().map(|e| (at, e.clone())), &state.tasks);
                advance_project(state, at, &mut events);
                let project_status = phases::settle_project(state, at, &mut events);
                // The completions the velocity takes in, when the change completes a task.
                let velocity = moves
                    .iter()
                    .any(|(_, _, to)| *to == TaskStatus::Complete)
                    .then_some(completed);
                let changes = Changes {
                    velocity: velocity.clone(),
                    ..finish(state, events, false)
                };
                Ok((changes, Some((moves, velocity, project_status))))
            })
            .await?;
        let Some((moves, velocity, project_status)) = applied else {
            return Ok(None);
        };
        if let Some(completed) = velocity
            && committed.velocity.is_none()
        {
            // The move is saved: a failed refresh must not read as a failed move.
            self.refresh_velocity(id, &committed.state.tasks, at, &completed)
                .await
                .map_err(StoreError::after_commit)?;
        }
        Ok(Some(Moved {
            task: task_in(&committed.state, task)?,
            changes: moves,
            checkpoint: committed.checkpoint,
            project_status,
        }))
    }

    /// Claims a task for `agent` until now + `lease`, in one transaction with the choice of
    /// task: two racing claimers never get the same one.
    pub async fn claim(
        &self,
        id: &ProjectId,
        target: &ClaimTarget,
        agent: &str,
        lease: std::time::Duration,
    ) -> Result<Task, Error> {
        let lease = claims::lease(lease)?;
        let at = self.now();
        let (committed, claimed) = self
            .transact_with(id, at, |state| {
                let (claimed, mut events) = state.tasks.claim(target, agent, lease, at)?;
                advance_project(state, at, &mut events);
                phases::settle_project(state, at, &mut events);
                Ok((finish(state, events, false), claimed))
            })
            .await?;
        task_in(&committed.state, &claimed)
    }

    /// Extends `agent`'s lease on `task` to now + `lease`; only the holder may.
    pub async fn heartbeat(
        &self,
        id: &ProjectId,
        task: &TaskId,
        agent: &str,
        lease: std::time::Duration,
    ) -> Result<Task, Error> {
        let lease = claims::lease(lease)?;
        let at = self.now();
        let committed = self
            .transact(id, at, |state| {
                Ok(Changes::events(
                    state.tasks.heartbeat(task, agent, lease, at)?,
                ))
            })
            .await?;
        task_in(&committed.state, task)
    }

    pub async fn decompose(
        &self,
        id: &ProjectId,
        parent: &TaskId,
        children: Vec<NewTask>,
    ) -> Result<(Task, Vec<Task>), Error> {
        let at = self.now();
        let (committed, created) = self
            .transact_with(id, at, |state| {
                let (ids, mut events) = state.tasks.decompose(parent, children, at)?;
                advance_project(state, at, &mut events);
                phases::settle_project(state, at, &mut events);
                Ok((finish(state, events, false), ids))
            })
            .await?;
        let parent = task_in(&committed.state, parent)?;
        let children = created
            .iter()
            .map(|c| task_in(&committed.state, c))
            .collect::<Result<_, _>>()?;
        Ok((parent, children))
    }

    pub async fn depend(
        &self,
        id: &ProjectId,
        task: &TaskId,
        on: &TaskId,
        remove: bool,
    ) -> Result<Task, Error> {
        let at = self.now();
        let committed = self
            .transact(id, at, |state| {
                let events = if remove {
                    state.tasks.remove_dependency(task, on)?
                } else {
                    state.tasks.add_dependency(task, on)?
                };
                Ok(Changes::events(events))
            })
            .await?;
        task_in(&committed.state, task)
    }

    pub async fn next(&self, id: &ProjectId) -> Result<Option<Task>, Error> {
        let state = self.load(id).await?;
        Ok(graph::next(&state.tasks).cloned())
    }

    pub async fn ready(&self, id: &ProjectId) -> Result<Vec<Task>, Error> {
        let state = self.load(id).await?;
        Ok(graph::schedule(&state.tasks).into_iter().cloned().collect())
    }

    pub async fn waves(&self, id: &ProjectId) -> Result<Waves, Error> {
        Ok(graph::waves(&self.load(id).await?.tasks))
    }

    pub async fn critical_path(&self, id: &ProjectId) -> Result<Vec<TaskId>, Error> {
        Ok(graph::critical_path(&self.load(id).await?.tasks))
    }

    /// Adds a phase to the project (PENDING), or does nothing if it exists.
    pub async fn ensure_phase(
        &self,
        id: &ProjectId,
        phase: &str,
        name: Option<&str>,
    ) -> Result<Project, Error> {
        check_phase_id(phase)?;
        let at = self.now();
        let phase = phase.to_owned();
        let name = name.map(str::to_owned);
        let committed = self
            .transact(id, at, move |state| {
                if !state.project.phases.iter().any(|p| p.id == phase) {
                    state.project.phases.push(Phase {
                        name: name.unwrap_or_else(|| phase.clone()),
                        id: phase,
                        status: PhaseStatus::Pending,
                        task_ids: None,
                        extra: Default::default(),
                    });
                    state.project.updated_at = at;
                }
                Ok(Changes::default())
            })
            .await?;
        Ok(committed.state.project)
    }

    pub async fn checkpoints(&self, id: &ProjectId) -> Result<Vec<CheckpointInfo>, Error> {
        Ok(self.store.list_checkpoints(id).await?)
    }

    pub async fn write_checkpoint(&self, id: &ProjectId) -> Result<CheckpointInfo, Error> {
        Ok(self.store.write_checkpoint(id, self.now()).await?)
    }

    /// A checkpoint holding the current tasks, and whether it was written now (see
    /// [`ProjectStore::keep_checkpoint`]): what the PreCompact hook keeps.
    pub async fn keep_checkpoint(&self, id: &ProjectId) -> Result<(CheckpointInfo, bool), Error> {
        Ok(self.store.keep_checkpoint(id, self.now()).await?)
    }

    pub async fn restore_checkpoint(
        &self,
        id: &ProjectId,
        number: u32,
    ) -> Result<Committed, Error> {
        Ok(self
            .store
            .restore_checkpoint(id, number, self.now())
            .await?)
    }

    pub async fn log(
        &self,
        id: &ProjectId,
        query: &LogQuery,
    ) -> Result<(Vec<LogRecord>, Option<String>), Error> {
        // Filters apply before the tail so `--event X --tail 5` means the last five X entries.
        let filtered = query.kind.is_some() || query.task.is_some();
        let read = self
            .store
            .read_log(id, if filtered { None } else { query.tail })
            .await?;
        let kind = query.kind.as_deref().map(|k| EventKind::parse(k).name());
        let mut records: Vec<LogRecord> = read
            .records
            .into_iter()
            .filter(|r| {
                kind.as_ref()
                    .is_none_or(|k| &EventKind::parse(&r.kind).name() == k)
            })
            .filter(|r| {
                query.task.as_ref().is_none_or(|t| {
                    r.get("task")
                        .and_then(|id| id.parse::<TaskId>().ok())
                        .as_ref()
                        == Some(t)
                })
            })
            .collect();
        if let Some(n) = query.tail {
            let skip = records.len().saturating_sub(n);
            records.drain(..skip);
        }
        Ok((records, read.torn_tail))
    }

    pub async fn velocity(&self, id: &ProjectId) -> Result<Velocity, Error> {
        let state = self.load(id).await?;
        Ok(self
            .recompute_velocity(id, &state.tasks, self.now())
            .await?)
    }

    /// Brings the velocity up to date after the leaf completions `new`, committed at `at`: the
    /// window saved with the last velocity plus `new` (no log read — the log of a large store is
    /// megabytes), or, when no window is saved, a recomputation from the log (which holds `new`).
    async fn refresh_velocity(
        &self,
        id: &ProjectId,
        doc: &TaskDoc,
        at: Timestamp,
        new: &[Completion],
    ) -> Result<Velocity, StoreError> {
        let updated = self
            .store
            .update_velocity(id, &|previous| {
                policy::velocity_after(previous.as_ref()?, new, doc, at)
            })
            .await?;
        match updated {
            Some(velocity) => Ok(velocity),
            None => self.recompute_velocity(id, doc, at).await,
        }
    }

    /// The velocity recomputed from the completions in the log's tail, saved.
    async fn recompute_velocity(
        &self,
        id: &ProjectId,
        doc: &TaskDoc,
        at: Timestamp,
    ) -> Result<Velocity, StoreError> {
        let log = self.store.read_log(id, Some(VELOCITY_LOG_TAIL)).await?;
        let completions = policy::completions(
            log.records.iter().filter_map(ProjectEvent::from_record_at),
            doc,
        );
        let velocity = policy::velocity(&completions, doc, at);
        self.store.write_velocity(id, &velocity).await?;
        Ok(velocity)
    }

    /// Resume reconciliation and the staleness check, or with `dry_run` what they would do.
    pub async fn reconcile(
        &self,
        id: &ProjectId,
        scope: ReconcileScope,
        dry_run: bool,
    ) -> Result<ReconcileReport, Error> {
        self.reconcile_as(id, scope, dry_run, None).await
    }

    /// [`Self::reconcile`] by a session that may hold claims: its own claimed tasks are reset
    /// like unclaimed ones; other agents' live claims are left alone
    /// ([`policy::reconcilable`]); lapsed leases are logged (LEASE_EXPIRED) and reset.
    pub async fn reconcile_as(
        &self,
        id: &ProjectId,
        scope: ReconcileScope,
        dry_run: bool,
        this_session: Option<&str>,
    ) -> Result<ReconcileReport, Error> {
        let at = self.now();
        // Work out what needs the log and research files outside the lock: both only grow.
        let state = self.load(id).await?;
        let stale = policy::stale_candidates(&state.tasks, at);
        let completed_in_log = if stale.is_empty() {
            HashSet::new()
        } else {
            self.completed_in_log(id, &stale).await?
        };
        let mut research = std::collections::HashMap::new();
        if scope == ReconcileScope::Resume {
            for t in state
                .tasks
                .tasks
                .iter()
                .filter(|t| policy::reconcilable(t, at, this_session))
            {
                research.insert(t.id.clone(), self.store.research_modified(id, &t.id).await?);
            }
        }
        let plan = |doc: &mut TaskDoc| -> (ReconcileReport, Vec<ProjectEvent>) {
            let mut report = ReconcileReport::default();
            let mut events = policy::apply_staleness(doc, &stale, &completed_in_log, at);
            for e in &events {
                if let ProjectEvent::TaskMoved {
                    task,
                    from,
                    to,
                    reason,
                    ..
                } = e
                {
                    let reason = reason.clone().unwrap_or_else(|| "stale".into());
                    report.stale.push(Reconciled {
                        task: task.clone(),
                        from: *from,
                        to: *to,
                        reason,
                    });
                }
            }
            if scope == ReconcileScope::Resume {
                let lookup = |t: &TaskId| research.get(t).copied().flatten();
                for r in policy::reconciliation(doc, &lookup, at, this_session) {
                    let lapsed = doc.get(&r.task).filter(|t| t.lease_expired(at)).map(|t| {
                        ProjectEvent::LeaseExpired {
                            task: t.id.clone(),
                            agent: t.claimed_by.clone().unwrap_or_default(),
                            expired_at: t.lease_expires_at,
                        }
                    });
                    if let Ok(moved) = doc.move_task(
                        &r.task,
                        r.to,
                        MoveDetail {
                            actual_minutes: None,
                            reason: Some(r.reason.clone()),
                        },
                        at,
                    ) {
                        events.extend(lapsed);
                        events.extend(moved);
                        report.reconciled.push(r);
                    }
                }
            }
            (report, events)
        };
        if dry_run {
            let mut doc = state.tasks.clone();
            return Ok(plan(&mut doc).0);
        }
        if !scope.has_work_for(&state.tasks, at, this_session) {
            return Ok(ReconcileReport {
                applied: true,
                ..Default::default()
            });
        }
        let mut report = ReconcileReport::default();
        self.transact(id, at, |state| {
            let (r, events) = plan(&mut state.tasks);
            report = r;
            Ok(Changes::events(events))
        })
        .await?;
        report.applied = true;
        Ok(report)
    }

    async fn completed_in_log(
        &self,
        id: &ProjectId,
        tasks: &[TaskId],
    ) -> Result<HashSet<TaskId>, Error> {
        let wanted: HashSet<&TaskId> = tasks.iter().collect();
        let log = self.store.read_log(id, None).await?;
        Ok(log
            .records
            .iter()
            .filter(|r| EventKind::parse(&r.kind) == EventKind::TaskComplete)
            .filter_map(|r| r.get("task")?.parse::<TaskId>().ok())
            .filter(|t| wanted.contains(t))
            .collect())
    }

    pub async fn doctor(
        &self,
        id: &ProjectId,
        fix: bool,
        scrutiny: Scrutiny,
    ) -> Result<DoctorReport, Error> {
        let at = self.now();
        let mut report = DoctorReport {
            scrutiny,
            store: self.store.health(id, at, scrutiny).await?,
            ..Default::default()
        };
        let state = self.load(id).await?;
        report.findings = report::diagnose(&state.tasks);
        if !fix {
            return Ok(report);
        }
        if !report.store.debris.is_empty() {
            report.debris_removed = self.store.clean_debris(id, at).await?;
        }
        if report.findings.iter().any(|f| f.fixable) {
            let (_, repaired) = self
                .transact_with(id, at, |state| {
                    let events = report::repair(&mut state.tasks, at);
                    let repaired = events
                        .iter()
                        .filter_map(|e| match e {
                            ProjectEvent::Repaired { task, detail } => Some(match task {
                                Some(t) => format!("{t}: {detail}"),
                                None => detail.clone(),
                            }),
                            _ => None,
                        })
                        .collect();
                    Ok((Changes::events(events), repaired))
                })
                .await?;
            report.repaired = repaired;
        }
        // Report what is left after the repairs.
        let state = self.load(id).await?;
        report.findings = report::diagnose(&state.tasks);
        report.store = self.store.health(id, at, scrutiny).await?;
        Ok(report)
    }

    pub async fn summary(&self, id: &ProjectId) -> Result<Summary, Error> {
        Ok(report::summarize(&self.load(id).await?, 5))
    }

    /// What an agent is told at session start; `cairn_render::prime` makes the text.
    pub async fn prime(&self, id: &ProjectId) -> Result<Summary, Error> {
        Ok(report::prime(&self.load(id).await?))
    }

    pub async fn clean_debris(&self, id: &ProjectId) -> Result<Vec<String>, Error> {
        Ok(self.store.clean_debris(id, self.now()).await?)
    }

    /// Logs a Claude Code hook event against the project.
    pub async fn record_session_event(
        &self,
        id: &ProjectId,
        hook: &str,
        session_id: &str,
        detail: Option<String>,
    ) -> Result<(), Error> {
        let event = ProjectEvent::Session {
            hook: hook.to_owned(),
            session_id: session_id.to_owned(),
            detail,
        };
        Ok(self.store.append_log(id, self.now(), vec![event]).await?)
    }

    /// The research brief of `task`, if one was written. Briefs are never deleted (not even by a
    /// stale reset); a fresh one lets the next attempt skip research.
    pub async fn research_brief(
        &self,
        id: &ProjectId,
        task: &TaskId,
    ) -> Result<Option<ResearchBrief>, Error> {
        let now = self.now();
        Ok(self
            .store
            .research_modified(id, task)
            .await?
            .map(|written_at| ResearchBrief {
                written_at,
                fresh: policy::research_is_fresh(written_at, now),
            }))
    }

    pub async fn write_research(
        &self,
        id: &ProjectId,
        task: &TaskId,
        text: &str,
    ) -> Result<(), Error> {
        let at = self.now();
        // The task must exist: a brief for nothing is a typo.
        let state = self.load(id).await?;
        if state.tasks.get(task).is_none() {
            return Err(ProjectError::UnknownTask { task: task.clone() }.into());
        }
        self.store.write_research(id, task, text, at).await?;
        // Record where the brief is, as the original plugin does; once, so rewriting a brief adds
        // no log entry. The brief is on disk by now: a failure here must not read as "not written".
        let path = research_file_for(task);
        if state
            .tasks
            .get(task)
            .and_then(|t| t.research_file.as_deref())
            != Some(path.as_str())
        {
            self.transact(id, at, |state| {
                let t = state
                    .tasks
                    .tasks
                    .iter_mut()
                    .find(|t| &t.id == task)
                    .ok_or_else(|| ProjectError::UnknownTask { task: task.clone() })?;
                t.research_file = Some(path.clone());
                Ok(Changes::events(vec![ProjectEvent::ResearchWritten {
                    task: task.clone(),
                    path: path.clone(),
                }]))
            })
            .await
            .map_err(saved_anyway)?;
        }
        Ok(())
    }
}

/// A failure after a transaction committed says so, so the caller does not repeat the change.
fn saved_anyway(error: Error) -> Error {
    match error {
        Error::Store(source) => Error::Store(source.after_commit()),
        Error::Domain(_) => error,
    }
}

/// Adds the checkpoint decision to a set of events: due after a phase completion or every tenth
/// completion. Resets the counter so the checkpoint itself records zero.
/// A task as one string that changes whenever the task does: what
/// [`ProjectService::move_task_path_if_unchanged`] compares.
pub fn task_fingerprint(task: &Task) -> String {
    serde_json::to_string(task).unwrap_or_default()
}

fn finish(state: &mut ProjectState, events: Vec<ProjectEvent>, phase_completed: bool) -> Changes {
    let checkpoint =
        policy::checkpoint_due(state.tasks.completions_since_checkpoint, phase_completed);
    if checkpoint {
        state.tasks.completions_since_checkpoint = 0;
    }
    Changes {
        events,
        checkpoint,
        velocity: None,
    }
}

/// The project follows its tasks out of the planning statuses: READY (or INITIALIZING) becomes
/// PLANNED once there are tasks, and IN_PROGRESS once one is under way.
fn advance_project(state: &mut ProjectState, at: Timestamp, events: &mut Vec<ProjectEvent>) {
    let from = state.project.status;
    let started = state.tasks.tasks.iter().any(|t| {
        !t.is_parent() && t.status != TaskStatus::Pending && t.status != TaskStatus::Cancelled
    });
    let to = match from {
        ProjectStatus::Initializing | ProjectStatus::Ready | ProjectStatus::Planned if started => {
            ProjectStatus::InProgress
        }
        ProjectStatus::Initializing | ProjectStatus::Ready if !state.tasks.tasks.is_empty() => {
            ProjectStatus::Planned
        }
        _ => return,
    };
    state.project.status = to;
    state.project.updated_at = at;
    events.push(ProjectEvent::ProjectStatusChanged { from, to });
}

fn task_in(state: &ProjectState, id: &TaskId) -> Result<Task, Error> {
    state
        .tasks
        .get(id)
        .cloned()
        .ok_or_else(|| ProjectError::UnknownTask { task: id.clone() }.into())
}

/// What `add_task_reporting` returns: the task, and the project's new status when adding it
/// reopened a COMPLETE project.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Added {
    pub task: Task,
    pub project_status: Option<ProjectStatus>,
}

/// What `edit_task` returns: the task after the edit and what changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Edited {
    pub task: Task,
    pub changes: Vec<FieldChange>,
}

/// What `complete_phase` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseCompleted {
    pub phase: Phase,
    /// Tasks still unfinished when the phase was completed anyway (`force`).
    pub still_open: Vec<TaskId>,
    pub checkpoint: Option<u32>,
}

/// What `status` shows beyond the counts (which hold the current phase): the critical path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outlook {
    pub summary: Summary,
    /// The leaves of the critical path, first task first: id, title, estimate.
    pub critical_path: Vec<(TaskId, String, Option<u32>)>,
    /// Its remaining estimate; unestimated leaves count as
    /// [`graph::DEFAULT_ESTIMATE_MINUTES`], as they do when the path is chosen.
    pub critical_minutes: u64,
}

/// The phase `phase` as the project knows it, declaring it if only tasks name it; an unknown
/// phase is refused with the known ones listed.
fn phase_index(state: &mut ProjectState, phase: &str) -> Result<usize, DomainError> {
    if let Some(i) = state.project.phases.iter().position(|p| p.id == phase) {
        return Ok(i);
    }
    if state
        .tasks
        .tasks
        .iter()
        .any(|t| t.phase_id.as_deref() == Some(phase))
    {
        state.project.phases.push(phases::undeclared(phase));
        return Ok(state.project.phases.len() - 1);
    }
    let known: Vec<String> = phases::all_phases(state)
        .into_iter()
        .map(|p| p.id)
        .collect();
    Err(ProjectError::UnknownPhase {
        phase: phase.to_owned(),
        known: if known.is_empty() {
            "none yet".to_owned()
        } else {
            known.join(", ")
        },
    }
    .into())
}

impl ProjectService {
    /// Adds a task; a COMPLETE project it reopens says so in `project_status`.
    pub async fn add_task_reporting(&self, id: &ProjectId, new: NewTask) -> Result<Added, Error> {
        let at = self.now();
        let (committed, (created, project_status)) = self
            .transact_with(id, at, |state| {
                let (task, mut events) = state.tasks.add_task(new, at)?;
                advance_project(state, at, &mut events);
                let project_status = phases::settle_project(state, at, &mut events);
                Ok((finish(state, events, false), (task, project_status)))
            })
            .await?;
        Ok(Added {
            task: task_in(&committed.state, &created)?,
            project_status,
        })
    }

    /// Imports tasks from another tool, or cairn's own export (see [`import`]), in one
    /// transaction. The dry run is the same computation on a copy, never saved; an import that
    /// would change nothing saves nothing either, so re-importing leaves every file as it was.
    /// `progress` hears (done, total) as tasks are handled.
    pub async fn import(
        &self,
        id: &ProjectId,
        incoming: &Incoming,
        dry_run: bool,
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<ImportReport, Error> {
        let at = self.now();
        if dry_run {
            let mut copy = self.load(id).await?;
            let (_, mut report) = import::apply(&mut copy, incoming, at, progress)?;
            report.dry_run = true;
            return Ok(report);
        }
        // One pass, under the lock: a pass outside it first (to report progress, or to see that
        // nothing changes) did the whole work twice, and the store writes nothing for a mutation
        // that changes nothing.
        let (_, report) = self
            .transact_with(id, at, |state| {
                let (mut events, report) = import::apply(state, incoming, at, progress)?;
                if events.is_empty() {
                    return Ok((Changes::default(), report));
                }
                advance_project(state, at, &mut events);
                phases::settle_project(state, at, &mut events);
                Ok((finish(state, events, false), report))
            })
            .await?;
        Ok(report)
    }

    /// Edits a task's fields (see [`TaskDoc::edit_task`]); logs TASK_UPDATED when something
    /// changed.
    pub async fn edit_task(
        &self,
        id: &ProjectId,
        task: &TaskId,
        edit: TaskEdit,
    ) -> Result<Edited, Error> {
        if edit.is_empty() {
            return Err(DomainError::invalid("edit", "nothing to change was given").into());
        }
        let at = self.now();
        let (committed, changes) = self
            .transact_with(id, at, |state| {
                let (changes, events) = state.tasks.edit_task(task, edit)?;
                Ok((Changes::events(events), changes))
            })
            .await?;
        Ok(Edited {
            task: task_in(&committed.state, task)?,
            changes,
        })
    }

    /// Declares a phase (PENDING) and logs PHASE_ADDED; an existing id is refused.
    pub async fn add_phase(&self, id: &ProjectId, phase: &str, name: &str) -> Result<Phase, Error> {
        let phase = phase.trim().to_owned();
        if phase.is_empty() {
            return Err(
                DomainError::invalid("phase", "give the phase an id, e.g. `design`").into(),
            );
        }
        check_phase_id(&phase)?;
        let name = name.trim().to_owned();
        if name.is_empty() {
            return Err(DomainError::invalid("name", "give the phase a name").into());
        }
        let at = self.now();
        let committed = self
            .transact(id, at, |state| {
                if state.project.phases.iter().any(|p| p.id == phase) {
                    return Err(ProjectError::PhaseExists {
                        phase: phase.clone(),
                    }
                    .into());
                }
                state.project.phases.push(Phase {
                    id: phase.clone(),
                    name: name.clone(),
                    status: PhaseStatus::Pending,
                    task_ids: None,
                    extra: Default::default(),
                });
                state.project.updated_at = at;
                Ok(Changes::events(vec![ProjectEvent::PhaseAdded {
                    phase: phase.clone(),
                    name: name.clone(),
                }]))
            })
            .await?;
        phase_in(&committed.state.project, &phase)
    }

    /// Every phase with its progress: the declared ones in order, then those only tasks name.
    pub async fn phases(&self, id: &ProjectId) -> Result<Vec<PhaseProgress>, Error> {
        let state = self.load(id).await?;
        Ok(phases::all_phases(&state)
            .iter()
            .map(|p| phases::progress(&state, p))
            .collect())
    }

    /// PENDING → IN_PROGRESS; logs PHASE_STARTED.
    pub async fn start_phase(&self, id: &ProjectId, phase: &str) -> Result<Phase, Error> {
        let at = self.now();
        let committed = self
            .transact(id, at, |state| {
                let i = phase_index(state, phase)?;
                phases::check_phase_move(&state.project.phases[i], PhaseStatus::InProgress)?;
                state.project.phases[i].status = PhaseStatus::InProgress;
                state.project.updated_at = at;
                Ok(Changes::events(vec![ProjectEvent::PhaseStarted {
                    phase: phase.to_owned(),
                }]))
            })
            .await?;
        phase_in(&committed.state.project, phase)
    }

    /// Marks a phase COMPLETE (declaring it if only tasks named it), logs PHASE_COMPLETE and
    /// writes a checkpoint. A phase with unfinished tasks is refused, naming them, unless
    /// `force`; then they are reported in `still_open`.
    pub async fn complete_phase(
        &self,
        id: &ProjectId,
        phase: &str,
        force: bool,
    ) -> Result<PhaseCompleted, Error> {
        let at = self.now();
        let (committed, still_open) = self
            .transact_with(id, at, |state| {
                let i = phase_index(state, phase)?;
                phases::check_phase_move(&state.project.phases[i], PhaseStatus::Complete)?;
                let open = phases::open_tasks(state, &state.project.phases[i]);
                if !open.is_empty() && !force {
                    return Err(ProjectError::PhaseHasOpenTasks {
                        phase: phase.to_owned(),
                        open,
                    }
                    .into());
                }
                state.project.phases[i].status = PhaseStatus::Complete;
                state.project.updated_at = at;
                let changes = finish(
                    state,
                    vec![ProjectEvent::PhaseComplete {
                        phase: phase.to_owned(),
                        still_open: open.clone(),
                    }],
                    true,
                );
                Ok((changes, open))
            })
            .await?;
        Ok(PhaseCompleted {
            phase: phase_in(&committed.state.project, phase)?,
            still_open,
            checkpoint: committed.checkpoint,
        })
    }

    /// The summary behind `status`, with the current phase and the critical path.
    pub async fn outlook(&self, id: &ProjectId) -> Result<Outlook, Error> {
        let state = self.load(id).await?;
        let mut critical_minutes = 0;
        let critical_path = graph::critical_path(&state.tasks)
            .into_iter()
            .filter_map(|t| state.tasks.get(&t))
            // A parent on the path is the work of its children, which are on it too.
            .filter(|t| !t.is_parent())
            .map(|t| {
                critical_minutes += u64::from(
                    t.estimate_minutes
                        .unwrap_or(graph::DEFAULT_ESTIMATE_MINUTES),
                );
                (t.id.clone(), t.title.clone(), t.estimate_minutes)
            })
            .collect();
        Ok(Outlook {
            summary: report::summarize(&state, 5),
            critical_path,
            critical_minutes,
        })
    }
}

fn phase_in(project: &Project, phase: &str) -> Result<Phase, Error> {
    project
        .phases
        .iter()
        .find(|p| p.id == phase)
        .cloned()
        .ok_or_else(|| {
            ProjectError::UnknownPhase {
                phase: phase.to_owned(),
                known: String::new(),
            }
            .into()
        })
}

/// One of several projects, as a session start lists them for the agent to choose from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProjectOverview {
    pub id: ProjectId,
    pub name: String,
    pub status: ProjectStatus,
    /// Leaf tasks that count (cancelled ones do not), and how many of them are complete.
    pub leaves_total: usize,
    pub leaves_complete: usize,
}

/// A task still IN_PROGRESS that was started during a given agent session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpenWork {
    pub task: TaskId,
    pub title: String,
}

/// How many progress-log records back [`ProjectService::open_work_of_session`] looks for the
/// session's start. Bounded so the Stop hook, which runs after every turn, stays cheap however
/// long the log grows; a session whose start scrolled out of that window gets no reminder.
pub const SESSION_LOOKBACK: usize = 2_000;

impl ProjectService {
    /// Every project with its progress, sorted by id, for choosing one when several exist.
    pub async fn overview(&self) -> Result<Vec<ProjectOverview>, Error> {
        let mut out = Vec::new();
        for id in self.store.list().await? {
            let state = self.load(&id).await?;
            let summary = report::summarize(&state, 0);
            out.push(ProjectOverview {
                id,
                name: state.project.name,
                status: state.project.status,
                leaves_total: summary.leaves_total,
                leaves_complete: summary.leaves_complete,
            });
        }
        Ok(out)
    }

    /// The tasks still IN_PROGRESS that agent session `session_id` started: leaves whose
    /// `started_at` is at or after the session's first SESSION_START entry in the last
    /// [`SESSION_LOOKBACK`] log records. The *first* entry, because a compaction logs another
    /// SESSION_START for the same session while its work stays in progress. No such entry (an
    /// unknown session, or one started long ago) means nothing to report.
    pub async fn open_work_of_session(
        &self,
        id: &ProjectId,
        session_id: &str,
    ) -> Result<Vec<OpenWork>, Error> {
        let start_kind = EventKind::Session("START".to_owned()).name();
        let log = self.store.read_log(id, Some(SESSION_LOOKBACK)).await?;
        let Some(first) = log
            .records
            .iter()
            .position(|r| r.kind == start_kind && r.get("session") == Some(session_id))
        else {
            return Ok(Vec::new());
        };
        let since = log.records[first].at;
        // Stop runs after every turn: when the log shows nothing moved into IN_PROGRESS since the
        // session started, the task list (the bulk of the cost) is not read at all.
        let moved_in = log.records[first..].iter().any(|r| {
            matches!(
                EventKind::parse(&r.kind),
                EventKind::TaskStarted | EventKind::TaskReopened | EventKind::TaskUnblocked
            )
        });
        if !moved_in {
            return Ok(Vec::new());
        }
        let state = self.load(id).await?;
        Ok(state
            .tasks
            .tasks
            .into_iter()
            .filter(|t| {
                !t.is_parent()
                    && t.status == TaskStatus::InProgress
                    && t.started_at.is_some_and(|at| at >= since)
            })
            .map(|t| OpenWork {
                task: t.id,
                title: t.title,
            })
            .collect())
    }
}
