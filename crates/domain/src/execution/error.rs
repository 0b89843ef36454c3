//! Everything an execution-session rule (or the task-list bridge) can refuse.

use super::lifecycle::SessionPhase;

/// A refusal by an execution-session or task-list rule. Raised before anything is written.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ExecutionError {
    #[error(
        "execution session `{session}` cannot go from {from} to {to}; allowed from {from}: {}",
        render_allowed(allowed)
    )]
    IllegalTransition {
        session: String,
        from: SessionPhase,
        to: SessionPhase,
        allowed: Vec<SessionPhase>,
    },

    #[error(
        "execution session `{session}` holds the lock ({age}); a lock is stale only after {stale_after_hours} h. \
         If that session is really dead, start again forcing the lock"
    )]
    SessionLocked {
        session: String,
        age: String,
        stale_after_hours: i64,
    },

    #[error(
        "execution session `{session}` is in {phase}; {action} needs it Active (begin a wave first)"
    )]
    NotActive {
        session: String,
        phase: SessionPhase,
        action: String,
    },

    #[error("there is no live execution session")]
    NoLiveSession,

    #[error("task group `{group}` cannot name a session: {reason}")]
    InvalidTaskGroup { group: String, reason: String },

    #[error(
        "execution session `{session}`: wave {requested} is out of order (current wave {current} of {total})"
    )]
    WaveOutOfOrder {
        session: String,
        requested: u32,
        current: u32,
        total: u32,
    },

    #[error("execution session `{session}`: task `{task}` is not among the active tasks")]
    UnknownActiveTask { session: String, task: String },

    #[error(
        "execution session `{session}`: tasks {} are still active; finish, fail or skip them before the next wave",
        tasks.join(", ")
    )]
    TasksStillActive { session: String, tasks: Vec<String> },

    #[error("{task} cannot run in this session: {reason}")]
    NotSchedulable { task: String, reason: String },

    #[error("there is nothing to run: {reason}")]
    NothingToRun { reason: String },

    #[error("attempts {used}/{max} make no sense: need 1 <= used <= max")]
    InvalidAttempts { used: u32, max: u32 },

    #[error("task list id `{list_id}` refused: {reason}")]
    InvalidListId { list_id: String, reason: String },

    #[error("execution pointer `{pointer}` refused: {reason}")]
    PointerRejected { pointer: String, reason: String },
}

fn render_allowed(allowed: &[SessionPhase]) -> String {
    if allowed.is_empty() {
        return "nothing (terminal)".to_owned();
    }
    allowed
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
