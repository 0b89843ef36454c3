//! The use cases of execution sessions: what the CLI and the orchestrator skill call.

use std::sync::Arc;
use std::time::Duration;

use super::context::{ExecutionContext, TaskContext};
use super::error::ExecutionError;
use super::lifecycle::SessionPhase;
use super::lock::{LockDecision, LockFile, decide_lock};
use super::naming::{check_path_segment, interrupted_dir_name, most_recent_archive, session_id};
use super::progress::{ActiveTask, CompletedTask, Progress, ProgressStatus, WaveProgress};
use super::state::{LiveSession, RecoveryPlan, SessionState, SessionSummary, Tally, recovery_plan};
use super::store::{
    ContextUpdate, Decide, ExecutionSessionStore, Finale, NewSession, ProjectMove, StartPlan,
    TaskRecord,
};
use super::task_log::{Attempts, TaskLogRow, TaskOutcome};
use crate::error::{DomainError, Error};
use crate::ports::Clock;
use crate::tasklist::ClaudeTaskStatus;
use crate::time::Timestamp;

/// A task of the Claude Code task list, as far as starting a session cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSnapshot {
    pub id: String,
    pub status: ClaudeTaskStatus,
    /// `metadata.task_group`, if any.
    pub task_group: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartRequest {
    /// `--task-group`: names the session explicitly.
    pub task_group: Option<String>,
    /// The task list as it stands; completed tasks are ignored where only open ones matter.
    pub tasks: Vec<TaskSnapshot>,
    /// `execution_plan.md`, as confirmed by the user.
    pub execution_plan: String,
    pub total_waves: u32,
    pub max_parallel: u32,
    /// `--force`: take over a lock younger than the staleness limit.
    pub force: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartOutcome {
    pub session_id: String,
    pub lock: LockDecision,
    /// The `interrupted-…` archive the leftovers went to, if there were any.
    pub interrupted_archive: Option<String>,
    /// What the caller must do to the task list (empty unless leftovers were recovered).
    pub recovery: RecoveryPlan,
    /// The archive whose learnings the new context inherited.
    pub inherited_from: Option<String>,
}

/// One task's end, as the orchestrator reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskResult {
    pub task_id: String,
    pub subject: String,
    pub outcome: TaskOutcome,
    pub attempts: Attempts,
    pub duration: Option<Duration>,
    pub token_usage: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishOutcome {
    pub session_id: String,
    pub archive_dir: String,
    pub tally: Tally,
    /// Ids of per-task contexts merged on the way out (left over from the last wave).
    pub merged_task_contexts: Vec<String>,
}

/// Drives an [`ExecutionSessionStore`]: decides, and lets the store persist.
#[derive(Clone)]
pub struct ExecutionService {
    store: Arc<dyn ExecutionSessionStore>,
    clock: Arc<dyn Clock>,
    holder: Option<LockHolder>,
}

/// Who takes a session's lock: written into `.lock` as `pid` and `host`. Without one the lock
/// says `pid: orchestrator`, as the seed's skill writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHolder {
    pub pid: String,
    pub host: String,
}

/// The live session for a status command: its summary and what its lock says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveStatus {
    pub state: SessionState,
    pub lock: Option<LockFile>,
    /// The lock is at least [`LOCK_STALE_AFTER`](super::lock::LOCK_STALE_AFTER) old (or the
    /// directory has leftovers and no lock): the session is presumed dead, and recovery applies.
    pub stale: bool,
    pub active: Vec<ActiveTask>,
}

/// One archived session, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchivedSession {
    pub dir: String,
    /// `interrupted-…` archives are recovered leftovers; the rest finished normally.
    pub interrupted: bool,
    pub state: Option<SessionState>,
    pub summary: Option<SessionSummary>,
}

impl std::fmt::Debug for ExecutionService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExecutionService { .. }")
    }
}

fn session_name(live: &LiveSession) -> String {
    live.session_id().unwrap_or("(unnamed)").to_owned()
}

/// The live session's phase, or the refusal when there is none to act on.
fn live_phase(live: &LiveSession) -> Result<SessionPhase, DomainError> {
    match (live.lock.as_ref(), live.phase()) {
        (Some(_), Some(phase)) => Ok(phase),
        _ => Err(ExecutionError::NoLiveSession.into()),
    }
}

/// Work inside a running session is the table's Active → Active step; any other phase refuses.
fn require_active(live: &LiveSession, action: &str) -> Result<String, DomainError> {
    let session = session_name(live);
    let phase = live_phase(live)?;
    if phase != SessionPhase::Active {
        return Err(ExecutionError::NotActive {
            session,
            phase,
            action: action.to_owned(),
        }
        .into());
    }
    phase.transition(&session, SessionPhase::Active)?;
    Ok(session)
}

