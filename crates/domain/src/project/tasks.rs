//! The rules that change tasks: creation, status moves, decomposition, the completion cascade
//! and dependencies. Every operation validates first and mutates second, so a refused operation
//! leaves the document exactly as it was; each returns the events to log.

use std::collections::HashSet;

use serde_json::Map;

use crate::error::DomainError;
use crate::time::Timestamp;

use super::error::ProjectError;
use super::events::ProjectEvent;
use super::graph::{self, Index};
use super::limits::{self, Field};
use super::model::{Level, Minutes, Priority, Task, TaskDoc, TaskId, TaskStatus, check_phase_id};
use super::status;

/// Limits of the interoperability contract (SPEC §2).
pub const MIN_TITLE_CHARS: usize = 3;
pub const MIN_CRITERION_CHARS: usize = 5;
pub const MAX_CRITERIA: usize = 12;
pub const MAX_ESTIMATE_MINUTES: u32 = 480;

/// The logged reasons of the two cascades.
pub const COMPLETED_BY_CASCADE: &str = "all subtasks complete";
pub const CANCELLED_BY_CASCADE: &str = "all its subtasks were cancelled";

/// What a caller supplies to create a task.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewTask {
    pub title: String,
    /// Defaults to `task`, or one level below the parent's.
    pub level: Option<Level>,
    /// Defaults to MEDIUM, or the parent's.
    pub priority: Option<Priority>,
    pub parent: Option<TaskId>,
    pub dependencies: Vec<TaskId>,
    pub completion_criteria: Vec<String>,
    pub description: Option<String>,
    /// Defaults to the parent's.
    pub phase_id: Option<String>,
    pub estimate_minutes: Option<u32>,
    pub tags: Vec<String>,
}

impl NewTask {
    pub fn titled(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            ..Self::default()
        }
    }
}

/// Extra data some moves carry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MoveDetail {
    /// For COMPLETE: minutes actually spent (else measured from `started_at`).
    pub actual_minutes: Option<u32>,
    /// For BLOCKED (required) and free text otherwise.
    pub reason: Option<String>,
}

fn child_level(parent: Level) -> Level {
    match parent {
        Level::Phase | Level::Epic => Level::Story,
        Level::Story => Level::Task,
        Level::Task => Level::Subtask,
        Level::Subtask | Level::MicroTask | Level::Micro => Level::MicroTask,
    }
}

/// A title, trimmed, at least [`MIN_TITLE_CHARS`] long.
pub fn check_title(title: &str) -> Result<String, DomainError> {
    let title = title.trim().to_owned();
    limits::check(Field::Title, &title)?;
    if title.chars().count() < MIN_TITLE_CHARS {
        return Err(DomainError::invalid(
            "title",
            format!("`{title}` is too short: a title needs at least {MIN_TITLE_CHARS} characters"),
        ));
    }
    Ok(title)
}

/// Completion criteria, trimmed, blanks dropped: at most [`MAX_CRITERIA`], each at least
/// [`MIN_CRITERION_CHARS`] long.
pub fn check_criteria(criteria: &[String]) -> Result<Vec<String>, DomainError> {
    let criteria: Vec<String> = criteria
        .iter()
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect();
    limits::check_all(Field::Criterion, &criteria)?;
    if criteria.len() > MAX_CRITERIA {
        return Err(DomainError::invalid(
            "criterion",
            format!(
                "{} completion criteria given; at most {MAX_CRITERIA} are allowed",
                criteria.len()
            ),
        ));
    }
    if let Some(short) = criteria
        .iter()
        .find(|c| c.chars().count() < MIN_CRITERION_CHARS)
    {
        return Err(DomainError::invalid(
            "criterion",
            format!(
                "`{short}` is too short: a completion criterion needs at least {MIN_CRITERION_CHARS} characters"
            ),
        ));
    }
    Ok(criteria)
}

/// An estimate within 1..=[`MAX_ESTIMATE_MINUTES`].
pub fn check_estimate(minutes: u32) -> Result<(), DomainError> {
    if !(1..=MAX_ESTIMATE_MINUTES).contains(&minutes) {
        return Err(DomainError::invalid(
            "estimate",
            format!(
                "{minutes} minutes is out of range: estimates are 1 to {MAX_ESTIMATE_MINUTES} minutes; decompose bigger work"
            ),
        ));
    }
    Ok(())
}

