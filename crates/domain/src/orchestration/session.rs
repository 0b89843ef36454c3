//! The rules every change to a session follows.
//!
//! Each operation validates everything first and only then mutates, so a refused operation
//! leaves the session exactly as it was. Each successful operation ends in [`Session::touch`],
//! which keeps `updated`, `current_phase` and the session `status` derived from the phases.

use serde_json::Map;

use super::error::OrchestrationError;
use super::log::{LogEntry, PhaseReport};
use super::model::{
    DownstreamContext, ErrorKind, ErrorRecord, PENDING_RESOLUTION, Phase, PhaseId, PhaseStatus,
    Session, SessionId, SessionState, SessionStatus, TokenCounts, TokenUsage, WorkflowMode,
};
use super::phase::{MAX_RETRIES, UserDecision, allowed_targets, is_allowed, one_line};
use crate::time::Timestamp;

/// What a new session is made from: the approved design and implementation plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// The session id the caller chose (seed 004's `create_session` takes one); `None`: the date
    /// and the topic slug.
    pub id: Option<SessionId>,
    /// The design document topic; becomes the id slug and the log title.
    pub topic: String,
    /// The user's original task description.
    pub task: String,
    pub workflow_mode: WorkflowMode,
    pub design_document: Option<String>,
    pub implementation_plan: Option<String>,
    pub execution_mode: Option<String>,
    pub execution_backend: Option<String>,
    pub task_complexity: Option<String>,
    /// In plan order; phase ids are the ones given, or 1, 2, … from this order.
    pub phases: Vec<NewPhase>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPhase {
    /// The id the caller chose; either every phase has one or none does.
    pub id: Option<PhaseId>,
    pub name: String,
    pub agents: Vec<String>,
    pub parallel: bool,
    /// Ids of earlier phases that must be completed or skipped first.
    pub blocked_by: Vec<PhaseId>,
    /// The files the plan expects the phase to touch (kept as the seed's `planned_files`).
    pub files: Vec<String>,
}

/// An error reported when a phase fails; the timestamp comes from the clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewError {
    pub agent: String,
    pub kind: ErrorKind,
    pub message: String,
}

/// What the front matter calls the files a phase's plan expects it to touch (seed 004's
/// `create_session` takes them as a phase's `files`).
pub const PLANNED_FILES: &str = "planned_files";

/// Seed 004's `update_session`: the session fields an orchestrator may set; `None` leaves one
/// as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionUpdate {
    pub execution_mode: Option<String>,
    pub execution_backend: Option<String>,
    pub current_batch: Option<String>,
}

/// Seed 004's `transition_phase`: one step of an orchestration, applied as one change — the
/// phase that finished (with its manifests, downstream context and tokens) completes, and the
/// next phase or parallel batch starts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseTransition {
    /// The phase that finished (in_progress → completed, its log section appended).
    pub completed: Option<PhaseId>,
    /// Recorded on the completed phase before it completes.
    pub files: FileChanges,
    pub downstream: DownstreamContext,
    /// Shared evenly among the completed phase's agents (`unknown` when it has none).
    pub tokens: Option<TokenCounts>,
    /// The phases to start: pending ones start, failed ones are retried, ones in progress are
    /// left as they are.
    pub next: Vec<PhaseId>,
    /// The parallel batch now being dispatched.
    pub batch: Option<String>,
}

/// Paths a subagent reports having touched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileChanges {
    pub created: Vec<String>,
    pub modified: Vec<String>,
    pub deleted: Vec<String>,
}

