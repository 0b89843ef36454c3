//! Policies: when to checkpoint, what resume reconciliation and staleness do, how fresh research
//! is, when temp files are debris, and velocity. Pure decisions over values the adapter supplies.

use std::collections::HashSet;

use chrono::Duration;
use serde::{Deserialize, Serialize};

use crate::time::{Timestamp, rfc3339};

use super::events::ProjectEvent;
use super::model::{Task, TaskDoc, TaskId, TaskStatus};
use super::tasks::MoveDetail;

/// A checkpoint after this many task completions (or a phase completion, whichever first).
pub const CHECKPOINT_EVERY_COMPLETIONS: u32 = 10;
/// Checkpoints kept; older ones are pruned.
pub const CHECKPOINT_RETENTION: usize = 10;
/// A research brief younger than this is reused.
pub const RESEARCH_TTL: Duration = Duration::hours(24);
/// A `temp/.write-*` file older than this is an abandoned write.
pub const DEBRIS_MAX_AGE: Duration = Duration::minutes(5);
/// A task IN_PROGRESS longer than this many times its estimate is stale.
pub const STALE_FACTOR: i64 = 4;
/// What a task stale for the second time is blocked with.
pub const STALE_TWICE_REASON: &str = "Stale twice — requires human review";

pub fn checkpoint_due(completions_since_checkpoint: u32, phase_completed: bool) -> bool {
    phase_completed || completions_since_checkpoint >= CHECKPOINT_EVERY_COMPLETIONS
}

pub fn research_is_fresh(modified: Timestamp, now: Timestamp) -> bool {
    now - modified < RESEARCH_TTL
}

pub fn is_debris(modified: Timestamp, now: Timestamp) -> bool {
    now - modified > DEBRIS_MAX_AGE
}

/// One change resume would make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reconciled {
    pub task: TaskId,
    pub from: TaskStatus,
    pub to: TaskStatus,
    pub reason: String,
}

/// IN_RESEARCH, IN_PROGRESS and VALIDATING tasks go to RESEARCHED when their research brief
/// exists and was written after the task was created, else to PENDING: redoing work is cheaper
/// than asserting a false completion. COMPLETE, BLOCKED and CANCELLED are never touched, nor are
/// parents (their status follows their children), nor another live agent's claimed work
/// ([`reconcilable`]).
pub fn reconciliation(
    doc: &TaskDoc,
    research_modified: &dyn Fn(&TaskId) -> Option<Timestamp>,
    now: Timestamp,
    this_session: Option<&str>,
) -> Vec<Reconciled> {
    doc.tasks
        .iter()
        .filter(|t| reconcilable(t, now, this_session))
        .map(|t| {
            let brief = research_modified(&t.id).filter(|m| *m > t.created_at);
            let (to, reason) = match brief {
                Some(_) => (
                    TaskStatus::Researched,
                    "resumed: research brief on file, work not finished".to_owned(),
                ),
                None => (
                    TaskStatus::Pending,
                    "resumed: work was interrupted".to_owned(),
                ),
            };
            let reason = if t.lease_expired(now) {
                format!("{reason} (lease expired)")
            } else {
                reason
            };
            Reconciled {
                task: t.id.clone(),
                from: t.status,
                to,
                reason,
            }
        })
        .collect()
}

/// Whether resume reconciliation may reset `task`: it was interrupted, and either nobody holds
/// it, its lease expired, or its holder is the resuming session itself (an agent named after the
/// session id). Another agent's live claim is that agent's work in progress, never reset.
pub fn reconcilable(task: &Task, now: Timestamp, this_session: Option<&str>) -> bool {
    was_interrupted(task)
        && match task.live_holder(now) {
            None => true,
            Some(holder) => this_session == Some(holder),
        }
}

/// A leaf left mid-work (IN_RESEARCH, IN_PROGRESS, VALIDATING): what resume reconciliation
/// looks at. Parents are IN_PROGRESS by construction and follow their children.
pub fn was_interrupted(task: &Task) -> bool {
    task.status.is_transitional() && !task.is_parent()
}