/// Where the cascade moves `task`, and why; `None` for a leaf, or while a child is still open.
/// `status_of` looks a child up, so that a caller holding an index does not scan the list.
pub(crate) fn settle(
    task: &Task,
    status_of: impl Fn(&TaskId) -> Option<TaskStatus>,
) -> Option<(TaskStatus, &'static str)> {
    if !task.is_parent() {
        return None;
    }
    let mut any_complete = false;
    for child in task.children() {
        match status_of(child) {
            Some(TaskStatus::Complete) => any_complete = true,
            Some(TaskStatus::Cancelled) => {}
            _ => return None,
        }
    }
    if any_complete {
        (task.status == TaskStatus::InProgress)
            .then_some((TaskStatus::Complete, COMPLETED_BY_CASCADE))
    } else {
        // Whatever status the parent is in (another tool may have left it PENDING), the table
        // decides whether it may be cancelled; BLOCKED may not.
        status::can_move(task.status, TaskStatus::Cancelled)
            .then_some((TaskStatus::Cancelled, CANCELLED_BY_CASCADE))
    }
}

fn unknown(task: &TaskId) -> DomainError {
    ProjectError::UnknownTask { task: task.clone() }.into()
}

impl TaskDoc {
    pub fn get(&self, id: &TaskId) -> Option<&Task> {
        self.tasks.position(id).map(|i| &self.tasks[i])
    }

    fn position(&self, id: &TaskId) -> Result<usize, DomainError> {
        self.tasks.position(id).ok_or_else(|| unknown(id))
    }

    /// Ids are dense: one more than the largest number in use.
    pub fn next_id(&self) -> TaskId {
        TaskId::from_number(self.tasks.max_number().saturating_add(1))
    }

    fn build_task(
        &self,
        id: TaskId,
        new: NewTask,
        parent: Option<&Task>,
        at: Timestamp,
    ) -> Result<Task, DomainError> {
        if let Some(level) = new.level
            && !level.is_canonical()
        {
            let names: Vec<&str> = Level::CANONICAL.iter().map(|l| l.as_str()).collect();
            return Err(DomainError::invalid(
                "level",
                format!(
                    "`{level}` is only kept where another tool wrote it; a new task's level is one of: {}",
                    names.join(", ")
                ),
            ));
        }
        let title = check_title(&new.title)?;
        let criteria = check_criteria(&new.completion_criteria)?;
        limits::check_all(Field::Tag, &new.tags)?;
        if let Some(d) = &new.description {
            limits::check(Field::Description, d.trim())?;
        }
        if let Some(minutes) = new.estimate_minutes {
            check_estimate(minutes)?;
        }
        let phase_id = new
            .phase_id
            .or_else(|| parent.and_then(|p| p.phase_id.clone()));
        if let Some(phase) = &phase_id {
            check_phase_id(phase)?;
        }
        let mut dependencies = Vec::new();
        for dep in new.dependencies {
            if dep == id {
                return Err(ProjectError::SelfDependency { task: id }.into());
            }
            if self.get(&dep).is_none() {
                return Err(ProjectError::UnknownDependency {
                    task: id,
                    dependency: dep,
                }
                .into());
            }
            if !dependencies.contains(&dep) {
                dependencies.push(dep);
            }
        }
        Ok(Task {
            id,
            title,
            level: new
                .level
                .unwrap_or_else(|| parent.map_or(Level::Task, |p| child_level(p.level))),
            status: TaskStatus::Pending,
            priority: new
                .priority
                .or(parent.map(|p| p.priority))
                .unwrap_or(Priority::Medium),
            dependencies,
            completion_criteria: criteria,
            created_at: at,
            description: new
                .description
                .map(|d| d.trim().to_owned())
                .filter(|d| !d.is_empty()),
            phase_id,
            parent_id: parent.map(|p| p.id.clone()),
            subtasks: None,
            estimate_minutes: new.estimate_minutes,
            actual_minutes: None,
            started_at: None,
            completed_at: None,
            blocked_reason: None,
            research_file: None,
            tags: (!new.tags.is_empty()).then_some(new.tags),
            external_id: None,
            stale_count: None,
            claimed_by: None,
            lease_expires_at: None,
            extra: Map::new(),
        })
    }

