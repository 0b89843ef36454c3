//! The plan store contract on the in-memory adapter, and the plan service on top of it.

use std::sync::Arc;

use cairn_domain::plan::memory::MemoryPlanStore;
use cairn_domain::plan::{
    BudgetOverrun, Change, ChangeKind, EditVerdict, PlanDocument, PlanError, PlanService,
    PlanState, PlanStore, StrikeVerdict, UserApproval,
};
use cairn_domain::ports::{FixedClock, Fresh, SeqIds};
use cairn_domain::{DomainError, Error};
use chrono::{TimeZone, Utc};

fn fresh() -> Fresh<dyn PlanStore> {
    Fresh {
        store: Arc::new(MemoryPlanStore::new()),
        guard: Box::new(()),
    }
}

cairn_domain::plan_store_contract!(memory_store_contract, fresh);

fn service() -> (PlanService, Arc<MemoryPlanStore>) {
    let store = Arc::new(MemoryPlanStore::new());
    let clock = Arc::new(FixedClock::new(
        Utc.with_ymd_and_hms(2026, 2, 14, 9, 0, 0).unwrap(),
    ));
    (
        PlanService::new(store.clone(), clock, Arc::new(SeqIds::default())),
        store,
    )
}

fn plan_error(result: Result<impl std::fmt::Debug, Error>) -> PlanError {
    match result {
        Err(Error::Domain(DomainError::Plan(e))) => e,
        other => panic!("expected a plan refusal, got {other:?}"),
    }
}

fn approval() -> Option<UserApproval> {
    Some(UserApproval::from_user("yes, go with it").unwrap())
}

async fn to_execute(service: &PlanService) {
    service
        .transition(PlanState::Plan, "context gathered", None)
        .await
        .unwrap();
    service
        .transition(PlanState::Execute, "approved", approval())
        .await
        .unwrap();
}

#[tokio::test]
async fn create_names_the_directory_and_refuses_a_second_active_plan() {
    let (service, store) = service();
    let plan = service
        .create("  migrate\nsessions  ", false)
        .await
        .unwrap();
    assert!(
        plan.id().as_str().starts_with(".plan_2026-02-14_"),
        "{}",
        plan.id()
    );
    assert_eq!(plan.goal(), "migrate sessions");
    assert_eq!(plan.state(), PlanState::Explore);
    assert_eq!(service.current().await.unwrap(), plan);
    // What plan.md starts with is the filesystem adapter's template (tested there).
    assert!(
        store
            .read_document(plan.id(), PlanDocument::Plan)
            .await
            .is_ok()
    );

    let refused = plan_error(service.create("another", false).await);
    assert_eq!(
        refused,
        PlanError::ActivePlanExists {
            current: plan.id().clone()
        }
    );
    let second = service.create("another", true).await.unwrap();
    assert_ne!(second.id(), plan.id());
    assert_eq!(service.current().await.unwrap().id(), second.id());
    assert_eq!(store.list().await.unwrap().len(), 2);
}

