//! Taskwarrior's `task export` JSON (documented at <https://taskwarrior.org/docs/design/task/>,
//! "Taskwarrior JSON Format", and `task import`): an array of tasks,
//!
//! ```json
//! [{"id": 1, "description": "…", "entry": "20240102T100000Z", "status": "pending",
//!   "uuid": "…", "priority": "H", "project": "web.api", "tags": ["api"],
//!   "start": "20240102T110000Z", "depends": ["<uuid>", …]}]
//! ```
//!
//! Taskwarrior 2.5 wrote `depends` as one comma-separated string; both forms are read. The
//! external id is the `uuid`. A task's `project` becomes the cairn tag `project:<name>`.
//!
//! | Taskwarrior | cairn | back |
//! |---|---|---|
//! | `pending`, `waiting`, `recurring` | PENDING | PENDING, IN_RESEARCH, RESEARCHED, BLOCKED → `pending` |
//! | `pending` with `start` (active) | IN_PROGRESS | IN_PROGRESS, VALIDATING → `pending` + `start` |
//! | `completed` | COMPLETE | COMPLETE → `completed` |
//! | `deleted` | CANCELLED | CANCELLED → `deleted` |
//!
//! Priorities `H`, `M`, `L` are HIGH, MEDIUM, LOW (CRITICAL is written `H`); no priority is
//! left as cairn has it (MEDIUM for a new task).

use cairn_domain::project::graph::Index;
use cairn_domain::project::import::{Incoming, IncomingTask};
use cairn_domain::project::{Priority, Task, TaskDoc, TaskId, TaskStatus};
use cairn_domain::time::Timestamp;
use serde_json::{Map, Value, json};

use crate::Failed;
use crate::common::{export_key, json_error, kind, object, opt_string, string, strings, unknown};

pub const SOURCE: &str = "taskwarrior";
const PROJECT_TAG: &str = "project:";

pub fn parse(text: &str) -> Result<Incoming, Failed> {
    let value: Value = serde_json::from_str(text).map_err(|e| json_error(&e, ""))?;
    let items = value.as_array().ok_or_else(|| {
        (
            "(top level)".to_owned(),
            format!(
                "expected an array of tasks (the output of `task export`), found {}",
                kind(&value)
            ),
        )
    })?;
    let mut tasks = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("[{i}]");
        let o = object(item, &at)?;
        let uuid = string(o, "uuid", &at)?;
        let started = opt_string(o, "start", &at)?.is_some();
        let status = match string(o, "status", &at)?.as_str() {
            "pending" | "waiting" | "recurring" if started => TaskStatus::InProgress,
            "pending" | "waiting" | "recurring" => TaskStatus::Pending,
            "completed" => TaskStatus::Complete,
            "deleted" => TaskStatus::Cancelled,
            other => {
                return Err(unknown(
                    format!("{at}.status"),
                    "status",
                    other,
                    &["pending", "waiting", "recurring", "completed", "deleted"],
                ));
            }
        };
        let mut task = IncomingTask::new(uuid, string(o, "description", &at)?, status);
        task.priority = match opt_string(o, "priority", &at)?.as_deref() {
            None => None,
            Some("H") => Some(Priority::High),
            Some("M") => Some(Priority::Medium),
            Some("L") => Some(Priority::Low),
            Some(other) => {
                return Err(unknown(
                    format!("{at}.priority"),
                    "priority",
                    other,
                    &["H", "M", "L"],
                ));
            }
        };
        if let Some(project) = opt_string(o, "project", &at)? {
            task.tags.push(format!("{PROJECT_TAG}{project}"));
        }
        task.tags.extend(strings(o, "tags", &at)?);
        task.dependencies = match o.get("depends") {
            Some(Value::String(list)) => list
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            _ => strings(o, "depends", &at)?,
        };
        tasks.push(task);
    }
    Ok(Incoming::Foreign {
        source: SOURCE.to_owned(),
        tasks,
    })
}