    /// Appends a task. With a parent this is a one-child decomposition.
    pub fn add_task(
        &mut self,
        new: NewTask,
        at: Timestamp,
    ) -> Result<(TaskId, Vec<ProjectEvent>), DomainError> {
        if let Some(parent) = new.parent.clone() {
            // A one-child decomposition: its child takes the next id, and its level and priority
            // default from the parent there.
            let id = self.next_id();
            let (_, events) = self.decompose(
                &parent,
                vec![NewTask {
                    parent: None,
                    ..new
                }],
                at,
            )?;
            return Ok((id, events));
        }
        let id = self.next_id();
        let task = self.build_task(id.clone(), new, None, at)?;
        // Fresh tasks depend only on existing ones, so no cycle is possible.
        let event = ProjectEvent::TaskCreated {
            task: id.clone(),
            title: task.title.clone(),
            parent: None,
        };
        self.tasks.push(task);
        Ok((id, vec![event]))
    }

    /// Splits `parent` into children appended in order; the parent moves to IN_PROGRESS (so it
    /// must be allowed to: not from IN_RESEARCH, BLOCKED or a final status) and is never executed
    /// itself from then on.
    pub fn decompose(
        &mut self,
        parent: &TaskId,
        children: Vec<NewTask>,
        at: Timestamp,
    ) -> Result<(Vec<TaskId>, Vec<ProjectEvent>), DomainError> {
        let p = self.position(parent)?;
        let status = self.tasks[p].status;
        // The parent ends up IN_PROGRESS, so the status table decides: from IN_RESEARCH (or a
        // terminal status, or BLOCKED) that move is not allowed, and decomposing does not bypass it.
        if status != TaskStatus::InProgress && !status::can_move(status, TaskStatus::InProgress) {
            return Err(ProjectError::CannotDecompose {
                task: parent.clone(),
                status,
            }
            .into());
        }
        if children.is_empty() {
            return Err(DomainError::invalid(
                "into",
                "give at least one subtask title",
            ));
        }
        let mut built = Vec::with_capacity(children.len());
        let first = self.next_id().number();
        for (offset, new) in children.into_iter().enumerate() {
            let id = TaskId::from_number(first + offset as u64);
            built.push(self.build_task(id, new, Some(&self.tasks[p]), at)?);
        }
        let ids: Vec<TaskId> = built.iter().map(|t| t.id.clone()).collect();

        // Try the structure in place and undo it on a cycle: cloning the whole list per
        // decomposition would cost more than everything else a transaction does.
        let previous_subtasks = self.tasks[p].subtasks.clone();
        let count = self.tasks.len();
        self.tasks.extend(built.iter().cloned());
        self.tasks[p]
            .subtasks
            .get_or_insert_with(Vec::new)
            .extend(ids.iter().cloned());
        if let Some(cycle) = graph::find_cycle(self) {
            self.tasks.truncate(count);
            self.tasks[p].subtasks = previous_subtasks;
            return Err(ProjectError::Cycle { cycle }.into());
        }

        let mut events = vec![];
        for t in &built {
            events.push(ProjectEvent::TaskCreated {
                task: t.id.clone(),
                title: t.title.clone(),
                parent: Some(parent.clone()),
            });
        }
        events.push(ProjectEvent::TaskDecomposed {
            task: parent.clone(),
            children: ids.clone(),
        });
        let parent_task = &mut self.tasks[p];
        if parent_task.status != TaskStatus::InProgress {
            events.push(ProjectEvent::TaskMoved {
                task: parent.clone(),
                from: parent_task.status,
                to: TaskStatus::InProgress,
                actual_minutes: None,
                reason: Some("decomposed into subtasks".into()),
            });
            parent_task.status = TaskStatus::InProgress;
            parent_task.started_at.get_or_insert(at);
        }
        Ok((ids, events))
    }

    /// Moves a task to `to`, checking the transition table and the structural rules, then runs
    /// the completion cascade up the hierarchy.
    pub fn move_task(
        &mut self,
        id: &TaskId,
        to: TaskStatus,
        detail: MoveDetail,
        at: Timestamp,
    ) -> Result<Vec<ProjectEvent>, DomainError> {
        // Every check is done before anything changes, so the document is changed in place.
        let (i, descendants) = self.checked_move(id, to, &detail)?;
        let mut events = Vec::new();
        for j in descendants {
            let reason = Some(format!("parent {id} cancelled"));
            self.set_status(
                j,
                TaskStatus::Cancelled,
                MoveDetail {
                    reason,
                    actual_minutes: None,
                },
                at,
                &mut events,
            );
        }
        self.set_status(i, to, detail, at, &mut events);
        self.cascade_from(i, at, &mut events);
        Ok(events)
    }

