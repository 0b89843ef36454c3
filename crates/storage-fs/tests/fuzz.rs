//! Issue #16, fuzzing: every parser of the files cairn reads, fed arbitrary bytes and structured
//! mutations of a valid file (`tests/fuzz_corpus/`, written by the real binary). The property is
//! the same everywhere: the parser never panics, it returns a value or a typed error, and where a
//! renderer exists, what it renders from a parsed value parses back to that same value (so a
//! read-modify-write of a damaged file does not drift further at each write).
//!
//! The stable toolchain has no libFuzzer, so these are proptest runs. `CAIRN_FUZZ_CASES` sets the
//! cases per batch (default small: the normal test run costs seconds); `CAIRN_FUZZ_SECONDS` keeps
//! drawing batches until that many seconds have passed. `cargo xtask fuzz --minutes N` sets both
//! and splits the budget across the targets.

mod fuzzing;

use cairn_domain::plan::PlanId;
use cairn_domain::project::ProjectId;
use cairn_domain::project::store::ProjectStore;
use cairn_domain::tasklist::parse_task;
use cairn_storage_fs::execution::{
    parse_context, parse_lock, parse_progress, parse_session_summary, parse_task_context,
    parse_task_log, render_context, render_lock, render_progress, render_session_summary,
    render_task_context, render_task_log,
};
use cairn_storage_fs::orchestration::{parse_log, render_log};
use cairn_storage_fs::orchestration_store::{parse_session, render_session};
use cairn_storage_fs::plan::{
    next_decision_number, parse_decision_log, parse_pointer, parse_state, peek_state,
    render_decision_log, render_state,
};
use cairn_storage_fs::tasklist::render_task_file;
use cairn_storage_fs::tasklist_store::configured_list_id;
use cairn_storage_fs::{FsProjectStore, intent, progress_log};
use fuzzing::{fuzz, input, text};
use proptest::prelude::*;

const TASKS_JSON: &[u8] = include_bytes!("fuzz_corpus/tasks.json");
const PROJECT_JSON: &[u8] = include_bytes!("fuzz_corpus/project.json");
const LOG_MD: &[u8] = include_bytes!("fuzz_corpus/log.md");
const PROGRESS_MD: &[u8] = include_bytes!("fuzz_corpus/progress.md");
const TASK_LOG_MD: &[u8] = include_bytes!("fuzz_corpus/task_log.md");
const CONTEXT_MD: &[u8] = include_bytes!("fuzz_corpus/execution_context.md");
const TASK_CONTEXT_MD: &[u8] = include_bytes!("fuzz_corpus/context-task.md");
const SUMMARY_MD: &[u8] = include_bytes!("fuzz_corpus/session_summary.md");
const SESSION_LOCK: &[u8] = include_bytes!("fuzz_corpus/session.lock");
const STATE_MD: &[u8] = include_bytes!("fuzz_corpus/state.md");
const DECISIONS_MD: &[u8] = include_bytes!("fuzz_corpus/decisions.md");
const ORCH_SESSION_MD: &[u8] = include_bytes!("fuzz_corpus/orchestration-session.md");
const TASK_LIST_TASK: &[u8] = include_bytes!("fuzz_corpus/task-list-task.json");
const SETTINGS_JSON: &[u8] = include_bytes!("fuzz_corpus/settings.json");

/// A parsed value survives being written and read again unchanged.
fn stable<T: PartialEq + std::fmt::Debug>(
    what: &str,
    parsed: &T,
    again: &T,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(parsed, again, "{} drifts on a render/parse round", what);
    Ok(())
}

// ---- the project store: tasks.json, project.json, progress/log.md (with its replay lines) ----

/// A project written by the real binary, with `file` replaced by `bytes` (or removed with
/// `remove`), then loaded by a fresh store: recovery runs, and must end in a value or an error.
fn load_project_with(file: &str, bytes: &[u8], remove: Option<&str>) -> Result<(), TestCaseError> {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join(".claude/projects/web");
    std::fs::create_dir_all(dir.join("progress")).expect("project dir");
    for (name, content) in [
        ("tasks.json", TASKS_JSON),
        ("project.json", PROJECT_JSON),
        ("progress/log.md", LOG_MD),
    ] {
        std::fs::write(dir.join(name), content).expect("seed file");
    }
    std::fs::write(dir.join(file), bytes).expect("fuzzed file");
    if let Some(gone) = remove {
        std::fs::remove_file(dir.join(gone)).expect("remove");
    }
    let store = FsProjectStore::new(root.path());
    let id: ProjectId = "web".parse().expect("id");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    // Either outcome is fine; a panic is not, and proptest reports one as a failure.
    let _ = runtime.block_on(store.load(&id));
    let _ = runtime.block_on(store.load_project(&id));
    Ok(())
}

#[test]
fn tasks_json() {
    fuzz("tasks.json", input(TASKS_JSON), |bytes| {
        load_project_with("tasks.json", &bytes, None)
    });
}

