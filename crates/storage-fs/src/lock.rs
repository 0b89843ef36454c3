//! Exclusive advisory locks on a sidecar lock file.
//!
//! Every read-modify-write of a project holds [`lock_exclusive`] on the project's lock file for
//! the whole read → mutate → atomic write sequence, so two processes can never both read version N
//! and both write version N+1 (a lost update). Readers take no lock: [`crate::atomic`] guarantees
//! they always see a whole file.
//!
//! Why a sidecar file: the lock is held on an open file description. Locking `tasks.json` itself
//! would be useless because [`crate::atomic::write_atomic`] renames a new inode over it — the next
//! writer would open and lock the *new* inode while the old lock still guards the old one. The
//! lock file is never renamed, rewritten or deleted (deleting it would let a late opener lock an
//! orphaned inode while another process locks a freshly created one).
//!
//! Mechanism: [`std::fs::File::lock`] (`flock(LOCK_EX)` on Unix, `LockFileEx` on Windows). The
//! operating system releases the lock when the holder's descriptor closes, which includes the
//! process being killed, so a crashed holder never leaves a stale lock behind. Two opens in the
//! same process are two descriptions and exclude each other too, so threads are covered as well.
//!
//! Waiting: a contended writer blocks in the kernel — no polling loop, no sleep-and-retry. Because
//! `File::lock` has no timeout, the blocking call runs on a helper thread that hands the locked
//! file back through a channel while the caller waits with `recv_timeout`. If the caller gives up,
//! the helper stays blocked until the lock frees, then fails to send (the receiver is gone) and
//! drops the file, which releases the lock at once: an abandoned waiter can delay other writers
//! by no more than the instant it takes to notice. The cost is one parked thread per timed-out
//! attempt until the holder lets go; a CLI or hook gives up and exits long before that matters.
//!
//! Filesystems without working `flock` (some network mounts) report an error rather than
//! silently not locking; that error is returned.

use crate::io_error;
use cairn_domain::StoreError;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A held exclusive lock. Dropping it releases the lock.
#[derive(Debug)]
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct LockGuard {
    // Closing this descriptor is what releases the lock.
    _file: File,
    path: PathBuf,
}

impl LockGuard {
    /// The lock file this guard holds.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Takes the exclusive lock on `lock_path`, waiting at most `timeout` for another holder.
///
/// The lock file is created if missing (its parent directory must exist); its content is never
/// read or written. Returns immediately when the lock is free.
///
/// Errors: [`StoreError::LockTimeout`] naming the lock file and the time waited when another
/// holder kept it for the whole `timeout`; [`StoreError::Io`] if the file cannot be opened or the
/// filesystem refuses to lock.
pub fn lock_exclusive(lock_path: &Path, timeout: Duration) -> Result<LockGuard, StoreError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(lock_path)
        .map_err(io_error("open lock file", lock_path))?;
    let guard = |file| LockGuard {
        _file: file,
        path: lock_path.to_path_buf(),
    };

    // The uncontended case, which is nearly every case, needs no thread.
    match file.try_lock() {
        Ok(()) => return Ok(guard(file)),
        Err(TryLockError::WouldBlock) => {}
        Err(TryLockError::Error(source)) => return Err(io_error("lock", lock_path)(source)),
    }

    let started = Instant::now();
    let (sender, receiver) = mpsc::sync_channel::<std::io::Result<File>>(1);
    std::thread::Builder::new()
        .name("cairn-lock-wait".into())
        .spawn(move || {
            let outcome = file.lock().map(|()| file);
            // If the waiter has given up the send fails and the file (with the lock) is dropped
            // right here, so an abandoned attempt releases the lock the moment it gets it.
            let _ = sender.send(outcome);
        })
        .map_err(io_error("spawn lock-wait thread", lock_path))?;

