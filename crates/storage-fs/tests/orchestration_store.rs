//! The filesystem orchestration store: the shared contract, then what only a disk can get wrong
//! (YAML written by another tool, separate processes, a kill at every archive step).

use std::path::Path;
use std::sync::Arc;

use cairn_domain::orchestration::contract;
use cairn_domain::orchestration::{
    NewPhase, NewSession, OrchestrationStore, Session, SessionStatus, UserDecision, WorkflowMode,
};
use cairn_domain::ports::Fresh;
use cairn_domain::{DomainError, StoreError};
use cairn_storage_fs::FsOrchestrationStore;
use cairn_storage_fs::orchestration_store::{canonical_log, parse_session, render_session};
use chrono::{TimeZone, Utc};

mod support;

fn store_at(root: &Path) -> FsOrchestrationStore {
    FsOrchestrationStore::new(root, &root.join("docs/maestro"))
}

fn fresh() -> Fresh<dyn OrchestrationStore> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_at(dir.path());
    Fresh {
        store: Arc::new(store),
        guard: Box::new(dir),
    }
}

cairn_domain::orchestration_store_contract!(fs_contract, fresh, canonical_log);

const PROCESSES: usize = 3;

fn at(hour: u32) -> cairn_domain::time::Timestamp {
    Utc.with_ymd_and_hms(2026, 3, 14, hour, 0, 0)
        .single()
        .expect("time")
}

/// A Standard session with both documents, so archiving has all three files to move.
fn documented() -> Session {
    let spec = NewSession {
        id: None,
        topic: "Auth rewrite".into(),
        task: "Rewrite auth".into(),
        workflow_mode: WorkflowMode::Standard,
        design_document: Some("docs/maestro/plans/2026-03-14-auth-design.md".into()),
        implementation_plan: Some("docs/maestro/plans/2026-03-14-auth-impl-plan.md".into()),
        execution_mode: None,
        execution_backend: None,
        task_complexity: None,
        phases: vec![NewPhase {
            id: None,
            files: Vec::new(),
            name: "Only".into(),
            agents: vec!["coder".into()],
            parallel: false,
            blocked_by: vec![],
        }],
    };
    Session::new(spec, at(9)).expect("valid spec")
}

const ID: &str = "2026-03-14-auth-rewrite";

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join("docs/maestro").join(rel)).expect("read")
}

/// A documented session created and finished, its two documents on disk.
async fn finished(root: &Path) -> FsOrchestrationStore {
    let store = store_at(root);
    store.create(documented()).await.expect("create");
    for name in ["2026-03-14-auth-design.md", "2026-03-14-auth-impl-plan.md"] {
        std::fs::write(root.join("docs/maestro/plans").join(name), name).expect("document");
    }
    store
        .transact(Box::new(|s| {
            s.start_phase(1, &[], at(10))?;
            s.complete_phase(1, at(11))?;
            Ok(())
        }))
        .await
        .expect("finish");
    store
}

async fn archive(store: &FsOrchestrationStore) -> cairn_domain::orchestration::ArchiveOutcome {
    store
        .archive(Box::new(|s| {
            s.prepare_archive(None, at(12)).map_err(DomainError::from)
        }))
        .await
        .expect("archive")
}

/// The body of every child process; a no-op in an ordinary run (see `support/mod.rs`).
#[test]
fn child_process_entry() {
    let Some(call) = support::child_call() else {
        return;
    };
    let store = store_at(&call.dir);
    match call.role.as_str() {
        "orch-tokens" => {
            let writer: usize = call.arg.parse().expect("writer number");
            support::block_on(contract::concurrency_writer(
                &store,
                writer,
                contract::UPDATES,
            ));
        }
        "orch-phase" => {
            let phase: u32 = call.arg.parse().expect("phase number");
            support::block_on(contract::phase_writer(&store, phase));
        }
        "orch-archive" => {
            support::block_on(archive(&store));
        }
        other => panic!("unknown child role {other}"),
    }
}

/// The lock must serialise writers that share nothing but the files.
#[test]
fn separate_processes_lose_no_token_update() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_at(dir.path());
    support::block_on(contract::concurrency_setup(&store));
    let args: Vec<String> = (0..PROCESSES).map(|w| w.to_string()).collect();
    support::run_together("orch-tokens", dir.path(), &args);
    support::block_on(contract::concurrency_verify(
        &store,
        PROCESSES,
        contract::UPDATES,
    ));
}

