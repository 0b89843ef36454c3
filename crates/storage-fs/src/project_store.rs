//! [`FsProjectStore`]: the project store on disk (SPEC §2).
//!
//! ```text
//! <root>/.claude/projects/<id>/
//!   .lock                      sidecar lock: every read-modify-write holds it
//!   project.json  tasks.json   replaced atomically, validated before every write
//!   progress/log.md            append-only; one write per transaction
//!   progress/velocity.json
//!   research/<task>.md
//!   checkpoints/checkpoint-NNN.json
//!   temp/.write-<uuid>         in-flight atomic writes; debris after 5 minutes
//! ```
//!
//! A transaction is: lock → read (recovering a damaged file, applying a logged commit the files
//! missed) → run the domain's mutation on a copy → validate what changed and stage it (fsynced
//! temp files) → append the log entries with the commit's replay payload and fsync — the commit
//! point: the log is written ahead of the state (see `project_journal`) → rename tasks.json, then
//! project.json, into place → write the checkpoint if asked → unlock. The log's order is the order
//! of the commits, and the log alone can rebuild a destroyed tasks.json or project.json.
//!
//! Readers take no lock: every file is replaced by rename, so a reader sees the old or the new
//! content, never a mix. The one exception is recovery, which writes and so takes the lock.
//!
//! The methods are `async` to fit the port but do their (short, blocking) I/O inline: the
//! binaries drive them on a current-thread runtime where there is nothing else to starve. A
//! server would call them through `spawn_blocking`.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use cairn_domain::log::LogRecord;
use cairn_domain::ports::Clock;
use cairn_domain::project::merge::{Side, SideTask};
use cairn_domain::project::policy::{self, CHECKPOINT_RETENTION, DEBRIS_MAX_AGE, Velocity};
use cairn_domain::project::store::{
    CheckpointInfo, Committed, DroppedTask, DumpedCheckpoint, DumpedResearch, KeptTask, Loaded,
    LogRead, Mutation, ProjectDump, ProjectStore, Recovery, Scrutiny, StoreHealth, TaskSource,
};
use cairn_domain::project::{
    Project, ProjectEvent, ProjectId, ProjectState, Task, TaskDoc, TaskId, TaskList,
};
use cairn_domain::time::Timestamp;
use cairn_domain::{Entity, Error, StoreError};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::layout::{self, ProjectLayout};
use crate::progress_log::Fields;
use crate::project_journal::{self as journal, Base, Commit, Deferred, Payload};
use crate::schema::{self, SchemaKind};
use crate::verdicts::Verdicts;
use crate::{atomic, checkpoints, failpoint, io_error, lock, parallel, progress_log, task_cache};

/// How long a writer waits for another writer of the same project before giving up.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// Bytes of log read per wanted record on a first try at a tail read; most entries are shorter.
const TAIL_BYTES_PER_RECORD: u64 = 400;

/// The filesystem adapter of [`ProjectStore`].
#[derive(Clone)]
pub struct FsProjectStore {
    root: PathBuf,
    clock: Arc<dyn Clock>,
    lock_timeout: Duration,
}

impl std::fmt::Debug for FsProjectStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FsProjectStore")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl FsProjectStore {
    /// A store under `<root>/.claude/projects`, where `root` is the repository root.
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            clock: Arc::new(crate::SystemClock),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
        }
    }

    /// The clock used to stamp what the adapter itself logs (recoveries) and names
    /// (`tasks.json.corrupt-<time>`).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of project `id`.
    pub fn project_dir(&self, id: &ProjectId) -> PathBuf {
        layout::projects_dir(&self.root).join(id.as_str())
    }

    fn layout(&self, id: &ProjectId) -> Result<ProjectLayout, StoreError> {
        ProjectLayout::new(&self.root, id.as_str()).map_err(|e| StoreError::NotFound {
            entity: Entity::Project,
            id: e.to_string(),
        })
    }

    /// The layout of an existing project: one with a project record, or a log that can rebuild
    /// it (a project.json deleted by accident is recovered on the next read).
    fn existing(&self, id: &ProjectId) -> Result<ProjectLayout, StoreError> {
        let layout = self.layout(id)?;
        if !layout.project_json().is_file() && !layout.log_md().is_file() {
            return Err(StoreError::NotFound {
                entity: Entity::Project,
                id: id.to_string(),
            });
        }
        Ok(layout)
    }

    /// The research brief's path of `task` in an existing project.
    fn research_path(
        &self,
        id: &ProjectId,
        task: &TaskId,
    ) -> Result<(ProjectLayout, PathBuf), StoreError> {
        let layout = self.existing(id)?;
        let path = layout
            .research_file(task.as_str())
            .map_err(|e| StoreError::NotFound {
                entity: Entity::Task,
                id: e.to_string(),
            })?;
        Ok((layout, path))
    }

    /// Takes the project's lock — and, first thing under it, makes the state files another tool
    /// wrote durable (see [`sync_written_elsewhere`]): every path that can sync the project's
    /// directory (a write, a recovery, a restore, a checkpoint) holds it.
    fn lock(&self, layout: &ProjectLayout) -> Result<lock::LockGuard, StoreError> {
        let guard = lock::lock_exclusive(&layout.lock_file(), self.lock_timeout)?;
        sync_written_elsewhere(layout);
        Ok(guard)
    }

    /// Reads the tasks, recovering them under the lock if they are damaged; with the file's
    /// bytes when cairn wrote them (see [`read_task_doc`]).
    fn read_tasks(&self, layout: &ProjectLayout, locked: bool) -> Result<ReadTasks, StoreError> {
        let read = || read_task_doc(layout, locked);
        let read = if locked {
            read_settled(&layout.tasks_json(), read)
        } else {
            read()
        };
        match read {
            Ok((doc, seq, own, encoded, file)) => Ok((doc, seq, None, own, encoded, file)),
            Err(_) if !locked => {
                let _guard = self.lock(layout)?;
                // Another process may have recovered it while we waited.
                self.read_tasks(layout, true)
            }
            Err(damage) => self
                .recover(layout, &damage)
                .map(|(doc, seq, r)| (doc, seq, Some(r), None, None, None)),
        }
    }

    /// Rebuilds a damaged tasks.json and replaces it; the damaged file is kept beside it, nothing
    /// is deleted. A file with no valid task left — truncated, garbled, empty, deleted — is
    /// rebuilt by the log's replay (newest trusted base + every later commit), which loses
    /// nothing. A file that still parses with valid tasks is an edit gone wrong (a person,
    /// another tool): it is rebuilt task by task (see [`rebuild`]) so its valid edits are kept,
    /// and so is a file the log cannot replay (a store older than the replay payloads). Caller
    /// holds the lock.
    fn recover(
        &self,
        layout: &ProjectLayout,
        damage: &str,
    ) -> Result<(TaskDoc, u64, Recovery), StoreError> {
        let target = layout.tasks_json();
        let read = std::fs::read(&target).ok();
        unmerged(&target, read.as_deref())?;
        // Its ERROR entry would be refused after the damaged file was set aside.
        refuse_unmerged_log(layout)?;
        let damaged = read.and_then(|bytes| Salvaged::parse(&bytes));
        let damaged = damaged.filter(Salvaged::has_valid_task);
        let damaged_marker = damaged.as_ref().and_then(|d| d.marker);
        let log = read_commits(layout)?;
        // A merge git holds that the log's numbers do not show (see `unlogged_merge`) is taken
        // before a replay, which would take one branch's base and drop the other's commits.
        let unlogged = damaged
            .is_none()
            .then(|| unlogged_merge(layout, &log.records))
            .flatten();
        let replayed = (damaged.is_none() && unlogged.is_none())
            .then(|| replay_tasks(layout, &log.records))
            .flatten();
        let now = self.clock.now();
        let (doc, seq, mut recovery, payload, validated) = match replayed {
            Some(replayed) => {
                let recovery = replayed.recovery();
                // The tasks a checkpoint kept were validated as it was read; a rebuild from one
                // validated all 100,000 a second time. Those the log put passed the schema before
                // they were logged, which their seal vouches for.
                let validated = (recovery.kept.iter())
                    .map(|kept| match kept.source {
                        TaskSource::Checkpoint(_) => true,
                        TaskSource::Log => replayed.sealed,
                        _ => false,
                    })
                    .collect();
                // The rebuilt list is what the log already says: nothing new to log as a commit.
                (replayed.doc, replayed.seq, recovery, None, validated)
            }
            _ => {
                let unreadable = damaged.is_none();
                let merged = unlogged.or_else(|| {
                    unreadable
                        .then(|| merged_by_git(layout, &log.records))
                        .flatten()
                });
                // With nothing else left, what the log can still replay.
                // An entry of the damaged file that is not a task comes back as the last commit
                // left it, when the log replays to the very list the file was written from (its
                // marker is the log's last commit: not after a git merge, whose file carries none
                // and whose replay can follow one branch, nor with the log put back behind the
                // file), else as the newest valid checkpoint holds it: older, it would undo
                // changes acknowledged since. (A file with no valid task had the replay tried.)
                let fallback = || {
                    let logged = (!unreadable && damaged_marker.is_some())
                        .then(|| replay_tasks(layout, &log.records))
                        .flatten()
                        .filter(|replayed| damaged_marker == Some(replayed.seq))
                        .map(|replayed| (TaskSource::Log, Salvaged::whole(replayed.doc)));
                    logged.or_else(|| {
                        newest_valid_checkpoint(layout)
                            .map(|(number, kept)| (TaskSource::Checkpoint(number), kept))
                    })
                };
                let rebuilt = merged.or_else(|| rebuild(damaged, fallback)).or_else(|| {
                    unreadable
                        .then(|| replay_tasks_partly(layout, &log.records))
                        .flatten()
                        .map(|replayed| {
                            let recovery = replayed.recovery();
                            (replayed.doc, recovery)
                        })
                });
                let Some((doc, recovery)) = rebuilt else {
                    return Err(StoreError::Corrupt {
                        path: target.display().to_string(),
                        detail: format!(
                            "{damage}; neither it, nor any checkpoint, nor the progress log holds a valid task. The file was left as it is: fix it by hand, or restore one with `cairn checkpoint restore N`"
                        ),
                    });
                };
                // The salvaged list differs from what the log replays to: log it whole, as a
                // commit, so that a later replay arrives at it too.
                let marks = Marks {
                    tasks: damaged_marker.unwrap_or(0),
                    project: read_project(&layout.project_json()).map_or(0, |(_, seq)| seq),
                };
                // This commit logs the whole list: a base (see `next_commit`).
                let seq = next_commit(layout, marks, 0, true)?;
                let payload = Payload {
                    seq,
                    base: marks.base(),
                    tasks: Some(journal::whole(&doc)),
                    project: None,
                };
                (doc, seq, recovery, Some(payload), Vec::new())
            }
        };
        // Written from its parts: joined first, the 36 MB of 100,000 tasks were copied once more.
        let rendered = changed_tasks(layout, &doc, seq, &validated, None)?;
        let staged = atomic::stage_parts(&layout.temp_dir(), &rendered.parts())?;
        let damaged_copy = set_aside(&target, now)?;
        recovery.damaged_copy = damaged_copy.as_deref().map_or_else(
            || "(tasks.json was missing)".to_owned(),
            |p| p.display().to_string(),
        );
        let events = [
            ProjectEvent::Error {
                task: None,
                message: format!(
                    "tasks.json was damaged ({damage}); recovered it: {}; damaged copy: {}",
                    recovery.summary(),
                    recovery.damaged_copy
                ),
            },
            ProjectEvent::StoreRecovered {
                checkpoint: recovery.checkpoint,
                kept: recovery.kept.len(),
                dropped: recovery.dropped.len(),
                damaged_copy: recovery.damaged_copy.clone(),
            },
        ];
        append_commit(layout, now, &events, payload.as_ref())?;
        staged.install(&target)?;
        let _ = stamp_tasks(layout);
        Ok((doc, seq, recovery))
    }

    /// Rebuilds a damaged or missing project.json from the last project record the log holds.
    /// Caller holds the lock.
    fn recover_project(
        &self,
        layout: &ProjectLayout,
        damage: StoreError,
    ) -> Result<(Project, u64), StoreError> {
        let target = layout.project_json();
        unmerged(&target, std::fs::read(&target).ok().as_deref())?;
        refuse_unmerged_log(layout)?;
        let log = read_commits(layout)?;
        let from_log = || {
            let (project, seq) = log
                .records
                .iter()
                .rev()
                .filter_map(|r| Payload::of(r)?.ok())
                .find_map(|p| p.project.map(|project| (project, p.seq)))?;
            let bytes = to_json_bytes(&project, SchemaKind::Project, &target)
                .map(|bytes| journal::with_marker(bytes, seq));
            Some((bytes, project, seq, "the progress log"))
        };
        let Some((bytes, project, seq, source)) = project_unlogged_merge(layout, &log.records)
            .or_else(|| project_merged_by_git(layout, &log.records))
            .map(|(bytes, project, seq)| (Ok(bytes), project, seq, "git's index, as git merged it"))
            .or_else(from_log)
        else {
            return Err(damage);
        };
        let staged = atomic::stage(&layout.temp_dir(), &bytes?)?;
        let now = self.clock.now();
        let copy = set_aside(&target, now)?.map_or_else(
            || "(project.json was missing)".to_owned(),
            |p| p.display().to_string(),
        );
        append(
            layout,
            now,
            &[ProjectEvent::Error {
                task: None,
                message: format!(
                    "project.json was damaged ({damage}); rebuilt it from {source}; damaged copy: {copy}"
                ),
            }],
        )?;
        staged.install(&target)?;
        Ok((project, seq))
    }

    /// Reads project.json, rebuilding it under the lock when it is damaged or missing.
    fn read_project_or_recover(
        &self,
        layout: &ProjectLayout,
        locked: bool,
    ) -> Result<(Project, u64), StoreError> {
        let path = layout.project_json();
        let read = || read_project(&path);
        let read = if locked {
            read_settled(&path, read)
        } else {
            read()
        };
        match read {
            Ok(read) => Ok(read),
            Err(damage) if is_damage(&damage) => {
                if locked {
                    self.recover_project(layout, damage)
                } else {
                    let _guard = self.lock(layout)?;
                    self.read_project_or_recover(layout, true)
                }
            }
            Err(error) => Err(error),
        }
    }

    /// Reads the state, recovering damaged files, and brings it up to the log: a commit whose
    /// entry is logged but whose state files were not (all) replaced — a crash between the two —
    /// is applied (write-ahead). A writer (`locked`) applies it to the files, looking as far back
    /// in the log as needed for the last commit; a reader applies it to what it returns only,
    /// without the lock, and looks only at the log's tail: a store it cannot judge cheaply is
    /// left to the next writer. A writer gets the lines of the tasks.json it read, when cairn
    /// wrote it in the one-task-per-line layout (see [`TaskLines`]).
    fn load_state(
        &self,
        layout: &ProjectLayout,
        locked: bool,
    ) -> Result<(Loaded, Marks, u64, AsRead), StoreError> {
        let (project, project_seq) = self.read_project_or_recover(layout, locked)?;
        let (tasks, tasks_seq, recovered, own, encoded, file) = self.read_tasks(layout, locked)?;
        let lines = own
            .filter(|_| locked)
            .filter(|lines| lines.spans.len() == tasks.tasks.len());
        let as_read = AsRead {
            lines,
            encoded: encoded.filter(|_| locked),
            file: file.filter(|_| locked),
        };
        let mut state = ProjectState { project, tasks };
        let mut marks = Marks {
            tasks: tasks_seq,
            project: project_seq,
        };
        let last = if locked {
            last_commit(layout)?
        } else {
            // A reader's look at the log is an optimisation of freshness, not of safety: an
            // unreadable log must not stop it from reading the state.
            last_commit_within(layout, READER_LOG_WINDOW).unwrap_or(None)
        };
        let Some(last) = last else {
            return Ok((Loaded { state, recovered }, marks, 0, as_read));
        };
        let head = last.commit.head;
        // Only a file whose marker is the commit's base can be behind it; most of the time
        // neither is, and the change (the whole list, after an import) is never read.
        let may_be_behind = |mark: u64, base: u64| mark != 0 && mark == base;
        // A commit made from a tasks.json without a marker (another tool's: after a git merge)
        // kept that file as the checkpoint it starts from; the file may still be it (see
        // `still_the_kept_file`).
        let tasks_may_lag = may_be_behind(marks.tasks, head.base.tasks)
            || (marks.tasks == 0 && head.base.tasks == 0 && has_other_names(&layout.tasks_json()));
        let project_may_lag = may_be_behind(marks.project, head.base.project);
        if !tasks_may_lag && !project_may_lag {
            return Ok((Loaded { state, recovered }, marks, head.seq, as_read));
        }
        // A reader that cannot read the rest of the entry reads the state as it is (see above).
        let carried = match last.may_carry(layout) {
            Err(_) if !locked => (false, false),
            carried => carried?,
        };
        let (tasks_changed, project_changed) = carried;
        if !(tasks_changed && tasks_may_lag || project_changed && project_may_lag) {
            return Ok((Loaded { state, recovered }, marks, head.seq, as_read));
        }
        let last = match last.whole(layout) {
            Err(_) if !locked => {
                return Ok((Loaded { state, recovered }, marks, head.seq, as_read));
            }
            last => last?,
        };
        // An unreadable payload is not a commit anyone can apply; the writer after it numbers
        // from its head, so nothing is numbered twice.
        let Ok(mut last) = last.payload() else {
            return Ok((Loaded { state, recovered }, marks, head.seq, as_read));
        };
        // A file without a marker was written by another tool (or before markers existed): its
        // content is not cairn's to roll forward. (A new project's files, which the create
        // commit finds missing, are rebuilt by recovery instead.)
        let kept_unreplaced = marks.tasks == 0
            && last.base.tasks == 0
            && still_the_kept_file(layout, last.tasks.as_ref());
        let tasks_behind = last.tasks.is_some()
            && (marks.tasks != 0 && marks.tasks == last.base.tasks || kept_unreplaced);
        // A commit replaces tasks.json before project.json: when its tasks.json was not
        // replaced, neither was its project.json, marker or none.
        let project_behind = last.project.is_some()
            && marks.project == last.base.project
            && (marks.project != 0 || kept_unreplaced);
        if !tasks_behind && !project_behind {
            return Ok((Loaded { state, recovered }, marks, last.seq, as_read));
        }
        // A log a git merge left conflicted is no history to roll forward from: its last commit
        // is one branch's, the file may be the other's. A writer is refused (its commit would be),
        // a reader reads the files as they are.
        if let Err(unmerged) = refuse_unmerged_log(layout) {
            if locked {
                return Err(unmerged);
            }
            return Ok((Loaded { state, recovered }, marks, last.seq, as_read));
        }
        if let (true, Some(change)) = (tasks_behind, last.tasks.take()) {
            let mut doc = match &change.start {
                // The commit kept this very file as the checkpoint it starts from; if that
                // checkpoint no longer holds the bytes it named, the file (the same inode until
                // the commit's rename) was edited since — another tool's edit, which stands.
                journal::Start::Checkpoint(named) => match named_checkpoint(layout, named) {
                    Ok(kept) => kept,
                    Err(_) => return Ok((Loaded { state, recovered }, marks, last.seq, as_read)),
                },
                _ => state.tasks.clone(),
            };
            if let Err(detail) = journal::apply(&mut doc, change) {
                if !locked {
                    // The writer that takes the lock next reports it.
                    return Ok((
                        Loaded { state, recovered },
                        marks,
                        last.seq,
                        AsRead::default(),
                    ));
                }
                return Err(StoreError::Corrupt {
                    path: layout.log_md().display().to_string(),
                    detail: format!(
                        "commit {} of the log does not apply to tasks.json: {detail}",
                        last.seq
                    ),
                });
            }
            if locked {
                let unchanged = unchanged_tasks(&state.tasks, &doc);
                let rendered =
                    changed_tasks(layout, &doc, last.seq, &unchanged, as_read.lines.as_ref())?;
                put_tasks(layout, &rendered.parts())?;
            }
            state.tasks = doc;
            marks.tasks = last.seq;
        }
        // What was read is of the files as read; whatever was rolled forward is not in it.
        let as_read = if tasks_behind {
            AsRead::default()
        } else {
            as_read
        };
        if let (true, Some(project)) = (project_behind, last.project) {
            if locked {
                let path = layout.project_json();
                let bytes = to_json_bytes(&project, SchemaKind::Project, &path)?;
                atomic::write_atomic(
                    &layout.temp_dir(),
                    &path,
                    &journal::with_marker(bytes, last.seq),
                )?;
            }
            state.project = project;
            marks.project = last.seq;
        }
        Ok((Loaded { state, recovered }, marks, last.seq, as_read))
    }
}

/// The tasks as read: the document, its `log_seq` marker, the recovery that rebuilt it if any,
/// the file's lines when cairn wrote them, and the read cache's encoding when the list came from
/// it (see [`read_task_doc`]).
type ReadTasks = (
    TaskDoc,
    u64,
    Option<Recovery>,
    Option<TaskLines>,
    Option<task_cache::Encoded>,
    Option<String>,
);

/// What a writer may copy, for each task it does not change, from the files it read instead of
/// rendering it again: its line in tasks.json, its encoding in the read cache; and the identity
/// of the tasks.json whose content the list is, as it is (neither recovered nor rolled forward).
#[derive(Default)]
struct AsRead {
    lines: Option<TaskLines>,
    encoded: Option<task_cache::Encoded>,
    file: Option<String>,
}

/// `doc` in the read cache's encoding, with the marker `seq` (see [`task_cache::Encoded`]).
fn encode(
    doc: &TaskDoc,
    seq: u64,
    layout: &ProjectLayout,
) -> Result<task_cache::Encoded, StoreError> {
    task_cache::Encoded::of(doc, seq).ok_or_else(|| StoreError::Invalid {
        path: layout.tasks_json().display().to_string(),
        detail: "a task's fields cannot be encoded".into(),
    })
}

/// Which tasks of `after` are exactly the task at the same position in `before`.
fn unchanged_tasks(before: &TaskDoc, after: &TaskDoc) -> Vec<bool> {
    after
        .tasks
        .iter()
        .enumerate()
        .map(|(i, task)| before.tasks.get(i) == Some(task))
        .collect()
}

/// How much of the log's tail a reader looks at for a commit not yet applied.
const READER_LOG_WINDOW: u64 = 16 * 1024;

/// The `log_seq` markers of the state files, as read.
#[derive(Debug, Clone, Copy, Default)]
struct Marks {
    tasks: u64,
    project: u64,
}

impl Marks {
    /// The number of the next commit, after `last` (the last one logged).
    fn next(self, last: u64) -> u64 {
        // Saturating: a damaged number must not end the process.
        last.max(self.tasks).max(self.project).saturating_add(1)
    }

    fn base(self) -> Base {
        Base {
            tasks: self.tasks,
            project: self.project,
        }
    }
}

/// The longest line of an entry [`tail_records`] reads whole; a longer one is cut, and its
/// entry read again whole unless the cut line is the replay payload, which callers never see.
const TAIL_CLIP: usize = if cfg!(test) { 64 } else { 256 * 1024 };

