//! Numbered snapshots: `checkpoints/checkpoint-NNN.json`.
//!
//! Names are zero-padded to at least three digits (`checkpoint-001.json` … `checkpoint-999.json`,
//! then `checkpoint-1000.json`), which keeps the original plugin's tools happy for the first 999.
//! cairn never relies on string order: [`list`] parses the number out of each name and sorts
//! numerically, ignoring any name that does not match `checkpoint-<digits>.json` (unpadded names
//! written by other tools are read too).
//!
//! [`create_next`] stages the snapshot like an atomic write (temp file, `fsync`) and then claims
//! the next number with `hard_link(temp, checkpoint-N.json)`, which fails if the name exists. Two
//! writers racing for N can therefore never both "win": the loser gets `AlreadyExists` and tries
//! N+1. A checkpoint appears under its final name whole, with its data already durable, and the
//! directory is fsynced before the number is reported. Numbers only grow: the next number is one
//! more than the highest present, so pruning old snapshots never causes a number to be reused
//! while newer ones exist.
//!
//! [`prune`] deletes the oldest snapshots beyond the newest `keep` (the project store keeps
//! [`DEFAULT_KEEP`] = 10).

use crate::atomic::{create_temp_file, discard, write_and_sync};
use crate::failpoints::failpoint;
use crate::{fsync_dir, io_error};
use cairn_domain::{Entity, StoreError};
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// How many snapshots the project store keeps.
pub const DEFAULT_KEEP: usize = 10;

/// How many taken numbers [`create_next`] skips before it suspects something other than a race
/// (names it cannot see as files, say) and gives up.
const MAX_CLAIM_ATTEMPTS: u64 = 1_000;

/// One snapshot on disk.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Checkpoint {
    pub number: u64,
    pub path: PathBuf,
}

/// The canonical file name of snapshot `number`: `checkpoint-007.json`, `checkpoint-1000.json`.
pub fn file_name(number: u64) -> String {
    format!("checkpoint-{number:03}.json")
}

/// The number in a snapshot file name, or `None` for any other name.
pub fn parse_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("checkpoint-")?.strip_suffix(".json")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The snapshots in `dir`, oldest (lowest number) first. A missing directory has none.
///
/// Errors: [`StoreError::Io`] if the directory cannot be listed.
pub fn list(dir: &Path) -> Result<Vec<Checkpoint>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(StoreError::Io {
                op: "list checkpoints",
                path: dir.display().to_string(),
                source,
            });
        }
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_error("list checkpoints", dir))?;
        let Some(number) = entry.file_name().to_str().and_then(parse_file_name) else {
            continue;
        };
        // A name that vanished since the listing (a concurrent prune) is simply not there.
        if entry.file_type().is_ok_and(|kind| kind.is_file()) {
            found.push(Checkpoint {
                number,
                path: entry.path(),
            });
        }
    }
    found.sort();
    Ok(found)
}

/// Writes `bytes` as the next snapshot in `dir`, staging it in `temp_dir` (same filesystem).
///
/// Creates `dir` if missing. Returns the number and path claimed.
///
/// Errors: [`StoreError::Io`] naming the failed step (`create temp file`, `fsync temp file`,
/// `link checkpoint into place`, `fsync directory`, …).
pub fn create_next(temp_dir: &Path, dir: &Path, bytes: &[u8]) -> Result<Checkpoint, StoreError> {
    create_dir(dir)?;
    let (temp_path, file) = create_temp_file(temp_dir)?;
    if let Err(error) = write_and_sync(&temp_path, file, &[bytes], None) {
        discard(&temp_path);
        return Err(error);
    }
    let claimed = claim_next_number(&temp_path, dir);
    discard(&temp_path);
    let claimed = claimed?;
    fsync_dir(dir)?;
    Ok(claimed)
}

/// Makes the file at `file` the next snapshot by a second name, not a copy of its bytes — for a
/// file that is about to be replaced by a rename, so the snapshot keeps the only copy of what it
/// held. `same(path)` judges the file now linked (it may have been replaced since its caller
/// looked at it): when it says no, the name is taken back and `None` returned, for the caller to
/// copy instead. The file must be durable already; the new name is made durable here.
///
/// Errors: as [`create_next`].
pub fn link_next(
    file: &Path,
    dir: &Path,
    same: impl FnOnce(&Path) -> bool,
) -> Result<Option<Checkpoint>, StoreError> {
    create_dir(dir)?;
    let claimed = claim_next_number(file, dir)?;
    if !same(&claimed.path) {
        fs::remove_file(&claimed.path).map_err(io_error("remove", &claimed.path))?;
        return Ok(None);
    }
    fsync_dir(dir)?;
    Ok(Some(claimed))
}

/// Creates `dir` when it is missing, durably: a new directory's entry survives a power cut only
/// once its parent is synced (a clone from git has no empty `checkpoints/`, and the log may name
/// the first checkpoint made in it).
fn create_dir(dir: &Path) -> Result<(), StoreError> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::create_dir_all(dir).map_err(io_error("create checkpoint directory", dir))?;
    fsync_dir(crate::parent_dir(dir))
}