/// Agents of a parallel batch in separate processes, each completing its own phase.
#[test]
fn separate_processes_completing_different_phases_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_at(dir.path());
    support::block_on(contract::phases_setup(&store, PROCESSES));
    let args: Vec<String> = (1..=PROCESSES).map(|p| p.to_string()).collect();
    support::run_together("orch-phase", dir.path(), &args);
    support::block_on(contract::phases_verify(&store, PROCESSES));
}

#[tokio::test]
async fn the_file_has_the_original_tools_byte_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_at(dir.path());
    store.create(documented()).await.expect("create");
    let text = read(dir.path(), "state/active-session.md");
    let front = serde_json::to_string_pretty(&documented().state).expect("json");
    assert_eq!(
        text,
        format!("---\n{front}\n---\n# Auth rewrite Orchestration Log\n")
    );
    assert!(
        front.starts_with("{\n  \"session_id\": \"2026-03-14-auth-rewrite\""),
        "{front}"
    );
    for dir_name in ["state/archive", "plans", "plans/archive"] {
        assert!(
            dir.path().join("docs/maestro").join(dir_name).is_dir(),
            "create lays out {dir_name}"
        );
    }
}

const YAML_SESSION: &str = "---
session_id: 2026-03-14-yaml-topic
task: Written by another tool
created: '2026-03-14T09:00:00Z'
updated: 2026-03-14T09:30:00Z
status: in_progress
workflow_mode: express
design_document: null
implementation_plan: null
current_phase: 1
total_phases: 1
x_other_tool: {keep: [1, 2], note: yes please}
token_usage:
  total_input: 5
  total_output: 6
  total_cached: 0
  by_agent:
    coder: {input: 5, output: 6, cached: 0, x_cost: 0.25}
phases:
  - id: 1
    name: Build
    status: pending
    x_phase_note: kept
---
# Yaml Orchestration Log

Hand-written notes.
";

#[tokio::test]
async fn yaml_front_matter_and_unknown_keys_survive_a_rewrite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_at(dir.path());
    let active = dir.path().join("docs/maestro/state/active-session.md");
    std::fs::create_dir_all(active.parent().expect("parent")).expect("mkdir");
    std::fs::write(&active, YAML_SESSION).expect("write");

    let loaded = store.load().await.expect("load").expect("a session");
    assert_eq!(loaded.id().as_str(), "2026-03-14-yaml-topic");
    assert_eq!(loaded.state.token_usage.total_output, 6);

    let written = store
        .transact(Box::new(|s| {
            s.start_phase(1, &["coder".to_owned()], at(10))?;
            Ok(())
        }))
        .await
        .expect("update");
    let text = std::fs::read_to_string(&active).expect("read");
    assert!(text.starts_with("---\n{\n"), "rewritten as JSON: {text}");
    assert!(
        text.ends_with("---\n# Yaml Orchestration Log\n\nHand-written notes.\n"),
        "the log is kept byte for byte: {text}"
    );
    let json: serde_json::Value = serde_json::from_str(
        text.trim_start_matches("---\n")
            .split("\n---\n")
            .next()
            .expect("front"),
    )
    .expect("JSON front matter");
    assert_eq!(
        json["x_other_tool"],
        serde_json::json!({"keep": [1, 2], "note": "yes please"})
    );
    assert_eq!(json["token_usage"]["by_agent"]["coder"]["x_cost"], 0.25);
    assert_eq!(json["phases"][0]["x_phase_note"], "kept");
    assert_eq!(json["phases"][0]["status"], "in_progress");
    let again = store.load().await.expect("load").expect("a session");
    assert_eq!(
        again.state, written.state,
        "JSON reads back what was written"
    );
}

#[test]
fn malformed_front_matter_is_reported_with_what_is_wrong() {
    for (text, expected) in [
        ("no front matter", "does not start"),
        ("---\n{\"a\": 1}\n", "no closing"),
        ("---\n{\"a\": \n---\n", "JSON front matter"),
        ("---\nkey: [unclosed\n---\n", "YAML front matter"),
        ("---\n{\"session_id\": \"x\"}\n---\n", "front matter"),
    ] {
        let error = parse_session(text).expect_err(text);
        assert!(error.contains(expected), "{text:?}: {error}");
    }
}

#[tokio::test]
async fn a_corrupt_session_file_is_corrupt_and_left_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_at(dir.path());
    let active = dir.path().join("docs/maestro/state/active-session.md");
    std::fs::create_dir_all(active.parent().expect("parent")).expect("mkdir");
    std::fs::write(&active, "---\nnot: [valid\n---\n").expect("write");
    let error = store
        .transact(Box::new(|_| Ok(())))
        .await
        .expect_err("corrupt");
    assert!(
        matches!(&error, cairn_domain::Error::Store(StoreError::Corrupt { path, .. }) if path.ends_with("active-session.md")),
        "{error:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&active).expect("read"),
        "---\nnot: [valid\n---\n"
    );
}

