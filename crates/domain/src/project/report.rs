//! Read-only views over a project: the integrity diagnosis behind `doctor`, the summary behind
//! `status`, and `prime`, the compact context handed to an agent. These are values: the text
//! each interface shows is rendered outside the domain (`cairn-render` for the CLI and the hook).

use std::collections::{HashMap, HashSet};

use rustc_hash::FxHashSet;

use serde::Serialize;

use crate::next::NextStep;
use crate::time::Timestamp;

use super::events::ProjectEvent;
use super::graph::{self, Index};
use super::model::{ProjectState, TaskDoc, TaskId, TaskStatus};
use super::tasks::settle;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The store is inconsistent: something will misbehave.
    Error,
    /// Legal but probably not what anyone wants.
    Warning,
}

/// One problem `doctor` found in the tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// Stable machine-readable code, e.g. `dangling-dependency`.
    pub code: &'static str,
    pub task: Option<TaskId>,
    pub message: String,
    /// `doctor --fix` can repair it without guessing.
    pub fixable: bool,
    /// What to do about it: a repair for a fixable finding, else whatever helps a person decide.
    pub next_steps: Vec<NextStep>,
}

fn finding(
    severity: Severity,
    code: &'static str,
    task: Option<&TaskId>,
    fixable: bool,
    message: String,
) -> Finding {
    Finding {
        severity,
        code,
        task: task.cloned(),
        message,
        fixable,
        next_steps: if fixable {
            vec![NextStep::DoctorFix]
        } else {
            Vec::new()
        },
    }
}

/// Everything wrong with the task list's structure. Pure: looks at nothing but `doc`.
pub fn diagnose(doc: &TaskDoc) -> Vec<Finding> {
    let mut out = Vec::new();
    // FxHash: ids are numbers cairn gave; SipHash was a fifth of a diagnosis of 100,000 tasks.
    let mut seen = FxHashSet::with_capacity_and_hasher(doc.tasks.len(), Default::default());
    for t in &doc.tasks {
        if !seen.insert(&t.id) {
            out.push(finding(
                Severity::Error,
                "duplicate-id",
                Some(&t.id),
                false,
                format!(
                    "{} appears more than once in tasks.json; rename or remove one copy by hand",
                    t.id
                ),
            ));
        }
    }
    let index = Index::new(doc);
    for t in &doc.tasks {
        let mut deps = FxHashSet::default();
        for d in &t.dependencies {
            if !deps.insert(d) {
                out.push(finding(
                    Severity::Warning,
                    "duplicate-dependency",
                    Some(&t.id),
                    true,
                    format!("{} lists dependency {d} twice", t.id),
                ));
            }
            match index.get(d) {
                None => out.push(finding(Severity::Error, "dangling-dependency", Some(&t.id), true, format!("{} depends on {d}, which does not exist", t.id))),
                Some(dep) if dep.status == TaskStatus::Cancelled && t.status.is_open() => out.push(Finding {
                    next_steps: vec![NextStep::RemoveDependency { task: t.id.clone(), on: d.clone() }],
                    ..finding(
                        Severity::Warning,
                        "cancelled-dependency",
                        Some(&t.id),
                        false,
                        format!("{} depends on cancelled {d} and can never become ready; remove the dependency", t.id),
                    )
                }),
                Some(_) => {}
            }
        }
        for c in t.children() {
            match index.get(c) {
                None => out.push(finding(
                    Severity::Error,
                    "dangling-subtask",
                    Some(&t.id),
                    true,
                    format!("{} lists subtask {c}, which does not exist", t.id),
                )),
                Some(child) if child.parent_id.as_ref() != Some(&t.id) => out.push(finding(
                    Severity::Error,
                    "parent-mismatch",
                    Some(c),
                    child.parent_id.is_none(),
                    format!(
                        "{} lists {c} as a subtask but {c} names {} as its parent",
                        t.id,
                        child
                            .parent_id
                            .as_ref()
                            .map_or("no task".to_owned(), |p| p.to_string())
                    ),
                )),
                Some(_) => {}
            }
        }
        if let Some(p) = &t.parent_id {
            match index.get(p) {
                None => out.push(finding(
                    Severity::Error,
                    "orphan",
                    Some(&t.id),
                    true,
                    format!("{}'s parent {p} does not exist", t.id),
                )),
                Some(parent) if !parent.children().contains(&t.id) => out.push(finding(
                    Severity::Error,
                    "parent-mismatch",
                    Some(&t.id),
                    true,
                    format!(
                        "{} names {p} as its parent but {p} does not list it as a subtask",
                        t.id
                    ),
                )),
                Some(_) => {}
            }
        }
        if t.is_parent() {
            let unfinished: Vec<&TaskId> = t
                .children()
                .iter()
                .filter(|c| index.get(c).is_some_and(|c| !c.status.is_terminal()))
                .collect();
            if t.status == TaskStatus::Complete && !unfinished.is_empty() {
                out.push(finding(
                    Severity::Error,
                    "complete-parent-open-child",
                    Some(&t.id),
                    false,
                    format!(
                        "{} is COMPLETE but its subtask {} is not finished",
                        t.id, unfinished[0]
                    ),
                ));
            }
            // A file written before the cascades knew their rules (or by another tool) can hold
            // a parent they would have moved; `doctor --fix` runs them.
            match settle(t, |c| index.get(c).map(|c| c.status)) {
                Some((TaskStatus::Complete, _)) => out.push(finding(
                    Severity::Warning,
                    "parent-not-completed",
                    Some(&t.id),
                    true,
                    format!(
                        "every subtask of {} is complete but {} is still {}",
                        t.id, t.id, t.status
                    ),
                )),
                Some(_) => out.push(finding(
                    Severity::Warning,
                    "parent-not-cancelled",
                    Some(&t.id),
                    true,
                    format!(
                        "every subtask of {} was cancelled but {} is still {}: nothing is left to do under it, so it can never complete",
                        t.id, t.id, t.status
                    ),
                )),
                None => {}
            }
        }
    }
    if let Some(cycle) = graph::find_cycle(doc) {
        let path = cycle
            .iter()
            .map(TaskId::as_str)
            .collect::<Vec<_>>()
            .join(" → ");
        out.push(finding(
            Severity::Error,
            "cycle",
            cycle.first(),
            false,
            format!("dependency cycle {path}: remove one of these dependencies"),
        ));
    }
    out
}

