//! Where each file of a project lives, and the id checks that keep every path inside the store.
//!
//! ```text
//! <root>/.claude/projects/{project-id}/
//!   .lock                          sidecar lock file (see crate::lock)
//!   project.json
//!   tasks.json
//!   progress/log.md
//!   progress/velocity.json
//!   research/{task-id}.md
//!   checkpoints/checkpoint-NNN.json
//!   temp/.write-{uuid}
//! ```
//!
//! Ids become path components, so they are validated before any path is built: a project id must
//! match `^[a-z0-9-]+$` and a task id `^T-[0-9]+$`. Neither pattern admits `/`, `\`, `.` or an empty
//! string, so no id can name a parent directory, an absolute path or the store directory itself.
//! The temp directory sits inside the project directory so that atomic renames never cross a
//! filesystem boundary.

use crate::io_error;
use cairn_domain::project::ProjectId;
use cairn_domain::{DomainError, StoreError};
use std::path::{Path, PathBuf};

/// The store directory, relative to the repository root.
pub const STORE_DIR: [&str; 2] = [".claude", "projects"];

/// The names inside a project directory, for code that must recognise them without a root (the
/// hook's guard classifies paths it reads in tool calls).
pub const PROJECT_JSON: &str = "project.json";
pub const TASKS_JSON: &str = "tasks.json";
pub const PROGRESS_DIR: &str = "progress";
pub const LOG_MD: &str = "log.md";
pub const VELOCITY_JSON: &str = "velocity.json";
pub const RESEARCH_DIR: &str = "research";
pub const CHECKPOINTS_DIR: &str = "checkpoints";
pub const TEMP_DIR: &str = "temp";
pub const LOCK_FILE: &str = ".lock";

/// An id that cannot be used as a path component.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {id:?}: must match {pattern}")]
pub struct InvalidId {
    /// `"project id"` or `"task id"`.
    pub what: &'static str,
    pub id: String,
    pub pattern: &'static str,
}

impl From<InvalidId> for DomainError {
    fn from(error: InvalidId) -> Self {
        DomainError::invalid(error.what, error.to_string())
    }
}

/// Checks `id` against the domain's one project-id rule ([`ProjectId::is_valid`]).
pub fn validate_project_id(id: &str) -> Result<(), InvalidId> {
    if ProjectId::is_valid(id) {
        Ok(())
    } else {
        Err(InvalidId {
            what: "project id",
            id: id.to_owned(),
            pattern: ProjectId::PATTERN,
        })
    }
}

/// Checks `id` against `^T-[0-9]+$`.
pub fn validate_task_id(id: &str) -> Result<(), InvalidId> {
    let valid = id
        .strip_prefix("T-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if valid {
        Ok(())
    } else {
        Err(InvalidId {
            what: "task id",
            id: id.to_owned(),
            pattern: "^T-[0-9]+$",
        })
    }
}

/// `<root>/.claude/projects`.
pub fn projects_dir(root: &Path) -> PathBuf {
    STORE_DIR
        .iter()
        .fold(root.to_path_buf(), |path, part| path.join(part))
}

/// The ids of the projects under `root`: directories of `.claude/projects` whose name is a valid
/// project id, sorted. Anything else there is ignored. No store directory means no projects.
///
/// Errors: [`StoreError::Io`] if the store directory exists but cannot be listed.
pub fn list_project_ids(root: &Path) -> Result<Vec<String>, StoreError> {
    let dir = projects_dir(root);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(StoreError::Io {
                op: "list projects",
                path: dir.display().to_string(),
                source,
            });
        }
    };
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_error("list projects", &dir))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        // project.json is written last when a project is created: a directory without one is a
        // creation that never finished, not a project.
        if validate_project_id(&name).is_ok() && entry.path().join("project.json").is_file() {
            ids.push(name);
        }
    }
    ids.sort();
    Ok(ids)
}

/// The paths of one project's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectLayout {
    id: String,
    dir: PathBuf,
}

