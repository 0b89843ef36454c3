//! The plan use cases a CLI command or a hook calls.

use std::sync::Arc;

use super::decision::{Decision, DecisionDraft};
use super::document::CLAUDE_DIR;
use super::document::PlanDocument;
use super::edit::{EditVerdict, decide_edit};
use super::error::PlanError;
use super::id::PlanId;
use super::record::{
    BudgetReport, Change, ChangeOutcome, FixAttemptOutcome, ForcedReplan, NuclearRecommendation,
    PlanRecord, StrikeVerdict, TransitionOutcome,
};
use super::state::{PlanState, UserApproval};
use super::store::{Finding, PlanStore, PlanSummary};
use crate::NextStep;
use crate::ports::{Clock, IdGen};
use crate::{DomainError, Error, StoreError};

/// What a transition did: the record as written, the outcome, and the decision it logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionReport {
    pub plan: PlanRecord,
    pub outcome: TransitionOutcome,
    pub decision: Option<Decision>,
    /// The checkpoint taken because the plan left EXECUTE.
    pub checkpoint: Option<String>,
}

/// Where the active plan stands and what may happen next: what `status` and `resume` show and
/// what the hook puts in a new session's context.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanOverview {
    pub plan: PlanRecord,
    pub decisions: Vec<Decision>,
    /// The states the plan may move to now (the 3-strike rule applied).
    pub allowed: Vec<PlanState>,
    pub budget: BudgetReport,
    pub forced_replan: Option<ForcedReplan>,
    pub nuclear: Option<NuclearRecommendation>,
    pub checkpoints: Vec<String>,
    /// What to do next, first step first.
    pub next: Vec<NextStep>,
}

/// The complexity budget of the active plan against its scope estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetStatus {
    pub plan: PlanRecord,
    pub budget: BudgetReport,
    pub scope_estimate: Option<u32>,
    pub lines_added_total: u64,
    pub nuclear: Option<NuclearRecommendation>,
}

