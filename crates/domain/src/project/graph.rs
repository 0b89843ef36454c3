//! Dependencies and scheduling over the flat task list.
//!
//! The *wait graph* has an edge X → Y when X cannot finish before Y does: X's own dependencies,
//! a parent's children (a parent completes when they do), and the dependencies of X's ancestors
//! (a subtask cannot start before its parent's prerequisites are done). Cycles are looked for in
//! this graph, so "a task depends on its own subtask" and "a subtask depends on a task that
//! depends on its parent" are both refused as the deadlocks they are.

use std::collections::{HashMap, HashSet};

use super::model::{Priority, Task, TaskDoc, TaskId, TaskStatus};

/// Task ids to array positions, built once per operation.
#[derive(Debug)]
pub struct Index<'a> {
    pub doc: &'a TaskDoc,
    pos: HashMap<&'a TaskId, usize>,
}

impl<'a> Index<'a> {
    pub fn new(doc: &'a TaskDoc) -> Self {
        let mut pos = HashMap::with_capacity(doc.tasks.len());
        for (i, task) in doc.tasks.iter().enumerate() {
            // The first of duplicated ids wins; `doctor` reports duplicates.
            pos.entry(&task.id).or_insert(i);
        }
        Self { doc, pos }
    }

    pub fn get(&self, id: &TaskId) -> Option<&'a Task> {
        self.pos.get(id).map(|&i| &self.doc.tasks[i])
    }

    pub fn position(&self, id: &TaskId) -> Option<usize> {
        self.pos.get(id).copied()
    }

    pub fn contains(&self, id: &TaskId) -> bool {
        self.pos.contains_key(id)
    }

    /// Ancestors from the parent upward, stopping at a repeated id so a damaged file with a parent
    /// loop cannot hang us.
    pub fn ancestors(&self, task: &'a Task) -> Vec<&'a Task> {
        let mut out = Vec::new();
        let mut seen = HashSet::from([&task.id]);
        let mut current = task;
        while let Some(parent) = current.parent_id.as_ref().and_then(|p| self.get(p)) {
            if !seen.insert(&parent.id) {
                break;
            }
            out.push(parent);
            current = parent;
        }
        out
    }

    /// The task's own dependencies and those of its ancestors.
    pub fn effective_dependencies(&self, task: &'a Task) -> Vec<&'a TaskId> {
        let mut deps: Vec<&TaskId> = task.dependencies.iter().collect();
        if task.parent_id.is_none() {
            // The common case, and the hot one when scheduling large stores: no ancestors to
            // merge. Duplicates in a damaged file are harmless to every caller.
            return deps;
        }
        for ancestor in self.ancestors(task) {
            deps.extend(ancestor.dependencies.iter());
        }
        let mut seen = HashSet::new();
        deps.retain(|d| seen.insert(*d));
        deps
    }

    /// Dependencies that are not COMPLETE (unknown ids count as unfinished).
    pub fn unmet_dependencies(&self, task: &'a Task) -> Vec<TaskId> {
        self.effective_dependencies(task)
            .into_iter()
            .filter(|d| self.get(d).is_none_or(|t| t.status != TaskStatus::Complete))
            .cloned()
            .collect()
    }

    /// Ready: a leaf in PENDING or RESEARCHED whose every (effective) dependency is COMPLETE.
    pub fn is_ready(&self, task: &'a Task) -> bool {
        !task.is_parent()
            && matches!(task.status, TaskStatus::Pending | TaskStatus::Researched)
            && self.unmet_dependencies(task).is_empty()
    }

    fn waits_on(&self, task: &'a Task) -> impl Iterator<Item = &'a TaskId> + '_ {
        self.effective_dependencies(task)
            .into_iter()
            .chain(task.children().iter())
    }
}

/// Ready tasks in creation order.
pub fn ready(doc: &TaskDoc) -> Vec<&Task> {
    let index = Index::new(doc);
    doc.tasks.iter().filter(|t| index.is_ready(t)).collect()
}

fn priority_rank(p: Priority) -> u8 {
    match p {
        Priority::Critical => 0,
        Priority::High => 1,
        Priority::Medium => 2,
        Priority::Low => 3,
    }
}

/// Ready tasks in the order `next` would hand them out: priority, then critical-path
/// membership, then smaller estimate (unestimated last), then creation order.
pub fn schedule(doc: &TaskDoc) -> Vec<&Task> {
    let index = Index::new(doc);
    let critical: HashSet<TaskId> = critical_path(doc).into_iter().collect();
    let mut ready: Vec<(usize, &Task)> = doc
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| index.is_ready(t))
        .collect();
    ready.sort_by_key(|(i, t)| {
        (
            priority_rank(t.priority),
            !critical.contains(&t.id),
            t.estimate_minutes.unwrap_or(u32::MAX),
            *i,
        )
    });
    ready.into_iter().map(|(_, t)| t).collect()
}

