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

impl StoreError {
    pub fn not_found(entity: Entity, id: impl std::fmt::Display) -> Self {
        Self::NotFound {
            entity,
            id: id.to_string(),
        }
    }

    pub fn already_exists(entity: Entity, id: impl std::fmt::Display) -> Self {
        Self::AlreadyExists {
            entity,
            id: id.to_string(),
        }
    }

    /// Marks a failure that happened after the change was saved. Idempotent: an error that is
    /// already `AfterCommit` is not wrapped twice.
    pub fn after_commit(self) -> Self {
        match self {
            Self::AfterCommit { .. } => self,
            other => Self::AfterCommit {
                source: Box::new(other),
            },
        }
    }

    /// Whether the change this error reports on was nonetheless saved.
    pub fn is_after_commit(&self) -> bool {
        matches!(self, Self::AfterCommit { .. })
    }
}

impl DomainError {
    /// What to do about the refusal, first step first (see [`crate::NextStep`]); empty when
    /// the message says all there is.
    pub fn next_steps(&self) -> Vec<crate::NextStep> {
        match self {
            DomainError::Project(p) => p.next_steps(),
            DomainError::Plan(p) => p.next_steps(),
            DomainError::Invalid { .. }
            | DomainError::Orchestration(_)
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

/// What a [`StoreError::NotFound`] or [`StoreError::AlreadyExists`] is about. Callers match on
/// it (the CLI picks its hint by entity), so it is typed rather than text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Entity {
    Project,
    Task,
    Checkpoint,
    /// The active orchestration session (`state/active-session.md`).
    Session,
    /// An orchestration session in the archive.
    ArchivedSession,
    /// A document an orchestration archive moves (design document, implementation plan).
    ArchivedDocument,
    /// The live execution session (its directory holds a lock file).
    ExecutionSession,
    /// An archived execution session directory.
    ExecutionArchive,
    Plan,
    /// One of a plan's documents (`plan.md`, `findings.md`, …); the id is `<plan>/<file>`.
    PlanDocument,
}

impl Entity {
    /// The noun used in messages; these are the texts the messages had before the enum, so no
    /// user-visible message changed.
    pub fn noun(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::Task => "task",
            Self::Checkpoint => "checkpoint",
            Self::Session => "active orchestration session",
            Self::ArchivedSession => "archived orchestration session",
            Self::ArchivedDocument => "archived document",
            Self::ExecutionSession => "live execution session",
            Self::ExecutionArchive => "session archive",
            Self::Plan => "plan",
            Self::PlanDocument => "plan document",
        }
    }
}

impl std::fmt::Display for Entity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.noun())
    }
}

/// An adapter failing to read or write. Variants carry the path (or key) and the operation; a
/// cause is reached through `source()`, not repeated in the text.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{entity} `{id}` not found")]
    NotFound { entity: Entity, id: String },

    #[error("{entity} `{id}` already exists")]
    AlreadyExists { entity: Entity, id: String },

    #[error(
        "gave up after {waited_ms} ms waiting for the lock on {lock}: another process is holding it"
    )]
    LockTimeout { lock: String, waited_ms: u64 },

    #[error("{path} is damaged and no valid checkpoint could restore it: {detail}")]
    Corrupt { path: String, detail: String },

    /// A git merge left conflict markers in the file: cairn reads and recovers nothing from it,
    /// since a rebuild would throw away the merge a person is resolving.
    #[error(
        "{path} holds an unresolved git merge (conflict markers from line {line}); nothing was changed"
    )]
    Unmerged { path: String, line: usize },

    #[error("refused to write {path}: the new content fails its schema: {detail}")]
    Invalid { path: String, detail: String },

    /// The change itself was saved, but what follows it (the checkpoint, the log entry, a second
    /// file of the same operation) failed: repeating the operation would apply it twice. The
    /// cause is the `source`, not repeated here, so that a report walking the chain prints it
    /// once.
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

/// An error and every cause under it, as one line: `outer: cause: root cause`. Variants that
/// carry a `#[source]` leave it out of their own message, so this is how a binary prints the
/// whole story once.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a>(pub &'a (dyn std::error::Error + 'static));

impl<'a> Report<'a> {
    /// The causes under the error, outermost first (the CLI prints each as a `caused by:` line).
    pub fn causes(&self) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
        std::iter::successors(self.0.source(), |e| e.source())
    }
}

impl std::fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        for cause in self.causes() {
            write!(f, ": {cause}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io() -> StoreError {
        StoreError::Io {
            op: "append to",
            path: "progress/log.md".into(),
            source: std::io::Error::other("disk full"),
        }
    }

    #[test]
    fn a_cause_is_printed_once_by_the_report_and_never_by_its_wrapper() {
        let error = io().after_commit();
        let own = error.to_string();
        assert!(
            !own.contains("disk full") && !own.contains("log.md"),
            "AfterCommit must leave its source to the chain: {own}"
        );
        let report = Report(&error).to_string();
        assert_eq!(
            report,
            "the change was saved, but recording it failed; do not repeat it: append to progress/log.md: disk full"
        );
        assert_eq!(report.matches("disk full").count(), 1);
        let causes: Vec<String> = Report(&error).causes().map(|c| c.to_string()).collect();
        assert_eq!(causes, ["append to progress/log.md", "disk full"]);
    }

    #[test]
    fn after_commit_is_not_wrapped_twice() {
        let twice = io().after_commit().after_commit();
        assert!(
            matches!(&twice, StoreError::AfterCommit { source } if matches!(**source, StoreError::Io { .. })),
            "{twice:?}"
        );
        assert!(twice.is_after_commit());
    }

    #[test]
    fn not_found_names_its_entity_as_before() {
        assert_eq!(
            StoreError::not_found(Entity::Project, "demo").to_string(),
            "project `demo` not found"
        );
    }
}
