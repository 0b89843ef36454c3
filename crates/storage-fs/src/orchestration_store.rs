//! [`FsOrchestrationStore`]: orchestration sessions on disk (SPEC §5, seed 004).
//!
//! ```text
//! <state_dir>/                 $MAESTRO_STATE_DIR, default <root>/docs/maestro
//!   state/active-session.md    front matter + Markdown log of the active session
//!   state/archive/<id>.md      archived sessions
//!   state/.cairn.lock          sidecar lock: every write of the state directory holds it
//!   state/.cairn-temp/         in-flight atomic writes (same filesystem, so renames stay atomic)
//!   plans/                     design documents and implementation plans
//!   plans/archive/             the documents of archived sessions
//! ```
//!
//! The session file is `---\n` + the front matter as a JSON object indented by two spaces +
//! `\n---\n` + the log: the byte shape the original tool writes and parses. Front matter written
//! by other tools may be YAML; it is read with `serde-saphyr` (a maintained, panic-free YAML
//! parser with resource budgets) and rewritten as JSON. Keys cairn does not know survive either
//! way: every level of the front matter keeps them (see the domain's `model`).
//!
//! Readers take no lock: every file is replaced by rename, so a reader sees a whole file.
//!
//! Archiving runs under the lock, in an order that survives a kill at any step: the documents
//! move first, then the active file is rewritten as prepared for archiving, then it is renamed
//! into `state/archive/`. Until that last rename the session is still active, so a rerun picks
//! up where the killed one stopped (a document already moved is reported absent).

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use cairn_domain::orchestration::archive::{
    ACTIVE_SESSION_PATH, ArchivedFile, PLANS_ARCHIVE_DIR, SESSION_ARCHIVE_DIR,
    archived_session_path, verify_archive,
};
use cairn_domain::orchestration::store::{ArchivePreparation, SessionMutation};
use cairn_domain::orchestration::{
    ArchiveOutcome, Location, LogEntry, OrchestrationStore, Session, SessionId, SessionState,
};
use cairn_domain::{Entity, Error, StoreError};

use crate::orchestration::{parse_log, render_log};
use crate::project_store::DEFAULT_LOCK_TIMEOUT;
use crate::{atomic, failpoint, fsync_dir, io_error, lock, parent_dir};

/// The environment variable naming the state directory (relative paths are from the root).
pub const STATE_DIR_ENV: &str = "MAESTRO_STATE_DIR";
/// The state directory when [`STATE_DIR_ENV`] is unset, relative to the repository root.
pub const DEFAULT_STATE_DIR: &str = "docs/maestro";
/// The sidecar lock of every write, relative to the state directory.
pub const ORCH_LOCK_FILE: &str = "state/.cairn.lock";
/// Where writes are staged, relative to the state directory.
pub const ORCH_TEMP_DIR: &str = "state/.cairn-temp";
/// Where design documents and implementation plans live, relative to the state directory.
pub const PLANS_DIR: &str = "plans";

const DELIMITER: &str = "---";

/// The filesystem adapter of [`OrchestrationStore`].
#[derive(Debug, Clone)]
pub struct FsOrchestrationStore {
    root: PathBuf,
    state_dir: PathBuf,
    lock_timeout: Duration,
}

/// The state directory of the repository at `root`: `configured` (the value of
/// [`STATE_DIR_ENV`], if set and not blank) resolved against `root`, else the default.
pub fn state_dir(root: &Path, configured: Option<&str>) -> PathBuf {
    match configured.map(str::trim).filter(|c| !c.is_empty()) {
        Some(dir) => root.join(dir),
        None => root.join(DEFAULT_STATE_DIR),
    }
}

/// The log as [`FsOrchestrationStore::load`] returns it: rendered to Markdown and read back.
/// The canonicaliser the contract suite compares this adapter's logs with.
pub fn canonical_log(log: Vec<LogEntry>) -> Vec<LogEntry> {
    parse_log(&render_log(&log))
}

/// The text of a session file.
pub fn render_session(session: &Session) -> Result<String, serde_json::Error> {
    let front = serde_json::to_string_pretty(&session.state)?;
    Ok(format!(
        "{DELIMITER}\n{front}\n{DELIMITER}\n{}",
        render_log(&session.log)
    ))
}

