//! The bridge between a cairn project and a Claude Code task list: push (project → list), pull
//! (list → project, every change through the project's state machine) and status (what differs,
//! both ways).
//!
//! **Links.** cairn writes its own fields under `metadata.cairn` of each task file it writes:
//! `project`, `task` (`T-007`), `status` (the project status the file was last synced with),
//! `level`, `priority`. A file with that object is *linked* to that task; one without it was
//! created by someone else (Claude Code's `TaskCreate`, a skill) and is *foreign*. Project task
//! `T-007` goes to file `7` (`T-007` ⇄ `"7"`) unless a file is already linked to it — a task
//! pull created from list task `12` stays linked to `12`.
//!
//! **Who changed what.** The synced `status` is the base of a three-way comparison: pull applies
//! a list status only when it differs from the base (the list changed), so a project change made
//! since the last sync is never undone by a pull. Push writes the project's view; it never
//! touches a file it did not write (a foreign file at a task's number is a conflict, reported)
//! and removes only linked files whose task is gone or cancelled.
//!
//! **Statuses.** Project → list: PENDING, IN_RESEARCH, RESEARCHED, BLOCKED → `pending`;
//! IN_PROGRESS, VALIDATING → `in_progress`; COMPLETE → `completed`; CANCELLED tasks are not
//! mirrored (Claude Code has no such status). List → project: `completed` → COMPLETE by the
//! legal path (through IN_PROGRESS from a not-started task), `in_progress` → IN_PROGRESS,
//! `pending` → PENDING (a reset); each step is a [`ProjectService::move_task`], so the rules
//! decide, and a refusal is reported, never forced.
//!
//! **Subjects and descriptions.** `metadata.cairn` also keeps the `subject` and `description`
//! last synced, the base of the same three-way comparison: a field the list changed and the
//! project did not is pulled into the task's title or description as one
//! [`ProjectService::edit_task`] (logged TASK_UPDATED like any edit); a field changed on both
//! sides, differently, is refused and reported with both values — the project keeps its own, the
//! base stays, so every pull reports it again until someone settles it (`cairn task edit` takes
//! the list's, `cairn tasklist push` writes the project's over it). Without a synced value (a
//! file from an older cairn) the project's own is taken as the base, as for the status.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::store::{
    CAIRN_METADATA_KEY, FileProblem, ListId, ListRead, PointerState, TaskListStore, task_order,
};
use super::task::{ClaudeTask, ClaudeTaskStatus};
use crate::Error;
use crate::execution::ExecutionError;
use crate::project::service::ProjectService;
use crate::project::{
    FieldChange, MoveDetail, NewTask, ProjectId, ProjectState, Task, TaskEdit, TaskId, TaskStatus,
};

/// Where the list id came from, in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ListIdSource {
    /// Named on the command line.
    Flag,
    /// `CLAUDE_CODE_TASK_LIST_ID` in the environment.
    Environment,
    /// `CLAUDE_CODE_TASK_LIST_ID` in the `env` block of the repository's Claude Code settings.
    Settings,
    /// The project id (commands).
    Project,
    /// The Claude Code session id (hooks: Claude Code's own default list).
    Session,
}

/// The candidates for the list id; the first one given wins. Blank values count as absent.
#[derive(Debug, Clone, Default)]
pub struct ListIdSources {
    pub flag: Option<String>,
    pub environment: Option<String>,
    pub settings: Option<String>,
    /// Claude Code's session id, the last resort of a hook; commands fall back to the project.
    pub session: Option<String>,
}

impl ListIdSources {
    /// The list to use and where its id came from. An id that could leave the tasks root is
    /// refused (`InvalidListId`) rather than skipped: the user named it and should know.
    pub fn resolve(&self, project: &ProjectId) -> Result<(ListId, ListIdSource), ExecutionError> {
        let given = |v: &Option<String>| {
            v.as_deref()
                .filter(|v| !v.trim().is_empty())
                .map(str::to_owned)
        };
        let (id, source) = if let Some(id) = given(&self.flag) {
            (id, ListIdSource::Flag)
        } else if let Some(id) = given(&self.environment) {
            (id, ListIdSource::Environment)
        } else if let Some(id) = given(&self.settings) {
            (id, ListIdSource::Settings)
        } else if let Some(id) = given(&self.session) {
            (id, ListIdSource::Session)
        } else {
            (project.to_string(), ListIdSource::Project)
        };
        Ok((ListId::parse(&id)?, source))
    }
}

/// Claude Code's status for a project status; `None` for CANCELLED, which is not mirrored.
pub fn list_status(status: TaskStatus) -> Option<ClaudeTaskStatus> {
    use TaskStatus::*;
    match status {
        Pending | InResearch | Researched | Blocked => Some(ClaudeTaskStatus::Pending),
        InProgress | Validating => Some(ClaudeTaskStatus::InProgress),
        Complete => Some(ClaudeTaskStatus::Completed),
        Cancelled => None,
    }
}

