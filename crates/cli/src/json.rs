//! The `--json` output shapes. They are a stable interface: fields may be added, never renamed or
//! removed. Output is one pretty-printed JSON value on stdout followed by a newline; errors go to
//! stderr as text (stdout stays empty) and the exit code says what kind of failure it was.
//!
//! *Task* is a task object exactly as it appears in `tasks.json` (same field names, optional
//! fields absent when unset, unknown fields kept). *Project* is `project.json` as it is on disk.
//!
//! | command | shape |
//! |---|---|
//! | `init`, `project show`, `project set-status` | *Project* |
//! | `project list` | `[Project, …]` |
//! | `task add`, `task show`, every transition verb, `task move`, `task depend` | *Task* (after the change) |
//! | `task decompose` | `{"parent": Task, "children": [Task, …]}` |
//! | `task list`, `task ready` | `[Task, …]` (`ready` in the order `next` hands them out) |
//! | `task next` | *Task* or `null` |
//! | `task waves` | `{"waves": [["T-001", …], …], "stuck": ["T-009", …]}` |
//! | `task graph` | `{"format": "mermaid"\|"dot", "graph": "<text>"}` |
//! | `phase complete` | `{"phase": {"id", "name", "status", …}, "checkpoint": N\|null}` |
//! | `checkpoint list` | `[Checkpoint, …]`, oldest first |
//! | `checkpoint write` | *Checkpoint* |
//! | `checkpoint restore` | `{"restored": N, "tasks": count}` |
//! | `log` | `[{"at": "<RFC 3339>", "event": "TASK_COMPLETE", "fields": {"task": "T-001", …}}, …]` |
//! | `velocity` | `progress/velocity.json`: `{"version", "updated_at", "window", "completed_count", "mean_actual_minutes", "estimate_ratio", "throughput_per_day", "remaining_tasks", "remaining_estimate_minutes", "eta"}` (unknown values `null`) |
//! | `reconcile` | `{"applied": bool, "reconciled": [Change, …], "stale": [Change, …]}` |
//! | `doctor` | `{"clean": bool, "findings": [Finding, …], "damaged": [{"path", "detail"}], "debris": [path, …], "torn_log": bool, "repaired": [text, …], "debris_removed": [path, …]}` |
//! | `status` | `{"project", "name", "goal", "status", "total", "leaves_total", "leaves_complete", "counts": {STATUS: n, …}, "in_progress": [Ref], "blocked": [Ref + "reason"], "next": [Ref], "phases": [{"id", "status"}]}` |
//! | `prime` | `{"prime": "<text>", "chars": n}` |
//!
//! where *Checkpoint* is `{"number": N, "name": "checkpoint-NNN", "written_at": "<RFC 3339>"|null,
//! "size_bytes": n}`, *Change* is `{"task", "from", "to", "reason"}`, *Finding* is `{"severity":
//! "error"|"warning", "code", "task": id|null, "message", "fixable": bool, "next_steps": [Step, …]}`,
//! *Step* is a typed next step, `{"action": "doctor_fix"}` or `{"action": "remove_dependency",
//! "task", "on"}` (`cairn_domain::NextStep`), and *Ref* is `{"id", "title"}`. `counts` lists every status, zeros included, in the order of the status table.
//! `completions` prints the shell script whatever `--json` says.

use serde::Serialize;
use serde_json::{Value, json};

use cairn_domain::project::policy::Reconciled;
use cairn_domain::project::report::Summary;
use cairn_domain::project::service::{DoctorReport, ReconcileReport};
use cairn_domain::project::store::CheckpointInfo;
use cairn_domain::project::{TaskId, TaskStatus};
use cairn_domain::time::format_rfc3339;

use crate::exit::{Code, Failure};

/// The short form of the table above, for `cairn --help`.
pub const JSON_HELP: &str = "JSON output (--json): one JSON value on stdout; errors stay on stderr.
  a command that creates or changes a task  the task, as in tasks.json
  task list, task ready                     [task, ...]
  task next                                 a task, or null
  task decompose                            {\"parent\": task, \"children\": [task, ...]}
  init, project show, project set-status    the project, as in project.json
  other commands                            an object; see the cairn-cli docs (json.rs)";

/// Pretty JSON with a trailing newline.
pub fn render(value: &impl Serialize) -> Result<String, Failure> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| Failure::new(Code::Internal, format!("cannot render JSON: {e}")))?;
    text.push('\n');
    Ok(text)
}

pub fn checkpoint(info: &CheckpointInfo) -> Value {
    json!({
        "number": info.number,
        "name": checkpoint_name(info.number),
        "written_at": info.written_at.as_ref().map(format_rfc3339),
        "size_bytes": info.size_bytes,
    })
}

/// `checkpoint-007`; numbers past 999 keep all their digits.
pub fn checkpoint_name(number: u32) -> String {
    format!("checkpoint-{number:03}")
}

fn change(r: &Reconciled) -> Value {
    json!({"task": r.task, "from": r.from, "to": r.to, "reason": r.reason})
}

pub fn reconcile(report: &ReconcileReport) -> Value {
    json!({
        "applied": report.applied,
        "reconciled": report.reconciled.iter().map(change).collect::<Vec<_>>(),
        "stale": report.stale.iter().map(change).collect::<Vec<_>>(),
    })
}

pub fn doctor(report: &DoctorReport) -> Value {
    json!({
        "clean": report.is_clean(),
        "findings": report.findings,
        "damaged": report.store.damaged.iter().map(|(path, detail)| json!({"path": path, "detail": detail})).collect::<Vec<_>>(),
        "debris": report.store.debris,
        "torn_log": report.store.torn_log,
        "repaired": report.repaired,
        "debris_removed": report.debris_removed,
    })
}

fn refs(items: &[(TaskId, String)]) -> Vec<Value> {
    items
        .iter()
        .map(|(id, title)| json!({"id": id, "title": title}))
        .collect()
}

pub fn status(s: &Summary) -> Value {
    let counts: serde_json::Map<String, Value> = TaskStatus::ALL
        .iter()
        .map(|st| {
            (
                st.as_str().to_owned(),
                json!(s.counts.get(st.as_str()).copied().unwrap_or(0)),
            )
        })
        .collect();
    json!({
        "project": s.project,
        "name": s.name,
        "goal": s.goal,
        "status": s.status,
        "total": s.total,
        "leaves_total": s.leaves_total,
        "leaves_complete": s.leaves_complete,
        "counts": counts,
        "in_progress": refs(&s.in_progress),
        "blocked": s.blocked.iter().map(|(id, title, reason)| json!({"id": id, "title": title, "reason": reason})).collect::<Vec<_>>(),
        "next": refs(&s.next),
        "phases": s.phases.iter().map(|(id, status)| json!({"id": id, "status": status})).collect::<Vec<_>>(),
    })
}