/// Reads a session file: JSON or YAML front matter between the first two `---` lines, then the
/// log. The error says what is wrong, for a `Corrupt` report naming the file.
pub fn parse_session(text: &str) -> Result<Session, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != DELIMITER {
        return Err("the file does not start with a `---` front matter line".to_owned());
    }
    let mut offset = first.len();
    let mut front_end = None;
    for line in lines {
        if line.trim_end() == DELIMITER {
            front_end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((end, body_start)) = front_end else {
        return Err("the front matter has no closing `---` line".to_owned());
    };
    let front = &text[first.len()..end];
    let value: serde_json::Value = if front.trim_start().starts_with('{') {
        serde_json::from_str(front).map_err(|e| format!("the JSON front matter: {e}"))?
    } else {
        serde_saphyr::from_str(front).map_err(|e| format!("the YAML front matter: {e}"))?
    };
    let state: SessionState =
        serde_json::from_value(value).map_err(|e| format!("the front matter: {e}"))?;
    Ok(Session {
        state,
        log: parse_log(&text[body_start..]),
    })
}

impl FsOrchestrationStore {
    /// A store over `state_dir`; recorded document paths that are relative resolve against
    /// `root`, the repository root.
    pub fn new(root: &Path, state_dir: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            state_dir: state_dir.to_path_buf(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
        }
    }

    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    pub fn active_path(&self) -> PathBuf {
        self.state_dir.join(ACTIVE_SESSION_PATH)
    }

    /// Where a [`Location`] is on disk.
    pub fn resolve(&self, location: &Location) -> PathBuf {
        match location {
            Location::StateDir(path) => self.state_dir.join(path),
            Location::Recorded(path) => self.root.join(path.trim()),
        }
    }

    fn temp_dir(&self) -> PathBuf {
        self.state_dir.join(ORCH_TEMP_DIR)
    }

    fn lock(&self) -> Result<lock::LockGuard, StoreError> {
        let state = self.state_dir.join("state");
        if !state.is_dir() {
            std::fs::create_dir_all(&state).map_err(io_error("create state directory", &state))?;
            // New directories' entries are durable only once their parents are fsynced (the
            // session store's power-loss history lost a whole new directory without it).
            for dir in state.ancestors().skip(1).take(3) {
                fsync_dir(dir)?;
            }
        }
        lock::lock_exclusive(&self.state_dir.join(ORCH_LOCK_FILE), self.lock_timeout)
    }

    fn read(&self, path: &Path) -> Result<Option<Session>, StoreError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error("read", path)(e)),
        };
        parse_session(&text)
            .map(Some)
            .map_err(|mut detail| {
                if text.trim().is_empty() {
                    // Nothing to rebuild from (cairn never leaves it empty: one atomic write):
                    // name the ways out rather than refuse every command, `orch start` included.
                    detail = format!(
                        "the file is empty: restore it from git (`git checkout -- {0}`), or remove {0} and start another session with `cairn orch start`",
                        path.display()
                    );
                }
                StoreError::Corrupt {
                    path: path.display().to_string(),
                    detail,
                }
            })
    }

    fn write(&self, target: &Path, session: &Session) -> Result<(), StoreError> {
        let text = render_session(session).map_err(|e| StoreError::Invalid {
            path: target.display().to_string(),
            detail: e.to_string(),
        })?;
        atomic::write_atomic(&self.temp_dir(), target, text.as_bytes())
    }

    fn active(&self) -> Result<Session, StoreError> {
        self.read(&self.active_path())?.ok_or_else(not_found)
    }

    fn create_dir(&self, relative: &str) -> Result<(), StoreError> {
        let dir = self.state_dir.join(relative);
        std::fs::create_dir_all(&dir).map_err(io_error("create directory", &dir))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<(), StoreError> {
        std::fs::rename(from, to).map_err(|source| StoreError::Io {
            op: "move into the archive",
            path: format!("{} -> {}", from.display(), to.display()),
            source,
        })?;
        fsync_dir(parent_dir(to))?;
        fsync_dir(parent_dir(from))
    }
}

fn not_found() -> StoreError {
    StoreError::not_found(Entity::Session, ACTIVE_SESSION_PATH)
}

/// The failpoint after a document's move: each has its own, so a test can kill the archive
/// between the two.
fn moved_failpoint(file: ArchivedFile) -> &'static str {
    match file {
        ArchivedFile::DesignDocument => "orch:archive-after-design-move",
        ArchivedFile::ImplementationPlan => "orch:archive-after-plan-move",
        ArchivedFile::Session => "orch:archive-after-session-move",
    }
}

