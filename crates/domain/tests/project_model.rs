//! The task aggregate checked against a reference model.
//!
//! The reference is a deliberately naive re-statement of SPEC §2: statuses in a Vec, the
//! transition table as a list of pairs, the completion and cancellation cascades as a fixpoint
//! over every parent, and cycles found by peeling sinks (Kahn) rather than the real code's DFS.
//! Random sequences of add / decompose / depend / move must be accepted or refused identically by
//! both, leave both in the same state, and keep the invariants after every step.

use std::collections::HashSet;

use cairn_domain::project::graph::{self, Index};
use cairn_domain::project::{MoveDetail, NewTask, ProjectId, TaskDoc, TaskId, TaskStatus};
use chrono::{TimeZone, Utc};
use proptest::prelude::*;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};

use TaskStatus::*;

const STATUSES: [TaskStatus; 8] = [
    Pending, InResearch, Researched, InProgress, Validating, Complete, Blocked, Cancelled,
];

/// SPEC §2's table, written out as pairs independently of the implementation's match.
const TABLE: &[(TaskStatus, TaskStatus)] = &[
    (Pending, InResearch),
    (Pending, Researched),
    (Pending, InProgress),
    (Pending, Blocked),
    (Pending, Cancelled),
    (InResearch, Researched),
    (InResearch, Pending),
    (InResearch, Blocked),
    (InResearch, Cancelled),
    (Researched, InResearch),
    (Researched, InProgress),
    (Researched, Pending),
    (Researched, Blocked),
    (Researched, Cancelled),
    (InProgress, Validating),
    (InProgress, Complete),
    (InProgress, Researched),
    (InProgress, Pending),
    (InProgress, Blocked),
    (InProgress, Cancelled),
    (Validating, Complete),
    (Validating, InProgress),
    (Validating, Researched),
    (Validating, Pending),
    (Validating, Blocked),
    (Validating, Cancelled),
    (Blocked, Pending),
    (Blocked, InProgress),
];

#[derive(Clone, Debug, PartialEq)]
struct RefTask {
    status: TaskStatus,
    parent: Option<usize>,
    children: Vec<usize>,
    deps: Vec<usize>,
}

#[derive(Clone, Debug, Default)]
struct Model {
    tasks: Vec<RefTask>,
}

#[derive(Clone, Debug)]
enum Op {
    Add {
        parent: Option<usize>,
        deps: Vec<usize>,
    },
    Decompose {
        task: usize,
        children: usize,
    },
    Depend {
        task: usize,
        on: usize,
    },
    Move {
        task: usize,
        to: TaskStatus,
    },
}

impl Model {
    fn ancestors(&self, i: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = self.tasks[i].parent;
        while let Some(p) = at {
            out.push(p);
            at = self.tasks[p].parent;
        }
        out
    }

    fn effective_deps(&self, i: usize) -> Vec<usize> {
        let mut deps = self.tasks[i].deps.clone();
        for a in self.ancestors(i) {
            deps.extend(self.tasks[a].deps.iter().copied());
        }
        deps
    }

    fn descendants(&self, i: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack = self.tasks[i].children.clone();
        while let Some(c) = stack.pop() {
            out.push(c);
            stack.extend(self.tasks[c].children.iter().copied());
        }
        out
    }

    /// Kahn's algorithm on the wait graph: a cycle is whatever cannot be peeled.
    fn has_cycle(&self) -> bool {
        let n = self.tasks.len();
        let edges: Vec<Vec<usize>> = (0..n)
            .map(|i| {
                let mut e = self.effective_deps(i);
                e.extend(self.tasks[i].children.iter().copied());
                e
            })
            .collect();
        let mut out_degree: Vec<usize> = edges.iter().map(Vec::len).collect();
        let mut removed = vec![false; n];
        let mut progress = true;
        while progress {
            progress = false;
            for i in 0..n {
                if !removed[i] && out_degree[i] == 0 {
                    removed[i] = true;
                    progress = true;
                    for (j, e) in edges.iter().enumerate() {
                        out_degree[j] -= e.iter().filter(|&&x| x == i).count();
                    }
                }
            }
        }
        removed.iter().any(|r| !r)
    }

