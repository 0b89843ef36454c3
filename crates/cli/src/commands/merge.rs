//! `cairn merge-driver %O %A %B %P`: git's three versions of a store file in, the merge written
//! over ours. Notes for the person merging go to stderr, where git shows them.

use std::path::Path;

use cairn_domain::project::merge::Conflict;
use serde_json::json;

use super::{Ctx, Report};
use crate::cli::MergeDriverArgs;
use crate::exit::{Code, Failure};
use crate::wiring::{MergeError, merge_store_file};

pub fn driver(ctx: &Ctx, args: MergeDriverArgs) -> Result<Report, Failure> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|e| {
            Failure::new(
                Code::NotFound,
                format!("cannot read {}: {e}", path.display()),
            )
            .with_hint(
                "git passes the three versions as %O %A %B; check the merge.cairn.driver setting",
            )
        })
    };
    // Side by side: at 100,000 tasks each version is 48 MB of fresh memory to fault in.
    let (base, ours, theirs) = std::thread::scope(|scope| {
        let base = scope.spawn(|| read(&args.base));
        let theirs = scope.spawn(|| read(&args.theirs));
        let ours = read(&args.ours);
        let joined = |reading: std::thread::ScopedJoinHandle<'_, Result<Vec<u8>, Failure>>| {
            reading
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        };
        Ok::<_, Failure>((joined(base)?, ours?, joined(theirs)?))
    })?;
    // The merge parses, compares and renders JSON trees of all three versions, dropping as it
    // goes: freed blocks are reused (at 100,000 tasks the arena alone grew it past 3 GB).
    let merged = {
        let _recycling = cairn_heap::recycling();
        merge_store_file(&args.path, base, ours, theirs)
    }
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
    std::fs::write(&args.ours, &merged.bytes).map_err(|e| {
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
