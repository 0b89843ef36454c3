//! Edge cases of orchestration sessions, the store contract against the in-memory adapter, and
//! the service's use cases.

use std::sync::Arc;

use cairn_domain::orchestration::archive::{
    ArchiveBlocker, ArchivedFile, Location, archive_blockers, archive_plan, verify_archive,
};
use cairn_domain::orchestration::hook_state::{
    HOOK_STATE_MAX_AGE, HookStateDir, hook_dir_to_remove_at_end, hook_dirs_to_prune,
};
use cairn_domain::orchestration::memory::MemoryOrchestrationStore;
use cairn_domain::orchestration::phase::{PHASE_TRANSITIONS, allowed_targets};
use cairn_domain::orchestration::resume::resume_summary;
use cairn_domain::orchestration::session::normalise_entries;
use cairn_domain::orchestration::*;
use cairn_domain::ports::{FixedClock, Fresh};
use cairn_domain::time::Timestamp;
use cairn_domain::{DomainError, Error, StoreError};
use chrono::{NaiveDate, TimeDelta, TimeZone, Utc};
use serde_json::json;

fn at(hour: u32, minute: u32) -> Timestamp {
    Utc.with_ymd_and_hms(2026, 3, 14, hour, minute, 0)
        .single()
        .expect("valid")
}

fn phase(name: &str, blocked_by: &[PhaseId]) -> NewPhase {
    NewPhase {
        id: None,
        files: Vec::new(),
        name: name.into(),
        agents: vec!["coder".into()],
        parallel: false,
        blocked_by: blocked_by.to_vec(),
    }
}

fn spec() -> NewSession {
    NewSession {
        id: None,
        topic: "Auth Rewrite".into(),
        task: "Rewrite the auth layer".into(),
        workflow_mode: WorkflowMode::Standard,
        design_document: Some("docs/maestro/plans/2026-03-14-auth-rewrite-design.md".into()),
        implementation_plan: Some("docs/maestro/plans/2026-03-14-auth-rewrite-impl-plan.md".into()),
        execution_mode: None,
        execution_backend: None,
        task_complexity: None,
        phases: vec![phase("Schema", &[]), phase("API", &[1]), phase("Docs", &[])],
    }
}

fn session() -> Session {
    Session::new(spec(), at(9, 0)).expect("valid spec")
}

fn boom() -> NewError {
    NewError {
        agent: "coder".into(),
        kind: ErrorKind::Runtime,
        message: "tests failed".into(),
    }
}

fn user(reason: &str) -> UserDecision {
    UserDecision::by_user(reason).expect("non-blank reason")
}

// ---- ids ----------------------------------------------------------------------------------

#[test]
fn slugify_lowercases_and_collapses_separators() {
    let date = NaiveDate::from_ymd_opt(2026, 3, 14).expect("valid");
    let id = SessionId::slugify(date, "  Add OAuth2 -- login!  ").expect("slug");
    assert_eq!(id.as_str(), "2026-03-14-add-oauth2-login");
    let id = SessionId::slugify(date, "Café ünïcode").expect("slug");
    assert_eq!(
        id.as_str(),
        "2026-03-14-caf-n-code",
        "non-ASCII letters are separators"
    );
}

#[test]
fn slugify_refuses_topics_without_letters_or_digits() {
    let date = NaiveDate::from_ymd_opt(2026, 3, 14).expect("valid");
    for topic in ["", "   ", "!!! ---", "ééé"] {
        assert!(
            matches!(
                SessionId::slugify(date, topic),
                Err(OrchestrationError::InvalidSessionId { .. })
            ),
            "{topic:?}"
        );
    }
}

#[test]
fn slugify_cuts_long_topics_at_a_hyphen() {
    let date = NaiveDate::from_ymd_opt(2026, 3, 14).expect("valid");
    let topic = "alpha ".repeat(30);
    let id = SessionId::slugify(date, &topic).expect("slug");
    let slug = id
        .as_str()
        .strip_prefix("2026-03-14-")
        .expect("date prefix");
    assert!(slug.len() <= model::MAX_TOPIC_SLUG_LEN, "{slug}");
    assert!(
        slug.split('-').all(|word| word == "alpha"),
        "cut mid-word: {slug}"
    );
    let unbroken = "x".repeat(100);
    let id = SessionId::slugify(date, &unbroken).expect("slug");
    assert_eq!(
        id.as_str().len(),
        "2026-03-14-".len() + model::MAX_TOPIC_SLUG_LEN
    );
}

#[test]
fn session_ids_must_be_file_name_safe() {
    for bad in ["", "a/b", "..", "a b", "2026-01-01-é"] {
        assert!(SessionId::parse(bad).is_err(), "{bad:?} accepted");
        assert!(
            serde_json::from_value::<SessionId>(json!(bad)).is_err(),
            "{bad:?} deserialised"
        );
    }
    assert!(SessionId::parse("2026-01-01-topic_slug-2").is_ok());
}

// ---- document model -----------------------------------------------------------------------

