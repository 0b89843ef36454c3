//! A Claude Code task list, `~/.claude/tasks/{listId}/`: one `{id}.json` per task (the fields
//! are documented in `cairn_domain::tasklist::task`, whose defensive parser reads them here).
//! The external id is the file's `id`; `blockedBy` are the dependencies. Claude Code lists are
//! flat: cairn writes a subtask's parent as `metadata.parent` and reads it back.
//!
//! | Claude Code | cairn | back |
//! |---|---|---|
//! | `pending` | PENDING | PENDING, IN_RESEARCH, RESEARCHED, BLOCKED → `pending` |
//! | `in_progress` | IN_PROGRESS | IN_PROGRESS, VALIDATING → `in_progress` |
//! | `completed` | COMPLETE | COMPLETE → `completed` |
//! | | | CANCELLED: not written (as `cairn tasklist push`) |

use cairn_domain::project::import::{Incoming, IncomingTask};
use cairn_domain::project::{Task, TaskDoc, TaskId, TaskStatus};
use cairn_domain::tasklist::store::task_order;
use cairn_domain::tasklist::sync::list_status;
use cairn_domain::tasklist::{
    ClaudeTask, ClaudeTaskStatus, TaskFileWarning, is_safe_task_id, parse_task,
};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};

use crate::Failed;
use crate::common::{export_key, json_error};

pub const SOURCE: &str = "claude";

pub fn parse(files: &[(String, String)]) -> Result<Incoming, Failed> {
    let mut read: Vec<ClaudeTask> = Vec::new();
    for (name, text) in files {
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        let value: Value =
            serde_json::from_str(text).map_err(|e| json_error(&e, &format!("{name}, ")))?;
        let parsed = parse_task(&value, Some(stem));
        let Some(task) = parsed.task else {
            let why = parsed
                .warnings
                .iter()
                .map(TaskFileWarning::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            return Err((name.clone(), why));
        };
        read.push(task);
    }
    if read.is_empty() {
        return Err((
            "path".to_owned(),
            "no task files (`<id>.json`) in the directory".to_owned(),
        ));
    }
    read.sort_by(|a, b| task_order(&a.id).cmp(&task_order(&b.id)));
    let tasks = read
        .into_iter()
        .map(|c| {
            let status = match c.status {
                ClaudeTaskStatus::Pending => TaskStatus::Pending,
                ClaudeTaskStatus::InProgress => TaskStatus::InProgress,
                ClaudeTaskStatus::Completed => TaskStatus::Complete,
            };
            let mut task = IncomingTask::new(c.id.clone(), c.subject.clone(), status);
            task.description = Some(c.description.clone()).filter(|d| !d.trim().is_empty());
            task.dependencies = c.blocked_by.clone();
            task.parent = c
                .metadata
                .as_ref()
                .and_then(|m| m.get("parent"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            task
        })
        .collect();
    Ok(Incoming::Foreign {
        source: SOURCE.to_owned(),
        tasks,
    })
}

fn key(task: &Task) -> String {
    let own = || task.id.number().to_string();
    // The id names the file, so one another tool wrote that is no safe file name is not kept.
    Some(export_key(task, SOURCE, own))
        .filter(|k| is_safe_task_id(k))
        .unwrap_or_else(own)
}

/// One file per task that Claude Code has a status for, named `{id}.json`.
pub fn render(doc: &TaskDoc) -> Vec<(String, String)> {
    let written: Vec<&Task> = doc
        .tasks
        .iter()
        .filter(|t| list_status(t.status).is_some())
        .collect();
    // Maps built once, not scans per task: 100,000 tasks took minutes. Of a repeated id the first
    // task wins (inserted last), as the scan's `find` had it.
    let by_id: HashMap<&TaskId, &Task> = written.iter().rev().map(|t| (&t.id, *t)).collect();
    let key_of = |id| by_id.get(id).map(|t| key(t));
    let mut blockers: HashMap<&TaskId, Vec<&Task>> = HashMap::new();
    for o in &written {
        // Each blocker once, in list order, as the scan found them.
        let mut seen = HashSet::new();
        for d in o.dependencies.iter().filter(|d| seen.insert(*d)) {
            blockers.entry(d).or_default().push(o);
        }
    }
    let mut files: Vec<(String, String)> = written
        .iter()
        .map(|t| {
            let id = key(t);
            let blocks: Vec<String> = blockers
                .get(&t.id)
                .into_iter()
                .flatten()
                .map(|o| key(o))
                .collect();
            let blocked_by: Vec<String> = t.dependencies.iter().filter_map(key_of).collect();
            let metadata = t.parent_id.as_ref().and_then(key_of).map(|p| {
                let mut m = Map::new();
                m.insert("parent".into(), json!(p));
                m
            });
            let task = ClaudeTask {
                id: id.clone(),
                subject: t.title.clone(),
                description: t.description.clone().unwrap_or_default(),
                active_form: format!("Working on {}", t.title),
                status: list_status(t.status).expect("filtered"),
                blocks,
                blocked_by,
                owner: None,
                metadata,
                extra: Map::new(),
            };
            let mut text = serde_json::to_string_pretty(&task).expect("a task serializes");
            text.push('\n');
            (format!("{id}.json"), text)
        })
        .collect();
    files.sort_by(|a, b| {
        let stem = |n: &str| n.trim_end_matches(".json").to_owned();
        task_order(&stem(&a.0)).cmp(&task_order(&stem(&b.0)))
    });
    files
}
