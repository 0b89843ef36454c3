//! `cairn orch …` end to end: a whole orchestration with golden files of active-session.md at
//! each step, YAML written by another tool, a kill at each archive step, and agents completing
//! phases at once.

use std::path::{Path, PathBuf};

use crate::support::{Repo, Run, cairn_command, code};

const ACTIVE: &str = "docs/maestro/state/active-session.md";
const ID: &str = "2026-03-14-auth-rewrite";

/// Runs at `minute` past 09:00 on 2026-03-14, so each step's `updated` is its own.
fn at(repo: &Repo, minute: u32, args: &[&str]) -> Run {
    let now = format!("2026-03-14T09:{minute:02}:00Z");
    repo.run_env(args, &[("CAIRN_NOW", now.as_str())])
}

fn ok_at(repo: &Repo, minute: u32, args: &[&str]) -> String {
    let now = format!("2026-03-14T09:{minute:02}:00Z");
    repo.ok_env(args, &[("CAIRN_NOW", now.as_str())])
}

fn active(repo: &Repo) -> String {
    std::fs::read_to_string(repo.root().join(ACTIVE)).expect("read active-session.md")
}

fn git(root: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("run git");
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

/// A git repository with the 4-phase session started: phase 1 first, then the parallel batch of
/// phases 2 and 3 (both blocked by 1 only), then phase 4 after both.
fn started() -> Repo {
    let repo = Repo::new();
    git(repo.root(), &["init", "-q", "."]);
    ok_at(
        &repo,
        0,
        &[
            "orch",
            "start",
            "--topic",
            "Auth rewrite",
            "--task",
            "Rewrite the auth layer",
            "--phase",
            "schema:coder",
            "--phase",
            "api:coder:1",
            "--phase",
            "docs:writer:1",
            "--phase",
            "release:coder:2,3",
        ],
    );
    repo
}

#[test]
fn a_whole_orchestration_with_golden_files_at_each_step() {
    let repo = started();
    insta::assert_snapshot!("orch_01_started", active(&repo));

    ok_at(
        &repo,
        1,
        &["orch", "phase", "start", "1", "--agent", "coder"],
    );
    ok_at(
        &repo,
        2,
        &[
            "orch",
            "files",
            "--phase",
            "1",
            "--created",
            "src/schema.rs",
            "--modified",
            "Cargo.toml",
        ],
    );
    ok_at(
        &repo,
        3,
        &[
            "orch", "tokens", "--agent", "coder", "--input", "1200", "--output", "300", "--cached",
            "800",
        ],
    );
    ok_at(
        &repo,
        4,
        &[
            "orch",
            "phase",
            "complete",
            "1",
            "--output",
            "coder=Added the schema",
            "--validation",
            "cargo test: pass",
        ],
    );
    insta::assert_snapshot!("orch_02_schema_done", active(&repo));

    // The parallel batch: both phases start, as two agents would.
    ok_at(&repo, 5, &["orch", "phase", "start", "2"]);
    ok_at(&repo, 5, &["orch", "phase", "start", "3"]);
    ok_at(
        &repo,
        6,
        &[
            "orch", "tokens", "--agent", "writer", "--input", "500", "--output", "900",
        ],
    );
    ok_at(
        &repo,
        7,
        &[
            "orch",
            "phase",
            "fail",
            "2",
            "--type",
            "validation",
            "--message",
            "cargo test: 2 failures",
            "--validation",
            "fail",
        ],
    );
    insta::assert_snapshot!("orch_03_api_failed", active(&repo));

    // Resume at this point: the failure, its open error, and a file no manifest lists.
    std::fs::write(repo.root().join("stray.rs"), "// not in any manifest\n").expect("write");
    std::fs::create_dir_all(repo.root().join("src")).expect("mkdir");
    std::fs::write(
        repo.root().join("src/schema.rs"),
        "// in phase 1's manifest\n",
    )
    .expect("write");
    insta::assert_snapshot!("orch_resume", ok_at(&repo, 8, &["orch", "resume"]));
    let resume = repo.json(&["orch", "resume"]);
    assert_eq!(resume["outside_manifest"], serde_json::json!(["stray.rs"]));
    assert_eq!(resume["failed"][0]["retries_left"], 2);
    assert_eq!(resume["unresolved_errors"][0]["id"], "2.1");

    ok_at(&repo, 9, &["orch", "phase", "retry", "2"]);
    ok_at(
        &repo,
        10,
        &["orch", "files", "--phase", "3", "--created", "docs/auth.md"],
    );
    ok_at(
        &repo,
        11,
        &[
            "orch",
            "phase",
            "complete",
            "3",
            "--output",
            "writer=Documented the flow",
        ],
    );
    ok_at(
        &repo,
        12,
        &[
            "orch", "tokens", "--agent", "tester", "--input", "50", "--output", "10",
        ],
    );
    ok_at(
        &repo,
        13,
        &[
            "orch",
            "phase",
            "complete",
            "2",
            "--validation",
            "cargo test: pass",
        ],
    );
    insta::assert_snapshot!("orch_04_batch_done", active(&repo));

    // Skipping needs the user's approval.
    let refused = at(&repo, 14, &["orch", "phase", "skip", "4"]);
    assert_eq!(refused.code, code::USAGE, "{}", refused.stderr);
    ok_at(
        &repo,
        14,
        &[
            "orch",
            "phase",
            "skip",
            "4",
            "--user-approved",
            "--reason",
            "release is next sprint",
        ],
    );
    insta::assert_snapshot!("orch_05_release_skipped", active(&repo));
    insta::assert_snapshot!("orch_status", ok_at(&repo, 14, &["orch", "status"]));

    let status = repo.json(&["orch", "status"]);
    assert_eq!(status["status"], "completed");
    assert_eq!(
        status["token_usage"]["by_agent"]
            .as_object()
            .map(|m| m.len()),
        Some(3)
    );
    assert_eq!(status["token_usage"]["total_input"], 1750);

    insta::assert_snapshot!("orch_archive", ok_at(&repo, 15, &["orch", "archive"]));
    assert!(!repo.root().join(ACTIVE).exists());
    let archived = std::fs::read_to_string(
        repo.root()
            .join(format!("docs/maestro/state/archive/{ID}.md")),
    )
    .expect("archived session");
    insta::assert_snapshot!("orch_06_archived", archived);

    let resume = repo.fails(&["orch", "resume"], code::NOT_FOUND);
    assert!(
        resume.stderr.contains("cairn orch start"),
        "{}",
        resume.stderr
    );
    let list = repo.json(&["orch", "list"]);
    assert_eq!(list["active"], serde_json::Value::Null);
    assert_eq!(list["items"], serde_json::json!([ID]));
    assert_eq!(list["total"], 1);
    // Archives only grow: the list pages like every other list.
    let past = repo.json(&["orch", "list", "--offset", "1"]);
    assert_eq!(past["items"], serde_json::json!([]));
    assert_eq!(past["total"], 1);
    let human = repo.ok(&["orch", "list", "--offset", "1"]);
    assert!(
        human.contains("none of 1 archived sessions shown"),
        "{human}"
    );
}

#[test]
fn retries_stop_at_two_and_then_escalate() {
    let repo = started();
    repo.ok(&["orch", "phase", "start", "1"]);
    for _ in 0..2 {
        repo.ok(&["orch", "phase", "fail", "1", "--message", "boom"]);
        repo.ok(&["orch", "phase", "retry", "1"]);
    }
    repo.ok(&["orch", "phase", "fail", "1", "--message", "boom"]);
    let before = active(&repo);
    let run = repo.fails(&["orch", "phase", "retry", "1"], code::REFUSED);
    assert!(
        run.stderr.contains("escalate to the user"),
        "{}",
        run.stderr
    );
    assert_eq!(active(&repo), before, "a refused retry writes nothing");
    let run = repo.fails(&["orch", "phase", "start", "1"], code::REFUSED);
    assert!(
        run.stderr.contains("already retried 2 times"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_input_is_refused_with_a_reason_and_changes_nothing() {
    let repo = Repo::new();
    let run = repo.fails(&["orch", "status"], code::NOT_FOUND);
    assert!(run.stderr.contains("hint: start one"), "{}", run.stderr);
    let run = repo.fails(
        &["orch", "start", "--topic", "x", "--phase", "api"],
        code::USAGE,
    );
    assert!(run.stderr.contains("no agent"), "{}", run.stderr);
    let run = repo.fails(
        &[
            "orch", "start", "--topic", "x", "--phase", "a:c", "--phase", "b:c:2",
        ],
        code::INVALID,
    );
    assert!(run.stderr.contains("earlier phases"), "{}", run.stderr);
    assert!(!repo.root().join(ACTIVE).exists());

    let repo = started();
    let before = active(&repo);
    let run = repo.fails(&["orch", "phase", "start", "2"], code::REFUSED);
    assert!(
        run.stderr.contains("blocked by unfinished phases 1"),
        "{}",
        run.stderr
    );
    repo.fails(&["orch", "phase", "complete", "9"], code::NOT_FOUND);
    repo.fails(
        &["orch", "resolve", "1.x", "--resolution", "r"],
        code::USAGE,
    );
    repo.fails(&["orch", "files", "--phase", "1"], code::USAGE);
    let run = repo.fails(
        &["orch", "start", "--topic", "Other", "--phase", "a:b"],
        code::REFUSED,
    );
    assert!(run.stderr.contains("still active"), "{}", run.stderr);
    let run = repo.fails(&["orch", "archive"], code::REFUSED);
    assert!(run.stderr.contains("--user-approved"), "{}", run.stderr);
    assert_eq!(
        active(&repo),
        before,
        "every refusal left the file as it was"
    );

    let json = repo.run(&["--json", "orch", "phase", "start", "2"]);
    let error: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON error");
    assert_eq!(error["error"]["exit_code"], code::REFUSED);
}

#[test]
fn errors_are_recorded_and_resolved_by_id() {
    let repo = started();
    repo.ok(&["orch", "phase", "start", "1", "--agent", "coder"]);
    let recorded = repo.json(&[
        "orch",
        "error",
        "--phase",
        "1",
        "--type",
        "file_conflict",
        "--message",
        "two agents wrote lib.rs",
    ]);
    assert_eq!(recorded["error_id"], "1.1");
    assert_eq!(
        recorded["session"]["phases"][0]["errors"][0]["agent"],
        "coder"
    );
    assert_eq!(recorded["session"]["phases"][0]["status"], "in_progress");
    repo.ok(&["orch", "resolve", "1.1", "--resolution", "merged by hand"]);
    let status = repo.json(&["orch", "status"]);
    assert_eq!(status["phases"][0]["errors"][0]["resolved"], true);
    assert_eq!(
        status["phases"][0]["errors"][0]["resolution"],
        "merged by hand"
    );
    let run = repo.fails(
        &["orch", "resolve", "1.1", "--resolution", "again"],
        code::REFUSED,
    );
    assert!(run.stderr.contains("already resolved"), "{}", run.stderr);
}

const YAML_SESSION: &str = "---
session_id: 2026-03-14-from-yaml
task: Written by the original tool
created: 2026-03-14T08:00:00Z
updated: 2026-03-14T08:30:00Z
status: in_progress
workflow_mode: standard
design_document: docs/maestro/plans/yaml-design.md
implementation_plan: null
current_phase: 1
total_phases: 2
maestro_version: 3.1.0
token_usage:
  total_input: 0
  total_output: 0
  total_cached: 0
  by_agent: {}
phases:
  - id: 1
    name: Build
    status: pending
    agents: [coder]
    x_note: {owner: maestro}
  - id: 2
    name: Check
    status: pending
    blocked_by: [1]
---
# From yaml Orchestration Log
";

#[test]
fn a_session_with_yaml_front_matter_and_unknown_keys_is_read_and_kept_on_rewrite() {
    let repo = Repo::new();
    let path = repo.root().join(ACTIVE);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, YAML_SESSION).expect("write");
    let status = repo.json(&["orch", "status"]);
    assert_eq!(status["session_id"], "2026-03-14-from-yaml");
    assert_eq!(status["maestro_version"], "3.1.0");
    ok_at(&repo, 0, &["orch", "phase", "start", "1"]);
    insta::assert_snapshot!("orch_yaml_rewritten", active(&repo));
}

#[test]
fn a_plan_file_gives_the_phases_and_is_archived_with_the_design() {
    let repo = Repo::new();
    let plans = repo.root().join("docs/maestro/plans");
    std::fs::create_dir_all(&plans).expect("mkdir");
    std::fs::write(
        plans.join("auth-impl-plan.md"),
        "# Plan\n\n## Phase 1: Schema\n- **Agent**: coder\n\n## Phase 2: API\n- Agent: coder\n- Blocked by: 1\n",
    )
    .expect("plan");
    std::fs::write(plans.join("auth-design.md"), "# Design\n").expect("design");
    let started = repo.json(&[
        "orch",
        "start",
        "--topic",
        "Auth",
        "--plan",
        &plans.join("auth-impl-plan.md").display().to_string(),
        "--design",
        &plans.join("auth-design.md").display().to_string(),
    ]);
    assert_eq!(
        started["implementation_plan"],
        "docs/maestro/plans/auth-impl-plan.md"
    );
    assert_eq!(
        started["design_document"],
        "docs/maestro/plans/auth-design.md"
    );
    assert_eq!(started["workflow_mode"], "standard");
    assert_eq!(started["phases"][1]["blocked_by"], serde_json::json!([1]));
    let archived = repo.json(&["orch", "archive", "--user-approved", "--reason", "demo"]);
    assert_eq!(archived["complete"], true, "{archived}");
    assert_eq!(
        archived["moved"].as_array().map(Vec::len),
        Some(3),
        "{archived}"
    );
    for name in ["auth-impl-plan.md", "auth-design.md"] {
        assert!(plans.join("archive").join(name).is_file());
        assert!(!plans.join(name).exists());
    }
}

/// A finished session with both documents on disk.
fn ready_to_archive() -> (Repo, PathBuf) {
    let repo = Repo::new();
    let plans = repo.root().join("docs/maestro/plans");
    std::fs::create_dir_all(&plans).expect("mkdir");
    std::fs::write(plans.join("plan.md"), "## Phase 1: Only\nAgent: coder\n").expect("plan");
    std::fs::write(plans.join("design.md"), "# Design\n").expect("design");
    repo.ok(&[
        "orch",
        "start",
        "--topic",
        "Kill",
        "--plan",
        &plans.join("plan.md").display().to_string(),
        "--design",
        &plans.join("design.md").display().to_string(),
    ]);
    repo.ok(&["orch", "phase", "start", "1"]);
    repo.ok(&["orch", "phase", "complete", "1"]);
    (repo, plans)
}

#[test]
fn an_archive_killed_at_each_step_is_finished_by_running_it_again() {
    for failpoint in [
        "orch:archive-after-design-move",
        "orch:archive-after-plan-move",
        "orch:archive-after-session-rewrite",
        "orch:archive-after-session-move",
    ] {
        let (repo, plans) = ready_to_archive();
        let killed = repo.run_env(&["orch", "archive"], &[("CAIRN_FAILPOINT", failpoint)]);
        assert_ne!(
            killed.code,
            code::OK,
            "{failpoint}: the archive must die there"
        );
        let finished_by_the_kill = failpoint == "orch:archive-after-session-move";
        if finished_by_the_kill {
            repo.fails(&["orch", "archive"], code::NOT_FOUND);
        } else {
            let rerun = repo.json(&["orch", "archive"]);
            assert_eq!(rerun["complete"], true, "{failpoint}: {rerun}");
        }
        for name in ["plan.md", "design.md"] {
            assert!(
                plans.join("archive").join(name).is_file(),
                "{failpoint}: {name} archived"
            );
            assert!(
                !plans.join(name).exists(),
                "{failpoint}: {name} left behind"
            );
        }
        assert!(!repo.root().join(ACTIVE).exists(), "{failpoint}");
        let list = repo.json(&["orch", "list"]);
        assert_eq!(
            list["items"].as_array().map(Vec::len),
            Some(1),
            "{failpoint}: {list}"
        );
    }
}

#[test]
fn agents_completing_different_phases_at_once_lose_nothing() {
    const AGENTS: usize = 6;
    let repo = Repo::new();
    let mut args = vec![
        "orch".to_owned(),
        "start".to_owned(),
        "--topic".to_owned(),
        "batch".to_owned(),
    ];
    for n in 1..=AGENTS {
        args.push("--phase".to_owned());
        args.push(format!("part{n}:agent{n}"));
    }
    repo.ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let root = repo.root().to_path_buf();
    let workers: Vec<_> = (1..=AGENTS)
        .map(|n| {
            let root = root.clone();
            std::thread::spawn(move || {
                let id = n.to_string();
                let file = format!("src/part{n}.rs");
                for step in [
                    vec!["orch", "phase", "start", id.as_str()],
                    vec![
                        "orch",
                        "files",
                        "--phase",
                        id.as_str(),
                        "--created",
                        file.as_str(),
                    ],
                    vec![
                        "orch", "tokens", "--agent", "shared", "--input", "1", "--output", "1",
                    ],
                    vec!["orch", "phase", "complete", id.as_str()],
                ] {
                    let out = cairn_command(&root, &step).output().expect("run cairn");
                    assert!(
                        out.status.success(),
                        "{step:?}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker");
    }
    let status = repo.json(&["orch", "status"]);
    assert_eq!(status["status"], "completed", "{status}");
    for (i, phase) in status["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .enumerate()
    {
        assert_eq!(phase["status"], "completed");
        assert_eq!(
            phase["files_created"],
            serde_json::json!([format!("src/part{}.rs", i + 1)])
        );
    }
    assert_eq!(status["token_usage"]["by_agent"]["shared"]["input"], AGENTS);
}

#[test]
fn a_handoff_records_downstream_context_on_a_phase_that_ran() {
    let repo = started();
    // A pending phase has nothing to hand on yet; an empty handoff is a usage error.
    let before = active(&repo);
    let run = repo.fails(
        &["orch", "handoff", "--phase", "1", "--warning", "w"],
        code::REFUSED,
    );
    assert!(!run.stderr.is_empty());
    repo.fails(&["orch", "handoff", "--phase", "1"], code::USAGE);
    assert_eq!(active(&repo), before, "refusals change nothing");

    ok_at(&repo, 1, &["orch", "phase", "start", "1"]);
    let said = ok_at(
        &repo,
        2,
        &[
            "orch",
            "handoff",
            "--phase",
            "1",
            "--interface",
            "UserStore::find(id)",
            "--pattern",
            "thiserror enums",
            "--warning",
            "ids are case-sensitive",
        ],
    );
    assert!(said.contains("hands on 3 item(s)"), "{said}");
    // A second handoff merges into the first.
    ok_at(
        &repo,
        3,
        &[
            "orch",
            "handoff",
            "--phase",
            "1",
            "--assumption",
            "one tenant",
        ],
    );
    let status = repo.json(&["orch", "status"]);
    let context = &status["phases"][0]["downstream_context"];
    assert_eq!(
        context["key_interfaces_introduced"][0],
        "UserStore::find(id)"
    );
    assert_eq!(context["patterns_established"][0], "thiserror enums");
    assert_eq!(context["assumptions"][0], "one tenant");
    assert_eq!(context["warnings"][0], "ids are case-sensitive");
}

/// `cairn orch transition` is seed 004's transition_phase: one write completes a phase with its
/// files, context and tokens and starts a parallel batch; a refused step changes nothing.
#[test]
fn transition_completes_a_phase_and_starts_a_batch_in_one_write() {
    let repo = Repo::new();
    ok_at(
        &repo,
        0,
        &[
            "orch",
            "start",
            "--topic",
            "Auth rewrite",
            "--id",
            "auth-run",
            "--phase",
            "schema:coder",
            "--phase",
            "api:coder:1",
            "--phase",
            "docs:writer:1",
        ],
    );
    let bad_id = at(
        &repo,
        0,
        &[
            "orch", "start", "--topic", "x", "--id", "../x", "--phase", "a:b",
        ],
    );
    assert_eq!(bad_id.code, code::INVALID, "{}", bad_id.stderr);
    let out = ok_at(&repo, 1, &["orch", "transition", "--next", "1"]);
    assert!(out.contains("Started phase(s)"), "{out}");
    // 2 waits on 1: refused, and the file is as it was.
    let before = active(&repo);
    let refused = at(
        &repo,
        2,
        &["orch", "transition", "--complete", "1", "--next", "2,9"],
    );
    assert_eq!(refused.code, code::NOT_FOUND, "{}", refused.stderr);
    assert_eq!(active(&repo), before);
    let wrong = at(
        &repo,
        2,
        &["orch", "transition", "--session", "other", "--next", "2"],
    );
    assert_eq!(wrong.code, code::REFUSED, "{}", wrong.stderr);
    assert!(
        wrong.stderr.contains("the active session is auth-run"),
        "{}",
        wrong.stderr
    );
    let nothing = at(&repo, 2, &["orch", "transition"]);
    assert_eq!(nothing.code, code::INVALID, "{}", nothing.stderr);
    assert_eq!(active(&repo), before);

    let state = repo.json(&[
        "orch",
        "transition",
        "--session",
        "auth-run",
        "--complete",
        "1",
        "--next",
        "2,3",
        "--created",
        "src/schema.rs",
        "--interface",
        "Schema::load",
        "--input",
        "900",
        "--output",
        "100",
        "--batch",
        "b2",
    ]);
    assert_eq!(state["session_id"], "auth-run");
    assert_eq!(state["current_batch"], "b2");
    assert_eq!(state["phases"][0]["status"], "completed");
    assert_eq!(
        state["phases"][0]["files_created"],
        serde_json::json!(["src/schema.rs"])
    );
    assert_eq!(state["phases"][1]["status"], "in_progress");
    assert_eq!(state["phases"][2]["status"], "in_progress");
    assert_eq!(state["token_usage"]["by_agent"]["coder"]["input"], 900);
    assert!(
        active(&repo).contains("## Phase 1: schema"),
        "{}",
        active(&repo)
    );
}
