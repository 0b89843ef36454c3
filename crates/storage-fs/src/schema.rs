//! JSON Schema validation of every JSON file cairn writes.
//!
//! The schemas live in the workspace's `schemas/` directory (JSON Schema 2020-12) and are embedded
//! in the binary with `include_str!`, so validation never touches the filesystem or the network.
//! Each is compiled once per process, on first use (or ahead of it, see [`prepare`]), with format
//! validation on (`date-time` fields must really be RFC 3339). `tasks.schema.json` refers to
//! `task.schema.json` and `checkpoint.schema.json` to `tasks.schema.json` by relative `$ref`; both
//! targets are served from an in-memory registry and the validator is built offline, so a
//! reference can never trigger a fetch.
//!
//! The schemas describe the interoperability contract with the original plugin's files: required
//! fields and their shapes are enforced, unknown properties are allowed (cairn preserves them).
//!
//! Writers call [`validate`] on the complete new document before the atomic write; a failure
//! aborts the write. Recovery calls [`valid_tasks`] on a damaged tasks file or a checkpoint to keep
//! the tasks that individually pass (partial recovery beats none).

use jsonschema::{Draft, Registry, Validator};
use serde_json::Value;
use std::sync::OnceLock;

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

    fn index(self) -> usize {
        match self {
            SchemaKind::Project => 0,
            SchemaKind::Task => 1,
            SchemaKind::Tasks => 2,
            SchemaKind::Velocity => 3,
            SchemaKind::Checkpoint => 4,
        }
    }
}

/// The registry the schemas `$ref` resolve against, built once.
fn registry() -> &'static Registry<'static> {
    static REGISTRY: OnceLock<Registry<'static>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        // Only the schemas that others `$ref` need to be in the registry.
        let referenced = [SchemaKind::Task, SchemaKind::Tasks];
        Registry::new()
            .extend(referenced.map(|kind| {
                (
                    format!("{SCHEMA_BASE_URI}{}", kind.file_name()),
                    kind.schema(),
                )
            }))
            .and_then(|builder| builder.prepare())
            .unwrap_or_else(|error| panic!("embedded schemas do not form a registry: {error}"))
    })
}

fn compile(kind: SchemaKind) -> Validator {
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .with_registry(registry())
        .should_validate_formats(true)
        .offline()
        .build(&kind.schema())
        .unwrap_or_else(|error| {
            panic!(
                "embedded schema {} does not compile: {error}",
                kind.file_name()
            )
        })
}

/// Each compiled on its first use only: a write needs one or two of the five.
static VALIDATORS: [OnceLock<Validator>; SchemaKind::ALL.len()] =
    [const { OnceLock::new() }; SchemaKind::ALL.len()];

fn validator(kind: SchemaKind) -> &'static Validator {
    VALIDATORS[kind.index()].get_or_init(|| compile(kind))
}

/// Starts compiling the validators of `kinds` on another thread, unless they are compiled
/// already: a writer calls it before it reads the store, and validates after. The first compile
/// in a process costs milliseconds (jsonschema builds its meta-schema validator), which the read
/// of a large store then hides; whoever needs a validator still being compiled waits for it.
pub fn prepare(kinds: &'static [SchemaKind]) {
    if kinds
        .iter()
        .all(|kind| VALIDATORS[kind.index()].get().is_some())
    {
        return;
    }
    // A thread that cannot be started only means the writer compiles them itself.
    let _ = std::thread::Builder::new()
        .name("cairn-schemas".into())
        .spawn(move || {
            for &kind in kinds {
                validator(kind);
            }
        });
}

/// Checks `instance` against the schema of `kind`.
///
/// On failure, returns every violation as `<instance path>: <message>`, the path being a JSON
/// pointer (`/tasks/3/id`) or `(root)` for the document itself.
pub fn validate(kind: SchemaKind, instance: &Value) -> Result<(), Vec<String>> {
    let messages: Vec<String> = validator(kind)
        .iter_errors(instance)
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
    validator(kind).is_valid(instance)
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

    #[test]
    fn validators_are_compiled_once() {
        assert!(std::ptr::eq(
            validator(SchemaKind::Task),
            validator(SchemaKind::Task)
        ));
    }
}
