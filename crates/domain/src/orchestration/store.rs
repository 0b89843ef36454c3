//! The Storage port of orchestration sessions.

use async_trait::async_trait;

use super::archive::{ArchiveOutcome, ArchivePlan};
use super::model::{Session, SessionId};
use crate::error::{DomainError, Error, StoreError};

/// A change to the active session, run inside the store's critical section. Returning `Err`
/// leaves the stored session untouched.
pub type SessionMutation<'a> = Box<dyn FnOnce(&mut Session) -> Result<(), DomainError> + Send + 'a>;

/// Readies the active session for archiving inside the store's critical section: checks the
/// preconditions, applies the final changes, and returns the moves to execute. Returning `Err`
/// leaves everything untouched.
pub type ArchivePreparation<'a> =
    Box<dyn FnOnce(&mut Session) -> Result<ArchivePlan, DomainError> + Send + 'a>;

/// Where orchestration sessions live: one active session (`state/active-session.md`) and the
/// archive (`state/archive/<id>.md`, documents in `plans/archive/`).
///
/// Every method is atomic with respect to every other call on any store over the same state
/// directory: readers see a whole session before or after a change, never a mix, and no update
/// is lost to a concurrent one.
#[async_trait]
pub trait OrchestrationStore: std::fmt::Debug + Send + Sync {
    /// Reads the active session; `Ok(None)` when there is none.
    ///
    /// The front matter comes back exactly as written, unknown keys at every level included; the
    /// log comes back in the adapter's canonical form, which may differ from the entries it was
    /// given: an adapter that stores the log as Markdown reads it back as the text it rendered
    /// (one [`LogEntry::Text`](super::LogEntry::Text)), since the file cannot hold the phase
    /// snapshots. The same holds for [`Self::load_archived`]. The contract suite compares logs
    /// through the adapter's canonicaliser
    /// ([`CanonicalLog`](super::contract::CanonicalLog), under the `testkit` feature).
    ///
    /// Errors: `Corrupt` when the file cannot be parsed, `Io` on read failure.
    async fn load(&self) -> Result<Option<Session>, StoreError>;

    /// Makes `session` the active session and returns it as stored.
    ///
    /// Errors: `AlreadyExists` (nothing written; entity `Session` or `ArchivedSession`) when a
    /// session is already active or a session with the same id is already archived; `Io` on
    /// write failure. Of two concurrent creates exactly one succeeds.
    async fn create(&self, session: Session) -> Result<Session, StoreError>;

    /// Reads the active session, applies `mutation`, writes the result, all in one critical
    /// section, and returns the session as written.
    ///
    /// Errors: `Error::Domain` with the mutation's refusal (nothing written);
    /// `StoreError::NotFound` (entity `Session`) when no session is active;
    /// `StoreError::Corrupt` / `Io` as for [`Self::load`]. A single write: never `AfterCommit`.
    async fn transact(&self, mutation: SessionMutation<'_>) -> Result<Session, Error>;

    /// In one critical section: runs `prepare` on the active session, then executes the plan it
    /// returns: every document move whose source exists, then the session move (the prepared
    /// session is what lands in the archive; the active file is gone afterwards). Reports what
    /// moved, what was absent, and the verification of what still exists afterwards.
    ///
    /// Errors: `Error::Domain` with `prepare`'s refusal (nothing changed); `StoreError::NotFound`
    /// when no session is active; `StoreError::AlreadyExists` when the archived session file or a
    /// document's destination already exists (nothing changed: archiving never overwrites);
    /// `StoreError::Io` when the first move fails (nothing changed); `StoreError::AfterCommit`
    /// when a later move fails after an earlier one was made (the archive is partly done: look
    /// at the files before repeating it).
    async fn archive(&self, prepare: ArchivePreparation<'_>) -> Result<ArchiveOutcome, Error>;

    /// The ids of every archived session, ascending (so, by date).
    ///
    /// Errors: `Io` when the archive cannot be listed. An absent archive is empty.
    async fn list_archived(&self) -> Result<Vec<SessionId>, StoreError>;

    /// Reads an archived session; `Ok(None)` when there is none with that id.
    ///
    /// Errors: `Corrupt` / `Io` as for [`Self::load`].
    async fn load_archived(&self, id: &SessionId) -> Result<Option<Session>, StoreError>;
}

impl<'s> dyn OrchestrationStore + 's {
    /// [`OrchestrationStore::transact`] for a mutation that also computes a value: returns the
    /// session as written and that value.
    pub async fn transact_with<T: Send>(
        &self,
        mutation: impl FnOnce(&mut Session) -> Result<T, DomainError> + Send,
    ) -> Result<(Session, T), Error> {
        let mut value = None;
        let slot = &mut value;
        let session = self
            .transact(Box::new(move |session| {
                *slot = Some(mutation(session)?);
                Ok(())
            }))
            .await?;
        Ok((session, crate::ports::ran(value)))
    }
}
