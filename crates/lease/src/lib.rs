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
//! The same kernel mechanism makes a file's bytes safe to map instead of read ([`Contents`]): a
//! read lease (`F_RDLCK`) is granted only on a file nobody has open for writing, and while it is
//! held anybody opening the file to write or truncate it waits (the kernel's lease-break time, 45 s
//! by default, far longer than any command maps a file), so the mapped bytes cannot change under
//! the reader — or vanish, which would kill it (`SIGBUS`). Mapped, a file's pages are the page
//! cache's own: no fresh memory to fault in and zero, no copy. git's three versions of a
//! 100,000-task tasks.json were 144 MB read into fresh memory per merge.
//!
//! Architecture Invariant: with `cairn-heap`, the only crate with unsafe code — `fcntl` calls on
//! a descriptor the caller's `File` owns, and `mmap`/`munmap` of a mapping [`Contents`] owns. Off
//! Linux, nothing is known: [`open_elsewhere`] says `None`, and [`Contents`] reads.

use std::fs::File;
use std::io::Read as _;
use std::ops::Deref;
use std::path::Path;

/// A file's bytes: mapped under a read lease where the kernel grants one (see the crate docs),
/// else read into memory. Either way they do not change while this lives. A mapping holds the
/// lease until it is dropped: drop it before this process opens the file to write it, or that
/// open waits for the lease-break time.
#[derive(Debug)]
pub struct Contents(imp::Bytes);

impl Contents {
    /// The bytes of the file at `path`.
    ///
    /// Errors: opening or reading it, as [`std::fs::read`] reports them.
    pub fn of(path: &Path) -> std::io::Result<Self> {
        Self::of_file(File::open(path)?)
    }

    /// [`Contents::of`] the file `file` has open for reading, from where it stands (its start,
    /// for the mapping): the bytes of the very file the caller opened and looked at, not of
    /// whatever its path names by now.
    ///
    /// Errors: reading it, when it cannot be mapped.
    pub fn of_file(file: File) -> std::io::Result<Self> {
        match imp::map(file) {
            Ok(mapped) => Ok(Self(mapped)),
            Err(mut file) => {
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes)?;
                Ok(Self(imp::Bytes::Read(bytes)))
            }
        }
    }

    /// The bytes of the file at `path` if they can be mapped, `None` if not (the caller reads
    /// them its own way: a piece at a time, say).
    ///
    /// Errors: opening it, as [`File::open`] reports them.
    pub fn mapped(path: &Path) -> std::io::Result<Option<Self>> {
        Ok(imp::map(File::open(path)?).ok().map(Self))
    }

    /// Whether the bytes are mapped rather than read.
    pub fn is_mapped(&self) -> bool {
        !matches!(self.0, imp::Bytes::Read(_))
    }
}

/// Bytes already in memory, as a `Contents` that was read: for a caller that holds bytes it made
/// or read beside ones it mapped.
impl From<Vec<u8>> for Contents {
    fn from(bytes: Vec<u8>) -> Self {
        Self(imp::Bytes::Read(bytes))
    }
}

