//! The plan aggregate against a reference model, over random sequences of transitions, fix
//! attempts, failures, changes and scope estimates — legal and illegal alike.

use std::collections::BTreeMap;

use cairn_domain::plan::{
    Change, ChangeKind, PlanError, PlanId, PlanRecord, PlanState, UserApproval,
};
use cairn_domain::{DomainError, time::Timestamp};
use chrono::{Duration, TimeZone, Utc};
use proptest::prelude::*;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};

use PlanState::*;

/// The seed's table, written out independently of the implementation's.
fn table(from: PlanState) -> &'static [PlanState] {
    match from {
        Explore => &[Plan],
        Plan => &[Execute],
        Execute => &[Reflect],
        Reflect => &[Close, RePlan, Explore],
        RePlan => &[Plan],
        Close => &[],
    }
}

const STEPS: [&str; 3] = ["1 of 3", "2 of 3", "3 of 3"];
const AREAS: [&str; 3] = ["auth", "db/session.rs", "ui"];
const PATHS: [&str; 3] = ["src/a.rs", "src/b.rs", "src/c.rs"];

#[derive(Debug, Clone)]
enum Op {
    Go {
        to: PlanState,
        approved: bool,
    },
    Fix {
        step: usize,
    },
    Fail {
        area: usize,
    },
    Change {
        path: usize,
        kind: ChangeKind,
        added: u32,
        removed: u32,
    },
    Estimate {
        lines: u32,
    },
}

#[derive(Debug, Clone, Default)]
struct Model {
    state: Option<PlanState>,
    iteration: u32,
    fixes: BTreeMap<usize, u32>,
    strikes: BTreeMap<usize, u32>,
    lines_added_total: u64,
    estimate: Option<u32>,
}

impl Model {
    fn state(&self) -> PlanState {
        self.state.unwrap_or(Explore)
    }

    fn forced(&self) -> bool {
        self.strikes.values().any(|n| *n >= 3)
    }

    fn accepts(&self, op: &Op) -> bool {
        let state = self.state();
        match op {
            Op::Go { to, approved } => {
                table(state).contains(to)
                    && !(self.forced() && state == Reflect && *to != RePlan)
                    && (*approved || !(state == Plan && *to == Execute))
            }
            Op::Fix { step } => {
                state == Execute && !self.forced() && self.fixes.get(step).copied().unwrap_or(0) < 2
            }
            Op::Fail { .. } => matches!(state, Execute | Reflect),
            Op::Change { .. } => state == Execute,
            Op::Estimate { lines } => state == Plan && self.iteration == 0 && *lines > 0,
        }
    }

    fn nuclear(&self) -> bool {
        self.estimate
            .is_some_and(|e| self.iteration >= 5 && self.lines_added_total > 2 * u64::from(e))
    }
}

struct PlanModel;

impl ReferenceStateMachine for PlanModel {
    type State = Model;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Model> {
        Just(Model::default()).boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Op> {
        let targets = table(state.state()).to_vec();
        let any_state = proptest::sample::select(PlanState::ALL.to_vec());
        // Mostly legal moves so runs get deep into the cycle, plus arbitrary ones to hit refusals.
        let legal_target = if targets.is_empty() {
            any_state.clone().boxed()
        } else {
            proptest::sample::select(targets).boxed()
        };
        let approved = proptest::bool::weighted(0.85);
        prop_oneof![
            6 => (legal_target, approved).prop_map(|(to, approved)| Op::Go { to, approved }),
            1 => (any_state, approved).prop_map(|(to, approved)| Op::Go { to, approved }),
            3 => (0..STEPS.len()).prop_map(|step| Op::Fix { step }),
            2 => (0..AREAS.len()).prop_map(|area| Op::Fail { area }),
            2 => (
                0..PATHS.len(),
                prop_oneof![Just(ChangeKind::Added), Just(ChangeKind::Modified), Just(ChangeKind::Deleted)],
                0u32..120,
                0u32..40
            )
                .prop_map(|(path, kind, added, removed)| Op::Change { path, kind, added, removed }),
            1 => (0u32..200).prop_map(|lines| Op::Estimate { lines }),
        ]
        .boxed()
    }

    fn apply(mut model: Model, op: &Op) -> Model {
        if !model.accepts(op) {
            return model;
        }
        match op {
            Op::Go { to, .. } => {
                if *to == Execute {
                    model.iteration += 1;
                    model.fixes.clear();
                }
                if *to == RePlan {
                    model.strikes.retain(|_, n| *n < 3);
                }
                model.state = Some(*to);
            }
            Op::Fix { step } => *model.fixes.entry(*step).or_insert(0) += 1,
            Op::Fail { area } => *model.strikes.entry(*area).or_insert(0) += 1,
            Op::Change { added, .. } => model.lines_added_total += u64::from(*added),
            Op::Estimate { lines } => model.estimate = Some(*lines),
        }
        model
    }
}

struct Sut {
    plan: PlanRecord,
    /// The reference state before the operation, to know whether it should have been accepted.
    before: Model,
    now: Timestamp,
}

fn plan_id() -> PlanId {
    PlanId::parse(".plan_2026-05-01_00c0ffee").unwrap()
}

fn plan_error(result: Result<impl std::fmt::Debug, DomainError>) -> PlanError {
    match result {
        Err(DomainError::Plan(e)) => e,
        other => panic!("expected a plan rule to refuse, got {other:?}"),
    }
}

impl StateMachineTest for PlanModel {
    type SystemUnderTest = Sut;
    type Reference = PlanModel;