    /// Whether [`move_task`](Self::move_task) would take the move, without taking it: the error
    /// it would return, or nothing. Work that must undo a series of moves when one is refused
    /// (an import's PENDING → IN_PROGRESS → COMPLETE) keeps aside what to undo only once the
    /// first move is known to be taken.
    pub fn check_move(
        &self,
        id: &TaskId,
        to: TaskStatus,
        detail: &MoveDetail,
    ) -> Result<(), DomainError> {
        self.checked_move(id, to, detail).map(|_| ())
    }

    /// The checks of [`move_task`](Self::move_task): the task's position and, for a parent
    /// cancelled, the descendants cancelled with it.
    fn checked_move(
        &self,
        id: &TaskId,
        to: TaskStatus,
        detail: &MoveDetail,
    ) -> Result<(usize, Vec<usize>), DomainError> {
        let i = self.position(id)?;
        if let Some(reason) = &detail.reason {
            limits::check(Field::Reason, reason)?;
        }
        let task = &self.tasks[i];
        let from = task.status;
        let illegal = |allowed: &[TaskStatus]| -> DomainError {
            ProjectError::IllegalTransition {
                task: id.clone(),
                from,
                to,
                allowed: allowed.to_vec(),
            }
            .into()
        };
        if !status::can_move(from, to) {
            // The table's IN_PROGRESS exit from BLOCKED is a parent's; a leaf goes back to PENDING.
            let allowed = if from == TaskStatus::Blocked && !task.is_parent() {
                &[TaskStatus::Pending]
            } else {
                status::allowed_targets(from)
            };
            return Err(illegal(allowed));
        }
        if task.is_parent() {
            // Parents move only by block/unblock/cancel; everything else follows their children.
            let allowed = match to {
                TaskStatus::Blocked | TaskStatus::Cancelled => true,
                TaskStatus::InProgress => from == TaskStatus::Blocked,
                _ => false,
            };
            if !allowed {
                return Err(ProjectError::ParentNotExecutable {
                    task: id.clone(),
                    children: task.children().to_vec(),
                }
                .into());
            }
        } else if from == TaskStatus::Blocked && to != TaskStatus::Pending {
            return Err(illegal(&[TaskStatus::Pending]));
        }
        if to == TaskStatus::Blocked && detail.reason.as_deref().is_none_or(|r| r.trim().is_empty())
        {
            return Err(DomainError::invalid(
                "reason",
                format!(
                    "say why {id} is blocked: a blocked task waits for a person, who needs the reason"
                ),
            ));
        }
        if to == TaskStatus::InProgress
            && matches!(from, TaskStatus::Pending | TaskStatus::Researched)
        {
            let unmet = Index::for_one(self).unmet_dependencies(task);
            if !unmet.is_empty() {
                return Err(ProjectError::DependenciesUnmet {
                    task: id.clone(),
                    waiting_on: unmet,
                }
                .into());
            }
        }

        let descendants = if to == TaskStatus::Cancelled && task.is_parent() {
            self.cancellable_descendants(i)?
        } else {
            Vec::new()
        };
        Ok((i, descendants))
    }

    /// Applies a status change and its bookkeeping; no checks (callers checked).
    fn set_status(
        &mut self,
        i: usize,
        to: TaskStatus,
        detail: MoveDetail,
        at: Timestamp,
        events: &mut Vec<ProjectEvent>,
    ) {
        let task = &mut self.tasks[i];
        let from = task.status;
        let mut actual = None;
        match to {
            TaskStatus::InProgress
                if matches!(from, TaskStatus::Pending | TaskStatus::Researched) =>
            {
                task.started_at = Some(at)
            }
            TaskStatus::Complete => {
                task.completed_at = Some(at);
                if !task.is_parent() {
                    let measured = task
                        .started_at
                        .map(|s| u32::try_from((at - s).num_minutes().max(0)).unwrap_or(u32::MAX));
                    actual = detail.actual_minutes.or(measured);
                    task.actual_minutes = actual.map(Minutes::from).or(task.actual_minutes.take());
                }
                self.completions_since_checkpoint =
                    self.completions_since_checkpoint.saturating_add(1);
            }
            TaskStatus::Blocked => task.blocked_reason = detail.reason.clone(),
            TaskStatus::Pending => {
                task.started_at = None;
                if from == TaskStatus::Blocked {
                    task.blocked_reason = None;
                }
            }
            _ => {}
        }
        if from == TaskStatus::Blocked {
            task.blocked_reason = None;
        }
        task.status = to;
        if !matches!(to, TaskStatus::InProgress | TaskStatus::Validating) {
            // A claim covers the work; once the task leaves it, nobody holds it.
            task.claimed_by = None;
            task.lease_expires_at = None;
        }
        events.push(ProjectEvent::TaskMoved {
            task: task.id.clone(),
            from,
            to,
            actual_minutes: actual,
            reason: detail.reason,
        });
    }

