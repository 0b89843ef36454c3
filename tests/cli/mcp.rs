//! `cairn mcp` through the real binary, driven by rmcp's own client over the child process's
//! stdin/stdout: the tool list, every project tool, errors as tool errors, and the server and the
//! CLI (and eight servers) on one project at once.

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::support::{Repo, cairn_command};

type Client = RunningService<RoleClient, ()>;

pub(crate) async fn connect(repo: &Repo) -> Client {
    let command = tokio::process::Command::from(cairn_command(repo.root(), &["mcp"]));
    let transport = TokioChildProcess::new(command).expect("spawn cairn mcp");
    ().serve(transport).await.expect("initialize")
}

/// Calls `name`; returns whether it was a tool error, and the JSON of its text.
pub(crate) async fn call(client: &Client, name: &str, args: Value) -> (bool, Value) {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let text = &result.content[0].as_text().expect("text content").text;
    let value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}: {text}"));
    (result.is_error == Some(true), value)
}

pub(crate) async fn ok(client: &Client, name: &str, args: Value) -> Value {
    let (failed, value) = call(client, name, args).await;
    assert!(!failed, "{name} failed: {value}");
    value
}

pub(crate) async fn error(client: &Client, name: &str, args: Value) -> Value {
    let (failed, value) = call(client, name, args).await;
    assert!(failed, "{name} should have failed: {value}");
    value["error"].clone()
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn every_project_tool_through_rmcps_client() {
    let repo = Repo::with_project();
    runtime().block_on(async {
        let client = connect(&repo).await;
        let info = client.peer_info().expect("server info");
        assert_eq!(
            info.server_info.as_ref().map(|s| s.name.as_str()),
            Some("cairn")
        );
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for expected in [
            "status",
            "next",
            "ready",
            "show",
            "add",
            "start",
            "complete",
            "block",
            "unblock",
            "decompose",
            "depend",
            "claim",
        ] {
            assert!(
                names.contains(&expected),
                "{expected} missing from {names:?}"
            );
        }

        let a = ok(
            &client,
            "add",
            json!({"title": "Write the parser", "priority": "HIGH"}),
        )
        .await;
        assert_eq!(a["id"], "T-001");
        assert_eq!(
            a["next"],
            json!([{"tool": "start", "args": {"id": "T-001"}}])
        );
        let b = ok(
            &client,
            "add",
            json!({"title": "Write the printer", "depends": ["T-001"]}),
        )
        .await;
        assert_eq!(b["id"], "T-002");
        // The CLI sees what the server wrote: same store.
        assert_eq!(repo.status_of("T-002"), "PENDING");

        let next = ok(&client, "next", json!({})).await;
        assert_eq!(next["task"]["id"], "T-001");
        let ready = ok(&client, "ready", json!({"limit": 1})).await;
        assert_eq!(ready["total"], 1);
        assert_eq!(ready["items"][0]["id"], "T-001");

        // A refused move is a tool error with the CLI's kind and the way out as a tool call.
        let refused = error(&client, "complete", json!({"id": "T-001"})).await;
        assert_eq!(refused["kind"], "illegal_transition");
        assert_eq!(
            refused["next"],
            json!([{"tool": "start", "args": {"id": "T-001"}}])
        );
        assert_eq!(
            repo.status_of("T-001"),
            "PENDING",
            "a refusal changes nothing"
        );

        let started = ok(&client, "start", json!({"id": "T-001"})).await;
        assert_eq!(started["status"], "IN_PROGRESS");
        let done = ok(&client, "complete", json!({"id": "T-001", "actual": 30})).await;
        assert_eq!(done["status"], "COMPLETE");
        assert_eq!(repo.status_of("T-001"), "COMPLETE");

        // The CLI moves a task; the server reads it at the next call.
        repo.ok(&["task", "start", "T-002"]);
        let blocked = ok(
            &client,
            "block",
            json!({"id": "T-002", "reason": "waiting on review"}),
        )
        .await;
        assert_eq!(blocked["status"], "BLOCKED");
        assert_eq!(
            blocked["next"],
            json!([{"tool": "unblock", "args": {"id": "T-002"}}])
        );
        let status = ok(&client, "status", json!({})).await;
        assert_eq!(status["blocked"][0][0], "T-002");
        let unblocked = ok(&client, "unblock", json!({"id": "T-002"})).await;
        assert_eq!(unblocked["status"], "PENDING");

        let shown = ok(&client, "show", json!({"id": "T-002"})).await;
        assert_eq!(shown["task"]["dependencies"], json!(["T-001"]));
        let split = ok(
            &client,
            "decompose",
            json!({"id": "T-002", "into": ["Lexer", "Emitter"]}),
        )
        .await;
        let kids: Vec<&str> = split["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert_eq!(kids.len(), 2);
        let dep = ok(&client, "depend", json!({"id": kids[1], "on": kids[0]})).await;
        assert_eq!(dep["deps"], json!([kids[0]]));
        let claimed = ok(&client, "claim", json!({"agent": "alice", "lease": "10m"})).await;
        assert_eq!(claimed["claimed_by"], "alice");
        assert_eq!(claimed["id"], kids[0]);

        // Bad input: unknown tool, wrong arguments, malformed id, unknown task.
        assert_eq!(
            error(&client, "frobnicate", json!({})).await["kind"],
            "usage"
        );
        let bad = error(&client, "start", json!({"task": "T-001"})).await;
        assert_eq!(bad["kind"], "usage");
        assert!(
            bad["message"].as_str().unwrap().contains("unknown field"),
            "{bad}"
        );
        assert_eq!(
            error(&client, "show", json!({"id": "T-999"})).await["kind"],
            "unknown_task"
        );
        let malformed = error(&client, "show", json!({"id": "nonsense"})).await;
        assert_eq!(malformed["kind"], "invalid", "{malformed}");
        assert_eq!(
            error(&client, "claim", json!({"agent": "bob", "lease": "soon"})).await["kind"],
            "usage"
        );

        client.cancel().await.unwrap();
    });
}

/// Eight servers (one per agent) complete eight different tasks at once while the CLI adds
/// tasks: every completion and every addition is in tasks.json afterwards.
#[test]
fn eight_clients_complete_different_tasks_at_once_and_nothing_is_lost() {
    let repo = Repo::with_project();
    for i in 1..=8 {
        repo.add(&[&format!("Task number {i}")]);
    }
    runtime().block_on(async {
        let mut clients = Vec::new();
        for _ in 0..8 {
            clients.push(connect(&repo).await);
        }
        let root = repo.root().to_path_buf();
        let cli = tokio::task::spawn_blocking(move || {
            for i in 0..4 {
                let out = cairn_command(&root, &["task", "add", &format!("Added by the CLI {i}")])
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        });
        // Each client on its own task, so the eight calls really overlap.
        let workers: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(i, client)| {
                tokio::spawn(async move {
                    let id = format!("T-{:03}", i + 1);
                    ok(&client, "start", json!({"id": id})).await;
                    ok(&client, "complete", json!({"id": id})).await;
                    client.cancel().await.unwrap();
                })
            })
            .collect();
        for worker in workers {
            worker.await.unwrap();
        }
        cli.await.unwrap();
    });
    for i in 1..=8 {
        assert_eq!(repo.status_of(&format!("T-{i:03}")), "COMPLETE");
    }
    let tasks = repo.tasks_json();
    assert_eq!(
        tasks["tasks"].as_array().unwrap().len(),
        12,
        "the CLI's additions are all there"
    );
}

/// The ceiling for any one result, on a 10,000-task project.
const RESULT_BUDGET: usize = 8_000;

/// Every reading tool on a 10,000-task project answers in at most 8,000 cl100k tokens.
#[test]
fn no_result_exceeds_the_budget_on_ten_thousand_tasks() {
    let repo = ten_thousand_tasks();
    let bpe = tiktoken_cl100k();
    runtime().block_on(async {
        let client = connect(&repo).await;
        for (tool, args) in [
            ("status", json!({})),
            ("next", json!({})),
            ("ready", json!({"limit": 100_000})),
            ("show", json!({"id": "T-5000"})),
        ] {
            let (failed, value) = call(&client, tool, args).await;
            assert!(!failed, "{tool}: {value}");
            let tokens = bpe.encode_with_special_tokens(&value.to_string()).len();
            println!("{tool}: {tokens} tokens");
            assert!(tokens <= RESULT_BUDGET, "{tool} answered {tokens} tokens");
            if tool == "ready" {
                assert_eq!(value["total"], 5_000);
                assert!(
                    value["next_offset"].as_u64().is_some(),
                    "a capped page says where the next starts"
                );
            }
        }
        client.cancel().await.unwrap();
    });
}

/// A project of 10,000 tasks, every second one waiting on the one before.
pub(crate) fn ten_thousand_tasks() -> Repo {
    let repo = Repo::with_project();
    repo.add(&["Seed task"]);
    // Written directly: adding 10,000 tasks one call at a time would test the setup.
    let mut doc = repo.tasks_json();
    let template = doc["tasks"][0].clone();
    let tasks: Vec<Value> = (1..=10_000)
        .map(|n| {
            let mut t = template.clone();
            t["id"] = json!(format!("T-{n:03}"));
            t["title"] = json!(format!(
                "Implement part {n} of the subsystem with care and tests"
            ));
            t["description"] =
                json!("A realistic description of what this task is about, long enough to count.");
            t["completion_criteria"] = json!([
                "Unit tests cover the new behaviour",
                "Docs describe the change"
            ]);
            // Every second task waits on the one before: half are ready, a long list to page.
            if n % 2 == 0 {
                t["dependencies"] = json!([format!("T-{:03}", n - 1)]);
            }
            t
        })
        .collect();
    doc["tasks"] = json!(tasks);
    std::fs::write(repo.tasks_file(), serde_json::to_vec(&doc).unwrap()).unwrap();
    repo
}

pub(crate) fn tiktoken_cl100k() -> tiktoken_rs::CoreBPE {
    tiktoken_rs::cl100k_base().expect("cl100k ships with tiktoken-rs")
}
