//! The everyday operations of issue #18 on the domain alone: editing a task, the project
//! completing by itself, and the new log events' round trip.

use std::sync::Arc;

use cairn_domain::ports::FixedClock;
use cairn_domain::project::memory::MemoryProjectStore;
use cairn_domain::project::service::{InitProject, ProjectService};
use cairn_domain::project::*;
use cairn_domain::time::Timestamp;
use cairn_domain::{DomainError, Error};

fn t0() -> Timestamp {
    "2026-04-01T09:00:00Z".parse().expect("time")
}

fn pid() -> ProjectId {
    "demo".parse().expect("project id")
}

fn doc_with(titles: &[&str]) -> TaskDoc {
    let mut doc = TaskDoc::new(pid());
    for t in titles {
        doc.add_task(
            NewTask {
                completion_criteria: vec!["first criterion".into(), "second criterion".into()],
                ..NewTask::titled(*t)
            },
            t0(),
        )
        .expect("add");
    }
    doc
}

fn id(n: u64) -> TaskId {
    TaskId::from_number(n)
}

#[test]
fn an_edit_changes_only_what_it_names_and_reports_old_and_new() {
    let mut doc = doc_with(&["Desing the API"]);
    let (changes, events) = doc
        .edit_task(
            &id(1),
            TaskEdit {
                title: Some("  Design the API ".into()),
                remove_criteria: vec![1, 1],
                add_criteria: vec!["third criterion".into()],
                ..TaskEdit::default()
            },
        )
        .expect("edit");
    let task = doc.get(&id(1)).expect("task");
    assert_eq!(task.title, "Design the API");
    assert_eq!(
        task.completion_criteria,
        ["second criterion", "third criterion"]
    );
    assert_eq!(task.priority, Priority::Medium, "untouched");
    let fields: Vec<&str> = changes.iter().map(|c| c.field).collect();
    assert_eq!(fields, ["title", "criteria"]);
    assert_eq!(
        changes[0].to_string(),
        "title: Desing the API → Design the API"
    );
    assert!(matches!(&events[..], [ProjectEvent::TaskUpdated { .. }]));
}

#[test]
fn a_refused_edit_leaves_the_document_as_it_was() {
    let mut doc = doc_with(&["Write the parser"]);
    let before = doc.clone();
    for edit in [
        TaskEdit {
            title: Some("ok title".into()),
            estimate_minutes: Some(0),
            ..TaskEdit::default()
        },
        TaskEdit {
            remove_criteria: vec![3],
            ..TaskEdit::default()
        },
        TaskEdit {
            add_criteria: vec!["   ".into()],
            ..TaskEdit::default()
        },
        TaskEdit {
            add_criteria: (0..11).map(|i| format!("criterion {i}")).collect(),
            ..TaskEdit::default()
        },
        TaskEdit {
            phase_id: Some("Not A Phase".into()),
            ..TaskEdit::default()
        },
    ] {
        let refused = doc.edit_task(&id(1), edit.clone());
        assert!(refused.is_err(), "{edit:?} is refused");
        assert_eq!(doc, before, "{edit:?} changed nothing");
    }
}

#[test]
fn a_finished_task_accepts_only_words() {
    let mut doc = doc_with(&["Ship the release"]);
    doc.move_task(&id(1), TaskStatus::Cancelled, MoveDetail::default(), t0())
        .expect("cancel");
    let refused = doc.edit_task(
        &id(1),
        TaskEdit {
            title: Some("Ship it".into()),
            priority: Some(Priority::High),
            ..TaskEdit::default()
        },
    );
    match refused {
        Err(DomainError::Project(ProjectError::FinishedTaskEdit { fields, .. })) => {
            assert_eq!(fields, ["priority"])
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(doc.get(&id(1)).expect("task").title, "Ship the release");
    doc.edit_task(
        &id(1),
        TaskEdit {
            title: Some("Ship it".into()),
            add_tags: vec!["release".into()],
            ..TaskEdit::default()
        },
    )
    .expect("words may change");
}

#[test]
fn new_events_survive_the_log_round_trip() {
    for event in [
        ProjectEvent::TaskUpdated {
            task: id(3),
            changes: vec!["title: a → b".into(), "priority: LOW → HIGH".into()],
        },
        ProjectEvent::PhaseAdded {
            phase: "design".into(),
            name: "Design it".into(),
        },
        ProjectEvent::PhaseStarted {
            phase: "design".into(),
        },
        ProjectEvent::ProjectComplete {
            from: ProjectStatus::InProgress,
            tasks: 14,
        },
    ] {
        let record = event.to_record(t0());
        assert_eq!(ProjectEvent::from_record(&record), Some(event.clone()));
    }
}

async fn service() -> ProjectService {
    let service = ProjectService::new(
        Arc::new(MemoryProjectStore::new()),
        Arc::new(FixedClock::new(t0())),
    );
    service
        .init(InitProject {
            id: pid(),
            name: "Demo".into(),
            goal: "Show the whole lifecycle".into(),
            kind: ProjectType::Software,
        })
        .await
        .expect("init");
    service
}

#[tokio::test]
async fn the_project_completes_with_its_last_task_and_reopens_for_a_new_one() {
    let service = service().await;
    service
        .add_task(&pid(), NewTask::titled("Only task"))
        .await
        .expect("add");
    service
        .move_task(
            &pid(),
            &id(1),
            TaskStatus::InProgress,
            MoveDetail::default(),
        )
        .await
        .expect("start");
    let done = service
        .move_task(&pid(), &id(1), TaskStatus::Complete, MoveDetail::default())
        .await
        .expect("complete");
    assert_eq!(done.project_status, Some(ProjectStatus::Complete));
    let state = service.load(&pid()).await.expect("load");
    assert_eq!(state.project.status, ProjectStatus::Complete);

    let added = service
        .add_task_reporting(&pid(), NewTask::titled("More work"))
        .await
        .expect("add");
    assert_eq!(added.project_status, Some(ProjectStatus::InProgress));
    let refused = service
        .complete_phase(&pid(), "none-such", false)
        .await
        .expect_err("unknown phase");
    assert!(
        matches!(
            refused,
            Error::Domain(DomainError::Project(ProjectError::UnknownPhase { .. }))
        ),
        "{refused:?}"
    );
}
