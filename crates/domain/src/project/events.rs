//! The project store's log events as typed values, and their conversion to and from the untyped
//! [`LogRecord`] the adapter writes. Rendering is the adapter's job; meaning is ours.

use crate::log::LogRecord;
use crate::time::{Timestamp, format_rfc3339, parse_rfc3339};

use super::model::{ProjectId, ProjectStatus, TaskId, TaskStatus};

/// Every event the project store logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectEvent {
    ProjectCreated {
        project: ProjectId,
        name: String,
    },
    ProjectStatusChanged {
        from: ProjectStatus,
        to: ProjectStatus,
    },
    TaskCreated {
        task: TaskId,
        title: String,
        parent: Option<TaskId>,
    },
    /// A status change. Its log kind follows from `from` and `to` (see [`EventKind::of_move`]).
    TaskMoved {
        task: TaskId,
        from: TaskStatus,
        to: TaskStatus,
        actual_minutes: Option<u32>,
        reason: Option<String>,
    },
    TaskDecomposed {
        task: TaskId,
        children: Vec<TaskId>,
    },
    DependencyAdded {
        task: TaskId,
        dependency: TaskId,
    },
    DependencyRemoved {
        task: TaskId,
        dependency: TaskId,
    },
    PhaseComplete {
        phase: String,
        /// Tasks still unfinished when the phase was completed anyway (`--force`): the log keeps
        /// what was skipped.
        still_open: Vec<TaskId>,
    },
    CheckpointWritten {
        number: u32,
        tasks: usize,
    },
    CheckpointRestored {
        number: u32,
        tasks: usize,
    },
    /// Something went wrong; the message says what and what was done about it.
    Error {
        task: Option<TaskId>,
        message: String,
    },
    /// tasks.json was damaged and rebuilt, task by task, from the damaged file and (if needed)
    /// a checkpoint.
    StoreRecovered {
        checkpoint: Option<u32>,
        kept: usize,
        dropped: usize,
        damaged_copy: String,
    },
    SyncTo {
        platform: String,
        task: TaskId,
        external_id: String,
    },
    LoopIteration {
        iteration: u32,
        detail: String,
    },
    /// A task's research brief was written for the first time; `path` is its `research_file`.
    ResearchWritten {
        task: TaskId,
        path: String,
    },
    /// A repair made by `cairn doctor --fix`.
    Repaired {
        task: Option<TaskId>,
        detail: String,
    },
    /// A Claude Code hook event worth keeping (session start, compaction, subagents …).
    Session {
        hook: String,
        session_id: String,
        detail: Option<String>,
    },
    /// A task's fields were edited; each change reads `field: old → new`.
    TaskUpdated {
        task: TaskId,
        changes: Vec<String>,
    },
    PhaseAdded {
        phase: String,
        name: String,
    },
    PhaseStarted {
        phase: String,
    },
    /// Every task is done (COMPLETE or CANCELLED, at least one COMPLETE): the project completed
    /// by itself. `tasks` counts the completed leaves.
    ProjectComplete {
        from: ProjectStatus,
        tasks: usize,
    },
    /// An agent claimed a task until `expires_at`.
    TaskClaimed {
        task: TaskId,
        agent: String,
        expires_at: Timestamp,
    },
    /// The holder extended its lease.
    LeaseRenewed {
        task: TaskId,
        agent: String,
        expires_at: Timestamp,
    },
    /// A claim's lease lapsed and the task was taken over or reset; `expired_at` is `None` for a
    /// claim written without an expiry.
    LeaseExpired {
        task: TaskId,
        agent: String,
        expired_at: Option<Timestamp>,
    },
}

/// The heading kind of a log entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EventKind {
    ProjectCreated,
    ProjectStatusChanged,
    TaskCreated,
    TaskStarted,
    TaskComplete,
    TaskBlocked,
    TaskUnblocked,
    TaskResearchStarted,
    TaskResearched,
    TaskValidating,
    TaskReopened,
    TaskReset,
    TaskReconciled,
    TaskCancelled,
    TaskDecomposed,
    DependencyAdded,
    DependencyRemoved,
    PhaseComplete,
    CheckpointWritten,
    CheckpointRestored,
    Error,
    StoreRecovered,
    SyncTo(String),
    LoopIteration,
    ResearchWritten,
    Repaired,
    Session(String),
    /// A kind cairn does not know, written by another tool. Kept as read.
    Other(String),
    TaskUpdated,
    PhaseAdded,
    PhaseStarted,
    ProjectComplete,
    TaskClaimed,
    LeaseRenewed,
    LeaseExpired,
}

