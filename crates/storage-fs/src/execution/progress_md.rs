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
//! completed line at its LAST; to keep that unambiguous, [`render_progress`] writes
//! separators inside subjects as ` - `. Line breaks inside any field become spaces.

use cairn_domain::execution::TaskOutcome;
use cairn_domain::execution::duration::{format_duration, parse_duration};
use cairn_domain::execution::progress::{
    ActiveTask, CompletedTask, Progress, ProgressStatus, WaveProgress,
};
use cairn_domain::time::{format_rfc3339, parse_rfc3339};

pub const SEPARATOR: &str = " \u{2014} ";
const ASCII_SEPARATOR: &str = " - ";

/// The whole file; header fields that are `None` are left out.
pub fn render_progress(progress: &Progress) -> String {
    let mut out = String::from("# Execution Progress\n");
    out += &format!("Status: {}\n", one_line(&progress.status.to_string()));
    if let Some(wave) = progress.wave {
        out += &format!("Wave: {} of {}\n", wave.current, wave.total);
    }
    if let Some(max) = progress.max_parallel {
        out += &format!("Max Parallel: {max}\n");
    }
    if let Some(at) = &progress.updated {
        out += &format!("Updated: {}\n", format_rfc3339(at));
    }
    out += "\n## Active Tasks\n";
    for task in &progress.active {
        out += &format!(
            "- [{}] {}{SEPARATOR}{}\n",
            id_text(&task.id),
            subject_text(&task.subject),
            one_line(&task.phase)
        );
    }
    out += "\n## Completed This Session\n";
    for task in &progress.completed {
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
pub fn parse_progress(text: &str) -> Progress {
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

pub(super) fn parse_wave(value: &str) -> Option<WaveProgress> {
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
pub(super) fn one_line(text: &str) -> String {
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
