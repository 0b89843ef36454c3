//! [`FsTaskListStore`]: Claude Code's task lists on disk (SPEC §3).
//!
//! ```text
//! $CLAUDE_CONFIG_DIR/tasks/   (else ~/.claude/tasks/)
//!   {listId}/
//!     1.json  2.json  …        one task each (crate::tasklist renders them)
//!     execution_pointer.md     not a task; ignored here
//!     .lock  .highwatermark    Claude Code's own; ignored here
//! ```
//!
//! Claude Code owns these directories and takes no lock cairn could share, so every write is one
//! [`atomic::write_atomic`] of one file, staged beside it in the list directory (a dot-file that
//! is not `*.json`, so no reader takes it for a task) — the same filesystem, so the rename is
//! atomic. Reads are bounded: at most [`MAX_LIST_FILES`] files of at most [`MAX_TASK_FILE_BYTES`]
//! each, so a hook reading a list never stalls on a runaway directory.

use std::ffi::OsStr;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use async_trait::async_trait;
use cairn_domain::StoreError;
use cairn_domain::tasklist::{
    ClaudeTask, FileProblem, ListId, ListRead, PointerState, Removal, TaskListStore,
    is_safe_task_id, parse_task, resolve_execution_pointer, written_by_cairn,
};
use serde_json::Value;

use crate::tasklist::render_task_file;
use crate::{atomic, io_error};

/// Claude Code's configuration directory, when not `~/.claude`.
pub const CLAUDE_CONFIG_DIR: &str = "CLAUDE_CONFIG_DIR";
/// The variable naming the task list a Claude Code session uses.
pub const CLAUDE_CODE_TASK_LIST_ID: &str = "CLAUDE_CODE_TASK_LIST_ID";
/// The task lists' directory inside the configuration directory.
pub const TASKS_DIR: &str = "tasks";
/// A task file larger than this is reported, not read.
pub const MAX_TASK_FILE_BYTES: u64 = 1 << 20;
/// At most this many task files of one list are read; the rest are reported.
pub const MAX_LIST_FILES: usize = 5_000;

/// Claude Code's configuration directory from the given environment: `CLAUDE_CONFIG_DIR`, else
/// `$HOME/.claude` (`%USERPROFILE%` where there is no `HOME`). Empty values count as unset.
pub fn claude_config_dir_from(config_dir: Option<&OsStr>, home: Option<&OsStr>) -> Option<PathBuf> {
    if let Some(dir) = config_dir.filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    home.filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(".claude"))
}

/// The home directory of the process environment, as [`claude_config_dir_from`] finds it.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var_os("USERPROFILE").filter(|h| !h.is_empty()))
        .map(PathBuf::from)
}

/// [`claude_config_dir_from`] on the process environment.
pub fn claude_config_dir() -> Option<PathBuf> {
    claude_config_dir_from(
        std::env::var_os(CLAUDE_CONFIG_DIR).as_deref(),
        home_dir().as_deref().map(Path::as_os_str),
    )
}

/// `CLAUDE_CODE_TASK_LIST_ID` from the `env` block of the repository's Claude Code settings:
/// `.claude/settings.local.json` first (it overrides), then `.claude/settings.json`. A missing
/// or unreadable file, or one without the variable, gives `None`: the settings are the user's,
/// and Claude Code reports their errors itself.
pub fn configured_list_id(root: &Path) -> Option<String> {
    ["settings.local.json", "settings.json"]
        .iter()
        .find_map(|name| {
            let text = std::fs::read_to_string(root.join(".claude").join(name)).ok()?;
            let value: Value = serde_json::from_str(&text).ok()?;
            value
                .get("env")?
                .get(CLAUDE_CODE_TASK_LIST_ID)?
                .as_str()
                .map(str::to_owned)
        })
}

/// `CLAUDE_CODE_TASK_LIST_ID` as the process environment gives it, and as the repository's
/// settings give it ([`configured_list_id`]): the two middle candidates for the list id, in
/// the order they are tried.
pub fn task_list_id_settings(root: &Path) -> (Option<String>, Option<String>) {
    (
        std::env::var(CLAUDE_CODE_TASK_LIST_ID).ok(),
        configured_list_id(root),
    )
}