/// Leaves IN_PROGRESS for longer than [`STALE_FACTOR`] × their estimate. Unestimated tasks are
/// never stale: there is nothing to measure against.
pub fn stale_candidates(doc: &TaskDoc, now: Timestamp) -> Vec<TaskId> {
    doc.tasks
        .iter()
        .filter(|t| t.status == TaskStatus::InProgress && !t.is_parent())
        // A live lease is a fresher sign of life than any estimate.
        .filter(|t| t.live_holder(now).is_none())
        .filter(|t| match (t.started_at, t.estimate_minutes) {
            (Some(started), Some(estimate)) => {
                now - started > Duration::minutes(i64::from(estimate) * STALE_FACTOR)
            }
            _ => false,
        })
        .map(|t| t.id.clone())
        .collect()
}

/// Resets stale tasks (those without a TASK_COMPLETE in the log) to PENDING with an ERROR entry,
/// keeping the estimate; the second time, BLOCKED with [`STALE_TWICE_REASON`]. Research briefs are
/// never touched.
pub fn apply_staleness(
    doc: &mut TaskDoc,
    stale: &[TaskId],
    completed_in_log: &HashSet<TaskId>,
    now: Timestamp,
) -> Vec<ProjectEvent> {
    let mut events = Vec::new();
    for id in stale.iter().filter(|id| !completed_in_log.contains(*id)) {
        let Some(task) = doc.get(id) else { continue };
        let count = task.stale_count.unwrap_or(0) + 1;
        let estimate = task.estimate_minutes.unwrap_or(0);
        let (to, message) = if count >= 2 {
            (
                TaskStatus::Blocked,
                format!(
                    "{id} stale twice (in progress over {} minutes, {STALE_FACTOR}× its {estimate}-minute estimate): blocked for human review",
                    estimate as i64 * STALE_FACTOR
                ),
            )
        } else {
            (
                TaskStatus::Pending,
                format!(
                    "{id} stale (in progress over {} minutes, {STALE_FACTOR}× its {estimate}-minute estimate): reset to PENDING",
                    estimate as i64 * STALE_FACTOR
                ),
            )
        };
        let reason = (to == TaskStatus::Blocked).then(|| STALE_TWICE_REASON.to_owned());
        match doc.move_task(
            id,
            to,
            MoveDetail {
                actual_minutes: None,
                reason,
            },
            now,
        ) {
            Ok(moved) => {
                if let Some(task) = doc.tasks.find_mut(|t| &t.id == id) {
                    task.stale_count = Some(count);
                }
                events.push(ProjectEvent::Error {
                    task: Some(id.clone()),
                    message,
                });
                events.extend(moved);
            }
            Err(e) => events.push(ProjectEvent::Error {
                task: Some(id.clone()),
                message: format!("stale reset of {id} refused: {e}"),
            }),
        }
    }
    events
}

/// One completion as the log recorded it, with the estimate at that time if known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Completion {
    pub task: TaskId,
    #[serde(with = "rfc3339")]
    pub at: Timestamp,
    pub actual_minutes: Option<u32>,
    pub estimate_minutes: Option<u32>,
}

/// The completions of leaves among `events` (each with the instant it was logged at), in order.
/// Parents complete by cascade: their "work" is their children's, so they are left out.
pub fn completions(
    events: impl IntoIterator<Item = (Timestamp, ProjectEvent)>,
    doc: &TaskDoc,
) -> Vec<Completion> {
    events
        .into_iter()
        .filter_map(|(at, event)| match event {
            ProjectEvent::TaskMoved {
                task,
                to: TaskStatus::Complete,
                actual_minutes,
                ..
            } => {
                let known = doc.get(&task);
                known.is_none_or(|t| !t.is_parent()).then(|| Completion {
                    estimate_minutes: known.and_then(|t| t.estimate_minutes),
                    task,
                    at,
                    actual_minutes,
                })
            }
            _ => None,
        })
        .collect()
}

