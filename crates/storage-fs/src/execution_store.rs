//! [`FsExecutionSessionStore`]: execution sessions on disk (SPEC §3).
//!
//! ```text
//! <root>/.claude/sessions/
//!   .sessions.lock            sidecar lock: every write to any session holds it
//!   .session-temp/            in-flight atomic writes and new live directories being built
//!   __live_session__/         .lock  execution_plan.md  execution_context.md  task_log.md
//!                             progress.md  context-task-{id}.md  session_summary.md  tasks/
//!   {session-id}/             a finished session, moved here whole
//!   interrupted-YYYYMMDD-HHMMSS/
//! ```
//!
//! The session's `.lock` *file* is data (who runs the session, since when); mutual exclusion
//! between cairn processes is the sidecar `.sessions.lock`, so a reader never has to care about
//! it and a crashed writer never leaves it held (the OS drops the lock with the descriptor).
//!
//! **Moves are single renames.** Archiving (finish, recovery) renames the whole live directory to
//! its archive name, then recreates an empty live directory; a crash in between leaves no live
//! directory, which reads as empty: the new state. A new session is built whole under
//! `.session-temp/` and renamed into place, so a crash never leaves half a session live. Starting
//! over leftovers is two renames (leftovers out, new session in); a crash between them leaves the
//! leftovers archived and no session live, which is exactly the state `recover` produces — whole,
//! never half-moved.
//!
//! Every file is replaced by [`atomic::write_atomic`]; `task_log.md` is rewritten as its old bytes
//! plus the new row, so earlier rows are kept byte for byte and a crash never tears a row.
//! A command that changes several files of the live session (a task's row and `progress.md`;
//! the merged context and the task contexts it consumed) writes them through a write-ahead
//! intent, `.claude/sessions/.cairn-journal` (see [`intent`]), outside the session directory so
//! no reader of the session's files ever sees it: whoever takes the lock next finishes it.
//! A task's end also records the project move it implies in `.claude/sessions/.cairn-project-moves`
//! within the same intent, so the session's write is the commit point of the whole end; the move
//! is forgotten once the project holds it (`SessionRunner::settle`, issue #16).
//! Readers take no lock: every file and directory changes by rename; a reader that finds an
//! intent takes the lock (which finishes it) first.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use cairn_domain::execution::naming::{
    LIVE_SESSION_DIR, check_path_segment, check_store_segment as check_segment,
};
use cairn_domain::execution::progress::{CompletedTask, ProgressStatus};
use cairn_domain::execution::store::{
    ContextUpdate, Decide, ExecutionSessionStore, Finale, NewSession, ProjectMove, StartPlan,
    Started, TaskRecord,
};
use cairn_domain::execution::{LiveSession, Progress, TaskContext};
use cairn_domain::{Entity, Error, StoreError};

use crate::execution::{
    TASK_LOG_HEADER, parse_context, parse_lock, parse_progress, parse_session_summary,
    parse_task_context, parse_task_log, render_context, render_lock, render_progress, render_row,
    render_session_summary, render_task_context,
};
use crate::intent::{self, FileWrite};
use crate::project_store::DEFAULT_LOCK_TIMEOUT;
use crate::{atomic, failpoint, fsync_dir, io_error, lock};

/// Where sessions live, under the repository root.
pub const SESSIONS_DIR: &str = ".claude/sessions";
/// The sidecar lock of every session write, in the sessions directory.
pub const SESSIONS_LOCK_FILE: &str = ".sessions.lock";
/// Where session writes are staged, in the sessions directory (same filesystem: renames stay
/// atomic).
pub const SESSIONS_TEMP_DIR: &str = ".session-temp";

