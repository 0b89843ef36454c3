//! The exact text of an execution session's files: the seed examples byte for byte, lenient
//! reading, escaping, and the per-task reports merged into the shared context.

use std::collections::BTreeMap;
use std::time::Duration;

use cairn_domain::execution::context::{
    ExecutionContext, HISTORY_KEEP, LIST_SECTIONS, OtherSection, TaskContext,
};
use cairn_domain::execution::lock::{LockDecision, LockFile, decide_lock};
use cairn_domain::execution::progress::{ActiveTask, Progress, ProgressStatus, WaveProgress};
use cairn_domain::execution::state::SessionSummary;
use cairn_domain::execution::task_log::{Attempts, TaskLog, TaskLogRow, TaskOutcome};
use cairn_domain::time::Timestamp;
use cairn_storage_fs::execution::{
    parse_context, parse_lock, parse_progress, parse_row, parse_session_summary,
    parse_task_context, parse_task_log, render_context, render_lock, render_progress, render_row,
    render_session_summary, render_task_context, render_task_log,
};
use chrono::TimeZone;

fn at(h: u32, m: u32) -> Timestamp {
    chrono::Utc.with_ymd_and_hms(2026, 2, 5, h, m, 0).unwrap()
}

fn row(id: &str, status: TaskOutcome, secs: u64) -> TaskLogRow {
    TaskLogRow {
        task_id: id.into(),
        subject: format!("Task {id}"),
        status,
        attempts: Attempts { used: 1, max: 3 },
        duration: Some(Duration::from_secs(secs)),
        token_usage: None,
    }
}

#[test]
fn renders_the_seed_shape_and_parses_it_back() {
    let lock = LockFile::new("user-auth-20260205-143022", at(14, 30));
    assert_eq!(
        render_lock(&lock),
        "task_execution_id: user-auth-20260205-143022\ntimestamp: 2026-02-05T14:30:00Z\npid: orchestrator\n"
    );
    assert_eq!(parse_lock(&render_lock(&lock)), lock);
}

#[test]
fn parse_is_lenient() {
    let lock = parse_lock("\r\npid: 4242\r\nnoise\r\ntimestamp:  2026-02-05T16:30:00+02:00 \r\n");
    assert_eq!(lock.task_execution_id, "");
    assert_eq!(lock.pid, "4242");
    assert_eq!(lock.timestamp, Some(at(14, 30)));
    assert_eq!(parse_lock("timestamp: yesterday").timestamp, None);
}

const PROGRESS_SEED: &str = "# Execution Progress
Status: Executing
Wave: 2 of 4
Max Parallel: 5
Updated: 2026-02-05T14:35:22Z

## Active Tasks
- [5] Add input validation \u{2014} Phase 2 \u{2014} Implementing
- [6] Create error handler \u{2014} Phase 3 \u{2014} Verifying

## Completed This Session
- [1] Implement auth middleware \u{2014} PASS (2m 34s)
- [2] Add rate limiting \u{2014} PASS (3m 12s)
- [3] Create user endpoints \u{2014} PASS (4m 5s)
- [4] Set up database schema \u{2014} PASS (1m 48s)
";

#[test]
fn the_seed_example_parses_and_renders_back_byte_for_byte() {
    let progress = parse_progress(PROGRESS_SEED);
    assert_eq!(progress.status, ProgressStatus::Executing);
    assert_eq!(
        progress.wave,
        Some(WaveProgress {
            current: 2,
            total: 4
        })
    );
    assert_eq!(progress.max_parallel, Some(5));
    assert_eq!(
        progress.updated,
        Some(
            chrono::Utc
                .with_ymd_and_hms(2026, 2, 5, 14, 35, 22)
                .unwrap()
        )
    );
    assert_eq!(progress.active[0].phase, "Phase 2 \u{2014} Implementing");
    assert_eq!(
        progress.completed[2].duration,
        Some(Duration::from_secs(245))
    );
    assert_eq!(render_progress(&progress), PROGRESS_SEED);
}

#[test]
fn tolerates_crlf_missing_lines_and_ascii_dashes() {
    let text = "# Execution Progress\r\nstatus: complete\r\nWave: 3/3\r\n\r\n## Completed This Session\r\n- [9] A - B - FAIL\r\n- [10] weird - SKIPPED\r\n- not an item\r\n";
    let progress = parse_progress(text);
    assert_eq!(progress.status, ProgressStatus::Complete);
    assert_eq!(
        progress.wave,
        Some(WaveProgress {
            current: 3,
            total: 3
        })
    );
    assert_eq!(progress.max_parallel, None);
    assert_eq!(progress.completed.len(), 1);
    assert_eq!(progress.completed[0].subject, "A - B");
    assert_eq!(progress.completed[0].result, TaskOutcome::Fail);
    assert_eq!(progress.completed[0].duration, None);
    assert!(!render_progress(&progress).contains('\r'));
}