/// The filesystem adapter of [`TaskListStore`], over one tasks root.
#[derive(Debug, Clone)]
pub struct FsTaskListStore {
    root: PathBuf,
    /// What execution pointers must resolve under.
    home: Option<PathBuf>,
}

impl FsTaskListStore {
    /// A store over `root` (the `tasks` directory itself).
    /// Pointers are checked against the process's home directory ([`home_dir`]).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            home: home_dir(),
        }
    }

    /// The same store, checking execution pointers against `home` instead.
    pub fn with_home(self, home: impl Into<PathBuf>) -> Self {
        Self {
            home: Some(home.into()),
            ..self
        }
    }

    /// The store over `$CLAUDE_CONFIG_DIR/tasks`, else `~/.claude/tasks`; `None` when neither
    /// variable says where that is.
    pub fn from_env() -> Option<Self> {
        claude_config_dir().map(|dir| Self::new(dir.join(TASKS_DIR)))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of one list.
    pub fn list_dir(&self, list: &ListId) -> PathBuf {
        self.root.join(list.as_str())
    }

    fn task_path(&self, list: &ListId, id: &str) -> PathBuf {
        self.list_dir(list).join(format!("{id}.json"))
    }
}

/// The file in a list directory naming the live execution session.
pub const EXECUTION_POINTER_FILE: &str = "execution_pointer.md";
/// An execution pointer is one path; anything longer is not read.
const MAX_POINTER_BYTES: u64 = 4096;

/// The list's execution pointer, if there is one, checked as a reader must: it resolves under
/// the home directory lexically ([`resolve_execution_pointer`]) and, where the directory exists,
/// still after symbolic links are followed — a link inside the home pointing out of it is
/// refused too.
fn read_pointer(path: &Path, home: Option<&Path>) -> Option<PointerState> {
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    if file
        .take(MAX_POINTER_BYTES)
        .read_to_string(&mut text)
        .is_err()
    {
        return Some(PointerState::Refused {
            pointer: String::new(),
            reason: "it is not readable text".to_owned(),
        });
    }
    let Some(home) = home else {
        return Some(PointerState::Refused {
            pointer: text.trim().to_owned(),
            reason: "the home directory is unknown (HOME is not set)".to_owned(),
        });
    };
    let state = PointerState::from(resolve_execution_pointer(
        &text,
        &home.display().to_string(),
    ));
    let PointerState::Accepted { dir } = &state else {
        return Some(state);
    };
    match (std::fs::canonicalize(dir), std::fs::canonicalize(home)) {
        (Ok(real), Ok(real_home)) if !real.starts_with(&real_home) => Some(PointerState::Refused {
            pointer: text.trim().to_owned(),
            reason: format!(
                "it resolves outside the home directory through a symbolic link (to {})",
                real.display()
            ),
        }),
        _ => Some(state),
    }
}

