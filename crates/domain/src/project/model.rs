//! The project store's entities, exactly as they appear in `project.json` and `tasks.json`.
//!
//! Interoperability contract (SPEC §2): files stay readable by tools built for the original
//! plugin, and fields cairn does not know are kept on every rewrite (`extra`). Optional fields
//! are `Option`s so that "absent" and "present" survive a round trip as they were.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::DomainError;
use crate::time::{Timestamp, rfc3339};

/// `T-001`, `T-042`, `T-1234`: `^T-[0-9]+$`. Compared by number, displayed as written.
///
/// The contract allows any number of digits, so `T-7` (another tool) and `T-007` (cairn) name the
/// same task: equality, hashing and order go by the number. What people and agents type is
/// normalised to cairn's spelling; what files contain is kept as written.
///
/// ```
/// use cairn_domain::project::TaskId;
///
/// let typed: TaskId = "7".parse().unwrap();        // Claude Code's task lists say "7"
/// assert_eq!(typed.as_str(), "T-007");
/// assert_eq!("t-42".parse::<TaskId>().unwrap().as_str(), "T-042");
/// assert_eq!(TaskId::from_number(1234).as_str(), "T-1234");
/// let written = TaskId::try_from("T-7".to_owned()).unwrap();
/// assert_eq!(written.as_str(), "T-7");
/// assert_eq!(written, typed);                      // the same task
/// assert!(TaskId::from_number(999) < TaskId::from_number(1000));
/// // The schema allows any number of leading zeros; the spelling is kept, however long.
/// let padded = format!("T-{}7", "0".repeat(40));
/// assert_eq!(TaskId::try_from(padded.as_str()).unwrap().as_str(), padded);
/// assert_eq!(TaskId::try_from(padded.as_str()).unwrap(), typed);
/// assert_eq!(TaskId::from_number(u64::MAX).as_str(), "T-18446744073709551615");
/// assert!("T-".parse::<TaskId>().is_err());
/// assert!("../etc".parse::<TaskId>().is_err());
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TaskId {
    text: Spelling,
    #[serde(skip)]
    number: u64,
}

/// A task id as it is spelled (`T-001`, `T-0007`), held inline when it is short — always, for
/// the ids cairn makes: ids are short, a list holds several per task (its own, its dependencies,
/// its parent), and one heap allocation for each was a tenth of decoding a large list. The schema
/// allows any number of leading zeros, so a longer spelling is kept on the heap.
#[derive(Clone)]
enum Spelling {
    Inline {
        len: u8,
        bytes: [u8; Spelling::INLINE],
    },
    Long(Box<str>),
}

impl Spelling {
    /// `T-` and the 20 digits of the largest `u64`.
    const INLINE: usize = 22;

    fn new(text: &str) -> Self {
        let mut bytes = [0; Self::INLINE];
        match (bytes.get_mut(..text.len()), u8::try_from(text.len())) {
            (Some(head), Ok(len)) => {
                head.copy_from_slice(text.as_bytes());
                Self::Inline { len, bytes }
            }
            _ => Self::Long(text.into()),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            // Built only from a `&str` (see `new`): always UTF-8, so the fallback is never taken.
            Self::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            Self::Long(text) => text,
        }
    }
}

impl fmt::Debug for Spelling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for TaskId {
    fn eq(&self, other: &Self) -> bool {
        self.number == other.number
    }
}

impl Eq for TaskId {}

impl std::hash::Hash for TaskId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.number.hash(state);
    }
}

impl PartialOrd for TaskId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TaskId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.number.cmp(&other.number)
    }
}

impl TaskId {
    /// cairn's own spelling: at least three digits.
    pub fn from_number(number: u64) -> Self {
        Self {
            text: Spelling::new(&format!("T-{number:03}")),
            number,
        }
    }

    pub fn number(&self) -> u64 {
        self.number
    }

    pub fn as_str(&self) -> &str {
        self.text.as_str()
    }
}

impl FromStr for TaskId {
    type Err = DomainError;

