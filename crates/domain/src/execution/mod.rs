//! Execution sessions: the live `.claude/sessions/__live_session__/` directory an orchestrator
//! works in, its files (lock, progress, task log, shared context), its lifecycle and the rules
//! that govern it, the Storage port, and the use cases.
//!
//! The domain holds the session's values and rules; the text of its files is the filesystem
//! adapter's (`cairn_storage_fs::execution`), and the port passes values.

pub mod context;
pub mod duration;
pub mod error;
pub mod lifecycle;
pub mod lock;
pub mod naming;
pub mod progress;
pub mod run;
pub mod service;
pub mod state;
pub mod store;
pub mod task_log;

#[cfg(feature = "testkit")]
pub mod contract;
#[cfg(feature = "testkit")]
pub mod memory;

pub use context::{ExecutionContext, TaskContext};
pub use error::ExecutionError;
pub use lifecycle::SessionPhase;
pub use lock::{LockDecision, LockFile, decide_lock};
pub use progress::Progress;
pub use service::ExecutionService;
pub use state::{LiveSession, SessionState, SessionSummary};
pub use store::ExecutionSessionStore;
pub use task_log::{TaskLog, TaskLogRow, TaskOutcome};
