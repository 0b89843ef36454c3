//! Heap tuning for cairn's short-lived processes.
//!
//! A `cairn` command or a `cairn-hook` event lives for tens of milliseconds, yet on a large store it
//! touches tens of megabytes: the decoded task list, the bytes of tasks.json, the read cache. With
//! glibc's defaults every one of those megabytes arrives as 256 page faults of 4 KiB, and every
//! buffer over 128 KiB is a fresh `mmap` that is unmapped again at its `free`. At 10,000 tasks
//! `task complete` took 10,300 page faults; faulting and zeroing them was about half its CPU time.
//! A faster allocator does not help (mimalloc was measured slower): the cost is the kernel's.
//!
//! [`tune_for_a_short_process`] changes three things, for the process that calls it:
//! - glibc keeps big buffers on its heap, grows the heap in large steps and never shrinks it (the
//!   process ends soon; what it gave back it would fault in again), and serves every thread from
//!   that one heap;
//! - [`Heap`], the binaries' global allocator, asks the kernel to back each new stretch of the heap
//!   with transparent huge pages (`MADV_HUGEPAGE`): one fault per 2 MiB instead of 512 — for the
//!   first [`HUGE_PAGES_FIRST`] bytes of it, and of the arena, only. Where THP is off
//!   (`/sys/kernel/mm/transparent_hugepage/enabled` = `never`) the advice is ignored;
//! - small blocks (up to [`SMALL`] bytes: the strings and short vectors of a decoded task list)
//!   are bumped from an arena and never freed. A decoded list of 10,000 tasks is 90,000 such
//!   blocks; glibc spent a fifth of `task complete` allocating, freeing and consolidating them.
//!   The arena is one stretch of address space reserved at the call (1 GiB, committed only where
//!   touched, its first stretch with huge pages); a free of a block in it does nothing, a free of
//!   any other block is glibc's. Each thread bumps from a stretch of the arena of its own, so threads decoding side
//!   by side do not contend. When the arena is spent, small blocks come from glibc again. What a
//!   short process leaks this way is what it allocated small in its life: at 10,000 tasks a few
//!   megabytes. Work that frees far more than it keeps holds a [`recycling`] guard, under which
//!   a freed block goes on a list of the freeing thread's and is handed out again (every block
//!   of the arena is a whole number of words, aligned to one, so a list holds one size).
//!
//! Measured with `cairn-bench all --quick --only cli` (10,000 tasks): the first two took `task
//! next` 20 → 12 ms and `task complete` 78 → 50 ms; the arena (`CAIRN_HEAP=no-arena` against the
//! default) 11.4 → 9.8 ms and 38–40 → 34 ms. The same tuning in `cairn-bench`'s floors keeps the
//! ratios honest.
//!
//! Long-lived processes (`cairn mcp`, `cairn board`) do not call it: they keep glibc's defaults,
//! which give memory back, and free every block. Until the call, [`Heap`] is exactly [`System`].
//!
//! Architecture Invariant: with `cairn-lease`, the only crate with unsafe code; the rest of the
//! workspace forbids it. Off Linux with glibc, everything here is a no-op.

use std::alloc::{GlobalAlloc, Layout, System};

/// How much of the arena, and how much of the heap, is backed by transparent huge pages: the
/// first 64 MiB of each, all a command on a 10,000-task store touches. Beyond it memory comes in
/// 4 KiB pages. On a virtual machine a fresh huge page can cost ten times its usual clearing
/// (the host backs it anew): a 100,000-task merge took 0.11–0.15 s of system time in one run and
/// 0.5–1.2 s in the next, with the same huge-page faults and no compaction, while with 4 KiB pages
/// beyond the first 64 MiB it took 0.52–0.56 s in every run of the same minute (0.81–1.07 s with
/// huge pages throughout), and 10,000-task commands kept their times.
pub const HUGE_PAGES_FIRST: usize = 64 << 20;

