//! Round trips of the session files the board and the orchestrator read: progress.md and
//! task_log.md rows (render then parse gives back the model; parse then render is stable).

use std::time::Duration;

use cairn_domain::execution::progress::{
    ActiveTask, CompletedTask, Progress, ProgressStatus, WaveProgress,
};
use cairn_domain::execution::task_log::{Attempts, TaskLog, TaskLogRow, TaskOutcome};
use cairn_storage_fs::execution::{
    parse_progress, parse_row, parse_task_log, render_progress, render_row, render_task_log,
};
use chrono::TimeZone;
use proptest::prelude::*;

/// One-line text as the renderers keep it: trimmed, no line breaks, no em dash (subjects have
/// theirs rewritten to ` - `, so they would not come back identical).
fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(String::new()),
        9 => "[A-Za-z0-9][A-Za-z0-9 ,.:()/#_'|\\\\-]{0,30}[A-Za-z0-9.)]",
    ]
}

/// Lines that look almost like the real thing, to shake the lenient parsers.
fn garbage() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "(\\PC|\\||\u{2014}|\\[|\\]){0,40}",
        Just("## Active Tasks".to_owned()),
        Just("## Completed This Session".to_owned()),
        "[-*] \\[[0-9a-z\\[]{0,3}\\]( |\u{2014}|-|[a-z]|\r){0,12}(PASS|FAIL|PARTIAL|pass)?( \\([0-9]{1,3}[hms]\\))?",
        "(Status|Wave|Max Parallel|Updated|status): ?[ a-zA-Z0-9/:\r-]{0,20}",
        "\\|[ a-z0-9\\\\|\r]{0,10}\\|[ a-z0-9]{0,3}\\|(PASS|FAIL|x)\\|[0-9]/[0-9]\\|[0-9ms ]{0,6}\\|[0-9,NA/]{0,6}\\|?",
    ];
    proptest::collection::vec(line, 0..14).prop_map(|lines| lines.join("\n"))
}

fn phase() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        field(),
        (1u32..5, field()).prop_map(|(n, s)| format!("Phase {n} \u{2014} {s}").trim().to_owned()),
    ]
}

fn id() -> impl Strategy<Value = String> {
    (0u32..10_000).prop_map(|n| n.to_string())
}

fn outcome() -> impl Strategy<Value = TaskOutcome> {
    prop_oneof![
        Just(TaskOutcome::Pass),
        Just(TaskOutcome::Partial),
        Just(TaskOutcome::Fail)
    ]
}

fn status() -> impl Strategy<Value = ProgressStatus> {
    prop_oneof![
        Just(ProgressStatus::Initializing),
        Just(ProgressStatus::Executing),
        Just(ProgressStatus::Complete),
        "[A-Z][a-z]{2,8} [a-z]{1,8}".prop_map(ProgressStatus::Other),
    ]
}

fn progress() -> impl Strategy<Value = Progress> {
    let wave = proptest::option::of(
        (0u32..50, 0u32..50).prop_map(|(current, total)| WaveProgress { current, total }),
    );
    let updated = proptest::option::of(
        (0i64..4_000_000_000).prop_map(|s| chrono::Utc.timestamp_opt(s, 0).unwrap()),
    );
    let active = proptest::collection::vec(
        (id(), field(), phase()).prop_map(|(id, subject, phase)| ActiveTask { id, subject, phase }),
        0..6,
    );
    let completed = proptest::collection::vec(
        (
            id(),
            field(),
            outcome(),
            proptest::option::of(0u64..100_000),
        )
            .prop_map(|(id, subject, result, secs)| CompletedTask {
                id,
                subject,
                result,
                duration: secs.map(Duration::from_secs),
            }),
        0..6,
    );
    (
        status(),
        wave,
        proptest::option::of(0u32..64),
        updated,
        active,
        completed,
    )
        .prop_map(
            |(status, wave, max_parallel, updated, active, completed)| Progress {
                status,
                wave,
                max_parallel,
                updated,
                active,
                completed,
            },
        )
}

fn row() -> impl Strategy<Value = TaskLogRow> {
    (
        id(),
        field(),
        outcome(),
        (1u32..10, 0u32..10),
        proptest::option::of(0u64..1_000_000),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(
            |(task_id, subject, status, (max, less), secs, token_usage)| TaskLogRow {
                task_id,
                subject,
                status,
                attempts: Attempts {
                    used: max.saturating_sub(less).max(1),
                    max,
                },
                duration: secs.map(Duration::from_secs),
                token_usage,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn progress_render_then_parse_is_identity(progress in progress()) {
        let text = render_progress(&progress);
        prop_assert!(!text.contains('\r'));
        prop_assert!(text.starts_with("# Execution Progress\nStatus: "));
        prop_assert_eq!(parse_progress(&text), progress);
    }

    #[test]
    fn progress_lines_keep_the_exact_shapes(progress in progress()) {
        let text = render_progress(&progress);
        for task in &progress.active {
            let line = format!("- [{}] {} \u{2014} {}\n", task.id, task.subject, task.phase);
            prop_assert!(text.contains(&line), "missing {:?} in {}", line, text);
        }
        if let Some(wave) = progress.wave {
            let line = format!("\nWave: {} of {}\n", wave.current, wave.total);
            prop_assert!(text.contains(&line));
        }
    }

    #[test]
    fn task_log_row_render_then_parse_is_identity(row in row()) {
        let line = render_row(&row);
        prop_assert!(line.ends_with(" |\n") && line.matches('\n').count() == 1);
        prop_assert_eq!(parse_row(&line), Some(row));
    }

    #[test]
    fn task_log_render_then_parse_is_identity(rows in proptest::collection::vec(row(), 0..8)) {
        let log = TaskLog { rows };
        prop_assert_eq!(parse_task_log(&render_task_log(&log)), log);
    }

    #[test]
    fn parsers_settle_after_one_rewrite(text in garbage()) {
        let progress = parse_progress(&text);
        prop_assert_eq!(parse_progress(&render_progress(&progress)), progress);
        let log = parse_task_log(&text);
        prop_assert_eq!(parse_task_log(&render_task_log(&log)), log);
    }
}
