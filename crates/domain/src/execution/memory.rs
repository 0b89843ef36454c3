//! The in-memory adapter of [`ExecutionSessionStore`], for tests and dry runs.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::context::TaskContext;
use super::naming::{LIVE_SESSION_DIR, check_store_segment as check_segment};
use super::state::LiveSession;
use super::store::{
    ContextUpdate, Decide, ExecutionSessionStore, Finale, ProjectMove, StartPlan, Started,
    TaskRecord,
};
use super::task_log::TaskLog;
use crate::error::{Entity, Error, StoreError};

#[derive(Debug, Default)]
struct Sessions {
    live: LiveSession,
    archives: BTreeMap<String, LiveSession>,
    project_moves: Vec<ProjectMove>,
}

/// Sessions in a `Mutex`: the lock is the critical section the port's contract speaks of.
#[derive(Debug, Default)]
pub struct MemoryExecutionSessionStore {
    sessions: Mutex<Sessions>,
}

impl MemoryExecutionSessionStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts arbitrary content in the live directory, e.g. a damaged session left by a crash.
    pub fn seed_live(&self, live: LiveSession) {
        self.lock().live = live;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn no_live_session() -> StoreError {
    StoreError::not_found(Entity::ExecutionSession, LIVE_SESSION_DIR)
}

fn require_live(sessions: &Sessions) -> Result<(), StoreError> {
    if sessions.live.lock.is_some() {
        Ok(())
    } else {
        Err(no_live_session())
    }
}

#[async_trait]
impl ExecutionSessionStore for MemoryExecutionSessionStore {
    async fn load(&self) -> Result<LiveSession, StoreError> {
        Ok(self.lock().live.clone())
    }

    async fn start(&self, decide: Decide<'_, StartPlan>) -> Result<Started, Error> {
        let mut sessions = self.lock();
        let plan = decide(&sessions.live)?;
        if !sessions.live.is_empty() {
            let Some(dir) = &plan.archive_leftovers_to else {
                return Err(StoreError::AlreadyExists {
                    entity: Entity::ExecutionSession,
                    id: LIVE_SESSION_DIR.into(),
                }
                .into());
            };
            check_segment(dir, "archive directory")?;
            if sessions.archives.contains_key(dir) {
                return Err(StoreError::AlreadyExists {
                    entity: Entity::ExecutionArchive,
                    id: dir.clone(),
                }
                .into());
            }
        }
        let previous = std::mem::take(&mut sessions.live);
        if !previous.is_empty()
            && let Some(dir) = &plan.archive_leftovers_to
        {
            sessions.archives.insert(dir.clone(), previous.clone());
        }
        let new = &plan.session;
        sessions.live = LiveSession {
            lock: Some(new.lock.clone()),
            execution_plan: Some(new.execution_plan.clone()),
            context: Some(new.context.clone()),
            task_log: Some(TaskLog::default()),
            progress: Some(new.progress.clone()),
            ..LiveSession::default()
        };
        Ok(Started { previous, plan })
    }

    async fn update_progress(
        &self,
        decide: Decide<'_, super::progress::Progress>,
    ) -> Result<super::progress::Progress, Error> {
        let mut sessions = self.lock();
        require_live(&sessions)?;
        let progress = decide(&sessions.live)?;
        sessions.live.progress = Some(progress.clone());
        Ok(progress)
    }

    async fn update_progress_moving(
        &self,
        decide: Decide<'_, super::progress::Progress>,
        project_move: ProjectMove,
    ) -> Result<super::progress::Progress, Error> {
        let mut sessions = self.lock();
        require_live(&sessions)?;
        let progress = decide(&sessions.live)?;
        sessions.live.progress = Some(progress.clone());
        sessions.project_moves.push(project_move);
        Ok(progress)
    }

    async fn project_moves(&self) -> Result<Vec<ProjectMove>, StoreError> {
        Ok(self.lock().project_moves.clone())
    }

    async fn forget_project_move(&self, done: &ProjectMove) -> Result<(), StoreError> {
        self.lock().project_moves.retain(|m| m != done);
        Ok(())
    }

    async fn record_task(&self, decide: Decide<'_, TaskRecord>) -> Result<TaskRecord, Error> {
        let mut sessions = self.lock();
        require_live(&sessions)?;
        let record = decide(&sessions.live)?;
        if let Some(project_move) = &record.project_move {
            sessions.project_moves.push(project_move.clone());
        }
        sessions
            .live
            .task_log
            .get_or_insert_with(TaskLog::default)
            .rows
            .push(record.row.clone());
        sessions.live.progress = Some(record.progress.clone());
        Ok(record)
    }

    async fn write_task_context(
        &self,
        task_id: &str,
        report: &TaskContext,
    ) -> Result<(), StoreError> {
        check_segment(task_id, "task id")?;
        let mut sessions = self.lock();
        require_live(&sessions)?;
        sessions
            .live
            .task_contexts
            .insert(task_id.to_owned(), report.clone());
        Ok(())
    }

    async fn update_context(
        &self,
        decide: Decide<'_, ContextUpdate>,
    ) -> Result<ContextUpdate, Error> {
        let mut sessions = self.lock();
        require_live(&sessions)?;
        let update = decide(&sessions.live)?;
        sessions.live.context = Some(update.context.clone());
        for id in &update.consumed_task_contexts {
            sessions.live.task_contexts.remove(id);
        }
        Ok(update)
    }

    async fn finish(&self, decide: Decide<'_, Finale>) -> Result<Finale, Error> {
        let mut sessions = self.lock();
        require_live(&sessions)?;
        let finale = decide(&sessions.live)?;
        check_segment(&finale.archive_dir, "archive directory")?;
        if sessions.archives.contains_key(&finale.archive_dir) {
            return Err(StoreError::AlreadyExists {
                entity: Entity::ExecutionArchive,
                id: finale.archive_dir.clone(),
            }
            .into());
        }
        let mut archived = std::mem::take(&mut sessions.live);
        archived.progress = Some(finale.progress.clone());
        archived.summary = Some(finale.summary.clone());
        sessions
            .archives
            .insert(finale.archive_dir.clone(), archived);
        Ok(finale)
    }

    async fn archive(&self, dir_name: &str) -> Result<bool, StoreError> {
        match self.archive_if(dir_name, Box::new(|_| Ok(()))).await {
            Ok(moved) => Ok(moved),
            Err(Error::Store(e)) => Err(e),
            Err(e) => unreachable!("an archive that always agrees refused: {e}"),
        }
    }

    async fn archive_if(&self, dir_name: &str, decide: Decide<'_, ()>) -> Result<bool, Error> {
        check_segment(dir_name, "archive directory")?;
        let mut sessions = self.lock();
        if sessions.live.is_empty() {
            return Ok(false);
        }
        decide(&sessions.live)?;
        if sessions.archives.contains_key(dir_name) {
            return Err(StoreError::already_exists(Entity::ExecutionArchive, dir_name).into());
        }
        let archived = std::mem::take(&mut sessions.live);
        sessions.archives.insert(dir_name.to_owned(), archived);
        Ok(true)
    }

    async fn list_archived(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.lock().archives.keys().cloned().collect())
    }

    async fn load_archived(&self, dir_name: &str) -> Result<LiveSession, StoreError> {
        self.lock()
            .archives
            .get(dir_name)
            .cloned()
            .ok_or_else(|| StoreError::not_found(Entity::ExecutionArchive, dir_name))
    }
}
