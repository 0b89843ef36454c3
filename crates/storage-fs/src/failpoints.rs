//! White-box crash points for the crash tests.
//!
//! A failpoint is a named spot in a durability protocol (for instance "the temp file is written but
//! not yet fsynced"). When the environment variable `CAIRN_FAILPOINT` names that spot, the process
//! calls [`std::process::abort`] there: no destructors, no buffered output, no cleanup — the
//! closest a test can get to a power cut without a VM. The crash tests run a child process with
//! the variable set, let it die at the named step, and check what a fresh process finds on disk.
//!
//! The variable is read once per process (a `OnceLock`), so an unset failpoint costs one atomic
//! load per call. Known names:
//!
//! | name | where |
//! |---|---|
//! | `atomic:after-temp-create` | temp file created, still empty |
//! | `atomic:after-temp-write` | temp file written, not fsynced |
//! | `atomic:after-temp-fsync` | temp file durable, not yet renamed |
//! | `atomic:after-rename` | target replaced, directory not fsynced |
//! | `atomic:after-dir-fsync` | write fully done |
//! | `log:after-append` | progress-log entry written, not yet fsynced |
//! | `checkpoint:after-link` | checkpoint linked into place, temp file not yet removed |
//! | `project:after-log-append` | a project transaction's log entry (its commit, with the replay payload) is durable; no state file replaced yet |
//! | `project:after-state-write` | a project transaction replaced its state files; no checkpoint yet |
//! | `plan:before-dir-rename` | a new plan directory is built under `.claude/.plan-temp/`, not renamed into place |
//! | `plan:after-dir-create` | a new plan directory is in place; the pointer not yet moved |
//! | `AREA:journal-after-intent` | a multi-file write's intent (`.cairn-journal`) is durable; no file replaced yet (`AREA` is `plan`, `session`, …) |
//! | `AREA:journal-after-first-file` | the first file of the intent is replaced, the others not yet |
//! | `AREA:journal-after-files` | every file of the intent is replaced; the intent not yet removed |
//! | `orch:archive-after-design-move` | archiving moved the design document; nothing else yet |
//! | `orch:archive-after-plan-move` | archiving moved the implementation plan; the session still active |
//! | `orch:archive-after-session-rewrite` | the active session rewritten as prepared for archiving, not yet moved |
//! | `orch:archive-after-session-move` | the session moved into `state/archive/`; verification not run |
//! | `session:after-build` | a new session is built under `.claude/sessions/.session-temp/`; leftovers not yet moved |
//! | `session:before-archive-rename` | a session is about to be renamed to its archive (finish, recovery, start over leftovers) |
//! | `session:after-archive-rename` | the session is archived; the empty live directory not yet recreated |
//! | `session:after-move-recorded` | a task's end is in the session's files with its project move recorded; the project not yet moved |
//! | `session:before-forget-move` | the project holds a recorded move; the record not yet forgotten |
//! | `session:before-live-rename` | the built session is about to be renamed into `__live_session__/` |
//! | `pg:before-commit` | a PostgreSQL transaction wrote its task rows and log entries, not yet committed |
//!
//! Other modules (and the adapters built on this crate) add their own names by calling
//! [`failpoint`] with a `area:step` string.

use std::sync::OnceLock;

/// The environment variable naming the failpoint to crash at.
pub const FAILPOINT_ENV: &str = "CAIRN_FAILPOINT";

fn armed() -> Option<&'static str> {
    static ARMED: OnceLock<Option<String>> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            std::env::var(FAILPOINT_ENV)
                .ok()
                .filter(|name| !name.is_empty())
        })
        .as_deref()
}

/// Aborts the process if `CAIRN_FAILPOINT` equals `name`; otherwise does nothing.
pub fn failpoint(name: &str) {
    if armed() == Some(name) {
        std::process::abort();
    }
}
