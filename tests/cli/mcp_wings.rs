//! `cairn mcp`'s orchestration tools (seed 004's names and shapes) through the real binary and
//! rmcp's client, checked against the files on disk and against the CLI.

use serde_json::json;

use crate::mcp::{call, connect, error, ok, runtime};
use crate::support::Repo;

const SESSION: &str = "2026-03-14-auth";

fn active_session(repo: &Repo) -> String {
    std::fs::read_to_string(repo.root().join("docs/maestro/state/active-session.md"))
        .unwrap_or_default()
}

/// A whole orchestration through the seed-004 tools: create → phase 1 → a parallel batch of 2
/// and 3 → archive; the CLI reads the same session half way.
#[test]
fn a_whole_orchestration_through_the_seed_004_tools() {
    let repo = Repo::with_project();
    let plans = repo.root().join("docs/maestro/plans");
    std::fs::create_dir_all(&plans).unwrap();
    std::fs::write(plans.join("auth-design.md"), "# Design\n").unwrap();
    runtime().block_on(async {
        let client = connect(&repo).await;
        let none = ok(&client, "get_session_status", json!({})).await;
        assert_eq!(none["exists"], false);

        let created = ok(
            &client,
            "create_session",
            json!({
                "session_id": SESSION,
                "task": "Rewrite auth",
                "design_document": "docs/maestro/plans/auth-design.md",
                "task_complexity": "medium",
                "phases": [
                    {"id": 1, "name": "Schema", "agent": "coder", "files": ["src/schema.rs"]},
                    {"id": "2", "name": "API", "agent": "coder", "parallel": true, "blocked_by": [1]},
                    {"id": 3, "name": "Docs", "agent": "writer", "parallel": true, "blocked_by": ["1"]},
                ],
            }),
        )
        .await;
        assert_eq!(created["session_id"], SESSION);
        assert_eq!(
            created["next"],
            json!([{"tool": "transition_phase", "args": {"session_id": SESSION, "next_phase_id": 1}}])
        );
        let file = active_session(&repo);
        assert!(file.contains(SESSION), "{file}");
        assert!(file.contains("planned_files"), "{file}");

        let first = ok(
            &client,
            "transition_phase",
            json!({"session_id": SESSION, "next_phase_id": "1"}),
        )
        .await;
        assert_eq!(first["started_phase_ids"], json!([1]));

        let updated = ok(
            &client,
            "update_session",
            json!({"session_id": SESSION, "execution_mode": "parallel"}),
        )
        .await;
        assert_eq!(updated["updated_fields"], json!(["execution_mode"]));

        let batch = ok(
            &client,
            "transition_phase",
            json!({
                "session_id": SESSION,
                "completed_phase_id": 1,
                "next_phase_ids": [2, "3"],
                "files_created": ["src/schema.rs"],
                "downstream_context": {"key_interfaces_introduced": ["Schema::load"]},
                "token_usage": {"input": 1000, "output": 200},
                "batch_id": "batch-2",
            }),
        )
        .await;
        assert_eq!(batch["started_phase_ids"], json!([2, 3]));
        assert_eq!(
            batch["session_state_summary"],
            json!({"current_phase": 2, "completed_phases": [1], "pending_phases": []})
        );

        // The CLI reads the same session from the same file.
        let cli = repo.json(&["orch", "status"]);
        assert_eq!(cli["session_id"], SESSION);
        assert_eq!(cli["execution_mode"], "parallel");
        assert_eq!(cli["current_batch"], "batch-2");
        assert_eq!(cli["phases"][0]["status"], "completed");
        assert_eq!(cli["phases"][0]["files_created"], json!(["src/schema.rs"]));
        assert_eq!(
            cli["phases"][0]["downstream_context"]["key_interfaces_introduced"],
            json!(["Schema::load"])
        );
        assert_eq!(cli["token_usage"]["by_agent"]["coder"]["input"], 1000);
        assert_eq!(cli["phases"][1]["status"], "in_progress");
        assert_eq!(cli["phases"][2]["status"], "in_progress");

        let status = ok(&client, "get_session_status", json!({"session_id": SESSION})).await;
        assert_eq!(status["exists"], true);
        assert_eq!(status["current_batch"], "batch-2");
        assert_eq!(status["phases"][2]["agent"], "writer");

        ok(&client, "transition_phase", json!({"session_id": SESSION, "completed_phase_id": 2})).await;
        let last = ok(&client, "transition_phase", json!({"session_id": SESSION, "completed_phase_id": 3})).await;
        assert_eq!(
            last["next"],
            json!([{"tool": "archive_session", "args": {"session_id": SESSION}}])
        );

        let archived = ok(&client, "archive_session", json!({"session_id": SESSION})).await;
        assert_eq!(archived["success"], true, "{archived}");
        assert_eq!(archived["archived_files"].as_array().unwrap().len(), 2, "{archived}");
        client.cancel().await.unwrap();
    });
    assert!(active_session(&repo).is_empty(), "the active session moved");
    let archived = repo
        .root()
        .join(format!("docs/maestro/state/archive/{SESSION}.md"));
    let text = std::fs::read_to_string(&archived).unwrap();
    assert!(text.contains("\"status\": \"completed\""), "{text}");
    assert!(
        repo.root()
            .join("docs/maestro/plans/archive/auth-design.md")
            .is_file()
    );
    assert!(!plans.join("auth-design.md").exists());
}

