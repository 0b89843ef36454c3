//! The use cases a CLI, hook or server calls. Services decide (through the session's rules),
//! the store persists; every change runs inside the store's critical section.

use std::sync::Arc;

use super::archive::ArchiveOutcome;
use super::error::OrchestrationError;
use super::log::PhaseReport;
use super::model::{DownstreamContext, PhaseId, Session, SessionId, TokenCounts};
use super::phase::UserDecision;
use super::resume::{ResumeSummary, resume_summary};
use super::session::{FileChanges, NewError, NewSession, PhaseTransition, SessionUpdate};
use super::store::OrchestrationStore;
use crate::error::{DomainError, Error};
use crate::ports::Clock;
use crate::time::Timestamp;

pub struct OrchestrationService {
    store: Arc<dyn OrchestrationStore>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for OrchestrationService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OrchestrationService { .. }")
    }
}

impl OrchestrationService {
    pub fn new(store: Arc<dyn OrchestrationStore>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    /// The active session, if any.
    pub async fn active(&self) -> Result<Option<Session>, Error> {
        Ok(self.store.load().await?)
    }

    /// Starts a session. Refused while another session is active (archive or resume it first)
    /// or when the id it would get is already archived.
    pub async fn create(&self, spec: NewSession) -> Result<Session, Error> {
        let session = Session::new(spec, self.clock.now()).map_err(DomainError::from)?;
        if let Some(active) = self.store.load().await? {
            return Err(DomainError::from(OrchestrationError::ActiveSessionExists {
                active: active.id().clone(),
            })
            .into());
        }
        if self.store.list_archived().await?.contains(session.id()) {
            return Err(DomainError::from(OrchestrationError::SessionIdTaken {
                id: session.id().clone(),
            })
            .into());
        }
        Ok(self.store.create(session).await?)
    }

    /// Seed 004's `update_session` on the session `id` (refused when another is active);
    /// returns the session and the names of the fields set.
    pub async fn update_session(
        &self,
        id: SessionId,
        update: SessionUpdate,
    ) -> Result<(Session, Vec<&'static str>), Error> {
        let clock = Arc::clone(&self.clock);
        self.store
            .transact_with(move |s| {
                same_session(s, Some(&id))?;
                s.update(update, clock.now()).map_err(DomainError::from)
            })
            .await
    }

    /// Seed 004's `transition_phase`: the whole step in one store write (see
    /// [`PhaseTransition`]); `id`, when given, must be the active session's. Returns the session
    /// and the phases started.
    pub async fn transition(
        &self,
        id: Option<SessionId>,
        step: PhaseTransition,
    ) -> Result<(Session, Vec<PhaseId>), Error> {
        let clock = Arc::clone(&self.clock);
        self.store
            .transact_with(move |s| {
                same_session(s, id.as_ref())?;
                s.transition(step, clock.now()).map_err(DomainError::from)
            })
            .await
    }

    /// pending → in_progress (or a counted retry of a failed phase), adding `agents`.
    pub async fn start_phase(&self, phase: PhaseId, agents: Vec<String>) -> Result<Session, Error> {
        self.change(move |s, now| s.start_phase(phase, &agents, now))
            .await
    }

    pub async fn complete_phase(&self, phase: PhaseId) -> Result<Session, Error> {
        self.change(move |s, now| s.complete_phase(phase, now))
            .await
    }

    pub async fn fail_phase(&self, phase: PhaseId, error: NewError) -> Result<Session, Error> {
        self.change(move |s, now| s.fail_phase(phase, error, now))
            .await
    }

    /// in_progress → completed, then the phase's section appended to the log with `report`, in
    /// one change: the log never lacks a section for a phase the front matter says is done.
    pub async fn complete_phase_logged(
        &self,
        phase: PhaseId,
        report: PhaseReport,
    ) -> Result<Session, Error> {
        self.change(move |s, now| {
            s.complete_phase(phase, now)?;
            s.append_phase_section(phase, report, now)
        })
        .await
    }

    /// in_progress → failed with `error`, then the phase's section appended to the log, in one
    /// change.
    pub async fn fail_phase_logged(
        &self,
        phase: PhaseId,
        error: NewError,
        report: PhaseReport,
    ) -> Result<Session, Error> {
        self.change(move |s, now| {
            s.fail_phase(phase, error, now)?;
            s.append_phase_section(phase, report, now)
        })
        .await
    }

    /// Records an error on a phase without moving it; returns the session and the error's
    /// 0-based index in the phase's list.
    pub async fn record_error(
        &self,
        phase: PhaseId,
        error: NewError,
    ) -> Result<(Session, usize), Error> {
        let clock = Arc::clone(&self.clock);
        self.store
            .transact_with(move |s| {
                s.record_error(phase, error, clock.now())
                    .map_err(DomainError::from)
            })
            .await
    }

    /// failed → in_progress; refused after the second retry (escalate to the user).
    pub async fn retry_phase(&self, phase: PhaseId) -> Result<Session, Error> {
        self.change(move |s, now| s.retry_phase(phase, now)).await
    }

    pub async fn skip_phase(
        &self,
        phase: PhaseId,
        decision: UserDecision,
    ) -> Result<Session, Error> {
        self.change(move |s, now| s.skip_phase(phase, &decision, now))
            .await
    }

    pub async fn record_files(
        &self,
        phase: PhaseId,
        changes: FileChanges,
    ) -> Result<Session, Error> {
        self.change(move |s, now| s.record_files(phase, &changes, now))
            .await
    }

    pub async fn record_tokens(
        &self,
        agent: String,
        counts: TokenCounts,
    ) -> Result<Session, Error> {
        self.change(move |s, now| s.record_tokens(&agent, counts, now))
            .await
    }

    pub async fn record_downstream(
        &self,
        phase: PhaseId,
        context: DownstreamContext,
    ) -> Result<Session, Error> {
        self.change(move |s, now| s.record_downstream(phase, &context, now))
            .await
    }

    pub async fn resolve_error(
        &self,
        phase: PhaseId,
        index: usize,
        resolution: String,
    ) -> Result<Session, Error> {
        self.change(move |s, now| s.resolve_error(phase, index, &resolution, now))
            .await
    }

    /// Appends the phase's log entry: the phase as it stands now, and `report`.
    pub async fn append_phase_log(
        &self,
        phase: PhaseId,
        report: PhaseReport,
    ) -> Result<Session, Error> {
        self.change(move |s, now| s.append_phase_section(phase, report, now))
            .await
    }

    /// Where the active session stands, or `None` when there is nothing to resume.
    pub async fn resume_summary(
        &self,
        changed_paths: &[String],
    ) -> Result<Option<ResumeSummary>, Error> {
        Ok(self
            .store
            .load()
            .await?
            .map(|session| resume_summary(&session, changed_paths)))
    }

    /// Archives the active session. Unfinished (pending or failed) phases need `decision`;
    /// phases in progress always block.
    pub async fn archive(&self, decision: Option<UserDecision>) -> Result<ArchiveOutcome, Error> {
        self.archive_checked(None, decision).await
    }

    /// [`Self::archive`], refused unless the active session is `id` (seed 004's
    /// `archive_session` names the session it archives).
    pub async fn archive_session(
        &self,
        id: SessionId,
        decision: Option<UserDecision>,
    ) -> Result<ArchiveOutcome, Error> {
        self.archive_checked(Some(id), decision).await
    }

    async fn archive_checked(
        &self,
        id: Option<SessionId>,
        decision: Option<UserDecision>,
    ) -> Result<ArchiveOutcome, Error> {
        let clock = Arc::clone(&self.clock);
        self.store
            .archive(Box::new(move |s| {
                same_session(s, id.as_ref())?;
                s.prepare_archive(decision.as_ref(), clock.now())
                    .map_err(DomainError::from)
            }))
            .await
    }

    pub async fn archived(&self) -> Result<Vec<SessionId>, Error> {
        Ok(self.store.list_archived().await?)
    }

    /// Runs a session rule inside the store's critical section, reading the clock there so that
    /// `updated` follows the order in which changes were actually applied.
    async fn change<F>(&self, rule: F) -> Result<Session, Error>
    where
        F: FnOnce(&mut Session, Timestamp) -> Result<(), OrchestrationError> + Send + 'static,
    {
        let clock = Arc::clone(&self.clock);
        self.store
            .transact(Box::new(move |s| {
                rule(s, clock.now()).map_err(DomainError::from)
            }))
            .await
    }
}

/// Refuses a change meant for another session than the active one.
fn same_session(session: &Session, id: Option<&SessionId>) -> Result<(), DomainError> {
    match id {
        Some(given) if given != session.id() => {
            Err(DomainError::from(OrchestrationError::SessionMismatch {
                active: session.id().clone(),
                given: given.clone(),
            }))
        }
        _ => Ok(()),
    }
}