/// The file names of a session directory.
pub const LOCK_FILE: &str = ".lock";
pub const PLAN_FILE: &str = "execution_plan.md";
pub const CONTEXT_FILE: &str = "execution_context.md";
pub const TASK_LOG_FILE: &str = "task_log.md";
pub const PROGRESS_FILE: &str = "progress.md";
pub const SUMMARY_FILE: &str = "session_summary.md";
/// Archived task JSON; created empty with each session.
pub const TASKS_DIR: &str = "tasks";
/// The pointer a Claude Code task-list directory holds to the live session.
pub const EXECUTION_POINTER_FILE: &str = "execution_pointer.md";
const TASK_CONTEXT_PREFIX: &str = "context-task-";
const TASK_CONTEXT_SUFFIX: &str = ".md";
/// The session store's failpoints around its write-ahead intents: `session:journal-…`.
const INTENT_AREA: &str = "session";
/// The project moves recorded with a task's end and not yet known to be made, in the sessions
/// directory (outside any session, so archiving never carries one away).
pub const PROJECT_MOVES_FILE: &str = ".cairn-project-moves";
const PROJECT_MOVES_VERSION: u32 = 1;

#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectMoves {
    version: u32,
    moves: Vec<ProjectMove>,
}

/// The bytes of the project-moves file.
fn encode_moves(moves: &[ProjectMove]) -> String {
    let record = ProjectMoves {
        version: PROJECT_MOVES_VERSION,
        moves: moves.to_vec(),
    };
    let mut text = serde_json::to_string(&record).expect("project moves are always serializable");
    text.push('\n');
    text
}

/// Reads the project-moves file back. Blank (as a power cut could leave a file no fsync
/// covered) reads as no moves: `session recover` still settles the tasks from the task log.
pub fn parse_project_moves(text: &str) -> Result<Vec<ProjectMove>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let record: ProjectMoves =
        serde_json::from_str(text).map_err(|e| format!("not a project-moves record: {e}"))?;
    if record.version != PROJECT_MOVES_VERSION {
        return Err(format!(
            "version {} (this cairn writes {PROJECT_MOVES_VERSION})",
            record.version
        ));
    }
    Ok(record.moves)
}

/// The filesystem adapter of [`ExecutionSessionStore`].
#[derive(Debug, Clone)]
pub struct FsExecutionSessionStore {
    sessions: PathBuf,
    lock_timeout: Duration,
}

impl FsExecutionSessionStore {
    /// A store under `<root>/.claude/sessions`, where `root` is the repository root.
    pub fn new(root: &Path) -> Self {
        Self {
            sessions: root.join(SESSIONS_DIR),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
        }
    }

    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    /// `.claude/sessions/__live_session__/`, whether or not it exists.
    pub fn live_dir(&self) -> PathBuf {
        self.sessions.join(LIVE_SESSION_DIR)
    }

    /// The directory of archive `name`, whether or not it exists.
    pub fn archive_dir(&self, name: &str) -> PathBuf {
        self.sessions.join(name)
    }

    fn temp_dir(&self) -> PathBuf {
        self.sessions.join(SESSIONS_TEMP_DIR)
    }

    /// Takes the sidecar lock and finishes what a crashed command left in its intent, so every
    /// writer starts from files that agree.
    fn lock(&self) -> Result<lock::LockGuard, StoreError> {
        if !self.sessions.is_dir() {
            std::fs::create_dir_all(&self.sessions)
                .map_err(io_error("create sessions directory", &self.sessions))?;
            // A new directory's entry is durable only once its parent is fsynced: without this
            // the power-loss test lost a whole acknowledged session (`.claude/sessions/` gone).
            for dir in self.sessions.ancestors().skip(1).take(2) {
                fsync_dir(dir)?;
            }
        }
        let guard =
            lock::lock_exclusive(&self.sessions.join(SESSIONS_LOCK_FILE), self.lock_timeout)?;
        intent::replay(INTENT_AREA, &self.temp_dir(), &self.sessions)?;
        Ok(guard)
    }

    /// Replaces the live session's `writes` (paths relative to the live directory) all together
    /// or, after a crash, finished together by the next [`Self::lock`]. The caller holds the lock.
    fn write_live(&self, writes: Vec<FileWrite>) -> Result<(), StoreError> {
        self.write_live_moving(writes, None)
    }

