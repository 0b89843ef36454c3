//! Scenario 5 of issue 17, the wings: one test per wing, added here as the wing lands (none
//! has a command or hook event yet, so there is nothing to run). Each is a session like the
//! others in `main.rs` — a [`Scratch`](crate::harness::Scratch) repository, `cairn setup
//! claude`, a script of [`Turn`](crate::api::Turn)s, assertions on
//! [`FakeApi::tool_results`](crate::api::FakeApi::tool_results) and the files:
//!
//! - plans: with an active plan in EXPLORE, a scripted Read + Edit of a source file comes back
//!   denied with cairn's reason; after the plan moves to EXECUTE the same Edit succeeds;
//! - execution sessions: a native `TaskUpdate` call (`Turn::tool("TaskUpdate", …)`) reaches the
//!   project through PostToolUse (the task's status in `cairn task show --json`);
//! - MCP: the server `cairn setup claude` registers answers a scripted call of its `next` tool
//!   (`Turn::tool("mcp__cairn__next", json!({}))`; the tool_result names the next task).