    fn from_str(text: &str) -> Result<Self, DomainError> {
        let trimmed = text.trim();
        // People type `7`, `t-7` or `T-0007`; all mean the task numbered 7.
        let digits = trimmed
            .strip_prefix("T-")
            .or_else(|| trimmed.strip_prefix("t-"))
            .unwrap_or(trimmed);
        Ok(Self::from_number(
            parse_number(digits).ok_or_else(|| bad_task_id(text))?,
        ))
    }
}

/// The number of a task id's digits; `None` unless they are 1 to 19 ASCII digits that fit.
fn parse_number(digits: &str) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn bad_task_id(text: &str) -> DomainError {
    DomainError::invalid(
        "task id",
        format!("`{text}` is not a task id; task ids look like T-001"),
    )
}

impl TryFrom<&str> for TaskId {
    type Error = DomainError;

    fn try_from(text: &str) -> Result<Self, DomainError> {
        // On read, accept exactly what the contract allows and keep its spelling.
        match text.strip_prefix("T-").and_then(parse_number) {
            Some(number) => Ok(Self {
                text: Spelling::new(text),
                number,
            }),
            None => Err(bad_task_id(text)),
        }
    }
}

impl TryFrom<String> for TaskId {
    type Error = DomainError;

    fn try_from(text: String) -> Result<Self, DomainError> {
        Self::try_from(text.as_str())
    }
}

impl From<TaskId> for String {
    fn from(id: TaskId) -> String {
        id.as_str().to_owned()
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `^[a-z0-9-]+$`: safe as a directory name, so no id can escape the store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ProjectId(String);

impl ProjectId {
    /// The character rule of [`ProjectId::is_valid`], as a regular expression for messages and
    /// schemas.
    pub const PATTERN: &'static str = "^[a-z0-9-]+$";
    /// The longest project id, in bytes.
    pub const MAX_LEN: usize = 128;

    /// The one project-id rule: every layer that meets a project id (the CLI, the store's layout,
    /// the hook's guard) asks this, so they cannot disagree about which directories are projects.
    pub fn is_valid(text: &str) -> bool {
        !text.is_empty()
            && text.len() <= Self::MAX_LEN
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ProjectId {
    type Error = DomainError;

    fn try_from(text: String) -> Result<Self, DomainError> {
        if Self::is_valid(&text) {
            Ok(Self(text))
        } else {
            Err(DomainError::invalid(
                "project id",
                format!(
                    "`{text}` is not a valid project id: use 1-128 lowercase letters, digits and dashes, e.g. `web-app`"
                ),
            ))
        }
    }
}

impl FromStr for ProjectId {
    type Err = DomainError;

    fn from_str(text: &str) -> Result<Self, DomainError> {
        Self::try_from(text.to_owned())
    }
}

impl From<ProjectId> for String {
    fn from(id: ProjectId) -> String {
        id.0
    }
}

impl fmt::Display for ProjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Declares a string enum whose serde, Display and FromStr forms are one table.
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal $(| $alias:literal)*),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text $(, alias = $alias)*)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = DomainError;

            fn from_str(text: &str) -> Result<Self, DomainError> {
                let wanted = text.trim().replace('_', "-");
                $(
                    if wanted.eq_ignore_ascii_case($text) $(|| wanted.eq_ignore_ascii_case($alias))* {
                        return Ok($name::$variant);
                    }
                )+
                // Statuses are spelled with underscores on disk; accept both spellings on input.
                $(
                    if wanted.eq_ignore_ascii_case(&$text.replace('_', "-")) {
                        return Ok($name::$variant);
                    }
                )+
                Err(DomainError::invalid(
                    stringify!($name),
                    format!("`{}` is not one of: {}", text, [$($text),+].join(", ")),
                ))
            }
        }
    };
}

string_enum! {
    /// A task's place in the hierarchy. `phase` and `micro` are accepted on read for tools that
    /// write them, and written back as read.
    Level {
        Epic = "epic",
        Story = "story",
        Task = "task",
        Subtask = "subtask",
        MicroTask = "micro-task",
        Phase = "phase",
        Micro = "micro",
    }
}

