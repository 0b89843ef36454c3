//! Running a project's tasks in an execution session: the use cases that span the execution
//! service and the project service, so a command makes one call.
//!
//! The session speaks task-list ids (`7`); the project speaks `T-007`. A task's end is one unit
//! across the two stores: the session's write (the `task_log.md` row, `progress.md`) also records
//! the project move it implies ([`ProjectMove`]), so that write is the commit point; the project
//! move follows, and the record is forgotten once the project holds it. A crash in between is
//! finished by [`SessionRunner::settle`], which the next command of either wing runs first: the
//! move applies only while the task is exactly as it was checked, so it never lands twice.
//! Every project move is checked on a copy before the session is touched, so a move the rules
//! refuse writes nothing anywhere.

use std::time::Duration;

use super::context::TaskContext;
use super::error::ExecutionError;
use super::lock::LockDecision;
use super::naming::check_path_segment;
use super::progress::{ActiveTask, Progress};
use super::service::{
    ExecutionService, FinishOutcome, StartOutcome, StartRequest, TaskResult, TaskSnapshot,
};
use super::state::LiveSession;
use super::store::{MoveStep, ProjectMove};
use super::task_log::{Attempts, TaskOutcome};
use crate::error::{DomainError, Error, StoreError};
use crate::project::claims::check_actor;
use crate::project::graph;
use crate::project::service::{ProjectService, task_fingerprint};
use crate::project::{Actor, MoveDetail, ProjectId, Task, TaskDoc, TaskId, TaskStatus};
use crate::tasklist::{ClaudeTaskStatus, list_task_id, project_task_id};

/// How many attempts a task gets before a failure blocks it.
pub const MAX_ATTEMPTS: u32 = 3;

/// Which tasks a session runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Every open leaf that can run, in dependency waves.
    All,
    /// Only the tasks ready now (the first wave).
    Ready,
    /// These tasks, in dependency waves.
    Tasks(Vec<TaskId>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStart {
    pub project: ProjectId,
    /// Names the session and keeps only tasks whose phase or a tag is this name.
    pub group: Option<String>,
    pub max_parallel: u32,
    pub selection: Selection,
    pub force: bool,
}

/// A task as the plan lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedTask {
    pub id: TaskId,
    /// The task-list id (`7` for `T-007`).
    pub list_id: String,
    pub title: String,
}

/// The waves a session will run: dependency layers, each cut to at most `max_parallel` tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WavePlan {
    pub project: ProjectId,
    pub group: Option<String>,
    pub max_parallel: u32,
    pub waves: Vec<Vec<PlannedTask>>,
}

impl WavePlan {
    pub fn task_count(&self) -> usize {
        self.waves.iter().map(Vec::len).sum()
    }
}

/// What recovery did to the project tasks an interrupted session left under way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// The archive the leftovers went to.
    pub archive: Option<String>,
    /// Back to PENDING: under way, not logged as passed.
    pub reset: Vec<TaskId>,
    /// To COMPLETE: logged as passed before the crash.
    pub completed: Vec<TaskId>,
    /// Left alone: another agent holds a live claim on them.
    pub claimed: Vec<(TaskId, String)>,
}