impl Deref for Contents {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

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

/// Opens the file at `path` for writing without waiting on a lease: while a reader maps it
/// ([`Contents`]), a plain open for writing waits until the reader is done — or, past the
/// kernel's lease-break time (45 s), breaks its lease, and a truncation then kills it (`SIGBUS`).
/// This open fails at once instead (`ErrorKind::WouldBlock`).
///
/// Errors: as [`std::fs::OpenOptions::open`] reports them.
pub fn open_to_overwrite(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    #[cfg(target_os = "linux")]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    options.open(path)
}

/// Whether another open file description has `file` open for writing: a program writing it in
/// place this moment (git checks files out that way: unlink, create, write). `Some(false)` when
/// nobody does, `None` when it cannot be told (as for [`open_elsewhere`]). `file` must be open
/// for reading only: a read lease is what the kernel refuses while anybody may write the file.
pub fn open_for_writing_elsewhere(file: &File) -> Option<bool> {
    imp::open_for_writing_elsewhere(file)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::fs::File;
    use std::os::fd::AsRawFd;

    /// `F_SETSIG` (Linux's `fcntl.h`: 10 on every architecture); the libc crate names it only
    /// for some targets.
    const F_SETSIG: libc::c_int = 10;

    #[derive(Debug)]
    pub(super) enum Bytes {
        Read(Vec<u8>),
        /// `len` bytes mapped read-only at `at`, while `file` holds a read lease on them.
        Mapped {
            at: std::ptr::NonNull<u8>,
            len: usize,
            file: File,
        },
    }

    // SAFETY: the mapping is read-only and owned by the value: sharing or sending it shares or
    // sends a `&[u8]` / `Vec<u8>`'s worth of rights.
    unsafe impl Send for Bytes {}
    // SAFETY: as above.
    unsafe impl Sync for Bytes {}

    impl Bytes {
        pub(super) fn as_slice(&self) -> &[u8] {
            match self {
                Bytes::Read(bytes) => bytes,
                // SAFETY: `at` is a live read-only mapping of `len` bytes that this value owns
                // and unmaps only when dropped; the read lease `file` holds keeps every writer
                // and truncation out meanwhile (see the crate docs), so the bytes do not change.
                Bytes::Mapped { at, len, .. } => unsafe {
                    std::slice::from_raw_parts(at.as_ptr(), *len)
                },
            }
        }
    }

    impl Drop for Bytes {
        fn drop(&mut self) {
            if let Bytes::Mapped { at, len, file } = self {
                // SAFETY: the mapping `map` made, unmapped once; no slice of it outlives `self`.
                unsafe { libc::munmap(at.as_ptr().cast(), *len) };
                // The lease would go with the descriptor anyway; this gives it back first.
                give_back(file);
            }
        }
    }

    /// Takes a lease of `kind` (`F_RDLCK`, `F_WRLCK`) on `file`'s open file description, its
    /// break signalled by `SIGURG` (ignored by default; `SIGIO`, the default signal, ends the
    /// process). The error is the kernel's refusal.
    fn lease(file: &File, kind: libc::c_int) -> std::io::Result<()> {
        let fd = file.as_raw_fd();
        // SAFETY: `fcntl` with integer arguments on a descriptor `file` owns and keeps open for
        // the whole call; `F_SETSIG` only picks the signal a lease break would send.
        if unsafe { libc::fcntl(fd, F_SETSIG, libc::SIGURG) } == -1 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: as above; a granted lease belongs to this open file description and is given
        // back by `give_back`, or with the descriptor when `file` is closed.
        if unsafe { libc::fcntl(fd, libc::F_SETLEASE, kind) } == -1 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Gives back the lease on `file`: whether it went.
    fn give_back(file: &File) -> bool {
        // SAFETY: as in `lease`.
        unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) == 0 }
    }

