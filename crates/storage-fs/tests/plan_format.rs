//! `state.md`, `decisions.md`, plan ids and the pointer: render, parse, and what is refused.

use cairn_domain::plan::{
    Change, ChangeKind, Decision, DecisionDraft, PlanDocument, PlanError, PlanId, PlanRecord,
    PlanState, UserApproval,
};
use cairn_storage_fs::plan::{
    next_decision_number, parse_decision_log, parse_pointer, parse_state, render_decision,
    render_decision_log, render_pointer, render_state, template,
};
use chrono::{Duration, NaiveDate, TimeZone, Utc};
use proptest::prelude::*;

fn id() -> PlanId {
    PlanId::parse(".plan_2026-02-14_a3f1b2c9").unwrap()
}

/// Free text as an agent might send it: any printable characters, markdown, arrows, parens,
/// colons, backticks, newlines and stray spaces.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ -~]{1,40}",
        "\\PC{1,30}",
        Just("a (nested (paren)) → and -> arrows: here".to_owned()),
        Just("  line one\nline two  ".to_owned()),
        Just("## Iteration: 99".to_owned()),
    ]
    .prop_filter("needs a visible character", |s| !s.trim().is_empty())
}

/// A label (step, area, path, abstraction): no backticks or line breaks.
fn label() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 _./:()→#-]{1,24}".prop_filter("needs a visible character", |s| {
        !s.trim().is_empty() && !s.trim().eq_ignore_ascii_case("n/a")
    })
}

#[derive(Debug, Clone)]
enum Op {
    /// An index into the targets allowed now, so walks get deep into the cycle.
    Go(usize, String),
    Step(String),
    Fix(String, String),
    Fail(String),
    Change(String, ChangeKind, u32, u32),
    Abstraction(String),
    Estimate(u32),
}

fn op() -> impl Strategy<Value = Op> {
    let kind = prop_oneof![
        Just(ChangeKind::Added),
        Just(ChangeKind::Modified),
        Just(ChangeKind::Deleted)
    ];
    prop_oneof![
        4 => (0usize..3, text()).prop_map(|(i, r)| Op::Go(i, r)),
        1 => label().prop_map(Op::Step),
        2 => (label(), text()).prop_map(|(s, n)| Op::Fix(s, n)),
        2 => label().prop_map(Op::Fail),
        2 => (label(), kind, 0u32..500, 0u32..500).prop_map(|(p, k, a, r)| Op::Change(p, k, a, r)),
        1 => label().prop_map(Op::Abstraction),
        1 => (1u32..1000).prop_map(Op::Estimate),
    ]
}

/// A record reached through the public API, so it is one the real system can produce.
fn record() -> impl Strategy<Value = PlanRecord> {
    walk().prop_map(|mut records| records.pop().expect("a walk starts with the new plan"))
}