/// The largest block the arena serves (see the crate docs). Larger ones are buffers, freed and
/// reused through glibc as usual. 4 KiB and not less: the JSON map of a task being validated
/// grows to 3.5 KiB, and from glibc's one heap two validating threads waited on its lock for a
/// third of the validation of a 100,000-task import (1 KiB: 0.21 s, 4 KiB: 0.09 s); commands at
/// 10,000 tasks kept their times.
pub const SMALL: usize = 4096;

/// The global allocator of cairn's binaries: [`System`], plus huge-page advice for the heap and
/// the small-block arena once [`tune_for_a_short_process`] has been called.
#[derive(Debug, Default, Clone, Copy)]
pub struct Heap;

// SAFETY: a block is either the arena's — a stretch of the arena's mapping, aligned as asked, at
// least as long as asked, handed out by `imp::bump` to one owner at a time (fresh, or freed by its
// last owner under a `recycling` guard and kept on the freeing thread's list until then), never
// given to `System` — or `System`'s, given back to `System` with the layout it was made with.
// `imp::in_arena` tells them apart by address, exactly: the arena's range is fixed once set and
// `System` never maps inside it. The huge-page advice only changes how the kernel backs pages,
// never their contents or a returned pointer.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match imp::bump(layout) {
            Some((block, _)) => block,
            // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` shares.
            None => imp::advised(unsafe { System.alloc(layout) }, layout.size()),
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match imp::bump(layout) {
            // The arena's fresh pages come zeroed from the kernel.
            Some((block, true)) => block,
            Some((block, false)) => {
                // SAFETY: a recycled block of at least `layout.size()` bytes, ours alone.
                unsafe { block.write_bytes(0, layout.size()) };
                block
            }
            // SAFETY: as in `alloc`.
            None => imp::advised(unsafe { System.alloc_zeroed(layout) }, layout.size()),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if imp::in_arena(ptr) {
            // SAFETY: the caller gives up `ptr`, a block of the arena at least `layout.size()`
            // bytes long.
            unsafe { imp::recycle(ptr, layout) };
            return;
        }
        // SAFETY: `ptr` is not the arena's, so it came from `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if imp::in_arena(ptr) {
            if new_size <= layout.size() {
                return ptr;
            }
            // SAFETY: `realloc`'s contract makes `new_size`, rounded up to `layout.align()`, a
            // valid size for a layout of that alignment.
            let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
            // SAFETY: `new_layout` has a non-zero size (it exceeds the old one).
            let block = unsafe { self.alloc(new_layout) };
            if !block.is_null() {
                // SAFETY: the old block holds `layout.size()` bytes; the new one, a distinct
                // block, is larger. The old one is then given up, as `realloc` gives it up.
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr, block, layout.size());
                    imp::recycle(ptr, layout);
                }
            }
            return block;
        }
        // SAFETY: as in `dealloc`; `new_size` is the caller's, under `realloc`'s contract.
        imp::advised(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }
}

/// Small blocks freed while the returned guard lives are reused instead of left behind: for a
/// stretch of work that allocates and frees far more than it keeps, where the arena would commit
/// (and the kernel zero) every block it ever handed out. Reading a 100,000-task tasks.json another
/// tool wrote builds and drops a JSON tree per task; through the arena alone that is 300 MB of
/// pages touched once. A block freed goes on a list of the freeing thread's, by its size in steps
/// of 8 bytes, and that thread's next block of the size comes from the list: no lock, no thread
/// waiting for another. (These blocks were glibc's, from its one heap for every thread: two
/// threads validating tasks side by side spent a fifth of their time waiting for each other on
/// its lock, and on this VM the read took 0.45–0.77 s instead of 0.24–0.29 s.) Guards nest;
/// frees are no-ops again when the last one drops. It is process-wide — another thread's frees
/// meanwhile are kept for reuse too — and a no-op where there is no arena.
#[must_use = "the arena is back as soon as the guard is dropped"]
pub fn recycling() -> Recycling {
    imp::RECYCLING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Recycling(())
}

/// See [`recycling`].
#[derive(Debug)]
pub struct Recycling(());

