//! The project store port.

use async_trait::async_trait;
use serde::Serialize;

use crate::error::{DomainError, Error, StoreError};
use crate::log::LogRecord;
use crate::time::Timestamp;

use super::events::ProjectEvent;
use super::model::{Project, ProjectId, ProjectState, TaskDoc, TaskId};
use super::policy::{Completion, Velocity};

/// What a successful mutation asks the store to do besides saving the new state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Changes {
    /// Appended to the progress log, in order, after the state is saved.
    pub events: Vec<ProjectEvent>,
    /// Snapshot the saved tasks into a new checkpoint (and log CHECKPOINT_WRITTEN).
    pub checkpoint: bool,
    /// The change completes tasks, with these leaf completions: the saved velocity should take
    /// them in ([`super::policy::velocity_after`] over the saved state). A store that does so in
    /// the same critical section says so with [`Committed::velocity`]; otherwise the service
    /// refreshes the velocity after the commit, as a second step.
    pub velocity: Option<Vec<Completion>>,
}

impl Changes {
    pub fn events(events: Vec<ProjectEvent>) -> Self {
        Self {
            events,
            ..Self::default()
        }
    }
}

/// A read-modify-write step, run by the store inside the project's critical section on the
/// current state. Returning `Err` aborts the transaction with nothing written.
pub type Mutation<'a> =
    Box<dyn FnOnce(&mut ProjectState) -> Result<Changes, DomainError> + Send + 'a>;

/// Where a task of a recovered task list came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "number")]
pub enum TaskSource {
    /// The damaged tasks.json itself: the entry was valid on its own.
    DamagedFile,
    /// Checkpoint `n`: the damaged file could not provide the task.
    Checkpoint(u32),
    /// The progress log: the task as the last logged change to it left it.
    Log,
    /// git's index: the list a `git merge` made, which the log cannot replay until the first
    /// write after the merge logs it.
    GitIndex,
}

impl std::fmt::Display for TaskSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskSource::DamagedFile => f.write_str("the damaged file"),
            TaskSource::Checkpoint(n) => write!(f, "checkpoint {n}"),
            TaskSource::Log => f.write_str("the progress log"),
            TaskSource::GitIndex => f.write_str("git's index"),
        }
    }
}

/// A task of the recovered list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeptTask {
    pub id: TaskId,
    pub source: TaskSource,
}

/// An entry that recovery could not keep as it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedTask {
    /// The entry's id, when it had a string one.
    pub id: Option<String>,
    /// Its position in the `tasks` array of its source.
    pub index: usize,
    pub source: TaskSource,
    /// Why it was not kept.
    pub reason: String,
    /// Where the copy of the same task kept in its place came from, if one was: the progress
    /// log (the task as the last commit left it) or a checkpoint.
    pub replaced_from: Option<TaskSource>,
}

/// tasks.json was damaged and rebuilt while reading it: task by task from the damaged file where
/// it parses, from the newest valid checkpoint for the rest (see `ARCHITECTURE.md`, Recovery).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recovery {
    /// The checkpoint that supplied tasks, if one was needed.
    pub checkpoint: Option<u32>,
    /// Every task of the recovered list, in order, with its source.
    pub kept: Vec<KeptTask>,
    /// Every entry left out or replaced by an older copy.
    pub dropped: Vec<DroppedTask>,
    /// Where the damaged file was set aside (it is never deleted).
    pub damaged_copy: String,
}

impl Recovery {
    /// One line for people and logs: how many tasks came from where, and each dropped entry
    /// with its reason.
    pub fn summary(&self) -> String {
        let count = |source: TaskSource| self.kept.iter().filter(|k| k.source == source).count();
        let from_file = count(TaskSource::DamagedFile);
        let mut out = format!(
            "kept {} task{} ({from_file} from the damaged file",
            self.kept.len(),
            if self.kept.len() == 1 { "" } else { "s" },
        );
        let from_log = count(TaskSource::Log);
        if let Some(n) = self.checkpoint {
            out.push_str(&format!(
                ", {} from checkpoint {n}",
                self.kept.len() - from_file - from_log
            ));
        }
        if from_log > 0 {
            out.push_str(&format!(", {from_log} replayed from the progress log"));
        }
        let from_git = count(TaskSource::GitIndex);
        if from_git > 0 {
            out.push_str(&format!(", {from_git} merged by git, from its index"));
        }
        out.push(')');
        if self.dropped.is_empty() {
            out.push_str(", dropped none");
        } else {
            let dropped: Vec<String> = self
                .dropped
                .iter()
                .map(|d| {
                    let what =
                        d.id.clone()
                            .unwrap_or_else(|| format!("entry #{}", d.index));
                    let instead = d
                        .replaced_from
                        .map(|source| format!("; its copy from {source} was kept"))
                        .unwrap_or_default();
                    format!("{what} of {} ({}{instead})", d.source, d.reason)
                })
                .collect();
            out.push_str(&format!(
                ", dropped {}: {}",
                self.dropped.len(),
                dropped.join("; ")
            ));
        }
        out
    }
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
    /// The velocity saved with the change, when the store took in [`Changes::velocity`]: the
    /// previous one had its window of completions and the new one was written. `None` leaves the
    /// refresh to the caller.
    pub velocity: Option<Velocity>,
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

/// How closely [`ProjectStore::health`] looks at the stored files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scrutiny {
    /// What every read relies on, at about the cost of a read: a file the store wrote and can
    /// tell unchanged since is trusted as reads trust it, checkpoints are checked for being cut
    /// short, and the log for a torn last entry. Its cost does not grow with the checkpoints.
    #[default]
    Usual,
    /// Every file parsed and validated against its schema, whoever wrote it, every checkpoint in
    /// full, and the whole log.
    Full,
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
    /// The line where a git merge left conflict markers near the log's end: until the merge is
    /// finished every write is refused (its log entry would be lost to the resolution).
    pub unmerged_log: Option<usize>,
}

