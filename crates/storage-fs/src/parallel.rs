//! Work split across the machine's cores, for the steps of a read or a write whose cost grows with
//! the number of tasks: decoding and encoding the read cache, validating a tasks.json another tool
//! wrote. A short process on a large store spends most of its time there, and the machine's other
//! cores are idle while it does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// `f(part, start)` of consecutive parts of `items` (`start`: where the part starts in `items`), in
/// order: one part per core, but none smaller than `min_part` items, below which a thread costs
/// more than it saves. The first part (`start` 0) runs on the calling thread, so a caller that
/// joins the results can make the first one big enough for all of them. A panic in a part is the
/// caller's panic.
///
/// A thread claims its part when it starts, and the calling thread, done with its own, takes
/// every part no thread has claimed yet: on a busy machine a new thread can wait milliseconds
/// for a core, and the caller would otherwise wait for it, idle.
pub(crate) fn in_parts<T: Sync, R: Send>(
    items: &[T],
    min_part: usize,
    f: impl Fn(&[T], usize) -> R + Sync,
) -> Vec<R> {
    let threads = cores().min(items.len() / min_part.max(1)).max(1);
    let size = items.len().div_ceil(threads).max(1);
    let parts: Vec<&[T]> = items.chunks(size).collect();
    let claimed: Vec<AtomicBool> = parts.iter().map(|_| AtomicBool::new(false)).collect();
    let claim = |i: usize| !claimed[i].swap(true, Ordering::AcqRel);
    let run = |i: usize| f(parts.get(i).copied().unwrap_or_default(), i * size);
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..parts.len())
            .map(|i| scope.spawn(move || claim(i).then(|| run(i))))
            .collect();
        let mut results = Vec::with_capacity(parts.len());
        results.push(run(0));
        let taken: Vec<Option<R>> = (1..parts.len()).map(|i| claim(i).then(|| run(i))).collect();
        for (helper, taken) in helpers.into_iter().zip(taken) {
            let ran = helper
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            // Exactly one of the two claimed the part.
            results.extend(taken.or(ran));
        }
        results
    })
}

/// `f` of every item, in order, or `None` as soon as one gives `None`: the calling thread takes
/// chunks of `chunk` items from the front, straight into the list it returns, while a thread per
/// other core takes them from the back into lists of its own, until the two ends meet; then the
/// helpers' chunks are appended. Below `min_items` items it all runs on the calling thread.
///
/// Unlike fixed halves ([`in_parts`]), the split follows whoever has a core: on a busy machine a
/// helper can start milliseconds late or share its core with another thread, and the caller then
/// simply takes more of the list, never waiting on more than the one chunk a helper is in. Only
/// the helpers' share is copied at the end.
pub(crate) fn collect_from_both_ends<T: Sync, U: Send>(
    items: &[T],
    chunk: usize,
    min_items: usize,
    f: impl Fn(&T) -> Option<U> + Sync,
) -> Option<Vec<U>> {
    prepare_then_collect(
        false,
        || Some(items),
        |items| items,
        chunk,
        min_items,
        |_, item| f(item),
        |_| (),
    )
    .and_then(|(_, all, ())| all)
}

/// How long a helper started by [`prepare_then_collect`] spins, waiting for its work, before it
/// sleeps instead: longer than the read of a large store's cache usually takes.
const SPIN: Duration = Duration::from_millis(10);

