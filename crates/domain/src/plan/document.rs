//! The files of a plan directory and the documents cairn creates in it, by name only.
//!
//! The names are part of the protocol (the edit rules of [`super::edit`] are stated in them and
//! other tools open them); what the files contain is an on-disk format and lives in the
//! filesystem adapter (`cairn_storage_fs::plan`), like every other format.

pub const STATE_FILE: &str = "state.md";
pub const PLAN_FILE: &str = "plan.md";
pub const DECISIONS_FILE: &str = "decisions.md";
pub const FINDINGS_FILE: &str = "findings.md";
pub const PROGRESS_FILE: &str = "progress.md";
pub const SUMMARY_FILE: &str = "summary.md";
pub const FINDINGS_DIR: &str = "findings";
pub const CHECKPOINTS_DIR: &str = "checkpoints";
/// Where plan directories and the pointer live, relative to the project root.
pub const CLAUDE_DIR: &str = ".claude";
pub const POINTER_FILE: &str = ".current_plan";

/// The Markdown documents of a plan that cairn creates (or, for the summary, reads) but whose
/// content belongs to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanDocument {
    Plan,
    Findings,
    Progress,
    /// Written by the agent at CLOSE; absent before.
    Summary,
}

impl PlanDocument {
    pub const CREATED: [PlanDocument; 3] = [
        PlanDocument::Plan,
        PlanDocument::Findings,
        PlanDocument::Progress,
    ];

    pub fn file_name(self) -> &'static str {
        match self {
            PlanDocument::Plan => PLAN_FILE,
            PlanDocument::Findings => FINDINGS_FILE,
            PlanDocument::Progress => PROGRESS_FILE,
            PlanDocument::Summary => SUMMARY_FILE,
        }
    }
}
