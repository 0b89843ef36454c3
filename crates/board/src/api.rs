//! The routes. Each JSON route makes one domain service call — the one the CLI makes for the same
//! question or change — and shapes its answer for the page.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router, middleware};
use cairn_domain::project::{MoveDetail, NewTask, ProjectState, TaskId, TaskStatus};
use cairn_domain::{DomainError, Error};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::{Explained, Shared, assets, graph, panels, security, view};

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(assets::page))
        .route("/events", get(events))
        .route("/api/board", get(board))
        .route("/api/column", get(column))
        .route("/api/session", get(panels::session))
        .route("/api/plan", get(panels::plan))
        .route("/api/orchestration", get(panels::orchestration))
        .route("/api/tasklists", get(panels::task_lists))
        .route("/api/tasklists/{list}", get(panels::task_list))
        .route("/api/graph.svg", get(graph::dependency_graph))
        .route("/api/burndown.svg", get(graph::burndown))
        .route("/api/tasks", post(add))
        .route("/api/tasks/{id}/move", post(move_task))
        .route("/api/tasks/{id}/block", post(block))
        .route("/api/tasks/{id}/decompose", post(decompose))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&shared),
            security::guard,
        ))
        .with_state(shared)
}

/// An error, answered as the CLI's `--json` error object with a fitting HTTP status.
#[derive(Debug)]
pub struct ApiError(pub Explained);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match self.0.exit_code {
            2 | 5 => StatusCode::BAD_REQUEST,
            3 => StatusCode::NOT_FOUND,
            4 | 8 => StatusCode::CONFLICT,
            6 => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        (status, Json(self.0.body)).into_response()
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

impl Shared {
    pub fn explain(&self, error: impl Into<Error>) -> ApiError {
        ApiError((self.sources.explain)(error.into()))
    }

    /// The shown project's state: `ProjectService::load`, as `cairn task list` reads it.
    pub async fn project_state(&self) -> ApiResult<ProjectState> {
        let s = &self.sources;
        s.projects
            .load(&s.project)
            .await
            .map_err(|e| self.explain(e))
    }
}

#[derive(Debug, Deserialize)]
pub struct PageQuery {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    offset: usize,
    #[serde(default)]
    limit: Option<usize>,
}

fn limit(query: &PageQuery) -> usize {
    query.limit.unwrap_or(view::PAGE).clamp(1, 1000)
}

async fn board(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<PageQuery>,
) -> ApiResult<Json<view::Board>> {
    let state = shared.project_state().await?;
    Ok(Json(view::board(&state, limit(&query))))
}

async fn column(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<PageQuery>,
) -> ApiResult<Json<view::Column>> {
    let status = parse_status(&shared, query.status.as_deref().unwrap_or(""))?;
    let state = shared.project_state().await?;
    Ok(Json(view::column(
        &state,
        status,
        query.offset,
        limit(&query),
    )))
}

fn parse_status(shared: &Shared, text: &str) -> ApiResult<TaskStatus> {
    text.parse::<TaskStatus>().map_err(|e| shared.explain(e))
}

fn parse_id(shared: &Shared, text: &str) -> ApiResult<TaskId> {
    text.parse::<TaskId>().map_err(|e| shared.explain(e))
}

fn invalid(shared: &Shared, field: &str, reason: &str) -> ApiError {
    shared.explain(DomainError::invalid(field, reason))
}

#[derive(Debug, Deserialize)]
pub struct AddBody {
    title: String,
    #[serde(default)]
    parent: Option<String>,
    #[serde(default)]
    priority: Option<String>,
}

async fn add(State(shared): State<Arc<Shared>>, Json(body): Json<AddBody>) -> ApiResult<Response> {
    let mut new = NewTask::titled(body.title);
    if let Some(parent) = body.parent.filter(|p| !p.trim().is_empty()) {
        new.parent = Some(parse_id(&shared, &parent)?);
    }
    if let Some(priority) = body.priority.filter(|p| !p.trim().is_empty()) {
        new.priority = Some(priority.parse().map_err(|e| shared.explain(e))?);
    }
    let s = &shared.sources;
    let task = s
        .projects
        .add_task(&s.project, new)
        .await
        .map_err(|e| shared.explain(e))?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"id": task.id.to_string()})),
    )
        .into_response())
}