    /// `file` mapped under a read lease, or `file` back when the kernel will not grant one
    /// (somebody has it open for writing, leases off, another owner, a filesystem without them),
    /// it is empty, or the mapping fails.
    pub(super) fn map(file: File) -> Result<Bytes, File> {
        if lease(&file, libc::F_RDLCK).is_err() {
            return Err(file);
        }
        // With the lease held the size cannot change: nobody can write to the file.
        let len = (file.metadata().ok())
            .and_then(|m| usize::try_from(m.len()).ok())
            .filter(|&len| len > 0);
        let at = len.and_then(|len| {
            // SAFETY: a new private read-only mapping of `len` bytes of an open file, at an
            // address the kernel picks; `MAP_POPULATE` only fills its page table up front.
            let at = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_POPULATE,
                    file.as_raw_fd(),
                    0,
                )
            };
            std::ptr::NonNull::new(at.cast::<u8>()).filter(|_| at != libc::MAP_FAILED)
        });
        match (at, len) {
            (Some(at), Some(len)) => Ok(Bytes::Mapped { at, len, file }),
            _ => {
                give_back(&file);
                Err(file)
            }
        }
    }

    pub(super) fn open_elsewhere(file: &File) -> Option<bool> {
        lease_refused(file, libc::F_WRLCK)
    }

    pub(super) fn open_for_writing_elsewhere(file: &File) -> Option<bool> {
        lease_refused(file, libc::F_RDLCK)
    }

    /// Whether the kernel refuses a lease of `kind` on `file` because of another open file
    /// description; a lease it grants is given back at once.
    fn lease_refused(file: &File, kind: libc::c_int) -> Option<bool> {
        match lease(file, kind) {
            Err(refused) if refused.raw_os_error() == Some(libc::EAGAIN) => Some(true),
            Err(_) => None,
            // A lease still held would make the next opener wait: the caller must not keep the
            // file.
            Ok(()) => give_back(file).then_some(false),
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(super) fn open_elsewhere(_file: &std::fs::File) -> Option<bool> {
        None
    }

    pub(super) fn open_for_writing_elsewhere(_file: &std::fs::File) -> Option<bool> {
        None
    }

    #[derive(Debug)]
    pub(super) enum Bytes {
        Read(Vec<u8>),
    }

    impl Bytes {
        pub(super) fn as_slice(&self) -> &[u8] {
            match self {
                Bytes::Read(bytes) => bytes,
            }
        }
    }

    pub(super) fn map(file: std::fs::File) -> Result<Bytes, std::fs::File> {
        Err(file)
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

    /// Held by every test for its whole run. Under `cargo test` the tests are threads of one
    /// process, and a child forked by one (`sh`, `sleep`) holds every descriptor the others have
    /// open until it execs — close-on-exec closes them only then — so another test's file looked
    /// open elsewhere, or its lease was broken, at random.
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
        SERIAL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A reader does not count as a writer; a descriptor open for writing does, until it closes.
    #[test]
    fn a_file_is_open_for_writing_elsewhere_while_a_writer_holds_it() {
        let _serial = one_at_a_time();
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tasks.json");
        std::fs::write(&path, b"{}").expect("write");
        let file = File::open(&path).expect("open");
        assert_eq!(open_for_writing_elsewhere(&file), Some(false));
        let reader = File::open(&path).expect("open");
        assert_eq!(open_for_writing_elsewhere(&file), Some(false), "a reader");
        let writer = writable(&path);
        assert_eq!(open_for_writing_elsewhere(&file), Some(true), "a writer");
        drop(writer);
        assert_eq!(
            open_for_writing_elsewhere(&file),
            Some(false),
            "the writer is gone"
        );
        drop(reader);
        assert_eq!(
            open_for_writing_elsewhere(&file),
            Some(false),
            "the lease was given back"
        );
    }

    /// A file nobody else has open says so, again and again (the lease is given back each time);
    /// a second descriptor of it in this process, or a reader's, counts as somebody.
    #[test]
    fn a_file_is_open_elsewhere_while_another_descriptor_holds_it() {
        let _serial = one_at_a_time();
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

    /// A file nobody writes is mapped, with its bytes; one somebody has open for writing is read
    /// instead, as is an empty one.
    #[test]
    fn contents_are_mapped_unless_somebody_writes_the_file() {
        let _serial = one_at_a_time();
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("theirs.json");
        std::fs::write(&path, b"{\"tasks\":[]}").expect("write");
        let contents = Contents::of(&path).expect("contents");
        assert!(contents.is_mapped());
        assert_eq!(&*contents, b"{\"tasks\":[]}");
        drop(contents);
        let mapped = Contents::mapped(&path).expect("open").expect("mapped");
        assert_eq!(&*mapped, b"{\"tasks\":[]}");
        drop(mapped);

        let writer = writable(&path);
        let contents = Contents::of(&path).expect("contents");
        assert!(!contents.is_mapped(), "somebody has it open for writing");
        assert_eq!(&*contents, b"{\"tasks\":[]}");
        assert!(Contents::mapped(&path).expect("open").is_none());
        drop((contents, writer));

        std::fs::write(&path, b"").expect("write");
        let contents = Contents::of(&path).expect("contents");
        assert!(contents.is_empty());
        assert!(Contents::of(&dir.path().join("missing")).is_err());
    }

    /// While the bytes are mapped another process cannot change them: its open for writing waits
    /// for the lease, and goes ahead once the mapping is dropped.
    #[test]
    fn a_writer_waits_until_the_mapping_is_dropped() {
        let _serial = one_at_a_time();
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("base.json");
        std::fs::write(&path, b"the bytes as they were").expect("write");
        let contents = Contents::of(&path).expect("contents");
        assert!(contents.is_mapped());
        let mut writer = Command::new("sh")
            .arg("-c")
            .arg(format!("printf changed > '{}'", path.display()))
            .spawn()
            .expect("sh");
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert_eq!(&*contents, b"the bytes as they were");
        assert!(
            writer.try_wait().expect("wait").is_none(),
            "the writer went ahead under the lease"
        );
        drop(contents);
        assert!(writer.wait().expect("wait").success());
        assert_eq!(std::fs::read(&path).expect("read"), b"changed");
    }

    /// An open to overwrite does not wait on a mapping: it fails at once while the mapping
    /// lives, and succeeds once it is gone.
    #[test]
    fn an_open_to_overwrite_does_not_wait_for_a_reader() {
        let _serial = one_at_a_time();
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("retired.json");
        std::fs::write(&path, b"the bytes as they were").expect("write");
        let contents = Contents::of(&path).expect("contents");
        assert!(contents.is_mapped());
        let started = std::time::Instant::now();
        let refused = open_to_overwrite(&path).expect_err("the reader's lease is kept");
        assert_eq!(refused.kind(), std::io::ErrorKind::WouldBlock);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "it did not wait"
        );
        assert_eq!(&*contents, b"the bytes as they were");
        drop(contents);
        let file = open_to_overwrite(&path).expect("nobody maps it now");
        drop(file);
        let file = std::fs::File::open(&path).expect("open");
        let of_file = Contents::of_file(file).expect("contents");
        assert!(of_file.is_mapped());
        assert_eq!(&*of_file, b"the bytes as they were");
    }

    /// Another process holding the file open — here `sleep` with it as its standard input — is
    /// seen; once it is gone, nobody is.
    #[test]
    fn another_process_holding_the_file_is_seen() {
        let _serial = one_at_a_time();
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
