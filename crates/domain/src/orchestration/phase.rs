//! The phase state machine as a transition table.
//!
//! ```text
//! pending ──start──▶ in_progress ──complete──▶ completed (terminal)
//!    │                  │    ▲
//!    │                  fail  retry (at most MAX_RETRIES times)
//!    │                  ▼    │
//!    │                  failed
//!    └──skip (UserDecision only)──▶ skipped (terminal)
//! ```

use super::error::OrchestrationError;
use super::model::PhaseStatus::{self, *};

/// How many times a failed phase may be put back in progress before the user must decide.
pub const MAX_RETRIES: u32 = 2;

/// Every legal move, by source status. A status absent from the right-hand side of every row it
/// could come from cannot be reached from there; completed and skipped have no targets.
pub const PHASE_TRANSITIONS: [(PhaseStatus, &[PhaseStatus]); 5] = [
    (Pending, &[InProgress, Skipped]),
    (InProgress, &[Completed, Failed]),
    (Failed, &[InProgress]),
    (Completed, &[]),
    (Skipped, &[]),
];

/// The statuses a phase in `from` may move to.
pub fn allowed_targets(from: PhaseStatus) -> &'static [PhaseStatus] {
    PHASE_TRANSITIONS
        .iter()
        .find(|(source, _)| *source == from)
        .map_or(&[], |(_, targets)| targets)
}

pub fn is_allowed(from: PhaseStatus, to: PhaseStatus) -> bool {
    allowed_targets(from).contains(&to)
}

/// Proof that the user, not an agent, decided something only a user may decide (skipping a phase,
/// archiving unfinished work). The field is private and the only constructor demands a reason,
/// so no code path can skip a phase by accident or by default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserDecision {
    reason: String,
}

impl UserDecision {
    /// The user's decision and why, in their words (recorded in the session log).
    pub fn by_user(reason: impl Into<String>) -> Result<Self, OrchestrationError> {
        let reason = one_line(&reason.into());
        if reason.is_empty() {
            return Err(OrchestrationError::Blank {
                field: "user decision reason",
            });
        }
        Ok(Self { reason })
    }

    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// Collapses every run of whitespace (newlines included) to one space and trims the ends, for
/// values that end up in a Markdown heading or list item.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
