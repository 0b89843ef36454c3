//! cairn-hook: the executable Claude Code runs on hook events, and the settings integration.
//!
//! - [`protocol`]: the payload read from stdin (leniently) and the JSON printed on stdout.
//! - [`input`]: reading stdin with a size cap and a deadline.
//! - [`guard`]: the PreToolUse guard against direct writes to cairn's state files.
//! - [`dispatch`]: what each event does (the table is there).
//! - [`plan`]: the active plan's rules: edits per state, the change manifest, its context.
//! - [`dedupe`]: one winner when the same event is delivered twice at once.
//! - [`execution`]: a live execution session in SessionStart's context.
//! - [`errlog`]: the hook error log, where cairn's own failures go instead of to Claude.
//! - [`orchestration`]: orchestration sessions: active agent, tokens, session-start context.
//! - [`setup`]: `cairn setup claude` — merging cairn's hooks into a settings.json.
//! - [`tasklist`]: PostToolUse on the task tools — pulling the session's task list.
//!
//! The rules every event follows: exit 0; print exactly one JSON object or nothing; never answer
//! `allow`; on cairn's own failure (no project, damaged store, a bug) say nothing and append the
//! problem to the hook error log.

/// How long the hook waits for any store's lock — shorter than the CLI's: a hook waiting on a
/// busy lock delays Claude, and its timeout (set in settings.json) would kill it anyway.
pub const HOOK_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

pub mod dedupe;
pub mod dispatch;
pub mod errlog;
pub mod execution;
pub mod guard;
pub mod input;
pub mod orchestration;
pub mod plan;
pub mod protocol;
pub mod setup;
pub mod tasklist;
pub mod wiring;

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use dispatch::{Deps, Handled};
use protocol::{HookInput, MalformedInput};

/// Runs one hook invocation: reads the payload from `stdin`, handles it, and returns the line to
/// print (if any). Never panics and never fails: problems go to the hook error log.
pub fn run<R: Read + Send + 'static>(
    stdin: R,
    deps: &Deps<'_>,
    cap: usize,
    deadline: Duration,
) -> Option<String> {
    let input = match input::read_payload(stdin, cap, deadline).and_then(|b| HookInput::parse(&b)) {
        Ok(input) => input,
        Err(malformed) => {
            report_malformed(deps, &malformed);
            return None;
        }
    };
    let handled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        dispatch::handle(&input, deps)
    }))
    .unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        Handled {
            output: None,
            root: deps.env.root(input.cwd.as_deref()),
            problems: vec![format!("bug: cairn-hook panicked: {message}")],
        }
    });
    if let Some(root) = &handled.root {
        for problem in &handled.problems {
            errlog::append(root, deps.clock.now(), input.event.name(), problem);
        }
    }
    handled.output.map(|o| o.to_json_line())
}

/// A payload that cannot be read is logged where cairn lives; a repository without a cairn
/// project (cairn installed globally) gets no log file.
fn report_malformed(deps: &Deps<'_>, malformed: &MalformedInput) {
    if let Some(root) = deps.env.root(None)
        && crate::wiring::layout::projects_dir(&root).is_dir()
    {
        errlog::append(&root, deps.clock.now(), "", &malformed.to_string());
    }
}

/// The repository root a hook started in `dir` would use; for diagnostics and `cairn setup`.
pub fn root_for(dir: &Path) -> std::path::PathBuf {
    crate::wiring::find_git_work_tree(dir).unwrap_or_else(|| dir.to_path_buf())
}
