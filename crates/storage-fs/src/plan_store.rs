//! [`FsPlanStore`]: plans on disk (SPEC §4).
//!
//! ```text
//! <root>/.claude/
//!   .current_plan              the pointer: the bare directory name of the active plan
//!   .plan.lock                 sidecar lock: every read-modify-write of any plan holds it
//!   .plan-temp/                in-flight atomic writes and plan directories being built
//!   .plan_YYYY-MM-DD_XXXXXXXX/
//!     state.md  decisions.md  plan.md  findings.md  progress.md  findings/  checkpoints/
//! ```
//!
//! One lock for all plans rather than one per plan: `create` and the pointer span plans, and
//! plan writes are rare and short, so finer locking would buy nothing but lock-ordering rules.
//!
//! A new plan directory is built whole under `.plan-temp/` and renamed into place, so a crash
//! never leaves a plan without its `state.md`. Every file is replaced by [`atomic::write_atomic`],
//! including `decisions.md`: an append rewrites the file as the old bytes plus the new block,
//! which keeps the log append-only in content while a crash can never leave a torn entry.
//!
//! A transaction that changes `state.md` and appends to `decisions.md` writes both through a
//! write-ahead intent (`<plan>/.cairn-journal`, see [`intent`]): a crash between the two is
//! finished by the next open, so a state never stands without the decision that explains it.
//!
//! Readers take no lock: every file is replaced by rename, so a reader sees a whole file. A
//! reader that finds an intent takes the lock and finishes it first.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use cairn_domain::plan::document::{
    CHECKPOINTS_DIR, CLAUDE_DIR, DECISIONS_FILE, FINDINGS_DIR, FINDINGS_FILE, PLAN_FILE,
    POINTER_FILE, STATE_FILE,
};
use cairn_domain::plan::{
    Decision, DecisionDraft, Finding, PlanDocument, PlanError, PlanId, PlanMutation, PlanRecord,
    PlanState, PlanStore, PlanSummary,
};
use cairn_domain::{Entity, Error, StoreError};

use crate::intent::{self, FileWrite};
use crate::plan::{
    DECISION_LOG_HEADER, append_finding_detail, append_finding_line, next_decision_number,
    parse_decision_log, parse_pointer, parse_state, peek_state, render_decision, render_pointer,
    render_state, template,
};
use crate::project_store::DEFAULT_LOCK_TIMEOUT;
use crate::{atomic, failpoint, fsync_dir, io_error, lock};

/// The sidecar lock file of every plan write, in `.claude/`.
pub const PLAN_LOCK_FILE: &str = ".plan.lock";
/// Where plan writes are staged, in `.claude/` (same filesystem, so renames stay atomic).
pub const PLAN_TEMP_DIR: &str = ".plan-temp";
/// The plan store's failpoints around its write-ahead intents: `plan:journal-…`.
const INTENT_AREA: &str = "plan";

/// The filesystem adapter of [`PlanStore`].
#[derive(Debug, Clone)]
pub struct FsPlanStore {
    claude: PathBuf,
    lock_timeout: Duration,
}

impl FsPlanStore {
    /// A store under `<root>/.claude`, where `root` is the repository root.
    pub fn new(root: &Path) -> Self {
        Self {
            claude: root.join(CLAUDE_DIR),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
        }
    }

    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    /// The directory of plan `id` (whether or not it exists).
    pub fn plan_dir(&self, id: &PlanId) -> PathBuf {
        self.claude.join(id.as_str())
    }

    fn pointer_path(&self) -> PathBuf {
        self.claude.join(POINTER_FILE)
    }

    fn temp_dir(&self) -> PathBuf {
        self.claude.join(PLAN_TEMP_DIR)
    }

    fn lock(&self) -> Result<lock::LockGuard, StoreError> {
        std::fs::create_dir_all(&self.claude)
            .map_err(io_error("create .claude directory", &self.claude))?;
        lock::lock_exclusive(&self.claude.join(PLAN_LOCK_FILE), self.lock_timeout)
    }

    /// The directory of an existing plan: one whose `state.md` is there.
    fn existing(&self, id: &PlanId) -> Result<PathBuf, StoreError> {
        let dir = self.plan_dir(id);
        if dir.join(STATE_FILE).is_file() {
            Ok(dir)
        } else {
            Err(StoreError::not_found(Entity::Plan, id))
        }
    }

