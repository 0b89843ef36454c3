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
    let remaining: Vec<_> = doc
        .tasks
        .iter()
        .filter(|t| t.status.is_open() && !t.is_parent())
        .collect();
    let remaining_estimate_minutes = remaining
        .iter()
        .map(|t| u64::from(t.estimate_minutes.unwrap_or(0)))
        .sum();
    velocity_of(
        completions,
        remaining.len(),
        remaining_estimate_minutes,
        now,
    )
}

/// [`velocity`] with the list's share — the open leaves and their estimates — already counted.
fn velocity_of(
    completions: &[Completion],
    remaining_tasks: usize,
    remaining_estimate_minutes: u64,
    now: Timestamp,
) -> Velocity {
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
    let eta = match throughput_per_day {
        Some(rate) if window.len() >= VELOCITY_MIN_FOR_ETA && rate > 0.0 => {
            let seconds = remaining_tasks as f64 / rate * 86_400.0;
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
        remaining_tasks,
        remaining_estimate_minutes,
        eta,
        recent_completions: Some(window.to_vec()),
    }
}

/// The velocity of a git merge of two clones' `velocity.json` (`base`: the common ancestor's,
/// absent when both clones made the file). The window is both sides' completions, each once (by
/// task and time), newest last; the count adds each side's completions since the ancestor (with
/// none, the completions both windows hold are from before the fork, and counted once). The
/// figures of the list — the open leaves, their estimates — are ours': the merge sees no list,
/// and the next completion recomputes them from the merged one (the ETA follows them). A side
/// without a window (an older cairn wrote it) cannot be merged by completions: the file updated
/// last is kept, and `cairn velocity` recomputes it from the log.
pub fn merged_velocity(base: Option<&Velocity>, ours: &Velocity, theirs: &Velocity) -> Velocity {
    let (Some(mine), Some(yours)) = (&ours.recent_completions, &theirs.recent_completions) else {
        return if theirs.updated_at > ours.updated_at {
            theirs.clone()
        } else {
            ours.clone()
        };
    };
    let mut completions: Vec<Completion> = mine.iter().chain(yours).cloned().collect();
    // Stable: of two completions at one instant, ours first.
    completions.sort_by_key(|c| c.at);
    let mut seen = std::collections::HashSet::new();
    completions.retain(|c| seen.insert((c.task.clone(), c.at)));
    let updated_at = ours.updated_at.max(theirs.updated_at);
    let completed_count = match base {
        Some(base) => {
            let since = |side: &Velocity| side.completed_count.saturating_sub(base.completed_count);
            base.completed_count + since(ours) + since(theirs)
        }
        // Both clones made the file after the fork, each from the log's tail: the completions
        // from before the fork are in both windows, and counted once.
        None => {
            let shared = mine.iter().filter(|c| yours.contains(c)).count();
            (ours.completed_count + theirs.completed_count).saturating_sub(shared)
        }
    };
    Velocity {
        completed_count,
        ..velocity_of(
            &completions,
            ours.remaining_tasks,
            ours.remaining_estimate_minutes,
            updated_at,
        )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::model::ProjectId;
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn at(minute: i64) -> Timestamp {
        chrono::Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap() + Duration::minutes(minute)
    }

    fn completion(task: usize, minute: i64) -> Completion {
        Completion {
            task: TaskId::try_from(format!("T-{:03}", task + 1)).unwrap(),
            at: at(minute),
            actual_minutes: Some((minute % 50) as u32),
            estimate_minutes: (minute % 3 != 0).then_some(30),
        }
    }

    proptest! {
        /// Reference: one clone that saw every completion. Two clones that completed different
        /// tasks after a common ancestor, merged, have its window and figures.
        #[test]
        fn a_merged_velocity_is_the_velocity_of_both_sides_completions(
            base in 0usize..25,
            minutes in Just((0..120i64).collect::<Vec<_>>()).prop_shuffle(),
            ours in 0usize..25,
            theirs in 0usize..25,
        ) {
            let doc = TaskDoc::new(ProjectId::try_from("p".to_owned()).unwrap());
            // Distinct times: the ancestor's completions first, then each side's own.
            let (base_minutes, rest) = minutes.split_at(base);
            let mut base_minutes = base_minutes.to_vec();
            base_minutes.sort_unstable();
            let mut rest: Vec<i64> = rest.iter().copied().filter(|&m| m > base_minutes.last().copied().unwrap_or(-1)).collect();
            let theirs = theirs.min(rest.len() / 2);
            let ours = ours.min(rest.len() - theirs);
            let (mine, yours) = rest.split_at_mut(ours);
            let yours = &mut yours[..theirs];
            mine.sort_unstable();
            yours.sort_unstable();
            let base_done: Vec<Completion> =
                base_minutes.iter().enumerate().map(|(i, &m)| completion(i, m)).collect();
            let mine: Vec<Completion> =
                mine.iter().enumerate().map(|(i, &m)| completion(100 + i, m)).collect();
            let yours: Vec<Completion> =
                yours.iter().enumerate().map(|(i, &m)| completion(200 + i, m)).collect();
            let ancestor = velocity(&base_done, &doc, at(200));
            let ours_file = velocity_after(&ancestor, &mine, &doc, at(300)).unwrap();
            let theirs_file = velocity_after(&ancestor, &yours, &doc, at(301)).unwrap();

            let merged = merged_velocity(Some(&ancestor), &ours_file, &theirs_file);
            let mut all: Vec<Completion> = base_done.iter().chain(&mine).chain(&yours).cloned().collect();
            all.sort_by_key(|c| c.at);
            prop_assert_eq!(&merged, &velocity(&all, &doc, at(301)));
            // Either way round, the same completions.
            let swapped = merged_velocity(Some(&ancestor), &theirs_file, &ours_file);
            prop_assert_eq!(swapped.recent_completions, merged.recent_completions);
            prop_assert_eq!(swapped.completed_count, merged.completed_count);
        }
    }

    /// Without an ancestor's file, the completions both windows hold are from before the fork:
    /// counted once.
    #[test]
    fn completions_both_files_hold_without_an_ancestor_are_counted_once() {
        let doc = TaskDoc::new(ProjectId::try_from("p".to_owned()).unwrap());
        let shared = velocity(&[completion(0, 1), completion(1, 2)], &doc, at(10));
        let ours = velocity_after(&shared, &[completion(2, 3)], &doc, at(11)).unwrap();
        let theirs = velocity_after(&shared, &[completion(3, 4)], &doc, at(12)).unwrap();
        let merged = merged_velocity(None, &ours, &theirs);
        assert_eq!(merged.completed_count, 4);
        assert_eq!(merged.recent_completions.map(|w| w.len()), Some(4));
    }

    #[test]
    fn a_side_without_a_window_keeps_the_file_updated_last() {
        let doc = TaskDoc::new(ProjectId::try_from("p".to_owned()).unwrap());
        let ours = velocity(&[completion(0, 1)], &doc, at(10));
        let theirs = Velocity {
            recent_completions: None,
            ..velocity(&[completion(1, 2), completion(2, 3)], &doc, at(20))
        };
        assert_eq!(merged_velocity(None, &ours, &theirs), theirs);
        assert_eq!(merged_velocity(None, &theirs, &ours), theirs);
    }
}
