//! Output sized for agents: lists come a page at a time and say what they left out, long fields
//! are refused when cairn writes them (never when it reads them), filters that cannot apply are
//! refused, and errors are JSON under `--json`.

use serde_json::{Value, json};

use crate::support::{NOW, Repo, code};

/// Writes `n` pending tasks straight into tasks.json, as another tool would; `title` makes each
/// title from its number.
pub(crate) fn with_tasks(n: usize, title: impl Fn(usize) -> String) -> Repo {
    let repo = Repo::with_project();
    let tasks: Vec<Value> = (1..=n)
        .map(|i| {
            json!({
                "id": format!("T-{i:03}"),
                "title": title(i),
                "level": "task",
                "status": "PENDING",
                "priority": "MEDIUM",
                "dependencies": if i > 1 { vec![format!("T-{:03}", i - 1)] } else { vec![] },
                "completion_criteria": [],
                "created_at": NOW,
            })
        })
        .collect();
    let doc = json!({"version": 1, "project_id": "web", "tasks": tasks});
    std::fs::write(
        repo.tasks_file(),
        serde_json::to_string_pretty(&doc).unwrap(),
    )
    .unwrap();
    repo
}

pub(crate) fn numbered(i: usize) -> String {
    format!("Task number {i}")
}

fn last_line(text: &str) -> &str {
    text.lines().last().unwrap_or_default()
}

#[test]
fn a_long_list_prints_one_page_and_says_how_to_get_the_rest() {
    let repo = with_tasks(60, numbered);
    let first = repo.ok(&["task", "list"]);
    assert_eq!(first.lines().count(), 1 + 50 + 1, "header, 50 rows, footer");
    assert!(
        first.contains("T-050") && !first.contains("T-051"),
        "{first}"
    );
    assert_eq!(
        last_line(&first),
        "… 1–50 of 60 tasks shown; 10 more: --offset 50 for the next page, --limit N for another page size, --all for every one"
    );

    let second = repo.ok(&["task", "list", "--offset", "50"]);
    assert!(
        second.contains("T-051") && second.contains("T-060"),
        "{second}"
    );
    assert!(!second.contains("T-050  PENDING"), "{second}");
    assert!(
        last_line(&second).starts_with("… 51–60 of 60 tasks shown; --offset 0"),
        "{second}"
    );

    let all = repo.ok(&["task", "list", "--all"]);
    assert_eq!(
        all.lines().count(),
        61,
        "no footer when nothing is left out"
    );
    let few = repo.ok(&["task", "list", "--limit", "3"]);
    assert_eq!(few.lines().count(), 1 + 3 + 1);
    assert!(last_line(&few).contains("57 more: --offset 3"), "{few}");

    let run = repo.run(&["task", "list", "--limit", "3", "--all"]);
    assert_eq!(run.code, code::USAGE, "--limit and --all conflict");
    let run = repo.run(&["task", "list", "--limit", "0"]);
    assert_eq!(
        run.code,
        code::USAGE,
        "an empty page would never reach the end"
    );
}

#[test]
fn a_page_stops_at_six_thousand_characters_when_rows_are_long() {
    let repo = with_tasks(40, |i| format!("{i} {}", "long words ".repeat(40)));
    let page = repo.ok(&["task", "list"]);
    let rows = page.lines().count() - 2;
    assert!(rows < 40, "{rows} rows");
    assert!(page.len() < 7_000, "{} characters", page.len());
    assert!(
        last_line(&page).contains(&format!("--offset {rows}")),
        "{page}"
    );
}

