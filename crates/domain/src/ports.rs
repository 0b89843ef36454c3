//! The ports: everything the domain needs from the outside world.
//!
//! Two small synchronous ports ([`Clock`], [`IdGen`]) stand in for the wall clock and randomness.
//! The Storage ports (one per aggregate) are `#[async_trait]` traits, dyn-compatible and `Debug +
//! Send + Sync`, so that one trait serves the filesystem adapter, the in-memory adapter, a future
//! database adapter and the long-running servers alike. Each lives beside its aggregate:
//! [`crate::project::store::ProjectStore`], [`crate::orchestration::store::OrchestrationStore`],
//! [`crate::execution::store::ExecutionSessionStore`] and [`crate::plan::store::PlanStore`].
//!
//! # One convention for the four Storage ports
//!
//! - **Names.** `load` reads the aggregate, `create` makes it, `list` lists them, `transact` is
//!   the read-modify-write that runs a domain mutation inside the adapter's critical section,
//!   `archive` moves the live aggregate into the archive, `list_archived` / `load_archived` read
//!   the archive. Operations with no general counterpart keep a verb of their own
//!   (`record_task`, `append_decision`, `write_checkpoint`, …).
//! - **Errors.** Reads and plain writes return [`StoreError`](crate::StoreError); only methods
//!   that run a domain closure return [`Error`](crate::Error) (`Error::Domain` is the closure's
//!   refusal, and then nothing was written). "Not found" and "already exists" name a typed
//!   [`Entity`](crate::Entity).
//! - **Committed means committed.** Once a method has saved its change, any later failure of the
//!   same call (a log entry, a checkpoint, a second file) is
//!   [`StoreError::AfterCommit`](crate::StoreError::AfterCommit): the caller must not repeat
//!   it. Each method's documentation says which of its errors can be `AfterCommit`; an adapter
//!   whose writes are all-or-nothing (the in-memory ones) never returns it.
//! - **Values out of a transaction.** The dyn method takes a boxed closure; `transact_with` on
//!   `dyn Port` (written once per port) hands back whatever the closure computed beside the
//!   commit, so services never smuggle results out through captured variables.
//! - **Adapters** are named `Memory*` (in the domain, with the `testkit` feature), `Fs*`
//!   (`cairn-storage-fs`) and, later, `Pg*`.
//! - **Contract.** Every port has a suite in `<aggregate>/contract.rs`; each check is its own
//!   `#[test]`, generated per adapter by the port's macro (`project_store_contract!`, …), and
//!   includes a no-lost-update check on OS threads.

use crate::time::Timestamp;

/// The only source of "now" in the domain.
pub trait Clock: Send + Sync {
    /// The current instant, in UTC.
    fn now(&self) -> Timestamp;
}

/// The only source of fresh randomness in the domain.
pub trait IdGen: Send + Sync {
    /// A fresh random 128-bit value (a v4 UUID in production).
    fn random_u128(&self) -> u128;

    /// Eight lowercase hex digits, e.g. for plan directory names.
    fn hex8(&self) -> String {
        format!("{:08x}", (self.random_u128() & 0xffff_ffff) as u32)
    }
}

/// A clock that always says the same instant until told otherwise. For tests and replays.
#[derive(Debug)]
pub struct FixedClock(std::sync::Mutex<Timestamp>);

impl FixedClock {
    pub fn new(at: Timestamp) -> Self {
        Self(std::sync::Mutex::new(at))
    }

    pub fn set(&self, at: Timestamp) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }

    pub fn advance(&self, by: chrono::Duration) {
        let mut at = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *at += by;
    }
}

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Deterministic "random" ids: a counter run through a bijective mixer.
#[derive(Debug, Default)]
pub struct SeqIds(std::sync::atomic::AtomicU64);

impl IdGen for SeqIds {
    fn random_u128(&self) -> u128 {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // splitmix64 keeps the values well spread yet reproducible.
        let mut z = n.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (u128::from(z) << 64) | u128::from(n)
    }
}