const FIXED_KINDS: &[(EventKind, &str)] = &[
    (EventKind::ProjectCreated, "PROJECT_CREATED"),
    (EventKind::ProjectStatusChanged, "PROJECT_STATUS_CHANGED"),
    (EventKind::TaskCreated, "TASK_CREATED"),
    (EventKind::TaskStarted, "TASK_STARTED"),
    (EventKind::TaskComplete, "TASK_COMPLETE"),
    (EventKind::TaskBlocked, "TASK_BLOCKED"),
    (EventKind::TaskUnblocked, "TASK_UNBLOCKED"),
    (EventKind::TaskResearchStarted, "TASK_RESEARCH_STARTED"),
    (EventKind::TaskResearched, "TASK_RESEARCHED"),
    (EventKind::TaskValidating, "TASK_VALIDATING"),
    (EventKind::TaskReopened, "TASK_REOPENED"),
    (EventKind::TaskReset, "TASK_RESET"),
    (EventKind::TaskReconciled, "TASK_RECONCILED"),
    (EventKind::TaskCancelled, "TASK_CANCELLED"),
    (EventKind::TaskDecomposed, "TASK_DECOMPOSED"),
    (EventKind::DependencyAdded, "DEPENDENCY_ADDED"),
    (EventKind::DependencyRemoved, "DEPENDENCY_REMOVED"),
    (EventKind::PhaseComplete, "PHASE_COMPLETE"),
    (EventKind::CheckpointWritten, "CHECKPOINT_WRITTEN"),
    (EventKind::CheckpointRestored, "CHECKPOINT_RESTORED"),
    (EventKind::Error, "ERROR"),
    (EventKind::StoreRecovered, "STORE_RECOVERED"),
    (EventKind::LoopIteration, "LOOP_ITERATION"),
    (EventKind::ResearchWritten, "RESEARCH_WRITTEN"),
    (EventKind::Repaired, "REPAIRED"),
    (EventKind::TaskUpdated, "TASK_UPDATED"),
    (EventKind::PhaseAdded, "PHASE_ADDED"),
    (EventKind::PhaseStarted, "PHASE_STARTED"),
    (EventKind::ProjectComplete, "PROJECT_COMPLETE"),
    (EventKind::TaskClaimed, "TASK_CLAIMED"),
    (EventKind::LeaseRenewed, "LEASE_RENEWED"),
    (EventKind::LeaseExpired, "LEASE_EXPIRED"),
];

impl EventKind {
    pub fn name(&self) -> String {
        match self {
            EventKind::SyncTo(platform) => format!("SYNC_TO_{platform}"),
            EventKind::Session(hook) => format!("SESSION_{hook}"),
            EventKind::Other(kind) => kind.clone(),
            fixed => FIXED_KINDS
                .iter()
                .find(|(k, _)| k == fixed)
                .map(|(_, n)| (*n).to_owned())
                .unwrap_or_default(),
        }
    }

    pub fn parse(name: &str) -> EventKind {
        let name = name.trim().to_ascii_uppercase();
        if let Some((kind, _)) = FIXED_KINDS.iter().find(|(_, n)| *n == name) {
            return kind.clone();
        }
        if let Some(platform) = name.strip_prefix("SYNC_TO_").filter(|p| !p.is_empty()) {
            return EventKind::SyncTo(platform.to_owned());
        }
        if let Some(hook) = name.strip_prefix("SESSION_").filter(|p| !p.is_empty()) {
            return EventKind::Session(hook.to_owned());
        }
        EventKind::Other(name)
    }

    /// The kind a status change is logged under.
    pub fn of_move(from: TaskStatus, to: TaskStatus) -> EventKind {
        use TaskStatus::*;
        match (from, to) {
            (Blocked, _) => EventKind::TaskUnblocked,
            (_, InProgress) if from == Validating => EventKind::TaskReopened,
            (_, InProgress) => EventKind::TaskStarted,
            (_, Complete) => EventKind::TaskComplete,
            (_, Blocked) => EventKind::TaskBlocked,
            (InProgress | Validating, Researched) => EventKind::TaskReconciled,
            (_, Researched) => EventKind::TaskResearched,
            (_, InResearch) => EventKind::TaskResearchStarted,
            (_, Validating) => EventKind::TaskValidating,
            (_, Pending) => EventKind::TaskReset,
            (_, Cancelled) => EventKind::TaskCancelled,
        }
    }
}

