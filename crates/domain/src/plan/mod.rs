//! Plans: the iterative planner's EXPLORE → PLAN → EXECUTE → REFLECT → RE-PLAN → CLOSE cycle
//! (SPEC §4, seed 003).
//!
//! A plan lives in `<repo>/.claude/.plan_YYYY-MM-DD_XXXXXXXX/`; `.claude/.current_plan` names
//! the active one. The aggregate ([`PlanRecord`]) enforces the transition table and the
//! protocol's counters:
//!
//! | from | to | needs |
//! |---|---|---|
//! | EXPLORE | PLAN | |
//! | PLAN | EXECUTE | a [`UserApproval`]; starts the next iteration |
//! | EXECUTE | REFLECT | |
//! | REFLECT | CLOSE | no area at 3 strikes |
//! | REFLECT | RE-PLAN | |
//! | REFLECT | EXPLORE | no area at 3 strikes |
//! | RE-PLAN | PLAN | |
//!
//! CLOSE is terminal.
//!
//! Counters:
//! - **Autonomy leash**: at most [`MAX_FIX_ATTEMPTS`] fix attempts per plan step, counted per
//!   iteration (PLAN → EXECUTE starts a new plan version with fresh steps); a third is refused
//!   with "go to REFLECT".
//! - **3-strike rule**: failures are counted per area across iterations. The third failure of an
//!   area forces RE-PLAN: from then on fix attempts are refused, EXECUTE may only go to REFLECT
//!   (its only exit anyway) and REFLECT only to RE-PLAN. The forced state is derived from the
//!   counters, not stored beside them; entering RE-PLAN resets every struck-out area, since the
//!   new plan must approach it differently.
//! - **Complexity budget** per iteration: files added (max 3, from the change manifest), new
//!   abstractions (max 2), net lines (target 0). Overruns are reported, not refused: the
//!   protocol's answer to an overrun is a judgement call in REFLECT.
//! - **Nuclear option**: see [`NuclearRecommendation`] for the exact definition of bloat.
//!
//! [`decide_edit`] is what the PreToolUse hook asks before a write.

pub mod decision;
pub mod document;
pub mod edit;
pub mod error;
pub mod id;
pub mod record;
pub mod service;
pub mod state;
pub mod store;

#[cfg(feature = "testkit")]
pub mod contract;
#[cfg(feature = "testkit")]
pub mod memory;

pub use decision::{Decision, DecisionDraft};
pub use document::PlanDocument;
pub use edit::{EditVerdict, PlanFile, decide_edit, project_edits_allowed, writable_plan_files};
pub use error::PlanError;
pub use id::PlanId;
pub use record::{
    BudgetOverrun, BudgetReport, Change, ChangeKind, ChangeOutcome, FixAttempt, FixAttemptOutcome,
    ForcedReplan, LastTransition, MAX_FILES_ADDED, MAX_FIX_ATTEMPTS, MAX_NEW_ABSTRACTIONS,
    ManifestEntry, NET_LINES_TARGET, NUCLEAR_BLOAT_FACTOR, NUCLEAR_ITERATION,
    NuclearRecommendation, PlanRecord, PlanRecordParts, STRIKES_TO_REPLAN, StrikeVerdict,
    TransitionOutcome, TransitionRecord,
};
pub use service::{BudgetStatus, PlanOverview, PlanService, TransitionReport};
pub use state::{PlanState, TRANSITIONS, TransitionRule, UserApproval};
pub use store::{Finding, PlanMutation, PlanStore, PlanSummary};
