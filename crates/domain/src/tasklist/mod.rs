//! The Claude Code side of the bridge: task files under `~/.claude/tasks/{listId}/`, the guards
//! on list ids and on `execution_pointer.md`, the id mapping between cairn and Claude Code, the
//! [`TaskListStore`] port and the sync service ([`sync`]: push, pull, status).

pub mod guard;
pub mod ids;
pub mod store;
pub mod sync;
pub mod task;

#[cfg(feature = "testkit")]
pub mod contract;
#[cfg(feature = "testkit")]
pub mod memory;

pub use guard::{resolve_execution_pointer, validate_list_id};
pub use ids::{list_task_id, project_task_id};
pub use store::{
    CAIRN_METADATA_KEY, FileProblem, ListId, ListRead, PointerState, Removal, TaskListStore,
    is_safe_task_id, written_by_cairn,
};
pub use sync::{
    Conflict, Holder, Ignored, ListIdSource, ListIdSources, ListWrite, ProjectCreate, ProjectEdit,
    ProjectMove, PullReport, PushReport, Refusal, StatusReport, TaskListService,
};
pub use task::{ClaudeTask, ClaudeTaskStatus, TaskFileWarning, TaskParse, parse_task};
