//! SessionStart's part for execution sessions: a live session's wave, active tasks and what to do
//! next go into Claude's context, so an agent resuming a run picks it up where it stopped; on
//! `startup` with a stale lock (the session presumed dead) the context proposes
//! `cairn session recover` instead.
//!
//! Bounded: one `read_dir` of the live directory decides; only a non-empty one is loaded.

use std::sync::Arc;

use cairn_domain::Report;
use cairn_domain::execution::service::{ExecutionService, LiveStatus};

use crate::dispatch::{Deps, Handled};
use crate::protocol::HookInput;

/// How many active tasks the context names before counting the rest.
const ACTIVE_SHOWN: usize = 10;

pub fn session_start(input: &HookInput, deps: &Deps<'_>, handled: &mut Handled) {
    let Some(root) = deps.env.root(input.cwd.as_deref()) else {
        return;
    };
    let store = crate::wiring::open_execution_store(&root);
    let live_is_empty = std::fs::read_dir(store.live_dir())
        .map(|mut entries| entries.next().is_none())
        .unwrap_or(true);
    if live_is_empty {
        return;
    }
    let status = crate::dispatch::runtime().and_then(|runtime| {
        let service = ExecutionService::new(Arc::new(store), deps.clock.clone());
        runtime
            .block_on(service.status())
            .map_err(|e| format!("reading the live session: {}", Report(&e)))
    });
    match status {
        Ok(Some(status)) => {
            let startup = input.source.as_deref().is_none_or(|s| s == "startup");
            if let Some(text) = context(&status, startup) {
                crate::orchestration::add_context(handled, &text);
            }
        }
        Ok(None) => {}
        Err(problem) => {
            handled.root.get_or_insert(root);
            handled
                .problems
                .push(format!("execution session: {problem}"));
        }
    }
}

/// The live session for Claude at session start; `None` for a stale one outside `startup` (a
/// resumed or compacted conversation is this session's own, and the lock says so).
pub fn context(status: &LiveStatus, startup: bool) -> Option<String> {
    let state = &status.state;
    let id = if state.id.is_empty() {
        "(no id)"
    } else {
        &state.id
    };
    if status.stale {
        return startup.then(|| {
            format!(
                "# Interrupted execution session: {id}\nIts lock is more than 4 hours old, so \
                 the session is presumed dead. Recover it (archive the leftovers as \
                 interrupted, reset its unfinished tasks): `cairn session recover`.\n"
            )
        });
    }
    let mut out = format!("# Live execution session: {id}\n");
    if let Some(wave) = &state.wave {
        out.push_str(&format!("Wave {} of {}", wave.current, wave.total));
        if let Some(max) = state.max_parallel {
            out.push_str(&format!(", at most {max} tasks at once"));
        }
        out.push_str(".\n");
    }
    let tally = &state.tally;
    out.push_str(&format!(
        "Results so far: {} passed, {} partial, {} failed.\n",
        tally.pass, tally.partial, tally.fail
    ));
    if status.active.is_empty() {
        out.push_str("No task is active: start the next wave with `cairn session wave next`, or end the session with `cairn session finish`.\n");
    } else {
        out.push_str("Active tasks:\n");
        for task in status.active.iter().take(ACTIVE_SHOWN) {
            out.push_str(&format!(
                "- {} {} ({})\n",
                task.id, task.subject, task.phase
            ));
        }
        if status.active.len() > ACTIVE_SHOWN {
            out.push_str(&format!(
                "- … and {} more (`cairn session status`)\n",
                status.active.len() - ACTIVE_SHOWN
            ));
        }
        out.push_str("Record each result with `cairn session task done|fail ID`.\n");
    }
    Some(out)
}
