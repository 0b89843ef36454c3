//! The session's log: what the Markdown body below the front matter records, as values.
//!
//! The log is a list of entries appended as the session goes; the adapter renders them (the
//! seed's "Markdown Body Updates" format lives in `cairn_storage_fs::orchestration`). Text that
//! cairn did not write — a log written by hand or by another tool — is kept verbatim as
//! [`LogEntry::Text`].
//!
//! An adapter that stores the log as text reads it back as one [`LogEntry::Text`] holding the
//! rendered log (the Markdown does not hold the phase snapshots), so across such an adapter a
//! log compares equal by what it renders to, not entry by entry; the in-memory adapter keeps the
//! entries themselves.

use super::model::Phase;

/// One entry of the log, in the order appended.
#[derive(Debug, Clone, PartialEq)]
pub enum LogEntry {
    /// The log's title, written when the session starts: the session's topic, on one line.
    Title { topic: String },
    /// A phase's section: the phase as it stood when the section was appended, and what the
    /// orchestrator reported about it.
    Phase {
        phase: Box<Phase>,
        report: PhaseReport,
    },
    /// The user decided to archive the session with phases unfinished, for this reason.
    ArchivedUnfinished { reason: String },
    /// Text cairn did not write, kept as it was (an adapter reading a log back from a file that
    /// another tool or a hand wrote holds it as text).
    Text(String),
}

/// One agent's output for the phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentOutput {
    pub agent: String,
    /// A summary or the full output; written verbatim (trimmed).
    pub summary: String,
}

/// What the orchestrator has to say about a phase beyond what the front matter records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PhaseReport {
    /// Paragraphs written right under the heading.
    pub notes: Vec<String>,
    pub outputs: Vec<AgentOutput>,
    /// `None` is written as `Not run`.
    pub validation: Option<String>,
}
