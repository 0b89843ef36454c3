//! Dependencies and scheduling over the flat task list.
//!
//! The *wait graph* has an edge X → Y when X cannot finish before Y does: X's own dependencies,
//! a parent's children (a parent completes when they do), and the dependencies of X's ancestors
//! (a subtask cannot start before its parent's prerequisites are done). Cycles are looked for in
//! this graph, so "a task depends on its own subtask" and "a subtask depends on a task that
//! depends on its parent" are both refused as the deadlocks they are.

use rustc_hash::{FxHashMap, FxHashSet};

use super::model::{Priority, Task, TaskDoc, TaskId, TaskStatus};

/// Task ids to array positions, built once per operation.
#[derive(Debug)]
pub struct Index<'a> {
    pub doc: &'a TaskDoc,
    pos: Positions<'a>,
}

/// Where each id's first copy is.
#[derive(Debug)]
enum Positions<'a> {
    /// The list cairn makes: ids numbered `first`, `first + 1`, … in file order, so a position is
    /// a subtraction — building a hash map of 10,000 ids and probing it for every dependency was
    /// most of `graph::next`.
    Dense {
        first: u64,
    },
    // FxHash, not SipHash: ids are our own numbers, never chosen by an attacker, and hashing them
    // was a tenth of `task next` on a 10,000-task store.
    Map(FxHashMap<&'a TaskId, usize>),
    /// Asks the list (`TaskList::position`), which keeps a map of its own once asked often.
    List,
}

impl<'a> Index<'a> {
    pub fn new(doc: &'a TaskDoc) -> Self {
        let first = doc.tasks.first().map_or(0, |t| t.id.number());
        let dense = doc
            .tasks
            .iter()
            .zip(0u64..)
            .all(|(task, i)| first.checked_add(i) == Some(task.id.number()));
        if dense {
            return Self {
                doc,
                pos: Positions::Dense { first },
            };
        }
        let mut pos = FxHashMap::with_capacity_and_hasher(doc.tasks.len(), Default::default());
        for (i, task) in doc.tasks.iter().enumerate() {
            // The first of duplicated ids wins; `doctor` reports duplicates.
            pos.entry(&task.id).or_insert(i);
        }
        Self {
            doc,
            pos: Positions::Map(pos),
        }
    }

    /// For a question about one task: building an index walks the whole list, which work that
    /// asks about task after task (an import moving each of 100,000 tasks) cannot afford.
    pub fn for_one(doc: &'a TaskDoc) -> Self {
        Self {
            doc,
            pos: Positions::List,
        }
    }

    pub fn get(&self, id: &TaskId) -> Option<&'a Task> {
        self.position(id).map(|i| &self.doc.tasks[i])
    }

    pub fn position(&self, id: &TaskId) -> Option<usize> {
        match &self.pos {
            Positions::Dense { first } => id
                .number()
                .checked_sub(*first)
                .and_then(|at| usize::try_from(at).ok())
                .filter(|&at| at < self.doc.tasks.len()),
            Positions::Map(pos) => pos.get(id).copied(),
            Positions::List => self.doc.tasks.position(id),
        }
    }

    pub fn contains(&self, id: &TaskId) -> bool {
        self.position(id).is_some()
    }

    /// Ancestors from the parent upward, stopping at a repeated id so a damaged file with a parent
    /// loop cannot hang us.
    pub fn ancestors(&self, task: &'a Task) -> Vec<&'a Task> {
        let mut out = Vec::new();
        let mut seen = FxHashSet::from_iter([&task.id]);
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
        let mut deps: Vec<&TaskId> = self.all_dependencies(task).collect();
        if task.parent_id.is_some() {
            let mut seen = FxHashSet::default();
            deps.retain(|d| seen.insert(*d));
        }
        deps
    }

    /// [`Self::effective_dependencies`] with repeats left in, allocating nothing for a task
    /// without a parent (the common case, and the hot one when scheduling large stores). Every
    /// caller asks "all complete?" or "the largest", which repeats do not change.
    fn all_dependencies(&self, task: &'a Task) -> impl Iterator<Item = &'a TaskId> + use<'a> {
        let ancestors = if task.parent_id.is_some() {
            self.ancestors(task)
        } else {
            Vec::new()
        };
        task.dependencies
            .iter()
            .chain(ancestors.into_iter().flat_map(|a| a.dependencies.iter()))
    }

    /// Dependencies that are not COMPLETE (unknown ids count as unfinished).
    pub fn unmet_dependencies(&self, task: &'a Task) -> Vec<TaskId> {
        self.effective_dependencies(task)
            .into_iter()
            .filter(|d| !self.is_complete(d))
            .cloned()
            .collect()
    }

    fn is_complete(&self, id: &TaskId) -> bool {
        self.get(id)
            .is_some_and(|t| t.status == TaskStatus::Complete)
    }

    /// Ready: a leaf in PENDING or RESEARCHED whose every (effective) dependency is COMPLETE.
    pub fn is_ready(&self, task: &'a Task) -> bool {
        !task.is_parent()
            && matches!(task.status, TaskStatus::Pending | TaskStatus::Researched)
            && self.all_dependencies(task).all(|d| self.is_complete(d))
    }

    /// What a task waits on: its effective dependencies and its children.
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
    schedule_first(doc, usize::MAX)
}

