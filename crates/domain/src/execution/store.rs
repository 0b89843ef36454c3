//! The Storage port of execution sessions.
//!
//! The adapter owns a sessions root (`.claude/sessions/` for the filesystem) holding the live
//! directory and the archives. Every method that changes the live session takes a closure: the
//! adapter reads the live session inside its critical section, hands the snapshot to the closure,
//! and writes what the closure returns. If the closure refuses, nothing is written and its error
//! comes back as [`Error::Domain`]. So decisions (lock rule, lifecycle, wave order) are always
//! taken on the state that is actually written over; no update is lost to a concurrent writer.

use async_trait::async_trait;

use super::context::{ExecutionContext, TaskContext};
use super::lock::LockFile;
use super::progress::Progress;
use super::state::{LiveSession, SessionSummary};
use super::task_log::TaskLogRow;
use crate::error::{DomainError, Error, StoreError};
use crate::project::{MoveDetail, ProjectId, TaskId, TaskStatus};

/// A decision taken on the live session as the adapter holds it.
pub type Decide<'a, T> = Box<dyn FnOnce(&LiveSession) -> Result<T, DomainError> + Send + 'a>;

/// The files a new session starts with. `task_log.md` always starts as the bare header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    pub lock: LockFile,
    pub execution_plan: String,
    pub context: ExecutionContext,
    pub progress: Progress,
}

/// What [`ExecutionSessionStore::start`] is to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartPlan {
    /// Where leftovers in the live directory go first (an `interrupted-…` name). Must be `Some`
    /// when the live directory is not empty.
    pub archive_leftovers_to: Option<String>,
    pub session: NewSession,
}

/// What [`ExecutionSessionStore::start`] saw and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// The live session as it was before: the leftovers, now archived, or empty.
    pub previous: LiveSession,
    pub plan: StartPlan,
}

/// A task result: the log row appended and the progress written after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    pub row: TaskLogRow,
    pub progress: Progress,
    /// The project side of this end, recorded in the same write (see [`ProjectMove`]).
    pub project_move: Option<ProjectMove>,
}

/// The project side of a task's end, recorded in the same atomic write as the session's files:
/// the session is the commit point of `session task done|fail|skip`, and whoever runs next
/// applies what the project has not got yet ([`crate::execution::run::SessionRunner::settle`]),
/// so a crash between the two stores never leaves them disagreeing (issue #16).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectMove {
    pub project: ProjectId,
    pub task: TaskId,
    /// The session, the agent the moves are made as.
    pub session: String,
    /// The task as the project held it when the moves were checked (its JSON). The moves apply
    /// only while the task is still exactly this, so applying them again after they landed, or
    /// after another agent moved the task, changes nothing.
    pub before: String,
    pub steps: Vec<MoveStep>,
}

/// One move of a [`ProjectMove`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoveStep {
    pub to: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual_minutes: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl MoveStep {
    pub fn new(to: TaskStatus, detail: MoveDetail) -> Self {
        Self {
            to,
            actual_minutes: detail.actual_minutes,
            reason: detail.reason,
        }
    }

    pub fn detail(&self) -> MoveDetail {
        MoveDetail {
            actual_minutes: self.actual_minutes,
            reason: self.reason.clone(),
        }
    }
}

/// A context rewrite and the per-task context files it has absorbed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextUpdate {
    pub context: ExecutionContext,
    /// Ids whose `context-task-{id}.md` is deleted once the new context is written.
    pub consumed_task_contexts: Vec<String>,
}

/// The end of a session: final progress and summary, then everything moves to `archive_dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finale {
    pub archive_dir: String,
    pub progress: Progress,
    pub summary: SessionSummary,
}

/// Persistence of the live execution session and its archives.
///
/// "A live session exists" means the live directory holds a lock file. Methods that need one
/// return `StoreError::NotFound { entity: Entity::ExecutionSession, .. }` otherwise, before calling
/// their closure. An unknown archive is `NotFound` with `Entity::ExecutionArchive`.
///
/// Concurrency: every method that takes a closure runs it and its writes in one critical
/// section, across processes for adapters that processes share, so no update is lost.
/// Methods that write several files return `AfterCommit` when a later file fails after an
/// earlier one was written; each says which.
#[async_trait]
pub trait ExecutionSessionStore: std::fmt::Debug + Send + Sync {
    /// Reads the live directory. Never fails because a file is damaged (files are parsed
    /// leniently); an empty or missing directory is an empty [`LiveSession`].
    /// Errors: `StoreError::Io` when the directory cannot be read.
    async fn load(&self) -> Result<LiveSession, StoreError>;

