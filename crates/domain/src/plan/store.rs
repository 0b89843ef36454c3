//! The Storage port of plans.

use async_trait::async_trait;

use super::decision::{Decision, DecisionDraft};
use super::document::PlanDocument;
use super::id::PlanId;
use super::record::PlanRecord;
use super::state::PlanState;
use crate::{DomainError, Error, StoreError};

/// A change to one plan, run by the store inside its critical section on the freshly read
/// record. It returns the decisions to append in the same critical section. If it returns an
/// error, nothing is written — neither the record nor any decision — and the store returns that
/// error as [`Error::Domain`].
pub type PlanMutation<'a> =
    Box<dyn FnOnce(&mut PlanRecord) -> Result<Vec<DecisionDraft>, DomainError> + Send + 'a>;

/// One line of a plan listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanSummary {
    pub id: PlanId,
    pub state: PlanState,
    pub iteration: u32,
    pub goal: String,
    /// Whether `.claude/.current_plan` names this plan.
    pub current: bool,
    /// Why the plan's record could not be read, when it could not. A listing still lists a
    /// damaged plan (the others stay reachable, and the damage is visible where people look);
    /// `state`, `iteration` and `goal` then hold placeholders (EXPLORE, 0, empty) and mean
    /// nothing.
    pub damaged: Option<String>,
}

/// A fact learned while exploring, for `findings.md`; with `file`, its details go to
/// `findings/<file>` and `findings.md` indexes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    text: String,
    file: Option<String>,
}

impl Finding {
    /// `text` becomes one line; `file` must be a plain file name (letters, digits, `.`, `-`,
    /// `_`, not starting with `.`), so that it stays inside `findings/`.
    pub fn new(text: &str, file: Option<&str>) -> Result<Self, DomainError> {
        let text = super::record::one_line(text);
        if text.is_empty() {
            return Err(DomainError::invalid("finding", "must not be blank"));
        }
        let file = match file.map(str::trim) {
            None => None,
            Some(name) => {
                let plain = !name.is_empty()
                    && !name.starts_with('.')
                    && name.len() <= 100
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
                if !plain {
                    return Err(DomainError::invalid(
                        "file",
                        format!(
                            "`{name}` is not a plain file name (letters, digits, `.`, `-`, `_`; \
                             not starting with `.`); it names a file inside findings/"
                        ),
                    ));
                }
                Some(name.to_owned())
            }
        };
        Ok(Self { text, file })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }
}

/// Persistence of plans: one directory per plan (`state.md`, `decisions.md`, `plan.md`,
/// `findings.md`, `progress.md`, `findings/`, `checkpoints/`) and the `.claude/.current_plan`
/// pointer. A plan is *active* when the pointer names it, it exists and it is not in CLOSE.
///
/// Adapters must serialise every read-modify-write of one plan (and of the pointer) so that no
/// update is lost and decision numbers are never shared — across processes too, for adapters
/// that several processes use at once (the filesystem adapter).
#[async_trait]
pub trait PlanStore: std::fmt::Debug + Send + Sync {
    /// Reads the pointer. `Ok(None)` when there is none. The id is returned even when no such
    /// plan exists (a dangling pointer is for the caller to interpret). A pointer whose content
    /// is not exactly one plan id (one trailing line ending tolerated) is `StoreError::Corrupt`
    /// naming the pointer file.
    async fn current(&self) -> Result<Option<PlanId>, StoreError>;

    /// Points the pointer at `id`. `StoreError::NotFound` (entity `Plan`) if there is no such
    /// plan; the pointer is then unchanged.
    async fn set_current(&self, id: &PlanId) -> Result<(), StoreError>;

    /// Removes the pointer and returns what it named (`None` if there was no pointer). The plan
    /// itself is kept. Idempotent.
    async fn clear_current(&self) -> Result<Option<PlanId>, StoreError>;