#[test]
fn seed_document_round_trips_with_unknown_fields_at_every_level() {
    let seed = json!({
        "session_id": "2026-03-14-auth-rewrite",
        "task": "Rewrite auth",
        "created": "2026-03-14T09:00:00Z",
        "updated": "2026-03-14T10:00:00Z",
        "status": "in_progress",
        "workflow_mode": "express",
        "design_document": null,
        "implementation_plan": null,
        "current_phase": 1,
        "total_phases": 1,
        "execution_mode": null,
        "execution_backend": null,
        "task_complexity": "simple",
        "x_top": {"nested": [1, 2]},
        "token_usage": {
            "total_input": 10, "total_output": 5, "total_cached": 1,
            "by_agent": {"coder": {"input": 10, "output": 5, "cached": 1, "x_agent": true}},
            "x_usage": "kept"
        },
        "phases": [{
            "id": 1, "name": "Build", "status": "failed", "agents": ["coder"], "parallel": false,
            "started": "2026-03-14T09:30:00Z", "completed": null, "blocked_by": [],
            "files_created": ["src/a.rs"], "files_modified": [], "files_deleted": [],
            "downstream_context": {
                "key_interfaces_introduced": [], "patterns_established": [], "integration_points": [],
                "assumptions": [], "warnings": ["careful"], "x_ctx": 1
            },
            "errors": [{
                "agent": "coder", "timestamp": "2026-03-14T09:45:00Z", "type": "file_conflict",
                "message": "both wrote a.rs", "resolution": "pending", "resolved": false, "x_err": "kept"
            }],
            "retry_count": 1,
            "x_phase": [true]
        }]
    });
    let state: SessionState =
        serde_json::from_value(seed.clone()).expect("parses the seed's shape");
    assert_eq!(state.phases[0].errors[0].kind, ErrorKind::FileConflict);
    assert_eq!(state.phases[0].status, PhaseStatus::Failed);
    assert_eq!(
        serde_json::to_value(&state).expect("serialises"),
        seed,
        "round trip must be lossless"
    );
}

#[test]
fn new_session_matches_the_seed_template() {
    let s = session();
    assert_eq!(s.id().as_str(), "2026-03-14-auth-rewrite");
    assert_eq!(s.state.status, SessionStatus::InProgress);
    assert_eq!((s.state.current_phase, s.state.total_phases), (1, 3));
    assert!(
        s.state
            .phases
            .iter()
            .all(|p| p.status == PhaseStatus::Pending && p.retry_count == 0)
    );
    assert_eq!(
        s.log,
        [LogEntry::Title {
            topic: "Auth Rewrite".into()
        }]
    );
    let json = serde_json::to_value(&s.state).expect("serialises");
    let keys: Vec<&str> = json
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "session_id",
            "task",
            "created",
            "updated",
            "status",
            "workflow_mode",
            "design_document",
            "implementation_plan",
            "current_phase",
            "total_phases",
            "execution_mode",
            "execution_backend",
            "task_complexity",
            "token_usage",
            "phases"
        ],
        "field names and order follow the seed template"
    );
    assert_eq!(json["created"], "2026-03-14T09:00:00Z");
}

#[test]
fn new_session_validates_its_phases() {
    let mut no_phases = spec();
    no_phases.phases.clear();
    assert!(matches!(
        Session::new(no_phases, at(9, 0)),
        Err(OrchestrationError::InvalidPhases { .. })
    ));
    let mut forward = spec();
    forward.phases[0].blocked_by = vec![2];
    assert!(matches!(
        Session::new(forward, at(9, 0)),
        Err(OrchestrationError::InvalidPhases { .. })
    ));
    let mut unnamed = spec();
    unnamed.phases[1].name = " \n ".into();
    assert!(matches!(
        Session::new(unnamed, at(9, 0)),
        Err(OrchestrationError::InvalidPhases { .. })
    ));
    let mut blank_task = spec();
    blank_task.task = "  ".into();
    assert!(matches!(
        Session::new(blank_task, at(9, 0)),
        Err(OrchestrationError::Blank { field: "task" })
    ));
}

// ---- phase machine ------------------------------------------------------------------------

#[test]
fn transition_table_is_the_specs() {
    use PhaseStatus::*;
    assert_eq!(allowed_targets(Pending), [InProgress, Skipped]);
    assert_eq!(allowed_targets(InProgress), [Completed, Failed]);
    assert_eq!(allowed_targets(Failed), [InProgress]);
    assert!(allowed_targets(Completed).is_empty() && allowed_targets(Skipped).is_empty());
    assert_eq!(
        PHASE_TRANSITIONS.len(),
        PhaseStatus::ALL.len(),
        "every status has a row"
    );
}

#[test]
fn illegal_transition_names_everything_and_changes_nothing() {
    let mut s = session();
    let before = s.clone();
    let err = s
        .complete_phase(1, at(9, 5))
        .expect_err("pending cannot complete");
    assert_eq!(
        err,
        OrchestrationError::IllegalTransition {
            session: s.id().clone(),
            phase: 1,
            from: PhaseStatus::Pending,
            to: PhaseStatus::Completed,
            allowed: vec![PhaseStatus::InProgress, PhaseStatus::Skipped],
        }
    );
    assert_eq!(
        err.to_string(),
        "session 2026-03-14-auth-rewrite, phase 1: cannot go from pending to completed; allowed from pending: \
         in_progress, skipped"
    );
    assert_eq!(s, before);
    assert!(matches!(
        s.start_phase(9, &[], at(9, 5)),
        Err(OrchestrationError::PhaseNotFound { phase: 9, .. })
    ));
}

#[test]
fn completed_is_terminal() {
    let mut s = session();
    s.start_phase(1, &[], at(9, 1)).expect("start");
    s.complete_phase(1, at(9, 2)).expect("complete");
    for result in [
        s.start_phase(1, &[], at(9, 3)),
        s.fail_phase(1, boom(), at(9, 3)),
        s.skip_phase(1, &user("x"), at(9, 3)),
    ] {
        assert!(
            matches!(&result, Err(OrchestrationError::IllegalTransition { allowed, .. }) if allowed.is_empty()),
            "{result:?}"
        );
    }
    assert!(
        OrchestrationError::IllegalTransition {
            session: s.id().clone(),
            phase: 1,
            from: PhaseStatus::Completed,
            to: PhaseStatus::InProgress,
            allowed: vec![],
        }
        .to_string()
        .ends_with("nothing (terminal)")
    );
}