    /// [`Self::write_live`], adding `project_move` to the recorded project moves in the same
    /// intent, so the session's files and the move they imply land together.
    fn write_live_moving(
        &self,
        writes: Vec<FileWrite>,
        project_move: Option<ProjectMove>,
    ) -> Result<(), StoreError> {
        let mut writes: Vec<FileWrite> = writes
            .into_iter()
            .map(|w| FileWrite {
                path: format!("{LIVE_SESSION_DIR}/{}", w.path),
                text: w.text,
            })
            .collect();
        let moving = project_move.is_some();
        if let Some(project_move) = project_move {
            let mut moves = self.read_project_moves()?;
            moves.push(project_move);
            writes.push(FileWrite::new(PROJECT_MOVES_FILE, encode_moves(&moves)));
        }
        intent::write_all(INTENT_AREA, &self.temp_dir(), &self.sessions, &writes)?;
        if moving {
            failpoint("session:after-move-recorded");
        }
        Ok(())
    }

    /// The recorded project moves, as the file holds them now.
    fn read_project_moves(&self) -> Result<Vec<ProjectMove>, StoreError> {
        let path = self.sessions.join(PROJECT_MOVES_FILE);
        let Some(text) = read_optional(&path)? else {
            return Ok(Vec::new());
        };
        parse_project_moves(&text).map_err(|detail| StoreError::Corrupt {
            path: path.display().to_string(),
            detail: format!(
                "{detail}; it lists the project moves of task ends not yet made: remove it, then run `cairn session recover` to settle the session's tasks from its task log"
            ),
        })
    }

    fn write(&self, target: &Path, text: &str) -> Result<(), StoreError> {
        atomic::write_atomic(&self.temp_dir(), target, text.as_bytes())
    }

    /// The live session as the caller (holding the lock) will write over it; `NotFound` unless a
    /// session is live, i.e. its `.lock` file is there.
    fn live_session(&self) -> Result<LiveSession, StoreError> {
        let live = read_session(&self.live_dir())?;
        if live.lock.is_none() {
            return Err(no_live_session());
        }
        Ok(live)
    }

    /// Removes what crashed writers left in the temp directory. Every write stages there under
    /// the lock, so with the lock held nothing in it is in flight: all of it is debris.
    fn remove_debris(&self) -> Result<(), StoreError> {
        let temp = self.temp_dir();
        let entries = match std::fs::read_dir(&temp) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error("list temp directory", &temp)(e)),
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            removed.map_err(io_error("remove debris of a crashed write", &path))?;
        }
        Ok(())
    }

    /// Builds the directory of a new session under the temp directory; returns where it is.
    fn build_session(&self, new: &NewSession) -> Result<PathBuf, StoreError> {
        let staging = self
            .temp_dir()
            .join(format!("session.{}", uuid::Uuid::new_v4()));
        let built = (|| {
            let tasks = staging.join(TASKS_DIR);
            std::fs::create_dir_all(&tasks)
                .map_err(io_error("create session directory", &tasks))?;
            self.write(&staging.join(LOCK_FILE), &render_lock(&new.lock))?;
            self.write(&staging.join(PLAN_FILE), &new.execution_plan)?;
            self.write(&staging.join(CONTEXT_FILE), &render_context(&new.context))?;
            self.write(&staging.join(TASK_LOG_FILE), TASK_LOG_HEADER)?;
            self.write(
                &staging.join(PROGRESS_FILE),
                &render_progress(&new.progress),
            )?;
            fsync_dir(&staging)
        })();
        if built.is_err() {
            // Best effort: what is left is debris the next start removes, never a session.
            let _ = std::fs::remove_dir_all(&staging);
        }
        built.map(|()| staging)
    }

    /// Renames the live directory to `archive`, then leaves an empty live directory behind.
    /// The caller holds the lock and checked that `archive` does not exist.
    fn move_live_to(&self, archive: &str) -> Result<(), StoreError> {
        let (live, target) = (self.live_dir(), self.archive_dir(archive));
        failpoint("session:before-archive-rename");
        rename(&live, &target, "move the live session to its archive")?;
        fsync_dir(&self.sessions)?;
        failpoint("session:after-archive-rename");
        // The seed leaves an empty live directory (the execution pointer names it); a crash here
        // leaves none, which reads the same.
        std::fs::create_dir_all(&live).map_err(io_error("recreate the live directory", &live))?;
        fsync_dir(&self.sessions)
    }

    /// Refuses `name` unless it is a plain path segment naming no existing archive.
    fn check_new_archive(&self, name: &str) -> Result<(), StoreError> {
        check_segment(name, "archive directory")?;
        if self.archive_dir(name).exists() {
            return Err(StoreError::already_exists(Entity::ExecutionArchive, name));
        }
        Ok(())
    }
}

