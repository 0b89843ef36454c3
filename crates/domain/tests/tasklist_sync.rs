//! The task-list store contract on the in-memory adapter, and the bridge (push, pull, status)
//! on the in-memory project and list stores.

use std::sync::Arc;

use cairn_domain::ports::{FixedClock, Fresh};
use cairn_domain::project::memory::MemoryProjectStore;
use cairn_domain::project::service::{InitProject, ProjectService};
use cairn_domain::project::{
    MoveDetail, NewTask, ProjectId, ProjectType, TaskEdit, TaskId, TaskStatus,
};
use cairn_domain::tasklist::memory::MemoryTaskListStore;
use cairn_domain::tasklist::{
    ClaudeTaskStatus, Holder, ListId, ListIdSources, TaskListService, TaskListStore,
};
use chrono::{TimeZone, Utc};
use serde_json::json;

fn fresh() -> Fresh<dyn TaskListStore> {
    Fresh {
        store: Arc::new(MemoryTaskListStore::new()),
        guard: Box::new(()),
    }
}

cairn_domain::tasklist_store_contract!(memory_contract, fresh);

fn demo() -> ProjectId {
    "demo".parse().unwrap()
}

fn t(n: u64) -> TaskId {
    TaskId::from_number(n)
}

fn list() -> ListId {
    ListId::parse("demo").unwrap()
}

/// The default sources: the list is the project's id.
fn sources() -> ListIdSources {
    ListIdSources::default()
}

/// A project with T-001 (done-able), T-002 depending on it, T-003 cancelled.
async fn setup() -> (ProjectService, Arc<MemoryTaskListStore>) {
    let clock = Arc::new(FixedClock::new(
        Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap(),
    ));
    let projects = ProjectService::new(Arc::new(MemoryProjectStore::new()), clock);
    projects
        .init(InitProject {
            id: demo(),
            name: "Demo".into(),
            goal: "Try the task-list bridge".into(),
            kind: ProjectType::Software,
        })
        .await
        .unwrap();
    projects
        .add_task(&demo(), NewTask::titled("Write the parser"))
        .await
        .unwrap();
    projects
        .add_task(
            &demo(),
            NewTask {
                dependencies: vec![t(1)],
                description: Some("After the parser".into()),
                ..NewTask::titled("Wire the CLI")
            },
        )
        .await
        .unwrap();
    projects
        .add_task(&demo(), NewTask::titled("Abandoned idea"))
        .await
        .unwrap();
    projects
        .move_task(&demo(), &t(3), TaskStatus::Cancelled, MoveDetail::default())
        .await
        .unwrap();
    (projects, Arc::new(MemoryTaskListStore::new()))
}

async fn status_of(projects: &ProjectService, id: u64) -> TaskStatus {
    projects
        .load(&demo())
        .await
        .unwrap()
        .tasks
        .get(&t(id))
        .unwrap()
        .status
}

#[tokio::test]
async fn push_mirrors_the_project_and_a_second_push_writes_nothing() {
    let (projects, lists) = setup().await;
    let bridge = TaskListService::new(&projects, lists.clone());
    let report = bridge.push(&demo(), &sources()).await.unwrap();
    assert_eq!(report.list, list());
    let written: Vec<_> = report
        .written
        .iter()
        .map(|w| w.list_task.as_str())
        .collect();
    assert_eq!(written, ["1", "2"], "the cancelled task is not mirrored");
    let read = lists.load(&list()).await.unwrap();
    let first = &read.tasks[0];
    assert_eq!(
        (first.subject.as_str(), first.status, first.blocks.clone()),
        (
            "Write the parser",
            ClaudeTaskStatus::Pending,
            vec!["2".to_owned()]
        )
    );
    assert_eq!(read.tasks[1].blocked_by, ["1"]);
    assert_eq!(read.tasks[1].description, "After the parser");
    assert!(
        !read.tasks[1].active_form.is_empty(),
        "activeForm is always set"
    );
    assert_eq!(
        read.tasks[1].metadata.as_ref().unwrap()["cairn"],
        json!({"project": "demo", "task": "T-002", "status": "PENDING", "level": "task", "priority": "MEDIUM",
            "subject": "Wire the CLI", "description": "After the parser"})
    );

    let again = bridge.push(&demo(), &sources()).await.unwrap();
    assert!(again.written.is_empty());
    assert_eq!(again.unchanged, 2);
}

