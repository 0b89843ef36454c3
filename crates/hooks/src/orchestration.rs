//! Orchestration sessions in the hook (SPEC §5, seed 004).
//!
//! | event | effect |
//! |---|---|
//! | SessionStart | prune hook-state directories older than 2 h; with an active orchestration, create this session's and add the orchestration's state to the context |
//! | SubagentStart | with an active orchestration, write the agent (`agent_type`) to `<tmp>/maestro-hooks/<session>/active-agent` |
//! | SubagentStop | add the payload's token usage, if it carries any, to the agent (from the payload, else the active-agent file); clear the file |
//! | SessionEnd | remove this session's hook-state directory |
//!
//! Nothing happens in a repository without an active session file (one `stat`), so cairn
//! installed globally costs other repositories nothing. Which directories to prune is the
//! domain's decision (`hook_state`); listing and deleting them is done here. PreToolUse never
//! comes here: the guard protects `active-session.md` from the payload alone.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use cairn_domain::error::Report;
use cairn_domain::orchestration::hook_state::{
    HookStateDir, hook_dir_to_remove_at_end, hook_dirs_to_prune,
};
use cairn_domain::orchestration::resume::resume_summary;
use cairn_domain::orchestration::{OrchestrationService, Session, TokenCounts};
use serde_json::Value;

use crate::dispatch::{Deps, Handled};
use crate::protocol::{HookEvent, HookInput, HookOutput, HookSpecificOutput};
use crate::wiring::orchestration as store;

/// The directory under the system temp dir that holds one directory per Claude Code session.
pub const HOOK_STATE_DIR: &str = "maestro-hooks";
/// The file naming the subagent at work, in a session's hook-state directory.
pub const ACTIVE_AGENT_FILE: &str = "active-agent";

/// Where hook-level state lives: `<tmp>/maestro-hooks/`.
pub fn hook_state_root() -> PathBuf {
    std::env::temp_dir().join(HOOK_STATE_DIR)
}

/// Adds what orchestration does for `input` to what the project hook already `handled`.
pub fn handle(input: &HookInput, deps: &Deps<'_>, handled: &mut Handled) {
    let Some(root) = deps.env.root(input.cwd.as_deref()) else {
        return;
    };
    let hook_root = hook_state_root();
    let session = input.session_id.as_deref();
    if input.event == HookEvent::SessionEnd {
        if let Some(dir) = session.and_then(hook_dir_to_remove_at_end) {
            let _ = std::fs::remove_dir_all(hook_root.join(dir));
        }
        return;
    }
    let state_dir = store::state_dir(&root, std::env::var(store::STATE_DIR_ENV).ok().as_deref());
    if !state_dir.join(store::ACTIVE_SESSION_PATH).is_file() {
        return;
    }
    let mut problems = Vec::new();
    match &input.event {
        HookEvent::SessionStart => {
            prune(&hook_root, session);
            if let Some(dir) = session.and_then(hook_dir_to_remove_at_end) {
                let _ = std::fs::create_dir_all(hook_root.join(dir));
            }
            match load(&root, &state_dir, deps) {
                Ok(Some(active)) => add_context(handled, &context(&active)),
                Ok(None) => {}
                Err(problem) => problems.push(problem),
            }
        }
        HookEvent::SubagentStart => {
            prune(&hook_root, session);
            if let (Some(dir), Some(agent)) = (
                session.and_then(hook_dir_to_remove_at_end),
                input.agent_type.as_deref().filter(|a| !a.trim().is_empty()),
            ) {
                let dir = hook_root.join(dir);
                if let Err(e) = std::fs::create_dir_all(&dir)
                    .and_then(|()| std::fs::write(dir.join(ACTIVE_AGENT_FILE), agent.trim()))
                {
                    problems.push(format!(
                        "recording the active agent in {}: {e}",
                        dir.display()
                    ));
                }
            }
        }
        HookEvent::SubagentStop => {
            let dir = session
                .and_then(hook_dir_to_remove_at_end)
                .map(|d| hook_root.join(d));
            let recorded = dir
                .as_ref()
                .and_then(|d| std::fs::read_to_string(d.join(ACTIVE_AGENT_FILE)).ok());
            let agent = input
                .agent_type
                .clone()
                .or(recorded)
                .map(|a| a.trim().to_owned())
                .filter(|a| !a.is_empty());
            if let (Some(agent), Some(counts)) =
                (agent, input.usage.as_ref().and_then(token_counts))
                && first_delivery(dir.as_deref(), input)
                && let Err(problem) = record_tokens(&root, &state_dir, deps, agent, counts)
            {
                problems.push(problem);
            }
            if let Some(dir) = dir {
                let _ = std::fs::remove_file(dir.join(ACTIVE_AGENT_FILE));
            }
        }
        _ => {}
    }
    if !problems.is_empty() {
        handled.root.get_or_insert(root);
        handled
            .problems
            .extend(problems.into_iter().map(|p| format!("orchestration: {p}")));
    }
}

