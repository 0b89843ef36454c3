//! What the formats share: JSON error positions, field readers that say where they failed, the
//! task tree in file order, and the ids an export gives tasks.

use std::collections::HashMap;

use cairn_domain::project::import::import_link;
use cairn_domain::project::{Task, TaskDoc, TaskId};
use serde_json::{Map, Value};

use crate::Failed;

/// A serde_json error as (where, what), without the position repeated in the message.
pub fn json_error(e: &serde_json::Error, prefix: &str) -> Failed {
    let text = e.to_string();
    let message = match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    };
    (
        format!("{prefix}line {}, column {}", e.line(), e.column()),
        format!("not valid JSON: {message}"),
    )
}

/// A required string field.
pub fn string(object: &Map<String, Value>, field: &str, at: &str) -> Result<String, Failed> {
    match object.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err((format!("{at}.{field}"), "is empty".to_owned())),
        Some(other) => Err((
            format!("{at}.{field}"),
            format!("expected a string, found {}", kind(other)),
        )),
        None => Err((format!("{at}.{field}"), "is missing".to_owned())),
    }
}

/// An optional string field (`null` and `""` are absent).
pub fn opt_string(
    object: &Map<String, Value>,
    field: &str,
    at: &str,
) -> Result<Option<String>, Failed> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err((
            format!("{at}.{field}"),
            format!("expected a string, found {}", kind(other)),
        )),
    }
}

/// An optional array of strings.
pub fn strings(object: &Map<String, Value>, field: &str, at: &str) -> Result<Vec<String>, Failed> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err((
                    format!("{at}.{field}[{i}]"),
                    format!("expected a string, found {}", kind(other)),
                )),
            })
            .collect(),
        Some(other) => Err((
            format!("{at}.{field}"),
            format!("expected an array, found {}", kind(other)),
        )),
    }
}

pub fn object<'a>(value: &'a Value, at: &str) -> Result<&'a Map<String, Value>, Failed> {
    value.as_object().ok_or_else(|| {
        (
            at.to_owned(),
            format!("expected an object, found {}", kind(value)),
        )
    })
}

pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An unknown value of an enumerated field, with the values that are known.
pub fn unknown(at: String, field: &str, value: &str, known: &[&str]) -> Failed {
    (
        at,
        format!(
            "unknown {field} `{value}`; expected one of: {}",
            known.join(", ")
        ),
    )
}

/// The tasks with each parent before its children (roots and siblings in file order), with
/// their depth. Children a parent lists but the file lacks are skipped; tasks no root reaches
/// (a broken parent link) come last, as roots.
pub fn tree(doc: &TaskDoc) -> Vec<(&Task, usize)> {
    let by_id: HashMap<&TaskId, &Task> = doc.tasks.iter().map(|t| (&t.id, t)).collect();
    let mut out = Vec::with_capacity(doc.tasks.len());
    let mut placed = std::collections::HashSet::new();
    fn walk<'a>(
        t: &'a Task,
        depth: usize,
        by_id: &HashMap<&TaskId, &'a Task>,
        placed: &mut std::collections::HashSet<TaskId>,
        out: &mut Vec<(&'a Task, usize)>,
    ) {
        if !placed.insert(t.id.clone()) {
            return;
        }
        out.push((t, depth));
        for c in t.children() {
            if let Some(child) = by_id.get(c) {
                walk(child, depth + 1, by_id, placed, out);
            }
        }
    }
    for t in &doc.tasks {
        let rooted = t.parent_id.as_ref().is_some_and(|p| by_id.contains_key(p));
        if !rooted {
            walk(t, 0, &by_id, &mut placed, &mut out);
        }
    }
    for t in &doc.tasks {
        walk(t, 0, &by_id, &mut placed, &mut out);
    }
    out
}

/// The id an export gives a task: the one it was imported with from this same tool, else
/// `fallback` (built from cairn's id), so a round trip through the tool keeps its ids.
pub fn export_key(task: &Task, source: &str, fallback: impl FnOnce() -> String) -> String {
    match import_link(task) {
        Some((s, key)) if s == source => key.to_owned(),
        _ => fallback(),
    }
}
