//! Bringing tasks in from other tools (`import`): the incoming tasks are diffed against the
//! project by external id, then applied as adds, edits, dependencies and moves through the same
//! rules as every other change — in one transaction, or (a dry run) on a copy that is never
//! saved. Parsing the other tools' files is `cairn-interop`'s; this module sees typed values.
//!
//! **External ids.** A task an import created carries `metadata.import = {"source", "id"}` (a
//! field other readers of tasks.json do not know, kept on every rewrite). The next import from
//! the same source finds its tasks by it, so re-importing an unchanged file changes nothing.
//!
//! **Statuses** are reached by the shortest path the transition table allows (a task done
//! elsewhere goes PENDING → IN_PROGRESS → COMPLETE, logged like any other move). Parents are
//! never moved: their status follows their children through the cascades. A move the rules
//! refuse (a COMPLETE task reopened elsewhere, a start whose dependencies are open) is reported,
//! never forced; moves are retried until none succeeds, so dependency order does not matter.
//!
//! **cairn's own format** is the exception: its tasks are cairn's state already, so they are
//! taken as they are, by task id (an equal task is unchanged, a different one replaced, a new
//! one appended), after the whole result is checked for dangling references and cycles. Going
//! through the moves instead would rewrite every timestamp, and `export cairn` followed by
//! `import cairn` must change no byte.

use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};

use serde::Serialize;
use serde_json::{Map, Value};

use super::error::ProjectError;
use super::events::ProjectEvent;
use super::graph;
use super::model::{Level, Priority, ProjectId, ProjectState, Task, TaskDoc, TaskId, TaskStatus};
use super::status;
use super::tasks::{MoveDetail, NewTask, TaskEdit};
use crate::error::DomainError;
use crate::time::Timestamp;

/// The key under a task's `metadata` object that links it to the task it was imported from.
pub const IMPORT_METADATA_KEY: &str = "import";

/// The source name of cairn's own tasks.json.
pub const CAIRN_SOURCE: &str = "cairn";

/// One task of another tool, in cairn's terms; `key`, `parent` and `dependencies` are that
/// tool's ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IncomingTask {
    pub key: String,
    pub title: String,
    pub description: Option<String>,
    pub status: TaskStatus,
    pub priority: Option<Priority>,
    pub level: Option<Level>,
    pub parent: Option<String>,
    pub dependencies: Vec<String>,
    pub tags: Vec<String>,
    /// Why it is blocked, when `status` is BLOCKED and the tool says.
    pub blocked_reason: Option<String>,
}

impl IncomingTask {
    pub fn new(key: impl Into<String>, title: impl Into<String>, status: TaskStatus) -> Self {
        Self {
            key: key.into(),
            title: title.into(),
            description: None,
            status,
            priority: None,
            level: None,
            parent: None,
            dependencies: Vec::new(),
            tags: Vec::new(),
            blocked_reason: None,
        }
    }
}

/// What an import brings.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// Tasks of another tool (`source` names it: `beads`, `taskmaster`, …).
    Foreign {
        source: String,
        tasks: Vec<IncomingTask>,
    },
    /// cairn's own tasks.json.
    Cairn(TaskDoc),
}

impl Incoming {
    pub fn source(&self) -> &str {
        match self {
            Incoming::Foreign { source, .. } => source,
            Incoming::Cairn(_) => CAIRN_SOURCE,
        }
    }

    /// How many tasks it holds (the progress total).
    pub fn len(&self) -> usize {
        match self {
            Incoming::Foreign { tasks, .. } => tasks.len(),
            Incoming::Cairn(doc) => doc.tasks.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A task the import created or changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportedTask {
    /// Its id in the source.
    pub key: String,
    pub task: TaskId,
    pub title: String,
    pub status: TaskStatus,
    /// What changed (`title`, `status: PENDING → COMPLETE`, `dependency T-003`); empty for a
    /// created task.
    pub changes: Vec<String>,
}

/// A dependency (or parent) naming an id the source does not hold and no earlier import
/// brought; left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnknownReference {
    pub key: String,
    pub reference: String,
    /// `dependency` or `parent`.
    pub kind: &'static str,
}

/// A change the project's rules refused; the rest of the import went ahead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportRefusal {
    pub key: String,
    pub task: Option<TaskId>,
    pub reason: String,
}

/// What an import did, or (dry run) would do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportReport {
    pub project: ProjectId,
    pub source: String,
    pub dry_run: bool,
    pub created: Vec<ImportedTask>,
    pub updated: Vec<ImportedTask>,
    pub unchanged: usize,
    pub unknown_references: Vec<UnknownReference>,
    pub refused: Vec<ImportRefusal>,
}