#[test]
fn subjects_cannot_smuggle_separators_or_lines() {
    let mut progress = Progress::initial(
        1,
        1,
        chrono::Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
    );
    progress.active.push(ActiveTask {
        id: "7".into(),
        subject: "a \u{2014} b\nc".into(),
        phase: "Phase 1".into(),
    });
    let back = parse_progress(&render_progress(&progress));
    assert_eq!(back.active[0].subject, "a - b c");
    assert_eq!(back.active[0].phase, "Phase 1");
}

const TASK_LOG_SEED: &str = "# Task Execution Log

| Task ID | Subject | Status | Attempts | Duration | Token Usage |
|---------|---------|--------|----------|----------|-------------|
| 1 | Implement auth middleware | PASS | 1/3 | 2m 34s | N/A |
| 2 | Add rate limiting | PARTIAL | 2/3 | 5m 12s | N/A |
| 3 | Create user endpoints | FAIL | 3/3 | 8m 45s | N/A |
";

#[test]
fn the_seed_log_round_trips() {
    let log = parse_task_log(TASK_LOG_SEED);
    assert_eq!(log.rows.len(), 3);
    assert_eq!(log.rows[1].status, TaskOutcome::Partial);
    assert_eq!(log.rows[1].attempts, Attempts { used: 2, max: 3 });
    assert_eq!(log.rows[2].duration, Some(Duration::from_secs(525)));
    assert_eq!(render_task_log(&log), TASK_LOG_SEED);
}

#[test]
fn pipes_in_subjects_are_escaped() {
    let row = TaskLogRow {
        task_id: "4".into(),
        subject: "a|b \\| c\\".into(),
        status: TaskOutcome::Pass,
        attempts: Attempts { used: 1, max: 3 },
        duration: None,
        token_usage: Some(12_345),
    };
    assert_eq!(
        render_row(&row),
        "| 4 | a\\|b \\\\| c\\ | PASS | 1/3 | N/A | 12345 |\n"
    );
    assert_eq!(parse_row(&render_row(&row)), Some(row));
}

#[test]
fn odd_lines_are_skipped_not_fatal() {
    assert_eq!(parse_row("| 1 | x | MAYBE | 1/3 | 1s | N/A |"), None);
    assert_eq!(parse_row("| 1 | x | PASS | one | 1s | N/A |"), None);
    assert_eq!(parse_row("| 1 | x | PASS | 1/3 | 1s |"), None);
    assert_eq!(parse_row("prose"), None);
    let row = parse_row("|7|y|pass|1/1|soon|1,024").unwrap();
    assert_eq!((row.duration, row.token_usage), (None, Some(1024)));
}

const CONTEXT_SEED: &str = "# Execution Context

## Project Patterns
- TypeScript strict mode throughout
- Barrel exports in each module directory
- Error handling at service boundaries only

## Key Decisions
- Chose Zod over io-ts for runtime validation
- API routes use middleware chain pattern

## Known Issues
- Test runner requires Node 18+ for fetch support

## File Map
- src/lib/auth.ts \u{2014} JWT verification and token refresh
- src/middleware.ts \u{2014} Express middleware chain

## Task History
### Task [1]: Implement auth middleware - PASS
- Files modified: src/middleware.ts, src/lib/auth.ts
- Key learnings: Project uses barrel exports, middleware chain pattern
- Issues encountered: None
";

#[test]
fn the_seed_parses_and_renders_back_byte_for_byte() {
    let context = parse_context(CONTEXT_SEED);
    assert_eq!(context.project_patterns.len(), 3);
    assert_eq!(context.task_history[0].task_id, "1");
    assert_eq!(
        context.task_history[0].title,
        "Implement auth middleware - PASS"
    );
    assert_eq!(context.task_history[0].body.len(), 3);
    assert_eq!(render_context(&context), CONTEXT_SEED);
}

#[test]
fn the_template_has_five_empty_sections_and_round_trips() {
    let text = render_context(&ExecutionContext::template());
    for heading in LIST_SECTIONS.iter().chain([&"Task History"]) {
        assert!(text.contains(&format!("## {heading}\n")), "{text}");
    }
    assert_eq!(parse_context(&text), ExecutionContext::template());
}

#[test]
fn wave_merge_dedupes_bullets_orders_history_by_id_and_is_idempotent() {
    let mut shared = parse_context(CONTEXT_SEED);
    let per_task: BTreeMap<String, TaskContext> = BTreeMap::from([
        (
            "10".to_owned(),
            parse_task_context(
                "## Project Patterns\n- typescript strict mode   throughout.\n- Uses pnpm\n\n## Task History\n### Task [10]: Late - PASS\n- Files modified: a.ts\n",
            ),
        ),
        (
            "2".to_owned(),
            parse_task_context("- learned something\n* and something else\n"),
        ),
    ]);
    assert_eq!(shared.merge_wave(&per_task), vec!["2", "10"]);
    assert_eq!(shared.project_patterns.len(), 4);
    assert_eq!(shared.project_patterns[3], "Uses pnpm");
    let ids: Vec<_> = shared
        .task_history
        .iter()
        .map(|e| e.task_id.as_str())
        .collect();
    assert_eq!(ids, ["1", "2", "10"]);
    assert_eq!(
        shared.task_history[1].body,
        ["- learned something", "* and something else"]
    );
    let once = shared.clone();
    shared.merge_wave(&per_task);
    assert_eq!(shared, once);
    assert_eq!(parse_context(&render_context(&shared)), shared);
}

