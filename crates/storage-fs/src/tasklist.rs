//! The text of a Claude Code task file (`~/.claude/tasks/{listId}/{id}.json`): the JSON of
//! [`ClaudeTask`] with a 2-space indent and a trailing newline, as Claude Code writes it, so a
//! file cairn rewrites differs from the original only where a value changed.

use cairn_domain::tasklist::ClaudeTask;

pub fn render_task_file(task: &ClaudeTask) -> String {
    let mut text = serde_json::to_string_pretty(task).expect("a task is always serializable");
    text.push('\n');
    text
}