/// The value a read-modify-write's closure left behind. A store that reports a commit has run
/// the closure exactly once (every contract suite checks it), so an empty slot is a broken adapter,
/// not a condition a caller could handle.
pub(crate) fn ran<T>(value: Option<T>) -> T {
    value
        .expect("the store committed without running the mutation: the adapter breaks its contract")
}

/// A freshly made, empty store for one run of a contract suite, with whatever must stay alive as
/// long as the store does (a temporary directory, say).
#[cfg(feature = "testkit")]
pub struct Fresh<S: ?Sized> {
    pub store: std::sync::Arc<S>,
    pub guard: Box<dyn std::any::Any + Send>,
}

#[cfg(feature = "testkit")]
impl<S: ?Sized> std::fmt::Debug for Fresh<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fresh { .. }")
    }
}

/// Runs one contract check on a fresh store, on a current-thread runtime of its own, keeping the
/// store's guard alive until the check is over. What [`contract_tests!`](crate::contract_tests)
/// expands each check to.
#[cfg(feature = "testkit")]
pub fn run_check<S, F>(fresh: impl FnOnce() -> Fresh<S>, check: impl FnOnce(std::sync::Arc<S>) -> F)
where
    S: ?Sized,
    F: std::future::Future<Output = ()>,
{
    let fresh = fresh();
    block_on(check(std::sync::Arc::clone(&fresh.store)));
    drop(fresh);
}

/// Runs `future` to its end on a new current-thread runtime.
#[cfg(feature = "testkit")]
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
        .block_on(future)
}

/// Runs `work(store, thread)` on `threads` OS threads at once, each on its own current-thread
/// runtime, and returns when all are done. A panic on any thread fails the caller. This, not
/// polling futures on one thread, is what puts an adapter's locking under real contention.
#[cfg(feature = "testkit")]
pub fn on_threads<S, F>(
    store: &std::sync::Arc<S>,
    threads: usize,
    work: impl Fn(std::sync::Arc<S>, usize) -> F + Sync,
) where
    S: ?Sized + Send + Sync,
    F: std::future::Future<Output = ()>,
{
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let store = std::sync::Arc::clone(store);
                let work = &work;
                scope.spawn(move || block_on(work(store, thread)))
            })
            .collect();
        // Re-raise a worker's own panic: the scope's generic "a scoped thread panicked" would
        // hide which check failed and why.
        for handle in handles {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}

/// Expands to one `#[test]` per named check of a port's contract module, in a module `$name`,
/// each on a fresh store from `$fresh` (a `fn() -> Fresh<dyn Port>` in scope where the macro is
/// called). Used through the per-port macros, e.g.
/// [`project_store_contract!`](crate::project_store_contract).
#[cfg(feature = "testkit")]
#[doc(hidden)]
#[macro_export]
macro_rules! contract_tests {
    ($name:ident, $fresh:ident; $wing:ident; $($check:ident),+ $(,)?) => {
        mod $name {
            $(
                #[test]
                fn $check() {
                    $crate::ports::run_check(super::$fresh, $crate::$wing::contract::$check);
                }
            )+
        }
    };
}

/// The store error inside a port's result, whichever of the two error types the method returns,
/// so that one contract assertion serves reads (`StoreError`) and read-modify-writes (`Error`).
#[cfg(feature = "testkit")]
pub trait AsStoreError {
    fn as_store_error(&self) -> Option<&crate::error::StoreError>;
}

#[cfg(feature = "testkit")]
impl AsStoreError for crate::error::StoreError {
    fn as_store_error(&self) -> Option<&crate::error::StoreError> {
        Some(self)
    }
}

#[cfg(feature = "testkit")]
impl AsStoreError for crate::error::Error {
    fn as_store_error(&self) -> Option<&crate::error::StoreError> {
        match self {
            Self::Store(e) => Some(e),
            Self::Domain(_) => None,
        }
    }
}