/// Every record along a random walk of operations, legal and illegal alike, starting with the
/// new plan.
fn walk() -> impl Strategy<Value = Vec<PlanRecord>> {
    (
        text(),
        proptest::collection::vec(op(), 0..60),
        0i64..10_000_000,
        0u32..1_000_000_000,
    )
        .prop_map(|(goal, ops, secs, nanos)| {
            let start =
                Utc.with_ymd_and_hms(2026, 2, 14, 0, 0, 0).unwrap() + Duration::seconds(secs);
            let start = start + Duration::nanoseconds(i64::from(nanos));
            let mut plan = PlanRecord::new(id(), &goal, start).unwrap();
            let mut records = vec![plan.clone()];
            let approval = UserApproval::from_user("approved").unwrap();
            for (i, op) in ops.into_iter().enumerate() {
                let at = start + Duration::minutes(i as i64);
                // Refusals are expected along the way; only the accepted operations shape the record.
                let _ = match op {
                    Op::Go(i, reason) => {
                        let targets = plan.allowed_targets_now();
                        let to = targets
                            .get(i % targets.len().max(1))
                            .copied()
                            .unwrap_or(PlanState::Plan);
                        plan.transition(to, &reason, Some(&approval), at).map(drop)
                    }
                    Op::Step(step) => plan.set_step(&step),
                    Op::Fix(step, note) => plan.record_fix_attempt(&step, &note).map(drop),
                    Op::Fail(area) => plan.record_failure(&area).map(drop),
                    Op::Change(path, kind, a, r) => plan
                        .record_change(&Change {
                            path,
                            kind,
                            lines_added: a,
                            lines_removed: r,
                        })
                        .map(drop),
                    Op::Abstraction(name) => plan.record_abstraction(&name).map(drop),
                    Op::Estimate(lines) => plan.estimate_scope(lines),
                };
                records.push(plan.clone());
            }
            records
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn state_md_round_trips(plan in record()) {
        let text = render_state(&plan);
        prop_assert_eq!(parse_state(plan.id(), &text).unwrap(), plan);
    }

    #[test]
    fn state_md_round_trips_at_every_step(records in walk()) {
        for plan in records {
            let text = render_state(&plan);
            prop_assert_eq!(parse_state(plan.id(), &text).unwrap(), plan);
        }
    }

    #[test]
    fn state_md_survives_crlf_line_endings(plan in record()) {
        let text = render_state(&plan).replace('\n', "\r\n");
        prop_assert_eq!(parse_state(plan.id(), &text).unwrap(), plan);
    }

    #[test]
    fn decision_log_round_trips(
        entries in proptest::collection::vec(
            (proptest::sample::select(PlanState::ALL.to_vec()), proptest::sample::select(PlanState::ALL.to_vec()),
             0u32..3000, text()),
            0..12,
        )
    ) {
        let decisions: Vec<Decision> = entries
            .into_iter()
            .enumerate()
            .filter_map(|(i, (from, to, day, body))| {
                let date = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap() + Duration::days(i64::from(day));
                DecisionDraft::new(from, to, date, &body).ok().map(|d| d.numbered(i as u32 + 1))
            })
            .collect();
        let text = render_decision_log(&decisions);
        prop_assert_eq!(next_decision_number(&text), decisions.len() as u32 + 1);
        prop_assert_eq!(parse_decision_log(&text), decisions);
    }

    #[test]
    fn pointer_round_trips(day in 0i64..40_000, hex in "[0-9a-f]{8}") {
        let date = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap() + Duration::days(day);
        let id = PlanId::new(date, &hex).unwrap();
        prop_assert_eq!(id.date(), date);
        prop_assert_eq!(parse_pointer(&render_pointer(&id)).unwrap(), id.clone());
        prop_assert_eq!(parse_pointer(id.as_str()).unwrap(), id);
    }
}

#[test]
fn state_md_uses_the_seed_headings() {
    let at = Utc.with_ymd_and_hms(2026, 2, 14, 10, 30, 0).unwrap();
    let mut plan = PlanRecord::new(id(), "token sessions", at).unwrap();
    plan.transition(PlanState::Plan, "gathered enough context", None, at)
        .unwrap();
    plan.transition(
        PlanState::Execute,
        "user approved approach A",
        Some(&UserApproval::from_user("ok").unwrap()),
        at,
    )
    .unwrap();
    plan.record_fix_attempt("2 of 5", "reverted middleware change")
        .unwrap();
    let text = render_state(&plan);
    for expected in [
        "# Current State: EXECUTE\n",
        "## Iteration: 1\n",
        "## Current Plan Step: 2 of 5\n",
        "## Fix Attempts (",
        "- Step `2 of 5`, attempt 1: reverted middleware change\n",
        "## Change Manifest (",
        "## Last Transition: PLAN → EXECUTE (2026-02-14T10:30:00Z)\n",
        "## Transition History:\n- EXPLORE → PLAN (gathered enough context)\n- PLAN → EXECUTE (user approved approach A)\n",
    ] {
        assert!(
            text.contains(expected),
            "state.md lacks {expected:?}:\n{text}"
        );
    }
}

#[test]
fn state_md_reads_the_seed_example_leniently() {
    let seed = "# Current State: execute\n\
                ## Iteration: 3\n\
                ## Current Plan Step: 2 of 5\n\
                ## Last Transition: PLAN -> EXECUTE (approved by user)\n\
                ## Fix Attempts (resets per plan step)\n\
                - (none yet for current step)\n\
                - Step 2, attempt 1: reverted middleware change — still fails (type mismatch)\n\
                - Step 2: LEASH HIT. Transitioned to REFLECT.\n\
                ## Change Manifest (current iteration)\n\
                - [x] `lib/session/token_service.rb` — CREATED (step 1, committed abc123)\n\
                - [ ] `app/middleware/auth.rb` — MODIFIED lines 23-45 (step 2, uncommitted)\n\
                ## Some Section Nobody Knows\n\
                - ignored\n\
                ## Transition History:\n\
                - EXPLORE → PLAN (gathered enough context on auth system)\n\
                - REFLECT -> REPLAN (approach A can't handle concurrent sessions)\n";
    let plan = parse_state(&id(), seed).unwrap();
    assert_eq!(plan.state(), PlanState::Execute);
    assert_eq!(plan.iteration(), 3);
    assert_eq!(plan.current_step(), Some("2 of 5"));
    assert_eq!(plan.fix_attempts().len(), 1);
    assert_eq!(plan.fix_attempts()[0].step, "2");
    assert_eq!(
        plan.fix_attempts()[0].note,
        "reverted middleware change — still fails (type mismatch)"
    );
    let manifest: Vec<_> = plan
        .manifest()
        .iter()
        .map(|e| (e.path.as_str(), e.kind))
        .collect();
    assert_eq!(
        manifest,
        vec![
            ("lib/session/token_service.rb", ChangeKind::Added),
            ("app/middleware/auth.rb", ChangeKind::Modified)
        ]
    );
    let last = plan.last_transition().unwrap();
    assert_eq!((last.from, last.to), (PlanState::Plan, PlanState::Execute));
    assert_eq!(plan.history().len(), 2);
    assert_eq!(plan.history()[1].to, PlanState::RePlan);
}

#[test]
fn state_md_refuses_what_it_cannot_read_safely() {
    let missing_state = parse_state(&id(), "## Iteration: 1\n");
    assert!(
        matches!(missing_state, Err(PlanError::Unreadable { line: 1, .. })),
        "{missing_state:?}"
    );
    let bad_state = parse_state(&id(), "# Current State: DANCING\n");
    assert!(
        matches!(bad_state, Err(PlanError::Unreadable { line: 1, .. })),
        "{bad_state:?}"
    );
    let bad_iteration = parse_state(&id(), "# Current State: PLAN\n## Iteration: three\n");
    assert!(
        matches!(bad_iteration, Err(PlanError::Unreadable { line: 2, .. })),
        "{bad_iteration:?}"
    );
    let bad_strikes = parse_state(
        &id(),
        "# Current State: PLAN\n## Failure Strikes\n- `auth`: many\n",
    );
    assert!(
        matches!(bad_strikes, Err(PlanError::Unreadable { line: 3, .. })),
        "{bad_strikes:?}"
    );
}

#[test]
fn decisions_render_in_the_seed_shape_and_keep_numbering_monotonic() {
    let date = NaiveDate::from_ymd_opt(2025, 1, 15).unwrap();
    let draft = DecisionDraft::new(
        PlanState::Reflect,
        PlanState::RePlan,
        date,
        "**Decision**: switch to B",
    )
    .unwrap();
    let block = render_decision(&draft.clone().numbered(2));
    assert_eq!(
        block,
        "## D-002 | REFLECT → RE-PLAN | 2025-01-15\n**Decision**: switch to B\n\n"
    );

    let hand_edited = "# Decision Log\n\n## D-001 | EXPLORE -> PLAN | 2025-01-15\nA\n\n\
                       ## D-007 | garbled heading\nB\n\n## D-003 | PLAN → EXECUTE | 2025-01-16\nC\n";
    let read = parse_decision_log(hand_edited);
    assert_eq!(
        read.iter().map(|d| d.number).collect::<Vec<_>>(),
        vec![1, 3]
    );
    assert_eq!(
        next_decision_number(hand_edited),
        8,
        "an unreadable heading still reserves its number"
    );
    assert_eq!(next_decision_number("# Decision Log\n"), 1);

    let forged = DecisionDraft::new(
        PlanState::Plan,
        PlanState::Execute,
        date,
        "fine\n## D-099 | PLAN → CLOSE | x",
    );
    assert!(forged.is_err(), "a body must not be able to forge an entry");
    assert!(DecisionDraft::new(PlanState::Plan, PlanState::Execute, date, "  \n ").is_err());
}

#[test]
fn plan_ids_and_pointers_accept_exactly_one_shape() {
    assert!(PlanId::parse(".plan_2026-02-14_a3f1b2c9").is_ok());
    for bad in [
        "",
        ".plan_2026-02-14_A3F1B2C9",
        ".plan_2026-02-30_a3f1b2c9",
        ".plan_2026-2-14_a3f1b2c9x",
        ".plan_2026-02-14_a3f1b2c",
        ".plan_2026-02-14_a3f1b2c9a",
        ".plan_2026-02-14-a3f1b2c9",
        "plan_2026-02-14_a3f1b2c9x",
        ".plan_2026-02-14_a3f1b2g9",
        ".plan_２０26-02-14_a3f1b2c9",
    ] {
        assert!(PlanId::parse(bad).is_err(), "{bad:?} must be refused");
    }
    assert!(parse_pointer(".plan_2026-02-14_a3f1b2c9\n").is_ok());
    assert!(parse_pointer(".plan_2026-02-14_a3f1b2c9\r\n").is_ok());
    for bad in [
        "",
        "\n",
        " .plan_2026-02-14_a3f1b2c9",
        ".plan_2026-02-14_a3f1b2c9 ",
        ".plan_2026-02-14_a3f1b2c9\n\n",
        ".claude/.plan_2026-02-14_a3f1b2c9",
        "../.plan_2026-02-14_a3f1b2c9",
        ".plan_2026-02-14_a3f1b2c9/../../etc",
        ".plan_2026-02-14_a3f1b2c9\n.plan_2026-02-15_a3f1b2c9",
    ] {
        let refused = parse_pointer(bad);
        assert!(
            matches!(refused, Err(PlanError::BadPointer { .. })),
            "{bad:?} must be refused, got {refused:?}"
        );
    }
}

#[test]
fn created_documents_start_as_templates_naming_the_goal() {
    for document in PlanDocument::CREATED {
        let text = template(document, "migrate sessions")
            .unwrap_or_else(|| panic!("{} is created, so it has a template", document.file_name()));
        assert!(text.starts_with("# "), "{text}");
    }
    let plan_md = template(PlanDocument::Plan, "migrate sessions").unwrap();
    for expected in [
        "# Plan v1: migrate sessions\n",
        "## Goal\nmigrate sessions\n",
        "- Files added: 0/3 max\n",
        "- New abstractions (classes/modules/interfaces): 0/2 max\n",
    ] {
        assert!(
            plan_md.contains(expected),
            "plan.md lacks {expected:?}:\n{plan_md}"
        );
    }
    assert_eq!(
        template(PlanDocument::Summary, "migrate sessions"),
        None,
        "summary.md is the agent's, written at CLOSE"
    );
}
