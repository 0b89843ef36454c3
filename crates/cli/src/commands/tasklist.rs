//! `tasklist push|pull|status`: the bridge to Claude Code's task lists. Each command is one call
//! of [`TaskListService`]; this module only finds the inputs and renders the answer.

use std::fmt::Write as _;

use cairn_domain::execution::ExecutionError;
use cairn_domain::tasklist::{
    Conflict, FileProblem, Holder, Ignored, ListIdSource, ListIdSources, ListWrite, PointerState,
    ProjectEdit, PullReport, PushReport, StatusReport, TaskListService,
};
use cairn_domain::{DomainError, Error};

use super::{Ctx, Report};
use crate::cli::{TaskListArgs, TasklistCommand};
use crate::exit::{Code, Failure};
use crate::output::Style;

pub fn run(ctx: &Ctx, command: TasklistCommand) -> Result<Report, Failure> {
    let project = ctx.project()?;
    let lists = crate::wiring::open_tasklist_store().ok_or_else(|| {
        Failure::new(
            Code::Usage,
            "cannot find Claude Code's configuration directory",
        )
        .with_hint("set HOME, or CLAUDE_CONFIG_DIR to Claude Code's configuration directory")
    })?;
    let bridge = TaskListService::new(&ctx.service, lists);
    // Each command makes and drops a list file's worth of blocks for every task of the project
    // (the file it would write, compared with the one there): freed blocks must be reused, or the
    // arena keeps them all — 400 MB, faulted in afresh, for `status` at 100,000 tasks.
    let _recycling = cairn_heap::recycling();
    match command {
        TasklistCommand::Push(args) => {
            let report = ctx
                .block_on(bridge.push(&project, &sources(ctx, args)))
                .map_err(failure)?;
            ctx.emit(&report, |style| push(style, &report))
        }
        TasklistCommand::Pull(args) => {
            let report = ctx
                .block_on(bridge.pull(&project, &sources(ctx, args)))
                .map_err(failure)?;
            ctx.emit(&report, |style| pull(style, &report))
        }
        TasklistCommand::Status(args) => {
            let report = ctx
                .block_on(bridge.status(&project, &sources(ctx, args)))
                .map_err(failure)?;
            ctx.emit(&report, |style| status(style, &report))
        }
    }
}

fn sources(ctx: &Ctx, args: TaskListArgs) -> ListIdSources {
    list_id_sources(ctx, args.list)
}

/// Where a command finds its list id: `flag`, else `CLAUDE_CODE_TASK_LIST_ID` from the
/// environment or the repository's settings, else the project id. `session start` uses it too, so
/// both link the same list.
pub(super) fn list_id_sources(ctx: &Ctx, flag: Option<String>) -> ListIdSources {
    let (environment, settings) = crate::wiring::task_list_id_settings(&ctx.root);
    ListIdSources {
        flag,
        environment,
        settings,
        session: None,
    }
}

/// A list id that could leave the tasks directory is a bad argument (exit 2), whichever source
/// gave it; nothing was read or written.
pub(super) fn failure(e: Error) -> Failure {
    match e {
        Error::Domain(DomainError::Execution(ExecutionError::InvalidListId { list_id, reason })) => {
            Failure::new(
                Code::Usage,
                format!("task list id `{list_id}` refused: {reason}; nothing was written"),
            )
            .with_kind("invalid_list_id")
            .with_hint(
                "name a list with --list NAME (letters, digits, `-`, `_`, `.`; no `/` or `..`), or fix CLAUDE_CODE_TASK_LIST_ID",
            )
        }
        other => other.into(),
    }
}

fn source(source: ListIdSource) -> &'static str {
    match source {
        ListIdSource::Flag => "--list",
        ListIdSource::Environment => "CLAUDE_CODE_TASK_LIST_ID",
        ListIdSource::Settings => "CLAUDE_CODE_TASK_LIST_ID in .claude/settings",
        ListIdSource::Project => "the project id",
        ListIdSource::Session => "the session id",
    }
}

fn header(style: &Style, verb: &str, project: &str, list: &str, from: ListIdSource) -> String {
    format!(
        "{verb} project {} ⇄ task list {} (from {})\n",
        style.bold(project),
        style.bold(list),
        source(from)
    )
}

/// Where the rows a page of this command's output leaves out are: what it did, or would do,
/// is not kept to be listed again page by page.
const ALL_IN_JSON: &str = "`--json` lists them all";

