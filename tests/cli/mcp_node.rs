//! `cairn mcp` through a client nobody here wrote: the official MCP TypeScript SDK's `Client` and
//! `StdioClientTransport`, driven by `tests/mcp/client.mjs` under node. The SDK is pinned in
//! `tests/mcp/npm/` and installed under the target directory by `cargo xtask mcp-sdk` (`cargo
//! xtask ci` and `cargo xtask test` run it first).
//!
//! [`cases`] is the one table of tools: each has a valid call and what it must have done (to the
//! answer and to the files), and an invalid call with the `cairn` command that fails the same
//! way. A tool in `tools/list` without a case fails the test, so no tool ships untested.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{NOW, Repo, code};

/// One tool's test.
struct Case {
    tool: &'static str,
    /// A call that must succeed on [`project`]'s state.
    valid: Value,
    /// What the valid call must have answered and done; it gets the repository after the calls
    /// and the tool's answer. Read tools are checked before any write runs; each write tool
    /// works on tasks of its own, so its effect on the files is its alone.
    check: fn(&Repo, &Value),
    /// A call that must fail on [`project`]'s state, as a tool error …
    invalid: Value,
    /// … with the kind (and, past usage errors, the message and hint) of this `cairn` command.
    cli: &'static [&'static str],
}

/// Every tool `cairn mcp` lists. Add a case here with each new tool.
fn cases() -> Vec<Case> {
    vec![
        Case {
            tool: "status",
            valid: json!({}),
            check: |repo, answer| {
                let cli = repo.json(&["status"]);
                assert_eq!(answer["project"], "web");
                assert_eq!(answer["done"], cli["leaves_complete"]);
                assert_eq!(answer["leaves"], cli["leaves_total"]);
                // The tool leaves out the zeros the CLI lists.
                let nonzero: serde_json::Map<String, Value> = cli["counts"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .filter(|(_, n)| **n != 0)
                    .map(|(k, n)| (k.clone(), n.clone()))
                    .collect();
                assert_eq!(answer["counts"], Value::Object(nonzero));
                assert_eq!(
                    answer["blocked"],
                    json!([["T-005", "Publish the docs", "waiting on the host"]])
                );
                let working: BTreeSet<&str> = answer["in_progress"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|row| row[0].as_str().unwrap())
                    .collect();
                assert_eq!(working, BTreeSet::from(["T-003", "T-004"]));
            },
            invalid: json!({"bogus": true}),
            cli: &["status", "--bogus"],
        },
        Case {
            tool: "next",
            valid: json!({}),
            check: |repo, answer| {
                let cli = repo.json(&["task", "next"]);
                assert_eq!(answer["task"]["id"], cli["id"], "the CLI's pick: {cli}");
                assert_eq!(
                    answer["task"],
                    task_on_disk(repo, cli["id"].as_str().unwrap())
                );
                assert_eq!(
                    answer["next"],
                    json!([{"tool": "start", "args": {"id": cli["id"]}}])
                );
            },
            invalid: json!({"bogus": true}),
            cli: &["task", "next", "--bogus"],
        },
        Case {
            tool: "ready",
            valid: json!({"limit": 2}),
            check: |repo, answer| {
                let cli = repo.items(&["task", "ready"]);
                assert_eq!(answer["total"], cli.len());
                let ids = |items: &[Value]| -> Vec<Value> {
                    items.iter().map(|t| t["id"].clone()).collect()
                };
                assert_eq!(
                    ids(answer["items"].as_array().unwrap()),
                    ids(&cli[..2]),
                    "the first page, in the CLI's order"
                );
                assert_eq!(answer["next_offset"], 2);
            },
            invalid: json!({"limit": "ten"}),
            cli: &["task", "ready", "--limit", "ten"],
        },
        Case {
            tool: "show",
            valid: json!({"id": "T-005"}),
            check: |repo, answer| {
                assert_eq!(answer["task"], task_on_disk(repo, "T-005"));
                assert_eq!(
                    answer["next"],
                    json!([{"tool": "unblock", "args": {"id": "T-005"}}])
                );
            },
            invalid: json!({"id": "T-999"}),
            cli: &["task", "show", "T-999"],
        },
        Case {
            tool: "add",
            valid: json!({
                "title": "Added over MCP",
                "priority": "HIGH",
                "depends": ["T-001"],
                "criteria": ["The node client sees it"],
                "description": "From the TypeScript SDK",
                "estimate": 30,
            }),
            check: |repo, answer| {
                let id = answer["id"].as_str().expect("the new task's id");
                let task = task_on_disk(repo, id);
                assert_eq!(task["title"], "Added over MCP");
                assert_eq!(task["status"], "PENDING");
                assert_eq!(task["priority"], "HIGH");
                assert_eq!(task["dependencies"], json!(["T-001"]));
                assert_eq!(
                    task["completion_criteria"],
                    json!(["The node client sees it"])
                );
                assert_eq!(task["description"], "From the TypeScript SDK");
                assert_eq!(task["estimate_minutes"], 30);
                assert_eq!(
                    answer["next"],
                    json!([{"tool": "start", "args": {"id": id}}])
                );
                assert!(
                    logged(repo, "TASK_CREATED", id),
                    "the log records the addition"
                );
            },
            invalid: json!({"title": "x"}),
            cli: &["task", "add", "x"],
        },
        Case {
            tool: "start",
            valid: json!({"id": "T-001"}),
            check: |repo, answer| {
                assert_eq!(answer["status"], "IN_PROGRESS");
                let task = task_on_disk(repo, "T-001");
                assert_eq!(task["status"], "IN_PROGRESS");
                assert_eq!(task["started_at"], NOW);
                assert!(logged(repo, "TASK_STARTED", "T-001"));
            },
            invalid: json!({"id": "T-002"}),
            cli: &["task", "start", "T-002"],
        },
        Case {
            tool: "complete",
            valid: json!({"id": "T-003", "actual": 30, "agent": "node"}),
            check: |repo, answer| {
                assert_eq!(answer["status"], "COMPLETE");
                let task = task_on_disk(repo, "T-003");
                assert_eq!(task["status"], "COMPLETE");
                assert_eq!(task["actual_minutes"], 30);
                assert_eq!(task["completed_at"], NOW);
                assert!(logged(repo, "TASK_COMPLETE", "T-003"));
            },
            invalid: json!({"id": "T-001"}),
            cli: &["task", "complete", "T-001"],
        },
        Case {
            tool: "block",
            valid: json!({"id": "T-004", "reason": "waiting on hardware"}),
            check: |repo, answer| {
                assert_eq!(answer["status"], "BLOCKED");
                let task = task_on_disk(repo, "T-004");
                assert_eq!(task["status"], "BLOCKED");
                assert_eq!(task["blocked_reason"], "waiting on hardware");
                assert!(logged(repo, "TASK_BLOCKED", "T-004"));
            },
            invalid: json!({"id": "T-010", "reason": "too late"}),
            cli: &["task", "block", "T-010", "--reason", "too late"],
        },
        Case {
            tool: "unblock",
            valid: json!({"id": "T-005"}),
            check: |repo, answer| {
                assert_eq!(answer["status"], "PENDING");
                let task = task_on_disk(repo, "T-005");
                assert_eq!(task["status"], "PENDING");
                assert_eq!(task.get("blocked_reason"), None, "{task}");
            },
            invalid: json!({"id": "T-001"}),
            cli: &["task", "unblock", "T-001"],
        },
        Case {
            tool: "decompose",
            valid: json!({"id": "T-006", "into": ["Sketch the endpoints", "Write the schema"]}),
            check: |repo, answer| {
                let children: Vec<&str> = answer["children"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["id"].as_str().unwrap())
                    .collect();
                assert_eq!(children.len(), 2, "{answer}");
                let parent = task_on_disk(repo, "T-006");
                assert_eq!(parent["status"], "IN_PROGRESS");
                assert_eq!(parent["subtasks"], json!(children));
                for (id, title) in children
                    .iter()
                    .zip(["Sketch the endpoints", "Write the schema"])
                {
                    let child = task_on_disk(repo, id);
                    assert_eq!(child["title"], title);
                    assert_eq!(child["parent_id"], "T-006");
                }
            },
            invalid: json!({"id": "T-010", "into": ["Too late now"]}),
            cli: &["task", "decompose", "T-010", "--into", "Too late now"],
        },
        Case {
            tool: "depend",
            valid: json!({"id": "T-008", "on": "T-007"}),
            check: |repo, answer| {
                assert_eq!(answer["deps"], json!(["T-007"]));
                assert_eq!(
                    task_on_disk(repo, "T-008")["dependencies"],
                    json!(["T-007"])
                );
            },
            invalid: json!({"id": "T-002", "on": "T-002"}),
            cli: &["task", "depend", "T-002", "--on", "T-002"],
        },
        Case {
            tool: "claim",
            valid: json!({"agent": "alice", "id": "T-009", "lease": "10m"}),
            check: |repo, answer| {
                assert_eq!(answer["claimed_by"], "alice");
                let task = task_on_disk(repo, "T-009");
                assert_eq!(task["status"], "IN_PROGRESS");
                assert_eq!(task["claimed_by"], "alice");
                // CAIRN_NOW plus the ten minutes asked for.
                assert_eq!(task["lease_expires_at"], "2026-01-15T09:40:00Z");
                assert_eq!(answer["lease_expires_at"], task["lease_expires_at"]);
            },
            invalid: json!({"agent": "bob", "id": "T-002"}),
            cli: &["task", "claim", "T-002", "--agent", "bob"],
        },
        // Orchestration, seed 004's names and shapes. The writes run in this order: the setup's
        // session finishes its phase and is archived, then a new one is created and updated.
        Case {
            tool: "get_session_status",
            valid: json!({}),
            check: |repo, answer| {
                let cli = repo.json(&["orch", "status"]);
                assert_eq!(answer["exists"], true, "{answer}");
                assert_eq!(answer["session_id"], ORCH_SETUP);
                assert_eq!(answer["session_id"], cli["session_id"]);
                assert_eq!(answer["phases"][0]["status"], "in_progress", "{answer}");
            },
            invalid: json!({"sid": 1}),
            cli: &["orch", "status", "--sid", "1"],
        },
        Case {
            tool: "transition_phase",
            valid: json!({"session_id": ORCH_SETUP, "completed_phase_id": 1,
                          "files_created": ["ci.yml"]}),
            check: |repo, answer| {
                assert_eq!(answer["success"], true, "{answer}");
                let archived = archived_orch_session(repo);
                assert!(archived.contains("\"status\": \"completed\""), "{archived}");
                assert!(archived.contains("ci.yml"), "{archived}");
            },
            invalid: json!({"next_phase_id": 1, "next_phase_ids": [2]}),
            cli: &["orch", "transition", "--bogus"],
        },
        Case {
            tool: "archive_session",
            valid: json!({"session_id": ORCH_SETUP}),
            check: |repo, answer| {
                assert_eq!(answer["success"], true, "{answer}");
                assert!(archived_orch_session(repo).contains(ORCH_SETUP));
            },
            invalid: json!({}),
            cli: &["orch", "archive", "--bogus"],
        },
        Case {
            tool: "create_session",
            valid: json!({"session_id": ORCH_NEW, "task": "Rewrite auth", "phases": [
                {"id": 1, "name": "Schema", "agent": "coder"},
                {"id": "2", "name": "API", "agent": "coder", "blocked_by": [1]},
            ]}),
            check: |repo, answer| {
                assert_eq!(answer["session_id"], ORCH_NEW, "{answer}");
                let cli = repo.json(&["orch", "status"]);
                assert_eq!(cli["session_id"], ORCH_NEW);
                assert_eq!(cli["phases"].as_array().unwrap().len(), 2, "{cli}");
            },
            invalid: json!({"session_id": "s", "task": "x",
                            "phases": [{"id": "one", "name": "A", "agent": "c"}]}),
            cli: &["orch", "start", "--bogus"],
        },
        Case {
            tool: "update_session",
            valid: json!({"session_id": ORCH_NEW, "execution_mode": "parallel"}),
            check: |repo, answer| {
                assert_eq!(
                    answer["updated_fields"],
                    json!(["execution_mode"]),
                    "{answer}"
                );
                assert_eq!(repo.json(&["orch", "status"])["execution_mode"], "parallel");
            },
            invalid: json!({"session_id": ORCH_SETUP, "execution_mode": "fast"}),
            cli: &["orch", "status", "--execution-mode", "fast"],
        },
        Case {
            tool: "plan",
            valid: json!({"action": "new", "goal": "Faster startup"}),
            check: |repo, answer| {
                assert_eq!(answer["state"], "EXPLORE", "{answer}");
                let cli = repo.json(&["plan", "status"]);
                assert_eq!(cli["goal"], "Faster startup", "{cli}");
            },
            invalid: json!({"action": "fly"}),
            cli: &["plan", "fly"],
        },
        Case {
            tool: "session",
            valid: json!({"action": "start", "max_parallel": 2}),
            check: |repo, answer| {
                assert!(answer["session"].is_string(), "{answer}");
                let cli = repo.json(&["session", "status"]);
                assert_eq!(cli["session"], answer["session"]);
            },
            invalid: json!({"action": "done"}),
            cli: &["session", "task", "done"],
        },
    ]
}

/// The project every case is written against:
///
/// | task  | state                          | for                          |
/// |-------|--------------------------------|------------------------------|
/// | T-001 | ready                          | start; complete refused      |
/// | T-002 | waits on T-001                 | start/claim refused          |
/// | T-003 | in progress                    | complete                     |
/// | T-004 | in progress                    | block                        |
/// | T-005 | blocked                        | show, unblock                |
/// | T-006 | ready                          | decompose                    |
/// | T-007, T-008 | ready                   | depend                       |
/// | T-009 | ready                          | claim                        |
/// | T-010 | complete                       | block/decompose refused      |
///
/// and an orchestration session, [`ORCH_SETUP`], whose one phase is in progress.
fn project() -> Repo {
    let repo = Repo::with_project();
    repo.add(&["Write the parser", "--priority", "HIGH"]);
    repo.add(&["Write the printer", "--depends", "T-001"]);
    for title in [
        "Review the grammar",
        "Benchmark the lexer",
        "Publish the docs",
        "Design the API",
        "Set up CI",
        "Deploy to staging",
        "Triage the issues",
        "Rename the crate",
    ] {
        repo.add(&[title]);
    }
    repo.ok(&["task", "start", "T-003"]);
    repo.ok(&["task", "start", "T-004"]);
    repo.ok(&["task", "block", "T-005", "--reason", "waiting on the host"]);
    repo.start_and_complete("T-010");
    repo.ok(&[
        "orch",
        "start",
        "--id",
        ORCH_SETUP,
        "--topic",
        "Set up",
        "--task",
        "Set up the build",
        "--phase",
        "ci:coder",
    ]);
    repo.ok(&["orch", "phase", "start", "1", "--agent", "coder"]);
    repo
}

/// The orchestration session [`project`] starts (its one phase in progress) …
const ORCH_SETUP: &str = "2026-01-15-set-up";
/// … and the one `create_session` creates once it is archived.
const ORCH_NEW: &str = "2026-01-15-auth";

fn archived_orch_session(repo: &Repo) -> String {
    std::fs::read_to_string(
        repo.root()
            .join(format!("docs/maestro/state/archive/{ORCH_SETUP}.md")),
    )
    .unwrap_or_default()
}

/// The task as tasks.json holds it.
fn task_on_disk(repo: &Repo, id: &str) -> Value {
    repo.tasks_json()["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not in tasks.json"))
        .clone()
}