    let received = match receiver.recv_timeout(timeout) {
        Ok(outcome) => outcome,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            return Err(StoreError::LockTimeout {
                lock: lock_path.display().to_string(),
                waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            });
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            return Err(io_error("lock", lock_path)(std::io::Error::other(
                "the lock-wait thread died",
            )));
        }
    };
    // `receiver` is dropped on every return path above, taking any late-arriving file with it.
    received.map(guard).map_err(io_error("lock", lock_path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    const GENEROUS: Duration = Duration::from_secs(10);

    #[test]
    fn a_free_lock_is_taken_at_once_and_creates_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".lock");
        let started = Instant::now();
        let guard = lock_exclusive(&path, GENEROUS).unwrap();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(guard.path(), path);
        assert!(path.is_file());
    }

    #[test]
    fn a_held_lock_times_out_with_the_path_and_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".lock");
        let _held = lock_exclusive(&path, GENEROUS).unwrap();

        let started = Instant::now();
        let error = lock_exclusive(&path, Duration::from_millis(150)).unwrap_err();

        assert!(started.elapsed() >= Duration::from_millis(150));
        match error {
            StoreError::LockTimeout { lock, waited_ms } => {
                assert_eq!(lock, path.display().to_string());
                assert!((150..5_000).contains(&waited_ms), "waited {waited_ms} ms");
            }
            other => panic!("expected LockTimeout, got {other:?}"),
        }
    }

    #[test]
    fn dropping_the_guard_releases_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".lock");
        drop(lock_exclusive(&path, GENEROUS).unwrap());
        let started = Instant::now();
        let _again = lock_exclusive(&path, Duration::from_millis(100)).unwrap();
        assert!(started.elapsed() < Duration::from_millis(100));
    }

    #[test]
    fn a_waiting_writer_gets_the_lock_when_the_holder_releases_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".lock");
        let held = lock_exclusive(&path, GENEROUS).unwrap();
        let release_after = Duration::from_millis(200);

        let started = Instant::now();
        let waited = std::thread::scope(|scope| {
            scope.spawn(move || {
                std::thread::sleep(release_after);
                drop(held);
            });
            let _guard = lock_exclusive(&path, GENEROUS).unwrap();
            started.elapsed()
        });
        assert!(
            waited >= release_after,
            "it waited for the holder ({waited:?})"
        );
        assert!(
            waited < GENEROUS / 2,
            "it woke up when the lock was released ({waited:?})"
        );
    }

    #[test]
    fn an_abandoned_waiter_releases_the_lock_as_soon_as_it_gets_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".lock");
        let held = lock_exclusive(&path, GENEROUS).unwrap();
        // This attempt gives up, but its helper thread keeps waiting in the kernel.
        assert!(matches!(
            lock_exclusive(&path, Duration::from_millis(50)),
            Err(StoreError::LockTimeout { .. })
        ));

        drop(held);

        // The helper thread now gets the lock; it must let go of it immediately, or this times out.
        let started = Instant::now();
        let _guard = lock_exclusive(&path, Duration::from_secs(5)).unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "took {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn an_unopenable_lock_file_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join(".lock");
        let StoreError::Io {
            op, path: reported, ..
        } = lock_exclusive(&path, GENEROUS).unwrap_err()
        else {
            panic!("expected an Io error");
        };
        assert_eq!(op, "open lock file");
        assert_eq!(reported, path.display().to_string());
    }

    /// The property the lock exists for: concurrent read-modify-write cycles lose no update.
    #[test]
    fn no_update_is_lost_under_contention() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(".lock");
        let temp = dir.path().join("temp");
        let counter = dir.path().join("counter");
        crate::atomic::write_atomic(&temp, &counter, b"0").unwrap();
        let (threads, rounds) = (4, 25);
        let barrier = Barrier::new(threads);

        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    barrier.wait();
                    for _ in 0..rounds {
                        let _guard = lock_exclusive(&lock, GENEROUS).unwrap();
                        let value: u32 =
                            std::fs::read_to_string(&counter).unwrap().parse().unwrap();
                        std::thread::yield_now();
                        crate::atomic::write_atomic(
                            &temp,
                            &counter,
                            (value + 1).to_string().as_bytes(),
                        )
                        .unwrap();
                    }
                });
            }
        });

        assert_eq!(
            std::fs::read_to_string(&counter).unwrap(),
            (threads * rounds).to_string()
        );
    }
}