#[test]
fn every_list_command_pages_with_the_same_envelope() {
    let repo = with_tasks(60, numbered);
    for args in [
        vec!["task", "list"],
        vec!["task", "ready"],
        vec!["task", "waves"],
        vec!["task", "graph"],
    ] {
        let mut json_args = vec!["--json"];
        json_args.extend(&args);
        json_args.extend(["--limit", "2", "--offset", "1"]);
        let page: Value = serde_json::from_str(&repo.ok(&json_args)).unwrap();
        let total = page["total"].as_u64().unwrap();
        let returned = total.saturating_sub(1).min(2);
        assert_eq!(page["offset"], 1, "{args:?}: {page}");
        assert_eq!(page["returned"], returned, "{args:?}: {page}");
        assert_eq!(page["truncated"], true, "the first row was skipped: {page}");
        assert_eq!(
            page["next_offset"],
            if total > 1 + returned {
                json!(1 + returned)
            } else {
                Value::Null
            },
            "{args:?}: {page}"
        );
    }
    // `ready` is T-001 only (a chain); waves hold one task each.
    let waves = repo.json(&["task", "waves", "--offset", "4", "--limit", "2"]);
    assert_eq!(waves["first_wave"], 5, "{waves}");
    assert_eq!(waves["waves"], json!([["T-005"], ["T-006"]]), "{waves}");
    let waves_text = repo.ok(&["task", "waves"]);
    assert!(waves_text.starts_with("Wave 1: T-001\n"), "{waves_text}");
    assert!(
        last_line(&waves_text).contains("10 more: --offset 50"),
        "{waves_text}"
    );

    // A partial graph stays a graph: the footer is a comment in its own syntax.
    let mermaid = repo.ok(&["task", "graph", "--limit", "2"]);
    assert!(
        last_line(&mermaid).starts_with("%% … 1–2 of 60 tasks"),
        "{mermaid}"
    );
    assert!(mermaid.contains("T_001 --> T_002"), "{mermaid}");
    assert!(!mermaid.contains("T-003 Task"), "{mermaid}");
    let dot = repo.ok(&["task", "graph", "--format", "dot", "--limit", "2"]);
    assert!(last_line(&dot).starts_with("// … 1–2 of 60 tasks"), "{dot}");
    assert!(repo.ok(&["task", "graph", "--all"]).contains("T-060 Task"));

    // The log, checkpoints and projects page too.
    for i in 0..3 {
        repo.ok(&["checkpoint", "write"]);
        repo.ok(&[
            "task",
            "block",
            &format!("T-00{}", i + 1),
            "--reason",
            "waiting",
        ]);
    }
    let log_text = repo.ok(&["log", "--limit", "2"]);
    assert_eq!(log_text.lines().count(), 3, "{log_text}");
    assert!(
        last_line(&log_text).contains("--tail N for the newest"),
        "{log_text}"
    );
    let log = repo.json(&["log", "--limit", "2"]);
    assert_eq!(log["returned"], 2, "{log}");
    assert_eq!(log["truncated"], true, "{log}");
    // Three written, and the file the test wrote, kept by the first write over it.
    let checkpoints = repo.ok(&["checkpoint", "list", "--limit", "1"]);
    assert!(
        last_line(&checkpoints).contains("3 more: --offset 1"),
        "{checkpoints}"
    );
    let projects = repo.json(&["project", "list", "--limit", "1"]);
    assert_eq!(projects["items"][0]["id"], "web");
    assert_eq!(projects["next_offset"], Value::Null);
}

#[test]
fn doctor_pages_its_findings_but_exits_on_all_of_them() {
    let repo = with_tasks(60, numbered);
    // Another tool left 60 dangling dependencies.
    let mut doc = repo.tasks_json();
    for t in doc["tasks"].as_array_mut().unwrap() {
        t["dependencies"] = json!(["T-999"]);
    }
    std::fs::write(repo.tasks_file(), doc.to_string()).unwrap();
    let run = repo.run(&["doctor", "--limit", "5"]);
    assert_eq!(run.code, code::UNHEALTHY, "{}", run.stderr);
    assert_eq!(run.stdout.matches("dangling-dependency").count(), 5);
    assert!(run.stdout.contains("55 more: --offset 5"), "{}", run.stdout);
    let json = repo.run(&["--json", "doctor", "--limit", "5"]);
    assert_eq!(json.code, code::UNHEALTHY);
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["findings"].as_array().unwrap().len(), 5);
    assert_eq!(report["total"], 60);
    assert_eq!(report["clean"], false);
}