fn claim_next_number(temp_path: &Path, dir: &Path) -> Result<Checkpoint, StoreError> {
    let first = list(dir)?.last().map_or(1, |newest| newest.number + 1);
    for number in first..first + MAX_CLAIM_ATTEMPTS {
        let path = dir.join(file_name(number));
        match fs::hard_link(temp_path, &path) {
            Ok(()) => {
                failpoint("checkpoint:after-link");
                return Ok(Checkpoint { number, path });
            }
            Err(error) if error.kind() == ErrorKind::AlreadyExists => continue,
            Err(source) => {
                return Err(StoreError::Io {
                    op: "link checkpoint into place",
                    path: path.display().to_string(),
                    source,
                });
            }
        }
    }
    Err(StoreError::Io {
        op: "claim a checkpoint number",
        path: dir.display().to_string(),
        source: std::io::Error::other(format!(
            "checkpoint numbers {first} to {} are all taken",
            first + MAX_CLAIM_ATTEMPTS - 1
        )),
    })
}

/// Deletes the oldest snapshots so that at most `keep` remain; returns the paths removed.
///
/// A snapshot already deleted by someone else is not an error.
///
/// Errors: [`StoreError::Io`] if the directory cannot be listed or a file cannot be removed.
pub fn prune(dir: &Path, keep: usize) -> Result<Vec<PathBuf>, StoreError> {
    let all = list(dir)?;
    let excess = all.len().saturating_sub(keep);
    let mut removed = Vec::with_capacity(excess);
    for checkpoint in all.into_iter().take(excess) {
        match fs::remove_file(&checkpoint.path) {
            Ok(()) => removed.push(checkpoint.path),
            Err(error) if error.kind() == ErrorKind::NotFound => {}
            Err(source) => {
                return Err(StoreError::Io {
                    op: "remove old checkpoint",
                    path: checkpoint.path.display().to_string(),
                    source,
                });
            }
        }
    }
    if !removed.is_empty() {
        fsync_dir(dir)?;
    }
    Ok(removed)
}

