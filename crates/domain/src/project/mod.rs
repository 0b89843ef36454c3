//! The project store aggregate (SPEC §2): a project record and its flat list of tasks.
//!
//! - [`model`]: the serde entities of `project.json` and `tasks.json`.
//! - [`status`]: the task status transition table.
//! - [`tasks`]: creation, moves, decomposition, the completion cascade, dependencies.
//! - [`graph`]: readiness, `next`, waves, the critical path, cycles.
//! - [`policy`]: checkpoints, reconciliation on resume, staleness, freshness, velocity.
//! - [`phases`]: the phase table, phase progress, and the project's own completion.
//! - [`claims`]: claims with leases: who works a task, until when.
//! - [`events`]: typed log events.
//! - [`import`]: tasks from other tools (or cairn's own export) diffed and applied by external id.
//! - [`limits`]: the longest value cairn writes into each free-text field.
//! - [`merge`]: the three-way merge of two branches' task lists and project records.
//! - [`store`]: the [`store::ProjectStore`] port; [`service`]: the use cases.
//! - [`transfer`]: copying projects whole between stores (`cairn store export` / `import`).

pub mod claims;
pub mod error;
pub mod events;
pub mod graph;
pub mod import;
pub mod limits;
pub mod merge;
pub mod model;
pub mod phases;
pub mod policy;
pub mod report;
pub mod status;
pub mod tasks;

pub use claims::{Actor, ClaimTarget};
pub use error::ProjectError;
pub use events::{EventKind, ProjectEvent};
pub use model::*;
pub use tasks::{FieldChange, TaskEdit};
pub use tasks::{MoveDetail, NewTask};
pub mod service;
pub mod store;
pub mod transfer;

#[cfg(feature = "testkit")]
pub mod contract;
#[cfg(any(test, feature = "testkit"))]
pub mod fixtures;
#[cfg(feature = "testkit")]
pub mod memory;
