//! The live session as a whole, and the policies that read it.

use std::collections::BTreeMap;
use std::time::Duration;

use super::context::{ExecutionContext, TaskContext};
use super::lifecycle::SessionPhase;
use super::lock::LockFile;
use super::progress::{Progress, ProgressStatus, WaveProgress};
use super::task_log::{TaskLog, TaskOutcome};
use crate::time::Timestamp;

/// Everything in a session directory (the live one or an archive), parsed. Files that are absent
/// are `None`; the adapters parse leniently, so a damaged file reads as whatever could be salvaged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveSession {
    pub lock: Option<LockFile>,
    pub execution_plan: Option<String>,
    pub context: Option<ExecutionContext>,
    pub task_log: Option<TaskLog>,
    pub progress: Option<Progress>,
    /// The tasks' reports (`context-task-{id}.md`), by task id.
    pub task_contexts: BTreeMap<String, TaskContext>,
    pub summary: Option<SessionSummary>,
    /// Relative paths of anything else present (archived task JSON under `tasks/`, stray files):
    /// the adapter moves them with the rest but the domain does not interpret them.
    pub other_files: Vec<String>,
}

impl LiveSession {
    pub fn is_empty(&self) -> bool {
        self.lock.is_none()
            && self.execution_plan.is_none()
            && self.context.is_none()
            && self.task_log.is_none()
            && self.progress.is_none()
            && self.task_contexts.is_empty()
            && self.summary.is_none()
            && self.other_files.is_empty()
    }

    /// The session id the lock names, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.lock
            .as_ref()
            .map(|l| l.task_execution_id.as_str())
            .filter(|id| !id.is_empty())
    }

    /// The lifecycle phase the files show. `None` for an empty directory. A directory with files
    /// but no progress yet was caught in creation; an unknown status reads as running.
    pub fn phase(&self) -> Option<SessionPhase> {
        if self.is_empty() {
            return None;
        }
        Some(match self.progress.as_ref().map(|p| &p.status) {
            None | Some(ProgressStatus::Initializing) => SessionPhase::Creation,
            Some(ProgressStatus::Executing | ProgressStatus::Other(_)) => SessionPhase::Active,
            Some(ProgressStatus::Complete) => SessionPhase::Archival,
        })
    }

    /// A summary view for status commands and the board.
    pub fn state(&self) -> Option<SessionState> {
        let phase = self.phase()?;
        let progress = self.progress.as_ref();
        let log = self.task_log.clone().unwrap_or_default();
        Some(SessionState {
            id: self.session_id().unwrap_or_default().to_owned(),
            phase,
            wave: progress.and_then(|p| p.wave),
            max_parallel: progress.and_then(|p| p.max_parallel),
            started_at: self.lock.as_ref().and_then(|l| l.timestamp),
            active_tasks: progress
                .map(|p| p.active.iter().map(|t| t.id.clone()).collect())
                .unwrap_or_default(),
            tally: Tally::of(&log),
        })
    }
}

/// What a status command shows about the live session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionState {
    /// Empty when the lock is missing or nameless.
    pub id: String,
    pub phase: SessionPhase,
    pub wave: Option<WaveProgress>,
    pub max_parallel: Option<u32>,
    pub started_at: Option<Timestamp>,
    pub active_tasks: Vec<String>,
    pub tally: Tally,
}

/// Counts over the latest log row of each task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub pass: usize,
    pub partial: usize,
    pub fail: usize,
    /// Sum of the task durations that were logged.
    pub task_time: Duration,
}

impl Tally {
    pub fn of(log: &TaskLog) -> Self {
        let mut tally = Tally::default();
        for row in log.latest_per_task() {
            match row.status {
                TaskOutcome::Pass => tally.pass += 1,
                TaskOutcome::Partial => tally.partial += 1,
                TaskOutcome::Fail => tally.fail += 1,
            }
            tally.task_time += row.duration.unwrap_or_default();
        }
        tally
    }

    pub fn total(&self) -> usize {
        self.pass + self.partial + self.fail
    }
}

/// What to do with the task list after an interrupted session is archived.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryPlan {
    /// In progress and not logged as PASS: back to `pending`.
    pub reset_to_pending: Vec<String>,
    /// In progress but logged as PASS: the crash came between the log row and the status update,
    /// so the work is done and the task should be marked `completed`, not redone.
    pub mark_completed: Vec<String>,
}