/// The bytes of snapshot `number` in `dir`, whatever its padding.
///
/// Errors: [`StoreError::NotFound`] (`what` = `"checkpoint"`, `id` = the number) if there is no
/// such snapshot; [`StoreError::Io`] if it cannot be read.
pub fn read(dir: &Path, number: u64) -> Result<Vec<u8>, StoreError> {
    let canonical = dir.join(file_name(number));
    let path = if canonical.is_file() {
        canonical
    } else {
        list(dir)?
            .into_iter()
            .find(|checkpoint| checkpoint.number == number)
            .map(|checkpoint| checkpoint.path)
            .ok_or_else(|| StoreError::NotFound {
                entity: Entity::Checkpoint,
                id: number.to_string(),
            })?
    };
    fs::read(&path).map_err(|source| match source.kind() {
        ErrorKind::NotFound => StoreError::NotFound {
            entity: Entity::Checkpoint,
            id: number.to_string(),
        },
        _ => StoreError::Io {
            op: "read checkpoint",
            path: path.display().to_string(),
            source,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    struct Dirs {
        _root: tempfile::TempDir,
        temp: PathBuf,
        checkpoints: PathBuf,
    }

    fn dirs() -> Dirs {
        let root = tempfile::tempdir().unwrap();
        Dirs {
            temp: root.path().join("temp"),
            checkpoints: root.path().join("checkpoints"),
            _root: root,
        }
    }

    fn numbers(dir: &Path) -> Vec<u64> {
        list(dir).unwrap().iter().map(|c| c.number).collect()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn file_names_are_padded_to_at_least_three_digits() {
        assert_eq!(file_name(1), "checkpoint-001.json");
        assert_eq!(file_name(42), "checkpoint-042.json");
        assert_eq!(file_name(999), "checkpoint-999.json");
        assert_eq!(file_name(1000), "checkpoint-1000.json");
        for n in [1, 42, 999, 1000, 123_456] {
            assert_eq!(parse_file_name(&file_name(n)), Some(n));
        }
    }

    #[test]
    fn only_checkpoint_names_parse() {
        assert_eq!(parse_file_name("checkpoint-7.json"), Some(7));
        for name in [
            "checkpoint-.json",
            "checkpoint-01a.json",
            "checkpoint-001.json.bak",
            "checkpoint--1.json",
            "x-001.json",
        ] {
            assert_eq!(parse_file_name(name), None, "{name}");
        }
    }

    #[test]
    fn numbers_start_at_one_and_increase() {
        let d = dirs();
        for expected in 1..=3 {
            let checkpoint = create_next(
                &d.temp,
                &d.checkpoints,
                format!("snapshot {expected}").as_bytes(),
            )
            .unwrap();
            assert_eq!(checkpoint.number, expected);
            assert_eq!(checkpoint.path, d.checkpoints.join(file_name(expected)));
        }
        assert_eq!(read(&d.checkpoints, 2).unwrap(), b"snapshot 2");
        assert_eq!(
            names(&d.checkpoints),
            [
                "checkpoint-001.json",
                "checkpoint-002.json",
                "checkpoint-003.json"
            ]
        );
        assert!(names(&d.temp).is_empty(), "the staging file is removed");
    }

    #[test]
    fn listing_sorts_by_number_not_by_name_and_ignores_strangers() {
        let d = dirs();
        fs::create_dir_all(&d.checkpoints).unwrap();
        for name in [
            "checkpoint-1000.json",
            "checkpoint-999.json",
            "checkpoint-2.json",
            "notes.txt",
            ".write-x",
        ] {
            fs::write(d.checkpoints.join(name), name).unwrap();
        }
        assert_eq!(numbers(&d.checkpoints), [2, 999, 1000]);

        let next = create_next(&d.temp, &d.checkpoints, b"next").unwrap();
        assert_eq!(next.number, 1001);
        assert_eq!(next.path.file_name().unwrap(), "checkpoint-1001.json");
        assert_eq!(
            read(&d.checkpoints, 2).unwrap(),
            b"checkpoint-2.json",
            "unpadded names are read too"
        );
    }

    #[test]
    fn past_999_the_name_grows_a_digit() {
        let d = dirs();
        fs::create_dir_all(&d.checkpoints).unwrap();
        fs::write(d.checkpoints.join("checkpoint-999.json"), b"{}").unwrap();
        let next = create_next(&d.temp, &d.checkpoints, b"{}").unwrap();
        assert_eq!(next.path, d.checkpoints.join("checkpoint-1000.json"));
        assert_eq!(numbers(&d.checkpoints), [999, 1000]);
    }

    #[test]
    fn a_taken_number_is_skipped_never_overwritten() {
        let d = dirs();
        create_next(&d.temp, &d.checkpoints, b"one").unwrap();
        // A name `list` cannot see as a snapshot but which still occupies number 2 — the same
        // situation as a concurrent writer claiming 2 between our listing and our link.
        fs::create_dir(d.checkpoints.join("checkpoint-002.json")).unwrap();

        let claimed = create_next(&d.temp, &d.checkpoints, b"two").unwrap();

        assert_eq!(claimed.number, 3);
        assert_eq!(read(&d.checkpoints, 3).unwrap(), b"two");
        assert!(d.checkpoints.join("checkpoint-002.json").is_dir());
    }

    #[test]
    fn concurrent_writers_never_share_a_number() {
        let d = dirs();
        let (threads, each) = (4, 10);
        let claimed: Vec<Checkpoint> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let d = &d;
                    scope.spawn(move || {
                        (0..each)
                            .map(|i| {
                                create_next(&d.temp, &d.checkpoints, format!("{t}/{i}").as_bytes())
                                    .unwrap()
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });

        let numbers_claimed: BTreeSet<u64> = claimed.iter().map(|c| c.number).collect();
        assert_eq!(
            numbers_claimed,
            (1..=threads * each).collect(),
            "every number claimed exactly once"
        );
        let contents: BTreeSet<Vec<u8>> = claimed
            .iter()
            .map(|c| read(&d.checkpoints, c.number).unwrap())
            .collect();
        assert_eq!(
            contents.len(),
            (threads * each) as usize,
            "no snapshot overwrote another"
        );
    }

    #[test]
    fn prune_keeps_the_newest() {
        let d = dirs();
        for i in 1..=13 {
            create_next(&d.temp, &d.checkpoints, format!("{i}").as_bytes()).unwrap();
        }
        let removed = prune(&d.checkpoints, DEFAULT_KEEP).unwrap();
        assert_eq!(
            removed,
            (1..=3)
                .map(|n| d.checkpoints.join(file_name(n)))
                .collect::<Vec<_>>()
        );
        assert_eq!(numbers(&d.checkpoints), (4..=13).collect::<Vec<_>>());
        assert!(prune(&d.checkpoints, DEFAULT_KEEP).unwrap().is_empty());

        // Numbering continues after the newest, not into the pruned range.
        assert_eq!(
            create_next(&d.temp, &d.checkpoints, b"14").unwrap().number,
            14
        );
    }

    #[test]
    fn prune_orders_numerically_across_the_999_boundary() {
        let d = dirs();
        fs::create_dir_all(&d.checkpoints).unwrap();
        for n in 995..=1005 {
            fs::write(d.checkpoints.join(file_name(n)), b"{}").unwrap();
        }
        prune(&d.checkpoints, 10).unwrap();
        assert_eq!(numbers(&d.checkpoints), (996..=1005).collect::<Vec<_>>());
    }

    #[test]
    fn missing_directory_and_missing_snapshot() {
        let d = dirs();
        assert!(list(&d.checkpoints).unwrap().is_empty());
        assert!(prune(&d.checkpoints, 10).unwrap().is_empty());
        match read(&d.checkpoints, 4).unwrap_err() {
            StoreError::NotFound { entity, id } => {
                assert_eq!((entity, id.as_str()), (Entity::Checkpoint, "4"))
            }
            other => panic!("expected NotFound, got {other:?}"),
        }
    }
}