    /// The open descendants a parent's cancellation cancels too; refused while one is BLOCKED
    /// (BLOCKED leaves only by an explicit unblock).
    fn cancellable_descendants(&self, i: usize) -> Result<Vec<usize>, DomainError> {
        let root = &self.tasks[i].id;
        let mut open = Vec::new();
        let mut stack: Vec<TaskId> = self.tasks[i].children().to_vec();
        let mut seen = HashSet::new();
        while let Some(id) = stack.pop() {
            if !seen.insert(id.clone()) {
                continue;
            }
            let Ok(j) = self.position(&id) else { continue };
            if self.tasks[j].status == TaskStatus::Blocked {
                return Err(ProjectError::BlockedDescendant {
                    task: root.clone(),
                    blocked: id,
                }
                .into());
            }
            stack.extend(self.tasks[j].children().iter().cloned());
            if self.tasks[j].status.is_open() {
                open.push(j);
            }
        }
        Ok(open)
    }

    /// Settles ancestors whose children are all finished, up the tree: a parent whose
    /// non-cancelled children are all COMPLETE (at least one) completes; a parent whose children
    /// were all cancelled is cancelled too, since nothing is left to do under it and it could
    /// never complete. A BLOCKED ancestor stops the cascade: it leaves BLOCKED only by an
    /// explicit unblock.
    fn cascade_from(&mut self, i: usize, at: Timestamp, events: &mut Vec<ProjectEvent>) {
        let mut current = Some(i);
        let mut seen = HashSet::new();
        while let Some(j) = current {
            if !seen.insert(j) {
                break;
            }
            if let Some((to, reason)) = self.settled(j) {
                let detail = MoveDetail {
                    reason: Some(reason.to_owned()),
                    actual_minutes: None,
                };
                self.set_status(j, to, detail, at, events);
            }
            current = self.tasks[j]
                .parent_id
                .clone()
                .and_then(|p| self.position(&p).ok());
        }
    }

    fn settled(&self, j: usize) -> Option<(TaskStatus, &'static str)> {
        settle(&self.tasks[j], |c| self.get(c).map(|t| t.status))
    }

    /// Re-runs both cascades for every parent; used by repairs and after imports.
    pub fn cascade_all(&mut self, at: Timestamp) -> Vec<ProjectEvent> {
        let mut events = Vec::new();
        for i in 0..self.tasks.len() {
            if !self.tasks[i].is_parent() {
                self.cascade_from(i, at, &mut events);
            }
        }
        events
    }

    pub fn add_dependency(
        &mut self,
        id: &TaskId,
        on: &TaskId,
    ) -> Result<Vec<ProjectEvent>, DomainError> {
        let i = self.position(id)?;
        if id == on {
            return Err(ProjectError::SelfDependency { task: id.clone() }.into());
        }
        if self.get(on).is_none() {
            return Err(ProjectError::UnknownDependency {
                task: id.clone(),
                dependency: on.clone(),
            }
            .into());
        }
        if self.tasks[i].dependencies.contains(on) {
            return Ok(Vec::new());
        }
        self.tasks[i].dependencies.push(on.clone());
        if let Some(cycle) = graph::find_cycle(self) {
            self.tasks[i].dependencies.pop();
            return Err(ProjectError::Cycle { cycle }.into());
        }
        Ok(vec![ProjectEvent::DependencyAdded {
            task: id.clone(),
            dependency: on.clone(),
        }])
    }

    pub fn remove_dependency(
        &mut self,
        id: &TaskId,
        on: &TaskId,
    ) -> Result<Vec<ProjectEvent>, DomainError> {
        let i = self.position(id)?;
        let deps = &mut self.tasks[i].dependencies;
        let before = deps.len();
        deps.retain(|d| d != on);
        if deps.len() == before {
            return Err(ProjectError::NotADependency {
                task: id.clone(),
                dependency: on.clone(),
            }
            .into());
        }
        Ok(vec![ProjectEvent::DependencyRemoved {
            task: id.clone(),
            dependency: on.clone(),
        }])
    }
}

