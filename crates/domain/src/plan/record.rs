//! The plan aggregate: the state machine plus the counters the protocol enforces.
//!
//! Every method checks all of its rules before it changes anything, so a refused call leaves the
//! record exactly as it was; the store relies on this to write nothing when a mutation fails.

use std::collections::BTreeMap;
use std::fmt;

use super::decision::DecisionDraft;
use super::error::PlanError;
use super::id::PlanId;
use super::state::{PlanState, UserApproval};
use crate::DomainError;
use crate::time::Timestamp;

/// The autonomy leash: fix attempts allowed per plan step before the agent must stop and REFLECT.
pub const MAX_FIX_ATTEMPTS: u32 = 2;
/// The 3-strike rule: failures of one area that prove the approach to it wrong.
pub const STRIKES_TO_REPLAN: u32 = 3;
/// Complexity budget per plan version (iteration).
pub const MAX_FILES_ADDED: u32 = 3;
pub const MAX_NEW_ABSTRACTIONS: u32 = 2;
/// Lines added minus lines removed should not grow the code base.
pub const NET_LINES_TARGET: i64 = 0;
/// The nuclear option: from this iteration on, bloat over [`NUCLEAR_BLOAT_FACTOR`] × the original
/// scope estimate recommends reverting everything.
pub const NUCLEAR_ITERATION: u32 = 5;
pub const NUCLEAR_BLOAT_FACTOR: u64 = 2;

/// Collapses every run of whitespace (newlines included) to one space and trims, so free text
/// always fits on the single Markdown line it is written to.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A short identifier written between backticks in `state.md`: a step, an area, a path, an
/// abstraction. Backticks and line breaks would break the line it is written on, so they are
/// refused rather than silently altered.
pub(crate) fn label(field: &'static str, value: &str) -> Result<String, DomainError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(DomainError::invalid(field, "must not be blank"));
    }
    if value.contains(['`', '\n', '\r']) {
        return Err(DomainError::invalid(
            field,
            format!("must be one line without backticks: {value:?}"),
        ));
    }
    Ok(value.to_owned())
}

fn free_text(field: &'static str, value: &str) -> Result<String, DomainError> {
    let value = one_line(value);
    if value.is_empty() {
        return Err(DomainError::invalid(field, "must not be blank"));
    }
    Ok(value)
}

/// How a file changed, as the change manifest records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    /// The word the seed's manifest uses.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "CREATED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_uppercase().as_str() {
            "CREATED" | "ADDED" | "NEW" => Some(ChangeKind::Added),
            "MODIFIED" | "CHANGED" => Some(ChangeKind::Modified),
            "DELETED" | "REMOVED" => Some(ChangeKind::Deleted),
            _ => None,
        }
    }

    /// What a file that was `self` earlier in the iteration is after `next`. `None` means the
    /// two cancel out: a file created and then deleted again never existed as far as the
    /// iteration's net change is concerned.
    fn then(self, next: ChangeKind) -> Option<ChangeKind> {
        use ChangeKind::*;
        match (self, next) {
            (Added, Deleted) => None,
            (Added, _) => Some(Added),
            (Deleted, Added) => Some(Modified),
            (_, next) => Some(next),
        }
    }
}

/// One reported change to a project file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub kind: ChangeKind,
    pub lines_added: u32,
    pub lines_removed: u32,
}

/// The net change to one file in the current iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    pub path: String,
    pub kind: ChangeKind,
    pub lines_added: u64,
    pub lines_removed: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixAttempt {
    pub step: String,
    /// 1 or 2.
    pub attempt: u32,
    pub note: String,
}

/// One line of the transition history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionRecord {
    pub from: PlanState,
    pub to: PlanState,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastTransition {
    pub from: PlanState,
    pub to: PlanState,
    pub at: Timestamp,
}