    fn cascade(&mut self) {
        loop {
            let mut changed = false;
            for i in 0..self.tasks.len() {
                let t = &self.tasks[i];
                if t.children.is_empty() {
                    continue;
                }
                let live: Vec<TaskStatus> = t
                    .children
                    .iter()
                    .map(|&c| self.tasks[c].status)
                    .filter(|s| *s != Cancelled)
                    .collect();
                if t.status == InProgress && !live.is_empty() && live.iter().all(|s| *s == Complete)
                {
                    self.tasks[i].status = Complete;
                    changed = true;
                } else if live.is_empty() && TABLE.contains(&(t.status, Cancelled)) {
                    // Every child cancelled: nothing is left to do under it.
                    self.tasks[i].status = Cancelled;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// Decomposing leaves the task IN_PROGRESS, so the table must allow it to get there.
    fn decomposable(&self, i: usize) -> bool {
        let status = self.tasks[i].status;
        status == InProgress || TABLE.contains(&(status, InProgress))
    }

    /// Applies `op` if the rules allow it; says whether they did.
    fn apply(&mut self, op: &Op) -> bool {
        match op {
            Op::Add { parent: None, deps } => {
                let mut unique = Vec::new();
                for d in deps {
                    if !unique.contains(d) {
                        unique.push(*d);
                    }
                }
                self.tasks.push(RefTask {
                    status: Pending,
                    parent: None,
                    children: vec![],
                    deps: unique,
                });
                true
            }
            Op::Add {
                parent: Some(p),
                deps,
            } => {
                if !self.decomposable(*p) {
                    return false;
                }
                let mut trial = self.clone();
                let id = trial.tasks.len();
                let mut unique = Vec::new();
                for d in deps {
                    if !unique.contains(d) {
                        unique.push(*d);
                    }
                }
                trial.tasks.push(RefTask {
                    status: Pending,
                    parent: Some(*p),
                    children: vec![],
                    deps: unique,
                });
                trial.tasks[*p].children.push(id);
                trial.tasks[*p].status = InProgress;
                if trial.has_cycle() {
                    return false;
                }
                *self = trial;
                true
            }
            Op::Decompose { task, children } => {
                if !self.decomposable(*task) {
                    return false;
                }
                for _ in 0..*children {
                    let id = self.tasks.len();
                    self.tasks.push(RefTask {
                        status: Pending,
                        parent: Some(*task),
                        children: vec![],
                        deps: vec![],
                    });
                    self.tasks[*task].children.push(id);
                }
                self.tasks[*task].status = InProgress;
                true
            }
            Op::Depend { task, on } => {
                if task == on {
                    return false;
                }
                if self.tasks[*task].deps.contains(on) {
                    return true;
                }
                let mut trial = self.clone();
                trial.tasks[*task].deps.push(*on);
                if trial.has_cycle() {
                    return false;
                }
                *self = trial;
                true
            }
            Op::Move { task, to } => {
                let i = *task;
                let from = self.tasks[i].status;
                if !TABLE.contains(&(from, *to)) {
                    return false;
                }
                let is_parent = !self.tasks[i].children.is_empty();
                if is_parent {
                    let ok =
                        matches!(to, Blocked | Cancelled) || (*to == InProgress && from == Blocked);
                    if !ok {
                        return false;
                    }
                    if *to == Cancelled
                        && self
                            .descendants(i)
                            .iter()
                            .any(|&d| self.tasks[d].status == Blocked)
                    {
                        return false;
                    }
                } else if from == Blocked && *to != Pending {
                    return false;
                }
                if *to == InProgress
                    && matches!(from, Pending | Researched)
                    && self
                        .effective_deps(i)
                        .iter()
                        .any(|&d| self.tasks[d].status != Complete)
                {
                    return false;
                }
                if *to == Cancelled {
                    for d in self.descendants(i) {
                        if !matches!(self.tasks[d].status, Complete | Cancelled) {
                            self.tasks[d].status = Cancelled;
                        }
                    }
                }
                self.tasks[i].status = *to;
                self.cascade();
                true
            }
        }
    }
}

struct Reference;

impl ReferenceStateMachine for Reference {
    type State = Model;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Model> {
        Just(Model::default()).boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Op> {
        let n = state.tasks.len();
        let add = (
            proptest::option::weighted(0.3, 0..n.max(1)),
            proptest::collection::vec(0..n.max(1), 0..3),
        )
            .prop_map(move |(parent, deps)| Op::Add {
                parent: parent.filter(|_| n > 0),
                deps: if n > 0 { deps } else { vec![] },
            });
        if n == 0 {
            return add.boxed();
        }
        let status = proptest::sample::select(STATUSES.to_vec());
        prop_oneof![
            2 => add,
            1 => (0..n, 1..4usize).prop_map(|(task, children)| Op::Decompose { task, children }),
            2 => (0..n, 0..n).prop_map(|(task, on)| Op::Depend { task, on }),
            6 => (0..n, status).prop_map(|(task, to)| Op::Move { task, to }),
        ]
        .boxed()
    }

    fn preconditions(state: &Model, op: &Op) -> bool {
        // Shrinking can drop the step that created a task an op refers to.
        let n = state.tasks.len();
        match op {
            Op::Add { parent, deps } => parent.is_none_or(|p| p < n) && deps.iter().all(|d| *d < n),
            Op::Decompose { task, .. } | Op::Move { task, .. } => *task < n,
            Op::Depend { task, on } => *task < n && *on < n,
        }
    }

    fn apply(mut state: Model, op: &Op) -> Model {
        state.apply(op);
        state
    }
}

fn id(i: usize) -> TaskId {
    TaskId::from_number(i as u64 + 1)
}

struct Real {
    doc: TaskDoc,
    /// The model as of before the current step; the runner hands `apply` the model after it.
    model: Model,
}

impl StateMachineTest for Real {
    type SystemUnderTest = Real;
    type Reference = Reference;

    fn init_test(_: &Model) -> Real {
        Real {
            doc: TaskDoc::new("model".parse::<ProjectId>().expect("project id")),
            model: Model::default(),
        }
    }

    fn apply(mut real: Real, after: &Model, op: Op) -> Real {
        let at = Utc
            .with_ymd_and_hms(2026, 3, 1, 12, 0, 0)
            .single()
            .expect("time");
        let allowed = real.model.apply(&op);
        assert_eq!(
            real.model.tasks, after.tasks,
            "the reference is deterministic"
        );
        let expected = after;
        let prior = real.doc.clone();
        let result = match &op {
            Op::Add { parent, deps } => {
                let new = NewTask {
                    parent: parent.map(id),
                    dependencies: deps.iter().map(|&d| id(d)).collect(),
                    ..NewTask::titled("model task")
                };
                real.doc.add_task(new, at).map(|_| ())
            }
            Op::Decompose { task, children } => real
                .doc
                .decompose(
                    &id(*task),
                    (0..*children)
                        .map(|_| NewTask::titled("a subtask"))
                        .collect(),
                    at,
                )
                .map(|_| ()),
            Op::Depend { task, on } => real.doc.add_dependency(&id(*task), &id(*on)).map(|_| ()),
            Op::Move { task, to } => {
                let detail = MoveDetail {
                    reason: Some("because".into()),
                    actual_minutes: None,
                };
                real.doc.move_task(&id(*task), *to, detail, at).map(|_| ())
            }
        };
        assert_eq!(
            result.is_ok(),
            allowed,
            "{op:?}: real said {result:?}, the model says allowed={allowed}"
        );
        if result.is_err() {
            assert_eq!(real.doc, prior, "a refused {op:?} must change nothing");
        }
        for (before, after) in prior.tasks.iter().zip(&real.doc.tasks) {
            if before.status.is_terminal() {
                assert_eq!(
                    before.status, after.status,
                    "{} left terminal {}",
                    before.id, before.status
                );
            }
        }
        assert_eq!(
            real.doc.tasks.len(),
            expected.tasks.len(),
            "task count after {op:?}"
        );
        for (i, (r, m)) in real.doc.tasks.iter().zip(&expected.tasks).enumerate() {
            assert_eq!(r.status, m.status, "status of {} after {op:?}", id(i));
            assert_eq!(r.parent_id, m.parent.map(id), "parent of {}", id(i));
            assert_eq!(
                r.children().to_vec(),
                m.children.iter().map(|&c| id(c)).collect::<Vec<_>>(),
                "children of {}",
                id(i)
            );
            assert_eq!(
                r.dependencies,
                m.deps.iter().map(|&d| id(d)).collect::<Vec<_>>(),
                "dependencies of {}",
                id(i)
            );
        }
        real
    }

    fn check_invariants(real: &Real, _: &Model) {
        let doc = &real.doc;
        let index = Index::new(doc);
        for t in &doc.tasks {
            if t.status == Complete {
                for c in t.children() {
                    let child = index.get(c).expect("child exists");
                    assert!(
                        matches!(child.status, Complete | Cancelled),
                        "COMPLETE {} has unfinished child {}",
                        t.id,
                        c
                    );
                }
            }
            if t.is_parent()
                && t.status.is_open()
                && t.status != Blocked
                && t.children()
                    .iter()
                    .all(|c| index.get(c).is_some_and(|c| c.status == Cancelled))
            {
                panic!("{} is {} but every subtask was cancelled", t.id, t.status);
            }
            if index.is_ready(t) {
                assert!(
                    index.unmet_dependencies(t).is_empty(),
                    "ready {} has unfinished dependencies",
                    t.id
                );
                assert!(!t.is_parent(), "ready {} is a parent", t.id);
            }
        }
        assert_eq!(graph::find_cycle(doc), None, "the wait graph has a cycle");
        let numbers: Vec<u64> = doc.tasks.iter().map(|t| t.id.number()).collect();
        assert_eq!(
            numbers,
            (1..=doc.tasks.len() as u64).collect::<Vec<_>>(),
            "ids are unique, dense and in creation order"
        );
        let ready: HashSet<&TaskId> = graph::ready(doc).iter().map(|t| &t.id).collect();
        if let Some(next) = graph::next(doc) {
            assert!(ready.contains(&next.id), "next {} is not ready", next.id);
        } else {
            assert!(ready.is_empty(), "next is None while tasks are ready");
        }
        let waves = graph::waves(doc);
        let first: HashSet<&TaskId> = waves
            .waves
            .first()
            .map(|w| w.iter().collect())
            .unwrap_or_default();
        assert_eq!(first, ready, "the first wave is exactly the ready set");
    }
}

prop_state_machine! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn tasks_follow_the_reference_model(sequential 1..40 => Real);
}
