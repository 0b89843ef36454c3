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

use cairn_domain::execution::duration::{format_duration, parse_duration};
use cairn_domain::execution::task_log::{Attempts, TaskLog, TaskLogRow, TaskOutcome};

use super::progress_md::one_line;

pub const TASK_LOG_HEADER: &str = "# Task Execution Log\n\n\
| Task ID | Subject | Status | Attempts | Duration | Token Usage |\n\
|---------|---------|--------|----------|----------|-------------|\n";

const NOT_AVAILABLE: &str = "N/A";

/// One line with its LF, ready to append.
pub fn render_row(row: &TaskLogRow) -> String {
    let duration = row
        .duration
        .map(format_duration)
        .unwrap_or_else(|| NOT_AVAILABLE.into());
    let tokens = row
        .token_usage
        .map(|t| t.to_string())
        .unwrap_or_else(|| NOT_AVAILABLE.into());
    format!(
        "| {} | {} | {} | {}/{} | {duration} | {tokens} |\n",
        escape_cell(&row.task_id),
        escape_cell(&row.subject),
        row.status,
        row.attempts.used,
        row.attempts.max,
    )
}

/// One table line, or `None` if it is not a data row (header, separator, prose, bad status or
/// attempts). Token usage accepts `12,345` and `12345`; anything else is `None`.
pub fn parse_row(line: &str) -> Option<TaskLogRow> {
    let cells = split_cells(line.trim())?;
    let [task_id, subject, status, attempts, duration, tokens] =
        <[String; 6]>::try_from(cells).ok()?;
    if task_id.is_empty() || task_id.eq_ignore_ascii_case("task id") {
        return None;
    }
    let (used, max) = attempts.split_once('/')?;
    Some(TaskLogRow {
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

/// The header and every row.
pub fn render_task_log(log: &TaskLog) -> String {
    let mut out = TASK_LOG_HEADER.to_owned();
    for row in &log.rows {
        out += &render_row(row);
    }
    out
}

/// Keeps every line that parses as a data row; everything else is skipped.
pub fn parse_task_log(text: &str) -> TaskLog {
    TaskLog {
        rows: text.lines().filter_map(parse_row).collect(),
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