/// The project moves that bring a task in `from` to what the list status means; empty when it
/// already means that. The last move of a non-empty path is the status the list asks for.
pub fn path_to(from: TaskStatus, wanted: ClaudeTaskStatus) -> Vec<TaskStatus> {
    use TaskStatus::*;
    if list_status(from) == Some(wanted) {
        return Vec::new();
    }
    match (wanted, from) {
        (ClaudeTaskStatus::Completed, Pending | InResearch | Researched) => {
            vec![InProgress, Complete]
        }
        (ClaudeTaskStatus::Completed, _) => vec![Complete],
        (ClaudeTaskStatus::InProgress, _) => vec![InProgress],
        (ClaudeTaskStatus::Pending, _) => vec![Pending],
    }
}

/// What a task file's `metadata.cairn` says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Claim {
    /// Written by cairn for this project's task; the status it was last synced at.
    Linked(TaskId, Option<TaskStatus>),
    /// Written by cairn for another project.
    OtherProject(String),
    /// Written by cairn, but its `cairn` object names no task.
    Unreadable,
    /// Not written by cairn.
    Foreign,
}

fn claim(task: &ClaudeTask, project: &ProjectId) -> Claim {
    let Some(cairn) = task
        .metadata
        .as_ref()
        .and_then(|m| m.get(CAIRN_METADATA_KEY))
        .and_then(Value::as_object)
    else {
        return Claim::Foreign;
    };
    match cairn.get("project").and_then(Value::as_str) {
        Some(p) if p != project.as_str() => return Claim::OtherProject(p.to_owned()),
        _ => {}
    }
    let Some(id) = cairn
        .get("task")
        .and_then(Value::as_str)
        .and_then(|t| TaskId::try_from(t.to_owned()).ok())
    else {
        return Claim::Unreadable;
    };
    let base = cairn
        .get("status")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok());
    Claim::Linked(id, base)
}

/// `task` with its `metadata.cairn` naming `of` as it is now (the synced status included);
/// every other field and metadata key is kept.
fn linked(mut task: ClaudeTask, project: &ProjectId, of: &Task) -> ClaudeTask {
    // Taken whole, not cloned: `push` and `status` make one for every task of the project.
    let metadata = task.metadata.get_or_insert_with(Map::new);
    metadata.insert(
        CAIRN_METADATA_KEY.to_owned(),
        json!({
            "project": project,
            "task": of.id,
            "status": of.status,
            "level": of.level,
            "priority": of.priority,
            "subject": of.title,
            "description": of.description.as_deref().unwrap_or_default(),
        }),
    );
    task
}

/// A text field the bridge carries both ways: its name in the list file, in the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextField {
    Subject,
    Description,
}

impl TextField {
    const ALL: [TextField; 2] = [TextField::Subject, TextField::Description];

    fn list_name(self) -> &'static str {
        match self {
            Self::Subject => "subject",
            Self::Description => "description",
        }
    }

    fn project_name(self) -> &'static str {
        match self {
            Self::Subject => "title",
            Self::Description => "description",
        }
    }

    fn in_list(self, file: &ClaudeTask) -> String {
        match self {
            Self::Subject => file.subject.trim().to_owned(),
            Self::Description => file.description.trim().to_owned(),
        }
    }

    fn in_project(self, task: &Task) -> String {
        match self {
            Self::Subject => task.title.clone(),
            Self::Description => task.description.clone().unwrap_or_default(),
        }
    }

    /// The value last synced, from the file's `metadata.cairn`.
    fn synced(self, file: &ClaudeTask) -> Option<String> {
        file.metadata
            .as_ref()?
            .get(CAIRN_METADATA_KEY)?
            .get(self.list_name())?
            .as_str()
            .map(|v| v.trim().to_owned())
    }
}

/// One text field that differs between a linked file and its task.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TextDiff {
    field: TextField,
    project: String,
    list: String,
}

/// The text fields a linked file changed since the last sync: those the project left alone
/// (`take`, pulled) and those the project changed too, differently (`clash`, refused).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct TextChanges {
    take: Vec<TextDiff>,
    clash: Vec<TextDiff>,
}

impl TextChanges {
    fn is_empty(&self) -> bool {
        self.take.is_empty() && self.clash.is_empty()
    }

    /// The edit that takes the list's values.
    fn edit(&self) -> TaskEdit {
        let mut edit = TaskEdit::default();
        for d in &self.take {
            match d.field {
                TextField::Subject => edit.title = Some(d.list.clone()),
                TextField::Description => edit.description = Some(d.list.clone()),
            }
        }
        edit
    }

    /// Why the clashing fields were not pulled, with both values.
    fn clash_reason(&self, task: &TaskId) -> String {
        let fields: Vec<String> = self
            .clash
            .iter()
            .map(|d| {
                format!(
                    "{} (list {:?}, project {:?})",
                    d.field.list_name(),
                    d.list,
                    d.project
                )
            })
            .collect();
        format!(
            "{task} changed in both the list and the project since the last sync: {}; the \
             project keeps its own",
            fields.join(", ")
        )
    }
}

