//! An import in a short process — one that leaves dropped task lists to its end
//! (`forget_lists_when_dropped`) — must not drop list after list: when it tried each status move
//! on a copy of the list, a first import of 10,000 tasks from another tool grew to 24 GB before
//! the kernel killed it. Measured by the resident memory of this test binary, a binary of its
//! own: the switch is process-wide.
#![cfg(target_os = "linux")]

use cairn_domain::project::fixtures::doc_of;
use cairn_domain::project::import::{Incoming, IncomingTask, apply};
use cairn_domain::project::{ProjectState, TaskStatus, forget_lists_when_dropped};

fn resident_mb() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .expect("resident")
        .parse()
        .expect("pages");
    pages * 4096.0 / 1e6
}

#[test]
fn a_first_import_whose_tasks_all_move_keeps_its_memory() {
    forget_lists_when_dropped();
    let project = serde_json::from_value(serde_json::json!({
        "id": "demo", "name": "Demo", "goal": "import a thousand tasks", "type": "software",
        "status": "IN_PROGRESS", "phases": [],
        "created_at": "2026-11-22T00:00:00Z", "updated_at": "2026-11-22T00:00:00Z"
    }))
    .expect("a project");
    let mut state = ProjectState {
        project,
        tasks: doc_of(Vec::new()),
    };
    // Each one moves PENDING → IN_PROGRESS → COMPLETE: 1,000 moves over a list of up to 1,000
    // tasks, half a megabyte each to copy — 500 MB kept if each move were tried on a copy.
    let title = "a task whose title weighs in a copy of the list ".repeat(4);
    let tasks = (1..=1_000)
        .map(|n| IncomingTask::new(format!("bd-{n}"), title.clone(), TaskStatus::Complete))
        .collect();
    let incoming = Incoming::Foreign {
        source: "beads".to_owned(),
        tasks,
    };
    let before = resident_mb();
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-22T10:00:00Z")
        .expect("a time")
        .with_timezone(&chrono::Utc);
    let (_, report) = apply(&mut state, &incoming, at, &mut |_, _| {}).expect("applies");
    let grew = resident_mb() - before;
    assert_eq!(report.created.len(), 1_000);
    assert!(
        state
            .tasks
            .tasks
            .iter()
            .all(|t| t.status == TaskStatus::Complete),
        "every task moved"
    );
    assert!(grew < 100.0, "the import grew {grew:.0} MB");
}
