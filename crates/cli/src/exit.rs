//! Exit codes and how failures are reported.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | I/O or internal error (a file could not be read or written) |
//! | 2 | usage: bad arguments (clap), or which project is meant is ambiguous |
//! | 3 | not found: no such project, task, phase or checkpoint |
//! | 4 | refused by a rule: illegal transition, cycle, unmet dependencies, a parent worked on directly … |
//! | 5 | invalid input: a value breaks the model (title too short, bad id …) or fails schema validation |
//! | 6 | lock timeout: another cairn process held the project too long |
//! | 7 | unrecoverable corruption: a file is damaged and no valid checkpoint can restore it |
//! | 8 | already exists |
//! | 9 | `cairn doctor` found problems it did not fix |
//!
//! A refused command (3–8) changes nothing. Every failure is printed on stderr as
//! `error: <message>`, followed by `hint: <next step>` where there is one.

use std::fmt;

use cairn_domain::orchestration::OrchestrationError;
use cairn_domain::project::ProjectError;
use cairn_domain::{DomainError, Entity, Error, Report, StoreError};

/// The help text of the table above, for `cairn --help`.
pub const EXIT_CODES_HELP: &str = "Exit codes:
  0  success
  1  I/O or internal error
  2  usage: bad arguments, or an ambiguous project (pick one with --project)
  3  not found: no such project, task, phase or checkpoint
  4  refused by a rule: illegal transition, cycle, unmet dependencies, ...
  5  invalid input: a value breaks the model, or fails schema validation
  6  lock timeout: another cairn process held the project too long
  7  unrecoverable corruption: a damaged file with no valid checkpoint to restore from
  8  already exists
  9  doctor found problems it did not fix
A refused command (3-8) changes nothing.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Code {
    Ok = 0,
    Internal = 1,
    Usage = 2,
    NotFound = 3,
    Refused = 4,
    Invalid = 5,
    LockTimeout = 6,
    Corrupt = 7,
    AlreadyExists = 8,
    Unhealthy = 9,
}

impl From<Code> for std::process::ExitCode {
    fn from(code: Code) -> Self {
        std::process::ExitCode::from(code as u8)
    }
}

/// A command that failed: what to print and how to exit.
#[derive(Debug)]
pub struct Failure {
    pub code: Code,
    pub message: String,
    pub hint: Option<String>,
}

impl Failure {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        match e {
            Error::Domain(d) => d.into(),
            Error::Store(s) => s.into(),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        // The whole chain: variants carrying a source leave its text out of their own message.
        let message = Report(&e).to_string();
        let (code, hint) = match &e {
            StoreError::NotFound { entity: Entity::Project, .. } => (
                Code::NotFound,
                Some("`cairn project list` shows the projects here; `cairn init` creates one".to_owned()),
            ),
            StoreError::NotFound { entity: Entity::Checkpoint, .. } => (
                Code::NotFound,
                Some("`cairn checkpoint list` shows the checkpoints that exist".to_owned()),
            ),
            StoreError::NotFound { .. } => (Code::NotFound, None),
            StoreError::AlreadyExists { .. } => (
                Code::AlreadyExists,
                Some("pick another id, or work on the existing one with --project ID".to_owned()),
            ),
            StoreError::LockTimeout { .. } => (
                Code::LockTimeout,
                Some("retry in a moment; if it keeps happening, look for a hung cairn or cairn-hook process".to_owned()),
            ),
            StoreError::Corrupt { .. } => (
                Code::Corrupt,
                Some("run `cairn doctor` for details; the damaged file is kept, so it can be repaired by hand".to_owned()),
            ),
            StoreError::Invalid { .. } => (
                Code::Invalid,
                Some("nothing was written; the refusal is in the progress log (`cairn log --event ERROR`)".to_owned()),
            ),
            StoreError::AfterCommit { .. } => (
                Code::Internal,
                Some("check the result with `cairn task show ID` or `cairn log --tail 5` before doing anything again; `cairn doctor` checks the files".to_owned()),
            ),
            StoreError::Io { .. } => (Code::Internal, None),
        };
        Failure {
            code,
            message,
            hint,
        }
    }
}

