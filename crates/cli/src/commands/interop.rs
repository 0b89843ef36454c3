//! `import` and `export`: reads or writes the other tool's file and makes one service call; the
//! formats are `cairn_interop`'s, the diff and apply `ProjectService::import`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cairn_domain::project::import::{ImportReport, ImportedTask};
use cairn_interop::{Input, Rendered};
use serde::Serialize;

use super::{Ctx, Report};
use crate::cli::{ExportArgs, ImportArgs};
use crate::exit::{Code, Failure};
use crate::output::Style;
use crate::progress::Bar;

pub fn import(ctx: &Ctx, args: ImportArgs) -> Result<Report, Failure> {
    let project = ctx.project()?;
    // An import makes and drops many short-lived blocks — the parser's tree of the other tool's
    // file, a task kept aside for each status move, the events, the log's records: freed blocks
    // must be reused, or the arena keeps them all (the tree of a 100,000-task file alone is
    // hundreds of megabytes the import would then fault in afresh).
    let _recycling = cairn_heap::recycling();
    let files;
    let mut contents = None;
    let input = if args.format.is_directory() {
        files = read_dir(&args.path)?;
        Input::Files(&files)
    } else {
        Input::Text(text_of(
            contents.insert(read_file(&args.path)?),
            &args.path,
        )?)
    };
    let parsed = cairn_interop::parse(args.format, input);
    // The parsed tasks own their text: the file (and the lease that keeps it from changing while
    // mapped) is let go before the import's own writes.
    drop(contents);
    let incoming = parsed.map_err(|e| {
        Failure::new(
            Code::Invalid,
            format!(
                "cannot import {} as {}: {}: {}",
                args.path.display(),
                e.format,
                e.at,
                e.message
            ),
        )
        .with_kind("invalid_input")
        .with_hint(format!(
            "fix the file, or check that it is a {} file; nothing was changed",
            e.format
        ))
    })?;
    let mut bar = Bar::new("importing");
    let report = ctx.block_on(ctx.service.import(
        &project,
        &incoming,
        args.dry_run,
        &mut |done, total| bar.update(done, total),
    ))?;
    drop(bar);
    ctx.emit(&report, |style| render_import(style, &report))
}

/// The file's bytes, mapped where the kernel allows (see `cairn_lease::Contents`): the parser
/// reads the page cache's own pages instead of a copy in fresh memory (33 MB for an export of
/// 100,000 tasks, and a tenth of that import on a machine whose fresh pages are slow).
fn read_file(path: &Path) -> Result<cairn_lease::Contents, Failure> {
    if path.is_dir() {
        return Err(Failure::new(
            Code::Usage,
            format!(
                "{} is a directory; this format reads one file",
                path.display()
            ),
        ));
    }
    cairn_lease::Contents::of(path).map_err(|e| read_failure(path, &e))
}

fn text_of<'a>(bytes: &'a [u8], path: &Path) -> Result<&'a str, Failure> {
    std::str::from_utf8(bytes).map_err(|e| {
        read_failure(
            path,
            &std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        )
    })
}

/// A Claude Code task list: every `<id>.json` file of the directory, by name.
fn read_dir(path: &Path) -> Result<Vec<(String, String)>, Failure> {
    if path.is_file() {
        return Err(Failure::new(
            Code::Usage,
            format!(
                "{} is a file; a Claude Code task list is a directory of <id>.json files",
                path.display()
            ),
        ));
    }
    let entries = std::fs::read_dir(path).map_err(|e| read_failure(path, &e))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| read_failure(path, &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") && entry.path().is_file() {
            let text = std::fs::read_to_string(entry.path())
                .map_err(|e| read_failure(&entry.path(), &e))?;
            files.push((name, text));
        }
    }
    files.sort();
    Ok(files)
}

fn read_failure(path: &Path, e: &std::io::Error) -> Failure {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => Code::NotFound,
        std::io::ErrorKind::InvalidData => Code::Invalid,
        _ => Code::Internal,
    };
    Failure::new(code, format!("cannot read {}: {e}", path.display()))
}