#[tokio::test]
async fn plan_to_execute_needs_approval_and_counts_iterations() {
    let (service, store) = service();
    let plan = service.create("goal", false).await.unwrap();
    let report = service
        .transition(PlanState::Plan, "found the coupling", None)
        .await
        .unwrap();
    assert_eq!(
        report.decision.as_ref().map(|d| d.label()),
        Some("D-001".to_owned())
    );

    let refused = plan_error(
        service
            .transition(PlanState::Execute, "let's go", None)
            .await,
    );
    assert_eq!(
        refused,
        PlanError::ApprovalMissing {
            plan: plan.id().clone(),
            from: PlanState::Plan,
            to: PlanState::Execute
        }
    );
    assert!(refused.to_string().contains("approval"), "{refused}");
    assert_eq!(
        service.current().await.unwrap().state(),
        PlanState::Plan,
        "a refusal changes nothing"
    );

    let report = service
        .transition(PlanState::Execute, "approved", approval())
        .await
        .unwrap();
    assert_eq!(report.outcome.iteration, 1);
    let decision = report.decision.unwrap();
    assert_eq!(decision.number, 2);
    assert!(
        decision.body.contains("yes, go with it"),
        "the approval is recorded: {}",
        decision.body
    );
    assert!(
        UserApproval::from_user("   ").is_err(),
        "an approval must quote the user"
    );

    let quiet = service
        .transition(PlanState::Reflect, "step done", None)
        .await
        .unwrap();
    assert!(
        quiet.decision.is_none(),
        "EXECUTE → REFLECT is not a decision"
    );
    let illegal = plan_error(
        service
            .transition(PlanState::Execute, "again", approval())
            .await,
    );
    assert_eq!(
        illegal,
        PlanError::IllegalTransition {
            plan: plan.id().clone(),
            from: PlanState::Reflect,
            to: PlanState::Execute,
            allowed: vec![PlanState::Close, PlanState::RePlan, PlanState::Explore],
        }
    );
    assert!(
        illegal.to_string().contains("CLOSE, RE-PLAN, EXPLORE"),
        "{illegal}"
    );
    service
        .transition(PlanState::RePlan, "approach A failed", None)
        .await
        .unwrap();
    service
        .transition(PlanState::Plan, "approach B", None)
        .await
        .unwrap();
    let report = service
        .transition(PlanState::Execute, "approved B", approval())
        .await
        .unwrap();
    assert_eq!(report.outcome.iteration, 2);
    assert_eq!(store.decisions(plan.id()).await.unwrap().len(), 5);
}

#[tokio::test]
async fn the_third_fix_attempt_is_refused_with_go_to_reflect() {
    let (service, _) = service();
    service.create("goal", false).await.unwrap();
    assert!(matches!(
        plan_error(service.record_fix_attempt("1", "revert").await),
        PlanError::WrongState { .. }
    ));
    to_execute(&service).await;
    assert_eq!(
        service
            .record_fix_attempt("1", "revert")
            .await
            .unwrap()
            .remaining,
        1
    );
    assert_eq!(
        service
            .record_fix_attempt("1", "delete")
            .await
            .unwrap()
            .remaining,
        0
    );
    let third = plan_error(service.record_fix_attempt("1", "one more try").await);
    assert!(
        matches!(third, PlanError::FixAttemptsExhausted { attempts: 2, .. }),
        "{third:?}"
    );
    assert!(third.to_string().contains("REFLECT"), "{third}");
    assert_eq!(
        service
            .record_fix_attempt("2", "other step")
            .await
            .unwrap()
            .attempt,
        1,
        "the leash is per step"
    );

    service
        .transition(PlanState::Reflect, "leash hit", None)
        .await
        .unwrap();
    service
        .transition(PlanState::RePlan, "rethink", None)
        .await
        .unwrap();
    service
        .transition(PlanState::Plan, "new plan", None)
        .await
        .unwrap();
    service
        .transition(PlanState::Execute, "approved", approval())
        .await
        .unwrap();
    assert_eq!(
        service
            .record_fix_attempt("1", "fresh")
            .await
            .unwrap()
            .attempt,
        1,
        "a new iteration resets the leash"
    );
}

#[tokio::test]
async fn three_strikes_force_replan() {
    let (service, _) = service();
    service.create("goal", false).await.unwrap();
    to_execute(&service).await;
    assert!(matches!(
        service.record_failure("auth").await.unwrap(),
        StrikeVerdict::Counted {
            strikes_left: 2,
            ..
        }
    ));
    service.record_failure("auth").await.unwrap();
    service.record_failure("db").await.unwrap();
    let verdict = service.record_failure("auth").await.unwrap();
    assert_eq!(
        verdict,
        StrikeVerdict::ReplanForced {
            area: "auth".to_owned(),
            strikes: 3
        }
    );
    assert!(matches!(
        plan_error(service.record_fix_attempt("1", "x").await),
        PlanError::FixBlockedByStrikes { .. }
    ));

    service
        .transition(PlanState::Reflect, "struck out", None)
        .await
        .unwrap();
    for to in [PlanState::Close, PlanState::Explore] {
        let refused = plan_error(service.transition(to, "ignore it", None).await);
        assert!(
            matches!(&refused, PlanError::ReplanForced { to: t, allowed, area, .. } if *t == to && *allowed == vec![PlanState::RePlan] && area == "auth"),
            "{refused:?}"
        );
    }
    assert!(
        plan_error(service.close("done").await)
            .to_string()
            .contains("3-strike")
    );
    let report = service
        .transition(PlanState::RePlan, "different approach", None)
        .await
        .unwrap();
    let body = report.decision.unwrap().body;
    assert!(
        body.contains("3-STRIKE TRIGGERED") && body.contains("`auth`"),
        "{body}"
    );
    let plan = service.current().await.unwrap();
    assert_eq!(
        (plan.strikes_on("auth"), plan.strikes_on("db")),
        (0, 1),
        "only the struck-out area resets"
    );
    assert!(plan.forced_replan().is_none());
}