/// The first `limit` tasks of [`schedule`], without ordering the rest.
pub fn schedule_first(doc: &TaskDoc, limit: usize) -> Vec<&Task> {
    let index = Index::new(doc);
    let graph = OpenGraph::new(&index);
    let critical = critical_marks(&index, &graph);
    let mut keys: Vec<(u8, bool, u32, usize)> = doc
        .tasks
        .iter()
        .enumerate()
        .filter(|(i, _)| graph.ready[*i])
        .map(|(i, t)| {
            (
                priority_rank(t.priority),
                !on_path(&index, &critical, t),
                t.estimate_minutes.unwrap_or(u32::MAX),
                i,
            )
        })
        .collect();
    // Positions make every key distinct, so unstable sorting and selecting give the one order.
    if limit < keys.len() {
        keys.select_nth_unstable(limit);
        keys.truncate(limit);
    }
    keys.sort_unstable();
    keys.into_iter().map(|(.., i)| &doc.tasks[i]).collect()
}

/// The first task of [`schedule`]. The critical path only breaks ties between ready tasks of the
/// best priority, so its longest-path pass runs only when there is such a tie.
pub fn next(doc: &TaskDoc) -> Option<&Task> {
    let index = Index::new(doc);
    let graph = OpenGraph::new(&index);
    let mut best: Vec<usize> = Vec::new();
    let mut best_rank = u8::MAX;
    for (i, t) in doc.tasks.iter().enumerate() {
        let rank = priority_rank(t.priority);
        if rank > best_rank || !graph.ready[i] {
            continue;
        }
        if rank < best_rank {
            best_rank = rank;
            best.clear();
        }
        best.push(i);
    }
    if best.len() <= 1 {
        return best.first().map(|&i| &doc.tasks[i]);
    }
    let critical = critical_marks(&index, &graph);
    best.into_iter()
        .min_by_key(|&i| {
            let t = &doc.tasks[i];
            (
                !on_path(&index, &critical, t),
                t.estimate_minutes.unwrap_or(u32::MAX),
                i,
            )
        })
        .map(|i| &doc.tasks[i])
}

/// Critical-path membership by the position of each id's first copy: membership goes by id, so
/// a duplicated id is on the path with all its copies.
fn critical_marks(index: &Index<'_>, graph: &OpenGraph) -> Vec<bool> {
    let mut marks = vec![false; index.doc.tasks.len()];
    for at in critical_positions(graph) {
        if let Some(first) = index.position(&index.doc.tasks[at].id) {
            marks[first] = true;
        }
    }
    marks
}

fn on_path(index: &Index<'_>, marks: &[bool], task: &Task) -> bool {
    index.position(&task.id).is_some_and(|i| marks[i])
}

/// Unestimated leaves weigh this much on the critical path, so they are not free.
pub const DEFAULT_ESTIMATE_MINUTES: u32 = 30;