/// Cross-references the task list's `in_progress` tasks with the interrupted session's log
/// (latest row per task). Order follows `in_progress`; duplicates are dropped.
pub fn recovery_plan<'a>(
    in_progress: impl IntoIterator<Item = &'a str>,
    log: Option<&TaskLog>,
) -> RecoveryPlan {
    let mut plan = RecoveryPlan::default();
    let mut seen = std::collections::HashSet::new();
    for id in in_progress {
        if !seen.insert(id) {
            continue;
        }
        let passed = log
            .and_then(|l| l.latest_for(id))
            .is_some_and(|row| row.status == TaskOutcome::Pass);
        if passed {
            &mut plan.mark_completed
        } else {
            &mut plan.reset_to_pending
        }
        .push(id.to_owned());
    }
    plan
}

/// What `session_summary.md` reports when a session ends: who, when, how far, and the latest
/// row of every task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub session_id: String,
    pub started: Option<Timestamp>,
    /// `None` only when read back from a summary that does not say.
    pub finished: Option<Timestamp>,
    pub wave: Option<WaveProgress>,
    /// The latest row of each task, in order of first appearance.
    pub tasks: TaskLog,
}

impl SessionSummary {
    /// The summary of a session ending at `finished`, from its whole log.
    pub fn new(
        session_id: &str,
        started: Option<Timestamp>,
        finished: Timestamp,
        wave: Option<WaveProgress>,
        log: &TaskLog,
    ) -> Self {
        Self {
            session_id: session_id.to_owned(),
            started,
            finished: Some(finished),
            wave,
            tasks: TaskLog {
                rows: log.latest_per_task().into_iter().cloned().collect(),
            },
        }
    }

    pub fn tally(&self) -> Tally {
        Tally::of(&self.tasks)
    }

    /// From start to finish, when both are known (zero if the clock ran backwards).
    pub fn elapsed(&self) -> Option<Duration> {
        let (started, finished) = (self.started?, self.finished?);
        Some((finished - started).to_std().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::task_log::{Attempts, TaskLogRow};
    use chrono::TimeZone;

    fn row(id: &str, status: TaskOutcome, secs: u64) -> TaskLogRow {
        TaskLogRow {
            task_id: id.into(),
            subject: format!("Task {id}"),
            status,
            attempts: Attempts { used: 1, max: 3 },
            duration: Some(Duration::from_secs(secs)),
            token_usage: None,
        }
    }

    #[test]
    fn recovery_resets_unfinished_and_completes_logged_passes() {
        let log = TaskLog {
            rows: vec![
                row("1", TaskOutcome::Pass, 1),
                row("2", TaskOutcome::Fail, 1),
                row("3", TaskOutcome::Pass, 1),
                row("3", TaskOutcome::Fail, 1),
            ],
        };
        let plan = recovery_plan(["1", "2", "3", "4", "4"], Some(&log));
        assert_eq!(plan.mark_completed, ["1"]);
        assert_eq!(plan.reset_to_pending, ["2", "3", "4"]);
        assert_eq!(recovery_plan(["1"], None).reset_to_pending, ["1"]);
    }

    #[test]
    fn a_summary_keeps_the_latest_row_per_task_and_counts_them() {
        let log = TaskLog {
            rows: vec![
                row("1", TaskOutcome::Fail, 60),
                row("1", TaskOutcome::Pass, 94),
                row("2", TaskOutcome::Partial, 300),
            ],
        };
        let start = chrono::Utc
            .with_ymd_and_hms(2026, 2, 5, 14, 30, 22)
            .unwrap();
        let summary = SessionSummary::new(
            "s-1",
            Some(start),
            start + chrono::TimeDelta::seconds(1908),
            None,
            &log,
        );
        assert_eq!(
            summary.tasks.rows,
            [log.rows[1].clone(), log.rows[2].clone()]
        );
        assert_eq!(
            (
                summary.tally().pass,
                summary.tally().partial,
                summary.tally().fail
            ),
            (1, 1, 0)
        );
        assert_eq!(summary.tally().task_time, Duration::from_secs(394));
        assert_eq!(summary.elapsed(), Some(Duration::from_secs(1908)));
    }

    #[test]
    fn phase_follows_the_progress_status() {
        let mut live = LiveSession::default();
        assert_eq!(live.phase(), None);
        live.execution_plan = Some("plan".into());
        assert_eq!(live.phase(), Some(SessionPhase::Creation));
        let now = chrono::Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let mut progress = Progress::initial(2, 2, now);
        progress.status = ProgressStatus::Executing;
        live.progress = Some(progress.clone());
        assert_eq!(live.phase(), Some(SessionPhase::Active));
        progress.status = ProgressStatus::Complete;
        live.progress = Some(progress);
        assert_eq!(live.phase(), Some(SessionPhase::Archival));
    }
}