fn write_lines(writes: &[ListWrite]) -> impl Iterator<Item = String> + '_ {
    writes.iter().map(|w| {
        let what = if w.created {
            "new".to_owned()
        } else {
            w.fields.join(", ")
        };
        format!("  {} → {}.json ({what})", w.task, w.list_task)
    })
}

fn conflict_lines<'a>(
    style: &'a Style,
    conflicts: &'a [Conflict],
) -> impl Iterator<Item = String> + 'a {
    conflicts.iter().map(move |c| {
        let holder = match &c.held_by {
            Holder::NotCairn => {
                "a task cairn did not write (run `cairn tasklist pull` to import it)".to_owned()
            }
            Holder::OtherProject { project } => format!("project {project}'s task"),
            Holder::OtherTask { task } => format!("{task}, linked there"),
        };
        format!(
            "  {} {}: {}.json holds {holder}; not written",
            style.yellow("conflict"),
            c.task,
            c.list_task
        )
    })
}

fn ignored_lines(ignored: &[Ignored]) -> impl Iterator<Item = String> + '_ {
    ignored.iter().map(|i| {
        let line = match i {
            Ignored::OtherProject { list_task, project } => {
                format!("{list_task}.json belongs to project {project}")
            }
            Ignored::UnknownTask { list_task, task } => {
                format!("{list_task}.json is linked to {task}, which this project does not have")
            }
            Ignored::UnreadableLink { list_task } => {
                format!("{list_task}.json has cairn metadata naming no task")
            }
            Ignored::DuplicateLink { list_task, task } => {
                format!("{list_task}.json is a second file linked to {task}")
            }
        };
        format!("  ignored: {line}")
    })
}

fn problem_lines<'a>(
    style: &'a Style,
    problems: &'a [FileProblem],
) -> impl Iterator<Item = String> + 'a {
    problems
        .iter()
        .map(move |p| format!("  {} {} {}", style.yellow("warning:"), p.file, p.problem))
}

/// One line per changed field: `T-001 title: old → new (list 1.json)`.
fn edit_lines(edits: &[ProjectEdit]) -> impl Iterator<Item = String> + '_ {
    edits.iter().flat_map(|e| {
        e.changes
            .iter()
            .map(move |c| format!("  {} {c} (list {}.json)", e.task, e.list_task))
    })
}

fn edit_line_count(edits: &[ProjectEdit]) -> usize {
    edits.iter().map(|e| e.changes.len()).sum()
}

/// The conflicts, ignored files and file warnings of a report, one page of them.
fn trouble(
    out: &mut String,
    style: &Style,
    conflicts: &[Conflict],
    ignored: &[Ignored],
    problems: &[FileProblem],
) {
    crate::page::one_page(
        out,
        conflict_lines(style, conflicts)
            .chain(ignored_lines(ignored))
            .chain(problem_lines(style, problems)),
        conflicts.len() + ignored.len() + problems.len(),
        "conflicts, ignored files or warnings",
        ALL_IN_JSON,
    );
}

fn push(style: &Style, r: &PushReport) -> String {
    let mut out = header(
        style,
        "Pushed",
        r.project.as_str(),
        r.list.as_str(),
        r.list_source,
    );
    let _ = writeln!(
        out,
        "  {} written, {} unchanged, {} removed, {} conflict{}",
        r.written.len(),
        r.unchanged,
        r.removed.len(),
        r.conflicts.len(),
        if r.conflicts.len() == 1 { "" } else { "s" }
    );
    let removed = r
        .removed
        .iter()
        .map(|file| format!("  removed {file}.json (its task is cancelled or gone)"));
    crate::page::one_page(
        &mut out,
        write_lines(&r.written).chain(removed),
        r.written.len() + r.removed.len(),
        "files written or removed",
        ALL_IN_JSON,
    );
    trouble(&mut out, style, &r.conflicts, &r.ignored, &r.problems);
    out
}

