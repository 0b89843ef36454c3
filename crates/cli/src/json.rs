//! The `--json` output shapes. They are a stable interface: fields may be added, never renamed or
//! removed. Output is one pretty-printed JSON value on stdout followed by a newline.
//!
//! *Task* is a task object exactly as it appears in `tasks.json` (same field names, optional
//! fields absent when unset, unknown fields kept). *Project* is `project.json` as it is on disk.
//!
//! **Lists come a page at a time** (see `crate::page`): by default at most 50 items or about
//! 6,000 characters, chosen with `--limit N`, `--offset N` and `--all`. A list is the envelope
//! *Page of X*: `{"items": [X, …], "total": n, "offset": n, "returned": n, "truncated": bool,
//! "next_offset": n|null}` — `total` counts the whole list, `truncated` is true when anything
//! was left out, and `next_offset` is the `--offset` of the next page (`null` on the last one).
//!
//! | command | shape |
//! |---|---|
//! | `init`, `project show`, `project set-status` | *Project* |
//! | `project list` | *Page of Project* |
//! | `task add`, `task show`, every transition verb, `task move`, `task depend` | *Task* (after the change) |
//! | `task decompose` | `{"parent": Task, "children": [Task, …]}` |
//! | `task list`, `task ready` | *Page of Task* (`ready` in the order `next` hands them out) |
//! | `task next` | *Task* or `null` |
//! | `task waves` | `{"waves": [["T-001", …], …], "stuck": ["T-009", …], "first_wave": n\|null}` + the paging fields, paged by task: `first_wave` numbers the page's first wave from 1 |
//! | `task graph` | `{"format": "mermaid"\|"dot", "graph": "<text>"}` + the paging fields, paged by task (node) |
//! | `task edit` | *Task* (after the edit) |
//! | `phase add`, `phase start` | *Phase*: `{"id", "name", "status", …}` as in project.json |
//! | `phase list` | `[{"id", "name", "status", "tasks": n, "complete": n, "open": ["T-003", …], "more": {"open": n}}, …]` (`tasks` counts leaves, cancelled ones left out; `open` names the first 10 unfinished tasks and `more.open` counts the rest: `task list --phase ID` lists them) |
//! | `phase complete` | `{"phase": Phase, "still_open": ["T-003", …], "more": {"still_open": n}, "checkpoint": N\|null}` (`still_open` is non-empty only with `--force`: its first 10, `more` counts the rest, the log names them all) |
//! | `checkpoint list` | *Page of Checkpoint*, oldest first |
//! | `checkpoint write` | *Checkpoint* |
//! | `checkpoint restore` | `{"restored": N, "tasks": count}` |
//! | `log` | *Page of* `{"at": "<RFC 3339>", "event": "TASK_COMPLETE", "fields": {"task": "T-001", …}}` |
//! | `velocity` | `progress/velocity.json`: `{"version", "updated_at", "window", "completed_count", "mean_actual_minutes", "estimate_ratio", "throughput_per_day", "remaining_tasks", "remaining_estimate_minutes", "eta"}` (unknown values `null`) |
//! | `reconcile` | `{"applied": bool, "reconciled": [Change, …], "stale": [Change, …]}` |
//! | `doctor` | `{"plan_pointer": {"dangling": plan\|null, "repaired": bool}, "git": [{"message", "fix"}, …] (a repository whose .gitattributes names cairn's merge driver, set up short of it), "clean": bool, "scrutiny": "usual"\|"full", "findings": [Finding, …], "damaged": [{"path", "detail"}], "debris": [path, …], "torn_log": bool, "unmerged_log": line\|null (a git merge left the log conflicted near its end: writes are refused until it is finished), "repaired": [text, …], "debris_removed": [path, …]}` + the paging fields, which page `findings` (`clean` and the exit code count all of them) |
//! | `status` | `{"project", "name", "goal", "status", "total", "leaves_total", "leaves_complete", "counts": {STATUS: n, …}, "in_progress": [Ref], "claims": [{"id", "agent", "lease_expires_at"}], "blocked": [Ref + "reason"], "next": [Ref], "phases": [{"id", "status"}], "current_phase": {"id", "name", "status", "tasks", "complete"}\|null, "critical_path": {"tasks": [Ref + "estimate_minutes"], "remaining_minutes": n}, "more": {"in_progress", "claims", "blocked", "critical_path"}}`: each list shows its first 10 rows and `more` counts the rest (`task list` pages through them) |
//! | `prime` | `{"prime": "<text>", "chars": n}` |
//! | `plan new`, `plan step`, `plan close` | *Plan*: `{"id", "goal", "state", "iteration", "created_at", "current_step", "fix_attempts": [{"step", "attempt", "note"}], "manifest": [{"path", "kind", "lines_added", "lines_removed"}], "abstractions", "strikes": {area: n}, "scope_estimate", "lines_added_total", "last_transition": {"from", "to", "at"}\|null, "budget": Budget}` |
//! | `plan status`, `plan resume` | *Plan* + `"allowed": [STATE], "decisions": [Decision], "checkpoints": [name], "forced_replan": {"area", "strikes"}\|null, "nuclear": text\|null, "next_steps": [Step]` (`resume` adds `"resume": "<text>"`) |
//! | `plan go`, `plan approve` | `{"from", "to", "iteration", "decision": Decision\|null, "checkpoint": name\|null, "nuclear": text\|null, "plan": Plan}` |
//! | `plan fix` | `{"step", "attempt", "max", "remaining"}`; `plan fail`: `{"area", "strikes", "max", "replan_forced"}` |
//! | `plan decide` | *Decision*: `{"id": "D-001", "number", "from", "to", "date", "body"}`; `plan finding`: `{"recorded": true, "file"}` |
//! | `plan budget` | `{"plan", "iteration", "budget": Budget, "scope_estimate", "lines_added_total", "nuclear"}`, *Budget* being `{"files_added", "max_files_added", "new_abstractions", "max_new_abstractions", "lines_added", "lines_removed", "net_lines", "over": [text]}` |
//! | `plan list` | *Page of* `{"id", "state", "iteration", "goal", "current", "damaged": text\|null}` |
//! | any failure | `{"error": {"kind", "message", "hint", "exit_code"}}`, with that exit code |
//!
//! where *Checkpoint* is `{"number": N, "name": "checkpoint-NNN", "written_at": "<RFC 3339>"|null,
//! "size_bytes": n}`, *Change* is `{"task", "from", "to", "reason"}`, *Finding* is `{"severity":
//! "error"|"warning", "code", "task": id|null, "message", "fixable": bool, "next_steps": [Step, …]}`,
//! *Step* is a typed next step, `{"action": "doctor_fix"}` or `{"action": "remove_dependency",
//! "task", "on"}` (`cairn_domain::NextStep`), and *Ref* is `{"id", "title"}`. `counts` lists every status, zeros included, in the order of the status table.
//! `completions` prints the shell script whatever `--json` says.
//!
//! **Errors under `--json`** go to stdout like any answer, so a program reads one JSON value
//! either way: `kind` is a stable snake_case name of the error class (`usage`,
//! `option_not_applicable`, `unknown_task`, `illegal_transition`, `invalid`, `lock_timeout`,
//! `corrupt`, `already_exists`, …; see `crate::exit`), `message` the text cairn prints as
//! `error:`, `hint` the next step or `null`, `exit_code` the process's exit code. Recovery
//! notices and warnings stay on stderr. `doctor`'s exit code 9 is not an error: its report is the
//! answer.