/// Bad input is a tool error with the CLI's kind and the session file is left as it was.
#[test]
fn orchestration_tools_refuse_bad_input_and_change_nothing() {
    let repo = Repo::with_project();
    runtime().block_on(async {
        let client = connect(&repo).await;
        let create = |phases| {
            json!({"session_id": SESSION, "task": "Rewrite auth", "phases": phases})
        };
        // A blocker that is not an earlier phase; a phase id that is not a number.
        let bad = error(
            &client,
            "create_session",
            create(json!([{"id": 1, "name": "A", "agent": "coder", "blocked_by": [2]}])),
        )
        .await;
        assert_eq!(bad["kind"], "orchestration", "{bad}");
        assert!(bad["message"].as_str().unwrap().contains("earlier phases"), "{bad}");
        let bad = error(
            &client,
            "create_session",
            create(json!([{"id": "one", "name": "A", "agent": "coder"}])),
        )
        .await;
        assert_eq!(bad["kind"], "usage", "{bad}");
        let bad = error(
            &client,
            "create_session",
            json!({"session_id": "../etc", "task": "x", "phases": [{"id": 1, "name": "A", "agent": "c"}]}),
        )
        .await;
        assert_eq!(bad["kind"], "orchestration", "{bad}");
        assert!(active_session(&repo).is_empty(), "nothing was created");

        // No session yet: the CLI's not-found kind.
        let missing = error(&client, "transition_phase", json!({"next_phase_id": 1})).await;
        assert_eq!(missing["kind"], "not_found", "{missing}");

        ok(
            &client,
            "create_session",
            create(json!([
                {"id": 1, "name": "A", "agent": "coder"},
                {"id": 2, "name": "B", "agent": "coder", "blocked_by": [1]},
            ])),
        )
        .await;
        let before = active_session(&repo);
        for (tool, args, kind) in [
            ("transition_phase", json!({"next_phase_id": 1, "next_phase_ids": [2]}), "usage"),
            ("transition_phase", json!({"session_id": SESSION}), "orchestration"),
            ("transition_phase", json!({"next_phase_id": 2}), "orchestration"),
            ("transition_phase", json!({"completed_phase_id": 1}), "orchestration"),
            ("transition_phase", json!({"next_phase_id": 9}), "orchestration"),
            ("transition_phase", json!({"session_id": "2026-01-01-other", "next_phase_id": 1}), "orchestration"),
            ("update_session", json!({"session_id": SESSION}), "orchestration"),
            ("update_session", json!({"session_id": SESSION, "execution_mode": "fast"}), "usage"),
            ("archive_session", json!({"session_id": SESSION}), "orchestration"),
            ("archive_session", json!({"session_id": "2026-01-01-other"}), "orchestration"),
        ] {
            let (failed, value) = call(&client, tool, args.clone()).await;
            assert!(failed, "{tool} {args} should fail: {value}");
            assert_eq!(value["error"]["kind"], kind, "{tool} {args}: {value}");
            assert_eq!(active_session(&repo), before, "{tool} {args} changed the file");
        }
        let taken = error(
            &client,
            "create_session",
            create(json!([{"id": 1, "name": "A", "agent": "coder"}])),
        )
        .await;
        assert!(taken["message"].as_str().unwrap().contains("still active"), "{taken}");
        client.cancel().await.unwrap();
    });
}