#[test]
fn project_json() {
    fuzz("project.json", input(PROJECT_JSON), |bytes| {
        load_project_with("project.json", &bytes, None)
    });
}

#[test]
fn progress_log_md() {
    fuzz("progress/log.md", input(LOG_MD), |bytes| {
        let read = progress_log::parse(&text(&bytes));
        for record in &read.records {
            if let Ok(rendered) = progress_log::render(record) {
                let again = progress_log::parse(&rendered);
                stable("a log entry", &vec![record.clone()], &again.records)?;
            }
        }
        Ok(())
    });
}

#[test]
fn progress_log_replay() {
    // tasks.json gone: the store rebuilds it by replaying the fuzzed log's payload lines.
    fuzz("progress/log.md replay", input(LOG_MD), |bytes| {
        load_project_with("progress/log.md", &bytes, Some("tasks.json"))
    });
}

// ---- the execution session's files ----

/// A lenient parser with a renderer: whatever it reads, it writes back to the same value.
fn round_trip<T: PartialEq + std::fmt::Debug>(
    name: &str,
    seed: &'static [u8],
    parse: fn(&str) -> T,
    render: fn(&T) -> String,
) {
    fuzz(name, input(seed), |bytes| {
        let parsed = parse(&text(&bytes));
        stable(name, &parsed, &parse(&render(&parsed)))
    });
}

#[test]
fn progress_md() {
    round_trip("progress.md", PROGRESS_MD, parse_progress, render_progress);
}

#[test]
fn task_log_md() {
    round_trip("task_log.md", TASK_LOG_MD, parse_task_log, render_task_log);
}

#[test]
fn execution_context_md() {
    round_trip(
        "execution_context.md",
        CONTEXT_MD,
        parse_context,
        render_context,
    );
}

#[test]
fn task_context_md() {
    round_trip(
        "context-task-N.md",
        TASK_CONTEXT_MD,
        parse_task_context,
        render_task_context,
    );
}

#[test]
fn session_summary_md() {
    round_trip(
        "session_summary.md",
        SUMMARY_MD,
        parse_session_summary,
        render_session_summary,
    );
}

#[test]
fn session_lock() {
    round_trip(".lock", SESSION_LOCK, parse_lock, render_lock);
}

// ---- plans ----

fn plan_id() -> PlanId {
    PlanId::parse(".plan_2026-03-14_01bf20b8").expect("plan id")
}

#[test]
fn plan_state_md() {
    fuzz("state.md", input(STATE_MD), |bytes| {
        let text = text(&bytes);
        let _ = peek_state(&text);
        if let Ok(plan) = parse_state(&plan_id(), &text) {
            let again = parse_state(&plan_id(), &render_state(&plan));
            prop_assert!(again.is_ok(), "a rendered state.md is refused: {again:?}");
            stable("state.md", &plan, &again.expect("checked"))?;
        }
        Ok(())
    });
}

#[test]
fn plan_decisions_md() {
    fuzz("next decision number", input(DECISIONS_MD), |bytes| {
        let _ = next_decision_number(&text(&bytes));
        Ok(())
    });
    round_trip("decisions.md", DECISIONS_MD, parse_decision_log, |log| {
        render_decision_log(log)
    });
}

#[test]
fn plan_pointer() {
    fuzz(
        ".current_plan",
        input(b".plan_2026-03-14_01bf20b8\n"),
        |bytes| {
            if let Ok(id) = parse_pointer(&text(&bytes)) {
                prop_assert_eq!(
                    parse_pointer(&cairn_storage_fs::plan::render_pointer(&id)),
                    Ok(id)
                );
            }
            Ok(())
        },
    );
}

// ---- orchestration ----

#[test]
fn orchestration_session() {
    fuzz("orchestration session", input(ORCH_SESSION_MD), |bytes| {
        let text = text(&bytes);
        if let Ok(session) = parse_session(&text) {
            let _ = parse_log(&render_log(&session.log));
            if let Ok(rendered) = render_session(&session) {
                let again = parse_session(&rendered);
                prop_assert!(again.is_ok(), "a rendered session is refused: {again:?}");
                stable(
                    "the session front matter",
                    &session.state,
                    &again.expect("checked").state,
                )?;
            }
        }
        Ok(())
    });
}

// ---- Claude Code's files ----

#[test]
fn task_list_json() {
    fuzz("task-list task JSON", input(TASK_LIST_TASK), |bytes| {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            return Ok(());
        };
        if let Some(task) = parse_task(&value, Some("1")).task {
            let rendered: serde_json::Value =
                serde_json::from_str(&render_task_file(&task)).expect("rendered JSON");
            stable(
                "a task file",
                &Some(task),
                &parse_task(&rendered, Some("1")).task,
            )?;
        }
        Ok(())
    });
}

#[test]
fn settings_json_env_block() {
    fuzz(".claude/settings.json env", input(SETTINGS_JSON), |bytes| {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(root.path().join(".claude")).expect("dir");
        std::fs::write(root.path().join(".claude/settings.json"), &bytes).expect("write");
        let _ = configured_list_id(root.path());
        Ok(())
    });
}

