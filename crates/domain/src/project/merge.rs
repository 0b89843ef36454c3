//! Three-way merge of the project store's documents, by task id and by field (issue #15): what a
//! git merge driver needs to merge two branches that both changed a project.
//!
//! The unit of a merge is one field of one task (or of the document, or of the project record):
//!
//! - a field only one side changed takes that side's value, so edits to different tasks, or to
//!   different fields of one task, never conflict;
//! - id lists (`dependencies`, `subtasks`, `tags`, `completion_criteria`, a phase's `task_ids`)
//!   merge as sets: what either side added is in, what either side removed is out, ours' order
//!   first — two children added under one parent on two branches are both kept;
//! - counters and clocks have one right answer: `updated_at` is the later instant,
//!   `completions_since_checkpoint` counts the completions of both sides;
//! - anything else changed to two different values is a [`Conflict`]: the merged document holds
//!   ours' value, and the conflict carries all three so a person can pick.
//!
//! Tasks added on both sides under the same id are both kept: theirs' new tasks are renumbered
//! after the highest id in use, in id order, and every reference on their side (dependencies,
//! parent, subtasks) is rewritten first, so the merge is what applying ours' changes and then
//! theirs' would have produced. Tasks added on one side keep their ids.
//!
//! The merged list is then checked against the rules ([`super::report::diagnose`]): findings
//! that neither side had (a parent completed on one branch while a child was added on the other)
//! are returned, so the caller can refuse the result rather than accept it silently.
//!
//! Values are compared as JSON values: the serde names are the spec's field names, and fields
//! other tools wrote (`extra`) merge like every other field. No I/O and no file text here.

use std::collections::{HashMap, HashSet};

use rustc_hash::{FxHashMap, FxHashSet};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::DomainError;

use super::model::{Project, Task, TaskDoc, TaskId, TaskList};
use super::report::{self, Finding};

/// One field both sides changed to different values (or a task one side changed and the other
/// removed). The merged document holds ours' value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conflict {
    /// The task, or `None` for a field of the document or the project record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    /// The field (`status`, `phases[build].name`), or `None` when the whole task conflicts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The value before either side changed it; `None`: absent.
    pub base: Option<Value>,
    pub ours: Option<Value>,
    pub theirs: Option<Value>,
}

/// A task of theirs given a new id because ours added a different task under the same one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Renumbered {
    pub from: TaskId,
    pub to: TaskId,
}

/// The merge of three task lists.
#[derive(Debug, Clone, PartialEq)]
pub struct TasksMerge {
    pub doc: TaskDoc,
    pub conflicts: Vec<Conflict>,
    /// With conflicts: the same merge with every conflict resolved to theirs' side, so a person
    /// can be shown both versions of what conflicts and nothing else.
    pub theirs_doc: Option<TaskDoc>,
    pub renumbered: Vec<Renumbered>,
    /// What the rules find wrong with the merged list that neither side had on its own.
    pub findings: Vec<Finding>,
    /// For each task of `doc`, whether it is one of ours' tasks as ours had it.
    pub ours_as_is: Vec<bool>,
    /// The same for `theirs_doc` (empty without it).
    pub theirs_doc_ours_as_is: Vec<bool>,
}

impl TasksMerge {
    /// The merge needs a person: a field conflict, or a finding of severity error.
    pub fn is_clean(&self) -> bool {
        self.conflicts.is_empty()
            && !self
                .findings
                .iter()
                .any(|f| f.severity == report::Severity::Error)
    }
}

/// The merge of three project records.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectMerge {
    pub project: Project,
    pub conflicts: Vec<Conflict>,
    /// With conflicts: the record with every conflict resolved to theirs' side.
    pub theirs_project: Option<Project>,
}

/// A version of the task list other than ours — theirs, or the ancestor — that does not copy the
/// tasks it shares with ours: three versions of a large list are mostly the same tasks, and a
/// copy of 100,000 of them was most of what a merge allocated.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    /// The document's top-level fields (its tasks empty).
    pub top: TaskDoc,
    pub tasks: Vec<SideTask>,
}

/// A task of a [`Side`].
#[derive(Debug, Clone, PartialEq)]
pub enum SideTask {
    /// Exactly ours' task at this position.
    Ours(usize),
    /// A task of its own (boxed: most of a side is the other kind, and a task is large).
    Own(Box<Task>),
}

impl Side {
    /// `doc`, every task its own.
    pub fn of(mut doc: TaskDoc) -> Self {
        let tasks = doc.tasks.take_all();
        Self {
            top: doc,
            tasks: tasks
                .into_iter()
                .map(|task| SideTask::Own(Box::new(task)))
                .collect(),
        }
    }

    /// Its tasks, ours' found in `ours`.
    pub fn tasks_in<'a>(&'a self, ours: &'a [Task]) -> Result<Vec<&'a Task>, DomainError> {
        self.tasks
            .iter()
            .map(|task| match task {
                SideTask::Own(task) => Ok(&**task),
                SideTask::Ours(i) => ours.get(*i).ok_or_else(|| {
                    DomainError::invalid(
                        "merge",
                        format!("a side names ours' task {i}, which ours has not"),
                    )
                }),
            })
            .collect()
    }
}