impl Level {
    /// The levels a new task may be given. `phase` and `micro` are read from (and written back
    /// to) files other tools wrote, but cairn does not create more of them: two spellings of one
    /// level would split every filter and count.
    pub const CANONICAL: &'static [Level] = &[
        Level::Epic,
        Level::Story,
        Level::Task,
        Level::Subtask,
        Level::MicroTask,
    ];

    pub fn is_canonical(self) -> bool {
        Self::CANONICAL.contains(&self)
    }
}

string_enum! {
    Priority {
        Critical = "CRITICAL",
        High = "HIGH",
        Medium = "MEDIUM",
        Low = "LOW",
    }
}

string_enum! {
    /// See [`super::status`] for the transition table.
    TaskStatus {
        Pending = "PENDING",
        InResearch = "IN_RESEARCH",
        Researched = "RESEARCHED",
        InProgress = "IN_PROGRESS",
        Validating = "VALIDATING",
        Complete = "COMPLETE",
        Blocked = "BLOCKED",
        Cancelled = "CANCELLED",
    }
}

string_enum! {
    ProjectType {
        Software = "software",
        Content = "content",
        Research = "research",
        Business = "business",
        Auto = "auto",
    }
}

string_enum! {
    ProjectStatus {
        Initializing = "INITIALIZING",
        Ready = "READY",
        Planned = "PLANNED",
        InProgress = "IN_PROGRESS",
        Paused = "PAUSED",
        Blocked = "BLOCKED",
        Complete = "COMPLETE",
        Cancelled = "CANCELLED",
    }
}

string_enum! {
    PhaseStatus {
        Pending = "PENDING",
        InProgress = "IN_PROGRESS",
        Complete = "COMPLETE",
        Skipped = "SKIPPED",
    }
}

/// Minutes actually spent on a task: any JSON number ≥ 0, as the schema says, because other tools
/// write `12.5`. The number is kept as written (`12.5`, `12.0`, `12`), so rewriting tasks.json
/// never changes a value cairn did not set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Minutes(serde_json::Number);

impl Minutes {
    /// The value as a float, for arithmetic.
    pub fn as_f64(&self) -> f64 {
        self.0.as_f64().unwrap_or(0.0)
    }

    /// The value rounded to whole minutes (saturating), for display and for the log.
    pub fn whole(&self) -> u32 {
        match self.0.as_u64() {
            Some(n) => u32::try_from(n).unwrap_or(u32::MAX),
            // `as` saturates and maps NaN to 0; a negative value (never schema-valid) reads as 0.
            None => self.as_f64().round() as u32,
        }
    }
}

impl From<u32> for Minutes {
    fn from(minutes: u32) -> Self {
        Self(minutes.into())
    }
}

impl fmt::Display for Minutes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Readers for the schema's `"type": "integer"` fields. JSON Schema counts `12.0` as an integer,
/// so another tool may write it; it is read as 12 (the same JSON number, written back as `12`).
/// The schema bounds each such field to what a `u32` holds, so every valid value fits.
mod list;
mod wire;

pub use list::{ListRead, TaskList, forget_lists_when_dropped};
pub use wire::Exact;

mod whole {
    use serde::{Deserialize, Deserializer};

    fn to_u32<E: serde::de::Error>(number: &serde_json::Number) -> Result<u32, E> {
        let whole = match (number.as_u64(), number.as_f64()) {
            (Some(n), _) => Some(n),
            // `-0.0` and `12.0` are integers to JSON Schema; `as` is exact for these values.
            (None, Some(f)) if f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&f) => {
                Some(f as u64)
            }
            _ => None,
        };
        whole.and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
            E::custom(format!(
                "expected a whole number from 0 to {}, found {number}",
                u32::MAX
            ))
        })
    }

    pub fn required<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        to_u32(&serde_json::Number::deserialize(d)?)
    }

    pub fn option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
        Option::<serde_json::Number>::deserialize(d)?
            .map(|n| to_u32(&n))
            .transpose()
    }
}

