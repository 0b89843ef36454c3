//! `.claude/.current_plan`: the one line naming the active plan's directory.

use cairn_domain::plan::{PlanError, PlanId};

/// Reads `.claude/.current_plan`. The content must be exactly one plan directory name; a single
/// trailing line ending is tolerated because editors and `echo` add one. Anything else — spaces,
/// paths, `..`, several lines, an uppercase suffix — is refused rather than guessed at, because a
/// pointer that is accepted becomes a path that hooks write under.
pub fn parse_pointer(content: &str) -> Result<PlanId, PlanError> {
    let name = content
        .strip_suffix("\r\n")
        .or_else(|| content.strip_suffix('\n'))
        .unwrap_or(content);
    PlanId::parse(name).map_err(|e| PlanError::BadPointer {
        content: content.to_owned(),
        reason: match e {
            PlanError::BadPlanId { reason, .. } => reason,
            other => other.to_string(),
        },
    })
}

/// What `.claude/.current_plan` holds for `id`.
pub fn render_pointer(id: &PlanId) -> String {
    format!("{id}\n")
}