impl ExecutionService {
    pub fn new(store: Arc<dyn ExecutionSessionStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            holder: None,
        }
    }

    /// Stamps the locks this service takes with `holder`.
    pub fn with_lock_holder(mut self, holder: LockHolder) -> Self {
        self.holder = Some(holder);
        self
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The live directory as the store holds it (empty when no session is live).
    pub async fn live(&self) -> Result<LiveSession, Error> {
        Ok(self.store.load().await?)
    }

    /// The live session with its lock verdict, if any.
    pub async fn status(&self) -> Result<Option<LiveStatus>, Error> {
        let live = self.store.load().await?;
        let Some(state) = live.state() else {
            return Ok(None);
        };
        let stale = match &live.lock {
            Some(_) => matches!(
                decide_lock(live.lock.as_ref(), self.clock.now(), false),
                LockDecision::Stale { .. }
            ),
            None => true,
        };
        Ok(Some(LiveStatus {
            state,
            stale,
            active: live.progress.clone().map(|p| p.active).unwrap_or_default(),
            lock: live.lock,
        }))
    }

    /// Every archive, oldest name first, with what it holds.
    pub async fn archives(&self) -> Result<Vec<ArchivedSession>, Error> {
        let mut out = Vec::new();
        for dir in self.store.list_archived().await? {
            let session = self.store.load_archived(&dir).await?;
            out.push(ArchivedSession {
                interrupted: dir.starts_with(super::naming::INTERRUPTED_PREFIX),
                state: session.state(),
                summary: session.summary,
                dir,
            });
        }
        Ok(out)
    }

    /// One archive's content.
    pub async fn archived(&self, dir: &str) -> Result<LiveSession, Error> {
        Ok(self.store.load_archived(dir).await?)
    }

    /// The live session recovery would archive, with the lock's verdict; `None` when the live
    /// directory is empty. A lock younger than the staleness limit refuses unless `force` (the
    /// session may still be running).
    pub async fn interrupted(
        &self,
        force: bool,
    ) -> Result<Option<(LiveSession, LockDecision)>, Error> {
        let live = self.store.load().await?;
        let Some(phase) = live.phase() else {
            return Ok(None);
        };
        let decision = decide_lock(live.lock.as_ref(), self.clock.now(), force)
            .into_result()
            .map_err(DomainError::from)?;
        SessionPhase::walk(
            &session_name(&live),
            &[phase, SessionPhase::Interrupted, SessionPhase::Recovery],
        )
        .map_err(DomainError::from)?;
        Ok(Some((live, decision)))
    }

    /// Moves the leftovers [`interrupted`](Self::interrupted) returned (`seen`) to
    /// `interrupted-YYYYMMDD-HHMMSS/`; returns the archive name and what it holds, `None` when the
    /// live directory is empty by now. The check runs under the store's lock with the move: if
    /// another session took the live directory since `seen`, its own lock decides (without
    /// `force`, which was given for `seen`), so a session started in between is never moved away.
    pub async fn archive_interrupted(
        &self,
        seen: &LiveSession,
        force: bool,
    ) -> Result<Option<(String, LiveSession)>, Error> {
        let now = self.clock.now();
        let seen_lock = seen.lock.clone();
        let dir = interrupted_dir_name(now);
        let moved = self
            .store
            .archive_if(
                &dir,
                Box::new(move |live| {
                    let forced = force && live.lock == seen_lock;
                    decide_lock(live.lock.as_ref(), now, forced)
                        .into_result()
                        .map(|_| ())
                        .map_err(DomainError::from)
                }),
            )
            .await?;
        if !moved {
            return Ok(None);
        }
        let archived = self.store.load_archived(&dir).await?;
        Ok(Some((dir, archived)))
    }

    /// Adds (or refreshes) one task among the active ones. Only while Active.
    pub async fn start_task(&self, task: ActiveTask) -> Result<Progress, Error> {
        self.start_task_moving(task, None).await
    }

    /// [`Self::start_task`], recording the project side of the start in the same write.
    pub async fn start_task_moving(
        &self,
        task: ActiveTask,
        project_move: Option<ProjectMove>,
    ) -> Result<Progress, Error> {
        let now = self.clock.now();
        let decide: Decide<'_, Progress> = Box::new(move |live| {
            require_active(live, "starting a task")?;
            let mut progress = current_progress(live, now);
            match progress.active.iter_mut().find(|t| t.id == task.id) {
                Some(existing) => *existing = task,
                None => progress.active.push(task),
            }
            progress.updated = Some(now);
            Ok(progress)
        });
        self.update_progress_moving(decide, project_move).await
    }

    /// One progress update, with the project move it implies in the same write when there is one.
    async fn update_progress_moving(
        &self,
        decide: Decide<'_, Progress>,
        project_move: Option<ProjectMove>,
    ) -> Result<Progress, Error> {
        match project_move {
            Some(project_move) => {
                self.store
                    .update_progress_moving(decide, project_move)
                    .await
            }
            None => self.store.update_progress(decide).await,
        }
    }

    /// Takes a task out of the active ones without logging a result (it is skipped for now).
    /// Only while Active; a task that is not active is left alone.
    pub async fn drop_task(&self, task_id: &str) -> Result<Progress, Error> {
        self.drop_task_moving(task_id, None).await
    }

    /// [`Self::drop_task`], recording the project side of the skip in the same write.
    pub async fn drop_task_moving(
        &self,
        task_id: &str,
        project_move: Option<ProjectMove>,
    ) -> Result<Progress, Error> {
        let now = self.clock.now();
        let task_id = task_id.to_owned();
        let decide: Decide<'_, Progress> = Box::new(move |live| {
            require_active(live, "skipping a task")?;
            let mut progress = current_progress(live, now);
            progress.active.retain(|t| t.id != task_id);
            progress.updated = Some(now);
            Ok(progress)
        });
        self.update_progress_moving(decide, project_move).await
    }

    /// The project moves recorded with a task's end that the project may not hold yet.
    pub async fn project_moves(&self) -> Result<Vec<ProjectMove>, Error> {
        Ok(self.store.project_moves().await?)
    }

    /// Forgets a recorded project move once the project holds it.
    pub async fn forget_project_move(&self, done: &ProjectMove) -> Result<(), Error> {
        Ok(self.store.forget_project_move(done).await?)
    }

    /// After a wave: merges the task contexts, then begins the next wave with no task active.
    /// Refused while tasks of the current wave are still active: their end would be lost.
    pub async fn next_wave(&self) -> Result<(Vec<String>, Progress), Error> {
        let live = self.store.load().await?;
        let session = require_active(&live, "beginning the next wave").map_err(Error::from)?;
        let progress = live
            .progress
            .clone()
            .unwrap_or_else(|| Progress::initial(0, 0, self.clock.now()));
        if !progress.active.is_empty() {
            return Err(DomainError::from(ExecutionError::TasksStillActive {
                session,
                tasks: progress.active.iter().map(|t| t.id.clone()).collect(),
            })
            .into());
        }
        let next = progress.wave.map_or(1, |w| w.current + 1);
        let merged = self.merge_wave_context().await?;
        let progress = self.begin_wave(next, Vec::new()).await?;
        Ok((merged, progress))
    }

    /// The live session, if any.
    pub async fn state(&self) -> Result<Option<SessionState>, Error> {
        Ok(self.store.load().await?.state())
    }

    /// Creation. Order of decisions, all on the live directory as the store holds it:
    /// 1. the lock rule (a fresh lock without `force` refuses, and nothing changes);
    /// 2. leftovers (lock-less, stale or forced) are an interrupted session: checked through
    ///    Interrupted → Recovery → Creation and archived to `interrupted-YYYYMMDD-HHMMSS/`;
    /// 3. the session id (three tiers) and the new files; the context inherits the four list
    ///    sections of the most recent session — the interrupted one if it had a context, else the
    ///    newest archive.
    ///
    /// The lock rule comes before archiving leftovers (the seed lists it after): archiving first
    /// would move a running session's files away and make its lock meaningless.
    pub async fn start(&self, request: StartRequest) -> Result<StartOutcome, Error> {
        let now = self.clock.now();
        let archives = self.store.list_archived().await?;
        let newest = most_recent_archive(archives.iter().map(String::as_str)).map(str::to_owned);
        let newest_context = match &newest {
            Some(dir) => self.store.load_archived(dir).await?.context,
            None => None,
        };

        let inherits_from_newest = newest_context.is_some();
        let open: Vec<&TaskSnapshot> = request
            .tasks
            .iter()
            .filter(|t| t.status != ClaudeTaskStatus::Completed)
            .collect();
        let id = session_id(
            request.task_group.as_deref(),
            open.iter().map(|t| t.task_group.as_deref()),
            now,
        )
        .map_err(DomainError::from)?;
        let force = request.force;
        let plan_id = id.clone();
        let holder = self.holder.clone();
        let started = self
            .store
            .start(Box::new(move |live| {
                decide_lock(live.lock.as_ref(), now, force).into_result()?;
                let archive_leftovers_to = match live.phase() {
                    Some(phase) => {
                        SessionPhase::walk(
                            &session_name(live),
                            &[
                                phase,
                                SessionPhase::Interrupted,
                                SessionPhase::Recovery,
                                SessionPhase::Creation,
                            ],
                        )?;
                        Some(interrupted_dir_name(now))
                    }
                    None => None,
                };
                let mut context = ExecutionContext::template();
                if let Some(inherited) = live.context.as_ref().or(newest_context.as_ref()) {
                    context.inherit_from(inherited);
                }
                Ok(StartPlan {
                    archive_leftovers_to,
                    session: NewSession {
                        lock: holder.stamp(LockFile::new(plan_id, now)),
                        execution_plan: request.execution_plan,
                        context,
                        progress: Progress::initial(request.total_waves, request.max_parallel, now),
                    },
                })
            }))
            .await?;

        let previous = &started.previous;
        let interrupted_archive = started.plan.archive_leftovers_to.clone();
        let recovery = if previous.is_empty() {
            RecoveryPlan::default()
        } else {
            let in_progress = request
                .tasks
                .iter()
                .filter(|t| t.status == ClaudeTaskStatus::InProgress);
            recovery_plan(
                in_progress.map(|t| t.id.as_str()),
                previous.task_log.as_ref(),
            )
        };
        let inherited_from = match (&previous.context, &interrupted_archive) {
            (Some(_), Some(dir)) => Some(dir.clone()),
            _ => newest.filter(|_| inherits_from_newest),
        };
        Ok(StartOutcome {
            session_id: id,
            lock: decide_lock(previous.lock.as_ref(), now, force),
            interrupted_archive,
            recovery,
            inherited_from,
        })
    }

    /// Announces wave `wave` (1-based) with the tasks it runs. Creation → Active on the first
    /// wave, Active → Active after. Waves only move forward and never past the total.
    pub async fn begin_wave(&self, wave: u32, active: Vec<ActiveTask>) -> Result<Progress, Error> {
        let now = self.clock.now();
        self.store
            .update_progress(Box::new(move |live| {
                let session = session_name(live);
                live_phase(live)?.transition(&session, SessionPhase::Active)?;
                let mut progress = current_progress(live, now);
                let at = progress.wave.unwrap_or(WaveProgress {
                    current: 0,
                    total: 0,
                });
                if wave <= at.current || wave > at.total {
                    return Err(ExecutionError::WaveOutOfOrder {
                        session,
                        requested: wave,
                        current: at.current,
                        total: at.total,
                    }
                    .into());
                }
                progress.status = ProgressStatus::Executing;
                progress.wave = Some(WaveProgress {
                    current: wave,
                    total: at.total,
                });
                progress.active = active;
                progress.updated = Some(now);
                Ok(progress)
            }))
            .await
    }

    /// Updates the phase text of one active task (`Phase 2 — Implementing`).
    pub async fn set_task_phase(&self, task_id: &str, phase: &str) -> Result<Progress, Error> {
        let now = self.clock.now();
        let (task_id, phase) = (task_id.to_owned(), phase.to_owned());
        self.store
            .update_progress(Box::new(move |live| {
                let session = require_active(live, "updating a task's phase")?;
                let mut progress = current_progress(live, now);
                let task = progress.active.iter_mut().find(|t| t.id == task_id).ok_or(
                    ExecutionError::UnknownActiveTask {
                        session,
                        task: task_id,
                    },
                )?;
                task.phase = phase;
                progress.updated = Some(now);
                Ok(progress)
            }))
            .await
    }

    /// Logs a task's end and moves it from Active to Completed in progress (replacing an earlier
    /// completion of the same task, as after a retry). Only while Active.
    pub async fn record_task_result(&self, result: TaskResult) -> Result<Progress, Error> {
        self.record_task_result_moving(result, None).await
    }

    /// [`Self::record_task_result`], recording the project side of the end in the same write.
    pub async fn record_task_result_moving(
        &self,
        result: TaskResult,
        project_move: Option<ProjectMove>,
    ) -> Result<Progress, Error> {
        if !result.attempts.is_sensible() {
            return Err(DomainError::from(ExecutionError::InvalidAttempts {
                used: result.attempts.used,
                max: result.attempts.max,
            })
            .into());
        }
        let now = self.clock.now();
        let record = self
            .store
            .record_task(Box::new(move |live| {
                require_active(live, "recording a task result")?;
                let mut progress = current_progress(live, now);
                progress.active.retain(|t| t.id != result.task_id);
                progress.completed.retain(|t| t.id != result.task_id);
                progress.completed.push(CompletedTask {
                    id: result.task_id.clone(),
                    subject: result.subject.clone(),
                    result: result.outcome,
                    duration: result.duration,
                });
                progress.updated = Some(now);
                let row = TaskLogRow {
                    task_id: result.task_id,
                    subject: result.subject,
                    status: result.outcome,
                    attempts: result.attempts,
                    duration: result.duration,
                    token_usage: result.token_usage,
                };
                Ok(TaskRecord {
                    row,
                    progress,
                    project_move,
                })
            }))
            .await?;
        Ok(record.progress)
    }

    /// A task executor's learnings in concurrent mode (`context-task-{id}.md`).
    pub async fn write_task_context(
        &self,
        task_id: &str,
        report: &TaskContext,
    ) -> Result<(), Error> {
        check_path_segment(task_id).map_err(|reason| DomainError::invalid("task id", reason))?;
        let live = self.store.load().await?;
        require_active(&live, "writing a task context")?;
        Ok(self.store.write_task_context(task_id, report).await?)
    }

    /// After a wave: merges every per-task context into the shared one (task-id order, bullets
    /// deduplicated, history compacted) and deletes the merged files. Returns the merged ids.
    pub async fn merge_wave_context(&self) -> Result<Vec<String>, Error> {
        let update = self
            .store
            .update_context(Box::new(|live| {
                require_active(live, "merging task contexts")?;
                let mut context = live
                    .context
                    .clone()
                    .unwrap_or_else(ExecutionContext::template);
                let consumed_task_contexts = context.merge_wave(&live.task_contexts);
                Ok(ContextUpdate {
                    context,
                    consumed_task_contexts,
                })
            }))
            .await?;
        Ok(update.consumed_task_contexts)
    }

    /// Archival: merges any per-task contexts still lying around, writes `Status: Complete` and
    /// `session_summary.md`, and moves the session to `.claude/sessions/{id}/`.
    /// Active → Archival → Done; finishing a session that never ran a wave is refused.
    pub async fn finish(&self) -> Result<FinishOutcome, Error> {
        let live = self.store.load().await?;
        let session = session_name(&live);
        SessionPhase::walk(
            &session,
            &[
                live_phase(&live)?,
                SessionPhase::Archival,
                SessionPhase::Done,
            ],
        )
        .map_err(DomainError::from)?;
        let merged_task_contexts = if live.task_contexts.is_empty() {
            Vec::new()
        } else {
            self.merge_wave_context().await?
        };

        let now = self.clock.now();
        let finale = self
            .store
            .finish(Box::new(move |live| {
                let session = session_name(live);
                SessionPhase::walk(
                    &session,
                    &[
                        live_phase(live)?,
                        SessionPhase::Archival,
                        SessionPhase::Done,
                    ],
                )?;
                let archive_dir = live.session_id().unwrap_or_default().to_owned();
                check_path_segment(&archive_dir)
                    .map_err(|reason| DomainError::invalid("session id", reason))?;
                let mut progress = current_progress(live, now);
                progress.status = ProgressStatus::Complete;
                progress.updated = Some(now);
                let log = live.task_log.clone().unwrap_or_default();
                let started = live.lock.as_ref().and_then(|l| l.timestamp);
                let summary = SessionSummary::new(&archive_dir, started, now, progress.wave, &log);
                Ok(Finale {
                    archive_dir,
                    progress,
                    summary,
                })
            }))
            .await?;
        let tally = Tally::of(
            &self
                .store
                .load_archived(&finale.archive_dir)
                .await?
                .task_log
                .unwrap_or_default(),
        );
        Ok(FinishOutcome {
            session_id: finale.archive_dir.clone(),
            archive_dir: finale.archive_dir,
            tally,
            merged_task_contexts,
        })
    }
}

trait StampLock {
    fn stamp(&self, lock: LockFile) -> LockFile;
}

impl StampLock for Option<LockHolder> {
    fn stamp(&self, mut lock: LockFile) -> LockFile {
        if let Some(holder) = self {
            lock.pid = holder.pid.clone();
            lock.host = Some(holder.host.clone());
        }
        lock
    }
}

/// The progress to build on; a session whose `progress.md` vanished starts over from an empty one.
fn current_progress(live: &LiveSession, now: Timestamp) -> Progress {
    live.progress
        .clone()
        .unwrap_or_else(|| Progress::initial(0, 0, now))
}