    /// Starts a session. Inside the critical section: reads the live directory, calls `decide`,
    /// then, if the plan names an archive, moves every leftover there, and writes the lock,
    /// plan, context, header-only task log and progress of the new session.
    /// Guarantees: a refusal by `decide` writes nothing; leftovers are never overwritten — if the
    /// live directory is not empty and the plan names no archive, or the archive already exists,
    /// returns `StoreError::AlreadyExists` and changes nothing. `AfterCommit` when the leftovers
    /// were archived but the new session's files could not all be written.
    async fn start(&self, decide: Decide<'_, StartPlan>) -> Result<Started, Error>;

    /// Rewrites `progress.md` with what `decide` returns. Returns the progress written.
    /// Errors: `NotFound` without a live session; `Io`. One write: never `AfterCommit`.
    async fn update_progress(&self, decide: Decide<'_, Progress>) -> Result<Progress, Error>;

    /// [`update_progress`](Self::update_progress), recording `project_move` in the same write.
    /// Errors: those of `update_progress`.
    async fn update_progress_moving(
        &self,
        decide: Decide<'_, Progress>,
        project_move: ProjectMove,
    ) -> Result<Progress, Error>;

    /// The project moves recorded with a task's end and not yet forgotten, oldest first.
    /// Errors: `Io`; `Corrupt` when the record does not parse.
    async fn project_moves(&self) -> Result<Vec<ProjectMove>, StoreError>;

    /// Forgets `done` (the project holds it now); moves recorded since stay. Forgetting a move
    /// that is not recorded does nothing. Errors: `Io`.
    async fn forget_project_move(&self, done: &ProjectMove) -> Result<(), StoreError>;

    /// Appends one row to `task_log.md` (never rewriting earlier rows), then rewrites
    /// `progress.md`. The log is written first because it is the record recovery trusts. The
    /// record's `project_move`, if any, is recorded in the same write.
    /// Errors: `NotFound` without a live session; `Io`; `AfterCommit` when the row was appended
    /// but the progress could not be written (do not append the row again).
    async fn record_task(&self, decide: Decide<'_, TaskRecord>) -> Result<TaskRecord, Error>;

    /// Writes (replaces) the task's report, `context-task-{task_id}.md`. `task_id` must be a
    /// plain path segment (`StoreError::Invalid` otherwise). Errors: `NotFound` without a live
    /// session; `Io`. The last of two concurrent writers of one id wins.
    async fn write_task_context(
        &self,
        task_id: &str,
        report: &TaskContext,
    ) -> Result<(), StoreError>;

    /// Rewrites `execution_context.md`, then deletes the per-task context files named in the
    /// update (only after the new context is written, so a crash loses no learnings; a file
    /// written after the snapshot was taken is not deleted unless named). Returns the update.
    /// Errors: `NotFound` without a live session; `Io`; `AfterCommit` when the context was
    /// written but a consumed file could not be deleted (merging it again is harmless).
    async fn update_context(
        &self,
        decide: Decide<'_, ContextUpdate>,
    ) -> Result<ContextUpdate, Error>;

    /// Ends the session: writes the final progress and `session_summary.md`, then moves the
    /// whole live directory (lock included) to `archive_dir`, leaving the live directory empty.
    /// Errors: `NotFound` without a live session; `AlreadyExists` if `archive_dir` exists (nothing
    /// changed); `Invalid` if `archive_dir` is not a plain path segment; `Io`; `AfterCommit` when
    /// the final progress or summary was written but the move failed.
    async fn finish(&self, decide: Decide<'_, Finale>) -> Result<Finale, Error>;

    /// Moves everything in the live directory to `dir_name` (an interrupted session's leftovers).
    /// Returns whether anything was moved; an empty live directory creates no archive.
    /// Errors: `AlreadyExists` if the archive exists and there is something to move; `Invalid` for
    /// a name that is not a plain path segment; `Io`; `AfterCommit` when some files were moved
    /// and a later one was not.
    async fn archive(&self, dir_name: &str) -> Result<bool, StoreError>;

    /// [`archive`](Self::archive), but only if `decide`, run under the store's lock on the live
    /// session as it is then, agrees: the check and the move are one step, so a session started
    /// after the caller looked is never moved away. A refusal changes nothing.
    /// Errors: those of `archive`, and whatever `decide` returns.
    async fn archive_if(&self, dir_name: &str, decide: Decide<'_, ()>) -> Result<bool, Error>;

    /// Names of the archived sessions (every directory beside the live one), sorted.
    /// Errors: `Io`.
    async fn list_archived(&self) -> Result<Vec<String>, StoreError>;

    /// Reads an archive the way [`load`](Self::load) reads the live directory.
    /// Errors: `NotFound` if there is no such archive; `Io`.
    async fn load_archived(&self, dir_name: &str) -> Result<LiveSession, StoreError>;
}
