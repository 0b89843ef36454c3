//! Orchestration sessions in the hook: the active agent in a per-session temp dir, token usage
//! from SubagentStop payloads, the orchestration in the SessionStart context, the guard on
//! active-session.md — all through the real binary.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cairn_domain::orchestration::{
    NewPhase, NewSession, OrchestrationService, OrchestrationStore, Session, WorkflowMode,
};
use cairn_storage_fs::{FsOrchestrationStore, SystemClock};
use serde_json::json;

use super::{Repo, assert_well_behaved, run_with, runtime, stdout};

const SESSION: &str = "5d1e7c2a-0b3f-4a6e-8c9d-1f2e3a4b5c6d";

struct Orch {
    repo: Repo,
    tmp: tempfile::TempDir,
}

impl Orch {
    /// A repository without a cairn project but with an active orchestration.
    fn new() -> Self {
        let repo = Repo::bare();
        let store = FsOrchestrationStore::new(&repo.root, &repo.root.join("docs/maestro"));
        let spec = NewSession {
            id: None,
            topic: "Auth rewrite".into(),
            task: "Rewrite auth".into(),
            workflow_mode: WorkflowMode::Express,
            design_document: None,
            implementation_plan: None,
            execution_mode: None,
            execution_backend: None,
            task_complexity: None,
            phases: vec![NewPhase {
                id: None,
                files: Vec::new(),
                name: "Schema".into(),
                agents: vec!["coder".into()],
                parallel: false,
                blocked_by: vec![],
            }],
        };
        let session = Session::new(spec, chrono::Utc::now()).unwrap();
        runtime().block_on(store.create(session)).unwrap();
        Self {
            repo,
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, payload: serde_json::Value) -> Output {
        let mut cmd = self.repo.command();
        cmd.env("TMPDIR", self.tmp.path())
            .env_remove("MAESTRO_STATE_DIR");
        let output = run_with(cmd, payload.to_string().as_bytes());
        assert_well_behaved(&output, &payload.to_string());
        output
    }

    fn hook_dir(&self, session: &str) -> PathBuf {
        self.tmp.path().join("maestro-hooks").join(session)
    }

    fn session(&self) -> Session {
        let store = Arc::new(FsOrchestrationStore::new(
            &self.repo.root,
            &self.repo.root.join("docs/maestro"),
        ));
        let service = OrchestrationService::new(store, Arc::new(SystemClock));
        runtime().block_on(service.active()).unwrap().unwrap()
    }
}

fn event(name: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut payload = json!({
        "session_id": SESSION,
        "hook_event_name": name,
        "transcript_path": "/tmp/t.jsonl",
    });
    for (k, v) in extra.as_object().unwrap() {
        payload[k] = v.clone();
    }
    payload
}

fn age(dir: &Path, by: Duration) {
    std::fs::File::open(dir)
        .unwrap()
        .set_modified(SystemTime::now() - by)
        .unwrap();
}

#[test]
fn session_start_gives_the_orchestration_and_prunes_stale_hook_dirs() {
    let orch = Orch::new();
    let stale = orch.hook_dir("old-session");
    let fresh = orch.hook_dir("other-live-session");
    for dir in [&stale, &fresh] {
        std::fs::create_dir_all(dir).unwrap();
    }
    age(&stale, Duration::from_secs(3 * 60 * 60));
    let output = orch.run(event("SessionStart", json!({"source": "startup"})));
    let printed: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let context = printed["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains("Active orchestration:") && context.contains("Phase 1 Schema: pending"),
        "{context}"
    );
    assert!(context.contains("cairn orch resume"), "{context}");
    assert!(!stale.exists(), "a directory untouched for 3 h is pruned");
    assert!(fresh.exists(), "a recent one is another live session's");
    assert!(orch.hook_dir(SESSION).is_dir(), "this session's is created");
}

#[test]
fn subagents_are_recorded_and_their_tokens_attributed_once() {
    let orch = Orch::new();
    orch.run(event(
        "SubagentStart",
        json!({"agent_id": "a-1", "agent_type": "coder"}),
    ));
    let active = orch.hook_dir(SESSION).join("active-agent");
    assert_eq!(std::fs::read_to_string(&active).unwrap(), "coder");

    // No agent_type on the stop: the active-agent file names who it was.
    let stop = event(
        "SubagentStop",
        json!({"agent_id": "a-1", "usage": {"input_tokens": 1200, "output_tokens": 300, "cache_read_input_tokens": 800}}),
    );
    assert_eq!(stdout(&orch.run(stop.clone())), "");
    assert!(!active.exists(), "the stop clears the active agent");
    orch.run(stop);
    let usage = orch.session().state.token_usage;
    assert_eq!(
        (usage.total_input, usage.total_output, usage.total_cached),
        (1200, 300, 800),
        "a duplicated stop is counted once"
    );
    assert_eq!(usage.by_agent["coder"].output, 300);

    // A stop without usage records nothing; SessionEnd removes the directory.
    orch.run(event(
        "SubagentStop",
        json!({"agent_id": "a-2", "agent_type": "tester"}),
    ));
    assert!(
        !orch
            .session()
            .state
            .token_usage
            .by_agent
            .contains_key("tester")
    );
    orch.run(event("SessionEnd", json!({"reason": "exit"})));
    assert!(!orch.hook_dir(SESSION).exists());
}

#[test]
fn a_repository_without_an_orchestration_gets_no_hook_state() {
    let repo = Repo::bare();
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = repo.command();
    cmd.env("TMPDIR", tmp.path());
    let payload = event(
        "SubagentStart",
        json!({"agent_id": "a", "agent_type": "coder"}),
    );
    let output = run_with(cmd, payload.to_string().as_bytes());
    assert_well_behaved(&output, "subagent start");
    assert!(!tmp.path().join("maestro-hooks").exists());
}

#[test]
fn writing_active_session_md_directly_is_denied() {
    let orch = Orch::new();
    let path = orch.repo.root.join("docs/maestro/state/active-session.md");
    let output = orch.run(event(
        "PreToolUse",
        json!({"tool_name": "Write", "tool_input": {"file_path": path, "content": "---\n{}\n---\n"}}),
    ));
    let printed: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(printed["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = printed["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(reason.contains("cairn orch"), "{reason}");
    let read = orch.run(event(
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "cat docs/maestro/state/active-session.md"}, "cwd": orch.repo.root}),
    ));
    assert_eq!(stdout(&read), "", "reading it is fine");
}
