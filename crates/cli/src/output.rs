//! Human output: colour (only on a terminal, and never with `NO_COLOR`), aligned tables, and the
//! small formatting helpers every command shares.

use std::fmt::Write as _;
use std::io::IsTerminal;

use cairn_domain::project::{Priority, Task, TaskStatus};

/// Whether to colour stdout. Decided once: stdout is a terminal and `NO_COLOR` is unset or empty
/// (<https://no-color.org>).
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    pub fn detect() -> Self {
        Self::decide(
            std::env::var_os("NO_COLOR").as_deref(),
            std::io::stdout().is_terminal(),
        )
    }

    fn decide(no_color: Option<&std::ffi::OsStr>, stdout_is_terminal: bool) -> Self {
        let no_color = no_color.is_some_and(|v| !v.is_empty());
        Self {
            color: stdout_is_terminal && !no_color,
        }
    }

    fn paint(&self, sgr: &str, text: &str) -> String {
        if self.color && !text.is_empty() {
            format!("\x1b[{sgr}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    pub fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }

    pub fn green(&self, text: &str) -> String {
        self.paint("32", text)
    }

    pub fn yellow(&self, text: &str) -> String {
        self.paint("33", text)
    }

    pub fn red(&self, text: &str) -> String {
        self.paint("31", text)
    }

    pub fn status(&self, status: TaskStatus) -> String {
        let text = status.as_str();
        match status {
            TaskStatus::Complete => self.green(text),
            TaskStatus::Blocked => self.red(text),
            TaskStatus::InProgress | TaskStatus::Validating | TaskStatus::InResearch => {
                self.yellow(text)
            }
            TaskStatus::Cancelled => self.dim(text),
            TaskStatus::Pending | TaskStatus::Researched => text.to_owned(),
        }
    }

    pub fn priority(&self, priority: Priority) -> String {
        match priority {
            Priority::Critical => self.paint("1;31", priority.as_str()),
            Priority::High => self.bold(priority.as_str()),
            Priority::Medium | Priority::Low => priority.as_str().to_owned(),
        }
    }

    /// A "what to do next" line.
    pub fn next_step(&self, text: &str) -> String {
        format!("{} {text}\n", self.dim("next:"))
    }
}

/// A cell: the text that decides the column width, and what is printed (maybe coloured).
#[derive(Debug, Clone)]
pub struct Cell {
    plain: String,
    shown: String,
}

impl Cell {
    pub fn styled(plain: impl Into<String>, shown: String) -> Self {
        Self {
            plain: plain.into(),
            shown,
        }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Self {
            shown: text.clone(),
            plain: text,
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        text.to_owned().into()
    }
}

/// Columns separated by two spaces, left-aligned, the last one unpadded.
#[derive(Debug)]
pub struct Table {
    headers: Vec<&'static str>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(headers: &[&'static str]) -> Self {
        Self {
            headers: headers.to_vec(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }

    pub fn render(&self, style: &Style) -> String {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.plain.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: Vec<(String, usize)>, out: &mut String| {
            let last = cells.len().saturating_sub(1);
            let mut text = String::new();
            for (i, (shown, plain_len)) in cells.into_iter().enumerate() {
                text.push_str(&shown);
                if i < last {
                    text.push_str(&" ".repeat(widths[i] - plain_len + 2));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(
            self.headers
                .iter()
                .map(|h| (style.dim(h), h.chars().count()))
                .collect(),
            &mut out,
        );
        for row in &self.rows {
            line(
                row.iter()
                    .map(|c| (c.shown.clone(), c.plain.chars().count()))
                    .collect(),
                &mut out,
            );
        }
        out
    }
}

/// `45m`, `2h`, `1h30m`.
pub fn minutes(m: u32) -> String {
    match (m / 60, m % 60) {
        (0, m) => format!("{m}m"),
        (h, 0) => format!("{h}h"),
        (h, m) => format!("{h}h{m}m"),
    }
}

pub fn id_list<'a>(ids: impl IntoIterator<Item = &'a cairn_domain::project::TaskId>) -> String {
    ids.into_iter()
        .map(|id| id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line about a task: `T-004 Write the parser [HIGH, task, 45m]`.
pub fn task_line(style: &Style, task: &Task) -> String {
    let mut facts = vec![style.priority(task.priority), task.level.to_string()];
    if let Some(m) = task.estimate_minutes {
        facts.push(minutes(m));
    }
    let mut out = String::new();
    let _ = write!(
        out,
        "{} {} [{}]",
        style.bold(task.id.as_str()),
        task.title,
        facts.join(", ")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_on_the_plain_text_not_the_escape_codes() {
        let style = Style { color: true };
        let mut table = Table::new(&["ID", "STATUS", "TITLE"]);
        table.row(vec![
            "T-001".into(),
            Cell::styled("COMPLETE", style.green("COMPLETE")),
            "Done".into(),
        ]);
        table.row(vec!["T-002".into(), "PENDING".into(), "Next".into()]);
        let plain = Style { color: false };
        let rendered = table.render(&plain);
        assert_eq!(
            rendered,
            "ID     STATUS    TITLE\nT-001  \x1b[32mCOMPLETE\x1b[0m  Done\nT-002  PENDING   Next\n"
        );
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        use std::ffi::OsStr;
        assert!(Style::decide(None, true).color);
        assert!(
            Style::decide(Some(OsStr::new("")), true).color,
            "an empty NO_COLOR is unset"
        );
        assert!(!Style::decide(Some(OsStr::new("1")), true).color);
        assert!(!Style::decide(None, false).color);
        assert_eq!(
            Style::decide(None, false).status(TaskStatus::Blocked),
            "BLOCKED"
        );
    }

    #[test]
    fn minutes_read_naturally() {
        assert_eq!(minutes(45), "45m");
        assert_eq!(minutes(120), "2h");
        assert_eq!(minutes(90), "1h30m");
    }
}
