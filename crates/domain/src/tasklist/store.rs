//! The Storage port of Claude Code's task lists (`~/.claude/tasks/{listId}/{id}.json`).
//!
//! Unlike the other ports this one does not own its files: Claude Code writes them too, at any
//! moment, and takes no lock cairn knows of. So the port has no read-modify-write; it reads a
//! whole list defensively and replaces one task file at a time, atomically, so that Claude Code
//! (and the Task Manager watching the directory) only ever sees a whole file.

use std::fmt;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;

use super::guard::validate_list_id;
use super::task::{ClaudeTask, parse_task};
use crate::StoreError;
use crate::execution::ExecutionError;

/// The key under a task's `metadata` that holds cairn's own fields. A file whose metadata has
/// it was written by cairn; one without it was not, and cairn never deletes it.
pub const CAIRN_METADATA_KEY: &str = "cairn";

/// A task list id that is safe as a directory name under the tasks root (see
/// [`validate_list_id`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ListId(String);

impl ListId {
    pub fn parse(id: &str) -> Result<Self, ExecutionError> {
        validate_list_id(id)?;
        Ok(Self(id.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ListId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `id` can name a task file (`{id}.json`) without leaving the list directory. The same
/// rule as list ids: a task id becomes a file name just as a list id becomes a directory name.
pub fn is_safe_task_id(id: &str) -> bool {
    validate_list_id(id).is_ok()
}

/// Whether cairn wrote this task: its metadata carries a `cairn` object.
pub fn written_by_cairn(task: &ClaudeTask) -> bool {
    task.metadata
        .as_ref()
        .and_then(|m| m.get(CAIRN_METADATA_KEY))
        .is_some_and(Value::is_object)
}

/// A task file that was read with repairs, or skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileProblem {
    /// The file name within the list directory (`7.json`).
    pub file: String,
    pub problem: String,
    /// Whether the task was left out of the list because of it.
    pub skipped: bool,
}

/// The list's `execution_pointer.md`, as a reader may use it: the live session directory it
/// names, or why it was refused (it must resolve under the home directory, see
/// [`resolve_execution_pointer`](super::guard::resolve_execution_pointer)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum PointerState {
    Accepted { dir: String },
    Refused { pointer: String, reason: String },
}

impl From<Result<String, ExecutionError>> for PointerState {
    fn from(resolved: Result<String, ExecutionError>) -> Self {
        match resolved {
            Ok(dir) => Self::Accepted { dir },
            Err(ExecutionError::PointerRejected { pointer, reason }) => {
                Self::Refused { pointer, reason }
            }
            Err(other) => Self::Refused {
                pointer: String::new(),
                reason: other.to_string(),
            },
        }
    }
}

/// One list as read: the tasks that could be read, in id order, and what was wrong with the
/// others. Bad files are never fatal: Claude Code and other tools write here too.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListRead {
    pub tasks: Vec<ClaudeTask>,
    pub problems: Vec<FileProblem>,
    /// The execution pointer, when the list has one.
    pub pointer: Option<PointerState>,
}

impl ListRead {
    /// Builds a list from each file's stem and content (`Err` holds why the file could not be
    /// read as JSON), running the defensive parser on each and sorting the tasks by id — the
    /// part every adapter shares.
    pub fn from_files(files: impl IntoIterator<Item = (String, Result<Value, String>)>) -> Self {
        let mut read = Self::default();
        for (stem, content) in files {
            let file = format!("{stem}.json");
            let value = match content {
                Ok(value) => value,
                Err(problem) => {
                    read.problems.push(FileProblem {
                        file,
                        problem,
                        skipped: true,
                    });
                    continue;
                }
            };
            let parsed = parse_task(&value, Some(&stem));
            let skipped = parsed.task.is_none();
            read.problems
                .extend(parsed.warnings.iter().map(|w| FileProblem {
                    file: file.clone(),
                    problem: w.to_string(),
                    skipped,
                }));
            if let Some(task) = parsed.task {
                read.tasks.push(task);
            }
        }
        read.tasks
            .sort_by(|a, b| task_order(&a.id).cmp(&task_order(&b.id)));
        read.problems.sort_by(|a, b| a.file.cmp(&b.file));
        read
    }
}

/// Numeric ids in numeric order (`2` before `10`), then any others by text.
pub fn task_order(id: &str) -> (u8, u64, &str) {
    match id.parse::<u64>() {
        Ok(n) => (0, n, id),
        Err(_) => (1, 0, id),
    }
}

/// What [`TaskListStore::remove_task`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Removal {
    Removed,
    /// There was no such file.
    Missing,
    /// The file was not written by cairn (or could not be read as a task); it was kept.
    Kept,
}

/// Persistence of Claude Code task lists. Each list is a directory of `{id}.json` files; ids
/// and list ids are validated so that no file lands outside the tasks root.
///
/// Adapters take no lock (Claude Code would not honour it); they guarantee instead that every
/// write replaces one whole file, so concurrent writers of different tasks never disturb each
/// other and a reader never sees a torn file.
#[async_trait]
pub trait TaskListStore: fmt::Debug + Send + Sync {
    /// Every task file of the list, parsed defensively ([`parse_task`]) and sorted by id
    /// ([`task_order`]). A list that does not exist is empty. A file that cannot be read, is not
    /// JSON, or has no usable subject is reported in `problems`, never fatal; so are repairs.
    /// Files that are not `*.json` (Claude Code's `.lock`, `execution_pointer.md`) are not
    /// tasks and are not reported. Errors: `Io` when the list directory exists but cannot be
    /// listed.
    async fn load(&self, list: &ListId) -> Result<ListRead, StoreError>;

    /// Writes `{task.id}.json` whole (a reader sees the old file or the new one), creating the
    /// list directory if needed. `StoreError::Invalid` (nothing written) when the task id could
    /// not be a file name ([`is_safe_task_id`]).
    async fn write_task(&self, list: &ListId, task: &ClaudeTask) -> Result<(), StoreError>;

    /// Removes `{id}.json` if cairn wrote it ([`written_by_cairn`]); a file anyone else wrote,
    /// or one that cannot be read as a task, is kept. Idempotent.
    async fn remove_task(&self, list: &ListId, id: &str) -> Result<Removal, StoreError>;

    /// The ids of the lists that exist, sorted. Entries whose names are not valid list ids are
    /// left out.
    async fn list(&self) -> Result<Vec<ListId>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn from_files_sorts_numerically_and_reports_every_problem() {
        let read = ListRead::from_files([
            ("10".to_owned(), Ok(json!({"subject": "ten"}))),
            ("2".to_owned(), Ok(json!({"id": 2, "subject": "two"}))),
            ("3".to_owned(), Ok(json!({"description": "no subject"}))),
            ("4".to_owned(), Err("not JSON: expected value".to_owned())),
            (
                "5".to_owned(),
                Ok(json!({"subject": "odd", "status": "done"})),
            ),
        ]);
        let ids: Vec<_> = read.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["2", "5", "10"]);
        let skipped: Vec<_> = read
            .problems
            .iter()
            .map(|p| (p.file.as_str(), p.skipped))
            .collect();
        assert_eq!(
            skipped,
            [("3.json", true), ("4.json", true), ("5.json", false)]
        );
    }

    #[test]
    fn list_ids_and_task_ids_are_guarded() {
        assert!(ListId::parse("claude-alchemy").is_ok());
        assert!(ListId::parse("../etc").is_err());
        assert!(ListId::parse("a/b").is_err());
        assert!(is_safe_task_id("7"));
        assert!(!is_safe_task_id("../7"));
        assert!(!is_safe_task_id(""));
    }
}
