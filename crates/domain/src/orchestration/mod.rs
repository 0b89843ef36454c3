//! Orchestration sessions (SPEC §5): a multi-phase orchestration tracked in
//! `<state_dir>/state/active-session.md` — front matter plus a Markdown log — until it is
//! archived. The text of that file is the filesystem adapter's (`cairn_storage_fs::orchestration`).
//!
//! - [`model`]: the document (serde types with the seed's field names; unknown fields survive).
//! - [`phase`]: the phase transition table and [`phase::UserDecision`].
//! - [`session`]: the rules every change follows (manifests, downstream context, tokens, errors).
//! - [`log`]: the session's log, as entries the adapter renders.
//! - [`archive`]: preconditions, the plan of moves, and its verification.
//! - [`resume`]: the summary a resumed orchestrator starts from.
//! - [`hook_state`]: which transient hook-state directories to prune.
//! - [`store`], [`service`]: the Storage port and the use cases.
//!
//! Decisions where the spec and seed are silent:
//! - Phase ids are 1..=n in plan order unless the caller gives its own (seed 004's
//!   `create_session` does: distinct positive integers); a phase may only be blocked by earlier phases, and cannot
//!   start until each blocker is completed or skipped (a skipped blocker was the user's call).
//! - Failed → in_progress is a retry whichever use case asks for it, so the retry limit cannot be
//!   bypassed by "starting" a failed phase.
//! - Completing a phase resolves its open errors: the phase succeeding is their resolution.
//! - Manifests, downstream context and errors can only be recorded on a phase that ran (not
//!   pending, not skipped); completed phases still take downstream context (it is extracted
//!   from their handoff report after completion).
//! - Session `status` is derived: completed exactly when every phase is completed or skipped.
//!   Archiving unfinished work (user decision only) leaves it `in_progress` rather than lie.
//! - `current_phase` is the first in-progress phase, else the first pending or failed one, else
//!   the last phase.
//! - Archiving never overwrites an existing archive file; the session file moves last so a crash
//!   mid-archive leaves the session active and the archive can be rerun.

pub mod archive;
pub mod error;
pub mod hook_state;
pub mod log;
pub mod model;
pub mod phase;
pub mod resume;
pub mod service;
pub mod session;
pub mod store;

#[cfg(feature = "testkit")]
pub mod contract;
#[cfg(feature = "testkit")]
pub mod memory;

pub use archive::{
    ArchiveBlocker, ArchiveOutcome, ArchivePlan, ArchiveVerification, Location, PlannedMove,
};
pub use error::OrchestrationError;
pub use log::{AgentOutput, LogEntry, PhaseReport};
pub use model::{
    DownstreamContext, ErrorKind, ErrorRecord, Phase, PhaseId, PhaseStatus, Session, SessionId,
    SessionState, SessionStatus, TokenCounts, TokenUsage, WorkflowMode,
};
pub use phase::UserDecision;
pub use service::OrchestrationService;
pub use session::{
    FileChanges, NewError, NewPhase, NewSession, PLANNED_FILES, PhaseTransition, SessionUpdate,
};
pub use store::OrchestrationStore;
