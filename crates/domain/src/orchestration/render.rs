//! The Markdown log section appended for a phase, in the seed's "Markdown Body Updates" format:
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

use super::model::{Phase, PhaseStatus};
use super::phase::one_line;

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

/// One agent's output for the phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentOutput {
    pub agent: String,
    /// A summary or the full output; written verbatim (trimmed).
    pub summary: String,
}

/// What the orchestrator has to say about a phase beyond what the front matter records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PhaseReport {
    /// Paragraphs written right under the heading.
    pub notes: Vec<String>,
    pub outputs: Vec<AgentOutput>,
    /// `None` is written as `Not run`.
    pub validation: Option<String>,
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