impl Session {
    /// A fresh session: every phase pending, phase 1 current, nothing recorded yet. The id is the
    /// date of `now` (UTC) and the topic slug.
    pub fn new(spec: NewSession, now: Timestamp) -> Result<Self, OrchestrationError> {
        let session_id = match spec.id {
            Some(id) => id,
            None => SessionId::slugify(now.date_naive(), &spec.topic)?,
        };
        let task = spec.task.trim().to_owned();
        if task.is_empty() {
            return Err(OrchestrationError::Blank { field: "task" });
        }
        if spec.phases.is_empty() {
            return Err(OrchestrationError::InvalidPhases {
                reason: "a session needs at least one phase".into(),
            });
        }
        let ids = phase_ids(&spec.phases)?;
        let mut phases: Vec<Phase> = Vec::with_capacity(spec.phases.len());
        for (new, id) in spec.phases.into_iter().zip(ids) {
            let name = one_line(&new.name);
            if name.is_empty() {
                return Err(OrchestrationError::InvalidPhases {
                    reason: format!("phase {id} has no name"),
                });
            }
            // Only earlier phases may block a later one: that keeps the graph acyclic by
            // construction and matches how an implementation plan is read.
            let mut blocked_by = Vec::new();
            for blocker in new.blocked_by {
                if !phases.iter().any(|p| p.id == blocker) {
                    let earlier = phases
                        .iter()
                        .map(|p| p.id.to_string())
                        .collect::<Vec<_>>()
                        .join(", ");
                    return Err(OrchestrationError::InvalidPhases {
                        reason: format!(
                            "phase {id} can only be blocked by earlier phases ({}), not by {blocker}",
                            if earlier.is_empty() { "none" } else { &earlier }
                        ),
                    });
                }
                if !blocked_by.contains(&blocker) {
                    blocked_by.push(blocker);
                }
            }
            let mut agents = Vec::new();
            extend_names(&mut agents, &new.agents);
            let mut extra = Map::new();
            let files: Vec<String> = new
                .files
                .iter()
                .map(|p| normalise_path(p))
                .filter(|p| !p.is_empty())
                .collect();
            if !files.is_empty() {
                extra.insert(PLANNED_FILES.to_owned(), files.into());
            }
            phases.push(Phase {
                id,
                name,
                status: PhaseStatus::Pending,
                agents,
                parallel: new.parallel,
                started: None,
                completed: None,
                blocked_by,
                files_created: Vec::new(),
                files_modified: Vec::new(),
                files_deleted: Vec::new(),
                downstream_context: DownstreamContext::default(),
                errors: Vec::new(),
                retry_count: 0,
                extra,
            });
        }
        let total_phases = u32::try_from(phases.len()).unwrap_or(u32::MAX);
        let state = SessionState {
            session_id,
            task,
            created: now,
            updated: now,
            status: SessionStatus::InProgress,
            workflow_mode: spec.workflow_mode,
            design_document: non_blank(spec.design_document),
            implementation_plan: non_blank(spec.implementation_plan),
            current_phase: phases[0].id,
            total_phases,
            execution_mode: non_blank(spec.execution_mode),
            execution_backend: non_blank(spec.execution_backend),
            current_batch: None,
            task_complexity: non_blank(spec.task_complexity),
            token_usage: TokenUsage::default(),
            phases,
            extra: Map::new(),
        };
        let log = vec![LogEntry::Title {
            topic: one_line(&spec.topic),
        }];
        Ok(Self { state, log })
    }

