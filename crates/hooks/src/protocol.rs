//! The Claude Code hook protocol: what arrives on stdin and what may be printed on stdout.
//!
//! Input is read leniently. Claude Code adds fields and events from release to release, so the
//! payload is parsed as a generic JSON object and each field cairn needs is picked out of it; an
//! unknown field is ignored and a field of an unexpected type counts as absent instead of failing
//! the whole payload. Only a payload that is not a JSON object at all is malformed.
//!
//! Output is typed so that the wrong thing cannot be said: [`PermissionDecision`] has no `Allow`
//! variant (a guard that says nothing lets the normal permission flow run; one that answers
//! `allow` silently bypasses the user's own permission rules), and every `hookSpecificOutput`
//! carries its `hookEventName`.

use serde::Serialize;
use serde_json::{Map, Value};

/// The hook events cairn knows. Anything else is [`HookEvent::Other`] and is accepted silently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookEvent {
    SessionStart,
    PreToolUse,
    PostToolUse,
    PreCompact,
    Stop,
    SessionEnd,
    SubagentStart,
    SubagentStop,
    UserPromptSubmit,
    Other(String),
}

impl HookEvent {
    pub fn parse(name: &str) -> Self {
        match name {
            "SessionStart" => Self::SessionStart,
            "PreToolUse" => Self::PreToolUse,
            "PostToolUse" => Self::PostToolUse,
            "PreCompact" => Self::PreCompact,
            "Stop" => Self::Stop,
            "SessionEnd" => Self::SessionEnd,
            "SubagentStart" => Self::SubagentStart,
            "SubagentStop" => Self::SubagentStop,
            "UserPromptSubmit" => Self::UserPromptSubmit,
            other => Self::Other(other.to_owned()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::PreCompact => "PreCompact",
            Self::Stop => "Stop",
            Self::SessionEnd => "SessionEnd",
            Self::SubagentStart => "SubagentStart",
            Self::SubagentStop => "SubagentStop",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::Other(name) => name,
        }
    }
}

/// One hook payload, with the fields cairn uses picked out.
#[derive(Debug, Clone, PartialEq)]
pub struct HookInput {
    pub event: HookEvent,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub tool_name: Option<String>,
    /// Kept as JSON: each tool has its own input shape.
    pub tool_input: Option<Value>,
    /// PostToolUse: what the tool answered (kept as JSON, shape per tool).
    pub tool_response: Option<Value>,
    /// PreToolUse / PostToolUse: the id of one tool call, the same in both events.
    pub tool_use_id: Option<String>,
    /// SessionStart: `startup`, `resume`, `clear` or `compact`.
    pub source: Option<String>,
    /// PreCompact: `manual` or `auto`.
    pub trigger: Option<String>,
    /// SessionEnd: why the session ended.
    pub reason: Option<String>,
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    /// Stop / SubagentStop: Claude is already continuing because of a Stop hook.
    pub stop_hook_active: bool,
    /// SubagentStop: the subagent's token usage, when the payload carries it (`usage`, or
    /// `token_usage`); kept as JSON because its shape varies between releases.
    pub usage: Option<Value>,
}

/// Why a payload could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MalformedInput {
    Empty,
    /// Larger than the input cap; the size read so far.
    TooLarge(usize),
    /// stdin stayed open past the read deadline without a complete payload.
    Timeout(usize),
    NotJson(String),
    NotAnObject,
    /// An object without a `hook_event_name` string.
    NoEventName,
}

impl std::fmt::Display for MalformedInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Empty => write!(f, "empty hook input"),
            Self::TooLarge(n) => write!(f, "hook input larger than the cap (read {n} bytes)"),
            Self::Timeout(n) => write!(
                f,
                "stdin was not closed before the read deadline ({n} bytes read, no complete JSON object)"
            ),
            Self::NotJson(e) => write!(f, "hook input is not JSON: {e}"),
            Self::NotAnObject => write!(f, "hook input is JSON but not an object"),
            Self::NoEventName => write!(f, "hook input has no hook_event_name string"),
        }
    }
}

impl HookInput {
    /// Parses a payload; see the module docs for what lenient means here.
    pub fn parse(bytes: &[u8]) -> Result<Self, MalformedInput> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(MalformedInput::Empty);
        }
        // The first value decides; bytes after it (a writer's trailing output) are ignored.
        let value: Value = serde_json::Deserializer::from_slice(bytes)
            .into_iter()
            .next()
            .unwrap_or_else(|| Ok(Value::Null))
            .map_err(|e| MalformedInput::NotJson(e.to_string()))?;
        match value {
            Value::Object(map) => Self::from_object(map),
            _ => Err(MalformedInput::NotAnObject),
        }
    }

    pub fn from_object(mut map: Map<String, Value>) -> Result<Self, MalformedInput> {
        let event = match map.get("hook_event_name") {
            Some(Value::String(name)) => HookEvent::parse(name),
            _ => return Err(MalformedInput::NoEventName),
        };
        let tool_input = map.remove("tool_input").filter(|v| !v.is_null());
        let tool_response = map.remove("tool_response").filter(|v| !v.is_null());
        let text = |key: &str| match map.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        Ok(Self {
            event,
            session_id: text("session_id"),
            cwd: text("cwd"),
            tool_name: text("tool_name"),
            tool_use_id: text("tool_use_id"),
            tool_response,
            source: text("source"),
            trigger: text("trigger"),
            reason: text("reason"),
            agent_id: text("agent_id"),
            agent_type: text("agent_type"),
            stop_hook_active: map.get("stop_hook_active") == Some(&Value::Bool(true)),
            usage: map
                .remove("usage")
                .or_else(|| map.remove("token_usage"))
                .filter(Value::is_object),
            tool_input,
        })
    }

    /// A string field of `tool_input`, if it is there and is a string.
    pub fn tool_input_str(&self, key: &str) -> Option<&str> {
        self.tool_input.as_ref()?.get(key)?.as_str()
    }
}

