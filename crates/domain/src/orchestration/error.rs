//! Every refusal the orchestration rules can raise.

use super::archive::ArchiveBlocker;
use super::model::{PhaseId, PhaseStatus, SessionId};

/// A refusal by an orchestration-session rule. Raised before anything changes.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum OrchestrationError {
    #[error("invalid session id {id:?}: {reason}")]
    InvalidSessionId { id: String, reason: String },

    #[error("{field} must not be blank")]
    Blank { field: &'static str },

    #[error("invalid phase list: {reason}")]
    InvalidPhases { reason: String },

    #[error("session {session} has no phase {phase}")]
    PhaseNotFound { session: SessionId, phase: PhaseId },

    #[error(
        "session {session}, phase {phase}: cannot go from {from} to {to}; allowed from {from}: {}",
        list_statuses(.allowed)
    )]
    IllegalTransition {
        session: SessionId,
        phase: PhaseId,
        from: PhaseStatus,
        to: PhaseStatus,
        allowed: Vec<PhaseStatus>,
    },

    #[error(
        "session {session}, phase {phase}: only a failed phase can be retried, this one is {status}"
    )]
    NotFailed {
        session: SessionId,
        phase: PhaseId,
        status: PhaseStatus,
    },

    #[error(
        "session {session}, phase {phase}: already retried {retries} times (the limit is {max}); escalate to the user \
         instead of retrying again"
    )]
    RetriesExhausted {
        session: SessionId,
        phase: PhaseId,
        retries: u32,
        max: u32,
    },

    #[error("session {session}, phase {phase}: blocked by unfinished phases {}", list_ids(.blockers))]
    Blocked {
        session: SessionId,
        phase: PhaseId,
        blockers: Vec<PhaseId>,
    },

    #[error(
        "session {session}, phase {phase}: nothing can be recorded on a {status} phase, it never ran"
    )]
    PhaseNeverRan {
        session: SessionId,
        phase: PhaseId,
        status: PhaseStatus,
    },

    #[error("session {session}, phase {phase}: no error #{index} (the phase has {len})")]
    NoSuchError {
        session: SessionId,
        phase: PhaseId,
        index: usize,
        len: usize,
    },

    #[error("session {session}, phase {phase}: error #{index} is already resolved")]
    ErrorAlreadyResolved {
        session: SessionId,
        phase: PhaseId,
        index: usize,
    },

    #[error("session {active} is still active; archive or resume it before starting another")]
    ActiveSessionExists { active: SessionId },

    #[error("a session {id} has already been archived; choose another topic")]
    SessionIdTaken { id: SessionId },

    #[error("the active session is {active}, not {given}")]
    SessionMismatch { active: SessionId, given: SessionId },

    #[error("nothing to do: {reason}")]
    NothingToDo { reason: String },

    #[error("session {session} cannot be archived: {}", list_blockers(.blockers))]
    ArchiveBlocked {
        session: SessionId,
        blockers: Vec<ArchiveBlocker>,
    },
}

fn list_statuses(statuses: &[PhaseStatus]) -> String {
    if statuses.is_empty() {
        return "nothing (terminal)".to_owned();
    }
    statuses
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_ids(ids: &[PhaseId]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_blockers(blockers: &[ArchiveBlocker]) -> String {
    blockers
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
