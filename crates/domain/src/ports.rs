//! The ports: everything the domain needs from the outside world.
//!
//! Two small synchronous ports ([`Clock`], [`IdGen`]) stand in for the wall clock and randomness.
//! The Storage ports (one per aggregate) are `#[async_trait]` traits, dyn-compatible and `Send +
//! Sync`, so that one trait serves the filesystem adapter, the in-memory adapter, a future database
//! adapter and the long-running servers alike. Each lives beside its aggregate:
//! [`crate::project::store::ProjectStore`] and the session and plan stores.

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
