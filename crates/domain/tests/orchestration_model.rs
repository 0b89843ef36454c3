//! The phase machine and every session change, checked against a plain reference model over
//! random operation sequences.

use std::collections::BTreeMap;

use cairn_domain::orchestration::model::{
    DownstreamContext, ErrorKind, PhaseId, PhaseStatus, SessionStatus, TokenCounts,
};
use cairn_domain::orchestration::phase::{MAX_RETRIES, UserDecision};
use cairn_domain::orchestration::session::{
    FileChanges, NewError, NewPhase, NewSession, PhaseTransition,
};
use cairn_domain::orchestration::{Session, SessionState, WorkflowMode};
use cairn_domain::time::Timestamp;
use chrono::{Duration, TimeZone, Utc};
use proptest::prelude::*;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};

const AGENTS: [&str; 3] = ["coder", "tester", "reviewer"];
const PATHS: [&str; 4] = ["src/a.rs", "./src/a.rs", "src/b.rs", " docs/readme.md "];
const ENTRIES: [&str; 7] = [
    "uses Foo",
    " uses Foo ",
    "",
    "none",
    "N/A",
    "None",
    "watch Bar",
];

#[derive(Debug, Clone)]
struct RefPhase {
    status: PhaseStatus,
    retry_count: u32,
    blocked_by: Vec<PhaseId>,
    /// `resolved` flag of each error, in order.
    errors: Vec<bool>,
    created: Vec<String>,
    assumptions: Vec<String>,
}

#[derive(Debug, Clone)]
struct RefState {
    phases: Vec<RefPhase>,
    tokens: BTreeMap<String, [u64; 3]>,
    /// Whether the last operation should have been accepted.
    last_accepted: bool,
}

impl RefState {
    fn phase(&self, id: PhaseId) -> Option<&RefPhase> {
        self.phases.get((id as usize).checked_sub(1)?)
    }

    fn can_start(&self, id: PhaseId) -> bool {
        self.phase(id).is_some_and(|p| {
            let status_ok = match p.status {
                PhaseStatus::Pending => true,
                PhaseStatus::Failed => p.retry_count < MAX_RETRIES,
                _ => false,
            };
            status_ok
                && p.blocked_by
                    .iter()
                    .all(|&b| self.phase(b).is_some_and(|b| b.status.is_done()))
        })
    }
}

#[derive(Debug, Clone)]
enum Op {
    Start(PhaseId),
    Retry(PhaseId),
    Complete(PhaseId),
    Fail(PhaseId, usize),
    Skip(PhaseId),
    Files(PhaseId, Vec<usize>),
    Tokens(usize, u32, u32, u32),
    Downstream(PhaseId, Vec<usize>),
    Resolve(PhaseId, usize),
    /// Seed 004's one-call step: complete one phase (recording files), start the next ones.
    Transition(Option<PhaseId>, Vec<usize>, Vec<PhaseId>),
}

struct Model;

impl ReferenceStateMachine for Model {
    type State = RefState;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<RefState> {
        (1u32..=5)
            .prop_flat_map(|n| {
                (1..=n)
                    .map(|id| {
                        if id == 1 {
                            Just(vec![]).boxed()
                        } else {
                            prop::collection::vec(1..id, 0..=2).boxed()
                        }
                    })
                    .collect::<Vec<_>>()
            })
            .prop_map(|blockers| RefState {
                phases: blockers
                    .into_iter()
                    .map(|mut blocked_by| {
                        blocked_by.sort_unstable();
                        blocked_by.dedup();
                        RefPhase {
                            status: PhaseStatus::Pending,
                            retry_count: 0,
                            blocked_by,
                            errors: vec![],
                            created: vec![],
                            assumptions: vec![],
                        }
                    })
                    .collect(),
                tokens: BTreeMap::new(),
                last_accepted: true,
            })
            .boxed()
    }