/// An area that hit the 3-strike rule; while one exists the plan can only head for RE-PLAN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForcedReplan {
    pub area: String,
    pub strikes: u32,
}

/// What the 3-strike counter says after a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrikeVerdict {
    /// Counted; the area may fail `strikes_left - 1` more times before RE-PLAN is forced.
    Counted {
        area: String,
        strikes: u32,
        strikes_left: u32,
    },
    /// The approach to this area is wrong. From now on the plan only moves EXECUTE → REFLECT →
    /// RE-PLAN; fix attempts and every other transition are refused until RE-PLAN is entered.
    ReplanForced { area: String, strikes: u32 },
}

impl StrikeVerdict {
    pub fn area(&self) -> &str {
        match self {
            StrikeVerdict::Counted { area, .. } | StrikeVerdict::ReplanForced { area, .. } => area,
        }
    }

    pub fn strikes(&self) -> u32 {
        match self {
            StrikeVerdict::Counted { strikes, .. }
            | StrikeVerdict::ReplanForced { strikes, .. } => *strikes,
        }
    }

    pub fn replan_forced(&self) -> bool {
        matches!(self, StrikeVerdict::ReplanForced { .. })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixAttemptOutcome {
    pub step: String,
    pub attempt: u32,
    /// Fix attempts still allowed on this step; 0 means the next failure ends in REFLECT.
    pub remaining: u32,
}

/// A complexity-budget limit that the current iteration exceeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetOverrun {
    FilesAdded { count: u32, max: u32 },
    NewAbstractions { count: u32, max: u32 },
    NetLines { net: i64, target: i64 },
}

impl fmt::Display for BudgetOverrun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetOverrun::FilesAdded { count, max } => write!(f, "files added {count}/{max} max"),
            BudgetOverrun::NewAbstractions { count, max } => {
                write!(f, "new abstractions {count}/{max} max")
            }
            BudgetOverrun::NetLines { net, target } => {
                write!(f, "net lines {net:+} (target {target})")
            }
        }
    }
}

/// The complexity budget of the current iteration (plan version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetReport {
    pub files_added: u32,
    pub new_abstractions: u32,
    pub lines_added: u64,
    pub lines_removed: u64,
    /// Empty when within budget. The protocol says: when anything is over, stop and REFLECT.
    pub over: Vec<BudgetOverrun>,
}

impl BudgetReport {
    pub fn net_lines(&self) -> i64 {
        i64::try_from(self.lines_added).unwrap_or(i64::MAX)
            - i64::try_from(self.lines_removed).unwrap_or(i64::MAX)
    }

    pub fn is_over(&self) -> bool {
        !self.over.is_empty()
    }
}

/// The recommendation to revert everything and start again from the first checkpoint.
///
/// Bloat is `lines added across all iterations ÷ original scope estimate`, where "lines added"
/// sums every `lines_added` ever reported (removals and reverts do not subtract: thrown-away code
/// is exactly the churn this rule measures) and the estimate is the one made in PLAN before the
/// first execution. It fires at iteration ≥ 5 with bloat strictly above 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NuclearRecommendation {
    pub iteration: u32,
    pub lines_added_total: u64,
    pub scope_estimate: u32,
}

impl NuclearRecommendation {
    pub fn bloat(&self) -> f64 {
        self.lines_added_total as f64 / f64::from(self.scope_estimate)
    }
}