impl From<DomainError> for Failure {
    fn from(e: DomainError) -> Self {
        // The domain's own hint reads better on its own `hint:` line than inside the message.
        if let DomainError::Project(ProjectError::IllegalTransition {
            task,
            from,
            to,
            allowed,
            hint: Some(hint),
        }) = &e
        {
            let plain = ProjectError::IllegalTransition {
                task: task.clone(),
                from: *from,
                to: *to,
                allowed: allowed.clone(),
                hint: None,
            };
            return Failure::new(Code::Refused, plain.to_string()).with_hint(hint.clone());
        }
        let message = e.to_string();
        let (code, hint) = match &e {
            DomainError::Invalid { .. } => (Code::Invalid, None),
            DomainError::Project(p) => project_code(p),
            DomainError::Orchestration(o) => (orchestration_code(o), None),
            // Not reachable from the project commands; a refusal is the honest default.
            DomainError::Plan(_) | DomainError::Execution(_) => (Code::Refused, None),
        };
        Failure {
            code,
            message,
            hint,
        }
    }
}

fn project_code(e: &ProjectError) -> (Code, Option<String>) {
    use ProjectError::*;
    match e {
        UnknownTask { .. } | UnknownDependency { .. } => (
            Code::NotFound,
            Some("`cairn task list` shows the task ids".to_owned()),
        ),
        UnknownPhase { .. } => (Code::NotFound, None),
        NoProjects => (Code::NotFound, None),
        AmbiguousProject { .. } => (Code::Usage, None),
        IllegalTransition { task, .. } => (
            Code::Refused,
            Some(format!("`cairn task show {task}` shows where it stands")),
        ),
        ParentNotExecutable { .. } => (
            Code::Refused,
            Some("work on its subtasks: `cairn task list` shows them indented under it".to_owned()),
        ),
        SelfDependency { .. }
        | Cycle { .. }
        | DependenciesUnmet { .. }
        | BlockedDescendant { .. }
        | CannotDecompose { .. }
        | NotADependency { .. }
        | PhaseClosed { .. } => (Code::Refused, None),
    }
}

fn orchestration_code(e: &OrchestrationError) -> Code {
    use OrchestrationError::*;
    match e {
        InvalidSessionId { .. } | Blank { .. } | InvalidPhases { .. } => Code::Invalid,
        PhaseNotFound { .. } => Code::NotFound,
        _ => Code::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_domain::project::{TaskId, TaskStatus};

    #[test]
    fn each_kind_of_failure_has_its_own_code() {
        let task: TaskId = "T-001".parse().unwrap();
        let cases: Vec<(Failure, Code)> = vec![
            (
                StoreError::NotFound {
                    entity: Entity::Project,
                    id: "x".into(),
                }
                .into(),
                Code::NotFound,
            ),
            (
                ProjectError::IllegalTransition {
                    task: task.clone(),
                    from: TaskStatus::Pending,
                    to: TaskStatus::Complete,
                    allowed: vec![],
                    hint: None,
                }
                .into_failure(),
                Code::Refused,
            ),
            (
                DomainError::invalid("title", "too short").into(),
                Code::Invalid,
            ),
            (
                StoreError::LockTimeout {
                    lock: "l".into(),
                    waited_ms: 1,
                }
                .into(),
                Code::LockTimeout,
            ),
            (
                StoreError::Corrupt {
                    path: "p".into(),
                    detail: "d".into(),
                }
                .into(),
                Code::Corrupt,
            ),
            (
                StoreError::AlreadyExists {
                    entity: Entity::Project,
                    id: "x".into(),
                }
                .into(),
                Code::AlreadyExists,
            ),
            (
                ProjectError::AmbiguousProject {
                    choices: vec!["a".into(), "b".into()],
                }
                .into_failure(),
                Code::Usage,
            ),
        ];
        for (failure, code) in cases {
            assert_eq!(failure.code, code, "{failure}");
        }
    }

    trait IntoFailure {
        fn into_failure(self) -> Failure;
    }

    impl IntoFailure for ProjectError {
        fn into_failure(self) -> Failure {
            DomainError::from(self).into()
        }
    }
}