/// The `plan` tool makes the calls `cairn plan …` makes; approving is refused (a person's act)
/// and leaves the plan in PLAN.
#[test]
fn the_plan_tool_through_rmcps_client() {
    let repo = Repo::new();
    runtime().block_on(async {
        let client = connect(&repo).await;
        let none = error(&client, "plan", json!({"action": "status"})).await;
        assert_eq!(none["kind"], "no_active_plan", "{none}");
        assert_eq!(none["next"][0]["args"]["action"], "new", "{none}");

        let new = ok(
            &client,
            "plan",
            json!({"action": "new", "goal": "Faster startup"}),
        )
        .await;
        assert_eq!(new["state"], "EXPLORE");
        assert_eq!(new["goal"], "Faster startup");
        assert!(
            new["next"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n["args"]["action"] == "go"),
            "{new}"
        );
        ok(
            &client,
            "plan",
            json!({"action": "finding", "text": "startup reads 40 files"}),
        )
        .await;
        let moved = ok(
            &client,
            "plan",
            json!({"action": "go", "state": "plan", "reason": "enough explored"}),
        )
        .await;
        assert_eq!(moved["to"], "PLAN");
        let decided = ok(
            &client,
            "plan",
            json!({"action": "decide", "text": "cache the index"}),
        )
        .await;
        assert_eq!(decided["id"], "D-002", "{decided}");

        let refused = error(&client, "plan", json!({"action": "approve"})).await;
        assert_eq!(refused["kind"], "approval_needs_a_person", "{refused}");
        assert_eq!(
            repo.json(&["plan", "status"])["state"],
            "PLAN",
            "never approved"
        );

        let budget = ok(
            &client,
            "plan",
            json!({"action": "budget", "estimate": 120}),
        )
        .await;
        assert_eq!(budget["scope_estimate"], 120, "{budget}");
        let listed = ok(&client, "plan", json!({"action": "list"})).await;
        assert_eq!(listed["total"], 1);
        let resume = ok(&client, "plan", json!({"action": "resume"})).await;
        assert!(
            resume["resume"]
                .as_str()
                .unwrap()
                .contains("Faster startup"),
            "{resume}"
        );
        let status = ok(&client, "plan", json!({"action": "status"})).await;
        assert_eq!(status["state"], "PLAN");

        // Bad input: no such action or state, a missing field, an unknown one; a refused move.
        for (args, kind) in [
            (json!({"action": "fly"}), "usage"),
            (
                json!({"action": "go", "state": "DONE", "reason": "x"}),
                "usage",
            ),
            (json!({"action": "go", "state": "EXECUTE"}), "usage"),
            (json!({"action": "status", "colour": "red"}), "usage"),
            (
                json!({"action": "go", "state": "CLOSE", "reason": "x"}),
                "illegal_transition",
            ),
        ] {
            let e = error(&client, "plan", args.clone()).await;
            assert_eq!(e["kind"], kind, "{args}: {e}");
        }
        assert_eq!(repo.json(&["plan", "status"])["state"], "PLAN");
        client.cancel().await.unwrap();
    });
}