fn text_changes(file: &ClaudeTask, task: &Task) -> TextChanges {
    let mut out = TextChanges::default();
    for field in TextField::ALL {
        let list = field.in_list(file);
        let project = field.in_project(task);
        if list == project {
            continue;
        }
        let synced = field.synced(file).unwrap_or_else(|| project.clone());
        if list == synced {
            // Only the project changed: push's to send.
            continue;
        }
        let diff = TextDiff {
            field,
            project: project.clone(),
            list,
        };
        if project == synced {
            out.take.push(diff);
        } else {
            out.clash.push(diff);
        }
    }
    out
}

/// [`linked`], keeping the synced values of `clash`ing fields as they were in `file`, so the
/// clash is seen again on the next pull instead of passing for a list edit.
fn relinked(file: &ClaudeTask, project: &ProjectId, of: &Task, clash: &[TextDiff]) -> ClaudeTask {
    let mut out = linked(file.clone(), project, of);
    let Some(cairn) = out
        .metadata
        .as_mut()
        .and_then(|m| m.get_mut(CAIRN_METADATA_KEY))
        .and_then(Value::as_object_mut)
    else {
        return out;
    };
    for d in clash {
        match d.field.synced(file) {
            Some(old) => cairn.insert(d.field.list_name().to_owned(), Value::String(old)),
            None => cairn.remove(d.field.list_name()),
        };
    }
    out
}

/// Puts back the synced status `file` had: a status change pull refused must be seen again.
fn restore_synced_status(task: &mut ClaudeTask, file: &ClaudeTask) {
    let old = file
        .metadata
        .as_ref()
        .and_then(|m| m.get(CAIRN_METADATA_KEY))
        .and_then(|c| c.get("status"))
        .cloned();
    if let Some(cairn) = task
        .metadata
        .as_mut()
        .and_then(|m| m.get_mut(CAIRN_METADATA_KEY))
        .and_then(Value::as_object_mut)
    {
        match old {
            Some(old) => cairn.insert("status".to_owned(), old),
            None => cairn.remove("status"),
        };
    }
}

/// Who holds the file a task would be pushed to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Holder {
    /// A file cairn did not write (created in Claude Code and not pulled yet).
    NotCairn,
    OtherProject {
        project: String,
    },
    OtherTask {
        task: TaskId,
    },
}

/// A project task push could not write, because its file belongs to something else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    pub task: TaskId,
    pub list_task: String,
    pub held_by: Holder,
}

/// A list file a sync left alone, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Ignored {
    OtherProject {
        list_task: String,
        project: String,
    },
    /// Linked to a task the project does not have (push removes it).
    UnknownTask {
        list_task: String,
        task: TaskId,
    },
    /// Its `metadata.cairn` names no task.
    UnreadableLink {
        list_task: String,
    },
    /// A second file linked to a task that already has one.
    DuplicateLink {
        list_task: String,
        task: TaskId,
    },
}

/// One list file push would write (or wrote).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListWrite {
    pub task: TaskId,
    pub list_task: String,
    /// Whether the file is new.
    pub created: bool,
    /// The fields that change (`status`, `subject`, `blockedBy`, …); every field when created.
    pub fields: Vec<&'static str>,
}

/// What push did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PushReport {
    pub project: ProjectId,
    pub list: ListId,
    pub list_source: ListIdSource,
    pub written: Vec<ListWrite>,
    pub unchanged: usize,
    /// Linked files removed because their task was cancelled or is gone.
    pub removed: Vec<String>,
    pub conflicts: Vec<Conflict>,
    pub ignored: Vec<Ignored>,
    pub problems: Vec<FileProblem>,
}

/// A list status change pull applied (or would apply).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectMove {
    pub list_task: String,
    pub task: TaskId,
    pub from: TaskStatus,
    pub wanted: ClaudeTaskStatus,
    /// The status reached (pull), or the path it would take (status).
    pub to: Vec<TaskStatus>,
}

/// A list task pull turned (or would turn) into a project task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectCreate {
    pub list_task: String,
    pub subject: String,
    pub wanted: ClaudeTaskStatus,
    /// The new task (pull); `None` in a status report.
    pub task: Option<TaskId>,
    /// Its status after pull.
    pub status: Option<TaskStatus>,
}

/// A subject or description edited in the list that pull took (or would take) into the
/// project task's title or description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectEdit {
    pub list_task: String,
    pub task: TaskId,
    /// Project field (`title`, `description`): old → new.
    pub changes: Vec<FieldChange>,
}

/// A list change the project's rules refused; nothing was forced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub list_task: String,
    /// `None` when creating the task itself was refused.
    pub task: Option<TaskId>,
    /// The list file's status (what it asks for, when the refusal is of a status change).
    pub wanted: ClaudeTaskStatus,
    /// The list fields (`subject`, `description`) whose edit was refused; empty when the
    /// refusal is of a status change or of creating the task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<&'static str>,
    /// The status the task was left in (after any steps that did go through).
    pub left_at: Option<TaskStatus>,
    pub reason: String,
}