/// Completions the velocity window looks at.
pub const VELOCITY_WINDOW: usize = 20;
/// Fewer completions than this give no ETA: too little data.
pub const VELOCITY_MIN_FOR_ETA: usize = 3;

/// `progress/velocity.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Velocity {
    pub version: u32,
    #[serde(with = "rfc3339")]
    pub updated_at: Timestamp,
    pub window: usize,
    pub completed_count: usize,
    pub mean_actual_minutes: Option<f64>,
    /// Sum of actual minutes over sum of estimates, for completions that have both.
    pub estimate_ratio: Option<f64>,
    pub throughput_per_day: Option<f64>,
    pub remaining_tasks: usize,
    pub remaining_estimate_minutes: u64,
    #[serde(with = "rfc3339::option")]
    pub eta: Option<Timestamp>,
    /// The completions the figures were computed from (the newest [`VELOCITY_WINDOW`]), so that
    /// the next completion updates them without reading the log again. Absent in files an older
    /// cairn wrote: those are recomputed from the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recent_completions: Option<Vec<Completion>>,
}

/// Velocity over the newest [`VELOCITY_WINDOW`] completions. The ETA divides the remaining
/// leaves by the observed throughput.
pub fn velocity(completions: &[Completion], doc: &TaskDoc, now: Timestamp) -> Velocity {
    let start = completions.len().saturating_sub(VELOCITY_WINDOW);
    let window = &completions[start..];
    let actuals: Vec<u32> = window.iter().filter_map(|c| c.actual_minutes).collect();
    let mean_actual_minutes = (!actuals.is_empty())
        .then(|| actuals.iter().map(|&m| f64::from(m)).sum::<f64>() / actuals.len() as f64);
    let (spent, planned) = window
        .iter()
        .filter_map(|c| Some((c.actual_minutes?, c.estimate_minutes?)))
        .fold((0u64, 0u64), |(a, e), (actual, estimate)| {
            (a + u64::from(actual), e + u64::from(estimate))
        });
    let estimate_ratio = (planned > 0).then(|| spent as f64 / planned as f64);
    let throughput_per_day = match (window.first(), window.last()) {
        (Some(first), Some(last)) if window.len() >= 2 => {
            let days = (last.at - first.at).num_seconds() as f64 / 86_400.0;
            // Completions within one minute of each other say nothing about a daily rate.
            (days > 1.0 / 1440.0).then(|| (window.len() - 1) as f64 / days)
        }
        _ => None,
    };
    let remaining: Vec<_> = doc
        .tasks
        .iter()
        .filter(|t| t.status.is_open() && !t.is_parent())
        .collect();
    let remaining_estimate_minutes = remaining
        .iter()
        .map(|t| u64::from(t.estimate_minutes.unwrap_or(0)))
        .sum();
    let eta = match throughput_per_day {
        Some(rate) if window.len() >= VELOCITY_MIN_FOR_ETA && rate > 0.0 => {
            let seconds = remaining.len() as f64 / rate * 86_400.0;
            Some(now + Duration::seconds(seconds.min(1e10) as i64))
        }
        _ => None,
    };
    Velocity {
        version: 1,
        updated_at: now,
        window: VELOCITY_WINDOW,
        completed_count: completions.len(),
        mean_actual_minutes,
        estimate_ratio,
        throughput_per_day,
        remaining_tasks: remaining.len(),
        remaining_estimate_minutes,
        eta,
        recent_completions: Some(window.to_vec()),
    }
}

/// The velocity once `new` completions are added to `previous`'s window: the figures a
/// recomputation from the log would give, without reading the log. `completed_count` keeps
/// counting. `None` when `previous` carries no window (an older cairn wrote it): recompute.
pub fn velocity_after(
    previous: &Velocity,
    new: &[Completion],
    doc: &TaskDoc,
    now: Timestamp,
) -> Option<Velocity> {
    let mut completions = previous.recent_completions.clone()?;
    completions.extend_from_slice(new);
    Some(Velocity {
        completed_count: previous.completed_count + new.len(),
        ..velocity(&completions, doc, now)
    })
}
