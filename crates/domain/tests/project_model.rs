//! The task aggregate checked against a reference model.
//!
//! The reference is a deliberately naive re-statement of SPEC §2: statuses in a Vec, the
//! transition table as a list of pairs, the completion and cancellation cascades as a fixpoint
//! over every parent, and cycles found by peeling sinks (Kahn) rather than the real code's DFS.
//! Claims are a holder and an expiry minute per task on a model clock that only `Tick` moves.
//! Random sequences of add / decompose / depend / move / claim / heartbeat / move-as-agent / tick /
//! reconcile must be accepted or refused identically by both, leave both in the same state, and
//! keep the invariants after every step.

use std::collections::HashSet;

use cairn_domain::project::claims::check_actor;
use cairn_domain::project::graph::{self, Index};
use cairn_domain::project::policy;
use cairn_domain::project::{
    Actor, ClaimTarget, MoveDetail, NewTask, ProjectId, TaskDoc, TaskId, TaskStatus,
};
use cairn_domain::time::Timestamp;
use chrono::{Duration, TimeZone, Utc};
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
    /// The claim: agent number and the model minute its lease ends.
    holder: Option<(u8, i64)>,
}

#[derive(Clone, Debug, Default)]
struct Model {
    tasks: Vec<RefTask>,
    /// Minutes since [`base`].
    now: i64,
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
    Claim {
        task: usize,
        agent: u8,
        lease: i64,
    },
    Heartbeat {
        task: usize,
        agent: u8,
        lease: i64,
    },
    /// A move by a named agent (or a person, `None`), maybe forced.
    MoveAs {
        task: usize,
        to: TaskStatus,
        agent: Option<u8>,
        force: bool,
    },
    Tick {
        minutes: i64,
    },
    /// Resume reconciliation by the session named after `session`, if any.
    Reconcile {
        session: Option<u8>,
    },
}

fn base() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0)
        .single()
        .expect("time")
}

fn agent_name(agent: u8) -> String {
    format!("agent-{agent}")
}