/// The `session` tool runs an execution session in waves, making the calls `cairn session …`
/// makes: the CLI sees the same live session and the same task statuses.
#[test]
fn the_session_tool_through_rmcps_client() {
    let repo = Repo::with_project();
    for n in 1..=3 {
        repo.add(&[&format!("Task number {n}")]);
    }
    repo.ok(&["task", "depend", "T-003", "--on", "T-001"]);
    runtime().block_on(async {
        let client = connect(&repo).await;
        assert_eq!(
            ok(&client, "session", json!({"action": "status"})).await,
            json!(null)
        );
        let refused = error(&client, "session", json!({"action": "done", "id": "T-001"})).await;
        assert_eq!(refused["kind"], "execution", "{refused}");

        let started = ok(
            &client,
            "session",
            json!({"action": "start", "max_parallel": 2}),
        )
        .await;
        assert_eq!(started["wave_sizes"], json!([2, 1]), "{started}");
        assert_eq!(started["wave_1"]["items"][0]["id"], "T-001", "{started}");
        assert_eq!(
            started["next"],
            json!([{"tool": "session", "args": {"action": "task_start", "id": "T-001"}}])
        );
        let cli = repo.json(&["session", "status"]);
        assert_eq!(cli["session"], started["session"]);

        let step = ok(
            &client,
            "session",
            json!({"action": "task_start", "id": "T-001"}),
        )
        .await;
        assert_eq!(step["active"][0]["subject"], "Task number 1", "{step}");
        assert_eq!(repo.status_of("T-001"), "IN_PROGRESS");
        ok(
            &client,
            "session",
            json!({"action": "context", "id": "T-001", "text": "uses serde"}),
        )
        .await;
        let done = ok(
            &client,
            "session",
            json!({"action": "done", "id": "T-001", "duration": "2m 5s", "tokens": 1200}),
        )
        .await;
        assert_eq!(done["completed"][0]["subject"], "Task number 1", "{done}");
        assert_eq!(repo.status_of("T-001"), "COMPLETE");
        ok(
            &client,
            "session",
            json!({"action": "task_start", "id": "T-002"}),
        )
        .await;
        ok(&client, "session", json!({"action": "skip", "id": "T-002"})).await;
        assert_eq!(repo.status_of("T-002"), "PENDING");

        // Bad input: a missing task id, a bad duration, an unknown action; nothing changes.
        for (args, kind) in [
            (json!({"action": "done"}), "usage"),
            (
                json!({"action": "done", "id": "T-003", "duration": "soon"}),
                "invalid",
            ),
            (json!({"action": "jump"}), "usage"),
            (json!({"action": "start", "colour": 1}), "usage"),
        ] {
            let e = error(&client, "session", args.clone()).await;
            assert_eq!(e["kind"], kind, "{args}: {e}");
        }
        assert_eq!(repo.status_of("T-003"), "PENDING");

        let wave = ok(&client, "session", json!({"action": "wave_next"})).await;
        assert_eq!(wave["wave"]["current"], 2, "{wave}");
        let finished = ok(&client, "session", json!({"action": "finish"})).await;
        assert_eq!(finished["tally"]["pass"], 1, "{finished}");
        let listed = ok(&client, "session", json!({"action": "list"})).await;
        assert_eq!(listed["total"], 1, "{listed}");
        let recover = ok(&client, "session", json!({"action": "recover"})).await;
        assert_eq!(recover["recovered"], false);
        client.cancel().await.unwrap();
    });
    assert_eq!(repo.json(&["session", "status"]), json!(null));
}

/// On a 10,000-task project the session tool's answers stay within a result's budget.
#[test]
fn session_results_fit_the_budget_on_ten_thousand_tasks() {
    let repo = crate::mcp::ten_thousand_tasks();
    let bpe = crate::mcp::tiktoken_cl100k();
    runtime().block_on(async {
        let client = connect(&repo).await;
        for args in [
            json!({"action": "start", "max_parallel": 50}),
            json!({"action": "status"}),
            json!({"action": "task_start", "id": "T-001"}),
            json!({"action": "done", "id": "T-001"}),
        ] {
            let value = ok(&client, "session", args.clone()).await;
            let tokens = bpe.encode_with_special_tokens(&value.to_string()).len();
            println!("session {}: {tokens} tokens", args["action"]);
            assert!(tokens <= 8_000, "{args}: {tokens} tokens");
        }
        client.cancel().await.unwrap();
    });
}