impl Recovered {
    /// Adds what a later pass over the same session settled (a task appears once).
    fn absorb(&mut self, later: Recovered) {
        for id in later.reset {
            if !self.reset.contains(&id) {
                self.reset.push(id);
            }
        }
        for id in later.completed {
            if !self.completed.contains(&id) {
                self.completed.push(id);
            }
        }
        for claim in later.claimed {
            if !self.claimed.contains(&claim) {
                self.claimed.push(claim);
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStarted {
    pub outcome: StartOutcome,
    pub plan: WavePlan,
    pub recovered: Recovered,
    pub progress: Progress,
}

/// How a task ended, as the orchestrator reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEnd {
    Done,
    Failed,
    Skipped,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskEndReport {
    pub end: TaskEnd,
    pub duration: Option<Duration>,
    pub tokens: Option<u64>,
    pub note: Option<String>,
}

/// What a task command changed, in the session and in the project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStep {
    pub task: TaskId,
    pub list_id: String,
    pub title: String,
    /// The project status after the command (unchanged when no move was needed).
    pub status: TaskStatus,
    /// The attempts logged (`None` for a start or a skip, which log no row).
    pub attempts: Option<Attempts>,
    pub progress: Progress,
}

/// The orchestration of an execution session over a project.
#[derive(Debug)]
pub struct SessionRunner<'a> {
    execution: ExecutionService,
    projects: &'a ProjectService,
}

impl<'a> SessionRunner<'a> {
    pub fn new(execution: ExecutionService, projects: &'a ProjectService) -> Self {
        Self {
            execution,
            projects,
        }
    }

    pub fn execution(&self) -> &ExecutionService {
        &self.execution
    }

    /// Plans waves from the project's dependency graph, starts the session (archiving and
    /// recovering a dead one's leftovers first), and begins wave 1. `render_plan` writes the
    /// plan's `execution_plan.md` text (the domain holds no file text).
    pub async fn start(
        &self,
        request: SessionStart,
        render_plan: impl FnOnce(&WavePlan) -> String,
    ) -> Result<SessionStarted, Error> {
        if request.max_parallel == 0 {
            return Err(DomainError::invalid("max parallel", "it must be at least 1").into());
        }
        // A dead session's tasks are settled before planning, so the tasks it left under way are
        // planned again, and a kill between this and the archive is repaired by the next start.
        let mut recovered = Recovered::default();
        if let Ok(Some((seen, _))) = self.execution.interrupted(request.force).await {
            recovered = self.recover_tasks(&request.project, &seen).await?;
        }
        let state = self.projects.load(&request.project).await?;
        let plan = plan_waves(&state.tasks, &request)?;
        let tasks = state
            .tasks
            .tasks
            .iter()
            .filter_map(|t| {
                Some(TaskSnapshot {
                    id: list_task_id(t.id.as_str())?,
                    status: list_status(t.status),
                    task_group: None,
                })
            })
            .collect();
        let outcome = self
            .execution
            .start(StartRequest {
                task_group: request.group.clone(),
                tasks,
                execution_plan: render_plan(&plan),
                total_waves: u32::try_from(plan.waves.len()).unwrap_or(u32::MAX),
                max_parallel: request.max_parallel,
                force: request.force,
            })
            .await?;
        if let Some(dir) = &outcome.interrupted_archive {
            let archived = self.execution.archived(dir).await?;
            recovered.absorb(self.recover_tasks(&request.project, &archived).await?);
            recovered.archive = Some(dir.clone());
        }
        let progress = self
            .execution
            .begin_wave(1, Vec::new())
            .await
            .map_err(after_commit)?;
        Ok(SessionStarted {
            outcome,
            plan,
            recovered,
            progress,
        })
    }

    /// Archives a dead session's leftovers as interrupted and resets its under-way project tasks
    /// (completing those it logged as passed). `None` when nothing is live.
    pub async fn recover(
        &self,
        project: &ProjectId,
        force: bool,
    ) -> Result<Option<(Recovered, LockDecision)>, Error> {
        let Some((seen, decision)) = self.execution.interrupted(force).await? else {
            return Ok(None);
        };
        // The project side first: a kill after it leaves the leftovers live and a second recover
        // finds those tasks settled. Archiving first would leave them IN_PROGRESS with no session
        // left to recover them from.
        let mut recovered = self.recover_tasks(project, &seen).await?;
        if let Some((dir, archived)) = self.execution.archive_interrupted(&seen, force).await? {
            // What the session did between the look and the move; settled tasks are skipped.
            let late = self
                .recover_tasks(project, &archived)
                .await
                .map_err(after_commit)?;
            recovered.absorb(late);
            recovered.archive = Some(dir);
        }
        Ok(Some((recovered, decision)))
    }

    /// The project side of recovery: the session's tasks (active when it died, or logged) that
    /// are still under way go back to PENDING, or to COMPLETE when their latest row passed.
    async fn recover_tasks(
        &self,
        project: &ProjectId,
        archived: &LiveSession,
    ) -> Result<Recovered, Error> {
        let session = archived.session_id().unwrap_or_default().to_owned();
        let mut ids: Vec<String> = archived
            .progress
            .iter()
            .flat_map(|p| p.active.iter().map(|t| t.id.clone()))
            .collect();
        ids.extend(
            archived
                .task_log
                .iter()
                .flat_map(|l| l.rows.iter().map(|r| r.task_id.clone())),
        );
        let state = self.projects.load(project).await?;
        let now = self.execution.now();
        let actor = session_actor(&session);
        let mut recovered = Recovered::default();
        let mut seen = std::collections::HashSet::new();
        for list_id in ids {
            let Some(task) = project_task_id(&list_id)
                .and_then(|id| id.parse::<TaskId>().ok())
                .and_then(|id| state.tasks.get(&id))
            else {
                continue;
            };
            if !seen.insert(task.id.clone()) || !task.status.is_transitional() {
                continue;
            }
            if let Some(holder) = task.live_holder(now)
                && holder != session
            {
                recovered.claimed.push((task.id.clone(), holder.to_owned()));
                continue;
            }
            let passed = archived
                .task_log
                .as_ref()
                .and_then(|l| l.latest_for(&list_id))
                .is_some_and(|row| row.status == TaskOutcome::Pass);
            let detail = MoveDetail {
                actual_minutes: None,
                reason: Some(format!("execution session {session} was interrupted")),
            };
            if passed && task.status != TaskStatus::InResearch {
                self.projects
                    .move_task_as(project, &task.id, TaskStatus::Complete, detail, &actor)
                    .await?;
                recovered.completed.push(task.id.clone());
            } else {
                self.projects
                    .move_task_as(project, &task.id, TaskStatus::Pending, detail, &actor)
                    .await?;
                recovered.reset.push(task.id.clone());
            }
        }
        Ok(recovered)
    }

    /// The project move `path` of task `id` by `session`, checked on a copy of `doc` first (the
    /// claims and the state machine): a move the rules refuse is refused here, before anything
    /// is written. `None` for an empty path.
    fn checked_move(
        &self,
        doc: &TaskDoc,
        project: &ProjectId,
        id: &TaskId,
        session: &str,
        path: Vec<(TaskStatus, MoveDetail)>,
    ) -> Result<Option<ProjectMove>, Error> {
        if path.is_empty() {
            return Ok(None);
        }
        let task = existing(doc, id)?;
        let actor = session_actor(session);
        let mut trial = doc.clone();
        let now = self.execution.now();
        for (to, detail) in &path {
            if let Some(current) = trial.get(id) {
                check_actor(current, &actor, now)?;
            }
            trial.move_task(id, *to, detail.clone(), now)?;
        }
        Ok(Some(ProjectMove {
            project: project.clone(),
            task: id.clone(),
            session: session.to_owned(),
            before: task_fingerprint(task),
            steps: path
                .into_iter()
                .map(|(to, detail)| MoveStep::new(to, detail))
                .collect(),
        }))
    }

    /// Makes the project move the session's write just recorded, if any, and answers the task's
    /// status: `was` without a move. The session's write is committed: a failure here says so.
    async fn make_move(
        &self,
        project_move: Option<&ProjectMove>,
        was: TaskStatus,
    ) -> Result<TaskStatus, Error> {
        let Some(project_move) = project_move else {
            return Ok(was);
        };
        match self
            .apply_project_move(project_move)
            .await
            .map_err(after_commit)?
        {
            Some(moved) => Ok(moved),
            // Another writer got there between the check and now: report what it holds.
            None => Ok(existing(
                &self.projects.load(&project_move.project).await?.tasks,
                &project_move.task,
            )
            .map_err(after_commit)?
            .status),
        }
    }

    /// Applies the project moves a crashed `task done|fail|skip` recorded in the session but did
    /// not make, and forgets them; returns the tasks it moved. Idempotent: a move the project
    /// already holds (or that another agent overtook) changes nothing and is forgotten too.
    /// A move the rules now refuse is forgotten and reported: retrying cannot make it pass.
    pub async fn settle(&self) -> Result<Vec<TaskId>, Error> {
        let mut moved = Vec::new();
        for project_move in self.execution.project_moves().await? {
            if self.apply_project_move(&project_move).await?.is_some() {
                moved.push(project_move.task.clone());
            }
        }
        Ok(moved)
    }

    /// Makes one recorded project move (if the task is still as it was checked), then forgets it.
    async fn apply_project_move(
        &self,
        project_move: &ProjectMove,
    ) -> Result<Option<TaskStatus>, Error> {
        let path = project_move
            .steps
            .iter()
            .map(|step| (step.to, step.detail()))
            .collect();
        let applied = self
            .projects
            .move_task_path_if_unchanged(
                &project_move.project,
                &project_move.task,
                &project_move.before,
                path,
                &session_actor(&project_move.session),
            )
            .await;
        if let Err(Error::Store(_)) = applied {
            // Kept for the next command: the project may be back by then.
            return applied.map(|_| None);
        }
        self.execution.forget_project_move(project_move).await?;
        Ok(applied?.map(|moved| moved.task.status))
    }

    /// `task start`: the project task goes IN_PROGRESS (by the session, so another agent's claim
    /// refuses it) and joins the active tasks of the current wave. Like a task's end, the
    /// session's write records the project move, which is then made: a process killed between
    /// the two leaves it to the next command ([`Self::settle`]), not to `recover`.
    pub async fn start_task(&self, project: &ProjectId, id: &TaskId) -> Result<TaskStep, Error> {
        let live = self.execution.live().await?;
        let (session, wave) = active_session(&live)?;
        let state = self.projects.load(project).await?;
        let task = existing(&state.tasks, id)?;
        let list_id = list_id_of(task)?;
        let path = if task.status == TaskStatus::InProgress {
            Vec::new()
        } else {
            vec![(TaskStatus::InProgress, MoveDetail::default())]
        };
        let project_move = self.checked_move(&state.tasks, project, id, &session, path)?;
        // The commit point: the session's progress and the project move it implies, in one write.
        let progress = self
            .execution
            .start_task_moving(
                ActiveTask {
                    id: list_id.clone(),
                    subject: task.title.clone(),
                    phase: format!("Wave {wave}"),
                },
                project_move.clone(),
            )
            .await?;
        let status = self.make_move(project_move.as_ref(), task.status).await?;
        Ok(TaskStep {
            task: id.clone(),
            list_id,
            title: task.title.clone(),
            status,
            attempts: None,
            progress,
        })
    }

    /// `task done|fail|skip`: the log row and progress lines, then the project task's move through
    /// the state machine — done: to COMPLETE (by IN_PROGRESS if it never started); failed: back
    /// to PENDING for a retry, or BLOCKED once its attempts are spent; skipped: back to PENDING,
    /// no row.
    pub async fn end_task(
        &self,
        project: &ProjectId,
        id: &TaskId,
        report: TaskEndReport,
    ) -> Result<TaskStep, Error> {
        let live = self.execution.live().await?;
        let (session, _) = active_session(&live)?;
        let state = self.projects.load(project).await?;
        let task = existing(&state.tasks, id)?;
        let list_id = list_id_of(task)?;
        let latest = live.task_log.as_ref().and_then(|l| l.latest_for(&list_id));
        if report.end == TaskEnd::Done
            && task.status == TaskStatus::Complete
            && let Some(row) = latest.filter(|r| r.status == TaskOutcome::Pass)
            && let Some(progress) = &live.progress
        {
            // The retry of a `done` that was recorded (and settled) before its process died:
            // logging a second PASS would count the task twice.
            return Ok(TaskStep {
                task: id.clone(),
                list_id,
                title: task.title.clone(),
                status: task.status,
                attempts: Some(row.attempts),
                progress: progress.clone(),
            });
        }
        let used = live.task_log.as_ref().map_or(0, |l| {
            l.rows.iter().filter(|r| r.task_id == list_id).count()
        });
        let used = u32::try_from(used).unwrap_or(u32::MAX).saturating_add(1);
        let attempts = Attempts {
            used,
            max: MAX_ATTEMPTS.max(used),
        };
        let why = |what: &str| {
            let mut reason = format!("{what} in execution session {session}");
            if let Some(note) = &report.note {
                reason = format!("{reason}: {note}");
            }
            reason
        };
        let path: Vec<(TaskStatus, MoveDetail)> = match (report.end, task.status) {
            (TaskEnd::Done, TaskStatus::Complete) => Vec::new(),
            (TaskEnd::Done, from) => {
                let done = MoveDetail {
                    actual_minutes: report.duration.map(minutes),
                    reason: report.note.clone(),
                };
                if matches!(from, TaskStatus::InProgress | TaskStatus::Validating) {
                    vec![(TaskStatus::Complete, done)]
                } else {
                    vec![
                        (TaskStatus::InProgress, MoveDetail::default()),
                        (TaskStatus::Complete, done),
                    ]
                }
            }
            (TaskEnd::Failed, _) if used >= attempts.max => vec![(
                TaskStatus::Blocked,
                MoveDetail {
                    actual_minutes: None,
                    reason: Some(why(&format!("failed {used} of {} attempts", attempts.max))),
                },
            )],
            (TaskEnd::Failed | TaskEnd::Skipped, from) if from.is_transitional() => vec![(
                TaskStatus::Pending,
                MoveDetail {
                    actual_minutes: None,
                    reason: Some(why(if report.end == TaskEnd::Failed {
                        "failed"
                    } else {
                        "skipped"
                    })),
                },
            )],
            _ => Vec::new(),
        };
        // A move the rules refuse must write nothing, not even the row.
        let project_move = self.checked_move(&state.tasks, project, id, &session, path)?;
        let outcome = match report.end {
            TaskEnd::Done => Some(TaskOutcome::Pass),
            TaskEnd::Failed => Some(TaskOutcome::Fail),
            TaskEnd::Skipped => None,
        };
        // The commit point: the session's files and the project move they imply, in one write.
        let progress = match outcome {
            Some(outcome) => {
                self.execution
                    .record_task_result_moving(
                        TaskResult {
                            task_id: list_id.clone(),
                            subject: task.title.clone(),
                            outcome,
                            attempts,
                            duration: report.duration,
                            token_usage: report.tokens,
                        },
                        project_move.clone(),
                    )
                    .await?
            }
            None => {
                self.execution
                    .drop_task_moving(&list_id, project_move.clone())
                    .await?
            }
        };
        let status = self.make_move(project_move.as_ref(), task.status).await?;
        Ok(TaskStep {
            task: id.clone(),
            list_id,
            title: task.title.clone(),
            status,
            attempts: outcome.map(|_| attempts),
            progress,
        })
    }

    /// `context add`: a task's learnings, merged into the shared context at the next wave.
    pub async fn add_context(&self, id: &TaskId, text: &str) -> Result<String, Error> {
        let list_id = list_task_id(id.as_str())
            .ok_or_else(|| DomainError::invalid("task id", format!("`{id}` has no number")))?;
        check_path_segment(&list_id).map_err(|reason| DomainError::invalid("task id", reason))?;
        self.execution
            .write_task_context(&list_id, &TaskContext::from_lines(text.lines()))
            .await?;
        Ok(list_id)
    }

    pub async fn finish(&self) -> Result<FinishOutcome, Error> {
        self.execution.finish().await
    }
}

/// A failure after an earlier step was saved: the caller must not repeat the command blindly.
fn after_commit(error: Error) -> Error {
    match error {
        Error::Store(e) => Error::Store(e.after_commit()),
        Error::Domain(e) => Error::Store(StoreError::after_commit(StoreError::Invalid {
            path: String::new(),
            detail: e.to_string(),
        })),
    }
}

/// The session acts as an agent named after it: another agent's live claim refuses its moves.
fn session_actor(session: &str) -> Actor {
    Actor {
        agent: Some(session.to_owned()),
        force: false,
    }
}

fn minutes(duration: Duration) -> u32 {
    u32::try_from(duration.as_secs().div_ceil(60)).unwrap_or(u32::MAX)
}

/// The session id and current wave, or the refusal when no session is Active.
fn active_session(live: &LiveSession) -> Result<(String, u32), Error> {
    let state = live
        .state()
        .ok_or(DomainError::from(ExecutionError::NoLiveSession))?;
    if state.phase != super::lifecycle::SessionPhase::Active {
        return Err(DomainError::from(ExecutionError::NotActive {
            session: state.id,
            phase: state.phase,
            action: "working on a task".to_owned(),
        })
        .into());
    }
    Ok((state.id, state.wave.map_or(0, |w| w.current)))
}

fn existing<'a>(doc: &'a TaskDoc, id: &TaskId) -> Result<&'a Task, Error> {
    doc.get(id)
        .ok_or_else(|| StoreError::not_found(crate::error::Entity::Task, id).into())
}

