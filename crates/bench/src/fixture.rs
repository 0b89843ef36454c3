//! Realistic stores of any size, built directly (adding 50,000 tasks one command at a time would
//! measure the setup, not cairn).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_domain::project::service::{InitProject, ProjectService};
use cairn_domain::project::store::Changes;
use cairn_domain::project::{
    Level, Priority, ProjectId, ProjectState, ProjectType, Task, TaskId, TaskStatus,
};
use cairn_storage_fs::{FsProjectStore, SystemClock};
use chrono::{Duration, Utc};

/// T-001 … T-100 are IN_PROGRESS (for `task complete`), T-101 … T-300 are ready (for starts).
const STARTED: u64 = 100;
pub const FIRST_FREE_TASK: u64 = STARTED + 1;
const READY_END: u64 = 300;

pub fn project_id() -> ProjectId {
    ProjectId::try_from("bench".to_owned()).unwrap_or_else(|e| unreachable!("{e}"))
}

pub fn started_task(i: usize) -> TaskId {
    TaskId::from_number(1 + (i as u64 % STARTED))
}

/// The `i`-th ready task counted from the end of the ready range (T-300, T-299, …), for the
/// session rows; the hook rows start the first one (see [`start_a_ready_task`]).
pub fn session_task(i: usize) -> TaskId {
    TaskId::from_number(READY_END - (i as u64 % (READY_END - FIRST_FREE_TASK)))
}

fn task(n: u64) -> Task {
    let created = Utc::now() - Duration::days(3);
    let status = match n {
        1..=STARTED => TaskStatus::InProgress,
        _ if n <= READY_END => TaskStatus::Pending,
        _ if n % 5 < 3 => TaskStatus::Complete,
        _ => TaskStatus::Pending,
    };
    let dependencies = if n > READY_END + 7 {
        vec![TaskId::from_number(n - 7)]
    } else {
        vec![]
    };
    let priority = [
        Priority::Critical,
        Priority::High,
        Priority::Medium,
        Priority::Low,
    ][(n % 4) as usize];
    let value = serde_json::json!({
        "id": TaskId::from_number(n),
        "title": format!("Implement part {n} of the subsystem with care"),
        "level": Level::Task,
        "status": status,
        "priority": priority,
        "dependencies": dependencies,
        "completion_criteria": ["Unit tests cover the new behaviour", "Docs describe the change"],
        "created_at": cairn_domain::time::format_rfc3339(&created),
        "description": "A realistic description of what this task is about, long enough to count.",
        "phase_id": format!("phase-{}", n % 5),
        "estimate_minutes": 15 + (n % 8) * 15,
        "tags": ["bench"],
    });
    let mut task: Task =
        serde_json::from_value(value).unwrap_or_else(|e| unreachable!("fixture task: {e}"));
    if status == TaskStatus::InProgress {
        task.started_at = Some(Utc::now() - Duration::minutes(5));
    }
    if status == TaskStatus::Complete {
        task.completed_at = Some(created + Duration::hours(1));
        task.actual_minutes = Some(20.into());
    }
    task
}

/// Hook payloads carry a distinct session per run: cairn-hook deliberately stands down on a
/// second delivery of the same event, and the benchmark must measure the real work.
/// Creates project `bench` with `n` tasks under `root`; returns the path of its tasks.json.
pub fn build(root: &Path, n: usize) -> Result<PathBuf, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| e.to_string())?;
    let service = ProjectService::new(Arc::new(FsProjectStore::new(root)), Arc::new(SystemClock));
    rt.block_on(async {
        service
            .init(InitProject {
                id: project_id(),
                name: "Bench".into(),
                goal: "Measure cairn on a realistic store".into(),
                kind: ProjectType::Software,
            })
            .await
            .map_err(|e| e.to_string())?;
        let tasks: Vec<Task> = (1..=n as u64).map(task).collect();
        service
            .store()
            .transact(
                &project_id(),
                Utc::now(),
                Box::new(move |s: &mut ProjectState| {
                    s.tasks.tasks = tasks.into();
                    Ok(Changes::default())
                }),
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(())
    })?;
    Ok(root.join(".claude/projects/bench/tasks.json"))
}

fn payload(root: &Path, session: usize, event: &str, extra: serde_json::Value) -> String {
    let mut value = serde_json::json!({
        "session_id": format!("bench-session-{session}"),
        "transcript_path": root.join("transcript.jsonl"),
        "cwd": root,
        "hook_event_name": event,
        "permission_mode": "default",
    });
    if let (Some(obj), Some(more)) = (value.as_object_mut(), extra.as_object()) {
        obj.extend(more.clone());
    }
    value.to_string()
}

pub fn pre_tool_use(root: &Path, file: &str, session: usize) -> String {
    payload(
        root,
        session,
        "PreToolUse",
        serde_json::json!({
            "tool_name": "Edit",
            "tool_input": {"file_path": root.join(file), "old_string": "a", "new_string": "b"},
            "tool_use_id": "toolu_bench",
        }),
    )
}

pub fn session_start(root: &Path, session: usize) -> String {
    payload(
        root,
        session,
        "SessionStart",
        serde_json::json!({"source": "startup"}),
    )
}

pub fn pre_compact(root: &Path, session: usize) -> String {
    payload(
        root,
        session,
        "PreCompact",
        serde_json::json!({"trigger": "auto", "custom_instructions": ""}),
    )
}

/// Stop after a session start: the session's SESSION_START is in the log, so the hook reads the
/// log tail and the task list, the whole cost of the reminder.
pub fn stop(root: &Path, session: usize) -> String {
    payload(
        root,
        session,
        "Stop",
        serde_json::json!({"stop_hook_active": false, "last_assistant_message": "Done."}),
    )
}

/// Starts ready task T-{FIRST_FREE_TASK}, so that the sessions started so far have open work
/// and Stop takes its whole path: log tail, then the task list.
pub fn start_a_ready_task(root: &Path) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| e.to_string())?;
    let service = ProjectService::new(Arc::new(FsProjectStore::new(root)), Arc::new(SystemClock));
    let task = TaskId::from_number(FIRST_FREE_TASK);
    rt.block_on(service.move_task(
        &project_id(),
        &task,
        TaskStatus::InProgress,
        cairn_domain::project::MoveDetail::default(),
    ))
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// Starts a plan and moves it to PLAN, where an edit of a project file is denied: PreToolUse
/// then takes the plan rule's whole path (the pointer, the head of state.md, the decision).
pub fn start_plan(root: &Path) -> Result<(), String> {
    use cairn_domain::plan::{PlanService, PlanState};
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| e.to_string())?;
    let service = PlanService::new(
        Arc::new(cairn_storage_fs::FsPlanStore::new(root)),
        Arc::new(SystemClock),
        Arc::new(cairn_storage_fs::RandomIds),
    );
    rt.block_on(async {
        service.create("Benchmark the plan rule", false).await?;
        service
            .transition(PlanState::Plan, "the bench needs a plan in PLAN", None)
            .await
    })
    .map(|_| ())
    .map_err(|e| e.to_string())
}