#[test]
fn long_fields_are_refused_when_written_and_nothing_changes() {
    let repo = Repo::with_project();
    repo.add(&["A task to block"]);
    let before = std::fs::read(repo.tasks_file()).unwrap();
    let title = "t".repeat(501);
    let run = repo.fails(&["task", "add", &title], code::INVALID);
    assert!(
        run.stderr.contains("title")
            && run.stderr.contains("501 characters")
            && run.stderr.contains("at most 500"),
        "{}",
        run.stderr
    );
    let description = "d".repeat(10_001);
    let criterion = "c".repeat(501);
    let tag = "g".repeat(101);
    let phase = "p".repeat(101);
    let reason = "r".repeat(2_001);
    for (args, field) in [
        (
            vec!["task", "add", "Fine title", "--description", &description],
            "description",
        ),
        (
            vec!["task", "add", "Fine title", "--criterion", &criterion],
            "criterion",
        ),
        (vec!["task", "add", "Fine title", "--tag", &tag], "tag"),
        (
            vec!["task", "add", "Fine title", "--phase", &phase],
            "phase",
        ),
        (
            vec!["task", "decompose", "T-001", "--into", &title],
            "title",
        ),
        (
            vec!["task", "block", "T-001", "--reason", &reason],
            "reason",
        ),
    ] {
        let run = repo.fails(&args, code::INVALID);
        assert!(run.stderr.contains(field), "{field}: {}", run.stderr);
        assert!(run.stderr.contains("characters long"), "{}", run.stderr);
    }
    assert_eq!(std::fs::read(repo.tasks_file()).unwrap(), before);
    let at_limit = "t".repeat(500);
    repo.add(&[&at_limit]);
}

#[test]
fn long_fields_written_by_another_tool_still_read_and_move() {
    let long = "x".repeat(5_000);
    let repo = with_tasks(2, |i| format!("{i} {long}"));
    assert!(repo.ok(&["task", "list"]).contains(&long));
    assert!(repo.ok(&["task", "show", "T-001"]).contains(&long));
    assert_eq!(
        repo.json(&["task", "start", "T-001"])["status"],
        "IN_PROGRESS"
    );
    repo.ok(&["task", "complete", "T-001"]);
    assert_eq!(repo.tasks_json()["tasks"][0]["title"], format!("1 {long}"));
}