/// Merges `ours` and `theirs`, two descendants of `base` (`None`: both sides created the file).
/// Ours is taken: the merge is mostly ours' tasks, moved into it rather than copied (a copy of
/// 100,000 tasks was a sixth of a merge).
pub fn merge_tasks(
    base: Option<&Side>,
    ours: TaskDoc,
    theirs: &Side,
) -> Result<TasksMerge, DomainError> {
    let empty = Side {
        top: ours.without_tasks(),
        tasks: Vec::new(),
    };
    let base = base.unwrap_or(&empty);
    let base_tasks = base.tasks_in(&ours.tasks)?;
    let theirs_tasks = theirs.tasks_in(&ours.tasks)?;
    // Theirs is copied only to be renumbered: a copy of a large list for nothing was a tenth of
    // a merge.
    let renumbering = renumber_theirs(&base_tasks, &ours, &theirs_tasks);
    let (theirs_tasks, renumbered) = match &renumbering {
        Some((tasks, renumbered)) => (tasks.iter().collect(), renumbered.clone()),
        None => (theirs_tasks, Vec::new()),
    };
    let (b, t) = (
        (&base.top, &base_tasks[..]),
        (&theirs.top, &theirs_tasks[..]),
    );

    // The rules' findings on ours, found beside the merge on a list large enough to pay for a
    // thread (a tenth of a merge of 100,000 tasks).
    let (merged, of_ours) = std::thread::scope(|scope| {
        let diagnosis = (ours.tasks.len() >= 8192)
            .then(|| std::thread::Builder::new().spawn_scoped(scope, || report::diagnose(&ours)))
            .and_then(Result::ok);
        let merged = merge_docs(b, &ours, t, false);
        let of_ours = match diagnosis {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => report::diagnose(&ours),
        };
        (merged, of_ours)
    });
    let (mut doc, picks, conflicts) = merged?;
    let (theirs_doc, theirs_doc_ours_as_is) = if conflicts.is_empty() {
        (None, Vec::new())
    } else {
        let (mut doc, picks, _) = merge_docs(b, &ours, t, true)?;
        let as_is = Pick::as_is(&picks);
        doc.tasks = TaskList::from(Pick::made(picks, |i| ours.tasks.get(i).cloned())?);
        (Some(doc), as_is)
    };
    let of_ours: FxHashSet<(&str, Option<TaskId>)> =
        of_ours.into_iter().map(|f| (f.code, f.task)).collect();
    let ours_as_is = Pick::as_is(&picks);
    // Ours' tasks move into the merge below. Should the rules need theirs, a task it shares with
    // ours is found there; the few the merge does not keep as they are (a list with a repeated
    // id) are copied now.
    let mut at_in_merge = vec![usize::MAX; ours.tasks.len()];
    for (k, pick) in picks.iter().enumerate() {
        if let Pick::Ours(i) = pick {
            at_in_merge[*i] = k;
        }
    }
    let not_kept: FxHashMap<usize, Task> = match renumbering {
        Some(_) => FxHashMap::default(),
        None => theirs
            .tasks
            .iter()
            .filter_map(|task| match task {
                SideTask::Ours(i) if at_in_merge.get(*i) == Some(&usize::MAX) => {
                    Some((*i, ours.tasks.get(*i)?.clone()))
                }
                _ => None,
            })
            .collect(),
    };
    let picks = Pick::owned(picks);
    drop((base_tasks, theirs_tasks));
    doc.tasks = TaskList::from(Pick::moved(picks, ours.tasks.into_vec())?);
    let mut findings: Vec<Finding> = report::diagnose(&doc)
        .into_iter()
        .filter(|f| !of_ours.contains(&(f.code, f.task.clone())))
        .collect();
    // Theirs is judged only for what ours does not explain: most merges find nothing new.
    if !findings.is_empty() {
        let tasks: Vec<Task> = match &renumbering {
            Some((tasks, _)) => tasks.clone(),
            None => theirs
                .tasks
                .iter()
                .filter_map(|task| match task {
                    SideTask::Own(task) => Some((**task).clone()),
                    SideTask::Ours(i) => match at_in_merge.get(*i) {
                        Some(&k) if k != usize::MAX => doc.tasks.get(k).cloned(),
                        _ => not_kept.get(i).cloned(),
                    },
                })
                .collect(),
        };
        let theirs_doc = TaskDoc {
            tasks: tasks.into(),
            ..theirs.top.without_tasks()
        };
        let of_theirs: FxHashSet<(&str, Option<TaskId>)> = report::diagnose(&theirs_doc)
            .into_iter()
            .map(|f| (f.code, f.task))
            .collect();
        findings.retain(|f| !of_theirs.contains(&(f.code, f.task.clone())));
    }
    Ok(TasksMerge {
        doc,
        conflicts,
        theirs_doc,
        renumbered,
        findings,
        ours_as_is,
        theirs_doc_ours_as_is,
    })
}

/// Where a task of the merge comes from.
enum Pick<'t> {
    /// Ours' task at this position, as it is.
    Ours(usize),
    /// Theirs' task, as it is.
    Other(&'t Task),
    /// Boxed: a list of picks of 100,000 tasks is mostly the other two, and a task is large.
    Merged(Box<Task>),
}

