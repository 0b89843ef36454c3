//! Refusals of the project aggregate's rules.
//!
//! Each says in words why the rule refused; what to do about it is typed
//! ([`ProjectError::next_steps`]) so that each interface says it in its own terms.

use crate::next::NextStep;
use crate::time::{Timestamp, format_rfc3339};

use super::model::{PhaseStatus, ProjectId, TaskId, TaskStatus};

fn list(ids: &[TaskId]) -> String {
    ids.iter()
        .map(TaskId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// At most `max` ids, then how many more.
fn list_some(ids: &[TaskId], max: usize) -> String {
    if ids.len() <= max {
        return list(ids);
    }
    format!("{} and {} more", list(&ids[..max]), ids.len() - max)
}

fn statuses(all: &[TaskStatus]) -> String {
    if all.is_empty() {
        "none: it is final".to_owned()
    } else {
        all.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ProjectError {
    /// `allowed` is what this task may move to: the table's row, narrowed by the structural
    /// rules (a BLOCKED leaf goes back to PENDING only).
    #[error(
        "{task} cannot move from {from} to {to} (allowed from {from}: {})",
        statuses(allowed)
    )]
    IllegalTransition {
        task: TaskId,
        from: TaskStatus,
        to: TaskStatus,
        allowed: Vec<TaskStatus>,
    },

    #[error("no task {task} in this project")]
    UnknownTask { task: TaskId },

    #[error("{task} cannot depend on {dependency}: no such task")]
    UnknownDependency { task: TaskId, dependency: TaskId },

    #[error("{task} cannot depend on itself")]
    SelfDependency { task: TaskId },

    #[error("that dependency would create a cycle: {}", cycle.iter().map(TaskId::as_str).collect::<Vec<_>>().join(" → "))]
    Cycle { cycle: Vec<TaskId> },

    #[error(
        "{task} is waiting on unfinished dependencies: {}; finish those first",
        list(waiting_on)
    )]
    DependenciesUnmet {
        task: TaskId,
        waiting_on: Vec<TaskId>,
    },

    #[error(
        "{task} has subtasks ({}): a parent is never worked on directly, it completes when its subtasks do",
        list(children)
    )]
    ParentNotExecutable { task: TaskId, children: Vec<TaskId> },

    #[error("cannot cancel {task}: its subtask {blocked} is BLOCKED; unblock it first")]
    BlockedDescendant { task: TaskId, blocked: TaskId },

    /// A decomposed parent is IN_PROGRESS, so only a task that may move there (or is there)
    /// can be decomposed.
    #[error("cannot decompose {task}: {}", decompose_refusal(*status))]
    CannotDecompose { task: TaskId, status: TaskStatus },

    #[error("{task} does not depend on {dependency}")]
    NotADependency { task: TaskId, dependency: TaskId },

    #[error("no phase `{phase}` in this project (phases: {known})")]
    UnknownPhase { phase: String, known: String },

    #[error("no project in this repository yet: create one first")]
    NoProjects,

    #[error("several projects here ({}); say which one to use", choices.join(", "))]
    AmbiguousProject { choices: Vec<String> },

    #[error("phase `{phase}` is already {status}")]
    PhaseClosed { phase: String, status: String },

    #[error(
        "{task} is {status}: its {} cannot change any more (on a finished task only the title, description, tags and external id can be edited)",
        fields.join(", ")
    )]
    FinishedTaskEdit {
        task: TaskId,
        status: TaskStatus,
        fields: Vec<String>,
    },

    #[error("phase `{phase}` already exists")]
    PhaseExists { phase: String },

    #[error("phase `{phase}` cannot move from {from} to {to} (allowed from {from}: {allowed})")]
    PhaseTransition {
        phase: String,
        from: PhaseStatus,
        to: PhaseStatus,
        allowed: String,
    },

    #[error(
        "phase `{phase}` still has {} open task{}: {}; finish or cancel {} first, or complete the phase anyway with force",
        open.len(),
        if open.len() == 1 { "" } else { "s" },
        list_some(open, 10),
        if open.len() == 1 { "it" } else { "them" }
    )]
    PhaseHasOpenTasks { phase: String, open: Vec<TaskId> },

    #[error(
        "{task} is claimed by {holder} until {}; it is theirs while the lease runs (another agent may override with force)",
        format_rfc3339(expires)
    )]
    Claimed {
        task: TaskId,
        holder: String,
        expires: Timestamp,
    },

    #[error("{agent} does not hold {task}: {}", not_holder(holder.as_deref(), *status))]
    NotHolder {
        task: TaskId,
        agent: String,
        holder: Option<String>,
        status: TaskStatus,
    },

    #[error("no task is ready to claim: every open task is taken, waiting or blocked")]
    NothingToClaim,

    #[error("{task} is {status}: only a PENDING or RESEARCHED task can be claimed")]
    NotClaimable { task: TaskId, status: TaskStatus },
}