fn date(at: &Timestamp) -> String {
    at.format("%Y%m%dT%H%M%SZ").to_string()
}

/// A stable uuid for a task Taskwarrior never saw: the same project and task always get the
/// same one, so exporting twice gives the same file and `task import` updates instead of
/// duplicating.
fn uuid(project: &str, id: &TaskId) -> String {
    // FNV-1a over the project id: spreads projects apart; the task number keeps tasks apart.
    let hash = project.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!(
        "{:08x}-{:04x}-4{:03x}-8000-{:012x}",
        hash >> 32,
        (hash >> 16) & 0xffff,
        hash & 0xfff,
        id.number() & 0xffff_ffff_ffff
    )
}

pub fn render(doc: &TaskDoc) -> String {
    let project = doc
        .project_id
        .as_ref()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let key = |t: &Task| export_key(t, SOURCE, || uuid(&project, &t.id));
    // An index, not `doc.get`: a scan per dependency made 100,000 tasks take seconds.
    let index = Index::new(doc);
    let items: Vec<String> = doc
        .tasks
        .iter()
        .map(|t| {
            let mut o = Map::new();
            o.insert("description".into(), json!(t.title));
            o.insert("entry".into(), json!(date(&t.created_at)));
            let status = match t.status {
                TaskStatus::Complete => "completed",
                TaskStatus::Cancelled => "deleted",
                _ => "pending",
            };
            o.insert("status".into(), json!(status));
            if let Some(end) = t.completed_at.filter(|_| t.status.is_terminal()) {
                o.insert("end".into(), json!(date(&end)));
            }
            if matches!(t.status, TaskStatus::InProgress | TaskStatus::Validating) {
                let start = t.started_at.unwrap_or(t.created_at);
                o.insert("start".into(), json!(date(&start)));
            }
            o.insert("uuid".into(), json!(key(t)));
            let priority = match t.priority {
                Priority::Critical | Priority::High => "H",
                Priority::Medium => "M",
                Priority::Low => "L",
            };
            o.insert("priority".into(), json!(priority));
            let tags = t.tags.clone().unwrap_or_default();
            if let Some(p) = tags.iter().find_map(|t| t.strip_prefix(PROJECT_TAG)) {
                o.insert("project".into(), json!(p));
            }
            let plain: Vec<&String> = tags
                .iter()
                .filter(|t| !t.starts_with(PROJECT_TAG))
                .collect();
            if !plain.is_empty() {
                o.insert("tags".into(), json!(plain));
            }
            let depends: Vec<String> = t
                .dependencies
                .iter()
                .filter_map(|d| index.get(d))
                .map(key)
                .collect();
            if !depends.is_empty() {
                o.insert("depends".into(), json!(depends));
            }
            Value::Object(o).to_string()
        })
        .collect();
    // `task export`'s own layout: one task per line inside the brackets.
    format!("[\n{}\n]\n", items.join(",\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_depends_forms_and_active_tasks() {
        let text = r#"[{"uuid":"a","description":"One","status":"pending","start":"20240101T000000Z"},
            {"uuid":"b","description":"Two","status":"pending","depends":"a,c"},
            {"uuid":"c","description":"Three","status":"completed","depends":["a"],"project":"web"}]"#;
        let Incoming::Foreign { tasks, .. } = parse(text).unwrap() else {
            panic!("foreign")
        };
        assert_eq!(tasks[0].status, TaskStatus::InProgress);
        assert_eq!(tasks[1].dependencies, ["a", "c"]);
        assert_eq!(tasks[2].tags, ["project:web"]);
    }

    #[test]
    fn uuids_are_stable_and_well_formed() {
        let id = TaskId::from_number(7);
        assert_eq!(uuid("web", &id), uuid("web", &id));
        assert_ne!(uuid("web", &id), uuid("api", &id));
        assert_eq!(uuid("web", &id).len(), 36);
    }
}
