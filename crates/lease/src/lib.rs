//! Whether anyone else has a file open.
//!
//! cairn replaces tasks.json by renaming a new file over it, so that a reader sees the old file
//! or the new one, whole. Writing that new file into the inode tasks.json had two versions ago
//! (kept, not freed, see `cairn_storage_fs::atomic`) instead of a fresh one saves a write on a
//! large store the cost of allocating and then freeing megabytes of pages and blocks — but only
//! if nobody can see that inode change: no other name for it, and no open file. A process that
//! opened tasks.json back then and still reads it (a slow reader, `git add`, an editor) would
//! otherwise find its bytes rewritten under it.
//!
//! The kernel knows, and says so through file leases: a write lease (`F_SETLEASE`, `F_WRLCK`) is
//! granted only on a file that no other open file description has open — for reading, for writing,
//! or behind a memory mapping. [`open_elsewhere`] asks for one and gives it back at once. Between
//! the two calls, a process opening the file would break the lease, and the kernel would signal
//! the holder: with `SIGIO` by default, whose default action ends the process. The lease's signal
//! is set to `SIGURG` first (`F_SETSIG`), whose default action is to ignore it. (That open would
//! wait for the lease to be given back: microseconds.)
//!
//! Architecture Invariant: with `cairn-heap`, the only crate with unsafe code — three `fcntl`
//! calls on a descriptor the caller's `File` owns. Off Linux, nothing is known: [`open_elsewhere`]
//! says `None`.

use std::fs::File;

/// Whether another open file description has `file` open, as the kernel counts them (this
/// process's other descriptors of it included): `Some(false)` when nobody else has it open,
/// `Some(true)` when somebody does, `None` when it cannot be told — leases off
/// (`/proc/sys/fs/leases-enable`), a file owned by another user, a filesystem without leases,
/// another system. `file` must be open for writing.
///
/// The answer holds for as long as nobody opens the file again: the caller makes sure of that
/// (a name nobody else uses).
pub fn open_elsewhere(file: &File) -> Option<bool> {
    imp::open_elsewhere(file)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::fs::File;
    use std::os::fd::AsRawFd;

    /// `F_SETSIG` (Linux's `fcntl.h`: 10 on every architecture); the libc crate names it only
    /// for some targets.
    const F_SETSIG: libc::c_int = 10;

    pub(super) fn open_elsewhere(file: &File) -> Option<bool> {
        let fd = file.as_raw_fd();
        // SAFETY: `fcntl` with integer arguments on a descriptor `file` owns and keeps open for
        // the whole call; `F_SETSIG` only picks the signal a lease break on this open file
        // description would send.
        if unsafe { libc::fcntl(fd, F_SETSIG, libc::SIGURG) } == -1 {
            return None;
        }
        // SAFETY: as above; a granted lease belongs to this open file description and is given
        // back below (or with the descriptor, when `file` is closed).
        if unsafe { libc::fcntl(fd, libc::F_SETLEASE, libc::F_WRLCK) } == -1 {
            return match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EAGAIN) => Some(true),
                _ => None,
            };
        }
        // SAFETY: as above.
        let given_back = unsafe { libc::fcntl(fd, libc::F_SETLEASE, libc::F_UNLCK) } == 0;
        // A lease still held would make the next opener wait: the caller must not keep the file.
        given_back.then_some(false)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(super) fn open_elsewhere(_file: &std::fs::File) -> Option<bool> {
        None
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::process::{Command, Stdio};

    fn writable(path: &std::path::Path) -> File {
        OpenOptions::new().write(true).open(path).expect("open")
    }

    /// A file nobody else has open says so, again and again (the lease is given back each time);
    /// a second descriptor of it in this process, or a reader's, counts as somebody.
    #[test]
    fn a_file_is_open_elsewhere_while_another_descriptor_holds_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tasks.json");
        std::fs::write(&path, b"{}").expect("write");
        let file = writable(&path);
        assert_eq!(open_elsewhere(&file), Some(false));
        assert_eq!(
            open_elsewhere(&file),
            Some(false),
            "the lease was given back"
        );
        let reader = File::open(&path).expect("open");
        assert_eq!(open_elsewhere(&file), Some(true), "a reader");
        drop(reader);
        assert_eq!(open_elsewhere(&file), Some(false));
        // Opening the file after a check neither waits nor signals: the lease is gone.
        let again = File::open(&path).expect("open");
        drop(again);
    }

    /// Another process holding the file open — here `sleep` with it as its standard input — is
    /// seen; once it is gone, nobody is.
    #[test]
    fn another_process_holding_the_file_is_seen() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tasks.json");
        std::fs::write(&path, b"{}").expect("write");
        let file = writable(&path);
        let mut holder = Command::new("sleep")
            .arg("30")
            .stdin(File::open(&path).expect("open"))
            .stdout(Stdio::null())
            .spawn()
            .expect("sleep");
        assert_eq!(open_elsewhere(&file), Some(true));
        holder.kill().expect("kill");
        holder.wait().expect("wait");
        assert_eq!(open_elsewhere(&file), Some(false));
    }
}
