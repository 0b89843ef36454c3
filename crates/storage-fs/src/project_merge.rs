//! The text side of `cairn merge-driver` (issue #15): a git merge of a project's `tasks.json`,
//! `project.json` and `progress/log.md`.
//!
//! The merge itself is the domain's ([`cairn_domain::project::merge`]); this module parses the
//! three versions git hands over and renders the result through the store's own serializers
//! (`project_store::validated_unchanged`, `project_store::to_json_bytes`), so a merged file is laid
//! out exactly as cairn writes it.
//!
//! **Conflicts.** The merged document keeps ours' value for each conflicting field; the same merge
//! resolved to theirs' side is rendered too, and the two renderings are diffed line by line: the
//! lines that differ — only the conflicting fields, the rest is merged — are written between
//! git-style markers (`<<<<<<< ours`, `=======`, `>>>>>>> theirs`). Deleting one side and the
//! markers leaves valid JSON. Such a file is not valid JSON until then, which is what keeps it from
//! being taken for a resolved one.
//!
//! **Replay markers.** Each side's files carry the `log_seq` of its own last commit; after a merge
//! neither number describes the file. The merged file is written without one, which tells the
//! store it was written by another tool: its content is not rolled forward from the log.
//!
//! **The log** merges as a union: ours' text as it is, with theirs' entries that neither the
//! ancestor nor ours holds inserted in time order (an entry identical to one already there is not
//! repeated). Both sides' replay entries are kept; their commit numbers overlap, so a replay that
//! would cross the merge finds the gap and refuses, rather than mixing two histories.

use std::collections::HashSet;
use std::path::Path;

use cairn_domain::project::merge::{self, Conflict, Renumbered, Side};
use cairn_domain::project::policy::{self, Velocity};
use cairn_domain::project::report::Finding;
use cairn_domain::project::{Project, TaskDoc};
use cairn_domain::time::Timestamp;
use cairn_domain::{DomainError, StoreError};
use serde_json::Value;

use crate::checkpoints;
use crate::layout::{self, ProjectLayout};
use crate::progress_log;
use crate::project_journal as journal;
use crate::project_store::{to_json_bytes, validated_sides, validated_unchanged};
use crate::schema::{self, SchemaKind};
use crate::task_cache;

/// One of the versions git hands the merge driver, as its bytes: mapped under a read lease where
/// the kernel grants one, else read (see `cairn_lease`).
pub use cairn_lease::Contents as Version;

/// The files of a project store that merge by meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeFile {
    Tasks,
    Project,
    Log,
    /// `progress/velocity.json`: both sides' completions (see [`policy::merged_velocity`]).
    Velocity,
    /// `checkpoints/checkpoint-NNN.json`: two clones number their snapshots alike, so both
    /// making the next one is an add/add that is no conflict: ours is kept. A snapshot is never
    /// edited. No rebuild continues a checkpoint with the other branch's commits: a change that
    /// starts from one checks its sum, and a checkpoint whose commit number (or a later one) the
    /// merged log holds twice is no base for a replay (`project_store::replay`).
    Checkpoint,
}

/// A merged file and what the merge found.
#[derive(Debug, Clone, PartialEq)]
pub struct FileMerge {
    pub file: MergeFile,
    /// The merged text, in pieces to be written one after the other (a large list is rendered in
    /// parts, which are not joined into one copy); with conflicts, it holds conflict markers.
    pub pieces: Vec<Vec<u8>>,
    pub conflicts: Vec<Conflict>,
    pub renumbered: Vec<Renumbered>,
    /// What the rules find wrong with the merged tasks that neither side had.
    pub findings: Vec<Finding>,
}

