//! A live execution session in the SessionStart context, through the real binary: the session
//! files are written by hand, in the seed's shapes, as another orchestrator would leave them.

use std::process::Output;

use chrono::{Duration, Utc};
use serde_json::json;

use super::{Repo, assert_well_behaved, run_with, stdout};

fn live_session(repo: &Repo, lock_age: Duration) {
    let live = repo.root.join(".claude/sessions/__live_session__");
    std::fs::create_dir_all(&live).unwrap();
    let at = (Utc::now() - lock_age).format("%Y-%m-%dT%H:%M:%SZ");
    std::fs::write(
        live.join(".lock"),
        format!("task_execution_id: run-7\ntimestamp: {at}\npid: orchestrator\n"),
    )
    .unwrap();
    std::fs::write(
        live.join("progress.md"),
        format!(
            "# Execution Progress\nStatus: Executing\nWave: 2 of 3\nMax Parallel: 2\nUpdated: {at}\n\n\
             ## Active Tasks\n- [5] Add input validation \u{2014} Implementing\n\n\
             ## Completed This Session\n- [1] Implement auth middleware \u{2014} PASS (2m 34s)\n"
        ),
    )
    .unwrap();
}

fn session_start(repo: &Repo, source: &str) -> Output {
    let payload = json!({
        "session_id": "5d1e7c2a-0b3f-4a6e-8c9d-1f2e3a4b5c6d",
        "hook_event_name": "SessionStart",
        "source": source,
        "transcript_path": "/tmp/t.jsonl",
    })
    .to_string();
    let output = run_with(repo.command(), payload.as_bytes());
    assert_well_behaved(&output, &payload);
    output
}

fn context(output: &Output) -> String {
    let text = stdout(output);
    if text.trim().is_empty() {
        return String::new();
    }
    let printed: serde_json::Value = serde_json::from_str(&text).unwrap();
    printed["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_live_session_is_named_with_its_wave_active_tasks_and_next_command() {
    let repo = Repo::bare();
    live_session(&repo, Duration::minutes(10));
    for source in ["startup", "resume", "compact"] {
        let context = context(&session_start(&repo, source));
        assert!(
            context.contains("Live execution session: run-7") && context.contains("Wave 2 of 3"),
            "{source}: {context}"
        );
        assert!(
            context.contains("- 5 Add input validation (Implementing)"),
            "{source}: {context}"
        );
        assert!(
            context.contains("cairn session task done"),
            "{source}: {context}"
        );
        assert!(!context.contains("recover"), "{source}: {context}");
    }
}

#[test]
fn a_stale_lock_at_startup_proposes_recovery_and_nothing_else_repeats_it() {
    let repo = Repo::bare();
    live_session(&repo, Duration::hours(5));
    let context_at_startup = context(&session_start(&repo, "startup"));
    assert!(
        context_at_startup.contains("Interrupted execution session: run-7")
            && context_at_startup.contains("cairn session recover"),
        "{context_at_startup}"
    );
    let on_resume = context(&session_start(&repo, "resume"));
    assert!(!on_resume.contains("execution session"), "{on_resume}");
}

#[test]
fn no_live_session_adds_nothing() {
    let repo = Repo::bare();
    std::fs::create_dir_all(repo.root.join(".claude/sessions/__live_session__")).unwrap();
    let context = context(&session_start(&repo, "startup"));
    assert!(!context.contains("execution session"), "{context}");
}