/// [`collect_from_both_ends`] over the items of what `prepare` makes on the calling thread (its
/// `P` is returned with the list; `None` from it is `None` here), with the helpers started
/// *before* `prepare` runs when `early` says the items will be many. `side`, a job of its own, is
/// run once by whichever thread is free first — a helper as it starts, or the caller once it is
/// done with the list — and its result returned beside the list.
///
/// A new thread can take milliseconds to first run: on a virtual machine an idle virtual CPU is
/// halted, and the host takes that long to run it again (measured here: 1–3 ms, while a read of
/// a 10,000-task cache takes 1.2 ms). Started before the read, a helper is running by the time the
/// list is there, and it waits for it spinning, which keeps its CPU awake, for [`SPIN`] at most;
/// then sleeping. Without `early`, the helpers start after `prepare`, if the items turn out many;
/// helpers started early take their share of however many there are.
pub(crate) fn prepare_then_collect<P: Send + Sync, T: Sync, U: Send, S: Send>(
    early: bool,
    prepare: impl FnOnce() -> Option<P>,
    items: impl Fn(&P) -> &[T] + Sync,
    chunk: usize,
    min_items: usize,
    f: impl Fn(&P, &T) -> Option<U> + Sync,
    side: impl FnOnce(&P) -> S + Send,
) -> Option<(P, Option<Vec<U>>, S)> {
    let chunk = chunk.max(1);
    let min_items = min_items.max(2);
    let helpers = cores().saturating_sub(1);
    // Set once, by the calling thread: what `prepare` made, or `None` when there is nothing to do
    // (which the helpers must hear too, so that the scope can end).
    let ready: OnceLock<Option<P>> = OnceLock::new();
    // The range of items no thread has taken yet.
    let bounds = Mutex::new((0, 0));
    let failed = AtomicBool::new(false);
    let take = |from_front: bool| {
        let mut bounds = bounds.lock().unwrap_or_else(PoisonError::into_inner);
        let (front, back) = *bounds;
        if front >= back || failed.load(Ordering::Relaxed) {
            return None;
        }
        let size = chunk.min(back - front);
        Some(if from_front {
            bounds.0 = front + size;
            front..front + size
        } else {
            bounds.1 = back - size;
            back - size..back
        })
    };
    let run = |p: &P, range: std::ops::Range<usize>, out: &mut Vec<U>| {
        for item in &items(p)[range] {
            match f(p, item) {
                Some(u) => out.push(u),
                None => {
                    failed.store(true, Ordering::Relaxed);
                    return false;
                }
            }
        }
        true
    };
    // The side job, run once by whichever thread is free first.
    let side = Mutex::new(Some(side));
    let take_side = |p: &P| {
        side.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .map(|job| job(p))
    };
    let helper = || {
        let p = wait_for(&ready)?;
        let side = take_side(p);
        let mut chunks = Vec::new();
        while let Some(range) = take(false) {
            let mut out = Vec::with_capacity(range.len());
            let start = range.start;
            if !run(p, range, &mut out) {
                break;
            }
            chunks.push((start, out));
        }
        Some((side, chunks))
    };
    let collected = std::thread::scope(|scope| {
        let start = |n: usize| {
            (0..n)
                .filter_map(|_| std::thread::Builder::new().spawn_scoped(scope, helper).ok())
                .collect::<Vec<_>>()
        };
        let mut started = start(if early { helpers } else { 0 });
        {
            // However `prepare` ends — `None`, a panic — the helpers hear of it and stop waiting.
            let _tell = Tell {
                ready: &ready,
                waiting: started.iter().map(|h| h.thread().clone()).collect(),
            };
            let prepared = prepare();
            let _ = ready.set(prepared);
        }
        let p = ready.get()?.as_ref()?;
        let len = items(p).len();
        *bounds.lock().unwrap_or_else(PoisonError::into_inner) = (0, len);
        if len >= min_items && started.is_empty() {
            started = start(helpers);
        }
        // Room for the list to grow by a few: a writer that adds a task to a list read whole
        // (`task add` at 100,000 tasks) otherwise moves all of it to a larger block.
        let mut all = Vec::with_capacity(len + len / 64 + 8);
        while let Some(range) = take(true) {
            if !run(p, range, &mut all) {
                break;
            }
        }
        let mut side = take_side(p);
        let mut chunks: Vec<(usize, Vec<U>)> = Vec::new();
        for helper in started {
            let (helper_side, helper_chunks) = helper
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                .unwrap_or_else(|| unreachable!("the helpers were told the work is ready"));
            side = side.or(helper_side);
            chunks.extend(helper_chunks);
        }
        // Each thread tried to take the side job when it was done; the first to try ran it.
        let side = side.unwrap_or_else(|| unreachable!("the side job runs once"));
        if failed.load(Ordering::Relaxed) {
            return Some((None, side));
        }
        chunks.sort_unstable_by_key(|(start, _)| *start);
        for (_, chunk) in chunks {
            all.extend(chunk);
        }
        Some((Some(all), side))
    });
    let (all, side) = collected?;
    let p = ready.into_inner().flatten()?;
    Some((p, all, side))
}

/// What `prepare` made, once it is set; spinning for [`SPIN`], then sleeping until woken.
fn wait_for<P>(ready: &OnceLock<Option<P>>) -> Option<&P> {
    let start = Instant::now();
    loop {
        if let Some(p) = ready.get() {
            return p.as_ref();
        }
        if start.elapsed() < SPIN {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
        } else {
            std::thread::park_timeout(Duration::from_millis(1));
        }
    }
}

/// Sets `ready` to `None` if it is still unset when dropped (a panic in `prepare`), and wakes the
/// helpers that may be sleeping in [`wait_for`].
struct Tell<'a, P> {
    ready: &'a OnceLock<Option<P>>,
    waiting: Vec<std::thread::Thread>,
}

impl<P> Drop for Tell<'_, P> {
    fn drop(&mut self) {
        let _ = self.ready.set(None);
        for thread in &self.waiting {
            thread.unpark();
        }
    }
}

/// The capacity for the results of the part of `part_len` items at `start` of `total`: the first
/// part's holds all of them, so [`joined`] (or a caller joining its own way) copies the others
/// into it without growing it.
pub(crate) fn part_capacity(total: usize, part_len: usize, start: usize) -> usize {
    if start == 0 { total } else { part_len }
}

/// The lists [`in_parts`] made, one after another, in the first one's allocation (made big enough
/// for all of them), or `None` if any part failed.
pub(crate) fn joined<U>(parts: Vec<Option<Vec<U>>>) -> Option<Vec<U>> {
    let mut parts = parts.into_iter();
    let mut all = parts.next()??;
    for part in parts {
        all.extend(part?);
    }
    Some(all)
}

