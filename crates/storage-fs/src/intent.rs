//! The write-ahead intent of a command that replaces more than one file of a wing (a plan's
//! `state.md` and `decisions.md`, …).
//!
//! Each file is replaced atomically, but a kill or power loss between two of them would leave
//! the first new and the second old: a plan in its new state without the decision that explains
//! it. So the command first makes its whole intent durable — every file it will write, with its
//! full new content — in a hidden `.cairn-journal` beside the files, then replaces the files,
//! then removes the intent. Whoever next opens the wing under its lock and finds an intent
//! replays it: the same full contents written again, so a replay after a replay, or after a
//! command that had in fact finished every file, changes nothing. The files agree again, all new.
//!
//! The project store needs none of this: its progress log is its write-ahead log
//! (`project_journal`). The wings have no log every command appends to, and their files are
//! small, so a whole-content intent is simpler than a diff and trivially idempotent.
//!
//! Failpoints (named after the wing, `AREA:journal-…`, see [`crate::failpoints`]): after the
//! intent is durable, after each file, and after all files with the intent still present.

use std::io::ErrorKind;
use std::path::{Component, Path};

use cairn_domain::StoreError;
use serde::{Deserialize, Serialize};

use crate::{atomic, failpoint, fsync_dir, io_error, parent_dir};

/// The intent file's name, in the directory its paths are relative to.
pub const INTENT_FILE: &str = ".cairn-journal";

const VERSION: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Intent {
    version: u32,
    writes: Vec<FileWrite>,
}

/// One file of an intent: its path relative to the intent's directory and its whole new text,
/// or no text when the file is to be removed (a merged task context, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileWrite {
    pub path: String,
    pub text: Option<String>,
}

impl FileWrite {
    pub fn new(path: &str, text: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            text: Some(text.into()),
        }
    }

    /// Removes `path`; removing a file that is already gone is done, so a replay is harmless.
    pub fn remove(path: &str) -> Self {
        Self {
            path: path.to_owned(),
            text: None,
        }
    }
}

/// The bytes of an intent file.
pub fn encode(writes: &[FileWrite]) -> Vec<u8> {
    let intent = Intent {
        version: VERSION,
        writes: writes.to_vec(),
    };
    let mut bytes = serde_json::to_vec(&intent).expect("an intent is always serializable");
    bytes.push(b'\n');
    bytes
}

/// Reads an intent file back. Refuses anything cairn would not have written: another version,
/// a path that is absolute or climbs out of the directory (a hand-edited intent must not write
/// outside the wing), an empty list.
pub fn parse(bytes: &[u8]) -> Result<Vec<FileWrite>, String> {
    let intent: Intent =
        serde_json::from_slice(bytes).map_err(|e| format!("not an intent record: {e}"))?;
    if intent.version != VERSION {
        return Err(format!(
            "version {} (this cairn writes {VERSION})",
            intent.version
        ));
    }
    if intent.writes.is_empty() {
        return Err("no file to write".to_owned());
    }
    for write in &intent.writes {
        let path = Path::new(&write.path);
        let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
        if write.path.is_empty() || !plain || write.path.contains('\\') {
            return Err(format!(
                "the path {:?} is not a plain relative path",
                write.path
            ));
        }
    }
    Ok(intent.writes)
}

/// Replaces every file of `writes` (paths relative to `dir`) so that a crash at any point leaves
/// them all old, or all new once [`replay`] has run. The caller holds the wing's lock. A single
/// file needs no intent and is simply replaced. A failure once the intent is durable is
/// [`StoreError::AfterCommit`]: the change stands, and the next open finishes it.
pub fn write_all(
    area: &str,
    temp_dir: &Path,
    dir: &Path,
    writes: &[FileWrite],
) -> Result<(), StoreError> {
    if let [
        only @ FileWrite {
            text: Some(text), ..
        },
    ] = writes
    {
        return atomic::write_atomic(temp_dir, &dir.join(&only.path), text.as_bytes());
    }
    let journal = dir.join(INTENT_FILE);
    atomic::write_atomic(temp_dir, &journal, &encode(writes))?;
    failpoint(&format!("{area}:journal-after-intent"));
    // From here on the change is committed: the next open replays whatever is not written yet.
    apply(area, temp_dir, dir, writes).map_err(StoreError::after_commit)?;
    failpoint(&format!("{area}:journal-after-files"));
    remove(&journal).map_err(StoreError::after_commit)
}