/// The content of one task file, or why it could not be read as JSON.
fn read_task_file(path: &Path) -> Result<Value, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot be read: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_TASK_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() as u64 > MAX_TASK_FILE_BYTES {
        return Err(format!(
            "is larger than {MAX_TASK_FILE_BYTES} bytes; not read"
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("is not JSON ({e}); skipped"))
}

#[async_trait]
impl TaskListStore for FsTaskListStore {
    async fn load(&self, list: &ListId) -> Result<ListRead, StoreError> {
        let dir = self.list_dir(list);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(ListRead::default()),
            Err(e) => return Err(io_error("list task files in", &dir)(e)),
        };
        let mut stems = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error("list task files in", &dir))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(stem) = name.strip_suffix(".json") else {
                continue;
            };
            if stem.starts_with('.') || !is_safe_task_id(stem) {
                continue;
            }
            stems.push(stem.to_owned());
        }
        stems.sort_by(|a, b| {
            cairn_domain::tasklist::store::task_order(a)
                .cmp(&cairn_domain::tasklist::store::task_order(b))
        });
        let over = stems.split_off(stems.len().min(MAX_LIST_FILES));
        let mut read = ListRead::from_files(stems.into_iter().map(|stem| {
            let content = read_task_file(&dir.join(format!("{stem}.json")));
            (stem, content)
        }));
        read.pointer = read_pointer(&dir.join(EXECUTION_POINTER_FILE), self.home.as_deref());
        read.problems
            .extend(over.into_iter().map(|stem| FileProblem {
                file: format!("{stem}.json"),
                problem: format!(
                    "beyond the first {MAX_LIST_FILES} task files of the list; not read"
                ),
                skipped: true,
            }));
        Ok(read)
    }

    async fn write_task(&self, list: &ListId, task: &ClaudeTask) -> Result<(), StoreError> {
        let dir = self.list_dir(list);
        if !is_safe_task_id(&task.id) {
            return Err(StoreError::Invalid {
                path: dir.join(format!("{}.json", task.id)).display().to_string(),
                detail: "the task id cannot be a file name".to_owned(),
            });
        }
        std::fs::create_dir_all(&dir).map_err(io_error("create task list directory", &dir))?;
        // Writes interrupted by a crash leave `.write-*` files here; collect the old ones.
        let _ = atomic::remove_debris(&dir, SystemTime::now(), atomic::DEBRIS_MAX_AGE);
        atomic::write_atomic(
            &dir,
            &self.task_path(list, &task.id),
            render_task_file(task).as_bytes(),
        )
    }

    async fn remove_task(&self, list: &ListId, id: &str) -> Result<Removal, StoreError> {
        if !is_safe_task_id(id) {
            return Ok(Removal::Missing);
        }
        let path = self.task_path(list, id);
        let value = match read_task_file(&path) {
            Ok(value) => value,
            Err(_) if !path.exists() => return Ok(Removal::Missing),
            Err(_) => return Ok(Removal::Kept),
        };
        if !parse_task(&value, Some(id))
            .task
            .as_ref()
            .is_some_and(written_by_cairn)
        {
            return Ok(Removal::Kept);
        }
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Removal::Missing),
            Err(e) => return Err(io_error("remove task file", &path)(e)),
        }
        crate::fsync_dir(&self.list_dir(list))?;
        Ok(Removal::Removed)
    }

    async fn list(&self) -> Result<Vec<ListId>, StoreError> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error("list task lists in", &self.root)(e)),
        };
        let mut lists = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error("list task lists in", &self.root))?;
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if let Some(id) = entry
                .file_name()
                .to_str()
                .filter(|n| !n.starts_with('.'))
                .and_then(|n| ListId::parse(n).ok())
            {
                lists.push(id);
            }
        }
        lists.sort();
        Ok(lists)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_dir_follows_claude_config_dir_then_home() {
        assert_eq!(
            claude_config_dir_from(Some(OsStr::new("/cfg")), Some(OsStr::new("/home/me"))),
            Some(PathBuf::from("/cfg"))
        );
        assert_eq!(
            claude_config_dir_from(Some(OsStr::new("")), Some(OsStr::new("/home/me"))),
            Some(PathBuf::from("/home/me/.claude"))
        );
        assert_eq!(claude_config_dir_from(None, None), None);
    }

    #[test]
    fn the_settings_env_block_names_the_list() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(configured_list_id(dir.path()), None);
        std::fs::create_dir(dir.path().join(".claude")).unwrap();
        std::fs::write(
            dir.path().join(".claude/settings.json"),
            r#"{"env": {"CLAUDE_CODE_TASK_LIST_ID": "shared"}}"#,
        )
        .unwrap();
        assert_eq!(configured_list_id(dir.path()).as_deref(), Some("shared"));
        std::fs::write(
            dir.path().join(".claude/settings.local.json"),
            r#"{"env": {"CLAUDE_CODE_TASK_LIST_ID": "mine"}}"#,
        )
        .unwrap();
        assert_eq!(configured_list_id(dir.path()).as_deref(), Some("mine"));
    }
}
