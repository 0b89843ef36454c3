//! Duplicate-delivery detection for the events that change state.
//!
//! The same event can reach cairn-hook twice at the same moment: cairn installed both as a plugin
//! and in settings.json, or a hook entry duplicated by hand. Matching hooks run in parallel, so
//! the copies race. Each store-changing event claims a marker file named after the event's
//! identity (event, session, source/trigger/…) with `create_new`, which exactly one process
//! wins; the others see a fresh marker and stand down. Markers older than the window no longer
//! count, so a genuinely repeated event (a second compaction in the same session) is served.
//!
//! Failing to create the marker for any other reason than "it exists" lets the event through: a
//! duplicated log line is a smaller harm than a lost checkpoint.

use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Two deliveries of one event closer than this are the same event. Far shorter than anything a
/// session can do twice on purpose (a compaction takes longer).
pub const WINDOW: Duration = Duration::from_secs(10);

/// Markers older than this are removed by [`prune`].
pub const MARKER_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

pub fn marker_dir(root: &Path) -> PathBuf {
    crate::errlog::hook_dir(root).join("hook-seen")
}

/// `true` if this process is the first to see the event identified by `key` within the window.
pub fn claim(dir: &Path, key: &str, now: SystemTime) -> bool {
    let path = dir.join(format!("{:016x}", fnv1a(key.as_bytes())));
    if fs::create_dir_all(dir).is_err() {
        return true;
    }
    for _ in 0..2 {
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(_) => return true,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                let fresh = fs::metadata(&path)
                    .and_then(|m| m.modified())
                    .is_ok_and(|at| now.duration_since(at).unwrap_or_default() < WINDOW);
                if fresh {
                    return false;
                }
                // A stale marker from an earlier occurrence: replace it, and let create_new
                // decide again who is first.
                let _ = fs::remove_file(&path);
            }
            Err(_) => return true,
        }
    }
    false
}

/// Removes markers older than [`MARKER_RETENTION`]; best effort.
pub fn prune(dir: &Path, now: SystemTime) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|at| now.duration_since(at).unwrap_or_default() > MARKER_RETENTION);
        if old {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// FNV-1a, 64 bits: stable across builds and platforms (std's hasher is not), which matters
/// because two different cairn-hook binaries may race on one marker.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_delivery_within_the_window_wins() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        assert!(claim(dir.path(), "PreCompact/s1/auto", now));
        assert!(!claim(dir.path(), "PreCompact/s1/auto", now));
        assert!(claim(dir.path(), "PreCompact/s2/auto", now));
        // Later than the window: a new occurrence.
        assert!(claim(dir.path(), "PreCompact/s1/auto", now + WINDOW * 2));
    }

    #[test]
    fn racing_deliveries_have_exactly_one_winner() {
        let dir = tempfile::tempdir().unwrap();
        let winners: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| claim(dir.path(), "SessionStart/s/startup", SystemTime::now())))
                .collect();
            handles
                .into_iter()
                .map(|h| usize::from(h.join().unwrap()))
                .sum()
        });
        assert_eq!(winners, 1);
    }

    #[test]
    fn prune_removes_only_old_markers() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        claim(dir.path(), "a", now);
        prune(dir.path(), now);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        prune(dir.path(), now + MARKER_RETENTION * 2);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_hash_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
