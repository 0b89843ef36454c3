//! Project phases (`project.json` `phases`) and the project's own completion: the phase status
//! table, which tasks a phase holds, the current phase, and the rule that completes (or reopens)
//! the project when its last task finishes (or a new one arrives). Pure: no I/O.

use serde::Serialize;

use crate::time::Timestamp;

use super::error::ProjectError;
use super::events::ProjectEvent;
use super::model::{Phase, PhaseStatus, Project, ProjectState, ProjectStatus, Task, TaskId};

/// Where a phase may go from `from`. Completing straight from PENDING is allowed: a phase whose
/// work was done without anyone starting it is still done.
///
/// | from | allowed targets |
/// |---|---|
/// | PENDING | IN_PROGRESS, COMPLETE, SKIPPED |
/// | IN_PROGRESS | COMPLETE, SKIPPED |
/// | COMPLETE, SKIPPED | — (terminal) |
pub fn phase_targets(from: PhaseStatus) -> &'static [PhaseStatus] {
    use PhaseStatus::*;
    match from {
        Pending => &[InProgress, Complete, Skipped],
        InProgress => &[Complete, Skipped],
        Complete | Skipped => &[],
    }
}

pub fn phase_can_move(from: PhaseStatus, to: PhaseStatus) -> bool {
    phase_targets(from).contains(&to)
}

pub fn phase_is_terminal(status: PhaseStatus) -> bool {
    phase_targets(status).is_empty()
}