/// Everything a store keeps of one project, as the domain sees it (no adapter's bookkeeping):
/// what `cairn store export` and `cairn store import` carry from one adapter to another.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectDump {
    pub state: ProjectState,
    /// The progress log, oldest first; a torn last entry is not part of it.
    pub log: Vec<LogRecord>,
    /// Ordered by number; the numbers are kept across stores.
    pub checkpoints: Vec<DumpedCheckpoint>,
    /// Ordered by task id.
    pub research: Vec<DumpedResearch>,
    pub velocity: Option<Velocity>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DumpedCheckpoint {
    pub number: u32,
    pub written_at: Option<Timestamp>,
    pub tasks: TaskDoc,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DumpedResearch {
    pub task: TaskId,
    pub modified_at: Option<Timestamp>,
    pub text: String,
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

    /// A checkpoint holding the current tasks, and whether it was written now: the newest one
    /// when it already holds them exactly — what [`write_checkpoint`](Self::write_checkpoint)
    /// would snapshot — else a new one, as `write_checkpoint` writes it, both under one hold of
    /// the project's lock. For a caller that only wants the list kept (the PreCompact hook):
    /// compactions with no change between them wrote the same list again each time, and ten of
    /// them pushed every older, different checkpoint out of the ten kept. The default always
    /// writes (a store that cannot tell cheaply). Errors: as `write_checkpoint`.
    async fn keep_checkpoint(
        &self,
        id: &ProjectId,
        at: Timestamp,
    ) -> Result<(CheckpointInfo, bool), StoreError> {
        Ok((self.write_checkpoint(id, at).await?, true))
    }

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

    /// Replaces the velocity with `update(the velocity last written)` — `None` when there is
    /// none or it cannot be read — as one step with respect to every other writer of it: two
    /// concurrent updates both take effect, in some order. An `update` answering `None` writes
    /// nothing. Returns what was written. Errors: `NotFound` (project), `Invalid`,
    /// `LockTimeout`, `Io`.
    async fn update_velocity(
        &self,
        id: &ProjectId,
        update: &(dyn Fn(Option<Velocity>) -> Option<Velocity> + Send + Sync),
    ) -> Result<Option<Velocity>, StoreError>;

    /// Removes abandoned temporary writes older than the debris age; returns what it removed.
    /// Never touches a write in progress (those are younger). Errors: `NotFound`, `Io`.
    async fn clean_debris(&self, id: &ProjectId, now: Timestamp)
    -> Result<Vec<String>, StoreError>;

    /// Checks the stored files without changing them, as closely as `scrutiny` asks.
    /// Errors: `NotFound`, `Io`.
    async fn health(
        &self,
        id: &ProjectId,
        now: Timestamp,
        scrutiny: Scrutiny,
    ) -> Result<StoreHealth, StoreError>;

    /// Everything stored of project `id`, to copy it into another store.
    /// Errors: `NotFound`; `Corrupt` when a file or checkpoint does not parse (nothing is
    /// skipped silently); `Io`.
    async fn export_project(&self, id: &ProjectId) -> Result<ProjectDump, StoreError>;

    /// Stores `dump` as it is: its state, log, checkpoints (numbers kept), research briefs and
    /// velocity. With `replace`, a project of the same id is replaced whole; without, it is
    /// refused and nothing changes. Errors: `AlreadyExists` (entity `Project`); `Invalid` when
    /// the dump fails the store's schemas (nothing written); `LockTimeout`; `Io`.
    async fn import_project(&self, dump: &ProjectDump, replace: bool) -> Result<(), StoreError>;
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