impl Pick<'_> {
    /// For each pick, whether it is ours' task as it is.
    fn as_is(picks: &[Self]) -> Vec<bool> {
        picks.iter().map(|p| matches!(p, Self::Ours(_))).collect()
    }

    /// The picks, theirs' tasks copied: they no longer borrow the sides.
    fn owned(picks: Vec<Self>) -> Vec<Pick<'static>> {
        picks
            .into_iter()
            .map(|pick| match pick {
                Self::Ours(i) => Pick::Ours(i),
                Self::Other(task) => Pick::Merged(Box::new(task.clone())),
                Self::Merged(task) => Pick::Merged(task),
            })
            .collect()
    }

    /// The tasks `picks` name, ours' moved out of `ours`: taken in one pass when the picks name
    /// them in order, as they do but for a list with a repeated id.
    fn moved(picks: Vec<Self>, ours: Vec<Task>) -> Result<Vec<Task>, DomainError> {
        // Most merges keep ours' tasks where they are, change some and add others at the end:
        // then ours' own list is changed in place, not moved task by task into a new one (at
        // 100,000 tasks, 45 MB of fresh memory and a tenth of a merge).
        let where_they_are = picks.iter().enumerate().all(|(p, pick)| match pick {
            Self::Ours(i) => *i == p && p < ours.len(),
            _ => true,
        });
        if where_they_are {
            let mut tasks = ours;
            tasks.truncate(picks.len());
            tasks.reserve_exact(picks.len() - tasks.len());
            for (p, pick) in picks.into_iter().enumerate() {
                let task = match pick {
                    Self::Ours(_) => continue,
                    Self::Other(task) => task.clone(),
                    Self::Merged(task) => *task,
                };
                match tasks.get_mut(p) {
                    Some(slot) => *slot = task,
                    None => tasks.push(task),
                }
            }
            return Ok(tasks);
        }
        let mut last = None;
        let in_order = picks.iter().all(|pick| match pick {
            Self::Ours(i) => last.replace(*i).is_none_or(|before| before < *i),
            _ => true,
        });
        if !in_order {
            return Self::made(picks, |i| ours.get(i).cloned());
        }
        let mut ours = ours.into_iter().enumerate();
        Self::made(picks, |i| {
            ours.find(|&(at, _)| at == i).map(|(_, task)| task)
        })
    }

    /// The tasks `picks` name, ours' from `ours` (by position).
    fn made(
        picks: Vec<Self>,
        mut ours: impl FnMut(usize) -> Option<Task>,
    ) -> Result<Vec<Task>, DomainError> {
        // Sized once: a list of large tasks grown by doubling is copied at every doubling.
        let mut tasks = Vec::with_capacity(picks.len());
        for pick in picks {
            tasks.push(match pick {
                Self::Ours(i) => ours(i).ok_or_else(|| {
                    DomainError::invalid("merge", format!("ours' task {i} was picked twice"))
                })?,
                Self::Other(task) => task.clone(),
                Self::Merged(task) => *task,
            });
        }
        Ok(tasks)
    }
}

/// Merges two descendants of a project record (`base` `None`: both sides created it).
pub fn merge_project(
    base: Option<&Project>,
    ours: &Project,
    theirs: &Project,
) -> Result<ProjectMerge, DomainError> {
    let b = base.map(to_map).transpose()?.unwrap_or_default();
    let (o, t) = (to_map(ours)?, to_map(theirs)?);
    let mut merger = Merger::default();
    let project = from_map(merger.object(None, "", &b, &o, &t))?;
    let theirs_project = if merger.conflicts.is_empty() {
        None
    } else {
        let mut theirs_side = Merger {
            prefer_theirs: true,
            ..Merger::default()
        };
        Some(from_map(theirs_side.object(None, "", &b, &o, &t))?)
    };
    Ok(ProjectMerge {
        project,
        conflicts: merger.conflicts,
        theirs_project,
    })
}