    /// Creates the plan directory of `plan` with all its files — the record, an empty decision
    /// log, and each of [`PlanDocument::CREATED`] (on disk: `state.md`, `decisions.md` with only
    /// its header, the templates filled with the goal) — and points the pointer at it, all in one
    /// critical section. Refuses with `Error::Domain(PlanError::ActivePlanExists)` when the
    /// pointer names an active plan, unless `force`; a dangling pointer or one naming a closed
    /// plan is simply replaced. `StoreError::AlreadyExists` if a plan with this id exists.
    /// Nothing is written when it refuses. Returns the id the pointer named before, if it named
    /// an existing plan. `AfterCommit` when the plan directory was written but the pointer
    /// could not be moved to it.
    async fn create(&self, plan: &PlanRecord, force: bool) -> Result<Option<PlanId>, Error>;

    /// Reads one plan's record. `StoreError::NotFound` (entity `Plan`) if there is no such plan.
    async fn load(&self, id: &PlanId) -> Result<PlanRecord, StoreError>;

    /// Reads the record, runs `mutation` on it and, if it succeeds, writes the record and
    /// appends the decisions it returned, numbered on from the highest number in the log, all
    /// under one lock. Returns the record as written and the appended decisions. On a refused
    /// mutation nothing changes. `StoreError::NotFound` if there is no such plan;
    /// `StoreError::AfterCommit` when the record was written but a decision could not be
    /// appended (the transition happened: do not take it again).
    async fn transact(
        &self,
        id: &PlanId,
        mutation: PlanMutation<'_>,
    ) -> Result<(PlanRecord, Vec<Decision>), Error>;

    /// Appends one decision, numbered one above the highest number in the log (so numbering is
    /// strictly increasing even with concurrent writers), and returns it numbered.
    /// `StoreError::NotFound` if there is no such plan.
    async fn append_decision(
        &self,
        id: &PlanId,
        draft: DecisionDraft,
    ) -> Result<Decision, StoreError>;

    /// Every readable decision of the plan, in file order. `StoreError::NotFound` if there is
    /// no such plan.
    async fn decisions(&self, id: &PlanId) -> Result<Vec<Decision>, StoreError>;

    /// The current text of one of the plan's documents. `StoreError::NotFound` if there is no
    /// such plan (entity `Plan`) or the document does not exist yet (entity `PlanDocument`, id
    /// `<plan>/<file>`).
    async fn read_document(
        &self,
        id: &PlanId,
        document: PlanDocument,
    ) -> Result<String, StoreError>;

    /// Every plan, oldest first (ids sort by creation date), with `current` set on the one the
    /// pointer names. A plan whose record cannot be read is listed with `damaged` set rather
    /// than failing the whole listing. Errors: `Io` (the plans cannot be enumerated).
    async fn list(&self) -> Result<Vec<PlanSummary>, StoreError>;

    /// Snapshots the plan's record and plan document as they are now, under a new checkpoint
    /// named `NNN-<label>` (numbers rise by one per plan and are never shared), and returns the
    /// name. `label` is a short slug chosen by the caller (`[a-z0-9-]`). `StoreError::NotFound`
    /// if there is no such plan.
    async fn write_checkpoint(&self, id: &PlanId, label: &str) -> Result<String, StoreError>;

    /// The names of the plan's checkpoints, oldest first. `StoreError::NotFound` if there is no
    /// such plan.
    async fn checkpoints(&self, id: &PlanId) -> Result<Vec<String>, StoreError>;

    /// Appends a finding to the plan's findings (and its details file, when it names one).
    /// `StoreError::NotFound` if there is no such plan.
    async fn append_finding(&self, id: &PlanId, finding: &Finding) -> Result<(), StoreError>;
}

impl<'s> dyn PlanStore + 's {
    /// [`PlanStore::transact`] for a mutation that also computes a value (the outcome of a
    /// transition, say): returns the record as written, the appended decisions and that value.
    pub async fn transact_with<T: Send>(
        &self,
        id: &PlanId,
        mutation: impl FnOnce(&mut PlanRecord) -> Result<(T, Vec<DecisionDraft>), DomainError> + Send,
    ) -> Result<(PlanRecord, Vec<Decision>, T), Error> {
        let mut value = None;
        let slot = &mut value;
        let (plan, decisions) = self
            .transact(
                id,
                Box::new(move |plan| {
                    let (out, drafts) = mutation(plan)?;
                    *slot = Some(out);
                    Ok(drafts)
                }),
            )
            .await?;
        Ok((plan, decisions, crate::ports::ran(value)))
    }
}
