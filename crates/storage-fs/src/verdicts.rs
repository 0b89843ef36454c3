//! Full validations remembered by the bytes they judged: `.checkpoints.validated` beside
//! tasks.json lists a checksum of each tasks document (tasks.json, a checkpoint) that passed one.
//!
//! `cairn doctor --full` validates tasks.json and every checkpoint in full. A checkpoint never
//! changes once written, yet at 100,000 tasks each is 48 MB and validating it took 0.3–0.5 s:
//! with the ten checkpoints cairn keeps, seconds per run, to say again what the last run said.
//! A verdict depends only on the bytes and on the rules they are judged by (the embedded schemas
//! and cairn's reading of a task), so the same bytes under the same rules pass again: every byte
//! is still read and summed on each run — damage to a file changes its sum and it is validated
//! again — and only bytes that passed before skip the validation. `checkpoint write` adds the
//! checkpoint it copies from the tasks.json cairn validated and wrote, so even a first full check
//! after it does not validate that one.
//!
//! The checksum is `task_cache`'s 64-bit one, salted with the rules, beside the length: it guards
//! against damage, not an adversary (whoever can write the store can write tasks.json). Losing or
//! garbling the file costs only time. The list keeps the documents of the last run, so it does
//! not grow with the checkpoints pruned.

use std::path::{Path, PathBuf};

use rustc_hash::FxHashSet;

use crate::layout::ProjectLayout;
use crate::schema::SchemaKind;
use crate::{atomic, task_cache};

/// The file, in the project's directory.
pub(crate) const FILE: &str = ".checkpoints.validated";

/// A document's bytes, summed with the rules they were judged by, and their length.
type Key = (u64, u64);

/// The documents known to have passed, and the ones that passed in this run.
pub(crate) struct Verdicts {
    path: PathBuf,
    temp_dir: PathBuf,
    known: FxHashSet<Key>,
    passed: FxHashSet<Key>,
}

impl Verdicts {
    pub(crate) fn read(layout: &ProjectLayout) -> Self {
        let path = layout.dir().join(FILE);
        let known = std::fs::read_to_string(&path)
            .map(|text| text.lines().filter_map(parse).collect())
            .unwrap_or_default();
        Self {
            path,
            temp_dir: layout.temp_dir(),
            known,
            passed: FxHashSet::default(),
        }
    }

    /// `validate(bytes)`'s verdict (a problem, or `None`), not asked for bytes that passed before.
    pub(crate) fn judge(
        &mut self,
        bytes: &[u8],
        validate: impl FnOnce(&[u8]) -> Option<String>,
    ) -> Option<String> {
        let key = key(bytes);
        let problem = if self.known.contains(&key) {
            None
        } else {
            validate(bytes)
        };
        if problem.is_none() {
            self.passed.insert(key);
        }
        problem
    }

    /// [`Self::judge`] of the file at `path`, mapped where the kernel grants a read lease
    /// (`cairn_lease::Contents`): summed and validated where its bytes lie, no copy and no fresh
    /// memory (at 100,000 tasks each checkpoint is 48 MB; after a few writes `doctor --full` read
    /// 150 MB into fresh pages). Otherwise summed as it is read: bytes that passed before are
    /// never held in memory whole; others are read again, whole, to be validated. The error says
    /// what could not be read.
    pub(crate) fn judge_file(
        &mut self,
        path: &Path,
        validate: impl FnOnce(&[u8]) -> Option<String>,
    ) -> Option<String> {
        if let Ok(Some(mapped)) = cairn_lease::Contents::mapped(path) {
            return self.judge(&mapped, validate);
        }
        let summed = std::fs::File::open(path).and_then(|file| {
            let len = file.metadata()?.len();
            Ok((task_cache::checksum_read(rules(), len, file)?, len))
        });
        match summed {
            Ok(key) if self.known.contains(&key) => {
                self.passed.insert(key);
                None
            }
            _ => match std::fs::read(path) {
                Err(e) => Some(format!("cannot read it: {e}")),
                Ok(bytes) => self.judge(&bytes, validate),
            },
        }
    }

    /// Whether these very bytes passed a full validation before.
    pub(crate) fn passed_before(&self, bytes: &[u8]) -> bool {
        // Summing is the cost: with no verdict kept, nothing to sum the bytes for.
        !self.known.is_empty() && self.known.contains(&key(bytes))
    }

