//! Refusals of the project aggregate's rules.

use super::model::{PhaseStatus, TaskId, TaskStatus};

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
    #[error("{task} cannot move from {from} to {to} (allowed from {from}: {}){}", statuses(allowed), hint.as_deref().map(|h| format!("; {h}")).unwrap_or_default())]
    IllegalTransition {
        task: TaskId,
        from: TaskStatus,
        to: TaskStatus,
        allowed: Vec<TaskStatus>,
        hint: Option<String>,
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
        "{task} is waiting on unfinished dependencies: {}; finish those first (see `cairn task ready`)",
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

    #[error("cannot decompose {task}: it is {status}")]
    CannotDecompose { task: TaskId, status: TaskStatus },

    #[error("{task} does not depend on {dependency}")]
    NotADependency { task: TaskId, dependency: TaskId },

    #[error("no phase `{phase}` in this project (phases: {known})")]
    UnknownPhase { phase: String, known: String },

    #[error(
        "no project in this repository yet: create one with `cairn init --id ID --name NAME --goal GOAL`"
    )]
    NoProjects,

    #[error("several projects here ({}); pick one with --project ID", choices.join(", "))]
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
}

impl From<ProjectError> for crate::error::Error {
    fn from(e: ProjectError) -> Self {
        crate::error::Error::Domain(e.into())
    }
}
