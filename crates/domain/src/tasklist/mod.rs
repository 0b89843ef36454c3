//! The Claude Code side of the bridge: task files under `~/.claude/tasks/{listId}/`, the guards
//! on list ids and on `execution_pointer.md`, and the id mapping between cairn and Claude Code.

pub mod guard;
pub mod ids;
pub mod task;

pub use guard::{resolve_execution_pointer, validate_list_id};
pub use ids::{list_task_id, project_task_id};
pub use task::{ClaudeTask, ClaudeTaskStatus, TaskFileWarning, TaskParse, parse_task};
