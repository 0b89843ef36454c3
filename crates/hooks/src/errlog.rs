//! The hook error log: where cairn-hook reports its own failures, since it must never report
//! them to Claude (a hook that fails loudly, or blocks, because cairn is broken would stop the
//! agent's work for cairn's sake).
//!
//! `<root>/.claude/cairn/hook-errors.log`, one line per failure:
//! `2025-01-31T12:00:00Z SessionStart: message`. Appended with a single write so parallel hooks
//! do not interleave within a line. Past 1 MiB the file is moved to `hook-errors.log.1` (replacing
//! the previous one), so a hook failing on every call cannot fill the disk. Writing the log is
//! best effort: its own failures are swallowed, because there is nowhere left to report them.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use cairn_domain::time::Timestamp;

/// Rotation threshold.
pub const MAX_LOG_BYTES: u64 = 1024 * 1024;

/// `<root>/.claude/cairn`: cairn-hook's own bookkeeping (error log, duplicate-delivery markers).
pub fn hook_dir(root: &Path) -> PathBuf {
    root.join(".claude").join("cairn")
}

pub fn error_log_path(root: &Path) -> PathBuf {
    hook_dir(root).join("hook-errors.log")
}

/// Appends one line; never fails.
pub fn append(root: &Path, at: Timestamp, event: &str, message: &str) {
    let _ = try_append(root, at, event, message);
}

fn try_append(root: &Path, at: Timestamp, event: &str, message: &str) -> std::io::Result<()> {
    let path = error_log_path(root);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    if fs::metadata(&path).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
        fs::rename(&path, path.with_extension("log.1"))?;
    }
    let event = if event.is_empty() { "?" } else { event };
    // One line per failure, whatever the message holds.
    let message: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let line = format!("{} {event}: {message}\n", at.format("%Y-%m-%dT%H:%M:%SZ"));
    let mut file = OpenOptions::new().create(true).append(true).open(&path)?;
    file.write_all(line.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at() -> Timestamp {
        chrono::Utc.with_ymd_and_hms(2025, 1, 31, 12, 0, 0).unwrap()
    }

    #[test]
    fn appends_one_line_per_failure() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), at(), "SessionStart", "first\nproblem");
        append(dir.path(), at(), "", "second");
        let text = fs::read_to_string(error_log_path(dir.path())).unwrap();
        assert_eq!(
            text,
            "2025-01-31T12:00:00Z SessionStart: first problem\n2025-01-31T12:00:00Z ?: second\n"
        );
    }

    #[test]
    fn rotates_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = error_log_path(dir.path());
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, vec![b'x'; MAX_LOG_BYTES as usize + 1]).unwrap();
        append(dir.path(), at(), "Stop", "fresh");
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "2025-01-31T12:00:00Z Stop: fresh\n"
        );
        assert_eq!(
            fs::metadata(path.with_extension("log.1")).unwrap().len(),
            MAX_LOG_BYTES + 1
        );
    }

    #[test]
    fn an_unwritable_location_is_swallowed() {
        let dir = tempfile::tempdir().unwrap();
        // `.claude` is a file, so the log directory cannot be created.
        fs::write(dir.path().join(".claude"), "").unwrap();
        append(dir.path(), at(), "Stop", "lost");
    }
}
