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
//! | 7 | unrecoverable corruption: a file is damaged and no valid checkpoint can restore it, or a git merge left it unresolved |
//! | 8 | already exists |
//! | 9 | `cairn doctor` found problems it did not fix |
//!
//! A refused command (3–8) changes nothing. Every failure is printed on stderr as
//! `error: <message>`, then one `caused by: <cause>` line per cause (an error's text never
//! repeats its cause's), then `hint: <next step>` where there is one — a domain refusal's typed
//! next steps rendered by `cairn_render`. Under `--json` it is printed on stdout instead, as
//! `{"error": {"kind", "message", "hint", "exit_code"}}` (see [`Failure::to_json`]), with the
//! same exit code.

use std::fmt;

use cairn_domain::orchestration::OrchestrationError;
use cairn_domain::plan::PlanError;
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
  7  unrecoverable corruption: a damaged file with no valid checkpoint to restore from,
     or one a git merge left with conflict markers
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

impl Code {
    /// The error kind of a failure with this code when nothing more precise is known.
    pub fn kind(self) -> &'static str {
        match self {
            Code::Ok => "ok",
            Code::Internal => "internal",
            Code::Usage => "usage",
            Code::NotFound => "not_found",
            Code::Refused => "refused",
            Code::Invalid => "invalid",
            Code::LockTimeout => "lock_timeout",
            Code::Corrupt => "corrupt",
            Code::AlreadyExists => "already_exists",
            Code::Unhealthy => "unhealthy",
        }
    }
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
    /// A stable snake_case name of the error class, for `--json` (e.g. `illegal_transition`).
    pub kind: &'static str,
    pub message: String,
    pub hint: Option<String>,
}

impl Failure {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            kind: code.kind(),
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_kind(mut self, kind: &'static str) -> Self {
        self.kind = kind;
        self
    }

    /// The `--json` form: `{"error": {"kind", "message", "hint", "exit_code"}}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"error": {
            "kind": self.kind,
            "message": self.message,
            "hint": self.hint,
            "exit_code": self.code as u8,
        }})
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
        let mut message = e.to_string();
        // The causes are not repeated in the error's own text: print each on its line.
        for cause in Report(&e).causes() {
            message.push_str("\ncaused by: ");
            message.push_str(&cause.to_string());
        }
        let kind = match &e {
            StoreError::NotFound { .. } => "not_found",
            StoreError::AlreadyExists { .. } => "already_exists",
            StoreError::LockTimeout { .. } => "lock_timeout",
            StoreError::Corrupt { .. } => "corrupt",
            StoreError::Unmerged { .. } => "unmerged",
            StoreError::Invalid { .. } => "schema_invalid",
            StoreError::AfterCommit { .. } => "after_commit",
            StoreError::Io { .. } => "io",
        };
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
            // Keeping one side of the log would drop the other branch's entries.
            StoreError::Unmerged { path, .. } if path.ends_with("log.md") => (
                Code::Corrupt,
                Some("finish the merge keeping both sides' entries: `cairn setup git`, then `git checkout -m FILE` merges the log entry by entry; then `cairn doctor` and `git add` it".to_owned()),
            ),
            StoreError::Unmerged { .. } => (
                Code::Corrupt,
                Some("finish the merge: keep one side between the <<<<<<< and >>>>>>> markers (or `git checkout --ours FILE` / `--theirs FILE`), then `cairn doctor` and `git add` it".to_owned()),
            ),
            StoreError::Invalid { .. } => (
                Code::Invalid,
                Some("nothing was written; the refusal is in the progress log (`cairn log --event ERROR`)".to_owned()),
            ),
            StoreError::AfterCommit { .. } => (
                Code::Internal,
                Some("check the result with `cairn task show ID` or `cairn log --tail 5` before doing anything again; `cairn doctor` checks the files".to_owned()),
            ),
            // A shared store that cannot be reached: the path is its URL, already without
            // its password.
            StoreError::Io { op, path, .. } if op.starts_with("connect to") => (
                Code::Internal,
                Some(format!("check that the database at {path} is running and reachable, and that --store, CAIRN_STORE or .claude/cairn.toml names it rightly")),
            ),
            StoreError::Io { .. } => (Code::Internal, None),
        };
        Failure {
            code,
            kind,
            message,
            hint,
        }
    }
}

impl From<DomainError> for Failure {
    fn from(e: DomainError) -> Self {
        let kind = match &e {
            DomainError::Invalid { .. } => "invalid",
            DomainError::Project(p) => project_kind(p),
            DomainError::Orchestration(_) => "orchestration",
            DomainError::Plan(p) => plan_kind(p),
            DomainError::Execution(_) => "execution",
        };
        let code = match &e {
            DomainError::Invalid { .. } => Code::Invalid,
            DomainError::Project(p) => project_code(p),
            DomainError::Orchestration(o) => orchestration_code(o),
            DomainError::Plan(p) => plan_code(p),
            // Not reachable from the commands yet; a refusal is the honest default.
            DomainError::Execution(_) => Code::Refused,
        };
        let steps = e.next_steps();
        Failure {
            code,
            kind,
            message: e.to_string(),
            hint: (!steps.is_empty()).then(|| cairn_render::commands(&steps)),
        }
    }
}

