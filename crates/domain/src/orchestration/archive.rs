//! Archiving: what blocks it, which files move where (as data, for the adapter to execute), and
//! the check that nothing was left behind.
//!
//! Paths come in two kinds ([`Location`]): the state directory's own files, relative to the
//! state directory, and the design and plan documents, whose paths are used exactly as the
//! session records them (the adapter resolves them the way it resolves any recorded path).

use std::fmt;

use super::error::OrchestrationError;
use super::log::LogEntry;
use super::model::{PhaseId, PhaseStatus, Session, SessionId};
use super::phase::UserDecision;
use crate::time::Timestamp;

/// The active session file, relative to the state directory.
pub const ACTIVE_SESSION_PATH: &str = "state/active-session.md";
/// Where archived session files go, relative to the state directory.
pub const SESSION_ARCHIVE_DIR: &str = "state/archive";
/// Where archived design and plan documents go, relative to the state directory.
pub const PLANS_ARCHIVE_DIR: &str = "plans/archive";

/// The archived file of session `id`, relative to the state directory.
pub fn archived_session_path(id: &SessionId) -> String {
    format!("{SESSION_ARCHIVE_DIR}/{id}.md")
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Location {
    /// Relative to the state directory (`docs/maestro` by default).
    StateDir(String),
    /// A path exactly as the session front matter records it.
    Recorded(String),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::StateDir(path) => write!(f, "<state_dir>/{path}"),
            Self::Recorded(path) => f.write_str(path),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArchivedFile {
    Session,
    DesignDocument,
    ImplementationPlan,
}

impl fmt::Display for ArchivedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Session => "session file",
            Self::DesignDocument => "design document",
            Self::ImplementationPlan => "implementation plan",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedMove {
    pub file: ArchivedFile,
    pub from: Location,
    pub to: Location,
}

/// The moves, in the order to perform them. The session file moves last: if the adapter dies
/// half way, the active session is still there and archiving can simply be run again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchivePlan {
    pub session_id: SessionId,
    pub moves: Vec<PlannedMove>,
}

/// Something that stops a session from being archived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveBlocker {
    /// An agent may still be writing; archiving now would lose its report. Nothing lifts this but
    /// completing or failing the phase.
    PhaseInProgress { phase: PhaseId },
    /// Pending or failed phases. Archiving unfinished work is the user's call: a
    /// [`UserDecision`] lifts this blocker.
    UnfinishedPhases { phases: Vec<PhaseId> },
    /// A recorded document path with no usable file name to archive it under.
    UnusableDocumentPath { file: ArchivedFile, path: String },
    /// The design document and the plan share a file name, so one would overwrite the other in
    /// `plans/archive/`.
    DocumentNameClash { name: String },
}

impl fmt::Display for ArchiveBlocker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PhaseInProgress { phase } => write!(f, "phase {phase} is still in progress"),
            Self::UnfinishedPhases { phases } => {
                let ids = phases
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                write!(
                    f,
                    "phases {ids} are unfinished (archiving them needs the user's decision)"
                )
            }
            Self::UnusableDocumentPath { file, path } => {
                write!(f, "the {file} path {path:?} has no usable file name")
            }
            Self::DocumentNameClash { name } => {
                write!(
                    f,
                    "the design document and the implementation plan are both named {name:?}"
                )
            }
        }
    }
}

/// Everything that blocks archiving `session` now.
pub fn archive_blockers(session: &Session, decision: Option<&UserDecision>) -> Vec<ArchiveBlocker> {
    let phases = &session.state.phases;
    let mut blockers: Vec<ArchiveBlocker> = phases
        .iter()
        .filter(|p| p.status == PhaseStatus::InProgress)
        .map(|p| ArchiveBlocker::PhaseInProgress { phase: p.id })
        .collect();
    let unfinished: Vec<PhaseId> = phases
        .iter()
        .filter(|p| matches!(p.status, PhaseStatus::Pending | PhaseStatus::Failed))
        .map(|p| p.id)
        .collect();
    if !unfinished.is_empty() && decision.is_none() {
        blockers.push(ArchiveBlocker::UnfinishedPhases { phases: unfinished });
    }
    let mut names = Vec::new();
    for (file, path) in documents(session) {
        match document_file_name(path) {
            Some(name) if names.contains(&name) => {
                blockers.push(ArchiveBlocker::DocumentNameClash {
                    name: name.to_owned(),
                })
            }
            Some(name) => names.push(name),
            None => blockers.push(ArchiveBlocker::UnusableDocumentPath {
                file,
                path: path.to_owned(),
            }),
        }
    }
    blockers
}

