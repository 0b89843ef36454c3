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
    Orchestration,
    Plan,
    Session,
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

/// A phase id: seed 004 takes numbers or strings of digits.
fn phase_id() -> Value {
    json!({"type": ["integer", "string"]})
}

fn phase_ids() -> Value {
    json!({"type": "array", "items": phase_id()})
}

fn session_only() -> Value {
    object(&[("session_id", string())], &["session_id"])
}

fn create_session() -> Value {
    let phase = object(
        &[
            ("id", phase_id()),
            ("name", string()),
            ("agent", string()),
            ("parallel", boolean()),
            ("blocked_by", phase_ids()),
            ("files", strings()),
        ],
        &["id", "name", "agent"],
    );
    object(
        &[
            ("session_id", string()),
            ("task", string()),
            ("phases", json!({"type": "array", "items": phase})),
            ("design_document", string()),
            ("implementation_plan", string()),
            ("task_complexity", one_of(&["simple", "medium", "complex"])),
            ("workflow_mode", one_of(&["express", "standard"])),
        ],
        &["session_id", "task", "phases"],
    )
}

fn session_status() -> Value {
    object(&[("session_id", string())], &[])
}

fn update_session() -> Value {
    object(
        &[
            ("session_id", string()),
            ("execution_mode", one_of(&["parallel", "sequential"])),
            ("current_batch", json!({"type": ["string", "integer"]})),
        ],
        &["session_id"],
    )
}

fn transition_phase() -> Value {
    let context = object(
        &[
            ("key_interfaces_introduced", strings()),
            ("patterns_established", strings()),
            ("integration_points", strings()),
            ("assumptions", strings()),
            ("warnings", strings()),
        ],
        &[],
    );
    let tokens = object(
        &[
            ("input", integer()),
            ("output", integer()),
            ("cached", integer()),
        ],
        &[],
    );
    object(
        &[
            ("session_id", string()),
            ("completed_phase_id", phase_id()),
            ("next_phase_id", phase_id()),
            ("next_phase_ids", phase_ids()),
            ("downstream_context", context),
            ("files_created", strings()),
            ("files_modified", strings()),
            ("files_deleted", strings()),
            ("token_usage", tokens),
            ("batch_id", json!({"type": ["string", "integer"]})),
        ],
        &[],
    )
}

fn plan() -> Value {
    object(
        &[
            ("action", one_of(crate::plan::ACTIONS)),
            ("goal", string()),
            ("force", boolean()),
            ("state", string()),
            ("reason", string()),
            ("step", string()),
            ("note", string()),
            ("area", string()),
            ("text", string()),
            ("file", string()),
            ("estimate", integer()),
            ("abstraction", string()),
            ("offset", integer()),
            ("limit", integer()),
        ],
        &["action"],
    )
}

fn session() -> Value {
    object(
        &[
            ("action", one_of(crate::session::ACTIONS)),
            ("id", string()),
            ("group", string()),
            ("max_parallel", integer()),
            ("tasks", strings()),
            ("ready", boolean()),
            ("force", boolean()),
            ("duration", string()),
            ("tokens", integer()),
            ("note", string()),
            ("text", string()),
            ("offset", integer()),
            ("limit", integer()),
        ],
        &["action"],
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
    Spec {
        name: "create_session",
        wing: Wing::Orchestration,
        effect: Effect::Write,
        description: "Start an orchestration session; every phase pending.",
        schema: create_session,
    },
    Spec {
        name: "get_session_status",
        wing: Wing::Orchestration,
        effect: Effect::Read,
        description: "The active orchestration session, or exists:false.",
        schema: session_status,
    },
    Spec {
        name: "update_session",
        wing: Wing::Orchestration,
        effect: Effect::Idempotent,
        description: "Set the session's execution mode or current batch.",
        schema: update_session,
    },
    Spec {
        name: "transition_phase",
        wing: Wing::Orchestration,
        effect: Effect::Write,
        description: "Complete a phase (files, context, tokens) and start the next one(s), atomically.",
        schema: transition_phase,
    },
    Spec {
        name: "archive_session",
        wing: Wing::Orchestration,
        effect: Effect::Destructive,
        description: "Archive the finished session with its design and plan.",
        schema: session_only,
    },
    Spec {
        name: "plan",
        wing: Wing::Plan,
        effect: Effect::Write,
        description: "The active plan, as `cairn plan ACTION` (approve is the user's, refused).",
        schema: plan,
    },
    Spec {
        name: "session",
        wing: Wing::Session,
        // `recover` resets a dead session's tasks and `start` with `force` takes over a live
        // lock: the tool as a whole may overwrite state, so clients should ask first.
        effect: Effect::Destructive,
        description: "The execution session in waves, as `cairn session ACTION` (id: a task).",
        schema: session,
    },
];

pub fn find(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.name == name)
}

/// The `tools/list` answer.
pub fn list() -> Vec<Tool> {
    SPECS.iter().map(Spec::tool).collect()
}
