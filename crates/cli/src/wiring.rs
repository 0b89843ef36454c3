//! The composition root: the one module of `cairn` that names the filesystem adapter. Everything
//! else reaches the store through the domain's service and ports, so swapping the adapter (a
//! database, say) changes this file only. `cargo xtask tidy` holds the line.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cairn_domain::StoreError;
use cairn_domain::execution::store::ExecutionSessionStore;
use cairn_domain::orchestration::OrchestrationStore;
use cairn_domain::plan::PlanStore;
use cairn_domain::ports::Clock;
use cairn_domain::ports::IdGen;
use cairn_domain::project::store::ProjectStore;
use cairn_domain::tasklist::TaskListStore;
/// The store's one atomic writer, for the repository files cairn edits (`cairn setup git`).
pub use cairn_storage_fs::atomic::write_atomic;
pub use cairn_storage_fs::project_merge::{MergeError, Version, merge_file as merge_store_file};
pub use cairn_storage_fs::tasklist_store::task_list_id_settings;
use cairn_storage_fs::{
    FsExecutionSessionStore, FsOrchestrationStore, FsPlanStore, FsProjectStore, FsTaskListStore,
    RandomIds, SystemClock,
};
use cairn_storage_pg::{PgProjectStore, StoreChoice};

/// The repository root: `--root`, else `$CLAUDE_PROJECT_DIR`, else the enclosing git work tree,
/// else the current directory.
pub fn resolve_root(explicit: Option<&Path>) -> Result<PathBuf, StoreError> {
    Ok(cairn_storage_fs::root::resolve_root(explicit)?.path)
}

/// The one place the store adapter is chosen: `store` (`--store` / `CAIRN_STORE`), else
/// `.claude/cairn.toml`, else the files under `root`. The adapter gets the run's clock too, so
/// what it stamps by itself (recoveries) follows `CAIRN_NOW` like everything else.
/// Errors: a store that is not a postgres:// URL, or an unparsable URL (the message names it
/// without its password).
pub fn open_store(
    root: &Path,
    store: Option<&str>,
    clock: Arc<dyn Clock>,
    lock_timeout: Option<Duration>,
) -> Result<Arc<dyn ProjectStore>, String> {
    match cairn_storage_pg::choose(store, root)? {
        StoreChoice::Files => {
            let store = FsProjectStore::new(root).with_clock(clock);
            Ok(Arc::new(match lock_timeout {
                Some(timeout) => store.with_lock_timeout(timeout),
                None => store,
            }))
        }
        StoreChoice::Postgres(url) => {
            let store = PgProjectStore::new(&url)
                .map_err(|e| e.to_string())?
                .with_clock(clock);
            Ok(Arc::new(match lock_timeout {
                Some(timeout) => store.with_lock_timeout(timeout),
                None => store,
            }))
        }
    }
}

/// The orchestration store of the repository at `root`: state dir `$MAESTRO_STATE_DIR`
/// (relative to the root), default `docs/maestro`. Also returns the state directory, which
/// `orch resume` leaves out of the changed files it reports.
pub fn open_orchestration_store(
    root: &Path,
    lock_timeout: Option<Duration>,
) -> (Arc<dyn OrchestrationStore>, PathBuf) {
    let configured = std::env::var(cairn_storage_fs::orchestration_store::STATE_DIR_ENV).ok();
    let state_dir = cairn_storage_fs::orchestration_store::state_dir(root, configured.as_deref());
    let store = FsOrchestrationStore::new(root, &state_dir);
    let store = match lock_timeout {
        Some(timeout) => store.with_lock_timeout(timeout),
        None => store,
    };
    (Arc::new(store), state_dir)
}

pub fn system_clock() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// The execution sessions of the repository at `root` (`.claude/sessions/`).
pub fn open_execution_store(
    root: &Path,
    lock_timeout: Option<Duration>,
) -> Arc<dyn ExecutionSessionStore> {
    let store = FsExecutionSessionStore::new(root);
    Arc::new(match lock_timeout {
        Some(timeout) => store.with_lock_timeout(timeout),
        None => store,
    })
}

/// Did an execution session record a project move the project may not hold yet (a `session task
/// done|fail|skip` that died between its two stores)? One `stat`, for every command.
/// An unfinished session intent may hold one, so it counts too.
pub fn session_moves_recorded(root: &Path) -> bool {
    let sessions = root.join(cairn_storage_fs::execution_store::SESSIONS_DIR);
    sessions
        .join(cairn_storage_fs::execution_store::PROJECT_MOVES_FILE)
        .exists()
        || cairn_storage_fs::intent::pending(&sessions)
}