/// Repairs what [`diagnose`] marks fixable, each repair logged. Nothing is deleted but ids that
/// point nowhere.
pub fn repair(doc: &mut TaskDoc, at: Timestamp) -> Vec<ProjectEvent> {
    let mut events = Vec::new();
    let ids: HashSet<TaskId> = doc.tasks.iter().map(|t| t.id.clone()).collect();
    let claimed: HashMap<TaskId, TaskId> = doc
        .tasks
        .iter()
        .flat_map(|p| p.children().iter().map(move |c| (c.clone(), p.id.clone())))
        .collect();
    let parents_of: HashMap<TaskId, Option<TaskId>> = doc
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.parent_id.clone()))
        .collect();
    let mut adopt: Vec<(TaskId, TaskId)> = Vec::new();
    for t in &mut doc.tasks {
        let mut kept = Vec::new();
        for d in std::mem::take(&mut t.dependencies) {
            if !ids.contains(&d) {
                events.push(ProjectEvent::Repaired {
                    task: Some(t.id.clone()),
                    detail: format!("removed dangling dependency {d}"),
                });
            } else if kept.contains(&d) {
                events.push(ProjectEvent::Repaired {
                    task: Some(t.id.clone()),
                    detail: format!("removed duplicate dependency {d}"),
                });
            } else {
                kept.push(d);
            }
        }
        t.dependencies = kept;
        if let Some(children) = &mut t.subtasks {
            let before: Vec<TaskId> = children.clone();
            children.retain(|c| ids.contains(c));
            for gone in before.iter().filter(|c| !ids.contains(*c)) {
                events.push(ProjectEvent::Repaired {
                    task: Some(t.id.clone()),
                    detail: format!("removed dangling subtask {gone}"),
                });
            }
            // A listed child with no parent of its own is unambiguous: give it this one.
            for c in children.iter() {
                if parents_of.get(c).is_some_and(Option::is_none) {
                    adopt.push((c.clone(), t.id.clone()));
                }
            }
        }
        if let Some(p) = t.parent_id.clone() {
            if !ids.contains(&p) {
                t.parent_id = None;
                events.push(ProjectEvent::Repaired {
                    task: Some(t.id.clone()),
                    detail: format!("cleared missing parent {p}"),
                });
            } else if !claimed.contains_key(&t.id) {
                adopt.push((t.id.clone(), p));
            }
        }
    }
    for (child, parent) in adopt {
        if let Some(c) = doc.tasks.find_mut(|t| t.id == child)
            && c.parent_id.is_none()
        {
            c.parent_id = Some(parent.clone());
            events.push(ProjectEvent::Repaired {
                task: Some(child.clone()),
                detail: format!("set parent to {parent}, which lists it as a subtask"),
            });
        }
        if let Some(p) = doc.tasks.find_mut(|t| t.id == parent) {
            let list = p.subtasks.get_or_insert_with(Vec::new);
            if !list.contains(&child) {
                list.push(child.clone());
                events.push(ProjectEvent::Repaired {
                    task: Some(parent.clone()),
                    detail: format!("listed {child} as a subtask, as its parent_id says"),
                });
            }
        }
    }
    for e in doc.cascade_all(at) {
        if let ProjectEvent::TaskMoved { task, to, .. } = &e {
            let detail = if *to == TaskStatus::Complete {
                "completed: all its subtasks are complete"
            } else {
                "cancelled: all its subtasks were cancelled"
            };
            events.push(ProjectEvent::Repaired {
                task: Some(task.clone()),
                detail: detail.into(),
            });
        }
        events.push(e);
    }
    events
}