#[test]
fn a_filter_that_cannot_apply_is_refused() {
    let repo = Repo::with_project();
    repo.add(&["Some task here"]);
    for (args, option) in [
        (vec!["--project", "web", "project", "list"], "--project"),
        (vec!["project", "list", "--project", "web"], "--project"),
        (vec!["task", "list", "--ready", "--blocked"], "--blocked"),
        (
            vec!["task", "list", "--ready", "--status", "COMPLETE"],
            "--status",
        ),
        (
            vec!["task", "list", "--blocked", "--status", "PENDING"],
            "--status",
        ),
        (
            vec![
                "task", "move", "T-001", "--to", "BLOCKED", "--reason", "why", "--actual", "5",
            ],
            "--actual",
        ),
    ] {
        let run = repo.fails(&args, code::USAGE);
        assert!(
            run.stderr
                .starts_with(&format!("error: {option} does not apply here")),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert_eq!(repo.status_of("T-001"), "PENDING", "nothing moved");
    // A default from the environment is not a filter the user typed.
    let run = repo.run_env(&["project", "list"], &[("CAIRN_PROJECT", "web")]);
    assert_eq!(run.code, code::OK, "{}", run.stderr);
    // Filters that can match still work together.
    assert_eq!(
        repo.items(&["task", "list", "--ready", "--status", "PENDING,COMPLETE"])
            .len(),
        1
    );
}

/// Runs with `--json`, expects `code`, and returns the error object printed on stdout.
fn json_error(repo: &Repo, args: &[&str], code: i32, env: &[(&str, &str)]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let run = repo.run_env(&all, env);
    assert_eq!(run.code, code, "{all:?}\n{}\n{}", run.stdout, run.stderr);
    let value: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{all:?}: stdout is not JSON ({e}):\n{}", run.stdout));
    let error = &value["error"];
    let mut keys: Vec<&String> = error.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["exit_code", "hint", "kind", "message"], "{value}");
    assert_eq!(error["exit_code"], code, "{value}");
    assert!(
        error["hint"].is_null() || error["hint"].is_string(),
        "{value}"
    );
    assert!(!error["message"].as_str().unwrap().is_empty(), "{value}");
    value["error"].clone()
}

#[test]
fn every_exit_code_has_a_json_error_form() {
    let repo = Repo::with_project();
    repo.add(&["A task to use"]);

    let e = json_error(&repo, &["task", "frobnicate"], code::USAGE, &[]);
    assert_eq!(e["kind"], "usage");
    assert!(e["hint"].as_str().unwrap().contains("Usage:"), "{e}");
    let e = json_error(
        &repo,
        &["project", "list", "--project", "web"],
        code::USAGE,
        &[],
    );
    assert_eq!(e["kind"], "option_not_applicable");
    let e = json_error(
        &repo,
        &["status"],
        code::USAGE,
        &[("CAIRN_NOW", "yesterday")],
    );
    assert_eq!(e["kind"], "usage");

    let e = json_error(&repo, &["task", "show", "T-042"], code::NOT_FOUND, &[]);
    assert_eq!(e["kind"], "unknown_task");
    assert!(
        e["hint"].as_str().unwrap().contains("cairn task list"),
        "{e}"
    );
    let e = json_error(&repo, &["task", "complete", "T-001"], code::REFUSED, &[]);
    assert_eq!(e["kind"], "illegal_transition");
    assert!(
        e["hint"]
            .as_str()
            .unwrap()
            .contains("cairn task start T-001"),
        "{e}"
    );
    let e = json_error(&repo, &["task", "add", "ab"], code::INVALID, &[]);
    assert_eq!(e["kind"], "invalid");
    assert_eq!(e["hint"], Value::Null);
    let e = json_error(
        &repo,
        &[
            "init",
            "--id",
            "web",
            "--name",
            "Again",
            "--goal",
            "The same id a second time",
        ],
        code::ALREADY_EXISTS,
        &[],
    );
    assert_eq!(e["kind"], "already_exists");

    let lock = repo.project_dir("web").join(".lock");
    {
        let _held =
            cairn_storage_fs::lock::lock_exclusive(&lock, std::time::Duration::from_secs(5))
                .expect("take the project lock");
        let e = json_error(
            &repo,
            &["task", "add", "Blocked by the lock"],
            code::LOCK_TIMEOUT,
            &[("CAIRN_LOCK_TIMEOUT_MS", "200")],
        );
        assert_eq!(e["kind"], "lock_timeout");
    }

    let missing = repo.root().join("no-such-brief.md");
    let e = json_error(
        &repo,
        &[
            "task",
            "research",
            "T-001",
            "--brief",
            missing.to_str().unwrap(),
        ],
        1,
        &[],
    );
    assert_eq!(e["kind"], "internal");

    std::fs::write(repo.tasks_file(), "{\"version\": 1, \"tasks\": [").unwrap();
    // The log could rebuild it (#16): lost too, nothing is left to recover from.
    std::fs::remove_file(repo.tasks_file().with_file_name("progress/log.md")).unwrap();
    let e = json_error(&repo, &["task", "list"], code::CORRUPT, &[]);
    assert_eq!(e["kind"], "corrupt");
    assert!(e["hint"].as_str().unwrap().contains("cairn doctor"), "{e}");

    // Help is an answer, not an error, even under --json.
    assert_eq!(repo.run(&["--json", "task", "--help"]).code, code::OK);
}

#[test]
fn status_and_reconcile_summarise_long_sections() {
    let repo = with_tasks(60, numbered);
    let mut doc = repo.tasks_json();
    for t in doc["tasks"].as_array_mut().unwrap() {
        t["status"] = json!("IN_PROGRESS");
        t["started_at"] = json!(NOW);
    }
    std::fs::write(repo.tasks_file(), doc.to_string()).unwrap();
    let status = repo.ok(&["status"]);
    assert!(
        status.contains("T-010") && !status.contains("T-011"),
        "{status}"
    );
    assert!(
        status.contains("… and 50 more: `cairn task list --status IN_PROGRESS"),
        "{status}"
    );
    // The same summary under --json: ten rows and a count, not sixty rows.
    let json = repo.json(&["status"]);
    assert_eq!(json["in_progress"].as_array().unwrap().len(), 10, "{json}");
    assert_eq!(json["in_progress"][9]["id"], "T-010");
    assert_eq!(json["more"]["in_progress"], 50);
    assert_eq!(json["more"]["blocked"], 0);
    assert_eq!(json["counts"]["IN_PROGRESS"], 60);
    let reconciled = repo.ok(&["reconcile"]);
    assert_eq!(reconciled.lines().count(), 51, "{reconciled}");
    assert!(
        last_line(&reconciled).starts_with("… and 10 more (`--json` lists them all"),
        "{reconciled}"
    );
    assert_eq!(
        repo.status_of("T-060"),
        "PENDING",
        "every task was reconciled"
    );
}

/// An import reports one page of what it created and one of what it refused; the rest are
/// counted (an import of 100,000 tasks printed a line for each), and `--json` lists every one.
#[test]
fn an_import_prints_one_page_of_each_section() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("issues.jsonl");
    let lines: Vec<String> = (1..=80)
        .map(|i| {
            // Every fourth issue is in progress but waits on an open one: refused.
            let (status, deps) = if i % 4 == 0 {
                (
                    "in_progress",
                    format!(
                        r#"[{{"issue_id":"bd-{i}","depends_on_id":"bd-{}","type":"blocks"}}]"#,
                        i - 1
                    ),
                )
            } else {
                ("open", "[]".to_owned())
            };
            format!(
                r#"{{"id":"bd-{i}","title":"Issue number {i}","status":"{status}","dependencies":{deps}}}"#
            )
        })
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let repo = Repo::with_project();
    let text = repo.ok(&["import", "beads", path.to_str().unwrap()]);
    assert!(
        text.starts_with("web imported from beads: 80 created, 0 updated, 0 unchanged"),
        "{text}"
    );
    let created = text.lines().filter(|l| l.starts_with("  + ")).count();
    let refused = text.lines().filter(|l| l.contains(": refused: ")).count();
    assert_eq!((created, refused), (50, 20), "{text}");
    assert!(
        text.contains(
            "  … and 30 more created or updated (`--json` lists them all; `cairn log` records each)"
        ),
        "{text}"
    );
    assert!(!text.contains("more left out or refused"), "{text}");
    assert_eq!(repo.status_of("T-080"), "PENDING");

    let again = Repo::with_project();
    let json = again.json(&["import", "beads", path.to_str().unwrap()]);
    assert_eq!(json["created"].as_array().unwrap().len(), 80, "{json}");
    assert_eq!(json["refused"].as_array().unwrap().len(), 20, "{json}");
}