impl FileMerge {
    /// Nothing for a person to look at.
    pub fn is_clean(&self) -> bool {
        self.conflicts.is_empty() && self.findings.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(
        "`{0}` is not a file cairn merges: it merges .claude/projects/<id>/tasks.json, project.json, progress/log.md, progress/velocity.json and checkpoints/checkpoint-NNN.json"
    )]
    NotAStoreFile(String),
    #[error("{side}'s version of {path} is not readable: {detail}")]
    Unreadable {
        side: &'static str,
        path: String,
        detail: String,
    },
    #[error(transparent)]
    Domain(#[from] DomainError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Which store file `path` (relative to the repository root, as git names it) is, and its
/// project's layout.
pub fn store_file(path: &Path) -> Result<(MergeFile, ProjectLayout), MergeError> {
    let refuse = || MergeError::NotAStoreFile(path.display().to_string());
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(refuse)?;
    let (file, project_dir) = match name {
        layout::TASKS_JSON => (MergeFile::Tasks, path.parent()),
        layout::PROJECT_JSON => (MergeFile::Project, path.parent()),
        layout::LOG_MD => (MergeFile::Log, within(path, layout::PROGRESS_DIR)),
        layout::VELOCITY_JSON => (MergeFile::Velocity, within(path, layout::PROGRESS_DIR)),
        _ if checkpoints::parse_file_name(name).is_some() => {
            (MergeFile::Checkpoint, within(path, layout::CHECKPOINTS_DIR))
        }
        _ => return Err(refuse()),
    };
    let project_dir = project_dir.ok_or_else(refuse)?;
    let id = project_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(refuse)?;
    let store = project_dir.parent().ok_or_else(refuse)?;
    let root = store
        .parent()
        .and_then(Path::parent)
        .filter(|_| store.ends_with(layout::STORE_DIR.iter().collect::<std::path::PathBuf>()))
        .ok_or_else(refuse)?;
    let layout = ProjectLayout::new(root, id).map_err(|_| refuse())?;
    Ok((file, layout))
}

/// The project directory of a file in its subdirectory `dir`.
fn within<'p>(path: &'p Path, dir: &str) -> Option<&'p Path> {
    path.parent()
        .filter(|p| p.file_name().is_some_and(|n| n == dir))
        .and_then(Path::parent)
}

/// Merges the three versions of the store file at `path`. `base` is empty when both sides
/// created the file. The driver hands them over as [`Version`]s: mapped, not read into fresh
/// memory (at 100,000 tasks, 144 MB per merge).
pub fn merge_file(
    path: &Path,
    base: &[u8],
    ours: &[u8],
    theirs: &[u8],
) -> Result<FileMerge, MergeError> {
    let (file, layout) = store_file(path)?;
    let shown = path.display().to_string();
    let mut merged = FileMerge {
        file,
        pieces: Vec::new(),
        conflicts: Vec::new(),
        renumbered: Vec::new(),
        findings: Vec::new(),
    };
    match file {
        MergeFile::Tasks => {
            // The project's read cache, when the driver runs in its repository: ours is most
            // often the very list it holds (see `project_store::Prior`).
            let cached = task_cache::read_any(&task_cache::path(layout.dir()));
            let read = read_tasks([ours, theirs, base], &shown, cached.as_ref());
            drop(cached);
            let (ours, theirs, base) = read?;
            let (ours, theirs) = (
                required(ours, "ours", &shown)?,
                required(theirs, "theirs", &shown)?,
            );
            let result = merge::merge_tasks(base.as_ref(), ours, &theirs)?;
            drop((base, theirs));
            let target = layout.tasks_json();
            // Ours' tasks passed their schema as they were read: a merged task that is ours' as
            // it was is not validated again (see `validate_changed`).
            merged.pieces = with_markers(
                validated_unchanged(&result.doc, &result.ours_as_is, &target)?,
                result
                    .theirs_doc
                    .as_ref()
                    .map(|doc| validated_unchanged(doc, &result.theirs_doc_ours_as_is, &target))
                    .transpose()?,
            );
            merged.conflicts = result.conflicts;
            merged.renumbered = result.renumbered;
            merged.findings = result.findings;
        }
        MergeFile::Project => {
            let read = |side, bytes: &[u8]| read_project(side, &shown, bytes);
            let base = read("the ancestor", base)?;
            let (ours, theirs) = (
                required(read("ours", ours)?, "ours", &shown)?,
                required(read("theirs", theirs)?, "theirs", &shown)?,
            );
            let result = merge::merge_project(base.as_ref(), &ours, &theirs)?;
            let target = layout.project_json();
            let render = |p: &Project| to_json_bytes(p, SchemaKind::Project, &target);
            merged.pieces = with_markers(
                vec![render(&result.project)?],
                (result.theirs_project.as_ref())
                    .map(|p| render(p).map(|bytes| vec![bytes]))
                    .transpose()?,
            );
            merged.conflicts = result.conflicts;
        }
        MergeFile::Log => {
            let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
            merged.pieces = vec![merge_log(&text(base), &text(ours), &text(theirs)).into_bytes()];
        }
        MergeFile::Velocity => {
            let read = |side, bytes: &[u8]| {
                read_document::<Velocity>(SchemaKind::Velocity, side, &shown, bytes)
            };
            let base = read("the ancestor", base)?;
            let (ours, theirs) = (
                required(read("ours", ours)?, "ours", &shown)?,
                required(read("theirs", theirs)?, "theirs", &shown)?,
            );
            let velocity = policy::merged_velocity(base.as_ref(), &ours, &theirs);
            merged.pieces = vec![to_json_bytes(
                &velocity,
                SchemaKind::Velocity,
                &layout.velocity_json(),
            )?];
        }
        MergeFile::Checkpoint => {
            // One side unchanged since the ancestor: the other's (a prune is a deletion, which
            // git settles itself).
            let taken = if !absent(base) && ours == base {
                theirs
            } else {
                ours
            };
            merged.pieces = vec![taken.to_vec()];
        }
    }
    Ok(merged)
}

