//! cairn's filesystem adapter: the durability machinery every file-backed store is built on.
//!
//! The domain crate decides *what* to persist; this crate decides *how* bytes reach the disk so
//! that a crash, a `kill -9`, a full disk or two hooks racing each other never leave a state file
//! half-written or an update lost. The pieces are small and independent, and each one owns one
//! guarantee:
//!
//! | module | guarantee |
//! |---|---|
//! | [`atomic`] | a state file is replaced whole or not at all (temp file, fsync, rename, fsync dir) |
//! | [`lock`] | one read-modify-write at a time per project, across processes, without spinning |
//! | [`progress_log`] | append-only audit log: one `write` per entry, a torn tail is reported, never "repaired" |
//! | [`checkpoints`] | numbered snapshots; two writers can never claim the same number |
//! | [`schema`] | every JSON file cairn writes is checked against an embedded JSON Schema first |
//! | [`layout`] | where each file of a project lives; ids are validated so no path escapes the store |
//! | [`tasklist`] | the text of a Claude Code task file |
//! | [`root`] | which directory is the repository root |
//! | [`execution`] | the text of an execution session's files (lock, progress, task log, contexts, summary) |
//! | [`execution_store`] | execution sessions on disk: the live directory, archives, crash-safe moves, one lock |
//! | [`intent`] | a command that replaces several files of a wing writes its intent ahead, so a crash between them is finished on the next open |
//! | `parallel` | the steps whose cost grows with the store (cache decode and encode, a foreign file's validation) split across the cores |
//! | [`failpoints`] | white-box crash points (`CAIRN_FAILPOINT`) used by the crash tests |
//! | [`orchestration`] | the Markdown log of an orchestration session file |
//! | [`orchestration_store`] | the active orchestration session and its archive on disk, every write atomic and locked |
//! | [`plan`] | the text of a plan's files (`state.md`, `decisions.md`, the pointer, templates) |
//! | [`plan_store`] | plans and the `.current_plan` pointer on disk, every write atomic and locked |
//! | [`project_merge`] | the text side of `cairn merge-driver`: a semantic git merge of a project's files |
//! | `project_journal` | the replay payload that makes the progress log a write-ahead log of the project store |
//! | `verdicts` | `doctor --full` validates again only the tasks documents whose bytes have not passed before |
//! | [`tasklist_store`] | Claude Code's task lists (`~/.claude/tasks/{listId}/`), one atomic write per task file |
//!
//! Errors are [`cairn_domain::StoreError`] wherever an operation touches the disk: every I/O
//! failure names the operation and the path, so a user reading the message knows which file to
//! look at. Id validation fails with [`layout::InvalidId`], which converts into a
//! [`cairn_domain::DomainError`] because a malformed id is the caller's mistake, not the disk's.
//!
//! Everything here is synchronous and blocking on purpose: the operations are short, and the async
//! adapters wrap them (`spawn_blocking` or a current-thread runtime) rather than this crate
//! pretending that `fsync` can be made non-blocking.

pub mod atomic;
pub mod checkpoints;
pub mod execution;
pub mod execution_store;
pub mod failpoints;
pub mod intent;
pub mod layout;
pub mod lock;
pub mod orchestration;
pub mod orchestration_store;
mod parallel;
pub mod plan;
pub mod plan_store;
pub mod progress_log;
mod project_journal;
pub mod project_merge;
pub mod project_store;
pub mod root;
pub mod schema;
pub mod system;
mod task_cache;
pub mod tasklist;
pub mod tasklist_store;
mod verdicts;

pub use execution_store::FsExecutionSessionStore;
pub use failpoints::failpoint;
pub use orchestration_store::FsOrchestrationStore;
pub use plan_store::{FsPlanStore, peek_active};
pub use project_store::FsProjectStore;
pub use system::{RandomIds, SystemClock};
pub use tasklist_store::FsTaskListStore;

use cairn_domain::StoreError;
use std::path::Path;

/// Builds the `map_err` closure for an I/O failure of `op` on `path`.
pub(crate) fn io_error<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        op,
        path: path.display().to_string(),
        source,
    }
}

/// Flushes a directory's entries (a new name, a rename, an unlink) to stable storage.
///
/// Without it a crash right after a rename may bring back the old name on some filesystems even
/// though the file data itself was synced. Windows has no directory handle to sync and NTFS
/// journals metadata, so this is a no-op there.
pub(crate) fn fsync_dir(dir: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        let handle = std::fs::File::open(dir).map_err(io_error("open directory for fsync", dir))?;
        handle
            .sync_all()
            .map_err(io_error("fsync directory", dir))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// The directory holding `path`, with `.` standing in for a bare file name.
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}