#[tokio::test]
async fn budget_overruns_are_reported_and_the_nuclear_option_fires() {
    let (service, _) = service();
    service.create("goal", false).await.unwrap();
    service
        .transition(PlanState::Plan, "ready", None)
        .await
        .unwrap();
    service.estimate_scope(100).await.unwrap();
    service
        .transition(PlanState::Execute, "approved", approval())
        .await
        .unwrap();
    for (i, path) in ["a.rs", "b.rs", "c.rs", "d.rs"].iter().enumerate() {
        let outcome = service
            .record_change(Change {
                path: (*path).to_owned(),
                kind: ChangeKind::Added,
                lines_added: 10,
                lines_removed: 0,
            })
            .await
            .unwrap();
        assert_eq!(outcome.budget.files_added, i as u32 + 1);
        let files_over = outcome
            .budget
            .over
            .iter()
            .any(|o| matches!(o, BudgetOverrun::FilesAdded { .. }));
        assert_eq!(
            files_over,
            i == 3,
            "only the fourth added file breaks the budget"
        );
        assert!(
            outcome
                .budget
                .over
                .iter()
                .any(|o| matches!(o, BudgetOverrun::NetLines { net, .. } if *net > 0))
        );
        assert!(
            outcome.nuclear.is_none(),
            "no nuclear option before iteration 5"
        );
    }
    let cancelled = service
        .record_change(Change {
            path: "d.rs".to_owned(),
            kind: ChangeKind::Deleted,
            lines_added: 0,
            lines_removed: 10,
        })
        .await
        .unwrap();
    assert_eq!(
        cancelled.budget.files_added, 3,
        "creating then deleting a file cancels out"
    );
    for name in ["TokenService", "Adapter", "TokenService"] {
        service.record_abstraction(name).await.unwrap();
    }
    let report = service.record_abstraction("Shim").await.unwrap();
    assert_eq!(
        report
            .over
            .iter()
            .filter(|o| matches!(o, BudgetOverrun::NewAbstractions { count: 3, .. }))
            .count(),
        1
    );

    for _ in 1..5 {
        service
            .transition(PlanState::Reflect, "observe", None)
            .await
            .unwrap();
        service
            .transition(PlanState::RePlan, "again", None)
            .await
            .unwrap();
        service
            .transition(PlanState::Plan, "again", None)
            .await
            .unwrap();
        assert!(matches!(
            plan_error(service.estimate_scope(1000).await),
            PlanError::ScopeEstimateFrozen { .. }
        ));
        service
            .transition(PlanState::Execute, "approved", approval())
            .await
            .unwrap();
    }
    assert_eq!(service.current().await.unwrap().iteration(), 5);
    let within = service
        .record_change(Change {
            path: "e.rs".to_owned(),
            kind: ChangeKind::Modified,
            lines_added: 160,
            lines_removed: 0,
        })
        .await
        .unwrap();
    assert!(
        within.nuclear.is_none(),
        "200 lines added against 100 is bloat 2×, not over 2×"
    );
    let over = service
        .record_change(Change {
            path: "e.rs".to_owned(),
            kind: ChangeKind::Modified,
            lines_added: 1,
            lines_removed: 50,
        })
        .await
        .unwrap();
    let nuclear = over
        .nuclear
        .expect("201 lines added against 100 at iteration 5");
    assert_eq!(
        (
            nuclear.iteration,
            nuclear.lines_added_total,
            nuclear.scope_estimate
        ),
        (5, 201, 100)
    );
    assert!(
        nuclear.to_string().contains("reverting ALL changes"),
        "{nuclear}"
    );
}