/// Counts and lists behind `cairn status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub project: String,
    pub name: String,
    pub goal: String,
    pub status: String,
    pub counts: HashMap<String, usize>,
    pub total: usize,
    pub leaves_total: usize,
    pub leaves_complete: usize,
    pub in_progress: Vec<(TaskId, String)>,
    /// The claimed tasks among `in_progress`: holder and lease expiry (which may have passed).
    #[serde(skip)]
    pub claims: Vec<(TaskId, String, Option<Timestamp>)>,
    pub blocked: Vec<(TaskId, String, String)>,
    pub next: Vec<(TaskId, String)>,
    pub phases: Vec<(String, String)>,
    /// The phase under way (else the first pending one), with its progress.
    #[serde(skip)]
    pub current_phase: Option<super::phases::PhaseProgress>,
}

impl Summary {
    /// What to do next, most useful first: add a task to an empty project, start the first ready
    /// one, or, when only blockers stand in the way, unblock the first.
    pub fn next_steps(&self) -> Vec<NextStep> {
        if self.total == 0 {
            vec![NextStep::AddTask]
        } else if let Some((task, _)) = self.next.first() {
            vec![NextStep::Start { task: task.clone() }]
        } else if let (true, Some((task, _, _))) =
            (self.in_progress.is_empty(), self.blocked.first())
        {
            vec![NextStep::Unblock { task: task.clone() }]
        } else {
            Vec::new()
        }
    }

    /// Every non-cancelled leaf is complete (and there is at least one).
    pub fn all_complete(&self) -> bool {
        self.leaves_total > 0 && self.leaves_complete == self.leaves_total
    }
}

pub fn summarize(state: &ProjectState, next_count: usize) -> Summary {
    let doc = &state.tasks;
    // Counted by status first: one string per status, not one per task.
    let mut by_status = [0usize; TaskStatus::ALL.len()];
    for t in &doc.tasks {
        if let Some(i) = TaskStatus::ALL.iter().position(|s| *s == t.status) {
            by_status[i] += 1;
        }
    }
    let counts: HashMap<String, usize> = TaskStatus::ALL
        .iter()
        .zip(by_status)
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| (s.as_str().to_owned(), n))
        .collect();
    let leaves: Vec<_> = doc
        .tasks
        .iter()
        .filter(|t| !t.is_parent() && t.status != TaskStatus::Cancelled)
        .collect();
    Summary {
        project: state.project.id.to_string(),
        name: state.project.name.clone(),
        goal: state.project.goal.clone(),
        status: state.project.status.to_string(),
        counts,
        total: doc.tasks.len(),
        leaves_total: leaves.len(),
        leaves_complete: leaves
            .iter()
            .filter(|t| t.status == TaskStatus::Complete)
            .count(),
        in_progress: doc
            .tasks
            .iter()
            .filter(|t| {
                !t.is_parent()
                    && matches!(
                        t.status,
                        TaskStatus::InProgress | TaskStatus::InResearch | TaskStatus::Validating
                    )
            })
            .map(|t| (t.id.clone(), t.title.clone()))
            .collect(),
        claims: doc
            .tasks
            .iter()
            .filter(|t| !t.is_parent() && t.status.is_transitional())
            .filter_map(|t| Some((t.id.clone(), t.claimed_by.clone()?, t.lease_expires_at)))
            .collect(),
        blocked: doc
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Blocked)
            .map(|t| {
                (
                    t.id.clone(),
                    t.title.clone(),
                    t.blocked_reason.clone().unwrap_or_default(),
                )
            })
            .collect(),
        next: graph::schedule_first(doc, next_count)
            .into_iter()
            .map(|t| (t.id.clone(), t.title.clone()))
            .collect(),
        phases: state
            .project
            .phases
            .iter()
            .map(|p| (p.id.clone(), p.status.to_string()))
            .collect(),
        current_phase: super::phases::current_phase(&state.project)
            .map(|phase| super::phases::progress(state, phase)),
    }
}

/// `text` on one line, cut to `max` characters with an ellipsis.
pub fn clip(text: &str, max: usize) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut s: String = one_line.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// How many ready tasks [`prime`] lists.
pub const PRIME_NEXT_TASKS: usize = 5;

/// What an agent is told at session start (the text is `cairn_render::prime`): the summary,
/// with the few next ready tasks.
pub fn prime(state: &ProjectState) -> Summary {
    summarize(state, PRIME_NEXT_TASKS)
}