/// Whether the progress log has an `event` entry for `task`.
fn logged(repo: &Repo, event: &str, task: &str) -> bool {
    log_entries(repo, event).iter().any(|t| t == task)
}

/// The tasks of the progress log's `event` entries, in order.
fn log_entries(repo: &Repo, event: &str) -> Vec<String> {
    let log = std::fs::read_to_string(repo.project_dir("web").join("progress").join("log.md"))
        .expect("read progress/log.md");
    log.split("\n## ")
        .filter(|entry| {
            entry
                .lines()
                .next()
                .is_some_and(|h| h.ends_with(&format!("— {event}")))
        })
        .filter_map(|entry| entry.lines().find_map(|l| l.strip_prefix("- task: ")))
        .map(str::to_owned)
        .collect()
}

/// Every file of the project, by path, for "a refusal changes nothing".
fn project_files(repo: &Repo) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push((path.clone(), std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    let mut files = Vec::new();
    walk(&repo.project_dir("web"), &mut files);
    files.sort();
    files
}

// --- The node client ---------------------------------------------------------------------------

/// A node client's whole run must end well before this (it starts node and the server, and
/// makes a dozen calls).
const CLIENT_DEADLINE: Duration = Duration::from_secs(60);

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where `cargo xtask mcp-sdk` installed the pinned SDK: `<target>/mcp-sdk`, beside the profile
/// directory cargo built `cairn` in. A missing or outdated install fails, saying what to run.
fn sdk_dir() -> PathBuf {
    let profile = Path::new(env!("CARGO_BIN_EXE_cairn")).parent().unwrap();
    let install = profile
        .ancestors()
        .skip(1)
        .map(|dir| dir.join("mcp-sdk"))
        .find(|dir| dir.join("installed.lock").is_file())
        .unwrap_or_else(|| {
            panic!(
                "the MCP TypeScript SDK is not installed (no mcp-sdk/installed.lock beside {}): \
                 run `cargo xtask mcp-sdk` (`cargo xtask ci` does it), which needs node and npm",
                profile.display()
            )
        });
    let pinned = std::fs::read(workspace_root().join("tests/mcp/npm/package-lock.json")).unwrap();
    assert!(
        std::fs::read(install.join("installed.lock")).unwrap() == pinned,
        "{} holds another version than tests/mcp/npm pins: run `cargo xtask mcp-sdk`",
        install.display()
    );
    install
}

/// `node`, which must run here.
fn node() -> Command {
    let version = Command::new("node").arg("--version").output();
    assert!(
        version.as_ref().is_ok_and(|o| o.status.success()),
        "node does not run ({version:?}): install node (the MCP SDK tests need it; \
         `.ci/run` expects it on the machine), then `cargo xtask mcp-sdk`"
    );
    Command::new("node")
}

/// What one node client saw.
struct Seen {
    server: Value,
    instructions: Value,
    tools: Vec<Value>,
    /// Per call: `(is_error, the JSON of its text)`.
    results: Vec<(bool, Value)>,
}

/// Starts one node client on `repo`: it spawns `cairn mcp`, initializes, lists the tools and
/// makes `calls` in order. [`finish`] waits for it.
fn spawn_client(repo: &Repo, calls: &[(&str, Value)]) -> std::process::Child {
    let request = json!({
        "command": env!("CARGO_BIN_EXE_cairn"),
        "args": ["--root", repo.root(), "mcp"],
        "env": {"CAIRN_NOW": NOW, "NO_COLOR": "1"},
        "calls": calls.iter().map(|(tool, args)| json!({"tool": tool, "args": args})).collect::<Vec<_>>(),
    });
    let mut child = node()
        .arg(workspace_root().join("tests/mcp/client.mjs"))
        .arg(sdk_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn node");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    child
}

/// Waits (bounded) for a client [`spawn_client`] started and parses what it printed.
fn finish(mut child: std::process::Child) -> Seen {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > CLIENT_DEADLINE {
            let _ = child.kill();
            panic!("the node client did not finish within {CLIENT_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the node client failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("the node client printed no JSON ({e}):\n{stdout}"));
    let results = seen["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let tool = &r["tool"];
            assert_eq!(
                r.get("thrown"),
                None,
                "{tool}: the SDK rejected the answer: {r}"
            );
            let content = r["content"].as_array().unwrap();
            assert_eq!(content.len(), 1, "{tool}: one text block: {r}");
            assert_eq!(content[0]["type"], "text", "{tool}: {r}");
            let text = content[0]["text"].as_str().unwrap();
            let value = serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("{tool}: the text is not JSON ({e}): {text}"));
            (r["isError"] == true, value)
        })
        .collect();
    Seen {
        server: seen["server"].clone(),
        instructions: seen["instructions"].clone(),
        tools: seen["tools"].as_array().unwrap().clone(),
        results,
    }
}

fn run_client(repo: &Repo, calls: &[(&str, Value)]) -> Seen {
    finish(spawn_client(repo, calls))
}

/// Initialize, `tools/list`, then every tool's invalid call (nothing changes, each error as the
/// CLI's), every read, and every write — each checked against the CLI and the files.
#[test]
fn the_official_typescript_sdk_client_calls_every_tool() {
    let repo = project();
    let cases = cases();

    // Invalid calls first, on the untouched project.
    let before = project_files(&repo);
    let invalid: Vec<(&str, Value)> = cases.iter().map(|c| (c.tool, c.invalid.clone())).collect();
    let seen = run_client(&repo, &invalid);
    assert!(
        project_files(&repo) == before,
        "a refused tool call changed the project's files"
    );

    assert_eq!(
        seen.server,
        json!({"name": "cairn", "version": env!("CARGO_PKG_VERSION")}),
        "initialize names the server"
    );
    assert!(
        seen.instructions
            .as_str()
            .is_some_and(|i| i.contains("next")),
        "{}",
        seen.instructions
    );
    let listed: BTreeSet<&str> = seen
        .tools
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let covered: BTreeSet<&str> = cases.iter().map(|c| c.tool).collect();
    assert_eq!(
        listed, covered,
        "every tool in tools/list needs a case in `cases()` (and every case a tool)"
    );
    for tool in &seen.tools {
        let name = &tool["name"];
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{name}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        for hint in ["readOnlyHint", "destructiveHint", "idempotentHint"] {
            assert!(
                tool["annotations"][hint].is_boolean(),
                "{name} has no {hint}: {tool}"
            );
        }
    }

    for (case, (failed, answer)) in cases.iter().zip(&seen.results) {
        let tool = case.tool;
        assert!(
            *failed,
            "{tool} {} should be a tool error: {answer}",
            case.invalid
        );
        let error = &answer["error"];
        let mut argv = vec!["--json"];
        argv.extend_from_slice(case.cli);
        let cli = repo.run(&argv);
        assert_ne!(cli.code, code::OK, "cairn {:?} should fail", case.cli);
        let cli: Value = serde_json::from_str(&cli.stdout).unwrap();
        let cli = &cli["error"];
        assert_eq!(
            error["kind"], cli["kind"],
            "{tool}: {error} vs the CLI's {cli}"
        );
        if cli["exit_code"] == code::USAGE {
            // The CLI's usage hint names its flags; the tool's names the schema.
            assert!(
                error["hint"].as_str().is_some_and(|h| !h.is_empty()),
                "{tool}: {error}"
            );
            continue;
        }
        assert_eq!(error["message"], cli["message"], "{tool}");
        match (&error["hint"], &error["next"]) {
            // A refusal's way out comes as tool calls where the CLI prints commands.
            (Value::Null, Value::Array(next)) => {
                assert!(!next.is_empty(), "{tool}: {error}");
                assert!(
                    cli["hint"].is_string(),
                    "{tool}: the CLI has a way out too: {cli}"
                );
            }
            (hint, _) => assert_eq!(hint, &cli["hint"], "{tool}"),
        }
    }

    // Reads, checked before anything moves.
    let read_only = |name: &str| {
        seen.tools.iter().find(|t| t["name"] == name).unwrap()["annotations"]["readOnlyHint"]
            == true
    };
    let (reads, writes): (Vec<&Case>, Vec<&Case>) = cases.iter().partition(|c| read_only(c.tool));
    assert!(!reads.is_empty() && !writes.is_empty());
    let before = project_files(&repo);
    let calls: Vec<(&str, Value)> = reads.iter().map(|c| (c.tool, c.valid.clone())).collect();
    let seen = run_client(&repo, &calls);
    assert!(
        project_files(&repo) == before,
        "a read-only tool changed the project's files"
    );
    for (case, (failed, answer)) in reads.iter().zip(&seen.results) {
        assert!(!failed, "{} {} failed: {answer}", case.tool, case.valid);
        (case.check)(&repo, answer);
    }

    // Writes, each on tasks of its own, then every effect on the files.
    let calls: Vec<(&str, Value)> = writes.iter().map(|c| (c.tool, c.valid.clone())).collect();
    let seen = run_client(&repo, &calls);
    for (case, (failed, answer)) in writes.iter().zip(&seen.results) {
        assert!(!failed, "{} {} failed: {answer}", case.tool, case.valid);
        (case.check)(&repo, answer);
    }
}

/// Eight SDK clients, each with its own `cairn mcp`, start and complete eight different tasks at
/// once while the CLI adds tasks: every completion is in tasks.json and in the progress log, and
/// every task the CLI added is there.
#[test]
fn eight_sdk_clients_complete_tasks_at_once_while_the_cli_adds() {
    const CLIENTS: usize = 8;
    const MIN_ADDED: usize = 4;
    const MAX_ADDED: usize = 40;
    let repo = Repo::with_project();
    for i in 1..=CLIENTS {
        repo.add(&[&format!("Task number {i}")]);
    }
    let mut clients: Vec<_> = (1..=CLIENTS)
        .map(|i| {
            let id = format!("T-{i:03}");
            spawn_client(
                &repo,
                &[
                    ("start", json!({"id": id})),
                    ("complete", json!({"id": id, "agent": format!("agent-{i}")})),
                ],
            )
        })
        .collect();
    // The CLI adds until every client is done (at least MIN_ADDED, at most MAX_ADDED times),
    // so its writes overlap the servers' whatever node's start-up costs.
    let mut added = 0;
    while added < MIN_ADDED
        || (added < MAX_ADDED && clients.iter_mut().any(|c| c.try_wait().unwrap().is_none()))
    {
        repo.add(&[&format!("Added by the CLI {added}")]);
        added += 1;
    }
    for (i, client) in clients.into_iter().enumerate() {
        for (failed, answer) in finish(client).results {
            assert!(!failed, "client {}: {answer}", i + 1);
        }
    }
    let tasks = repo.tasks_json();
    let tasks = tasks["tasks"].as_array().unwrap();
    assert_eq!(
        tasks.len(),
        CLIENTS + added,
        "every task the CLI added is there"
    );
    for i in 1..=CLIENTS {
        let id = format!("T-{i:03}");
        assert_eq!(task_on_disk(&repo, &id)["status"], "COMPLETE", "{id}");
    }
    let mut completed = log_entries(&repo, "TASK_COMPLETE");
    completed.sort();
    let expected: Vec<String> = (1..=CLIENTS).map(|i| format!("T-{i:03}")).collect();
    assert_eq!(completed, expected, "each completion logged once");
    let by_cli = tasks
        .iter()
        .filter(|t| t["title"].as_str().unwrap().starts_with("Added by the CLI"))
        .count();
    assert_eq!(by_cli, added);
    println!("the CLI added {added} tasks while the clients worked");
}
