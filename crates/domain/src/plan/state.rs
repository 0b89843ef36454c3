//! The plan state machine: six states and the seed's transition table, verbatim.

use std::fmt;

/// Where a plan stands in the EXPLORE → PLAN → EXECUTE → REFLECT cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PlanState {
    Explore,
    Plan,
    Execute,
    Reflect,
    RePlan,
    Close,
}

impl PlanState {
    pub const ALL: [PlanState; 6] = [
        PlanState::Explore,
        PlanState::Plan,
        PlanState::Execute,
        PlanState::Reflect,
        PlanState::RePlan,
        PlanState::Close,
    ];

    /// The name as `state.md` and `decisions.md` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanState::Explore => "EXPLORE",
            PlanState::Plan => "PLAN",
            PlanState::Execute => "EXECUTE",
            PlanState::Reflect => "REFLECT",
            PlanState::RePlan => "RE-PLAN",
            PlanState::Close => "CLOSE",
        }
    }

    /// Reads a state name leniently: any case, and `REPLAN`, `RE_PLAN`, `RE PLAN` for `RE-PLAN`,
    /// because people and older tools hand-edit these files.
    pub fn parse(text: &str) -> Option<PlanState> {
        let squashed: String = text
            .trim()
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .flat_map(char::to_uppercase)
            .collect();
        match squashed.as_str() {
            "EXPLORE" => Some(PlanState::Explore),
            "PLAN" => Some(PlanState::Plan),
            "EXECUTE" => Some(PlanState::Execute),
            "REFLECT" => Some(PlanState::Reflect),
            "REPLAN" => Some(PlanState::RePlan),
            "CLOSE" => Some(PlanState::Close),
            _ => None,
        }
    }

    /// The states this one may move to, in table order. Empty for CLOSE: a closed plan stays
    /// closed; new work starts a new plan, so the audit trail of the old one is never reopened.
    pub fn allowed_targets(self) -> Vec<PlanState> {
        TRANSITIONS
            .iter()
            .filter(|rule| rule.from == self)
            .map(|rule| rule.to)
            .collect()
    }

    /// The rule for `self → to`, if the table has one.
    pub fn rule_to(self, to: PlanState) -> Option<&'static TransitionRule> {
        TRANSITIONS
            .iter()
            .find(|rule| rule.from == self && rule.to == to)
    }

    pub fn is_terminal(self) -> bool {
        self.allowed_targets().is_empty()
    }
}

/// Serialised as the name the files use (`RE-PLAN`), like [`fmt::Display`].
impl serde::Serialize for PlanState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for PlanState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of the transition table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransitionRule {
    pub from: PlanState,
    pub to: PlanState,
    /// The seed's trigger, shown to the agent when it asks what it may do next.
    pub trigger: &'static str,
    /// Whether taking this transition needs a [`UserApproval`].
    pub needs_approval: bool,
    /// Whether the transition is a decision worth a `decisions.md` entry. EXECUTE → REFLECT is
    /// an observation that happens after every step; logging each one would bury the pivots.
    pub logs_decision: bool,
}

/// The seed's transition table and nothing else.
pub const TRANSITIONS: &[TransitionRule] = &[
    TransitionRule {
        from: PlanState::Explore,
        to: PlanState::Plan,
        trigger: "sufficient context gathered; findings written",
        needs_approval: false,
        logs_decision: true,
    },
    TransitionRule {
        from: PlanState::Plan,
        to: PlanState::Execute,
        trigger: "the user explicitly approves the plan",
        needs_approval: true,
        logs_decision: true,
    },
    TransitionRule {
        from: PlanState::Execute,
        to: PlanState::Reflect,
        trigger: "a step completes, fails, surprises, or the autonomy leash is hit",
        needs_approval: false,
        logs_decision: false,
    },
    TransitionRule {
        from: PlanState::Reflect,
        to: PlanState::Close,
        trigger: "all success criteria met",
        needs_approval: false,
        logs_decision: true,
    },
    TransitionRule {
        from: PlanState::Reflect,
        to: PlanState::RePlan,
        trigger: "something failed or a better approach was found",
        needs_approval: false,
        logs_decision: true,
    },
    TransitionRule {
        from: PlanState::Reflect,
        to: PlanState::Explore,
        trigger: "more context is needed before re-planning",
        needs_approval: false,
        logs_decision: true,
    },
    TransitionRule {
        from: PlanState::RePlan,
        to: PlanState::Plan,
        trigger: "new approach formulated; decision logged",
        needs_approval: false,
        logs_decision: true,
    },
];

/// The user's explicit go-ahead for PLAN → EXECUTE.
///
/// There is no `Default`, no `From<bool>` and no public field: the only way to get one is
/// [`UserApproval::from_user`] with the user's own words, so a caller cannot approve by passing
/// `true` somewhere by accident, and the words end up in the decision log as evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserApproval {
    statement: String,
}

impl UserApproval {
    /// What the user said to approve (e.g. "yes, go with approach B"). Refused when blank.
    pub fn from_user(statement: &str) -> Result<Self, crate::DomainError> {
        let statement = super::record::one_line(statement);
        if statement.is_empty() {
            return Err(crate::DomainError::invalid(
                "approval",
                "an approval must quote what the user said; it was blank",
            ));
        }
        Ok(Self { statement })
    }

    pub fn statement(&self) -> &str {
        &self.statement
    }
}