    fn transitions(state: &RefState) -> BoxedStrategy<Op> {
        // One id past the end exercises PhaseNotFound.
        let id = 1..=(state.phases.len() as PhaseId + 1);
        prop_oneof![
            3 => id.clone().prop_map(Op::Start),
            2 => id.clone().prop_map(Op::Retry),
            3 => id.clone().prop_map(Op::Complete),
            2 => (id.clone(), 0..AGENTS.len()).prop_map(|(id, a)| Op::Fail(id, a)),
            1 => id.clone().prop_map(Op::Skip),
            1 => (id.clone(), prop::collection::vec(0..PATHS.len(), 0..4)).prop_map(|(id, p)| Op::Files(id, p)),
            2 => (0..AGENTS.len(), 0u32..5000, 0u32..5000, 0u32..5000).prop_map(|(a, i, o, c)| Op::Tokens(a, i, o, c)),
            1 => (id.clone(), prop::collection::vec(0..ENTRIES.len(), 0..4)).prop_map(|(id, e)| Op::Downstream(id, e)),
            1 => (id.clone(), 0usize..3).prop_map(|(id, i)| Op::Resolve(id, i)),
            3 => (
                prop::option::of(id.clone()),
                prop::collection::vec(0..PATHS.len(), 0..2),
                prop::collection::vec(id, 0..3),
            )
                .prop_map(|(done, paths, next)| Op::Transition(done, paths, next)),
        ]
        .boxed()
    }

    fn apply(mut state: RefState, op: &Op) -> RefState {
        let accepted = match *op {
            Op::Start(id) => start(&mut state, id),
            Op::Retry(id) => {
                state
                    .phase(id)
                    .is_some_and(|p| p.status == PhaseStatus::Failed)
                    && start(&mut state, id)
            }
            Op::Complete(id) => with_phase(&mut state, id, |p| {
                p.status == PhaseStatus::InProgress && {
                    p.status = PhaseStatus::Completed;
                    p.errors.iter_mut().for_each(|resolved| *resolved = true);
                    true
                }
            }),
            Op::Fail(id, _) => with_phase(&mut state, id, |p| {
                p.status == PhaseStatus::InProgress && {
                    p.status = PhaseStatus::Failed;
                    p.errors.push(false);
                    true
                }
            }),
            Op::Skip(id) => with_phase(&mut state, id, |p| {
                p.status == PhaseStatus::Pending && {
                    p.status = PhaseStatus::Skipped;
                    true
                }
            }),
            Op::Files(id, ref paths) => with_phase(&mut state, id, |p| {
                ran(p) && {
                    for path in paths
                        .iter()
                        .map(|&i| PATHS[i].trim().trim_start_matches("./").to_owned())
                    {
                        if !p.created.contains(&path) {
                            p.created.push(path);
                        }
                    }
                    true
                }
            }),
            Op::Tokens(agent, input, output, cached) => {
                let counts = state.tokens.entry(AGENTS[agent].to_owned()).or_default();
                counts[0] += u64::from(input);
                counts[1] += u64::from(output);
                counts[2] += u64::from(cached);
                true
            }
            Op::Downstream(id, ref entries) => with_phase(&mut state, id, |p| {
                ran(p) && {
                    for entry in entries.iter().map(|&i| ENTRIES[i].trim()) {
                        let placeholder =
                            ["", "none", "n/a"].contains(&entry.to_lowercase().as_str());
                        if !placeholder && !p.assumptions.iter().any(|a| a == entry) {
                            p.assumptions.push(entry.to_owned());
                        }
                    }
                    true
                }
            }),
            Op::Resolve(id, index) => {
                with_phase(&mut state, id, |p| match p.errors.get_mut(index) {
                    Some(resolved) if !*resolved => {
                        *resolved = true;
                        true
                    }
                    _ => false,
                })
            }
            Op::Transition(done, ref paths, ref next) => {
                // All or nothing: the step runs on a copy kept only when every part is accepted.
                let mut after = state.clone();
                let accepted = transition(&mut after, done, paths, next);
                if accepted {
                    state = after;
                }
                accepted
            }
        };
        state.last_accepted = accepted;
        state
    }
}