#[derive(Debug, Deserialize)]
pub struct MoveBody {
    to: String,
    #[serde(default)]
    reason: Option<String>,
}

async fn move_task(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    Json(body): Json<MoveBody>,
) -> ApiResult<Json<Value>> {
    let id = parse_id(&shared, &id)?;
    let to = parse_status(&shared, &body.to)?;
    let reason = body.reason.filter(|r| !r.trim().is_empty());
    moved(&shared, &id, to, reason).await
}

/// The move every action that changes a status makes: `ProjectService::move_task`, as
/// `cairn task move` does.
async fn moved(
    shared: &Shared,
    id: &TaskId,
    to: TaskStatus,
    reason: Option<String>,
) -> ApiResult<Json<Value>> {
    let s = &shared.sources;
    let detail = MoveDetail {
        actual_minutes: None,
        reason,
    };
    let moved = s
        .projects
        .move_task(&s.project, id, to, detail)
        .await
        .map_err(|e| shared.explain(e))?;
    let changes: Vec<Value> = moved
        .changes
        .iter()
        .map(|(task, from, to)| json!({"task": task.to_string(), "from": from, "to": to}))
        .collect();
    Ok(Json(
        json!({"id": moved.task.id.to_string(), "status": moved.task.status, "changes": changes}),
    ))
}

#[derive(Debug, Deserialize)]
pub struct BlockBody {
    reason: String,
}

async fn block(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    Json(body): Json<BlockBody>,
) -> ApiResult<Json<Value>> {
    let id = parse_id(&shared, &id)?;
    if body.reason.trim().is_empty() {
        return Err(invalid(
            &shared,
            "reason",
            "a blocked task needs a reason: say what it waits for",
        ));
    }
    moved(&shared, &id, TaskStatus::Blocked, Some(body.reason)).await
}

#[derive(Debug, Deserialize)]
pub struct DecomposeBody {
    into: Vec<String>,
}

async fn decompose(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    Json(body): Json<DecomposeBody>,
) -> ApiResult<Json<Value>> {
    let id = parse_id(&shared, &id)?;
    let children: Vec<NewTask> = body
        .into
        .into_iter()
        .filter(|t| !t.trim().is_empty())
        .map(NewTask::titled)
        .collect();
    let s = &shared.sources;
    let (parent, created) = s
        .projects
        .decompose(&s.project, &id, children)
        .await
        .map_err(|e| shared.explain(e))?;
    let ids: Vec<String> = created.iter().map(|t| t.id.to_string()).collect();
    Ok(Json(json!({"id": parent.id.to_string(), "children": ids})))
}

/// The change stream: a `hello` when connected, then one `change` event per debounced burst of
/// file changes. A page that falls behind gets a `change` all the same (it refetches anyway).
async fn events(
    State(shared): State<Arc<Shared>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = shared.changes.subscribe();
    let hello = Event::default().event("hello").data("0");
    let stream = futures_util::stream::unfold((Some(hello), rx), |(first, mut rx)| async move {
        if let Some(event) = first {
            return Some((Ok(event), (None, rx)));
        }
        let seq = match rx.recv().await {
            Ok(seq) => seq,
            Err(broadcast::error::RecvError::Lagged(_)) => 0,
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        let event = Event::default().event("change").data(seq.to_string());
        Some((Ok(event), (None, rx)))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// An SVG answer.
pub fn svg(body: String) -> Response {
    ([(header::CONTENT_TYPE, "image/svg+xml")], body).into_response()
}