#[tokio::test]
async fn archive_moves_the_session_and_both_documents() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = finished(dir.path()).await;
    let outcome = archive(&store).await;
    assert!(
        outcome.verification.is_complete(),
        "{:?}",
        outcome.verification
    );
    assert_eq!(outcome.moved.len(), 3);
    assert_eq!(outcome.session.state.status, SessionStatus::Completed);
    assert_eq!(
        read(dir.path(), "plans/archive/2026-03-14-auth-design.md"),
        "2026-03-14-auth-design.md"
    );
    assert!(
        !dir.path()
            .join("docs/maestro/plans/2026-03-14-auth-design.md")
            .exists()
    );
    assert!(
        !dir.path()
            .join("docs/maestro/state/active-session.md")
            .exists()
    );
    let archived = parse_session(&read(dir.path(), &format!("state/archive/{ID}.md")))
        .expect("archived session parses");
    assert_eq!(archived.state, outcome.session.state);
}

/// Kills an archive at `failpoint`, then checks that a fresh process can finish it and that
/// nothing is lost or left behind.
fn archive_killed_at(failpoint: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    support::block_on(finished(root));
    support::run_crashing_at("orch-archive", root, "", failpoint);
    let store = store_at(root);
    let session_archived = root
        .join(format!("docs/maestro/state/archive/{ID}.md"))
        .exists();
    let active = support::block_on(store.load()).expect("the active file is whole");
    assert!(
        active.is_some() != session_archived,
        "{failpoint}: the session is active or archived, never both nor neither"
    );
    if active.is_some() {
        let outcome = support::block_on(archive(&store));
        assert!(
            outcome.verification.is_complete(),
            "{failpoint}: {:?}",
            outcome.verification
        );
    }
    for name in ["2026-03-14-auth-design.md", "2026-03-14-auth-impl-plan.md"] {
        assert_eq!(read(root, &format!("plans/archive/{name}")), name);
        assert!(!root.join("docs/maestro/plans").join(name).exists());
    }
    let archived = support::block_on(
        store.load_archived(&cairn_domain::orchestration::SessionId::parse(ID).expect("id")),
    )
    .expect("load archived")
    .expect("archived");
    assert_eq!(archived.state.status, SessionStatus::Completed);
    assert!(support::block_on(store.load()).expect("load").is_none());
}

#[test]
fn a_kill_after_the_design_move_is_finished_by_a_rerun() {
    archive_killed_at("orch:archive-after-design-move");
}

#[test]
fn a_kill_after_the_plan_move_is_finished_by_a_rerun() {
    archive_killed_at("orch:archive-after-plan-move");
}

#[test]
fn a_kill_after_the_session_rewrite_is_finished_by_a_rerun() {
    archive_killed_at("orch:archive-after-session-rewrite");
}

#[test]
fn a_kill_after_the_session_move_leaves_a_complete_archive() {
    archive_killed_at("orch:archive-after-session-move");
}

#[test]
fn a_kill_mid_write_leaves_the_archive_undone_and_rerunnable() {
    archive_killed_at("atomic:after-temp-write");
}

#[tokio::test]
async fn unfinished_work_is_archived_only_by_user_decision_and_the_decision_is_logged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_at(dir.path());
    store.create(documented()).await.expect("create");
    let decision = UserDecision::by_user("abandoned: requirements changed").expect("reason");
    let outcome = store
        .archive(Box::new(move |s| {
            s.prepare_archive(Some(&decision), at(12))
                .map_err(DomainError::from)
        }))
        .await
        .expect("archive");
    assert_eq!(outcome.absent.len(), 2, "no documents were on disk");
    let text = read(dir.path(), &format!("state/archive/{ID}.md"));
    assert!(
        text.ends_with(
            "## Archived with unfinished phases\n\nBy user decision: abandoned: requirements changed\n"
        ),
        "{text}"
    );
}

#[test]
fn render_then_parse_is_the_canonical_form() {
    let session = documented();
    let text = render_session(&session).expect("render");
    let parsed = parse_session(&text).expect("parse");
    assert_eq!(parsed.state, session.state);
    assert_eq!(parsed.log, canonical_log(session.log.clone()));
    assert_eq!(canonical_log(parsed.log.clone()), parsed.log, "idempotent");
}