impl ProjectLayout {
    /// The layout of project `id` under repository root `root`. Touches no files.
    pub fn new(root: &Path, id: &str) -> Result<Self, InvalidId> {
        validate_project_id(id)?;
        Ok(Self {
            id: id.to_owned(),
            dir: projects_dir(root).join(id),
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// `<root>/.claude/projects/{id}`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The sidecar lock file every read-modify-write of this project holds.
    pub fn lock_file(&self) -> PathBuf {
        self.dir.join(LOCK_FILE)
    }

    pub fn project_json(&self) -> PathBuf {
        self.dir.join(PROJECT_JSON)
    }

    pub fn tasks_json(&self) -> PathBuf {
        self.dir.join(TASKS_JSON)
    }

    pub fn progress_dir(&self) -> PathBuf {
        self.dir.join(PROGRESS_DIR)
    }

    pub fn log_md(&self) -> PathBuf {
        self.progress_dir().join(LOG_MD)
    }

    pub fn velocity_json(&self) -> PathBuf {
        self.progress_dir().join(VELOCITY_JSON)
    }

    pub fn research_dir(&self) -> PathBuf {
        self.dir.join(RESEARCH_DIR)
    }

    /// `research/{task_id}.md`, after checking `task_id` against `^T-[0-9]+$`.
    pub fn research_file(&self, task_id: &str) -> Result<PathBuf, InvalidId> {
        validate_task_id(task_id)?;
        Ok(self.research_dir().join(format!("{task_id}.md")))
    }

    pub fn checkpoints_dir(&self) -> PathBuf {
        self.dir.join(CHECKPOINTS_DIR)
    }

    /// Staging area for atomic writes; same filesystem as every target above.
    pub fn temp_dir(&self) -> PathBuf {
        self.dir.join(TEMP_DIR)
    }

    /// Creates the project directory and its subdirectories (idempotent), then fsyncs the store
    /// directory so the new project's entry survives a power cut.
    ///
    /// Errors: [`StoreError::Io`] naming the directory that could not be created.
    pub fn create_dirs(&self) -> Result<(), StoreError> {
        for dir in [
            self.progress_dir(),
            self.research_dir(),
            self.checkpoints_dir(),
            self.temp_dir(),
        ] {
            std::fs::create_dir_all(&dir).map_err(io_error("create directory", &dir))?;
        }
        // Every directory on the way may be new: each one's entry is durable only once its
        // parent is fsynced, up to the repository root (`<root>/.claude/projects/<id>`; the power
        // loss test found a new project lost because `.claude` and `projects` were not).
        for dir in self.dir.ancestors().take(4) {
            crate::fsync_dir(dir)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_documented_layout() {
        let layout = ProjectLayout::new(Path::new("/repo"), "my-app-2").unwrap();
        let base = Path::new("/repo/.claude/projects/my-app-2");
        assert_eq!(layout.id(), "my-app-2");
        assert_eq!(layout.dir(), base);
        assert_eq!(layout.lock_file(), base.join(".lock"));
        assert_eq!(layout.project_json(), base.join("project.json"));
        assert_eq!(layout.tasks_json(), base.join("tasks.json"));
        assert_eq!(layout.log_md(), base.join("progress/log.md"));
        assert_eq!(layout.velocity_json(), base.join("progress/velocity.json"));
        assert_eq!(
            layout.research_file("T-007").unwrap(),
            base.join("research/T-007.md")
        );
        assert_eq!(layout.checkpoints_dir(), base.join("checkpoints"));
        assert_eq!(layout.temp_dir(), base.join("temp"));
    }

    #[test]
    fn project_ids_cannot_escape_the_store() {
        for bad in [
            "", ".", "..", "../x", "a/b", "a\\b", "/abs", "My-App", "app_1", "app.json", "app ",
            "é",
        ] {
            let error = ProjectLayout::new(Path::new("/repo"), bad).unwrap_err();
            assert_eq!(error.id, bad);
            assert_eq!(error.what, "project id");
        }
        for good in ["a", "0", "-", "my-app", "2026-q1"] {
            assert!(validate_project_id(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn the_layout_and_the_domain_share_one_project_id_rule() {
        let longest = "a".repeat(ProjectId::MAX_LEN);
        let too_long = "a".repeat(ProjectId::MAX_LEN + 1);
        for id in [
            longest.as_str(),
            too_long.as_str(),
            "web-app",
            "Web-App",
            "",
        ] {
            assert_eq!(
                validate_project_id(id).is_ok(),
                id.parse::<ProjectId>().is_ok(),
                "{id}"
            );
        }
    }

    #[test]
    fn task_ids_are_checked_before_building_research_paths() {
        let layout = ProjectLayout::new(Path::new("/repo"), "p").unwrap();
        for bad in [
            "",
            "T-",
            "T-1/../../x",
            "t-1",
            "T-1a",
            "T-1.md",
            "../T-1",
            "T--1",
        ] {
            assert!(layout.research_file(bad).is_err(), "{bad}");
        }
        assert!(validate_task_id("T-0001").is_ok());
    }

    #[test]
    fn an_invalid_id_becomes_a_domain_error_naming_the_field() {
        let error: DomainError = validate_task_id("x").unwrap_err().into();
        assert_eq!(
            error,
            DomainError::invalid("task id", "invalid task id \"x\": must match ^T-[0-9]+$")
        );
    }

    #[test]
    fn create_dirs_is_idempotent_and_list_finds_only_projects() {
        let root = tempfile::tempdir().unwrap();
        assert!(list_project_ids(root.path()).unwrap().is_empty());
        for id in ["zeta", "alpha"] {
            let layout = ProjectLayout::new(root.path(), id).unwrap();
            layout.create_dirs().unwrap();
            layout.create_dirs().unwrap();
            for dir in [
                layout.progress_dir(),
                layout.research_dir(),
                layout.checkpoints_dir(),
                layout.temp_dir(),
            ] {
                assert!(dir.is_dir(), "{}", dir.display());
            }
            std::fs::write(layout.project_json(), b"{}").unwrap();
        }
        // A creation that never got as far as project.json is not a project.
        ProjectLayout::new(root.path(), "half-made")
            .unwrap()
            .create_dirs()
            .unwrap();
        std::fs::write(projects_dir(root.path()).join("stray-file"), b"").unwrap();
        std::fs::create_dir(projects_dir(root.path()).join("Not_A_Project")).unwrap();
        assert_eq!(list_project_ids(root.path()).unwrap(), ["alpha", "zeta"]);
    }
}