/// Finishes the intent a crashed command left in `dir`, if any; `Ok(false)` when there was none.
/// The caller holds the wing's lock. An intent that does not parse is reported as
/// [`StoreError::Corrupt`] and left in place: guessing which files it meant would be worse.
pub fn replay(area: &str, temp_dir: &Path, dir: &Path) -> Result<bool, StoreError> {
    let journal = dir.join(INTENT_FILE);
    let bytes = match std::fs::read(&journal) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io_error("read intent", &journal)(e)),
    };
    let writes = parse(&bytes).map_err(|detail| StoreError::Corrupt {
        path: journal.display().to_string(),
        detail: format!(
            "{detail}; it is the unfinished write of a crashed command: remove it to keep the files as they are"
        ),
    })?;
    apply(area, temp_dir, dir, &writes)?;
    remove(&journal)?;
    Ok(true)
}

/// Is an intent waiting in `dir`? One `stat`, for readers that take no lock unless they must.
pub fn pending(dir: &Path) -> bool {
    dir.join(INTENT_FILE).exists()
}

fn apply(area: &str, temp_dir: &Path, dir: &Path, writes: &[FileWrite]) -> Result<(), StoreError> {
    for (n, write) in writes.iter().enumerate() {
        let path = dir.join(&write.path);
        match &write.text {
            Some(text) => atomic::write_atomic(temp_dir, &path, text.as_bytes())?,
            None => remove(&path)?,
        }
        if n == 0 {
            failpoint(&format!("{area}:journal-after-first-file"));
        }
    }
    Ok(())
}

/// Removes `path` durably; a file already gone is removed. For the intent itself the removal
/// must be durable too, or a power cut could bring back an intent older than a later command's
/// writes, and its replay would undo them.
fn remove(path: &Path) -> Result<(), StoreError> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io_error("remove", path)(e)),
    }
    fsync_dir(parent_dir(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_intent_reads_back_and_refuses_paths_out_of_its_directory() {
        let writes = vec![
            FileWrite::new("state.md", "# Current State: PLAN\n"),
            FileWrite::new("sub/decisions.md", "é\n"),
        ];
        assert_eq!(parse(&encode(&writes)), Ok(writes));
        for path in ["../x", "/etc/passwd", "", "a/../../b", "./a", "a\\..\\b"] {
            let bytes = encode(&[FileWrite::new(path, "x")]);
            assert!(parse(&bytes).is_err(), "{path}");
        }
        assert!(parse(b"{\"version\":2,\"writes\":[{\"path\":\"a\",\"text\":\"\"}]}").is_err());
        assert!(parse(b"{\"version\":1,\"writes\":[]}").is_err());
    }

    #[test]
    fn a_replay_finishes_the_files_and_a_second_one_finds_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let temp = dir.path().join(".temp");
        std::fs::create_dir_all(&temp).expect("temp");
        std::fs::write(dir.path().join("a.md"), "new a\n").expect("a");
        std::fs::write(dir.path().join("b.md"), "old b\n").expect("b");
        let writes = [
            FileWrite::new("a.md", "new a\n"),
            FileWrite::new("b.md", "new b\n"),
        ];
        std::fs::write(dir.path().join(INTENT_FILE), encode(&writes)).expect("intent");
        assert!(pending(dir.path()));
        assert_eq!(replay("test", &temp, dir.path()).ok(), Some(true));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("b.md")).expect("b"),
            "new b\n"
        );
        assert!(!dir.path().join("c.md").exists());
        assert!(!pending(dir.path()));
        assert_eq!(replay("test", &temp, dir.path()).ok(), Some(false));
        std::fs::write(dir.path().join(INTENT_FILE), encode(&writes)).expect("intent again");
        assert_eq!(
            replay("test", &temp, dir.path()).ok(),
            Some(true),
            "idempotent"
        );
    }

    #[test]
    fn a_garbled_intent_is_reported_and_left_in_place() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(INTENT_FILE), "{\"version\":1,").expect("intent");
        let error = replay("test", dir.path(), dir.path()).expect_err("corrupt");
        assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
        assert!(pending(dir.path()));
    }
}