fn no_live_session() -> StoreError {
    StoreError::not_found(Entity::ExecutionSession, LIVE_SESSION_DIR)
}

fn rename(from: &Path, to: &Path, op: &'static str) -> Result<(), StoreError> {
    std::fs::rename(from, to).map_err(|source| StoreError::Io {
        op,
        path: format!("{} -> {}", from.display(), to.display()),
        source,
    })
}

/// The text of `path`, or `None` when there is no such file.
fn read_optional(path: &Path) -> Result<Option<String>, StoreError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == ErrorKind::InvalidData => {
            // Not UTF-8: read what can be salvaged, as every parser here is lenient.
            let bytes = std::fs::read(path).map_err(io_error("read", path))?;
            Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
        }
        Err(e) => Err(io_error("read", path)(e)),
    }
}

/// Reads a session directory leniently; a missing directory is an empty session.
fn read_session(dir: &Path) -> Result<LiveSession, StoreError> {
    let mut session = LiveSession::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(session),
        Err(e) => return Err(io_error("list session directory", dir)(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_error("list session directory", dir))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    let mut blank_progress = false;
    for name in names {
        let path = dir.join(&name);
        if path.is_dir() {
            collect_files(&path, &name, &mut session.other_files)?;
            continue;
        }
        let Some(text) = read_optional(&path)? else {
            continue; // removed since the listing
        };
        match name.as_str() {
            LOCK_FILE => session.lock = Some(parse_lock(&text)),
            PLAN_FILE => session.execution_plan = Some(text),
            CONTEXT_FILE => session.context = Some(parse_context(&text)),
            TASK_LOG_FILE => session.task_log = Some(parse_task_log(&text)),
            PROGRESS_FILE if text.trim().is_empty() => blank_progress = true,
            PROGRESS_FILE => session.progress = Some(parse_progress(&text)),
            SUMMARY_FILE => session.summary = Some(parse_session_summary(&text)),
            _ => match task_context_id(&name) {
                Some(id) => {
                    session
                        .task_contexts
                        .insert(id.to_owned(), parse_task_context(&text));
                }
                None => session.other_files.push(name),
            },
        }
    }
    if blank_progress && session.lock.is_some() {
        session.progress = Some(rebuilt_progress(&session));
    }
    Ok(session)
}

/// The progress of a session whose `progress.md` is empty (emptied by hand or by a tool; cairn
/// never leaves one): running, with the results its task log holds, so the session carries on
/// instead of reading as never begun and refusing every task command. The next write of the
/// progress puts the whole file back; the active tasks and the wave are what it cannot know.
fn rebuilt_progress(session: &LiveSession) -> Progress {
    let mut completed: Vec<CompletedTask> = Vec::new();
    for row in session.task_log.iter().flat_map(|l| l.rows.iter()) {
        completed.retain(|t| t.id != row.task_id);
        completed.push(CompletedTask {
            id: row.task_id.clone(),
            subject: row.subject.clone(),
            result: row.status,
            duration: row.duration,
        });
    }
    Progress {
        status: ProgressStatus::Executing,
        wave: None,
        max_parallel: None,
        updated: None,
        active: Vec::new(),
        completed,
    }
}

/// The task id of a `context-task-{id}.md` file name.
fn task_context_id(name: &str) -> Option<&str> {
    name.strip_prefix(TASK_CONTEXT_PREFIX)?
        .strip_suffix(TASK_CONTEXT_SUFFIX)
        .filter(|id| !id.is_empty())
}

fn task_context_file(id: &str) -> String {
    format!("{TASK_CONTEXT_PREFIX}{id}{TASK_CONTEXT_SUFFIX}")
}

/// Every file under `dir`, as `/`-separated paths starting with `prefix`, sorted.
fn collect_files(dir: &Path, prefix: &str, out: &mut Vec<String>) -> Result<(), StoreError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io_error("list session directory", dir))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    for name in entries {
        let path = dir.join(&name);
        let rel = format!("{prefix}/{name}");
        if path.is_dir() {
            collect_files(&path, &rel, out)?;
        } else {
            out.push(rel);
        }
    }
    Ok(())
}

