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

/// This machine's name, for lock files: the kernel's, else `$HOSTNAME`, else `unknown`. Only the
/// first line, trimmed, so it can never break a `key: value` file.
pub fn hostname() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .and_then(|text| text.lines().next().map(|l| l.trim().to_owned()))
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}