/// One object of the `tasks` array. (`Deserialize` is in `model/wire.rs`.)
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Task {
    pub id: TaskId,
    pub title: String,
    pub level: Level,
    pub status: TaskStatus,
    pub priority: Priority,
    #[serde(default)]
    pub dependencies: Vec<TaskId>,
    #[serde(default)]
    pub completion_criteria: Vec<String>,
    #[serde(with = "rfc3339")]
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<TaskId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtasks: Option<Vec<TaskId>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "whole::option"
    )]
    pub estimate_minutes: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual_minutes: Option<Minutes>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "rfc3339::option"
    )]
    pub started_at: Option<Timestamp>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "rfc3339::option"
    )]
    pub completed_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub research_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// cairn's bookkeeping: how many times staleness reset this task.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "whole::option"
    )]
    pub stale_count: Option<u32>,
    /// The agent holding this task's claim (`task claim`), while it is IN_PROGRESS or VALIDATING.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    /// When the claim lapses unless renewed; past it, the task is reclaimable.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "rfc3339::option"
    )]
    pub lease_expires_at: Option<Timestamp>,
    /// Fields written by other tools, kept as they were.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Task {
    pub fn children(&self) -> &[TaskId] {
        self.subtasks.as_deref().unwrap_or(&[])
    }

    /// A parent is never executed itself: it completes when its children do.
    pub fn is_parent(&self) -> bool {
        !self.children().is_empty()
    }
}

/// The `tasks.json` document. (`Deserialize` is in `model/wire.rs`.)
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskDoc {
    #[serde(default = "one", deserialize_with = "whole::required")]
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<ProjectId>,
    pub tasks: TaskList,
    /// cairn's bookkeeping for the checkpoint trigger: completions since the last checkpoint.
    #[serde(
        default,
        skip_serializing_if = "is_zero",
        deserialize_with = "whole::required"
    )]
    pub completions_since_checkpoint: u32,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn one() -> u32 {
    1
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TaskDoc {
    pub fn new(project_id: ProjectId) -> Self {
        Self {
            version: 1,
            project_id: Some(project_id),
            tasks: TaskList::new(),
            completions_since_checkpoint: 0,
            extra: Map::new(),
        }
    }

    /// The document's top-level fields without its tasks: what an adapter that keeps tasks
    /// apart (a row each, a journal) stores for the rest.
    pub fn without_tasks(&self) -> Self {
        Self {
            version: self.version,
            project_id: self.project_id.clone(),
            tasks: TaskList::new(),
            completions_since_checkpoint: self.completions_since_checkpoint,
            extra: self.extra.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub id: String,
    pub name: String,
    pub status: PhaseStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<TaskId>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `project.json` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Project {
    pub id: ProjectId,
    pub name: String,
    pub goal: String,
    #[serde(rename = "type")]
    pub kind: ProjectType,
    pub status: ProjectStatus,
    #[serde(default)]
    pub phases: Vec<Phase>,
    #[serde(with = "rfc3339")]
    pub created_at: Timestamp,
    #[serde(with = "rfc3339")]
    pub updated_at: Timestamp,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A project and its tasks: what one store transaction reads and may change.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectState {
    pub project: Project,
    pub tasks: TaskDoc,
}

/// The `research_file` of a task's brief: relative to the project directory, as the original
/// plugin writes it (`research/T-003.md`); adapters store the brief there.
pub fn research_file_for(task: &TaskId) -> String {
    format!("research/{task}.md")
}

/// Validates a phase id against `^[a-z0-9-]*$`.
pub fn check_phase_id(id: &str) -> Result<(), DomainError> {
    super::limits::check(super::limits::Field::Phase, id)?;
    if id
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        Ok(())
    } else {
        Err(DomainError::invalid(
            "phase",
            format!("`{id}` is not a valid phase id: use lowercase letters, digits and dashes"),
        ))
    }
}