#[test]
fn a_parent_names_twenty_subtasks_and_list_parent_pages_through_them() {
    let repo = Repo::with_project();
    repo.add(&["A big piece of work"]);
    let titles: Vec<String> = (1..=25).map(|i| format!("Subtask number {i}")).collect();
    let mut args = vec!["task", "decompose", "T-001"];
    for t in &titles {
        args.extend(["--into", t.as_str()]);
    }
    repo.ok(&args);
    repo.add(&["Not a child of T-001"]);
    let shown = repo.ok(&["task", "show", "T-001"]);
    assert!(shown.contains("T-021 (PENDING)"), "{shown}");
    assert!(!shown.contains("T-022 (PENDING)"), "{shown}");
    assert!(
        shown.contains("… and 5 more: cairn task list --parent T-001"),
        "{shown}"
    );
    let children = repo.items(&["task", "list", "--parent", "T-001"]);
    assert_eq!(children.len(), 25);
    assert!(children.iter().all(|c| c["parent_id"] == "T-001"));
    repo.fails(&["task", "list", "--parent", "T-099"], code::NOT_FOUND);
}

/// A phase names its first ten open tasks and counts the rest, in `phase list` and in a forced
/// `phase complete`, for people and under `--json` (a phase of 20,000 tasks named them all); the
/// log's PHASE_COMPLETE entry still names every one.
#[test]
fn a_phase_names_its_first_open_tasks_and_counts_the_rest() {
    let repo = Repo::with_project();
    repo.ok(&["phase", "add", "big", "--name", "A big phase"]);
    for i in 1..=15 {
        repo.add(&[&format!("Phase task number {i}"), "--phase", "big"]);
    }
    let list = repo.json(&["phase", "list"]);
    let open = list[0]["open"].as_array().unwrap();
    assert_eq!(open.len(), 10, "{list}");
    assert_eq!((&open[0], &open[9]), (&json!("T-001"), &json!("T-010")));
    assert_eq!(list[0]["more"]["open"], 5, "{list}");
    let table = repo.ok(&["phase", "list"]);
    assert!(table.contains("T-001, T-002, T-003 +12"), "{table}");

    let forced = repo.run(&["--json", "phase", "complete", "big", "--force"]);
    assert_eq!(forced.code, code::OK, "{}", forced.stderr);
    let done: Value = serde_json::from_str(&forced.stdout).unwrap();
    assert_eq!(done["still_open"].as_array().unwrap().len(), 10, "{done}");
    assert_eq!(done["more"]["still_open"], 5, "{done}");
    let entries = repo.items(&["log", "--event", "PHASE_COMPLETE"]);
    let entry = entries.first().expect("PHASE_COMPLETE logged");
    let named = entry["fields"]["still_open"].as_str().unwrap_or_default();
    assert!(
        named.contains("T-001") && named.contains("T-015"),
        "{entry}"
    );

    let other = Repo::with_project();
    other.ok(&["phase", "add", "big", "--name", "A big phase"]);
    for i in 1..=5 {
        other.add(&[&format!("Phase task number {i}"), "--phase", "big"]);
    }
    let text = other.ok(&["phase", "complete", "big", "--force"]);
    assert!(
        text.contains("5 tasks still open: T-001, T-002, T-003 +2")
            && text.contains("`cairn task list --phase big` lists them"),
        "{text}"
    );
}