#[tokio::test]
async fn pull_completes_through_the_state_machine_and_keeps_project_changes() {
    let (projects, lists) = setup().await;
    let bridge = TaskListService::new(&projects, lists.clone());
    bridge.push(&demo(), &sources()).await.unwrap();
    // Claude Code marks task 1 completed, rewriting the whole file as TaskUpdate does.
    let mut one = lists.load(&list()).await.unwrap().tasks[0].clone();
    one.status = ClaudeTaskStatus::Completed;
    lists.write_task(&list(), &one).await.unwrap();

    let report = bridge.pull(&demo(), &sources()).await.unwrap();
    assert_eq!(report.moved.len(), 1, "{report:?}");
    assert_eq!(report.moved[0].to, [TaskStatus::Complete]);
    assert_eq!(status_of(&projects, 1).await, TaskStatus::Complete);
    assert!(report.refused.is_empty());

    // A project change after the sync is not undone by the next pull.
    projects
        .move_task(
            &demo(),
            &t(2),
            TaskStatus::InProgress,
            MoveDetail::default(),
        )
        .await
        .unwrap();
    let quiet = bridge.pull(&demo(), &sources()).await.unwrap();
    assert!(
        quiet.moved.is_empty() && quiet.refused.is_empty(),
        "{quiet:?}"
    );
    assert_eq!(status_of(&projects, 2).await, TaskStatus::InProgress);
    let status = bridge.status(&demo(), &sources()).await.unwrap();
    assert_eq!(status.push_would_write.len(), 1);
    assert_eq!(status.push_would_write[0].fields, ["status", "metadata"]);
}

async fn task_of(projects: &ProjectService, id: u64) -> cairn_domain::project::Task {
    projects
        .load(&demo())
        .await
        .unwrap()
        .tasks
        .get(&t(id))
        .unwrap()
        .clone()
}

/// Claude Code's `TaskUpdate` of list task `n`: rewrites the file with `change` applied.
async fn update_in_list(
    lists: &MemoryTaskListStore,
    n: usize,
    change: impl FnOnce(&mut cairn_domain::tasklist::ClaudeTask),
) {
    let mut task = lists.load(&list()).await.unwrap().tasks[n - 1].clone();
    change(&mut task);
    lists.write_task(&list(), &task).await.unwrap();
}

#[tokio::test]
async fn subjects_and_descriptions_edited_in_the_list_come_into_the_project() {
    let (projects, lists) = setup().await;
    let bridge = TaskListService::new(&projects, lists.clone());
    bridge.push(&demo(), &sources()).await.unwrap();
    update_in_list(&lists, 1, |task| {
        task.subject = "Write the YAML parser".into();
        task.description = "Streaming, no DOM".into();
    })
    .await;
    // Task 2: a new subject together with a status change.
    update_in_list(&lists, 2, |task| {
        task.subject = "Wire the CLI flags".into();
        task.status = ClaudeTaskStatus::InProgress;
    })
    .await;
    let status = bridge.status(&demo(), &sources()).await.unwrap();
    assert_eq!(status.pull_would_edit.len(), 2, "{status:?}");
    assert_eq!(status.pull_would_edit[0].changes[0].field, "title");
    assert!(!status.is_in_sync());

    let report = bridge.pull(&demo(), &sources()).await.unwrap();
    assert_eq!(report.edited.len(), 2, "{report:?}");
    let fields: Vec<&str> = report.edited[0].changes.iter().map(|c| c.field).collect();
    assert_eq!(fields, ["title", "description"]);
    let one = task_of(&projects, 1).await;
    assert_eq!(
        (one.title.as_str(), one.description.as_deref()),
        ("Write the YAML parser", Some("Streaming, no DOM"))
    );
    // Task 2 waits on task 1: its status change is refused, its subject still comes in.
    assert_eq!(task_of(&projects, 2).await.title, "Wire the CLI flags");
    assert_eq!(report.refused.len(), 1, "{report:?}");
    assert!(
        report.refused[0].fields.is_empty(),
        "the status was refused"
    );
    assert_eq!(status_of(&projects, 2).await, TaskStatus::Pending);

    let again = bridge.pull(&demo(), &sources()).await.unwrap();
    assert!(again.edited.is_empty(), "taken once: {again:?}");
    assert_eq!(again.refused.len(), 1, "the status refusal is seen again");
    let push = bridge.push(&demo(), &sources()).await.unwrap();
    let pushed: Vec<_> = push.written.iter().map(|w| w.fields.clone()).collect();
    assert_eq!(
        pushed,
        [vec!["status"]],
        "only task 2's refused status goes back to the list: {push:?}"
    );
}