#[async_trait]
impl ExecutionSessionStore for FsExecutionSessionStore {
    async fn load(&self) -> Result<LiveSession, StoreError> {
        if intent::pending(&self.sessions) {
            drop(self.lock()?);
        }
        read_session(&self.live_dir())
    }

    async fn start(&self, decide: Decide<'_, StartPlan>) -> Result<Started, Error> {
        let _guard = self.lock()?;
        let live_dir = self.live_dir();
        let previous = read_session(&live_dir)?;
        let plan = decide(&previous)?;
        let leftovers_to = if previous.is_empty() {
            None
        } else {
            let Some(dir) = &plan.archive_leftovers_to else {
                return Err(
                    StoreError::already_exists(Entity::ExecutionSession, LIVE_SESSION_DIR).into(),
                );
            };
            self.check_new_archive(dir)?;
            Some(dir.clone())
        };
        self.remove_debris()?;
        let staging = self.build_session(&plan.session)?;
        failpoint("session:after-build");
        if let Some(dir) = &leftovers_to {
            self.move_live_to(dir)?;
        }
        let placed = (|| {
            // An empty live directory (possibly holding an empty `tasks/`) makes way.
            match std::fs::remove_dir_all(&live_dir) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("clear the empty live directory", &live_dir)(e)),
            }
            failpoint("session:before-live-rename");
            rename(&staging, &live_dir, "move the new session into place")?;
            fsync_dir(&self.sessions)
        })();
        match placed {
            Ok(()) => Ok(Started { previous, plan }),
            Err(e) if leftovers_to.is_some() => Err(StoreError::after_commit(e).into()),
            Err(e) => Err(e.into()),
        }
    }

    async fn update_progress(&self, decide: Decide<'_, Progress>) -> Result<Progress, Error> {
        let _guard = self.lock()?;
        let live = self.live_session()?;
        let progress = decide(&live)?;
        self.write(
            &self.live_dir().join(PROGRESS_FILE),
            &render_progress(&progress),
        )?;
        Ok(progress)
    }

    async fn update_progress_moving(
        &self,
        decide: Decide<'_, Progress>,
        project_move: ProjectMove,
    ) -> Result<Progress, Error> {
        let _guard = self.lock()?;
        let live = self.live_session()?;
        let progress = decide(&live)?;
        self.write_live_moving(
            vec![FileWrite::new(PROGRESS_FILE, render_progress(&progress))],
            Some(project_move),
        )?;
        Ok(progress)
    }

    async fn project_moves(&self) -> Result<Vec<ProjectMove>, StoreError> {
        // One `stat` when nothing is recorded: every command asks.
        if !self.sessions.join(PROJECT_MOVES_FILE).exists() && !intent::pending(&self.sessions) {
            return Ok(Vec::new());
        }
        let _guard = self.lock()?;
        self.read_project_moves()
    }

    async fn forget_project_move(&self, done: &ProjectMove) -> Result<(), StoreError> {
        failpoint("session:before-forget-move");
        let _guard = self.lock()?;
        let mut moves = self.read_project_moves()?;
        let before = moves.len();
        moves.retain(|m| m != done);
        if moves.len() == before {
            return Ok(());
        }
        let path = self.sessions.join(PROJECT_MOVES_FILE);
        if moves.is_empty() {
            std::fs::remove_file(&path).map_err(io_error("remove", &path))?;
            fsync_dir(&self.sessions)
        } else {
            self.write(&path, &encode_moves(&moves))
        }
    }

    async fn record_task(&self, decide: Decide<'_, TaskRecord>) -> Result<TaskRecord, Error> {
        let _guard = self.lock()?;
        let live = self.live_session()?;
        let record = decide(&live)?;
        let dir = self.live_dir();
        let log_path = dir.join(TASK_LOG_FILE);
        let mut text = read_optional(&log_path)?.unwrap_or_else(|| TASK_LOG_HEADER.to_owned());
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&render_row(&record.row));
        // The row, the progress that counts it and the project move it implies land together
        // (issue #16).
        self.write_live_moving(
            vec![
                FileWrite::new(TASK_LOG_FILE, text),
                FileWrite::new(PROGRESS_FILE, render_progress(&record.progress)),
            ],
            record.project_move.clone(),
        )?;
        Ok(record)
    }

    async fn write_task_context(
        &self,
        task_id: &str,
        report: &TaskContext,
    ) -> Result<(), StoreError> {
        check_segment(task_id, "task id")?;
        let _guard = self.lock()?;
        let dir = self.live_dir();
        if !dir.join(LOCK_FILE).is_file() {
            return Err(no_live_session());
        }
        self.write(
            &dir.join(task_context_file(task_id)),
            &render_task_context(report),
        )
    }

    async fn update_context(
        &self,
        decide: Decide<'_, ContextUpdate>,
    ) -> Result<ContextUpdate, Error> {
        let _guard = self.lock()?;
        let live = self.live_session()?;
        let update = decide(&live)?;
        // The merged context and the removal of what it merged land together, so no task
        // context is merged twice or lost.
        let mut writes = vec![FileWrite::new(
            CONTEXT_FILE,
            render_context(&update.context),
        )];
        for id in &update.consumed_task_contexts {
            check_segment(id, "task id")?;
            writes.push(FileWrite::remove(&task_context_file(id)));
        }
        self.write_live(writes)?;
        Ok(update)
    }

    async fn finish(&self, decide: Decide<'_, Finale>) -> Result<Finale, Error> {
        let _guard = self.lock()?;
        let live = self.live_session()?;
        let finale = decide(&live)?;
        self.check_new_archive(&finale.archive_dir)?;
        // `Status: Complete` and the summary land together; the move is one rename after.
        self.write_live(vec![
            FileWrite::new(PROGRESS_FILE, render_progress(&finale.progress)),
            FileWrite::new(SUMMARY_FILE, render_session_summary(&finale.summary)),
        ])?;
        self.move_live_to(&finale.archive_dir)
            .map_err(StoreError::after_commit)?;
        Ok(finale)
    }

    async fn archive(&self, dir_name: &str) -> Result<bool, StoreError> {
        check_segment(dir_name, "archive directory")?;
        let _guard = self.lock()?;
        if read_session(&self.live_dir())?.is_empty() {
            return Ok(false);
        }
        self.check_new_archive(dir_name)?;
        self.move_live_to(dir_name)?;
        Ok(true)
    }

    async fn archive_if(&self, dir_name: &str, decide: Decide<'_, ()>) -> Result<bool, Error> {
        check_segment(dir_name, "archive directory")?;
        let _guard = self.lock()?;
        let live = read_session(&self.live_dir())?;
        if live.is_empty() {
            return Ok(false);
        }
        decide(&live)?;
        self.check_new_archive(dir_name)?;
        self.move_live_to(dir_name)?;
        Ok(true)
    }

    async fn list_archived(&self) -> Result<Vec<String>, StoreError> {
        let entries = match std::fs::read_dir(&self.sessions) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error("list sessions", &self.sessions)(e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error("list sessions", &self.sessions))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != LIVE_SESSION_DIR && !name.starts_with('.') && entry.path().is_dir() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    async fn load_archived(&self, dir_name: &str) -> Result<LiveSession, StoreError> {
        let dir = self.archive_dir(dir_name);
        if check_path_segment(dir_name).is_err()
            || dir_name == LIVE_SESSION_DIR
            || dir_name.starts_with('.')
            || !dir.is_dir()
        {
            return Err(StoreError::not_found(Entity::ExecutionArchive, dir_name));
        }
        read_session(&dir)
    }
}

/// Writes `execution_pointer.md` (one line: the absolute path of the live session directory, with
/// a trailing slash as the seed writes it) into a Claude Code task-list directory, atomically.
/// The list directory is created if missing.
pub fn write_execution_pointer(list_dir: &Path, live_dir: &Path) -> Result<PathBuf, StoreError> {
    std::fs::create_dir_all(list_dir).map_err(io_error("create task-list directory", list_dir))?;
    let path = list_dir.join(EXECUTION_POINTER_FILE);
    let mut text = live_dir.display().to_string();
    if !text.ends_with('/') {
        text.push('/');
    }
    text.push('\n');
    atomic::write_atomic(list_dir, &path, text.as_bytes())?;
    Ok(path)
}