#[tokio::test]
async fn decide_edit_follows_the_active_plan() {
    let (service, _) = service();
    assert_eq!(
        service
            .decide_edit("/repo", "/repo/src/a.rs")
            .await
            .unwrap(),
        EditVerdict::Allow,
        "no plan, no rule"
    );
    let plan = service.create("goal", false).await.unwrap();
    let findings = format!("/repo/.claude/{}/findings.md", plan.id());
    assert!(
        service
            .decide_edit("/repo/", &findings)
            .await
            .unwrap()
            .is_allowed()
    );
    assert!(
        !service
            .decide_edit("/repo", "/repo/src/a.rs")
            .await
            .unwrap()
            .is_allowed()
    );
    to_execute(&service).await;
    assert!(
        service
            .decide_edit("/repo", "/repo/src/a.rs")
            .await
            .unwrap()
            .is_allowed()
    );
    assert!(
        !service
            .decide_edit(
                r"C:\repo",
                &format!(r"C:\repo\.claude\{}\state.md", plan.id())
            )
            .await
            .unwrap()
            .is_allowed()
    );
}

#[tokio::test]
async fn log_decision_close_and_abandon() {
    let (service, store) = service();
    let plan = service.create("goal", false).await.unwrap();
    let first = service
        .log_decision("**Context**: three session stores")
        .await
        .unwrap();
    assert_eq!(
        (first.number, first.from, first.to),
        (1, PlanState::Explore, PlanState::Explore)
    );
    assert!(matches!(
        plan_error(service.close("early").await),
        PlanError::IllegalTransition { .. }
    ));
    to_execute(&service).await;
    let noted = service
        .log_decision("**Decision**: approach A")
        .await
        .unwrap();
    assert_eq!(
        (noted.number, noted.from, noted.to),
        (4, PlanState::Plan, PlanState::Execute)
    );
    service
        .transition(PlanState::Reflect, "criteria met", None)
        .await
        .unwrap();
    match plan_error(service.close("all criteria met").await) {
        PlanError::UnreferencedDecisions { decisions, .. } => {
            assert_eq!(decisions, ["D-001", "D-002", "D-003", "D-004"]);
        }
        other => panic!("close must list the unreferenced decisions, got {other:?}"),
    }
    assert_eq!(
        store.load(plan.id()).await.unwrap().state(),
        PlanState::Reflect,
        "a refused close changes nothing"
    );
    service
        .record_finding("D-001, D-002 and D-003 shaped the plan", None)
        .await
        .unwrap();
    assert!(matches!(
        plan_error(service.close("all criteria met").await),
        PlanError::UnreferencedDecisions { decisions, .. } if decisions == ["D-004"]
    ));
    service
        .record_finding("D-004: approach A, anchored in code", Some("anchors.md"))
        .await
        .unwrap();
    let closed = service.close("all criteria met").await.unwrap();
    assert_eq!(closed.state(), PlanState::Close);
    assert_eq!(
        store.current().await.unwrap(),
        None,
        "close releases the pointer"
    );
    assert!(matches!(
        plan_error(service.current().await),
        PlanError::NoActivePlan
    ));
    assert_eq!(
        store.load(plan.id()).await.unwrap().state(),
        PlanState::Close,
        "the plan is kept"
    );

    let next = service.create("next", false).await.unwrap();
    to_execute(&service).await;
    let abandoned = service.abandon().await.unwrap();
    assert_eq!(
        (abandoned.id(), abandoned.state()),
        (next.id(), PlanState::Execute)
    );
    assert_eq!(store.current().await.unwrap(), None);
}