    fn write(&self, target: &Path, text: &str) -> Result<(), StoreError> {
        atomic::write_atomic(&self.temp_dir(), target, text.as_bytes())
    }

    fn read_pointer(&self) -> Result<Option<PlanId>, StoreError> {
        let path = self.pointer_path();
        let Some(content) = read_optional(&path)? else {
            return Ok(None);
        };
        parse_pointer(&content)
            .map(Some)
            .map_err(|e| corrupt(&path, &e))
    }

    fn load_from(&self, id: &PlanId, dir: &Path) -> Result<PlanRecord, StoreError> {
        let path = dir.join(STATE_FILE);
        let text = read_optional(&path)?.ok_or_else(|| StoreError::not_found(Entity::Plan, id))?;
        if text.trim().is_empty() {
            return Err(self.empty_state(dir, &path));
        }
        parse_state(id, &text).map_err(|e| corrupt(&path, &e))
    }

    /// An empty `state.md` (cairn never leaves one: emptied by a tool or by hand) says nothing
    /// to rebuild it from, so the error names the ways out: the newest checkpoint's copy, git,
    /// or setting the plan aside.
    fn empty_state(&self, dir: &Path, path: &Path) -> StoreError {
        let checkpoints = dir.join(CHECKPOINTS_DIR);
        let newest = list_names(&checkpoints).ok().and_then(|mut names| {
            names.sort_by_key(|n| highest_checkpoint(std::slice::from_ref(n)));
            names
                .into_iter()
                .rev()
                .map(|n| checkpoints.join(n).join(STATE_FILE))
                .find(|p| p.is_file())
        });
        let restore = match newest {
            Some(copy) => format!("copy the newest checkpoint's {} over it, ", copy.display()),
            None => String::new(),
        };
        let pointer = self.claude.join(POINTER_FILE);
        StoreError::Corrupt {
            path: path.display().to_string(),
            detail: format!(
                "the file is empty: {restore}restore it from git (`git checkout -- {}`), or set the plan aside by removing {} and start another with `cairn plan new`",
                path.display(),
                pointer.display()
            ),
        }
    }

    /// The directory of an existing plan, with what a crashed command left unfinished there
    /// finished first (see [`intent`]). Takes the lock only when there is something to finish.
    fn settled(&self, id: &PlanId) -> Result<PathBuf, StoreError> {
        let dir = self.existing(id)?;
        if intent::pending(&dir) {
            let _guard = self.lock()?;
            intent::replay(INTENT_AREA, &self.temp_dir(), &dir)?;
        }
        Ok(dir)
    }

    /// [`Self::settled`] for a caller that holds the lock.
    fn settled_locked(&self, id: &PlanId) -> Result<PathBuf, StoreError> {
        let dir = self.existing(id)?;
        intent::replay(INTENT_AREA, &self.temp_dir(), &dir)?;
        Ok(dir)
    }

    /// Appends `drafts` to the decision log of the plan in `dir`, numbered on from the highest
    /// number present. The caller holds the lock.
    fn append_decisions(
        &self,
        dir: &Path,
        drafts: Vec<DecisionDraft>,
    ) -> Result<Vec<Decision>, StoreError> {
        let (text, appended) = self.decisions_after(dir, drafts)?;
        self.write(&dir.join(DECISIONS_FILE), &text)?;
        Ok(appended)
    }

    /// The decision log of the plan in `dir` with `drafts` appended, and the decisions as
    /// numbered. The caller holds the lock.
    fn decisions_after(
        &self,
        dir: &Path,
        drafts: Vec<DecisionDraft>,
    ) -> Result<(String, Vec<Decision>), StoreError> {
        let path = dir.join(DECISIONS_FILE);
        let mut text = read_optional(&path)?.unwrap_or_else(|| format!("{DECISION_LOG_HEADER}\n"));
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let mut number = next_decision_number(&text);
        let mut appended = Vec::with_capacity(drafts.len());
        for draft in drafts {
            let decision = draft.numbered(number);
            number = number.saturating_add(1);
            text.push_str(&render_decision(&decision));
            appended.push(decision);
        }
        Ok((text, appended))
    }