use serde::Serialize;
use serde_json::{Value, json};

use crate::page::summary_rows;

use cairn_domain::project::phases::PhaseProgress;
use cairn_domain::project::policy::Reconciled;
use cairn_domain::project::report::Summary;
use cairn_domain::project::service::{DoctorReport, Outlook, PhaseCompleted, ReconcileReport};
use cairn_domain::project::store::CheckpointInfo;
use cairn_domain::project::{TaskId, TaskStatus};
use cairn_domain::time::format_rfc3339;

use crate::exit::{Code, Failure};

/// The short form of the table above, for `cairn --help`.
pub const JSON_HELP: &str = "JSON output (--json): one JSON value on stdout, errors included.
  a command that creates or changes a task  the task, as in tasks.json
  task list, task ready, log, project list,
  checkpoint list                           a page: {\"items\": [...], \"total\", \"offset\",
                                            \"returned\", \"truncated\", \"next_offset\"}
  task next                                 a task, or null
  task decompose                            {\"parent\": task, \"children\": [task, ...]}
  init, project show, project set-status    the project, as in project.json
  phase add, phase start                    the phase, as in project.json
  phase list                                [phase + \"tasks\", \"complete\", \"open\", \"more\", ...]
  any failure                               {\"error\": {\"kind\", \"message\", \"hint\", \"exit_code\"}}
  other commands                            an object; see the cairn-cli docs (json.rs)

Lists print one page: at most 50 rows or about 6,000 characters unless --limit N or --all;
--offset N skips rows. A partial page ends with a line (or, in JSON, next_offset) saying how to
get the rest.";

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
        "scrutiny": report.scrutiny,
        "findings": report.findings,
        "damaged": report.store.damaged.iter().map(|(path, detail)| json!({"path": path, "detail": detail})).collect::<Vec<_>>(),
        "debris": report.store.debris,
        "torn_log": report.store.torn_log,
        "unmerged_log": report.store.unmerged_log,
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

/// `phase list`: each phase with its first open tasks, `more.open` counting the rest (a phase of
/// 20,000 tasks named them all; `task list --phase ID` pages through them).
pub fn phases(phases: &[PhaseProgress]) -> Value {
    phases
        .iter()
        .map(|p| {
            let (open, more) = summary_rows(&p.open);
            json!({
                "id": p.id,
                "name": p.name,
                "status": p.status,
                "tasks": p.tasks,
                "complete": p.complete,
                "open": open,
                "more": {"open": more},
            })
        })
        .collect()
}

/// `phase complete`: the phase, the first tasks it left open (`--force`), `more.still_open`
/// counting the rest (the log's PHASE_COMPLETE entry names them all).
pub fn phase_completed(done: &PhaseCompleted) -> Value {
    let (still_open, more) = summary_rows(&done.still_open);
    json!({
        "phase": done.phase,
        "still_open": still_open,
        "more": {"still_open": more},
        "checkpoint": done.checkpoint,
    })
}

/// `status`: the summary, the current phase and the critical path.
pub fn outlook(o: &Outlook) -> Value {
    let mut value = status(&o.summary);
    value["current_phase"] = json!(o.summary.current_phase.as_ref().map(|p| json!({
        "id": p.id,
        "name": p.name,
        "status": p.status,
        "tasks": p.tasks,
        "complete": p.complete,
    })));
    let (path, path_more) = summary_rows(&o.critical_path);
    value["critical_path"] = json!({
        "tasks": path.iter().map(|(id, title, estimate)| json!({"id": id, "title": title, "estimate_minutes": estimate})).collect::<Vec<_>>(),
        "remaining_minutes": o.critical_minutes,
    });
    value["more"]["critical_path"] = json!(path_more);
    value
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
    let (in_progress, in_progress_more) = summary_rows(&s.in_progress);
    let (claims, claims_more) = summary_rows(&s.claims);
    let (blocked, blocked_more) = summary_rows(&s.blocked);
    json!({
        "project": s.project,
        "name": s.name,
        "goal": s.goal,
        "status": s.status,
        "total": s.total,
        "leaves_total": s.leaves_total,
        "leaves_complete": s.leaves_complete,
        "counts": counts,
        "in_progress": refs(in_progress),
        "claims": claims.iter().map(|(id, agent, until)| json!({"id": id, "agent": agent, "lease_expires_at": until.as_ref().map(format_rfc3339)})).collect::<Vec<_>>(),
        "blocked": blocked.iter().map(|(id, title, reason)| json!({"id": id, "title": title, "reason": reason})).collect::<Vec<_>>(),
        "next": refs(&s.next),
        "phases": s.phases.iter().map(|(id, status)| json!({"id": id, "status": status})).collect::<Vec<_>>(),
        "more": {"in_progress": in_progress_more, "claims": claims_more, "blocked": blocked_more},
    })
}