    /// Sets the fields `update` names; returns their names. Refused when it names none.
    pub fn update(
        &mut self,
        update: SessionUpdate,
        now: Timestamp,
    ) -> Result<Vec<&'static str>, OrchestrationError> {
        let mut updated = Vec::new();
        for (name, field, value) in [
            (
                "execution_mode",
                &mut self.state.execution_mode,
                update.execution_mode,
            ),
            (
                "execution_backend",
                &mut self.state.execution_backend,
                update.execution_backend,
            ),
            (
                "current_batch",
                &mut self.state.current_batch,
                update.current_batch,
            ),
        ] {
            if let Some(value) = value {
                *field = non_blank(Some(value));
                updated.push(name);
            }
        }
        if updated.is_empty() {
            return Err(OrchestrationError::NothingToDo {
                reason: "name at least one of execution_mode, execution_backend, current_batch"
                    .into(),
            });
        }
        self.touch(now);
        Ok(updated)
    }

    /// Applies `step` whole or not at all (see [`PhaseTransition`]); returns the ids of the
    /// phases it started.
    pub fn transition(
        &mut self,
        step: PhaseTransition,
        now: Timestamp,
    ) -> Result<Vec<PhaseId>, OrchestrationError> {
        if step.completed.is_none() && step.next.is_empty() {
            return Err(OrchestrationError::NothingToDo {
                reason: "name the phase that completed, the phases to start, or both".into(),
            });
        }
        let before = self.clone();
        let result = self.apply_transition(step, now);
        if result.is_err() {
            *self = before;
        }
        result
    }

    fn apply_transition(
        &mut self,
        step: PhaseTransition,
        now: Timestamp,
    ) -> Result<Vec<PhaseId>, OrchestrationError> {
        let mut agents = Vec::new();
        if let Some(done) = step.completed {
            let index = self.phase_index(done)?;
            // Checked before the manifests are recorded, which a completed phase would accept.
            self.check_move(index, PhaseStatus::Completed)?;
            self.record_files(done, &step.files, now)?;
            self.record_downstream(done, &step.downstream, now)?;
            self.complete_phase(done, now)?;
            self.append_phase_section(done, PhaseReport::default(), now)?;
            agents.clone_from(&self.state.phases[index].agents);
        } else if step.files != FileChanges::default()
            || step.downstream != DownstreamContext::default()
        {
            return Err(OrchestrationError::NothingToDo {
                reason: "files and downstream context belong to the phase that completed: name it"
                    .into(),
            });
        }
        if let Some(tokens) = step.tokens {
            if agents.is_empty() {
                agents.push("unknown".to_owned());
            }
            let share = u64::try_from(agents.len()).unwrap_or(1);
            for agent in &agents {
                let counts = TokenCounts {
                    input: tokens.input / share,
                    output: tokens.output / share,
                    cached: tokens.cached / share,
                };
                self.record_tokens(agent, counts, now)?;
            }
        }
        let mut started = Vec::new();
        for id in step.next {
            let index = self.phase_index(id)?;
            if self.state.phases[index].status != PhaseStatus::InProgress {
                self.start_phase(id, &[], now)?;
                started.push(id);
            }
        }
        if let Some(batch) = step.batch {
            self.state.current_batch = non_blank(Some(batch));
        }
        self.touch(now);
        Ok(started)
    }

    /// pending → in_progress, or failed → in_progress (a retry: counted, and refused once
    /// [`MAX_RETRIES`] retries have been spent). Refused while any blocker is unfinished.
    /// `agents` are added to the phase's agent list.
    pub fn start_phase(
        &mut self,
        id: PhaseId,
        agents: &[String],
        now: Timestamp,
    ) -> Result<(), OrchestrationError> {
        let index = self.phase_index(id)?;
        self.check_move(index, PhaseStatus::InProgress)?;
        let phase = &self.state.phases[index];
        let is_retry = phase.status == PhaseStatus::Failed;
        if is_retry && phase.retry_count >= MAX_RETRIES {
            return Err(OrchestrationError::RetriesExhausted {
                session: self.id().clone(),
                phase: id,
                retries: phase.retry_count,
                max: MAX_RETRIES,
            });
        }
        let blockers = self.unfinished_blockers(phase);
        if !blockers.is_empty() {
            return Err(OrchestrationError::Blocked {
                session: self.id().clone(),
                phase: id,
                blockers,
            });
        }
        let phase = &mut self.state.phases[index];
        if is_retry {
            phase.retry_count += 1;
        }
        phase.status = PhaseStatus::InProgress;
        phase.started = Some(now);
        phase.completed = None;
        extend_names(&mut phase.agents, agents);
        self.touch(now);
        Ok(())
    }

    /// failed → in_progress, and nothing else: the explicit form of a retry, for callers that want
    /// a pending phase to be an error rather than a first start.
    pub fn retry_phase(&mut self, id: PhaseId, now: Timestamp) -> Result<(), OrchestrationError> {
        let phase = &self.state.phases[self.phase_index(id)?];
        if phase.status != PhaseStatus::Failed {
            return Err(OrchestrationError::NotFailed {
                session: self.id().clone(),
                phase: id,
                status: phase.status,
            });
        }
        self.start_phase(id, &[], now)
    }

    /// in_progress → completed. The phase's errors still open are marked resolved: the phase
    /// succeeding is what resolved them (their resolution text says so unless one was recorded).
    pub fn complete_phase(
        &mut self,
        id: PhaseId,
        now: Timestamp,
    ) -> Result<(), OrchestrationError> {
        let index = self.phase_index(id)?;
        self.check_move(index, PhaseStatus::Completed)?;
        let phase = &mut self.state.phases[index];
        phase.status = PhaseStatus::Completed;
        phase.completed = Some(now);
        let attempt = phase.retry_count + 1;
        for error in phase.errors.iter_mut().filter(|e| !e.resolved) {
            error.resolved = true;
            if error.resolution.trim().is_empty()
                || error
                    .resolution
                    .trim()
                    .eq_ignore_ascii_case(PENDING_RESOLUTION)
            {
                error.resolution = format!("the phase completed on attempt {attempt}");
            }
        }
        self.touch(now);
        Ok(())
    }

    /// in_progress → failed, recording the error (unresolved, resolution `pending`).
    pub fn fail_phase(
        &mut self,
        id: PhaseId,
        error: NewError,
        now: Timestamp,
    ) -> Result<(), OrchestrationError> {
        let index = self.phase_index(id)?;
        self.check_move(index, PhaseStatus::Failed)?;
        let record = error_record(error, now)?;
        let phase = &mut self.state.phases[index];
        phase.status = PhaseStatus::Failed;
        phase.errors.push(record);
        self.touch(now);
        Ok(())
    }

    /// Records an error on a phase that ran, without moving it: the orchestrator saw something
    /// go wrong (a validation warning, a file conflict it is handling) but the phase goes on.
    /// Returns the error's 0-based index in the phase's list, as `resolve_error` takes it.
    pub fn record_error(
        &mut self,
        id: PhaseId,
        error: NewError,
        now: Timestamp,
    ) -> Result<usize, OrchestrationError> {
        let index = self.ran_phase_index(id)?;
        let record = error_record(error, now)?;
        let errors = &mut self.state.phases[index].errors;
        errors.push(record);
        let position = errors.len() - 1;
        self.touch(now);
        Ok(position)
    }

    /// pending → skipped. Takes a [`UserDecision`] because only the user may drop a phase; the
    /// decision and its reason are appended to the log, the front matter having no field for it.
    pub fn skip_phase(
        &mut self,
        id: PhaseId,
        decision: &UserDecision,
        now: Timestamp,
    ) -> Result<(), OrchestrationError> {
        let index = self.phase_index(id)?;
        self.check_move(index, PhaseStatus::Skipped)?;
        self.state.phases[index].status = PhaseStatus::Skipped;
        let entry = LogEntry::Phase {
            phase: Box::new(self.state.phases[index].clone()),
            report: PhaseReport {
                notes: vec![format!("Skipped by user decision: {}", decision.reason())],
                ..PhaseReport::default()
            },
        };
        self.append_log(entry, now);
        Ok(())
    }

    /// Appends to the phase's manifests, normalising paths (trimmed, `\` → `/`, leading `./`
    /// dropped) and skipping any already listed.
    pub fn record_files(
        &mut self,
        id: PhaseId,
        changes: &FileChanges,
        now: Timestamp,
    ) -> Result<(), OrchestrationError> {
        let index = self.ran_phase_index(id)?;
        let phase = &mut self.state.phases[index];
        for (list, new) in [
            (&mut phase.files_created, &changes.created),
            (&mut phase.files_modified, &changes.modified),
            (&mut phase.files_deleted, &changes.deleted),
        ] {
            for path in new
                .iter()
                .map(|p| normalise_path(p))
                .filter(|p| !p.is_empty())
            {
                if !list.contains(&path) {
                    list.push(path);
                }
            }
        }
        self.touch(now);
        Ok(())
    }

    /// Merges a handoff report's downstream context into the phase's; see [`normalise_entries`].
    /// The incoming context's unknown fields are not merged: they belong to the report, not to
    /// the session.
    pub fn record_downstream(
        &mut self,
        id: PhaseId,
        context: &DownstreamContext,
        now: Timestamp,
    ) -> Result<(), OrchestrationError> {
        let index = self.ran_phase_index(id)?;
        let mine = &mut self.state.phases[index].downstream_context;
        for (list, new) in mine.lists_mut().into_iter().zip(context.lists()) {
            list.extend(new.iter().cloned());
            *list = normalise_entries(list);
        }
        self.touch(now);
        Ok(())
    }

    /// Adds one invocation's tokens to the session totals and to the agent's own counts.
    pub fn record_tokens(
        &mut self,
        agent: &str,
        counts: TokenCounts,
        now: Timestamp,
    ) -> Result<(), OrchestrationError> {
        let agent = one_line(agent);
        if agent.is_empty() {
            return Err(OrchestrationError::Blank {
                field: "token usage agent",
            });
        }
        self.state.token_usage.add(&agent, counts);
        self.touch(now);
        Ok(())
    }

    /// Marks the phase's error number `index` (0-based, in recording order) resolved.
    pub fn resolve_error(
        &mut self,
        id: PhaseId,
        index: usize,
        resolution: &str,
        now: Timestamp,
    ) -> Result<(), OrchestrationError> {
        let phase_index = self.phase_index(id)?;
        let resolution = resolution.trim();
        if resolution.is_empty() {
            return Err(OrchestrationError::Blank {
                field: "resolution",
            });
        }
        let errors = &self.state.phases[phase_index].errors;
        let error = errors
            .get(index)
            .ok_or_else(|| OrchestrationError::NoSuchError {
                session: self.id().clone(),
                phase: id,
                index,
                len: errors.len(),
            })?;
        if error.resolved {
            return Err(OrchestrationError::ErrorAlreadyResolved {
                session: self.id().clone(),
                phase: id,
                index,
            });
        }
        let error = &mut self.state.phases[phase_index].errors[index];
        error.resolved = true;
        error.resolution = resolution.to_owned();
        self.touch(now);
        Ok(())
    }

    /// Appends the phase's section to the log: the phase as it stands now, and `report`.
    pub fn append_phase_section(
        &mut self,
        id: PhaseId,
        report: PhaseReport,
        now: Timestamp,
    ) -> Result<(), OrchestrationError> {
        let snapshot = self.state.phases[self.phase_index(id)?].clone();
        self.append_log(
            LogEntry::Phase {
                phase: Box::new(snapshot),
                report,
            },
            now,
        );
        Ok(())
    }

    /// Appends an entry to the log.
    pub fn append_log(&mut self, entry: LogEntry, now: Timestamp) {
        self.log.push(entry);
        self.touch(now);
    }

    /// Stamps `updated` and re-derives `current_phase` and `status` from the phases.
    pub fn touch(&mut self, now: Timestamp) {
        self.state.updated = now;
        if let Some(current) = current_phase(&self.state.phases) {
            self.state.current_phase = current;
        }
        // Derived, never stored independently: a session is complete exactly when every phase is.
        self.state.status = if self.state.phases.iter().all(|p| p.status.is_done()) {
            SessionStatus::Completed
        } else {
            SessionStatus::InProgress
        };
    }

    fn phase_index(&self, id: PhaseId) -> Result<usize, OrchestrationError> {
        self.state
            .phases
            .iter()
            .position(|p| p.id == id)
            .ok_or_else(|| OrchestrationError::PhaseNotFound {
                session: self.id().clone(),
                phase: id,
            })
    }

    /// Manifests, context and errors only make sense for a phase that has run.
    fn ran_phase_index(&self, id: PhaseId) -> Result<usize, OrchestrationError> {
        let index = self.phase_index(id)?;
        let status = self.state.phases[index].status;
        if matches!(status, PhaseStatus::Pending | PhaseStatus::Skipped) {
            return Err(OrchestrationError::PhaseNeverRan {
                session: self.id().clone(),
                phase: id,
                status,
            });
        }
        Ok(index)
    }

    fn check_move(&self, index: usize, to: PhaseStatus) -> Result<(), OrchestrationError> {
        let phase = &self.state.phases[index];
        if is_allowed(phase.status, to) {
            return Ok(());
        }
        Err(OrchestrationError::IllegalTransition {
            session: self.id().clone(),
            phase: phase.id,
            from: phase.status,
            to,
            allowed: allowed_targets(phase.status).to_vec(),
        })
    }

    /// Blockers neither completed nor skipped. A blocker id naming no phase (possible only in a
    /// hand-edited file) is ignored rather than blocking the phase forever.
    fn unfinished_blockers(&self, phase: &Phase) -> Vec<PhaseId> {
        phase
            .blocked_by
            .iter()
            .copied()
            .filter(|&blocker| self.phase(blocker).is_some_and(|b| !b.status.is_done()))
            .collect()
    }
}

