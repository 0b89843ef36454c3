//! The templates of the documents a new plan starts with. Their content belongs to the agent
//! from then on; cairn only creates them.

use cairn_domain::plan::{MAX_FILES_ADDED, MAX_NEW_ABSTRACTIONS, PlanDocument};

/// The content a new plan starts with; `None` for documents not created up front.
pub fn template(document: PlanDocument, goal: &str) -> Option<String> {
    match document {
        PlanDocument::Plan => Some(format!(
            "# Plan v1: {goal}\n\n## Goal\n{goal}\n\n## Context\nSee findings.md and decisions.md.\n\n\
             ## Files To Modify\n- (list every file that will be created or modified)\n\n## Steps\n1. [ ] (first step)\n\n\
             ## Risks\n- (what could break, and where)\n\n\
             ## Success Criteria\n- (how REFLECT will know it worked)\n\n## Complexity Budget\n\
             - Files added: 0/{MAX_FILES_ADDED} max\n\
             - New abstractions (classes/modules/interfaces): 0/{MAX_NEW_ABSTRACTIONS} max\n\
             - Lines added vs removed: +0/-0 (target: net negative or neutral)\n"
        )),
        PlanDocument::Findings => Some(
            "# Findings\n\n## Index\n- (one line per file in findings/)\n\n## Key Constraints\n- (none yet)\n".to_owned(),
        ),
        PlanDocument::Progress => Some(
            "# Progress\n\n## Completed\n- (nothing yet)\n\n## In Progress\n- (nothing yet)\n\n\
             ## Remaining\n- (populated in PLAN)\n\n## Blocked\n- Nothing currently\n"
                .to_owned(),
        ),
        PlanDocument::Summary => None,
    }
}