/// One pass of the merge of two task documents (theirs already renumbered), each side other
/// than ours as its top-level fields and its tasks; conflicts take ours' side, or theirs' with
/// `prefer_theirs`. The merged document comes without its tasks, and where each of them comes
/// from.
fn merge_docs<'t>(
    (base_top, base): (&TaskDoc, &[&'t Task]),
    ours: &TaskDoc,
    (theirs_top, theirs): (&TaskDoc, &[&'t Task]),
    prefer_theirs: bool,
) -> Result<(TaskDoc, Vec<Pick<'t>>, Vec<Conflict>), DomainError> {
    let top = |doc: &TaskDoc| to_map(&doc.without_tasks());
    let mut merger = Merger {
        prefer_theirs,
        ..Merger::default()
    };
    let merged = merger.object(None, "", &top(base_top)?, &top(ours)?, &top(theirs_top)?);
    let doc: TaskDoc = from_map(merged)?;
    let picks = merger.tasks(base, &ours.tasks, theirs)?;
    Ok((doc, picks, merger.conflicts))
}

/// Gives theirs' new tasks fresh ids when ours added a different task under one of them, and
/// rewrites every reference on theirs' side. All of theirs' new tasks move (not only the clashing
/// ones), after the highest id in use and in id order: the ids a person would have got by making
/// ours' changes first and theirs' after.
fn renumber_theirs(
    base: &[&Task],
    ours: &TaskDoc,
    theirs: &[&Task],
) -> Option<(Vec<Task>, Vec<Renumbered>)> {
    let in_base: HashSet<&TaskId> = base.iter().map(|t| &t.id).collect();
    let ours_by_id: HashMap<&TaskId, &Task> = ours.tasks.iter().map(|t| (&t.id, t)).collect();
    let mut new: Vec<&Task> = theirs
        .iter()
        .copied()
        .filter(|t| !in_base.contains(&t.id))
        .collect();
    new.sort_by(|a, b| a.id.cmp(&b.id));
    let same_as_ours = |t: &Task| ours_by_id.get(&t.id).is_some_and(|o| *o == t);
    let clash = new
        .iter()
        .any(|t| ours_by_id.contains_key(&t.id) && !same_as_ours(t));
    if !clash {
        return None;
    }
    let moving: Vec<TaskId> = new
        .iter()
        .filter(|t| !same_as_ours(t))
        .map(|t| t.id.clone())
        .collect();
    let moving_set: HashSet<&TaskId> = moving.iter().collect();
    let highest = base
        .iter()
        .copied()
        .chain(&ours.tasks)
        .chain(
            theirs
                .iter()
                .copied()
                .filter(|t| !moving_set.contains(&t.id)),
        )
        .map(|t| t.id.number())
        .max()
        .unwrap_or(0);
    let map: HashMap<TaskId, TaskId> = moving
        .iter()
        .zip(highest.saturating_add(1)..)
        .map(|(from, n)| (from.clone(), TaskId::from_number(n)))
        .collect();
    let rename = |id: &mut TaskId| {
        if let Some(to) = map.get(id) {
            *id = to.clone();
        }
    };
    let mut renumbered: Vec<Task> = theirs.iter().map(|&t| t.clone()).collect();
    for task in &mut renumbered {
        rename(&mut task.id);
        task.parent_id.iter_mut().for_each(rename);
        task.dependencies.iter_mut().for_each(rename);
        task.subtasks.iter_mut().flatten().for_each(rename);
    }
    let moved = moving
        .into_iter()
        .map(|from| Renumbered {
            to: map[&from].clone(),
            from,
        })
        .collect();
    Some((renumbered, moved))
}

fn to_value<T: Serialize>(value: &T) -> Result<Value, DomainError> {
    serde_json::to_value(value).map_err(|e| DomainError::invalid("merge", e.to_string()))
}

fn to_map<T: Serialize>(value: &T) -> Result<Map<String, Value>, DomainError> {
    match to_value(value)? {
        Value::Object(map) => Ok(map),
        _ => Err(DomainError::invalid("merge", "a document is not an object")),
    }
}

fn from_map<T: DeserializeOwned>(map: Map<String, Value>) -> Result<T, DomainError> {
    serde_json::from_value(Value::Object(map)).map_err(|e| {
        DomainError::invalid(
            "merge",
            format!("the merged values do not make a valid document: {e}"),
        )
    })
}

/// The fields that hold sets of ids or words: merged element by element.
const SET_FIELDS: &[&str] = &[
    "dependencies",
    "subtasks",
    "tags",
    "completion_criteria",
    "task_ids",
];

/// A phase's identity: its id as written.
fn key_of(phase: &Value) -> Option<String> {
    phase.get("id")?.as_str().map(str::to_owned)
}

#[derive(Default)]
struct Merger {
    conflicts: Vec<Conflict>,
    /// Resolve conflicts to theirs' side instead of ours'.
    prefer_theirs: bool,
}

impl Merger {
    /// Merges two objects key by key; keys in ours' order, then theirs' new ones.
    fn object(
        &mut self,
        task: Option<&TaskId>,
        prefix: &str,
        b: &Map<String, Value>,
        o: &Map<String, Value>,
        t: &Map<String, Value>,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        let keys = o.keys().chain(t.keys().filter(|k| !o.contains_key(*k)));
        let keys: Vec<String> = keys
            .chain(
                b.keys()
                    .filter(|k| !o.contains_key(*k) && !t.contains_key(*k)),
            )
            .cloned()
            .collect();
        for key in keys {
            let (bv, ov, tv) = (b.get(&key), o.get(&key), t.get(&key));
            let field = format!("{prefix}{key}");
            let merged = match resolve(&key, bv, ov, tv) {
                Some(merged) => merged,
                None if key == "phases" => Some(Value::Array(self.phases(
                    "phases",
                    as_list(bv),
                    as_list(ov),
                    as_list(tv),
                ))),
                None => {
                    self.conflict(task, Some(field), bv, ov, tv);
                    if self.prefer_theirs { tv } else { ov }.cloned()
                }
            };
            if let Some(value) = merged {
                out.insert(key, value);
            }
        }
        out
    }

    /// Merges the task lists as [`Self::phases`] merges lists of phases, tasks matched by id (by
    /// number: `T-7` is `T-007`): ours' order, then theirs' new ones. A task the same on both
    /// sides, or that only ours changed, is ours' as it is; only a task both sides changed is
    /// merged field by field, as a JSON object. Turning every task of three large lists into JSON
    /// objects and merging them field by field was most of a merge of 100,000 tasks.
    fn tasks<'t>(
        &mut self,
        b: &[&'t Task],
        o: &[Task],
        t: &[&'t Task],
    ) -> Result<Vec<Pick<'t>>, DomainError> {
        // By position; a repeated id is its last copy. FxHash: ids are numbers cairn gave.
        fn index<T: std::borrow::Borrow<Task>>(items: &[T]) -> FxHashMap<u64, usize> {
            let mut index = FxHashMap::with_capacity_and_hasher(items.len(), Default::default());
            index.extend(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, task)| (task.borrow().id.number(), i)),
            );
            index
        }
        let (bi, oi, ti) = (index(b), index(o), index(t));
        let value = |task: Option<&Task>| task.map(to_value).transpose();
        let mut out = Vec::with_capacity(o.len());
        let mut seen = FxHashSet::with_capacity_and_hasher(o.len(), Default::default());
        for item in o.iter().chain(t.iter().copied()) {
            let key = item.id.number();
            if !seen.insert(key) {
                continue;
            }
            let id = &item.id;
            let (bv, at, tv) = (
                bi.get(&key).map(|&i| b[i]),
                oi.get(&key).copied(),
                ti.get(&key).map(|&i| t[i]),
            );
            let ov = at.map(|i| &o[i]);
            match (at, ov, tv) {
                (Some(at), Some(ov), Some(tv)) if ov == tv || bv == Some(tv) => {
                    out.push(Pick::Ours(at));
                }
                (_, Some(ov), Some(tv)) => {
                    let bm = match bv {
                        Some(bv) => to_map(bv)?,
                        None => Map::new(),
                    };
                    let merged = self.object(Some(id), "", &bm, &to_map(ov)?, &to_map(tv)?);
                    out.push(Pick::Merged(Box::new(from_map(merged)?)));
                }
                // Removed on one side: gone if the other left it as it was, else a person decides
                // (the changed version is kept, so nothing is lost).
                (_, Some(kept), None) | (_, None, Some(kept)) => {
                    // Each side's version of the conflict: the changed task, or none.
                    let pick = match (at, tv) {
                        (_, Some(tv)) => self.prefer_theirs.then_some(Pick::Other(tv)),
                        (Some(at), None) => (!self.prefer_theirs).then_some(Pick::Ours(at)),
                        (None, None) => None,
                    };
                    match bv {
                        None => out.extend(at.map(Pick::Ours).or(tv.map(Pick::Other))),
                        Some(bv) if bv == kept => {}
                        Some(bv) => {
                            let (bv, ovv, tvv) = (value(Some(bv))?, value(ov)?, value(tv)?);
                            self.conflict(Some(id), None, bv.as_ref(), ovv.as_ref(), tvv.as_ref());
                            out.extend(pick);
                        }
                    }
                }
                (_, None, None) => {}
            }
        }
        Ok(out)
    }

    /// Merges lists of phases, matched by id as written: ours' order, then theirs' new ones.
    fn phases<'v>(
        &mut self,
        prefix: &str,
        b: &'v [Value],
        o: &'v [Value],
        t: &'v [Value],
    ) -> Vec<Value> {
        let index = |items: &'v [Value]| -> HashMap<String, &'v Value> {
            items.iter().filter_map(|v| Some((key_of(v)?, v))).collect()
        };
        let (bi, oi, ti) = (index(b), index(o), index(t));
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for item in o.iter().chain(t) {
            let Some(key) = key_of(item) else {
                // Without an id there is nothing to match it by: keep ours' as they are.
                if o.iter().any(|x| std::ptr::eq(x, item)) {
                    out.push(item.clone());
                }
                continue;
            };
            if !seen.insert(key.clone()) {
                continue;
            }
            let (bv, ov, tv) = (
                bi.get(&key).copied(),
                oi.get(&key).copied(),
                ti.get(&key).copied(),
            );
            let field_prefix = format!("{prefix}[{key}].");
            let whole = Some(format!("{prefix}[{key}]"));
            match (ov, tv) {
                // Theirs the same as ours, or as the ancestor: every field resolves to ours'
                // (see `resolve`), in ours' order.
                (Some(ov), Some(tv)) if ov == tv || bv == Some(tv) => out.push(ov.clone()),
                (Some(ov), Some(tv)) => {
                    let empty = Map::new();
                    let bm = bv.and_then(Value::as_object).unwrap_or(&empty);
                    match (ov.as_object(), tv.as_object()) {
                        (Some(om), Some(tm)) => {
                            out.push(Value::Object(self.object(None, &field_prefix, bm, om, tm)))
                        }
                        _ => out.push(ov.clone()),
                    }
                }
                // Removed on one side: gone if the other left it as it was, else a person decides
                // (the changed version is kept, so nothing is lost).
                (Some(kept), None) | (None, Some(kept)) => match bv {
                    None => out.push(kept.clone()),
                    Some(bv) if bv == kept => {}
                    Some(bv) => {
                        self.conflict(None, whole, Some(bv), ov, tv);
                        // Each side's version of the conflict: the changed phase, or none.
                        let kept_side = if self.prefer_theirs { tv } else { ov };
                        if kept_side.is_some() {
                            out.push(kept.clone());
                        }
                    }
                },
                (None, None) => {}
            }
        }
        out
    }

    fn conflict(
        &mut self,
        task: Option<&TaskId>,
        field: Option<String>,
        b: Option<&Value>,
        o: Option<&Value>,
        t: Option<&Value>,
    ) {
        self.conflicts.push(Conflict {
            task: task.cloned(),
            field,
            base: b.cloned(),
            ours: o.cloned(),
            theirs: t.cloned(),
        });
    }
}