    /// Removes what crashed writers left in the temp directory. Every plan write stages there
    /// under the lock, so with the lock held nothing in it is in flight: all of it is debris.
    fn remove_debris(&self) -> Result<(), StoreError> {
        let temp = self.temp_dir();
        atomic::remove_debris(&temp, SystemTime::now(), Duration::ZERO)?;
        let entries = match std::fs::read_dir(&temp) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error("list temp directory", &temp)(e)),
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                std::fs::remove_dir_all(&path)
                    .map_err(io_error("remove an abandoned plan directory", &path))?;
            }
        }
        Ok(())
    }

    /// Builds the whole directory of `plan` under the temp directory and renames it into place.
    fn write_plan_dir(&self, plan: &PlanRecord) -> Result<(), StoreError> {
        let target = self.plan_dir(plan.id());
        let staging = self
            .temp_dir()
            .join(format!("{}.{}", plan.id(), uuid::Uuid::new_v4()));
        let built = (|| {
            for sub in [FINDINGS_DIR, CHECKPOINTS_DIR] {
                let path = staging.join(sub);
                std::fs::create_dir_all(&path).map_err(io_error("create plan directory", &path))?;
            }
            self.write(&staging.join(STATE_FILE), &render_state(plan))?;
            self.write(
                &staging.join(DECISIONS_FILE),
                &format!("{DECISION_LOG_HEADER}\n"),
            )?;
            for doc in PlanDocument::CREATED {
                let text = template(doc, plan.goal()).unwrap_or_default();
                self.write(&staging.join(doc.file_name()), &text)?;
            }
            failpoint("plan:before-dir-rename");
            std::fs::rename(&staging, &target).map_err(|source| StoreError::Io {
                op: "rename plan directory into place",
                path: format!("{} -> {}", staging.display(), target.display()),
                source,
            })
        })();
        if built.is_err() {
            // Best effort: what is left is debris that the next create removes, never a plan.
            let _ = std::fs::remove_dir_all(&staging);
        }
        built?;
        fsync_dir(&self.claude)
    }
}

/// The most bytes [`peek_active`] reads of the pointer: a plan id is 25 bytes plus a line ending;
/// anything longer is not a valid pointer anyway.
pub const POINTER_PEEK_BYTES: u64 = 64;
/// The most bytes [`peek_active`] reads of `state.md`: the state heading is its first line.
pub const STATE_PEEK_BYTES: u64 = 512;

/// The active plan's id and state, for the hook's hot path: reads at most
/// [`POINTER_PEEK_BYTES`] of the pointer and [`STATE_PEEK_BYTES`] of `state.md`, and nothing
/// else — its cost does not grow with anything's size. `Ok(None)` when there is no pointer (one
/// failed `open`), the pointer names no existing plan, or the plan is closed.
pub fn peek_active(root: &Path) -> Result<Option<(PlanId, PlanState)>, StoreError> {
    let claude = root.join(CLAUDE_DIR);
    let pointer = claude.join(POINTER_FILE);
    let Some(content) = read_head(&pointer, POINTER_PEEK_BYTES)? else {
        return Ok(None);
    };
    let id = parse_pointer(&content).map_err(|e| corrupt(&pointer, &e))?;
    let state_path = claude.join(id.as_str()).join(STATE_FILE);
    let Some(head) = read_head(&state_path, STATE_PEEK_BYTES)? else {
        return Ok(None);
    };
    match peek_state(&head) {
        Ok(Some(PlanState::Close)) => Ok(None),
        Ok(Some(state)) => Ok(Some((id, state))),
        Ok(None) => Err(StoreError::Corrupt {
            path: state_path.display().to_string(),
            detail: format!(
                "no `# Current State: X` heading in the first {STATE_PEEK_BYTES} bytes"
            ),
        }),
        Err(detail) => Err(StoreError::Corrupt {
            path: state_path.display().to_string(),
            detail,
        }),
    }
}

/// At most `limit` bytes from the start of `path` (lossily decoded), or `None` when there is no
/// such file.
fn read_head(path: &Path, limit: u64) -> Result<Option<String>, StoreError> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error("open", path)(e)),
    };
    let mut bytes = Vec::with_capacity(limit as usize);
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(io_error("read", path))?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The highest `NNN` of the `NNN-<label>` entries in `dir` (0 when there are none).
fn highest_checkpoint(names: &[String]) -> u32 {
    names
        .iter()
        .filter_map(|n| n.split_once('-').and_then(|(n, _)| n.parse::<u32>().ok()))
        .max()
        .unwrap_or(0)
}