impl fmt::Display for NuclearRecommendation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "iteration {} with {} lines added against an estimate of {} ({:.1}× the scope): recommend \
             reverting ALL changes to the initial checkpoint and re-planning from decisions.md alone",
            self.iteration,
            self.lines_added_total,
            self.scope_estimate,
            self.bloat()
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeOutcome {
    pub budget: BudgetReport,
    pub nuclear: Option<NuclearRecommendation>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionOutcome {
    pub from: PlanState,
    pub to: PlanState,
    pub iteration: u32,
    /// The `decisions.md` entry this transition calls for, still unnumbered.
    pub decision: Option<DecisionDraft>,
    pub nuclear: Option<NuclearRecommendation>,
}

/// Every stored field of a [`PlanRecord`], for an adapter that reads a record back
/// ([`PlanRecord::restore`]). The derived figures (budget, forced re-plan, nuclear option) are
/// not here: they are recomputed from these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRecordParts {
    pub id: PlanId,
    pub goal: String,
    pub created_at: Timestamp,
    pub state: PlanState,
    pub iteration: u32,
    pub current_step: Option<String>,
    pub fix_attempts: Vec<FixAttempt>,
    pub manifest: Vec<ManifestEntry>,
    pub abstractions: Vec<String>,
    pub strikes: BTreeMap<String, u32>,
    pub scope_estimate: Option<u32>,
    pub lines_added_total: u64,
    pub last_transition: Option<LastTransition>,
    pub history: Vec<TransitionRecord>,
}

/// One plan: its state, counters, current-iteration manifest and audit trail. This is what
/// `state.md` holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRecord {
    pub(crate) id: PlanId,
    pub(crate) goal: String,
    pub(crate) created_at: Timestamp,
    pub(crate) state: PlanState,
    pub(crate) iteration: u32,
    pub(crate) current_step: Option<String>,
    /// Current iteration only: a new plan version starts every step with a fresh leash.
    pub(crate) fix_attempts: Vec<FixAttempt>,
    /// Current iteration only, as the seed's manifest is.
    pub(crate) manifest: Vec<ManifestEntry>,
    pub(crate) abstractions: Vec<String>,
    /// Across iterations: the 3-strike rule counts repeated breakage of one area over time.
    pub(crate) strikes: BTreeMap<String, u32>,
    pub(crate) scope_estimate: Option<u32>,
    pub(crate) lines_added_total: u64,
    pub(crate) last_transition: Option<LastTransition>,
    pub(crate) history: Vec<TransitionRecord>,
}

impl PlanRecord {
    /// A fresh plan in EXPLORE, iteration 0.
    pub fn new(id: PlanId, goal: &str, created_at: Timestamp) -> Result<Self, DomainError> {
        Ok(Self {
            id,
            goal: free_text("goal", goal)?,
            created_at,
            state: PlanState::Explore,
            iteration: 0,
            current_step: None,
            fix_attempts: Vec::new(),
            manifest: Vec::new(),
            abstractions: Vec::new(),
            strikes: BTreeMap::new(),
            scope_estimate: None,
            lines_added_total: 0,
            last_transition: None,
            history: Vec::new(),
        })
    }

    /// A record as an adapter stored it. The counters are taken as read, not re-validated: a
    /// hand-edited file may hold any values, and the rules apply to what happens next.
    pub fn restore(parts: PlanRecordParts) -> Self {
        let PlanRecordParts {
            id,
            goal,
            created_at,
            state,
            iteration,
            current_step,
            fix_attempts,
            manifest,
            abstractions,
            strikes,
            scope_estimate,
            lines_added_total,
            last_transition,
            history,
        } = parts;
        Self {
            id,
            goal,
            created_at,
            state,
            iteration,
            current_step,
            fix_attempts,
            manifest,
            abstractions,
            strikes,
            scope_estimate,
            lines_added_total,
            last_transition,
            history,
        }
    }