fn as_list(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The merged value of one field when the sides agree or a rule decides (`Some(None)`: absent),
/// `None` when they conflict.
fn resolve(
    key: &str,
    b: Option<&Value>,
    o: Option<&Value>,
    t: Option<&Value>,
) -> Option<Option<Value>> {
    if o == t || t == b {
        return Some(o.cloned());
    }
    if o == b {
        return Some(t.cloned());
    }
    if SET_FIELDS.contains(&key) {
        return set_union(b, o, t);
    }
    match key {
        "updated_at" => later(o, t).map(|v| Some(v.clone())),
        "completions_since_checkpoint" => Some(Some(completions(b, o, t)?.into())),
        _ => None,
    }
}

/// Ours' elements that theirs did not remove, then theirs' additions.
fn set_union(b: Option<&Value>, o: Option<&Value>, t: Option<&Value>) -> Option<Option<Value>> {
    let items = |v: Option<&Value>| -> Option<Vec<Value>> {
        match v {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::Array(items)) => Some(items.clone()),
            Some(_) => None,
        }
    };
    let (bl, ol, tl) = (items(b)?, items(o)?, items(t)?);
    let mut out: Vec<Value> = ol
        .iter()
        .filter(|v| !bl.contains(v) || tl.contains(v))
        .cloned()
        .collect();
    for v in tl {
        if !bl.contains(&v) && !out.contains(&v) {
            out.push(v);
        }
    }
    if out.is_empty() && (o.is_none() || t.is_none()) {
        return Some(None);
    }
    Some(Some(Value::Array(out)))
}