/// `session start` shows the first ten waves it planned and counts the rest, for people and under
/// `--json` (`total_waves` and `more.waves`); the whole plan is in execution_plan.md. A
/// 100,000-task project planned 8,000 waves and printed them all.
#[test]
fn session_start_shows_its_first_waves_and_counts_the_rest() {
    let repo = with_tasks(12, numbered);
    let text = crate::session::ok(&repo, &["session", "start", "--max-parallel", "1"]);
    let waves = text.lines().filter(|l| l.starts_with("  wave ")).count();
    assert_eq!(waves, 10, "{text}");
    assert!(
        text.contains(
            "  … and 2 more waves (all in .claude/sessions/__live_session__/execution_plan.md)"
        ),
        "{text}"
    );
    let plan = std::fs::read_to_string(
        repo.root()
            .join(".claude/sessions/__live_session__/execution_plan.md"),
    )
    .expect("the plan");
    assert!(plan.contains("T-012"), "{plan}");

    let other = with_tasks(12, numbered);
    let json: Value = serde_json::from_str(&crate::session::ok(
        &other,
        &["--json", "session", "start", "--max-parallel", "1"],
    ))
    .expect("JSON");
    assert_eq!(json["waves"].as_array().unwrap().len(), 10, "{json}");
    assert_eq!(json["more"]["waves"], 2, "{json}");
    assert_eq!(json["total_waves"], 12, "{json}");
}
