//! The lifecycle of an execution session, as a transition table.
//!
//! ```text
//! Creation ──▶ Active ──▶ Archival ──▶ Done
//!    │          │  ▲ (waves)   │
//!    └──────────┴──┴───────────┴──▶ Interrupted ──▶ Recovery ──▶ Creation
//! ```
//!
//! The seed only draws `Active → Interrupted`. A process can die at any moment after the live
//! directory has been written, though, so a crash during creation or half-way through archival
//! leaves leftovers just the same; those are recovered by the same path.

use std::fmt;

use super::error::ExecutionError;

/// Where a session is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SessionPhase {
    /// The live directory is being set up (`Status: Initializing`).
    Creation,
    /// Waves are running (`Status: Executing`).
    Active,
    /// Final status written, summary written, files being moved (`Status: Complete`).
    Archival,
    /// Moved to `.claude/sessions/{id}/`; nothing live remains.
    Done,
    /// The owning process died; leftovers sit in the live directory.
    Interrupted,
    /// The next invocation is archiving leftovers and resetting their tasks.
    Recovery,
}

impl SessionPhase {
    pub const ALL: [SessionPhase; 6] = [
        SessionPhase::Creation,
        SessionPhase::Active,
        SessionPhase::Archival,
        SessionPhase::Done,
        SessionPhase::Interrupted,
        SessionPhase::Recovery,
    ];

    /// The transition table: every phase reachable in one step from `self`.
    pub fn allowed_targets(self) -> &'static [SessionPhase] {
        use SessionPhase::*;
        match self {
            Creation => &[Active, Interrupted],
            // Active → Active is a wave (or a task result) inside the running session.
            Active => &[Active, Archival, Interrupted],
            Archival => &[Done, Interrupted],
            Done => &[],
            Interrupted => &[Recovery],
            Recovery => &[Creation],
        }
    }

    pub fn can_go_to(self, to: SessionPhase) -> bool {
        self.allowed_targets().contains(&to)
    }

    pub fn is_terminal(self) -> bool {
        self.allowed_targets().is_empty()
    }

    /// Checks one step; the error names the session, both phases and what would have been allowed.
    pub fn transition(
        self,
        session: &str,
        to: SessionPhase,
    ) -> Result<SessionPhase, ExecutionError> {
        if self.can_go_to(to) {
            Ok(to)
        } else {
            Err(ExecutionError::IllegalTransition {
                session: session.to_owned(),
                from: self,
                to,
                allowed: self.allowed_targets().to_vec(),
            })
        }
    }

    /// Checks a whole path (`[from, a, b, …]`) step by step, stopping at the first illegal step.
    pub fn walk(session: &str, path: &[SessionPhase]) -> Result<SessionPhase, ExecutionError> {
        let mut at = *path
            .first()
            .expect("a lifecycle path has at least its starting phase");
        for &next in &path[1..] {
            at = at.transition(session, next)?;
        }
        Ok(at)
    }
}

impl fmt::Display for SessionPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SessionPhase::Creation => "Creation",
            SessionPhase::Active => "Active",
            SessionPhase::Archival => "Archival",
            SessionPhase::Done => "Done",
            SessionPhase::Interrupted => "Interrupted",
            SessionPhase::Recovery => "Recovery",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SessionPhase::*;

    #[test]
    fn the_happy_path_and_the_recovery_path_are_legal() {
        assert_eq!(
            SessionPhase::walk("s", &[Creation, Active, Active, Archival, Done]),
            Ok(Done)
        );
        assert_eq!(
            SessionPhase::walk("s", &[Active, Interrupted, Recovery, Creation]),
            Ok(Creation)
        );
    }

    #[test]
    fn an_illegal_step_names_session_phases_and_alternatives() {
        let err = Creation
            .transition("user-auth-20260205-143022", Archival)
            .unwrap_err();
        assert_eq!(
            err,
            ExecutionError::IllegalTransition {
                session: "user-auth-20260205-143022".into(),
                from: Creation,
                to: Archival,
                allowed: vec![Active, Interrupted],
            }
        );
        let text = err.to_string();
        assert!(
            text.contains("user-auth-20260205-143022") && text.contains("Active, Interrupted"),
            "{text}"
        );
    }

    #[test]
    fn done_is_the_only_terminal_phase() {
        let terminal: Vec<_> = SessionPhase::ALL
            .into_iter()
            .filter(|p| p.is_terminal())
            .collect();
        assert_eq!(terminal, vec![Done]);
        assert!(
            Done.transition("s", Creation)
                .unwrap_err()
                .to_string()
                .contains("nothing (terminal)")
        );
    }
}
