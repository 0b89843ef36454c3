//! The on-disk formats of execution sessions (`.claude/sessions/<dir>/`): the lock file,
//! `progress.md`, `task_log.md`, `execution_context.md` and the per-task `context-task-{id}.md`,
//! and `session_summary.md`.
//!
//! The domain holds the values ([`LockFile`](cairn_domain::execution::LockFile),
//! [`Progress`](cairn_domain::execution::Progress), [`TaskLog`](cairn_domain::execution::TaskLog),
//! [`ExecutionContext`](cairn_domain::execution::ExecutionContext), …) and the rules; this
//! module writes and reads their text. Every parser here is total: a damaged file reads as
//! whatever could be salvaged, because the board and the orchestrator must keep going on a file
//! another tool or a crash left behind.

mod context_md;
mod lock_file;
mod progress_md;
mod summary_md;
mod task_log_md;

pub use context_md::{parse_context, parse_task_context, render_context, render_task_context};
pub use lock_file::{parse_lock, render_lock};
pub use progress_md::{SEPARATOR, parse_progress, render_progress};
pub use summary_md::{parse_session_summary, render_session_summary};
pub use task_log_md::{TASK_LOG_HEADER, parse_row, parse_task_log, render_row, render_task_log};
