//! The Markdown log of orchestration sessions: the seed's section format, the title, the
//! separation of entries, and logs read back from files cairn did not write.

use cairn_domain::orchestration::*;
use cairn_domain::time::Timestamp;
use cairn_storage_fs::orchestration::{parse_log, render_log, render_phase_section, status_glyph};
use chrono::{TimeZone, Utc};

fn at(hour: u32, minute: u32) -> Timestamp {
    Utc.with_ymd_and_hms(2026, 3, 14, hour, minute, 0)
        .single()
        .expect("valid")
}

fn phase(name: &str) -> NewPhase {
    NewPhase {
        id: None,
        files: Vec::new(),
        name: name.into(),
        agents: vec!["coder".into()],
        parallel: false,
        blocked_by: Vec::new(),
    }
}

fn session() -> Session {
    let spec = NewSession {
        id: None,
        topic: "Auth Rewrite".into(),
        task: "Rewrite the auth layer".into(),
        workflow_mode: WorkflowMode::Standard,
        design_document: None,
        implementation_plan: None,
        execution_mode: None,
        execution_backend: None,
        task_complexity: None,
        phases: vec![phase("Schema"), phase("API"), phase("Docs")],
    };
    Session::new(spec, at(9, 0)).expect("valid spec")
}

fn user(reason: &str) -> UserDecision {
    UserDecision::by_user(reason).expect("non-blank reason")
}

#[test]
fn a_new_log_is_its_title() {
    assert_eq!(
        render_log(&session().log),
        "# Auth Rewrite Orchestration Log\n"
    );
}

// ---- rendering ----------------------------------------------------------------------------

#[test]
fn phase_section_follows_the_seed_format() {
    let mut s = session();
    s.start_phase(1, &[], at(9, 1)).expect("start");
    s.record_files(
        1,
        &FileChanges {
            created: vec!["a.rs".into(), "b.rs".into()],
            ..Default::default()
        },
        at(9, 2),
    )
    .expect("files");
    s.record_downstream(
        1,
        &DownstreamContext {
            assumptions: vec!["UTC everywhere".into()],
            ..Default::default()
        },
        at(9, 2),
    )
    .expect("context");
    s.complete_phase(1, at(9, 3)).expect("complete");
    let report = PhaseReport {
        notes: vec![],
        outputs: vec![AgentOutput {
            agent: "coder".into(),
            summary: "Wrote the schema.\n\nAll good.".into(),
        }],
        validation: Some("Pass: cargo test".into()),
    };
    let expected = "## Phase 1: Schema \u{2705}\n\
        \n### coder Output\nWrote the schema.\n\nAll good.\n\
        \n### Files Changed\n- Created:\n  - a.rs\n  - b.rs\n- Modified: none\n\
        \n### Downstream Context\n- Key Interfaces Introduced: none\n- Patterns Established: none\n\
        - Integration Points: none\n- Assumptions: UTC everywhere\n- Warnings: none\n\
        \n### Validation Result\nPass: cargo test\n";
    assert_eq!(
        render_phase_section(s.phase(1).expect("phase"), &report),
        expected
    );
    let glyphs: Vec<&str> = PhaseStatus::ALL
        .iter()
        .map(|&st| status_glyph(st))
        .collect();
    assert_eq!(
        glyphs,
        ["\u{2610}", "\u{25EF}", "\u{2705}", "\u{274C}", "\u{2796}"]
    );
}

#[test]
fn log_entries_are_separated_by_one_blank_line() {
    let mut s = session();
    s.append_log(LogEntry::Text("\n\n## A\n".into()), at(9, 1));
    s.append_log(LogEntry::Text("## B".into()), at(9, 2));
    s.append_log(LogEntry::Text("\n".into()), at(9, 3));
    assert_eq!(
        render_log(&s.log),
        "# Auth Rewrite Orchestration Log\n\n## A\n\n## B\n"
    );
}

#[test]
fn a_skipped_phase_is_its_heading_and_the_users_reason() {
    let mut s = session();
    s.skip_phase(3, &user("docs\nlater"), at(9, 3))
        .expect("skip");
    let text = render_log(&s.log);
    assert!(
        text.contains("## Phase 3: Docs \u{2796}\n\nSkipped by user decision: docs later\n"),
        "{text}"
    );
}

#[test]
fn archiving_unfinished_work_notes_the_users_decision() {
    let mut s = session();
    s.prepare_archive(Some(&user("abandoned")), at(10, 0))
        .expect("with a decision");
    let text = render_log(&s.log);
    assert!(
        text.ends_with("\n\n## Archived with unfinished phases\n\nBy user decision: abandoned\n"),
        "{text}"
    );
}

#[test]
fn a_log_read_back_is_kept_byte_for_byte_and_appended_to() {
    for text in [
        "",
        "# Auth Rewrite Orchestration Log\n",
        "\n\nwritten by hand\n\n\n",
        "no trailing newline",
        "# Log\r\n\r\n## Phase 1: Schema \u{2705}\r\n",
    ] {
        assert_eq!(render_log(&parse_log(text)), text, "{text:?}");
    }
    let mut log = parse_log("# Another tool's log\n\n\n");
    log.push(LogEntry::ArchivedUnfinished {
        reason: "abandoned".into(),
    });
    assert_eq!(
        render_log(&log),
        "# Another tool's log\n\n## Archived with unfinished phases\n\nBy user decision: abandoned\n"
    );
}
