//! The `session` tool: the `cairn session …` commands as one tool with an `action`, each making
//! the [`SessionRunner`] or [`ExecutionService`](cairn_domain::execution::service::ExecutionService)
//! call its command makes and answering with the JSON `cairn --json session …` prints (one shape,
//! from `cairn_render::session_json`).

use cairn_domain::Error;
use cairn_domain::execution::duration::parse_duration;
use cairn_domain::execution::run::{
    Selection, SessionRunner, SessionStart, TaskEnd, TaskEndReport,
};
use cairn_domain::project::TaskId;
use cairn_render::session_json::{
    archive_json, lock_word, recovered_json, status_json, step_json, tally_json, wave_json,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::project::{args, parse};
use crate::{Outcome, ToolError, Wings, page};

/// The actions, as `tools/list` names them.
pub const ACTIONS: &[&str] = &[
    "start",
    "status",
    "task_start",
    "done",
    "fail",
    "skip",
    "context",
    "wave_next",
    "finish",
    "recover",
    "list",
];

/// Most tasks in one wave when `max_parallel` is not given, as `cairn session start` defaults it.
const DEFAULT_MAX_PARALLEL: u32 = 5;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionArgs {
    action: String,
    /// The task (`task_start`, `done`, `fail`, `skip`, `context`).
    id: Option<String>,
    group: Option<String>,
    max_parallel: Option<u32>,
    #[serde(default)]
    tasks: Vec<String>,
    #[serde(default)]
    ready: bool,
    #[serde(default)]
    force: bool,
    duration: Option<String>,
    tokens: Option<u64>,
    note: Option<String>,
    text: Option<String>,
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
}

fn need_id(w: &Wings, action: &str, id: Option<&str>) -> Result<TaskId, ToolError> {
    let id = id.ok_or_else(|| {
        ToolError::usage(
            format!("session action `{action}` needs `id` (the task)"),
            format!("call session with {{\"action\":\"{action}\",\"id\":\"T-001\"}}"),
        )
    })?;
    parse(w, id)
}

pub(crate) async fn call(w: &Wings, raw: Value) -> Outcome {
    let a: SessionArgs = args("session", raw)?;
    let fail = |e: Error| w.fail(e);
    let execution = &w.execution;
    let action = a.action.as_str();
    let project = || async {
        w.project
            .resolve(w.project_id.as_deref())
            .await
            .map_err(fail)
    };
    let runner = SessionRunner::new(execution.clone(), &w.project);
    match action {
        "start" => {
            let project = project().await?;
            let selection = if a.ready {
                Selection::Ready
            } else if a.tasks.is_empty() {
                Selection::All
            } else {
                Selection::Tasks(
                    a.tasks
                        .iter()
                        .map(|t| parse(w, t))
                        .collect::<Result<_, _>>()?,
                )
            };
            let started = runner
                .start(
                    SessionStart {
                        project: project.clone(),
                        group: a.group,
                        max_parallel: a.max_parallel.unwrap_or(DEFAULT_MAX_PARALLEL),
                        selection,
                        force: a.force,
                    },
                    cairn_render::session_json::execution_plan,
                )
                .await
                .map_err(fail)?;
            let outcome = &started.outcome;
            let plan = &started.plan;
            // The waves by size, and the first wave's tasks (paged): on a 10,000-task project
            // every wave's tasks would be far over a result's budget; `execution_plan.md` has all.
            let first: Vec<Value> = plan
                .waves
                .first()
                .map(|w| {
                    w.iter()
                        .map(|t| json!({"id": t.id, "title": t.title}))
                        .collect()
                })
                .unwrap_or_default();
            let mut value = json!({
                "session": outcome.session_id,
                "project": project,
                "wave_sizes": plan.waves.iter().map(Vec::len).collect::<Vec<_>>(),
                "wave_1": page::envelope(&first, 0, None),
                "max_parallel": plan.max_parallel,
                "lock": lock_word(&outcome.lock),
                "recovered": recovered_json(&started.recovered),
                "wave": wave_json(started.progress.wave),
            });
            if let Some(first) = plan.waves.first().and_then(|w| w.first()) {
                value["next"] =
                    json!([{"tool": "session", "args": {"action": "task_start", "id": first.id}}]);
            }
            Ok(value)
        }
        "status" => {
            let status = execution.status().await.map_err(fail)?;
            Ok(status.as_ref().map_or(Value::Null, status_json))
        }
        "task_start" => {
            let project = project().await?;
            let id = need_id(w, action, a.id.as_deref())?;
            let step = runner.start_task(&project, &id).await.map_err(fail)?;
            let mut value = capped(step_json(&step));
            value["next"] = json!([{"tool": "session", "args": {"action": "done", "id": id}}]);
            Ok(value)
        }
        "done" | "fail" | "skip" => {
            let project = project().await?;
            let id = need_id(w, action, a.id.as_deref())?;
            let duration = match &a.duration {
                Some(text) => Some(parse_duration(text).ok_or_else(|| ToolError {
                    kind: "invalid",
                    message: format!("duration `{text}` is not a duration"),
                    hint: Some("write it as the task log does: `2m 34s`, `94s` or `1h 5m`".into()),
                    next: Vec::new(),
                })?),
                None => None,
            };
            let end = match action {
                "done" => TaskEnd::Done,
                "fail" => TaskEnd::Failed,
                _ => TaskEnd::Skipped,
            };
            let report = TaskEndReport {
                end,
                duration,
                tokens: a.tokens,
                note: a.note,
            };
            let step = runner.end_task(&project, &id, report).await.map_err(fail)?;
            Ok(step_json(&step))
        }
        "context" => {
            let id = need_id(w, action, a.id.as_deref())?;
            let text = a.text.ok_or_else(|| {
                ToolError::usage(
                    "session action `context` needs `text` (the learnings, one per line)",
                    "call session with {\"action\":\"context\",\"id\":\"T-001\",\"text\":\"…\"}",
                )
            })?;
            let list_id = runner.add_context(&id, &text).await.map_err(fail)?;
            Ok(
                json!({"task": id, "list_id": list_id, "file": format!("context-task-{list_id}.md")}),
            )
        }
        "wave_next" => {
            let (merged, progress) = execution.next_wave().await.map_err(fail)?;
            Ok(json!({"wave": wave_json(progress.wave), "merged": merged}))
        }
        "finish" => {
            let done = runner.finish().await.map_err(fail)?;
            Ok(json!({
                "session": done.session_id,
                "archive_dir": format!(".claude/sessions/{}/", done.archive_dir),
                "tally": tally_json(&done.tally),
                "merged": done.merged_task_contexts,
            }))
        }
        "recover" => {
            let project = project().await?;
            let recovered = runner.recover(&project, a.force).await.map_err(fail)?;
            Ok(match &recovered {
                None => json!({"recovered": false}),
                Some((r, lock)) => {
                    let mut v = recovered_json(r);
                    v["recovered"] = json!(true);
                    v["lock"] = json!(lock_word(lock));
                    v
                }
            })
        }
        "list" => {
            let archives = execution.archives().await.map_err(fail)?;
            let rows: Vec<Value> = archives.iter().map(archive_json).collect();
            Ok(page::envelope(&rows, a.offset, a.limit))
        }
        other => Err(ToolError::usage(
            format!("no session action `{other}`"),
            format!("action is one of {}", ACTIONS.join(", ")),
        )),
    }
}

/// The tasks a step's answer lists as completed this session: the last [`COMPLETED_ROWS`] and the
/// count, since a long session completes thousands.
fn capped(mut step: Value) -> Value {
    if let Some(completed) = step["completed"].as_array_mut() {
        let total = completed.len();
        if total > COMPLETED_ROWS {
            completed.drain(..total - COMPLETED_ROWS);
        }
        step["completed_total"] = json!(total);
    }
    step
}

/// How many completed tasks a step's answer lists.
const COMPLETED_ROWS: usize = 20;
