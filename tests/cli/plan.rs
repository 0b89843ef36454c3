//! `cairn plan …` end to end: a whole plan replayed through the binary with golden files of every
//! plan file at each step, the leash and 3-strike refusals, and the pointer doctor repairs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{Repo, Run, code};

const HEX: &str = "0000abcd";
const PLAN: &str = ".plan_2026-01-15_0000abcd";

fn plan(repo: &Repo, args: &[&str]) -> Run {
    let mut all = vec!["plan"];
    all.extend_from_slice(args);
    repo.run_env(&all, &[("CAIRN_PLAN_HEX", HEX)])
}

fn ok(repo: &Repo, args: &[&str]) -> String {
    let run = plan(repo, args);
    assert_eq!(
        run.code,
        code::OK,
        "cairn plan {args:?}\nstdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    run.stdout
}

fn refused(repo: &Repo, args: &[&str], expected: i32) -> Run {
    let before = files(repo);
    let run = plan(repo, args);
    assert_eq!(
        run.code, expected,
        "cairn plan {args:?}\nstdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    assert_eq!(
        files(repo),
        before,
        "a refused `plan {args:?}` changes no file"
    );
    run
}

fn plan_dir(repo: &Repo) -> PathBuf {
    repo.root().join(".claude").join(PLAN)
}

fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.sort();
    for path in entries {
        let name = path.strip_prefix(base).unwrap().display().to_string();
        if path.is_dir() {
            out.push((format!("{name}/"), String::new()));
            walk(&path, base, out);
        } else {
            out.push((name, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// Every file of the plan directory and the pointer, path and content, in order.
fn files(repo: &Repo) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let pointer = repo.root().join(".claude/.current_plan");
    out.push((
        ".current_plan".to_owned(),
        std::fs::read_to_string(pointer).unwrap_or_else(|_| "(absent)".to_owned()),
    ));
    walk(&plan_dir(repo), &plan_dir(repo), &mut out);
    out
}

/// The golden file of one step: the command's output, then every plan file.
fn golden(repo: &Repo, step: &str, output: &str) {
    let mut text = format!("$ {step}\n{output}");
    for (name, content) in files(repo) {
        text.push_str(&format!("\n===== {name}\n{content}"));
    }
    insta::assert_snapshot!(format!("plan_replay_{step}"), text);
}

fn write_plan(repo: &Repo, text: &str) {
    std::fs::write(plan_dir(repo).join("plan.md"), text).unwrap();
}

#[test]
fn a_whole_plan_replayed_with_every_file_at_each_step() {
    let repo = Repo::new();
    let out = ok(&repo, &["new", "Move sessions to signed tokens"]);
    golden(&repo, "01_new", &out);
    let out = ok(
        &repo,
        &[
            "finding",
            "Sessions are read in 14 places, all through SessionStore",
            "--file",
            "sessions.md",
        ],
    );
    golden(&repo, "02_finding", &out);
    refused(
        &repo,
        &["go", "EXECUTE", "--reason", "skip ahead"],
        code::REFUSED,
    );
    let out = ok(&repo, &["go", "PLAN", "--reason", "the callers are mapped"]);
    golden(&repo, "03_go_plan", &out);
    write_plan(
        &repo,
        "# Plan v1: Move sessions to signed tokens\n\n## Goal\nSigned tokens instead of server sessions.\n\n## Steps\n1. [ ] Sign tokens in SessionStore\n2. [ ] Verify them in the middleware\n",
    );
    let out = ok(&repo, &["budget", "--estimate", "40"]);
    golden(&repo, "04_budget_estimate", &out);
    // Approval is a person's act: without a terminal it is refused unless --yes.
    let run = refused(&repo, &["approve"], code::REFUSED);
    assert!(
        run.stderr.contains("stdin is not a terminal"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--yes"), "{}", run.stderr);
    let out = ok(
        &repo,
        &["approve", "--yes", "--statement", "yes, go with tokens"],
    );
    golden(&repo, "05_approve", &out);
    let out = ok(&repo, &["step", "1"]);
    golden(&repo, "06_step", &out);
    let out = ok(
        &repo,
        &["fix", "--step", "1", "--note", "reverted the import order"],
    );
    golden(&repo, "07_fix_1", &out);
    let out = ok(
        &repo,
        &["fix", "--step", "1", "--note", "one-line null check"],
    );
    golden(&repo, "08_fix_2", &out);
    let run = refused(
        &repo,
        &["fix", "--step", "1", "--note", "a third try"],
        code::REFUSED,
    );
    assert!(run.stderr.contains("autonomy leash"), "{}", run.stderr);
    assert!(
        run.stderr.contains("hint: cairn plan go REFLECT"),
        "{}",
        run.stderr
    );
    let out = ok(
        &repo,
        &["go", "REFLECT", "--reason", "step 1 keeps failing"],
    );
    golden(&repo, "09_go_reflect", &out);
    let out = ok(
        &repo,
        &[
            "decide",
            "Sessions stay server-side; tokens only wrap the session id",
        ],
    );
    golden(&repo, "10_decide", &out);
    let out = ok(
        &repo,
        &["go", "RE-PLAN", "--reason", "wrapping the id is simpler"],
    );
    golden(&repo, "11_go_replan", &out);
    let out = ok(
        &repo,
        &["go", "PLAN", "--reason", "new approach formulated"],
    );
    golden(&repo, "12_go_plan_again", &out);
    write_plan(
        &repo,
        "# Plan v2: Move sessions to signed tokens\n\n## Goal\nSigned tokens that wrap the session id.\n\n## Context\nD-001 mapped the callers; D-002 approved v1; D-003 keeps sessions server-side.\n\n## Steps\n1. [ ] Wrap the id in a signed token\n",
    );
    let out = ok(&repo, &["approve", "--yes", "--statement", "yes, v2"]);
    golden(&repo, "13_approve_v2", &out);
    ok(&repo, &["step", "1"]);
    let out = ok(&repo, &["budget", "--abstraction", "TokenSigner"]);
    golden(&repo, "14_budget_abstraction", &out);
    let out = ok(&repo, &["go", "REFLECT", "--reason", "all criteria met"]);
    golden(&repo, "15_go_reflect_again", &out);
    // D-004 (RE-PLAN), D-005 (PLAN) and D-006 (the second approval) are referenced nowhere yet.
    let run = refused(&repo, &["close", "--reason", "done"], code::REFUSED);
    assert!(run.stderr.contains("D-004, D-005, D-006"), "{}", run.stderr);
    assert!(
        run.stderr.contains("hint: cairn plan finding"),
        "{}",
        run.stderr
    );
    ok(
        &repo,
        &[
            "finding",
            "D-004 to D-006: the pivot to wrapped ids and its approval (D-004, D-005, D-006)",
        ],
    );
    let out = ok(&repo, &["close", "--reason", "all success criteria met"]);
    golden(&repo, "16_close", &out);
    let listed = repo.items(&["plan", "list"]);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["state"], "CLOSE");
    assert_eq!(listed[0]["current"], false);
    refused(&repo, &["status"], code::NOT_FOUND);
}

#[test]
fn three_failures_in_one_area_force_replan() {
    let repo = Repo::new();
    ok(&repo, &["new", "Cache the search results"]);
    ok(&repo, &["go", "PLAN", "--reason", "mapped"]);
    ok(&repo, &["approve", "--yes"]);
    let first = ok(&repo, &["fail", "--area", "src/cache.rs"]);
    assert!(first.contains("Failure 1/3"), "{first}");
    ok(&repo, &["fail", "--area", "src/cache.rs"]);
    let third = ok(&repo, &["fail", "--area", "src/cache.rs"]);
    assert!(third.contains("3-STRIKE"), "{third}");
    let run = refused(&repo, &["fix", "--step", "1", "--note", "x"], code::REFUSED);
    assert!(run.stderr.contains("3-strike"), "{}", run.stderr);
    ok(
        &repo,
        &["go", "REFLECT", "--reason", "cache keeps breaking"],
    );
    for to in ["CLOSE", "EXPLORE"] {
        let run = refused(&repo, &["go", to, "--reason", "x"], code::REFUSED);
        assert!(run.stderr.contains("RE-PLAN is forced"), "{}", run.stderr);
        assert!(
            run.stderr.contains("hint: cairn plan go RE-PLAN"),
            "{}",
            run.stderr
        );
    }
    let json = repo.json(&["plan", "status"]);
    assert_eq!(json["forced_replan"]["area"], "src/cache.rs");
    assert_eq!(json["allowed"], serde_json::json!(["RE-PLAN"]));
    ok(
        &repo,
        &["go", "RE-PLAN", "--reason", "a different cache design"],
    );
}

#[test]
fn status_resume_and_json_say_where_the_plan_stands() {
    let repo = Repo::new();
    refused(&repo, &["status"], code::NOT_FOUND);
    let json = repo.json(&["plan", "new", "Split the monolith"]);
    assert_eq!(json["state"], "EXPLORE");
    assert_eq!(json["iteration"], 0);
    let run = refused(&repo, &["new", "Another plan"], code::REFUSED);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    let status = ok(&repo, &["status"]);
    assert!(status.contains("State: EXPLORE"), "{status}");
    assert!(status.contains("May go to PLAN"), "{status}");
    let resume = ok(&repo, &["resume"]);
    assert!(
        resume.contains("Re-read now: findings.md, decisions.md"),
        "{resume}"
    );
    assert!(resume.contains("Next: cairn plan finding"), "{resume}");
    let resume: Value = repo.json(&["plan", "resume"]);
    assert!(
        resume["resume"]
            .as_str()
            .unwrap()
            .contains("Split the monolith")
    );
    let run = refused(&repo, &["go", "SLEEP", "--reason", "x"], code::USAGE);
    assert!(run.stderr.contains("not a plan state"), "{}", run.stderr);
    let run = refused(
        &repo,
        &["finding", "x", "--file", "../escape.md"],
        code::INVALID,
    );
    assert!(run.stderr.contains("plain file name"), "{}", run.stderr);
    let err: Value = serde_json::from_str(
        &repo
            .run(&["--json", "plan", "go", "CLOSE", "--reason", "x"])
            .stdout,
    )
    .unwrap();
    assert_eq!(err["error"]["kind"], "illegal_transition");
    assert_eq!(err["error"]["exit_code"], code::REFUSED);
    let forced = repo.json(&["plan", "new", "Another plan", "--force"]);
    assert_eq!(forced["goal"], "Another plan");
}

#[test]
fn doctor_reports_and_repairs_a_pointer_naming_a_missing_directory() {
    let repo = Repo::new();
    ok(&repo, &["new", "A plan whose directory will vanish"]);
    std::fs::remove_dir_all(plan_dir(&repo)).unwrap();
    let run = repo.run(&["doctor"]);
    assert_eq!(run.code, code::UNHEALTHY, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("plan-pointer-dangling"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(PLAN), "{}", run.stdout);
    let fixed = repo.run(&["--json", "doctor", "--fix"]);
    assert_eq!(fixed.code, code::OK, "{}{}", fixed.stdout, fixed.stderr);
    let json: Value = serde_json::from_str(&fixed.stdout).unwrap();
    assert_eq!(json["plan_pointer"]["repaired"], true);
    assert!(!repo.root().join(".claude/.current_plan").exists());
    // With a project beside it, the pointer is checked as part of the project's doctor.
    let repo = Repo::with_project();
    ok(&repo, &["new", "Another vanishing plan"]);
    std::fs::remove_dir_all(plan_dir(&repo)).unwrap();
    let run = repo.run(&["doctor"]);
    assert_eq!(run.code, code::UNHEALTHY, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("plan-pointer-dangling"),
        "{}",
        run.stdout
    );
    let fixed = repo.run(&["doctor", "--fix"]);
    assert_eq!(fixed.code, code::OK, "{}{}", fixed.stdout, fixed.stderr);
    assert!(
        fixed.stdout.contains("the pointer was removed"),
        "{}",
        fixed.stdout
    );
}

fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

fn sorted(names: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
    names.sort();
    names
}

const PLAN_KEYS: [&str; 14] = [
    "id",
    "goal",
    "state",
    "iteration",
    "created_at",
    "current_step",
    "fix_attempts",
    "manifest",
    "abstractions",
    "strikes",
    "scope_estimate",
    "lines_added_total",
    "last_transition",
    "budget",
];

#[test]
fn every_plan_json_output_has_its_documented_shape() {
    let repo = Repo::new();
    let j = |args: &[&str]| {
        let mut all = vec!["plan"];
        all.extend_from_slice(args);
        repo.json(&all)
    };
    assert_eq!(
        keys(&j(&["new", "Document the shapes"])),
        sorted(&PLAN_KEYS)
    );
    let mut overview: Vec<&str> = PLAN_KEYS.to_vec();
    overview.extend([
        "allowed",
        "decisions",
        "checkpoints",
        "forced_replan",
        "nuclear",
        "next_steps",
    ]);
    assert_eq!(keys(&j(&["status"])), sorted(&overview));
    let mut resume = overview.clone();
    resume.push("resume");
    assert_eq!(keys(&j(&["resume"])), sorted(&resume));
    let go = j(&["go", "PLAN", "--reason", "mapped"]);
    assert_eq!(
        keys(&go),
        sorted(&[
            "from",
            "to",
            "iteration",
            "decision",
            "checkpoint",
            "nuclear",
            "plan"
        ])
    );
    assert_eq!(
        keys(&go["decision"]),
        sorted(&["id", "number", "from", "to", "date", "body"])
    );
    let budget = j(&["budget", "--estimate", "10"]);
    assert_eq!(
        keys(&budget),
        sorted(&[
            "plan",
            "iteration",
            "budget",
            "scope_estimate",
            "lines_added_total",
            "nuclear"
        ])
    );
    assert_eq!(
        keys(&budget["budget"]),
        sorted(&[
            "files_added",
            "max_files_added",
            "new_abstractions",
            "max_new_abstractions",
            "lines_added",
            "lines_removed",
            "net_lines",
            "over",
        ])
    );
    let approved = j(&["approve", "--yes"]);
    assert_eq!(approved["to"], "EXECUTE");
    assert_eq!(keys(&j(&["step", "1"])), sorted(&PLAN_KEYS));
    assert_eq!(
        keys(&j(&["fix", "--step", "1", "--note", "n"])),
        sorted(&["step", "attempt", "max", "remaining"])
    );
    assert_eq!(
        keys(&j(&["fail", "--area", "a"])),
        sorted(&["area", "strikes", "max", "replan_forced"])
    );
    assert_eq!(
        keys(&j(&["decide", "D"])),
        sorted(&["id", "number", "from", "to", "date", "body"])
    );
    assert_eq!(keys(&j(&["finding", "F"])), sorted(&["recorded", "file"]));
    let listed = repo.items(&["plan", "list"]);
    assert_eq!(
        keys(&listed[0]),
        sorted(&["id", "state", "iteration", "goal", "current", "damaged"])
    );
}
