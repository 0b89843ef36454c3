//! The session document: front matter (as serde types whose JSON uses the seed's field names)
//! plus the log ([`LogEntry`]).
//!
//! Every object level carries a flattened `extra` map so that fields written by other tools (or a
//! newer cairn) survive a load/save round trip untouched.

use std::collections::BTreeMap;
use std::fmt;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::OrchestrationError;
use super::log::LogEntry;
use crate::time::{Timestamp, rfc3339};

/// Phase ids: the 1-based positions in the implementation plan, or the ids the caller gave.
pub type PhaseId = u32;

/// `YYYY-MM-DD-topic-slug`; any id must match `^[a-zA-Z0-9_-]+$` because it becomes a file name
/// (`state/archive/<id>.md`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

/// Topic slugs longer than this are cut (at a hyphen when possible) so file names stay readable.
pub const MAX_TOPIC_SLUG_LEN: usize = 64;

impl SessionId {
    pub fn parse(id: impl Into<String>) -> Result<Self, OrchestrationError> {
        let id = id.into();
        let invalid = |reason: &str| OrchestrationError::InvalidSessionId {
            id: id.clone(),
            reason: reason.to_owned(),
        };
        if id.is_empty() {
            return Err(invalid("it is empty"));
        }
        if !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(invalid(
                "only ASCII letters, digits, '-' and '_' are allowed",
            ));
        }
        Ok(Self(id))
    }

    /// `YYYY-MM-DD-<slug>` where the slug is the topic lowercased, every run of characters other
    /// than ASCII letters and digits turned into one hyphen, hyphens trimmed from both ends, and
    /// cut to [`MAX_TOPIC_SLUG_LEN`]. Non-ASCII letters count as separators: the id is a file name
    /// on every platform, so it stays plain ASCII.
    pub fn slugify(date: NaiveDate, topic: &str) -> Result<Self, OrchestrationError> {
        let mut slug = String::with_capacity(topic.len());
        for ch in topic.chars() {
            if ch.is_ascii_alphanumeric() {
                slug.push(ch.to_ascii_lowercase());
            } else if !slug.is_empty() && !slug.ends_with('-') {
                slug.push('-');
            }
        }
        if slug.len() > MAX_TOPIC_SLUG_LEN {
            let cut = slug[..=MAX_TOPIC_SLUG_LEN]
                .rfind('-')
                .filter(|&at| at > 0)
                .unwrap_or(MAX_TOPIC_SLUG_LEN);
            slug.truncate(cut);
        }
        let slug = slug.trim_end_matches('-');
        if slug.is_empty() {
            return Err(OrchestrationError::InvalidSessionId {
                id: format!("{}-", date.format("%Y-%m-%d")),
                reason: format!("the topic {topic:?} has no letters or digits to make a slug from"),
            });
        }
        Self::parse(format!("{}-{slug}", date.format("%Y-%m-%d")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SessionId {
    type Error = OrchestrationError;
    fn try_from(id: String) -> Result<Self, Self::Error> {
        Self::parse(id)
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> Self {
        id.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    InProgress,
    Completed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowMode {
    Standard,
    Express,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
    Skipped,
}

impl PhaseStatus {
    pub const ALL: [PhaseStatus; 5] = [
        Self::Pending,
        Self::InProgress,
        Self::Completed,
        Self::Failed,
        Self::Skipped,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }

    /// Completed and skipped phases are done: nothing moves them again.
    pub fn is_done(self) -> bool {
        matches!(self, Self::Completed | Self::Skipped)
    }
}

impl fmt::Display for PhaseStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The seed's error categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    Validation,
    Timeout,
    FileConflict,
    Runtime,
    Dependency,
}

/// What the seed writes as the resolution of an error nobody has dealt with yet.
pub const PENDING_RESOLUTION: &str = "pending";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorRecord {
    pub agent: String,
    #[serde(with = "rfc3339")]
    pub timestamp: Timestamp,
    #[serde(rename = "type")]
    pub kind: ErrorKind,
    pub message: String,
    pub resolution: String,
    pub resolved: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The Handoff Report Part 2 fields a phase passes on to the phases after it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DownstreamContext {
    #[serde(default)]
    pub key_interfaces_introduced: Vec<String>,
    #[serde(default)]
    pub patterns_established: Vec<String>,
    #[serde(default)]
    pub integration_points: Vec<String>,
    #[serde(default)]
    pub assumptions: Vec<String>,
    #[serde(default)]
    pub warnings: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DownstreamContext {
    /// The five lists with the seed's labels (the Handoff Report's), in the seed's order.
    pub fn labelled(&self) -> [(&'static str, &[String]); 5] {
        [
            ("Key Interfaces Introduced", &self.key_interfaces_introduced),
            ("Patterns Established", &self.patterns_established),
            ("Integration Points", &self.integration_points),
            ("Assumptions", &self.assumptions),
            ("Warnings", &self.warnings),
        ]
    }

    pub(crate) fn lists_mut(&mut self) -> [&mut Vec<String>; 5] {
        [
            &mut self.key_interfaces_introduced,
            &mut self.patterns_established,
            &mut self.integration_points,
            &mut self.assumptions,
            &mut self.warnings,
        ]
    }

    pub(crate) fn lists(&self) -> [&Vec<String>; 5] {
        [
            &self.key_interfaces_introduced,
            &self.patterns_established,
            &self.integration_points,
            &self.assumptions,
            &self.warnings,
        ]
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub id: PhaseId,
    pub name: String,
    pub status: PhaseStatus,
    #[serde(default)]
    pub agents: Vec<String>,
    #[serde(default)]
    pub parallel: bool,
    #[serde(default, with = "rfc3339::option")]
    pub started: Option<Timestamp>,
    #[serde(default, with = "rfc3339::option")]
    pub completed: Option<Timestamp>,
    #[serde(default)]
    pub blocked_by: Vec<PhaseId>,
    #[serde(default)]
    pub files_created: Vec<String>,
    #[serde(default)]
    pub files_modified: Vec<String>,
    #[serde(default)]
    pub files_deleted: Vec<String>,
    #[serde(default)]
    pub downstream_context: DownstreamContext,
    #[serde(default)]
    pub errors: Vec<ErrorRecord>,
    #[serde(default)]
    pub retry_count: u32,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Phase {
    /// Whether `path` is in any of the three manifests.
    pub fn manifest_contains(&self, path: &str) -> bool {
        [
            &self.files_created,
            &self.files_modified,
            &self.files_deleted,
        ]
        .iter()
        .any(|list| list.iter().any(|p| p == path))
    }
}

/// Token counts of one agent, or of one increment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentTokens {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cached: u64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One increment reported by a subagent invocation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenUsage {
    #[serde(default)]
    pub total_input: u64,
    #[serde(default)]
    pub total_output: u64,
    #[serde(default)]
    pub total_cached: u64,
    /// Sorted by agent name so the written file is stable.
    #[serde(default)]
    pub by_agent: BTreeMap<String, AgentTokens>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TokenUsage {
    /// Adds to the totals and to the agent's own counts. Saturating: a counter pinned at
    /// `u64::MAX` is a better record than a wrapped one or a refused update.
    pub fn add(&mut self, agent: &str, counts: TokenCounts) {
        self.total_input = self.total_input.saturating_add(counts.input);
        self.total_output = self.total_output.saturating_add(counts.output);
        self.total_cached = self.total_cached.saturating_add(counts.cached);
        let mine = self.by_agent.entry(agent.to_owned()).or_default();
        mine.input = mine.input.saturating_add(counts.input);
        mine.output = mine.output.saturating_add(counts.output);
        mine.cached = mine.cached.saturating_add(counts.cached);
    }
}

/// The front matter of `active-session.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    pub session_id: SessionId,
    pub task: String,
    #[serde(with = "rfc3339")]
    pub created: Timestamp,
    #[serde(with = "rfc3339")]
    pub updated: Timestamp,
    pub status: SessionStatus,
    pub workflow_mode: WorkflowMode,
    /// `null` for Express sessions, which have no design document.
    #[serde(default)]
    pub design_document: Option<String>,
    #[serde(default)]
    pub implementation_plan: Option<String>,
    pub current_phase: PhaseId,
    pub total_phases: u32,
    #[serde(default)]
    pub execution_mode: Option<String>,
    #[serde(default)]
    pub execution_backend: Option<String>,
    /// The parallel batch being dispatched (seed 004's `update_session` / `transition_phase`
    /// set it); absent until one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_batch: Option<String>,
    #[serde(default)]
    pub task_complexity: Option<String>,
    #[serde(default)]
    pub token_usage: TokenUsage,
    #[serde(default)]
    pub phases: Vec<Phase>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One orchestration session: the front matter and the log below it.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub state: SessionState,
    pub log: Vec<LogEntry>,
}

impl Session {
    pub fn id(&self) -> &SessionId {
        &self.state.session_id
    }

    pub fn phase(&self, id: PhaseId) -> Option<&Phase> {
        self.state.phases.iter().find(|p| p.id == id)
    }
}
