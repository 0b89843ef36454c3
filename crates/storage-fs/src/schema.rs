//! JSON Schema validation of every JSON file cairn writes.
//!
//! The schemas live in the workspace's `schemas/` directory (JSON Schema 2020-12). Their
//! validators are generated when cairn is built, by jsonschema's `validator` macro, from those
//! very files (the private `generated` module), with format validation on (`date-time` fields
//! must really be RFC 3339). `tasks.schema.json` refers to `task.schema.json` and
//! `checkpoint.schema.json` to `tasks.schema.json` by relative `$ref`; the macro is handed both
//! targets as resources, so validation never touches the filesystem or the network, and a process
//! compiles nothing. (Compiled at run time, the first validator of a process cost 2.3 ms —
//! jsonschema builds its meta-schema validator first — on every write, where on two cores it
//! competed with the read of a large store.) The texts are also embedded (`include_str!`) for what
//! reads the schemas themselves; a test holds the generated validators to ones compiled at run
//! time from the same files, fixture by fixture.
//!
//! The schemas describe the interoperability contract with the original plugin's files: required
//! fields and their shapes are enforced, unknown properties are allowed (cairn preserves them).
//!
//! Writers call [`validate`] on the complete new document before the atomic write; a failure
//! aborts the write. Recovery calls [`valid_tasks`] on a damaged tasks file or a checkpoint to keep
//! the tasks that individually pass (partial recovery beats none).

use serde_json::Value;

/// The base URI every schema's `$id` shares. `.invalid` can never resolve: the schemas are
/// identified by it, never fetched from it.
pub const SCHEMA_BASE_URI: &str = "https://cairn.invalid/schemas/";

/// A JSON file kind with its own schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaKind {
    /// `project.json`
    Project,
    /// One element of `tasks.json`'s `tasks` array.
    Task,
    /// `tasks.json`
    Tasks,
    /// `progress/velocity.json`
    Velocity,
    /// `checkpoints/checkpoint-NNN.json` (the shape of `tasks.json`)
    Checkpoint,
}

impl SchemaKind {
    pub const ALL: [SchemaKind; 5] = [
        SchemaKind::Project,
        SchemaKind::Task,
        SchemaKind::Tasks,
        SchemaKind::Velocity,
        SchemaKind::Checkpoint,
    ];

    /// The schema's file name in `schemas/`, e.g. `task.schema.json`.
    pub fn file_name(self) -> &'static str {
        match self {
            SchemaKind::Project => "project.schema.json",
            SchemaKind::Task => "task.schema.json",
            SchemaKind::Tasks => "tasks.schema.json",
            SchemaKind::Velocity => "velocity.schema.json",
            SchemaKind::Checkpoint => "checkpoint.schema.json",
        }
    }

    /// The short name used for fixture directories and messages: `project`, `task`, …
    pub fn name(self) -> &'static str {
        match self {
            SchemaKind::Project => "project",
            SchemaKind::Task => "task",
            SchemaKind::Tasks => "tasks",
            SchemaKind::Velocity => "velocity",
            SchemaKind::Checkpoint => "checkpoint",
        }
    }

    /// The embedded schema text.
    pub fn source(self) -> &'static str {
        match self {
            SchemaKind::Project => include_str!("../../../schemas/project.schema.json"),
            SchemaKind::Task => include_str!("../../../schemas/task.schema.json"),
            SchemaKind::Tasks => include_str!("../../../schemas/tasks.schema.json"),
            SchemaKind::Velocity => include_str!("../../../schemas/velocity.schema.json"),
            SchemaKind::Checkpoint => include_str!("../../../schemas/checkpoint.schema.json"),
        }
    }

    /// The embedded schema, parsed.
    pub fn schema(self) -> Value {
        serde_json::from_str(self.source()).unwrap_or_else(|error| {
            panic!("embedded schema {} is not JSON: {error}", self.file_name())
        })
    }
}

/// The validators, generated from `schemas/` when cairn is built.
mod generated {
    #[jsonschema::validator(
        path = "../../schemas/project.schema.json",
        draft = Draft202012,
        validate_formats = true
    )]
    pub(super) struct Project;

    #[jsonschema::validator(
        path = "../../schemas/task.schema.json",
        draft = Draft202012,
        validate_formats = true
    )]
    pub(super) struct Task;

    #[jsonschema::validator(
        path = "../../schemas/tasks.schema.json",
        draft = Draft202012,
        validate_formats = true,
        resources = {
            "https://cairn.invalid/schemas/task.schema.json" => {
                path = "../../schemas/task.schema.json"
            }
        }
    )]
    pub(super) struct Tasks;

    #[jsonschema::validator(
        path = "../../schemas/velocity.schema.json",
        draft = Draft202012,
        validate_formats = true
    )]
    pub(super) struct Velocity;

    #[jsonschema::validator(
        path = "../../schemas/checkpoint.schema.json",
        draft = Draft202012,
        validate_formats = true,
        resources = {
            "https://cairn.invalid/schemas/tasks.schema.json" => {
                path = "../../schemas/tasks.schema.json"
            },
            "https://cairn.invalid/schemas/task.schema.json" => {
                path = "../../schemas/task.schema.json"
            }
        }
    )]
    pub(super) struct Checkpoint;
}

