//! The active plan through the real `cairn-hook`: which edits each state allows, the change
//! manifest of EXECUTE, and the plan in the session's context.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_domain::plan::{PlanService, PlanState, PlanStore, UserApproval, writable_plan_files};
use cairn_domain::ports::{FixedClock, SeqIds};
use cairn_storage_fs::FsPlanStore;
use serde_json::json;

use super::{Repo, assert_well_behaved, runtime, stdout};

fn plan_service(root: &Path) -> PlanService {
    let at = cairn_domain::time::parse_rfc3339("2026-03-14T09:00:00Z").unwrap();
    PlanService::new(
        Arc::new(FsPlanStore::new(root)),
        Arc::new(FixedClock::new(at)),
        Arc::new(SeqIds::default()),
    )
}

/// A repository (no cairn project: plans stand alone) whose active plan is in `state`; returns
/// the plan directory.
fn plan_in(repo: &Repo, state: PlanState) -> PathBuf {
    let svc = plan_service(&repo.root);
    runtime().block_on(async {
        let plan = svc.create("Move sessions to tokens", false).await.unwrap();
        let path: &[PlanState] = match state {
            PlanState::Explore => &[],
            PlanState::Plan => &[PlanState::Plan],
            PlanState::Execute => &[PlanState::Plan, PlanState::Execute],
            PlanState::Reflect => &[PlanState::Plan, PlanState::Execute, PlanState::Reflect],
            PlanState::RePlan => &[
                PlanState::Plan,
                PlanState::Execute,
                PlanState::Reflect,
                PlanState::RePlan,
            ],
            PlanState::Close => &[
                PlanState::Plan,
                PlanState::Execute,
                PlanState::Reflect,
                PlanState::Close,
            ],
        };
        for to in path {
            let approval = (*to == PlanState::Execute)
                .then(|| UserApproval::from_user("yes, go ahead").unwrap());
            svc.transition(*to, "test", approval).await.unwrap();
        }
        repo.root.join(".claude").join(plan.id().as_str())
    })
}

fn pre_tool_use(repo: &Repo, tool: &str, input: serde_json::Value) -> String {
    let payload = json!({
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "cwd": repo.root,
        "tool_name": tool,
        "tool_input": input,
    });
    let output = repo.run(payload.to_string().as_bytes());
    assert_well_behaved(&output, &format!("PreToolUse {tool}"));
    stdout(&output)
}

fn denied(out: &str) -> bool {
    out.contains("\"permissionDecision\":\"deny\"")
}

#[test]
fn the_guard_decides_every_state_and_tool() {
    for state in PlanState::ALL {
        let repo = Repo::bare();
        let dir = plan_in(&repo, state);
        let src = repo.root.join("src/lib.rs");
        let read_only = !matches!(state, PlanState::Execute | PlanState::Close);
        let project_writes = [
            (
                "Edit",
                json!({"file_path": src, "old_string": "a", "new_string": "b"}),
            ),
            ("Write", json!({"file_path": src, "content": "x"})),
            ("MultiEdit", json!({"file_path": src, "edits": []})),
            (
                "NotebookEdit",
                json!({"notebook_path": repo.root.join("nb/a.ipynb")}),
            ),
            ("Bash", json!({"command": "touch src/new.rs"})),
            ("Bash", json!({"command": "echo hi > notes.txt"})),
        ];
        for (tool, input) in project_writes {
            let out = pre_tool_use(&repo, tool, input.clone());
            assert_eq!(denied(&out), read_only, "{state} {tool} {input}: {out}");
            if read_only {
                assert!(
                    out.contains(state.as_str()),
                    "the reason names the state: {out}"
                );
                assert!(
                    out.contains("`cairn plan "),
                    "the reason names the next command: {out}"
                );
            }
        }
        let reads = [
            (
                "Bash",
                json!({"command": "cat src/lib.rs && grep -r token src"}),
            ),
            ("Bash", json!({"command": "cargo test"})),
            ("Bash", json!({"command": "echo done > /tmp/elsewhere.txt"})),
        ];
        for (tool, input) in reads {
            assert_eq!(
                pre_tool_use(&repo, tool, input.clone()),
                "",
                "{state} {input}"
            );
        }
        // A plan file this state may write, by an edit tool and by a shell redirection.
        let file = writable_plan_files(state)[0].describe();
        let inside = dir.join(file.trim_end_matches("/*").replace('*', "x"));
        let inside = if file.ends_with("/*") {
            inside.join("notes.md")
        } else {
            inside
        };
        assert_eq!(
            pre_tool_use(&repo, "Write", json!({"file_path": inside, "content": "x"})),
            "",
            "{state}: writing {file} inside the plan directory"
        );
        let redirect = format!("echo note >> {}", inside.display());
        assert_eq!(
            pre_tool_use(&repo, "Bash", json!({"command": redirect})),
            "",
            "{state}"
        );
        // state.md and decisions.md are cairn's in every state, EXECUTE included.
        for own in ["state.md", "decisions.md"] {
            let out = pre_tool_use(&repo, "Edit", json!({"file_path": dir.join(own)}));
            assert!(denied(&out), "{state}: editing {own}: {out}");
            assert!(out.contains("`cairn plan "), "{out}");
            let out = pre_tool_use(
                &repo,
                "Bash",
                json!({"command": format!("echo x >> {}", dir.join(own).display())}),
            );
            assert!(denied(&out), "{state}: appending to {own} from Bash: {out}");
        }
        assert_eq!(repo.error_log(), None, "{state}: nothing went wrong");
    }
}