fn corrupt(path: &Path, error: &PlanError) -> StoreError {
    StoreError::Corrupt {
        path: path.display().to_string(),
        detail: error.to_string(),
    }
}

/// The names of the entries of `dir` (none when it does not exist).
fn list_names(dir: &Path) -> Result<Vec<String>, StoreError> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .collect()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io_error("list", dir)(e)),
    }
}

/// The text of `path`, or `None` when there is no such file.
fn read_optional(path: &Path) -> Result<Option<String>, StoreError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", path)(e)),
    }
}

#[async_trait]
impl PlanStore for FsPlanStore {
    async fn current(&self) -> Result<Option<PlanId>, StoreError> {
        self.read_pointer()
    }

    async fn set_current(&self, id: &PlanId) -> Result<(), StoreError> {
        let _guard = self.lock()?;
        self.existing(id)?;
        self.write(&self.pointer_path(), &render_pointer(id))
    }

    async fn clear_current(&self) -> Result<Option<PlanId>, StoreError> {
        let _guard = self.lock()?;
        let previous = self.read_pointer()?;
        if previous.is_some() {
            let path = self.pointer_path();
            std::fs::remove_file(&path).map_err(io_error("remove plan pointer", &path))?;
            fsync_dir(&self.claude)?;
        }
        Ok(previous)
    }

    async fn create(&self, plan: &PlanRecord, force: bool) -> Result<Option<PlanId>, Error> {
        let _guard = self.lock()?;
        let previous = match self.read_pointer()? {
            Some(id) => match self.existing(&id) {
                Ok(dir) => Some((id.clone(), self.load_from(&id, &dir)?)),
                Err(_) => None,
            },
            None => None,
        };
        if let Some((current, record)) = &previous
            && !force
            && record.state() != PlanState::Close
        {
            return Err(PlanError::ActivePlanExists {
                current: current.clone(),
            }
            .into());
        }
        if self.plan_dir(plan.id()).exists() {
            return Err(StoreError::already_exists(Entity::Plan, plan.id()).into());
        }
        self.remove_debris()?;
        self.write_plan_dir(plan)?;
        failpoint("plan:after-dir-create");
        self.write(&self.pointer_path(), &render_pointer(plan.id()))
            .map_err(StoreError::after_commit)?;
        Ok(previous.map(|(id, _)| id))
    }

    async fn load(&self, id: &PlanId) -> Result<PlanRecord, StoreError> {
        self.load_from(id, &self.settled(id)?)
    }

    async fn transact(
        &self,
        id: &PlanId,
        mutation: PlanMutation<'_>,
    ) -> Result<(PlanRecord, Vec<Decision>), Error> {
        let _guard = self.lock()?;
        let dir = self.settled_locked(id)?;
        let mut record = self.load_from(id, &dir)?;
        let drafts = mutation(&mut record)?;
        let mut writes = vec![FileWrite::new(STATE_FILE, render_state(&record))];
        let mut appended = Vec::new();
        if !drafts.is_empty() {
            let (text, decisions) = self.decisions_after(&dir, drafts)?;
            writes.push(FileWrite::new(DECISIONS_FILE, text));
            appended = decisions;
        }
        // state.md and decisions.md change together or, after a crash, are finished together.
        intent::write_all(INTENT_AREA, &self.temp_dir(), &dir, &writes)?;
        Ok((record, appended))
    }

    async fn append_decision(
        &self,
        id: &PlanId,
        draft: DecisionDraft,
    ) -> Result<Decision, StoreError> {
        let _guard = self.lock()?;
        let dir = self.settled_locked(id)?;
        let mut appended = self.append_decisions(&dir, vec![draft])?;
        Ok(appended.remove(0))
    }

    async fn decisions(&self, id: &PlanId) -> Result<Vec<Decision>, StoreError> {
        let dir = self.settled(id)?;
        let text = read_optional(&dir.join(DECISIONS_FILE))?.unwrap_or_default();
        Ok(parse_decision_log(&text))
    }

    async fn read_document(
        &self,
        id: &PlanId,
        document: PlanDocument,
    ) -> Result<String, StoreError> {
        let dir = self.settled(id)?;
        read_optional(&dir.join(document.file_name()))?.ok_or_else(|| {
            StoreError::not_found(
                Entity::PlanDocument,
                format!("{id}/{}", document.file_name()),
            )
        })
    }