impl ProjectEvent {
    pub fn kind(&self) -> EventKind {
        match self {
            ProjectEvent::ProjectCreated { .. } => EventKind::ProjectCreated,
            ProjectEvent::ProjectStatusChanged { .. } => EventKind::ProjectStatusChanged,
            ProjectEvent::TaskCreated { .. } => EventKind::TaskCreated,
            ProjectEvent::TaskMoved { from, to, .. } => EventKind::of_move(*from, *to),
            ProjectEvent::TaskDecomposed { .. } => EventKind::TaskDecomposed,
            ProjectEvent::DependencyAdded { .. } => EventKind::DependencyAdded,
            ProjectEvent::DependencyRemoved { .. } => EventKind::DependencyRemoved,
            ProjectEvent::PhaseComplete { .. } => EventKind::PhaseComplete,
            ProjectEvent::CheckpointWritten { .. } => EventKind::CheckpointWritten,
            ProjectEvent::CheckpointRestored { .. } => EventKind::CheckpointRestored,
            ProjectEvent::Error { .. } => EventKind::Error,
            ProjectEvent::StoreRecovered { .. } => EventKind::StoreRecovered,
            ProjectEvent::SyncTo { platform, .. } => {
                EventKind::SyncTo(platform.to_ascii_uppercase())
            }
            ProjectEvent::LoopIteration { .. } => EventKind::LoopIteration,
            ProjectEvent::ResearchWritten { .. } => EventKind::ResearchWritten,
            ProjectEvent::Repaired { .. } => EventKind::Repaired,
            ProjectEvent::Session { hook, .. } => EventKind::Session(hook.to_ascii_uppercase()),
            ProjectEvent::TaskUpdated { .. } => EventKind::TaskUpdated,
            ProjectEvent::PhaseAdded { .. } => EventKind::PhaseAdded,
            ProjectEvent::PhaseStarted { .. } => EventKind::PhaseStarted,
            ProjectEvent::ProjectComplete { .. } => EventKind::ProjectComplete,
            ProjectEvent::TaskClaimed { .. } => EventKind::TaskClaimed,
            ProjectEvent::LeaseRenewed { .. } => EventKind::LeaseRenewed,
            ProjectEvent::LeaseExpired { .. } => EventKind::LeaseExpired,
        }
    }

    pub fn task(&self) -> Option<&TaskId> {
        match self {
            ProjectEvent::TaskCreated { task, .. }
            | ProjectEvent::TaskMoved { task, .. }
            | ProjectEvent::TaskDecomposed { task, .. }
            | ProjectEvent::DependencyAdded { task, .. }
            | ProjectEvent::DependencyRemoved { task, .. }
            | ProjectEvent::SyncTo { task, .. }
            | ProjectEvent::TaskUpdated { task, .. }
            | ProjectEvent::TaskClaimed { task, .. }
            | ProjectEvent::LeaseRenewed { task, .. }
            | ProjectEvent::LeaseExpired { task, .. } => Some(task),
            ProjectEvent::Error { task, .. } | ProjectEvent::Repaired { task, .. } => task.as_ref(),
            _ => None,
        }
    }