fn required<T>(doc: Option<T>, side: &'static str, path: &str) -> Result<T, MergeError> {
    doc.ok_or_else(|| MergeError::Unreadable {
        side,
        path: path.to_owned(),
        detail: "the file is empty".to_owned(),
    })
}

/// Whether git handed over no version of the file (both sides created it: no ancestor).
fn absent(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// Ours, theirs and the ancestor's tasks.json as read (`None`: absent).
type Versions = (Option<TaskDoc>, Option<Side>, Option<Side>);

/// Parses and validates each version of tasks.json — ours, theirs, the ancestor — (task by task on
/// every core, as a read of a file another tool wrote; a task an earlier version holds or
/// `cached` holds read once, and theirs' and the ancestor's tasks that are ours' named, not
/// copied: see `validated_sides`), without its replay marker; `None` for an absent one.
fn read_tasks(
    [ours, theirs, base]: [&[u8]; 3],
    path: &str,
    cached: Option<&task_cache::Encoded>,
) -> Result<Versions, MergeError> {
    fn present(bytes: &[u8]) -> Option<&[u8]> {
        (!absent(bytes)).then_some(bytes)
    }
    let (ours, sides) = validated_sides(present(ours), &[present(theirs), present(base)], cached);
    let unreadable = |side: &'static str| {
        move |detail: String| MergeError::Unreadable {
            side,
            path: path.to_owned(),
            detail,
        }
    };
    let ours = ours
        .transpose()
        .map_err(unreadable("ours"))?
        .map(|mut doc| {
            journal::take_marker(&mut doc.extra);
            doc
        });
    let mut sides = sides.into_iter();
    let mut side = |name: &'static str| {
        sides
            .next()
            .flatten()
            .transpose()
            .map_err(unreadable(name))
            .map(|side| {
                side.map(|mut side| {
                    journal::take_marker(&mut side.top.extra);
                    side
                })
            })
    };
    let theirs = side("theirs")?;
    let base = side("the ancestor")?;
    Ok((ours, theirs, base))
}

/// Parses and validates one side's project.json, without its replay marker; `None` when absent.
fn read_project(
    side: &'static str,
    path: &str,
    bytes: &[u8],
) -> Result<Option<Project>, MergeError> {
    Ok(
        read_document(SchemaKind::Project, side, path, bytes)?.map(|mut project: Project| {
            journal::take_marker(&mut project.extra);
            project
        }),
    )
}

/// Parses one side's document of `kind` and checks it against its schema; `None` when absent.
fn read_document<T: serde::de::DeserializeOwned>(
    kind: SchemaKind,
    side: &'static str,
    path: &str,
    bytes: &[u8],
) -> Result<Option<T>, MergeError> {
    if absent(bytes) {
        return Ok(None);
    }
    let unreadable = |detail: String| MergeError::Unreadable {
        side,
        path: path.to_owned(),
        detail,
    };
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| unreadable(format!("not valid JSON: {e}")))?;
    schema::validate(kind, &value)
        .map_err(|errors| unreadable(format!("fails its schema: {}", errors.join("; "))))?;
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| unreadable(e.to_string()))
}