/// The phase being executed (the first in progress), else the next to execute (the first pending
/// or failed), else — every phase being done — the last one. `None` only without phases.
pub fn current_phase(phases: &[Phase]) -> Option<PhaseId> {
    phases
        .iter()
        .find(|p| p.status == PhaseStatus::InProgress)
        .or_else(|| {
            phases
                .iter()
                .find(|p| matches!(p.status, PhaseStatus::Pending | PhaseStatus::Failed))
        })
        .or_else(|| phases.last())
        .map(|p| p.id)
}

/// Downstream-context entries as they are kept: trimmed; blank entries and placeholders
/// (`none`, `n/a`, any case) dropped, since agents write them for "nothing to report"; exact
/// duplicates dropped, the first occurrence kept in place.
pub fn normalise_entries(entries: &[String]) -> Vec<String> {
    let mut kept: Vec<String> = Vec::with_capacity(entries.len());
    for entry in entries {
        let entry = entry.trim();
        if entry.is_empty()
            || entry.eq_ignore_ascii_case("none")
            || entry.eq_ignore_ascii_case("n/a")
        {
            continue;
        }
        if !kept.iter().any(|k| k == entry) {
            kept.push(entry.to_owned());
        }
    }
    kept
}

/// A manifest path as kept: trimmed, `/`-separated, without leading `./`.
pub fn normalise_path(path: &str) -> String {
    let mut path = path.trim().replace('\\', "/");
    while let Some(rest) = path.strip_prefix("./") {
        path = rest.to_owned();
    }
    path
}