#[tokio::test]
async fn a_project_edit_is_not_undone_and_an_edit_on_both_sides_is_refused() {
    let (projects, lists) = setup().await;
    let bridge = TaskListService::new(&projects, lists.clone());
    bridge.push(&demo(), &sources()).await.unwrap();
    let retitle = |title: &str| TaskEdit {
        title: Some(title.into()),
        ..TaskEdit::default()
    };
    projects
        .edit_task(&demo(), &t(1), retitle("Write the parser, fast"))
        .await
        .unwrap();
    let quiet = bridge.pull(&demo(), &sources()).await.unwrap();
    assert!(
        quiet.edited.is_empty() && quiet.refused.is_empty(),
        "{quiet:?}"
    );
    assert_eq!(task_of(&projects, 1).await.title, "Write the parser, fast");

    update_in_list(&lists, 1, |task| task.subject = "Write the lexer".into()).await;
    let report = bridge.pull(&demo(), &sources()).await.unwrap();
    assert!(report.edited.is_empty(), "{report:?}");
    assert_eq!(report.refused.len(), 1, "{report:?}");
    assert_eq!(report.refused[0].fields, ["subject"]);
    let reason = &report.refused[0].reason;
    assert!(
        reason.contains("Write the lexer") && reason.contains("Write the parser, fast"),
        "{reason}"
    );
    assert_eq!(task_of(&projects, 1).await.title, "Write the parser, fast");
    let status = bridge.status(&demo(), &sources()).await.unwrap();
    assert_eq!(status.edit_clashes.len(), 1, "{status:?}");
    assert!(status.pull_would_edit.is_empty());
    let again = bridge.pull(&demo(), &sources()).await.unwrap();
    assert_eq!(again.refused.len(), 1, "reported until someone settles it");

    // Taking the list's value in the project settles it.
    projects
        .edit_task(&demo(), &t(1), retitle("Write the lexer"))
        .await
        .unwrap();
    let settled = bridge.pull(&demo(), &sources()).await.unwrap();
    assert!(
        settled.refused.is_empty() && settled.edited.is_empty(),
        "{settled:?}"
    );
    let push = bridge.push(&demo(), &sources()).await.unwrap();
    assert_eq!(push.written.len(), 1, "the synced subject is recorded");
    assert!(
        bridge
            .status(&demo(), &sources())
            .await
            .unwrap()
            .is_in_sync()
    );
}

#[tokio::test]
async fn a_refused_change_is_reported_not_forced() {
    let (projects, lists) = setup().await;
    let bridge = TaskListService::new(&projects, lists.clone());
    bridge.push(&demo(), &sources()).await.unwrap();
    // Task 2 waits on task 1: starting it in the list breaks a project rule.
    let mut two = lists.load(&list()).await.unwrap().tasks[1].clone();
    two.status = ClaudeTaskStatus::Completed;
    lists.write_task(&list(), &two).await.unwrap();

    let report = bridge.pull(&demo(), &sources()).await.unwrap();
    assert!(report.moved.is_empty());
    assert_eq!(report.refused.len(), 1);
    assert_eq!(report.refused[0].task, Some(t(2)));
    assert_eq!(report.refused[0].left_at, Some(TaskStatus::Pending));
    assert!(
        report.refused[0].reason.contains("T-001"),
        "{}",
        report.refused[0].reason
    );
    assert_eq!(status_of(&projects, 2).await, TaskStatus::Pending);
    let again = bridge.pull(&demo(), &sources()).await.unwrap();
    assert_eq!(again.refused.len(), 1, "reported until someone acts");
}

