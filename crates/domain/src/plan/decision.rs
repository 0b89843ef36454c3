//! Decisions: the plan's append-only decision log, as values.
//!
//! Numbers rise by one per entry and are assigned by the store inside its critical section, so
//! two concurrent appends can never share a number. The file form (`decisions.md`, one
//! `## D-NNN | FROM → TO | YYYY-MM-DD` block per entry) lives in `cairn_storage_fs::plan`.

use chrono::NaiveDate;

use super::state::PlanState;
use crate::DomainError;

/// How an entry's heading starts in `decisions.md`, known here only to refuse it in a body.
const ENTRY_HEADING: &str = "## D-"; // tidy: allow-heading (recognised, never rendered)

/// A decision about to be appended; the store numbers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionDraft {
    pub from: PlanState,
    pub to: PlanState,
    pub date: NaiveDate,
    pub body: String,
}

impl DecisionDraft {
    /// Checks the body and trims it. A body line that starts with `## D-` would read back as a
    /// second entry and could fake history, so it is refused.
    pub fn new(
        from: PlanState,
        to: PlanState,
        date: NaiveDate,
        body: &str,
    ) -> Result<Self, DomainError> {
        let body = body.trim().to_owned();
        if body.is_empty() {
            return Err(DomainError::invalid(
                "decision",
                "the body must not be blank",
            ));
        }
        if body
            .lines()
            .any(|line| line.trim_start().starts_with(ENTRY_HEADING))
        {
            return Err(DomainError::invalid(
                "decision",
                "the body must not contain a `## D-` heading line",
            ));
        }
        Ok(Self {
            from,
            to,
            date,
            body,
        })
    }

    pub fn numbered(self, number: u32) -> Decision {
        Decision {
            number,
            from: self.from,
            to: self.to,
            date: self.date,
            body: self.body,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub number: u32,
    pub from: PlanState,
    pub to: PlanState,
    pub date: NaiveDate,
    pub body: String,
}

impl Decision {
    /// `D-007`.
    pub fn label(&self) -> String {
        format!("D-{:03}", self.number)
    }
}