/// What pull did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PullReport {
    pub project: ProjectId,
    pub list: ListId,
    pub list_source: ListIdSource,
    pub moved: Vec<ProjectMove>,
    /// Subjects and descriptions edited in the list, taken into the project.
    pub edited: Vec<ProjectEdit>,
    pub created: Vec<ProjectCreate>,
    pub refused: Vec<Refusal>,
    pub unchanged: usize,
    pub ignored: Vec<Ignored>,
    pub problems: Vec<FileProblem>,
}

/// What differs, both ways, without changing anything.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusReport {
    pub project: ProjectId,
    pub list: ListId,
    pub list_source: ListIdSource,
    /// Mirrored tasks on which list and project agree.
    pub in_sync: usize,
    /// What push would write (the project changed, or the list lacks the task).
    pub push_would_write: Vec<ListWrite>,
    /// Linked files push would remove.
    pub push_would_remove: Vec<String>,
    /// List status changes pull would apply.
    pub pull_would_move: Vec<ProjectMove>,
    /// Subjects and descriptions edited in the list that pull would take (full values).
    pub pull_would_edit: Vec<ProjectEdit>,
    /// Subjects and descriptions changed on both sides since the last sync, which pull refuses
    /// (each change: the project's value → the list's).
    pub edit_clashes: Vec<ProjectEdit>,
    /// List tasks pull would add to the project.
    pub pull_would_create: Vec<ProjectCreate>,
    pub conflicts: Vec<Conflict>,
    pub ignored: Vec<Ignored>,
    pub problems: Vec<FileProblem>,
    /// The list's `execution_pointer.md`: the live session it names, or why it was refused.
    pub execution_pointer: Option<PointerState>,
}

impl StatusReport {
    pub fn is_in_sync(&self) -> bool {
        self.push_would_write.is_empty()
            && self.push_would_remove.is_empty()
            && self.pull_would_move.is_empty()
            && self.pull_would_edit.is_empty()
            && self.edit_clashes.is_empty()
            && self.pull_would_create.is_empty()
            && self.conflicts.is_empty()
    }
}

/// The list read against the project: which file is linked to which task.
struct Index<'a> {
    links: HashMap<TaskId, &'a ClaudeTask>,
    bases: HashMap<String, Option<TaskStatus>>,
    foreign: Vec<&'a ClaudeTask>,
    ignored: Vec<Ignored>,
}

fn index<'a>(project: &ProjectId, state: &ProjectState, read: &'a ListRead) -> Index<'a> {
    let mut index = Index {
        links: HashMap::new(),
        bases: HashMap::new(),
        foreign: Vec::new(),
        ignored: Vec::new(),
    };
    for task in &read.tasks {
        match claim(task, project) {
            Claim::Linked(id, base) => {
                if state.tasks.get(&id).is_none() {
                    index.ignored.push(Ignored::UnknownTask {
                        list_task: task.id.clone(),
                        task: id,
                    });
                } else if index.links.contains_key(&id) {
                    index.ignored.push(Ignored::DuplicateLink {
                        list_task: task.id.clone(),
                        task: id,
                    });
                } else {
                    index.bases.insert(task.id.clone(), base);
                    index.links.insert(id, task);
                }
            }
            Claim::OtherProject(p) => index.ignored.push(Ignored::OtherProject {
                list_task: task.id.clone(),
                project: p,
            }),
            Claim::Unreadable => index.ignored.push(Ignored::UnreadableLink {
                list_task: task.id.clone(),
            }),
            Claim::Foreign => index.foreign.push(task),
        }
    }
    index
}

struct PushPlan {
    writes: Vec<(ListWrite, ClaudeTask)>,
    unchanged: usize,
    removals: Vec<String>,
    conflicts: Vec<Conflict>,
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort_by(|a, b| task_order(a).cmp(&task_order(b)));
    ids.dedup();
    ids
}

fn changed_fields(old: &ClaudeTask, new: &ClaudeTask) -> Vec<&'static str> {
    let mut fields = Vec::new();
    let mut check = |name: &'static str, same: bool| {
        if !same {
            fields.push(name);
        }
    };
    check("subject", old.subject == new.subject);
    check("description", old.description == new.description);
    check("activeForm", old.active_form == new.active_form);
    check("status", old.status == new.status);
    check("blocks", old.blocks == new.blocks);
    check("blockedBy", old.blocked_by == new.blocked_by);
    check("owner", old.owner == new.owner);
    check("metadata", old.metadata == new.metadata);
    fields
}

const ALL_FIELDS: [&str; 8] = [
    "subject",
    "description",
    "activeForm",
    "status",
    "blocks",
    "blockedBy",
    "owner",
    "metadata",
];

