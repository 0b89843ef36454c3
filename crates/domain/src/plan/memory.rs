//! The in-memory adapter of [`PlanStore`], for tests. It honours the same contract as the
//! filesystem adapter; one mutex makes every operation a critical section.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;

use super::decision::{Decision, DecisionDraft};
use super::document::PlanDocument;
use super::error::PlanError;
use super::id::PlanId;
use super::record::PlanRecord;
use super::state::PlanState;
use super::store::{Finding, PlanMutation, PlanStore, PlanSummary};
use crate::{Entity, Error, StoreError};

#[derive(Debug)]
struct StoredPlan {
    record: PlanRecord,
    decisions: Vec<Decision>,
    documents: HashMap<PlanDocument, String>,
    /// The detail files under `findings/`, by name.
    finding_files: BTreeMap<String, String>,
    /// Name, record and plan document of each checkpoint, oldest first.
    checkpoints: Vec<(String, PlanRecord, Option<String>)>,
}

#[derive(Debug, Default)]
struct Inner {
    pointer: Option<PlanId>,
    plans: BTreeMap<PlanId, StoredPlan>,
}

#[derive(Debug, Default)]
pub struct MemoryPlanStore {
    inner: Mutex<Inner>,
}

impl MemoryPlanStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic in another test thread must not make every later call fail too.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn not_found(id: &PlanId) -> StoreError {
    StoreError::not_found(Entity::Plan, id)
}

fn append(decisions: &mut Vec<Decision>, draft: DecisionDraft) -> Decision {
    let number = decisions.iter().map(|d| d.number).max().unwrap_or(0) + 1;
    let decision = draft.numbered(number);
    decisions.push(decision.clone());
    decision
}

#[async_trait]
impl PlanStore for MemoryPlanStore {
    async fn current(&self) -> Result<Option<PlanId>, StoreError> {
        Ok(self.lock().pointer.clone())
    }

    async fn set_current(&self, id: &PlanId) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if !inner.plans.contains_key(id) {
            return Err(not_found(id));
        }
        inner.pointer = Some(id.clone());
        Ok(())
    }

    async fn clear_current(&self) -> Result<Option<PlanId>, StoreError> {
        Ok(self.lock().pointer.take())
    }

    async fn create(&self, plan: &PlanRecord, force: bool) -> Result<Option<PlanId>, Error> {
        let mut inner = self.lock();
        let previous = inner
            .pointer
            .clone()
            .filter(|id| inner.plans.contains_key(id));
        if let Some(current) = &previous
            && !force
            && inner.plans[current].record.state() != PlanState::Close
        {
            return Err(PlanError::ActivePlanExists {
                current: current.clone(),
            }
            .into());
        }
        if inner.plans.contains_key(plan.id()) {
            return Err(StoreError::AlreadyExists {
                entity: Entity::Plan,
                id: plan.id().to_string(),
            }
            .into());
        }
        // The templates are a file format (the filesystem adapter's); here a created document
        // starts empty and holds whatever the agent would write.
        let documents = PlanDocument::CREATED
            .iter()
            .map(|doc| (*doc, String::new()))
            .collect();
        inner.plans.insert(
            plan.id().clone(),
            StoredPlan {
                record: plan.clone(),
                decisions: Vec::new(),
                documents,
                finding_files: BTreeMap::new(),
                checkpoints: Vec::new(),
            },
        );
        inner.pointer = Some(plan.id().clone());
        Ok(previous)
    }

    async fn load(&self, id: &PlanId) -> Result<PlanRecord, StoreError> {
        self.lock()
            .plans
            .get(id)
            .map(|p| p.record.clone())
            .ok_or_else(|| not_found(id))
    }

    async fn transact(
        &self,
        id: &PlanId,
        mutation: PlanMutation<'_>,
    ) -> Result<(PlanRecord, Vec<Decision>), Error> {
        let mut inner = self.lock();
        let stored = inner.plans.get_mut(id).ok_or_else(|| not_found(id))?;
        let mut record = stored.record.clone();
        let drafts = mutation(&mut record)?;
        let appended = drafts
            .into_iter()
            .map(|draft| append(&mut stored.decisions, draft))
            .collect();
        stored.record = record.clone();
        Ok((record, appended))
    }

    async fn append_decision(
        &self,
        id: &PlanId,
        draft: DecisionDraft,
    ) -> Result<Decision, StoreError> {
        let mut inner = self.lock();
        let stored = inner.plans.get_mut(id).ok_or_else(|| not_found(id))?;
        Ok(append(&mut stored.decisions, draft))
    }

    async fn decisions(&self, id: &PlanId) -> Result<Vec<Decision>, StoreError> {
        self.lock()
            .plans
            .get(id)
            .map(|p| p.decisions.clone())
            .ok_or_else(|| not_found(id))
    }

    async fn read_document(
        &self,
        id: &PlanId,
        document: PlanDocument,
    ) -> Result<String, StoreError> {
        let inner = self.lock();
        let stored = inner.plans.get(id).ok_or_else(|| not_found(id))?;
        stored.documents.get(&document).cloned().ok_or_else(|| {
            StoreError::not_found(
                Entity::PlanDocument,
                format!("{id}/{}", document.file_name()),
            )
        })
    }

    async fn list(&self) -> Result<Vec<PlanSummary>, StoreError> {
        let inner = self.lock();
        Ok(inner
            .plans
            .values()
            .map(|p| PlanSummary {
                id: p.record.id().clone(),
                state: p.record.state(),
                iteration: p.record.iteration(),
                goal: p.record.goal().to_owned(),
                current: inner.pointer.as_ref() == Some(p.record.id()),
                damaged: None,
            })
            .collect())
    }

    async fn write_checkpoint(&self, id: &PlanId, label: &str) -> Result<String, StoreError> {
        let mut inner = self.lock();
        let stored = inner.plans.get_mut(id).ok_or_else(|| not_found(id))?;
        let name = format!("{:03}-{label}", stored.checkpoints.len() + 1);
        let plan = stored.documents.get(&PlanDocument::Plan).cloned();
        stored
            .checkpoints
            .push((name.clone(), stored.record.clone(), plan));
        Ok(name)
    }

    async fn checkpoints(&self, id: &PlanId) -> Result<Vec<String>, StoreError> {
        let inner = self.lock();
        let stored = inner.plans.get(id).ok_or_else(|| not_found(id))?;
        Ok(stored.checkpoints.iter().map(|c| c.0.clone()).collect())
    }

    async fn append_finding(&self, id: &PlanId, finding: &Finding) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let stored = inner.plans.get_mut(id).ok_or_else(|| not_found(id))?;
        // Values, not the file format: one line per finding, naming its details file if any.
        let line = match finding.file() {
            Some(file) => {
                let details = stored.finding_files.entry(file.to_owned()).or_default();
                details.push_str(finding.text());
                details.push('\n');
                format!("{file}: {}\n", finding.text())
            }
            None => format!("{}\n", finding.text()),
        };
        stored
            .documents
            .entry(PlanDocument::Findings)
            .or_default()
            .push_str(&line);
        Ok(())
    }
}