/// The log's last `wanted` entries (the replay-only entries left out, and every entry's payload),
/// read back from its end a block at a time (`progress_log::find_back`): a payload among them —
/// after a large import, tens of megabytes on one line — is stepped over with its line cut short
/// rather than read into memory, so a Stop hook asking after every turn for the recent entries
/// costs about the same at 100 tasks as at 100,000. `None` when the log's last block is damaged (a
/// torn tail): the caller reads the tail whole, which reports it.
fn tail_records(path: &Path, wanted: usize) -> Result<Option<Vec<LogRecord>>, StoreError> {
    let mut records = Vec::new();
    let mut torn = false;
    let mut failed = None;
    let mut newest = true;
    progress_log::find_back(path, u64::MAX, TAIL_CLIP, |block| {
        if std::mem::take(&mut newest) && block.damaged {
            torn = true;
            return Some(());
        }
        let mut record = block.record;
        if let Some(r) = &mut record {
            r.fields.retain(|(key, _)| key != journal::FIELD);
            let cut = |(key, value): &(String, String)| key.len() + value.len() + 4 >= TAIL_CLIP;
            if block.clipped && r.fields.iter().any(cut) {
                let fields = progress_log::Fields::Without(journal::FIELD);
                match progress_log::read_block_fields(path, block.span, fields) {
                    Ok(whole) => record = whole,
                    Err(e) => {
                        failed = Some(e);
                        return Some(());
                    }
                }
            }
        }
        records.extend(record.filter(|r| r.kind != journal::STATE_ENTRY));
        (records.len() >= wanted).then_some(())
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if torn {
        return Ok(None);
    }
    records.reverse();
    Ok(Some(records))
}

/// How long a writer waits for another program to finish writing a state file in place before
/// it takes what it reads for damage.
const WRITER_WAIT: Duration = Duration::from_secs(2);

/// `read` of the file at `path`, read again while it fails and another program has the file
/// open for writing (at most [`WRITER_WAIT`], well inside the hook's lock timeout, since the
/// wait holds the project's lock): git checks a file out by writing it in place, so
/// during a `git pull` or `checkout` tasks.json is half there for a moment. Taken for damage, it
/// would be rebuilt from the log and the pulled version set aside, under the writer's feet.
fn read_settled<T, E>(path: &Path, read: impl Fn() -> Result<T, E>) -> Result<T, E> {
    let deadline = std::time::Instant::now() + WRITER_WAIT;
    let being_written = || {
        std::fs::File::open(path)
            .ok()
            .and_then(|file| cairn_lease::open_for_writing_elsewhere(&file))
            == Some(true)
    };
    loop {
        let result = read();
        if result.is_ok() || std::time::Instant::now() >= deadline {
            return result;
        }
        // Nobody writing it now may be a writer that finished since the read failed (a large
        // file takes a while to fail): that read is stale, and one more judges what is there.
        if !being_written() {
            return read();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Refuses a file a git merge left conflicted: a rebuild would set the merge aside and roll the
/// list back to what the log replays, which holds neither side's merged work.
fn unmerged(path: &Path, bytes: Option<&[u8]>) -> Result<(), StoreError> {
    match bytes.and_then(crate::project_merge::unresolved_merge) {
        Some(line) => Err(StoreError::Unmerged {
            path: path.display().to_string(),
            line,
        }),
        None => Ok(()),
    }
}

/// Refuses, before anything is written, what the log's commit would refuse: a git merge left
/// its end conflicted (see [`progress_log::unmerged_end`]). A writer that kept a checkpoint, set
/// a damaged file aside or rolled a commit forward first would leave those behind the refusal —
/// one more of each on every attempt — and a roll-forward from a conflicted log applies one
/// branch's last commit to the other's file. A log it cannot read is the append's to report, as
/// before.
fn refuse_unmerged_log(layout: &ProjectLayout) -> Result<(), StoreError> {
    let path = layout.log_md();
    match progress_log::unmerged_end(&path) {
        Ok(Some(line)) => Err(StoreError::Unmerged {
            path: path.display().to_string(),
            line,
        }),
        _ => Ok(()),
    }
}

/// Whether a failed read of a state file is damage that recovery may repair, rather than a
/// failure to reach the disk (permissions, I/O) that it must not paper over.
fn is_damage(error: &StoreError) -> bool {
    match error {
        StoreError::Corrupt { .. } => true,
        StoreError::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        _ => false,
    }
}

/// Whether the log ends in a torn entry: its last block is damaged.
fn log_is_torn(path: &Path) -> Result<bool, StoreError> {
    let last = progress_log::find_back(path, u64::MAX, HEAD_CLIP, |block| Some(block.damaged))?;
    Ok(last.unwrap_or(false))
}

/// What is wrong with a checkpoint that is cut short, judged by its ends only: cairn writes one
/// whole JSON object, so one that does not start with `{` and end with `}` was truncated or is
/// not JSON. Reading its ends costs the same for any size of checkpoint.
fn checkpoint_cut_short(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    const END: u64 = 64;
    let ends = (|| {
        let mut file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        let mut head = vec![0; usize::try_from(len.min(END)).unwrap_or(0)];
        file.read_exact(&mut head)?;
        file.seek(SeekFrom::Start(len.saturating_sub(END)))?;
        let mut tail = Vec::new();
        file.read_to_end(&mut tail)?;
        Ok::<_, std::io::Error>((head, tail))
    })();
    let (head, tail) = match ends {
        Ok(ends) => ends,
        Err(e) => return Some(format!("cannot read it: {e}")),
    };
    let first = head.iter().find(|b| !b.is_ascii_whitespace());
    let last = tail.iter().rev().find(|b| !b.is_ascii_whitespace());
    (first != Some(&b'{') || last != Some(&b'}')).then(|| {
        "cut short or not JSON: it is not one whole JSON object (`cairn doctor --full` checks \
         every checkpoint in full)"
            .to_owned()
    })
}

/// Whether the file has another name (a hard link): a file a commit kept as its checkpoint has
/// — checked before the commit's payload is read at all.
fn has_other_names(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.nlink() > 1)
}

/// Whether tasks.json is still the very file a commit kept as the checkpoint it starts from —
/// the same inode: the commit's rename, which would have replaced it, did not happen (a crash
/// between the log append and the rename). A file without a marker cannot say so by its marker;
/// a file another tool wrote since is another inode, and its edit stands.
fn still_the_kept_file(layout: &ProjectLayout, change: Option<&journal::TasksChange>) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Some(journal::Start::Checkpoint(named)) = change.map(|c| &c.start) else {
        return false;
    };
    let kept = layout
        .checkpoints_dir()
        .join(checkpoints::file_name(named.checkpoint));
    match (
        std::fs::metadata(layout.tasks_json()),
        std::fs::metadata(kept),
    ) {
        (Ok(file), Ok(kept)) => file.dev() == kept.dev() && file.ino() == kept.ino(),
        _ => false,
    }
}

/// The log's bytes, mapped where the kernel allows (see `cairn_lease::Contents`); `None` for a
/// project without one.
fn mapped_log(layout: &ProjectLayout) -> Result<Option<cairn_lease::Contents>, StoreError> {
    let path = layout.log_md();
    match cairn_lease::Contents::of(&path) {
        Ok(log) => Ok(Some(log)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", &path)(e)),
    }
}

/// The number of the next commit, after `last` (the last one in the log's file order). A base —
/// a commit that starts its list anew — is numbered above every commit of the log instead (see
/// [`journal::highest_seq`]): after a git merge the last one need not be the highest, and a base
/// whose number repeats one of the other branch's is hidden behind that commit. A commit that
/// continues the previous list must be `last + 1`: that is the only way a replay reaches it.
fn next_commit(
    layout: &ProjectLayout,
    marks: Marks,
    last: u64,
    base: bool,
) -> Result<u64, StoreError> {
    if !base {
        return Ok(marks.next(last));
    }
    let highest = mapped_log(layout)?.map_or(0, |log| journal::highest_seq(&log));
    Ok(marks.next(last.max(highest)))
}

/// How much of each line of a log entry a writer reads to find the last commit's head: the whole
/// of every ordinary line, the front of a payload holding a whole list (tens of megabytes after
/// an import), which [`LastCommit::whole`] reads only when a file may be behind it.
const HEAD_CLIP: usize = 4096;

/// The last commit of the log, and where its entry is when its payload was cut to
/// [`HEAD_CLIP`] bytes (its head is whole: it is the payload's first bytes).
struct LastCommit {
    commit: Commit,
    clipped: Option<(u64, u64)>,
}

impl LastCommit {
    /// [`Commit::may_carry`], searching the log itself when the payload was cut.
    fn may_carry(&self, layout: &ProjectLayout) -> Result<(bool, bool), StoreError> {
        let Some(span) = self.clipped else {
            return Ok(self.commit.may_carry());
        };
        let found = progress_log::block_contains(&layout.log_md(), span, &journal::CARRIES)?;
        Ok((found[0], found[1]))
    }

    /// The commit with its whole payload. If its entry no longer reads (the log was replaced
    /// meanwhile), the commit as found, whose cut payload then reads as unreadable.
    fn whole(self, layout: &ProjectLayout) -> Result<Commit, StoreError> {
        let Some(span) = self.clipped else {
            return Ok(self.commit);
        };
        let whole = progress_log::read_block(&layout.log_md(), span)?.and_then(Commit::of);
        Ok(match whole {
            Some(Ok(commit)) => commit,
            _ => self.commit,
        })
    }
}

/// The last commit of the log, reading backwards from its end.
fn last_commit(layout: &ProjectLayout) -> Result<Option<LastCommit>, StoreError> {
    last_commit_within(layout, u64::MAX)
}

/// The last commit among the log's entries that start within its last `limit` bytes.
fn last_commit_within(
    layout: &ProjectLayout,
    limit: u64,
) -> Result<Option<LastCommit>, StoreError> {
    let path = layout.log_md();
    let found = progress_log::find_back(&path, limit, HEAD_CLIP, |block| {
        let commit = Commit::of(block.record?)?;
        Some((commit, block.clipped.then_some(block.span)))
    })?;
    let commit = match found {
        None => return Ok(None),
        Some((Ok(commit), clipped)) => return Ok(Some(LastCommit { commit, clipped })),
        // A head that is not where `encode` puts it is read from the whole payload.
        Some((Err(_), Some(span))) => progress_log::read_block(&path, span)?.and_then(Commit::of),
        Some((Err(e), None)) => Some(Err(e)),
    };
    // A payload without a readable head is not a commit anyone can apply; the writer after it
    // numbers from the files' markers as well, so nothing is numbered twice.
    Ok(commit.and_then(Result::ok).map(|commit| LastCommit {
        commit,
        clipped: None,
    }))
}

/// The tasks as the log rebuilds them: a trusted base and every later commit.
struct Replayed {
    doc: TaskDoc,
    /// The last commit applied.
    seq: u64,
    /// The checkpoint the replay started from, if it did not start from a whole list in the log.
    checkpoint: Option<u32>,
    /// Tasks whose content came from the log rather than the checkpoint.
    from_log: FxHashSet<TaskId>,
    /// Whether every commit applied logged its tasks sealed (see
    /// [`journal::TasksChange::sealed`]): then the tasks from the log passed the schema as they
    /// were logged, and the rebuilt list validates only what the log cannot vouch for.
    sealed: bool,
}

impl Replayed {
    fn recovery(&self) -> Recovery {
        Recovery {
            checkpoint: self.checkpoint,
            kept: self
                .doc
                .tasks
                .iter()
                .map(|t| KeptTask {
                    id: t.id.clone(),
                    source: match self.checkpoint {
                        Some(n) if !self.from_log.contains(&t.id) => TaskSource::Checkpoint(n),
                        _ => TaskSource::Log,
                    },
                })
                .collect(),
            dropped: Vec::new(),
            damaged_copy: String::new(),
        }
    }
}

/// The whole log, each entry with its commit's payload only: all a recovery reads of it.
fn read_commits(layout: &ProjectLayout) -> Result<progress_log::LogRead, StoreError> {
    progress_log::read_all_fields(&layout.log_md(), progress_log::Fields::Only(journal::FIELD))
}

/// Replays the log's commits onto the newest base it can trust: a whole list logged by a commit
/// (a new project, a restore, a salvage), or a checkpoint that is valid throughout and names the
/// commit it was taken at. Every commit after the base must be there, numbered without a gap, or
/// the replay is refused: a list missing one change is not "the state before the damage".
fn replay_tasks(layout: &ProjectLayout, records: &[LogRecord]) -> Option<Replayed> {
    replay(layout, records, false)
}

/// [`replay_tasks`], or, when no base replays to the last commit, the replay that went furthest,
/// stopped before the first commit it could not find or apply (one that starts from a checkpoint
/// since removed, say): what the log can still say, for a recovery left with nothing else.
fn replay_tasks_partly(layout: &ProjectLayout, records: &[LogRecord]) -> Option<Replayed> {
    replay(layout, records, true)
}

fn replay(layout: &ProjectLayout, records: &[LogRecord], partly: bool) -> Option<Replayed> {
    let mut payloads: Vec<Option<Deferred<'_>>> = records
        .iter()
        .filter_map(|r| Deferred::deferred(r).map(Result::ok))
        .collect();
    // A commit whose tasks do not decode is unreadable, as a torn one is; found only when a
    // replay reaches it, it is dropped and the replay starts over, as it would have gone had it
    // been known from the start. (One no replay reaches still counts as a commit: a checkpoint
    // taken at it or after it is a base, which for a torn one it is not.)
    loop {
        match replay_readable(layout, &payloads, partly) {
            Ok(replayed) => return replayed,
            Err(Undecodable(at)) => payloads[at] = None,
        }
    }
}

/// A logged commit, by its place among the payloads, whose tasks do not decode.
struct Undecodable(usize);

/// Why a replay stopped short of the commit it was to reach.
enum Stop {
    /// After this commit: the next one is missing, out of turn, or does not apply.
    After(u64),
    Undecodable(usize),
}

/// [`replay`] over `payloads`, while every commit it applies decodes.
fn replay_readable(
    layout: &ProjectLayout,
    payloads: &[Option<Deferred<'_>>],
    partly: bool,
) -> Result<Option<Replayed>, Undecodable> {
    let Some(last) = payloads.iter().rev().flatten().next().map(|p| p.seq) else {
        return Ok(None);
    };
    // A checkpoint has no place in the log, so the commits that continue it are found by number
    // alone: when its own number or a later one is held twice, they could be the other branch's,
    // applied to this branch's list — such a checkpoint is no base.
    let held_twice = highest_held_twice(payloads.iter().flatten().map(|p| p.seq));
    let dir = layout.checkpoints_dir();
    // Checkpoint `number`'s list, when it is valid throughout and its marker is `seq`.
    let verdicts = Verdicts::read(layout);
    let load = |number: u64, seq: u64| {
        let bytes = checkpoints::read(&dir, number).ok()?;
        let (doc, marker) = whole_list_judged(&bytes, verdicts.passed_before(&bytes))?;
        (marker == seq).then(|| (u32::try_from(number).unwrap_or(u32::MAX), doc))
    };
    // Newest first: the commit each base is taken at, and the checkpoint it is, if one — read
    // only when its turn comes, by its marker until then (read from its end, where cairn writes
    // it): ten checkpoints of 100,000 tasks parsed up front were 19 s and 2.7 GB of a rebuild.
    let bases = || {
        let mut bases: Vec<(u64, Option<u64>)> = payloads
            .iter()
            .flatten()
            .filter(|p| {
                p.tasks
                    .as_ref()
                    .is_some_and(|t| t.start != journal::Start::Previous)
            })
            .map(|p| (p.seq - 1, None))
            .collect();
        for c in checkpoints::list(&dir).ok()? {
            let marker = marker_at_end(&c.path).or_else(|| {
                let bytes = checkpoints::read(&dir, c.number).ok()?;
                // Without the key anywhere there is no marker to parse for: a checkpoint the
                // merge driver wrote has none.
                memchr::memmem::find(&bytes, journal::MARKER.as_bytes())?;
                Salvaged::parse(&bytes)?.marker
            });
            let Some(seq) = marker else {
                continue;
            };
            if seq > 0 && seq <= last && held_twice.is_none_or(|twice| twice < seq) {
                bases.push((seq, Some(c.number)));
            }
        }
        bases.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
        Some(bases)
    };
    // A base's list: none for a commit that starts anew; a checkpoint that does not read as a
    // whole, or whose marker was not what its end said, is no base.
    let base_of = |(from, checkpoint): (u64, Option<u64>)| match checkpoint {
        None => Some((from, None)),
        Some(number) => load(number, from).map(|base| (from, Some(base))),
    };
    // The base that went furthest, by its place among the bases, and the last commit it applied.
    let mut furthest: Option<(usize, u64)> = None;
    for (i, base) in bases().unwrap_or_default().into_iter().enumerate() {
        let Some((from, base)) = base_of(base) else {
            continue;
        };
        let useful = base.is_some();
        match replay_from(layout, payloads, (from, base), last, false) {
            Ok(replayed) => return Ok(Some(replayed)),
            Err(Stop::Undecodable(at)) => return Err(Undecodable(at)),
            Err(Stop::After(reached))
                if (useful || reached > from) && furthest.is_none_or(|(_, r)| reached > r) =>
            {
                furthest = Some((i, reached));
            }
            Err(Stop::After(_)) => {}
        }
    }
    let base = furthest
        .filter(|_| partly)
        .and_then(|(i, reached)| Some((base_of(bases()?.into_iter().nth(i)?)?, reached)));
    let Some(((from, base), reached)) = base else {
        return Ok(None);
    };
    match replay_from(layout, payloads, (from, base), reached, true) {
        Ok(replayed) => Ok(Some(replayed).filter(|replayed| !replayed.doc.tasks.is_empty())),
        Err(Stop::Undecodable(at)) => Err(Undecodable(at)),
        Err(Stop::After(_)) => Ok(None),
    }
}

/// The highest of the commit numbers `seqs` that comes twice: after a git merge of the log, each
/// branch's commits since the fork carry the same numbers (shared ones are one entry).
fn highest_held_twice(seqs: impl Iterator<Item = u64>) -> Option<u64> {
    let mut seqs: Vec<u64> = seqs.collect();
    seqs.sort_unstable();
    seqs.windows(2)
        .filter(|pair| pair[0] == pair[1])
        .map(|pair| pair[0])
        .max()
}

/// Whether the log holds a `git merge` after the newest commit that `newest` picks: between a
/// merge and the first cairn write after it, which logs the merged file, the two branches'
/// commits carry the same numbers, and neither a replay (see [`replay`]) nor the last record of
/// either branch is what the merge made — git's index holds that (see [`staged_in_git`]).
fn merged_since(records: &[LogRecord], newest: impl Fn(&Payload) -> bool) -> bool {
    let payloads: Vec<Option<Payload>> = records
        .iter()
        .filter_map(|r| Payload::of(r).map(Result::ok))
        .collect();
    let Some(merged_at) = highest_held_twice(payloads.iter().flatten().map(|p| p.seq)) else {
        return false;
    };
    let newest = payloads
        .iter()
        .flatten()
        .filter(|p| newest(p))
        .map(|p| p.seq)
        .max();
    newest.is_none_or(|seq| seq <= merged_at)
}

/// The project's file `name` as git's index holds it: after a merge, the file the merge driver
/// wrote, or the one a person resolved and staged. `None` outside git, and during an unresolved
/// merge, when the index holds no single version of the file.
fn staged_in_git(layout: &ProjectLayout, name: &str) -> Option<Vec<u8>> {
    std::process::Command::new("git")
        .args(["show", &format!(":./{name}")])
        .current_dir(layout.dir())
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| out.stdout)
}

/// The list a `git merge` made, from git's index, when the log holds a merge after its newest
/// base (see [`merged_since`]). Only a list valid throughout is taken: a damaged file staged
/// since is no list.
fn merged_by_git(layout: &ProjectLayout, records: &[LogRecord]) -> Option<(TaskDoc, Recovery)> {
    let starts_anew = |p: &Payload| {
        p.tasks
            .as_ref()
            .is_some_and(|t| t.start != journal::Start::Previous)
    };
    if !merged_since(records, starts_anew) {
        return None;
    }
    let (doc, _) = whole_list(&staged_in_git(layout, layout::TASKS_JSON)?)?;
    Some(from_git_index(doc))
}

/// A tasks document valid throughout — read task by task on every core, as another tool's
/// tasks.json is ([`validated_doc`]) — and its `log_seq` marker (0: none), taken out of it.
fn whole_list(bytes: &[u8]) -> Option<(TaskDoc, u64)> {
    whole_list_judged(bytes, false)
}

/// [`whole_list`], its tasks read without being validated again when `passed`: these very bytes
/// passed a full validation before (see `verdicts`), as a checkpoint `checkpoint write` or a
/// commit made from the tasks.json it validated did — a rebuild from such a checkpoint validated
/// all 100,000 tasks again.
fn whole_list_judged(bytes: &[u8], passed: bool) -> Option<(TaskDoc, u64)> {
    let read = passed
        .then(|| read_one_by_one(bytes, &Known::default(), Keep::PassedTasks))
        .flatten()
        .map(|(doc, _)| doc);
    let mut doc = read.or_else(|| validated_doc(bytes).ok())?;
    let marker = journal::take_marker(&mut doc.extra);
    Some((doc, marker))
}

/// The list git's index holds, when it is the state of every commit the log holds and the log
/// cannot say it: the log holds a merge (numbers held twice), git's index holds a log with exactly
/// the working log's commits (no cairn write since git last staged the log), and its tasks.json is
/// valid throughout and not a file the log already holds (one cairn wrote, with its commit's
/// number, or the one the newest base kept). The log's numbers alone cannot tell a merge after a
/// base from one before it: a branch whose commits are all numbered below a base ours made since
/// the fork (after merging another branch, a pull, a checkout) leaves no number held twice after
/// that base, and a replay from it "succeeds" without the branch's commits (see
/// [`merged_since`]).
fn unlogged_merge(layout: &ProjectLayout, records: &[LogRecord]) -> Option<(TaskDoc, Recovery)> {
    if !holds_a_number_twice(records) || !git_holds_the_log(layout, records) {
        return None;
    }
    let bytes = staged_in_git(layout, layout::TASKS_JSON)?;
    let (doc, marker) = whole_list(&bytes)?;
    // A file cairn wrote (it carries a commit's number) is one the log replays to.
    if marker > 0 {
        return None;
    }
    // Another tool's file: a merge, unless the newest base kept these very bytes (a write after
    // the merge, and only the log staged since) — as git checked them out, with CRLF line
    // endings under `core.autocrlf`.
    let newest = records
        .iter()
        .rev()
        .filter_map(|r| Payload::of(r)?.ok())
        .find_map(|p| p.tasks.filter(|t| t.start != journal::Start::Previous));
    if let Some(journal::Start::Checkpoint(named)) = newest.as_ref().map(|t| &t.start) {
        let crlf = String::from_utf8_lossy(&bytes).replace('\n', "\r\n");
        if named.names(&bytes) || named.names(crlf.as_bytes()) {
            return None;
        }
    }
    Some(from_git_index(doc))
}

/// Whether the log holds a commit number twice (a git merge of it, see [`highest_held_twice`]),
/// read from the payloads' heads only: a payload holding a whole list is not parsed.
fn holds_a_number_twice(records: &[LogRecord]) -> bool {
    let heads = records
        .iter()
        .flat_map(|r| &r.fields)
        .filter(|(key, _)| key == journal::FIELD)
        .filter_map(|(_, value)| journal::Head::of(value).ok());
    highest_held_twice(heads.map(|head| head.seq)).is_some()
}

/// Whether git's index holds a log with exactly the commits of `records` (the log as read): no
/// cairn commit since git last staged the log, so the state files git holds beside it are that
/// log's state — unless they were staged apart from it.
fn git_holds_the_log(layout: &ProjectLayout, records: &[LogRecord]) -> bool {
    let commits = |records: &[LogRecord]| {
        let mut lines: Vec<String> = records
            .iter()
            .flat_map(|r| &r.fields)
            .filter(|(key, _)| key == journal::FIELD)
            .map(|(_, value)| value.trim_end_matches('\r').to_owned())
            .collect();
        lines.sort_unstable();
        lines
    };
    let path = format!("{}/{}", layout::PROGRESS_DIR, layout::LOG_MD);
    staged_in_git(layout, &path).is_some_and(|staged| {
        commits(&progress_log::parse(&String::from_utf8_lossy(&staged)).records) == commits(records)
    })
}

/// [`unlogged_merge`] of project.json: the record git's index holds, when the log holds a merge,
/// git's index holds the log's every commit and no other, and its project.json is valid and
/// carries no commit's number (the one the driver merged, or another tool's edit, which the log
/// holds no record of); put back as it is.
fn project_unlogged_merge(
    layout: &ProjectLayout,
    records: &[LogRecord],
) -> Option<(Vec<u8>, Project, u64)> {
    if !holds_a_number_twice(records) || !git_holds_the_log(layout, records) {
        return None;
    }
    project_in_git(layout).filter(|(_, _, seq)| *seq == 0)
}

/// `doc`, as a recovery that took every task from git's index.
fn from_git_index(doc: TaskDoc) -> (TaskDoc, Recovery) {
    let recovery = Recovery {
        checkpoint: None,
        kept: doc
            .tasks
            .iter()
            .map(|t| KeptTask {
                id: t.id.clone(),
                source: TaskSource::GitIndex,
            })
            .collect(),
        dropped: Vec::new(),
        damaged_copy: String::new(),
    };
    (doc, recovery)
}

/// The project record a `git merge` made, from git's index, when the log holds a merge after its
/// last project record (see [`merged_since`]): the file's bytes as git holds them, to be put back
/// as they are — the store then stands as it did right after the merge — and what they read as.
fn project_merged_by_git(
    layout: &ProjectLayout,
    records: &[LogRecord],
) -> Option<(Vec<u8>, Project, u64)> {
    if !merged_since(records, |p| p.project.is_some()) {
        return None;
    }
    project_in_git(layout)
}

/// project.json as git's index holds it, when it is valid: its bytes, what they read as, and its
/// commit marker.
fn project_in_git(layout: &ProjectLayout) -> Option<(Vec<u8>, Project, u64)> {
    let bytes = staged_in_git(layout, layout::PROJECT_JSON)?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    schema::validate(SchemaKind::Project, &value).ok()?;
    let mut project: Project = serde_json::from_value(value).ok()?;
    let seq = journal::take_marker(&mut project.extra);
    Some((bytes, project, seq))
}

/// The replay of `payloads` onto `base` (a checkpoint's number and list; none: the list a commit
/// numbered `from + 1` starts anew), taken at commit `from`, up to commit `until` — stopping
/// there when `partly`; else the last commit it applied. A base of no list must begin with a
/// commit that starts its list anew: after a git merge of the log, numbers repeat, and the first
/// commit numbered `from + 1` may be one of the other branch's, built on another list.
fn replay_from(
    layout: &ProjectLayout,
    payloads: &[Option<Deferred<'_>>],
    (from, base): (u64, Option<(u32, TaskDoc)>),
    until: u64,
    partly: bool,
) -> Result<Replayed, Stop> {
    let anew = base.is_none();
    let (mut checkpoint, mut doc) = match base {
        Some((n, doc)) => (Some(n), doc),
        None => (None, empty_doc()),
    };
    let mut from_log = FxHashSet::default();
    let mut sealed = true;
    let mut expected = from + 1;
    let mut started = false;
    for (at, payload) in payloads.iter().enumerate() {
        let reached = expected - 1;
        let payload = match payload {
            // An unreadable commit before the base does not matter; after it, it is a gap.
            None if !started => continue,
            Some(p) if !started && p.seq <= from => continue,
            // A partial replay ends where it was told to.
            _ if partly && reached == until => break,
            None => return Err(Stop::After(reached)),
            Some(p) if p.seq != expected => return Err(Stop::After(reached)),
            Some(p) if !started && anew => {
                let starts = p.tasks.as_ref().map(|t| &t.start);
                if starts.is_none_or(|start| *start == journal::Start::Previous) {
                    return Err(Stop::After(reached));
                }
                p
            }
            Some(p) => p,
        };
        started = true;
        if let Some(change) = &payload.tasks {
            let change = change.decoded().ok_or(Stop::Undecodable(at))?;
            match &change.start {
                journal::Start::Previous => {}
                journal::Start::Empty => from_log.clear(),
                journal::Start::Checkpoint(named) => {
                    from_log.clear();
                    checkpoint = u32::try_from(named.checkpoint).ok();
                }
            }
            sealed &= change.sealed || change.put.is_empty();
            from_log.extend(change.put.iter().map(|t| t.id.clone()));
            apply_logged(layout, &mut doc, change).map_err(|_| Stop::After(reached))?;
        }
        expected += 1;
    }
    if expected != until + 1 {
        return Err(Stop::After(expected - 1));
    }
    Ok(Replayed {
        doc,
        seq: until,
        checkpoint,
        from_log,
        sealed,
    })
}

/// [`journal::apply`] of a logged change, the checkpoint it starts from, if any, read first (see
/// [`journal::Start::Checkpoint`]).
fn apply_logged(
    layout: &ProjectLayout,
    doc: &mut TaskDoc,
    change: journal::TasksChange,
) -> Result<(), String> {
    if let journal::Start::Checkpoint(named) = &change.start {
        *doc = named_checkpoint(layout, named)?;
    }
    journal::apply(doc, change)
}

/// The list of the checkpoint a change starts from: its bytes checked against the sum the change
/// names, then read as the file another tool left was read (validated; its marker taken out).
fn named_checkpoint(
    layout: &ProjectLayout,
    named: &journal::CheckpointRef,
) -> Result<TaskDoc, String> {
    let number = named.checkpoint;
    let bytes = checkpoints::read(&layout.checkpoints_dir(), number).map_err(|e| e.to_string())?;
    if !named.names(&bytes) {
        return Err(format!(
            "checkpoint {number} is not the one the log names: its bytes differ"
        ));
    }
    let mut doc = validated_doc(&bytes).map_err(|e| format!("checkpoint {number}: {e}"))?;
    journal::take_marker(&mut doc.extra);
    Ok(doc)
}

/// The checkpoint the log's newest base names, when a rebuild could not start from it — gone, or
/// another file under its number — and no checkpoint taken at or after that commit stands in for
/// it: a destroyed tasks.json would then come back only as it was before that commit. The path
/// and what is wrong, with the way out.
fn missing_base(layout: &ProjectLayout, log: &[u8]) -> Option<(String, String)> {
    let (seq, named) = journal::newest_base(log)?;
    // The newest base is a whole list, or the checkpoint named is the one (or a later one is).
    let named = named?;
    let dir = layout.checkpoints_dir();
    let wrong = match checkpoints::read(&dir, named.checkpoint) {
        Err(_) => "is gone",
        Ok(bytes) if named.names(&bytes) => return None,
        Ok(_) => "holds other bytes than the ones the log names",
    };
    let later = checkpoints::list(&dir)
        .ok()?
        .iter()
        .any(|c| marker_at_end(&c.path).is_some_and(|marker| marker >= seq));
    (!later).then(|| {
        (
            dir.join(checkpoints::file_name(named.checkpoint))
                .display()
                .to_string(),
            format!(
                "the log's commit {seq} starts from this checkpoint, which {wrong}: a destroyed tasks.json would come back only as it was before that commit. Run `cairn checkpoint write` to give the log a base to rebuild from"
            ),
        )
    })
}

/// The `log_seq` the tasks document at `path` ends with (cairn writes it last; another tool that
/// kept it may have spaced it), if it does: read from the document's last bytes alone. Only a
/// marker that is the document's last field counts — its number followed by nothing but the
/// closing brace — so it is the marker the whole document holds (a `log_seq` nested in another
/// field at the end, or one followed by more fields, is not; the document is then read whole).
fn marker_at_end(path: &Path) -> Option<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(64))).ok()?;
    let mut tail = Vec::with_capacity(64);
    file.read_to_end(&mut tail).ok()?;
    let key = format!("\"{}\"", journal::MARKER);
    let at = memchr::memmem::rfind(&tail, key.as_bytes())? + key.len();
    let space = |b: &u8| matches!(b, b' ' | b'\n' | b'\r' | b'\t');
    let rest = &tail[at..];
    let rest = &rest[rest.iter().take_while(|b| space(b)).count()..];
    let rest = rest.strip_prefix(b":")?;
    let rest = &rest[rest.iter().take_while(|b| space(b)).count()..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let mut after = rest[digits..].iter().filter(|b| !space(b));
    if after.next() != Some(&b'}') || after.next().is_some() {
        return None;
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

/// Whether checkpoint `number` is durable — synced, and its directory — for the log to name it:
/// it may be another clone's file that a `git pull` renamed into place without syncing.
fn made_durable(layout: &ProjectLayout, number: u32) -> bool {
    let dir = layout.checkpoints_dir();
    let Ok(file) = std::fs::File::open(dir.join(checkpoints::file_name(u64::from(number)))) else {
        return false;
    };
    file.sync_all().is_ok() && crate::fsync_dir(&dir).is_ok()
}

/// Keeps tasks.json — the file another tool left, whose list the writer read as it is and whose
/// identity was `read` — as the next checkpoint, by a second name: the first write over it then
/// logs its change from there ([`journal::Start::Checkpoint`]) instead of the whole list, and the
/// rename that replaces tasks.json leaves the checkpoint the only name of those bytes. The file
/// is made durable first (a `git pull` does not sync what it writes). `None` when it cannot be
/// kept — no longer the file read, a symbolic link, a checkpoints directory on another file
/// system, any I/O error on the way: the writer then logs the whole list, as it always can.
fn keep_as_read(layout: &ProjectLayout, read: &str) -> Option<journal::CheckpointRef> {
    let path = layout.tasks_json();
    let file = std::fs::File::open(&path).ok()?;
    let meta = file.metadata().ok()?;
    if identity(&meta) != read {
        return None;
    }
    file.sync_all().ok()?;
    // Summed before the link is made: the number is not known yet.
    let summed = journal::CheckpointRef::read(0, meta.len(), &file).ok()?;
    // The name linked, not what it may point to: a second name of a symbolic link keeps a path,
    // not the bytes.
    let same = |linked: &Path| {
        std::fs::symlink_metadata(linked).is_ok_and(|linked| identity(&linked) == read)
    };
    let kept = checkpoints::link_next(&path, &layout.checkpoints_dir(), same).ok()??;
    Some(journal::CheckpointRef {
        checkpoint: kept.number,
        ..summed
    })
}

/// Makes tasks.json and project.json durable when another tool wrote them, for a writer, before
/// anything the writer does can make that tool's rename of them durable. A `git pull` renames
/// files into place without syncing them, and the writer's own next rename in the project's
/// directory (tasks.json installed, a recovery), synced, would keep the new name with none of its
/// bytes: after a power cut, an empty tasks.json (found by the power-loss harness once another
/// tool's rewrite was in its histories). A file cairn wrote (stamped) is durable already; a
/// failure here is the next read's to see.
fn sync_written_elsewhere(layout: &ProjectLayout) {
    for (file, stamp) in [
        (layout.tasks_json(), stamp(layout)),
        (layout.project_json(), project_stamp(layout)),
    ] {
        if !is_stamped(&file, &stamp)
            && let Ok(file) = std::fs::File::open(&file)
        {
            let _ = file.sync_all();
        }
    }
}

/// tasks.json as read: the document, its `log_seq` marker, and, when asked for, the file's lines
/// and the read cache's encoding (see [`task_cache::Encoded`]) if the list came from it; last, the
/// identity of the file read (see [`identity`]).
type TaskFile = (
    TaskDoc,
    u64,
    Option<TaskLines>,
    Option<task_cache::Encoded>,
    Option<String>,
);

/// Parses tasks.json, validating it unless it is exactly the file cairn itself validated and
/// wrote (see [`stamp`]), and takes its `log_seq` marker out. A file whose binary read cache is of
/// it (see [`task_cache`]) is not parsed at all: a stamped file's, or a file another tool wrote
/// that a read before this one validated in full. The bytes come back too, by line, when they are
/// cairn's own (stamped) in cairn's layout and `want_bytes`, for a writer to reuse (see
/// [`TaskLines`]). The error says what is wrong, for the log.
fn read_task_doc(layout: &ProjectLayout, want_bytes: bool) -> Result<TaskFile, String> {
    let (mut file, identity, stamped) = open_tasks(layout)?;
    let read = identity.clone();
    let cache = task_cache::path(layout.dir());
    // A file another tool wrote (a `git pull`, an editor) is validated in full once, and the
    // cache made of it then stands for that validation — under a key of its own, since its bytes
    // are not cairn's to reuse line by line. Without it every read of the file pays the full
    // validation until cairn next writes it: a second at 100,000 tasks.
    let key = identity.map(|id| {
        if stamped {
            id
        } else {
            format!("{id} {FOREIGN}")
        }
    });
    // A writer also wants the file's own bytes, to copy the lines of the tasks it does not
    // change: they are read and indexed on another thread while this one reads and decodes the
    // cache.
    let mut read_ahead = None;
    if let Some(key) = &key {
        let reading = &mut file;
        let (cached, rest) = std::thread::scope(|scope| {
            // A thread that cannot be started only means the bytes are read after the cache.
            let reader = (want_bytes && stamped)
                .then(|| {
                    std::thread::Builder::new()
                        .spawn_scoped(scope, || read_rest(reading).map(TaskLines::of))
                        .ok()
                })
                .flatten();
            let cached = task_cache::read(&cache, key, want_bytes);
            let rest = reader.map(|reader| {
                reader
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            (cached, rest)
        });
        let rest = rest.transpose()?;
        if let Some((doc, seq, encoded)) = cached {
            return Ok((doc, seq, rest.and_then(Result::ok), encoded, read));
        }
        read_ahead = rest;
    }
    let (mut doc, own) = if stamped {
        let bytes = match read_ahead {
            Some(Ok(lines)) => lines.bytes,
            Some(Err(bytes)) => bytes,
            None => read_rest(&mut file)?,
        };
        match serde_json::from_slice::<TaskDoc>(&bytes) {
            // Only a writer reuses the lines: a reader does not index megabytes for nothing.
            Ok(doc) => (doc, want_bytes.then(|| TaskLines::of(bytes).ok()).flatten()),
            Err(_) => (validated_foreign(layout, &bytes, &cache)?, None),
        }
    } else {
        // Another tool's file is read to be validated, and let go: mapped, its pages are the
        // page cache's own — at 100,000 tasks, 48 MB of fresh memory neither zeroed nor filled
        // (see `cairn_lease::Contents`).
        let bytes =
            cairn_lease::Contents::of_file(file).map_err(|e| format!("cannot read it: {e}"))?;
        (validated_foreign(layout, &bytes, &cache)?, None)
    };
    let seq = journal::take_marker(&mut doc.extra);
    let encoded = key.and_then(|key| {
        let encoded = task_cache::Encoded::of(&doc, seq)?;
        // The next read of this same file skips the JSON.
        task_cache::write(&cache, &key, &encoded);
        Some(encoded)
    });
    Ok((doc, seq, own, encoded.filter(|_| want_bytes), read))
}

/// tasks.json as another tool wrote it, validated in full ([`validated_doc_after`], with the read
/// cache at `cache`) — unless these very bytes passed a full validation before (see `verdicts`):
/// then its tasks are read without being validated again, as a restore reads such a checkpoint.
/// In a fresh clone `doctor --full` judges tasks.json, and the doctor's read of the project
/// right after validated all 100,000 tasks a second time (0.3 s); summing the bytes costs a
/// twentieth of that.
fn validated_foreign(
    layout: &ProjectLayout,
    bytes: &[u8],
    cache: &Path,
) -> Result<TaskDoc, String> {
    let passed = Verdicts::read(layout).passed_before(bytes);
    let read = passed
        .then(|| read_one_by_one(bytes, &Known::default(), Keep::PassedTasks))
        .flatten();
    match read {
        Some((doc, _)) => Ok(doc),
        None => validated_doc_after(bytes, task_cache::read_any(cache).as_ref()),
    }
}

/// A tasks document another tool wrote, validated in full; the error says what is wrong.
pub(crate) fn validated_doc(bytes: &[u8]) -> Result<TaskDoc, String> {
    validated_doc_after(bytes, None)
}

/// [`validated_doc`], a task whose text is cairn's rendering of the task of the same id in
/// `cached` (the read cache, see [`Prior`]) taken from there.
fn validated_doc_after(
    bytes: &[u8],
    cached: Option<&task_cache::Encoded>,
) -> Result<TaskDoc, String> {
    if let Some(doc) = validated_one_by_one(bytes, cached) {
        return Ok(doc);
    }
    // Invalid, or of a shape the task-by-task read leaves alone: the whole document is judged at
    // once, which says everything that is wrong with it.
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON: {e}"))?;
    schema::validate(SchemaKind::Tasks, &value)
        .map_err(|errors| format!("fails its schema: {}", summarize(&errors)))?;
    serde_json::from_value(value).map_err(|e| format!("unreadable: {e}"))
}

/// A tasks document parsed and validated one task at a time, or `None` if it is not valid JSON,
/// fails its schema, or repeats its `tasks` key — its caller then judges it whole, for the
/// message. The verdict is the whole document's: tasks.schema.json is its top-level fields plus
/// task.schema.json for each element of `tasks`, with no constraint across tasks (see
/// [`Salvaged::parse`]).
///
/// A first pass checks the document's syntax and borrows each task's text; the tasks are then
/// parsed, validated and read on every core, each task's JSON tree built and freed outside the
/// small-block arena ([`cairn_heap::recycling`]). Against a tree of the whole document, at 100,000
/// tasks: 540 MB touched became 220 MB, and 0.57–1.7 s became 0.33–0.52 s (most of the old time
/// was the kernel zeroing pages). A task `cached` holds in the same rendering is taken from there
/// (see [`Prior`]): after a `git pull`, most of them.
fn validated_one_by_one(bytes: &[u8], cached: Option<&task_cache::Encoded>) -> Option<TaskDoc> {
    let known = Known::with_cache(cached);
    read_one_by_one(bytes, &known, Keep::Tasks).map(|(doc, _)| doc)
}

/// [`validated_doc`]'s verdict alone: each task read and dropped at once, under
/// [`cairn_heap::recycling`], instead of a list of 100,000 tasks built to be thrown away — its
/// fresh pages were most of a `doctor --full`. A task whose text is cairn's rendering of the
/// task of the same id in `cached` (see [`Prior`]) passes as that task did: a damaged text is not
/// that rendering, and is judged. So does a task whose text is in `passed`, the texts of the
/// documents judged before that passed — to which this document's are added if it passes: the
/// checkpoints `doctor --full` judges after tasks.json are mostly its very texts.
fn verdict(
    bytes: &[u8],
    cached: Option<&task_cache::Encoded>,
    passed: &mut PassedTexts,
) -> Option<String> {
    let _dropped = cairn_heap::recycling();
    let known = Known {
        passed: Some(passed),
        ..Known::with_cache(cached)
    };
    match read_one_by_one(bytes, &known, Keep::Verdict) {
        Some((_, texts)) => {
            passed.add(&texts);
            None
        }
        None => validated_doc(bytes).err(),
    }
}

/// What [`read_one_by_one`] keeps of the tasks it reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    Tasks,
    /// Tasks, from bytes that passed a full validation before (see `verdicts`): each task is
    /// read, not validated again — as a read of the tasks.json cairn itself wrote.
    PassedTasks,
    /// Nothing: the document is read for its verdict.
    Verdict,
}

/// Tasks read before: a task of the same text is that task again, neither parsed nor validated (a
/// task's verdict depends on its text alone).
#[derive(Default)]
struct Known<'k, 'p> {
    /// Versions of the document read before.
    earlier: Vec<Version<'k>>,
    /// The read cache's list.
    prior: Option<Prior<'p>>,
    /// Texts that passed (see [`verdict`]); only a verdict asks it.
    passed: Option<&'p PassedTexts>,
}

/// The texts of tasks that passed a full validation in this process, by their checksum: a text
/// whose sum is here is valid, since a task's verdict depends on its text alone. Summing a text
/// costs a fraction of decoding the cached task and rendering it (see [`Prior`]), let alone of
/// parsing and validating it. The sum is 64 bits: it guards against damage, as the checksums
/// of the read cache and of `verdicts` do, not against an adversary.
#[derive(Default)]
struct PassedTexts(FxHashSet<u64>);

impl PassedTexts {
    fn sum(text: &str) -> u64 {
        task_cache::checksum("passed task text", text.as_bytes())
    }

    fn holds(&self, text: &str) -> bool {
        !self.0.is_empty() && self.0.contains(&Self::sum(text))
    }

    fn add(&mut self, texts: &[&str]) {
        self.0.reserve(texts.len());
        self.0.extend(texts.iter().map(|text| Self::sum(text)));
    }
}

impl<'p> Known<'_, 'p> {
    /// Only the read cache's list is known (see [`Prior`]), if there is one.
    fn with_cache(cached: Option<&'p task_cache::Encoded>) -> Self {
        Self {
            earlier: Vec::new(),
            prior: cached.map(Prior::new),
            passed: None,
        }
    }
}

impl<'k> Known<'k, '_> {
    /// The task whose text is `text`, the `at`-th of its document, if it is known: an earlier
    /// version's own, or decoded from the cache; `scratch` is the caller's to reuse.
    fn get(&self, text: &str, at: usize, scratch: &mut Vec<u8>) -> Option<Cow<'k, Task>> {
        if let Some(task) = self.earlier.iter().find_map(|v| v.task(text, at)) {
            return Some(Cow::Borrowed(task));
        }
        self.prior
            .as_ref()?
            .rendered_as(text, at, scratch)
            .map(Cow::Owned)
    }
}

/// The id a task's text starts with, as cairn renders a task (`{"id":"T-001",…`). It only finds
/// which task to compare a text with — by position first, else by id: a map of 100,000 texts was
/// most of what sharing them saved. A task another tool wrote with its id elsewhere is compared
/// by position alone.
fn leading_id(text: &str) -> Option<&[u8]> {
    let id = text.strip_prefix("{\"id\":\"")?.as_bytes();
    Some(&id[..memchr::memchr(b'"', id)?])
}

/// A version of a tasks document read before: its tasks and the text of each.
struct Version<'k> {
    tasks: Vec<&'k Task>,
    texts: &'k [&'k str],
    /// Each task's position by id, made at the first task not at its position here.
    by_id: std::sync::OnceLock<FxHashMap<&'k [u8], usize>>,
}

impl<'k> Version<'k> {
    fn new(tasks: Vec<&'k Task>, texts: &'k [&'k str]) -> Self {
        Self {
            tasks,
            texts,
            by_id: std::sync::OnceLock::new(),
        }
    }

    /// The task whose text here is `text`, the `at`-th task of its own document.
    fn task(&self, text: &str, at: usize) -> Option<&'k Task> {
        let here = self.texts.get(at);
        let i = if here == Some(&text) {
            at
        } else {
            let id = leading_id(text)?;
            if here.and_then(|here| leading_id(here)) == Some(id) {
                // The same task, changed.
                return None;
            }
            let by_id = self.by_id.get_or_init(|| {
                let ids = self.texts.iter().enumerate();
                ids.filter_map(|(i, text)| Some((leading_id(text)?, i)))
                    .collect()
            });
            let i = *by_id.get(id)?;
            (self.texts.get(i) == Some(&text)).then_some(i)?
        };
        self.tasks.get(i).copied()
    }
}

/// The list in the read cache, whatever file it was made of (see [`task_cache::read_any`]): every
/// list cairn caches passed validation — it read the file in full, or wrote it. A tasks.json
/// another tool wrote after it (a `git pull`, a merge driver, a copy of the store) is mostly its
/// tasks in cairn's rendering: a task whose text is exactly the rendering of the cached task of
/// the same id is that task. At 100,000 tasks a task decoded and rendered costs a fraction of one
/// parsed and validated.
struct Prior<'p> {
    cached: &'p task_cache::Encoded,
    /// Each cached task's position by id, made at the first task not at its cached position.
    by_id: std::sync::OnceLock<FxHashMap<&'p [u8], usize>>,
}

