//! The tool table: every tool's name, one-line description, input schema and annotations, by
//! hand. Each word here is paid for in every session that loads the server, so descriptions say
//! what the tool does in a line and schemas carry only `type`, `enum` and `required` — a field's
//! meaning is in its name, and a wrong value is answered with an error that says what to send.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

/// Which service a tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wing {
    Project,
}

/// What a tool does to the state, for the annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads only.
    Read,
    /// Writes; calling it again with the same arguments changes nothing more.
    Idempotent,
    /// Adds or moves state; a second call is a second change.
    Write,
    /// May remove or overwrite state.
    Destructive,
}

/// One tool.
#[derive(Debug)]
pub struct Spec {
    pub name: &'static str,
    pub wing: Wing,
    pub effect: Effect,
    pub description: &'static str,
    schema: fn() -> Value,
}

impl Spec {
    pub fn schema(&self) -> Value {
        (self.schema)()
    }

    /// The MCP tool definition.
    pub fn tool(&self) -> Tool {
        let Value::Object(schema) = self.schema() else {
            unreachable!("every schema is an object")
        };
        let annotations = ToolAnnotations::new()
            .read_only(self.effect == Effect::Read)
            .destructive(self.effect == Effect::Destructive)
            .idempotent(matches!(self.effect, Effect::Read | Effect::Idempotent));
        Tool::new(
            Cow::Borrowed(self.name),
            Cow::Borrowed(self.description),
            Arc::new(schema),
        )
        .annotate(annotations)
    }
}

/// An object schema with these properties, the first `required` of them required.
fn object(properties: &[(&str, Value)], required: &[&str]) -> Value {
    let properties: Map<String, Value> = properties
        .iter()
        .map(|(name, schema)| ((*name).to_owned(), schema.clone()))
        .collect();
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

fn string() -> Value {
    json!({"type": "string"})
}

fn integer() -> Value {
    json!({"type": "integer"})
}

fn boolean() -> Value {
    json!({"type": "boolean"})
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn one_of(values: &[&str]) -> Value {
    json!({"enum": values})
}

fn none() -> Value {
    object(&[], &[])
}

fn id_only() -> Value {
    object(&[("id", string())], &["id"])
}

fn page() -> Value {
    object(&[("offset", integer()), ("limit", integer())], &[])
}

fn add() -> Value {
    object(
        &[
            ("title", string()),
            ("parent", string()),
            ("depends", strings()),
            ("priority", one_of(&["CRITICAL", "HIGH", "MEDIUM", "LOW"])),
            ("description", string()),
            ("criteria", strings()),
            ("phase", string()),
            ("estimate", integer()),
        ],
        &["title"],
    )
}

fn complete() -> Value {
    object(
        &[("id", string()), ("actual", integer()), ("agent", string())],
        &["id"],
    )
}

fn block() -> Value {
    object(
        &[("id", string()), ("reason", string()), ("agent", string())],
        &["id", "reason"],
    )
}

fn decompose() -> Value {
    object(&[("id", string()), ("into", strings())], &["id", "into"])
}

fn depend() -> Value {
    object(
        &[("id", string()), ("on", string()), ("remove", boolean())],
        &["id", "on"],
    )
}

fn claim() -> Value {
    object(
        &[("agent", string()), ("id", string()), ("lease", string())],
        &["agent"],
    )
}

/// Every tool, in the order `tools/list` gives them.
pub const SPECS: &[Spec] = &[
    Spec {
        name: "status",
        wing: Wing::Project,
        effect: Effect::Read,
        description: "Project summary: progress, in progress, blocked, ready.",
        schema: none,
    },
    Spec {
        name: "next",
        wing: Wing::Project,
        effect: Effect::Read,
        description: "The task to do next.",
        schema: none,
    },
    Spec {
        name: "ready",
        wing: Wing::Project,
        effect: Effect::Read,
        description: "Ready tasks, paged.",
        schema: page,
    },
    Spec {
        name: "show",
        wing: Wing::Project,
        effect: Effect::Read,
        description: "One task in full.",
        schema: id_only,
    },
    Spec {
        name: "add",
        wing: Wing::Project,
        effect: Effect::Write,
        description: "Add a task.",
        schema: add,
    },
    Spec {
        name: "start",
        wing: Wing::Project,
        effect: Effect::Idempotent,
        description: "Start a task.",
        schema: id_only,
    },
    Spec {
        name: "complete",
        wing: Wing::Project,
        effect: Effect::Idempotent,
        description: "Complete a task (actual: minutes spent).",
        schema: complete,
    },
    Spec {
        name: "block",
        wing: Wing::Project,
        effect: Effect::Idempotent,
        description: "Block a task, saying why.",
        schema: block,
    },
    Spec {
        name: "unblock",
        wing: Wing::Project,
        effect: Effect::Idempotent,
        description: "Unblock a task.",
        schema: id_only,
    },
    Spec {
        name: "decompose",
        wing: Wing::Project,
        effect: Effect::Write,
        description: "Split a task into subtasks (titles).",
        schema: decompose,
    },
    Spec {
        name: "depend",
        wing: Wing::Project,
        effect: Effect::Idempotent,
        description: "Make task id wait on task on (remove: undo).",
        schema: depend,
    },
    Spec {
        name: "claim",
        wing: Wing::Project,
        effect: Effect::Write,
        description: "Claim a task (default: the next) for an agent; lease like 30m.",
        schema: claim,
    },
];

pub fn find(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.name == name)
}

/// The `tools/list` answer.
pub fn list() -> Vec<Tool> {
    SPECS.iter().map(Spec::tool).collect()
}