fn list_id_of(task: &Task) -> Result<String, Error> {
    list_task_id(task.id.as_str()).ok_or_else(|| {
        DomainError::invalid("task id", format!("`{}` has no number", task.id)).into()
    })
}

/// A project status as the task list shows it.
fn list_status(status: TaskStatus) -> ClaudeTaskStatus {
    match status {
        TaskStatus::Complete | TaskStatus::Cancelled => ClaudeTaskStatus::Completed,
        s if s.is_transitional() => ClaudeTaskStatus::InProgress,
        _ => ClaudeTaskStatus::Pending,
    }
}

/// The dependency waves of the selected tasks, each cut to `max_parallel`.
fn plan_waves(doc: &TaskDoc, request: &SessionStart) -> Result<WavePlan, Error> {
    let layers = graph::waves(doc);
    let in_group = |id: &TaskId| match &request.group {
        None => true,
        Some(group) => doc.get(id).is_some_and(|t| {
            t.phase_id.as_deref() == Some(group.as_str())
                || t.tags.iter().flatten().any(|tag| tag == group)
        }),
    };
    let mut selected: Vec<Vec<TaskId>> = match &request.selection {
        Selection::All => layers.waves.clone(),
        Selection::Ready => layers.waves.first().cloned().into_iter().collect(),
        Selection::Tasks(ids) => {
            for id in ids {
                let task = existing(doc, id)?;
                if !layers.waves.iter().flatten().any(|t| t == id) {
                    let reason = if task.is_parent() {
                        "it is a parent; its subtasks are what runs".to_owned()
                    } else if layers.stuck.contains(id) {
                        "it waits on a BLOCKED or CANCELLED task".to_owned()
                    } else {
                        format!("it is {}, not PENDING or RESEARCHED", task.status)
                    };
                    return Err(DomainError::from(ExecutionError::NotSchedulable {
                        task: id.to_string(),
                        reason,
                    })
                    .into());
                }
            }
            layers
                .waves
                .iter()
                .map(|w| w.iter().filter(|t| ids.contains(t)).cloned().collect())
                .collect()
        }
    };
    for wave in &mut selected {
        wave.retain(|id| in_group(id));
    }
    selected.retain(|w| !w.is_empty());
    if selected.is_empty() {
        let reason = match &request.group {
            Some(group) => format!("no open task of group `{group}` can run"),
            None => {
                "no open task can run (all done, under way, or waiting on blocked work)".to_owned()
            }
        };
        return Err(DomainError::from(ExecutionError::NothingToRun { reason }).into());
    }
    let size = usize::try_from(request.max_parallel).unwrap_or(usize::MAX);
    let waves = selected
        .iter()
        .flat_map(|layer| layer.chunks(size))
        .map(|chunk| {
            chunk
                .iter()
                .filter_map(|id| {
                    let task = doc.get(id)?;
                    Some(PlannedTask {
                        id: id.clone(),
                        list_id: list_task_id(id.as_str())?,
                        title: task.title.clone(),
                    })
                })
                .collect()
        })
        .collect();
    Ok(WavePlan {
        project: request.project.clone(),
        group: request.group.clone(),
        max_parallel: request.max_parallel,
        waves,
    })
}
