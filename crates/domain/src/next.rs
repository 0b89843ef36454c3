//! Typed next steps: what a person or an agent should do after an answer or a refusal.
//!
//! The domain says *what* to do; each interface says it in its own terms — the CLI and the hook as
//! a `cairn …` command line (`cairn-render`), the MCP server as a tool call, the board as a
//! button. That keeps command syntax out of the domain, so renaming a flag touches one renderer.

use crate::plan::PlanState;
use crate::project::{ProjectId, ProjectStatus, TaskId};

impl NextStep {
    /// A move to one of `targets`: [`NextStep::PlanGo`] when there is one, else
    /// [`NextStep::PlanGoOneOf`]; `None` when there is none.
    pub fn plan_go(targets: &[PlanState]) -> Option<NextStep> {
        match targets {
            [] => None,
            [one] => Some(NextStep::PlanGo { to: *one }),
            many => Some(NextStep::PlanGoOneOf { to: many.to_vec() }),
        }
    }
}

/// One thing to do next. Variants name the use case, not a command line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum NextStep {
    /// Create the first project.
    InitProject,
    /// Choose which of several projects to work on.
    ChooseProject { choices: Vec<ProjectId> },
    /// Add tasks to the project.
    AddTask,
    /// Ask which task to do next.
    NextTask,
    /// List every ready task.
    ListReady,
    /// Start work on a task.
    Start { task: TaskId },
    /// Start researching a task.
    StartResearch { task: TaskId },
    /// Record that a task's research is done.
    FinishResearch { task: TaskId },
    /// Complete a task.
    Complete { task: TaskId },
    /// Block a task, saying why.
    Block { task: TaskId },
    /// Unblock a task.
    Unblock { task: TaskId },
    /// Split a task into subtasks.
    Decompose { task: TaskId },
    /// Remove the dependency of `task` on `on`.
    RemoveDependency { task: TaskId, on: TaskId },
    /// Check the project's files and tasks.
    Doctor,
    /// Repair what `doctor` can repair.
    DoctorFix,
    /// Change a task's fields (title, estimate, criteria, …).
    EditTask { task: TaskId },
    /// Declare a phase.
    AddPhase,
    /// List the phases and where each stands.
    ListPhases,
    /// Add a task to a phase.
    AddTaskToPhase { phase: String },
    /// Complete a phase although some of its tasks are still open.
    ForceCompletePhase { phase: String },
    /// List the tasks, with their ids.
    ListTasks,
    /// Show where one task stands.
    ShowTask { task: TaskId },
    /// Show one project's state (and so work on it).
    ShowProject { project: ProjectId },
    /// Change a project's status (e.g. make it the one IN_PROGRESS project).
    SetProjectStatus {
        project: ProjectId,
        status: ProjectStatus,
    },
    /// List the tasks under way.
    ListInProgress,
    /// Claim the next ready task for an agent.
    ClaimNext,
    /// Start a plan (replacing an active one when `force`).
    PlanNew { force: bool },
    /// Show where the active plan stands.
    PlanStatus,
    /// Everything an agent needs to continue the active plan.
    PlanResume,
    /// List every plan.
    PlanList,
    /// Move the active plan along one row of the transition table.
    PlanGo { to: PlanState },
    /// Move the active plan to one of several states (the choice is the agent's).
    PlanGoOneOf { to: Vec<PlanState> },
    /// The user approves the plan (PLAN → EXECUTE).
    PlanApprove,
    /// Log a decision in the active plan.
    PlanDecide,
    /// Record a finding, e.g. one that references a decision.
    PlanFinding,
    /// Close the active plan.
    PlanClose,
}