#[async_trait]
impl OrchestrationStore for FsOrchestrationStore {
    async fn load(&self) -> Result<Option<Session>, StoreError> {
        self.read(&self.active_path())
    }

    async fn create(&self, session: Session) -> Result<Session, StoreError> {
        let _guard = self.lock()?;
        let active = self.active_path();
        if let Some(existing) = self.read(&active)? {
            return Err(StoreError::already_exists(Entity::Session, existing.id()));
        }
        let archived = self.state_dir.join(archived_session_path(session.id()));
        if archived.exists() {
            return Err(StoreError::already_exists(
                Entity::ArchivedSession,
                session.id(),
            ));
        }
        // Under the lock nothing in the temp directory is in flight: all of it is debris.
        atomic::remove_debris(&self.temp_dir(), SystemTime::now(), Duration::ZERO)?;
        for dir in [SESSION_ARCHIVE_DIR, PLANS_DIR, PLANS_ARCHIVE_DIR] {
            self.create_dir(dir)?;
        }
        self.write(&active, &session)?;
        Ok(session)
    }

    async fn transact(&self, mutation: SessionMutation<'_>) -> Result<Session, Error> {
        let _guard = self.lock()?;
        let mut session = self.active()?;
        mutation(&mut session)?;
        self.write(&self.active_path(), &session)?;
        Ok(session)
    }

    async fn archive(&self, prepare: ArchivePreparation<'_>) -> Result<ArchiveOutcome, Error> {
        let _guard = self.lock()?;
        let mut session = self.active()?;
        let plan = prepare(&mut session)?;
        let archived = self.state_dir.join(archived_session_path(session.id()));
        if archived.exists() {
            return Err(StoreError::already_exists(Entity::ArchivedSession, session.id()).into());
        }
        let documents: Vec<_> = plan
            .moves
            .iter()
            .filter(|m| m.file != ArchivedFile::Session)
            .collect();
        if let Some(taken) = documents
            .iter()
            .find(|m| self.resolve(&m.from).exists() && self.resolve(&m.to).exists())
        {
            return Err(StoreError::AlreadyExists {
                entity: Entity::ArchivedDocument,
                id: self.resolve(&taken.to).display().to_string(),
            }
            .into());
        }
        for dir in [SESSION_ARCHIVE_DIR, PLANS_ARCHIVE_DIR] {
            self.create_dir(dir)?;
        }

        // After the first change a failure leaves the archive partly done: say so.
        let mut changed = false;
        let step = |changed: bool, e: StoreError| -> Error {
            if changed { e.after_commit() } else { e }.into()
        };
        let (mut moved, mut absent) = (Vec::new(), Vec::new());
        for planned in documents {
            let from = self.resolve(&planned.from);
            if !from.exists() {
                absent.push(planned.clone());
                continue;
            }
            self.rename(&from, &self.resolve(&planned.to))
                .map_err(|e| step(changed, e))?;
            changed = true;
            moved.push(planned.clone());
            failpoint(moved_failpoint(planned.file));
        }
        let active = self.active_path();
        self.write(&active, &session)
            .map_err(|e| step(changed, e))?;
        failpoint("orch:archive-after-session-rewrite");
        self.rename(&active, &archived).map_err(|e| step(true, e))?;
        failpoint(moved_failpoint(ArchivedFile::Session));
        moved.extend(
            plan.moves
                .iter()
                .filter(|m| m.file == ArchivedFile::Session)
                .cloned(),
        );

        let existing: Vec<Location> = plan
            .moves
            .iter()
            .flat_map(|m| [&m.from, &m.to])
            .filter(|location| self.resolve(location).exists())
            .cloned()
            .collect();
        let verification = verify_archive(&plan, &existing);
        Ok(ArchiveOutcome {
            session,
            plan,
            moved,
            absent,
            verification,
        })
    }

    async fn list_archived(&self) -> Result<Vec<SessionId>, StoreError> {
        let dir = self.state_dir.join(SESSION_ARCHIVE_DIR);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error("list archived sessions", &dir)(e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error("list archived sessions", &dir))?;
            let name = entry.file_name();
            // Anything that is not `<id>.md` is not an archived session (an editor's backup, a
            // README): skip it rather than fail the listing.
            if let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".md"))
                .and_then(|n| SessionId::parse(n).ok())
                && entry.path().is_file()
            {
                ids.push(id);
            }
        }
        ids.sort();
        Ok(ids)
    }

    async fn load_archived(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        self.read(&self.state_dir.join(archived_session_path(id)))
    }
}