/// A decision label (`D-007`) counts as referenced when it occurs in `text` not followed by
/// another digit (so `D-0071` does not reference `D-007`).
fn references(text: &str, label: &str) -> bool {
    text.match_indices(label).any(|(at, _)| {
        !text[at + label.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// The protocol's next moves in each state, as typed steps.
fn next_steps(plan: &PlanRecord, allowed: &[PlanState]) -> Vec<NextStep> {
    let go = |to| NextStep::PlanGo { to };
    match plan.state() {
        PlanState::Explore => vec![NextStep::PlanFinding, go(PlanState::Plan)],
        PlanState::Plan => vec![NextStep::PlanApprove],
        PlanState::Execute => vec![go(PlanState::Reflect)],
        PlanState::RePlan => vec![NextStep::PlanDecide, go(PlanState::Plan)],
        PlanState::Reflect => NextStep::plan_go(allowed).into_iter().collect(),
        PlanState::Close => vec![NextStep::PlanNew { force: false }],
    }
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
        // The end of an iteration is what a later REFLECT or a revert goes back to.
        let checkpoint = if outcome.from == PlanState::Execute {
            let label = format!("iteration-{}-end", plan.iteration());
            Some(
                self.store
                    .write_checkpoint(plan.id(), &label)
                    .await
                    .map_err(StoreError::after_commit)?,
            )
        } else {
            None
        };
        Ok(TransitionReport {
            plan,
            outcome,
            decision: decisions.into_iter().next(),
            checkpoint,
        })
    }

    /// PLAN → EXECUTE on the user's word: `approval` quotes what the user said.
    pub async fn approve(&self, approval: UserApproval) -> Result<TransitionReport, Error> {
        self.transition(
            PlanState::Execute,
            "the user approved the plan",
            Some(approval),
        )
        .await
    }

    /// Every plan, oldest first.
    pub async fn list(&self) -> Result<Vec<PlanSummary>, Error> {
        Ok(self.store.list().await?)
    }

    /// The active plan, its decisions, and what may and should happen next.
    pub async fn overview(&self) -> Result<PlanOverview, Error> {
        let plan = self.current().await?;
        let decisions = self.store.decisions(plan.id()).await?;
        let checkpoints = self.store.checkpoints(plan.id()).await?;
        let allowed = plan.allowed_targets_now();
        Ok(PlanOverview {
            next: next_steps(&plan, &allowed),
            budget: plan.budget(),
            forced_replan: plan.forced_replan(),
            nuclear: plan.nuclear_check(),
            allowed,
            decisions,
            checkpoints,
            plan,
        })
    }

    /// The complexity budget of the current iteration and the scope against the estimate.
    pub async fn budget(&self) -> Result<BudgetStatus, Error> {
        let plan = self.current().await?;
        Ok(BudgetStatus {
            budget: plan.budget(),
            scope_estimate: plan.scope_estimate(),
            lines_added_total: plan.lines_added_total(),
            nuclear: plan.nuclear_check(),
            plan,
        })
    }

    /// Adds a finding to the active plan.
    pub async fn record_finding(&self, text: &str, file: Option<&str>) -> Result<(), Error> {
        let finding = Finding::new(text, file)?;
        let plan = self.current().await?;
        Ok(self.store.append_finding(plan.id(), &finding).await?)
    }

    /// A checkpoint of the active plan (before a context compaction, say). `Ok(None)` when no
    /// plan is active.
    pub async fn checkpoint(&self, label: &str) -> Result<Option<String>, Error> {
        let plan = match self.current().await {
            Ok(plan) => plan,
            Err(Error::Domain(DomainError::Plan(PlanError::NoActivePlan))) => return Ok(None),
            Err(other) => return Err(other),
        };
        Ok(Some(self.store.write_checkpoint(plan.id(), label).await?))
    }

    /// The plan the pointer names when that plan does not exist (a dangling pointer), for
    /// doctor. A closed plan or a readable one is fine.
    pub async fn dangling_pointer(&self) -> Result<Option<PlanId>, Error> {
        let Some(id) = self.store.current().await? else {
            return Ok(None);
        };
        match self.store.load(&id).await {
            Err(StoreError::NotFound { .. }) => Ok(Some(id)),
            Err(other) => Err(other.into()),
            Ok(_) => Ok(None),
        }
    }

    /// Removes a pointer that names a missing plan; returns what it named. A pointer naming an
    /// existing plan is left alone.
    pub async fn repair_pointer(&self) -> Result<Option<PlanId>, Error> {
        match self.dangling_pointer().await? {
            Some(_) => Ok(self.store.clear_current().await?),
            None => Ok(None),
        }
    }

    /// The decisions of `plan` that neither plan.md nor findings.md mentions by label.
    async fn unreferenced_decisions(&self, plan: &PlanRecord) -> Result<Vec<String>, Error> {
        let mut texts = Vec::new();
        for document in [PlanDocument::Plan, PlanDocument::Findings] {
            match self.store.read_document(plan.id(), document).await {
                Ok(text) => texts.push(text),
                Err(StoreError::NotFound { .. }) => {}
                Err(other) => return Err(other.into()),
            }
        }
        Ok(self
            .store
            .decisions(plan.id())
            .await?
            .iter()
            .map(Decision::label)
            .filter(|label| !texts.iter().any(|t| references(t, label)))
            .collect())
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
    /// like any transition the table lacks. Refused while a decision is referenced nowhere in
    /// plan.md or findings.md (decision anchoring: every decision must be accounted for). The
    /// check reads outside the store's critical section; a decision logged concurrently with a
    /// close may slip through, which the audit in CLOSE still catches. The plan directory is kept.
    pub async fn close(&self, reason: &str) -> Result<PlanRecord, Error> {
        let plan = self.current().await?;
        // Only where CLOSE is reachable: elsewhere the transition's own refusal says more.
        if plan.allowed_targets_now().contains(&PlanState::Close) {
            let unreferenced = self.unreferenced_decisions(&plan).await?;
            if !unreferenced.is_empty() {
                return Err(PlanError::UnreferencedDecisions {
                    plan: plan.id().clone(),
                    decisions: unreferenced,
                }
                .into());
            }
        }
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