#[test]
fn without_a_plan_the_hook_says_nothing_and_writes_nothing() {
    let repo = Repo::bare();
    let out = pre_tool_use(
        &repo,
        "Write",
        json!({"file_path": repo.root.join("src/lib.rs"), "content": "x"}),
    );
    assert_eq!(out, "");
    assert!(!repo.root.join(".claude").exists(), "no file was created");
}

#[test]
fn a_dangling_pointer_is_no_plan_and_a_damaged_state_goes_to_the_error_log() {
    let repo = Repo::bare();
    let dir = plan_in(&repo, PlanState::Plan);
    let write = json!({"file_path": repo.root.join("src/lib.rs"), "content": "x"});
    std::fs::write(dir.join("state.md"), "not a plan\n").unwrap();
    assert_eq!(pre_tool_use(&repo, "Write", write.clone()), "");
    let log = repo.error_log().expect("the damage is logged");
    assert!(log.contains("state.md"), "{log}");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(pre_tool_use(&repo, "Write", write), "");
}

fn post_write(repo: &Repo, path: &str, content: &str, created: bool, call: &str) -> String {
    let patch: Vec<String> = std::iter::once("-old".to_owned())
        .chain(content.lines().map(|l| format!("+{l}")))
        .collect();
    let payload = json!({
        "hook_event_name": "PostToolUse",
        "session_id": "s1",
        "cwd": repo.root,
        "tool_name": "Write",
        "tool_use_id": call,
        "tool_input": {"file_path": repo.root.join(path), "content": content},
        "tool_response": {
            "type": if created { "create" } else { "update" },
            "filePath": repo.root.join(path),
            "structuredPatch": if created { json!([]) } else {
                json!([{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 2, "lines": patch}])
            },
        },
    });
    let output = repo.run(payload.to_string().as_bytes());
    assert_well_behaved(&output, "PostToolUse Write");
    stdout(&output)
}

#[test]
fn post_tool_use_in_execute_records_the_manifest_and_warns_over_budget() {
    let repo = Repo::bare();
    let dir = plan_in(&repo, PlanState::Execute);
    assert_eq!(
        post_write(&repo, "src/a.rs", "one\ntwo\nthree\n", true, "c1"),
        ""
    );
    // The same call delivered twice counts once.
    assert_eq!(
        post_write(&repo, "src/a.rs", "one\ntwo\nthree\n", true, "c1"),
        ""
    );
    assert_eq!(
        post_write(&repo, "src/lib.rs", "new1\nnew2\n", false, "c2"),
        ""
    );
    let state = std::fs::read_to_string(dir.join("state.md")).unwrap();
    assert!(state.contains("- `src/a.rs` — CREATED (+3/-0)"), "{state}");
    assert!(
        state.contains("- `src/lib.rs` — MODIFIED (+2/-1)"),
        "{state}"
    );
    assert_eq!(post_write(&repo, "src/b.rs", "x\n", true, "c3"), "");
    assert_eq!(post_write(&repo, "src/c.rs", "x\n", true, "c4"), "");
    let out = post_write(&repo, "src/d.rs", "x\n", true, "c5");
    assert!(out.contains("systemMessage"), "{out}");
    assert!(out.contains("files added 4/3"), "{out}");
    assert!(out.contains("cairn plan go REFLECT"), "{out}");
    // A plan file is not a project change.
    assert_eq!(post_write(&repo, ".claude/notes.md", "x\n", true, "c6"), "");
    assert_eq!(repo.error_log(), None);
}

#[test]
fn post_tool_use_outside_execute_changes_nothing() {
    let repo = Repo::bare();
    let dir = plan_in(&repo, PlanState::Reflect);
    let before = std::fs::read_to_string(dir.join("state.md")).unwrap();
    assert_eq!(post_write(&repo, "src/a.rs", "x\n", true, "c1"), "");
    assert_eq!(
        std::fs::read_to_string(dir.join("state.md")).unwrap(),
        before
    );
}

#[test]
fn session_start_gives_the_plan_and_pre_compact_checkpoints_it() {
    let repo = Repo::with_project();
    let dir = plan_in(&repo, PlanState::Plan);
    let start = json!({"hook_event_name": "SessionStart", "session_id": "s9", "source": "startup", "cwd": repo.root});
    let output = repo.run(start.to_string().as_bytes());
    assert_well_behaved(&output, "SessionStart");
    let out = stdout(&output);
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    let context = value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains("cairn project `demo`"),
        "the project comes first: {context}"
    );
    assert!(context.contains("Active plan (cairn plan):"), "{context}");
    assert!(context.contains("State: PLAN (iteration 0)"), "{context}");
    assert!(context.contains("Next: cairn plan approve"), "{context}");

    let compact = json!({"hook_event_name": "PreCompact", "session_id": "s9", "trigger": "auto", "cwd": repo.root});
    let output = repo.run(compact.to_string().as_bytes());
    assert_well_behaved(&output, "PreCompact");
    let out = stdout(&output);
    assert!(out.contains("checkpoint 001-precompact written"), "{out}");
    let copy = dir.join("checkpoints/001-precompact");
    assert_eq!(
        std::fs::read_to_string(copy.join("state.md")).unwrap(),
        std::fs::read_to_string(dir.join("state.md")).unwrap()
    );
    assert!(copy.join("plan.md").is_file());
    let store = FsPlanStore::new(&repo.root);
    let id = runtime().block_on(store.current()).unwrap().unwrap();
    assert_eq!(
        runtime().block_on(store.checkpoints(&id)).unwrap(),
        ["001-precompact"]
    );
}