/// The refusal for an illegal phase move, or `Ok` for a legal one.
pub fn check_phase_move(phase: &Phase, to: PhaseStatus) -> Result<(), super::error::ProjectError> {
    if phase_can_move(phase.status, to) {
        return Ok(());
    }
    if phase_is_terminal(phase.status) || phase.status == to {
        return Err(ProjectError::PhaseClosed {
            phase: phase.id.clone(),
            status: phase.status.to_string(),
        });
    }
    Err(ProjectError::PhaseTransition {
        phase: phase.id.clone(),
        from: phase.status,
        to,
        allowed: phase_targets(phase.status)
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Whether `task` belongs to `phase`: it names the phase, or the phase lists it.
pub fn in_phase(phase: &Phase, task: &Task) -> bool {
    task.phase_id.as_deref() == Some(phase.id.as_str())
        || phase
            .task_ids
            .as_ref()
            .is_some_and(|ids| ids.contains(&task.id))
}

/// The unfinished tasks of a phase, in file order.
pub fn open_tasks(state: &ProjectState, phase: &Phase) -> Vec<TaskId> {
    state
        .tasks
        .tasks
        .iter()
        .filter(|t| in_phase(phase, t) && !t.status.is_terminal())
        .map(|t| t.id.clone())
        .collect()
}

/// A phase with its tasks counted the way `status` counts progress: leaves, cancelled ones left
/// out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseProgress {
    pub id: String,
    pub name: String,
    pub status: PhaseStatus,
    /// Leaves of the phase that are not cancelled.
    pub tasks: usize,
    pub complete: usize,
    /// Unfinished tasks (parents included), in file order.
    pub open: Vec<TaskId>,
}

pub fn progress(state: &ProjectState, phase: &Phase) -> PhaseProgress {
    let leaves = state.tasks.tasks.iter().filter(|t| {
        in_phase(phase, t) && !t.is_parent() && t.status != super::model::TaskStatus::Cancelled
    });
    let (mut tasks, mut complete) = (0, 0);
    for t in leaves {
        tasks += 1;
        if t.status == super::model::TaskStatus::Complete {
            complete += 1;
        }
    }
    PhaseProgress {
        id: phase.id.clone(),
        name: phase.name.clone(),
        status: phase.status,
        tasks,
        complete,
        open: open_tasks(state, phase),
    }
}

/// Every phase the project lists, then (as PENDING) those only named by tasks, so a phase typed
/// on `task add --phase` shows up before anyone declares it.
pub fn all_phases(state: &ProjectState) -> Vec<Phase> {
    let mut phases = state.project.phases.clone();
    for t in &state.tasks.tasks {
        if let Some(p) = &t.phase_id
            && !phases.iter().any(|ph| &ph.id == p)
        {
            phases.push(undeclared(p));
        }
    }
    phases
}

/// A phase only tasks name, as it is declared when first acted on.
pub fn undeclared(id: &str) -> Phase {
    Phase {
        id: id.to_owned(),
        name: id.to_owned(),
        status: PhaseStatus::Pending,
        task_ids: None,
        extra: Default::default(),
    }
}

/// The phase work is in: the first IN_PROGRESS one, else the first PENDING one.
pub fn current_phase(project: &Project) -> Option<&Phase> {
    project
        .phases
        .iter()
        .find(|p| p.status == PhaseStatus::InProgress)
        .or_else(|| {
            project
                .phases
                .iter()
                .find(|p| p.status == PhaseStatus::Pending)
        })
}

/// Whether every task is done: each COMPLETE or CANCELLED, and at least one COMPLETE.
pub fn all_tasks_done(state: &ProjectState) -> bool {
    let tasks = &state.tasks.tasks;
    tasks.iter().all(|t| t.status.is_terminal())
        && tasks
            .iter()
            .any(|t| t.status == super::model::TaskStatus::Complete)
}

/// The project follows its tasks at the end of their life: it completes by itself when every
/// task is done, and a COMPLETE project with open work again (a new task) is IN_PROGRESS again.
/// A CANCELLED project stays cancelled. Returns the new status when it changed.
pub fn settle_project(
    state: &mut ProjectState,
    at: Timestamp,
    events: &mut Vec<ProjectEvent>,
) -> Option<ProjectStatus> {
    let from = state.project.status;
    let done = all_tasks_done(state);
    let to = match from {
        ProjectStatus::Complete if !done && !state.tasks.tasks.is_empty() => {
            ProjectStatus::InProgress
        }
        ProjectStatus::Complete | ProjectStatus::Cancelled => return None,
        _ if done => ProjectStatus::Complete,
        _ => return None,
    };
    state.project.status = to;
    state.project.updated_at = at;
    events.push(if to == ProjectStatus::Complete {
        ProjectEvent::ProjectComplete {
            from,
            tasks: state
                .tasks
                .tasks
                .iter()
                .filter(|t| !t.is_parent() && t.status == super::model::TaskStatus::Complete)
                .count(),
        }
    } else {
        ProjectEvent::ProjectStatusChanged { from, to }
    });
    Some(to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_status() -> impl Strategy<Value = PhaseStatus> {
        prop::sample::select(PhaseStatus::ALL.to_vec())
    }

    #[test]
    fn the_table_matches_the_documented_one() {
        use PhaseStatus::*;
        assert!(phase_can_move(Pending, InProgress));
        assert!(phase_can_move(Pending, Complete));
        assert!(phase_can_move(InProgress, Complete));
        assert!(!phase_can_move(InProgress, Pending));
        assert!(!phase_can_move(Complete, InProgress));
        assert!(phase_is_terminal(Complete) && phase_is_terminal(Skipped));
    }

    proptest! {
        /// Any walk through the table ends in a terminal status within two steps, never stays
        /// put, and never leaves a terminal status.
        #[test]
        fn every_walk_is_short_and_forward(start in any_status(), picks in prop::collection::vec(0usize..8, 0..6)) {
            let mut status = start;
            let mut steps = 0;
            for pick in picks {
                let targets = phase_targets(status);
                if targets.is_empty() {
                    prop_assert!(phase_is_terminal(status));
                    break;
                }
                let next = targets[pick % targets.len()];
                prop_assert_ne!(next, status);
                prop_assert!(!phase_targets(next).contains(&status), "no way back");
                status = next;
                steps += 1;
            }
            prop_assert!(steps <= 2);
        }

        /// Every non-terminal status can reach COMPLETE directly.
        #[test]
        fn open_phases_can_complete(status in any_status()) {
            prop_assert_eq!(
                phase_is_terminal(status),
                !phase_can_move(status, PhaseStatus::Complete)
            );
        }
    }
}