impl ImportReport {
    fn new(project: ProjectId, source: &str) -> Self {
        Self {
            project,
            source: source.to_owned(),
            dry_run: false,
            created: Vec::new(),
            updated: Vec::new(),
            unchanged: 0,
            unknown_references: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// Whether applying it writes anything.
    pub fn changes_something(&self) -> bool {
        !self.created.is_empty() || !self.updated.is_empty()
    }
}

/// The `metadata.import` link of a task: (source, id).
pub fn import_link(task: &Task) -> Option<(&str, &str)> {
    let link = task
        .extra
        .get("metadata")?
        .as_object()?
        .get(IMPORT_METADATA_KEY)?
        .as_object()?;
    Some((link.get("source")?.as_str()?, link.get("id")?.as_str()?))
}

fn set_import_link(task: &mut Task, source: &str, key: &str) {
    // Maps made to size: the link is on every task an import creates, and maps grown from empty
    // took a tenth of the memory a 100,000-task import touched.
    if task.extra.is_empty() {
        task.extra = Map::with_capacity(1);
    }
    let metadata = task
        .extra
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::with_capacity(1)));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::with_capacity(1));
    }
    if let Some(map) = metadata.as_object_mut() {
        let mut link = Map::with_capacity(2);
        link.insert("source".to_owned(), Value::String(source.to_owned()));
        link.insert("id".to_owned(), Value::String(key.to_owned()));
        map.insert(IMPORT_METADATA_KEY.to_owned(), Value::Object(link));
    }
}