fn transition(
    state: &mut RefState,
    done: Option<PhaseId>,
    paths: &[usize],
    next: &[PhaseId],
) -> bool {
    let refused = match done {
        None => next.is_empty() || !paths.is_empty(),
        Some(id) => !with_phase(state, id, |p| {
            p.status == PhaseStatus::InProgress && {
                for path in paths
                    .iter()
                    .map(|&i| PATHS[i].trim().trim_start_matches("./").to_owned())
                {
                    if !p.created.contains(&path) {
                        p.created.push(path);
                    }
                }
                p.status = PhaseStatus::Completed;
                p.errors.iter_mut().for_each(|resolved| *resolved = true);
                true
            }
        }),
    };
    if refused {
        return false;
    }
    next.iter().all(|&id| {
        state
            .phase(id)
            .is_some_and(|p| p.status == PhaseStatus::InProgress)
            || start(state, id)
    })
}

fn ran(p: &RefPhase) -> bool {
    !matches!(p.status, PhaseStatus::Pending | PhaseStatus::Skipped)
}

fn with_phase(
    state: &mut RefState,
    id: PhaseId,
    change: impl FnOnce(&mut RefPhase) -> bool,
) -> bool {
    match (id as usize)
        .checked_sub(1)
        .and_then(|i| state.phases.get_mut(i))
    {
        Some(phase) => change(phase),
        None => false,
    }
}

fn start(state: &mut RefState, id: PhaseId) -> bool {
    if !state.can_start(id) {
        return false;
    }
    with_phase(state, id, |p| {
        if p.status == PhaseStatus::Failed {
            p.retry_count += 1;
        }
        p.status = PhaseStatus::InProgress;
        true
    })
}

struct Real {
    session: Session,
    now: Timestamp,
}

impl StateMachineTest for Real {
    type SystemUnderTest = Real;
    type Reference = Model;

    fn init_test(reference: &RefState) -> Real {
        let now = Utc
            .with_ymd_and_hms(2026, 5, 1, 8, 0, 0)
            .single()
            .expect("valid date");
        let spec = NewSession {
            id: None,
            topic: "Model run".into(),
            task: "exercise the phase machine".into(),
            workflow_mode: WorkflowMode::Standard,
            design_document: Some("docs/maestro/plans/design.md".into()),
            implementation_plan: Some("docs/maestro/plans/plan.md".into()),
            execution_mode: None,
            execution_backend: None,
            task_complexity: None,
            phases: reference
                .phases
                .iter()
                .enumerate()
                .map(|(i, p)| NewPhase {
                    id: None,
                    files: Vec::new(),
                    name: format!("Phase {}", i + 1),
                    agents: vec![],
                    parallel: false,
                    blocked_by: p.blocked_by.clone(),
                })
                .collect(),
        };
        Real {
            session: Session::new(spec, now).expect("valid spec"),
            now,
        }
    }

    fn apply(mut real: Real, reference: &RefState, op: Op) -> Real {
        real.now += Duration::minutes(1);
        let now = real.now;
        let before = real.session.clone();
        let s = &mut real.session;
        let result = match op {
            Op::Start(id) => s.start_phase(id, &[AGENTS[0].to_owned()], now),
            Op::Retry(id) => s.retry_phase(id, now),
            Op::Complete(id) => s.complete_phase(id, now),
            Op::Fail(id, agent) => s.fail_phase(
                id,
                NewError {
                    agent: AGENTS[agent].into(),
                    kind: ErrorKind::Runtime,
                    message: "boom".into(),
                },
                now,
            ),
            Op::Skip(id) => s.skip_phase(
                id,
                &UserDecision::by_user("not needed").expect("non-blank"),
                now,
            ),
            Op::Files(id, paths) => s.record_files(
                id,
                &FileChanges {
                    created: paths.iter().map(|&i| PATHS[i].to_owned()).collect(),
                    ..Default::default()
                },
                now,
            ),
            Op::Tokens(agent, input, output, cached) => s.record_tokens(
                AGENTS[agent],
                TokenCounts {
                    input: input.into(),
                    output: output.into(),
                    cached: cached.into(),
                },
                now,
            ),
            Op::Downstream(id, entries) => s.record_downstream(
                id,
                &DownstreamContext {
                    assumptions: entries.iter().map(|&i| ENTRIES[i].to_owned()).collect(),
                    ..Default::default()
                },
                now,
            ),
            Op::Resolve(id, index) => s.resolve_error(id, index, "fixed by hand", now),
            Op::Transition(done, paths, next) => s
                .transition(
                    PhaseTransition {
                        completed: done,
                        files: FileChanges {
                            created: paths.iter().map(|&i| PATHS[i].to_owned()).collect(),
                            ..Default::default()
                        },
                        next,
                        ..Default::default()
                    },
                    now,
                )
                .map(|_| ()),
        };
        assert_eq!(
            result.is_ok(),
            reference.last_accepted,
            "accepted/refused must match the model: {result:?}"
        );
        match result {
            Ok(()) => assert_eq!(
                real.session.state.updated, now,
                "an accepted change must stamp `updated`"
            ),
            Err(_) => assert_eq!(real.session, before, "a refused change must change nothing"),
        }
        for (old, new) in before.state.phases.iter().zip(&real.session.state.phases) {
            if old.status.is_done() {
                assert_eq!(
                    new.status, old.status,
                    "phase {} left terminal status {}",
                    old.id, old.status
                );
            }
        }
        real
    }

