//! `cairn merge-driver %O %A %B %P`: git's three versions of a store file in, the merge written
//! over ours. Notes for the person merging go to stderr, where git shows them.

use std::path::Path;

use cairn_domain::project::merge::Conflict;
use serde_json::json;

use super::{Ctx, Report};
use crate::cli::MergeDriverArgs;
use crate::exit::{Code, Failure};
use crate::wiring::{MergeError, Version, merge_store_file};

pub fn driver(ctx: &Ctx, args: MergeDriverArgs) -> Result<Report, Failure> {
    let read = |path: &Path| {
        Version::of(path).map_err(|e| {
            Failure::new(
                Code::NotFound,
                format!("cannot read {}: {e}", path.display()),
            )
            .with_hint(
                "git passes the three versions as %O %A %B; check the merge.cairn.driver setting",
            )
        })
    };
    let (base, ours, theirs) = (read(&args.base)?, read(&args.ours)?, read(&args.theirs)?);
    // The merge parses, compares and renders JSON trees of all three versions, dropping as it
    // goes: freed blocks are reused (at 100,000 tasks the arena alone grew it past 3 GB).
    let merged = {
        let _recycling = cairn_heap::recycling();
        merge_store_file(&args.path, &base, &ours, &theirs)
    };
    // Mapped, ours is held under a read lease, which writing it below would wait for.
    drop((base, ours, theirs));
    let merged = merged
    .map_err(|e| {
        let code = match e {
            MergeError::NotAStoreFile(_) => Code::Usage,
            MergeError::Unreadable { .. } | MergeError::Domain(_) => Code::Invalid,
            MergeError::Store(_) => Code::Invalid,
        };
        Failure::new(code, e.to_string()).with_hint(
            "nothing was written; merge this file by hand, or take one side with `git checkout --ours/--theirs`",
        )
    })?;
    overwrite(&args.ours, &merged.pieces).map_err(|e| {
        Failure::new(
            Code::Internal,
            format!("cannot write the merge to {}: {e}", args.ours.display()),
        )
    })?;
    let path = args.path.display();
    let mut notes = Vec::new();
    for r in &merged.renumbered {
        notes.push(format!("{path}: theirs' new {} is now {}", r.from, r.to));
    }
    for c in &merged.conflicts {
        notes.push(format!("{path}: conflict: {}", describe(c)));
    }
    for f in &merged.findings {
        let task = f
            .task
            .as_ref()
            .map(|t| format!("{t}: "))
            .unwrap_or_default();
        notes.push(format!(
            "{path}: the merged tasks break a rule ({}): {task}{}",
            f.code, f.message
        ));
    }
    let code = if merged.is_clean() {
        Code::Ok
    } else {
        Code::Refused
    };
    if code != Code::Ok {
        notes.push(format!(
            "{path}: resolve it (keep one side between the <<<<<<< and >>>>>>> markers, or fix what the rule says), run `cairn doctor`, then `git add` it"
        ));
    }
    if ctx.global.json {
        let value = json!({
            "path": args.path,
            "clean": merged.is_clean(),
            "renumbered": merged.renumbered,
            "conflicts": merged.conflicts,
            "findings": merged.findings,
        });
        let mut report = crate::json::render(&value).map(Report::from)?;
        report.code = code;
        return Ok(report);
    }
    for note in notes {
        eprintln!("{note}");
    }
    Ok(Report {
        stdout: String::new(),
        code,
    })
}

fn describe(c: &Conflict) -> String {
    let shown = |v: &Option<serde_json::Value>| {
        v.as_ref().map_or("(removed)".to_owned(), |v| v.to_string())
    };
    let what = match (&c.task, &c.field) {
        (Some(task), Some(field)) => format!("{task} {field}"),
        (Some(task), None) => format!("{task} (changed on one side, removed on the other)"),
        (None, Some(field)) => field.clone(),
        (None, None) => "the document".to_owned(),
    };
    format!(
        "{what}: ours {}, theirs {} (was {})",
        shown(&c.ours),
        shown(&c.theirs),
        shown(&c.base)
    )
}

/// Writes `pieces`, one after the other, over the file at `path` in place, then cuts it to their
/// length. Ours was just read, so its pages are in the page cache: overwriting them is a copy,
/// where truncating first gives them up and writes into fresh ones (at 100,000 tasks, 130 ms of a
/// 500 ms merge on a virtual machine whose fresh pages are slow). A failure half-way leaves a
/// broken file either way; git then reports the merge as failed.
fn overwrite(path: &Path, pieces: &[Vec<u8>]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let mut len = 0;
    for piece in pieces {
        file.write_all(piece)?;
        len += piece.len() as u64;
    }
    file.set_len(len)
}
