//! The in-memory adapter of [`TaskListStore`], for tests. It keeps each file as the JSON value
//! it holds, so a test can plant what Claude Code (or a broken tool) would write and the same
//! defensive reading applies as on disk.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;

use super::guard::resolve_execution_pointer;
use super::store::{
    ListId, ListRead, PointerState, Removal, TaskListStore, is_safe_task_id, written_by_cairn,
};
use super::task::{ClaudeTask, parse_task};
use crate::StoreError;

/// A file's content: JSON, or text that is not (a torn or garbage file).
#[derive(Debug, Clone)]
enum Content {
    Json(Value),
    Garbage(String),
}

/// The home directory execution pointers are checked against.
pub const MEMORY_HOME: &str = "/home/user";

#[derive(Debug, Default)]
pub struct MemoryTaskListStore {
    lists: Mutex<BTreeMap<ListId, BTreeMap<String, Content>>>,
    pointers: Mutex<BTreeMap<ListId, String>>,
}

impl MemoryTaskListStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<ListId, BTreeMap<String, Content>>> {
        self.lists.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Plants `{stem}.json` with this JSON, as another tool would write it.
    pub fn put_raw(&self, list: &ListId, stem: &str, value: Value) {
        self.lock()
            .entry(list.clone())
            .or_default()
            .insert(stem.to_owned(), Content::Json(value));
    }

    /// Plants `execution_pointer.md` with this text; it is checked against [`MEMORY_HOME`].
    pub fn put_pointer(&self, list: &ListId, text: &str) {
        self.pointers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(list.clone(), text.to_owned());
    }

    /// Plants `{stem}.json` holding text that is not JSON.
    pub fn put_garbage(&self, list: &ListId, stem: &str, text: &str) {
        self.lock()
            .entry(list.clone())
            .or_default()
            .insert(stem.to_owned(), Content::Garbage(text.to_owned()));
    }
}

#[async_trait]
impl TaskListStore for MemoryTaskListStore {
    async fn load(&self, list: &ListId) -> Result<ListRead, StoreError> {
        let pointer = self
            .pointers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(list)
            .map(|text| PointerState::from(resolve_execution_pointer(text, MEMORY_HOME)));
        let lists = self.lock();
        let mut read = match lists.get(list) {
            None => ListRead::default(),
            Some(files) => ListRead::from_files(files.iter().map(|(stem, content)| {
                let value = match content {
                    Content::Json(v) => Ok(v.clone()),
                    Content::Garbage(text) => Err(format!("not JSON: {text:?}")),
                };
                (stem.clone(), value)
            })),
        };
        read.pointer = pointer;
        Ok(read)
    }

    async fn write_task(&self, list: &ListId, task: &ClaudeTask) -> Result<(), StoreError> {
        if !is_safe_task_id(&task.id) {
            return Err(StoreError::Invalid {
                path: format!("{list}/{}.json", task.id),
                detail: "the task id cannot be a file name".to_owned(),
            });
        }
        let value = serde_json::to_value(task).expect("a task is always serializable");
        self.put_raw(list, &task.id, value);
        Ok(())
    }

    async fn remove_task(&self, list: &ListId, id: &str) -> Result<Removal, StoreError> {
        let mut lists = self.lock();
        let Some(files) = lists.get_mut(list) else {
            return Ok(Removal::Missing);
        };
        let ours = match files.get(id) {
            None => return Ok(Removal::Missing),
            Some(Content::Json(value)) => parse_task(value, Some(id))
                .task
                .as_ref()
                .is_some_and(written_by_cairn),
            Some(Content::Garbage(_)) => false,
        };
        if !ours {
            return Ok(Removal::Kept);
        }
        files.remove(id);
        Ok(Removal::Removed)
    }

    async fn list(&self) -> Result<Vec<ListId>, StoreError> {
        Ok(self.lock().keys().cloned().collect())
    }
}
