//! The composition root: the one module of `cairn` that names the filesystem adapter. Everything
//! else reaches the store through the domain's service and ports, so swapping the adapter (a
//! database, say) changes this file only. `cargo xtask tidy` holds the line.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cairn_domain::StoreError;
use cairn_domain::plan::PlanStore;
use cairn_domain::ports::Clock;
use cairn_domain::ports::IdGen;
use cairn_domain::project::store::ProjectStore;
use cairn_storage_fs::{FsPlanStore, FsProjectStore, RandomIds, SystemClock};

/// The repository root: `--root`, else `$CLAUDE_PROJECT_DIR`, else the enclosing git work tree,
/// else the current directory.
pub fn resolve_root(explicit: Option<&Path>) -> Result<PathBuf, StoreError> {
    Ok(cairn_storage_fs::root::resolve_root(explicit)?.path)
}

/// The one place the store adapter is chosen. The adapter gets the run's clock too, so what it
/// stamps by itself (recoveries) follows `CAIRN_NOW` like everything else.
pub fn open_store(
    root: &Path,
    clock: Arc<dyn Clock>,
    lock_timeout: Option<Duration>,
) -> Arc<dyn ProjectStore> {
    let store = FsProjectStore::new(root).with_clock(clock);
    Arc::new(match lock_timeout {
        Some(timeout) => store.with_lock_timeout(timeout),
        None => store,
    })
}

pub fn system_clock() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// The plan store of the repository at `root`.
pub fn open_plan_store(root: &Path, lock_timeout: Option<Duration>) -> Arc<dyn PlanStore> {
    let store = FsPlanStore::new(root);
    Arc::new(match lock_timeout {
        Some(timeout) => store.with_lock_timeout(timeout),
        None => store,
    })
}

pub fn random_ids() -> Arc<dyn IdGen> {
    Arc::new(RandomIds)
}