/// What `edit` may change on a task; `None`/empty leaves a field as it is. An empty
/// `description`, `phase_id` or `external_id` clears the field.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskEdit {
    pub title: Option<String>,
    pub description: Option<String>,
    pub priority: Option<Priority>,
    pub estimate_minutes: Option<u32>,
    pub add_criteria: Vec<String>,
    /// 1-based positions in the task's current criteria, removed before any are added.
    pub remove_criteria: Vec<usize>,
    pub phase_id: Option<String>,
    pub add_tags: Vec<String>,
    pub remove_tags: Vec<String>,
    pub external_id: Option<String>,
}

/// Fields that describe or label a task; fixing them never rewrites what happened, so they stay
/// editable on a COMPLETE or CANCELLED task. Every other field is the plan of the work
/// (priority, estimate, criteria, phase): after the work is done it is history, and changing it
/// would skew velocity's estimate accuracy, what "done" meant, and phase progress.
pub const EDITABLE_WHEN_FINISHED: &[&str] = &["title", "description", "tags", "external_id"];

/// One field an edit changed, old → new, as short text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldChange {
    pub field: &'static str,
    pub from: String,
    pub to: String,
}

impl std::fmt::Display for FieldChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} → {}", self.field, self.from, self.to)
    }
}

impl TaskEdit {
    pub fn is_empty(&self) -> bool {
        *self == TaskEdit::default()
    }

    /// The fields this edit touches, in a stable order.
    fn fields(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut touch = |on: bool, name: &'static str| {
            if on {
                out.push(name);
            }
        };
        touch(self.title.is_some(), "title");
        touch(self.description.is_some(), "description");
        touch(self.priority.is_some(), "priority");
        touch(self.estimate_minutes.is_some(), "estimate");
        touch(
            !self.add_criteria.is_empty() || !self.remove_criteria.is_empty(),
            "criteria",
        );
        touch(self.phase_id.is_some(), "phase");
        touch(
            !self.add_tags.is_empty() || !self.remove_tags.is_empty(),
            "tags",
        );
        touch(self.external_id.is_some(), "external_id");
        out
    }
}

/// Log values stay one short line.
const CHANGE_VALUE_CHARS: usize = 40;

fn shown(value: Option<&str>) -> String {
    match value.map(str::trim) {
        None | Some("") => "(none)".to_owned(),
        Some(v) => super::report::clip(v, CHANGE_VALUE_CHARS),
    }
}