fn errors(kind: SchemaKind, instance: &Value) -> jsonschema::ErrorIterator<'_> {
    match kind {
        SchemaKind::Project => generated::Project::iter_errors(instance),
        SchemaKind::Task => generated::Task::iter_errors(instance),
        SchemaKind::Tasks => generated::Tasks::iter_errors(instance),
        SchemaKind::Velocity => generated::Velocity::iter_errors(instance),
        SchemaKind::Checkpoint => generated::Checkpoint::iter_errors(instance),
    }
}

/// Checks `instance` against the schema of `kind`.
///
/// On failure, returns every violation as `<instance path>: <message>`, the path being a JSON
/// pointer (`/tasks/3/id`) or `(root)` for the document itself.
pub fn validate(kind: SchemaKind, instance: &Value) -> Result<(), Vec<String>> {
    let messages: Vec<String> = errors(kind, instance)
        .map(|error| {
            let path = error.instance_path().as_str();
            let path = if path.is_empty() { "(root)" } else { path };
            format!("{path}: {error}")
        })
        .collect();
    if messages.is_empty() {
        Ok(())
    } else {
        Err(messages)
    }
}

/// Whether `instance` satisfies the schema of `kind`.
pub fn is_valid(kind: SchemaKind, instance: &Value) -> bool {
    match kind {
        SchemaKind::Project => generated::Project::is_valid(instance),
        SchemaKind::Task => generated::Task::is_valid(instance),
        SchemaKind::Tasks => generated::Tasks::is_valid(instance),
        SchemaKind::Velocity => generated::Velocity::is_valid(instance),
        SchemaKind::Checkpoint => generated::Checkpoint::is_valid(instance),
    }
}

/// The task objects of a tasks document (or checkpoint, or bare array) that each pass the task
/// schema on their own, in order. Anything without a `tasks` array yields nothing.
pub fn valid_tasks(document: &Value) -> Vec<Value> {
    let tasks = match document {
        Value::Object(object) => object.get("tasks").and_then(Value::as_array),
        Value::Array(array) => Some(array),
        _ => None,
    };
    tasks
        .into_iter()
        .flatten()
        .filter(|task| is_valid(SchemaKind::Task, task))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(id: &str) -> Value {
        json!({
            "id": id,
            "title": "Write the parser",
            "level": "task",
            "status": "PENDING",
            "priority": "HIGH",
            "dependencies": [],
            "completion_criteria": ["parses every fixture"],
            "created_at": "2026-11-22T02:20:44Z"
        })
    }

    #[test]
    fn a_minimal_task_passes_and_unknown_fields_are_allowed() {
        let mut t = task("T-001");
        t["x_custom_tool_field"] = json!({"anything": [1, 2]});
        assert_eq!(validate(SchemaKind::Task, &t), Ok(()));
    }

    #[test]
    fn messages_name_the_instance_path() {
        let mut bad = task("T-001");
        bad["id"] = json!("TASK-1");
        bad["created_at"] = json!("yesterday");
        let doc = json!({"version": 1, "project_id": "demo", "tasks": [task("T-002"), bad]});

        let errors = validate(SchemaKind::Tasks, &doc).unwrap_err();

        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(
            errors.iter().any(|e| e.starts_with("/tasks/1/id: ")),
            "{errors:#?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("/tasks/1/created_at: ") && e.contains("date-time")),
            "{errors:#?}"
        );
    }

    #[test]
    fn a_missing_tasks_array_is_reported_at_the_root() {
        let errors = validate(SchemaKind::Checkpoint, &json!({"version": 1})).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(
            errors[0].starts_with("(root): ") && errors[0].contains("tasks"),
            "{errors:#?}"
        );
    }

    #[test]
    fn format_validation_is_on() {
        let mut t = task("T-1");
        t["started_at"] = json!("2026-02-30T25:00:00Z");
        assert!(!is_valid(SchemaKind::Task, &t));
        t["started_at"] = Value::Null;
        assert!(is_valid(SchemaKind::Task, &t));
    }

    #[test]
    fn valid_tasks_keeps_the_tasks_that_pass_on_their_own() {
        let mut broken = task("T-2");
        broken.as_object_mut().unwrap().remove("title");
        let doc = json!({"tasks": [task("T-1"), broken, "not an object", task("T-3")]});

        assert_eq!(valid_tasks(&doc), vec![task("T-1"), task("T-3")]);
        assert_eq!(valid_tasks(&json!([task("T-9")])), vec![task("T-9")]);
        assert!(valid_tasks(&json!({"tasks": "nope"})).is_empty());
        assert!(valid_tasks(&json!(null)).is_empty());
    }
}