    fn check_invariants(real: &Real, reference: &RefState) {
        let state = &real.session.state;
        for (phase, model) in state.phases.iter().zip(&reference.phases) {
            assert!(
                phase.retry_count <= MAX_RETRIES,
                "phase {} retried {} times",
                phase.id,
                phase.retry_count
            );
            assert_eq!(phase.status, model.status, "phase {} status", phase.id);
            assert_eq!(
                phase.retry_count, model.retry_count,
                "phase {} retry count",
                phase.id
            );
            let resolved: Vec<bool> = phase.errors.iter().map(|e| e.resolved).collect();
            assert_eq!(
                resolved, model.errors,
                "phase {} error resolution",
                phase.id
            );
            assert_eq!(
                phase.files_created, model.created,
                "phase {} created files",
                phase.id
            );
            assert_eq!(
                phase.downstream_context.assumptions, model.assumptions,
                "phase {} assumptions",
                phase.id
            );
            if phase.status == PhaseStatus::Completed {
                assert!(
                    phase.errors.iter().all(|e| e.resolved),
                    "completed phase {} has open errors",
                    phase.id
                );
            }
        }
        let usage = &state.token_usage;
        let sum = |f: fn(&cairn_domain::orchestration::model::AgentTokens) -> u64| {
            usage.by_agent.values().map(f).sum::<u64>()
        };
        assert_eq!(
            usage.total_input,
            sum(|a| a.input),
            "total_input must equal the per-agent sum"
        );
        assert_eq!(
            usage.total_output,
            sum(|a| a.output),
            "total_output must equal the per-agent sum"
        );
        assert_eq!(
            usage.total_cached,
            sum(|a| a.cached),
            "total_cached must equal the per-agent sum"
        );
        let model_tokens: BTreeMap<String, [u64; 3]> = usage
            .by_agent
            .iter()
            .map(|(agent, t)| (agent.clone(), [t.input, t.output, t.cached]))
            .collect();
        assert_eq!(model_tokens, reference.tokens, "per-agent tokens");

        let expected_current = state
            .phases
            .iter()
            .find(|p| p.status == PhaseStatus::InProgress)
            .or_else(|| {
                state
                    .phases
                    .iter()
                    .find(|p| matches!(p.status, PhaseStatus::Pending | PhaseStatus::Failed))
            })
            .or(state.phases.last())
            .map(|p| p.id);
        assert_eq!(Some(state.current_phase), expected_current, "current_phase");

        let all_done = state.phases.iter().all(|p| p.status.is_done());
        assert_eq!(
            state.status == SessionStatus::Completed,
            all_done,
            "status completed iff every phase is done"
        );

        let json = serde_json::to_value(state).expect("serialises");
        let back: SessionState = serde_json::from_value(json).expect("deserialises");
        assert_eq!(
            &back, state,
            "the front matter must survive a JSON round trip"
        );
    }
}

prop_state_machine! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn phase_machine_follows_the_model(sequential 1..40 => Real);
}