#[test]
fn a_third_retry_is_refused_with_an_escalation() {
    let mut s = session();
    s.start_phase(1, &[], at(9, 0)).expect("start");
    for retry in 1..=2 {
        s.fail_phase(1, boom(), at(9, retry)).expect("fail");
        s.retry_phase(1, at(9, retry))
            .expect("retry within the limit");
        assert_eq!(s.phase(1).map(|p| p.retry_count), Some(retry));
    }
    s.fail_phase(1, boom(), at(9, 10)).expect("fail");
    let before = s.clone();
    let err = s.retry_phase(1, at(9, 11)).expect_err("third retry");
    assert!(
        matches!(
            err,
            OrchestrationError::RetriesExhausted {
                retries: 2,
                max: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("escalate to the user"), "{err}");
    assert_eq!(
        s.start_phase(1, &[], at(9, 11))
            .expect_err("start is a retry too"),
        err,
        "start cannot bypass the limit"
    );
    assert_eq!(s, before);
    assert_eq!(
        s.phase(1).map(|p| p.errors.len()),
        Some(3),
        "each failure is its own error entry"
    );
}

#[test]
fn retry_needs_a_failed_phase() {
    let mut s = session();
    assert!(matches!(
        s.retry_phase(1, at(9, 1)),
        Err(OrchestrationError::NotFailed {
            status: PhaseStatus::Pending,
            ..
        })
    ));
}

#[test]
fn blockers_must_be_done_first() {
    let mut s = session();
    let err = s.start_phase(2, &[], at(9, 1)).expect_err("blocked by 1");
    assert!(
        matches!(&err, OrchestrationError::Blocked { phase: 2, blockers, .. } if *blockers == [1]),
        "{err:?}"
    );
    s.skip_phase(1, &user("already done upstream"), at(9, 2))
        .expect("skip");
    s.start_phase(2, &[], at(9, 3))
        .expect("a skipped blocker no longer blocks");
}

#[test]
fn skipping_needs_a_reason_and_is_logged() {
    assert!(matches!(
        UserDecision::by_user(" \n "),
        Err(OrchestrationError::Blank { .. })
    ));
    let mut s = session();
    s.start_phase(1, &[], at(9, 1)).expect("start");
    assert!(
        matches!(
            s.skip_phase(1, &user("x"), at(9, 2)),
            Err(OrchestrationError::IllegalTransition { .. })
        ),
        "only pending phases can be skipped"
    );
    s.skip_phase(3, &user("docs\nlater"), at(9, 3))
        .expect("skip");
    let Some(LogEntry::Phase { phase, report }) = s.log.last() else {
        panic!("a skip logs the phase: {:?}", s.log);
    };
    assert_eq!((phase.id, phase.status), (3, PhaseStatus::Skipped));
    assert_eq!(report.notes, ["Skipped by user decision: docs later"]);
}

#[test]
fn current_phase_and_status_follow_the_phases() {
    let mut s = session();
    s.start_phase(3, &[], at(9, 1)).expect("start 3");
    assert_eq!(s.state.current_phase, 3, "the phase in progress");
    s.fail_phase(3, boom(), at(9, 2)).expect("fail");
    assert_eq!(s.state.current_phase, 1, "first pending or failed");
    s.start_phase(1, &[], at(9, 3)).expect("start 1");
    s.complete_phase(1, at(9, 4)).expect("complete 1");
    s.skip_phase(2, &user("not needed"), at(9, 5))
        .expect("skip 2");
    assert_eq!(s.state.current_phase, 3);
    assert_eq!(s.state.status, SessionStatus::InProgress);
    s.retry_phase(3, at(9, 6)).expect("retry 3");
    s.complete_phase(3, at(9, 7)).expect("complete 3");
    assert_eq!(s.state.status, SessionStatus::Completed);
    assert_eq!(s.state.current_phase, 3, "all done: the last phase");
    assert_eq!(s.state.updated, at(9, 7));
    let error = &s.phase(3).expect("phase 3").errors[0];
    assert!(
        error.resolved && error.resolution == "the phase completed on attempt 2",
        "{error:?}"
    );
}

// ---- records ------------------------------------------------------------------------------

#[test]
fn downstream_entries_are_normalised() {
    let entries: Vec<String> = [
        "  a ",
        "",
        "   ",
        "none",
        "NONE",
        "N/a",
        "n/A ",
        "a",
        "b",
        "None needed",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(normalise_entries(&entries), ["a", "b", "None needed"]);
    let mut s = session();
    s.start_phase(1, &[], at(9, 1)).expect("start");
    let context = DownstreamContext {
        warnings: entries,
        key_interfaces_introduced: vec!["fn x()".into()],
        ..Default::default()
    };
    s.record_downstream(1, &context, at(9, 2)).expect("record");
    s.record_downstream(1, &context, at(9, 3))
        .expect("record again");
    let mine = &s.phase(1).expect("phase").downstream_context;
    assert_eq!(mine.warnings, ["a", "b", "None needed"]);
    assert_eq!(mine.key_interfaces_introduced, ["fn x()"]);
}

#[test]
fn manifests_append_normalised_and_deduplicated() {
    let mut s = session();
    let changes = FileChanges {
        created: vec![
            "./src/a.rs".into(),
            "src/a.rs".into(),
            "  ".into(),
            "src\\b.rs".into(),
        ],
        modified: vec!["Cargo.toml".into()],
        deleted: vec!["old.rs".into()],
    };
    assert!(
        matches!(
            s.record_files(1, &changes, at(9, 1)),
            Err(OrchestrationError::PhaseNeverRan { .. })
        ),
        "a pending phase has no files"
    );
    s.start_phase(1, &[], at(9, 1)).expect("start");
    s.record_files(1, &changes, at(9, 2)).expect("record");
    s.record_files(1, &changes, at(9, 3)).expect("record again");
    let p = s.phase(1).expect("phase");
    assert_eq!(p.files_created, ["src/a.rs", "src/b.rs"]);
    assert_eq!(
        (p.files_modified.as_slice(), p.files_deleted.as_slice()),
        (&["Cargo.toml".to_owned()][..], &["old.rs".to_owned()][..])
    );
}

#[test]
fn tokens_add_up_and_saturate() {
    let mut s = session();
    s.record_tokens(
        "coder",
        TokenCounts {
            input: 10,
            output: 5,
            cached: 1,
        },
        at(9, 1),
    )
    .expect("record");
    s.record_tokens(
        " coder ",
        TokenCounts {
            input: 1,
            output: 1,
            cached: 1,
        },
        at(9, 2),
    )
    .expect("record");
    s.record_tokens(
        "tester",
        TokenCounts {
            input: u64::MAX,
            output: 0,
            cached: 0,
        },
        at(9, 3),
    )
    .expect("record");
    let usage = &s.state.token_usage;
    assert_eq!(
        (usage.total_input, usage.total_output, usage.total_cached),
        (u64::MAX, 6, 2)
    );
    assert_eq!(
        (
            usage.by_agent["coder"].input,
            usage.by_agent["coder"].cached
        ),
        (11, 2)
    );
    assert!(matches!(
        s.record_tokens("  ", TokenCounts::default(), at(9, 4)),
        Err(OrchestrationError::Blank { .. })
    ));
}

#[test]
fn errors_resolve_once_by_index() {
    let mut s = session();
    s.start_phase(1, &[], at(9, 1)).expect("start");
    s.fail_phase(1, boom(), at(9, 2)).expect("fail");
    let error = &s.phase(1).expect("phase").errors[0];
    assert_eq!(
        (error.resolution.as_str(), error.resolved, error.timestamp),
        ("pending", false, at(9, 2))
    );
    assert!(matches!(
        s.resolve_error(1, 1, "x", at(9, 3)),
        Err(OrchestrationError::NoSuchError {
            index: 1,
            len: 1,
            ..
        })
    ));
    assert!(matches!(
        s.resolve_error(1, 0, " ", at(9, 3)),
        Err(OrchestrationError::Blank { .. })
    ));
    s.resolve_error(1, 0, "raised the timeout", at(9, 3))
        .expect("resolve");
    assert_eq!(
        s.phase(1).expect("phase").errors[0].resolution,
        "raised the timeout"
    );
    assert!(matches!(
        s.resolve_error(1, 0, "again", at(9, 4)),
        Err(OrchestrationError::ErrorAlreadyResolved { .. })
    ));
    let blank = NewError {
        message: "  ".into(),
        ..boom()
    };
    s.retry_phase(1, at(9, 5)).expect("retry");
    assert!(matches!(
        s.fail_phase(1, blank, at(9, 6)),
        Err(OrchestrationError::Blank { .. })
    ));
}

// ---- archive ------------------------------------------------------------------------------

#[test]
fn archive_blockers_and_plan() {
    let mut s = session();
    s.start_phase(1, &[], at(9, 1)).expect("start");
    let blockers = archive_blockers(&s, Some(&user("stop here")));
    assert_eq!(
        blockers,
        [ArchiveBlocker::PhaseInProgress { phase: 1 }],
        "a user decision does not lift in-progress"
    );
    s.complete_phase(1, at(9, 2)).expect("complete");
    assert_eq!(
        archive_blockers(&s, None),
        [ArchiveBlocker::UnfinishedPhases { phases: vec![2, 3] }]
    );
    assert!(archive_blockers(&s, Some(&user("abandon the rest"))).is_empty());

    let plan = archive_plan(&s, Some(&user("abandon the rest"))).expect("plan");
    let moves: Vec<(ArchivedFile, Location, Location)> = plan
        .moves
        .iter()
        .map(|m| (m.file, m.from.clone(), m.to.clone()))
        .collect();
    assert_eq!(
        moves,
        [
            (
                ArchivedFile::DesignDocument,
                Location::Recorded("docs/maestro/plans/2026-03-14-auth-rewrite-design.md".into()),
                Location::StateDir("plans/archive/2026-03-14-auth-rewrite-design.md".into()),
            ),
            (
                ArchivedFile::ImplementationPlan,
                Location::Recorded(
                    "docs/maestro/plans/2026-03-14-auth-rewrite-impl-plan.md".into()
                ),
                Location::StateDir("plans/archive/2026-03-14-auth-rewrite-impl-plan.md".into()),
            ),
            (
                ArchivedFile::Session,
                Location::StateDir("state/active-session.md".into()),
                Location::StateDir("state/archive/2026-03-14-auth-rewrite.md".into()),
            ),
        ]
    );

    s.state.design_document = None;
    let plan = archive_plan(&s, Some(&user("x"))).expect("plan");
    assert!(
        plan.moves
            .iter()
            .all(|m| m.file != ArchivedFile::DesignDocument),
        "null documents are not moved"
    );

    s.state.design_document = Some("elsewhere/2026-03-14-auth-rewrite-impl-plan.md".into());
    assert!(matches!(
        archive_plan(&s, Some(&user("x"))),
        Err(OrchestrationError::ArchiveBlocked { blockers, .. }) if matches!(blockers[..], [ArchiveBlocker::DocumentNameClash { .. }])
    ));
    s.state.design_document = Some("plans/..".into());
    assert!(matches!(
        archive_blockers(&s, Some(&user("x")))[..],
        [ArchiveBlocker::UnusableDocumentPath {
            file: ArchivedFile::DesignDocument,
            ..
        }]
    ));
}

#[test]
fn prepare_archive_refuses_without_changing_anything() {
    let mut s = session();
    let before = s.clone();
    let err = s.prepare_archive(None, at(10, 0)).expect_err("unfinished");
    assert!(
        err.to_string().contains("needs the user's decision"),
        "{err}"
    );
    assert_eq!(s, before);
    s.prepare_archive(Some(&user("abandoned")), at(10, 0))
        .expect("with a decision");
    assert_eq!(
        s.log.last(),
        Some(&LogEntry::ArchivedUnfinished {
            reason: "abandoned".into()
        }),
        "the user's decision is logged"
    );
    assert_eq!(
        (s.state.updated, s.state.status),
        (at(10, 0), SessionStatus::InProgress),
        "status stays honest"
    );
}

#[test]
fn verification_reports_what_was_left_behind() {
    let s = session();
    let plan = archive_plan(&s, Some(&user("x"))).expect("plan");
    let design = plan.moves[0].from.clone();
    let archived = plan.moves[2].to.clone();
    let complete = verify_archive(&plan, std::slice::from_ref(&archived));
    assert!(complete.is_complete(), "{complete:?}");
    let copied = verify_archive(&plan, &[design.clone(), archived]);
    assert_eq!(copied.left_behind, [design]);
    let lost = verify_archive(
        &plan,
        &[Location::StateDir("state/active-session.md".into())],
    );
    assert_eq!(lost.left_behind.len(), 1);
    assert_eq!(
        lost.missing,
        [Location::StateDir(
            "state/archive/2026-03-14-auth-rewrite.md".into()
        )]
    );
}

// ---- resume -------------------------------------------------------------------------------

#[test]
fn resume_summary_reports_position_errors_and_outside_changes() {
    let mut s = session();
    s.start_phase(1, &[], at(9, 1)).expect("start 1");
    s.record_files(
        1,
        &FileChanges {
            created: vec!["src/auth.rs".into()],
            ..Default::default()
        },
        at(9, 2),
    )
    .expect("files");
    s.complete_phase(1, at(9, 3)).expect("complete 1");
    s.start_phase(3, &[], at(9, 4)).expect("start 3");
    s.fail_phase(3, boom(), at(9, 5)).expect("fail 3");
    s.start_phase(2, &[], at(9, 6)).expect("start 2");
    let changed: Vec<String> = [
        "./src/auth.rs",
        "src/other.rs",
        "src/other.rs",
        "docs/maestro/plans/2026-03-14-auth-rewrite-impl-plan.md",
    ]
    .map(String::from)
    .to_vec();
    let summary = resume_summary(&s, &changed);
    assert_eq!(summary.last_completed.as_ref().map(|p| p.id), Some(1));
    assert_eq!(
        summary.current.as_ref().map(|p| (p.id, p.status)),
        Some((2, PhaseStatus::InProgress))
    );
    assert_eq!(
        summary.interrupted.iter().map(|p| p.id).collect::<Vec<_>>(),
        [2]
    );
    assert_eq!(summary.failed.len(), 1);
    assert_eq!(
        (summary.failed[0].phase.id, summary.failed[0].retries_left),
        (3, 2)
    );
    assert_eq!(summary.failed[0].unresolved.len(), 1);
    assert_eq!(
        summary
            .unresolved_errors
            .iter()
            .map(|e| (e.phase, e.index))
            .collect::<Vec<_>>(),
        [(3, 0)]
    );
    assert_eq!(summary.outside_manifest, ["src/other.rs"]);
    assert!(summary.implementation_plan_changed);
}

// ---- hook state ---------------------------------------------------------------------------

#[test]
fn hook_dirs_older_than_two_hours_are_pruned() {
    assert_eq!(HOOK_STATE_MAX_AGE, TimeDelta::hours(2));
    let dir = |name: &str, minutes: i64| HookStateDir {
        name: name.into(),
        age: TimeDelta::minutes(minutes),
    };
    let dirs = [
        dir("fresh", 119),
        dir("exactly-two-hours", 120),
        dir("stale", 121),
        dir("current", 500),
        dir("..", 500),
        dir("future", -30),
    ];
    assert_eq!(hook_dirs_to_prune(&dirs, Some("current")), ["stale"]);
    assert_eq!(hook_dirs_to_prune(&dirs, None), ["stale", "current"]);
    assert_eq!(hook_dir_to_remove_at_end("abc-123"), Some("abc-123"));
    assert_eq!(hook_dir_to_remove_at_end("../etc"), None);
}

// ---- store contract and service -----------------------------------------------------------

fn fresh() -> Fresh<dyn OrchestrationStore> {
    Fresh {
        store: Arc::new(MemoryOrchestrationStore::new()),
        guard: Box::new(()),
    }
}

cairn_domain::orchestration_store_contract!(
    memory_store_contract,
    fresh,
    cairn_domain::orchestration::contract::identity_log
);

/// An adapter that reads, decides and writes in three steps instead of one critical section:
/// the lost update the contract's concurrency check exists to catch.
#[derive(Debug, Default)]
struct RacyStore(MemoryOrchestrationStore);

#[async_trait::async_trait]
impl OrchestrationStore for RacyStore {
    async fn load(&self) -> Result<Option<Session>, StoreError> {
        self.0.load().await
    }
    async fn create(&self, session: Session) -> Result<Session, StoreError> {
        self.0.create(session).await
    }
    async fn transact(
        &self,
        mutation: cairn_domain::orchestration::store::SessionMutation<'_>,
    ) -> Result<Session, Error> {
        let mut next = self
            .0
            .load()
            .await?
            .ok_or_else(|| StoreError::not_found(cairn_domain::Entity::Session, "active"))?;
        mutation(&mut next)?;
        // Another writer gets in here.
        std::thread::sleep(std::time::Duration::from_millis(1));
        let written = next.clone();
        self.0
            .transact(Box::new(move |s| {
                *s = written;
                Ok(())
            }))
            .await?;
        Ok(next)
    }
    async fn archive(
        &self,
        prepare: cairn_domain::orchestration::store::ArchivePreparation<'_>,
    ) -> Result<cairn_domain::orchestration::archive::ArchiveOutcome, Error> {
        self.0.archive(prepare).await
    }
    async fn list_archived(&self) -> Result<Vec<SessionId>, StoreError> {
        self.0.list_archived().await
    }
    async fn load_archived(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        self.0.load_archived(id).await
    }
}

fn racy() -> Fresh<dyn OrchestrationStore> {
    Fresh {
        store: Arc::new(RacyStore::default()),
        guard: Box::new(()),
    }
}

#[test]
fn the_concurrency_check_catches_a_store_that_loses_updates() {
    let caught = std::panic::catch_unwind(|| {
        cairn_domain::ports::run_check(racy, |store| {
            cairn_domain::orchestration::contract::concurrent_updates_lose_nothing(
                store,
                cairn_domain::orchestration::contract::identity_log,
            )
        });
    });
    let Err(payload) = caught else {
        panic!("a read-then-write store must fail the no-lost-update check")
    };
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("none may be lost"),
        "it must fail on the lost update itself, not on something else: {message}"
    );
}

#[test]
fn the_phase_concurrency_check_catches_a_store_that_loses_updates() {
    let caught = std::panic::catch_unwind(|| {
        cairn_domain::ports::run_check(racy, |store| {
            cairn_domain::orchestration::contract::concurrent_phase_completions_lose_nothing(
                store,
                cairn_domain::orchestration::contract::identity_log,
            )
        });
    });
    let Err(payload) = caught else {
        panic!("a read-then-write store must fail the parallel-batch check")
    };
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("none may be lost") || message.contains("must succeed"),
        "it must fail on a lost or clobbered phase update: {message}"
    );
}

fn service() -> (
    OrchestrationService,
    Arc<MemoryOrchestrationStore>,
    Arc<FixedClock>,
) {
    let store = Arc::new(MemoryOrchestrationStore::new());
    let clock = Arc::new(FixedClock::new(at(9, 0)));
    (
        OrchestrationService::new(store.clone(), clock.clone()),
        store,
        clock,
    )
}

fn orchestration_error(result: Result<impl std::fmt::Debug, Error>) -> OrchestrationError {
    match result {
        Err(Error::Domain(DomainError::Orchestration(e))) => e,
        other => panic!("expected an orchestration refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn service_runs_a_session_to_the_archive() {
    let (service, store, clock) = service();
    let created = service.create(spec()).await.expect("create");
    let id = created.id().clone();
    let second = service
        .create(NewSession {
            id: None,
            topic: "Other".into(),
            ..spec()
        })
        .await;
    assert_eq!(
        orchestration_error(second),
        OrchestrationError::ActiveSessionExists { active: id.clone() }
    );

    let docs = [
        &created.state.design_document,
        &created.state.implementation_plan,
    ];
    for doc in docs.into_iter().flatten() {
        store.put_document(Location::Recorded(doc.clone()));
    }

    clock.advance(TimeDelta::minutes(1));
    service
        .start_phase(1, vec!["coder".into(), "tester".into()])
        .await
        .expect("start");
    service
        .record_tokens(
            "coder".into(),
            TokenCounts {
                input: 100,
                output: 50,
                cached: 10,
            },
        )
        .await
        .expect("tokens");
    service
        .record_files(
            1,
            FileChanges {
                created: vec!["src/lib.rs".into()],
                ..Default::default()
            },
        )
        .await
        .expect("files");
    service
        .record_downstream(
            1,
            DownstreamContext {
                patterns_established: vec!["ports".into()],
                ..Default::default()
            },
        )
        .await
        .expect("context");
    service.fail_phase(1, boom()).await.expect("fail");
    service
        .resolve_error(1, 0, "fixed the test".into())
        .await
        .expect("resolve");
    service.retry_phase(1).await.expect("retry");
    service.complete_phase(1).await.expect("complete");
    let logged = service
        .append_phase_log(
            1,
            PhaseReport {
                validation: Some("Pass".into()),
                ..Default::default()
            },
        )
        .await
        .expect("log");
    assert!(
        matches!(
            logged.log.last(),
            Some(LogEntry::Phase { phase, report })
                if phase.id == 1 && phase.status == PhaseStatus::Completed
                    && report.validation.as_deref() == Some("Pass")
        ),
        "{:?}",
        logged.log
    );
    assert_eq!(logged.state.phases[0].agents, ["coder", "tester"]);
    assert!(matches!(
        orchestration_error(service.append_phase_log(7, PhaseReport::default()).await),
        OrchestrationError::PhaseNotFound { phase: 7, .. }
    ));

    assert!(matches!(
        orchestration_error(service.archive(None).await),
        OrchestrationError::ArchiveBlocked { .. }
    ));
    service
        .skip_phase(3, user("docs come later"))
        .await
        .expect("skip 3");
    service.start_phase(2, vec![]).await.expect("start 2");
    let summary = service
        .resume_summary(&[])
        .await
        .expect("summary")
        .expect("active");
    assert_eq!(summary.current.map(|p| p.id), Some(2));
    service.complete_phase(2).await.expect("complete 2");

    clock.advance(TimeDelta::minutes(5));
    let outcome = service.archive(None).await.expect("archive");
    assert!(
        outcome.verification.is_complete(),
        "{:?}",
        outcome.verification
    );
    assert_eq!(
        outcome.moved.len(),
        3,
        "both documents and the session moved"
    );
    assert!(outcome.absent.is_empty());
    assert_eq!(outcome.session.state.status, SessionStatus::Completed);
    assert_eq!(outcome.session.state.updated, at(9, 6));
    assert!(store.existing().contains(&Location::StateDir(
        "plans/archive/2026-03-14-auth-rewrite-design.md".into()
    )));
    assert!(service.active().await.expect("load").is_none());
    assert!(
        service
            .resume_summary(&[])
            .await
            .expect("summary")
            .is_none()
    );
    assert_eq!(
        service.archived().await.expect("list"),
        std::slice::from_ref(&id)
    );

    let again = service.create(spec()).await;
    assert_eq!(
        orchestration_error(again),
        OrchestrationError::SessionIdTaken { id }
    );
    service
        .create(NewSession {
            id: None,
            topic: "Auth Rewrite 2".into(),
            ..spec()
        })
        .await
        .expect("a new topic is fine");
}

#[tokio::test]
async fn service_changes_without_an_active_session_are_not_found() {
    let (service, _, _) = service();
    let result = service.start_phase(1, vec![]).await;
    assert!(
        matches!(result, Err(Error::Store(StoreError::NotFound { .. }))),
        "{result:?}"
    );
}

#[tokio::test]
async fn archive_reports_absent_documents() {
    let (service, _, _) = service();
    service.create(spec()).await.expect("create");
    let outcome = service
        .archive(Some(user("abandon")))
        .await
        .expect("archive");
    assert_eq!(outcome.absent.len(), 2, "neither document existed");
    assert!(outcome.verification.is_complete());
}

#[tokio::test]
async fn errors_can_be_recorded_on_a_running_phase_without_moving_it() {
    let (service, _store, _clock) = service();
    service.create(spec()).await.expect("create");
    let error = || NewError {
        agent: "tester".into(),
        kind: ErrorKind::Validation,
        message: "lint warnings".into(),
    };
    let never_ran = service.record_error(1, error()).await;
    assert!(
        matches!(
            orchestration_error(never_ran),
            OrchestrationError::PhaseNeverRan { phase: 1, .. }
        ),
        "a pending phase has no errors to record"
    );
    service.start_phase(1, vec![]).await.expect("start");
    let (session, index) = service.record_error(1, error()).await.expect("record");
    let phase = session.phase(1).expect("phase 1");
    assert_eq!((index, phase.status), (0, PhaseStatus::InProgress));
    assert_eq!(phase.errors[0].resolution, "pending");
    assert!(!phase.errors[0].resolved);
    let blank = service
        .record_error(
            1,
            NewError {
                message: "  ".into(),
                ..error()
            },
        )
        .await;
    assert_eq!(
        orchestration_error(blank),
        OrchestrationError::Blank {
            field: "error message"
        }
    );
}

#[tokio::test]
async fn logged_completion_and_failure_append_the_phase_section_in_the_same_change() {
    let (service, store, _clock) = service();
    service.create(spec()).await.expect("create");
    service.start_phase(1, vec![]).await.expect("start");
    let report = PhaseReport {
        validation: Some("cargo test: fail".into()),
        ..PhaseReport::default()
    };
    let error = NewError {
        agent: "coder".into(),
        kind: ErrorKind::Runtime,
        message: "tests fail".into(),
    };
    let failed = service
        .fail_phase_logged(1, error, report.clone())
        .await
        .expect("fail");
    assert!(matches!(
        failed.log.last(),
        Some(LogEntry::Phase { phase, report: r }) if phase.status == PhaseStatus::Failed && *r == report
    ));
    service.retry_phase(1).await.expect("retry");
    let done = service
        .complete_phase_logged(1, PhaseReport::default())
        .await
        .expect("complete");
    assert!(matches!(
        done.log.last(),
        Some(LogEntry::Phase { phase, .. }) if phase.status == PhaseStatus::Completed
    ));
    let before = store.load().await.expect("load").expect("active");
    let refused = service
        .complete_phase_logged(1, PhaseReport::default())
        .await;
    assert!(matches!(
        orchestration_error(refused),
        OrchestrationError::IllegalTransition { .. }
    ));
    assert_eq!(
        store.load().await.expect("load").expect("active"),
        before,
        "a refused completion appends no section"
    );
}

// ---- seed 004's tools: caller ids, update, transition ----------------------------------------

fn seed_spec() -> NewSession {
    let phase = |id: PhaseId, name: &str, blocked_by: &[PhaseId]| NewPhase {
        id: Some(id),
        files: vec![format!("./src/{name}.rs")],
        ..phase(name, blocked_by)
    };
    NewSession {
        id: Some(SessionId::parse("2026-03-14-seed").expect("valid id")),
        // Three phases: 10, then 20 and 30 in parallel (both wait on 10).
        phases: vec![
            phase(10, "schema", &[]),
            phase(20, "api", &[10]),
            phase(30, "docs", &[10]),
        ],
        ..spec()
    }
}

#[test]
fn a_caller_given_session_id_and_phase_ids_are_kept() {
    let s = Session::new(seed_spec(), at(9, 0)).expect("valid");
    assert_eq!(s.id().as_str(), "2026-03-14-seed");
    let ids: Vec<PhaseId> = s.state.phases.iter().map(|p| p.id).collect();
    assert_eq!(ids, [10, 20, 30]);
    assert_eq!(s.state.current_phase, 10);
    assert_eq!(s.state.phases[2].blocked_by, [10]);
    assert_eq!(
        s.state.phases[1].extra[PLANNED_FILES],
        json!(["src/api.rs"])
    );
}

#[test]
fn caller_phase_ids_must_be_all_or_none_distinct_positive_and_blockers_earlier() {
    // (the ids given, what every phase after the first is blocked by, the refusal)
    type Case = (Vec<Option<PhaseId>>, Vec<PhaseId>, &'static str);
    let cases: Vec<Case> = vec![
        (vec![Some(1), None], vec![], "every phase an id"),
        (vec![Some(2), Some(2)], vec![], "two phases have the id 2"),
        (vec![Some(0), Some(1)], vec![], "start at 1"),
        (
            vec![Some(5), Some(3)],
            vec![3],
            "earlier phases (5), not by 3",
        ),
    ];
    for (ids, blocked_by, wanted) in cases {
        let phases = ids
            .iter()
            .enumerate()
            .map(|(i, id)| NewPhase {
                id: *id,
                blocked_by: if i == 0 { vec![] } else { blocked_by.clone() },
                ..phase("p", &[])
            })
            .collect();
        let err = Session::new(NewSession { phases, ..spec() }, at(9, 0)).expect_err("refused");
        assert!(err.to_string().contains(wanted), "{err} lacks {wanted}");
    }
}

#[test]
fn transition_completes_one_phase_with_its_report_and_starts_a_parallel_batch() {
    let mut s = Session::new(seed_spec(), at(9, 0)).expect("valid");
    let started = s
        .transition(
            PhaseTransition {
                next: vec![10],
                ..Default::default()
            },
            at(9, 1),
        )
        .expect("start 10");
    assert_eq!(started, [10]);
    let started = s
        .transition(
            PhaseTransition {
                completed: Some(10),
                files: FileChanges {
                    created: vec!["src/schema.rs".into()],
                    ..Default::default()
                },
                downstream: DownstreamContext {
                    warnings: vec!["migrations are manual".into()],
                    ..Default::default()
                },
                tokens: Some(TokenCounts {
                    input: 100,
                    output: 40,
                    cached: 0,
                }),
                next: vec![20, 30],
                batch: Some("b1".into()),
            },
            at(9, 2),
        )
        .expect("transition");
    assert_eq!(started, [20, 30]);
    let ten = s.phase(10).expect("phase 10");
    assert_eq!(ten.status, PhaseStatus::Completed);
    assert_eq!(ten.files_created, ["src/schema.rs"]);
    assert_eq!(ten.downstream_context.warnings, ["migrations are manual"]);
    assert_eq!(s.state.token_usage.by_agent["coder"].input, 100);
    assert_eq!(s.state.current_batch.as_deref(), Some("b1"));
    assert_eq!(s.state.current_phase, 20);
    assert!(
        s.log
            .iter()
            .any(|e| matches!(e, LogEntry::Phase { phase, .. } if phase.id == 10))
    );
    // A phase already in progress is left as it is; 30 finishing completes the session's batch.
    let again = s
        .transition(
            PhaseTransition {
                completed: Some(30),
                next: vec![20],
                ..Default::default()
            },
            at(9, 3),
        )
        .expect("30 done, 20 still running");
    assert!(again.is_empty());
}

#[test]
fn a_refused_transition_changes_nothing() {
    let mut s = Session::new(seed_spec(), at(9, 0)).expect("valid");
    s.start_phase(10, &[], at(9, 1)).expect("start");
    let before = s.clone();
    let cases = [
        // 10 completes, but 40 does not exist: 10 must stay in progress.
        PhaseTransition {
            completed: Some(10),
            files: FileChanges {
                created: vec!["a.rs".into()],
                ..Default::default()
            },
            next: vec![20, 40],
            ..Default::default()
        },
        // 20 waits on 10, which is not complete.
        PhaseTransition {
            next: vec![20],
            ..Default::default()
        },
        // 20 never ran.
        PhaseTransition {
            completed: Some(20),
            ..Default::default()
        },
        PhaseTransition::default(),
        PhaseTransition {
            files: FileChanges {
                created: vec!["a.rs".into()],
                ..Default::default()
            },
            next: vec![10],
            ..Default::default()
        },
    ];
    for step in cases {
        let err = s.transition(step.clone(), at(9, 2));
        assert!(err.is_err(), "{step:?} was accepted");
        assert_eq!(s, before, "{step:?} changed the session");
    }
}

#[test]
fn update_sets_the_fields_named_and_refuses_none() {
    let mut s = session();
    let updated = s
        .update(
            SessionUpdate {
                execution_mode: Some("parallel".into()),
                current_batch: Some("b2".into()),
                ..Default::default()
            },
            at(9, 5),
        )
        .expect("update");
    assert_eq!(updated, ["execution_mode", "current_batch"]);
    assert_eq!(s.state.execution_mode.as_deref(), Some("parallel"));
    assert_eq!(s.state.updated, at(9, 5));
    let err = s
        .update(SessionUpdate::default(), at(9, 6))
        .expect_err("none");
    assert!(matches!(err, OrchestrationError::NothingToDo { .. }));
}

#[tokio::test]
async fn service_transition_update_and_archive_refuse_another_sessions_id() {
    let (service, _store, _clock) = service();
    service.create(seed_spec()).await.expect("create");
    let other = SessionId::parse("2026-01-01-other").expect("valid");
    let mismatch = |r| {
        assert!(matches!(
            orchestration_error(r),
            OrchestrationError::SessionMismatch { .. }
        ));
    };
    mismatch(
        service
            .update_session(
                other.clone(),
                SessionUpdate {
                    current_batch: Some("x".into()),
                    ..Default::default()
                },
            )
            .await
            .map(|_| ()),
    );
    mismatch(
        service
            .transition(
                Some(other.clone()),
                PhaseTransition {
                    next: vec![10],
                    ..Default::default()
                },
            )
            .await
            .map(|_| ()),
    );
    mismatch(service.archive_session(other, None).await.map(|_| ()));
    let (session, started) = service
        .transition(
            None,
            PhaseTransition {
                next: vec![10],
                ..Default::default()
            },
        )
        .await
        .expect("transition");
    assert_eq!(started, [10]);
    assert_eq!(
        session.phase(10).expect("10").status,
        PhaseStatus::InProgress
    );
}
