//! The MCP renderer: what the domain returns, as compact JSON for a model that acts through
//! tool calls. The CLI's renderer (`cairn_render`) spells the same typed next steps as command
//! lines; this one spells them as `{"tool": NAME, "args": {…}}`, with `…` where the model fills
//! a value in. A step no tool carries out yet is `{"step": NAME}`.

use cairn_domain::NextStep;
use cairn_domain::project::{Task, TaskStatus};
use serde_json::{Value, json};

/// What a model fills in.
const FILL: &str = "…";

fn call(tool: &str, args: Value) -> Value {
    json!({"tool": tool, "args": args})
}

fn plan(args: Value) -> Value {
    call("plan", args)
}

fn bare(tool: &str) -> Value {
    json!({"tool": tool})
}

/// The tool call that carries out `step`.
pub fn tool_call(step: &NextStep) -> Value {
    match step {
        NextStep::AddTask => call("add", json!({"title": FILL})),
        NextStep::NextTask => bare("next"),
        NextStep::ListReady => bare("ready"),
        NextStep::Start { task } => call("start", json!({"id": task})),
        NextStep::Complete { task } => call("complete", json!({"id": task})),
        NextStep::Block { task } => call("block", json!({"id": task, "reason": FILL})),
        NextStep::Unblock { task } => call("unblock", json!({"id": task})),
        NextStep::Decompose { task } => call("decompose", json!({"id": task, "into": [FILL]})),
        NextStep::RemoveDependency { task, on } => {
            call("depend", json!({"id": task, "on": on, "remove": true}))
        }
        NextStep::ShowTask { task } => call("show", json!({"id": task})),
        NextStep::AddTaskToPhase { phase } => call("add", json!({"title": FILL, "phase": phase})),
        NextStep::ClaimNext => call("claim", json!({"agent": FILL})),
        NextStep::ShowProject { .. } => bare("status"),
        NextStep::PlanNew { .. } => plan(json!({"action": "new", "goal": FILL})),
        NextStep::PlanStatus => plan(json!({"action": "status"})),
        NextStep::PlanResume => plan(json!({"action": "resume"})),
        NextStep::PlanList => plan(json!({"action": "list"})),
        NextStep::PlanGo { to } => {
            plan(json!({"action": "go", "state": to.as_str(), "reason": FILL}))
        }
        NextStep::PlanGoOneOf { to } => plan(json!({
            "action": "go",
            "state": to.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("|"),
            "reason": FILL,
        })),
        NextStep::PlanDecide => plan(json!({"action": "decide", "text": FILL})),
        NextStep::PlanFinding => plan(json!({"action": "finding", "text": FILL})),
        NextStep::PlanClose => plan(json!({"action": "close", "reason": FILL})),
        other => json!({"step": step_name(other)}),
    }
}

/// A step without a tool, by a stable snake_case name.
fn step_name(step: &NextStep) -> &'static str {
    match step {
        NextStep::InitProject => "init_project",
        NextStep::ChooseProject { .. } => "choose_project",
        NextStep::StartResearch { .. } => "start_research",
        NextStep::FinishResearch { .. } => "finish_research",
        NextStep::Doctor => "doctor",
        NextStep::DoctorFix => "doctor_fix",
        NextStep::EditTask { .. } => "edit_task",
        NextStep::AddPhase => "add_phase",
        NextStep::ListPhases => "list_phases",
        NextStep::ForceCompletePhase { .. } => "force_complete_phase",
        NextStep::ListTasks => "list_tasks",
        NextStep::SetProjectStatus { .. } => "set_project_status",
        NextStep::ListInProgress => "list_in_progress",
        // The user's act: no tool may carry it out.
        NextStep::PlanApprove => "user_approves_plan",
        _ => "see_cli",
    }
}

pub fn tool_calls(steps: &[NextStep]) -> Vec<Value> {
    steps.iter().map(tool_call).collect()
}

/// What to do with a task in this status, as the CLI's move report suggests it.
pub fn after(task: &Task) -> Vec<NextStep> {
    let id = task.id.clone();
    match task.status {
        TaskStatus::Pending | TaskStatus::Researched => vec![NextStep::Start { task: id }],
        TaskStatus::InProgress | TaskStatus::Validating => vec![NextStep::Complete { task: id }],
        TaskStatus::Blocked => vec![NextStep::Unblock { task: id }],
        TaskStatus::InResearch => vec![NextStep::FinishResearch { task: id }],
        TaskStatus::Complete | TaskStatus::Cancelled => vec![NextStep::NextTask],
    }
}

/// A task in a list: id, title, priority, and what it waits on.
pub fn row(task: &Task) -> Value {
    let mut row = json!({"id": task.id, "title": task.title, "priority": task.priority});
    if !task.dependencies.is_empty() {
        row["deps"] = json!(task.dependencies);
    }
    row
}

/// `value` with the next steps under `next` (left out when there are none).
pub fn with_next(mut value: Value, steps: &[NextStep]) -> Value {
    if !steps.is_empty() {
        value["next"] = json!(tool_calls(steps));
    }
    value
}
