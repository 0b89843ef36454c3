//! `progress.md`: the live view of a session that the board polls.
//!
//! ```text
//! # Execution Progress
//! Status: Executing
//! Wave: 2 of 4
//! Max Parallel: 5
//! Updated: 2026-02-05T14:35:22Z
//!
//! ## Active Tasks
//! - [5] Add input validation — Phase 2 — Implementing
//!
//! ## Completed This Session
//! - [1] Implement auth middleware — PASS (2m 34s)
//! ```
//!
//! The separator is the em dash U+2014 with a space either side. A phase may itself contain
//! separators (`Phase 2 — Implementing`), so an active line splits at its FIRST separator and a
//! completed line at its LAST; to keep that unambiguous, [`render`](Progress::render) writes
//! separators inside subjects as ` - `. Line breaks inside any field become spaces.

use std::fmt;
use std::time::Duration;

use super::duration::{format_duration, parse_duration};
use super::task_log::TaskOutcome;
use crate::time::{Timestamp, format_rfc3339, parse_rfc3339};

pub const SEPARATOR: &str = " \u{2014} ";
const ASCII_SEPARATOR: &str = " - ";

/// The `Status:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgressStatus {
    Initializing,
    Executing,
    Complete,
    /// Any other text another tool wrote; kept verbatim. Never one of the three words above.
    Other(String),
}

impl ProgressStatus {
    /// The three known words in any case (and `Completed`) map to their variant; the rest is `Other`.
    pub fn from_text(text: &str) -> Self {
        let text = text.trim();
        match text.to_ascii_lowercase().as_str() {
            "initializing" | "initialising" => Self::Initializing,
            "executing" => Self::Executing,
            "complete" | "completed" => Self::Complete,
            _ => Self::Other(text.to_owned()),
        }
    }
}

impl fmt::Display for ProgressStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Initializing => "Initializing",
            Self::Executing => "Executing",
            Self::Complete => "Complete",
            Self::Other(text) => text,
        })
    }
}

/// `Wave: N of T`. Wave 0 means no wave has started yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaveProgress {
    pub current: u32,
    pub total: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveTask {
    /// The task-list id, e.g. `7` (a project task `T-007` shows as `7`).
    pub id: String,
    pub subject: String,
    pub phase: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedTask {
    pub id: String,
    pub subject: String,
    pub result: TaskOutcome,
    pub duration: Option<Duration>,
}

/// Everything `progress.md` says. Header fields a damaged file lacks are `None` and not rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub status: ProgressStatus,
    pub wave: Option<WaveProgress>,
    pub max_parallel: Option<u32>,
    pub updated: Option<Timestamp>,
    pub active: Vec<ActiveTask>,
    pub completed: Vec<CompletedTask>,
}

impl Progress {
    /// The content written when a session is created.
    pub fn initial(total_waves: u32, max_parallel: u32, now: Timestamp) -> Self {
        Self {
            status: ProgressStatus::Initializing,
            wave: Some(WaveProgress {
                current: 0,
                total: total_waves,
            }),
            max_parallel: Some(max_parallel),
            updated: Some(now),
            active: Vec::new(),
            completed: Vec::new(),
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::from("# Execution Progress\n");
        out += &format!("Status: {}\n", one_line(&self.status.to_string()));
        if let Some(wave) = self.wave {
            out += &format!("Wave: {} of {}\n", wave.current, wave.total);
        }
        if let Some(max) = self.max_parallel {
            out += &format!("Max Parallel: {max}\n");
        }
        if let Some(at) = &self.updated {
            out += &format!("Updated: {}\n", format_rfc3339(at));
        }
        out += "\n## Active Tasks\n";
        for task in &self.active {
            out += &format!(
                "- [{}] {}{SEPARATOR}{}\n",
                id_text(&task.id),
                subject_text(&task.subject),
                one_line(&task.phase)
            );
        }
        out += "\n## Completed This Session\n";
        for task in &self.completed {
            out += &format!(
                "- [{}] {}{SEPARATOR}{}",
                id_text(&task.id),
                subject_text(&task.subject),
                task.result
            );
            if let Some(duration) = task.duration {
                out += &format!(" ({})", format_duration(duration));
            }
            out.push('\n');
        }
        out
    }

    /// Never fails: lines that do not have a known shape are ignored, and header lines that are
    /// missing leave their field `None` (status defaults to `Initializing`). Accepts CRLF, any
    /// case in keys, `N/T` for the wave, and ` - ` where the em dash is missing.
    pub fn parse(text: &str) -> Self {
        #[derive(PartialEq)]
        enum Section {
            Header,
            Active,
            Completed,
            Other,
        }
        let mut progress = Progress {
            status: ProgressStatus::Initializing,
            wave: None,
            max_parallel: None,
            updated: None,
            active: Vec::new(),
            completed: Vec::new(),
        };
        let mut section = Section::Header;
        for line in text.lines() {
            let line = line.trim();
            if let Some(heading) = line.strip_prefix("## ") {
                let heading = heading.to_ascii_lowercase();
                section = if heading.contains("active") {
                    Section::Active
                } else if heading.contains("completed") {
                    Section::Completed
                } else {
                    Section::Other
                };
                continue;
            }
            if let Some((key, value)) = line.split_once(':') {
                let value = value.trim();
                match key.trim().to_ascii_lowercase().as_str() {
                    "status" if section == Section::Header => {
                        progress.status = ProgressStatus::from_text(&one_line(value))
                    }
                    "wave" if section == Section::Header => {
                        progress.wave = parse_wave(value).or(progress.wave)
                    }
                    "max parallel" if section == Section::Header => {
                        progress.max_parallel = value.parse().ok().or(progress.max_parallel)
                    }
                    "updated" if section == Section::Header => {
                        progress.updated = parse_rfc3339(value).or(progress.updated)
                    }
                    _ => {}
                }
            }
            let Some((id, rest)) = parse_bracket_item(line) else {
                continue;
            };
            match section {
                Section::Active => {
                    let (subject, phase) = split_first(rest).unwrap_or((rest, ""));
                    progress.active.push(ActiveTask {
                        id,
                        subject: subject_text(subject),
                        phase: one_line(phase),
                    });
                }
                Section::Completed => {
                    if let Some(task) = parse_completed(id, rest) {
                        progress.completed.push(task);
                    }
                }
                Section::Header | Section::Other => {}
            }
        }
        progress
    }
}

fn parse_wave(value: &str) -> Option<WaveProgress> {
    let (current, total) = value.split_once(" of ").or_else(|| value.split_once('/'))?;
    Some(WaveProgress {
        current: current.trim().parse().ok()?,
        total: total.trim().parse().ok()?,
    })
}

/// `- [id] rest` (also `* [id] rest`). `rest` keeps its leading space so that an empty subject
/// (`- [7]  — phase`) still has a separator to split at.
fn parse_bracket_item(line: &str) -> Option<(String, &str)> {
    let rest = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))?
        .trim_start();
    let rest = rest.strip_prefix('[')?;
    let (id, rest) = rest.split_once(']')?;
    let id = id_text(id);
    (!id.is_empty()).then_some((id, rest))
}

