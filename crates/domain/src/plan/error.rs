//! Refusals raised by the plan rules.

use super::id::PlanId;
use super::state::PlanState;
use crate::NextStep;

fn list(states: &[PlanState]) -> String {
    if states.is_empty() {
        return "none (CLOSE is terminal)".to_owned();
    }
    states
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a plan rule said no. Every variant names the plan it concerns where there is one.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum PlanError {
    #[error("plan {plan}: {from} → {to} is not a transition; allowed from {from}: {}", list(.allowed))]
    IllegalTransition {
        plan: PlanId,
        from: PlanState,
        to: PlanState,
        allowed: Vec<PlanState>,
    },

    #[error(
        "plan {plan}: {from} → {to} needs the user's explicit approval and none was given; \
         present the plan and wait for the user to approve it"
    )]
    ApprovalMissing {
        plan: PlanId,
        from: PlanState,
        to: PlanState,
    },

    #[error(
        "plan {plan}: `{area}` has failed {strikes} times (3-strike rule), so the approach is wrong \
         and RE-PLAN is forced; {from} → {to} is refused, allowed now: {}", list(.allowed)
    )]
    ReplanForced {
        plan: PlanId,
        from: PlanState,
        to: PlanState,
        area: String,
        strikes: u32,
        allowed: Vec<PlanState>,
    },

    #[error(
        "plan {plan}: step `{step}` already had {attempts} fix attempts (the autonomy leash); \
         do not try a third: stop, transition to REFLECT and present the situation to the user"
    )]
    FixAttemptsExhausted {
        plan: PlanId,
        step: String,
        attempts: u32,
    },

    #[error(
        "plan {plan}: no more fixes: `{area}` has failed {strikes} times (3-strike rule); \
         transition to REFLECT and then RE-PLAN with a fundamentally different approach"
    )]
    FixBlockedByStrikes {
        plan: PlanId,
        step: String,
        area: String,
        strikes: u32,
    },

    #[error("plan {plan}: cannot {action} in {state}; only in {}", list(.allowed_in))]
    WrongState {
        plan: PlanId,
        action: &'static str,
        state: PlanState,
        allowed_in: Vec<PlanState>,
    },

    #[error(
        "plan {plan}: the scope estimate is frozen once execution has started (iteration {iteration}); \
         the nuclear-option check compares against the original estimate"
    )]
    ScopeEstimateFrozen { plan: PlanId, iteration: u32 },

    #[error(
        "`.claude/.current_plan` already names the active plan {current}; resume it, close it, \
         or create the new plan with force"
    )]
    ActivePlanExists { current: PlanId },

    #[error("no active plan: `.claude/.current_plan` is absent or names no plan")]
    NoActivePlan,

    #[error("not a plan directory name {name:?}: {reason}")]
    BadPlanId { name: String, reason: String },

    #[error(
        "`.claude/.current_plan` must hold exactly one plan directory name; found {content:?}: {reason}"
    )]
    BadPointer { content: String, reason: String },

    #[error(
        "plan {plan}: cannot close while {} referenced nowhere in plan.md or the findings: {}; \
         reference each where it is load-bearing (e.g. in plan.md's Context) or record a finding naming it",
        if .decisions.len() == 1 { "this decision is" } else { "these decisions are" },
        .decisions.join(", ")
    )]
    UnreferencedDecisions {
        plan: PlanId,
        decisions: Vec<String>,
    },

    #[error("{file} line {line}: {detail}")]
    Unreadable {
        file: &'static str,
        line: usize,
        detail: String,
    },
}

impl PlanError {
    /// What to do about the refusal, first step first.
    pub fn next_steps(&self) -> Vec<NextStep> {
        use PlanError::*;
        let go = |to: PlanState| NextStep::PlanGo { to };
        match self {
            IllegalTransition { allowed, .. } | ReplanForced { allowed, .. } => {
                NextStep::plan_go(allowed).into_iter().collect()
            }
            ApprovalMissing { .. } => vec![NextStep::PlanApprove],
            FixAttemptsExhausted { .. } | FixBlockedByStrikes { .. } => {
                vec![go(PlanState::Reflect)]
            }
            WrongState { .. } | ScopeEstimateFrozen { .. } => vec![NextStep::PlanStatus],
            ActivePlanExists { .. } => {
                vec![NextStep::PlanResume, NextStep::PlanNew { force: true }]
            }
            NoActivePlan => vec![NextStep::PlanNew { force: false }, NextStep::PlanList],
            UnreferencedDecisions { .. } => vec![NextStep::PlanFinding],
            BadPointer { .. } => vec![NextStep::DoctorFix],
            BadPlanId { .. } | Unreadable { .. } => Vec::new(),
        }
    }
}

impl From<PlanError> for crate::Error {
    fn from(error: PlanError) -> Self {
        crate::Error::Domain(error.into())
    }
}
