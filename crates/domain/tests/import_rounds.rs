//! An import moves statuses in rounds until a round moves nothing, so that a task listed before
//! the dependency it waits on still gets where the other tool has it. It skips retrying a refusal
//! that cannot have changed (only a wait on dependencies can, once one of them moves); whether
//! it skipped one it should have tried is checked here without restating the rules: importing
//! the same file again into the result must move nothing. Were a move possible then, the first
//! import stopped before its rounds were done.

use cairn_domain::project::fixtures::{doc_of, pending_task};
use cairn_domain::project::import::{Incoming, IncomingTask, apply};
use cairn_domain::project::{ProjectEvent, ProjectState, TaskStatus};
use proptest::prelude::*;

use TaskStatus::*;

const STATUSES: [TaskStatus; 8] = [
    Pending, InResearch, Researched, InProgress, Validating, Complete, Blocked, Cancelled,
];

fn state() -> ProjectState {
    let project = serde_json::from_value(serde_json::json!({
        "id": "demo", "name": "Demo", "goal": "import tasks in rounds", "type": "software",
        "status": "IN_PROGRESS", "phases": [],
        "created_at": "2026-11-22T00:00:00Z", "updated_at": "2026-11-22T00:00:00Z"
    }))
    .expect("a project");
    ProjectState {
        project,
        tasks: doc_of(Vec::new()),
    }
}

/// Up to 14 tasks of another tool: a status each, dependencies on any of them (forwards,
/// backwards, cycles, themselves) or on an id the file lacks, and parents among earlier ones.
fn incoming() -> impl Strategy<Value = Vec<IncomingTask>> {
    (1usize..14).prop_flat_map(|n| {
        proptest::collection::vec(
            (
                0..STATUSES.len(),
                proptest::collection::vec(0..n + 1, 0..4),
                proptest::option::weighted(0.2, 0..n),
            ),
            n,
        )
        .prop_map(|specs| {
            specs
                .into_iter()
                .enumerate()
                .map(|(i, (status, deps, parent))| {
                    let mut t = IncomingTask::new(
                        format!("k{i}"),
                        format!("task number {i}"),
                        STATUSES[status],
                    );
                    t.dependencies = deps.into_iter().map(|d| format!("k{d}")).collect();
                    t.parent = parent.filter(|&p| p < i).map(|p| format!("k{p}"));
                    t.blocked_reason = Some("waits on a person".to_owned());
                    t
                })
                .collect()
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn a_second_import_of_the_same_file_moves_nothing(tasks in incoming()) {
        let at = chrono::DateTime::parse_from_rfc3339("2026-11-22T10:00:00Z")
            .expect("a time")
            .with_timezone(&chrono::Utc);
        let incoming = Incoming::Foreign { source: "beads".to_owned(), tasks };
        let mut state = state();
        apply(&mut state, &incoming, at, &mut |_, _| {}).expect("applies");
        let (events, report) = apply(&mut state, &incoming, at, &mut |_, _| {}).expect("applies again");
        let moved: Vec<&ProjectEvent> = events
            .iter()
            .filter(|e| matches!(e, ProjectEvent::TaskMoved { .. }))
            .collect();
        prop_assert!(moved.is_empty(), "the first import left moves undone: {moved:?}\n{report:?}");
        prop_assert!(report.created.is_empty());
    }
}

/// A damaged list holding an id twice: the import finds the linked task as every rule finds a
/// task by its id — the first with it — for the comparison, the moves and the report alike.
#[test]
fn a_task_whose_id_is_held_twice_is_the_first_one_throughout() {
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-22T10:00:00Z")
        .expect("a time")
        .with_timezone(&chrono::Utc);
    let mut state = state();
    let first = pending_task(1, "old title");
    let mut second = pending_task(1, "new title");
    second.extra.insert(
        "metadata".into(),
        serde_json::json!({"import": {"source": "beads", "id": "k1"}}),
    );
    state.tasks = doc_of(vec![first, second]);
    let incoming = Incoming::Foreign {
        source: "beads".to_owned(),
        tasks: vec![IncomingTask::new("k1", "new title", Complete)],
    };
    let (_, report) = apply(&mut state, &incoming, at, &mut |_, _| {}).expect("applies");
    let tasks = &state.tasks.tasks;
    assert_eq!(tasks[0].title, "new title");
    assert_eq!(tasks[0].status, Complete);
    assert_eq!(tasks[1].status, Pending);
    assert_eq!(report.updated.len(), 1);
    assert_eq!(report.updated[0].status, Complete);
    assert_eq!(report.updated[0].title, "new title");
}
