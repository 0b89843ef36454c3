//! The side panels: the live execution session, the current plan, the active orchestration and
//! Claude Code's task lists. One service (or task-list store) call each; `null` when there is
//! nothing to show, which is not an error.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use cairn_domain::execution::LiveSession;
use cairn_domain::execution::context::ExecutionContext;
use cairn_domain::plan::PlanError;
use cairn_domain::plan::service::PlanOverview;
use cairn_domain::tasklist::ListId;
use cairn_domain::tasklist::store::ListRead;
use cairn_domain::{DomainError, Error, StoreError};
use serde_json::{Value, json};

use crate::Shared;
use crate::api::ApiResult;

/// "There is none" reads as `null`; every other failure is the CLI's error.
fn absent_is_null<T>(
    shared: &Shared,
    result: Result<T, Error>,
    shape: impl FnOnce(T) -> Value,
) -> ApiResult<Json<Value>> {
    match result {
        Ok(value) => Ok(Json(shape(value))),
        Err(
            Error::Store(StoreError::NotFound { .. })
            | Error::Domain(DomainError::Plan(PlanError::NoActivePlan)),
        ) => Ok(Json(Value::Null)),
        Err(e) => Err(shared.explain(e)),
    }
}

fn seconds(d: Option<std::time::Duration>) -> Value {
    d.map_or(Value::Null, |d| json!(d.as_secs()))
}

fn context_json(c: &ExecutionContext) -> Value {
    let mut sections = vec![
        json!({"heading": "Project patterns", "lines": c.project_patterns}),
        json!({"heading": "Key decisions", "lines": c.key_decisions}),
        json!({"heading": "Known issues", "lines": c.known_issues}),
        json!({"heading": "File map", "lines": c.file_map}),
        json!({"heading": "Compacted history", "lines": c.compacted_history}),
    ];
    sections.extend(
        c.other_sections
            .iter()
            .map(|s| json!({"heading": s.heading, "lines": s.lines})),
    );
    let history: Vec<Value> = c
        .task_history
        .iter()
        .map(|h| json!({"task": h.task_id}))
        .collect();
    json!({"sections": sections, "task_history": history})
}

fn session_json(live: LiveSession) -> Value {
    if live.is_empty() {
        return Value::Null;
    }
    let progress = live.progress.as_ref().map(|p| {
        json!({
            "status": p.status.to_string(),
            "wave": p.wave.map(|w| json!({"current": w.current, "total": w.total})),
            "max_parallel": p.max_parallel,
            "active": p.active.iter().map(|a| json!({"id": a.id, "subject": a.subject, "phase": a.phase})).collect::<Vec<_>>(),
            "completed": p.completed.iter().map(|c| json!({
                "id": c.id, "subject": c.subject, "result": c.result.to_string(),
                "duration_secs": seconds(c.duration),
            })).collect::<Vec<_>>(),
        })
    });
    let log = live.task_log.as_ref().map(|log| {
        log.rows
            .iter()
            .map(|r| {
                json!({
                    "task": r.task_id, "subject": r.subject, "status": r.status.to_string(),
                    "attempts": format!("{}/{}", r.attempts.used, r.attempts.max),
                    "duration_secs": seconds(r.duration), "tokens": r.token_usage,
                })
            })
            .collect::<Vec<_>>()
    });
    json!({
        "lock": live.lock.as_ref().map(|l| format!("{l:?}")),
        "progress": progress,
        "task_log": log,
        "context": live.context.as_ref().map(context_json),
        "task_contexts": live.task_contexts.keys().collect::<Vec<_>>(),
    })
}

/// The live execution session (`ExecutionService::live`, as `cairn session status` reads it).
pub async fn session(State(shared): State<Arc<Shared>>) -> ApiResult<Json<Value>> {
    let result = shared.sources.execution.live().await;
    absent_is_null(&shared, result, session_json)
}

fn plan_json(o: PlanOverview) -> Value {
    let p = &o.plan;
    json!({
        "id": p.id().to_string(),
        "goal": p.goal(),
        "state": p.state().as_str(),
        "iteration": p.iteration(),
        "step": p.current_step(),
        "fix_attempts": p.fix_attempts().iter().map(|f| json!({"step": f.step, "attempt": f.attempt, "note": f.note})).collect::<Vec<_>>(),
        "allowed": o.allowed.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        "budget": {
            "files_added": o.budget.files_added,
            "new_abstractions": o.budget.new_abstractions,
            "lines_added": o.budget.lines_added,
            "lines_removed": o.budget.lines_removed,
            "scope_estimate": p.scope_estimate(),
            "over": o.budget.over.iter().map(|b| format!("{b:?}")).collect::<Vec<_>>(),
        },
        "decisions": o.decisions.len(),
    })
}

/// The current plan (`PlanService::overview`, as `cairn plan status`).
pub async fn plan(State(shared): State<Arc<Shared>>) -> ApiResult<Json<Value>> {
    let result = shared.sources.plans.overview().await;
    absent_is_null(&shared, result, plan_json)
}

/// The active orchestration (`OrchestrationService::active`, as `cairn orch status`): its front
/// matter, whose field names are the original tool's.
pub async fn orchestration(State(shared): State<Arc<Shared>>) -> ApiResult<Json<Value>> {
    let result = shared.sources.orchestration.active().await;
    absent_is_null(&shared, result, |session| {
        session.map_or(Value::Null, |s| {
            serde_json::to_value(&s.state).unwrap_or(Value::Null)
        })
    })
}

/// The names of Claude Code's task lists (`TaskListStore::list`); `null` when no configuration
/// directory is known.
pub async fn task_lists(State(shared): State<Arc<Shared>>) -> ApiResult<Json<Value>> {
    let Some(store) = &shared.sources.task_lists else {
        return Ok(Json(Value::Null));
    };
    let lists = store.list().await.map_err(|e| shared.explain(e))?;
    Ok(Json(json!(
        lists.iter().map(ListId::as_str).collect::<Vec<_>>()
    )))
}

fn list_json(list: &ListId, read: ListRead) -> Value {
    let tasks: Vec<Value> = read
        .tasks
        .iter()
        .map(|t| {
            json!({
                "id": t.id, "subject": t.subject, "status": t.status,
                "active_form": t.active_form, "blocked_by": t.blocked_by, "owner": t.owner,
            })
        })
        .collect();
    let problems: Vec<Value> = read
        .problems
        .iter()
        .map(|p| json!({"file": p.file, "problem": p.problem, "skipped": p.skipped}))
        .collect();
    json!({"id": list.as_str(), "tasks": tasks, "problems": problems})
}

/// One task list (`TaskListStore::load`), its id checked as SPEC §3 requires before any path is
/// built from it.
pub async fn task_list(
    State(shared): State<Arc<Shared>>,
    Path(list): Path<String>,
) -> ApiResult<Json<Value>> {
    let list = ListId::parse(&list).map_err(|e| shared.explain(DomainError::from(e)))?;
    let Some(store) = &shared.sources.task_lists else {
        return Ok(Json(Value::Null));
    };
    let read = store.load(&list).await.map_err(|e| shared.explain(e))?;
    Ok(Json(list_json(&list, read)))
}