fn not_holder(holder: Option<&str>, status: TaskStatus) -> String {
    match holder {
        Some(holder) => format!("it is claimed by {holder}"),
        None if matches!(status, TaskStatus::InProgress | TaskStatus::Validating) => {
            "nobody claimed it".to_owned()
        }
        None => format!("it is {status}, so nobody holds it; claim it first"),
    }
}

fn decompose_refusal(status: TaskStatus) -> String {
    match status {
        TaskStatus::InResearch => {
            "its research is under way, and IN_RESEARCH cannot move to IN_PROGRESS, where a \
             decomposed parent stands; record the research as done first"
                .to_owned()
        }
        TaskStatus::Blocked => "it is BLOCKED; unblock it first".to_owned(),
        s if s.is_terminal() => format!("it is {s}, which is final"),
        s => format!("it is {s}, which cannot move to IN_PROGRESS"),
    }
}

impl ProjectError {
    /// What to do about the refusal, first step first; empty when nothing obvious helps.
    pub fn next_steps(&self) -> Vec<NextStep> {
        use ProjectError::*;
        match self {
            IllegalTransition { task, from, to, .. } => transition_steps(task, *from, *to),
            UnknownTask { .. } | UnknownDependency { .. } => vec![NextStep::ListTasks],
            DependenciesUnmet { .. } => vec![NextStep::ListReady],
            ParentNotExecutable { task, .. } => vec![NextStep::ShowTask { task: task.clone() }],
            BlockedDescendant { blocked, .. } => vec![NextStep::Unblock {
                task: blocked.clone(),
            }],
            CannotDecompose { task, status } => match status {
                TaskStatus::InResearch => vec![
                    NextStep::FinishResearch { task: task.clone() },
                    NextStep::Decompose { task: task.clone() },
                ],
                TaskStatus::Blocked => vec![
                    NextStep::Unblock { task: task.clone() },
                    NextStep::Decompose { task: task.clone() },
                ],
                _ => Vec::new(),
            },
            NoProjects => vec![NextStep::InitProject],
            AmbiguousProject { choices } => vec![NextStep::ChooseProject {
                choices: choices
                    .iter()
                    .filter_map(|c| c.parse::<ProjectId>().ok())
                    .collect(),
            }],
            SelfDependency { .. } | Cycle { .. } | NotADependency { .. } | PhaseClosed { .. } => {
                Vec::new()
            }
            UnknownPhase { .. } => vec![NextStep::ListPhases],
            FinishedTaskEdit { .. } => vec![NextStep::AddTask],
            PhaseExists { .. } | PhaseTransition { .. } => vec![NextStep::ListPhases],
            PhaseHasOpenTasks { phase, .. } => vec![NextStep::ForceCompletePhase {
                phase: phase.clone(),
            }],
            Claimed { task, .. } | NotHolder { task, .. } => {
                vec![
                    NextStep::ShowTask { task: task.clone() },
                    NextStep::ClaimNext,
                ]
            }
            NothingToClaim => vec![NextStep::ListTasks],
            NotClaimable { task, .. } => vec![NextStep::ShowTask { task: task.clone() }],
        }
    }
}

fn transition_steps(task: &TaskId, from: TaskStatus, to: TaskStatus) -> Vec<NextStep> {
    let task = task.clone();
    match (from, to) {
        (TaskStatus::Blocked, _) => vec![NextStep::Unblock { task }],
        (
            TaskStatus::Pending | TaskStatus::Researched,
            TaskStatus::Complete | TaskStatus::Validating,
        ) => vec![NextStep::Start { task }],
        (
            TaskStatus::InResearch,
            TaskStatus::InProgress | TaskStatus::Complete | TaskStatus::Validating,
        ) => vec![
            NextStep::FinishResearch { task: task.clone() },
            NextStep::Start { task },
        ],
        _ => vec![NextStep::ShowTask { task }],
    }
}

impl From<ProjectError> for crate::error::Error {
    fn from(e: ProjectError) -> Self {
        crate::error::Error::Domain(e.into())
    }
}