/// The chain of open tasks with the largest total estimate through the wait graph, from the
/// first to do to the last. Parents weigh nothing (their work is their children's).
pub fn critical_path(doc: &TaskDoc) -> Vec<TaskId> {
    let index = Index::new(doc);
    critical_positions(&OpenGraph::new(&index))
        .into_iter()
        .map(|i| doc.tasks[i].id.clone())
        .collect()
}

/// [`critical_path`] as positions; empty on a cycle.
fn critical_positions(graph: &OpenGraph) -> Vec<usize> {
    let Some(order) = graph.topological_order() else {
        return Vec::new();
    };
    const NONE: u32 = u32::MAX;
    let mut total = vec![0u64; graph.open.len()];
    let mut prev = vec![NONE; graph.open.len()];
    for &at in &order {
        let weight = u64::from(graph.weight[at as usize]);
        // Among equally long chains, follow the earliest-created task: stable and predictable.
        let mut best = (0, NONE);
        for &on in graph.waits_on(at) {
            let candidate = total[on as usize];
            if best.1 == NONE || candidate > best.0 || (candidate == best.0 && on < best.1) {
                best = (candidate, on);
            }
        }
        total[at as usize] = best.0 + weight;
        prev[at as usize] = best.1;
    }
    // The end is the earliest-created among equal maxima: positions ascend, so keep the first.
    let mut end: Option<usize> = None;
    for (i, open) in graph.open.iter().enumerate() {
        if *open && end.is_none_or(|e| total[i] > total[e]) {
            end = Some(i);
        }
    }
    let Some(mut at) = end else {
        return Vec::new();
    };
    let mut path = vec![at];
    while prev[at] != NONE {
        at = prev[at] as usize;
        path.push(at);
    }
    // Walked from the last step back to the first: the first to do is what the end waits on.
    path.reverse();
    path
}

/// The wait graph among open tasks, by position: each edge is resolved once, so the passes over
/// it index arrays instead of hashing ids. An id names its first copy, as in [`Index`].
struct OpenGraph {
    open: Vec<bool>,
    /// [`Index::is_ready`] by position, found while resolving the same dependencies.
    ready: Vec<bool>,
    /// Minutes on the critical path: parents weigh nothing (their work is their children's).
    weight: Vec<u32>,
    /// `targets[start[i]..start[i + 1]]`: the open tasks task `i` waits on (repeats kept).
    start: Vec<u32>,
    targets: Vec<u32>,
}

impl OpenGraph {
    fn new(index: &Index<'_>) -> Self {
        let tasks = &index.doc.tasks;
        // One byte per task: the lookups below land here instead of on the tasks themselves.
        let status: Vec<TaskStatus> = tasks.iter().map(|t| t.status).collect();
        let open: Vec<bool> = status.iter().map(|s| s.is_open()).collect();
        let mut ready = Vec::with_capacity(tasks.len());
        let mut weight = Vec::with_capacity(tasks.len());
        let mut start = Vec::with_capacity(tasks.len() + 1);
        let mut targets = Vec::with_capacity(tasks.len());
        start.push(0);
        for (task, &is_open) in tasks.iter().zip(&open) {
            let mut met = true;
            if is_open {
                for d in index.all_dependencies(task) {
                    match index.position(d) {
                        Some(p) => {
                            met &= status[p] == TaskStatus::Complete;
                            if open[p] {
                                targets.push(p as u32);
                            }
                        }
                        None => met = false,
                    }
                }
                targets.extend(
                    task.children()
                        .iter()
                        .filter_map(|c| index.position(c))
                        .filter(|&p| open[p])
                        .map(|p| p as u32),
                );
            }
            ready.push(
                met && !task.is_parent()
                    && matches!(task.status, TaskStatus::Pending | TaskStatus::Researched),
            );
            weight.push(if task.is_parent() {
                0
            } else {
                task.estimate_minutes.unwrap_or(DEFAULT_ESTIMATE_MINUTES)
            });
            start.push(targets.len() as u32);
        }
        Self {
            open,
            ready,
            weight,
            start,
            targets,
        }
    }

    fn waits_on(&self, at: u32) -> &[u32] {
        let at = at as usize;
        &self.targets[self.start[at] as usize..self.start[at + 1] as usize]
    }