/// The later of two timestamps, compared as instants.
fn later<'a>(o: Option<&'a Value>, t: Option<&'a Value>) -> Option<&'a Value> {
    let at = |v: Option<&Value>| crate::time::parse_rfc3339(v?.as_str()?);
    let (oa, ta) = (at(o)?, at(t)?);
    if ta > oa { t } else { o }
}

/// Completions since the last checkpoint, both sides counted: a side that checkpointed (its count
/// went down) contributes what it counted since; the base's count stands unless a side
/// checkpointed.
fn completions(b: Option<&Value>, o: Option<&Value>, t: Option<&Value>) -> Option<u64> {
    let n = |v: Option<&Value>| v.map_or(Some(0), Value::as_u64);
    let (b, o, t) = (n(b)?, n(o)?, n(t)?);
    let since = |side: u64| if side < b { side } else { side - b };
    let kept = if o >= b && t >= b { b } else { 0 };
    Some(kept + since(o) + since(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::{Priority, TaskStatus};
    use proptest::prelude::*;

    use crate::project::fixtures::{doc_of as doc, pending_task as task};

    /// The merge, with each side holding its own tasks and with each side sharing what it has of
    /// ours' (as the merge driver reads them): the two must agree.
    fn merge(base: &TaskDoc, ours: &TaskDoc, theirs: &TaskDoc) -> TasksMerge {
        let sharing = |doc: &TaskDoc| Side {
            top: doc.without_tasks(),
            tasks: doc
                .tasks
                .iter()
                .map(|t| match ours.tasks.iter().position(|o| o == t) {
                    Some(i) => SideTask::Ours(i),
                    None => SideTask::Own(Box::new(t.clone())),
                })
                .collect(),
        };
        let own = merge_tasks(
            Some(&Side::of(base.clone())),
            ours.clone(),
            &Side::of(theirs.clone()),
        )
        .expect("merge");
        let shared =
            merge_tasks(Some(&sharing(base)), ours.clone(), &sharing(theirs)).expect("merge");
        assert_eq!(own, shared, "sharing ours' tasks changes nothing");
        own
    }

    fn edit(doc: &mut TaskDoc, n: u64, f: impl FnOnce(&mut Task)) {
        f(doc
            .tasks
            .iter_mut()
            .find(|t| t.id.number() == n)
            .expect("task"));
    }

    fn base() -> TaskDoc {
        doc((1..=3).map(|n| task(n, &format!("task {n}"))).collect())
    }

    #[test]
    fn edits_to_different_tasks_and_fields_merge_cleanly() {
        let base = base();
        let mut ours = base.clone();
        edit(&mut ours, 1, |t| t.title = "ours".into());
        edit(&mut ours, 3, |t| t.priority = Priority::High);
        let mut theirs = base.clone();
        edit(&mut theirs, 2, |t| t.status = TaskStatus::InProgress);
        edit(&mut theirs, 3, |t| t.description = Some("theirs".into()));
        let merged = merge(&base, &ours, &theirs);
        assert!(merged.is_clean(), "{merged:?}");
        let mut expected = ours.clone();
        edit(&mut expected, 2, |t| t.status = TaskStatus::InProgress);
        edit(&mut expected, 3, |t| t.description = Some("theirs".into()));
        assert_eq!(merged.doc, expected);
    }

    #[test]
    fn one_field_changed_to_two_values_is_a_conflict_holding_ours() {
        let base = base();
        let mut ours = base.clone();
        edit(&mut ours, 2, |t| t.title = "ours".into());
        let mut theirs = base.clone();
        edit(&mut theirs, 2, |t| t.title = "theirs".into());
        let merged = merge(&base, &ours, &theirs);
        assert!(!merged.is_clean());
        assert_eq!(merged.doc, ours);
        assert_eq!(merged.theirs_doc.as_ref(), Some(&theirs));
        assert_eq!(
            merged.conflicts,
            vec![Conflict {
                task: Some(TaskId::from_number(2)),
                field: Some("title".into()),
                base: Some("task 2".into()),
                ours: Some("ours".into()),
                theirs: Some("theirs".into()),
            }]
        );
    }

    #[test]
    fn tasks_added_on_both_sides_get_distinct_ids_and_their_references_follow() {
        let base = base();
        let mut ours = base.clone();
        ours.tasks.push(task(4, "ours new"));
        let mut theirs = base.clone();
        let mut a = task(4, "theirs a");
        a.dependencies = vec![TaskId::from_number(1)];
        let mut b = task(5, "theirs b");
        b.dependencies = vec![TaskId::from_number(4)];
        theirs.tasks.extend([a, b]);
        edit(&mut theirs, 1, |t| {
            t.dependencies = vec![TaskId::from_number(5)]
        });
        let merged = merge(&base, &ours, &theirs);
        assert!(merged.is_clean(), "{merged:?}");
        let titles: Vec<(u64, &str)> = merged
            .doc
            .tasks
            .iter()
            .map(|t| (t.id.number(), t.title.as_str()))
            .collect();
        assert_eq!(
            titles,
            [
                (1, "task 1"),
                (2, "task 2"),
                (3, "task 3"),
                (4, "ours new"),
                (5, "theirs a"),
                (6, "theirs b")
            ]
        );
        assert_eq!(merged.doc.tasks[5].dependencies, [TaskId::from_number(5)]);
        assert_eq!(merged.doc.tasks[0].dependencies, [TaskId::from_number(6)]);
        assert_eq!(
            merged.renumbered,
            [
                Renumbered {
                    from: TaskId::from_number(4),
                    to: TaskId::from_number(5)
                },
                Renumbered {
                    from: TaskId::from_number(5),
                    to: TaskId::from_number(6)
                },
            ]
        );
    }

    #[test]
    fn children_added_under_one_parent_on_both_sides_are_both_kept() {
        let mut base = base();
        edit(&mut base, 1, |t| {
            t.subtasks = Some(vec![TaskId::from_number(2)]);
            t.status = TaskStatus::InProgress;
        });
        edit(&mut base, 2, |t| t.parent_id = Some(TaskId::from_number(1)));
        let add_child = |doc: &mut TaskDoc, title: &str| {
            let mut child = task(4, title);
            child.parent_id = Some(TaskId::from_number(1));
            doc.tasks.push(child);
            edit(doc, 1, |t| {
                t.subtasks
                    .get_or_insert_default()
                    .push(TaskId::from_number(4))
            });
        };
        let (mut ours, mut theirs) = (base.clone(), base.clone());
        add_child(&mut ours, "ours");
        add_child(&mut theirs, "theirs");
        let merged = merge(&base, &ours, &theirs);
        assert!(merged.is_clean(), "{merged:?}");
        assert_eq!(
            merged.doc.tasks[0].subtasks,
            Some(vec![
                TaskId::from_number(2),
                TaskId::from_number(4),
                TaskId::from_number(5)
            ])
        );
        assert!(merged.findings.is_empty(), "{:?}", merged.findings);
    }

    #[test]
    fn a_parent_completed_on_one_side_and_a_child_added_on_the_other_is_reported() {
        let mut base = base();
        edit(&mut base, 1, |t| {
            t.subtasks = Some(vec![TaskId::from_number(2)]);
            t.status = TaskStatus::InProgress;
        });
        edit(&mut base, 2, |t| {
            t.parent_id = Some(TaskId::from_number(1));
            t.status = TaskStatus::InProgress;
        });
        let mut ours = base.clone();
        edit(&mut ours, 1, |t| t.status = TaskStatus::Complete);
        edit(&mut ours, 2, |t| t.status = TaskStatus::Complete);
        let mut theirs = base.clone();
        let mut child = task(4, "late child");
        child.parent_id = Some(TaskId::from_number(1));
        theirs.tasks.push(child);
        edit(&mut theirs, 1, |t| {
            t.subtasks
                .get_or_insert_default()
                .push(TaskId::from_number(4))
        });
        let merged = merge(&base, &ours, &theirs);
        assert!(merged.conflicts.is_empty(), "{:?}", merged.conflicts);
        assert!(!merged.is_clean());
        assert!(
            merged
                .findings
                .iter()
                .any(|f| f.code == "complete-parent-open-child"
                    && f.task == Some(TaskId::from_number(1))),
            "{:?}",
            merged.findings
        );
    }

    #[test]
    fn a_task_changed_on_one_side_and_removed_on_the_other_is_kept_and_reported() {
        let base = base();
        let mut ours = base.clone();
        edit(&mut ours, 3, |t| t.title = "changed".into());
        let mut theirs = base.clone();
        theirs.tasks.retain(|t| t.id.number() != 3);
        let merged = merge(&base, &ours, &theirs);
        assert_eq!(merged.doc, ours);
        assert_eq!(merged.conflicts.len(), 1);
        assert_eq!(merged.conflicts[0].field, None);
        assert_eq!(merged.conflicts[0].theirs, None);
        // Removed on one side, untouched on the other: gone.
        let merged = merge(&base, &base, &theirs);
        assert_eq!(merged.doc, theirs);
    }

    #[test]
    fn completions_since_checkpoint_count_both_sides() {
        let mut base = base();
        base.completions_since_checkpoint = 2;
        let (mut ours, mut theirs) = (base.clone(), base.clone());
        ours.completions_since_checkpoint = 3;
        theirs.completions_since_checkpoint = 5;
        let merged = merge(&base, &ours, &theirs);
        assert_eq!(merged.doc.completions_since_checkpoint, 6);
        // Ours checkpointed and then completed one; theirs completed three.
        ours.completions_since_checkpoint = 1;
        let merged = merge(&base, &ours, &theirs);
        assert_eq!(merged.doc.completions_since_checkpoint, 4);
    }

    #[test]
    fn project_records_merge_by_field_with_the_later_update_time() {
        let project: Project = serde_json::from_value(serde_json::json!({
            "id": "demo", "name": "Demo", "goal": "a goal of some length", "type": "software",
            "status": "READY", "created_at": "2026-11-22T00:00:00Z", "updated_at": "2026-11-22T00:00:00Z",
            "phases": [{"id": "build", "name": "Build", "status": "PENDING"}]
        }))
        .expect("project");
        let mut ours = project.clone();
        ours.name = "Ours".into();
        ours.updated_at = crate::time::parse_rfc3339("2026-11-23T00:00:00Z").expect("time");
        let mut theirs = project.clone();
        theirs.goal = "their goal, long enough".into();
        theirs.updated_at = crate::time::parse_rfc3339("2026-11-24T00:00:00Z").expect("time");
        theirs.phases[0].name = "Construction".into();
        let merged = merge_project(Some(&project), &ours, &theirs).expect("merge");
        assert!(merged.conflicts.is_empty(), "{:?}", merged.conflicts);
        assert_eq!(merged.project.name, "Ours");
        assert_eq!(merged.project.goal, "their goal, long enough");
        assert_eq!(merged.project.updated_at, theirs.updated_at);
        assert_eq!(merged.project.phases[0].name, "Construction");
        ours.phases[0].name = "Make".into();
        let merged = merge_project(Some(&project), &ours, &theirs).expect("merge");
        assert_eq!(merged.conflicts.len(), 1);
        assert_eq!(
            merged.conflicts[0].field.as_deref(),
            Some("phases[build].name")
        );
    }

    /// One edit of a random script: on a task of the base (by index), or a new task.
    #[derive(Debug, Clone)]
    enum Edit {
        Title(usize, String),
        Priority(usize, Priority),
        Tag(usize, String),
        Start(usize),
        Add(String),
    }

    fn edit_strategy(tasks: usize) -> impl Strategy<Value = Edit> {
        prop_oneof![
            (0..tasks, "[a-z]{1,8}").prop_map(|(i, s)| Edit::Title(i, s)),
            (0..tasks, prop::sample::select(Priority::ALL)).prop_map(|(i, p)| Edit::Priority(i, p)),
            (0..tasks, "[a-z]{1,5}").prop_map(|(i, s)| Edit::Tag(i, s)),
            (0..tasks).prop_map(Edit::Start),
            "[a-z]{1,8}".prop_map(Edit::Add),
        ]
    }

    /// Applies a script; base tasks named by index are taken from `allowed` (the side's share).
    fn apply(doc: &mut TaskDoc, script: &[Edit], allowed: &[u64]) {
        for e in script {
            let pick = |i: &usize| allowed[i % allowed.len()];
            match e {
                Edit::Title(i, s) => edit(doc, pick(i), |t| t.title = s.clone()),
                Edit::Priority(i, p) => edit(doc, pick(i), |t| t.priority = *p),
                Edit::Tag(i, s) => edit(doc, pick(i), |t| {
                    let tags = t.tags.get_or_insert_default();
                    if !tags.contains(s) {
                        tags.push(s.clone());
                    }
                }),
                Edit::Start(i) => edit(doc, pick(i), |t| t.status = TaskStatus::InProgress),
                Edit::Add(s) => {
                    let id = doc.next_id();
                    doc.tasks.push(task(id.number(), s));
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Two scripts that touch different tasks: the merge is applying one, then the other.
        #[test]
        fn merging_disjoint_scripts_equals_applying_both(
            ours_script in prop::collection::vec(edit_strategy(4), 0..6),
            theirs_script in prop::collection::vec(edit_strategy(4), 0..6),
        ) {
            let base = doc((1..=8).map(|n| task(n, &format!("task {n}"))).collect());
            let (mine, yours) = ([1, 3, 5, 7], [2, 4, 6, 8]);
            let mut ours = base.clone();
            apply(&mut ours, &ours_script, &mine);
            // A task both sides add alike (the same title, on this fixed clock the same task) is
            // one change to a three-way merge, taken once: the sides' additions are told apart.
            let theirs_script: Vec<Edit> = theirs_script
                .into_iter()
                .map(|e| match e {
                    Edit::Add(title) => Edit::Add(format!("theirs {title}")),
                    other => other,
                })
                .collect();
            let mut theirs = base.clone();
            apply(&mut theirs, &theirs_script, &yours);
            let mut expected = ours.clone();
            apply(&mut expected, &theirs_script, &yours);
            let merged = merge(&base, &ours, &theirs);
            prop_assert!(merged.is_clean(), "{:?}", merged);
            // What the merge says it took from ours as it was, ours had.
            prop_assert_eq!(merged.ours_as_is.len(), merged.doc.tasks.len());
            for (task, &as_is) in merged.doc.tasks.iter().zip(&merged.ours_as_is) {
                prop_assert!(!as_is || ours.get(&task.id) == Some(task), "{}", task.id);
            }
            prop_assert_eq!(merged.doc, expected);
        }

        /// Scripts that may touch the same tasks: the tasks and conflicts are what merging every
        /// task field by field gives — taking ours' task whole when theirs is ours' or the
        /// ancestor's changes nothing.
        #[test]
        fn taking_a_task_whole_gives_what_merging_its_fields_gives(
            ours_script in prop::collection::vec(edit_strategy(4), 0..6),
            theirs_script in prop::collection::vec(edit_strategy(4), 0..6),
        ) {
            let base = doc((1..=4).map(|n| task(n, &format!("task {n}"))).collect());
            let shared = [1, 2, 3, 4];
            let mut ours = base.clone();
            apply(&mut ours, &ours_script, &shared);
            let mut theirs = base.clone();
            apply(&mut theirs, &theirs_script, &shared);
            let (b, t): (Vec<&Task>, Vec<&Task>) = (base.tasks.iter().collect(), theirs.tasks.iter().collect());
            let (_, picks, conflicts) =
                merge_docs((&base, &b), &ours, (&theirs, &t), false).expect("merge");
            let merged = Pick::made(picks, |i| ours.tasks.get(i).cloned()).expect("picked once");

            let mut every_field = Merger::default();
            let mut expected = Vec::new();
            let mut seen = HashSet::new();
            for task in ours.tasks.iter().chain(theirs.tasks.iter()) {
                if !seen.insert(task.id.clone()) {
                    continue;
                }
                let side = |doc: &TaskDoc| doc.get(&task.id).map(|t| to_map(t).expect("map"));
                match (side(&base), side(&ours), side(&theirs)) {
                    (b, Some(o), Some(t)) => {
                        let b = b.unwrap_or_default();
                        let fields = every_field.object(Some(&task.id), "", &b, &o, &t);
                        expected.push(from_map::<Task>(fields).expect("a task"));
                    }
                    // New on one side only (the scripts remove nothing).
                    _ => expected.push(task.clone()),
                }
            }
            prop_assert_eq!(merged, expected);
            prop_assert_eq!(conflicts, every_field.conflicts);
        }
    }
}
