//! The session log in the seed's "Markdown Body Updates" format. A phase's section:
//!
//! ```text
//! ## Phase N: <Phase Name> <status indicator>
//!
//! ### <Agent Name> Output
//! <summary>
//!
//! ### Files Changed
//! - Created: <list>
//! - Modified: <list>
//!
//! ### Downstream Context
//! - Key Interfaces Introduced: <list>
//! - Patterns Established: <list>
//! - Integration Points: <list>
//! - Assumptions: <list>
//! - Warnings: <list>
//!
//! ### Validation Result
//! <pass/fail with details>
//! ```
//!
//! A `- Deleted:` line follows `Modified` when the phase deleted files. A list is written inline
//! when it has one entry, as nested bullets when it has more, and as `none` when empty. A skipped
//! phase never ran, so its section is only the heading and the notes (the user's reason).
//!
//! The log starts with `# <Topic> Orchestration Log`; entries are separated by one blank line.
//! Reading a log back keeps its text verbatim as one [`LogEntry::Text`]: the Markdown does not
//! hold the phase snapshots the entries were rendered from, and another tool's log must survive
//! byte for byte.

use cairn_domain::orchestration::phase::one_line;
use cairn_domain::orchestration::{LogEntry, Phase, PhaseReport, PhaseStatus};

/// Completed: U+2705 WHITE HEAVY CHECK MARK.
pub const GLYPH_COMPLETED: &str = "\u{2705}";
/// In progress: U+25EF LARGE CIRCLE.
pub const GLYPH_IN_PROGRESS: &str = "\u{25EF}";
/// Failed: U+274C CROSS MARK.
pub const GLYPH_FAILED: &str = "\u{274C}";
/// Pending: U+2610 BALLOT BOX.
pub const GLYPH_PENDING: &str = "\u{2610}";
/// Skipped: U+2796 HEAVY MINUS SIGN (a dash that stays visible at the end of a heading).
pub const GLYPH_SKIPPED: &str = "\u{2796}";

pub fn status_glyph(status: PhaseStatus) -> &'static str {
    match status {
        PhaseStatus::Completed => GLYPH_COMPLETED,
        PhaseStatus::InProgress => GLYPH_IN_PROGRESS,
        PhaseStatus::Failed => GLYPH_FAILED,
        PhaseStatus::Pending => GLYPH_PENDING,
        PhaseStatus::Skipped => GLYPH_SKIPPED,
    }
}

/// The whole log. An entry is appended after the text before it with one blank line between
/// them, trailing and leading blank lines of the entry dropped; a [`LogEntry::Text`] at the start
/// is written exactly as it was read.
pub fn render_log(log: &[LogEntry]) -> String {
    let mut out = String::new();
    for (index, entry) in log.iter().enumerate() {
        if let (0, LogEntry::Text(text)) = (index, entry) {
            out.push_str(text);
            continue;
        }
        let section = render_entry(entry);
        let section = section.trim_matches('\n');
        if section.is_empty() {
            continue;
        }
        out.truncate(out.trim_end_matches('\n').len());
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(section);
        out.push('\n');
    }
    out
}

/// Reads the log below the front matter back. See the module documentation for why it is text.
pub fn parse_log(text: &str) -> Vec<LogEntry> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![LogEntry::Text(text.to_owned())]
    }
}

/// One entry's text, ending in a newline.
pub fn render_entry(entry: &LogEntry) -> String {
    match entry {
        LogEntry::Title { topic } => format!("# {} Orchestration Log\n", one_line(topic)),
        LogEntry::Phase { phase, report } => render_phase_section(phase, report),
        LogEntry::ArchivedUnfinished { reason } => {
            format!("## Archived with unfinished phases\n\nBy user decision: {reason}\n")
        }
        LogEntry::Text(text) => text.clone(),
    }
}

/// The section for `phase` as it stands, ending in a newline.
pub fn render_phase_section(phase: &Phase, report: &PhaseReport) -> String {
    let mut out = format!(
        "## Phase {}: {} {}\n",
        phase.id,
        one_line(&phase.name),
        status_glyph(phase.status)
    );
    for note in report
        .notes
        .iter()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
    {
        out.push('\n');
        out.push_str(note);
        out.push('\n');
    }
    if phase.status == PhaseStatus::Skipped {
        return out;
    }
    for output in &report.outputs {
        out.push_str(&format!("\n### {} Output\n", one_line(&output.agent)));
        let summary = output.summary.trim();
        out.push_str(if summary.is_empty() {
            "(no output)"
        } else {
            summary
        });
        out.push('\n');
    }
    out.push_str("\n### Files Changed\n");
    push_item(&mut out, "Created", &phase.files_created);
    push_item(&mut out, "Modified", &phase.files_modified);
    if !phase.files_deleted.is_empty() {
        push_item(&mut out, "Deleted", &phase.files_deleted);
    }
    out.push_str("\n### Downstream Context\n");
    for (label, entries) in phase.downstream_context.labelled() {
        push_item(&mut out, label, entries);
    }
    out.push_str("\n### Validation Result\n");
    let validation = report
        .validation
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty());
    out.push_str(validation.unwrap_or("Not run"));
    out.push('\n');
    out
}

fn push_item(out: &mut String, label: &str, entries: &[String]) {
    match entries {
        [] => out.push_str(&format!("- {label}: none\n")),
        [only] => out.push_str(&format!("- {label}: {}\n", one_line(only))),
        many => {
            out.push_str(&format!("- {label}:\n"));
            for entry in many {
                out.push_str(&format!("  - {}\n", one_line(entry)));
            }
        }
    }
}