    async fn list(&self) -> Result<Vec<PlanSummary>, StoreError> {
        let entries = match std::fs::read_dir(&self.claude) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error("list plans", &self.claude)(e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error("list plans", &self.claude))?;
            if let Some(id) = entry
                .file_name()
                .to_str()
                .and_then(|name| PlanId::parse(name).ok())
                && entry.path().join(STATE_FILE).is_file()
            {
                ids.push(id);
            }
        }
        ids.sort();
        // A damaged pointer must not hide the plans: the listing then marks none current.
        let pointer = self.read_pointer().ok().flatten();
        ids.into_iter()
            .map(|id| {
                let current = pointer.as_ref() == Some(&id);
                // One damaged state.md must not hide every other plan: it is listed as damaged.
                Ok(match self.load_from(&id, &self.plan_dir(&id)) {
                    Ok(record) => PlanSummary {
                        current,
                        state: record.state(),
                        iteration: record.iteration(),
                        goal: record.goal().to_owned(),
                        id,
                        damaged: None,
                    },
                    Err(e @ StoreError::Corrupt { .. }) => PlanSummary {
                        current,
                        state: PlanState::Explore,
                        iteration: 0,
                        goal: String::new(),
                        id,
                        damaged: Some(e.to_string()),
                    },
                    Err(e) => return Err(e),
                })
            })
            .collect()
    }

    async fn write_checkpoint(&self, id: &PlanId, label: &str) -> Result<String, StoreError> {
        let _guard = self.lock()?;
        let dir = self.settled_locked(id)?;
        let checkpoints = dir.join(CHECKPOINTS_DIR);
        let number = highest_checkpoint(&list_names(&checkpoints)?) + 1;
        let name = format!("{number:03}-{label}");
        self.remove_debris()?;
        // Built whole in the temp directory and renamed into place, like a plan directory: a
        // checkpoint is either complete or absent.
        let staging = self
            .temp_dir()
            .join(format!("checkpoint.{}", uuid::Uuid::new_v4()));
        let built = (|| {
            std::fs::create_dir_all(&staging)
                .map_err(io_error("create checkpoint directory", &staging))?;
            for file in [STATE_FILE, PLAN_FILE] {
                if let Some(text) = read_optional(&dir.join(file))? {
                    self.write(&staging.join(file), &text)?;
                }
            }
            std::fs::create_dir_all(&checkpoints)
                .map_err(io_error("create checkpoints directory", &checkpoints))?;
            let target = checkpoints.join(&name);
            std::fs::rename(&staging, &target).map_err(|source| StoreError::Io {
                op: "rename checkpoint into place",
                path: format!("{} -> {}", staging.display(), target.display()),
                source,
            })
        })();
        if built.is_err() {
            let _ = std::fs::remove_dir_all(&staging);
        }
        built?;
        fsync_dir(&checkpoints)?;
        Ok(name)
    }

    async fn checkpoints(&self, id: &PlanId) -> Result<Vec<String>, StoreError> {
        let dir = self.existing(id)?;
        let mut names: Vec<(u32, String)> = list_names(&dir.join(CHECKPOINTS_DIR))?
            .into_iter()
            .filter_map(|n| {
                let number = n.split_once('-')?.0.parse::<u32>().ok()?;
                Some((number, n))
            })
            .collect();
        names.sort();
        Ok(names.into_iter().map(|(_, n)| n).collect())
    }

    async fn append_finding(&self, id: &PlanId, finding: &Finding) -> Result<(), StoreError> {
        let _guard = self.lock()?;
        let dir = self.settled_locked(id)?;
        // The details first: a crash between the two leaves details without an index line,
        // never an index line naming a file that is not there.
        if let Some(file) = finding.file() {
            let path = dir.join(FINDINGS_DIR).join(file);
            let detail = read_optional(&path)?;
            std::fs::create_dir_all(dir.join(FINDINGS_DIR))
                .map_err(io_error("create findings directory", &dir))?;
            self.write(
                &path,
                &append_finding_detail(detail.as_deref(), file, finding),
            )?;
        }
        let path = dir.join(FINDINGS_FILE);
        let text = read_optional(&path)?.unwrap_or_default();
        self.write(&path, &append_finding_line(&text, finding))
    }
}