/// Applies `incoming` to `state`: the events to log and the report. `progress` is told
/// (done, total) as tasks are handled. A refused change is reported and skipped; an error is
/// returned only for input that cannot be applied as a whole (duplicate ids, a parent cycle, a
/// cairn document with dangling references), with nothing changed.
pub fn apply(
    state: &mut ProjectState,
    incoming: &Incoming,
    at: Timestamp,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<(Vec<ProjectEvent>, ImportReport), DomainError> {
    match incoming {
        Incoming::Foreign { source, tasks } => apply_foreign(state, source, tasks, at, progress),
        Incoming::Cairn(doc) => apply_cairn(state, doc, progress),
    }
}

fn invalid(message: String) -> DomainError {
    DomainError::invalid("import", message)
}

/// The incoming tasks' indices with every parent before its children, and each one's index by
/// its key; duplicate keys and parent cycles refuse the whole import.
fn parents_first(
    tasks: &[IncomingTask],
) -> Result<(Vec<usize>, FxHashMap<&str, usize>), DomainError> {
    let mut by_key = FxHashMap::default();
    for (i, t) in tasks.iter().enumerate() {
        if by_key.insert(t.key.as_str(), i).is_some() {
            return Err(invalid(format!(
                "the id `{}` is used by two tasks; ids must be unique",
                t.key
            )));
        }
    }
    let mut order = Vec::with_capacity(tasks.len());
    let mut placed = vec![false; tasks.len()];
    for start in 0..tasks.len() {
        // Walk up to the first unplaced ancestor, then place the chain top-down.
        let mut chain = Vec::new();
        let mut seen = FxHashSet::default();
        let mut current = Some(start);
        while let Some(i) = current {
            if placed[i] {
                break;
            }
            if !seen.insert(i) {
                return Err(invalid(format!(
                    "task `{}` is its own ancestor (a parent cycle)",
                    tasks[i].key
                )));
            }
            chain.push(i);
            current = tasks[i]
                .parent
                .as_deref()
                .and_then(|p| by_key.get(p).copied());
        }
        for &i in chain.iter().rev() {
            placed[i] = true;
            order.push(i);
        }
    }
    Ok((order, by_key))
}

fn apply_foreign(
    state: &mut ProjectState,
    source: &str,
    tasks: &[IncomingTask],
    at: Timestamp,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<(Vec<ProjectEvent>, ImportReport), DomainError> {
    let (order, by_key) = parents_first(tasks)?;
    let mut report = ImportReport::new(state.project.id.clone(), source);
    // Room for a creation, a dependency and a status move per task, the usual import's events:
    // grown by doubling, a 100,000-task import copied them into fresh memory four times over.
    let mut events = Vec::with_capacity(tasks.len().saturating_mul(3));
    // The tasks earlier imports from this source created, by the source's id, with their
    // positions: the first task's with the id, as the rules find a task by its id (a damaged
    // list can hold an id twice).
    let earlier: FxHashMap<String, Linked> = (state.tasks.tasks.iter().enumerate())
        .filter_map(|(at, t)| match import_link(t) {
            Some((s, key)) if s == source => {
                let first = state.tasks.tasks.position(&t.id).unwrap_or(at);
                Some((key.to_owned(), (t.id.clone(), first)))
            }
            _ => None,
        })
        .collect();
    // Per incoming task, by its index (string maps by the source's ids were a third of a
    // 100,000-task import): the task it is linked to and where it is (an import only adds
    // tasks at the end, so positions hold; a lookup by id at each use was a fifth of this
    // function's time), whether it was created now, and what changed on an existing one.
    let mut linked: Vec<Option<Linked>> = tasks
        .iter()
        .map(|t| earlier.get(t.key.as_str()).cloned())
        .collect();
    let mut created = vec![false; tasks.len()];
    let mut changes: Vec<Vec<String>> = vec![Vec::new(); tasks.len()];
    // What `t`'s reference of `kind` by the source's id names: a task of this file (none if
    // its creation was refused), or one an earlier import created; a reference to neither is
    // reported.
    let find = |t: &IncomingTask,
                reference: &String,
                kind: &'static str,
                linked: &[Option<Linked>],
                report: &mut ImportReport| {
        if let Some(&j) = by_key.get(reference.as_str()) {
            return linked[j].as_ref().map(|(id, _)| id.clone());
        }
        let found = earlier.get(reference).map(|(id, _)| id.clone());
        if found.is_none() {
            report.unknown_references.push(UnknownReference {
                key: t.key.clone(),
                reference: reference.clone(),
                kind,
            });
        }
        found
    };
    let total = tasks.len();
    state.tasks.tasks.reserve(total);

    for (done, &i) in order.iter().enumerate() {
        progress(done, total);
        let t = &tasks[i];
        if let Some((id, pos)) = linked[i].clone() {
            let edit = edit_for(&state.tasks.tasks[pos], t);
            if !edit.is_empty() {
                match state.tasks.edit_task(&id, edit) {
                    Ok((fields, evs)) => {
                        events.extend(evs);
                        changes[i].extend(fields.iter().map(|f| f.field.to_owned()));
                    }
                    Err(e) => refuse(&mut report, t, Some(&id), &e),
                }
            }
            continue;
        }
        let parent = (t.parent.as_ref()).and_then(|p| find(t, p, "parent", &linked, &mut report));
        let new = NewTask {
            title: t.title.clone(),
            level: t.level,
            priority: t.priority,
            parent,
            description: t.description.clone(),
            tags: dedup(&t.tags),
            ..NewTask::default()
        };
        match state.tasks.add_task(new, at) {
            Ok((id, evs)) => {
                events.extend(evs);
                // Added last, with its parent's other children before it if it has one.
                let last = state.tasks.tasks.len() - 1;
                let pos = if state.tasks.tasks[last].id == id {
                    last
                } else {
                    state.tasks.tasks.position(&id).expect("just added")
                };
                let task = state.tasks.tasks.get_mut(pos).expect("just added");
                set_import_link(task, source, &t.key);
                linked[i] = Some((id, pos));
                created[i] = true;
            }
            Err(e) => refuse(&mut report, t, None, &e),
        }
    }
    progress(total, total);

    // Dependencies, once every task exists: the new ones added together and the graph checked
    // for a cycle once (see `add_together`); only if they close one are they added one by one.
    let mut wanted: Vec<(usize, Linked, TaskId)> = Vec::new();
    for &i in &order {
        let t = &tasks[i];
        let Some((id, pos)) = linked[i].clone() else {
            continue;
        };
        for dep in &t.dependencies {
            let Some(on) = find(t, dep, "dependency", &linked, &mut report) else {
                continue;
            };
            // A dependency the task has already is left as it is, as `add_dependency` leaves it,
            // without that call's scans and cycle check over the whole list.
            if id != on && state.tasks.tasks[pos].dependencies.contains(&on) {
                continue;
            }
            wanted.push((i, (id.clone(), pos), on));
        }
    }
    let added: Vec<(usize, TaskId, Result<TaskId, DomainError>)> =
        match add_together(&mut state.tasks, &wanted) {
            Some(added) => added
                .into_iter()
                .map(|(i, id, on)| (i, id, Ok(on)))
                .collect(),
            None => wanted
                .into_iter()
                .filter_map(
                    |(i, (id, _), on)| match state.tasks.add_dependency(&id, &on) {
                        Ok(events) if events.is_empty() => None,
                        Ok(_) => Some((i, id, Ok(on))),
                        Err(e) => Some((i, id, Err(e))),
                    },
                )
                .collect(),
        };
    for (i, id, added) in added {
        let t = &tasks[i];
        match added {
            Ok(on) => {
                events.push(ProjectEvent::DependencyAdded {
                    task: id,
                    dependency: on.clone(),
                });
                changes[i].push(format!("dependency {on}"));
            }
            Err(e) => refuse(&mut report, t, Some(&id), &e),
        }
    }

    // Statuses, in rounds until one moves nothing, so a task waiting on a dependency that
    // completes later in the list still gets there. A refused move left its task as it was, so
    // it is tried again only if it can now be taken: it waited on dependencies and one of them
    // moved since it was tried. Any other refusal is final (the transition table, a parent, a
    // reason), and trying every refused task again once more per round was a fifth of a
    // 100,000-task import whose done tasks wait on pending ones.
    let mut moves: u64 = 0;
    let mut last_moved: FxHashMap<TaskId, u64> = FxHashMap::default();
    let mut pending: Vec<usize> = order.clone();
    let mut last_error: Vec<Option<(u64, DomainError)>> = Vec::new();
    last_error.resize_with(tasks.len(), || None);
    loop {
        let mut still = Vec::new();
        for &i in &pending {
            let t = &tasks[i];
            let Some((id, pos)) = linked[i].clone() else {
                continue;
            };
            if let Some((tried, refused)) = &last_error[i]
                && !worth_retrying(refused, *tried, &last_moved)
            {
                still.push(i);
                continue;
            }
            let current = &state.tasks.tasks[pos];
            if current.is_parent() || current.status == t.status {
                continue;
            }
            let from = current.status;
            match move_along(state, &id, t, source, at) {
                Ok(evs) => {
                    for event in &evs {
                        if let ProjectEvent::TaskMoved { task, .. } = event {
                            moves += 1;
                            last_moved.insert(task.clone(), moves);
                        }
                    }
                    events.extend(evs);
                    if !created[i] {
                        changes[i].push(format!("status: {from} → {}", t.status));
                    }
                    last_error[i] = None;
                }
                Err(e) => {
                    last_error[i] = Some((moves, e));
                    still.push(i);
                }
            }
        }
        let retry = still.iter().any(|&i| {
            last_error[i]
                .as_ref()
                .is_some_and(|(tried, refused)| worth_retrying(refused, *tried, &last_moved))
        });
        pending = still;
        if !retry {
            break;
        }
    }
    for i in pending {
        let t = &tasks[i];
        if let Some((_, e)) = last_error[i].take() {
            refuse(&mut report, t, linked[i].as_ref().map(|(id, _)| id), &e);
        }
    }

    for &i in &order {
        let t = &tasks[i];
        let Some((id, pos)) = &linked[i] else {
            continue;
        };
        let task = &state.tasks.tasks[*pos];
        let row = |changes: Vec<String>| ImportedTask {
            key: t.key.clone(),
            task: id.clone(),
            title: task.title.clone(),
            status: task.status,
            changes,
        };
        if created[i] {
            report.created.push(row(Vec::new()));
        } else if !changes[i].is_empty() {
            report.updated.push(row(std::mem::take(&mut changes[i])));
        } else {
            report.unchanged += 1;
        }
    }
    Ok((events, report))
}

/// Whether a move refused after `tried` moves of the import could be taken now: it waited on
/// dependencies, and one of them moved since (`last_moved`: each task's last move, counted).
fn worth_retrying(refused: &DomainError, tried: u64, last_moved: &FxHashMap<TaskId, u64>) -> bool {
    match refused {
        DomainError::Project(ProjectError::DependenciesUnmet { waiting_on, .. }) => waiting_on
            .iter()
            .any(|d| last_moved.get(d).is_some_and(|&at| at > tried)),
        _ => false,
    }
}

/// Adds the dependencies `wanted` — (incoming task, task, the task it waits on), in order —
/// together, and checks the graph for a cycle once: the ones added, or `None` with the list as it
/// was when one of them is a self-dependency or they close a cycle, for the caller to add them one
/// by one through `add_dependency`, which refuses exactly the ones that close it. A list without a
/// cycle after all of them had none after any prefix of them, so the two ways agree; a cycle
/// check over the whole graph per dependency made a first import of 10,000 tasks take minutes.
fn add_together(
    doc: &mut TaskDoc,
    wanted: &[(usize, Linked, TaskId)],
) -> Option<Vec<(usize, TaskId, TaskId)>> {
    if wanted.iter().any(|(_, (id, _), on)| id == on) {
        return None;
    }
    let mut added = Vec::new();
    let mut pushed = Vec::new();
    for (i, (id, at), on) in wanted {
        let at = *at;
        let task = doc.tasks.get_mut(at).expect("linked tasks exist");
        // Named twice by the source: added once, as `add_dependency` would.
        if task.dependencies.contains(on) {
            continue;
        }
        task.dependencies.push(on.clone());
        pushed.push(at);
        added.push((*i, id.clone(), on.clone()));
    }
    if graph::find_cycle(doc).is_none() {
        return Some(added);
    }
    for at in pushed.into_iter().rev() {
        if let Some(task) = doc.tasks.get_mut(at) {
            task.dependencies.pop();
        }
    }
    None
}

/// A task the import linked to an incoming one, and its position in the list.
type Linked = (TaskId, usize);

fn dedup(items: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(item) {
            out.push(item.clone());
        }
    }
    out
}

/// The edit that brings an existing task's descriptive fields to what the source says. Fields
/// the source does not give (no priority, no description) are left as cairn has them.
fn edit_for(task: &Task, t: &IncomingTask) -> TaskEdit {
    let mut edit = TaskEdit::default();
    if task.title != t.title.trim() {
        edit.title = Some(t.title.clone());
    }
    if let Some(d) = &t.description
        && task.description.as_deref() != Some(d.trim())
        && !d.trim().is_empty()
    {
        edit.description = Some(d.clone());
    }
    if let Some(p) = t.priority
        && p != task.priority
        && !task.status.is_terminal()
    {
        edit.priority = Some(p);
    }
    let have = task.tags.clone().unwrap_or_default();
    edit.add_tags = dedup(&t.tags)
        .into_iter()
        .filter(|tag| !have.contains(tag))
        .collect();
    edit
}

fn refuse(report: &mut ImportReport, t: &IncomingTask, id: Option<&TaskId>, e: &DomainError) {
    report.refused.push(ImportRefusal {
        key: t.key.clone(),
        task: id.cloned(),
        reason: e.to_string(),
    });
}

/// The shortest path of moves from `from` to `to` for a leaf: the transition table, except
/// that a leaf leaves BLOCKED only back to PENDING.
fn path(from: TaskStatus, to: TaskStatus) -> Option<Vec<TaskStatus>> {
    if from == to {
        return Some(Vec::new());
    }
    let next = |s: TaskStatus| -> Vec<TaskStatus> {
        if s == TaskStatus::Blocked {
            vec![TaskStatus::Pending]
        } else {
            status::allowed_targets(s).to_vec()
        }
    };
    let mut came_from: FxHashMap<TaskStatus, TaskStatus> = FxHashMap::default();
    let mut queue = VecDeque::from([from]);
    while let Some(s) = queue.pop_front() {
        if s == to {
            let mut steps = vec![to];
            let mut at = to;
            while let Some(&prev) = came_from.get(&at) {
                if prev == from {
                    break;
                }
                steps.push(prev);
                at = prev;
            }
            steps.reverse();
            return Some(steps);
        }
        for n in next(s) {
            if n != from && !came_from.contains_key(&n) {
                came_from.insert(n, s);
                queue.push_back(n);
            }
        }
    }
    None
}

/// Moves a leaf along [`path`], in place; a refusal half-way puts back what the steps before it
/// changed (see [`Kept`]), so the task is left as it was.
fn move_along(
    state: &mut ProjectState,
    id: &TaskId,
    t: &IncomingTask,
    source: &str,
    at: Timestamp,
) -> Result<Vec<ProjectEvent>, DomainError> {
    let from = state.tasks.get(id).expect("linked tasks exist").status;
    let steps = path(from, t.status).ok_or_else(|| {
        DomainError::invalid(
            "status",
            format!(
                "{id} is {from}, a final status; it cannot become {}",
                t.status
            ),
        )
    })?;
    let detail = |step: TaskStatus| MoveDetail {
        reason: (step == TaskStatus::Blocked).then(|| {
            t.blocked_reason
                .clone()
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| format!("blocked in {source}"))
        }),
        actual_minutes: None,
    };
    // `move_task` checks everything before it changes anything, so a refused step changes
    // nothing; what a refusal must undo is what the steps before it changed — the task, the
    // parents their cascade settled, the count of completions — kept aside here rather than in a
    // copy of the whole list (a copy per move made a first import of 10,000 tasks take minutes),
    // and only once the first step is known to be taken: most refusals are of the first step
    // (a start whose dependencies are open), and keeping a task aside for each was a tenth of a
    // 100,000-task import.
    if let Some(&first) = steps.first() {
        state.tasks.check_move(id, first, &detail(first))?;
    }
    let kept = (steps.len() > 1).then(|| Kept::of(&state.tasks, id));
    let mut events = Vec::new();
    for step in steps {
        match state.tasks.move_task(id, step, detail(step), at) {
            Ok(moved) => events.extend(moved),
            Err(refused) => {
                if let Some(kept) = kept {
                    kept.restore(&mut state.tasks);
                }
                return Err(refused);
            }
        }
    }
    Ok(events)
}