fn plan_push(
    project: &ProjectId,
    state: &ProjectState,
    read: &ListRead,
    index: &Index<'_>,
) -> PushPlan {
    let by_id: HashMap<&str, &ClaudeTask> = read.tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    let mirrored: Vec<&Task> = state
        .tasks
        .tasks
        .iter()
        .filter(|t| list_status(t.status).is_some())
        .collect();
    let target: HashMap<&TaskId, String> = mirrored
        .iter()
        .map(|t| {
            let file = match index.links.get(&t.id) {
                Some(linked) => linked.id.clone(),
                None => t.id.number().to_string(),
            };
            (&t.id, file)
        })
        .collect();
    let mut dependents: HashMap<&TaskId, Vec<String>> = HashMap::new();
    for t in &mirrored {
        for d in &t.dependencies {
            if let Some(file) = target.get(&t.id) {
                dependents.entry(d).or_default().push(file.clone());
            }
        }
    }
    let mut plan = PushPlan {
        writes: Vec::new(),
        unchanged: 0,
        removals: Vec::new(),
        conflicts: Vec::new(),
    };
    for t in &mirrored {
        let file = &target[&t.id];
        let existing = by_id.get(file.as_str()).copied();
        if let Some(e) = existing {
            let held_by = match claim(e, project) {
                Claim::Linked(id, _) if id == t.id => None,
                Claim::Linked(id, _) => Some(Holder::OtherTask { task: id }),
                Claim::OtherProject(project) => Some(Holder::OtherProject { project }),
                Claim::Unreadable | Claim::Foreign => Some(Holder::NotCairn),
            };
            if let Some(held_by) = held_by {
                plan.conflicts.push(Conflict {
                    task: t.id.clone(),
                    list_task: file.clone(),
                    held_by,
                });
                continue;
            }
        }
        let base = existing.cloned().unwrap_or_else(|| ClaudeTask {
            id: file.clone(),
            subject: String::new(),
            description: String::new(),
            active_form: String::new(),
            status: ClaudeTaskStatus::Pending,
            blocks: Vec::new(),
            blocked_by: Vec::new(),
            owner: None,
            metadata: None,
            extra: Map::new(),
        });
        let active_form = Some(&base.active_form)
            .filter(|a| !a.trim().is_empty())
            .cloned()
            .unwrap_or_else(|| t.title.clone());
        let owner = base.owner.clone().or_else(|| t.claimed_by.clone());
        let desired = linked(
            ClaudeTask {
                subject: t.title.clone(),
                description: t.description.clone().unwrap_or_default(),
                // Claude Code shows activeForm in its spinner; keep one it (or a user) chose.
                active_form,
                status: list_status(t.status).expect("mirrored tasks have a list status"),
                blocks: sorted(dependents.get(&t.id).cloned().unwrap_or_default()),
                blocked_by: sorted(
                    t.dependencies
                        .iter()
                        .filter_map(|d| target.get(d).cloned())
                        .collect(),
                ),
                owner,
                ..base
            },
            project,
            t,
        );
        match existing {
            Some(e) if *e == desired => plan.unchanged += 1,
            Some(e) => plan.writes.push((
                ListWrite {
                    task: t.id.clone(),
                    list_task: file.clone(),
                    created: false,
                    fields: changed_fields(e, &desired),
                },
                desired,
            )),
            None => plan.writes.push((
                ListWrite {
                    task: t.id.clone(),
                    list_task: file.clone(),
                    created: true,
                    fields: ALL_FIELDS.to_vec(),
                },
                desired,
            )),
        }
    }
    let kept: HashSet<&TaskId> = mirrored.iter().map(|t| &t.id).collect();
    plan.removals = sorted(
        index
            .links
            .iter()
            .filter(|(id, _)| !kept.contains(id))
            .map(|(_, file)| file.id.clone())
            .chain(index.ignored.iter().filter_map(|i| match i {
                Ignored::UnknownTask { list_task, .. } => Some(list_task.clone()),
                _ => None,
            }))
            .collect(),
    );
    plan
}

/// One thing pull would do.
enum PullStep<'a> {
    Move {
        file: &'a ClaudeTask,
        task: &'a Task,
        path: Vec<TaskStatus>,
    },
    /// The list already says what the project does; only the synced status is stale.
    Rebase {
        file: &'a ClaudeTask,
        task: &'a Task,
    },
    Create {
        file: &'a ClaudeTask,
    },
}

struct PullPlan<'a> {
    /// Text edits first: a status step after one writes the file's new synced values.
    edits: Vec<(&'a ClaudeTask, &'a Task, TextChanges)>,
    steps: Vec<PullStep<'a>>,
    unchanged: usize,
}

fn plan_pull<'a>(state: &'a ProjectState, index: &Index<'a>) -> PullPlan<'a> {
    let mut plan = PullPlan {
        edits: Vec::new(),
        steps: Vec::new(),
        unchanged: 0,
    };
    let mut linked: Vec<(&TaskId, &&ClaudeTask)> = index.links.iter().collect();
    linked.sort_by(|a, b| task_order(&a.1.id).cmp(&task_order(&b.1.id)));
    for (id, file) in linked {
        let task = state
            .tasks
            .get(id)
            .expect("the index links known tasks only");
        let text = text_changes(file, task);
        let edits = !text.is_empty();
        let takes = !text.take.is_empty();
        if edits {
            plan.edits.push((file, task, text));
        }
        let base = index.bases.get(&file.id).copied().flatten();
        // Without a synced status, the project's own is the best guess of what was pushed.
        let synced = base.unwrap_or(task.status);
        if list_status(synced) == Some(file.status) {
            // The list did not change the status since the sync; a project change since is
            // push's to send. A text edit taken still has its synced values to record.
            if takes {
                plan.steps.push(PullStep::Rebase { file, task });
            } else if !edits {
                plan.unchanged += 1;
            }
            continue;
        }
        let path = path_to(task.status, file.status);
        if path.is_empty() {
            plan.steps.push(PullStep::Rebase { file, task });
        } else {
            plan.steps.push(PullStep::Move { file, task, path });
        }
    }
    for file in &index.foreign {
        plan.steps.push(PullStep::Create { file });
    }
    plan
}