/// The import's report for people: the counts, then one page of the tasks it created or changed
/// and one page of what it left out or refused. An import of 100,000 tasks printed 160,000 lines;
/// the rest are counted, and `--json` lists every one.
fn render_import(style: &Style, r: &ImportReport) -> String {
    let mut out = String::new();
    let verb = if r.dry_run {
        "would import"
    } else {
        "imported"
    };
    let _ = writeln!(
        out,
        "{} {verb} from {}: {} created, {} updated, {} unchanged",
        style.bold(&r.project.to_string()),
        r.source,
        r.created.len(),
        r.updated.len(),
        r.unchanged
    );
    let row = |sign: &str, t: &ImportedTask| {
        let mut line = format!("  {sign} {} {} [{}] ({})", t.task, t.title, t.status, t.key);
        if !t.changes.is_empty() {
            let _ = write!(line, ": {}", t.changes.join(", "));
        }
        line
    };
    let changed = r.created.iter().map(|t| row("+", t));
    let changed = changed.chain(r.updated.iter().map(|t| row("~", t)));
    let problems = r.unknown_references.iter().map(|u| {
        format!(
            "  ! {} names {} `{}`, which is not in the file; left out",
            u.key, u.kind, u.reference
        )
    });
    let problems = problems.chain(
        r.refused
            .iter()
            .map(|f| format!("  ! {}: refused: {}", f.key, f.reason)),
    );
    let more = if r.dry_run {
        "`--json` lists them all"
    } else {
        "`--json` lists them all; `cairn log` records each"
    };
    crate::page::one_page(
        &mut out,
        changed,
        r.created.len() + r.updated.len(),
        "created or updated",
        more,
    );
    crate::page::one_page(
        &mut out,
        problems,
        r.unknown_references.len() + r.refused.len(),
        "left out or refused",
        "`--json` lists them all",
    );
    if r.dry_run && r.changes_something() {
        out.push_str("dry run: nothing was written\n");
    }
    out
}

#[derive(Serialize)]
struct Exported<'a> {
    project: String,
    format: &'a str,
    path: Option<String>,
    tasks: usize,
    files: Vec<String>,
    /// The exported text, when it went to standard output.
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

pub fn export(ctx: &Ctx, args: ExportArgs) -> Result<Report, Failure> {
    let project = ctx.project()?;
    let state = ctx.block_on(ctx.service.load(&project))?;
    // Each exporter makes a JSON tree per task and drops it once printed: freed blocks are reused
    // (at 100,000 tasks the arena alone touched 300–500 MB for them).
    let rendered = {
        let _recycling = cairn_heap::recycling();
        cairn_interop::render(args.format, &state.tasks)
    };
    let mut exported = Exported {
        project: project.to_string(),
        format: args.format.as_str(),
        path: args.path.as_ref().map(|p| p.display().to_string()),
        tasks: state.tasks.tasks.len(),
        files: Vec::new(),
        text: None,
    };
    match (rendered, &args.path) {
        (Rendered::Text(text), None) => {
            if !ctx.global.json {
                return Ok(text.into());
            }
            exported.text = Some(text);
        }
        (Rendered::Files(_), None) => {
            return Err(Failure::new(
                Code::Usage,
                "a Claude Code task list is a directory of files; name the directory to write",
            )
            .with_hint("cairn export claude ~/.claude/tasks/<list>"));
        }
        (Rendered::Text(text), Some(path)) => {
            write_file(path, &text)?;
            exported.files.push(path.display().to_string());
        }
        (Rendered::Files(files), Some(dir)) => {
            if dir.is_file() {
                return Err(Failure::new(
                    Code::Usage,
                    format!(
                        "{} is a file; name a directory for a task list",
                        dir.display()
                    ),
                ));
            }
            std::fs::create_dir_all(dir).map_err(|e| write_failure(dir, &e))?;
            for (name, text) in files {
                let path = dir.join(name);
                write_file(&path, &text)?;
                exported.files.push(path.display().to_string());
            }
        }
    }
    ctx.emit(&exported, |_| {
        format!(
            "exported {} task(s) of {} as {} to {}\n",
            exported.tasks,
            exported.project,
            exported.format,
            exported.path.as_deref().unwrap_or("-")
        )
    })
}

/// Writes through a temporary file and a rename, so a reader never sees half a file. A file that
/// already holds `text` is left alone: a re-export of a 100,000-file task list then costs a read
/// per file instead of a create and a rename (5.2 s), and readers watching the files see no change.
fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    if std::fs::read(path).is_ok_and(|bytes| bytes == text.as_bytes()) {
        return Ok(());
    }
    let mut temp = PathBuf::from(path);
    let name = format!(
        ".{}.cairn-tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    );
    temp.set_file_name(name);
    std::fs::write(&temp, text)
        .and_then(|()| std::fs::rename(&temp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            write_failure(path, &e)
        })
}

fn write_failure(path: &Path, e: &std::io::Error) -> Failure {
    Failure::new(
        Code::Internal,
        format!("cannot write {}: {e}", path.display()),
    )
}