    fn init_test(model: &Model) -> Sut {
        let now = Utc.with_ymd_and_hms(2026, 5, 1, 8, 0, 0).unwrap();
        Sut {
            plan: PlanRecord::new(plan_id(), "reach the goal", now).unwrap(),
            before: model.clone(),
            now,
        }
    }

    fn apply(mut sut: Sut, after: &Model, op: Op) -> Sut {
        sut.now += Duration::seconds(7);
        let expected = sut.before.accepts(&op);
        let untouched = sut.plan.clone();
        let from = sut.plan.state();
        match &op {
            Op::Go { to, approved } => {
                let approval = approved.then(|| UserApproval::from_user("yes, go ahead").unwrap());
                let result = sut
                    .plan
                    .transition(*to, "model step", approval.as_ref(), sut.now);
                if expected {
                    let outcome = result.expect("a table transition the model accepts");
                    assert_eq!((outcome.from, outcome.to), (from, *to));
                    assert_eq!(
                        outcome.decision.is_some(),
                        !(from == Execute && *to == Reflect)
                    );
                } else {
                    match plan_error(result) {
                        PlanError::IllegalTransition {
                            plan,
                            from: f,
                            to: t,
                            allowed,
                        } => {
                            assert_eq!((plan, f, t), (plan_id(), from, *to));
                            assert_eq!(
                                allowed,
                                table(from).to_vec(),
                                "the error must list the table's targets"
                            );
                            assert!(!table(from).contains(to));
                        }
                        PlanError::ReplanForced {
                            from: f,
                            to: t,
                            allowed,
                            strikes,
                            ..
                        } => {
                            assert_eq!((f, t, allowed), (Reflect, *to, vec![RePlan]));
                            assert!(strikes >= 3);
                        }
                        PlanError::ApprovalMissing { from: f, to: t, .. } => {
                            assert_eq!((f, t, *approved), (Plan, Execute, false));
                        }
                        other => panic!("unexpected refusal {other:?}"),
                    }
                }
            }
            Op::Fix { step } => {
                let result = sut
                    .plan
                    .record_fix_attempt(STEPS[*step], "reverted the last change");
                if expected {
                    let outcome = result.expect("a fix the model accepts");
                    assert_eq!(outcome.attempt, after.fixes[step]);
                    assert_eq!(outcome.remaining, 2 - outcome.attempt);
                    assert_eq!(sut.plan.current_step(), Some(STEPS[*step]));
                } else {
                    match plan_error(result) {
                        PlanError::WrongState { state, .. } => assert_ne!(state, Execute),
                        PlanError::FixBlockedByStrikes { .. } => assert!(sut.before.forced()),
                        PlanError::FixAttemptsExhausted {
                            attempts, step: s, ..
                        } => {
                            assert_eq!((attempts, s.as_str()), (2, STEPS[*step]))
                        }
                        other => panic!("unexpected refusal {other:?}"),
                    }
                }
            }
            Op::Fail { area } => {
                let result = sut.plan.record_failure(AREAS[*area]);
                if expected {
                    let strikes = after.strikes[area];
                    match result.expect("a failure the model accepts") {
                        cairn_domain::plan::StrikeVerdict::ReplanForced { strikes: s, .. } => {
                            assert!(strikes >= 3 && s == strikes)
                        }
                        cairn_domain::plan::StrikeVerdict::Counted {
                            strikes: s,
                            strikes_left,
                            ..
                        } => {
                            assert!(strikes < 3 && s == strikes && strikes_left == 3 - strikes)
                        }
                    }
                } else {
                    assert!(matches!(plan_error(result), PlanError::WrongState { .. }));
                }
            }
            Op::Change {
                path,
                kind,
                added,
                removed,
            } => {
                let change = Change {
                    path: PATHS[*path].to_owned(),
                    kind: *kind,
                    lines_added: *added,
                    lines_removed: *removed,
                };
                let result = sut.plan.record_change(&change);
                if expected {
                    let outcome = result.expect("a change the model accepts");
                    assert_eq!(outcome.nuclear.is_some(), after.nuclear());
                    assert_eq!(outcome.budget.is_over(), !outcome.budget.over.is_empty());
                } else {
                    assert!(matches!(plan_error(result), PlanError::WrongState { .. }));
                }
            }
            Op::Estimate { lines } => {
                let result = sut.plan.estimate_scope(*lines);
                if expected {
                    result.expect("an estimate the model accepts");
                } else {
                    assert!(result.is_err(), "the model refuses this estimate");
                }
            }
        }
        if !expected {
            assert_eq!(
                sut.plan, untouched,
                "a refused operation must change nothing"
            );
        }
        sut.before = after.clone();
        sut
    }

