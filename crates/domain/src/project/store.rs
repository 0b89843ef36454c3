//! The project store port.

use async_trait::async_trait;
use serde::Serialize;

use crate::error::{DomainError, Error, StoreError};
use crate::log::LogRecord;
use crate::time::Timestamp;

use super::events::ProjectEvent;
use super::model::{Project, ProjectId, ProjectState, TaskId};
use super::policy::Velocity;

/// What a successful mutation asks the store to do besides saving the new state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Changes {
    /// Appended to the progress log, in order, after the state is saved.
    pub events: Vec<ProjectEvent>,
    /// Snapshot the saved tasks into a new checkpoint (and log CHECKPOINT_WRITTEN).
    pub checkpoint: bool,
}

impl Changes {
    pub fn events(events: Vec<ProjectEvent>) -> Self {
        Self {
            events,
            checkpoint: false,
        }
    }
}

/// A read-modify-write step, run by the store inside the project's critical section on the
/// current state. Returning `Err` aborts the transaction with nothing written.
pub type Mutation<'a> =
    Box<dyn FnOnce(&mut ProjectState) -> Result<Changes, DomainError> + Send + 'a>;

/// tasks.json was damaged and rebuilt from a checkpoint while reading it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recovery {
    pub checkpoint: u32,
    /// Tasks of the checkpoint that passed validation and were kept.
    pub kept: usize,
    /// Tasks of the checkpoint that failed validation and were left out.
    pub dropped: usize,
    /// Where the damaged file was set aside (it is never deleted).
    pub damaged_copy: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub state: ProjectState,
    pub recovered: Option<Recovery>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Committed {
    /// The state after the transaction.
    pub state: ProjectState,
    /// The checkpoint written by this transaction, if any.
    pub checkpoint: Option<u32>,
    pub recovered: Option<Recovery>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRead {
    pub records: Vec<LogRecord>,
    /// Text of a last entry that was cut off mid-write (a crash); never rewritten.
    pub torn_tail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointInfo {
    pub number: u32,
    /// When it was written, as far as the store knows.
    pub written_at: Option<Timestamp>,
    pub size_bytes: u64,
}

/// Problems with the stored files themselves (not with the tasks), for `doctor`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct StoreHealth {
    /// Files that do not parse or validate: (path, what is wrong).
    pub damaged: Vec<(String, String)>,
    /// Abandoned temporary files older than the debris age.
    pub debris: Vec<String>,
    /// The progress log ends in a torn entry.
    pub torn_log: bool,
}

/// Persistence of projects: `project.json`, `tasks.json`, the progress log, checkpoints, research
/// briefs and velocity. Implemented by the filesystem adapter (`cairn-storage-fs`) and by
/// [`super::memory::MemoryProjectStore`]; both must pass [`super::contract`].
///
/// Concurrency: every method may be called from several processes at once. Writers are
/// serialised per project (the adapter's critical section); readers never wait for writers and
/// always see a complete state, old or new, never a mix.
#[async_trait]
pub trait ProjectStore: std::fmt::Debug + Send + Sync {
    /// Ids of every project in the store, sorted. An empty store has none.
    /// Errors: `Io`.
    async fn list(&self) -> Result<Vec<ProjectId>, StoreError>;

    /// Creates a project with no tasks and starts its log with `events`. Serialised with every
    /// writer of the project, so of two concurrent creates exactly one succeeds.
    /// Errors: `AlreadyExists` (entity `Project`) if a project with that id exists (nothing is
    /// changed); `Io`; `AfterCommit` when the project exists but its log entries could not be
    /// written.
    async fn create(
        &self,
        project: &Project,
        at: Timestamp,
        events: Vec<ProjectEvent>,
    ) -> Result<(), StoreError>;

    /// Reads only the project record: cheaper than [`ProjectStore::load`] when the tasks are not
    /// needed. Errors: `NotFound` (entity `Project`); `Corrupt` if the record is unreadable.
    async fn load_project(&self, id: &ProjectId) -> Result<Project, StoreError>;

    /// Reads the project and its tasks. A damaged task list is recovered first from the newest
    /// valid checkpoint (the damaged copy is kept and an ERROR logged); the report says so.
    /// Errors: `NotFound` (entity `Project`); `Corrupt` when nothing valid is left to recover
    /// from; `Io`.
    async fn load(&self, id: &ProjectId) -> Result<Loaded, StoreError>;

    /// Runs `mutation` on the current state inside the project's critical section, then saves
    /// what changed (each file replaced atomically), writes a checkpoint if asked (numbered one
    /// past the newest, keeping the newest ten), and appends the events to the log — in that
    /// order, all before returning. No update is ever lost to a concurrent writer.
    /// Errors: `Error::Domain` from the mutation (nothing written); `StoreError::Invalid` when the
    /// new state fails schema validation (nothing written but an ERROR entry in the log);
    /// `LockTimeout` when another writer holds the project too long; `NotFound`; `Io`;
    /// `AfterCommit` when the state was saved but its checkpoint or log entry could not be
    /// written, or the tasks were saved but the project record was not (the change happened: do
    /// not repeat it).
    async fn transact(
        &self,
        id: &ProjectId,
        at: Timestamp,
        mutation: Mutation<'_>,
    ) -> Result<Committed, Error>;

    /// Appends events to the log without touching the state, whole and in commit order with
    /// concurrent writers. Errors: `NotFound`, `Io`.
    async fn append_log(
        &self,
        id: &ProjectId,
        at: Timestamp,
        events: Vec<ProjectEvent>,
    ) -> Result<(), StoreError>;

    /// The log's records, oldest first; with `tail`, only the newest `tail` records (an adapter
    /// may then read just the end of the log). A torn last entry is reported, not returned.
    /// Errors: `NotFound`, `Io`.
    async fn read_log(&self, id: &ProjectId, tail: Option<usize>) -> Result<LogRead, StoreError>;

    /// When the research brief of `task` was last written, if there is one.
    /// Errors: `NotFound` (project), `Io`.
    async fn research_modified(
        &self,
        id: &ProjectId,
        task: &TaskId,
    ) -> Result<Option<Timestamp>, StoreError>;

    /// The research brief of `task`, if there is one. Errors: `NotFound` (project), `Io`.
    async fn read_research(
        &self,
        id: &ProjectId,
        task: &TaskId,
    ) -> Result<Option<String>, StoreError>;

    /// Writes (replaces) the research brief of `task`, atomically; the last of two concurrent
    /// writers wins. Briefs are never deleted. Errors: `NotFound` (project), `Io`.
    async fn write_research(
        &self,
        id: &ProjectId,
        task: &TaskId,
        text: &str,
        at: Timestamp,
    ) -> Result<(), StoreError>;

    /// Checkpoints that exist, ordered by number (numerically, past 999 too).
    /// Errors: `NotFound` (project), `Io`.
    async fn list_checkpoints(&self, id: &ProjectId) -> Result<Vec<CheckpointInfo>, StoreError>;

    /// Snapshots the current tasks into a new checkpoint (under the project's lock), logs
    /// CHECKPOINT_WRITTEN and prunes to the newest ten. Two writers never take one number.
    /// Errors: `NotFound`, `LockTimeout`, `Corrupt`, `Io`; `AfterCommit` when the checkpoint was
    /// written but pruning or its log entry failed.
    async fn write_checkpoint(
        &self,
        id: &ProjectId,
        at: Timestamp,
    ) -> Result<CheckpointInfo, StoreError>;

    /// Replaces the tasks with checkpoint `number` (keeping the tasks that pass validation) and
    /// logs CHECKPOINT_RESTORED. The replaced task list is first saved as a new checkpoint, so a
    /// restore can itself be undone. Runs under the project's lock, like a transaction.
    /// Errors: `NotFound` (entity `Checkpoint`) for an unknown number; `Corrupt` when the
    /// checkpoint holds no valid task; `LockTimeout`; `Io`; `AfterCommit` when the tasks were
    /// replaced but pruning, the log entry or reading the project record back failed.
    async fn restore_checkpoint(
        &self,
        id: &ProjectId,
        number: u32,
        at: Timestamp,
    ) -> Result<Committed, StoreError>;

    /// The velocity last written, if any. Errors: `NotFound` (project), `Corrupt`, `Io`.
    async fn read_velocity(&self, id: &ProjectId) -> Result<Option<Velocity>, StoreError>;

    /// Replaces `progress/velocity.json` atomically; the last of two concurrent writers wins.
    /// Errors: `NotFound` (project), `Invalid`, `Io`.
    async fn write_velocity(&self, id: &ProjectId, velocity: &Velocity) -> Result<(), StoreError>;

    /// Removes abandoned temporary writes older than the debris age; returns what it removed.
    /// Never touches a write in progress (those are younger). Errors: `NotFound`, `Io`.
    async fn clean_debris(&self, id: &ProjectId, now: Timestamp)
    -> Result<Vec<String>, StoreError>;

    /// Checks the stored files without changing them. Errors: `NotFound`, `Io`.
    async fn health(&self, id: &ProjectId, now: Timestamp) -> Result<StoreHealth, StoreError>;
}

impl<'s> dyn ProjectStore + 's {
    /// [`ProjectStore::transact`] for a mutation that also computes a value (the task it created,
    /// the moves it made): returns the commit and that value. The one place the value is carried
    /// out of the boxed closure, so that services never smuggle results through captures.
    pub async fn transact_with<T: Send>(
        &self,
        id: &ProjectId,
        at: Timestamp,
        mutation: impl FnOnce(&mut ProjectState) -> Result<(Changes, T), DomainError> + Send,
    ) -> Result<(Committed, T), Error> {
        let mut value = None;
        let slot = &mut value;
        let committed = self
            .transact(
                id,
                at,
                Box::new(move |state| {
                    let (changes, out) = mutation(state)?;
                    *slot = Some(out);
                    Ok(changes)
                }),
            )
            .await?;
        Ok((committed, crate::ports::ran(value)))
    }
}
