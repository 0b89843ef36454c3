//! What a resumed orchestrator needs to know first.

use super::model::{
    ErrorRecord, PhaseId, PhaseStatus, Session, SessionId, SessionStatus, WorkflowMode,
};
use super::phase::MAX_RETRIES;
use super::session::normalise_path;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseRef {
    pub id: PhaseId,
    pub name: String,
    pub status: PhaseStatus,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FailedPhase {
    pub phase: PhaseRef,
    pub retry_count: u32,
    /// 0 means the next step is the user's, not another retry.
    pub retries_left: u32,
    pub unresolved: Vec<UnresolvedError>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UnresolvedError {
    pub phase: PhaseId,
    /// The error's position in the phase's list, as `resolve_error` takes it.
    pub index: usize,
    pub error: ErrorRecord,
}

impl UnresolvedError {
    /// How users name the error: see [`error_id`].
    pub fn id(&self) -> String {
        error_id(self.phase, self.index)
    }
}

/// `PHASE.N`, N counted from 1 in recording order: how an error is named to users (the index
/// `resolve_error` takes is N - 1).
pub fn error_id(phase: PhaseId, index: usize) -> String {
    format!("{phase}.{}", index + 1)
}

/// The phase and 0-based index of an [`error_id`]; `None` when `text` is not one.
pub fn parse_error_id(text: &str) -> Option<(PhaseId, usize)> {
    let (phase, n) = text.trim().split_once('.')?;
    let n: usize = n.parse().ok()?;
    Some((phase.parse().ok()?, n.checked_sub(1)?))
}

#[derive(Debug, Clone, PartialEq)]
pub struct ResumeSummary {
    pub session_id: SessionId,
    pub status: SessionStatus,
    pub workflow_mode: WorkflowMode,
    /// The highest-numbered completed phase.
    pub last_completed: Option<PhaseRef>,
    /// The first phase in progress or pending.
    pub current: Option<PhaseRef>,
    /// Phases in progress: an agent was interrupted, their files may be half written.
    pub interrupted: Vec<PhaseRef>,
    /// Every failed phase, each with its errors still open.
    pub failed: Vec<FailedPhase>,
    /// Every open error, in phase order.
    pub unresolved_errors: Vec<UnresolvedError>,
    /// Changed paths no phase's manifest mentions (the design and plan documents excluded).
    pub outside_manifest: Vec<String>,
    /// The implementation plan is among the changed paths: it changed since execution began.
    pub implementation_plan_changed: bool,
}

/// Summarises `session` for resumption. `changed_paths` are the paths the caller saw change
/// (from version control, say), in the same form as the manifests record them; the caller leaves
/// out the state directory's own files.
pub fn resume_summary(session: &Session, changed_paths: &[String]) -> ResumeSummary {
    let phases = &session.state.phases;
    let reference = |p: &super::model::Phase| PhaseRef {
        id: p.id,
        name: p.name.clone(),
        status: p.status,
    };
    let unresolved_of = |p: &super::model::Phase| -> Vec<UnresolvedError> {
        p.errors
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.resolved)
            .map(|(index, error)| UnresolvedError {
                phase: p.id,
                index,
                error: error.clone(),
            })
            .collect()
    };
    let plan = session
        .state
        .implementation_plan
        .as_deref()
        .map(normalise_path);
    let design = session.state.design_document.as_deref().map(normalise_path);
    let mut outside_manifest: Vec<String> = Vec::new();
    let mut implementation_plan_changed = false;
    for path in changed_paths
        .iter()
        .map(|p| normalise_path(p))
        .filter(|p| !p.is_empty())
    {
        if plan.as_deref() == Some(path.as_str()) {
            implementation_plan_changed = true;
        } else if design.as_deref() != Some(path.as_str())
            && !phases.iter().any(|p| p.manifest_contains(&path))
            && !outside_manifest.contains(&path)
        {
            outside_manifest.push(path);
        }
    }
    ResumeSummary {
        session_id: session.id().clone(),
        status: session.state.status,
        workflow_mode: session.state.workflow_mode,
        last_completed: phases
            .iter()
            .filter(|p| p.status == PhaseStatus::Completed)
            .max_by_key(|p| p.id)
            .map(reference),
        current: phases
            .iter()
            .find(|p| matches!(p.status, PhaseStatus::InProgress | PhaseStatus::Pending))
            .map(reference),
        interrupted: phases
            .iter()
            .filter(|p| p.status == PhaseStatus::InProgress)
            .map(reference)
            .collect(),
        failed: phases
            .iter()
            .filter(|p| p.status == PhaseStatus::Failed)
            .map(|p| FailedPhase {
                phase: reference(p),
                retry_count: p.retry_count,
                retries_left: MAX_RETRIES.saturating_sub(p.retry_count),
                unresolved: unresolved_of(p),
            })
            .collect(),
        unresolved_errors: phases.iter().flat_map(unresolved_of).collect(),
        outside_manifest,
        implementation_plan_changed,
    }
}