    fn check_invariants(sut: &Sut, model: &Model) {
        let plan = &sut.plan;
        assert_eq!(plan.state(), model.state());
        assert_eq!(plan.iteration(), model.iteration);

        let history = plan.history();
        for pair in history {
            assert!(
                table(pair.from).contains(&pair.to),
                "{} → {} is not in the table",
                pair.from,
                pair.to
            );
        }
        for window in history.windows(2) {
            assert_eq!(
                window[0].to, window[1].from,
                "history must be a connected walk"
            );
        }
        assert_eq!(
            history.first().map_or(Explore, |t| t.from),
            Explore,
            "every plan starts in EXPLORE"
        );
        assert_eq!(history.last().map_or(Explore, |t| t.to), plan.state());
        let executions = history
            .iter()
            .filter(|t| (t.from, t.to) == (Plan, Execute))
            .count() as u32;
        assert_eq!(
            plan.iteration(),
            executions,
            "iteration must count PLAN → EXECUTE"
        );

        for (i, step) in STEPS.iter().enumerate() {
            let attempts = plan.fix_attempts_on(step);
            assert!(
                attempts <= 2,
                "the leash allows at most 2 fix attempts per step"
            );
            assert_eq!(attempts, model.fixes.get(&i).copied().unwrap_or(0));
        }
        for (i, area) in AREAS.iter().enumerate() {
            assert_eq!(
                plan.strikes_on(area),
                model.strikes.get(&i).copied().unwrap_or(0)
            );
        }

        let forced = plan.forced_replan().is_some();
        assert_eq!(forced, model.forced());
        if forced {
            let expected = match plan.state() {
                Execute => vec![Reflect],
                Reflect => vec![RePlan],
                other => panic!("a forced re-plan cannot persist in {other}"),
            };
            assert_eq!(
                plan.allowed_targets_now(),
                expected,
                "3 strikes must leave only the road to RE-PLAN"
            );
        }
        if plan.state() == Close {
            assert!(plan.allowed_targets_now().is_empty(), "CLOSE is terminal");
        }
        assert_eq!(plan.lines_added_total(), model.lines_added_total);
        assert_eq!(plan.scope_estimate(), model.estimate);
        assert_eq!(plan.nuclear_check().is_some(), model.nuclear());
        assert!(plan.budget().files_added as usize <= plan.manifest().len());
        // That state.md round-trips the record at every step of such walks is checked with the
        // format: crates/storage-fs/tests/plan_format.rs, `state_md_round_trips_at_every_step`.
    }
}

prop_state_machine! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn plan_record_follows_the_reference_model(sequential 1..80 => PlanModel);
}