/// One stable name per project error class (the variant's name in snake_case).
fn project_kind(e: &ProjectError) -> &'static str {
    use ProjectError::*;
    match e {
        UnknownTask { .. } => "unknown_task",
        UnknownDependency { .. } => "unknown_dependency",
        UnknownPhase { .. } => "unknown_phase",
        NoProjects => "no_projects",
        AmbiguousProject { .. } => "ambiguous_project",
        IllegalTransition { .. } => "illegal_transition",
        ParentNotExecutable { .. } => "parent_not_executable",
        SelfDependency { .. } => "self_dependency",
        Cycle { .. } => "cycle",
        DependenciesUnmet { .. } => "dependencies_unmet",
        BlockedDescendant { .. } => "blocked_descendant",
        CannotDecompose { .. } => "cannot_decompose",
        NotADependency { .. } => "not_a_dependency",
        PhaseClosed { .. } => "phase_closed",
        FinishedTaskEdit { .. } => "finished_task_edit",
        PhaseExists { .. } => "phase_exists",
        PhaseTransition { .. } => "phase_transition",
        PhaseHasOpenTasks { .. } => "phase_has_open_tasks",
        Claimed { .. } => "claimed",
        NotHolder { .. } => "not_holder",
        NothingToClaim => "nothing_to_claim",
        NotClaimable { .. } => "not_claimable",
    }
}

fn project_code(e: &ProjectError) -> Code {
    use ProjectError::*;
    match e {
        UnknownTask { .. } | UnknownDependency { .. } | UnknownPhase { .. } | NoProjects => {
            Code::NotFound
        }
        AmbiguousProject { .. } => Code::Usage,
        PhaseExists { .. } => Code::AlreadyExists,
        IllegalTransition { .. }
        | ParentNotExecutable { .. }
        | SelfDependency { .. }
        | Cycle { .. }
        | DependenciesUnmet { .. }
        | BlockedDescendant { .. }
        | CannotDecompose { .. }
        | NotADependency { .. }
        | PhaseClosed { .. }
        | FinishedTaskEdit { .. }
        | PhaseTransition { .. }
        | PhaseHasOpenTasks { .. }
        | Claimed { .. }
        | NotHolder { .. }
        | NothingToClaim
        | NotClaimable { .. } => Code::Refused,
    }
}

/// One stable name per plan error class (the variant's name in snake_case).
fn plan_kind(e: &PlanError) -> &'static str {
    use PlanError::*;
    match e {
        IllegalTransition { .. } => "illegal_transition",
        ApprovalMissing { .. } => "approval_missing",
        ReplanForced { .. } => "replan_forced",
        FixAttemptsExhausted { .. } => "fix_attempts_exhausted",
        FixBlockedByStrikes { .. } => "fix_blocked_by_strikes",
        WrongState { .. } => "wrong_state",
        ScopeEstimateFrozen { .. } => "scope_estimate_frozen",
        ActivePlanExists { .. } => "active_plan_exists",
        NoActivePlan => "no_active_plan",
        UnreferencedDecisions { .. } => "unreferenced_decisions",
        BadPlanId { .. } => "bad_plan_id",
        BadPointer { .. } => "bad_pointer",
        Unreadable { .. } => "corrupt",
    }
}

fn plan_code(e: &PlanError) -> Code {
    use PlanError::*;
    match e {
        NoActivePlan => Code::NotFound,
        BadPlanId { .. } => Code::Invalid,
        BadPointer { .. } | Unreadable { .. } => Code::Corrupt,
        IllegalTransition { .. }
        | ApprovalMissing { .. }
        | ReplanForced { .. }
        | FixAttemptsExhausted { .. }
        | FixBlockedByStrikes { .. }
        | WrongState { .. }
        | ScopeEstimateFrozen { .. }
        | ActivePlanExists { .. }
        | UnreferencedDecisions { .. } => Code::Refused,
    }
}

fn orchestration_code(e: &OrchestrationError) -> Code {
    use OrchestrationError::*;
    match e {
        InvalidSessionId { .. } | Blank { .. } | InvalidPhases { .. } | NothingToDo { .. } => {
            Code::Invalid
        }
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

    #[test]
    fn a_store_failure_prints_each_cause_once_on_its_own_line() {
        let failure: Failure = StoreError::AfterCommit {
            source: Box::new(StoreError::Io {
                op: "append to",
                path: "progress/log.md".into(),
                source: std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left"),
            }),
        }
        .into();
        let text = failure.to_string();
        assert!(
            text.starts_with(
                "error: the change was saved, but recording it failed; do not repeat it\n\
                 caused by: append to progress/log.md\n\
                 caused by: no space left\n\
                 hint: "
            ),
            "{text}"
        );
        assert_eq!(text.matches("no space left").count(), 1, "{text}");
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
