//! The plan use cases a CLI command or a hook calls.

use std::sync::Arc;

use super::decision::{Decision, DecisionDraft};
use super::document::CLAUDE_DIR;
use super::edit::{EditVerdict, decide_edit};
use super::error::PlanError;
use super::id::PlanId;
use super::record::{
    BudgetReport, Change, ChangeOutcome, FixAttemptOutcome, PlanRecord, StrikeVerdict,
    TransitionOutcome,
};
use super::state::{PlanState, UserApproval};
use super::store::PlanStore;
use crate::ports::{Clock, IdGen};
use crate::{DomainError, Error, StoreError};

/// What a transition did: the record as written, the outcome, and the decision it logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionReport {
    pub plan: PlanRecord,
    pub outcome: TransitionOutcome,
    pub decision: Option<Decision>,
}

/// Drives the active plan (the one `.claude/.current_plan` names). The rules live in
/// [`PlanRecord`]; this decides which plan, supplies the time, and persists through the store.
pub struct PlanService {
    store: Arc<dyn PlanStore>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGen>,
}

impl std::fmt::Debug for PlanService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlanService { .. }")
    }
}

impl PlanService {
    pub fn new(store: Arc<dyn PlanStore>, clock: Arc<dyn Clock>, ids: Arc<dyn IdGen>) -> Self {
        Self { store, clock, ids }
    }

    /// Starts a plan in EXPLORE and makes it the active one. Refused while another plan is
    /// active unless `force`, which leaves the old plan on disk, unpointed, in whatever state
    /// it was.
    pub async fn create(&self, goal: &str, force: bool) -> Result<PlanRecord, Error> {
        let now = self.clock.now();
        let id = PlanId::new(now.date_naive(), &self.ids.hex8())?;
        let plan = PlanRecord::new(id, goal, now)?;
        self.store.create(&plan, force).await?;
        Ok(plan)
    }

    /// The id of the active plan; `PlanError::NoActivePlan` when the pointer is absent.
    async fn current_id(&self) -> Result<PlanId, Error> {
        self.store
            .current()
            .await?
            .ok_or_else(|| PlanError::NoActivePlan.into())
    }

    /// The active plan. A pointer naming a missing plan counts as no active plan.
    pub async fn current(&self) -> Result<PlanRecord, Error> {
        let id = self.current_id().await?;
        match self.store.load(&id).await {
            Err(StoreError::NotFound { .. }) => Err(PlanError::NoActivePlan.into()),
            other => Ok(other?),
        }
    }

    /// Runs `rule` on the active plan inside the store's critical section and hands back what it
    /// returned alongside the written record and appended decisions.
    async fn with_current<T: Send>(
        &self,
        rule: impl FnOnce(&mut PlanRecord) -> Result<(T, Vec<DecisionDraft>), DomainError> + Send,
    ) -> Result<(T, PlanRecord, Vec<Decision>), Error> {
        let id = self.current_id().await?;
        let (plan, decisions, value) = self.store.transact_with(&id, rule).await?;
        Ok((value, plan, decisions))
    }

    /// Takes one transition of the table. PLAN → EXECUTE needs `approval`; every transition but
    /// EXECUTE → REFLECT also appends a decision carrying the reason (and the approval).
    pub async fn transition(
        &self,
        to: PlanState,
        reason: &str,
        approval: Option<UserApproval>,
    ) -> Result<TransitionReport, Error> {
        let at = self.clock.now();
        let (outcome, plan, decisions) = self
            .with_current(move |plan| {
                let outcome = plan.transition(to, reason, approval.as_ref(), at)?;
                let drafts = outcome.decision.clone().into_iter().collect();
                Ok((outcome, drafts))
            })
            .await?;
        Ok(TransitionReport {
            plan,
            outcome,
            decision: decisions.into_iter().next(),
        })
    }