impl Drop for Recycling {
    fn drop(&mut self) {
        imp::RECYCLING.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Tunes the heap of this process for a short life on a large store (see the crate docs). Call it
/// once, early, in a process that ends within seconds; calling it again does nothing more.
/// `CAIRN_HEAP=system` in the environment turns it off, `CAIRN_HEAP=no-arena` turns off only
/// the small-block arena, `CAIRN_HEAP=no-huge-pages` the huge-page advice and
/// `CAIRN_HEAP=all-huge-pages` its limit ([`HUGE_PAGES_FIRST`]), to compare or to rule any of them
/// out.
pub fn tune_for_a_short_process() {
    let choice = std::env::var_os("CAIRN_HEAP");
    if choice.as_ref().is_some_and(|v| v == "system") {
        return;
    }
    let huge_pages = match choice.as_ref().and_then(|v| v.to_str()) {
        Some("no-huge-pages") => 0,
        Some("all-huge-pages") => usize::MAX,
        _ => HUGE_PAGES_FIRST,
    };
    imp::tune(choice.is_none_or(|v| v != "no-arena"), huge_pages);
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    use std::alloc::Layout;
    use std::sync::Once;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The heap's top (the program break) up to which huge pages have been asked for; 0 until
    /// [`tune`].
    static ADVISED_TO: AtomicUsize = AtomicUsize::new(0);
    static TUNED: Once = Once::new();
    /// How much of the arena, and of the heap, gets the huge-page advice.
    static HUGE_LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
    /// How much of the heap may still get it.
    static HEAP_HUGE_LEFT: AtomicUsize = AtomicUsize::new(usize::MAX);

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

    /// The arena: `[ARENA_START, ARENA_END)`, bumped at `ARENA_NEXT`. All 0 until [`tune`].
    static ARENA_START: AtomicUsize = AtomicUsize::new(0);
    static ARENA_END: AtomicUsize = AtomicUsize::new(0);
    static ARENA_NEXT: AtomicUsize = AtomicUsize::new(0);
    /// Address space reserved for the arena. Only what is touched is ever committed.
    const ARENA_SIZE: usize = 1 << 30;

    /// How many [`super::Recycling`] guards are alive: while any is, the arena serves nothing.
    pub(super) static RECYCLING: AtomicUsize = AtomicUsize::new(0);

    /// What each thread bumps its small blocks from: a stretch of the arena it took for itself,
    /// `(next, end)`; `(0, 0)` until its first block. Threads decoding a task list side by side
    /// would otherwise fight over one atomic for each of their hundred thousand blocks. A const
    /// thread-local of a `Copy` type registers no destructor and allocates nothing, so the
    /// allocator may use it at any point of a thread's life.
    const CHUNK: usize = 256 << 10;
    std::thread_local! {
        static LOCAL: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
    }

    /// The lists of blocks this thread freed under a [`super::Recycling`] guard: the head of list
    /// `c` (0 if empty) is a block of at least `c * WORD` bytes, aligned to `WORD`, whose first
    /// word is the address of the next. A const thread-local of `Cell`s registers no destructor,
    /// so the allocator may use it at any point of a thread's life.
    const WORD: usize = std::mem::size_of::<usize>();
    const CLASSES: usize = super::SMALL / WORD + 1;
    std::thread_local! {
        static FREED: [std::cell::Cell<usize>; CLASSES] =
            const { [const { std::cell::Cell::new(0) }; CLASSES] };
    }

    /// A block of the arena for `layout`, if it is small and the arena has room, and whether it
    /// is fresh (zeroed by the kernel): under a [`super::Recycling`] guard, one this thread freed
    /// if it has one of the size, else a fresh one rounded up to a whole list's size.
    pub(super) fn bump(layout: Layout) -> Option<(*mut u8, bool)> {
        if layout.size() > super::SMALL || layout.align() > PAGE {
            return None;
        }
        if RECYCLING.load(Ordering::Relaxed) == 0 {
            return fresh(layout).map(|block| (block, true));
        }
        if layout.align() > WORD {
            return None;
        }
        let class = class_of(layout.size());
        let reused = FREED
            .try_with(|freed| {
                let head = freed[class].get();
                if head == 0 {
                    return None;
                }
                // SAFETY: `head` heads this thread's list `class`: a freed block of at least a
                // word, aligned to one, whose first word `recycle` wrote.
                freed[class].set(unsafe { (head as *const usize).read() });
                Some(head as *mut u8)
            })
            .ok()
            .flatten();
        match reused {
            Some(block) => Some((block, false)),
            None => fresh(layout).map(|block| (block, true)),
        }
    }

    /// The list of blocks of `size` bytes: every block of the arena is a whole number of words
    /// long (see [`fresh`]), so a block asked for with `size` bytes has `class_of(size)` words.
    fn class_of(size: usize) -> usize {
        size.max(1).div_ceil(WORD)
    }

    /// Gives up `ptr`, a block of the arena of at least `layout.size()` bytes: kept on this
    /// thread's list for its size under a [`super::Recycling`] guard, else left as it is.
    ///
    /// # Safety
    /// `ptr` is a block of the arena that its caller owns and never uses again, at least
    /// `layout.size()` bytes long.
    pub(super) unsafe fn recycle(ptr: *mut u8, layout: Layout) {
        let at = ptr as usize;
        if RECYCLING.load(Ordering::Relaxed) == 0 || !at.is_multiple_of(WORD) {
            return;
        }
        let class = class_of(layout.size()).min(CLASSES - 1);
        let _ = FREED.try_with(|freed| {
            // SAFETY: the block is ours from here on, aligned to a word and at least one long.
            unsafe { (ptr as *mut usize).write(freed[class].get()) };
            freed[class].set(at);
        });
    }

    /// A fresh block of the arena for `layout` (small, aligned to at most a page), if it has room:
    /// aligned to a word at least and a whole number of words long, so that once freed it can
    /// stand on the list of its rounded size (see [`recycle`]).
    fn fresh(layout: Layout) -> Option<*mut u8> {
        let align = layout.align().max(WORD);
        let size = layout.size().max(1).next_multiple_of(WORD);
        LOCAL
            .try_with(|local| {
                let (next, end) = local.get();
                // `next` is 0 (no stretch yet: `end` is 0 too) or inside the arena, far below
                // `usize::MAX`.
                let start = next.next_multiple_of(align);
                let stop = start + size;
                if next != 0 && stop <= end {
                    local.set((stop, end));
                    return Some(start as *mut u8);
                }
                // A new stretch, aligned for the block; what was left of the old one is given
                // up (at most a block's size, one time in hundreds).
                let stretch = CHUNK.max(size.next_multiple_of(PAGE) + PAGE);
                let (chunk, chunk_end) = take(stretch, PAGE)?;
                let start = chunk.next_multiple_of(align);
                local.set((start + size, chunk_end));
                Some(start as *mut u8)
            })
            .ok()
            .flatten()
    }

    /// `size` bytes of the arena aligned to `align`, shared by every thread: `(start, end)`.
    fn take(size: usize, align: usize) -> Option<(usize, usize)> {
        // Acquire: pairs with `reserve_arena`'s release, so the arena's start is seen with its end.
        let end = ARENA_END.load(Ordering::Acquire);
        let mut next = ARENA_NEXT.load(Ordering::Relaxed);
        loop {
            // `next` is 0 (no arena: `end` is 0 too, so nothing fits) or inside the arena, far
            // below `usize::MAX`.
            let start = next.next_multiple_of(align);
            let stop = start + size;
            if stop > end {
                return None;
            }
            match ARENA_NEXT.compare_exchange_weak(next, stop, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some((start, stop)),
                Err(now) => next = now,
            }
        }
    }

    /// Whether `ptr` is a block of the arena.
    pub(super) fn in_arena(ptr: *mut u8) -> bool {
        let at = ptr as usize;
        // The end first, as in `bump`: a start not yet seen would claim glibc's blocks.
        let end = ARENA_END.load(Ordering::Acquire);
        at < end && at >= ARENA_START.load(Ordering::Relaxed)
    }

    /// Reserves the arena. Without it (the mapping refused, e.g. under strict overcommit) small
    /// blocks simply stay glibc's.
    fn reserve_arena() {
        // SAFETY: a new private anonymous mapping at an address the kernel picks; it overlaps
        // nothing of ours, and is never unmapped (the arena lives as long as the process).
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ARENA_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return;
        }
        let start = base as usize;
        advise_range(
            start,
            start + ARENA_SIZE.min(HUGE_LIMIT.load(Ordering::Relaxed)),
        );
        // The end last: until it is set, `bump` finds no room and `in_arena` matches nothing.
        ARENA_START.store(start, Ordering::Relaxed);
        ARENA_NEXT.store(start, Ordering::Relaxed);
        ARENA_END.store(start + ARENA_SIZE, Ordering::Release);
    }

    pub(super) fn tune(arena: bool, huge_pages: usize) {
        TUNED.call_once(|| {
            HUGE_LIMIT.store(huge_pages, Ordering::Relaxed);
            HEAP_HUGE_LEFT.store(huge_pages, Ordering::Relaxed);
            if arena {
                reserve_arena();
            }
            // SAFETY: mallopt only changes glibc's allocation parameters; it is safe to call at
            // any time, including with allocations outstanding. A refused value returns 0 and
            // leaves glibc's default, which is still correct, only slower.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
                libc::mallopt(libc::M_TOP_PAD, TOP_PAD);
                libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
                // One heap for every thread: a thread's own glibc arena is a separate mapping
                // without the huge-page advice, where a helper thread's buffers (half a decoded
                // list) fault in 4 KiB at a time.
                libc::mallopt(libc::M_ARENA_MAX, 1);
            }
            // SAFETY: `sbrk(0)` moves nothing; it returns (and, before any `brk`, first reads)
            // the current break.
            let top = unsafe { libc::sbrk(0) } as usize;
            ADVISED_TO.store(top, Ordering::Relaxed);
        });
    }