/// The first line (from 1) of `bytes` that a merge's conflict left: one starting with git's
/// `<<<<<<<`, `|||||||` or `>>>>>>>`, or a `=======` line, as git (any `conflict-marker-size` of
/// 7 or more) and [`with_markers`] write them — a stray one left from a conflict half resolved
/// too. No JSON document holds such a line (a line break cannot be inside a string, and none of
/// them begins a value), so it is a merge to finish, never damage to repair.
pub(crate) fn unresolved_merge(bytes: &[u8]) -> Option<usize> {
    bytes
        .split(|&b| b == b'\n')
        .position(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            line.starts_with(b"<<<<<<<")
                || line.starts_with(b"|||||||")
                || line.starts_with(b">>>>>>>")
                || (line.starts_with(b"=======") && line.iter().all(|&b| b == b'='))
        })
        .map(|i| i + 1)
}

/// `ours` as it is when there is no other side; else the lines where it differs from `theirs`
/// between conflict markers.
fn with_markers(ours: Vec<Vec<u8>>, theirs: Option<Vec<Vec<u8>>>) -> Vec<Vec<u8>> {
    let Some(theirs) = theirs else {
        return ours;
    };
    let (ours, theirs) = (ours.concat(), theirs.concat());
    let (ours, theirs) = (
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs),
    );
    let diff = similar::TextDiff::from_lines(ours.as_ref(), theirs.as_ref());
    let mut out = String::new();
    let (mut mine, mut yours) = (String::new(), String::new());
    let flush = |out: &mut String, mine: &mut String, yours: &mut String| {
        if !mine.is_empty() || !yours.is_empty() {
            out.push_str("<<<<<<< ours\n");
            out.push_str(mine);
            out.push_str("=======\n");
            out.push_str(yours);
            out.push_str(">>>>>>> theirs\n");
            mine.clear();
            yours.clear();
        }
    };
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Equal => {
                flush(&mut out, &mut mine, &mut yours);
                out.push_str(change.value());
            }
            similar::ChangeTag::Delete => mine.push_str(change.value()),
            similar::ChangeTag::Insert => yours.push_str(change.value()),
        }
    }
    flush(&mut out, &mut mine, &mut yours);
    vec![out.into_bytes()]
}

/// The log's text before its first entry, and its blocks (a heading up to the next one), as
/// [`progress_log::parse`] splits them.
fn blocks(text: &str) -> (&str, Vec<&str>) {
    let mut starts: Vec<usize> = text.match_indices("\n## ").map(|(at, _)| at + 1).collect();
    if text.starts_with("## ") {
        starts.insert(0, 0);
    }
    let preamble = &text[..starts.first().copied().unwrap_or(text.len())];
    let blocks = starts
        .iter()
        .enumerate()
        .map(|(i, &start)| &text[start..starts.get(i + 1).copied().unwrap_or(text.len())])
        .collect();
    (preamble, blocks)
}

/// Each block with its entry's time; a block that does not parse goes with the one before it.
fn timed(blocks: Vec<&str>) -> Vec<(Option<Timestamp>, &str)> {
    let mut last = None;
    blocks
        .into_iter()
        .map(|block| {
            if let Some(record) = progress_log::parse(block).records.first() {
                last = Some(record.at);
            }
            (last, block)
        })
        .collect()
}