/// The use cases of the bridge. Borrows the project service: every project change goes through
/// it, so the bridge has no rules of its own about tasks.
#[derive(Debug)]
pub struct TaskListService<'a> {
    projects: &'a ProjectService,
    lists: Arc<dyn TaskListStore>,
}

impl<'a> TaskListService<'a> {
    pub fn new(projects: &'a ProjectService, lists: Arc<dyn TaskListStore>) -> Self {
        Self { projects, lists }
    }

    /// Writes the project's tasks into the list: every mirrored task whose file differs from
    /// what the project says, and removes linked files of cancelled or vanished tasks. Files
    /// cairn did not write are never written over or removed (they are conflicts).
    pub async fn push(
        &self,
        project: &ProjectId,
        sources: &ListIdSources,
    ) -> Result<PushReport, Error> {
        let (list, list_source) = sources.resolve(project).map_err(crate::DomainError::from)?;
        let state = self.projects.load(project).await?;
        let read = self.lists.load(&list).await?;
        let index = index(project, &state, &read);
        let plan = plan_push(project, &state, &read, &index);
        let mut written = Vec::new();
        for (write, task) in plan.writes {
            self.lists.write_task(&list, &task).await?;
            written.push(write);
        }
        let mut removed = Vec::new();
        for file in plan.removals {
            if self.lists.remove_task(&list, &file).await? == super::store::Removal::Removed {
                removed.push(file);
            }
        }
        Ok(PushReport {
            project: project.clone(),
            list,
            list_source,
            written,
            unchanged: plan.unchanged,
            removed,
            conflicts: plan.conflicts,
            ignored: index.ignored,
            problems: read.problems,
        })
    }

    /// Brings the list's changes into the project: a status the list changed since the last
    /// sync moves the task through the state machine; a task created in the list becomes a
    /// project task (and its file is linked to it). A refused change is reported, and its file
    /// keeps its old synced status, so the next pull reports it again until someone acts.
    pub async fn pull(
        &self,
        project: &ProjectId,
        sources: &ListIdSources,
    ) -> Result<PullReport, Error> {
        let (list, list_source) = sources.resolve(project).map_err(crate::DomainError::from)?;
        let state = self.projects.load(project).await?;
        let read = self.lists.load(&list).await?;
        self.pull_read(project, list, list_source, &state, &read)
            .await
    }

    /// [`Self::pull`] if the list holds at least one file linked to this project (cairn pushed
    /// it there); `None`, having changed nothing, otherwise. What a hook calls after Claude
    /// Code's task tools, so an unrelated list never turns into project tasks.
    pub async fn pull_if_linked(
        &self,
        project: &ProjectId,
        sources: &ListIdSources,
    ) -> Result<Option<PullReport>, Error> {
        let (list, list_source) = sources.resolve(project).map_err(crate::DomainError::from)?;
        let read = self.lists.load(&list).await?;
        let any_linked = read
            .tasks
            .iter()
            .any(|t| matches!(claim(t, project), Claim::Linked(..)));
        if !any_linked {
            return Ok(None);
        }
        let state = self.projects.load(project).await?;
        Ok(Some(
            self.pull_read(project, list, list_source, &state, &read)
                .await?,
        ))
    }