/// The same SubagentStop delivered twice must not count its tokens twice.
fn first_delivery(dir: Option<&Path>, input: &HookInput) -> bool {
    let Some(dir) = dir else {
        return true;
    };
    let key = format!(
        "orch-tokens\u{0}{}",
        input.agent_id.as_deref().unwrap_or_default()
    );
    crate::dedupe::claim(&dir.join("seen"), &key, SystemTime::now())
}

/// Deletes the hook-state directories the domain says are stale.
fn prune(hook_root: &Path, current: Option<&str>) {
    let Ok(entries) = std::fs::read_dir(hook_root) else {
        return;
    };
    let now = SystemTime::now();
    let dirs: Vec<HookStateDir> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let modified = e.metadata().and_then(|m| m.modified()).ok()?;
            let age = match now.duration_since(modified) {
                Ok(age) => chrono::TimeDelta::from_std(age).ok()?,
                Err(ahead) => -chrono::TimeDelta::from_std(ahead.duration()).ok()?,
            };
            Some(HookStateDir {
                name: e.file_name().to_str()?.to_owned(),
                age,
            })
        })
        .collect();
    for name in hook_dirs_to_prune(&dirs, current) {
        let _ = std::fs::remove_dir_all(hook_root.join(name));
    }
}

/// Token counts from a payload's usage object: the API's shape (`input_tokens`,
/// `output_tokens`, `cache_read_input_tokens`) or the session file's (`input`, `output`,
/// `cached`). `None` when it carries no count at all.
pub fn token_counts(usage: &Value) -> Option<TokenCounts> {
    let count = |keys: &[&str]| keys.iter().find_map(|k| usage.get(*k)?.as_u64());
    let input = count(&["input_tokens", "input"]);
    let output = count(&["output_tokens", "output"]);
    let cached = count(&["cache_read_input_tokens", "cached"]);
    if input.is_none() && output.is_none() && cached.is_none() {
        return None;
    }
    Some(TokenCounts {
        input: input.unwrap_or(0),
        output: output.unwrap_or(0),
        cached: cached.unwrap_or(0),
    })
}

fn service(
    root: &Path,
    state_dir: &Path,
    deps: &Deps<'_>,
) -> Result<(OrchestrationService, tokio::runtime::Runtime), String> {
    let store = Arc::new(store::open(root, state_dir));
    Ok((
        OrchestrationService::new(store, deps.clock.clone()),
        crate::dispatch::runtime()?,
    ))
}

fn load(root: &Path, state_dir: &Path, deps: &Deps<'_>) -> Result<Option<Session>, String> {
    let (service, runtime) = service(root, state_dir, deps)?;
    runtime
        .block_on(service.active())
        .map_err(|e| format!("reading the active session: {}", Report(&e)))
}

fn record_tokens(
    root: &Path,
    state_dir: &Path,
    deps: &Deps<'_>,
    agent: String,
    counts: TokenCounts,
) -> Result<(), String> {
    let (service, runtime) = service(root, state_dir, deps)?;
    runtime
        .block_on(service.record_tokens(agent, counts))
        .map(|_| ())
        .map_err(|e| format!("recording token usage: {}", Report(&e)))
}

/// Appends `text` to the SessionStart context the project hook produced, or makes it the context.
pub(crate) fn add_context(handled: &mut Handled, text: &str) {
    let existing = match &handled.output {
        Some(HookOutput {
            hook_specific_output: Some(HookSpecificOutput::SessionStart { additional_context }),
            ..
        }) => Some(additional_context.clone()),
        _ => None,
    };
    let combined = match existing {
        Some(before) => format!("{before}\n\n{text}"),
        None => text.to_owned(),
    };
    handled.output = Some(HookOutput::session_context(combined));
}

/// How many phases the context lists before counting the rest.
const PHASES_SHOWN: usize = 12;

/// The orchestration's state for Claude at session start.
pub fn context(session: &Session) -> String {
    let s = &session.state;
    let summary = resume_summary(session, &[]);
    let mut out = format!(
        "# Active orchestration: {}\nTask: {}\nStatus: {}, phase {} of {}.\n",
        s.session_id,
        s.task,
        if summary.status == cairn_domain::orchestration::SessionStatus::Completed {
            "completed (archive it: `cairn orch archive`)"
        } else {
            "in progress"
        },
        s.current_phase,
        s.total_phases
    );
    for phase in s.phases.iter().take(PHASES_SHOWN) {
        let retries = if phase.retry_count > 0 {
            format!(", retried {}", phase.retry_count)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "- Phase {} {}: {}{retries}\n",
            phase.id, phase.name, phase.status
        ));
    }
    if s.phases.len() > PHASES_SHOWN {
        out.push_str(&format!(
            "- … and {} more (`cairn orch status`)\n",
            s.phases.len() - PHASES_SHOWN
        ));
    }
    for error in &summary.unresolved_errors {
        out.push_str(&format!(
            "Unresolved error {} (phase {}, {}): {}\n",
            error.id(),
            error.phase,
            error.error.agent,
            error.error.message.lines().next().unwrap_or_default()
        ));
    }
    out.push_str(
        "Record progress with `cairn orch phase|files|tokens|error|resolve …`, never by editing \
         active-session.md; `cairn orch resume` says where to pick up.",
    );
    out
}
