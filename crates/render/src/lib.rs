//! cairn's text for people and agents.
//!
//! The domain returns values — reports, refusals, typed [`NextStep`]s — and never command syntax.
//! Both text interfaces (the `cairn` CLI and `cairn-hook`, whose readers act through the CLI)
//! render them here, so they say the same thing in the same words. The MCP server renders next
//! steps as tool calls instead, and does not use this crate.

use cairn_domain::NextStep;

/// The `cairn` command line that carries out `step`.
pub fn command(step: &NextStep) -> String {
    match step {
        NextStep::InitProject => "cairn init --id ID --name NAME --goal GOAL".to_owned(),
        NextStep::ChooseProject { .. } => "cairn --project ID …".to_owned(),
        NextStep::AddTask => "cairn task add TITLE".to_owned(),
        NextStep::NextTask => "cairn task next".to_owned(),
        NextStep::ListReady => "cairn task ready".to_owned(),
        NextStep::Start { task } => format!("cairn task start {task}"),
        NextStep::StartResearch { task } => format!("cairn task research {task}"),
        NextStep::FinishResearch { task } => format!("cairn task research {task} --done"),
        NextStep::Complete { task } => format!("cairn task complete {task}"),
        NextStep::Block { task } => format!("cairn task block {task} --reason \"…\""),
        NextStep::Unblock { task } => format!("cairn task unblock {task}"),
        NextStep::Decompose { task } => format!("cairn task decompose {task} --into TITLE …"),
        NextStep::RemoveDependency { task, on } => {
            format!("cairn task depend {task} --on {on} --remove")
        }
        NextStep::Doctor => "cairn doctor".to_owned(),
        NextStep::DoctorFix => "cairn doctor --fix".to_owned(),
        NextStep::ShowProject { project } => format!("cairn --project {project} status"),
        NextStep::SetProjectStatus { project, status } => {
            format!("cairn --project {project} project set-status {status}")
        }
        NextStep::ListInProgress => "cairn task list --status IN_PROGRESS".to_owned(),
        // `NextStep` is non-exhaustive so that new wings can add steps; a step this renderer
        // does not know yet still gets a pointer to the help instead of nothing.
        #[allow(unreachable_patterns)]
        _ => "cairn --help".to_owned(),
    }
}

/// Several steps as one line: `cairn task start T-001, then cairn task complete T-001`.
pub fn commands(steps: &[NextStep]) -> String {
    steps
        .iter()
        .map(command)
        .collect::<Vec<_>>()
        .join(", then ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_domain::project::TaskId;

    #[test]
    fn task_steps_name_the_task() {
        let task: TaskId = "T-003".parse().unwrap();
        assert_eq!(
            command(&NextStep::Start { task: task.clone() }),
            "cairn task start T-003"
        );
        assert_eq!(
            commands(&[
                NextStep::FinishResearch { task: task.clone() },
                NextStep::Start { task }
            ]),
            "cairn task research T-003 --done, then cairn task start T-003"
        );
    }
}