// ---- cairn's own write-ahead intents ----

#[test]
fn intent_journal() {
    const INTENT: &[u8] = br#"{"version":1,"writes":[{"path":"__live_session__/task_log.md","text":"| 1 | a |\n"},{"path":"__live_session__/context-task-2.md","text":null}]}"#;
    fuzz(".cairn-journal", input(INTENT), |bytes| {
        if let Ok(writes) = intent::parse(&bytes) {
            stable(
                "an intent",
                &Ok(writes.clone()),
                &intent::parse(&intent::encode(&writes)),
            )?;
        }
        Ok(())
    });
}

#[test]
fn project_moves_record() {
    const MOVES: &[u8] = br#"{"version":1,"moves":[{"project":"demo","task":"T-001","session":"exec-session-20260115-093000","before":"{\"id\":\"T-001\"}","steps":[{"to":"COMPLETE","actual_minutes":3}]}]}"#;
    fuzz(".cairn-project-moves", input(MOVES), |bytes| {
        // Any bytes: a list of moves or a typed refusal, never a panic.
        let _ = cairn_storage_fs::execution_store::parse_project_moves(&String::from_utf8_lossy(
            &bytes,
        ));
        Ok(())
    });
}

/// Fixed inputs, not fuzz targets (`cargo xtask fuzz` gives its budget to the tests outside this
/// module): the corpus itself, and what the fuzzer found, kept as regressions.
mod pinned {
    use super::*;

    #[test]
    fn the_corpus_is_valid() {
        // Mutations of a file the parsers already refuse would test the refusal path only.
        assert!(parse_session(&text(ORCH_SESSION_MD)).is_ok());
        assert!(parse_state(&plan_id(), &text(STATE_MD)).is_ok());
        assert!(!parse_decision_log(&text(DECISIONS_MD)).is_empty());
        assert!(!progress_log::parse(&text(LOG_MD)).records.is_empty());
        assert!(!parse_task_log(&text(TASK_LOG_MD)).rows.is_empty());
        let value: serde_json::Value = serde_json::from_slice(TASK_LIST_TASK).expect("json");
        assert!(parse_task(&value, None).task.is_some());
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(root.path().join(".claude")).expect("dir");
        std::fs::write(root.path().join(".claude/settings.json"), SETTINGS_JSON).expect("write");
        assert_eq!(configured_list_id(root.path()).as_deref(), Some("web"));
    }

    /// A bare `Earlier tasks (compacted)` line under Task History was an entry of that title, which
    /// renders as the compacted block's heading: the next read folded it into a different value.
    #[test]
    fn a_bare_compacted_heading_line_reads_as_the_compacted_block() {
        let text = "# Execution Context\n\n## Task History\n Earlier tasks (compacted)\n- Task [1]: Scaffold\n### Task [2]: Auth - PASS\n- a\n";
        let parsed = parse_context(text);
        assert_eq!(parsed.compacted_history, ["Task [1]: Scaffold"]);
        assert_eq!(parsed, parse_context(&render_context(&parsed)));
    }

    /// A loose line of a task's report that reads as a heading once trimmed (`\r## Key Decisions`)
    /// was written back trimmed, and the next read took it for a heading: the report changed shape.
    #[test]
    fn a_loose_line_that_looks_like_a_heading_stays_loose() {
        let text = "Uses barrel exports\n\r## Key Decisions\n  ### not history\n\n# Execution Context\n\n## Known Issues\n- flaky\n";
        let parsed = parse_task_context(text);
        assert_eq!(parsed.loose.len(), 3, "{parsed:?}");
        assert!(parsed.context.key_decisions.is_empty(), "{parsed:?}");
        assert_eq!(parsed, parse_task_context(&render_task_context(&parsed)));
    }

    /// A hand-written name with a stray backtick (`- Files added: 0/3` max`) was read as is and
    /// written back between backticks, which reads as another name: now it is refused, naming
    /// the line, as the domain refuses such a name. A fix attempt's step with one is skipped.
    #[test]
    fn a_stray_backtick_in_a_state_md_name_is_refused_not_changed() {
        let state = text(STATE_MD);
        for (section, item) in [
            (
                "## New Abstractions (current iteration)\n",
                "- Files added: 0/3` max\n",
            ),
            (
                "## Failure Strikes (3 in one area force RE-PLAN)\n",
                "- auth`z: 2\n",
            ),
        ] {
            let broken = state.replacen(section, &format!("{section}{item}"), 1);
            let refused = parse_state(&plan_id(), &broken).expect_err("refused");
            assert!(refused.to_string().contains("stray backtick"), "{refused}");
        }
        let attempt = state.replacen(
            "- (none yet)\n",
            "- Step 1`a, attempt 1: x\n- Step 2, attempt 1: y\n",
            1,
        );
        let plan = parse_state(&plan_id(), &attempt).expect("read");
        assert_eq!(plan.fix_attempts().len(), 1, "{plan:?}");
        assert_eq!(parse_state(&plan_id(), &render_state(&plan)), Ok(plan));
    }
}