/// The cores this process may use, asked once: the answer reads cgroup files.
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_items_in_order() {
        for (len, min_part) in [(0, 4), (1, 4), (7, 4), (8, 4), (9, 4), (1000, 3), (1000, 0)] {
            let items: Vec<usize> = (0..len).collect();
            let parts = in_parts(&items, min_part, |part, start| {
                assert_eq!(part.first().map_or(start, |&i| i), start);
                part.to_vec()
            });
            assert_eq!(
                parts.concat(),
                items,
                "{len} items, parts of at least {min_part}"
            );
        }
    }

    #[test]
    fn both_ends_collect_every_item_once_in_order() {
        for len in [0, 1, 2, 7, 64, 1000, 4097] {
            let items: Vec<usize> = (0..len).collect();
            for chunk in [1, 3, 64, 5000] {
                for _ in 0..20 {
                    let runs: Vec<std::sync::atomic::AtomicUsize> =
                        items.iter().map(|_| Default::default()).collect();
                    let all = collect_from_both_ends(&items, chunk, 2, |&i| {
                        runs[i].fetch_add(1, Ordering::Relaxed);
                        Some(i * 2)
                    });
                    let expected: Vec<usize> = items.iter().map(|i| i * 2).collect();
                    assert_eq!(all, Some(expected), "{len} items, chunks of {chunk}");
                    assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
                }
            }
        }
    }

    #[test]
    fn both_ends_fail_when_any_item_fails() {
        let items: Vec<usize> = (0..3000).collect();
        for bad in [0, 1, 1499, 2999] {
            let all = collect_from_both_ends(&items, 16, 2, |&i| (i != bad).then_some(i));
            assert_eq!(all, None, "item {bad} failed");
            for early in [true, false] {
                let (_, all, side) = prepare_then_collect(
                    early,
                    || Some(&items[..]),
                    |items| items,
                    16,
                    2,
                    |_, &i| (i != bad).then_some(i),
                    |_| "side",
                )
                .expect("prepared");
                assert_eq!(
                    (all, side),
                    (None, "side"),
                    "item {bad} failed, early {early}"
                );
            }
        }
    }

    /// Helpers started before the items exist wait for them, take their share, and stop when
    /// there is nothing to take: whether `prepare` makes many items, few, none, or fails.
    #[test]
    fn helpers_started_early_wait_for_what_is_prepared() {
        for early in [true, false] {
            for len in [0, 1, 5, 3000] {
                let runs: Vec<std::sync::atomic::AtomicUsize> =
                    (0..len).map(|_| Default::default()).collect();
                let sides = std::sync::atomic::AtomicUsize::new(0);
                let (items, all, side) = prepare_then_collect(
                    early,
                    || {
                        // Long enough for the helpers to be waiting.
                        std::thread::sleep(Duration::from_millis(2));
                        Some((0..len).collect::<Vec<usize>>())
                    },
                    |items| items,
                    16,
                    2,
                    |_, &i| {
                        runs[i].fetch_add(1, Ordering::Relaxed);
                        Some(i + 1)
                    },
                    |items| sides.fetch_add(1, Ordering::Relaxed) + items.len(),
                )
                .expect("prepared");
                assert_eq!(items.len(), len);
                assert_eq!(all, Some((1..=len).collect()), "{len} items, early {early}");
                assert_eq!(side, len, "the side job sees what was prepared");
                assert_eq!(sides.load(Ordering::Relaxed), 1, "the side job runs once");
                assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
            }
            let none = prepare_then_collect(
                early,
                || None::<Vec<usize>>,
                |items| items,
                16,
                2,
                |_, &i| Some(i),
                |_| unreachable!("no side job without items"),
            );
            assert!(none.is_none(), "nothing prepared, early {early}");
        }
    }

    /// A panic while preparing reaches the caller, and the helpers waiting for the items do not
    /// hold it up.
    #[test]
    fn a_panic_while_preparing_is_the_callers_and_releases_the_helpers() {
        let caught = std::panic::catch_unwind(|| {
            prepare_then_collect(
                true,
                || -> Option<Vec<usize>> { panic!("the read failed") },
                |items| items,
                16,
                2,
                |_, &i| Some(i),
                |_| (),
            )
        });
        assert!(caught.is_err());
    }

    /// Whether a part's own thread or the calling thread runs it, it runs once.
    #[test]
    fn every_part_runs_once_whoever_runs_it() {
        let items: Vec<usize> = (0..64).collect();
        for _ in 0..200 {
            let runs: Vec<std::sync::atomic::AtomicUsize> =
                items.iter().map(|_| Default::default()).collect();
            let parts = in_parts(&items, 1, |part, start| {
                runs[start].fetch_add(1, Ordering::Relaxed);
                part.len()
            });
            assert_eq!(parts.iter().sum::<usize>(), items.len());
            let ran: usize = runs.iter().map(|r| r.load(Ordering::Relaxed)).sum();
            assert_eq!(ran, parts.len());
            assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) <= 1));
        }
    }
}