fn pull(style: &Style, r: &PullReport) -> String {
    let mut out = header(
        style,
        "Pulled",
        r.project.as_str(),
        r.list.as_str(),
        r.list_source,
    );
    let _ = writeln!(
        out,
        "  {} moved, {} edited, {} created, {} refused, {} unchanged",
        r.moved.len(),
        r.edited.len(),
        r.created.len(),
        r.refused.len(),
        r.unchanged
    );
    let moved = r.moved.iter().map(|m| {
        let to: Vec<String> = m.to.iter().map(|s| style.status(*s)).collect();
        format!(
            "  {} {} → {} (list {}.json says {})",
            m.task,
            style.status(m.from),
            to.join(" → "),
            m.list_task,
            m.wanted.as_str()
        )
    });
    let created = r.created.iter().map(|c| {
        let task = c.task.as_ref().map(ToString::to_string).unwrap_or_default();
        let status = c.status.map(|s| style.status(s)).unwrap_or_default();
        format!(
            "  created {task} {} [{status}] from {}.json",
            c.subject, c.list_task
        )
    });
    let refused = r.refused.iter().map(|f| {
        let task = f.task.as_ref().map(|t| format!("{t} ")).unwrap_or_default();
        let says = if f.fields.is_empty() {
            format!("says {}", f.wanted.as_str())
        } else {
            format!("edits its {}", f.fields.join(" and "))
        };
        let mut line = format!(
            "  {} {task}({}.json {says}): {}",
            style.red("refused"),
            f.list_task,
            f.reason
        );
        if let (Some(task), false) = (&f.task, f.fields.is_empty()) {
            let _ = write!(
                line,
                "\n    `cairn task edit {task}` takes the list's value, `cairn tasklist push` writes the project's"
            );
        }
        line
    });
    crate::page::one_page(
        &mut out,
        moved
            .chain(edit_lines(&r.edited))
            .chain(created)
            .chain(refused),
        r.moved.len() + edit_line_count(&r.edited) + r.created.len() + r.refused.len(),
        "changes or refusals",
        "`--json` lists them all; `cairn log` records each change",
    );
    trouble(&mut out, style, &[], &r.ignored, &r.problems);
    out
}

fn status(style: &Style, r: &StatusReport) -> String {
    let mut out = header(
        style,
        "Compared",
        r.project.as_str(),
        r.list.as_str(),
        r.list_source,
    );
    if r.is_in_sync() {
        let _ = writeln!(out, "  in sync ({} tasks)", r.in_sync);
    } else {
        let _ = writeln!(out, "  {} in sync", r.in_sync);
    }
    if !r.push_would_write.is_empty() || !r.push_would_remove.is_empty() {
        let _ = writeln!(out, "project → list (`cairn tasklist push`):");
        let removals = r
            .push_would_remove
            .iter()
            .map(|file| format!("  remove {file}.json"));
        crate::page::one_page(
            &mut out,
            write_lines(&r.push_would_write).chain(removals),
            r.push_would_write.len() + r.push_would_remove.len(),
            "files to write or remove",
            ALL_IN_JSON,
        );
    }
    if !r.pull_would_move.is_empty()
        || !r.pull_would_edit.is_empty()
        || !r.pull_would_create.is_empty()
    {
        let _ = writeln!(out, "list → project (`cairn tasklist pull`):");
        let moves = r.pull_would_move.iter().map(|m| {
            let path: Vec<&str> = m.to.iter().map(|s| s.as_str()).collect();
            format!(
                "  {} {} → {} ({}.json says {})",
                m.task,
                m.from,
                path.join(" → "),
                m.list_task,
                m.wanted.as_str()
            )
        });
        let creations = r.pull_would_create.iter().map(|c| {
            format!(
                "  new task from {}.json: {} [{}]",
                c.list_task,
                c.subject,
                c.wanted.as_str()
            )
        });
        crate::page::one_page(
            &mut out,
            moves.chain(edit_lines(&r.pull_would_edit)).chain(creations),
            r.pull_would_move.len()
                + edit_line_count(&r.pull_would_edit)
                + r.pull_would_create.len(),
            "changes",
            ALL_IN_JSON,
        );
    }
    if !r.edit_clashes.is_empty() {
        let _ = writeln!(
            out,
            "changed on both sides since the last sync (pull refuses; `cairn task edit` takes \
             the list's, push writes the project's):"
        );
        crate::page::one_page(
            &mut out,
            edit_lines(&r.edit_clashes),
            edit_line_count(&r.edit_clashes),
            "clashes",
            ALL_IN_JSON,
        );
    }
    trouble(&mut out, style, &r.conflicts, &r.ignored, &r.problems);
    match &r.execution_pointer {
        Some(PointerState::Accepted { dir }) => {
            let _ = writeln!(out, "execution pointer: {dir}");
        }
        Some(PointerState::Refused { pointer, reason }) => {
            let _ = writeln!(
                out,
                "{} execution pointer `{pointer}` refused: {reason}",
                style.yellow("warning:")
            );
        }
        None => {}
    }
    out
}
