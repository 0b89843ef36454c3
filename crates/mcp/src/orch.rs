//! The orchestration tools, with seed 004's names, argument shapes and result shapes, so that
//! prompts written for its MCP server work unchanged. Each makes the call its `cairn orch …`
//! command makes on [`OrchestrationService`](cairn_domain::orchestration::OrchestrationService).

use cairn_domain::orchestration::{
    DownstreamContext, FileChanges, NewPhase, NewSession, PhaseId, PhaseStatus, PhaseTransition,
    Session, SessionId, SessionStatus, SessionUpdate, TokenCounts, WorkflowMode,
};
use cairn_domain::{DomainError, Error};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::project::args;
use crate::{Outcome, ToolError, Wings};

/// A phase id as seed 004 takes it: a number, or a string of digits.
#[derive(Deserialize)]
#[serde(untagged)]
enum IdArg {
    Number(u64),
    Text(String),
}

impl IdArg {
    fn id(&self) -> Result<PhaseId, ToolError> {
        let parsed = match self {
            Self::Number(n) => PhaseId::try_from(*n).ok(),
            Self::Text(text) => text.trim().parse().ok(),
        };
        parsed.filter(|&id| id > 0).ok_or_else(|| {
            let shown = match self {
                Self::Number(n) => n.to_string(),
                Self::Text(text) => format!("{text:?}"),
            };
            ToolError::usage(
                format!("{shown} is not a phase id"),
                "phase ids are positive integers, as a number or a string of digits",
            )
        })
    }
}

fn ids(list: &[IdArg]) -> Result<Vec<PhaseId>, ToolError> {
    list.iter().map(IdArg::id).collect()
}

/// A batch id as seed 004 takes it: any string or number, kept as text.
#[derive(Deserialize)]
#[serde(untagged)]
enum BatchArg {
    Number(i64),
    Text(String),
}