    async fn pull_read(
        &self,
        project: &ProjectId,
        list: ListId,
        list_source: ListIdSource,
        state: &ProjectState,
        read: &ListRead,
    ) -> Result<PullReport, Error> {
        let index = index(project, state, read);
        let plan = plan_pull(state, &index);
        // List ids → project tasks, for the blockedBy of tasks created in the list.
        let mut by_file: HashMap<String, TaskId> = index
            .links
            .iter()
            .map(|(id, file)| (file.id.clone(), id.clone()))
            .collect();
        let mut report = PullReport {
            project: project.clone(),
            list: list.clone(),
            list_source,
            moved: Vec::new(),
            edited: Vec::new(),
            created: Vec::new(),
            refused: Vec::new(),
            unchanged: plan.unchanged,
            ignored: Vec::new(),
            problems: Vec::new(),
        };
        // Per list file: the task as the edit left it, and the clashing fields whose synced
        // values must stay.
        let mut after_edit: HashMap<&str, Task> = HashMap::new();
        let mut clashes: HashMap<&str, &[TextDiff]> = HashMap::new();
        for (file, task, text) in &plan.edits {
            if !text.clash.is_empty() {
                clashes.insert(file.id.as_str(), &text.clash);
                report.refused.push(Refusal {
                    list_task: file.id.clone(),
                    task: Some(task.id.clone()),
                    wanted: file.status,
                    fields: text.clash.iter().map(|d| d.field.list_name()).collect(),
                    left_at: Some(task.status),
                    reason: text.clash_reason(&task.id),
                });
            }
            if text.take.is_empty() {
                continue;
            }
            match self
                .projects
                .edit_task(project, &task.id, text.edit())
                .await
            {
                Ok(edited) => {
                    report.edited.push(ProjectEdit {
                        list_task: file.id.clone(),
                        task: task.id.clone(),
                        changes: edited.changes,
                    });
                    after_edit.insert(file.id.as_str(), edited.task);
                }
                Err(Error::Domain(e)) => report.refused.push(Refusal {
                    list_task: file.id.clone(),
                    task: Some(task.id.clone()),
                    wanted: file.status,
                    fields: text.take.iter().map(|d| d.field.list_name()).collect(),
                    left_at: Some(task.status),
                    reason: e.to_string(),
                }),
                Err(e) => return Err(e),
            }
        }
        let taken: HashSet<&str> = plan
            .edits
            .iter()
            .filter(|(_, _, text)| !text.take.is_empty())
            .map(|(file, _, _)| file.id.as_str())
            .collect();
        let clash_of = |file: &ClaudeTask| clashes.get(file.id.as_str()).copied().unwrap_or(&[]);
        for step in plan.steps {
            match step {
                PullStep::Rebase { file, task } => {
                    let edited = after_edit.get(file.id.as_str());
                    self.lists
                        .write_task(
                            &list,
                            &relinked(file, project, edited.unwrap_or(task), clash_of(file)),
                        )
                        .await?;
                    if !taken.contains(file.id.as_str()) {
                        report.unchanged += 1;
                    }
                }
                PullStep::Move { file, task, path } => {
                    let (reached, refusal) = self.walk(project, task, &path).await?;
                    if let Some(reached) = &reached {
                        self.lists
                            .write_task(&list, &relinked(file, project, reached, clash_of(file)))
                            .await?;
                        if refusal.is_none() {
                            report.moved.push(ProjectMove {
                                list_task: file.id.clone(),
                                task: task.id.clone(),
                                from: task.status,
                                wanted: file.status,
                                to: vec![reached.status],
                            });
                        }
                    } else if let Some(edited) = after_edit.get(file.id.as_str()) {
                        // The status was refused but the edit went through: record its values,
                        // keeping the old synced status so the refusal is seen again.
                        let mut kept = relinked(file, project, edited, clash_of(file));
                        restore_synced_status(&mut kept, file);
                        self.lists.write_task(&list, &kept).await?;
                    }
                    if let Some(reason) = refusal {
                        report.refused.push(Refusal {
                            list_task: file.id.clone(),
                            task: Some(task.id.clone()),
                            wanted: file.status,
                            fields: Vec::new(),
                            left_at: Some(reached.map_or(task.status, |t| t.status)),
                            reason,
                        });
                    }
                }
                PullStep::Create { file } => {
                    let new = NewTask {
                        title: file.subject.trim().to_owned(),
                        description: Some(file.description.trim().to_owned())
                            .filter(|d| !d.is_empty()),
                        dependencies: file
                            .blocked_by
                            .iter()
                            .filter_map(|b| by_file.get(b).cloned())
                            .collect(),
                        ..NewTask::default()
                    };
                    let added = match self.projects.add_task(project, new).await {
                        Ok(task) => task,
                        Err(Error::Domain(e)) => {
                            report.refused.push(Refusal {
                                list_task: file.id.clone(),
                                task: None,
                                wanted: file.status,
                                fields: Vec::new(),
                                left_at: None,
                                reason: e.to_string(),
                            });
                            continue;
                        }
                        Err(e) => return Err(e),
                    };
                    by_file.insert(file.id.clone(), added.id.clone());
                    let (reached, refusal) = self
                        .walk(project, &added, &path_to(added.status, file.status))
                        .await?;
                    let now = reached.unwrap_or(added);
                    self.lists
                        .write_task(&list, &linked(file.clone(), project, &now))
                        .await?;
                    if let Some(reason) = refusal {
                        report.refused.push(Refusal {
                            list_task: file.id.clone(),
                            task: Some(now.id.clone()),
                            wanted: file.status,
                            fields: Vec::new(),
                            left_at: Some(now.status),
                            reason,
                        });
                    }
                    report.created.push(ProjectCreate {
                        list_task: file.id.clone(),
                        subject: file.subject.clone(),
                        wanted: file.status,
                        task: Some(now.id.clone()),
                        status: Some(now.status),
                    });
                }
            }
        }
        report.ignored = index.ignored;
        report.problems = read.problems.clone();
        Ok(report)
    }

