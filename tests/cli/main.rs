//! End-to-end tests: the real `cairn` binary on temporary repositories.

mod agent_output;
mod board;
mod claims;
mod concurrency;
mod durable;
mod errors;
mod everyday;
mod interop;
mod json_shapes;
mod lifecycle;
mod mcp;
mod mcp_node;
mod mcp_wings;
mod merge;
mod orch;
mod plan;
mod rules;
mod session;
mod setup;
mod snapshots;
mod store;
mod support;
mod tasklist;