    /// `block`, just allocated by glibc, after advising what the heap grew by, or the block
    /// itself if glibc mmapped it.
    pub(super) fn advised(block: *mut u8, size: usize) -> *mut u8 {
        let advised_to = ADVISED_TO.load(Ordering::Relaxed);
        if advised_to == 0 || block.is_null() {
            return block;
        }
        if size >= BIG {
            advise_heap(block as usize, block as usize + size);
            return block;
        }
        let top = program_break();
        if top > advised_to {
            advise_heap(advised_to, top);
            ADVISED_TO.store(top, Ordering::Relaxed);
        }
        block
    }

    /// [`advise_range`] over as much of `[start, end)` as the heap's share of huge pages has left.
    fn advise_heap(start: usize, end: usize) {
        let want = end.saturating_sub(start);
        let Ok(left) = HEAP_HUGE_LEFT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
            (left > 0).then(|| left.saturating_sub(want))
        }) else {
            return;
        };
        advise_range(start, start + want.min(left));
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
    pub(super) static RECYCLING: std::sync::atomic::AtomicUsize =
        std::sync::atomic::AtomicUsize::new(0);
    pub(super) fn tune(_arena: bool, _huge_pages: usize) {}
    pub(super) fn bump(_layout: std::alloc::Layout) -> Option<(*mut u8, bool)> {
        None
    }
    pub(super) unsafe fn recycle(_ptr: *mut u8, _layout: std::alloc::Layout) {}
    pub(super) fn in_arena(_ptr: *mut u8) -> bool {
        false
    }
    pub(super) fn advised(block: *mut u8, _size: usize) -> *mut u8 {
        block
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For the tests that need to know whether a recycling guard is alive: the guard is
    /// process-wide, and the tests run side by side.
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
        SERIAL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every block the arena serves is aligned, distinct and keeps its bytes through a growth;
    /// its free does nothing; a block past [`SMALL`] is glibc's and frees normally.
    #[test]
    fn small_blocks_come_from_the_arena_and_big_ones_from_glibc() {
        let _serial = one_at_a_time();
        tune_for_a_short_process();
        let heap = Heap;
        let mut blocks = Vec::new();
        for (size, align) in [(1, 1), (24, 8), (SMALL, 16), (100, 64), (8, 4096)] {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: a non-zero size; each block is written within its size and freed with its
            // own layout below.
            let block = unsafe { heap.alloc_zeroed(layout) };
            assert!(!block.is_null());
            assert_eq!(block as usize % align, 0, "{size} bytes aligned to {align}");
            // SAFETY: inside the block just allocated.
            unsafe {
                assert!(
                    std::slice::from_raw_parts(block, size)
                        .iter()
                        .all(|&b| b == 0)
                );
                block.write_bytes(0xA5, size);
            }
            blocks.push((block, layout));
        }
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert!(blocks.iter().all(|&(b, _)| imp::in_arena(b)));
        }
        let (first, layout) = blocks[1];
        // SAFETY: `first` was allocated with `layout`; the new size is non-zero.
        let grown = unsafe { heap.realloc(first, layout, SMALL * 4) };
        // SAFETY: the grown block holds at least the old block's 24 bytes.
        let kept = unsafe { std::slice::from_raw_parts(grown, layout.size()) };
        assert!(kept.iter().all(|&b| b == 0xA5), "a growth keeps the bytes");
        assert!(!imp::in_arena(grown), "a block past SMALL is glibc's");
        // SAFETY: each block freed once, with the layout it has now.
        unsafe {
            heap.dealloc(grown, Layout::from_size_align(SMALL * 4, 8).unwrap());
            for &(block, layout) in blocks.iter().filter(|&&(b, _)| b != first) {
                heap.dealloc(block, layout);
            }
        }
        // Nothing freed is handed out again: a short process never pays for reuse.
        let layout = Layout::from_size_align(8, 8).unwrap();
        // SAFETY: a non-zero size; freed at once with the same layout.
        let after = unsafe { heap.alloc(layout) };
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert!(blocks.iter().all(|&(b, _)| (after as usize) > b as usize));
        }
        // SAFETY: as above.
        unsafe { heap.dealloc(after, layout) };

        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            let _outer = recycling();
            let _inner = recycling();
            let dirty = Layout::from_size_align(20, 8).unwrap();
            // SAFETY: a non-zero size; written within it, then freed with its layout.
            let first = unsafe { heap.alloc(dirty) };
            // SAFETY: as above.
            unsafe {
                first.write_bytes(0xA5, dirty.size());
                heap.dealloc(first, dirty);
            }
            // Another size of the same list (17–24 bytes: three words) takes the block back,
            // zeroed if asked.
            let again = Layout::from_size_align(24, 8).unwrap();
            // SAFETY: as above.
            let reused = unsafe { heap.alloc_zeroed(again) };
            assert_eq!(reused, first, "a block freed while recycling is reused");
            // SAFETY: inside the block just allocated, of at least 24 bytes.
            let bytes = unsafe { std::slice::from_raw_parts(reused, again.size()) };
            assert!(bytes.iter().all(|&b| b == 0), "zeroed, though reused");
            // A longer block does not take a shorter one's place.
            let longer = Layout::from_size_align(40, 8).unwrap();
            // SAFETY: as above.
            unsafe { heap.dealloc(reused, again) };
            // SAFETY: as above.
            let other = unsafe { heap.alloc(longer) };
            assert!(imp::in_arena(other) && other != reused);
            // SAFETY: as above.
            unsafe { heap.dealloc(other, longer) };
        }
        // With the guards gone a free does nothing again: the block is not handed out twice.
        // SAFETY: as above.
        let kept = unsafe { heap.alloc(layout) };
        // SAFETY: as above.
        unsafe { heap.dealloc(kept, layout) };
        // SAFETY: as above.
        let next = unsafe { heap.alloc(layout) };
        assert_ne!(kept, next);
        // SAFETY: as above.
        unsafe { heap.dealloc(next, layout) };
    }

    /// Threads allocating and freeing side by side under a recycling guard, each its own mix of
    /// sizes, never get a block another live block overlaps, and keep what they wrote.
    #[test]
    fn threads_recycling_side_by_side_keep_their_blocks_apart() {
        let _serial = one_at_a_time();
        tune_for_a_short_process();
        let _recycling = recycling();
        let work = |seed: u8| {
            let mut live: Vec<(usize, Layout)> = Vec::new();
            let mut seen = 0usize;
            for i in 0..40_000usize {
                let size = 1 + (i * 13 + usize::from(seed) * 7) % SMALL;
                let layout = Layout::from_size_align(size, 8).unwrap();
                // SAFETY: a non-zero size; written within it; freed below with its layout.
                let block = unsafe { Heap.alloc(layout) };
                assert!(!block.is_null());
                // SAFETY: inside the block just allocated.
                unsafe { block.write_bytes(seed, size) };
                live.push((block as usize, layout));
                if i % 3 != 0 {
                    // Free an older block, after checking it kept its bytes.
                    let (at, layout) = live.swap_remove((i * 31) % live.len());
                    // SAFETY: a live block of ours, `layout.size()` bytes long, freed once.
                    unsafe {
                        let bytes = std::slice::from_raw_parts(at as *const u8, layout.size());
                        assert!(bytes.iter().all(|&b| b == seed), "a block kept its bytes");
                        Heap.dealloc(at as *mut u8, layout);
                    }
                    seen += 1;
                }
            }
            (live, seen)
        };
        let mut all: Vec<(usize, usize)> = std::thread::scope(|s| {
            let threads: Vec<_> = (1..=3u8).map(|seed| s.spawn(move || work(seed))).collect();
            threads
                .into_iter()
                .flat_map(|t| {
                    let (live, seen) = t.join().unwrap();
                    assert!(seen > 0);
                    live.into_iter().map(|(at, layout)| (at, layout.size()))
                })
                .collect()
        });
        all.sort_unstable();
        for pair in all.windows(2) {
            assert!(pair[0].0 + pair[0].1 <= pair[1].0, "live blocks overlap");
        }
    }

    /// Threads allocating side by side get blocks that never overlap, each kept as written.
    #[test]
    fn threads_bump_distinct_blocks() {
        tune_for_a_short_process();
        let per_thread = |seed: u8| {
            (0..20_000usize)
                .map(|i| {
                    let size = 1 + (i * 7 + usize::from(seed)) % SMALL;
                    let layout = Layout::from_size_align(size, 8).unwrap();
                    // SAFETY: a non-zero size; the block is written within its size and never
                    // freed (the test only reads it back).
                    let block = unsafe { Heap.alloc(layout) };
                    assert!(!block.is_null());
                    // SAFETY: inside the block just allocated.
                    unsafe { block.write_bytes(seed, size) };
                    (block as usize, size)
                })
                .collect::<Vec<_>>()
        };
        let mut all: Vec<(usize, usize, u8)> = std::thread::scope(|s| {
            let threads: Vec<_> = (1..=3u8)
                .map(|seed| s.spawn(move || (seed, per_thread(seed))))
                .collect();
            threads
                .into_iter()
                .flat_map(|t| {
                    let (seed, blocks) = t.join().unwrap();
                    blocks.into_iter().map(move |(at, size)| (at, size, seed))
                })
                .collect()
        });
        all.sort_unstable();
        for pair in all.windows(2) {
            assert!(pair[0].0 + pair[0].1 <= pair[1].0, "blocks overlap");
        }
        for &(at, size, seed) in &all {
            // SAFETY: a block allocated above, never freed, `size` bytes long.
            let bytes = unsafe { std::slice::from_raw_parts(at as *const u8, size) };
            assert!(bytes.iter().all(|&b| b == seed), "a block kept its bytes");
        }
    }
}
