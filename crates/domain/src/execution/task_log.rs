//! `task_log.md`: one table row per task that finished or ran out of retries.
//!
//! ```text
//! # Task Execution Log
//!
//! | Task ID | Subject | Status | Attempts | Duration | Token Usage |
//! |---------|---------|--------|----------|----------|-------------|
//! | 1 | Implement auth middleware | PASS | 1/3 | 2m 34s | N/A |
//! ```
//!
//! Cells escape `|` as `\|` (the GitHub-flavoured Markdown rule); nothing else is escaped, so a
//! backslash that does not precede a `|` is literal.

use std::fmt;
use std::time::Duration;

use super::duration::{format_duration, parse_duration};
use super::progress::one_line;

pub const TASK_LOG_HEADER: &str = "# Task Execution Log\n\n\
| Task ID | Subject | Status | Attempts | Duration | Token Usage |\n\
|---------|---------|--------|----------|----------|-------------|\n";

const NOT_AVAILABLE: &str = "N/A";

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
    /// `None` renders (and parses from) `N/A`.
    pub duration: Option<Duration>,
    /// Tokens used; `None` renders (and parses from) `N/A`.
    pub token_usage: Option<u64>,
}

impl TaskLogRow {
    /// One line with its LF, ready to append.
    pub fn render(&self) -> String {
        let duration = self
            .duration
            .map(format_duration)
            .unwrap_or_else(|| NOT_AVAILABLE.into());
        let tokens = self
            .token_usage
            .map(|t| t.to_string())
            .unwrap_or_else(|| NOT_AVAILABLE.into());
        format!(
            "| {} | {} | {} | {}/{} | {duration} | {tokens} |\n",
            escape_cell(&self.task_id),
            escape_cell(&self.subject),
            self.status,
            self.attempts.used,
            self.attempts.max,
        )
    }

    /// One table line, or `None` if it is not a data row (header, separator, prose, bad status or
    /// attempts). Token usage accepts `12,345` and `12345`; anything else is `None`.
    pub fn parse(line: &str) -> Option<Self> {
        let cells = split_cells(line.trim())?;
        let [task_id, subject, status, attempts, duration, tokens] =
            <[String; 6]>::try_from(cells).ok()?;
        if task_id.is_empty() || task_id.eq_ignore_ascii_case("task id") {
            return None;
        }
        let (used, max) = attempts.split_once('/')?;
        Some(Self {
            task_id,
            subject,
            status: TaskOutcome::parse(&status)?,
            attempts: Attempts {
                used: used.trim().parse().ok()?,
                max: max.trim().parse().ok()?,
            },
            duration: parse_duration(&duration),
            token_usage: tokens.replace([',', '_'], "").parse().ok(),
        })
    }
}

/// The whole log as read: its data rows in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskLog {
    pub rows: Vec<TaskLogRow>,
}

impl TaskLog {
    pub fn render(&self) -> String {
        let mut out = TASK_LOG_HEADER.to_owned();
        for row in &self.rows {
            out += &row.render();
        }
        out
    }

    /// Keeps every line that parses as a data row; everything else is skipped.
    pub fn parse(text: &str) -> Self {
        Self {
            rows: text.lines().filter_map(TaskLogRow::parse).collect(),
        }
    }

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

fn escape_cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

/// Splits `| a | b\|c |` into trimmed, unescaped cells; `None` if the line is not a table row.
fn split_cells(line: &str) -> Option<Vec<String>> {
    let inner = line.strip_prefix('|')?;
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    let mut closed = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => {
                cells.push(cell.trim().to_owned());
                cell.clear();
                closed = true;
            }
            c => {
                cell.push(c);
                closed = false;
            }
        }
    }
    if !closed && !cell.trim().is_empty() {
        cells.push(cell.trim().to_owned());
    }
    if cells
        .iter()
        .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')))
    {
        return None;
    }
    Some(cells.iter().map(|c| one_line(c)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = "# Task Execution Log

| Task ID | Subject | Status | Attempts | Duration | Token Usage |
|---------|---------|--------|----------|----------|-------------|
| 1 | Implement auth middleware | PASS | 1/3 | 2m 34s | N/A |
| 2 | Add rate limiting | PARTIAL | 2/3 | 5m 12s | N/A |
| 3 | Create user endpoints | FAIL | 3/3 | 8m 45s | N/A |
";

    #[test]
    fn the_seed_log_round_trips() {
        let log = TaskLog::parse(SEED);
        assert_eq!(log.rows.len(), 3);
        assert_eq!(log.rows[1].status, TaskOutcome::Partial);
        assert_eq!(log.rows[1].attempts, Attempts { used: 2, max: 3 });
        assert_eq!(log.rows[2].duration, Some(Duration::from_secs(525)));
        assert_eq!(log.render(), SEED);
    }

    #[test]
    fn pipes_in_subjects_are_escaped() {
        let row = TaskLogRow {
            task_id: "4".into(),
            subject: "a|b \\| c\\".into(),
            status: TaskOutcome::Pass,
            attempts: Attempts { used: 1, max: 3 },
            duration: None,
            token_usage: Some(12_345),
        };
        assert_eq!(
            row.render(),
            "| 4 | a\\|b \\\\| c\\ | PASS | 1/3 | N/A | 12345 |\n"
        );
        assert_eq!(TaskLogRow::parse(&row.render()), Some(row));
    }

    #[test]
    fn odd_lines_are_skipped_not_fatal() {
        assert_eq!(
            TaskLogRow::parse("| 1 | x | MAYBE | 1/3 | 1s | N/A |"),
            None
        );
        assert_eq!(TaskLogRow::parse("| 1 | x | PASS | one | 1s | N/A |"), None);
        assert_eq!(TaskLogRow::parse("| 1 | x | PASS | 1/3 | 1s |"), None);
        assert_eq!(TaskLogRow::parse("prose"), None);
        let row = TaskLogRow::parse("|7|y|pass|1/1|soon|1,024").unwrap();
        assert_eq!((row.duration, row.token_usage), (None, Some(1024)));
    }

    #[test]
    fn latest_row_per_task_wins() {
        let mut log = TaskLog::parse(SEED);
        let mut retry = log.rows[0].clone();
        retry.status = TaskOutcome::Fail;
        log.rows.push(retry);
        let latest = log.latest_per_task();
        assert_eq!(latest.len(), 3);
        assert_eq!(latest[0].status, TaskOutcome::Fail);
        assert_eq!(log.latest_for("1").unwrap().status, TaskOutcome::Fail);
    }
}
