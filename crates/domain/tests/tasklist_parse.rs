//! The defensive task-file parser against the odd files found in real task directories.

use cairn_domain::tasklist::{ClaudeTaskStatus, TaskFileWarning, parse_task};
use serde_json::json;

#[test]
fn numeric_id_becomes_a_string() {
    let parsed = parse_task(&json!({"id": 7, "subject": "x"}), None);
    let task = parsed.task.unwrap();
    assert_eq!(task.id, "7");
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    assert_eq!(serde_json::to_value(&task).unwrap()["id"], json!("7"));
}

#[test]
fn missing_id_falls_back_to_the_file_name_or_skips() {
    assert_eq!(
        parse_task(&json!({"subject": "x"}), Some("12"))
            .task
            .unwrap()
            .id,
        "12"
    );
    assert_eq!(
        parse_task(&json!({"id": "  ", "subject": "x"}), Some("3"))
            .task
            .unwrap()
            .id,
        "3"
    );
    let parsed = parse_task(&json!({"subject": "x"}), None);
    assert_eq!(
        (parsed.task, parsed.warnings),
        (None, vec![TaskFileWarning::MissingId])
    );
}

#[test]
fn unknown_or_odd_status_reads_as_pending_with_a_warning() {
    for status in [
        json!("done"),
        json!("IN_PROGRESS"),
        json!(3),
        json!({"s": 1}),
    ] {
        let parsed = parse_task(&json!({"id": "1", "subject": "x", "status": status}), None);
        assert_eq!(
            parsed.task.unwrap().status,
            ClaudeTaskStatus::Pending,
            "{status}"
        );
        assert!(
            matches!(
                parsed.warnings.as_slice(),
                [TaskFileWarning::UnknownStatus { .. }]
            ),
            "{status}: {:?}",
            parsed.warnings
        );
    }
    let parsed = parse_task(&json!({"id": "1", "subject": "x", "status": null}), None);
    assert!(parsed.warnings.is_empty());
    assert_eq!(
        parse_task(
            &json!({"id": "1", "subject": "x", "status": "in_progress"}),
            None
        )
        .task
        .unwrap()
        .status,
        ClaudeTaskStatus::InProgress
    );
}

#[test]
fn array_items_become_strings() {
    let parsed = parse_task(
        &json!({"id": "1", "subject": "x", "blocks": [2, "3", null, true, {"a": 1}], "blockedBy": "4"}),
        None,
    );
    let task = parsed.task.unwrap();
    assert_eq!(task.blocks, ["2", "3", "true", "{\"a\":1}"]);
    assert!(task.blocked_by.is_empty());
    let fields: Vec<_> = parsed
        .warnings
        .iter()
        .map(|w| match w {
            TaskFileWarning::Coerced { field, .. } => *field,
            other => panic!("unexpected warning {other}"),
        })
        .collect();
    assert_eq!(fields, ["blocks", "blockedBy"]);
}

#[test]
fn missing_description_and_active_form_are_empty_and_written_back() {
    let task = parse_task(&json!({"id": "1", "subject": "x"}), None)
        .task
        .unwrap();
    assert_eq!(
        (task.description.as_str(), task.active_form.as_str()),
        ("", "")
    );
    let written = serde_json::to_value(&task).unwrap();
    assert_eq!(
        written["activeForm"],
        json!(""),
        "activeForm is always written"
    );
    assert_eq!(written["description"], json!(""));
    assert!(written.get("owner").is_none() && written.get("metadata").is_none());
}

#[test]
fn subject_rules() {
    for bad in [
        json!({"id": "5"}),
        json!({"id": "5", "subject": null}),
        json!({"id": "5", "subject": ["a"]}),
    ] {
        let parsed = parse_task(&bad, None);
        assert!(parsed.task.is_none(), "{bad}");
        assert_eq!(
            parsed.warnings,
            [TaskFileWarning::MissingSubject { id: "5".into() }]
        );
        assert!(
            parsed.warnings[0]
                .to_string()
                .contains("task 5 has no subject")
        );
    }
    let parsed = parse_task(&json!({"id": "5", "subject": 42}), None);
    assert_eq!(parsed.task.unwrap().subject, "42");
    assert_eq!(parsed.warnings.len(), 1);
    assert_eq!(
        parse_task(&json!({"id": "5", "subject": ""}), None)
            .task
            .unwrap()
            .subject,
        ""
    );
}

#[test]
fn not_an_object_is_skipped() {
    for value in [json!([]), json!("task"), json!(null), json!(1)] {
        assert_eq!(
            parse_task(&value, Some("1")).warnings,
            [TaskFileWarning::NotAnObject],
            "{value}"
        );
    }
}

#[test]
fn unknown_fields_survive_a_rewrite_in_order() {
    let value = json!({
        "id": "9", "subject": "s", "x-custom": {"deep": [1, 2]}, "description": "d", "activeForm": "Doing s",
        "status": "completed", "blocks": [], "blockedBy": ["8"], "owner": "agent-1", "metadata": {"task_group": "g"},
        "zzz": 1
    });
    let parsed = parse_task(&value, None);
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let task = parsed.task.unwrap();
    assert_eq!(task.owner.as_deref(), Some("agent-1"));
    let written = serde_json::to_value(&task).unwrap();
    assert_eq!(written, value);
    let keys: Vec<_> = written
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "subject",
            "description",
            "activeForm",
            "status",
            "blocks",
            "blockedBy",
            "owner",
            "metadata",
            "x-custom",
            "zzz"
        ]
    );
    assert_eq!(parse_task(&written, None).task.unwrap(), task);
}

#[test]
fn wrongly_typed_owner_and_metadata_are_dropped_with_warnings() {
    let parsed = parse_task(
        &json!({"id": "1", "subject": "x", "owner": 5, "metadata": "nope", "description": 3}),
        None,
    );
    let task = parsed.task.unwrap();
    assert_eq!(
        (task.owner, task.metadata, task.description.as_str()),
        (None, None, "3")
    );
    assert_eq!(parsed.warnings.len(), 3);
}