    /// Adds bytes known to be valid without a validation here — a checkpoint copied from the
    /// tasks.json cairn validated and wrote — so the next full check does not validate them.
    /// The list is cut back to these bytes alone once it holds far more documents than a project
    /// keeps (the next full check keeps only what it finds).
    pub(crate) fn remember(layout: &ProjectLayout, bytes: &[u8]) {
        let mut verdicts = Self::read(layout);
        if verdicts.known.len() >= 64 {
            verdicts.known.clear();
        }
        if verdicts.known.insert(key(bytes)) {
            verdicts.write(&verdicts.known);
        }
    }

    /// Keeps the documents that passed in this run, when they are not what the file says.
    pub(crate) fn save(self) {
        if self.passed != self.known {
            self.write(&self.passed);
        }
    }

    fn write(&self, keys: &FxHashSet<Key>) {
        let mut keys: Vec<&Key> = keys.iter().collect();
        keys.sort_unstable();
        let text: String = keys
            .iter()
            .map(|(sum, len)| format!("{sum:016x} {len}\n"))
            .collect();
        // Only time is lost if this fails, or a power cut tears it: it is not synced, and neither
        // is the project's directory — whose sync would also make durable another tool's rename
        // of tasks.json (a `git pull`) before that tool's bytes are (see
        // `project_store::sync_written_elsewhere`), from a reader (`doctor --full`).
        let _ = atomic::write_unsynced(&self.temp_dir, &self.path, text.as_bytes());
    }
}

fn parse(line: &str) -> Option<Key> {
    let (sum, len) = line.split_once(' ')?;
    Some((u64::from_str_radix(sum, 16).ok()?, len.parse().ok()?))
}

fn key(bytes: &[u8]) -> Key {
    (task_cache::checksum(rules(), bytes), bytes.len() as u64)
}

/// What a verdict depends on besides the bytes: the schemas a tasks document is judged by, and
/// the version of cairn that reads its tasks.
fn rules() -> &'static str {
    static RULES: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    RULES.get_or_init(|| {
        let schemas = [SchemaKind::Tasks, SchemaKind::Task, SchemaKind::Checkpoint];
        let mut rules = format!("cairn {}\n", env!("CARGO_PKG_VERSION"));
        for kind in schemas {
            rules.push_str(kind.source());
        }
        rules
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_passed_are_not_validated_again_and_any_change_is() {
        let dir = tempfile::tempdir().expect("tempdir");
        let layout = ProjectLayout::new(dir.path(), "demo").expect("layout");
        std::fs::create_dir_all(layout.temp_dir()).expect("dirs");
        let asked = std::cell::Cell::new(0);
        let pass = |_: &[u8]| {
            asked.set(asked.get() + 1);
            None
        };
        let mut first = Verdicts::read(&layout);
        assert_eq!(first.judge(b"a document", pass), None);
        assert_eq!(
            first.judge(b"bad", |_| Some("fails".into())),
            Some("fails".into())
        );
        first.save();
        assert_eq!(asked.get(), 1);

        let mut second = Verdicts::read(&layout);
        assert_eq!(second.judge(b"a document", pass), None);
        assert_eq!(asked.get(), 1, "passed before: not asked again");
        assert_eq!(second.judge(b"a documenT", pass), None);
        assert_eq!(asked.get(), 2, "one byte changed: asked");
        assert_eq!(
            second.judge(b"bad", |_| Some("still fails".into())),
            Some("still fails".into()),
            "a failure is never remembered"
        );
        second.save();

        // A garbled file only costs time; the last run's documents are what is kept.
        let file = layout.dir().join(FILE);
        let kept = std::fs::read_to_string(&file).expect("saved");
        assert_eq!(kept.lines().count(), 2, "{kept}");
        std::fs::write(&file, "not\na list\n").expect("garble");
        let mut third = Verdicts::read(&layout);
        assert_eq!(third.judge(b"a document", pass), None);
        assert_eq!(asked.get(), 3);

        // Bytes remembered as written are not validated by the next check.
        Verdicts::remember(&layout, b"a checkpoint");
        let mut fourth = Verdicts::read(&layout);
        assert_eq!(fourth.judge(b"a checkpoint", pass), None);
        assert_eq!(asked.get(), 3);
    }
}