impl BatchArg {
    fn text(self) -> String {
        match self {
            Self::Number(n) => n.to_string(),
            Self::Text(text) => text,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PhaseArg {
    id: IdArg,
    name: String,
    agent: String,
    #[serde(default)]
    parallel: bool,
    #[serde(default)]
    blocked_by: Vec<IdArg>,
    #[serde(default)]
    files: Vec<String>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum Complexity {
    Simple,
    Medium,
    Complex,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Express,
    Standard,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum ExecutionMode {
    Parallel,
    Sequential,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateArgs {
    session_id: String,
    task: String,
    phases: Vec<PhaseArg>,
    design_document: Option<String>,
    implementation_plan: Option<String>,
    task_complexity: Option<Complexity>,
    workflow_mode: Option<Mode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusArgs {
    session_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateArgs {
    session_id: String,
    execution_mode: Option<ExecutionMode>,
    current_batch: Option<BatchArg>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Tokens {
    #[serde(default)]
    input: u64,
    #[serde(default)]
    output: u64,
    #[serde(default)]
    cached: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TransitionArgs {
    session_id: Option<String>,
    completed_phase_id: Option<IdArg>,
    next_phase_id: Option<IdArg>,
    next_phase_ids: Option<Vec<IdArg>>,
    downstream_context: Option<DownstreamContext>,
    #[serde(default)]
    files_created: Vec<String>,
    #[serde(default)]
    files_modified: Vec<String>,
    #[serde(default)]
    files_deleted: Vec<String>,
    token_usage: Option<Tokens>,
    batch_id: Option<BatchArg>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionArg {
    session_id: String,
}

fn session_id(w: &Wings, text: &str) -> Result<SessionId, ToolError> {
    SessionId::parse(text).map_err(|e| w.fail(DomainError::from(e).into()))
}

pub(crate) async fn call(w: &Wings, name: &str, raw: Value) -> Outcome {
    let s = &w.orchestration;
    let fail = |e: Error| w.fail(e);
    match name {
        "create_session" => {
            let a: CreateArgs = args(name, raw)?;
            let id = session_id(w, &a.session_id)?;
            let phases = a
                .phases
                .into_iter()
                .map(|p| {
                    Ok(NewPhase {
                        id: Some(p.id.id()?),
                        name: p.name,
                        agents: vec![p.agent],
                        parallel: p.parallel,
                        blocked_by: ids(&p.blocked_by)?,
                        files: p.files,
                    })
                })
                .collect::<Result<Vec<_>, ToolError>>()?;
            let workflow_mode = match a.workflow_mode {
                Some(Mode::Express) => WorkflowMode::Express,
                Some(Mode::Standard) | None => WorkflowMode::Standard,
            };
            let spec = NewSession {
                id: Some(id),
                // Seed 004 titles the log with the task.
                topic: a.task.clone(),
                task: a.task,
                workflow_mode,
                design_document: a.design_document,
                implementation_plan: a.implementation_plan,
                execution_mode: None,
                execution_backend: None,
                task_complexity: a.task_complexity.map(|c| {
                    match c {
                        Complexity::Simple => "simple",
                        Complexity::Medium => "medium",
                        Complexity::Complex => "complex",
                    }
                    .to_owned()
                }),
                phases,
            };
            let session = s.create(spec).await.map_err(fail)?;
            let first = session.state.phases.first().map(|p| p.id);
            Ok(json!({
                "success": true,
                "session_id": session.id(),
                "total_phases": session.state.total_phases,
                "next": [transition_call(&session, json!({"next_phase_id": first}))],
            }))
        }
        "get_session_status" => {
            let a: StatusArgs = args(name, raw)?;
            let session = s.active().await.map_err(fail)?;
            match session {
                Some(session)
                    if a.session_id
                        .as_deref()
                        .is_none_or(|id| id == session.id().as_str()) =>
                {
                    Ok(status(&session))
                }
                Some(session) => Ok(json!({
                    "exists": false,
                    "message": format!("the active session is {}", session.id()),
                })),
                None => Ok(json!({"exists": false, "message": "No active session found"})),
            }
        }
        "update_session" => {
            let a: UpdateArgs = args(name, raw)?;
            let id = session_id(w, &a.session_id)?;
            let update = SessionUpdate {
                execution_mode: a.execution_mode.map(|m| {
                    match m {
                        ExecutionMode::Parallel => "parallel",
                        ExecutionMode::Sequential => "sequential",
                    }
                    .to_owned()
                }),
                execution_backend: None,
                current_batch: a.current_batch.map(BatchArg::text),
            };
            let (_, updated) = s.update_session(id, update).await.map_err(fail)?;
            Ok(json!({"success": true, "updated_fields": updated}))
        }
        "transition_phase" => {
            let a: TransitionArgs = args(name, raw)?;
            let id = a
                .session_id
                .as_deref()
                .map(|t| session_id(w, t))
                .transpose()?;
            let next = match (&a.next_phase_id, &a.next_phase_ids) {
                (Some(_), Some(list)) if !list.is_empty() => {
                    return Err(ToolError::usage(
                        "next_phase_id and next_phase_ids are mutually exclusive",
                        "give next_phase_id for one phase, next_phase_ids for a parallel batch",
                    ));
                }
                (Some(one), _) => vec![one.id()?],
                (None, Some(list)) => ids(list)?,
                (None, None) => Vec::new(),
            };
            let step = PhaseTransition {
                completed: a.completed_phase_id.as_ref().map(IdArg::id).transpose()?,
                files: FileChanges {
                    created: a.files_created,
                    modified: a.files_modified,
                    deleted: a.files_deleted,
                },
                downstream: a.downstream_context.unwrap_or_default(),
                tokens: a.token_usage.map(|t| TokenCounts {
                    input: t.input,
                    output: t.output,
                    cached: t.cached,
                }),
                next,
                batch: a.batch_id.map(BatchArg::text),
            };
            let (session, started) = s.transition(id, step).await.map_err(fail)?;
            Ok(transitioned(&session, &started))
        }
        "archive_session" => {
            let a: SessionArg = args(name, raw)?;
            let id = session_id(w, &a.session_id)?;
            let outcome = s.archive_session(id, None).await.map_err(fail)?;
            let locations = |l: &[cairn_domain::orchestration::Location]| -> Vec<String> {
                l.iter().map(ToString::to_string).collect()
            };
            let mut value = json!({
                "success": outcome.verification.is_complete(),
                "session_id": outcome.session.id(),
                "archived_files": outcome.moved.iter().map(|m| m.to.to_string()).collect::<Vec<_>>(),
            });
            for (key, list) in [
                (
                    "absent",
                    outcome
                        .absent
                        .iter()
                        .map(|m| m.from.clone())
                        .collect::<Vec<_>>(),
                ),
                ("left_behind", outcome.verification.left_behind.clone()),
                ("missing", outcome.verification.missing.clone()),
            ] {
                if !list.is_empty() {
                    value[key] = json!(locations(&list));
                }
            }
            Ok(value)
        }
        _ => unreachable!("tools::find only gives orchestration tools to this wing"),
    }
}

/// `{"tool":"transition_phase","args":{session_id, …}}`.
fn transition_call(session: &Session, mut args: Value) -> Value {
    args["session_id"] = json!(session.id());
    json!({"tool": "transition_phase", "args": args})
}

/// Seed 004's `get_session_status` answer.
fn status(session: &Session) -> Value {
    let st = &session.state;
    json!({
        "exists": true,
        "session_id": st.session_id,
        "status": st.status,
        "workflow_mode": st.workflow_mode,
        "current_phase": st.current_phase,
        "total_phases": st.total_phases,
        "phases": st.phases.iter().map(|p| json!({
            "id": p.id,
            "name": p.name,
            "status": p.status,
            "agent": p.agents.first(),
        })).collect::<Vec<_>>(),
        "task_complexity": st.task_complexity,
        "execution_mode": st.execution_mode,
        "current_batch": st.current_batch,
        "token_usage": st.token_usage,
    })
}

/// Seed 004's `transition_phase` answer, with what to call next: complete a phase that is
/// running, start the next ready one, or archive a finished session.
fn transitioned(session: &Session, started: &[PhaseId]) -> Value {
    let phases = &session.state.phases;
    let with = |status: PhaseStatus| -> Vec<PhaseId> {
        phases
            .iter()
            .filter(|p| p.status == status)
            .map(|p| p.id)
            .collect()
    };
    let mut value = json!({
        "success": true,
        "session_state_summary": {
            "current_phase": session.state.current_phase,
            "completed_phases": with(PhaseStatus::Completed),
            "pending_phases": with(PhaseStatus::Pending),
        },
    });
    if !started.is_empty() {
        value["started_phase_ids"] = json!(started);
    }
    let running = with(PhaseStatus::InProgress);
    let next = if session.state.status == SessionStatus::Completed {
        json!({"tool": "archive_session", "args": {"session_id": session.id()}})
    } else if let Some(first) = running.first() {
        transition_call(session, json!({"completed_phase_id": first}))
    } else {
        transition_call(
            session,
            json!({"next_phase_id": session.state.current_phase}),
        )
    };
    value["next"] = json!([next]);
    value
}
