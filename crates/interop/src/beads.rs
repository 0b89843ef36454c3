//! beads' `.beads/issues.jsonl` (documented in the steveyegge/beads repository: README.md and
//! the `Issue`/`Dependency` types of `internal/types/types.go`): one issue per line,
//!
//! ```json
//! {"id": "bd-3", "title": "…", "description": "…", "status": "open", "priority": 1,
//!  "issue_type": "task", "labels": ["api"], "created_at": "2025-01-02T10:00:00Z",
//!  "updated_at": "…", "dependencies": [{"issue_id": "bd-3", "depends_on_id": "bd-1",
//!  "type": "blocks", "created_at": "…", "created_by": "…"}]}
//! ```
//!
//! A `blocks` dependency is a cairn dependency, `parent-child` makes `depends_on_id` the
//! parent; `related` and `discovered-from` do not make anyone wait and are not carried.
//!
//! | beads | cairn | back |
//! |---|---|---|
//! | `open`, `deferred`, `pinned`, `hooked` | PENDING | PENDING, IN_RESEARCH, RESEARCHED → `open` |
//! | `in_progress` | IN_PROGRESS | IN_PROGRESS, VALIDATING → `in_progress` |
//! | `blocked` | BLOCKED | BLOCKED → `blocked` |
//! | `closed` | COMPLETE | COMPLETE → `closed`; CANCELLED → `closed`, `close_reason: "cancelled"` |
//! | `tombstone` (deleted) | not imported | |
//!
//! Priorities 0, 1, 2, 3, 4 are CRITICAL, HIGH, MEDIUM, LOW, LOW (and back 0–3); issue type
//! `epic` is level epic; labels are tags.

use cairn_domain::project::graph::Index;
use cairn_domain::project::import::{Incoming, IncomingTask};
use cairn_domain::project::{Level, Priority, Task, TaskDoc, TaskId, TaskStatus};
use cairn_domain::time::format_rfc3339;
use serde_json::{Map, Value, json};

use crate::Failed;
use crate::common::{export_key, json_error, kind, object, opt_string, string, strings, unknown};

pub const SOURCE: &str = "beads";

const STATUSES: [&str; 8] = [
    "open",
    "in_progress",
    "blocked",
    "deferred",
    "closed",
    "tombstone",
    "pinned",
    "hooked",
];

pub fn parse(text: &str) -> Result<Incoming, Failed> {
    let mut tasks = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("line {}", i + 1);
        let value: Value =
            serde_json::from_str(line).map_err(|e| json_error(&e, &format!("{at}, ")))?;
        let o = object(&value, &at)?;
        let id = string(o, "id", &at)?;
        let at = format!("{at} ({id})");
        let status = match opt_string(o, "status", &at)?.as_deref() {
            None | Some("open" | "deferred" | "pinned" | "hooked") => TaskStatus::Pending,
            Some("in_progress") => TaskStatus::InProgress,
            Some("blocked") => TaskStatus::Blocked,
            Some("closed") => TaskStatus::Complete,
            Some("tombstone") => continue,
            Some(other) => return Err(unknown(format!("{at}.status"), "status", other, &STATUSES)),
        };
        let mut task = IncomingTask::new(id.clone(), string(o, "title", &at)?, status);
        task.description = opt_string(o, "description", &at)?;
        task.priority = match o.get("priority") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(match n.as_u64() {
                Some(0) => Priority::Critical,
                Some(1) => Priority::High,
                Some(2) => Priority::Medium,
                Some(3 | 4) => Priority::Low,
                _ => {
                    return Err((
                        format!("{at}.priority"),
                        format!("`{n}` is not a priority; beads priorities are 0 to 4"),
                    ));
                }
            }),
            Some(other) => {
                return Err((
                    format!("{at}.priority"),
                    format!("expected a number 0 to 4, found {}", kind(other)),
                ));
            }
        };
        if opt_string(o, "issue_type", &at)?.as_deref() == Some("epic") {
            task.level = Some(Level::Epic);
        }
        task.tags = strings(o, "labels", &at)?;
        let deps = match o.get("dependencies") {
            None | Some(Value::Null) => &Vec::new(),
            Some(Value::Array(d)) => d,
            Some(other) => {
                return Err((
                    format!("{at}.dependencies"),
                    format!("expected an array, found {}", kind(other)),
                ));
            }
        };
        for (j, d) in deps.iter().enumerate() {
            let at = format!("{at}.dependencies[{j}]");
            let d = object(d, &at)?;
            let on = string(d, "depends_on_id", &at)?;
            if let Some(from) = opt_string(d, "issue_id", &at)?
                && from != id
            {
                return Err((
                    format!("{at}.issue_id"),
                    format!("is `{from}`, but the dependency is listed on `{id}`"),
                ));
            }
            match opt_string(d, "type", &at)?.as_deref() {
                None | Some("blocks") => task.dependencies.push(on),
                Some("parent-child") => task.parent = Some(on),
                Some(_) => {}
            }
        }
        tasks.push(task);
    }
    if tasks.is_empty() && text.trim().is_empty() {
        return Err((
            "line 1".to_owned(),
            "the file is empty; expected one JSON issue per line".to_owned(),
        ));
    }
    Ok(Incoming::Foreign {
        source: SOURCE.to_owned(),
        tasks,
    })
}