impl<'p> Prior<'p> {
    fn new(cached: &'p task_cache::Encoded) -> Self {
        Self {
            cached,
            by_id: std::sync::OnceLock::new(),
        }
    }

    /// The cached task rendered as `text`, the `at`-th task of its document.
    fn rendered_as(&self, text: &str, at: usize, scratch: &mut Vec<u8>) -> Option<Task> {
        // The rendering compared below is the proof; the id only finds what to compare.
        let id = leading_id(text)?;
        let i = if self.cached.id(at) == Some(id) {
            at
        } else {
            let by_id = self.by_id.get_or_init(|| {
                (0..self.cached.len())
                    .filter_map(|i| Some((self.cached.id(i)?, i)))
                    .collect()
            });
            *by_id.get(id)?
        };
        let task = self.cached.decoded(i)?;
        scratch.clear();
        serde_json::to_writer(&mut *scratch, &task).ok()?;
        (scratch.as_slice() == text.as_bytes()).then_some(task)
    }
}

/// [`validated_one_by_one`], except that a task `known` knows is not parsed nor validated; with the
/// text of each task, in order.
fn read_one_by_one<'b>(
    bytes: &'b [u8],
    known: &Known<'_, '_>,
    keep: Keep,
) -> Option<(TaskDoc, Vec<&'b str>)> {
    let (mut doc, tasks, texts) = read_each(bytes, known, keep, Cow::into_owned)?;
    doc.tasks = TaskList::as_read(tasks);
    Some((doc, texts))
}

