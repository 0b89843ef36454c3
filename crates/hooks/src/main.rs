//! `cairn-hook`: reads one Claude Code hook payload on stdin, answers on stdout, exits 0.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use cairn_domain::project::store::ProjectStore;
use cairn_hooks::HOOK_LOCK_TIMEOUT;
use cairn_hooks::dispatch::{Deps, HookEnv};
use cairn_hooks::input::{INPUT_CAP, READ_DEADLINE};
use cairn_storage_fs::SystemClock;
use cairn_storage_fs::project_store::FsProjectStore;
use cairn_storage_pg::{PgProjectStore, StoreChoice};

#[global_allocator]
static HEAP: cairn_heap::Heap = cairn_heap::Heap;

/// The project store the CLI would use for `root` (`CAIRN_STORE`, else `.claude/cairn.toml`,
/// else the files). An error goes to the hook's error log and the event fails open.
fn open_store(root: &Path) -> Result<Arc<dyn ProjectStore>, String> {
    // Only the events that read the store get here (PreToolUse does not): they touch the whole
    // task list, and are worth a heap tuned for it.
    cairn_heap::tune_for_a_short_process();
    cairn_domain::project::forget_lists_when_dropped();
    match cairn_storage_pg::choose(None, root)? {
        StoreChoice::Files => Ok(Arc::new(
            FsProjectStore::new(root).with_lock_timeout(HOOK_LOCK_TIMEOUT),
        )),
        StoreChoice::Postgres(url) => Ok(Arc::new(
            PgProjectStore::new(&url)
                .map_err(|e| e.to_string())?
                .with_lock_timeout(HOOK_LOCK_TIMEOUT),
        )),
    }
}

fn main() {
    // Panics are caught and written to the hook error log; stderr stays quiet.
    std::panic::set_hook(Box::new(|_| {}));
    let env = HookEnv::from_process();
    let deps = Deps {
        env: &env,
        open_store: &open_store,
        clock: Arc::new(SystemClock),
    };
    if let Some(line) = cairn_hooks::run(std::io::stdin(), &deps, INPUT_CAP, READ_DEADLINE) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(line.as_bytes());
        let _ = stdout.flush();
    }
}
