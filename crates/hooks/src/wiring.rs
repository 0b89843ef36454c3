//! The hook library's composition root: the one module of `cairn-hooks` (besides `main.rs`) that
//! names the filesystem adapter. The guard, the dispatcher and `setup` take the store's layout,
//! the repository-root rule and the atomic writer from here, so they restate none of it and a
//! different adapter changes this file only. `cargo xtask tidy` holds the line.

pub use cairn_storage_fs::atomic::write_atomic;
pub use cairn_storage_fs::layout;
pub use cairn_storage_fs::root::{CLAUDE_PROJECT_DIR, find_git_work_tree};
pub use cairn_storage_fs::tasklist_store::task_list_id_settings;

/// Claude Code's task lists (`$CLAUDE_CONFIG_DIR/tasks`, else `~/.claude/tasks`), if the
/// environment says where they are.
pub fn open_tasklist_store() -> Option<std::sync::Arc<cairn_storage_fs::FsTaskListStore>> {
    cairn_storage_fs::FsTaskListStore::from_env().map(std::sync::Arc::new)
}