/// [`read_one_by_one`], each task made into what `make` makes of it — a task `known` knows is
/// borrowed — and the document's top-level fields apart.
fn read_each<'b, 'k, T: Send>(
    bytes: &'b [u8],
    known: &Known<'k, '_>,
    keep: Keep,
    make: impl Fn(Cow<'k, Task>) -> T + Sync,
) -> Option<(TaskDoc, Vec<T>, Vec<&'b str>)> {
    use serde::de::{Error as _, MapAccess, Visitor};
    use serde_json::value::RawValue;
    use std::fmt;

    /// The top-level fields, and the text of each task.
    struct Document;
    impl<'de> Visitor<'de> for Document {
        type Value = (Value, Vec<&'de RawValue>);
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a tasks document")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut top = serde_json::Map::new();
            let mut tasks = None;
            while let Some(key) = map.next_key::<String>()? {
                if key != "tasks" {
                    top.insert(key, map.next_value()?);
                } else if tasks.replace(map.next_value()?).is_some() {
                    return Err(A::Error::custom("`tasks` twice"));
                }
            }
            let tasks = tasks.ok_or_else(|| A::Error::missing_field("tasks"))?;
            top.insert("tasks".into(), Value::Array(Vec::new()));
            Ok((Value::Object(top), tasks))
        }
    }

    fn task_of(text: &RawValue, keep: Keep) -> Option<Task> {
        if keep == Keep::PassedTasks {
            return serde_json::from_str(text.get()).ok();
        }
        let value = {
            // The tree is dropped within the task; only what the task keeps of it stays.
            let _tree = cairn_heap::recycling();
            let value: Value = serde_json::from_str(text.get()).ok()?;
            schema::is_valid(SchemaKind::Task, &value).then_some(value)?
        };
        serde_json::from_value(value).ok()
    }

    /// Below this many tasks a thread costs more than it saves.
    const PER_THREAD: usize = 4096;

    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let (top, texts) = serde::Deserializer::deserialize_map(&mut reader, Document).ok()?;
    reader.end().ok()?;
    if !schema::is_valid(SchemaKind::Tasks, &top) {
        return None;
    }
    let doc: TaskDoc = serde_json::from_value(top).ok()?;
    let parts = parallel::in_parts(&texts, PER_THREAD, |part, start| {
        let capacity = match keep {
            Keep::Tasks | Keep::PassedTasks => {
                parallel::part_capacity(texts.len(), part.len(), start)
            }
            Keep::Verdict => 0,
        };
        let mut tasks = Vec::with_capacity(capacity);
        let mut scratch = Vec::new();
        for (at, text) in (start..).zip(part) {
            if keep == Keep::Verdict && known.passed.is_some_and(|p| p.holds(text.get())) {
                continue;
            }
            let task = match known.get(text.get(), at, &mut scratch) {
                Some(task) => task,
                None => Cow::Owned(task_of(text, keep)?),
            };
            if keep != Keep::Verdict {
                tasks.push(make(task));
            }
        }
        Some(tasks)
    });
    let tasks = parallel::joined(parts)?;
    Some((doc, tasks, texts.into_iter().map(RawValue::get).collect()))
}

/// A version of a tasks document as read: `None` when absent, else it or what is wrong with it.
pub(crate) type VersionRead<T> = Option<Result<T, String>>;

/// The versions of a tasks document git hands the merge driver — ours, then the others (`None`:
/// absent) — each judged as [`validated_doc`] judges it, but a task whose text an earlier version
/// holds is taken from there: the three versions are mostly the same tasks, and each was parsed
/// and validated three times. Ours comes as a document, the others as sides that name the tasks
/// they share with ours instead of copying them (see [`Side`]).
pub(crate) fn validated_sides(
    ours: Option<&[u8]>,
    others: &[Option<&[u8]>],
    cached: Option<&task_cache::Encoded>,
) -> (VersionRead<TaskDoc>, Vec<VersionRead<Side>>) {
    let (ours, ours_texts) = match ours {
        None => (None, Vec::new()),
        Some(bytes) => {
            let known = Known::with_cache(cached);
            match read_one_by_one(bytes, &known, Keep::Tasks) {
                Some((doc, texts)) => (Some(Ok(doc)), texts),
                None => (Some(validated_doc(bytes)), Vec::new()),
            }
        }
    };
    let ours_tasks: &[Task] = match &ours {
        Some(Ok(doc)) => &doc.tasks,
        _ => &[],
    };
    let mut sides: Vec<VersionRead<Side>> = Vec::with_capacity(others.len());
    let mut side_texts: Vec<Vec<&str>> = Vec::with_capacity(others.len());
    for bytes in others {
        let Some(bytes) = bytes else {
            sides.push(None);
            side_texts.push(Vec::new());
            continue;
        };
        let read_before = sides.iter().zip(&side_texts).filter_map(|(side, texts)| {
            let side = side.as_ref()?.as_ref().ok()?;
            Some(Version::new(side.tasks_in(ours_tasks).ok()?, texts))
        });
        let known = Known {
            earlier: std::iter::once(Version::new(ours_tasks.iter().collect(), &ours_texts))
                .chain(read_before)
                .collect(),
            prior: cached.map(Prior::new),
            passed: None,
        };
        // A task found in ours — directly, or through a side that shares it — is named, not
        // copied.
        let read = read_each(bytes, &known, Keep::Tasks, |task| match task {
            Cow::Borrowed(task) => match position_in(ours_tasks, task) {
                Some(i) => SideTask::Ours(i),
                None => SideTask::Own(Box::new(task.clone())),
            },
            Cow::Owned(task) => SideTask::Own(Box::new(task)),
        });
        drop(known);
        let (side, texts) = match read {
            Some((top, tasks, texts)) => (Ok(Side { top, tasks }), texts),
            None => (validated_doc(bytes).map(Side::of), Vec::new()),
        };
        sides.push(Some(side));
        side_texts.push(texts);
    }
    (ours, sides)
}

/// Where `item` lies in `slice`, if it is one of its very elements: a task a side shares with ours
/// is a reference to ours' own.
fn position_in<T>(slice: &[T], item: &T) -> Option<usize> {
    let size = std::mem::size_of::<T>().max(1);
    let start = slice.as_ptr() as usize;
    let offset = (std::ptr::from_ref(item) as usize).checked_sub(start)?;
    (offset % size == 0 && offset / size < slice.len()).then_some(offset / size)
}

/// [`validated_sides`] with every side's tasks copied out: each version as a document.
#[cfg(test)]
fn validated_versions(
    versions: &[&[u8]],
    cached: Option<&task_cache::Encoded>,
) -> Vec<Result<TaskDoc, String>> {
    let Some((ours, others)) = versions.split_first() else {
        return Vec::new();
    };
    let others: Vec<Option<&[u8]>> = others.iter().map(|&bytes| Some(bytes)).collect();
    let (ours, sides) = validated_sides(Some(ours), &others, cached);
    let ours = ours.unwrap_or_else(|| Err("absent".to_owned()));
    let ours_tasks: &[Task] = ours.as_ref().map_or(&[], |doc| &doc.tasks);
    let mut read = Vec::with_capacity(versions.len());
    for side in sides.into_iter().flatten() {
        read.push(side.and_then(|side| {
            let tasks = side.tasks_in(ours_tasks).map_err(|e| e.to_string())?;
            Ok(TaskDoc {
                tasks: TaskList::as_read(tasks.into_iter().cloned().collect()),
                ..side.top
            })
        }));
    }
    read.insert(0, ours);
    read
}

/// What a read cache's key adds to the identity of a tasks.json that cairn did not write.
const FOREIGN: &str = "validated";

/// tasks.json opened, with its identity, and whether that identity is stamped as cairn's own
/// (see [`stamp`]).
fn open_tasks(layout: &ProjectLayout) -> Result<(std::fs::File, Option<String>, bool), String> {
    let file =
        std::fs::File::open(layout.tasks_json()).map_err(|e| format!("cannot read it: {e}"))?;
    // Identity and bytes come from the same open handle, so a concurrent replace cannot pair one
    // file's stamp with another file's content.
    let identity = file.metadata().ok().map(|m| identity(&m));
    let stamped = identity
        .as_ref()
        .is_some_and(|id| std::fs::read_to_string(stamp(layout)).ok().as_ref() == Some(id));
    Ok((file, identity, stamped))
}

fn read_rest(file: &mut std::fs::File) -> Result<Vec<u8>, String> {
    // Sized once: a megabytes-long file read into a growing vector is copied at every doubling.
    let size = file.metadata().map_or(0, |m| m.len());
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    std::io::Read::read_to_end(file, &mut bytes).map_err(|e| format!("cannot read it: {e}"))?;
    Ok(bytes)
}

/// tasks.json's bytes, and whether they are exactly what cairn validated and wrote (its
/// [`stamp`] matches).
fn read_tasks_bytes(layout: &ProjectLayout) -> Result<(Vec<u8>, bool), String> {
    let (mut file, _, stamped) = open_tasks(layout)?;
    Ok((read_rest(&mut file)?, stamped))
}

/// Saves tasks.json as the next checkpoint under a second name, when it is exactly the file cairn
/// validated and wrote (its [`stamp`]): a restore then replaces it by a rename, and the checkpoint
/// keeps its bytes — at 100,000 tasks, 48 MB not copied and made durable again. `None` when it is
/// not stamped, or was replaced under the link; the caller copies it instead.
fn link_stamped_tasks(
    layout: &ProjectLayout,
) -> Result<Option<checkpoints::Checkpoint>, StoreError> {
    if !is_stamped(&layout.tasks_json(), &stamp(layout)) {
        return Ok(None);
    }
    checkpoints::link_next(&layout.tasks_json(), &layout.checkpoints_dir(), |linked| {
        is_stamped(linked, &stamp(layout))
    })
}

/// The number of tasks in a document known to be valid, without building them.
fn count_tasks(bytes: &[u8]) -> Option<usize> {
    #[derive(serde::Deserialize)]
    struct Count {
        tasks: Vec<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Count>(bytes)
        .ok()
        .map(|c| c.tasks.len())
}

/// The validation stamp: the identity (inode, size, modification time) of the tasks.json cairn
/// last validated and wrote. A reader whose file matches it skips schema validation, which is most
/// of the cost of a read; a file written by anything else — another tool, an editor, a restore
/// from backup — changes identity and is validated in full. Losing the stamp only costs time.
fn stamp(layout: &ProjectLayout) -> PathBuf {
    layout.dir().join(".tasks.json.validated")
}

fn identity(meta: &std::fs::Metadata) -> String {
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0u64;
    format!("{inode} {} {modified}", meta.len())
}

/// Validates and renders tasks.json with its commit marker `seq`, writing nothing: every task on
/// its own, on every core, and the top level (see [`changed_tasks`], none unchanged). The whole
/// list as one JSON tree, validated, was 1.1 s of a rebuild of a destroyed tasks.json at 100,000
/// tasks.
fn tasks_bytes(layout: &ProjectLayout, doc: &TaskDoc, seq: u64) -> Result<Vec<u8>, StoreError> {
    changed_tasks(layout, doc, seq, &[], None).map(Rendered::into_bytes)
}

/// [`tasks_bytes`] for a change to the document as read: `unchanged` says which tasks are exactly
/// their counterpart there, and `lines` are the lines of the file it was read from when cairn
/// wrote that file (see [`TaskLines`]). Those tasks were validated already (on read, or when
/// cairn wrote them), so only the changed tasks and the document's top level are validated — the
/// same verdict as validating the whole file, since the schema has no constraint across tasks —
/// and only the changed tasks are serialized; the others are written from `lines`.
fn changed_tasks<'a>(
    layout: &ProjectLayout,
    doc: &TaskDoc,
    seq: u64,
    unchanged: &[bool],
    lines: Option<&'a TaskLines>,
) -> Result<Rendered<'a>, StoreError> {
    let path = layout.tasks_json();
    validate_changed(doc, unchanged, &path)?;
    render_tasks(doc, Some(seq), lines, |i| unchanged.get(i) == Some(&true)).map_err(|e| {
        StoreError::Invalid {
            path: path.display().to_string(),
            detail: e.to_string(),
        }
    })
}

/// Validates `doc`'s top level and each task `i` that is not `unchanged[i]`.
fn validate_changed(doc: &TaskDoc, unchanged: &[bool], path: &Path) -> Result<(), StoreError> {
    let invalid = |detail: String| StoreError::Invalid {
        path: path.display().to_string(),
        detail,
    };
    let top = serde_json::to_value(journal::top_of(doc)).map_err(|e| invalid(e.to_string()))?;
    schema::validate(SchemaKind::Tasks, &top).map_err(|errors| invalid(errors.join("; ")))?;
    // Each task's JSON tree is made, validated and dropped: its blocks are reused for the next
    // (at 100,000 tasks the trees were 340 MB of fresh pages, a third of a rebuild's time).
    let _trees = cairn_heap::recycling();
    let check = |part: &[Task], start: usize| {
        for (i, task) in (start..).zip(part) {
            if unchanged.get(i) == Some(&true) {
                continue;
            }
            let value = serde_json::to_value(task).map_err(|e| e.to_string())?;
            schema::validate(SchemaKind::Task, &value).map_err(|errors| {
                errors
                    .iter()
                    .map(|e| format!("/tasks/{i}{}", e.strip_prefix("(root)").unwrap_or(e)))
                    .collect::<Vec<_>>()
                    .join("; ")
            })?;
        }
        Ok(())
    };
    // On every core when there are many (an import, a restore, a merge): each part reports its
    // first invalid task, and the first part's report is the first of all. A write of a few
    // tasks starts no thread.
    let changed = (0..doc.tasks.len())
        .filter(|&i| unchanged.get(i) != Some(&true))
        .count();
    let checked = if changed >= 2 * RENDER_PER_THREAD {
        parallel::in_parts(&doc.tasks, RENDER_PER_THREAD, check)
            .into_iter()
            .collect()
    } else {
        check(&doc.tasks, 0)
    };
    checked.map_err(invalid)
}

/// Validates `doc` against `kind` and renders it, with the commit marker `seq` when there is one
/// (a file without one, like a merge driver's result, is read as another tool's edit).
pub(crate) fn validated_tasks(
    doc: &TaskDoc,
    kind: SchemaKind,
    path: &Path,
    seq: Option<u64>,
) -> Result<Vec<u8>, StoreError> {
    let invalid = |detail: String| StoreError::Invalid {
        path: path.display().to_string(),
        detail,
    };
    let value = serde_json::to_value(doc).map_err(|e| invalid(e.to_string()))?;
    schema::validate(kind, &value).map_err(|errors| invalid(errors.join("; ")))?;
    render_tasks(doc, seq, None, |_| false)
        .map(Rendered::into_bytes)
        .map_err(|e| invalid(e.to_string()))
}

/// [`validated_tasks`] for a list as [`FsProjectStore::read_tasks`] gave it, whose every task
/// passed its schema on the way (a file another tool wrote is validated as it is read; a
/// recovery keeps only valid tasks): only the top level is validated again. The whole list as
/// one JSON tree, validated, was most of saving another tool's 100,000 tasks as a checkpoint
/// (a second, against 0.15 s).
fn validated_as_read(doc: &TaskDoc, seq: u64, path: &Path) -> Result<Vec<u8>, StoreError> {
    validate_changed(doc, &vec![true; doc.tasks.len()], path)?;
    render_tasks(doc, Some(seq), None, |_| false)
        .map(Rendered::into_bytes)
        .map_err(|e| StoreError::Invalid {
            path: path.display().to_string(),
            detail: e.to_string(),
        })
}

/// tasks.json for `doc`, a merge whose tasks marked `unchanged` are tasks of a side that passed
/// its schema as it was read: the top level and every other task are validated, as a write
/// validates the tasks it changed (see [`changed_tasks`]). No `log_seq` marker. The bytes come
/// in the pieces they were rendered in, to be written one after the other (see
/// [`Rendered::into_pieces`]).
pub(crate) fn validated_unchanged(
    doc: &TaskDoc,
    unchanged: &[bool],
    path: &Path,
) -> Result<Vec<Vec<u8>>, StoreError> {
    validate_changed(doc, unchanged, path)?;
    render_tasks(doc, None, None, |_| false)
        .map(Rendered::into_pieces)
        .map_err(|e| StoreError::Invalid {
            path: path.display().to_string(),
            detail: e.to_string(),
        })
}

/// Below this many tasks to render or validate a thread costs more than it saves (see
/// [`render_tasks`], [`validate_changed`]).
const RENDER_PER_THREAD: usize = 4096;

/// Renders tasks.json as cairn writes it: one task per line, each compact, between a first line
/// holding the document's top-level fields up to `"tasks":[` and a last line holding the rest.
/// Valid JSON for any tool, cheap to write (no indentation of megabytes), and a change to one
/// task is a change to one line, which diffs and merges (see the tasks.json merge driver) cleanly.
/// A `log_seq` in `doc.extra` is written like any other field. This is the one renderer of
/// tasks.json and of checkpoints (a checkpoint is a copy of it); it validates nothing.
pub fn render_tasks_json(doc: &TaskDoc) -> Result<Vec<u8>, serde_json::Error> {
    render_tasks(doc, None, None, |_| false).map(Rendered::into_bytes)
}

/// [`render_tasks_json`] with the commit marker `seq` added as the last top-level field, and the
/// line of each task `i` for which `unchanged(i)` taken from `lines`: the bytes cairn already
/// wrote for that task, so an unchanged task costs nothing instead of a serialization.
fn render_tasks<'a>(
    doc: &TaskDoc,
    seq: Option<u64>,
    lines: Option<&'a TaskLines>,
    unchanged: impl Fn(usize) -> bool + Sync,
) -> Result<Rendered<'a>, serde_json::Error> {
    let Value::Object(top) = serde_json::to_value(journal::top_of(doc))? else {
        return Err(serde::ser::Error::custom(
            "the task list is not a JSON object",
        ));
    };
    let reused = |i: usize| lines.filter(|_| unchanged(i)).and_then(|l| l.spans.get(i));
    let fresh = doc.tasks.len()
        - (0..doc.tasks.len())
            .filter(|&i| reused(i).is_some())
            .count();
    // Many tasks to render (an import, a restore, a merge, the first write after another tool's)
    // are rendered on every core first, each part into a buffer of its own with the separators
    // before its lines, and written from there: copied into one buffer, a 100,000-task list
    // touched another 36 MB of fresh memory.
    let (apart, apart_spans): (Vec<_>, Vec<_>) = if fresh >= 2 * RENDER_PER_THREAD {
        let parts = parallel::in_parts(&doc.tasks, RENDER_PER_THREAD, |part, start| {
            let mut bytes = Vec::with_capacity(part.len() * 512);
            let mut spans = Vec::with_capacity(part.len());
            for (i, task) in (start..).zip(part) {
                if reused(i).is_some() {
                    spans.push(None);
                    continue;
                }
                let from = bytes.len();
                bytes.extend_from_slice(separator(i));
                let line = bytes.len();
                serde_json::to_writer(&mut bytes, task)?;
                spans.push(Some((from, line, bytes.len())));
            }
            Ok::<_, serde_json::Error>((bytes, spans))
        });
        parts
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .unzip()
    } else {
        Default::default()
    };
    let mut rendered_apart = (apart_spans.iter().enumerate())
        .flat_map(|(k, spans)| spans.iter().map(move |span| span.map(|span| (k, span))));
    let mut out = Rendered {
        made: Vec::with_capacity(if apart.is_empty() {
            fresh * 512 + 256
        } else {
            256
        }),
        read: lines.map_or(&[][..], |l| &l.bytes[..]),
        apart,
        pieces: Vec::new(),
        fresh: Vec::with_capacity(fresh),
    };
    out.made.push(b'{');
    let mut first = true;
    let mut field = |made: &mut Vec<u8>, key: &str| -> Result<(), serde_json::Error> {
        if !std::mem::take(&mut first) {
            made.push(b',');
        }
        serde_json::to_writer(&mut *made, key)?;
        made.push(b':');
        Ok(())
    };
    for (key, value) in &top {
        if seq.is_some() && key == journal::MARKER {
            continue;
        }
        field(&mut out.made, key)?;
        if key != "tasks" {
            serde_json::to_writer(&mut out.made, value)?;
            continue;
        }
        out.made.push(b'[');
        for (i, task) in doc.tasks.iter().enumerate() {
            let apart = rendered_apart.next().flatten();
            match (reused(i), apart) {
                (Some(&(start, end)), _) => out.reuse(separator(i), start, end),
                (None, Some((k, (from, line, end)))) => out.take_apart(i, k, from, line, end),
                (None, None) => {
                    out.made.extend_from_slice(separator(i));
                    let start = out.made.len();
                    serde_json::to_writer(&mut out.made, task)?;
                    out.fresh.push((i, Source::Made, start, out.made.len()));
                }
            }
        }
        out.made.extend_from_slice(b"\n]");
    }
    if let Some(seq) = seq {
        field(&mut out.made, journal::MARKER)?;
        out.made.extend_from_slice(seq.to_string().as_bytes());
    }
    out.made.extend_from_slice(b"}\n");
    out.close();
    Ok(out)
}

/// What comes before task `i`'s line in tasks.json: each task is on a line of its own.
fn separator(i: usize) -> &'static [u8] {
    if i == 0 { b"\n" } else { b",\n" }
}

/// tasks.json as [`render_tasks`] made it: the bytes it made, the parts it rendered on other
/// cores, and the lines of unchanged tasks
/// where they lie in the file read. Those are written from there: copying them first into one
/// buffer cost more than the rest of the render, in memory the size of the file.
struct Rendered<'a> {
    made: Vec<u8>,
    read: &'a [u8],
    /// The parts rendered on every core (see [`render_tasks`]).
    apart: Vec<Vec<u8>>,
    /// The file, in order, as spans of the buffers [`Source`] names. Only `made` bytes past the
    /// last span of it are not yet in it (see [`Rendered::close`]).
    pieces: Vec<(Source, usize, usize)>,
    /// Each task rendered afresh, by position, and where its line is.
    fresh: Vec<(usize, Source, usize, usize)>,
}

/// Which buffer of a [`Rendered`] a span is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Made,
    Read,
    Apart(usize),
}

impl Rendered<'_> {
    fn slice(&self, source: Source, start: usize, end: usize) -> &[u8] {
        match source {
            Source::Made => &self.made[start..end],
            Source::Read => &self.read[start..end],
            Source::Apart(k) => &self.apart[k][start..end],
        }
    }

    /// The JSON of task `i` if it was rendered afresh: exactly `serde_json::to_writer`'s bytes,
    /// which the log's payload reuses (see [`Payload::encode_onto`]).
    fn fresh_line(&self, i: usize) -> Option<&[u8]> {
        let at = self
            .fresh
            .binary_search_by_key(&i, |&(task, ..)| task)
            .ok()?;
        let (_, source, start, end) = self.fresh[at];
        Some(self.slice(source, start, end))
    }

    /// `separator` then the line at `start..end` of the file read. A line right after the one
    /// before it there, with the same separator between, extends that piece.
    fn reuse(&mut self, separator: &[u8], start: usize, end: usize) {
        let made_since = self.made_since();
        if let Some((Source::Read, _, last_end)) = self.pieces.last_mut()
            && made_since == self.made.len()
            && self.read.get(*last_end..start) == Some(separator)
        {
            *last_end = end;
            return;
        }
        self.made.extend_from_slice(separator);
        self.close();
        self.pieces.push((Source::Read, start, end));
    }

    /// Task `i`, rendered apart in part `k` at `from..end` behind its separator (its line starts
    /// at `line`). A span right after the one before it in that part extends that piece.
    fn take_apart(&mut self, i: usize, k: usize, from: usize, line: usize, end: usize) {
        self.fresh.push((i, Source::Apart(k), line, end));
        let made_since = self.made_since();
        if let Some((Source::Apart(last), _, last_end)) = self.pieces.last_mut()
            && made_since == self.made.len()
            && (*last, *last_end) == (k, from)
        {
            *last_end = end;
            return;
        }
        self.close();
        self.pieces.push((Source::Apart(k), from, end));
    }

    /// Where the `made` bytes not yet in a piece start.
    fn made_since(&self) -> usize {
        self.pieces
            .iter()
            .rev()
            .find(|piece| piece.0 == Source::Made)
            .map_or(0, |piece| piece.2)
    }

    /// Puts the `made` bytes not yet in a piece into one.
    fn close(&mut self) {
        let since = self.made_since();
        if since < self.made.len() {
            self.pieces.push((Source::Made, since, self.made.len()));
        }
    }

    /// The file's bytes, in the pieces they lie in.
    fn parts(&self) -> Vec<&[u8]> {
        self.pieces
            .iter()
            .map(|&(source, start, end)| self.slice(source, start, end))
            .collect()
    }

    /// Whether the file is `made` itself.
    fn all_made(&self) -> bool {
        self.pieces.iter().all(|piece| piece.0 == Source::Made)
    }

    /// The file's bytes in one buffer: `made` itself when it is the file.
    fn into_bytes(self) -> Vec<u8> {
        if self.all_made() {
            return self.made;
        }
        self.parts().concat()
    }

    /// The file's bytes in owned pieces, to be written one after the other: a buffer that is a
    /// piece whole is the piece, not a copy. Joined, a 100,000-task merge copied 48 MB into
    /// fresh memory, a third of the pages it touched.
    fn into_pieces(mut self) -> Vec<Vec<u8>> {
        let pieces = std::mem::take(&mut self.pieces);
        (pieces.into_iter())
            .map(|(source, start, end)| match source {
                Source::Made if (start, end) == (0, self.made.len()) => {
                    std::mem::take(&mut self.made)
                }
                Source::Apart(k) if (start, end) == (0, self.apart[k].len()) => {
                    std::mem::take(&mut self.apart[k])
                }
                _ => self.slice(source, start, end).to_vec(),
            })
            .collect()
    }
}