    /// The record written to the progress log.
    pub fn to_record(&self, at: Timestamp) -> LogRecord {
        let record = LogRecord::new(at, self.kind().name());
        match self {
            ProjectEvent::ProjectCreated { project, name } => {
                record.with("project", project).with("name", name)
            }
            ProjectEvent::ProjectStatusChanged { from, to } => {
                record.with("previous_status", from).with("new_status", to)
            }
            ProjectEvent::TaskCreated {
                task,
                title,
                parent,
            } => {
                let record = record.with("task", task).with("title", title);
                match parent {
                    Some(parent) => record.with("parent", parent),
                    None => record,
                }
            }
            ProjectEvent::TaskMoved {
                task,
                from,
                to,
                actual_minutes,
                reason,
            } => {
                let mut record = record
                    .with("task", task)
                    .with("previous_status", from)
                    .with("new_status", to);
                if let Some(minutes) = actual_minutes {
                    record = record.with("actual_minutes", minutes);
                }
                if let Some(reason) = reason {
                    record = record.with("detail", reason);
                }
                record
            }
            ProjectEvent::TaskDecomposed { task, children } => {
                record.with("task", task).with("children", join(children))
            }
            ProjectEvent::DependencyAdded { task, dependency }
            | ProjectEvent::DependencyRemoved { task, dependency } => {
                record.with("task", task).with("dependency", dependency)
            }
            ProjectEvent::PhaseComplete { phase, still_open } if still_open.is_empty() => {
                record.with("phase", phase)
            }
            ProjectEvent::PhaseComplete { phase, still_open } => record
                .with("phase", phase)
                .with("still_open", join(still_open)),
            ProjectEvent::CheckpointWritten { number, tasks }
            | ProjectEvent::CheckpointRestored { number, tasks } => {
                record.with("checkpoint", number).with("tasks", tasks)
            }
            ProjectEvent::Error { task, message } => {
                with_task(record, task).with("detail", message)
            }
            ProjectEvent::StoreRecovered {
                checkpoint,
                kept,
                dropped,
                damaged_copy,
            } => checkpoint
                .iter()
                .fold(record, |r, n| r.with("checkpoint", n))
                .with("kept", kept)
                .with("dropped", dropped)
                .with("damaged_copy", damaged_copy),
            ProjectEvent::SyncTo {
                platform: _,
                task,
                external_id,
            } => record.with("task", task).with("external_id", external_id),
            ProjectEvent::LoopIteration { iteration, detail } => {
                record.with("iteration", iteration).with("detail", detail)
            }
            ProjectEvent::ResearchWritten { task, path } => {
                record.with("task", task).with("research_file", path)
            }
            ProjectEvent::Repaired { task, detail } => {
                with_task(record, task).with("detail", detail)
            }
            ProjectEvent::Session {
                hook: _,
                session_id,
                detail,
            } => {
                let record = record.with("session", session_id);
                match detail {
                    Some(detail) => record.with("detail", detail),
                    None => record,
                }
            }
            ProjectEvent::TaskUpdated { task, changes } => record
                .with("task", task)
                .with("detail", changes.join(CHANGE_SEPARATOR)),
            ProjectEvent::PhaseAdded { phase, name } => {
                record.with("phase", phase).with("name", name)
            }
            ProjectEvent::PhaseStarted { phase } => record.with("phase", phase),
            ProjectEvent::ProjectComplete { from, tasks } => record
                .with("previous_status", from)
                .with("new_status", ProjectStatus::Complete)
                .with("tasks", tasks),
            ProjectEvent::TaskClaimed {
                task,
                agent,
                expires_at,
            }
            | ProjectEvent::LeaseRenewed {
                task,
                agent,
                expires_at,
            } => record
                .with("task", task)
                .with("agent", agent)
                .with("lease_expires_at", format_rfc3339(expires_at)),
            ProjectEvent::LeaseExpired {
                task,
                agent,
                expired_at,
            } => {
                let record = record.with("task", task).with("agent", agent);
                match expired_at {
                    Some(at) => record.with("lease_expires_at", format_rfc3339(at)),
                    None => record,
                }
            }
        }
    }

    /// A record's event with its timestamp.
    pub fn from_record_at(record: &LogRecord) -> Option<(Timestamp, ProjectEvent)> {
        ProjectEvent::from_record(record).map(|e| (record.at, e))
    }

