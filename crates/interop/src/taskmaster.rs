//! Task Master's `.taskmaster/tasks/tasks.json` (documented in the claude-task-master repository,
//! `docs/task-structure.md` and `docs/tutorial.md`; tags in `docs/command-reference.md`). The
//! tagged form holds one task list per tag, `{"master": {"tasks": [...], "metadata": {...}}}`;
//! the legacy form is one untagged list, `{"tasks": [...]}`. A task:
//!
//! ```json
//! {"id": 1, "title": "…", "description": "…", "details": "…", "testStrategy": "…",
//!  "status": "pending", "priority": "high", "dependencies": [2],
//!  "subtasks": [{"id": 1, "title": "…", "status": "done", "dependencies": [2, "3.1"]}]}
//! ```
//!
//! External ids: a task is `5`, its subtask `5.2` (Task Master's own spelling); tasks of a tag
//! other than `master` are `tag:5` and carry the tag as a cairn tag. A subtask's numeric
//! dependency names a sibling subtask, a string one (`"3.1"`, `"4"`) a task by full id; a task's
//! dependency is a task id, or a full subtask id as a string.
//!
//! | Task Master | cairn | back |
//! |---|---|---|
//! | `pending` | PENDING | PENDING, IN_RESEARCH, RESEARCHED → `pending` |
//! | `deferred` | PENDING | |
//! | `in-progress` | IN_PROGRESS | IN_PROGRESS → `in-progress` |
//! | `review` | VALIDATING | VALIDATING → `review` |
//! | `done` | COMPLETE | COMPLETE → `done` |
//! | `blocked` | BLOCKED | BLOCKED → `blocked` |
//! | `cancelled` | CANCELLED | CANCELLED → `cancelled` |
//!
//! Priorities `high`, `medium`, `low` are HIGH, MEDIUM, LOW (`critical` is read as CRITICAL and
//! written as `high`). Task Master nests one level: on export, a task deeper than a subtask is
//! written as a subtask of its top-level ancestor.

use std::collections::{HashMap, HashSet};

use cairn_domain::project::import::{Incoming, IncomingTask};
use cairn_domain::project::{Level, Priority, Task, TaskDoc, TaskId, TaskStatus};
use serde_json::{Map, Value, json};

use crate::Failed;
use crate::common::{export_key, json_error, kind, object, opt_string, string, tree, unknown};

pub const SOURCE: &str = "taskmaster";
const DEFAULT_TAG: &str = "master";

const STATUSES: [&str; 7] = [
    "pending",
    "in-progress",
    "review",
    "done",
    "blocked",
    "deferred",
    "cancelled",
];

fn status(text: &str, at: String) -> Result<TaskStatus, Failed> {
    Ok(match text {
        "pending" | "deferred" => TaskStatus::Pending,
        "in-progress" => TaskStatus::InProgress,
        "review" => TaskStatus::Validating,
        "done" => TaskStatus::Complete,
        "blocked" => TaskStatus::Blocked,
        "cancelled" => TaskStatus::Cancelled,
        other => return Err(unknown(at, "status", other, &STATUSES)),
    })
}

fn priority(text: &str, at: String) -> Result<Priority, Failed> {
    Ok(match text {
        "critical" => Priority::Critical,
        "high" => Priority::High,
        "medium" => Priority::Medium,
        "low" => Priority::Low,
        other => return Err(unknown(at, "priority", other, &["high", "medium", "low"])),
    })
}

/// An id as Task Master writes it: a whole number, or a string (`"3"`, `"3.1"`).
fn id_text(value: Option<&Value>, at: &str) -> Result<String, Failed> {
    match value {
        Some(Value::Number(n)) if n.is_u64() => Ok(n.to_string()),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        Some(other) => Err((
            format!("{at}.id"),
            format!("expected a number or a string, found {}", kind(other)),
        )),
        None => Err((format!("{at}.id"), "is missing".to_owned())),
    }
}

pub fn parse(text: &str) -> Result<Incoming, Failed> {
    let root: Value = serde_json::from_str(text).map_err(|e| json_error(&e, ""))?;
    let root = object(&root, "(top level)")?;
    let mut tasks = Vec::new();
    if root.contains_key("tasks") {
        read_list(root, "tasks", "", None, &mut tasks)?;
    } else {
        if root.is_empty() {
            return Err((
                "(top level)".to_owned(),
                "no tasks: expected {\"master\": {\"tasks\": [...]}} or {\"tasks\": [...]}"
                    .to_owned(),
            ));
        }
        for (tag, list) in root {
            let list = object(list, tag)?;
            let prefix = if tag == DEFAULT_TAG {
                String::new()
            } else {
                format!("{tag}:")
            };
            let label = (tag != DEFAULT_TAG).then_some(tag.as_str());
            read_list(list, &format!("{tag}.tasks"), &prefix, label, &mut tasks)?;
        }
    }
    Ok(Incoming::Foreign {
        source: SOURCE.to_owned(),
        tasks,
    })
}

