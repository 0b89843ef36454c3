//! Progress-log records: the untyped shape every log entry has on disk.
//!
//! An entry is a heading `## <timestamp> — <KIND>` followed by `- key: value` lines. The domain's
//! typed events (see `project::events`) convert to and from a [`LogRecord`]; the filesystem adapter
//! renders and parses records and knows nothing of what they mean.

use crate::time::Timestamp;

/// One progress-log entry, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    pub at: Timestamp,
    /// Upper snake case, e.g. `TASK_COMPLETE`, `SYNC_TO_GITHUB`.
    pub kind: String,
    /// `- key: value` lines in order. Keys are lower snake case; values are one line each.
    pub fields: Vec<(String, String)>,
}

impl LogRecord {
    pub fn new(at: Timestamp, kind: impl Into<String>) -> Self {
        Self {
            at,
            kind: kind.into(),
            fields: Vec::new(),
        }
    }

    pub fn with(mut self, key: impl Into<String>, value: impl ToString) -> Self {
        self.fields.push((key.into(), value.to_string()));
        self
    }

    /// The first value stored under `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}
