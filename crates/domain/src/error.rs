//! The error types shared by every aggregate.
//!
//! [`DomainError`] is a rule refusing a change: it is raised before anything is written, so a
//! refused operation changes nothing. [`StoreError`] is an adapter failing to read or write. A
//! service returns [`Error`], which is one or the other; the binaries map each variant to a
//! distinct exit code.

/// A refusal by a domain rule. Each aggregate contributes its own error enum.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum DomainError {
    /// A value that breaks a rule of the model (an id of the wrong shape, a title too short, …).
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },

    #[error(transparent)]
    Project(#[from] crate::project::ProjectError),

    #[error(transparent)]
    Orchestration(#[from] crate::orchestration::OrchestrationError),

    #[error(transparent)]
    Plan(#[from] crate::plan::PlanError),

    #[error(transparent)]
    Execution(#[from] crate::execution::ExecutionError),
}

impl DomainError {
    /// What to do about the refusal, first step first (see [`crate::NextStep`]); empty when
    /// the message says all there is.
    pub fn next_steps(&self) -> Vec<crate::NextStep> {
        match self {
            DomainError::Project(p) => p.next_steps(),
            DomainError::Invalid { .. }
            | DomainError::Orchestration(_)
            | DomainError::Plan(_)
            | DomainError::Execution(_) => Vec::new(),
        }
    }

    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// An adapter failing to read or write. Variants carry the path (or key) and the operation; a
/// cause is reached through `source()`, not repeated in the text.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{what} `{id}` not found")]
    NotFound { what: &'static str, id: String },

    #[error("{what} `{id}` already exists")]
    AlreadyExists { what: &'static str, id: String },

    #[error(
        "gave up after {waited_ms} ms waiting for the lock on {lock}: another process is holding it"
    )]
    LockTimeout { lock: String, waited_ms: u64 },

    #[error("{path} is damaged and no valid checkpoint could restore it: {detail}")]
    Corrupt { path: String, detail: String },

    #[error("refused to write {path}: the new content fails its schema: {detail}")]
    Invalid { path: String, detail: String },

    /// The change itself was saved, but what follows it (the checkpoint, the log entry) failed:
    /// repeating the operation would apply it twice. Like every error here that wraps a cause,
    /// its text does not repeat the cause's: callers print the chain (`source()`).
    #[error("the change was saved, but recording it failed; do not repeat it")]
    AfterCommit {
        #[source]
        source: Box<StoreError>,
    },

    #[error("{op} {path}")]
    Io {
        op: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What a service returns: a rule said no, or the store failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Domain(#[from] DomainError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Error {
    /// A refusal's next steps; a store failure's remedies belong to each interface (they name
    /// files and processes), so it has none here.
    pub fn next_steps(&self) -> Vec<crate::NextStep> {
        match self {
            Error::Domain(d) => d.next_steps(),
            Error::Store(_) => Vec::new(),
        }
    }
}