/// The moves that archive `session`, or the blockers standing in the way.
pub fn archive_plan(
    session: &Session,
    decision: Option<&UserDecision>,
) -> Result<ArchivePlan, OrchestrationError> {
    let blockers = archive_blockers(session, decision);
    if !blockers.is_empty() {
        return Err(OrchestrationError::ArchiveBlocked {
            session: session.id().clone(),
            blockers,
        });
    }
    let mut moves = Vec::new();
    for (file, path) in documents(session) {
        if let Some(name) = document_file_name(path) {
            moves.push(PlannedMove {
                file,
                from: Location::Recorded(path.to_owned()),
                to: Location::StateDir(format!("{PLANS_ARCHIVE_DIR}/{name}")),
            });
        }
    }
    moves.push(PlannedMove {
        file: ArchivedFile::Session,
        from: Location::StateDir(ACTIVE_SESSION_PATH.to_owned()),
        to: Location::StateDir(archived_session_path(session.id())),
    });
    Ok(ArchivePlan {
        session_id: session.id().clone(),
        moves,
    })
}

impl Session {
    /// Plans the archive and, only if nothing blocks it, stamps the session as it will be
    /// archived (a user decision to archive unfinished work is noted in the log).
    pub fn prepare_archive(
        &mut self,
        decision: Option<&UserDecision>,
        now: Timestamp,
    ) -> Result<ArchivePlan, OrchestrationError> {
        let plan = archive_plan(self, decision)?;
        let unfinished = self.state.phases.iter().any(|p| !p.status.is_done());
        match decision {
            Some(decision) if unfinished => self.append_log(
                LogEntry::ArchivedUnfinished {
                    reason: decision.reason().to_owned(),
                },
                now,
            ),
            _ => self.touch(now),
        }
        Ok(plan)
    }
}

/// What archiving left undone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveVerification {
    /// Sources that still exist: the move copied instead of moving. Delete them.
    pub left_behind: Vec<Location>,
    /// Destinations that must exist but do not. Only the session file is required: a document
    /// that never existed has nothing to archive.
    pub missing: Vec<Location>,
}

impl ArchiveVerification {
    pub fn is_complete(&self) -> bool {
        self.left_behind.is_empty() && self.missing.is_empty()
    }
}

/// Checks the plan against the files that exist after the moves.
pub fn verify_archive(plan: &ArchivePlan, existing_after: &[Location]) -> ArchiveVerification {
    let exists = |location: &Location| existing_after.contains(location);
    ArchiveVerification {
        left_behind: plan
            .moves
            .iter()
            .filter(|m| exists(&m.from))
            .map(|m| m.from.clone())
            .collect(),
        missing: plan
            .moves
            .iter()
            .filter(|m| m.file == ArchivedFile::Session && !exists(&m.to))
            .map(|m| m.to.clone())
            .collect(),
    }
}

/// What an adapter reports after executing a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveOutcome {
    /// The session as archived.
    pub session: Session,
    pub plan: ArchivePlan,
    /// The moves performed.
    pub moved: Vec<PlannedMove>,
    /// The moves skipped because their source did not exist.
    pub absent: Vec<PlannedMove>,
    pub verification: ArchiveVerification,
}

fn documents(session: &Session) -> impl Iterator<Item = (ArchivedFile, &str)> {
    [
        (
            ArchivedFile::DesignDocument,
            session.state.design_document.as_deref(),
        ),
        (
            ArchivedFile::ImplementationPlan,
            session.state.implementation_plan.as_deref(),
        ),
    ]
    .into_iter()
    .filter_map(|(file, path)| path.map(|path| (file, path)))
}

/// The last path component, if it can name a file.
fn document_file_name(path: &str) -> Option<&str> {
    let name = path.trim().rsplit(['/', '\\']).next()?;
    (!name.is_empty() && name != "." && name != "..").then_some(name)
}