/// A new error as recorded: unresolved, resolution `pending`, agent and message not blank.
fn error_record(error: NewError, now: Timestamp) -> Result<ErrorRecord, OrchestrationError> {
    let agent = one_line(&error.agent);
    if agent.is_empty() {
        return Err(OrchestrationError::Blank {
            field: "error agent",
        });
    }
    let message = error.message.trim().to_owned();
    if message.is_empty() {
        return Err(OrchestrationError::Blank {
            field: "error message",
        });
    }
    Ok(ErrorRecord {
        agent,
        timestamp: now,
        kind: error.kind,
        message,
        resolution: PENDING_RESOLUTION.to_owned(),
        resolved: false,
        extra: Map::new(),
    })
}

/// The phases' ids: the ones given (positive, distinct), or 1..=n when none is given.
fn phase_ids(phases: &[NewPhase]) -> Result<Vec<PhaseId>, OrchestrationError> {
    let given = phases.iter().filter(|p| p.id.is_some()).count();
    if given == 0 {
        return (1..=phases.len())
            .map(|n| {
                PhaseId::try_from(n).map_err(|_| OrchestrationError::InvalidPhases {
                    reason: "too many phases".into(),
                })
            })
            .collect();
    }
    if given != phases.len() {
        return Err(OrchestrationError::InvalidPhases {
            reason: "give every phase an id, or none (they are then numbered 1, 2, …)".into(),
        });
    }
    let mut ids: Vec<PhaseId> = Vec::with_capacity(phases.len());
    for id in phases.iter().filter_map(|p| p.id) {
        if id == 0 {
            return Err(OrchestrationError::InvalidPhases {
                reason: "phase ids start at 1".into(),
            });
        }
        if ids.contains(&id) {
            return Err(OrchestrationError::InvalidPhases {
                reason: format!("two phases have the id {id}"),
            });
        }
        ids.push(id);
    }
    Ok(ids)
}

fn extend_names(list: &mut Vec<String>, new: &[String]) {
    for name in new.iter().map(|n| one_line(n)).filter(|n| !n.is_empty()) {
        if !list.contains(&name) {
            list.push(name);
        }
    }
}

fn non_blank(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}
