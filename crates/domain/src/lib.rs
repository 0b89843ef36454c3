//! cairn's pure domain.
//!
//! Everything cairn knows about projects, tasks, execution sessions, orchestration sessions and
//! plans lives here as plain values and pure functions: the entities (serde types that round-trip
//! unknown fields), the state machines (each a transition table plus a typed error naming what was
//! refused and what would have been allowed), the policies (scheduling, checkpoints,
//! reconciliation, staleness), the Storage ports the adapters implement, and the application
//! services that drive those ports.
//!
//! Architecture invariant: this crate does no I/O. No `std::fs`, no `std::env`, no process, no
//! wall clock, no randomness: time comes through [`ports::Clock`] and fresh ids through
//! [`ports::IdGen`], so every rule is deterministic under test. A tidy test enforces this.
//!
//! With the `testkit` feature (off by default; tests turn it on) the crate also ships an in-memory
//! adapter of every port, the contract suites that any adapter must pass, and test fixtures.

pub mod error;
pub mod execution;
pub mod log;
pub mod next;
pub mod orchestration;
pub mod plan;
pub mod ports;
pub mod project;
pub mod tasklist;
pub mod time;

pub use error::{DomainError, Entity, Error, Report, StoreError};
pub use next::NextStep;