/// A stamped tasks.json in the one-task-per-line layout, with where each task's line is: the
/// bytes cairn itself validated and wrote for that task, reusable as they are while the task is
/// unchanged. Only built for a file whose every line is where the layout puts it; anything else
/// (the old pretty layout, a file another tool wrote) is rendered afresh.
struct TaskLines {
    bytes: Vec<u8>,
    /// The span of each task's line, without its separating comma.
    spans: Vec<(usize, usize)>,
}

impl TaskLines {
    /// `bytes` indexed by task line, if they are in the layout cairn writes (see
    /// [`render_tasks`]); else the bytes back. Whether there is a line for every task of the list
    /// read is the caller's to check.
    fn of(bytes: Vec<u8>) -> Result<Self, Vec<u8>> {
        match Self::spans(&bytes) {
            Some(spans) => Ok(Self { bytes, spans }),
            None => Err(bytes),
        }
    }

    fn spans(bytes: &[u8]) -> Option<Vec<(usize, usize)>> {
        let mut spans = Vec::new();
        // memchr: megabytes scanned a byte at a time cost more than everything else done here.
        let mut start = 0;
        let mut ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
        let mut lines = std::iter::from_fn(|| {
            let end = ends.next()?;
            let line = &bytes[start..end];
            start = end + 1;
            Some(line)
        });
        let head = lines.next()?;
        if !head.ends_with(b"\"tasks\":[") {
            return None;
        }
        let mut at = head.len() + 1;
        loop {
            let line = lines.next()?;
            if line.starts_with(b"]") {
                return Some(spans);
            }
            let body = line.strip_suffix(b",").unwrap_or(line);
            if !(body.starts_with(b"{\"id\":") && body.ends_with(b"}")) {
                return None;
            }
            spans.push((at, at + body.len()));
            at += line.len() + 1;
        }
    }

    /// [`Self::of`] for a list of `tasks` tasks.
    #[cfg(test)]
    fn index(bytes: Vec<u8>, tasks: usize) -> Option<Self> {
        Self::of(bytes)
            .ok()
            .filter(|lines| lines.spans.len() == tasks)
    }
}

/// Replaces tasks.json with already validated bytes (`parts`, one after another) and stamps it.
fn put_tasks(layout: &ProjectLayout, parts: &[&[u8]]) -> Result<(), StoreError> {
    atomic::stage_parts(&layout.temp_dir(), parts)?.install(&layout.tasks_json())?;
    let _ = stamp_tasks(layout);
    Ok(())
}

/// Records the identity of the tasks.json cairn just wrote (see [`stamp`]), and returns it.
fn stamp_tasks(layout: &ProjectLayout) -> Option<String> {
    stamp_file(layout, &layout.tasks_json(), &stamp(layout))
}

/// The stamp of project.json: the identity of the project.json cairn last wrote. A commit that
/// read any other project.json — another tool's edit, which may have kept its `log_seq` — carries
/// the whole record and writes it back, so a rebuild of project.json from the log keeps that
/// edit. A missing stamp only costs that one write.
fn project_stamp(layout: &ProjectLayout) -> PathBuf {
    layout.dir().join(".project.json.validated")
}

/// Whether `file` is the very file whose identity `stamp` records.
fn is_stamped(file: &Path, stamp: &Path) -> bool {
    std::fs::metadata(file)
        .is_ok_and(|meta| std::fs::read_to_string(stamp).is_ok_and(|s| s == identity(&meta)))
}

/// Records in `stamp` the identity of `file`, which cairn just wrote, and returns it.
fn stamp_file(layout: &ProjectLayout, file: &Path, stamp: &Path) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    let key = identity(&meta);
    // Not fsynced and not locked against readers: a missing or stale stamp only sends the next
    // reader down the full-validation path (the next writer, for project.json, down a rewrite of
    // the record).
    let _ = atomic::write_unsynced(&layout.temp_dir(), stamp, key.as_bytes());
    Some(key)
}

fn summarize(errors: &[String]) -> String {
    match errors {
        [] => "no detail".to_owned(),
        [one] => one.clone(),
        [first, rest @ ..] => format!("{first} (and {} more)", rest.len()),
    }
}

/// A tasks document (tasks.json or a checkpoint) that parses as JSON, judged entry by entry.
struct Salvaged {
    /// The top-level fields, when they pass the schema and read on their own (without the
    /// `log_seq` marker).
    shell: Option<TaskDoc>,
    /// The `log_seq` marker, when the document has a readable one.
    marker: Option<u64>,
    entries: Vec<Entry>,
}

/// One element of a `tasks` array: the task, or why it is not one.
struct Entry {
    id: Option<String>,
    task: Result<Task, String>,
}

impl Salvaged {
    /// A decoded list as a salvage reads it: each task judged by the schema, as a task read from
    /// a file is (the log's copy of a task is decoded, not validated, as it is replayed).
    fn whole(doc: TaskDoc) -> Self {
        let shell = doc.without_tasks();
        let entries = (doc.tasks.into_vec().into_iter())
            .map(|task| {
                let id = Some(task.id.to_string());
                let judged = serde_json::to_value(&task)
                    .map_err(|e| e.to_string())
                    .and_then(|value| {
                        schema::validate(SchemaKind::Task, &value).map_err(|e| e.join("; "))
                    });
                Entry {
                    id,
                    task: judged.map(|()| task),
                }
            })
            .collect();
        Self {
            shell: Some(shell),
            marker: None,
            entries,
        }
    }

    /// `None` unless the bytes are a JSON object with a `tasks` array.
    fn parse(bytes: &[u8]) -> Option<Self> {
        let Value::Object(mut fields) = serde_json::from_slice(bytes).ok()? else {
            return None;
        };
        let Some(Value::Array(tasks)) = fields.remove("tasks") else {
            return None;
        };
        fields.insert("tasks".into(), Value::Array(Vec::new()));
        let marker = fields.remove(journal::MARKER).and_then(|v| v.as_u64());
        let shell = Value::Object(fields);
        let shell = schema::is_valid(SchemaKind::Tasks, &shell)
            .then(|| serde_json::from_value(shell).ok())
            .flatten();
        let entries = tasks
            .into_iter()
            .map(|value| Entry {
                id: value.get("id").and_then(Value::as_str).map(str::to_owned),
                task: schema::validate(SchemaKind::Task, &value)
                    .map_err(|errors| format!("fails its schema: {}", summarize(&errors)))
                    .and_then(|()| {
                        serde_json::from_value(value).map_err(|e| format!("unreadable: {e}"))
                    }),
            })
            .collect();
        Some(Self {
            shell,
            marker,
            entries,
        })
    }

    fn has_valid_task(&self) -> bool {
        self.entries.iter().any(|e| e.task.is_ok())
    }

    /// The document with only the entries that are valid tasks.
    fn valid_doc(&self) -> TaskDoc {
        let mut doc = self.shell.clone().unwrap_or_else(empty_doc);
        doc.tasks = self
            .entries
            .iter()
            .filter_map(|e| e.task.as_ref().ok().cloned())
            .collect();
        doc
    }
}

fn empty_doc() -> TaskDoc {
    TaskDoc {
        version: 1,
        project_id: None,
        tasks: TaskList::new(),
        completions_since_checkpoint: 0,
        extra: serde_json::Map::new(),
    }
}

/// The newest checkpoint that parses and holds at least one valid task (SPEC §2), if any.
fn newest_valid_checkpoint(layout: &ProjectLayout) -> Option<(u32, Salvaged)> {
    let dir = layout.checkpoints_dir();
    let mut candidates = checkpoints::list(&dir).ok()?;
    candidates.reverse();
    candidates.into_iter().find_map(|c| {
        let salvaged = Salvaged::parse(&checkpoints::read(&dir, c.number).ok()?)?;
        salvaged
            .has_valid_task()
            .then(|| (u32::try_from(c.number).unwrap_or(u32::MAX), salvaged))
    })
}

/// The merge rule of recovery. A damaged file that parses and holds at least one valid task is
/// the source of truth: it is what the last writer meant, so its valid entries are all kept, in
/// place, and a task it omits is not brought back. Each invalid entry is replaced by the
/// fallback's copy of the same id when there is one (and that id is not taken), else dropped —
/// the fallback is the list the log replays to, or the newest valid checkpoint (see `recover`).
/// A damaged file that does not parse, or holds no valid task, is replaced by the fallback's
/// valid tasks. Top-level fields come from the damaged file when they read, else the fallback.
/// `None` when the result would drop tasks and keep none: there is nothing to recover, and the
/// damage is left for a person.
fn rebuild(
    damaged: Option<Salvaged>,
    fallback: impl FnOnce() -> Option<(TaskSource, Salvaged)>,
) -> Option<(TaskDoc, Recovery)> {
    let damaged = damaged.filter(Salvaged::has_valid_task);
    let needs_fallback = damaged
        .as_ref()
        .is_none_or(|d| d.shell.is_none() || !d.entries.iter().all(|e| e.task.is_ok()));
    let fallback = if needs_fallback { fallback() } else { None };
    let mut recovery = Recovery {
        checkpoint: None,
        kept: Vec::new(),
        dropped: Vec::new(),
        damaged_copy: String::new(),
    };
    let doc = match (damaged, fallback) {
        (Some(damaged), fallback) => {
            let taken: std::collections::HashSet<TaskId> = damaged
                .entries
                .iter()
                .filter_map(|e| e.task.as_ref().ok().map(|t| t.id.clone()))
                .collect();
            let mut doc = damaged
                .shell
                .clone()
                .or_else(|| fallback.as_ref().and_then(|(_, f)| f.shell.clone()))
                .unwrap_or_else(empty_doc);
            let mut replaced = std::collections::HashSet::new();
            for (index, entry) in damaged.entries.into_iter().enumerate() {
                let reason = match entry.task {
                    Ok(task) => {
                        recovery.kept.push(KeptTask {
                            id: task.id.clone(),
                            source: TaskSource::DamagedFile,
                        });
                        doc.tasks.push(task);
                        continue;
                    }
                    Err(reason) => reason,
                };
                let wanted = entry
                    .id
                    .as_deref()
                    .and_then(|id| TaskId::try_from(id.to_owned()).ok())
                    .filter(|id| !taken.contains(id) && !replaced.contains(id));
                let copy = wanted.and_then(|id| {
                    let (source, f) = fallback.as_ref()?;
                    let task = f
                        .entries
                        .iter()
                        .find_map(|e| e.task.as_ref().ok().filter(|t| t.id == id))?;
                    Some((*source, task.clone()))
                });
                if let Some((source, task)) = &copy {
                    replaced.insert(task.id.clone());
                    if let TaskSource::Checkpoint(number) = source {
                        recovery.checkpoint = Some(*number);
                    }
                    recovery.kept.push(KeptTask {
                        id: task.id.clone(),
                        source: *source,
                    });
                    doc.tasks.push(task.clone());
                }
                recovery.dropped.push(DroppedTask {
                    id: entry.id,
                    index,
                    source: TaskSource::DamagedFile,
                    reason,
                    replaced_from: copy.map(|(source, _)| source),
                });
            }
            doc
        }
        (None, Some((source, fallback))) => {
            if let TaskSource::Checkpoint(number) = source {
                recovery.checkpoint = Some(number);
            }
            let doc = fallback.valid_doc();
            for (index, entry) in fallback.entries.into_iter().enumerate() {
                match entry.task {
                    Ok(task) => recovery.kept.push(KeptTask {
                        id: task.id,
                        source,
                    }),
                    Err(reason) => recovery.dropped.push(DroppedTask {
                        id: entry.id,
                        index,
                        source,
                        reason,
                        replaced_from: None,
                    }),
                }
            }
            doc
        }
        (None, None) => return None,
    };
    Some((doc, recovery))
}

/// Hard-links the damaged file to `<its name>.corrupt-<time>` (`tasks.json.corrupt-<time>`) so
/// that replacing it next leaves the damaged bytes where a human can find them. `None` when there
/// was no file.
fn set_aside(target: &Path, now: Timestamp) -> Result<Option<PathBuf>, StoreError> {
    if !target.exists() {
        return Ok(None);
    }
    let name = target
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    let stamp = now.format("%Y%m%dT%H%M%SZ");
    let mut n = 0;
    loop {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!("-{n}")
        };
        let copy = target.with_file_name(format!("{name}.corrupt-{stamp}{suffix}"));
        match std::fs::hard_link(target, &copy) {
            Ok(()) => return Ok(Some(copy)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(source) => {
                return Err(StoreError::Io {
                    op: "keep the damaged file aside",
                    path: copy.display().to_string(),
                    source,
                });
            }
        }
    }
}

fn read_json<T: DeserializeOwned>(path: &Path, what: &'static str) -> Result<T, StoreError> {
    let bytes = std::fs::read(path).map_err(io_error("read", path))?;
    serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
        path: path.display().to_string(),
        detail: format!("the {what} is not readable: {e}"),
    })
}

/// Reads project.json and takes its `log_seq` marker out.
fn read_project(path: &Path) -> Result<(Project, u64), StoreError> {
    let mut project: Project = read_json(path, "project record")?;
    let seq = journal::take_marker(&mut project.extra);
    Ok((project, seq))
}

/// Serializes with 2-space indent and a trailing newline after validating against `kind`.
pub(crate) fn to_json_bytes<T: Serialize>(
    value: &T,
    kind: SchemaKind,
    path: &Path,
) -> Result<Vec<u8>, StoreError> {
    let json = serde_json::to_value(value).map_err(|e| StoreError::Invalid {
        path: path.display().to_string(),
        detail: e.to_string(),
    })?;
    schema::validate(kind, &json).map_err(|errors| StoreError::Invalid {
        path: path.display().to_string(),
        detail: errors.join("; "),
    })?;
    let mut bytes = serde_json::to_vec_pretty(&json).map_err(|e| StoreError::Invalid {
        path: path.display().to_string(),
        detail: e.to_string(),
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn append(
    layout: &ProjectLayout,
    at: Timestamp,
    events: &[ProjectEvent],
) -> Result<(), StoreError> {
    append_commit(layout, at, events, None)
}

/// Appends `events` with one write and fsync; a commit's `payload` rides on the last entry (on
/// an entry of its own when there is no event), so the entries and the commit they describe are
/// durable together or not at all.
fn append_commit(
    layout: &ProjectLayout,
    at: Timestamp,
    events: &[ProjectEvent],
    payload: Option<&Payload>,
) -> Result<(), StoreError> {
    let encode = |out: &mut Vec<u8>| {
        if let Some(payload) = payload {
            payload.encode_onto(out, &[], |_| None);
        }
    };
    append_commit_with(
        layout,
        at,
        events,
        payload.map(|payload| (&encode as _, payload.size_hint(|_| None))),
    )
}

/// [`append_commit`] of a payload that `encode` writes (see [`Payload::encode_onto`]): straight
/// into the block appended to the log, which makes room for about as many bytes as given.
fn append_commit_with(
    layout: &ProjectLayout,
    at: Timestamp,
    events: &[ProjectEvent],
    encode: Option<(progress_log::WriteValue<'_>, usize)>,
) -> Result<(), StoreError> {
    append_rendered_commit(layout, at, events, None, encode)
}

/// [`append_commit_with`], with `events` rendered already when `rendered` holds them (see
/// [`render_many_entries`]).
fn append_rendered_commit(
    layout: &ProjectLayout,
    at: Timestamp,
    events: &[ProjectEvent],
    rendered: Option<progress_log::Entries>,
    encode: Option<(progress_log::WriteValue<'_>, usize)>,
) -> Result<(), StoreError> {
    let last = encode.map(|(write, size_hint)| progress_log::Written {
        key: journal::FIELD,
        size_hint,
        write,
    });
    let path = layout.log_md();
    let entries = match rendered {
        Some(entries) if !events.is_empty() => entries,
        _ => {
            let records = events.iter().map(|e| e.to_record(at));
            let state_entry = (last.is_some() && events.is_empty())
                .then(|| LogRecord::new(at, journal::STATE_ENTRY));
            let room = last.map_or(0, |l| l.size_hint);
            progress_log::Entries::render(&path, records.chain(state_entry), room)?
        }
    };
    progress_log::append_entries_then(&path, entries, last)
}

/// Below this many events a commit renders its log entries as it appends them; from it on (an
/// import, a bulk change) they are rendered on another core while tasks.json is written.
const MANY_ENTRIES: usize = 4096;

/// `events`' entries for the log of `layout`, with `room` for the payload, when there are
/// [`MANY_ENTRIES`] of them: rendered by the caller's other thread (see `transact`).
fn render_many_entries(
    layout: &ProjectLayout,
    at: Timestamp,
    events: &[ProjectEvent],
    room: usize,
) -> Option<progress_log::Entries> {
    (events.len() >= MANY_ENTRIES)
        .then(|| {
            progress_log::Entries::render(
                &layout.log_md(),
                events.iter().map(|e| e.to_record(at)),
                room,
            )
        })
        .and_then(Result::ok)
}

/// Sets a file's modification time, which is the time this adapter reports for checkpoints
/// and research briefs: an imported one keeps the time it had in the store it came from.
fn set_modified(path: &Path, at: Option<Timestamp>) -> Result<(), StoreError> {
    let Some(at) = at else { return Ok(()) };
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(std::time::SystemTime::from(at)))
        .map_err(io_error("set the modification time of", path))
}

/// Removes every file of `dir` that `keep` accepts (a missing directory has none).
fn remove_files(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<(), StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error("list", dir)(e)),
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if keep(&name) {
            std::fs::remove_file(entry.path()).map_err(io_error("remove", &entry.path()))?;
        }
    }
    Ok(())
}

/// The research briefs of `layout`, ordered by task id.
fn read_all_research(layout: &ProjectLayout) -> Result<Vec<DumpedResearch>, StoreError> {
    let dir = layout.research_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error("list", &dir)(e)),
    };
    let mut briefs = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(task) = name
            .strip_suffix(".md")
            .and_then(|stem| TaskId::try_from(stem.to_owned()).ok())
        else {
            continue;
        };
        let path = entry.path();
        let text = std::fs::read_to_string(&path).map_err(io_error("read", &path))?;
        briefs.push(DumpedResearch {
            task,
            modified_at: modified(&path),
            text,
        });
    }
    briefs.sort_by(|a, b| a.task.cmp(&b.task));
    Ok(briefs)
}

fn modified(path: &Path) -> Option<Timestamp> {
    let time = std::fs::metadata(path).ok()?.modified().ok()?;
    Some(chrono::DateTime::<chrono::Utc>::from(time))
}

fn std_duration(d: chrono::Duration) -> Duration {
    d.to_std().unwrap_or(Duration::ZERO)
}

#[async_trait]
impl ProjectStore for FsProjectStore {
    async fn list(&self) -> Result<Vec<ProjectId>, StoreError> {
        Ok(layout::list_project_ids(&self.root)?
            .into_iter()
            .filter_map(|id| ProjectId::try_from(id).ok())
            .collect())
    }

    async fn create(
        &self,
        project: &Project,
        at: Timestamp,
        events: Vec<ProjectEvent>,
    ) -> Result<(), StoreError> {
        let layout = self.layout(&project.id)?;
        layout.create_dirs()?;
        let _guard = self.lock(&layout)?;
        // A log that holds a commit is a project whose project.json a crash or a person removed:
        // the next read rebuilds it, so a second create must not start it over.
        let last = last_commit(&layout)?;
        if layout.project_json().exists() || last.is_some() {
            return Err(StoreError::AlreadyExists {
                entity: Entity::Project,
                id: project.id.to_string(),
            });
        }
        let doc = TaskDoc::new(project.id.clone());
        let seq = Marks::default().next(0);
        let tasks = tasks_bytes(&layout, &doc, seq)?;
        let record = journal::with_marker(
            to_json_bytes(project, SchemaKind::Project, &layout.project_json())?,
            seq,
        );
        let tasks = atomic::stage(&layout.temp_dir(), &tasks)?;
        let record = atomic::stage(&layout.temp_dir(), &record)?;
        let payload = Payload {
            seq,
            base: Base::default(),
            tasks: Some(journal::whole(&doc)),
            project: Some(project.clone()),
        };
        // The commit point: from here on the log can rebuild the project.
        append_commit(&layout, at, &events, Some(&payload))?;
        (|| {
            tasks.install(&layout.tasks_json())?;
            let _ = stamp_tasks(&layout);
            // project.json last: its existence is what makes the project exist to a reader.
            record.install(&layout.project_json())?;
            let _ = stamp_file(&layout, &layout.project_json(), &project_stamp(&layout));
            Ok(())
        })()
        .map_err(StoreError::after_commit)
    }

    async fn load_project(&self, id: &ProjectId) -> Result<Project, StoreError> {
        let layout = self.existing(id)?;
        self.read_project_or_recover(&layout, false)
            .map(|(project, _)| project)
    }

    async fn load(&self, id: &ProjectId) -> Result<Loaded, StoreError> {
        self.load_state(&self.existing(id)?, false)
            .map(|(loaded, ..)| loaded)
    }

