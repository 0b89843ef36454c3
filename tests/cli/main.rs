//! End-to-end tests: the real `cairn` binary on temporary repositories.

mod agent_output;
mod board;
mod claims;
mod concurrency;
mod errors;
mod everyday;
mod json_shapes;
mod lifecycle;
mod orch;
mod plan;
mod rules;
mod session;
mod setup;
mod snapshots;
mod support;
mod tasklist;
