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
pub fn parse_lock(text: &str) -> LockFile {
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
