//! The task status machine.
//!
//! | from        | allowed targets                                                      |
//! |-------------|----------------------------------------------------------------------|
//! | PENDING     | IN_RESEARCH, RESEARCHED, IN_PROGRESS, BLOCKED, CANCELLED             |
//! | IN_RESEARCH | RESEARCHED, PENDING, BLOCKED, CANCELLED                              |
//! | RESEARCHED  | IN_RESEARCH, IN_PROGRESS, PENDING, BLOCKED, CANCELLED                |
//! | IN_PROGRESS | VALIDATING, COMPLETE, RESEARCHED, PENDING, BLOCKED, CANCELLED        |
//! | VALIDATING  | COMPLETE, IN_PROGRESS, RESEARCHED, PENDING, BLOCKED, CANCELLED       |
//! | BLOCKED     | PENDING (unblock a leaf), IN_PROGRESS (unblock a parent)             |
//! | COMPLETE    | — (terminal)                                                         |
//! | CANCELLED   | — (terminal)                                                         |
//!
//! Moves back to PENDING are resets; IN_PROGRESS/VALIDATING → RESEARCHED is what resume
//! reconciliation does when a fresh research brief exists. Research may be skipped. BLOCKED leaves
//! only by an explicit unblock — not even to CANCELLED — so a blocked task always gets a human's
//! look. Structural rules on top of the table live in [`super::tasks`]: parents are never executed
//! (they change status only by decomposition, the completion cascade, block/unblock and cancel),
//! and a leaf starts only when its dependencies are complete.

use super::model::TaskStatus::{self, *};

/// Every status a task in `from` may move to. Empty for terminal statuses.
pub fn allowed_targets(from: TaskStatus) -> &'static [TaskStatus] {
    match from {
        Pending => &[InResearch, Researched, InProgress, Blocked, Cancelled],
        InResearch => &[Researched, Pending, Blocked, Cancelled],
        Researched => &[InResearch, InProgress, Pending, Blocked, Cancelled],
        InProgress => &[
            Validating, Complete, Researched, Pending, Blocked, Cancelled,
        ],
        Validating => &[
            Complete, InProgress, Researched, Pending, Blocked, Cancelled,
        ],
        Blocked => &[Pending, InProgress],
        Complete | Cancelled => &[],
    }
}

/// Whether the table allows `from` → `to`.
///
/// ```
/// use cairn_domain::project::TaskStatus::*;
/// use cairn_domain::project::status::can_move;
///
/// assert!(can_move(Pending, InProgress));   // research may be skipped
/// assert!(!can_move(Blocked, Cancelled));   // BLOCKED leaves only by an explicit unblock
/// assert!(!can_move(Complete, Pending));    // COMPLETE is final
/// ```
pub fn can_move(from: TaskStatus, to: TaskStatus) -> bool {
    allowed_targets(from).contains(&to)
}

impl TaskStatus {
    pub fn is_terminal(self) -> bool {
        matches!(self, Complete | Cancelled)
    }

    /// Work was under way: what resume reconciliation looks at.
    pub fn is_transitional(self) -> bool {
        matches!(self, InResearch | InProgress | Validating)
    }

    /// Not finished and not given up on.
    pub fn is_open(self) -> bool {
        !self.is_terminal()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_statuses_have_no_way_out() {
        for s in TaskStatus::ALL {
            assert_eq!(s.is_terminal(), allowed_targets(*s).is_empty(), "{s}");
        }
    }

    #[test]
    fn blocked_never_goes_straight_to_cancelled_or_complete() {
        assert!(!can_move(Blocked, Cancelled));
        assert!(!can_move(Blocked, Complete));
    }

    #[test]
    fn no_status_moves_to_itself() {
        for s in TaskStatus::ALL {
            assert!(!can_move(*s, *s), "{s}");
        }
    }

    #[test]
    fn research_may_be_skipped() {
        assert!(can_move(Pending, Researched));
        assert!(can_move(Pending, InProgress));
    }
}
