//! The live session's lock and the rule that decides whether a new session may start. The
//! `.lock` file's text is the filesystem adapter's (`cairn_storage_fs::execution`).

use chrono::TimeDelta;

use super::duration::format_age;
use super::error::ExecutionError;
use crate::time::Timestamp;

/// A lock younger than this belongs to a session presumed alive.
pub const LOCK_STALE_AFTER: TimeDelta = TimeDelta::hours(4);

/// What the orchestrator writes as `pid`: Claude Code skills have no process id of their own.
pub const ORCHESTRATOR_PID: &str = "orchestrator";

/// The lock file as read. Parsing is lenient, so fields a damaged file lacks stay empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockFile {
    /// The session that holds the lock; empty when the file does not say.
    pub task_execution_id: String,
    /// When the lock was taken; `None` when missing or unreadable.
    pub timestamp: Option<Timestamp>,
    pub pid: String,
    /// The machine the lock was taken on, when the writer says (cairn does; the seed's skill
    /// does not). A pid means nothing on another host.
    pub host: Option<String>,
}

impl LockFile {
    pub fn new(task_execution_id: impl Into<String>, at: Timestamp) -> Self {
        Self {
            task_execution_id: task_execution_id.into(),
            timestamp: Some(at),
            pid: ORCHESTRATOR_PID.to_owned(),
            host: None,
        }
    }

    /// How old the lock is at `now`. A timestamp in the future (clock skew) counts as age zero.
    pub fn age(&self, now: Timestamp) -> Option<TimeDelta> {
        self.timestamp.map(|at| (now - at).max(TimeDelta::zero()))
    }
}

/// What the lock rule says about starting a new session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockDecision {
    /// No lock: start.
    Proceed,
    /// A lock at least [`LOCK_STALE_AFTER`] old: its session is presumed dead; remove it and start.
    Stale { holder: String, age: TimeDelta },
    /// A live-looking lock overridden by `--force`.
    Forced {
        holder: String,
        age: Option<TimeDelta>,
    },
    /// A lock younger than [`LOCK_STALE_AFTER`] (or of unknown age) and no `--force`.
    Refuse {
        holder: String,
        age: Option<TimeDelta>,
    },
}

impl LockDecision {
    pub fn may_proceed(&self) -> bool {
        !matches!(self, LockDecision::Refuse { .. })
    }

    /// The refusal as an error that says how old the lock is and how to override it.
    pub fn into_result(self) -> Result<LockDecision, ExecutionError> {
        match self {
            LockDecision::Refuse { holder, age } => Err(ExecutionError::SessionLocked {
                session: if holder.is_empty() {
                    "(unnamed)".to_owned()
                } else {
                    holder
                },
                age: match age {
                    Some(age) => format!("taken {} ago", format_age(age)),
                    None => "its timestamp is missing or unreadable".to_owned(),
                },
                stale_after_hours: LOCK_STALE_AFTER.num_hours(),
            }),
            other => Ok(other),
        }
    }
}

/// The lock rule. A lock whose age cannot be read is treated as live: refusing is safe, and
/// `--force` is the documented way out, whereas guessing "stale" could run two sessions at once.
pub fn decide_lock(lock: Option<&LockFile>, now: Timestamp, force: bool) -> LockDecision {
    let Some(lock) = lock else {
        return LockDecision::Proceed;
    };
    let holder = lock.task_execution_id.clone();
    match lock.age(now) {
        Some(age) if age >= LOCK_STALE_AFTER => LockDecision::Stale { holder, age },
        age if force => LockDecision::Forced { holder, age },
        age => LockDecision::Refuse { holder, age },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32) -> Timestamp {
        chrono::Utc.with_ymd_and_hms(2026, 2, 5, h, m, 0).unwrap()
    }

    #[test]
    fn the_four_hour_boundary() {
        let lock = LockFile::new("s", at(10, 0));
        assert_eq!(decide_lock(None, at(10, 0), false), LockDecision::Proceed);
        assert!(matches!(
            decide_lock(Some(&lock), at(13, 59), false),
            LockDecision::Refuse { .. }
        ));
        assert!(matches!(
            decide_lock(Some(&lock), at(13, 59), true),
            LockDecision::Forced { .. }
        ));
        assert_eq!(
            decide_lock(Some(&lock), at(14, 0), false),
            LockDecision::Stale {
                holder: "s".into(),
                age: TimeDelta::hours(4)
            }
        );
    }

    #[test]
    fn refusal_says_how_old_and_how_to_force() {
        let lock = LockFile::new("user-auth-20260205-143022", at(10, 0));
        let err = decide_lock(Some(&lock), at(11, 12), false)
            .into_result()
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("taken 1h 12m ago") && text.contains("forcing") && text.contains("4 h"),
            "{text}"
        );
    }

    #[test]
    fn an_unreadable_or_future_lock_counts_as_live() {
        let unreadable = LockFile {
            task_execution_id: "x".into(),
            timestamp: None,
            pid: String::new(),
            host: None,
        };
        assert!(matches!(
            decide_lock(Some(&unreadable), at(23, 0), false),
            LockDecision::Refuse { age: None, .. }
        ));
        let future = LockFile::new("x", at(20, 0));
        assert_eq!(future.age(at(10, 0)), Some(TimeDelta::zero()));
        assert!(!decide_lock(Some(&future), at(10, 0), false).may_proceed());
    }
}