    /// Takes `task` along `path`, one move at a time, stopping at the first refusal. Returns the
    /// task after the last move that went through (`None` if none did) and the refusal's words.
    async fn walk(
        &self,
        project: &ProjectId,
        task: &Task,
        path: &[TaskStatus],
    ) -> Result<(Option<Task>, Option<String>), Error> {
        let mut reached = None;
        for to in path {
            match self
                .projects
                .move_task(project, &task.id, *to, MoveDetail::default())
                .await
            {
                Ok(moved) => reached = Some(moved.task),
                Err(Error::Domain(e)) => return Ok((reached, Some(e.to_string()))),
                Err(e) => return Err(e),
            }
        }
        Ok((reached, None))
    }

    /// What differs between the project and the list, both ways; changes nothing.
    pub async fn status(
        &self,
        project: &ProjectId,
        sources: &ListIdSources,
    ) -> Result<StatusReport, Error> {
        let (list, list_source) = sources.resolve(project).map_err(crate::DomainError::from)?;
        let state = self.projects.load(project).await?;
        let read = self.lists.load(&list).await?;
        let index = index(project, &state, &read);
        let push = plan_push(project, &state, &read, &index);
        let pull = plan_pull(&state, &index);
        let mut pull_would_move = Vec::new();
        let mut pull_would_create = Vec::new();
        for step in pull.steps {
            match step {
                PullStep::Move { file, task, path } => pull_would_move.push(ProjectMove {
                    list_task: file.id.clone(),
                    task: task.id.clone(),
                    from: task.status,
                    wanted: file.status,
                    to: path,
                }),
                PullStep::Rebase { .. } => {}
                PullStep::Create { file } => pull_would_create.push(ProjectCreate {
                    list_task: file.id.clone(),
                    subject: file.subject.clone(),
                    wanted: file.status,
                    task: None,
                    status: None,
                }),
            }
        }
        let as_edit = |file: &ClaudeTask, task: &Task, diffs: &[TextDiff]| ProjectEdit {
            list_task: file.id.clone(),
            task: task.id.clone(),
            changes: diffs
                .iter()
                .map(|d| FieldChange {
                    field: d.field.project_name(),
                    from: d.project.clone(),
                    to: d.list.clone(),
                })
                .collect(),
        };
        let mut pull_would_edit = Vec::new();
        let mut edit_clashes = Vec::new();
        for (file, task, text) in &pull.edits {
            if !text.take.is_empty() {
                pull_would_edit.push(as_edit(file, task, &text.take));
            }
            if !text.clash.is_empty() {
                edit_clashes.push(as_edit(file, task, &text.clash));
            }
        }
        let differing: HashSet<&TaskId> = push
            .writes
            .iter()
            .map(|(w, _)| &w.task)
            .chain(pull_would_move.iter().map(|m| &m.task))
            .chain(pull_would_edit.iter().map(|e| &e.task))
            .chain(edit_clashes.iter().map(|e| &e.task))
            .chain(push.conflicts.iter().map(|c| &c.task))
            .collect();
        let in_sync = state
            .tasks
            .tasks
            .iter()
            .filter(|t| list_status(t.status).is_some() && !differing.contains(&t.id))
            .count();
        Ok(StatusReport {
            project: project.clone(),
            list,
            list_source,
            in_sync,
            push_would_write: push.writes.into_iter().map(|(w, _)| w).collect(),
            push_would_remove: push.removals,
            pull_would_move,
            pull_would_edit,
            edit_clashes,
            pull_would_create,
            conflicts: push.conflicts,
            ignored: index.ignored,
            execution_pointer: read.pointer.clone(),
            problems: read.problems,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaskStatus::*;

    #[test]
    fn statuses_map_both_ways() {
        assert_eq!(list_status(Researched), Some(ClaudeTaskStatus::Pending));
        assert_eq!(list_status(Validating), Some(ClaudeTaskStatus::InProgress));
        assert_eq!(list_status(Complete), Some(ClaudeTaskStatus::Completed));
        assert_eq!(list_status(Cancelled), None);
        assert_eq!(
            path_to(Pending, ClaudeTaskStatus::Completed),
            [InProgress, Complete],
            "a task not started is started first"
        );
        assert_eq!(path_to(Validating, ClaudeTaskStatus::Completed), [Complete]);
        assert_eq!(path_to(Blocked, ClaudeTaskStatus::Pending), []);
        assert_eq!(path_to(InProgress, ClaudeTaskStatus::Pending), [Pending]);
        assert_eq!(
            path_to(Complete, ClaudeTaskStatus::InProgress),
            [InProgress]
        );
    }

    #[test]
    fn the_first_given_list_id_wins_and_bad_ones_are_refused() {
        let project: ProjectId = "demo".parse().unwrap();
        let mut sources = ListIdSources {
            settings: Some("from-settings".into()),
            environment: Some("  ".into()),
            ..ListIdSources::default()
        };
        assert_eq!(
            sources.resolve(&project).unwrap(),
            (
                ListId::parse("from-settings").unwrap(),
                ListIdSource::Settings
            )
        );
        sources.settings = None;
        assert_eq!(sources.resolve(&project).unwrap().1, ListIdSource::Project);
        sources.flag = Some("../../etc".into());
        assert!(matches!(
            sources.resolve(&project),
            Err(ExecutionError::InvalidListId { .. })
        ));
    }
}
