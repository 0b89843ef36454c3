//! Values tests build task lists from (feature `testkit`): one copy for the domain's own tests
//! and the adapters'.

use super::model::{Task, TaskDoc};

/// `T-<n>`, PENDING, MEDIUM, titled `title`, with no links: the plainest valid task.
pub fn pending_task(n: u64, title: &str) -> Task {
    serde_json::from_value(serde_json::json!({
        "id": format!("T-{n:03}"),
        "title": title,
        "level": "task",
        "status": "PENDING",
        "priority": "MEDIUM",
        "dependencies": [],
        "completion_criteria": [],
        "created_at": "2026-11-22T00:00:00Z"
    }))
    .unwrap_or_else(|e| panic!("a plain task is valid: {e}"))
}

/// The task list of project `demo` holding `tasks`.
pub fn doc_of(tasks: Vec<Task>) -> TaskDoc {
    TaskDoc {
        tasks: tasks.into(),
        ..TaskDoc::new(
            "demo"
                .to_owned()
                .try_into()
                .unwrap_or_else(|e| panic!("a valid project id: {e}")),
        )
    }
}
