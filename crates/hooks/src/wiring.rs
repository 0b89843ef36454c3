//! The hook library's composition root: the one module of `cairn-hooks` (besides `main.rs`) that
//! names the filesystem adapter. The guard, the dispatcher and `setup` take the store's layout,
//! the repository-root rule and the atomic writer from here, so they restate none of it and a
//! different adapter changes this file only. `cargo xtask tidy` holds the line.

pub use cairn_storage_fs::atomic::write_atomic;
pub use cairn_storage_fs::layout;
pub use cairn_storage_fs::root::{CLAUDE_PROJECT_DIR, find_git_work_tree};

/// The orchestration store, for the events that read or record orchestration state.
pub mod orchestration {
    use std::path::Path;

    pub use cairn_domain::orchestration::archive::ACTIVE_SESSION_PATH;
    pub use cairn_storage_fs::orchestration_store::{STATE_DIR_ENV, state_dir};

    pub fn open(root: &Path, state_dir: &Path) -> cairn_storage_fs::FsOrchestrationStore {
        cairn_storage_fs::FsOrchestrationStore::new(root, state_dir)
            .with_lock_timeout(crate::HOOK_LOCK_TIMEOUT)
    }
}

pub use cairn_storage_fs::tasklist_store::task_list_id_settings;

/// Whether `CAIRN_STORE` or `<root>/.claude/cairn.toml` names a store other than the files
/// (or names one wrongly, which opening it will report). Reads one small file at most.
pub fn names_shared_store(root: &std::path::Path) -> bool {
    !matches!(
        cairn_storage_pg::choose(None, root),
        Ok(cairn_storage_pg::StoreChoice::Files)
    )
}

/// Claude Code's task lists (`$CLAUDE_CONFIG_DIR/tasks`, else `~/.claude/tasks`), if the
/// environment says where they are.
pub fn open_tasklist_store() -> Option<std::sync::Arc<cairn_storage_fs::FsTaskListStore>> {
    cairn_storage_fs::FsTaskListStore::from_env().map(std::sync::Arc::new)
}

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cairn_domain::plan::PlanStore;
use cairn_domain::ports::IdGen;

/// The active plan's id and state from the pointer and the first bytes of `state.md` only: the
/// one plan read PreToolUse may make.
pub use cairn_storage_fs::peek_active;

/// The plan store under `root`, for the events that may read and write it.
pub fn open_plan_store(root: &Path, lock_timeout: Duration) -> Arc<dyn PlanStore> {
    Arc::new(cairn_storage_fs::FsPlanStore::new(root).with_lock_timeout(lock_timeout))
}

pub fn random_ids() -> Arc<dyn IdGen> {
    Arc::new(cairn_storage_fs::RandomIds)
}

/// The execution sessions under `root` (`.claude/sessions/`), for SessionStart's context.
pub fn open_execution_store(root: &Path) -> cairn_storage_fs::FsExecutionSessionStore {
    cairn_storage_fs::FsExecutionSessionStore::new(root)
}
