//! The task log: one row per task that finished or ran out of retries (`task_log.md` on disk;
//! its text is the filesystem adapter's, `cairn_storage_fs::execution`).

use std::fmt;
use std::time::Duration;

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskOutcome {
    Pass,
    Partial,
    Fail,
}

impl TaskOutcome {
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_uppercase().as_str() {
            "PASS" | "PASSED" => Some(Self::Pass),
            "PARTIAL" => Some(Self::Partial),
            "FAIL" | "FAILED" => Some(Self::Fail),
            _ => None,
        }
    }
}

impl fmt::Display for TaskOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Pass => "PASS",
            Self::Partial => "PARTIAL",
            Self::Fail => "FAIL",
        })
    }
}

/// `used/max`, e.g. `2/3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempts {
    pub used: u32,
    pub max: u32,
}

impl Attempts {
    pub fn is_sensible(self) -> bool {
        self.used >= 1 && self.used <= self.max
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskLogRow {
    pub task_id: String,
    pub subject: String,
    pub status: TaskOutcome,
    pub attempts: Attempts,
    /// `None` when not measured.
    pub duration: Option<Duration>,
    /// Tokens used; `None` when not reported.
    pub token_usage: Option<u64>,
}

/// The whole log as read: its data rows in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskLog {
    pub rows: Vec<TaskLogRow>,
}

impl TaskLog {
    /// The last row written for each task, in order of first appearance: a retried task may have
    /// been logged more than once, and the latest row is the truth.
    pub fn latest_per_task(&self) -> Vec<&TaskLogRow> {
        let mut order: Vec<&str> = Vec::new();
        let mut latest: std::collections::HashMap<&str, &TaskLogRow> =
            std::collections::HashMap::new();
        for row in &self.rows {
            if latest.insert(&row.task_id, row).is_none() {
                order.push(&row.task_id);
            }
        }
        order.into_iter().map(|id| latest[id]).collect()
    }

    pub fn latest_for(&self, task_id: &str) -> Option<&TaskLogRow> {
        self.rows.iter().rev().find(|row| row.task_id == task_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, status: TaskOutcome) -> TaskLogRow {
        TaskLogRow {
            task_id: id.into(),
            subject: format!("Task {id}"),
            status,
            attempts: Attempts { used: 1, max: 3 },
            duration: None,
            token_usage: None,
        }
    }

    #[test]
    fn latest_row_per_task_wins() {
        let mut log = TaskLog {
            rows: vec![
                row("1", TaskOutcome::Pass),
                row("2", TaskOutcome::Partial),
                row("3", TaskOutcome::Fail),
            ],
        };
        let mut retry = log.rows[0].clone();
        retry.status = TaskOutcome::Fail;
        log.rows.push(retry);
        let latest = log.latest_per_task();
        assert_eq!(latest.len(), 3);
        assert_eq!(latest[0].status, TaskOutcome::Fail);
        assert_eq!(log.latest_for("1").unwrap().status, TaskOutcome::Fail);
    }
}