    async fn transact(
        &self,
        id: &ProjectId,
        at: Timestamp,
        mutation: Mutation<'_>,
    ) -> Result<Committed, Error> {
        let layout = self.existing(id)?;
        let _guard = self.lock(&layout)?;
        let (Loaded { state, recovered }, marks, last, as_read) = self.load_state(&layout, true)?;
        // The list as read is the one the log arrives at only when it is the very file cairn
        // wrote at its last commit: the lines of a stamped file (see `load_state`). Otherwise —
        // another tool's edit, which may have kept `log_seq`; a file rolled forward or recovered —
        // the commit logs the whole list, so a replay from an older checkpoint keeps that edit
        // too instead of only this change on top of what the log knew.
        let from_the_log = as_read.lines.is_some();
        let project_is_cairns = is_stamped(&layout.project_json(), &project_stamp(&layout));
        // After another tool's edit to either file — a `git merge` among them — the commit starts
        // its list anew: the tasks are rewritten and logged as a base even when this change
        // leaves them as they were (see `next_commit`).
        let anew = !from_the_log || !project_is_cairns;
        if anew {
            // The file read is about to be kept as a checkpoint (`keep_as_read`): not for a
            // commit the log refuses.
            refuse_unmerged_log(&layout)?;
        }
        let seq = next_commit(&layout, marks, last, anew)?;
        // No copy of the list is kept to compare with: its encoding is (the read cache's, or made
        // now for a list read from JSON), and the tasks a change touched are the ones whose
        // encoding differs after it. A copy of 10,000 tasks was a fifth of `task complete`.
        let project_before = state.project.clone();
        let top_before = state.tasks.without_tasks();
        let before = match as_read.encoded {
            Some(encoded) => encoded,
            None => encode(&state.tasks, 0, &layout)?,
        };
        let read = state.tasks.tasks.read();
        let mut next = state;
        let changes = mutation(&mut next)?;

        let tasks_path = layout.tasks_json();
        let project_path = layout.project_json();
        // The list knows which tasks the mutation was handed: only those are encoded again and
        // compared, the rest copied. A list it reshaped or replaced is encoded and compared whole.
        let touched = read.and_then(|read| next.tasks.tasks.touched_since(read));
        let remade = touched.and_then(|touched| before.remade(&next.tasks, seq, &touched));
        // Compared once: the lines, the log's diff and the tasks' validation all skip these. The
        // list after the change is encoded whole now, or spliced from the list as read and the
        // touched tasks while the disk takes the new tasks.json (below).
        let (whole, remade, unchanged) = match remade {
            Some((remade, unchanged)) => (None, Some(remade), unchanged),
            None => {
                let encoded = encode(&next.tasks, seq, &layout)?;
                let unchanged = encoded.unchanged_since(&before);
                (Some(encoded), None, unchanged)
            }
        };
        let tasks_changed = anew
            || next.tasks.tasks.len() != before.len()
            || unchanged.contains(&false)
            || next.tasks.without_tasks() != top_before;
        let temp_dir = layout.temp_dir();
        let velocity_path = layout.velocity_json();
        // A completion's velocity is made under this same lock, from the saved one's window, and
        // its file staged, to replace the old one after the state files: on another thread while
        // this one renders the new tasks.json, and done before that file is written — a file
        // fsynced beside tasks.json waits for all of it, and a crash meets the stagings in one
        // order. Whatever stops that (no window saved, a damaged file, a failed stage) leaves the
        // refresh to the service, after the commit, as a second step.
        let beside = || {
            let new = changes.velocity.as_ref()?;
            let previous: Velocity = read_json(&velocity_path, "velocity file").ok()?;
            let velocity = policy::velocity_after(&previous, new, &next.tasks, at)?;
            let bytes = to_json_bytes(&velocity, SchemaKind::Velocity, &velocity_path).ok()?;
            Some((velocity, atomic::stage(&temp_dir, &bytes).ok()?))
        };
        let render = || {
            let tasks = tasks_changed
                .then(|| {
                    changed_tasks(
                        &layout,
                        &next.tasks,
                        seq,
                        &unchanged,
                        as_read.lines.as_ref(),
                    )
                })
                .transpose()?;
            // A project.json cairn did not write (see `project_stamp`) is written back whole with
            // the first change after it.
            let project = (next.project != project_before || (!project_is_cairns && tasks_changed))
                .then(|| to_json_bytes(&next.project, SchemaKind::Project, &project_path))
                .transpose()?;
            Ok::<_, StoreError>((tasks, project))
        };
        let (validated, written, velocity, entries) = std::thread::scope(|scope| {
            let beside_thread = changes
                .velocity
                .is_some()
                .then(|| std::thread::Builder::new().spawn_scoped(scope, beside).ok())
                .flatten();
            let validated = render();
            let velocity = match beside_thread {
                Some(thread) => thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                None => beside(),
            };
            // The log's entries of a change that makes many (an import's 200,000) are rendered
            // on the other core while this one writes tasks.json, with room for a payload that
            // puts every task: an entry that fails to render is rendered again, and its error
            // reported, as the commit appends.
            let entries = match &validated {
                Ok((Some(rendered), _)) if changes.events.len() >= MANY_ENTRIES => {
                    let room: usize = rendered.parts().iter().map(|part| part.len()).sum();
                    let room = room + room / 8 + 4096;
                    let (layout, events) = (&layout, &changes.events);
                    std::thread::Builder::new()
                        .spawn_scoped(scope, move || render_many_entries(layout, at, events, room))
                        .ok()
                }
                _ => None,
            };
            // Written, not yet fsynced, into the tasks.json the last write replaced (see
            // `Staged::install_retiring`) when nobody can see it change, else into a fresh file
            // while the old one is freed. Only a write does either: a refused change touches no
            // file.
            let written = match &validated {
                Ok((Some(rendered), _)) => Some(atomic::write_parts_over_retired(
                    &temp_dir,
                    &rendered.parts(),
                    &tasks_path,
                )),
                _ => None,
            };
            let entries = entries.and_then(|thread| {
                thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            (validated, written, velocity, entries)
        });
        let (tasks_bytes, project_bytes) = match validated {
            Ok(bytes) => bytes,
            Err(error) => {
                let message = format!("write refused, nothing changed: {error}");
                append(
                    &layout,
                    at,
                    &[ProjectEvent::Error {
                        task: None,
                        message,
                    }],
                )?;
                return Err(error.into());
            }
        };
        // Staged before the commit: a full disk fails here, with nothing committed.
        let written = written.transpose()?;
        let project_bytes = project_bytes.map(|bytes| journal::with_marker(bytes, seq));
        let splice = || remade.as_ref().and_then(|remade| remade.splice(&before));
        // The change the log records, found from the list after it in the cache's encoding;
        // `None` if there is none or it does not decode.
        let diff = |encoded: Option<&task_cache::Encoded>| {
            encoded.and_then(|encoded| {
                journal::diff_encoded(&top_before, &before, &next.tasks, encoded, &unchanged)
            })
        };
        // What the thread that runs while tasks.json is fsynced found: the log's diff.
        let made_meanwhile = std::sync::Mutex::new(None);
        // The next reader of this list — usually soon: `task next` after `complete` — finds it
        // in the read cache, written while the disk takes the new tasks.json.
        let meanwhile = |meta: &std::fs::Metadata| {
            let spliced = splice();
            let encoded = whole.as_ref().or(spliced.as_ref());
            if let Some(encoded) = encoded {
                task_cache::write(&task_cache::path(layout.dir()), &identity(meta), encoded);
            }
            *made_meanwhile
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(diff(encoded));
        };
        let staged_tasks = written
            .map(|written| written.sync_while(Some(&meanwhile)))
            .transpose()?;
        let made_meanwhile = made_meanwhile
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        // It did not run when no tasks.json was staged or its metadata could not be read: the
        // diff is found here instead.
        let diffed = made_meanwhile.unwrap_or_else(|| {
            let spliced = tasks_bytes.as_ref().and_then(|_| splice());
            diff(whole.as_ref().or(spliced.as_ref()))
        });
        let tasks_change = match tasks_bytes {
            Some(_) => diffed
                .ok_or_else(|| StoreError::Invalid {
                    path: tasks_path.display().to_string(),
                    detail: "the task list as read does not decode from its own encoding".into(),
                })?
                // Nothing changed in the tasks, and the commit is a base all the same.
                .or_else(|| anew.then(journal::TasksChange::default)),
            None => None,
        };
        // A change to a list the log does not arrive at (another tool's edit, a `git pull`) is
        // logged from that tool's file, kept as a checkpoint; failing that, as the whole list.
        let mut kept = None;
        let tasks_change = match tasks_change {
            Some(change) if anew => {
                let from_file = match (&change.start, &as_read.file) {
                    (journal::Start::Previous, Some(read)) => keep_as_read(&layout, read),
                    _ => None,
                };
                Some(match from_file {
                    Some(named) => {
                        kept = Some(named.checkpoint);
                        journal::TasksChange {
                            start: journal::Start::Checkpoint(named),
                            ..change
                        }
                    }
                    None => journal::whole_at(&next.tasks),
                })
            }
            change => change,
        };
        let events = match kept {
            None => Cow::Borrowed(&changes.events[..]),
            Some(number) => {
                let kept = ProjectEvent::CheckpointWritten {
                    number: u32::try_from(number).unwrap_or(u32::MAX),
                    tasks: before.len(),
                };
                Cow::Owned([&[kept][..], &changes.events].concat())
            }
        };
        let staged_project = project_bytes
            .as_deref()
            .map(|bytes| atomic::stage(&temp_dir, bytes))
            .transpose()?;
        let payload = (tasks_bytes.is_some() || project_bytes.is_some()).then(|| Payload {
            seq,
            base: marks.base(),
            tasks: tasks_change,
            project: project_bytes.is_some().then(|| next.project.clone()),
        });
        // The tasks it puts are logged as tasks.json was just rendered with them.
        let encode = |out: &mut Vec<u8>| {
            if let Some(payload) = &payload {
                payload.encode_onto(out, &next.tasks.tasks, |i| {
                    tasks_bytes.as_ref().and_then(|r| r.fresh_line(i))
                });
            }
        };
        // Write ahead: the entry, with what it takes to replay the change, is durable before any
        // state file is replaced. This append is the commit point.
        // The log's block is made with room for it (see `Payload::size_hint`).
        let size_hint = payload.as_ref().map_or(0, |payload| {
            payload.size_hint(|i| tasks_bytes.as_ref().and_then(|r| r.fresh_line(i)))
        });
        // Rendered for the change's own events: not when a kept checkpoint's entry comes first.
        let entries = entries.filter(|_| kept.is_none());
        append_rendered_commit(
            &layout,
            at,
            &events,
            entries,
            payload.is_some().then_some((&encode, size_hint)),
        )?;
        failpoint("project:after-log-append");
        // The change is committed from here on: a failure must say that it is saved, so nobody
        // repeats it (an add repeated is a duplicate task); the next reader applies what a crash
        // left unapplied.
        let (checkpoint, velocity) = (|| {
            if let Some(staged) = staged_tasks {
                staged.install_retiring(&tasks_path, &temp_dir)?;
                let _ = stamp_tasks(&layout);
            }
            if let Some(staged) = staged_project {
                staged.install(&project_path)?;
                let _ = stamp_file(&layout, &project_path, &project_stamp(&layout));
            }
            let velocity = match velocity {
                Some((velocity, staged)) => {
                    staged.install(&velocity_path)?;
                    Some(velocity)
                }
                None => None,
            };
            if kept.is_some() {
                // The write is done; an old checkpoint left behind is the next prune's.
                let _ = checkpoints::prune(&layout.checkpoints_dir(), CHECKPOINT_RETENTION);
            }
            failpoint("project:after-state-write");
            if !changes.checkpoint {
                return Ok((None, velocity));
            }
            let bytes = match tasks_bytes {
                Some(rendered) => rendered.into_bytes(),
                // The list is the one read.
                None => validated_as_read(&next.tasks, marks.tasks, &tasks_path)?,
            };
            let written = checkpoints::create_next(&temp_dir, &layout.checkpoints_dir(), &bytes)?;
            // Copied from the list this commit validated, as `checkpoint write` copies its own:
            // a rebuild from it, or a full check, need not validate it again.
            Verdicts::remember(&layout, &bytes);
            checkpoints::prune(&layout.checkpoints_dir(), CHECKPOINT_RETENTION)?;
            let number = u32::try_from(written.number).unwrap_or(u32::MAX);
            append(
                &layout,
                at,
                &[ProjectEvent::CheckpointWritten {
                    number,
                    tasks: next.tasks.tasks.len(),
                }],
            )?;
            Ok::<_, StoreError>((Some(number), velocity))
        })()
        .map_err(StoreError::after_commit)?;
        Ok(Committed {
            state: next,
            checkpoint,
            recovered,
            velocity,
        })
    }

    async fn append_log(
        &self,
        id: &ProjectId,
        at: Timestamp,
        events: Vec<ProjectEvent>,
    ) -> Result<(), StoreError> {
        let layout = self.existing(id)?;
        // The lock keeps entries of concurrent writers whole and in commit order.
        let _guard = self.lock(&layout)?;
        append(&layout, at, &events)
    }

    async fn read_log(&self, id: &ProjectId, tail: Option<usize>) -> Result<LogRead, StoreError> {
        let path = self.existing(id)?.log_md();
        // The replay payloads are the store's bookkeeping, not events: callers see the entries
        // as the events made them. Not even copied: one can be the whole task list.
        let fields = Fields::Without(journal::FIELD);
        let read = match tail {
            None => progress_log::read_all_fields(&path, fields)?,
            Some(wanted) => match tail_records(&path, wanted)? {
                Some(records) => progress_log::LogRead {
                    records,
                    ..Default::default()
                },
                None => {
                    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                    let mut window = (wanted as u64)
                        .saturating_mul(TAIL_BYTES_PER_RECORD)
                        .max(4096);
                    loop {
                        // A window past half the log reads all of it: one read, not a last one of
                        // nearly the same bytes again.
                        if window.saturating_mul(2) > size {
                            window = size;
                        }
                        let read = progress_log::read_tail_fields(&path, window, fields)?;
                        if read.records.len() >= wanted || window >= size {
                            break read;
                        }
                        window = window.saturating_mul(4);
                    }
                }
            },
        };
        let mut records: Vec<LogRecord> = read
            .records
            .into_iter()
            .filter(|r| r.kind != journal::STATE_ENTRY)
            .collect();
        if let Some(n) = tail {
            records.drain(..records.len().saturating_sub(n));
        }
        Ok(LogRead {
            records,
            torn_tail: read.torn_tail,
        })
    }

    async fn research_modified(
        &self,
        id: &ProjectId,
        task: &TaskId,
    ) -> Result<Option<Timestamp>, StoreError> {
        let (_, path) = self.research_path(id, task)?;
        Ok(modified(&path))
    }

    async fn read_research(
        &self,
        id: &ProjectId,
        task: &TaskId,
    ) -> Result<Option<String>, StoreError> {
        let (_, path) = self.research_path(id, task)?;
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::Io {
                op: "read research brief",
                path: path.display().to_string(),
                source,
            }),
        }
    }

    async fn write_research(
        &self,
        id: &ProjectId,
        task: &TaskId,
        text: &str,
        _at: Timestamp,
    ) -> Result<(), StoreError> {
        let (layout, path) = self.research_path(id, task)?;
        atomic::write_atomic(&layout.temp_dir(), &path, text.as_bytes())
    }

    async fn list_checkpoints(&self, id: &ProjectId) -> Result<Vec<CheckpointInfo>, StoreError> {
        let layout = self.existing(id)?;
        Ok(checkpoints::list(&layout.checkpoints_dir())?
            .into_iter()
            .map(|c| CheckpointInfo {
                number: u32::try_from(c.number).unwrap_or(u32::MAX),
                written_at: modified(&c.path),
                size_bytes: std::fs::metadata(&c.path).map(|m| m.len()).unwrap_or(0),
            })
            .collect())
    }

    async fn keep_checkpoint(
        &self,
        id: &ProjectId,
        at: Timestamp,
    ) -> Result<(CheckpointInfo, bool), StoreError> {
        let layout = self.existing(id)?;
        let _guard = self.lock(&layout)?;
        refuse_unmerged_log(&layout)?;
        // Compared as read: another tool's file, or one not counted, goes on to a new checkpoint.
        let stamped = stamped_tasks_bytes(&layout);
        if let Some(bytes) = &stamped
            && let Some(newest) = newest_checkpoint_holding(&layout, bytes)?
        {
            return Ok((newest, false));
        }
        let (bytes, task_count) = checkpoint_bytes(&layout, self, stamped)?;
        Ok((write_checkpoint_of(&layout, at, &bytes, task_count)?, true))
    }

    async fn write_checkpoint(
        &self,
        id: &ProjectId,
        at: Timestamp,
    ) -> Result<CheckpointInfo, StoreError> {
        let layout = self.existing(id)?;
        let _guard = self.lock(&layout)?;
        // Its entry would be refused after the checkpoint was made (and older ones pruned).
        refuse_unmerged_log(&layout)?;
        let (bytes, task_count) = checkpoint_bytes(&layout, self, stamped_tasks_bytes(&layout))?;
        write_checkpoint_of(&layout, at, &bytes, task_count)
    }

    async fn restore_checkpoint(
        &self,
        id: &ProjectId,
        number: u32,
        at: Timestamp,
    ) -> Result<Committed, StoreError> {
        let layout = self.existing(id)?;
        let _guard = self.lock(&layout)?;
        // The list replaced is saved as a checkpoint before the commit: not for one refused.
        refuse_unmerged_log(&layout)?;
        // What a restore makes and drops (the checkpoint's JSON trees, task by task) is reused.
        let _recycling = cairn_heap::recycling();
        let bytes = checkpoints::read(&layout.checkpoints_dir(), u64::from(number))?;
        // A checkpoint valid as a whole is read task by task on every core — its tasks not
        // validated again when these very bytes passed before (see `verdicts`: `checkpoint
        // write` and `doctor --full` say so); one with damage is salvaged, its valid tasks kept.
        // Either way every task kept passed its schema.
        let keep = if Verdicts::read(&layout).passed_before(&bytes) {
            Keep::PassedTasks
        } else {
            Keep::Tasks
        };
        let read = read_one_by_one(&bytes, &Known::default(), keep).map(|(doc, _)| doc);
        // A checkpoint valid throughout is the restored list exactly: the log can name it. Not
        // needed when the list replaced is cairn's own (stamped): the log takes the difference.
        let replaces_cairns = is_stamped(&layout.tasks_json(), &stamp(&layout));
        let named = (read.is_some() && !replaces_cairns)
            .then(|| journal::CheckpointRef::of(u64::from(number), &bytes));
        let doc = match read {
            Some(mut doc) => {
                journal::take_marker(&mut doc.extra);
                doc
            }
            None => Salvaged::parse(&bytes)
                .filter(Salvaged::has_valid_task)
                .map(|salvaged| salvaged.valid_doc())
                .ok_or_else(|| StoreError::Corrupt {
                    path: layout
                        .checkpoints_dir()
                        .join(checkpoints::file_name(u64::from(number)))
                        .display()
                        .to_string(),
                    detail: "the checkpoint holds no valid task".into(),
                })?,
        };
        drop(bytes);
        let (project, project_seq) = self.read_project_or_recover(&layout, true)?;
        let mut events = Vec::new();
        // Save what is being replaced, so the restore can be undone; a damaged file is set aside.
        let read = read_settled(&layout.tasks_json(), || read_task_doc(&layout, false));
        let (tasks_seq, replaced) = match read {
            Ok((current, seq, .., identity)) => {
                let linked = link_stamped_tasks(&layout)?;
                // Only the very file cairn wrote is what the log arrives at: one another tool
                // edited (keeping its `log_seq`) is not, and is logged whole below.
                let stamped = linked.is_some();
                // Another tool's file is kept by a second name too, when it is still the one
                // read; else saved as it read: validated.
                let kept = match (&linked, &identity) {
                    (None, Some(identity)) => keep_as_read(&layout, identity),
                    _ => None,
                };
                let saved = match (linked, kept) {
                    (Some(saved), _) => saved.number,
                    (None, Some(kept)) => kept.checkpoint,
                    (None, None) => {
                        let current_bytes = validated_as_read(&current, seq, &layout.tasks_json())?;
                        checkpoints::create_next(
                            &layout.temp_dir(),
                            &layout.checkpoints_dir(),
                            &current_bytes,
                        )?
                        .number
                    }
                };
                let saved = u32::try_from(saved).unwrap_or(u32::MAX);
                events.push(ProjectEvent::CheckpointWritten {
                    number: saved,
                    tasks: current.tasks.len(),
                });
                (seq, stamped.then_some(current))
            }
            Err(damage) => {
                // A merge to finish is not damage to set aside: the restore waits for it.
                let target = layout.tasks_json();
                unmerged(&target, std::fs::read(&target).ok().as_deref())?;
                let copy = set_aside(&target, at)?;
                let copy = copy.map_or_else(
                    || "(tasks.json was missing)".to_owned(),
                    |p| p.display().to_string(),
                );
                events.push(ProjectEvent::Error {
                    task: None,
                    message: format!(
                        "tasks.json was damaged ({damage}) before the restore; damaged copy: {copy}"
                    ),
                });
                (0, None)
            }
        };
        let marks = Marks {
            tasks: tasks_seq,
            project: project_seq,
        };
        let last = last_commit(&layout)?.map_or(0, |c| c.commit.head.seq);
        // The restore is logged as what differs from the list replaced only when both files are
        // the ones cairn wrote at the last commit; otherwise it is a base, as a commit after
        // another tool's edit is (see `transact`).
        let project_is_cairns = is_stamped(&layout.project_json(), &project_stamp(&layout));
        let differs = replaced.is_some() && tasks_seq == last && last > 0 && project_is_cairns;
        let seq = next_commit(&layout, marks, last, !differs)?;
        // Every task passed its schema as the checkpoint was read: only the top level is
        // validated again (see `changed_tasks`), not a tree of the whole list.
        let unchanged = vec![true; doc.tasks.len()];
        let restored = changed_tasks(&layout, &doc, seq, &unchanged, None)?;
        events.push(ProjectEvent::CheckpointRestored {
            number,
            tasks: doc.tasks.len(),
        });
        // The log says how to arrive at the restored list: from the list replaced, when that is
        // the list the log arrives at (the file cairn wrote at the last commit), what differs —
        // usually a handful of tasks, where the whole list of 100,000 was 48 MB more to write;
        // otherwise the checkpoint restored, named (see `journal::Start::Checkpoint`), unless the
        // prune below removes it; otherwise the whole list, as the new tasks.json renders it.
        let kept_after_prune = || {
            checkpoints::list(&layout.checkpoints_dir()).is_ok_and(|all| {
                let newest = all.iter().rev().take(CHECKPOINT_RETENTION);
                newest.map(|c| c.number).any(|n| n == u64::from(number))
            })
        };
        let change = match (replaced, named) {
            (Some(current), _) if differs => journal::diff(&current, &doc, &[]).unwrap_or_default(),
            (_, Some(named)) if kept_after_prune() && made_durable(&layout, number) => {
                journal::TasksChange {
                    start: journal::Start::Checkpoint(named),
                    ..journal::TasksChange::default()
                }
            }
            _ => journal::whole_at(&doc),
        };
        let payload = Payload {
            seq,
            base: marks.base(),
            tasks: Some(change),
            project: None,
        };
        let staged = atomic::stage_parts(&layout.temp_dir(), &restored.parts())?;
        let encode =
            |out: &mut Vec<u8>| payload.encode_onto(out, &doc.tasks, |i| restored.fresh_line(i));
        let size_hint = payload.size_hint(|i| restored.fresh_line(i));
        append_commit_with(&layout, at, &events, Some((&encode, size_hint)))?;
        drop(restored);
        // The restore is saved from here on: what follows failing must not invite a repeat.
        (|| {
            staged.install(&layout.tasks_json())?;
            let _ = stamp_tasks(&layout);
            // Prune only after the new content is in place, so the restored number is never
            // removed before it was read.
            checkpoints::prune(&layout.checkpoints_dir(), CHECKPOINT_RETENTION)
        })()
        .map_err(StoreError::after_commit)?;
        Ok(Committed {
            state: ProjectState {
                project,
                tasks: doc,
            },
            checkpoint: None,
            recovered: None,
            velocity: None,
        })
    }

    async fn read_velocity(&self, id: &ProjectId) -> Result<Option<Velocity>, StoreError> {
        let path = self.existing(id)?.velocity_json();
        if !path.exists() {
            return Ok(None);
        }
        read_json(&path, "velocity file").map(Some)
    }

    async fn write_velocity(&self, id: &ProjectId, velocity: &Velocity) -> Result<(), StoreError> {
        let layout = self.existing(id)?;
        // Every state file changes only under the project lock (SPEC §2), so a writer holding it
        // (a restore, a recovery, `doctor --fix`) sees no file change beneath it.
        let _guard = self.lock(&layout)?;
        let bytes = to_json_bytes(velocity, SchemaKind::Velocity, &layout.velocity_json())?;
        atomic::write_atomic(&layout.temp_dir(), &layout.velocity_json(), &bytes)
    }

    async fn update_velocity(
        &self,
        id: &ProjectId,
        update: &(dyn Fn(Option<Velocity>) -> Option<Velocity> + Send + Sync),
    ) -> Result<Option<Velocity>, StoreError> {
        let layout = self.existing(id)?;
        let path = layout.velocity_json();
        let _guard = self.lock(&layout)?;
        // A damaged file is replaced by what the update makes of nothing, like a missing one.
        let current = path
            .exists()
            .then(|| read_json(&path, "velocity file").ok())
            .flatten();
        let Some(next) = update(current) else {
            return Ok(None);
        };
        let bytes = to_json_bytes(&next, SchemaKind::Velocity, &path)?;
        atomic::write_atomic(&layout.temp_dir(), &path, &bytes)?;
        Ok(Some(next))
    }

    async fn clean_debris(
        &self,
        id: &ProjectId,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        let layout = self.existing(id)?;
        let now = std::time::SystemTime::from(now);
        let removed = atomic::remove_debris(&layout.temp_dir(), now, std_duration(DEBRIS_MAX_AGE))?;
        Ok(removed
            .into_iter()
            .map(|p| p.display().to_string())
            .collect())
    }

