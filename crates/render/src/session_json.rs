//! The execution wing's values as JSON, one shape for every interface that shows them:
//! `cairn session … --json` and the MCP server's `session` tool.

use cairn_domain::execution::LockFile;
use cairn_domain::execution::duration::format_duration;
use cairn_domain::execution::lock::LockDecision;
use cairn_domain::execution::progress::{ActiveTask, WaveProgress};
use cairn_domain::execution::run::{Recovered, TaskStep, WavePlan};
use cairn_domain::execution::service::{ArchivedSession, LiveStatus};
use cairn_domain::execution::state::Tally;
use cairn_domain::time::format_rfc3339;
use serde_json::{Value, json};
use std::fmt::Write as _;

/// `cairn session status --json` (and the `session` tool's `status`): the live session.
pub fn status_json(status: &LiveStatus) -> Value {
    let state = &status.state;
    json!({
        "session": state.id,
        "phase": state.phase.to_string(),
        "wave": wave_json(state.wave),
        "max_parallel": state.max_parallel,
        "started_at": state.started_at.as_ref().map(format_rfc3339),
        "active": status.active.iter().map(active_json).collect::<Vec<_>>(),
        "tally": tally_json(&state.tally),
        "lock": status.lock.as_ref().map(lock_json),
        "stale": status.stale,
    })
}

/// One archived session, as `cairn session list --json` lists it.
pub fn archive_json(a: &ArchivedSession) -> Value {
    let tally = a
        .summary
        .as_ref()
        .map(|s| s.tally())
        .or(a.state.as_ref().map(|s| s.tally))
        .unwrap_or_default();
    json!({
        "dir": a.dir,
        "interrupted": a.interrupted,
        "session": a.state.as_ref().map(|s| s.id.clone()).filter(|id| !id.is_empty()),
        "wave": wave_json(a.state.as_ref().and_then(|s| s.wave)),
        "started_at": a.state.as_ref().and_then(|s| s.started_at).as_ref().map(format_rfc3339),
        "finished_at": a.summary.as_ref().and_then(|s| s.finished).as_ref().map(format_rfc3339),
        "tally": tally_json(&tally),
    })
}

pub fn step_json(step: &TaskStep) -> Value {
    json!({
        "task": step.task,
        "list_id": step.list_id,
        "title": step.title,
        "status": step.status,
        "attempts": step.attempts.map(|a| format!("{}/{}", a.used, a.max)),
        "wave": wave_json(step.progress.wave),
        "active": step.progress.active.iter().map(active_json).collect::<Vec<_>>(),
        "completed": step.progress.completed.iter().map(|t| json!({
            "id": t.id,
            "subject": t.subject,
            "result": t.result.to_string(),
            "duration": t.duration.map(format_duration),
        })).collect::<Vec<_>>(),
    })
}

pub fn active_json(task: &ActiveTask) -> Value {
    json!({"id": task.id, "subject": task.subject, "phase": task.phase})
}

pub fn lock_json(lock: &LockFile) -> Value {
    json!({
        "session": lock.task_execution_id,
        "timestamp": lock.timestamp.as_ref().map(format_rfc3339),
        "pid": lock.pid,
        "host": lock.host,
    })
}

pub fn lock_word(lock: &LockDecision) -> &'static str {
    match lock {
        LockDecision::Proceed => "free",
        LockDecision::Stale { .. } => "stale",
        LockDecision::Forced { .. } => "forced",
        LockDecision::Refuse { .. } => "refused",
    }
}

pub fn wave_json(wave: Option<WaveProgress>) -> Value {
    wave.map_or(
        Value::Null,
        |w| json!({"current": w.current, "total": w.total}),
    )
}

pub fn tally_json(tally: &Tally) -> Value {
    json!({
        "pass": tally.pass,
        "partial": tally.partial,
        "fail": tally.fail,
        "task_time": format_duration(tally.task_time),
    })
}

pub fn recovered_json(r: &Recovered) -> Value {
    json!({
        "archive": r.archive,
        "reset": r.reset,
        "completed": r.completed,
        "claimed": r.claimed.iter().map(|(task, agent)| json!({"task": task, "agent": agent})).collect::<Vec<_>>(),
    })
}

/// `execution_plan.md`: the waves as the session will run them.
pub fn execution_plan(plan: &WavePlan) -> String {
    let mut out = String::from("# Execution Plan\n\n");
    let _ = writeln!(out, "Project: {}", plan.project);
    if let Some(group) = &plan.group {
        let _ = writeln!(out, "Group: {group}");
    }
    let _ = writeln!(
        out,
        "Tasks: {} in {} waves (max parallel {})",
        plan.task_count(),
        plan.waves.len(),
        plan.max_parallel
    );
    for (n, wave) in plan.waves.iter().enumerate() {
        let _ = write!(out, "\n## Wave {}\n", n + 1);
        for task in wave {
            let _ = writeln!(
                out,
                "- [{}] {} ({})",
                task.list_id,
                one_line(&task.title),
                task.id
            );
        }
    }
    out
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