/// The plan store of the repository at `root`.
pub fn open_plan_store(root: &Path, lock_timeout: Option<Duration>) -> Arc<dyn PlanStore> {
    let store = FsPlanStore::new(root);
    Arc::new(match lock_timeout {
        Some(timeout) => store.with_lock_timeout(timeout),
        None => store,
    })
}

/// Writes `execution_pointer.md` into the task-list directory `list_dir`, naming the live
/// session directory of the repository at `root`. Returns the pointer's path.
pub fn link_task_list(list_dir: &Path, root: &Path) -> Result<PathBuf, StoreError> {
    let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let live = FsExecutionSessionStore::new(&root).live_dir();
    cairn_storage_fs::execution_store::write_execution_pointer(list_dir, &live)
}

/// This machine's name, for session locks.
pub fn hostname() -> String {
    cairn_storage_fs::system::hostname()
}

/// Claude Code's task lists: `$CLAUDE_CONFIG_DIR/tasks`, else `~/.claude/tasks`. `None` when
/// neither variable says where the configuration directory is.
pub fn open_tasklist_store() -> Option<Arc<dyn TaskListStore>> {
    FsTaskListStore::from_env().map(|store| Arc::new(store) as Arc<dyn TaskListStore>)
}

pub fn random_ids() -> Arc<dyn IdGen> {
    Arc::new(RandomIds)
}

/// What `cairn board` watches for changes: the repository's `.claude/` (projects, sessions,
/// plans), the orchestration state directory and Claude Code's task lists.
pub fn open_board_store(root: &Path, orchestration_state: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.join(".claude"), orchestration_state.to_path_buf()];
    if let Some(store) = FsTaskListStore::from_env() {
        dirs.push(store.root().to_path_buf());
    }
    dirs
}

/// The filesystem project store of the directory `dir` (`dir/.claude/projects/`): where
/// `cairn store export` writes and `cairn store import` reads.
pub fn open_files_store(dir: &Path, clock: Arc<dyn Clock>) -> Arc<dyn ProjectStore> {
    Arc::new(FsProjectStore::new(dir).with_clock(clock))
}

/// The run's store for messages: the PostgreSQL URL without its password, else the files' root.
/// Errors: as [`open_store`].
pub fn store_name(root: &Path, store: Option<&str>) -> Result<String, String> {
    Ok(match cairn_storage_pg::choose(store, root)? {
        StoreChoice::Files => format!("the files under {}", root.display()),
        StoreChoice::Postgres(url) => cairn_storage_pg::redact(&url),
    })
}

/// What `cairn store migrate` did.
#[derive(Debug, serde::Serialize)]
pub struct Migrated {
    /// The database, without its password.
    pub store: String,
    /// The migrations this run applied, oldest first (none when the schema was current).
    pub applied: Vec<AppliedMigration>,
    /// The schema version the database is at now.
    pub version: i32,
}

#[derive(Debug, serde::Serialize)]
pub struct AppliedMigration {
    pub version: i32,
    pub name: &'static str,
}

/// Applies the migrations the run's PostgreSQL store lacks; `Ok(None)` when the store is the
/// files, which have no schema to migrate. Errors: a bad store (usage), or the store's error.
pub async fn migrate_store(
    root: &Path,
    store: Option<&str>,
) -> Result<Option<Migrated>, crate::exit::Failure> {
    use crate::exit::{Code, Failure};
    let choice = cairn_storage_pg::choose(store, root)
        .map_err(|e| Failure::new(Code::Usage, e).with_kind("bad_store"))?;
    let StoreChoice::Postgres(url) = choice else {
        return Ok(None);
    };
    let pg = PgProjectStore::new(&url)?;
    let applied = pg.migrate().await?;
    let migrations = cairn_storage_pg::MIGRATIONS;
    Ok(Some(Migrated {
        store: pg.shown_url().to_owned(),
        applied: migrations
            .iter()
            .filter(|m| applied.contains(&m.version))
            .map(|m| AppliedMigration {
                version: m.version,
                name: m.name,
            })
            .collect(),
        version: migrations.last().map_or(0, |m| m.version),
    }))
}
