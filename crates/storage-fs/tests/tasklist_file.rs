//! A Claude Code task file as cairn writes it: Claude Code's own layout, read back unchanged.

use cairn_domain::tasklist::parse_task;
use cairn_storage_fs::tasklist::render_task_file;
use serde_json::{Value, json};

#[test]
fn a_task_file_has_claude_codes_layout_and_reads_back() {
    let value = json!({
        "id": "1", "subject": "Implement user authentication middleware",
        "description": "Add JWT-based auth middleware", "activeForm": "", "status": "pending",
        "blocks": ["3", "4"], "blockedBy": [], "metadata": {"task_group": "user-auth"},
        "x-custom": {"deep": [1, 2]}
    });
    let task = parse_task(&value, None).task.unwrap();
    let text = render_task_file(&task);
    assert!(text.starts_with("{\n  \"id\": \"1\",\n"), "{text}");
    assert!(text.ends_with("\n}\n"), "{text}");
    let read: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(read, value);
    assert_eq!(parse_task(&read, None).task, Some(task));
}
