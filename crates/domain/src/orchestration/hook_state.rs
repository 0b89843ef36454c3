//! Hook-level state: the transient per-session directories (`<tmp>/maestro-hooks/<session>/`,
//! holding the active-agent file) that the hooks keep apart from orchestration state.
//!
//! A session that ends abnormally never removes its directory, so the session-start and
//! pre-delegation hooks prune stale ones. Deciding which is pure and lives here; listing and
//! deleting is the hooks' adapter's job.

use chrono::TimeDelta;

/// A hook-state directory untouched for longer than this belongs to a session that is gone: the
/// pre-delegation hook rewrites the active-agent file on every delegation, so a live session
/// keeps its directory fresh.
pub const HOOK_STATE_MAX_AGE: TimeDelta = TimeDelta::hours(2);

/// One directory under the hook-state root, as the adapter found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookStateDir {
    /// The directory name: the Claude Code session id.
    pub name: String,
    /// Now minus its last modification. Negative when its clock ran ahead of ours.
    pub age: TimeDelta,
}

/// The directories to delete: older than [`HOOK_STATE_MAX_AGE`], never the current session's,
/// and never one whose name could not be a session id (it is not ours, and a name like `..`
/// must never reach a recursive delete).
pub fn hook_dirs_to_prune<'a>(
    dirs: &'a [HookStateDir],
    current_session: Option<&str>,
) -> Vec<&'a str> {
    dirs.iter()
        .filter(|dir| dir.age > HOOK_STATE_MAX_AGE)
        .filter(|dir| Some(dir.name.as_str()) != current_session)
        .filter(|dir| is_session_dir_name(&dir.name))
        .map(|dir| dir.name.as_str())
        .collect()
}

/// The directory a session's end removes, if its id can name one safely.
pub fn hook_dir_to_remove_at_end(session: &str) -> Option<&str> {
    is_session_dir_name(session).then_some(session)
}

fn is_session_dir_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
