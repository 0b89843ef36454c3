//! The production implementations of the domain's small ports: the wall clock and randomness.

use cairn_domain::ports::{Clock, IdGen};
use cairn_domain::time::Timestamp;
use chrono::{SubsecRound, Utc};

/// The system clock, truncated to whole seconds: every timestamp cairn writes has second
/// precision, like the progress log's headings, so a value written and read back compares equal.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Utc::now().trunc_subsecs(0)
    }
}

/// Fresh v4 UUIDs from the operating system's randomness.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomIds;

impl IdGen for RandomIds {
    fn random_u128(&self) -> u128 {
        uuid::Uuid::new_v4().as_u128()
    }
}