fn split_first(text: &str) -> Option<(&str, &str)> {
    text.split_once(SEPARATOR.trim_end())
        .or_else(|| text.split_once(ASCII_SEPARATOR))
}

fn split_last(text: &str) -> Option<(&str, &str)> {
    text.rsplit_once(SEPARATOR.trim_end())
        .or_else(|| text.rsplit_once(ASCII_SEPARATOR))
}

fn parse_completed(id: String, rest: &str) -> Option<CompletedTask> {
    let (subject, tail) = split_last(rest)?;
    let tail = tail.trim();
    let (result, duration) = match tail.split_once('(') {
        Some((result, duration)) => (
            result.trim(),
            parse_duration(duration.trim_end_matches(')')),
        ),
        None => (tail, None),
    };
    Some(CompletedTask {
        id,
        subject: subject_text(subject),
        result: TaskOutcome::parse(result)?,
        duration,
    })
}

/// One line, trimmed: line breaks inside a field would split the item.
pub(crate) fn one_line(text: &str) -> String {
    text.split(['\r', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Subjects are normalised the same way on render and on parse, so a file another tool wrote
/// settles after one rewrite.
fn subject_text(subject: &str) -> String {
    one_line(subject).replace('\u{2014}', "-")
}

fn id_text(id: &str) -> String {
    one_line(id).replace(['[', ']'], "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    const SEED: &str = "# Execution Progress
Status: Executing
Wave: 2 of 4
Max Parallel: 5
Updated: 2026-02-05T14:35:22Z

## Active Tasks
- [5] Add input validation \u{2014} Phase 2 \u{2014} Implementing
- [6] Create error handler \u{2014} Phase 3 \u{2014} Verifying

## Completed This Session
- [1] Implement auth middleware \u{2014} PASS (2m 34s)
- [2] Add rate limiting \u{2014} PASS (3m 12s)
- [3] Create user endpoints \u{2014} PASS (4m 5s)
- [4] Set up database schema \u{2014} PASS (1m 48s)
";

    #[test]
    fn the_seed_example_parses_and_renders_back_byte_for_byte() {
        let progress = Progress::parse(SEED);
        assert_eq!(progress.status, ProgressStatus::Executing);
        assert_eq!(
            progress.wave,
            Some(WaveProgress {
                current: 2,
                total: 4
            })
        );
        assert_eq!(progress.max_parallel, Some(5));
        assert_eq!(
            progress.updated,
            Some(
                chrono::Utc
                    .with_ymd_and_hms(2026, 2, 5, 14, 35, 22)
                    .unwrap()
            )
        );
        assert_eq!(progress.active[0].phase, "Phase 2 \u{2014} Implementing");
        assert_eq!(
            progress.completed[2].duration,
            Some(Duration::from_secs(245))
        );
        assert_eq!(progress.render(), SEED);
    }

    #[test]
    fn tolerates_crlf_missing_lines_and_ascii_dashes() {
        let text = "# Execution Progress\r\nstatus: complete\r\nWave: 3/3\r\n\r\n## Completed This Session\r\n- [9] A - B - FAIL\r\n- [10] weird - SKIPPED\r\n- not an item\r\n";
        let progress = Progress::parse(text);
        assert_eq!(progress.status, ProgressStatus::Complete);
        assert_eq!(
            progress.wave,
            Some(WaveProgress {
                current: 3,
                total: 3
            })
        );
        assert_eq!(progress.max_parallel, None);
        assert_eq!(progress.completed.len(), 1);
        assert_eq!(progress.completed[0].subject, "A - B");
        assert_eq!(progress.completed[0].result, TaskOutcome::Fail);
        assert_eq!(progress.completed[0].duration, None);
        assert!(!progress.render().contains('\r'));
    }

    #[test]
    fn subjects_cannot_smuggle_separators_or_lines() {
        let mut progress = Progress::initial(
            1,
            1,
            chrono::Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
        );
        progress.active.push(ActiveTask {
            id: "7".into(),
            subject: "a \u{2014} b\nc".into(),
            phase: "Phase 1".into(),
        });
        let back = Progress::parse(&progress.render());
        assert_eq!(back.active[0].subject, "a - b c");
        assert_eq!(back.active[0].phase, "Phase 1");
    }
}