/// The union of two logs: ours' text, and theirs' new entries inserted in time order.
pub fn merge_log(base: &str, ours: &str, theirs: &str) -> String {
    let (preamble, ours_blocks) = blocks(ours);
    let key = |block: &str| block.trim_end().to_owned();
    let mut known: HashSet<String> = blocks(base).1.into_iter().map(key).collect();
    known.extend(ours_blocks.iter().map(|b| key(b)));
    let new: Vec<&str> = blocks(theirs)
        .1
        .into_iter()
        .filter(|b| known.insert(key(b)))
        .collect();
    let (ours_timed, theirs_timed) = (timed(ours_blocks), timed(new));
    let mut out = preamble.to_owned();
    let mut push = |block: &str| {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(block);
    };
    let mut rest = theirs_timed.into_iter().peekable();
    for (at, block) in ours_timed {
        while let Some((_, earlier)) = rest.next_if(|(t, _)| t.is_some() && at.is_some() && t < &at)
        {
            push(earlier);
        }
        push(block);
    }
    rest.for_each(|(_, block)| push(block));
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(at: &str, kind: &str, task: &str) -> String {
        format!("## {at} \u{2014} {kind}\n- task: {task}\n\n")
    }

    #[test]
    fn the_log_is_the_union_of_both_sides_in_time_order_without_repeats() {
        let base = format!(
            "# Log\n\n{}",
            entry("2026-11-22T00:00:00Z", "TASK_ADDED", "T-001")
        );
        let ours = format!(
            "{base}{}{}",
            entry("2026-11-22T01:00:00Z", "TASK_STARTED", "T-001"),
            entry("2026-11-22T03:00:00Z", "TASK_COMPLETE", "T-001")
        );
        let theirs = format!(
            "{base}{}{}",
            entry("2026-11-22T02:00:00Z", "TASK_ADDED", "T-002"),
            entry("2026-11-22T03:00:00Z", "TASK_COMPLETE", "T-001")
        );
        let merged = merge_log(&base, &ours, &theirs);
        assert_eq!(
            merged,
            format!(
                "{base}{}{}{}",
                entry("2026-11-22T01:00:00Z", "TASK_STARTED", "T-001"),
                entry("2026-11-22T02:00:00Z", "TASK_ADDED", "T-002"),
                entry("2026-11-22T03:00:00Z", "TASK_COMPLETE", "T-001")
            )
        );
        assert_eq!(progress_log::parse(&merged).records.len(), 4);
    }

    #[test]
    fn conflicting_lines_are_shown_between_markers_and_the_rest_once() {
        let ours = b"{\n  \"a\": 1,\n  \"b\": 2\n}\n".to_vec();
        let theirs = b"{\n  \"a\": 1,\n  \"b\": 3\n}\n".to_vec();
        let merged = String::from_utf8(with_markers(vec![ours], Some(vec![theirs])).concat())
            .expect("utf-8");
        assert_eq!(
            merged,
            "{\n  \"a\": 1,\n<<<<<<< ours\n  \"b\": 2\n=======\n  \"b\": 3\n>>>>>>> theirs\n}\n"
        );
        assert_eq!(unresolved_merge(merged.as_bytes()), Some(3));
    }

    #[test]
    fn a_merge_left_unresolved_is_told_from_damage() {
        let git = "{\n\"tasks\": [\n<<<<<<< HEAD\n{\"id\":\"T-001\"}\n||||||| base\n{}\n=======\n{\"id\":\"T-002\"}\n>>>>>>> other\n]}\n";
        assert_eq!(unresolved_merge(git.as_bytes()), Some(3));
        // Half resolved: one stray marker left.
        assert_eq!(
            unresolved_merge(b"{\n\"tasks\": []\n>>>>>>> other\n}"),
            Some(3)
        );
        assert_eq!(unresolved_merge(b"[\n1,\n=======\r\n2]"), Some(3));
        for damaged in [
            "",
            "{\"tasks\": [",
            "<<< HEAD\n{}\n",
            "{\"title\": \"<<<<<<< =======  >>>>>>>\"}\n",
            "{\"a\": \"=======\"}\n",
        ] {
            assert_eq!(unresolved_merge(damaged.as_bytes()), None, "{damaged:?}");
        }
    }

    #[test]
    fn only_store_files_are_merged() {
        assert_eq!(
            store_file(Path::new(".claude/projects/demo/tasks.json"))
                .map(|(f, _)| f)
                .ok(),
            Some(MergeFile::Tasks)
        );
        assert_eq!(
            store_file(Path::new("sub/.claude/projects/demo/progress/log.md"))
                .map(|(f, _)| f)
                .ok(),
            Some(MergeFile::Log)
        );
        for path in [
            "README.md",
            "tasks.json",
            ".claude/projects/demo/log.md",
            ".claude/x/demo/tasks.json",
        ] {
            assert!(store_file(Path::new(path)).is_err(), "{path}");
        }
    }
}
