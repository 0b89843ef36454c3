//! The `.lock` file of the live session:
//!
//! ```text
//! task_execution_id: user-auth-20260205-143022
//! timestamp: 2026-02-05T14:30:22Z
//! pid: orchestrator
//! ```
//!
//! cairn writes its own process id as `pid` and adds a fourth line, `host: <name>`; a reader that
//! knows only the seed's three keys skips it.
//!
//! **Why `key: value` lines and not JSON.** Issue #9 asked for a JSON lock (session id, pid, host,
//! started_at); the seed's "Lock File" section and the tools that already parse it (the
//! orchestrator skill, the board) read `key: value` lines, and a JSON lock would break them. So
//! cairn writes the seed's lines, carrying the issue's four fields (`task_execution_id` is the
//! session id, `timestamp` is started_at), and reads both: a file whose first non-blank character
//! is `{` is taken as a JSON object with `session_id` (or `task_execution_id`), `pid` (string or
//! number), `host` (or `hostname`) and `started_at` (or `timestamp`).

use cairn_domain::execution::LockFile;
use cairn_domain::time::{format_rfc3339, parse_rfc3339};

/// Three `key: value` lines, LF endings. A missing timestamp is written as an empty value.
pub fn render_lock(lock: &LockFile) -> String {
    let at = lock
        .timestamp
        .as_ref()
        .map(format_rfc3339)
        .unwrap_or_default();
    let mut text = format!(
        "task_execution_id: {}\ntimestamp: {at}\npid: {}\n",
        lock.task_execution_id, lock.pid
    );
    if let Some(host) = &lock.host {
        text += &format!("host: {host}\n");
    }
    text
}

/// Accepts keys in any order, CRLF, extra keys and blank lines; the first value of each key wins.
/// A JSON object lock is read too (see the module doc); one that does not parse reads as a lock
/// with no fields, so it still marks the session as held.
pub fn parse_lock(text: &str) -> LockFile {
    if text.trim_start().starts_with('{') {
        return parse_json_lock(text);
    }
    let mut id = None;
    let mut at = None;
    let mut pid = None;
    let mut host = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "task_execution_id" if id.is_none() => id = Some(value.to_owned()),
            "timestamp" if at.is_none() => at = Some(parse_rfc3339(value)),
            "pid" if pid.is_none() => pid = Some(value.to_owned()),
            "host" if host.is_none() => host = Some(value.to_owned()),
            _ => {}
        }
    }
    LockFile {
        task_execution_id: id.unwrap_or_default(),
        timestamp: at.flatten(),
        pid: pid.unwrap_or_default(),
        host,
    }
}

fn parse_json_lock(text: &str) -> LockFile {
    let value: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    // The first of `keys` that holds a string or a number.
    let field = |keys: &[&str]| {
        keys.iter().find_map(|key| match value.get(key)? {
            serde_json::Value::String(s) => Some(s.trim().to_owned()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
    };
    LockFile {
        task_execution_id: field(&["session_id", "task_execution_id"]).unwrap_or_default(),
        timestamp: field(&["started_at", "timestamp"]).and_then(|at| parse_rfc3339(&at)),
        pid: field(&["pid"]).unwrap_or_default(),
        host: field(&["host", "hostname"]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_lock_reads_like_the_seeds_lines() {
        let lines = parse_lock(
            "task_execution_id: s-20260205-143022\ntimestamp: 2026-02-05T14:30:22Z\npid: 4242\nhost: box\n",
        );
        let json = parse_lock(
            r#"  {"session_id": "s-20260205-143022", "pid": 4242, "host": "box",
                 "started_at": "2026-02-05T14:30:22Z"}"#,
        );
        assert_eq!(json, lines);
        assert!(json.timestamp.is_some());
    }

    #[test]
    fn a_json_lock_with_the_seeds_key_names_or_garbage_is_lenient() {
        let lock = parse_lock(
            r#"{"task_execution_id": "a", "timestamp": "2026-02-05T14:30:22Z", "hostname": "h"}"#,
        );
        assert_eq!(lock.task_execution_id, "a");
        assert_eq!(lock.host.as_deref(), Some("h"));
        assert_eq!(lock.pid, "");
        let torn = parse_lock("{\"session_id\": \"a");
        assert_eq!(torn.task_execution_id, "");
        assert_eq!(torn.timestamp, None);
    }

    #[test]
    fn cairn_still_writes_the_seeds_lines() {
        let lock = parse_lock(
            r#"{"session_id": "s-1", "pid": "7", "started_at": "2026-02-05T14:30:22Z"}"#,
        );
        assert!(
            render_lock(&lock)
                .starts_with("task_execution_id: s-1\ntimestamp: 2026-02-05T14:30:22Z\npid: 7\n")
        );
    }
}