fn read_list(
    list: &Map<String, Value>,
    at_list: &str,
    prefix: &str,
    tag: Option<&str>,
    out: &mut Vec<IncomingTask>,
) -> Result<(), Failed> {
    let at_list = at_list.to_owned();
    let items = match list.get("tasks") {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err((at_list, format!("expected an array, found {}", kind(other))));
        }
        None => return Err((at_list, "is missing".to_owned())),
    };
    for (i, item) in items.iter().enumerate() {
        let at = format!("{at_list}[{i}]");
        let o = object(item, &at)?;
        let id = id_text(o.get("id"), &at)?;
        let key = format!("{prefix}{id}");
        let mut task = read_task(o, key.clone(), &at, tag)?;
        task.dependencies = deps(o, &at, |d| match d {
            Dep::Number(n) => format!("{prefix}{n}"),
            Dep::Text(s) => format!("{prefix}{s}"),
        })?;
        out.push(task);
        let subtasks = match o.get("subtasks") {
            None | Some(Value::Null) => continue,
            Some(Value::Array(s)) => s,
            Some(other) => {
                return Err((
                    format!("{at}.subtasks"),
                    format!("expected an array, found {}", kind(other)),
                ));
            }
        };
        for (j, sub) in subtasks.iter().enumerate() {
            let at = format!("{at}.subtasks[{j}]");
            let so = object(sub, &at)?;
            let sid = id_text(so.get("id"), &at)?;
            let mut subtask = read_task(so, format!("{key}.{sid}"), &at, tag)?;
            subtask.parent = Some(key.clone());
            subtask.level.get_or_insert(Level::Subtask);
            subtask.dependencies = deps(so, &at, |d| match d {
                Dep::Number(n) => format!("{key}.{n}"),
                Dep::Text(s) => format!("{prefix}{s}"),
            })?;
            out.push(subtask);
        }
    }
    Ok(())
}

fn read_task(
    o: &Map<String, Value>,
    key: String,
    at: &str,
    tag: Option<&str>,
) -> Result<IncomingTask, Failed> {
    let title = string(o, "title", at)?;
    let status = match opt_string(o, "status", at)? {
        Some(s) => status(&s, format!("{at}.status"))?,
        None => TaskStatus::Pending,
    };
    let mut task = IncomingTask::new(key, title, status);
    let description = opt_string(o, "description", at)?;
    let details = opt_string(o, "details", at)?;
    task.description = match (description, details) {
        (Some(d), Some(x)) => Some(format!("{d}\n\n{x}")),
        (d, x) => d.or(x),
    };
    if let Some(p) = opt_string(o, "priority", at)? {
        task.priority = Some(priority(&p, format!("{at}.priority"))?);
    }
    task.tags.extend(tag.map(str::to_owned));
    Ok(task)
}

enum Dep {
    Number(u64),
    Text(String),
}

fn deps(
    o: &Map<String, Value>,
    at: &str,
    key: impl Fn(Dep) -> String,
) -> Result<Vec<String>, Failed> {
    let items = match o.get("dependencies") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err((
                format!("{at}.dependencies"),
                format!("expected an array, found {}", kind(other)),
            ));
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, d)| match d {
            Value::Number(n) if n.is_u64() => Ok(key(Dep::Number(n.as_u64().expect("checked")))),
            Value::String(s) if !s.trim().is_empty() => Ok(key(Dep::Text(s.trim().to_owned()))),
            other => Err((
                format!("{at}.dependencies[{i}]"),
                format!("expected a task id, found {}", kind(other)),
            )),
        })
        .collect()
}

fn status_text(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Pending | TaskStatus::InResearch | TaskStatus::Researched => "pending",
        TaskStatus::InProgress => "in-progress",
        TaskStatus::Validating => "review",
        TaskStatus::Complete => "done",
        TaskStatus::Blocked => "blocked",
        TaskStatus::Cancelled => "cancelled",
    }
}

fn priority_text(priority: Priority) -> &'static str {
    match priority {
        Priority::Critical | Priority::High => "high",
        Priority::Medium => "medium",
        Priority::Low => "low",
    }
}

/// The smallest number from 1 up that a set, which only ever grows, does not hold: since the set
/// only grows, the answer never goes down, and the search resumes where it stopped.
#[derive(Default)]
struct FirstFree(u64);

impl FirstFree {
    fn next(&mut self, taken: &HashSet<u64>) -> u64 {
        self.0 = self.0.max(1);
        while taken.contains(&self.0) {
            self.0 += 1;
        }
        self.0
    }
}