#[test]
fn history_past_ten_entries_is_folded_into_one_liners() {
    let mut context = ExecutionContext::template();
    for id in 1..=12 {
        context.merge_task_context(
            &id.to_string(),
            &parse_task_context(&format!(
                "### Task [{id}]: Step {id} - PASS\n- detail {id}\n"
            )),
        );
    }
    context.compact_history();
    assert_eq!(context.task_history.len(), HISTORY_KEEP);
    assert_eq!(context.task_history[0].task_id, "3");
    assert_eq!(
        context.compacted_history,
        ["Task [1]: Step 1 - PASS", "Task [2]: Step 2 - PASS"]
    );
    let text = render_context(&context);
    assert!(
        text.contains(
            "## Task History\n### Earlier tasks (compacted)\n- Task [1]: Step 1 - PASS\n"
        ),
        "{text}"
    );
    assert!(!text.contains("detail 1\n"));
    assert_eq!(parse_context(&text), context);
}

#[test]
fn inheritance_takes_the_four_sections_but_not_history() {
    let archived = parse_context(CONTEXT_SEED);
    let mut fresh = ExecutionContext::template();
    fresh
        .known_issues
        .push("TEST RUNNER requires Node 18+ for fetch support.".into());
    fresh.inherit_from(&archived);
    assert_eq!(fresh.project_patterns, archived.project_patterns);
    assert_eq!(fresh.known_issues.len(), 1);
    assert_eq!(fresh.file_map.len(), 2);
    assert!(fresh.task_history.is_empty());
}

#[test]
fn unknown_sections_and_continuations_survive() {
    let text = "# Execution Context\n\n## Project Patterns\n- one\n  continued\nplain line\n\n## Notes\nkeep me\n\n## Task History\n";
    let context = parse_context(text);
    assert_eq!(context.project_patterns, ["one\n  continued", "plain line"]);
    assert_eq!(
        context.other_sections,
        [OtherSection {
            heading: "Notes".into(),
            lines: vec!["keep me".into()]
        }]
    );
    assert_eq!(parse_context(&render_context(&context)), context);
}

#[test]
fn summary_counts_latest_rows() {
    let log = TaskLog {
        rows: vec![
            row("1", TaskOutcome::Fail, 60),
            row("1", TaskOutcome::Pass, 94),
            row("2", TaskOutcome::Partial, 300),
        ],
    };
    let start = chrono::Utc
        .with_ymd_and_hms(2026, 2, 5, 14, 30, 22)
        .unwrap();
    let summary = SessionSummary::new(
        "s-1",
        Some(start),
        start + chrono::TimeDelta::seconds(1908),
        Some(WaveProgress {
            current: 2,
            total: 2,
        }),
        &log,
    );
    let text = render_session_summary(&summary);
    assert!(
        text.starts_with(
            "# Execution Session Summary\n\nSession: s-1\nStarted: 2026-02-05T14:30:22Z\n"
        ),
        "{text}"
    );
    assert!(text.contains("Elapsed: 31m 48s\nWaves: 2 of 2\n"), "{text}");
    assert!(
        text.contains("- Tasks: 2\n- PASS: 1\n- PARTIAL: 1\n- FAIL: 0\n- Task time: 6m 34s\n"),
        "{text}"
    );
    assert!(text.contains("## Tasks\n| Task ID |"), "{text}");
    assert_eq!(parse_task_log(&text).rows.len(), 2);
    assert_eq!(
        parse_session_summary(&text),
        summary,
        "a summary reads back as written"
    );
}

#[test]
fn an_unreadable_lock_counts_as_live() {
    let unreadable = parse_lock("task_execution_id: x\ntimestamp: garbage\n");
    assert!(matches!(
        decide_lock(Some(&unreadable), at(23, 0), false),
        LockDecision::Refuse { age: None, .. }
    ));
}

#[test]
fn a_task_report_reads_back_as_written() {
    for text in [
        "- learned something\n* and something else\n",
        "## Key Decisions\n- Chose Zod\n",
        "- loose\n\n## Known Issues\n- flaky\n\n## Task History\n### Task [3]: x - PASS\n- a\n",
    ] {
        let report = parse_task_context(text);
        assert_eq!(
            parse_task_context(&render_task_context(&report)),
            report,
            "{text:?}"
        );
    }
    let report = TaskContext::from_lines(["- Uses pnpm"]);
    assert_eq!(
        render_task_context(&report).lines().next(),
        Some("- Uses pnpm")
    );
    assert_eq!(parse_task_context(&render_task_context(&report)), report);
}