/// What moving a leaf can change, as it was: the leaf and each parent up its chain — the tasks
/// the completion cascade settles, found as it finds them (the first task with the parent's id)
/// — and the document's count of completions.
struct Kept {
    tasks: Vec<(usize, Task)>,
    completions: u32,
}

impl Kept {
    fn of(doc: &TaskDoc, id: &TaskId) -> Self {
        let first = |id: &TaskId| doc.tasks.position(id);
        let mut tasks = Vec::new();
        let mut seen = FxHashSet::default();
        let mut current = first(id);
        while let Some(j) = current.filter(|&j| seen.insert(j)) {
            tasks.push((j, doc.tasks[j].clone()));
            current = doc.tasks[j].parent_id.as_ref().and_then(first);
        }
        Self {
            tasks,
            completions: doc.completions_since_checkpoint,
        }
    }

    fn restore(self, doc: &mut TaskDoc) {
        for (j, task) in self.tasks {
            if let Some(slot) = doc.tasks.get_mut(j) {
                *slot = task;
            }
        }
        doc.completions_since_checkpoint = self.completions;
    }
}

fn apply_cairn(
    state: &mut ProjectState,
    incoming: &TaskDoc,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<(Vec<ProjectEvent>, ImportReport), DomainError> {
    let mut report = ImportReport::new(state.project.id.clone(), CAIRN_SOURCE);
    let mut seen = FxHashSet::default();
    for t in &incoming.tasks {
        if !seen.insert(t.id.clone()) {
            return Err(invalid(format!(
                "the id `{}` is used by two tasks; ids must be unique",
                t.id
            )));
        }
    }
    let was_empty = state.tasks.tasks.is_empty();
    let mut doc = state.tasks.clone();
    let mut events = Vec::new();
    let total = incoming.tasks.len();
    for (done, t) in incoming.tasks.iter().enumerate() {
        progress(done, total);
        let row = |changes: Vec<String>| ImportedTask {
            key: t.id.to_string(),
            task: t.id.clone(),
            title: t.title.clone(),
            status: t.status,
            changes,
        };
        match doc.tasks.position(&t.id).and_then(|i| doc.tasks.get_mut(i)) {
            Some(existing) if existing == t => report.unchanged += 1,
            Some(existing) => {
                let fields = changed_fields(existing, t);
                *existing = t.clone();
                events.push(ProjectEvent::TaskUpdated {
                    task: t.id.clone(),
                    changes: fields.clone(),
                });
                report.updated.push(row(fields));
            }
            None => {
                doc.tasks.push(t.clone());
                events.push(ProjectEvent::TaskCreated {
                    task: t.id.clone(),
                    title: t.title.clone(),
                    parent: t.parent_id.clone(),
                });
                report.created.push(row(Vec::new()));
            }
        }
    }
    progress(total, total);
    if was_empty {
        // A project filled from an export takes the export's bookkeeping too, so exporting it
        // again gives the same bytes.
        doc.version = incoming.version;
        doc.completions_since_checkpoint = incoming.completions_since_checkpoint;
        doc.extra = incoming.extra.clone();
    }
    check_references(&doc)?;
    state.tasks = doc;
    Ok((events, report))
}

/// The top-level fields of two versions of a task that differ, by name.
fn changed_fields(old: &Task, new: &Task) -> Vec<String> {
    let (Ok(Value::Object(old)), Ok(Value::Object(new))) =
        (serde_json::to_value(old), serde_json::to_value(new))
    else {
        return vec!["task".to_owned()];
    };
    let mut fields: Vec<String> = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect();
    fields.extend(old.keys().filter(|k| !new.contains_key(*k)).cloned());
    fields
}

/// A task list taken as written must still be a tree with a wait graph: every reference names a
/// task of the list, parents and children agree, and nothing waits on itself.
fn check_references(doc: &TaskDoc) -> Result<(), DomainError> {
    let ids: FxHashSet<&TaskId> = doc.tasks.iter().map(|t| &t.id).collect();
    for t in &doc.tasks {
        for d in &t.dependencies {
            if !ids.contains(d) {
                return Err(invalid(format!(
                    "{} depends on {d}, which is not in the task list",
                    t.id
                )));
            }
        }
        if let Some(p) = &t.parent_id {
            let Some(parent) = doc.get(p) else {
                return Err(invalid(format!(
                    "{}'s parent {p} is not in the task list",
                    t.id
                )));
            };
            if !parent.children().contains(&t.id) {
                return Err(invalid(format!(
                    "{}'s parent {p} does not list it among its subtasks",
                    t.id
                )));
            }
        }
        for c in t.children() {
            if doc.get(c).and_then(|c| c.parent_id.as_ref()) != Some(&t.id) {
                return Err(invalid(format!(
                    "{} lists {c} as a subtask, but {c} does not name it as its parent",
                    t.id
                )));
            }
        }
    }
    if let Some(cycle) = graph::find_cycle(doc) {
        let names: Vec<String> = cycle.iter().map(ToString::to_string).collect();
        return Err(invalid(format!(
            "the tasks wait on each other in a cycle: {}",
            names.join(" → ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaskStatus::*;

    #[test]
    fn paths_follow_the_table() {
        assert_eq!(path(Pending, Complete), Some(vec![InProgress, Complete]));
        assert_eq!(path(Blocked, InProgress), Some(vec![Pending, InProgress]));
        assert_eq!(path(Pending, Blocked), Some(vec![Blocked]));
        assert_eq!(path(InResearch, Validating).map(|p| p.len()), Some(3));
        assert_eq!(path(Complete, Pending), None);
    }

    #[test]
    fn parents_come_first_and_cycles_are_refused() {
        let mut child = IncomingTask::new("b", "child task", Pending);
        child.parent = Some("a".into());
        let parent = IncomingTask::new("a", "parent task", Pending);
        assert_eq!(
            parents_first(&[child.clone(), parent.clone()]).unwrap().0,
            vec![1, 0]
        );
        let mut looped = parent;
        looped.parent = Some("b".into());
        assert!(parents_first(&[child, looped]).is_err());
    }
}