    async fn export_project(&self, id: &ProjectId) -> Result<ProjectDump, StoreError> {
        let layout = self.existing(id)?;
        let _guard = self.lock(&layout)?;
        let (Loaded { state, .. }, ..) = self.load_state(&layout, true)?;
        let log = self.read_log(id, None).await?.records;
        let mut dumped = Vec::new();
        for checkpoint in checkpoints::list(&layout.checkpoints_dir())? {
            let bytes =
                std::fs::read(&checkpoint.path).map_err(io_error("read", &checkpoint.path))?;
            let mut tasks: TaskDoc =
                serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
                    path: checkpoint.path.display().to_string(),
                    detail: format!("the checkpoint is not readable: {e}"),
                })?;
            // The marker numbers a commit of this log; in another store it would mean nothing.
            journal::take_marker(&mut tasks.extra);
            dumped.push(DumpedCheckpoint {
                number: u32::try_from(checkpoint.number).unwrap_or(u32::MAX),
                written_at: modified(&checkpoint.path),
                tasks,
            });
        }
        Ok(ProjectDump {
            state,
            log,
            checkpoints: dumped,
            research: read_all_research(&layout)?,
            velocity: self.read_velocity(id).await?,
        })
    }

    async fn import_project(&self, dump: &ProjectDump, replace: bool) -> Result<(), StoreError> {
        let ProjectState { project, tasks } = &dump.state;
        let layout = self.layout(&project.id)?;
        layout.create_dirs()?;
        let _guard = self.lock(&layout)?;
        if !replace && (layout.project_json().exists() || last_commit(&layout)?.is_some()) {
            return Err(StoreError::AlreadyExists {
                entity: Entity::Project,
                id: project.id.to_string(),
            });
        }
        // Everything is rendered and validated before the first file changes. The imported
        // state is one commit of a fresh log: its payload resets to the whole state, so the
        // log alone can rebuild it, like a new project's.
        let seq = 1;
        let task_bytes = tasks_bytes(&layout, tasks, seq)?;
        let record = journal::with_marker(
            to_json_bytes(project, SchemaKind::Project, &layout.project_json())?,
            seq,
        );
        let velocity = dump
            .velocity
            .as_ref()
            .map(|v| to_json_bytes(v, SchemaKind::Velocity, &layout.velocity_json()))
            .transpose()?;
        let dir = layout.checkpoints_dir();
        let snapshots = dump
            .checkpoints
            .iter()
            .map(|c| {
                let path = dir.join(checkpoints::file_name(u64::from(c.number)));
                validated_tasks(&c.tasks, SchemaKind::Checkpoint, &path, None)
                    .map(|bytes| (path, bytes, c.written_at))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let briefs = dump
            .research
            .iter()
            .map(|r| {
                layout
                    .research_file(r.task.as_str())
                    .map(|path| (path, r))
                    .map_err(|e| StoreError::Invalid {
                        path: layout.research_dir().display().to_string(),
                        detail: e.to_string(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let at = dump.log.last().map_or(project.updated_at, |r| r.at);
        let mut log = String::new();
        let mut records = dump.log.clone();
        records.push(LogRecord::new(at, journal::STATE_ENTRY));
        if let Some(last) = records.last_mut() {
            let payload = Payload {
                seq,
                base: Base::default(),
                tasks: Some(journal::whole(tasks)),
                project: Some(project.clone()),
            };
            last.fields
                .push((journal::FIELD.to_owned(), payload.encode()));
        }
        for record in &records {
            log.push_str(
                &progress_log::render(record).map_err(|e| StoreError::Invalid {
                    path: layout.log_md().display().to_string(),
                    detail: e.to_string(),
                })?,
            );
        }
        let temp = layout.temp_dir();
        atomic::write_atomic(&temp, &layout.log_md(), log.as_bytes())?;
        remove_files(&dir, |name| checkpoints::parse_file_name(name).is_some())?;
        for (path, bytes, written_at) in &snapshots {
            atomic::write_atomic(&temp, path, bytes)?;
            set_modified(path, *written_at)?;
        }
        remove_files(&layout.research_dir(), |name| name.ends_with(".md"))?;
        for (path, brief) in &briefs {
            atomic::write_atomic(&temp, path, brief.text.as_bytes())?;
            set_modified(path, brief.modified_at)?;
        }
        match &velocity {
            Some(bytes) => atomic::write_atomic(&temp, &layout.velocity_json(), bytes)?,
            None => remove_files(&layout.progress_dir(), |name| name == "velocity.json")?,
        }
        put_tasks(&layout, &[&task_bytes])?;
        // project.json last: its existence is what makes the project exist to a reader.
        atomic::write_atomic(&temp, &layout.project_json(), &record)
    }

    async fn health(
        &self,
        id: &ProjectId,
        now: Timestamp,
        scrutiny: Scrutiny,
    ) -> Result<StoreHealth, StoreError> {
        let layout = self.existing(id)?;
        let full = scrutiny == Scrutiny::Full;
        let mut health = StoreHealth::default();
        let mut damaged = |path: PathBuf, problem: Option<String>| {
            if let Some(problem) = problem {
                health.damaged.push((path.display().to_string(), problem));
            }
        };
        let validate = |path: &Path, kind: SchemaKind, required: bool| match std::fs::read(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => None,
            Err(e) => Some(format!("cannot read it: {e}")),
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Err(e) => Some(format!("not valid JSON: {e}")),
                Ok(value) => schema::validate(kind, &value)
                    .err()
                    .map(|errors| format!("fails its schema: {}", summarize(&errors))),
            },
        };
        let project_json = layout.project_json();
        damaged(
            project_json.clone(),
            validate(&project_json, SchemaKind::Project, true),
        );
        let tasks_json = layout.tasks_json();
        // Usually tasks.json is checked as every read checks it: in full unless it is the very
        // file cairn validated and wrote, or one a read already validated in full.
        // A checkpoint is a copy of tasks.json, checked the way a read checks one. Under `--full`
        // a tasks document whose bytes passed a full validation before is not validated again
        // (see `verdicts`).
        let mut verdicts = full.then(|| Verdicts::read(&layout));
        // The read cache's list, read for the first document to validate: tasks.json after a
        // write, and the checkpoints, are mostly its tasks (see `verdict`).
        let cached = std::cell::OnceCell::new();
        let mut passed = PassedTexts::default();
        let mut judged = |verdicts: &mut Verdicts, path: &Path| {
            verdicts.judge_file(path, |bytes| {
                let cached =
                    cached.get_or_init(|| task_cache::read_any(&task_cache::path(layout.dir())));
                verdict(bytes, cached.as_ref(), &mut passed)
            })
        };
        let tasks_problem = if let Some(verdicts) = verdicts.as_mut() {
            judged(verdicts, &tasks_json)
        } else {
            // A stamped file is not even decoded here: the doctor's load after this reads it.
            match open_tasks(&layout) {
                Ok((_, _, true)) => None,
                _ => read_task_doc(&layout, false).err(),
            }
        };
        damaged(tasks_json, tasks_problem);
        let velocity_json = layout.velocity_json();
        damaged(
            velocity_json.clone(),
            validate(&velocity_json, SchemaKind::Velocity, false),
        );
        for c in checkpoints::list(&layout.checkpoints_dir())? {
            let problem = match verdicts.as_mut() {
                Some(verdicts) => judged(verdicts, &c.path),
                None => checkpoint_cut_short(&c.path),
            };
            damaged(c.path, problem);
        }
        if let Some(verdicts) = verdicts {
            verdicts.save();
        }
        let cutoff = now - DEBRIS_MAX_AGE;
        if let Ok(entries) = std::fs::read_dir(layout.temp_dir()) {
            for entry in entries.flatten() {
                let path = entry.path();
                let is_temp = atomic::is_staged_write(&entry.file_name().to_string_lossy());
                if is_temp && modified(&path).is_some_and(|m| m < cutoff) {
                    health.debris.push(path.display().to_string());
                }
            }
        }
        let anywhere = if full {
            // Mapped where the kernel allows, and searched from the end for the payloads' opening
            // lines: at 100,000 tasks, reading and parsing every entry was 50–150 ms of the check.
            let log = mapped_log(&layout)?;
            let anywhere = log.as_deref().and_then(progress_log::unmerged_anywhere);
            health
                .damaged
                .extend(log.and_then(|log| missing_base(&layout, &log)));
            anywhere
        } else {
            None
        };
        health.torn_log = log_is_torn(&layout.log_md())?;
        let log = layout.log_md().display().to_string();
        health.unmerged_log = progress_log::unmerged_end(&layout.log_md())?;
        if let Some(line) = health.unmerged_log {
            health.damaged.push((
                log,
                format!(
                    "holds an unresolved git merge (conflict markers from line {line}); nothing is appended to it until the merge is finished: `cairn setup git`, then `git checkout -m FILE` merges it entry by entry"
                ),
            ));
        } else if let Some(line) = anywhere {
            // Further back than an append looks: a conflict committed as it was and appended to
            // since. `git checkout -m` of a file git no longer holds unmerged puts back the file
            // as git holds it, without every entry appended since it was last added.
            health.damaged.push((
                log,
                format!(
                    "holds git conflict markers from line {line}, further back than an append looks: a merge committed unresolved, appended to since; take the marker lines out by hand, keeping both sides' entries (not `git checkout -m FILE`, which would put back the file as git holds it, without the entries appended since)"
                ),
            ));
        }
        Ok(health)
    }
}

/// tasks.json's bytes when it is the very file cairn validated and wrote (its stamp says so).
fn stamped_tasks_bytes(layout: &ProjectLayout) -> Option<Vec<u8>> {
    read_tasks_bytes(layout)
        .ok()
        .and_then(|(bytes, stamped)| stamped.then_some(bytes))
}

/// What a checkpoint now would hold, and its task count: a file cairn validated and wrote (its
/// `stamped` bytes, read already) is a copy of its bytes — no parse, no re-serialization (a
/// PreCompact hook on a large store pays only the copy); anything else goes through the full
/// read, with recovery, and is validated before it is kept. Under the project's lock.
fn checkpoint_bytes(
    layout: &ProjectLayout,
    store: &FsProjectStore,
    stamped: Option<Vec<u8>>,
) -> Result<(Vec<u8>, usize), StoreError> {
    match stamped.and_then(|bytes| count_tasks(&bytes).map(|n| (bytes, n))) {
        Some(found) => Ok(found),
        None => {
            let (tasks, seq, ..) = store.read_tasks(layout, true)?;
            let bytes = validated_as_read(&tasks, seq, &layout.tasks_json())?;
            Ok((bytes, tasks.tasks.len()))
        }
    }
}

/// The newest checkpoint, when it holds exactly `bytes`. The sizes first: a list that changed
/// usually changed its length, and then the checkpoint is not read.
fn newest_checkpoint_holding(
    layout: &ProjectLayout,
    bytes: &[u8],
) -> Result<Option<CheckpointInfo>, StoreError> {
    let Some(newest) = checkpoints::list(&layout.checkpoints_dir())?.pop() else {
        return Ok(None);
    };
    let same_size = std::fs::metadata(&newest.path).is_ok_and(|m| m.len() == bytes.len() as u64);
    if !same_size || std::fs::read(&newest.path).ok().as_deref() != Some(bytes) {
        return Ok(None);
    }
    Ok(Some(CheckpointInfo {
        number: u32::try_from(newest.number).unwrap_or(u32::MAX),
        written_at: modified(&newest.path),
        size_bytes: bytes.len() as u64,
    }))
}

/// Writes `bytes` (holding `task_count` tasks) as the next checkpoint, prunes and logs it: the
/// rest of [`ProjectStore::write_checkpoint`], under the project's lock.
fn write_checkpoint_of(
    layout: &ProjectLayout,
    at: Timestamp,
    bytes: &[u8],
    task_count: usize,
) -> Result<CheckpointInfo, StoreError> {
    let written = checkpoints::create_next(&layout.temp_dir(), &layout.checkpoints_dir(), bytes)?;
    // The checkpoint exists from here on: a failure must not invite a second one.
    Verdicts::remember(layout, bytes);
    let number = u32::try_from(written.number).unwrap_or(u32::MAX);
    checkpoints::prune(&layout.checkpoints_dir(), CHECKPOINT_RETENTION)
        .and_then(|_| {
            append(
                layout,
                at,
                &[ProjectEvent::CheckpointWritten {
                    number,
                    tasks: task_count,
                }],
            )
        })
        .map_err(StoreError::after_commit)?;
    Ok(CheckpointInfo {
        number,
        written_at: Some(at),
        size_bytes: bytes.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(n: u64) -> TaskDoc {
        let tasks = (1..=n)
            .map(|i| {
                serde_json::from_value(serde_json::json!({
                    "id": format!("T-{i:03}"), "title": format!("task \\ \"{i}\"\nline"),
                    "level": "task", "status": "PENDING", "priority": "LOW",
                    "dependencies": [], "completion_criteria": ["a"],
                    "created_at": "2026-05-06T08:00:00Z", "actual_minutes": 12.5,
                    "x_tool": {"nested": [1, 2.0, "x"]}
                }))
                .expect("a task")
            })
            .collect();
        let mut doc = TaskDoc::new("demo".to_owned().try_into().expect("id"));
        doc.tasks = tasks;
        doc.extra
            .insert("x_top".into(), serde_json::json!({"k": [1]}));
        doc
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// The last entries read back from the log's end, payloads stepped over, are the last
        /// entries of the whole log read and parsed without its payloads: with payloads and
        /// other fields longer than a line is kept (cut, and read again whole), replay-only
        /// entries among them, and any number wanted.
        #[test]
        fn the_tail_read_back_is_the_tail_of_the_whole_log(
            entries in proptest::collection::vec(
                (0..3u8, 0..200usize, proptest::option::of(0..600usize)),
                0..25,
            ),
        ) {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("log.md");
            let at = chrono::DateTime::parse_from_rfc3339("2026-11-28T10:00:00Z")
                .expect("time")
                .with_timezone(&chrono::Utc);
            for (i, (kind, message, payload)) in entries.iter().enumerate() {
                let kind = ["TASK_COMPLETE", journal::STATE_ENTRY, "ERROR"][usize::from(*kind)];
                let mut record = LogRecord::new(at, kind);
                record.fields.push(("task".into(), format!("T-{i:03}")));
                record.fields.push(("message".into(), "m".repeat(*message)));
                if let Some(len) = payload {
                    record.fields.push((journal::FIELD.into(), "p".repeat(*len)));
                }
                progress_log::append(&path, &record).expect("append");
            }
            let all: Vec<LogRecord> =
                progress_log::read_all_fields(&path, Fields::Without(journal::FIELD))
                    .expect("read")
                    .records
                    .into_iter()
                    .filter(|r| r.kind != journal::STATE_ENTRY)
                    .collect();
            for wanted in 0..=all.len() + 1 {
                let mut tail = tail_records(&path, wanted).expect("read").expect("not torn");
                tail.drain(..tail.len().saturating_sub(wanted));
                proptest::prop_assert_eq!(&tail[..], &all[all.len().saturating_sub(wanted)..]);
            }
        }
    }

    /// A cache written from a list's encoding reads back as that list, and the encoding it keeps
    /// compares task by task with a fresh one: that is how a writer finds what a change touched.
    /// A cache overwritten in place by a shorter one reads as the shorter one.
    #[test]
    fn a_cache_reads_back_as_written_and_its_encoding_compares_task_by_task() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cache");
        let encode = |doc: &TaskDoc, seq| task_cache::Encoded::of(doc, seq).expect("encodes");
        let before = doc(3);
        task_cache::write(&path, "k1", &encode(&before, 4));
        let (read, seq, encoded) = task_cache::read(&path, "k1", true).expect("a whole cache");
        assert_eq!((read, seq), (before.clone(), 4));
        let encoded = encoded.expect("kept");
        assert_eq!(encoded.tasks().expect("decodes"), before.tasks);
        let mut after = before.clone();
        after.tasks[1].title = "changed".into();
        // Whole minutes take the decoder's short path; 12.5 (the others) the JSON one.
        after.tasks[1].actual_minutes = Some(4.into());
        after.tasks.push(doc(4).tasks[3].clone());
        after.tasks[3].actual_minutes = Some(0.into());
        let fresh = encode(&after, 5);
        assert_eq!(fresh.unchanged_since(&encoded), [true, false, true, false]);
        assert!((0..3).all(|i| encoded.id(i).is_some() && encoded.id(i) == fresh.id(i)));
        assert_eq!(fresh.id(3), Some(&b"T-004"[..]));
        task_cache::write(&path, "k2", &fresh);
        let (read, ..) = task_cache::read(&path, "k2", false).expect("a whole cache");
        assert_eq!(read, after);
        assert!(
            task_cache::read(&path, "k1", false).is_none(),
            "a cache of another tasks.json is not trusted"
        );
        let shorter = doc(1);
        task_cache::write(&path, "k3", &encode(&shorter, 6));
        let (read, ..) = task_cache::read(&path, "k3", false).expect("a whole cache");
        assert_eq!(read, shorter);
        let mut garbled = std::fs::read(&path).expect("read");
        let last = garbled.len() - 3;
        garbled[last] ^= 0x55;
        std::fs::write(&path, garbled).expect("write");
        assert!(
            task_cache::read(&path, "k3", false).is_none(),
            "a damaged cache is not trusted"
        );
    }

    /// Reusing the lines of a file cairn wrote must give the very bytes a fresh render gives:
    /// otherwise a reused line could keep what the task no longer says. Each run of unchanged
    /// tasks is written as one piece of the file read.
    #[test]
    fn reused_lines_render_the_same_bytes_as_a_fresh_render() {
        // Large lists are rendered on every core: some changed tasks among many, and enough of
        // them to be rendered apart between reused runs.
        let every_second: Vec<usize> = (0..20_000).step_by(2).collect();
        for (n, changed) in [
            (0, &[][..]),
            (1, &[][..]),
            (3, &[1][..]),
            (10, &[0, 3, 4, 9][..]),
            (10, &[5][..]),
            (20_000, &[0, 7, 8_193, 19_999][..]),
            (20_000, &every_second[..]),
        ] {
            let before = doc(n);
            let bytes = render_tasks(&before, Some(4), None, |_| false)
                .expect("render")
                .into_bytes();
            let parsed: TaskDoc = serde_json::from_slice(&bytes).expect("valid JSON");
            assert_eq!(parsed.tasks, before.tasks);
            let lines = TaskLines::index(bytes.clone(), before.tasks.len()).expect("indexed");
            let mut after = before.clone();
            for &i in changed {
                after.tasks[i].title = format!("changed {i}");
            }
            let same = |i: usize| before.tasks.get(i) == after.tasks.get(i);
            let reused = render_tasks(&after, Some(5), Some(&lines), same).expect("render");
            let runs = (0..n as usize)
                .filter(|&i| same(i) && (i == 0 || !same(i - 1)))
                .count();
            assert_eq!(
                (reused.pieces.iter())
                    .filter(|p| p.0 == Source::Read)
                    .count(),
                runs
            );
            let fresh = render_tasks(&after, Some(5), None, |_| false).expect("render");
            // Written in pieces (a merge's result), the same bytes, with lines reused or not.
            for lines in [None, Some(&lines)] {
                let pieces = render_tasks(&after, Some(5), lines, same).expect("render");
                let in_one = render_tasks(&after, Some(5), None, |_| false).expect("render");
                assert_eq!(pieces.into_pieces().concat(), in_one.into_bytes());
            }
            // The log's payload takes a task rendered afresh from its line, made apart or not.
            let changed_only = |i: usize| !same(i);
            let every = |_: usize| true;
            let cases: [(&Rendered<'_>, &dyn Fn(usize) -> bool); 2] =
                [(&reused, &changed_only), (&fresh, &every)];
            for (rendered, is_fresh) in cases {
                for (i, task) in after.tasks.iter().enumerate() {
                    let expected = is_fresh(i).then(|| serde_json::to_vec(task).expect("json"));
                    assert_eq!(
                        rendered.fresh_line(i),
                        expected.as_deref(),
                        "task {i} of {n}"
                    );
                }
            }
            assert_eq!(
                String::from_utf8_lossy(&reused.into_bytes()),
                String::from_utf8_lossy(&fresh.into_bytes())
            );
        }
    }

    /// A tasks.json another tool wrote whose very bytes passed a full validation (`doctor --full`
    /// in a fresh clone) is read without validating its tasks again, into the same list; bytes
    /// that did not pass are validated. Shown with a verdict given by hand to a file that fails its
    /// schema (and that cairn's reading of a task takes).
    #[test]
    fn a_foreign_tasks_json_that_passed_before_is_read_without_its_tasks_validated() {
        let dir = tempfile::tempdir().expect("temp dir");
        let layout = ProjectLayout::new(dir.path(), "demo").expect("layout");
        std::fs::create_dir_all(layout.temp_dir()).expect("project dir");
        let cache = task_cache::path(layout.dir());
        let valid_doc = |n| {
            let mut valid = doc(n);
            for task in valid.tasks.iter_mut() {
                task.completion_criteria = vec!["it is done".into()];
            }
            valid
        };
        let valid = render_tasks_json(&valid_doc(20)).expect("render");
        std::fs::write(layout.tasks_json(), &valid).expect("write");
        let alone = read_task_doc(&layout, false).expect("a valid file").0;
        std::fs::remove_file(&cache).expect("a read of a valid file leaves a cache");
        Verdicts::remember(&layout, &valid);
        assert!(Verdicts::read(&layout).passed_before(&valid));
        let (passed, ..) = read_task_doc(&layout, false).expect("passed before");
        assert_eq!(passed, alone);

        let mut damaged = valid_doc(2);
        damaged.tasks[1].completion_criteria = vec!["a".into()];
        let damaged = render_tasks_json(&damaged).expect("render");
        std::fs::write(layout.tasks_json(), &damaged).expect("write");
        let _ = std::fs::remove_file(&cache);
        assert!(
            read_task_doc(&layout, false).is_err(),
            "a criterion too short"
        );
        Verdicts::remember(&layout, &damaged);
        assert!(
            read_task_doc(&layout, false).is_ok(),
            "the verdict is consulted"
        );
    }

    /// The same foreign bytes read the same whether validated (a first read) or taken as passed
    /// before (a verdict): here with an unknown field holding serde_json's raw-value token, which
    /// a `Value` reads as the JSON text it names.
    #[test]
    fn a_foreign_file_reads_the_same_validated_or_passed_before() {
        let dir = tempfile::tempdir().expect("temp dir");
        let layout = ProjectLayout::new(dir.path(), "demo").expect("layout");
        std::fs::create_dir_all(layout.temp_dir()).expect("project dir");
        let text = br#"{"version":1,"tasks":[
{"id":"T-001","title":"a task","level":"task","status":"PENDING","priority":"LOW","dependencies":[],"completion_criteria":[],"created_at":"2026-05-06T08:00:00Z","meta":{"$serde_json::private::RawValue":"[1,2]"}}
]}
"#;
        std::fs::write(layout.tasks_json(), text).expect("write");
        let validated = read_task_doc(&layout, false).expect("valid").0;
        let _ = std::fs::remove_file(task_cache::path(layout.dir()));
        Verdicts::remember(&layout, text);
        let passed = read_task_doc(&layout, false).expect("passed before").0;
        assert_eq!(passed.tasks[0].extra, validated.tasks[0].extra);
        // And the lease the mapped read took is given back: a writer is not kept waiting.
        assert!(cairn_lease::open_to_overwrite(&layout.tasks_json()).is_ok());
    }

    /// A task whose text passed in a document judged before is not judged again — shown with a
    /// text that fails (its title is too short), marked as passed by hand.
    #[test]
    fn a_text_that_passed_before_is_not_judged_again() {
        let text = r#"{"id":"T-1","title":"ab","level":"task","status":"PENDING","priority":"LOW","dependencies":[],"completion_criteria":[],"created_at":"2026-05-06T08:00:00Z"}"#;
        let doc = format!("{{\"version\":1,\"tasks\":[\n{text}\n]}}\n");
        assert!(verdict(doc.as_bytes(), None, &mut PassedTexts::default()).is_some());
        let mut passed = PassedTexts::default();
        passed.add(&[text]);
        assert_eq!(verdict(doc.as_bytes(), None, &mut passed), None);
    }

    /// The log's block is made with room for a commit's payload (`Payload::size_hint`): a whole
    /// list logged from the lines just rendered fits, escapes and all, so the block is not copied
    /// into a larger one as it is rendered; a change of a few tasks is not given a list's room.
    #[test]
    fn a_payload_fits_the_room_made_for_it() {
        for n in [3, 20_000] {
            let d = doc(n);
            let rendered = render_tasks(&d, Some(7), None, |_| false).expect("render");
            let line = |i| rendered.fresh_line(i);
            let payload = Payload {
                seq: 7,
                base: Base::default(),
                tasks: Some(journal::whole_at(&d)),
                project: None,
            };
            let mut out = Vec::new();
            payload.encode_onto(&mut out, &d.tasks, line);
            let escapes = memchr::memchr3_iter(b'\\', b'\n', b'\r', &out).count();
            let room = payload.size_hint(line);
            assert!(
                out.len() + escapes <= room,
                "{n} tasks: {} bytes in {room}",
                out.len()
            );
            assert!(
                room < 2 * (out.len() + escapes) + 4096,
                "{n} tasks: {room} is too much"
            );
        }
        let small = Payload {
            seq: 8,
            base: Base::default(),
            tasks: Some(journal::TasksChange {
                put: doc(2).tasks.to_vec(),
                ..journal::TasksChange::default()
            }),
            project: None,
        };
        assert!(small.encode().len() <= small.size_hint(|_| None));
        assert!(small.size_hint(|_| None) <= 4096);
    }

    /// A write validates the tasks it changed — many of them on every core — and names the first
    /// invalid one, as a check of one task after the other would.
    #[test]
    fn a_write_names_the_first_invalid_task_it_changed() {
        let path = Path::new("tasks.json");
        for (n, bad) in [
            (10, vec![3, 7]),
            (20_000, vec![9_000, 15_000]),
            (20_000, vec![]),
        ] {
            let mut doc = doc(n);
            for task in doc.tasks.iter_mut() {
                task.completion_criteria = vec!["works as described".to_owned()];
            }
            for &i in &bad {
                doc.tasks.get_mut(i).expect("a task").title = "x".to_owned();
            }
            let all_changed = vec![false; doc.tasks.len()];
            let error = validate_changed(&doc, &all_changed, path)
                .err()
                .map(|e| e.to_string());
            match bad.first() {
                Some(first) => {
                    let error = error.expect("refused");
                    assert!(error.contains(&format!("/tasks/{first}/title")), "{error}");
                    assert!(!error.contains(&format!("/tasks/{}/", bad[1])), "{error}");
                }
                None => assert_eq!(error, None),
            }
            // A task left as it was is not validated again.
            let bad_unchanged: Vec<bool> = (0..doc.tasks.len()).map(|i| bad.contains(&i)).collect();
            assert!(validate_changed(&doc, &bad_unchanged, path).is_ok());
        }
    }

    #[test]
    fn the_public_renderer_keeps_a_marker_in_the_document() {
        let mut d = doc(2);
        d.extra.insert(journal::MARKER.into(), 9.into());
        let text = String::from_utf8(render_tasks_json(&d).expect("render")).expect("utf8");
        assert!(text.ends_with(",\"log_seq\":9}\n"), "{text}");
        assert_eq!(text.lines().count(), 4, "{text}");
        let back: TaskDoc = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(back, d);
    }

    #[test]
    fn lines_are_not_indexed_in_another_layout() {
        let pretty = serde_json::to_vec_pretty(&doc(2)).expect("json");
        assert!(TaskLines::index(pretty, 2).is_none());
        let bytes = render_tasks(&doc(2), Some(1), None, |_| false)
            .expect("render")
            .into_bytes();
        assert!(
            TaskLines::index(bytes.clone(), 3).is_none(),
            "a count that differs"
        );
        assert!(TaskLines::index(bytes, 2).is_some());
    }

    /// The task-by-task read gives the whole-document verdict and the same document, on valid
    /// files (with enough tasks to use every core) and on every way a file can be wrong, which it
    /// leaves to the whole read for the message.
    #[test]
    fn a_file_read_task_by_task_is_judged_as_the_whole_document_is() {
        let whole = |bytes: &[u8]| {
            let value: Value = serde_json::from_slice(bytes).ok()?;
            schema::is_valid(SchemaKind::Tasks, &value)
                .then(|| serde_json::from_value::<TaskDoc>(value).ok())
                .flatten()
        };
        let valid_doc = |n| {
            let mut doc = doc(n);
            for task in &mut doc.tasks {
                task.completion_criteria = vec!["works as described".to_owned()];
            }
            doc
        };
        let rendered = |n| String::from_utf8(render_tasks_json(&valid_doc(n)).unwrap()).unwrap();
        let big = rendered(9_000);
        let small = rendered(3);
        let pretty = serde_json::to_string_pretty(&valid_doc(2)).unwrap();
        for valid in [&big, &small, &pretty] {
            assert!(
                whole(valid.as_bytes()).is_some(),
                "{:?}",
                validated_doc(valid.as_bytes()).err()
            );
        }
        let cases = [
            big.clone(),
            small.clone(),
            pretty,
            r#"{"tasks":[]}"#.to_owned(),
            r#"{"tasks":[],"log_seq":7,"x":{"tasks":[1]}}"#.to_owned(),
            small.replacen("\"level\":\"task\"", "\"level\":\"epic-ish\"", 1),
            small.replacen("2026-05-06T08:00:00Z", "yesterday", 1),
            small.replacen("\"version\":1", "\"version\":0", 1),
            small.replacen("\"tasks\":[", "\"tasks\":[],\"tasks\":[", 1),
            big.replacen("T-8999", "T-8999\"x", 1),
            big.replacen("\"title\"", "\"titel\"", 1),
            format!("{small} trailing"),
            r#"{"tasks":{}}"#.to_owned(),
            r#"{"version":1}"#.to_owned(),
            "[]".to_owned(),
            String::new(),
        ];
        // The texts of every case that passed so far, as `doctor --full` keeps them from one
        // document to the next: the damaged copies of `big` come after it.
        let mut passed = PassedTexts::default();
        for (i, case) in cases.iter().enumerate() {
            let whole = whole(case.as_bytes());
            assert_eq!(validated_doc(case.as_bytes()).ok(), whole, "case {i}");
            assert_eq!(
                verdict(case.as_bytes(), None, &mut PassedTexts::default()),
                validated_doc(case.as_bytes()).err(),
                "case {i}: the verdict alone"
            );
            assert_eq!(
                verdict(case.as_bytes(), None, &mut passed),
                validated_doc(case.as_bytes()).err(),
                "case {i}: the verdict after the cases before"
            );
            assert!(
                !passed.0.is_empty(),
                "case {i}: the texts of `big` are kept"
            );
            // It declines nothing valid but a repeated `tasks` key (the whole read keeps the
            // last), and accepts nothing the whole read refuses.
            let one_by_one = validated_one_by_one(case.as_bytes(), None);
            assert_eq!(one_by_one.is_some(), whole.is_some() && i != 8, "case {i}");
            if one_by_one.is_some() {
                assert_eq!(one_by_one, whole, "case {i}");
                // Bytes that passed before read the same without their tasks validated.
                let passed = read_one_by_one(case.as_bytes(), &Known::default(), Keep::PassedTasks);
                assert_eq!(passed.map(|(doc, _)| doc), whole, "case {i}: passed before");
            }
        }
        let error = validated_doc(cases[6].as_bytes()).unwrap_err();
        assert!(error.contains("/tasks/0/created_at"), "{error}");

        // With a read cache whose tasks most cases share, each case still gets the verdict it
        // gets alone: a cache of the same list, of a list a case reorders or edits, of a list
        // whose every task differs from the file's under the same id.
        let edited = |title: &str| {
            let mut doc = valid_doc(9_000);
            for task in doc.tasks.iter_mut().skip(100).step_by(7) {
                task.title = format!("{} {title}", task.title);
            }
            doc
        };
        let mut reordered = valid_doc(9_000);
        let mut tasks = reordered.tasks.take_all();
        tasks.swap(10, 8_000);
        reordered.tasks = tasks.into();
        let mut shorter = valid_doc(9_000);
        shorter.tasks.retain(|task| task.id.number() != 6);
        let mut caches: Vec<task_cache::Encoded> = [valid_doc(9_000), reordered, shorter]
            .iter()
            .map(|doc| task_cache::Encoded::of(doc, 3).unwrap())
            .collect();
        let mut retitled = valid_doc(9_000);
        for task in &mut retitled.tasks {
            task.title.push_str(" (cached)");
        }
        caches.push(task_cache::Encoded::of(&retitled, 3).unwrap());
        let more = [
            String::from_utf8(render_tasks_json(&edited("again")).unwrap()).unwrap(),
            big.replacen("\"level\":\"task\"", "\"level\":\"epic-ish\"", 1),
        ];
        let versions: Vec<&[u8]> = cases.iter().chain(&more).map(String::as_bytes).collect();
        let alone: Vec<Result<TaskDoc, String>> =
            versions.iter().map(|v| validated_doc(v)).collect();
        assert!(alone[alone.len() - 2].is_ok() && alone[alone.len() - 1].is_err());
        for (c, cached) in caches.iter().enumerate() {
            for (i, case) in versions.iter().enumerate() {
                assert_eq!(
                    validated_doc_after(case, Some(cached)),
                    alone[i],
                    "cache {c}, case {i}"
                );
                assert_eq!(
                    verdict(case, Some(cached), &mut PassedTexts::default()),
                    alone[i].as_ref().err().cloned(),
                    "cache {c}, case {i}: the verdict alone"
                );
            }
            assert_eq!(
                validated_versions(&versions, Some(cached)),
                alone,
                "cache {c}"
            );
        }

        // Read as versions of one document, each case gets the verdict it gets alone, whatever
        // the cases before it share with it: in order, and backwards.
        let versions: Vec<&[u8]> = cases.iter().map(String::as_bytes).collect();
        let alone: Vec<Result<TaskDoc, String>> =
            versions.iter().map(|v| validated_doc(v)).collect();
        assert_eq!(validated_versions(&versions, None), alone);
        let backwards: Vec<&[u8]> = versions.iter().rev().copied().collect();
        let alone: Vec<Result<TaskDoc, String>> = alone.into_iter().rev().collect();
        assert_eq!(validated_versions(&backwards, None), alone);
    }

    /// A PENDING task with this id and title.
    fn task(id: &str, title: &str) -> Task {
        serde_json::from_value(serde_json::json!({
            "id": id, "title": title, "level": "task", "status": "PENDING",
            "priority": "LOW", "dependencies": [], "completion_criteria": ["a"],
            "created_at": "2026-05-06T08:00:00Z"
        }))
        .expect("a task")
    }

    /// After a git merge of the log, commit numbers repeat. A base of no list (a commit that
    /// starts its list anew) begins at that commit, not at the other branch's commit of the same
    /// number: here theirs' 3 starts from a checkpoint that is gone, and the rebuild as far as
    /// the log goes is the project's creation and ours' commits — not ours' 3 on an empty list.
    #[test]
    fn a_partial_replay_after_a_merge_starts_each_base_at_its_own_commit() {
        let dir = tempfile::tempdir().expect("temp dir");
        let layout = ProjectLayout::new(dir.path(), "demo").expect("layout");
        let put = |start, tasks: Vec<Task>| journal::TasksChange {
            start,
            put: tasks,
            ..journal::TasksChange::default()
        };
        let record = |seq: u64, change: journal::TasksChange| {
            let payload = Payload {
                seq,
                base: Base::default(),
                tasks: Some(change),
                project: None,
            };
            LogRecord::new(chrono::Utc::now(), journal::STATE_ENTRY)
                .with(journal::FIELD, payload.encode())
        };
        let gone = journal::Start::Checkpoint(journal::CheckpointRef {
            checkpoint: 7,
            sum: "0".into(),
        });
        let previous = || journal::Start::Previous;
        let three = vec![task("T-1", "one"), task("T-2", "two"), task("T-3", "three")];
        let records = [
            record(1, put(journal::Start::Empty, three)),
            record(2, put(previous(), vec![task("T-1", "one again")])),
            record(3, put(previous(), vec![task("T-2", "ours' 3")])),
            record(3, put(gone, vec![task("T-9", "theirs' 3")])),
            record(4, put(previous(), vec![task("T-9", "theirs' 4")])),
            record(5, put(previous(), vec![task("T-9", "theirs' 5")])),
        ];
        assert!(replay_tasks(&layout, &records).is_none());
        let partly = replay_tasks_partly(&layout, &records).expect("a partial replay");
        let titles: Vec<&str> = partly.doc.tasks.iter().map(|t| t.title.as_str()).collect();
        assert_eq!(titles, ["one again", "ours' 3", "three"]);
    }

    /// A commit whose JSON holds a task that is not one (a status no cairn knows) is a gap, as a
    /// torn one is, though a replay decodes a commit's tasks only when it applies it: the rebuild
    /// goes exactly as it goes with that commit torn, wherever it is — a partial replay goes up
    /// to it, a whole one finds no way past it.
    #[test]
    fn a_commit_whose_task_does_not_decode_replays_as_a_torn_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let layout = ProjectLayout::new(dir.path(), "demo").expect("layout");
        let commits = [
            (1, journal::Start::Empty, vec![task("T-1", "one")]),
            (2, journal::Start::Previous, vec![task("T-2", "two")]),
            (
                3,
                journal::Start::Empty,
                vec![task("T-1", "one"), task("T-3", "three")],
            ),
            (4, journal::Start::Previous, vec![task("T-1", "one at 4")]),
            (5, journal::Start::Previous, vec![task("T-3", "three at 5")]),
        ];
        let log = |spoilt: u64, spoil: &dyn Fn(String) -> String| {
            spoilt_log(&commits, spoilt as usize - 1, spoil)
        };
        let outcome = replay_outcome;
        for spoilt in 1..=5 {
            let ill = log(spoilt, &unknown_status);
            assert!(
                Payload::of(&ill[spoilt as usize - 1]).is_some_and(|p| p.is_err()),
                "commit {spoilt} does not decode"
            );
            let torn = log(spoilt, &torn);
            assert_eq!(
                outcome(replay_tasks(&layout, &ill)),
                outcome(replay_tasks(&layout, &torn)),
                "commit {spoilt} spoilt"
            );
            assert_eq!(
                outcome(replay_tasks_partly(&layout, &ill)),
                outcome(replay_tasks_partly(&layout, &torn)),
                "commit {spoilt} spoilt, a partial replay"
            );
        }
        assert_eq!(
            outcome(replay_tasks(&layout, &log(5, &unknown_status))),
            None
        );
        let last = outcome(replay_tasks_partly(&layout, &log(5, &unknown_status)));
        assert_eq!(
            last,
            Some((vec!["one at 4".into(), "three".into()], 4, None))
        );
        let middle = outcome(replay_tasks_partly(&layout, &log(4, &unknown_status)));
        assert_eq!(middle, Some((vec!["one".into(), "three".into()], 3, None)));
    }

    /// The log of `commits` (number, start, tasks put), the `spoilt`-th (from 0) spoilt by `spoil`
    /// (see `a_commit_whose_task_does_not_decode_replays_as_a_torn_one`).
    fn spoilt_log(
        commits: &[(u64, journal::Start, Vec<Task>)],
        spoilt: usize,
        spoil: &dyn Fn(String) -> String,
    ) -> Vec<LogRecord> {
        (commits.iter().enumerate())
            .map(|(i, (seq, start, tasks))| {
                let payload = Payload {
                    seq: *seq,
                    base: Base::default(),
                    tasks: Some(journal::TasksChange {
                        start: start.clone(),
                        put: tasks.clone(),
                        ..journal::TasksChange::default()
                    }),
                    project: None,
                };
                let text = payload.encode();
                let text = if i == spoilt { spoil(text) } else { text };
                LogRecord::new(chrono::Utc::now(), journal::STATE_ENTRY).with(journal::FIELD, text)
            })
            .collect()
    }

    fn unknown_status(text: String) -> String {
        text.replacen("\"PENDING\"", "\"PONDERING\"", 1)
    }

    fn torn(text: String) -> String {
        text[..text.len() / 2].to_owned()
    }

    fn replay_outcome(replayed: Option<Replayed>) -> Option<(Vec<String>, u64, Option<u32>)> {
        replayed.map(|r| {
            let titles: Vec<String> = titles(&r).into_iter().map(str::to_owned).collect();
            (titles, r.seq, r.checkpoint)
        })
    }

    /// The last commit (3) does not decode. With a checkpoint valid throughout taken at commit 2,
    /// the rebuild goes as it goes with commit 3 torn: the checkpoint and nothing after it. One
    /// taken at commit 3 is that commit's list, valid throughout, and the rebuild takes it — for
    /// a torn commit 3 it is no base, as the log holds no commit 3 that could have made it.
    #[test]
    fn an_undecodable_last_commit_over_a_checkpoint_replays_as_a_torn_one() {
        // Valid throughout, as a checkpoint's tasks must be.
        let task = |id: &str, title: &str| Task {
            completion_criteria: vec!["it reads".into()],
            ..task(id, title)
        };
        let commits = [
            (
                1,
                journal::Start::Empty,
                vec![task("T-1", "one"), task("T-2", "two")],
            ),
            (2, journal::Start::Previous, vec![task("T-1", "one at 2")]),
            (3, journal::Start::Previous, vec![task("T-2", "two at 3")]),
        ];
        for (marker, kept) in [
            (2, [task("T-1", "one at 2"), task("T-2", "two")]),
            (3, [task("T-1", "one at 2"), task("T-2", "two at 3")]),
        ] {
            let dir = tempfile::tempdir().expect("temp dir");
            let layout = ProjectLayout::new(dir.path(), "demo").expect("layout");
            let checkpoints = layout.checkpoints_dir();
            std::fs::create_dir_all(&checkpoints).expect("checkpoints dir");
            let text = format!(
                "{{\"version\":1,\"tasks\":{},\"log_seq\":{marker}}}\n",
                serde_json::to_string(&kept).expect("tasks")
            );
            std::fs::write(checkpoints.join(checkpoints::file_name(1)), text).expect("checkpoint");
            let ill = spoilt_log(&commits, 2, &unknown_status);
            let torn = spoilt_log(&commits, 2, &torn);
            if marker == 3 {
                let at_3 = Some((vec!["one at 2".into(), "two at 3".into()], 3, Some(1)));
                assert_eq!(replay_outcome(replay_tasks(&layout, &ill)), at_3);
                assert_eq!(replay_outcome(replay_tasks_partly(&layout, &ill)), at_3);
                continue;
            }
            assert_eq!(
                replay_outcome(replay_tasks(&layout, &ill)),
                replay_outcome(replay_tasks(&layout, &torn)),
                "checkpoint taken at {marker}"
            );
            assert_eq!(
                replay_outcome(replay_tasks_partly(&layout, &ill)),
                replay_outcome(replay_tasks_partly(&layout, &torn)),
                "checkpoint taken at {marker}, a partial replay"
            );
        }
    }

    /// After a git merge of the log, theirs' commit 2 (which does not decode) comes before ours'
    /// 2, which starts its list anew: with theirs' 2 torn, the replay skips it before its base
    /// and takes ours' 2 and 3; counted as readable, it is the first commit 2 the base meets.
    #[test]
    fn an_undecodable_commit_of_another_branch_replays_as_a_torn_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let layout = ProjectLayout::new(dir.path(), "demo").expect("layout");
        let commits = [
            (1, journal::Start::Empty, vec![task("T-1", "one")]),
            (2, journal::Start::Previous, vec![task("T-1", "theirs' 2")]),
            (2, journal::Start::Empty, vec![task("T-1", "ours' 2")]),
            (3, journal::Start::Previous, vec![task("T-2", "ours' 3")]),
        ];
        let ill = spoilt_log(&commits, 1, &unknown_status);
        let torn = spoilt_log(&commits, 1, &torn);
        assert_eq!(
            replay_outcome(replay_tasks(&layout, &ill)),
            replay_outcome(replay_tasks(&layout, &torn)),
        );
        assert_eq!(
            replay_outcome(replay_tasks_partly(&layout, &ill)),
            replay_outcome(replay_tasks_partly(&layout, &torn)),
        );
    }

    /// A log whose commit 2 is gone (a gap), and checkpoint 1 — its text `checkpoint`, the
    /// tasks `"{tasks}"` stands for — as the one base a replay can take: commit 1 starts the
    /// list, commit 3 retitles T-2 on top of what the checkpoint kept at commit 2. With
    /// `older`, checkpoint 1 is that text and checkpoint 2 is `checkpoint`.
    fn replayed_over_a_checkpoint(
        checkpoint: &str,
        older: Option<&str>,
    ) -> (tempfile::TempDir, Option<Replayed>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let layout = ProjectLayout::new(dir.path(), "demo").expect("layout");
        let task = |id: &str, title: &str| -> Task {
            serde_json::from_value(serde_json::json!({
                "id": id, "title": title, "level": "task", "status": "PENDING",
                "priority": "LOW", "dependencies": [], "completion_criteria": ["it reads"],
                "created_at": "2026-05-06T08:00:00Z"
            }))
            .expect("a task")
        };
        let record = |seq: u64, start, tasks: Vec<Task>| {
            let payload = Payload {
                seq,
                base: Base::default(),
                tasks: Some(journal::TasksChange {
                    start,
                    put: tasks,
                    ..journal::TasksChange::default()
                }),
                project: None,
            };
            LogRecord::new(chrono::Utc::now(), journal::STATE_ENTRY)
                .with(journal::FIELD, payload.encode())
        };
        let records = [
            record(
                1,
                journal::Start::Empty,
                vec![task("T-1", "one"), task("T-2", "two")],
            ),
            record(3, journal::Start::Previous, vec![task("T-2", "two at 3")]),
        ];
        let tasks = serde_json::to_string(&[task("T-1", "one at 2"), task("T-2", "two at 2")])
            .expect("tasks");
        let checkpoints = layout.checkpoints_dir();
        std::fs::create_dir_all(&checkpoints).expect("checkpoints dir");
        let files = older.into_iter().chain([checkpoint]);
        for (number, text) in (1..).zip(files) {
            std::fs::write(
                checkpoints.join(checkpoints::file_name(number)),
                text.replace("\"{tasks}\"", &tasks),
            )
            .expect("checkpoint");
        }
        let replayed = replay_tasks(&layout, &records);
        (dir, replayed)
    }

    fn titles(replayed: &Replayed) -> Vec<&str> {
        replayed
            .doc
            .tasks
            .iter()
            .map(|t| t.title.as_str())
            .collect()
    }

    /// Another tool that kept a checkpoint's `log_seq` may have moved it: the checkpoint is still
    /// the base of the commit it names (its marker read from the whole document).
    #[test]
    fn a_rebuild_takes_a_checkpoint_whose_marker_is_not_at_its_end() {
        let moved = "{\n  \"log_seq\": 2,\n  \"version\": 1,\n  \"tasks\": \"{tasks}\"\n}\n";
        let (_dir, replayed) = replayed_over_a_checkpoint(moved, None);
        let replayed = replayed.expect("a replay from checkpoint 1");
        assert_eq!(titles(&replayed), ["one at 2", "two at 3"]);
        assert_eq!(replayed.checkpoint, Some(1));
        assert!(replayed.doc.extra.is_empty(), "{:?}", replayed.doc.extra);
    }

    /// A checkpoint whose top-level marker is followed by another tool's field that holds a
    /// `log_seq` of its own (its last bytes name commit 3) is the base of the commit its marker
    /// names, as it was when every checkpoint was parsed whole.
    #[test]
    fn a_nested_log_seq_at_a_checkpoints_end_is_not_its_marker() {
        let nested =
            "{\"log_seq\":2,\"version\":1,\"tasks\":\"{tasks}\",\"x_sync\":{\"log_seq\":3}}\n";
        let (_dir, replayed) = replayed_over_a_checkpoint(nested, None);
        let replayed = replayed.expect("a replay from checkpoint 1");
        assert_eq!(titles(&replayed), ["one at 2", "two at 3"]);
        assert_eq!(replayed.checkpoint, Some(1));
    }

    /// A `log_seq` held twice reads as JSON reads it, the last one: here commit 2's, which the
    /// checkpoint's end says too.
    #[test]
    fn a_checkpoint_with_its_marker_twice_is_the_base_of_the_last() {
        let twice = "{\"log_seq\":3,\"version\":1,\"tasks\":\"{tasks}\",\"log_seq\":2}\n";
        let (_dir, replayed) = replayed_over_a_checkpoint(twice, None);
        let replayed = replayed.expect("a replay from checkpoint 1");
        assert_eq!(titles(&replayed), ["one at 2", "two at 3"]);
    }

    /// The newest checkpoint, whose end names commit 3 but whose list does not read (a task
    /// without its title), is no base: the older one, taken at commit 2, is.
    #[test]
    fn a_damaged_checkpoint_whose_end_reads_is_skipped_for_the_next_base() {
        let good = "{\"version\":1,\"tasks\":\"{tasks}\",\"log_seq\":2}\n";
        let damaged = "{\"version\":1,\"tasks\":[{\"id\":\"T-1\"}],\"log_seq\":3}\n";
        let (_dir, replayed) = replayed_over_a_checkpoint(damaged, Some(good));
        let replayed = replayed.expect("a replay from checkpoint 1");
        assert_eq!(titles(&replayed), ["one at 2", "two at 3"]);
        assert_eq!(replayed.checkpoint, Some(1));
    }
}
