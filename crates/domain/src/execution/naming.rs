//! Session ids and archive directory names.

use chrono::NaiveDateTime;

use super::error::ExecutionError;
use crate::time::Timestamp;

/// The name of the live session directory under `.claude/sessions/`.
pub const LIVE_SESSION_DIR: &str = "__live_session__";
/// Prefix of the session id when no task group names the session.
pub const FALLBACK_SESSION_PREFIX: &str = "exec-session";
/// Prefix of the directory that leftovers of an interrupted session are archived to.
pub const INTERRUPTED_PREFIX: &str = "interrupted";

const STAMP_FORMAT: &str = "%Y%m%d-%H%M%S";
const STAMP_LEN: usize = "YYYYMMDD-HHMMSS".len();

/// `YYYYMMDD-HHMMSS` in UTC.
pub fn stamp(at: Timestamp) -> String {
    at.format(STAMP_FORMAT).to_string()
}

/// Session id, three tiers:
/// 1. an explicit `--task-group` (refused if it cannot be a directory name);
/// 2. else the task group every open task shares (ignored if unusable as a directory name);
/// 3. else `exec-session`.
///
/// Each followed by `-YYYYMMDD-HHMMSS`.
pub fn session_id<'a>(
    explicit_group: Option<&str>,
    open_task_groups: impl IntoIterator<Item = Option<&'a str>>,
    now: Timestamp,
) -> Result<String, ExecutionError> {
    let group = match explicit_group {
        Some(group) => {
            check_path_segment(group).map_err(|reason| ExecutionError::InvalidTaskGroup {
                group: group.to_owned(),
                reason,
            })?;
            group.to_owned()
        }
        None => shared_group(open_task_groups)
            .filter(|group| check_path_segment(group).is_ok())
            .unwrap_or_else(|| FALLBACK_SESSION_PREFIX.to_owned()),
    };
    Ok(format!("{group}-{}", stamp(now)))
}

/// The one group all open tasks carry, if they all carry the same one (and there is at least one).
fn shared_group<'a>(groups: impl IntoIterator<Item = Option<&'a str>>) -> Option<String> {
    let mut shared: Option<&str> = None;
    for group in groups {
        let group = group.map(str::trim).filter(|g| !g.is_empty())?;
        match shared {
            None => shared = Some(group),
            Some(seen) if seen == group => {}
            Some(_) => return None,
        }
    }
    shared.map(str::to_owned)
}

/// `interrupted-YYYYMMDD-HHMMSS`.
pub fn interrupted_dir_name(now: Timestamp) -> String {
    format!("{INTERRUPTED_PREFIX}-{}", stamp(now))
}

/// The instant an archive directory name ends with (`…-YYYYMMDD-HHMMSS`), if it does.
pub fn archive_stamp(name: &str) -> Option<NaiveDateTime> {
    let start = name.len().checked_sub(STAMP_LEN)?;
    let tail = name.get(start..)?;
    if start > 0 && !name[..start].ends_with('-') {
        return None;
    }
    NaiveDateTime::parse_from_str(tail, STAMP_FORMAT).ok()
}

/// The most recent archive by the stamp in its name (names without one are ignored); ties go to
/// the greater name so the choice never depends on listing order.
pub fn most_recent_archive<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names
        .into_iter()
        .filter(|n| *n != LIVE_SESSION_DIR)
        .filter_map(|n| archive_stamp(n).map(|at| (at, n)))
        .max()
        .map(|(_, n)| n)
}

/// [`check_path_segment`] as adapters report it: `StoreError::Invalid` naming `what` the name is.
pub fn check_store_segment(name: &str, what: &str) -> Result<(), crate::error::StoreError> {
    check_path_segment(name).map_err(|detail| crate::error::StoreError::Invalid {
        path: name.to_owned(),
        detail: format!("{what}: {detail}"),
    })
}

/// A name that is safe as one directory component on every platform cairn supports.
pub fn check_path_segment(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("it is empty".into());
    }
    if name.starts_with('.') {
        return Err("it starts with `.`".into());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "it contains {bad:?}; use letters, digits, `-`, `_`, `.`"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> Timestamp {
        chrono::Utc
            .with_ymd_and_hms(2026, 2, 5, 14, 30, 22)
            .unwrap()
    }

    #[test]
    fn three_tiers() {
        assert_eq!(
            session_id(Some("user-auth"), [Some("other")], now()).unwrap(),
            "user-auth-20260205-143022"
        );
        assert_eq!(
            session_id(None, [Some("billing"), Some("billing")], now()).unwrap(),
            "billing-20260205-143022"
        );
        assert_eq!(
            session_id(None, [Some("a"), Some("b")], now()).unwrap(),
            "exec-session-20260205-143022"
        );
        assert_eq!(
            session_id(None, [Some("a"), None], now()).unwrap(),
            "exec-session-20260205-143022"
        );
        assert_eq!(
            session_id(None, [], now()).unwrap(),
            "exec-session-20260205-143022"
        );
        assert_eq!(
            session_id(None, [Some("../etc")], now()).unwrap(),
            "exec-session-20260205-143022"
        );
        assert!(matches!(
            session_id(Some("a/b"), [], now()),
            Err(ExecutionError::InvalidTaskGroup { .. })
        ));
        assert!(session_id(Some(".."), [], now()).is_err());
    }

    #[test]
    fn archive_names_and_recency() {
        assert_eq!(interrupted_dir_name(now()), "interrupted-20260205-143022");
        let names = [
            "user-auth-20260205-143022",
            "interrupted-20260206-091500",
            "notes",
            "exec-session-20260101-000000",
        ];
        assert_eq!(
            most_recent_archive(names),
            Some("interrupted-20260206-091500")
        );
        assert_eq!(archive_stamp("x20260205-143022"), None);
        assert_eq!(most_recent_archive(["notes", "__live_session__"]), None);
    }
}