/// The tagged form, every task under `master`.
pub fn render(doc: &TaskDoc) -> String {
    // Top-level tasks and, per top-level task, its descendants in tree order.
    let mut tops: Vec<(&Task, Vec<&Task>)> = Vec::new();
    for (task, depth) in tree(doc) {
        match tops.last_mut() {
            Some((_, subs)) if depth > 0 => subs.push(task),
            _ => tops.push((task, Vec::new())),
        }
    }
    // Numbers: the id a task was imported with when it fits and is free, else cairn's number,
    // else the next free one.
    let mut full: HashMap<&TaskId, String> = HashMap::new();
    let mut taken: HashSet<u64> = HashSet::new();
    let wanted: Vec<Option<u64>> = tops
        .iter()
        .map(|(t, _)| export_key(t, SOURCE, String::new).parse::<u64>().ok())
        .collect();
    // Sets and a cursor, not scans: an export of 100,000 tasks scanned them for every task.
    let wanted_any: HashSet<u64> = wanted.iter().flatten().copied().collect();
    let mut free = FirstFree::default();
    let mut top_numbers = Vec::new();
    for (i, (t, _)) in tops.iter().enumerate() {
        let preferred = wanted[i].filter(|n| !taken.contains(n)).or_else(|| {
            Some(t.id.number()).filter(|n| !taken.contains(n) && !wanted_any.contains(n))
        });
        let n = preferred.unwrap_or_else(|| free.next(&taken));
        taken.insert(n);
        top_numbers.push(n);
        full.insert(&t.id, n.to_string());
    }
    let mut sub_numbers: Vec<Vec<u64>> = Vec::new();
    for (i, (_, subs)) in tops.iter().enumerate() {
        let top = top_numbers[i];
        let mut used = HashSet::new();
        let mut free = FirstFree::default();
        let mut numbers = Vec::new();
        for s in subs {
            let link = export_key(s, SOURCE, String::new);
            let preferred = link
                .strip_prefix(&format!("{top}."))
                .and_then(|n| n.parse::<u64>().ok())
                .filter(|n| !used.contains(n));
            let n = preferred.unwrap_or_else(|| free.next(&used));
            used.insert(n);
            numbers.push(n);
            full.insert(&s.id, format!("{top}.{n}"));
        }
        sub_numbers.push(numbers);
    }
    let dep_values = |t: &Task, sub_of: Option<u64>| -> Vec<Value> {
        t.dependencies
            .iter()
            .filter_map(|d| full.get(d))
            .map(|id| match (sub_of, id.split_once('.')) {
                (Some(top), Some((p, n))) if p == top.to_string() => {
                    json!(n.parse::<u64>().expect("a number"))
                }
                (Some(_), _) => json!(id),
                (None, None) => json!(id.parse::<u64>().expect("a number")),
                (None, Some(_)) => json!(id),
            })
            .collect()
    };
    let fields = |t: &Task, id: u64, deps: Vec<Value>| {
        let mut o = Map::new();
        o.insert("id".into(), json!(id));
        o.insert("title".into(), json!(t.title));
        o.insert(
            "description".into(),
            json!(t.description.clone().unwrap_or_default()),
        );
        o.insert("status".into(), json!(status_text(t.status)));
        o.insert("priority".into(), json!(priority_text(t.priority)));
        o.insert("dependencies".into(), Value::Array(deps));
        o
    };
    // Each top-level task's tree is made as it is printed, and dropped before the next: at
    // 100,000 tasks the trees of all of them at once were hundreds of megabytes.
    let tasks = tops.iter().enumerate().map(|(i, (t, subs))| {
        let mut o = fields(t, top_numbers[i], dep_values(t, None));
        let subtasks: Vec<Value> = subs
            .iter()
            .enumerate()
            .map(|(j, s)| {
                Value::Object(fields(
                    s,
                    sub_numbers[i][j],
                    dep_values(s, Some(top_numbers[i])),
                ))
            })
            .collect();
        o.insert("subtasks".into(), Value::Array(subtasks));
        Value::Object(o)
    });
    #[derive(serde::Serialize)]
    struct Tag<T> {
        tasks: T,
    }
    let document = std::collections::BTreeMap::from([(
        DEFAULT_TAG,
        Tag {
            tasks: AsPrinted(std::cell::Cell::new(Some(tasks))),
        },
    )]);
    let mut text = serde_json::to_string_pretty(&document).expect("JSON values serialize");
    text.push('\n');
    text
}

/// A sequence printed as its items are made: serialized once.
struct AsPrinted<I>(std::cell::Cell<Option<I>>);

impl<I: Iterator<Item = Value>> serde::Serialize for AsPrinted<I> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.take().into_iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtask_numbers_are_siblings_and_strings_are_full_ids() {
        let text = r#"{"master": {"tasks": [
            {"id": 1, "title": "Set up", "status": "done", "dependencies": []},
            {"id": 2, "title": "Build", "status": "in-progress", "dependencies": [1],
             "subtasks": [{"id": 1, "title": "Parser", "status": "done"},
                          {"id": 2, "title": "Printer", "status": "pending", "dependencies": [1, "1"]}]}
        ]}}"#;
        let Incoming::Foreign { tasks, .. } = parse(text).unwrap() else {
            panic!("foreign")
        };
        let printer = tasks.iter().find(|t| t.key == "2.2").unwrap();
        assert_eq!(printer.parent.as_deref(), Some("2"));
        assert_eq!(printer.dependencies, ["2.1", "1"]);
    }

    #[test]
    fn legacy_form_and_bad_status() {
        assert!(parse(r#"{"tasks": [{"id": 1, "title": "One"}]}"#).is_ok());
        let err = parse(r#"{"tasks": [{"id": 1, "title": "One", "status": "nope"}]}"#).unwrap_err();
        assert_eq!(err.0, "tasks[0].status");
    }
}