fn blank_to_none(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

impl TaskDoc {
    /// Changes a task's descriptive and planning fields (never its status, hierarchy or
    /// dependencies: those have their own rules). Validated with the rules of [`Self::add_task`];
    /// on a finished task only [`EDITABLE_WHEN_FINISHED`] fields may change. Returns what
    /// changed; an edit that changes nothing returns no changes and no event.
    pub fn edit_task(
        &mut self,
        id: &TaskId,
        edit: TaskEdit,
    ) -> Result<(Vec<FieldChange>, Vec<ProjectEvent>), DomainError> {
        let i = self.position(id)?;
        let task = &self.tasks[i];
        if task.status.is_terminal() {
            let refused: Vec<&'static str> = edit
                .fields()
                .into_iter()
                .filter(|f| !EDITABLE_WHEN_FINISHED.contains(f))
                .collect();
            if !refused.is_empty() {
                return Err(ProjectError::FinishedTaskEdit {
                    task: id.clone(),
                    status: task.status,
                    fields: refused.iter().map(|f| (*f).to_owned()).collect(),
                }
                .into());
            }
        }

        // Work out every new value first, so a refusal leaves the task as it was.
        let title = edit.title.as_deref().map(check_title).transpose()?;
        if let Some(minutes) = edit.estimate_minutes {
            check_estimate(minutes)?;
        }
        let criteria = if edit.add_criteria.is_empty() && edit.remove_criteria.is_empty() {
            None
        } else {
            let current = &task.completion_criteria;
            let mut remove = edit.remove_criteria.clone();
            remove.sort_unstable();
            remove.dedup();
            if let Some(bad) = remove.iter().find(|&&n| n == 0 || n > current.len()) {
                return Err(DomainError::invalid(
                    "criterion",
                    if current.is_empty() {
                        format!(
                            "{id} has no completion criteria, so there is no criterion {bad} to remove"
                        )
                    } else {
                        format!(
                            "{id} has {} completion criteria, numbered 1 to {}; there is no criterion {bad}",
                            current.len(),
                            current.len()
                        )
                    },
                ));
            }
            let mut kept: Vec<String> = current
                .iter()
                .enumerate()
                .filter(|(k, _)| !remove.contains(&(k + 1)))
                .map(|(_, c)| c.clone())
                .collect();
            if edit.add_criteria.iter().any(|c| c.trim().is_empty()) {
                return Err(DomainError::invalid(
                    "criterion",
                    "an added completion criterion is blank",
                ));
            }
            kept.extend(check_criteria(&edit.add_criteria)?);
            Some(check_criteria(&kept)?)
        };
        let phase = edit.phase_id.as_deref().map(blank_to_none);
        if let Some(Some(p)) = &phase {
            check_phase_id(p)?;
        }
        let tags = if edit.add_tags.is_empty() && edit.remove_tags.is_empty() {
            None
        } else {
            let mut tags: Vec<String> = task.tags.clone().unwrap_or_default();
            let removing: Vec<String> = edit
                .remove_tags
                .iter()
                .map(|t| t.trim().to_owned())
                .collect();
            tags.retain(|t| !removing.contains(t));
            for t in edit.add_tags.iter().filter_map(|t| blank_to_none(t)) {
                if !tags.contains(&t) {
                    tags.push(t);
                }
            }
            Some(tags)
        };
        if let Some(description) = &edit.description {
            limits::check(Field::Description, description.trim())?;
        }
        if let Some(tags) = &tags {
            limits::check_all(Field::Tag, tags)?;
        }

        let task = &mut self.tasks[i];
        let mut changes = Vec::new();
        let mut note = |field: &'static str, changed: bool, from: String, to: String| {
            if changed {
                changes.push(FieldChange { field, from, to });
            }
        };
        if let Some(title) = title {
            note(
                "title",
                title != task.title,
                shown(Some(&task.title)),
                shown(Some(&title)),
            );
            task.title = title;
        }
        if let Some(description) = edit.description.as_deref().map(blank_to_none) {
            let (from, to) = (
                shown(task.description.as_deref()),
                shown(description.as_deref()),
            );
            note("description", description != task.description, from, to);
            task.description = description;
        }
        if let Some(priority) = edit.priority {
            let (from, to) = (task.priority.to_string(), priority.to_string());
            note("priority", priority != task.priority, from, to);
            task.priority = priority;
        }
        if let Some(minutes) = edit.estimate_minutes {
            let from = task
                .estimate_minutes
                .map_or("(none)".to_owned(), |m| format!("{m}m"));
            note(
                "estimate",
                Some(minutes) != task.estimate_minutes,
                from,
                format!("{minutes}m"),
            );
            task.estimate_minutes = Some(minutes);
        }
        if let Some(criteria) = criteria {
            // Criteria can be long: the log says how many went and came, `task show` the text.
            let before = task.completion_criteria.len();
            let removed = edit.remove_criteria.len().min(before);
            let added = criteria.len() + removed - before;
            note(
                "criteria",
                criteria != task.completion_criteria,
                before.to_string(),
                format!("{} (-{removed}, +{added})", criteria.len()),
            );
            task.completion_criteria = criteria;
        }
        if let Some(phase) = phase {
            let (from, to) = (shown(task.phase_id.as_deref()), shown(phase.as_deref()));
            note("phase", phase != task.phase_id, from, to);
            task.phase_id = phase;
        }
        if let Some(tags) = tags {
            let before = task.tags.clone().unwrap_or_default();
            let (from, to) = (
                shown(Some(&before.join(", "))),
                shown(Some(&tags.join(", "))),
            );
            note("tags", before != tags, from, to);
            // An absent list stays absent when nothing is left, so files stay as they were.
            task.tags = if tags.is_empty() && task.tags.is_none() {
                None
            } else {
                Some(tags)
            };
        }
        if let Some(external) = edit.external_id.as_deref().map(blank_to_none) {
            let (from, to) = (
                shown(task.external_id.as_deref()),
                shown(external.as_deref()),
            );
            note("external_id", external != task.external_id, from, to);
            task.external_id = external;
        }
        let events = if changes.is_empty() {
            Vec::new()
        } else {
            vec![ProjectEvent::TaskUpdated {
                task: id.clone(),
                changes: changes.iter().map(ToString::to_string).collect(),
            }]
        };
        Ok((changes, events))
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::*;
    use crate::next::NextStep;

    fn at() -> Timestamp {
        Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0)
            .single()
            .expect("time")
    }

    fn doc_with(status: TaskStatus) -> (TaskDoc, TaskId) {
        let mut doc = TaskDoc::new("rules".parse().expect("project id"));
        let (id, _) = doc
            .add_task(NewTask::titled("big task"), at())
            .expect("add");
        doc.tasks[0].status = status;
        (doc, id)
    }

    fn project_error(e: DomainError) -> ProjectError {
        match e {
            DomainError::Project(p) => p,
            other => panic!("expected a project rule's refusal, got {other:?}"),
        }
    }

    #[test]
    fn decompose_follows_the_status_table() {
        for status in TaskStatus::ALL.iter().copied() {
            let (mut doc, id) = doc_with(status);
            let before = doc.clone();
            let result = doc.decompose(&id, vec![NewTask::titled("part one")], at());
            let legal = status == TaskStatus::InProgress
                || status::can_move(status, TaskStatus::InProgress);
            assert_eq!(
                result.is_ok(),
                legal,
                "decomposing a {status} task: {result:?}"
            );
            if legal {
                assert_eq!(doc.tasks[0].status, TaskStatus::InProgress);
            } else {
                assert_eq!(
                    doc, before,
                    "a refused decomposition of a {status} task changed the doc"
                );
            }
        }
    }

    #[test]
    fn a_task_in_research_is_decomposed_after_its_research_is_recorded() {
        let (mut doc, id) = doc_with(TaskStatus::InResearch);
        let refusal = project_error(
            doc.decompose(&id, vec![NewTask::titled("part one")], at())
                .expect_err("IN_RESEARCH cannot move to IN_PROGRESS"),
        );
        assert!(refusal.to_string().contains("research"), "{refusal}");
        assert_eq!(
            refusal.next_steps(),
            vec![
                NextStep::FinishResearch { task: id.clone() },
                NextStep::Decompose { task: id.clone() }
            ]
        );
        // Following the steps works, through a legal path only.
        doc.move_task(&id, TaskStatus::Researched, MoveDetail::default(), at())
            .expect("research done");
        let (_, events) = doc
            .decompose(&id, vec![NewTask::titled("part one")], at())
            .expect("decompose");
        assert!(events.iter().any(|e| matches!(
            e,
            ProjectEvent::TaskMoved {
                from: TaskStatus::Researched,
                to: TaskStatus::InProgress,
                ..
            }
        )));
    }

    #[test]
    fn new_tasks_take_only_the_canonical_levels() {
        let mut doc = TaskDoc::new("rules".parse().expect("project id"));
        for level in [Level::Phase, Level::Micro] {
            let before = doc.clone();
            let e = doc
                .add_task(
                    NewTask {
                        level: Some(level),
                        ..NewTask::titled("a task")
                    },
                    at(),
                )
                .expect_err("non-canonical level");
            let text = e.to_string();
            assert!(
                text.contains("epic, story, task, subtask, micro-task"),
                "{text}"
            );
            assert!(matches!(e, DomainError::Invalid { ref field, .. } if field == "level"));
            assert_eq!(doc, before);
        }
        for level in Level::CANONICAL {
            doc.add_task(
                NewTask {
                    level: Some(*level),
                    ..NewTask::titled("a task")
                },
                at(),
            )
            .expect("canonical level");
        }
    }

    #[test]
    fn levels_other_tools_wrote_survive_a_rewrite() {
        let (mut doc, id) = doc_with(TaskStatus::Pending);
        doc.tasks[0].level = Level::Phase;
        doc.decompose(&id, vec![NewTask::titled("part one")], at())
            .expect("decompose");
        let json = serde_json::to_value(&doc).expect("serialize");
        assert_eq!(json["tasks"][0]["level"], "phase");
        assert_eq!(json["tasks"][1]["level"], "story");
    }

    #[test]
    fn a_blocked_leaf_is_told_it_goes_back_to_pending() {
        let (mut doc, id) = doc_with(TaskStatus::Blocked);
        let refusal = project_error(
            doc.move_task(&id, TaskStatus::InProgress, MoveDetail::default(), at())
                .expect_err("a blocked leaf unblocks to PENDING"),
        );
        assert!(matches!(
            &refusal,
            ProjectError::IllegalTransition { allowed, .. } if allowed == &[TaskStatus::Pending]
        ));
        assert_eq!(refusal.next_steps(), vec![NextStep::Unblock { task: id }]);
    }
}