    pub async fn set_step(&self, step: &str) -> Result<PlanRecord, Error> {
        let ((), plan, _) = self
            .with_current(|plan| Ok((plan.set_step(step)?, Vec::new())))
            .await?;
        Ok(plan)
    }

    pub async fn record_fix_attempt(
        &self,
        step: &str,
        note: &str,
    ) -> Result<FixAttemptOutcome, Error> {
        let (outcome, _, _) = self
            .with_current(|plan| Ok((plan.record_fix_attempt(step, note)?, Vec::new())))
            .await?;
        Ok(outcome)
    }

    pub async fn record_failure(&self, area: &str) -> Result<StrikeVerdict, Error> {
        let (verdict, _, _) = self
            .with_current(|plan| Ok((plan.record_failure(area)?, Vec::new())))
            .await?;
        Ok(verdict)
    }

    pub async fn record_change(&self, change: Change) -> Result<ChangeOutcome, Error> {
        let (outcome, _, _) = self
            .with_current(move |plan| Ok((plan.record_change(&change)?, Vec::new())))
            .await?;
        Ok(outcome)
    }

    pub async fn record_abstraction(&self, name: &str) -> Result<BudgetReport, Error> {
        let (report, _, _) = self
            .with_current(|plan| Ok((plan.record_abstraction(name)?, Vec::new())))
            .await?;
        Ok(report)
    }

    pub async fn estimate_scope(&self, lines: u32) -> Result<PlanRecord, Error> {
        let ((), plan, _) = self
            .with_current(|plan| Ok((plan.estimate_scope(lines)?, Vec::new())))
            .await?;
        Ok(plan)
    }

    /// Appends a free-form decision (what was learned, a complexity assessment, …) headed with
    /// the plan's last transition, or `STATE → STATE` before the first one.
    pub async fn log_decision(&self, body: &str) -> Result<Decision, Error> {
        let plan = self.current().await?;
        let (from, to) = plan
            .last_transition()
            .map_or((plan.state(), plan.state()), |t| (t.from, t.to));
        let draft = DecisionDraft::new(from, to, self.clock.now().date_naive(), body)?;
        Ok(self.store.append_decision(plan.id(), draft).await?)
    }

    /// The decision for one edit under the active plan, `project_dir` being the project root
    /// (`CLAUDE_PROJECT_DIR`) and `target_path` absolute. With no active plan there is nothing
    /// to enforce and the edit is allowed; the hook then stays silent.
    pub async fn decide_edit(
        &self,
        project_dir: &str,
        target_path: &str,
    ) -> Result<EditVerdict, Error> {
        let plan = match self.current().await {
            Ok(plan) => plan,
            Err(Error::Domain(DomainError::Plan(PlanError::NoActivePlan))) => {
                return Ok(EditVerdict::Allow);
            }
            Err(other) => return Err(other),
        };
        let root = project_dir.trim_end_matches(['/', '\\']);
        let plan_dir = format!("{root}/{CLAUDE_DIR}/{}", plan.id());
        Ok(decide_edit(plan.state(), target_path, &plan_dir))
    }

    /// Finishes the active plan: from REFLECT it takes REFLECT → CLOSE (so the 3-strike rule
    /// still applies), in CLOSE it only releases the pointer; from any other state it is refused
    /// like any transition the table lacks. The plan directory is kept.
    pub async fn close(&self, reason: &str) -> Result<PlanRecord, Error> {
        let plan = self.current().await?;
        let plan = if plan.state() == PlanState::Close {
            plan
        } else {
            self.transition(PlanState::Close, reason, None).await?.plan
        };
        self.store.clear_current().await?;
        Ok(plan)
    }

    /// Stops tracking the active plan without touching its state (the record keeps saying where
    /// it was abandoned). The plan directory is kept.
    pub async fn abandon(&self) -> Result<PlanRecord, Error> {
        let plan = self.current().await?;
        self.store.clear_current().await?;
        Ok(plan)
    }
}
