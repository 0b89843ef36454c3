//! The live view of a session that the board polls (`progress.md` on disk; its text is the
//! filesystem adapter's, `cairn_storage_fs::execution`).

use std::fmt;
use std::time::Duration;

use super::task_log::TaskOutcome;
use crate::time::Timestamp;

/// The `Status:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgressStatus {
    Initializing,
    Executing,
    Complete,
    /// Any other text another tool wrote; kept verbatim. Never one of the three words above.
    Other(String),
}

impl ProgressStatus {
    /// The three known words in any case (and `Completed`) map to their variant; the rest is `Other`.
    pub fn from_text(text: &str) -> Self {
        let text = text.trim();
        match text.to_ascii_lowercase().as_str() {
            "initializing" | "initialising" => Self::Initializing,
            "executing" => Self::Executing,
            "complete" | "completed" => Self::Complete,
            _ => Self::Other(text.to_owned()),
        }
    }
}

impl fmt::Display for ProgressStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Initializing => "Initializing",
            Self::Executing => "Executing",
            Self::Complete => "Complete",
            Self::Other(text) => text,
        })
    }
}

/// `Wave: N of T`. Wave 0 means no wave has started yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaveProgress {
    pub current: u32,
    pub total: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveTask {
    /// The task-list id, e.g. `7` (a project task `T-007` shows as `7`).
    pub id: String,
    pub subject: String,
    pub phase: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedTask {
    pub id: String,
    pub subject: String,
    pub result: TaskOutcome,
    pub duration: Option<Duration>,
}

/// Everything `progress.md` says. Header fields a damaged file lacks are `None` and not rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub status: ProgressStatus,
    pub wave: Option<WaveProgress>,
    pub max_parallel: Option<u32>,
    pub updated: Option<Timestamp>,
    pub active: Vec<ActiveTask>,
    pub completed: Vec<CompletedTask>,
}

impl Progress {
    /// The content written when a session is created.
    pub fn initial(total_waves: u32, max_parallel: u32, now: Timestamp) -> Self {
        Self {
            status: ProgressStatus::Initializing,
            wave: Some(WaveProgress {
                current: 0,
                total: total_waves,
            }),
            max_parallel: Some(max_parallel),
            updated: Some(now),
            active: Vec::new(),
            completed: Vec::new(),
        }
    }
}