fn key(task: &Task) -> String {
    export_key(task, SOURCE, || format!("cairn-{}", task.id.number()))
}

pub fn render(doc: &TaskDoc) -> String {
    // An index, not `doc.get`: a scan per dependency made 100,000 tasks take seconds.
    let index = Index::new(doc);
    let key_of = |id: &TaskId| index.get(id).map(key);
    let mut out = String::new();
    for t in &doc.tasks {
        let id = key(t);
        let mut o = Map::new();
        o.insert("id".into(), json!(id));
        o.insert("title".into(), json!(t.title));
        if let Some(d) = &t.description {
            o.insert("description".into(), json!(d));
        }
        let status = match t.status {
            TaskStatus::Pending | TaskStatus::InResearch | TaskStatus::Researched => "open",
            TaskStatus::InProgress | TaskStatus::Validating => "in_progress",
            TaskStatus::Blocked => "blocked",
            TaskStatus::Complete | TaskStatus::Cancelled => "closed",
        };
        o.insert("status".into(), json!(status));
        let priority = match t.priority {
            Priority::Critical => 0,
            Priority::High => 1,
            Priority::Medium => 2,
            Priority::Low => 3,
        };
        o.insert("priority".into(), json!(priority));
        let issue_type = if t.level == Level::Epic {
            "epic"
        } else {
            "task"
        };
        o.insert("issue_type".into(), json!(issue_type));
        if let Some(tags) = t.tags.as_ref().filter(|t| !t.is_empty()) {
            o.insert("labels".into(), json!(tags));
        }
        let created = format_rfc3339(&t.created_at);
        o.insert("created_at".into(), json!(created));
        let updated = t.completed_at.or(t.started_at).unwrap_or(t.created_at);
        o.insert("updated_at".into(), json!(format_rfc3339(&updated)));
        if t.status.is_terminal() {
            o.insert("closed_at".into(), json!(format_rfc3339(&updated)));
        }
        if t.status == TaskStatus::Cancelled {
            o.insert("close_reason".into(), json!("cancelled"));
        }
        let edge = |on: String, kind: &str| {
            json!({"issue_id": id, "depends_on_id": on, "type": kind, "created_at": created,
                   "created_by": "cairn"})
        };
        let mut deps: Vec<Value> = t
            .dependencies
            .iter()
            .filter_map(key_of)
            .map(|on| edge(on, "blocks"))
            .collect();
        if let Some(parent) = t.parent_id.as_ref().and_then(key_of) {
            deps.push(edge(parent, "parent-child"));
        }
        if !deps.is_empty() {
            o.insert("dependencies".into(), Value::Array(deps));
        }
        out.push_str(&Value::Object(o).to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_child_and_blocks() {
        let text = concat!(
            r#"{"id":"bd-1","title":"Epic one","issue_type":"epic","priority":0}"#,
            "\n",
            r#"{"id":"bd-2","title":"Child","status":"closed","dependencies":[{"issue_id":"bd-2","depends_on_id":"bd-1","type":"parent-child"},{"issue_id":"bd-2","depends_on_id":"bd-9","type":"blocks"}]}"#,
            "\n"
        );
        let Incoming::Foreign { tasks, .. } = parse(text).unwrap() else {
            panic!("foreign")
        };
        assert_eq!(tasks[0].priority, Some(Priority::Critical));
        assert_eq!(tasks[1].parent.as_deref(), Some("bd-1"));
        assert_eq!(tasks[1].dependencies, ["bd-9"]);
    }

    #[test]
    fn a_bad_line_is_named() {
        let err = parse("{\"id\":\"bd-1\",\"title\":\"ok\"}\n{oops\n").unwrap_err();
        assert!(err.0.starts_with("line 2"), "{err:?}");
    }
}