    /// Reads a record back. `None` for kinds cairn does not know or records missing a field the
    /// kind needs: the log is for humans first, and other tools write to it too.
    pub fn from_record(record: &LogRecord) -> Option<ProjectEvent> {
        let task = || record.get("task").and_then(|t| t.parse::<TaskId>().ok());
        let status = |key: &str| record.get(key).and_then(|s| s.parse::<TaskStatus>().ok());
        let number = |key: &str| record.get(key).and_then(|n| n.trim().parse::<u64>().ok());
        let text = |key: &str| record.get(key).map(str::to_owned);
        Some(match EventKind::parse(&record.kind) {
            EventKind::ProjectCreated => ProjectEvent::ProjectCreated {
                project: record.get("project")?.parse().ok()?,
                name: text("name")?,
            },
            EventKind::ProjectStatusChanged => ProjectEvent::ProjectStatusChanged {
                from: record.get("previous_status")?.parse().ok()?,
                to: record.get("new_status")?.parse().ok()?,
            },
            EventKind::TaskCreated => ProjectEvent::TaskCreated {
                task: task()?,
                title: text("title").unwrap_or_default(),
                parent: record.get("parent").and_then(|p| p.parse().ok()),
            },
            EventKind::TaskStarted
            | EventKind::TaskComplete
            | EventKind::TaskBlocked
            | EventKind::TaskUnblocked
            | EventKind::TaskResearchStarted
            | EventKind::TaskResearched
            | EventKind::TaskValidating
            | EventKind::TaskReopened
            | EventKind::TaskReset
            | EventKind::TaskReconciled
            | EventKind::TaskCancelled => ProjectEvent::TaskMoved {
                task: task()?,
                from: status("previous_status")?,
                to: status("new_status")?,
                actual_minutes: number("actual_minutes").and_then(|n| u32::try_from(n).ok()),
                reason: text("detail"),
            },
            EventKind::TaskDecomposed => ProjectEvent::TaskDecomposed {
                task: task()?,
                children: id_list(record.get("children")?),
            },
            EventKind::DependencyAdded => ProjectEvent::DependencyAdded {
                task: task()?,
                dependency: record.get("dependency")?.parse().ok()?,
            },
            EventKind::DependencyRemoved => ProjectEvent::DependencyRemoved {
                task: task()?,
                dependency: record.get("dependency")?.parse().ok()?,
            },
            EventKind::PhaseComplete => ProjectEvent::PhaseComplete {
                phase: text("phase")?,
                still_open: record.get("still_open").map(id_list).unwrap_or_default(),
            },
            EventKind::CheckpointWritten => ProjectEvent::CheckpointWritten {
                number: u32::try_from(number("checkpoint")?).ok()?,
                tasks: usize::try_from(number("tasks").unwrap_or(0)).ok()?,
            },
            EventKind::CheckpointRestored => ProjectEvent::CheckpointRestored {
                number: u32::try_from(number("checkpoint")?).ok()?,
                tasks: usize::try_from(number("tasks").unwrap_or(0)).ok()?,
            },
            EventKind::Error => ProjectEvent::Error {
                task: task(),
                message: text("detail").unwrap_or_default(),
            },
            EventKind::StoreRecovered => ProjectEvent::StoreRecovered {
                checkpoint: number("checkpoint").and_then(|n| u32::try_from(n).ok()),
                kept: usize::try_from(number("kept").unwrap_or(0)).ok()?,
                dropped: usize::try_from(number("dropped").unwrap_or(0)).ok()?,
                damaged_copy: text("damaged_copy").unwrap_or_default(),
            },
            EventKind::SyncTo(platform) => ProjectEvent::SyncTo {
                platform,
                task: task()?,
                external_id: text("external_id").unwrap_or_default(),
            },
            EventKind::LoopIteration => ProjectEvent::LoopIteration {
                iteration: u32::try_from(number("iteration").unwrap_or(0)).ok()?,
                detail: text("detail").unwrap_or_default(),
            },
            EventKind::ResearchWritten => ProjectEvent::ResearchWritten {
                task: task()?,
                path: text("research_file").unwrap_or_default(),
            },
            EventKind::Repaired => ProjectEvent::Repaired {
                task: task(),
                detail: text("detail").unwrap_or_default(),
            },
            EventKind::Session(hook) => ProjectEvent::Session {
                hook,
                session_id: text("session").unwrap_or_default(),
                detail: text("detail"),
            },
            EventKind::TaskUpdated => ProjectEvent::TaskUpdated {
                task: task()?,
                changes: record
                    .get("detail")
                    .map(|d| d.split(CHANGE_SEPARATOR).map(str::to_owned).collect())
                    .unwrap_or_default(),
            },
            EventKind::PhaseAdded => ProjectEvent::PhaseAdded {
                phase: text("phase")?,
                name: text("name").unwrap_or_default(),
            },
            EventKind::PhaseStarted => ProjectEvent::PhaseStarted {
                phase: text("phase")?,
            },
            EventKind::ProjectComplete => ProjectEvent::ProjectComplete {
                from: record.get("previous_status")?.parse().ok()?,
                tasks: usize::try_from(number("tasks").unwrap_or(0)).ok()?,
            },
            EventKind::TaskClaimed => ProjectEvent::TaskClaimed {
                task: task()?,
                agent: text("agent")?,
                expires_at: parse_rfc3339(record.get("lease_expires_at")?)?,
            },
            EventKind::LeaseRenewed => ProjectEvent::LeaseRenewed {
                task: task()?,
                agent: text("agent")?,
                expires_at: parse_rfc3339(record.get("lease_expires_at")?)?,
            },
            EventKind::LeaseExpired => ProjectEvent::LeaseExpired {
                task: task()?,
                agent: text("agent").unwrap_or_default(),
                expired_at: record.get("lease_expires_at").and_then(parse_rfc3339),
            },
            EventKind::Other(_) => return None,
        })
    }
}

/// Between the changes of one TASK_UPDATED entry, which the log keeps on one line.
const CHANGE_SEPARATOR: &str = "; ";

fn join(ids: &[TaskId]) -> String {
    ids.iter()
        .map(TaskId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The inverse of [`join`]; pieces that are not task ids are left out.
fn id_list(text: &str) -> Vec<TaskId> {
    text.split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect()
}

fn with_task(record: LogRecord, task: &Option<TaskId>) -> LogRecord {
    match task {
        Some(task) => record.with("task", task),
        None => record,
    }
}
