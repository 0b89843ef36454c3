//! cairn's PostgreSQL adapter: the project store (SPEC §2) in one shared, transactional
//! database, for several agents on several machines working one project.
//!
//! [`PgProjectStore`] implements the same `ProjectStore` port as the filesystem adapter and
//! passes the same contract suite. Every read-modify-write locks the project's row
//! (`SELECT … FOR UPDATE`) for the whole transaction, so concurrent writers on different machines
//! are serialised exactly like the filesystem adapter's lock serialises processes; readers use a
//! read-only snapshot and never wait.

mod migrate;
pub mod select;
mod store;
mod url;

#[cfg(feature = "testkit")]
pub mod testkit;

pub use migrate::{MIGRATIONS, Migration};
pub use select::{StoreChoice, choose};
pub use store::{DEFAULT_LOCK_TIMEOUT, PgProjectStore};
pub use url::{is_postgres_url, redact};
