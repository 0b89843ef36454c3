//! The project and task tools: each makes the service call its `cairn task …` command makes.

use std::str::FromStr;
use std::time::Duration;

use cairn_domain::project::graph;
use cairn_domain::project::{
    Actor, ClaimTarget, MoveDetail, NewTask, ProjectId, Task, TaskId, TaskStatus,
};
use cairn_domain::{DomainError, Error, NextStep};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::render::{self, after, row, with_next};
use crate::{Outcome, ToolError, Wings, page};

/// The lease of a claim when none is given, as `cairn task claim` defaults it.
const DEFAULT_LEASE: Duration = Duration::from_secs(30 * 60);
/// How many tasks each list of `status` names; the counts say how many there are.
const STATUS_ROWS: usize = 10;

/// The arguments of `name`, refused with what was wrong when they do not fit its schema.
pub(crate) fn args<T: DeserializeOwned>(name: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| {
        ToolError::usage(
            format!("bad arguments for `{name}`: {e}"),
            "tools/list gives each tool's input schema",
        )
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Id {
    id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PageArgs {
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddArgs {
    title: String,
    parent: Option<String>,
    #[serde(default)]
    depends: Vec<String>,
    priority: Option<String>,
    description: Option<String>,
    #[serde(default)]
    criteria: Vec<String>,
    phase: Option<String>,
    estimate: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompleteArgs {
    id: String,
    actual: Option<u32>,
    agent: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockArgs {
    id: String,
    reason: String,
    agent: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecomposeArgs {
    id: String,
    into: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DependArgs {
    id: String,
    on: String,
    #[serde(default)]
    remove: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimArgs {
    agent: String,
    id: Option<String>,
    lease: Option<String>,
}

/// A value parsed by the domain's own parser, its refusal rendered like any other.
pub(crate) fn parse<T: FromStr<Err = DomainError>>(w: &Wings, text: &str) -> Result<T, ToolError> {
    text.parse().map_err(|e: DomainError| w.fail(e.into()))
}

fn agent(name: Option<String>) -> Actor {
    Actor {
        agent: name.filter(|a| !a.trim().is_empty()),
        force: false,
    }
}

pub(crate) async fn call(w: &Wings, name: &str, raw: Value) -> Outcome {
    let fail = |e: Error| w.fail(e);
    let s = &w.project;
    let p: ProjectId = s.resolve(w.project_id.as_deref()).await.map_err(fail)?;
    let p = &p;
    match name {
        "status" => {
            let _: Empty = args(name, raw)?;
            let sum = s.prime(p).await.map_err(fail)?;
            let steps = sum.next_steps();
            let list =
                |items: Vec<Value>| json!(items.into_iter().take(STATUS_ROWS).collect::<Vec<_>>());
            let value = json!({
                "project": sum.project,
                "name": sum.name,
                "goal": sum.goal,
                "status": sum.status,
                "done": sum.leaves_complete,
                "leaves": sum.leaves_total,
                "counts": sum.counts,
                "current_phase": sum.current_phase.as_ref().map(|ph| &ph.id),
                "in_progress": list(sum.in_progress.iter().map(|(id, t)| json!([id, t])).collect()),
                "blocked": list(sum.blocked.iter().map(|(id, t, why)| json!([id, t, why])).collect()),
                "ready": list(sum.next.iter().map(|(id, t)| json!([id, t])).collect()),
            });
            Ok(with_next(value, &steps))
        }
        "next" => {
            let _: Empty = args(name, raw)?;
            let state = s.load(p).await.map_err(fail)?;
            match graph::next(&state.tasks) {
                Some(task) => Ok(with_next(
                    json!({"task": task}),
                    &[NextStep::Start {
                        task: task.id.clone(),
                    }],
                )),
                None => Ok(nothing_ready(&state.tasks)),
            }
        }
        "ready" => {
            let a: PageArgs = args(name, raw)?;
            let ready = s.ready(p).await.map_err(fail)?;
            let rows: Vec<Value> = ready.iter().map(row).collect();
            let mut value = page::envelope(&rows, a.offset, a.limit);
            if let Some(first) = ready.get(a.offset) {
                value = with_next(
                    value,
                    &[NextStep::Start {
                        task: first.id.clone(),
                    }],
                );
            }
            Ok(value)
        }
        "show" => {
            let a: Id = args(name, raw)?;
            let id: TaskId = parse(w, &a.id)?;
            let state = s.load(p).await.map_err(fail)?;
            let task = state.tasks.get(&id).ok_or_else(|| unknown_task(&id))?;
            Ok(shown(task))
        }
        "add" => {
            let a: AddArgs = args(name, raw)?;
            let new = NewTask {
                title: a.title,
                level: None,
                priority: a.priority.as_deref().map(|t| parse(w, t)).transpose()?,
                parent: a.parent.as_deref().map(|t| parse(w, t)).transpose()?,
                dependencies: a
                    .depends
                    .iter()
                    .map(|d| parse(w, d))
                    .collect::<Result<_, _>>()?,
                completion_criteria: a.criteria,
                description: a.description,
                phase_id: a.phase,
                estimate_minutes: a.estimate,
                tags: Vec::new(),
            };
            let added = s.add_task_reporting(p, new).await.map_err(fail)?;
            let mut value = moved(&added.task);
            if let Some(status) = added.project_status {
                value["project_status"] = json!(status);
            }
            Ok(value)
        }
        "start" => {
            let a: Id = args(name, raw)?;
            let id = parse(w, &a.id)?;
            let m = s
                .move_task(p, &id, TaskStatus::InProgress, MoveDetail::default())
                .await
                .map_err(fail)?;
            Ok(moved(&m.task))
        }
        "complete" => {
            let a: CompleteArgs = args(name, raw)?;
            let id = parse(w, &a.id)?;
            let detail = MoveDetail {
                actual_minutes: a.actual,
                reason: None,
            };
            let m = s
                .move_task_as(p, &id, TaskStatus::Complete, detail, &agent(a.agent))
                .await
                .map_err(fail)?;
            let mut value = moved(&m.task);
            value["also"] = also(&m.task, &m.changes);
            if let Some(status) = m.project_status {
                value["project_status"] = json!(status);
            }
            Ok(value)
        }
        "block" => {
            let a: BlockArgs = args(name, raw)?;
            let id = parse(w, &a.id)?;
            let detail = MoveDetail {
                actual_minutes: None,
                reason: Some(a.reason),
            };
            let m = s
                .move_task_as(p, &id, TaskStatus::Blocked, detail, &agent(a.agent))
                .await
                .map_err(fail)?;
            Ok(moved(&m.task))
        }
        "unblock" => {
            let a: Id = args(name, raw)?;
            let id: TaskId = parse(w, &a.id)?;
            // As `cairn task unblock`: a parent was under way when it was blocked, a leaf starts
            // over; the rule that allows the move is the domain's.
            let state = s.load(p).await.map_err(fail)?;
            let task = state.tasks.get(&id).ok_or_else(|| unknown_task(&id))?;
            let to = if task.is_parent() {
                TaskStatus::InProgress
            } else {
                TaskStatus::Pending
            };
            let detail = MoveDetail {
                actual_minutes: None,
                reason: Some("unblocked".to_owned()),
            };
            let m = s.move_task(p, &id, to, detail).await.map_err(fail)?;
            Ok(moved(&m.task))
        }
        "decompose" => {
            let a: DecomposeArgs = args(name, raw)?;
            let id = parse(w, &a.id)?;
            let children = a.into.into_iter().map(NewTask::titled).collect();
            let (parent, children) = s.decompose(p, &id, children).await.map_err(fail)?;
            let steps: Vec<NextStep> = children
                .first()
                .map(|c| NextStep::Start { task: c.id.clone() })
                .into_iter()
                .collect();
            Ok(with_next(
                json!({"parent": {"id": parent.id, "status": parent.status}, "children": children.iter().map(row).collect::<Vec<_>>()}),
                &steps,
            ))
        }
        "depend" => {
            let a: DependArgs = args(name, raw)?;
            let (id, on) = (parse(w, &a.id)?, parse(w, &a.on)?);
            let task = s.depend(p, &id, &on, a.remove).await.map_err(fail)?;
            Ok(json!({"id": task.id, "deps": task.dependencies}))
        }
        "claim" => {
            let a: ClaimArgs = args(name, raw)?;
            let target = match &a.id {
                Some(id) => ClaimTarget::Task(parse(w, id)?),
                None => ClaimTarget::Next,
            };
            let lease = match &a.lease {
                Some(text) => {
                    cairn_domain::execution::duration::parse_duration(text).ok_or_else(|| {
                        ToolError::usage(
                            format!("`{text}` is not a duration"),
                            "write it like 90s, 30m, 1h or 1h30m",
                        )
                    })?
                }
                None => DEFAULT_LEASE,
            };
            let task = s.claim(p, &target, &a.agent, lease).await.map_err(fail)?;
            let mut value = moved(&task);
            value["claimed_by"] = json!(task.claimed_by);
            value["lease_expires_at"] = json!(
                task.lease_expires_at
                    .map(|t| cairn_domain::time::format_rfc3339(&t))
            );
            value["next"] =
                json!([{"tool": "complete", "args": {"id": task.id, "agent": a.agent}}]);
            Ok(value)
        }
        _ => unreachable!("tools::find only gives project tools to this wing"),
    }
}

/// A tool that takes no arguments still refuses some, so a misspelt call is noticed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

fn unknown_task(id: &TaskId) -> ToolError {
    ToolError {
        kind: "unknown_task",
        message: format!("no task {id} in this project"),
        hint: None,
        next: vec![json!({"tool": "ready"})],
    }
}

/// A task after a move: where it stands and what to do with it now.
fn moved(task: &Task) -> Value {
    with_next(
        json!({"id": task.id, "title": task.title, "status": task.status}),
        &after(task),
    )
}

/// The other tasks a move changed (a parent completing with its last subtask …).
fn also(task: &Task, changes: &[(TaskId, TaskStatus, TaskStatus)]) -> Value {
    json!(
        changes
            .iter()
            .filter(|(id, _, _)| id != &task.id)
            .map(|(id, _, to)| json!([id, to]))
            .collect::<Vec<_>>()
    )
}

/// `show`: the task as tasks.json holds it, and what to do with it.
fn shown(task: &Task) -> Value {
    with_next(json!({"task": task}), &after(task))
}

/// Why nothing is ready, in counts, and what would change that.
fn nothing_ready(doc: &cairn_domain::project::TaskDoc) -> Value {
    let open: Vec<&Task> = doc
        .tasks
        .iter()
        .filter(|t| !t.is_parent() && t.status.is_open())
        .collect();
    let blocked = open
        .iter()
        .filter(|t| t.status == TaskStatus::Blocked)
        .count();
    let steps = if doc.tasks.is_empty() {
        vec![NextStep::AddTask]
    } else if let Some(t) = open.iter().find(|t| t.status == TaskStatus::Blocked) {
        vec![NextStep::Unblock { task: t.id.clone() }]
    } else {
        Vec::new()
    };
    render::with_next(
        json!({"task": null, "open": open.len(), "blocked": blocked}),
        &steps,
    )
}