pub fn next(doc: &TaskDoc) -> Option<&Task> {
    schedule(doc).into_iter().next()
}

/// Unestimated leaves weigh this much on the critical path, so they are not free.
pub const DEFAULT_ESTIMATE_MINUTES: u32 = 30;

/// The chain of open tasks with the largest total estimate through the wait graph, from the
/// first to do to the last. Parents weigh nothing (their work is their children's).
pub fn critical_path(doc: &TaskDoc) -> Vec<TaskId> {
    let index = Index::new(doc);
    let open: Vec<&Task> = doc.tasks.iter().filter(|t| t.status.is_open()).collect();
    let Some(order) = topological_order(&index, &open) else {
        return Vec::new();
    };
    let mut best: HashMap<&TaskId, (u64, Option<&TaskId>)> = HashMap::new();
    for task in &order {
        let weight = if task.is_parent() {
            0
        } else {
            u64::from(task.estimate_minutes.unwrap_or(DEFAULT_ESTIMATE_MINUTES))
        };
        // Among equally long chains, follow the earliest-created task: stable and predictable.
        let (prev_total, prev) = index
            .waits_on(task)
            .filter_map(|d| best.get(d).map(|(total, _)| (*total, Some(d))))
            .max_by(|a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| position(&index, b.1).cmp(&position(&index, a.1)))
            })
            .unwrap_or((0, None));
        best.insert(&task.id, (prev_total + weight, prev));
    }
    let Some((mut at, _)) = order.iter().map(|t| (&t.id, best[&t.id].0)).max_by(|a, b| {
        a.1.cmp(&b.1)
            .then_with(|| index.position(b.0).cmp(&index.position(a.0)))
    }) else {
        return Vec::new();
    };
    let mut path = vec![at.clone()];
    while let Some(prev) = best[at].1 {
        path.push(prev.clone());
        at = prev;
    }
    // Walked from the last step back to the first: the first to do is what the end waits on.
    path.reverse();
    path
}

fn position(index: &Index<'_>, id: Option<&TaskId>) -> Option<usize> {
    id.and_then(|id| index.position(id))
}

/// Open tasks ordered so that every task comes after what it waits on. `None` on a cycle.
fn topological_order<'a>(index: &Index<'a>, open: &[&'a Task]) -> Option<Vec<&'a Task>> {
    let open_ids: HashSet<&TaskId> = open.iter().map(|t| &t.id).collect();
    let mut pending: HashMap<&TaskId, usize> = HashMap::new();
    let mut dependents: HashMap<&TaskId, Vec<&'a Task>> = HashMap::new();
    for task in open {
        let prereqs: HashSet<&TaskId> = index
            .waits_on(task)
            .filter(|d| open_ids.contains(d))
            .collect();
        pending.insert(&task.id, prereqs.len());
        for p in prereqs {
            dependents.entry(p).or_default().push(task);
        }
    }
    let mut queue: Vec<&Task> = open
        .iter()
        .copied()
        .filter(|t| pending[&t.id] == 0)
        .collect();
    let mut order = Vec::with_capacity(open.len());
    let mut head = 0;
    while head < queue.len() {
        let task = queue[head];
        head += 1;
        order.push(task);
        for dependent in dependents.get(&task.id).into_iter().flatten() {
            let n = pending.get_mut(&dependent.id)?;
            *n -= 1;
            if *n == 0 {
                queue.push(dependent);
            }
        }
    }
    (order.len() == open.len()).then_some(order)
}

/// The topological layers of the work still to schedule.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Waves {
    /// `waves[0]` is ready now; each later wave waits only on earlier waves and running tasks.
    pub waves: Vec<Vec<TaskId>>,
    /// Open leaves that can never run as things stand: they wait on a BLOCKED or CANCELLED task.
    pub stuck: Vec<TaskId>,
}

