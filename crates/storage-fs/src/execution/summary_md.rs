//! `session_summary.md`, written when a session is archived: counts, times and the task table.
//!
//! ```text
//! # Execution Session Summary
//!
//! Session: user-auth-20260205-143022
//! Started: 2026-02-05T14:30:22Z
//! Finished: 2026-02-05T15:02:10Z
//! Elapsed: 31m 48s
//! Waves: 4 of 4
//!
//! ## Results
//! - Tasks: 3
//! - PASS: 1
//! - PARTIAL: 1
//! - FAIL: 1
//! - Task time: 16m 31s
//!
//! ## Tasks
//! | Task ID | Subject | Status | Attempts | Duration | Token Usage |
//! |---------|---------|--------|----------|----------|-------------|
//! | 1 | … |
//! ```

use cairn_domain::execution::duration::format_duration;
use cairn_domain::execution::state::SessionSummary;
use cairn_domain::time::{format_rfc3339, parse_rfc3339};

use super::progress_md::parse_wave;
use super::task_log_md::{parse_task_log, render_task_log};

const TITLE: &str = "# Execution Session Summary";

/// The whole file; the counts are those of [`SessionSummary::tally`].
pub fn render_session_summary(summary: &SessionSummary) -> String {
    let tally = summary.tally();
    let mut out = format!("{TITLE}\n\nSession: {}\n", summary.session_id);
    if let Some(started) = &summary.started {
        out += &format!("Started: {}\n", format_rfc3339(started));
    }
    if let Some(finished) = &summary.finished {
        out += &format!("Finished: {}\n", format_rfc3339(finished));
    }
    if let Some(elapsed) = summary.elapsed() {
        out += &format!("Elapsed: {}\n", format_duration(elapsed));
    }
    if let Some(wave) = summary.wave {
        out += &format!("Waves: {} of {}\n", wave.current, wave.total);
    }
    out += &format!(
        "\n## Results\n- Tasks: {}\n- PASS: {}\n- PARTIAL: {}\n- FAIL: {}\n- Task time: {}\n",
        tally.total(),
        tally.pass,
        tally.partial,
        tally.fail,
        format_duration(tally.task_time)
    );
    out += "\n## Tasks\n";
    let table = render_task_log(&summary.tasks);
    out += table
        .strip_prefix("# Task Execution Log\n\n")
        .unwrap_or(&table);
    out
}

/// Reads a summary back leniently: the header lines it finds, and the task table's rows. The
/// counts and the elapsed time are not read: they are recomputed from the rows and the times.
pub fn parse_session_summary(text: &str) -> SessionSummary {
    let mut summary = SessionSummary {
        session_id: String::new(),
        started: None,
        finished: None,
        wave: None,
        tasks: parse_task_log(text),
    };
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim().to_ascii_lowercase().as_str() {
            "session" => summary.session_id = value.to_owned(),
            "started" => summary.started = parse_rfc3339(value),
            "finished" => summary.finished = parse_rfc3339(value),
            "waves" => summary.wave = parse_wave(value),
            _ => {}
        }
    }
    summary
}