#[tokio::test]
async fn a_task_created_in_the_list_becomes_a_project_task_and_is_linked() {
    let (projects, lists) = setup().await;
    let bridge = TaskListService::new(&projects, lists.clone());
    bridge.push(&demo(), &sources()).await.unwrap();
    lists.put_raw(
        &list(),
        "3",
        json!({"id": 3, "subject": "Add a --verbose flag", "description": "", "status": "in_progress", "blockedBy": ["1"]}),
    );
    let report = bridge.pull(&demo(), &sources()).await.unwrap();
    assert_eq!(report.created.len(), 1, "{report:?}");
    let created = report.created[0].task.clone().unwrap();
    assert_eq!(created, t(4));
    assert!(
        report.refused.len() == 1,
        "starting it waits on T-001: {report:?}"
    );
    let state = projects.load(&demo()).await.unwrap();
    let task = state.tasks.get(&created).unwrap();
    assert_eq!(task.title, "Add a --verbose flag");
    assert_eq!(task.dependencies, [t(1)]);

    let again = bridge.pull(&demo(), &sources()).await.unwrap();
    assert!(again.created.is_empty(), "linked now: {again:?}");
    let push = bridge.push(&demo(), &sources()).await.unwrap();
    assert!(
        push.conflicts.is_empty(),
        "T-004 lives in file 3, where it was created: {push:?}"
    );
}

#[tokio::test]
async fn push_never_writes_over_or_removes_a_foreign_file() {
    let (projects, lists) = setup().await;
    lists.put_raw(
        &list(),
        "1",
        json!({"id": "1", "subject": "Claude's own", "status": "pending"}),
    );
    let bridge = TaskListService::new(&projects, lists.clone());
    let report = bridge.push(&demo(), &sources()).await.unwrap();
    assert_eq!(report.conflicts.len(), 1);
    assert_eq!(report.conflicts[0].held_by, Holder::NotCairn);
    assert_eq!(
        lists.load(&list()).await.unwrap().tasks[0].subject,
        "Claude's own"
    );
    // Cancelling a pushed task removes its file; the foreign one stays.
    projects
        .move_task(&demo(), &t(2), TaskStatus::Cancelled, MoveDetail::default())
        .await
        .unwrap();
    let report = bridge.push(&demo(), &sources()).await.unwrap();
    assert_eq!(report.removed, ["2"]);
    let ids: Vec<_> = lists
        .load(&list())
        .await
        .unwrap()
        .tasks
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids, ["1"]);
}

#[tokio::test]
async fn garbage_files_are_reported_and_hook_pulls_need_a_link() {
    let (projects, lists) = setup().await;
    let bridge = TaskListService::new(&projects, lists.clone());
    lists.put_garbage(&list(), "9", "{\"id\": \"9\", \"subj");
    lists.put_raw(&list(), "8", json!({"id": "8", "status": "pending"}));
    assert!(
        bridge
            .pull_if_linked(&demo(), &sources())
            .await
            .unwrap()
            .is_none(),
        "nothing of this project is in the list"
    );
    let status = bridge.status(&demo(), &sources()).await.unwrap();
    let files: Vec<_> = status.problems.iter().map(|p| p.file.as_str()).collect();
    assert_eq!(files, ["8.json", "9.json"]);
    assert!(status.problems.iter().all(|p| p.skipped));
    bridge.push(&demo(), &sources()).await.unwrap();
    let pulled = bridge
        .pull_if_linked(&demo(), &sources())
        .await
        .unwrap()
        .expect("linked now");
    assert!(pulled.created.is_empty(), "skipped files create nothing");
    assert_eq!(pulled.problems.len(), 2);
}
