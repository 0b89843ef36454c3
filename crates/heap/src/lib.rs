//! Heap tuning for cairn's short-lived processes.
//!
//! A `cairn` command or a `cairn-hook` event lives for tens of milliseconds, yet on a large store it
//! touches tens of megabytes: the decoded task list, the bytes of tasks.json, the read cache. With
//! glibc's defaults every one of those megabytes arrives as 256 page faults of 4 KiB, and every
//! buffer over 128 KiB is a fresh `mmap` that is unmapped again at its `free`. At 10,000 tasks
//! `task complete` took 10,300 page faults; faulting and zeroing them was about half its CPU time.
//! A faster allocator does not help (mimalloc was measured slower): the cost is the kernel's.
//!
//! [`tune_for_a_short_process`] changes two things, for the process that calls it:
//! - glibc keeps big buffers on its heap, grows the heap in large steps and never shrinks it (the
//!   process ends soon; what it gave back it would fault in again);
//! - [`Heap`], the binaries' global allocator, asks the kernel to back each new stretch of the heap
//!   with transparent huge pages (`MADV_HUGEPAGE`): one fault per 2 MiB instead of 512. Where THP is
//!   off (`/sys/kernel/mm/transparent_hugepage/enabled` = `never`) the advice is ignored.
//!
//! Measured with `cairn-bench all --quick --only cli` (10,000 tasks): `task next` 20 → 12 ms,
//! `task complete` 78 → 50 ms; the same tuning in `cairn-bench`'s floors keeps the ratios honest.
//!
//! Long-lived processes (`cairn mcp`, `cairn board`) do not call it: they keep glibc's defaults,
//! which give memory back. Until the call, [`Heap`] is exactly [`System`].
//!
//! Architecture Invariant: this is the only crate with unsafe code; the rest of the workspace
//! forbids it. Off Linux with glibc, everything here is a no-op.

use std::alloc::{GlobalAlloc, Layout, System};

/// The global allocator of cairn's binaries: [`System`], plus huge-page advice for the heap once
/// [`tune_for_a_short_process`] has been called.
#[derive(Debug, Default, Clone, Copy)]
pub struct Heap;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the advice given
// afterwards only changes how the kernel backs pages, never their contents or the returned pointer.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` shares.
        let block = unsafe { System.alloc(layout) };
        imp::advise(block, layout.size());
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let block = unsafe { System.alloc_zeroed(layout) };
        imp::advise(block, layout.size());
        block
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc`/`realloc` above, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as in `dealloc`; `new_size` is the caller's, under `realloc`'s contract.
        let block = unsafe { System.realloc(ptr, layout, new_size) };
        imp::advise(block, new_size);
        block
    }
}

/// Tunes the heap of this process for a short life on a large store (see the crate docs). Call it
/// once, early, in a process that ends within seconds; calling it again does nothing more.
/// `CAIRN_HEAP=system` in the environment turns it off, to compare or to rule it out.
pub fn tune_for_a_short_process() {
    if std::env::var_os("CAIRN_HEAP").is_some_and(|v| v == "system") {
        return;
    }
    imp::tune();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    use std::sync::Once;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The heap's top (the program break) up to which huge pages have been asked for; 0 until
    /// [`tune`].
    static ADVISED_TO: AtomicUsize = AtomicUsize::new(0);
    static TUNED: Once = Once::new();

    /// glibc's largest allowed mmap threshold on 64-bit (half its 64 MiB heap size): a buffer
    /// under it is carved from the heap, so it gets the heap's huge pages and is reused after free.
    const MMAP_THRESHOLD: i32 = 32 << 20;
    /// The heap grows by at least this much at a time: few `brk` calls, and whole 2 MiB pages.
    const TOP_PAD: i32 = 32 << 20;
    /// Never give memory back: a short process would only fault it in again.
    const TRIM_THRESHOLD: i32 = i32::MAX;
    /// Blocks this large are mmapped by glibc, outside the heap: they are advised one by one.
    const BIG: usize = MMAP_THRESHOLD as usize;
    const PAGE: usize = 4096;

    pub(super) fn tune() {
        TUNED.call_once(|| {
            // SAFETY: mallopt only changes glibc's allocation parameters; it is safe to call at
            // any time, including with allocations outstanding. A refused value returns 0 and
            // leaves glibc's default, which is still correct, only slower.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
                libc::mallopt(libc::M_TOP_PAD, TOP_PAD);
                libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
            }
            // SAFETY: `sbrk(0)` moves nothing; it returns (and, before any `brk`, first reads)
            // the current break.
            let top = unsafe { libc::sbrk(0) } as usize;
            ADVISED_TO.store(top, Ordering::Relaxed);
        });
    }

    /// After an allocation: advise what the heap grew by, or the block itself if glibc mmapped it.
    pub(super) fn advise(block: *mut u8, size: usize) {
        let advised_to = ADVISED_TO.load(Ordering::Relaxed);
        if advised_to == 0 || block.is_null() {
            return;
        }
        if size >= BIG {
            advise_range(block as usize, block as usize + size);
            return;
        }
        let top = program_break();
        if top > advised_to {
            advise_range(advised_to, top);
            ADVISED_TO.store(top, Ordering::Relaxed);
        }
    }

    unsafe extern "C" {
        /// glibc's record of the program break (exported since 2.2.5; `sbrk(0)` returns it). Read
        /// directly: this runs after every allocation, and a call to `sbrk` there cost 2 % of
        /// `task next`.
        static __curbrk: *mut libc::c_void;
    }

    fn program_break() -> usize {
        // SAFETY: a pointer-sized load of a variable glibc owns and only ever replaces whole; at
        // worst a racing thread's growth is seen at its next allocation.
        unsafe { std::ptr::addr_of!(__curbrk).read_volatile() as usize }
    }

    /// `MADV_HUGEPAGE` over the whole pages inside `[start, end)`, which must all be mapped memory
    /// of this process's heap or of one mmapped block. Failure (no THP in the kernel) is ignored:
    /// the advice is an optimisation.
    fn advise_range(start: usize, end: usize) {
        let start = start.next_multiple_of(PAGE);
        let end = end - end % PAGE;
        if end > start {
            // SAFETY: the range is inside memory the allocator mapped for this process (the
            // heap's new stretch, or one block it returned); MADV_HUGEPAGE changes neither the
            // mapping nor its contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    pub(super) fn tune() {}
    pub(super) fn advise(_block: *mut u8, _size: usize) {}
}