/// Leaves in PENDING or RESEARCHED layered by what they wait on. Tasks already under way count
/// as the first wave's company: anything waiting on them lands in wave 2 at the earliest.
pub fn waves(doc: &TaskDoc) -> Waves {
    let index = Index::new(doc);
    let mut memo: HashMap<&TaskId, Option<usize>> = HashMap::new();
    let mut out = Waves::default();
    for task in &doc.tasks {
        if task.is_parent() || !matches!(task.status, TaskStatus::Pending | TaskStatus::Researched)
        {
            continue;
        }
        match level(&index, task, &mut memo, &mut HashSet::new()) {
            Some(n) => {
                if out.waves.len() < n {
                    out.waves.resize(n, Vec::new());
                }
                out.waves[n - 1].push(task.id.clone());
            }
            None => out.stuck.push(task.id.clone()),
        }
    }
    out
}

/// Wave number of a task (1-based): 0 for complete work, `None` when it can never finish.
fn level<'a>(
    index: &Index<'a>,
    task: &'a Task,
    memo: &mut HashMap<&'a TaskId, Option<usize>>,
    visiting: &mut HashSet<&'a TaskId>,
) -> Option<usize> {
    if let Some(known) = memo.get(&task.id) {
        return *known;
    }
    if !visiting.insert(&task.id) {
        return None; // a cycle in a damaged file: never schedulable
    }
    let result = match task.status {
        TaskStatus::Complete => Some(0),
        TaskStatus::Cancelled | TaskStatus::Blocked => None,
        _ if task.is_parent() => {
            // A parent is done when its children are; cancelled children do not count, and a
            // parent with no live child never completes by itself.
            let mut worst = 0;
            let mut live = false;
            let mut stuck = false;
            for child in task.children().iter().filter_map(|c| index.get(c)) {
                if child.status == TaskStatus::Cancelled {
                    continue;
                }
                live = true;
                match level(index, child, memo, visiting) {
                    Some(n) => worst = worst.max(n),
                    None => stuck = true,
                }
            }
            (live && !stuck).then_some(worst)
        }
        TaskStatus::InResearch | TaskStatus::InProgress | TaskStatus::Validating => Some(1),
        TaskStatus::Pending | TaskStatus::Researched => {
            let mut worst = Some(0);
            for dep in index.effective_dependencies(task) {
                let dep_level = match index.get(dep) {
                    Some(d) => level(index, d, memo, visiting),
                    None => None,
                };
                worst = match (worst, dep_level) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
            worst.map(|w| w + 1)
        }
    };
    visiting.remove(&task.id);
    memo.insert(&task.id, result);
    result
}

/// A cycle in the wait graph if there is one, as a closed path `[a, b, …, a]`.
pub fn find_cycle(doc: &TaskDoc) -> Option<Vec<TaskId>> {
    let index = Index::new(doc);
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Visiting,
        Done,
    }
    let mut marks: HashMap<&TaskId, Mark> = HashMap::new();
    for root in &doc.tasks {
        if marks.contains_key(&root.id) {
            continue;
        }
        // Iterative DFS: deep dependency chains must not overflow the stack.
        let mut stack: Vec<(&Task, Vec<&TaskId>)> = vec![(root, index.waits_on(root).collect())];
        marks.insert(&root.id, Mark::Visiting);
        while let Some((task, pending)) = stack.last_mut() {
            match pending.pop() {
                Some(next_id) => {
                    let Some(next) = index.get(next_id) else {
                        continue;
                    };
                    match marks.get(&next.id) {
                        Some(Mark::Done) => {}
                        Some(Mark::Visiting) => {
                            let start =
                                stack.iter().position(|(t, _)| t.id == next.id).unwrap_or(0);
                            let mut cycle: Vec<TaskId> =
                                stack[start..].iter().map(|(t, _)| t.id.clone()).collect();
                            cycle.push(next.id.clone());
                            return Some(cycle);
                        }
                        None => {
                            marks.insert(&next.id, Mark::Visiting);
                            let children = index.waits_on(next).collect();
                            stack.push((next, children));
                        }
                    }
                }
                None => {
                    marks.insert(&task.id, Mark::Done);
                    stack.pop();
                }
            }
        }
    }
    None
}