    /// Open tasks ordered so that every task comes after what it waits on (Kahn's algorithm).
    /// `None` on a cycle.
    fn topological_order(&self) -> Option<Vec<u32>> {
        let n = self.open.len();
        // Who waits on each task, laid out like `targets`.
        let mut waiting_start = vec![0u32; n + 1];
        for &t in &self.targets {
            waiting_start[t as usize + 1] += 1;
        }
        for i in 0..n {
            waiting_start[i + 1] += waiting_start[i];
        }
        let mut fill = waiting_start.clone();
        let mut waiting = vec![0u32; self.targets.len()];
        let mut pending = vec![0u32; n];
        for at in 0..n as u32 {
            let on = self.waits_on(at);
            pending[at as usize] = on.len() as u32;
            for &t in on {
                waiting[fill[t as usize] as usize] = at;
                fill[t as usize] += 1;
            }
        }
        let mut order: Vec<u32> = (0..n as u32)
            .filter(|&i| self.open[i as usize] && pending[i as usize] == 0)
            .collect();
        let mut head = 0;
        while head < order.len() {
            let at = order[head] as usize;
            head += 1;
            for &w in &waiting[waiting_start[at] as usize..waiting_start[at + 1] as usize] {
                pending[w as usize] -= 1;
                if pending[w as usize] == 0 {
                    order.push(w);
                }
            }
        }
        let open_count = self.open.iter().filter(|o| **o).count();
        (order.len() == open_count).then_some(order)
    }
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
    let mut memo: FxHashMap<&TaskId, Option<usize>> = FxHashMap::default();
    let mut out = Waves::default();
    for task in &doc.tasks {
        if task.is_parent() || !matches!(task.status, TaskStatus::Pending | TaskStatus::Researched)
        {
            continue;
        }
        match level(&index, task, &mut memo, &mut FxHashSet::default()) {
            // Only a repeated id gets 0 here, from a COMPLETE copy's memo: it is still to do.
            Some(n) => {
                let n = n.max(1);
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
    memo: &mut FxHashMap<&'a TaskId, Option<usize>>,
    visiting: &mut FxHashSet<&'a TaskId>,
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
pub fn find_cycle<'d>(doc: &'d TaskDoc) -> Option<Vec<TaskId>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Visiting,
        Done,
    }
    let index = Index::new(doc);
    let tasks = &doc.tasks;
    // By position (of an id's first copy, as `Index` resolves ids), and one list of the ids
    // still to walk for every step of the path: a map of marks by id and a list per step were
    // most of a search of 100,000 tasks.
    let mut marks = vec![Mark::New; tasks.len()];
    // Iterative DFS: deep dependency chains must not overflow the stack. Each step of the path
    // is a task and where the ids it waits on start in `pending`.
    let mut path: Vec<(usize, usize)> = Vec::new();
    let mut pending: Vec<&TaskId> = Vec::new();
    let enter = |at: usize,
                 path: &mut Vec<(usize, usize)>,
                 pending: &mut Vec<&'d TaskId>,
                 marks: &mut [Mark]| {
        marks[at] = Mark::Visiting;
        path.push((at, pending.len()));
        pending.extend(index.waits_on(&tasks[at]));
    };
    for root in tasks {
        let Some(root) = index.position(&root.id) else {
            continue;
        };
        if marks[root] != Mark::New {
            continue;
        }
        enter(root, &mut path, &mut pending, &mut marks);
        while let Some(&(at, from)) = path.last() {
            if pending.len() == from {
                marks[at] = Mark::Done;
                path.pop();
                continue;
            }
            let Some(next) = pending.pop().and_then(|id| index.position(id)) else {
                continue;
            };
            match marks[next] {
                Mark::Done => {}
                Mark::Visiting => {
                    let start = path.iter().position(|&(p, _)| p == next).unwrap_or(0);
                    let mut cycle: Vec<TaskId> = path[start..]
                        .iter()
                        .map(|&(p, _)| tasks[p].id.clone())
                        .collect();
                    cycle.push(tasks[next].id.clone());
                    return Some(cycle);
                }
                Mark::New => enter(next, &mut path, &mut pending, &mut marks),
            }
        }
    }
    None
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
