//! File watching: any change under the watched directories, by any tool, becomes one numbered
//! change notice on a broadcast channel (debounced, so a burst of writes is one notice).

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher as _};
use tokio::sync::{broadcast, mpsc};

/// How long to wait after the first event of a burst before announcing it: one atomic write is
/// a temp file, a rename and a directory fsync, and a cairn command writes a few files.
pub const DEBOUNCE: Duration = Duration::from_millis(40);

pub type Watcher = notify::RecommendedWatcher;

/// Whether an event is a change worth a refresh. Reads (which open files and take locks, the
/// board's own included) and the lock sidecars are not: refreshing on them would loop.
fn is_change(event: &notify::Event) -> bool {
    let kind = matches!(
        event.kind,
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) | EventKind::Any
    );
    kind && event.paths.iter().any(|p| !is_lock(p))
}

fn is_lock(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".lock"))
}

/// Starts watching; must run inside the runtime (it spawns the debouncer). Returns the watcher
/// (dropping it stops the watching) and a warning per directory that could not be watched.
pub fn start(dirs: &[PathBuf], changes: broadcast::Sender<u64>) -> (Option<Watcher>, Vec<String>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<()>();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|e| is_change(&e)) {
            let _ = tx.send(());
        }
    });
    let mut watcher = match watcher {
        Ok(w) => w,
        Err(e) => return (None, vec![format!("file watching is off: {e}")]),
    };
    let mut warnings = Vec::new();
    for dir in dirs {
        if !dir.is_dir() {
            continue;
        }
        if let Err(e) = watcher.watch(dir, RecursiveMode::Recursive) {
            warnings.push(format!("cannot watch {}: {e}", dir.display()));
        }
    }
    tokio::spawn(async move {
        let mut seq = 0u64;
        while rx.recv().await.is_some() {
            tokio::time::sleep(DEBOUNCE).await;
            while rx.try_recv().is_ok() {}
            seq += 1;
            // No page open is not an error.
            let _ = changes.send(seq);
        }
    });
    (Some(watcher), warnings)
}