fn working(status: TaskStatus) -> bool {
    matches!(status, InProgress | Validating)
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
                    self.tasks[i].holder = None;
                    changed = true;
                } else if live.is_empty() && TABLE.contains(&(t.status, Cancelled)) {
                    // Every child cancelled: nothing is left to do under it.
                    self.tasks[i].status = Cancelled;
                    self.tasks[i].holder = None;
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
                    holder: None,
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
                    holder: None,
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
                        holder: None,
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
                            self.tasks[d].holder = None;
                        }
                    }
                }
                self.tasks[i].status = *to;
                if !working(*to) {
                    self.tasks[i].holder = None;
                }
                self.cascade();
                true
            }
            Op::Claim { task, agent, lease } => {
                let i = *task;
                let t = &self.tasks[i];
                if let (true, Some((holder, expires))) = (working(t.status), t.holder) {
                    if expires > self.now && holder != *agent {
                        return false;
                    }
                    self.tasks[i].holder = Some((*agent, self.now + lease));
                    return true;
                }
                if !matches!(t.status, Pending | Researched) {
                    return false;
                }
                if !self.apply(&Op::Move {
                    task: i,
                    to: InProgress,
                }) {
                    return false;
                }
                self.tasks[i].holder = Some((*agent, self.now + lease));
                true
            }
            Op::Heartbeat { task, agent, lease } => {
                let t = &self.tasks[*task];
                if !working(t.status) || t.holder.map(|(a, _)| a) != Some(*agent) {
                    return false;
                }
                self.tasks[*task].holder = Some((*agent, self.now + lease));
                true
            }
            Op::MoveAs {
                task,
                to,
                agent,
                force,
            } => {
                let live_other = match (self.tasks[*task].holder, agent) {
                    (Some((holder, expires)), Some(agent)) => {
                        expires > self.now && holder != *agent
                    }
                    _ => false,
                };
                if live_other && !force {
                    return false;
                }
                self.apply(&Op::Move {
                    task: *task,
                    to: *to,
                })
            }
            Op::Tick { minutes } => {
                self.now += minutes;
                true
            }
            Op::Reconcile { session } => {
                for i in 0..self.tasks.len() {
                    let t = &self.tasks[i];
                    let mid_work = matches!(t.status, InResearch | InProgress | Validating)
                        && t.children.is_empty();
                    let spared = match t.holder {
                        Some((holder, expires)) => expires > self.now && Some(holder) != *session,
                        None => false,
                    };
                    if mid_work && !spared {
                        self.tasks[i].status = Pending;
                        self.tasks[i].holder = None;
                        self.cascade();
                    }
                }
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
            6 => (0..n, status.clone()).prop_map(|(task, to)| Op::Move { task, to }),
            3 => (0..n, 0..3u8, 1..60i64).prop_map(|(task, agent, lease)| Op::Claim { task, agent, lease }),
            1 => (0..n, 0..3u8, 1..60i64)
                .prop_map(|(task, agent, lease)| Op::Heartbeat { task, agent, lease }),
            3 => (0..n, status, proptest::option::of(0..3u8), proptest::bool::weighted(0.2))
                .prop_map(|(task, to, agent, force)| Op::MoveAs { task, to, agent, force }),
            1 => (1..40i64).prop_map(|minutes| Op::Tick { minutes }),
            1 => proptest::option::of(0..3u8).prop_map(|session| Op::Reconcile { session }),
        ]
        .boxed()
    }

    fn preconditions(state: &Model, op: &Op) -> bool {
        // Shrinking can drop the step that created a task an op refers to.
        let n = state.tasks.len();
        match op {
            Op::Add { parent, deps } => parent.is_none_or(|p| p < n) && deps.iter().all(|d| *d < n),
            Op::Decompose { task, .. }
            | Op::Move { task, .. }
            | Op::Claim { task, .. }
            | Op::Heartbeat { task, .. }
            | Op::MoveAs { task, .. } => *task < n,
            Op::Depend { task, on } => *task < n && *on < n,
            Op::Tick { .. } | Op::Reconcile { .. } => true,
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
        let allowed = real.model.apply(&op);
        let at = base() + Duration::minutes(real.model.now);
        let because = || MoveDetail {
            reason: Some("because".into()),
            actual_minutes: None,
        };
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
            Op::Move { task, to } => real
                .doc
                .move_task(&id(*task), *to, because(), at)
                .map(|_| ()),
            Op::Claim { task, agent, lease } => real
                .doc
                .claim(
                    &ClaimTarget::Task(id(*task)),
                    &agent_name(*agent),
                    Duration::minutes(*lease),
                    at,
                )
                .map(|_| ()),
            Op::Heartbeat { task, agent, lease } => real
                .doc
                .heartbeat(
                    &id(*task),
                    &agent_name(*agent),
                    Duration::minutes(*lease),
                    at,
                )
                .map(|_| ()),
            Op::MoveAs {
                task,
                to,
                agent,
                force,
            } => {
                // What `ProjectService::move_task_as` does inside its transaction.
                let actor = Actor {
                    agent: agent.map(agent_name),
                    force: *force,
                };
                let current = real.doc.get(&id(*task)).expect("task").clone();
                check_actor(&current, &actor, at)
                    .and_then(|()| real.doc.move_task(&id(*task), *to, because(), at))
                    .map(|_| ())
            }
            Op::Tick { .. } => Ok(()),
            Op::Reconcile { session } => {
                // What `ProjectService::reconcile_as` does, without research briefs.
                let session = session.map(agent_name);
                let plan = policy::reconciliation(&real.doc, &|_| None, at, session.as_deref());
                for r in plan {
                    real.doc
                        .move_task(&r.task, r.to, because(), at)
                        .expect("a reconciliation move is always legal");
                }
                Ok(())
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
            assert_eq!(
                (r.claimed_by.clone(), r.lease_expires_at),
                (
                    m.holder.map(|(a, _)| agent_name(a)),
                    m.holder.map(|(_, e)| base() + Duration::minutes(e))
                ),
                "claim of {} after {op:?}",
                id(i)
            );
        }
        real
    }

    fn check_invariants(real: &Real, _: &Model) {
        let doc = &real.doc;
        let index = Index::new(doc);
        for t in &doc.tasks {
            assert!(
                t.claimed_by.is_none() || working(t.status),
                "{} is {} but still claimed",
                t.id,
                t.status
            );
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
