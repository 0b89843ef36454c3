//! The in-memory adapter: a `Mutex`-guarded model of the state directory.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::archive::{
    ACTIVE_SESSION_PATH, ArchiveOutcome, ArchivedFile, Location, archived_session_path,
    verify_archive,
};
use super::model::{Session, SessionId};
use super::store::{ArchivePreparation, OrchestrationStore, SessionMutation};
use crate::error::{Entity, Error, StoreError};

#[derive(Debug, Default)]
pub struct MemoryOrchestrationStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    active: Option<Session>,
    archived: BTreeMap<SessionId, Session>,
    /// Design and plan documents, where they are now.
    documents: BTreeSet<Location>,
}

impl Inner {
    fn existing(&self) -> Vec<Location> {
        let active = self
            .active
            .iter()
            .map(|_| Location::StateDir(ACTIVE_SESSION_PATH.to_owned()));
        let archived = self
            .archived
            .keys()
            .map(|id| Location::StateDir(archived_session_path(id)));
        active
            .chain(archived)
            .chain(self.documents.iter().cloned())
            .collect()
    }
}

impl MemoryOrchestrationStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Pretends a document exists at `location`, so archiving has something to move.
    pub fn put_document(&self, location: Location) {
        self.lock().documents.insert(location);
    }

    /// Every file in the modelled state directory and every document, wherever it is now.
    pub fn existing(&self) -> Vec<Location> {
        self.lock().existing()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic in another test's closure must not make every later call panic too.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl OrchestrationStore for MemoryOrchestrationStore {
    async fn load(&self) -> Result<Option<Session>, StoreError> {
        Ok(self.lock().active.clone())
    }

    async fn create(&self, session: Session) -> Result<Session, StoreError> {
        let mut inner = self.lock();
        if let Some(active) = &inner.active {
            return Err(StoreError::already_exists(Entity::Session, active.id()));
        }
        if inner.archived.contains_key(session.id()) {
            return Err(StoreError::already_exists(
                Entity::ArchivedSession,
                session.id(),
            ));
        }
        inner.active = Some(session.clone());
        Ok(session)
    }

    async fn transact(&self, mutation: SessionMutation<'_>) -> Result<Session, Error> {
        let mut inner = self.lock();
        let Some(active) = &inner.active else {
            return Err(not_found());
        };
        let mut changed = active.clone();
        mutation(&mut changed)?;
        inner.active = Some(changed.clone());
        Ok(changed)
    }

    async fn archive(&self, prepare: ArchivePreparation<'_>) -> Result<ArchiveOutcome, Error> {
        let mut inner = self.lock();
        let Some(active) = &inner.active else {
            return Err(not_found());
        };
        let mut session = active.clone();
        let plan = prepare(&mut session)?;
        if inner.archived.contains_key(session.id()) {
            return Err(StoreError::already_exists(Entity::ArchivedSession, session.id()).into());
        }
        let documents = plan
            .moves
            .iter()
            .filter(|m| m.file != ArchivedFile::Session);
        if let Some(taken) = documents
            .clone()
            .find(|m| inner.documents.contains(&m.from) && inner.documents.contains(&m.to))
        {
            return Err(StoreError::AlreadyExists {
                entity: Entity::ArchivedDocument,
                id: taken.to.to_string(),
            }
            .into());
        }
        let (mut moved, mut absent) = (Vec::new(), Vec::new());
        for planned in documents {
            if inner.documents.remove(&planned.from) {
                inner.documents.insert(planned.to.clone());
                moved.push(planned.clone());
            } else {
                absent.push(planned.clone());
            }
        }
        moved.extend(
            plan.moves
                .iter()
                .filter(|m| m.file == ArchivedFile::Session)
                .cloned(),
        );
        inner.archived.insert(session.id().clone(), session.clone());
        inner.active = None;
        let verification = verify_archive(&plan, &inner.existing());
        Ok(ArchiveOutcome {
            session,
            plan,
            moved,
            absent,
            verification,
        })
    }

    async fn list_archived(&self) -> Result<Vec<SessionId>, StoreError> {
        Ok(self.lock().archived.keys().cloned().collect())
    }

    async fn load_archived(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        Ok(self.lock().archived.get(id).cloned())
    }
}

fn not_found() -> Error {
    StoreError::NotFound {
        entity: Entity::Session,
        id: ACTIVE_SESSION_PATH.to_owned(),
    }
    .into()
}