/// What a hook prints: exactly one JSON object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_specific_output: Option<HookSpecificOutput>,
    /// A note shown to the user and the agent; never a decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "hookEventName")]
pub enum HookSpecificOutput {
    #[serde(rename_all = "camelCase")]
    PreToolUse {
        permission_decision: PermissionDecision,
        permission_decision_reason: String,
    },
    #[serde(rename_all = "camelCase")]
    SessionStart { additional_context: String },
}

/// No `Allow`: see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionDecision {
    Deny,
}

/// Claude Code's limit on `additionalContext`.
pub const ADDITIONAL_CONTEXT_MAX_CHARS: usize = 10_000;

impl HookOutput {
    pub fn deny(reason: impl Into<String>) -> Self {
        Self {
            hook_specific_output: Some(HookSpecificOutput::PreToolUse {
                permission_decision: PermissionDecision::Deny,
                permission_decision_reason: reason.into(),
            }),
            system_message: None,
        }
    }

    /// SessionStart context, cut to Claude Code's limit if it is longer.
    pub fn session_context(text: impl Into<String>) -> Self {
        let mut text = text.into();
        if text.chars().count() > ADDITIONAL_CONTEXT_MAX_CHARS {
            text = text
                .chars()
                .take(ADDITIONAL_CONTEXT_MAX_CHARS - 1)
                .collect();
            text.push('…');
        }
        Self {
            hook_specific_output: Some(HookSpecificOutput::SessionStart {
                additional_context: text,
            }),
            system_message: None,
        }
    }

    /// A top-level `systemMessage` and nothing else: informs, never blocks.
    pub fn system_message(text: impl Into<String>) -> Self {
        Self {
            hook_specific_output: None,
            system_message: Some(text.into()),
        }
    }

    /// The line printed on stdout.
    pub fn to_json_line(&self) -> String {
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_and_wrong_types_are_ignored() {
        let input = HookInput::parse(
            br#"{"hook_event_name":"PreToolUse","session_id":42,"cwd":"C:\\repo","tool_name":"Write",
                 "tool_input":{"file_path":"a.txt"},"brand_new_field":{"x":[1,2]}}"#,
        )
        .unwrap();
        assert_eq!(input.event, HookEvent::PreToolUse);
        assert_eq!(input.session_id, None, "a number is not a session id");
        assert_eq!(input.cwd.as_deref(), Some("C:\\repo"));
        assert_eq!(input.tool_input_str("file_path"), Some("a.txt"));
    }

    #[test]
    fn unknown_events_parse() {
        let input = HookInput::parse(br#"{"hook_event_name":"Notification"}"#).unwrap();
        assert_eq!(input.event, HookEvent::Other("Notification".into()));
        assert_eq!(input.event.name(), "Notification");
    }

    #[test]
    fn malformed_inputs_are_classified() {
        assert_eq!(HookInput::parse(b" \n"), Err(MalformedInput::Empty));
        assert!(matches!(
            HookInput::parse(b"{"),
            Err(MalformedInput::NotJson(_))
        ));
        assert_eq!(HookInput::parse(b"[1]"), Err(MalformedInput::NotAnObject));
        assert_eq!(
            HookInput::parse(br#"{"hook_event_name":7}"#),
            Err(MalformedInput::NoEventName)
        );
    }

    #[test]
    fn outputs_have_the_documented_shape() {
        let deny: Value = serde_json::from_str(&HookOutput::deny("no").to_json_line()).unwrap();
        assert_eq!(
            deny,
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}})
        );
        let ctx: Value =
            serde_json::from_str(&HookOutput::session_context("hi").to_json_line()).unwrap();
        assert_eq!(
            ctx,
            json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "hi"}})
        );
        let note: Value =
            serde_json::from_str(&HookOutput::system_message("hi").to_json_line()).unwrap();
        assert_eq!(note, json!({"systemMessage": "hi"}));
    }

    #[test]
    fn context_is_cut_to_the_limit() {
        let long = "é".repeat(ADDITIONAL_CONTEXT_MAX_CHARS + 50);
        let Some(HookSpecificOutput::SessionStart { additional_context }) =
            HookOutput::session_context(long).hook_specific_output
        else {
            panic!("not a SessionStart output");
        };
        assert_eq!(
            additional_context.chars().count(),
            ADDITIONAL_CONTEXT_MAX_CHARS
        );
        assert!(additional_context.ends_with('…'));
    }
}