    pub fn id(&self) -> &PlanId {
        &self.id
    }
    pub fn goal(&self) -> &str {
        &self.goal
    }
    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }
    pub fn state(&self) -> PlanState {
        self.state
    }
    /// How many times PLAN → EXECUTE has happened.
    pub fn iteration(&self) -> u32 {
        self.iteration
    }
    pub fn current_step(&self) -> Option<&str> {
        self.current_step.as_deref()
    }
    pub fn fix_attempts(&self) -> &[FixAttempt] {
        &self.fix_attempts
    }
    pub fn fix_attempts_on(&self, step: &str) -> u32 {
        let step = step.trim();
        self.fix_attempts.iter().filter(|a| a.step == step).count() as u32
    }
    pub fn manifest(&self) -> &[ManifestEntry] {
        &self.manifest
    }
    pub fn abstractions(&self) -> &[String] {
        &self.abstractions
    }
    pub fn strikes(&self) -> &BTreeMap<String, u32> {
        &self.strikes
    }
    pub fn strikes_on(&self, area: &str) -> u32 {
        self.strikes.get(area.trim()).copied().unwrap_or(0)
    }
    pub fn scope_estimate(&self) -> Option<u32> {
        self.scope_estimate
    }
    pub fn lines_added_total(&self) -> u64 {
        self.lines_added_total
    }
    pub fn last_transition(&self) -> Option<&LastTransition> {
        self.last_transition.as_ref()
    }
    pub fn history(&self) -> &[TransitionRecord] {
        &self.history
    }

    /// The area that forces RE-PLAN, if any (the one with most strikes, ties by name). Derived
    /// from the strike counters rather than stored, so it cannot disagree with them.
    pub fn forced_replan(&self) -> Option<ForcedReplan> {
        self.strikes
            .iter()
            .filter(|(_, n)| **n >= STRIKES_TO_REPLAN)
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(area, strikes)| ForcedReplan {
                area: area.clone(),
                strikes: *strikes,
            })
    }

    /// Where the plan may go next, with the 3-strike rule applied on top of the table.
    pub fn allowed_targets_now(&self) -> Vec<PlanState> {
        match (self.state, self.forced_replan()) {
            (PlanState::Reflect, Some(_)) => vec![PlanState::RePlan],
            (state, _) => state.allowed_targets(),
        }
    }

    fn require_state(
        &self,
        action: &'static str,
        allowed_in: &[PlanState],
    ) -> Result<(), PlanError> {
        if allowed_in.contains(&self.state) {
            return Ok(());
        }
        Err(PlanError::WrongState {
            plan: self.id.clone(),
            action,
            state: self.state,
            allowed_in: allowed_in.to_vec(),
        })
    }

    /// Moves the plan along one row of the table. PLAN → EXECUTE needs `approval` and starts a
    /// new iteration (fresh leash, manifest and abstraction count). Entering RE-PLAN honours a
    /// forced re-plan by resetting the areas that struck out: the new approach gets a clean slate.
    pub fn transition(
        &mut self,
        to: PlanState,
        reason: &str,
        approval: Option<&UserApproval>,
        at: Timestamp,
    ) -> Result<TransitionOutcome, DomainError> {
        let from = self.state;
        let Some(rule) = from.rule_to(to) else {
            return Err(PlanError::IllegalTransition {
                plan: self.id.clone(),
                from,
                to,
                allowed: from.allowed_targets(),
            }
            .into());
        };
        let forced = self.forced_replan();
        if let Some(forced) = &forced
            && !self.allowed_targets_now().contains(&to)
        {
            return Err(PlanError::ReplanForced {
                plan: self.id.clone(),
                from,
                to,
                area: forced.area.clone(),
                strikes: forced.strikes,
                allowed: self.allowed_targets_now(),
            }
            .into());
        }
        let approval = match (rule.needs_approval, approval) {
            (true, None) => {
                return Err(PlanError::ApprovalMissing {
                    plan: self.id.clone(),
                    from,
                    to,
                }
                .into());
            }
            (true, Some(approval)) => Some(approval),
            (false, _) => None,
        };
        let reason = free_text("reason", reason)?;

        let mut body = format!("**Reason**: {reason}");
        if let Some(approval) = approval {
            body.push_str(&format!("\n**Approved by user**: {}", approval.statement()));
        }
        match to {
            PlanState::Execute => {
                self.iteration += 1;
                self.fix_attempts.clear();
                self.manifest.clear();
                self.abstractions.clear();
                self.current_step = None;
            }
            PlanState::Plan => self.current_step = None,
            PlanState::RePlan => {
                if let Some(forced) = &forced {
                    body.push_str(&format!(
                        "\n**3-STRIKE TRIGGERED** on `{}` ({} failures): the new plan must use a \
                         fundamentally different approach for it",
                        forced.area, forced.strikes
                    ));
                }
                self.strikes.retain(|_, n| *n < STRIKES_TO_REPLAN);
            }
            _ => {}
        }
        self.state = to;
        self.history.push(TransitionRecord { from, to, reason });
        self.last_transition = Some(LastTransition { from, to, at });
        let decision = rule.logs_decision.then(|| DecisionDraft {
            from,
            to,
            date: at.date_naive(),
            body,
        });
        Ok(TransitionOutcome {
            from,
            to,
            iteration: self.iteration,
            decision,
            nuclear: self.nuclear_check(),
        })
    }

    /// Marks which plan step EXECUTE is working on.
    pub fn set_step(&mut self, step: &str) -> Result<(), DomainError> {
        self.require_state("set the current plan step", &[PlanState::Execute])?;
        self.current_step = Some(step_label(step)?);
        Ok(())
    }

    /// Counts one autonomous fix attempt on `step` (which becomes the current step). The third
    /// is refused: the leash says stop, REFLECT, and ask the user.
    pub fn record_fix_attempt(
        &mut self,
        step: &str,
        note: &str,
    ) -> Result<FixAttemptOutcome, DomainError> {
        self.require_state("record a fix attempt", &[PlanState::Execute])?;
        let step = step_label(step)?;
        let note = free_text("note", note)?;
        if let Some(forced) = self.forced_replan() {
            return Err(PlanError::FixBlockedByStrikes {
                plan: self.id.clone(),
                step,
                area: forced.area,
                strikes: forced.strikes,
            }
            .into());
        }
        let done = self.fix_attempts_on(&step);
        if done >= MAX_FIX_ATTEMPTS {
            return Err(PlanError::FixAttemptsExhausted {
                plan: self.id.clone(),
                step,
                attempts: done,
            }
            .into());
        }
        let attempt = done + 1;
        self.fix_attempts.push(FixAttempt {
            step: step.clone(),
            attempt,
            note,
        });
        self.current_step = Some(step.clone());
        Ok(FixAttemptOutcome {
            step,
            attempt,
            remaining: MAX_FIX_ATTEMPTS - attempt,
        })
    }

    /// Counts a failure of `area` (a file, module or subsystem). The third failure of one area
    /// forces RE-PLAN.
    pub fn record_failure(&mut self, area: &str) -> Result<StrikeVerdict, DomainError> {
        self.require_state(
            "record a failure",
            &[PlanState::Execute, PlanState::Reflect],
        )?;
        let area = label("area", area)?;
        let strikes = self.strikes.entry(area.clone()).or_insert(0);
        *strikes += 1;
        let strikes = *strikes;
        Ok(if strikes >= STRIKES_TO_REPLAN {
            StrikeVerdict::ReplanForced { area, strikes }
        } else {
            StrikeVerdict::Counted {
                area,
                strikes,
                strikes_left: STRIKES_TO_REPLAN - strikes,
            }
        })
    }

    /// Adds a change to the manifest and the budget, and reports both.
    pub fn record_change(&mut self, change: &Change) -> Result<ChangeOutcome, DomainError> {
        self.require_state("record a change", &[PlanState::Execute])?;
        let path = label("path", &change.path)?;
        match self.manifest.iter().position(|e| e.path == path) {
            Some(i) => match self.manifest[i].kind.then(change.kind) {
                None => {
                    self.manifest.remove(i);
                }
                Some(kind) => {
                    let entry = &mut self.manifest[i];
                    entry.kind = kind;
                    entry.lines_added += u64::from(change.lines_added);
                    entry.lines_removed += u64::from(change.lines_removed);
                }
            },
            None => self.manifest.push(ManifestEntry {
                path,
                kind: change.kind,
                lines_added: u64::from(change.lines_added),
                lines_removed: u64::from(change.lines_removed),
            }),
        }
        self.lines_added_total += u64::from(change.lines_added);
        Ok(ChangeOutcome {
            budget: self.budget(),
            nuclear: self.nuclear_check(),
        })
    }

    /// Counts a new class, module or interface introduced in this iteration. Naming the same
    /// abstraction twice counts it once.
    pub fn record_abstraction(&mut self, name: &str) -> Result<BudgetReport, DomainError> {
        self.require_state("record a new abstraction", &[PlanState::Execute])?;
        let name = label("abstraction", name)?;
        if !self.abstractions.contains(&name) {
            self.abstractions.push(name);
        }
        Ok(self.budget())
    }

    /// Records how many lines the task is expected to change. Only in PLAN and only before the
    /// first execution: the nuclear option compares against the ORIGINAL estimate, and letting it
    /// move later would let a bloated plan talk its way out of the check.
    pub fn estimate_scope(&mut self, lines: u32) -> Result<(), DomainError> {
        self.require_state("estimate the scope", &[PlanState::Plan])?;
        if self.iteration > 0 {
            return Err(PlanError::ScopeEstimateFrozen {
                plan: self.id.clone(),
                iteration: self.iteration,
            }
            .into());
        }
        if lines == 0 {
            return Err(DomainError::invalid(
                "scope",
                "the estimate must be at least one line",
            ));
        }
        self.scope_estimate = Some(lines);
        Ok(())
    }

    pub fn budget(&self) -> BudgetReport {
        let files_added = self
            .manifest
            .iter()
            .filter(|e| e.kind == ChangeKind::Added)
            .count() as u32;
        let new_abstractions = self.abstractions.len() as u32;
        let lines_added = self.manifest.iter().map(|e| e.lines_added).sum();
        let lines_removed = self.manifest.iter().map(|e| e.lines_removed).sum();
        let mut report = BudgetReport {
            files_added,
            new_abstractions,
            lines_added,
            lines_removed,
            over: Vec::new(),
        };
        if files_added > MAX_FILES_ADDED {
            report.over.push(BudgetOverrun::FilesAdded {
                count: files_added,
                max: MAX_FILES_ADDED,
            });
        }
        if new_abstractions > MAX_NEW_ABSTRACTIONS {
            report.over.push(BudgetOverrun::NewAbstractions {
                count: new_abstractions,
                max: MAX_NEW_ABSTRACTIONS,
            });
        }
        let net = report.net_lines();
        if net > NET_LINES_TARGET {
            report.over.push(BudgetOverrun::NetLines {
                net,
                target: NET_LINES_TARGET,
            });
        }
        report
    }

    /// See [`NuclearRecommendation`] for the exact rule. Without a scope estimate there is
    /// nothing to measure bloat against, so no recommendation is made.
    pub fn nuclear_check(&self) -> Option<NuclearRecommendation> {
        let estimate = self.scope_estimate?;
        (self.iteration >= NUCLEAR_ITERATION
            && self.lines_added_total > NUCLEAR_BLOAT_FACTOR * u64::from(estimate))
        .then_some(NuclearRecommendation {
            iteration: self.iteration,
            lines_added_total: self.lines_added_total,
            scope_estimate: estimate,
        })
    }
}

/// `N/A` is how `state.md` writes "no current step", so it cannot also be a step's name.
fn step_label(step: &str) -> Result<String, DomainError> {
    let step = label("step", step)?;
    if step.eq_ignore_ascii_case("n/a") {
        return Err(DomainError::invalid(
            "step",
            "`N/A` means no step; name the plan step",
        ));
    }
    Ok(step)
}
