//! A Claude Code task file (`{id}.json`) and its defensive parser.
//!
//! ```json
//! {"id": "7", "subject": "…", "description": "…", "activeForm": "…", "status": "pending",
//!  "blocks": [], "blockedBy": [], "owner": "…", "metadata": {…}}
//! ```
//!
//! cairn writes `id` as a string and always writes `activeForm`; fields it does not know are
//! carried through unchanged, so a rewrite never drops what Claude Code or another tool added.
//! The file's text (indentation, final newline) is the filesystem adapter's
//! (`cairn_storage_fs::tasklist`).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaudeTaskStatus {
    Pending,
    InProgress,
    Completed,
}

impl ClaudeTaskStatus {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "in_progress" => Some(Self::InProgress),
            "completed" => Some(Self::Completed),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaudeTask {
    pub id: String,
    pub subject: String,
    pub description: String,
    pub active_form: String,
    pub status: ClaudeTaskStatus,
    pub blocks: Vec<String>,
    pub blocked_by: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Fields cairn does not model, in file order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Something the parser had to repair or could not accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskFileWarning {
    NotAnObject,
    /// Neither the file nor its name gives an id; the task is skipped.
    MissingId,
    /// No usable `subject`; the task is skipped.
    MissingSubject {
        id: String,
    },
    /// A `status` other than the three known ones; read as `pending`.
    UnknownStatus {
        id: String,
        status: String,
    },
    /// A field of the wrong type, converted (to a string) or dropped.
    Coerced {
        id: String,
        field: &'static str,
        detail: String,
    },
}

impl fmt::Display for TaskFileWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAnObject => write!(f, "task file is not a JSON object; skipped"),
            Self::MissingId => write!(f, "task has no id; skipped"),
            Self::MissingSubject { id } => write!(f, "task {id} has no subject; skipped"),
            Self::UnknownStatus { id, status } => {
                write!(f, "task {id}: unknown status {status:?}, read as pending")
            }
            Self::Coerced { id, field, detail } => write!(f, "task {id}: `{field}` {detail}"),
        }
    }
}

/// The parser's answer: the task (unless it had to be skipped) and every repair it made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskParse {
    pub task: Option<ClaudeTask>,
    pub warnings: Vec<TaskFileWarning>,
}

const KNOWN_FIELDS: [&str; 9] = [
    "id",
    "subject",
    "description",
    "activeForm",
    "status",
    "blocks",
    "blockedBy",
    "owner",
    "metadata",
];

/// Reads a task file written by anyone. `fallback_id` is the file name's stem (`7` for `7.json`),
/// used when the file has no id. Repairs, each reported as a warning:
/// - `id` as a number becomes its decimal string;
/// - a missing or unknown `status` is `pending` (missing is not worth a warning);
/// - `blocks`/`blockedBy` items that are not strings become strings (`null` items are dropped),
///   a non-array is read as empty;
/// - a missing `description` or `activeForm` is empty; other scalars become strings;
/// - `owner` that is not a string is dropped, as is `metadata` that is not an object.
///
/// A file without a usable subject (missing, null, an array or an object) is skipped.
pub fn parse_task(value: &Value, fallback_id: Option<&str>) -> TaskParse {
    let mut warnings = Vec::new();
    let Some(object) = value.as_object() else {
        return TaskParse {
            task: None,
            warnings: vec![TaskFileWarning::NotAnObject],
        };
    };
    let id = match object.get("id") {
        Some(Value::String(id)) if !id.trim().is_empty() => Some(id.trim().to_owned()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => fallback_id
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_owned),
    };
    let Some(id) = id else {
        return TaskParse {
            task: None,
            warnings: vec![TaskFileWarning::MissingId],
        };
    };
    let subject = match object.get("subject") {
        Some(Value::String(s)) => s.clone(),
        Some(scalar @ (Value::Number(_) | Value::Bool(_))) => {
            warnings.push(coerced(&id, "subject", "was not a string; converted"));
            scalar.to_string()
        }
        _ => {
            warnings.push(TaskFileWarning::MissingSubject { id });
            return TaskParse {
                task: None,
                warnings,
            };
        }
    };
    let status = match object.get("status") {
        None | Some(Value::Null) => ClaudeTaskStatus::Pending,
        Some(Value::String(s)) if ClaudeTaskStatus::parse(s).is_some() => {
            ClaudeTaskStatus::parse(s).expect("checked")
        }
        Some(other) => {
            let status = other
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| other.to_string());
            warnings.push(TaskFileWarning::UnknownStatus {
                id: id.clone(),
                status,
            });
            ClaudeTaskStatus::Pending
        }
    };
    let owner = match object.get("owner") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            warnings.push(coerced(&id, "owner", "was not a string; dropped"));
            None
        }
    };
    let metadata = match object.get("metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map.clone()),
        Some(_) => {
            warnings.push(coerced(&id, "metadata", "was not an object; dropped"));
            None
        }
    };
    let task = ClaudeTask {
        description: text_field(object, "description", &id, &mut warnings),
        active_form: text_field(object, "activeForm", &id, &mut warnings),
        blocks: id_list(object, "blocks", &id, &mut warnings),
        blocked_by: id_list(object, "blockedBy", &id, &mut warnings),
        extra: object
            .iter()
            .filter(|(k, _)| !KNOWN_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        id,
        subject,
        status,
        owner,
        metadata,
    };
    TaskParse {
        task: Some(task),
        warnings,
    }
}

fn coerced(id: &str, field: &'static str, detail: &str) -> TaskFileWarning {
    TaskFileWarning::Coerced {
        id: id.to_owned(),
        field,
        detail: detail.to_owned(),
    }
}

fn text_field(
    object: &Map<String, Value>,
    field: &'static str,
    id: &str,
    warnings: &mut Vec<TaskFileWarning>,
) -> String {
    match object.get(field) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            warnings.push(coerced(id, field, "was not a string; converted"));
            other.to_string()
        }
    }
}

fn id_list(
    object: &Map<String, Value>,
    field: &'static str,
    id: &str,
    warnings: &mut Vec<TaskFileWarning>,
) -> Vec<String> {
    match object.get(field) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut repaired = false;
            let list = items
                .iter()
                .filter_map(|item| match item {
                    Value::String(s) => Some(s.clone()),
                    Value::Null => {
                        repaired = true;
                        None
                    }
                    other => {
                        repaired = true;
                        Some(other.to_string())
                    }
                })
                .collect();
            if repaired {
                warnings.push(coerced(
                    id,
                    field,
                    "had non-string items; converted to strings",
                ));
            }
            list
        }
        Some(_) => {
            warnings.push(coerced(id, field, "was not an array; read as empty"));
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_seed_task_parses_without_warnings_and_writes_back_in_shape() {
        let value = json!({
            "id": "1", "subject": "Implement user authentication middleware",
            "description": "Add JWT-based auth middleware", "status": "pending",
            "blocks": ["3", "4"], "blockedBy": [], "activeForm": "",
            "metadata": {"priority": "high", "task_group": "user-auth"}
        });
        let parsed = parse_task(&value, None);
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        let task = parsed.task.unwrap();
        assert_eq!(task.blocks, ["3", "4"]);
        let written = serde_json::to_value(&task).unwrap();
        assert_eq!(written, value);
        let keys: Vec<_> = written.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "id",
                "subject",
                "description",
                "activeForm",
                "status",
                "blocks",
                "blockedBy",
                "metadata"
            ]
        );
    }
}
