//! `task …`: adding, inspecting, moving and scheduling tasks.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

use cairn_domain::NextStep;
use cairn_domain::project::graph::{self, Index};
use cairn_domain::project::service::Moved;
use cairn_domain::project::{
    Actor, ClaimTarget, Level, MoveDetail, NewTask, ProjectId, ProjectStatus, Task, TaskDoc,
    TaskEdit, TaskId, TaskStatus,
};
use cairn_domain::time::format_rfc3339;
use serde_json::json;

use super::{Ctx, Report, not_applicable};
use crate::cli::{ActorArgs, AddArgs, EditArgs, GraphFormat, ListArgs, PageArgs, TaskCommand};
use crate::exit::{Code, Failure};
use crate::json::checkpoint_name;
use crate::output::{Cell, Style, Table, id_list, minutes, task_line};
use crate::page::Page;

pub fn run(ctx: &Ctx, command: TaskCommand) -> Result<Report, Failure> {
    let project = ctx.project()?;
    let p = &project;
    match command {
        TaskCommand::Add(args) => add(ctx, p, args),
        TaskCommand::Edit(args) => edit(ctx, p, args),
        TaskCommand::List(args) => list(ctx, p, args),
        TaskCommand::Show { id } => show(ctx, p, &id.parse()?),
        TaskCommand::Research { id, done, brief } => {
            let id: TaskId = id.parse()?;
            let to = if done {
                TaskStatus::Researched
            } else {
                TaskStatus::InResearch
            };
            if let Some(path) = brief {
                let text = read_brief(&path)?;
                ctx.block_on(ctx.service.write_research(p, &id, &text))?;
                // Updating the brief of a task already in that state is not a move.
                let state = ctx.block_on(ctx.service.load(p))?;
                let task = find(&state.tasks, &id)?.clone();
                if task.status == to {
                    return ctx.emit(&task, |style| {
                        format!("Research brief of {} updated\n", style.bold(id.as_str()))
                    });
                }
            }
            transition(ctx, p, &id, to, MoveDetail::default())
        }
        TaskCommand::Start { id } => {
            transition(ctx, p, &id.parse()?, TaskStatus::InProgress, no_detail())
        }
        TaskCommand::Validate { id } => {
            transition(ctx, p, &id.parse()?, TaskStatus::Validating, no_detail())
        }
        TaskCommand::Complete { id, actual, actor } => transition_as(
            ctx,
            p,
            &id.parse()?,
            TaskStatus::Complete,
            MoveDetail {
                actual_minutes: actual,
                reason: None,
            },
            actor,
        ),
        TaskCommand::Block { id, reason, actor } => transition_as(
            ctx,
            p,
            &id.parse()?,
            TaskStatus::Blocked,
            because(reason),
            actor,
        ),
        TaskCommand::Unblock { id } => {
            let id: TaskId = id.parse()?;
            let state = ctx.block_on(ctx.service.load(p))?;
            let task = find(&state.tasks, &id)?;
            // A parent was under way when it was blocked (decomposing started it); a leaf starts
            // over from PENDING. The rule itself is the domain's: this only picks the target.
            let to = if task.is_parent() {
                TaskStatus::InProgress
            } else {
                TaskStatus::Pending
            };
            transition(ctx, p, &id, to, because("unblocked".to_owned()))
        }
        TaskCommand::Cancel { id, reason, actor } => transition_as(
            ctx,
            p,
            &id.parse()?,
            TaskStatus::Cancelled,
            MoveDetail {
                actual_minutes: None,
                reason,
            },
            actor,
        ),
        TaskCommand::Reset { id, reason, actor } => transition_as(
            ctx,
            p,
            &id.parse()?,
            TaskStatus::Pending,
            because(reason.unwrap_or_else(|| "reset by hand".to_owned())),
            actor,
        ),
        TaskCommand::Move {
            id,
            to,
            reason,
            actual,
            actor,
        } => {
            let to: TaskStatus = to.parse()?;
            if actual.is_some() && to != TaskStatus::Complete {
                return Err(not_applicable(
                    "--actual",
                    "the minutes spent are recorded when a task completes",
                    "drop --actual, or move the task with --to COMPLETE",
                ));
            }
            transition_as(
                ctx,
                p,
                &id.parse()?,
                to,
                MoveDetail {
                    actual_minutes: actual,
                    reason,
                },
                actor,
            )
        }
        TaskCommand::Claim(args) => {
            let target = match &args.id {
                Some(id) => ClaimTarget::Task(id.parse()?),
                None => ClaimTarget::Next,
            };
            let task =
                ctx.block_on(
                    ctx.service
                        .claim(p, &target, &args.lease.agent, args.lease.lease),
                )?;
            ctx.emit(&task, |style| leased_text(style, &task, "claimed by"))
        }
        TaskCommand::Heartbeat { id, lease } => {
            let task =
                ctx.block_on(
                    ctx.service
                        .heartbeat(p, &id.parse()?, &lease.agent, lease.lease),
                )?;
            ctx.emit(&task, |style| {
                leased_text(style, &task, "lease renewed for")
            })
        }
        TaskCommand::Decompose { id, into } => decompose(ctx, p, &id.parse()?, into),
        TaskCommand::Depend { id, on, remove } => {
            let id: TaskId = id.parse()?;
            let on: TaskId = on.parse()?;
            let task = ctx.block_on(ctx.service.depend(p, &id, &on, remove))?;
            ctx.emit(&task, |style| {
                let verb = if remove {
                    "no longer waits on"
                } else {
                    "waits on"
                };
                let mut out = format!("{} {verb} {on}\n", style.bold(id.as_str()));
                if !task.dependencies.is_empty() {
                    let _ = writeln!(out, "  dependencies: {}", id_list(&task.dependencies));
                }
                out
            })
        }
        TaskCommand::Next => next(ctx, p),
        TaskCommand::Ready(page) => {
            let ready = ctx.block_on(ctx.service.ready(p))?;
            let state = ctx.block_on(ctx.service.load(p))?;
            ctx.emit_page(ready, &page, "ready tasks", row_size, |style, page| {
                if page.total == 0 {
                    nothing_ready(style, &state.tasks)
                } else {
                    table(style, &state.tasks, page.items.iter(), false)
                }
            })
        }
        TaskCommand::Waves(page) => waves(ctx, p, &page),
        TaskCommand::Graph { format, page } => graph(ctx, p, format, &page),
    }
}

/// Waves are paged by task, not by wave: one wave can hold thousands of tasks. Under `--json`,
/// `first_wave` numbers the first wave on the page (from 1), since a page may start mid-list.
fn waves(ctx: &Ctx, p: &ProjectId, args: &PageArgs) -> Result<Report, Failure> {
    let waves = ctx.block_on(ctx.service.waves(p))?;
    // Each id with its wave's number; `None` for the stuck ones, which come last.
    let ids: Vec<(Option<usize>, TaskId)> = waves
        .waves
        .into_iter()
        .enumerate()
        .flat_map(|(i, wave)| wave.into_iter().map(move |id| (Some(i + 1), id)))
        .chain(waves.stuck.into_iter().map(|id| (None, id)))
        .collect();
    let size = |(_, id): &(Option<usize>, TaskId)| id.as_str().len() + 2;
    let page = Page::of(ids, args, size);
    let mut grouped: Vec<(Option<usize>, Vec<TaskId>)> = Vec::new();
    for (wave, id) in &page.items {
        match grouped.last_mut() {
            Some((w, ids)) if w == wave => ids.push(id.clone()),
            _ => grouped.push((*wave, vec![id.clone()])),
        }
    }
    if ctx.global.json {
        let mut value = page.fields();
        let in_waves = grouped.iter().filter(|(w, _)| w.is_some());
        value.insert(
            "first_wave".into(),
            json!(grouped.first().and_then(|(w, _)| *w)),
        );
        value.insert(
            "waves".into(),
            json!(in_waves.map(|(_, ids)| ids).collect::<Vec<_>>()),
        );
        let stuck: Vec<&TaskId> = grouped
            .iter()
            .filter(|(w, _)| w.is_none())
            .flat_map(|(_, ids)| ids)
            .collect();
        value.insert("stuck".into(), json!(stuck));
        return Ok(crate::json::render(&value)?.into());
    }
    let style = &ctx.style;
    let mut out = String::new();
    for (wave, ids) in &grouped {
        let label = match wave {
            Some(n) => style.bold(&format!("Wave {n}:")),
            None => style.red("Stuck (waiting on blocked or cancelled work):"),
        };
        let _ = writeln!(out, "{label} {}", id_list(ids));
    }
    if page.total == 0 {
        out.push_str("No pending work to schedule.\n");
    }
    out.push_str(&page.footer("scheduled tasks"));
    Ok(out.into())
}

/// A page of the graph is a page of tasks (nodes, in tasks.json order) with every edge that
/// touches them; the footer is a comment in the graph's own syntax so the text stays renderable.
fn graph(
    ctx: &Ctx,
    p: &ProjectId,
    format: GraphFormat,
    args: &PageArgs,
) -> Result<Report, Failure> {
    let state = ctx.block_on(ctx.service.load(p))?;
    let dot = format == GraphFormat::Dot;
    let node_size = |t: &Task| {
        let edges = t.dependencies.len() + t.children().len();
        t.id.as_str().len() * 2 + t.title.len() + 30 + edges * 24
    };
    let page = Page::of(state.tasks.tasks.to_vec(), args, node_size);
    let shown = TaskDoc {
        tasks: page.items.clone().into(),
        ..state.tasks.clone()
    };
    let text = cairn_render::graph(&shown, dot);
    let name = if dot { "dot" } else { "mermaid" };
    let mut value = page.fields();
    value.insert("format".into(), json!(name));
    value.insert("graph".into(), json!(text));
    ctx.emit(&value, |_| {
        let footer = page.footer("tasks");
        if footer.is_empty() {
            return text.clone();
        }
        let comment = if dot { "//" } else { "%%" };
        format!("{text}{comment} {footer}")
    })
}

fn row_size(t: &Task) -> usize {
    t.id.as_str().len() + t.title.len() + t.dependencies.len() * 7 + 40
}

fn no_detail() -> MoveDetail {
    MoveDetail::default()
}

fn because(reason: String) -> MoveDetail {
    MoveDetail {
        actual_minutes: None,
        reason: Some(reason),
    }
}

fn find<'a>(doc: &'a TaskDoc, id: &TaskId) -> Result<&'a Task, Failure> {
    doc.get(id).ok_or_else(|| {
        Failure::new(Code::NotFound, format!("no task {id} in this project"))
            .with_hint("`cairn task list` shows the task ids")
            .with_kind("unknown_task")
    })
}

fn read_brief(path: &Path) -> Result<String, Failure> {
    let mut text = String::new();
    let read = if path == Path::new("-") {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    read.map_err(|e| {
        Failure::new(
            Code::Internal,
            format!("cannot read the brief {}: {e}", path.display()),
        )
    })?;
    Ok(text)
}

fn add(ctx: &Ctx, p: &ProjectId, args: AddArgs) -> Result<Report, Failure> {
    let new = NewTask {
        title: args.title,
        level: args.level.as_deref().map(str::parse).transpose()?,
        priority: args.priority.as_deref().map(str::parse).transpose()?,
        parent: args.parent.as_deref().map(str::parse).transpose()?,
        dependencies: args
            .depends
            .iter()
            .filter(|d| !d.trim().is_empty())
            .map(|d| d.parse())
            .collect::<Result<_, _>>()?,
        completion_criteria: args.criteria,
        description: args.description,
        phase_id: args.phase,
        estimate_minutes: args.estimate,
        tags: args.tags,
    };
    let added = ctx.block_on(ctx.service.add_task_reporting(p, new))?;
    let task = added.task;
    ctx.emit(&task, |style| {
        let mut out = format!("Added {}\n", task_line(style, &task));
        if let Some(status) = added.project_status {
            let _ = writeln!(
                out,
                "  project {p} was COMPLETE and is {} again: it has open work",
                style.bold(status.as_str())
            );
        }
        if let Some(parent) = &task.parent_id {
            let _ = writeln!(out, "  under {parent}");
        }
        if !task.dependencies.is_empty() {
            let _ = writeln!(out, "  waits on {}", id_list(&task.dependencies));
        }
        out
    })
}

fn edit(ctx: &Ctx, p: &ProjectId, args: EditArgs) -> Result<Report, Failure> {
    let id: TaskId = args.id.parse()?;
    let edit = TaskEdit {
        title: args.title,
        description: args.description,
        priority: args.priority.as_deref().map(str::parse).transpose()?,
        estimate_minutes: args.estimate,
        add_criteria: args.add_criteria,
        remove_criteria: args.remove_criteria,
        phase_id: args.phase,
        add_tags: args.tags,
        remove_tags: args.untags,
        external_id: args.external_id,
    };
    if edit.is_empty() {
        return Err(Failure::new(
            Code::Usage,
            format!("nothing to edit: say what to change in {id}"),
        )
        .with_hint(format!(
            "e.g. `{}`; `cairn task edit --help` lists the fields",
            cairn_render::command(&NextStep::EditTask { task: id.clone() })
        )));
    }
    let edited = ctx.block_on(ctx.service.edit_task(p, &id, edit))?;
    ctx.emit(&edited.task, |style| {
        if edited.changes.is_empty() {
            return format!(
                "{}: nothing changed (it already has those values)\n",
                style.bold(id.as_str())
            );
        }
        let mut out = format!("Edited {}\n", task_line(style, &edited.task));
        for c in &edited.changes {
            let _ = writeln!(out, "  {c}");
        }
        out
    })
}

fn list(ctx: &Ctx, p: &ProjectId, args: ListArgs) -> Result<Report, Failure> {
    let statuses: Vec<TaskStatus> = args
        .status
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    let level: Option<Level> = args.level.as_deref().map(str::parse).transpose()?;
    let parent: Option<TaskId> = args.parent.as_deref().map(str::parse).transpose()?;
    refuse_contradictions(&args, &statuses)?;
    let state = ctx.block_on(ctx.service.load(p))?;
    let doc = &state.tasks;
    if let Some(parent) = &parent {
        find(doc, parent)?;
    }
    let index = Index::new(doc);
    let filtered = args.ready
        || args.blocked
        || !statuses.is_empty()
        || level.is_some()
        || args.phase.is_some()
        || parent.is_some();
    let tasks: Vec<&Task> = doc
        .tasks
        .iter()
        .filter(|t| statuses.is_empty() || statuses.contains(&t.status))
        .filter(|t| level.is_none_or(|l| t.level == l))
        .filter(|t| {
            args.phase
                .as_deref()
                .is_none_or(|ph| t.phase_id.as_deref() == Some(ph))
        })
        .filter(|t| !args.ready || index.is_ready(t))
        .filter(|t| !args.blocked || t.status == TaskStatus::Blocked)
        .filter(|t| parent.is_none() || t.parent_id == parent)
        .collect();
    // The whole list reads as a tree; a filtered one would have gaps, so it stays flat. JSON
    // keeps tasks.json order.
    let items = if filtered || ctx.global.json {
        tasks
    } else {
        tree_order(doc)
    };
    ctx.emit_page(
        items,
        &args.page,
        "tasks",
        |t| row_size(t),
        |style, page| {
            if page.total == 0 {
                return if doc.tasks.is_empty() {
                    format!("No tasks yet.\n{}", style.next_step("cairn task add TITLE"))
                } else {
                    "No task matches.\n".to_owned()
                };
            }
            table(style, doc, page.items.iter().copied(), !filtered)
        },
    )
}

/// Filters that together can match nothing would be quietly answered with an empty list; the
/// caller meant something else, so say which filter cannot apply.
fn refuse_contradictions(args: &ListArgs, statuses: &[TaskStatus]) -> Result<(), Failure> {
    let hint = "drop one of them; `cairn task list --help` explains each filter";
    if args.ready && args.blocked {
        return Err(not_applicable(
            "--blocked",
            "--ready lists tasks that can start now, and a BLOCKED task never can",
            hint,
        ));
    }
    let ready_statuses = [TaskStatus::Pending, TaskStatus::Researched];
    if args.ready && !statuses.is_empty() && !statuses.iter().any(|s| ready_statuses.contains(s)) {
        return Err(not_applicable(
            "--status",
            "--ready only matches PENDING or RESEARCHED tasks, and none of the statuses given is one of them",
            hint,
        ));
    }
    if args.blocked && !statuses.is_empty() && !statuses.contains(&TaskStatus::Blocked) {
        return Err(not_applicable(
            "--status",
            "--blocked only matches BLOCKED tasks, and BLOCKED is not among the statuses given",
            hint,
        ));
    }
    Ok(())
}

/// Tasks depth-first under their parents, roots in creation order.
fn tree_order(doc: &TaskDoc) -> Vec<&Task> {
    let index = Index::new(doc);
    let mut out = Vec::with_capacity(doc.tasks.len());
    let mut seen = std::collections::HashSet::new();
    fn visit<'a>(
        task: &'a Task,
        index: &Index<'a>,
        seen: &mut std::collections::HashSet<&'a TaskId>,
        out: &mut Vec<&'a Task>,
    ) {
        if !seen.insert(&task.id) {
            return;
        }
        out.push(task);
        for child in task.children() {
            if let Some(c) = index.get(child) {
                visit(c, index, seen, out);
            }
        }
    }
    for task in &doc.tasks {
        let rooted = task.parent_id.as_ref().is_some_and(|p| {
            index
                .get(p)
                .is_some_and(|parent| parent.children().contains(&task.id))
        });
        if !rooted {
            visit(task, &index, &mut seen, &mut out);
        }
    }
    // Anything only reachable through a damaged parent loop still gets listed.
    for task in &doc.tasks {
        if !seen.contains(&task.id) {
            visit(task, &index, &mut seen, &mut out);
        }
    }
    out
}

fn depth(index: &Index<'_>, task: &Task) -> usize {
    index.ancestors(task).len()
}

fn table<'a>(
    style: &Style,
    doc: &TaskDoc,
    tasks: impl Iterator<Item = &'a Task>,
    indent: bool,
) -> String {
    let index = Index::new(doc);
    let mut table = Table::new(&["ID", "STATUS", "PRIORITY", "LEVEL", "EST", "DEPS", "TITLE"]);
    for t in tasks {
        let pad = if indent {
            "  ".repeat(depth(&index, t))
        } else {
            String::new()
        };
        table.row(vec![
            Cell::styled(t.id.as_str(), style.bold(t.id.as_str())),
            Cell::styled(t.status.as_str(), style.status(t.status)),
            Cell::styled(t.priority.as_str(), style.priority(t.priority)),
            t.level.to_string().into(),
            t.estimate_minutes.map(minutes).unwrap_or_default().into(),
            id_list(&t.dependencies).into(),
            format!("{pad}{}", t.title).into(),
        ]);
    }
    table.render(style)
}

fn show(ctx: &Ctx, p: &ProjectId, id: &TaskId) -> Result<Report, Failure> {
    let state = ctx.block_on(ctx.service.load(p))?;
    let task = find(&state.tasks, id)?.clone();
    let brief = ctx.block_on(ctx.service.research_brief(p, id))?;
    let now = ctx.service.now();
    ctx.emit(&task, |style| {
        let doc = &state.tasks;
        let index = Index::new(doc);
        let status_of = |d: &TaskId| {
            index
                .get(d)
                .map_or("missing".to_owned(), |t| t.status.to_string())
        };
        let mut out = format!(
            "{} {}\n",
            style.bold(task.id.as_str()),
            style.bold(&task.title)
        );
        let mut field = |key: &str, value: String| {
            let _ = writeln!(out, "  {}  {value}", style.dim(&format!("{key:<12}")));
        };
        field("status", style.status(task.status));
        field("priority", style.priority(task.priority));
        field("level", task.level.to_string());
        if let Some(phase) = &task.phase_id {
            field("phase", phase.clone());
        }
        if let Some(parent) = &task.parent_id {
            field("parent", format!("{parent} ({})", status_of(parent)));
        }
        if task.is_parent() {
            // A parent can have hundreds of subtasks; `task list --parent` pages through them.
            let page = Page::of(task.children().to_vec(), &SHOWN_SUBTASKS, |_| 0);
            let mut children = page
                .items
                .iter()
                .map(|c| format!("{c} ({})", status_of(c)))
                .collect::<Vec<_>>()
                .join(", ");
            if let Some(next) = page.next_offset() {
                let _ = write!(
                    children,
                    " … and {} more: cairn task list --parent {}",
                    page.total - next,
                    task.id
                );
            }
            field("subtasks", children);
        }
        if !task.dependencies.is_empty() {
            let deps = task
                .dependencies
                .iter()
                .map(|d| format!("{d} ({})", status_of(d)))
                .collect::<Vec<_>>()
                .join(", ");
            field("depends on", deps);
        }
        if let Some(m) = task.estimate_minutes {
            field("estimate", minutes(m));
        }
        if let Some(m) = &task.actual_minutes {
            field("actual", minutes(m.whole()));
        }
        field("created", format_rfc3339(&task.created_at));
        if let Some(at) = &task.started_at {
            field("started", format_rfc3339(at));
        }
        if let Some(at) = &task.completed_at {
            field("completed", format_rfc3339(at));
        }
        if let Some(reason) = &task.blocked_reason {
            field("blocked", reason.clone());
        }
        if let Some(holder) = &task.claimed_by {
            let lease = match task.lease_expires_at {
                Some(at) if at > now => format!("lease until {}", format_rfc3339(&at)),
                Some(at) => format!("lease expired {}: reclaimable", format_rfc3339(&at)),
                None => "no lease: reclaimable".to_owned(),
            };
            field("claimed by", format!("{holder} ({lease})"));
        }
        if let Some(brief) = &brief {
            let freshness = if brief.fresh {
                "fresh: reuse it"
            } else {
                "older than 24 h: refresh it before relying on it"
            };
            field(
                "research",
                format!(
                    "brief written {} ({freshness})",
                    format_rfc3339(&brief.written_at)
                ),
            );
        }
        if let Some(tags) = &task.tags {
            field("tags", tags.join(", "));
        }
        if let Some(description) = &task.description {
            let _ = writeln!(out, "\n{}", indent_block(description));
        }
        if !task.completion_criteria.is_empty() {
            let _ = writeln!(out, "\n  {}", style.dim("done when:"));
            for c in &task.completion_criteria {
                let _ = writeln!(out, "  - {c}");
            }
        }
        let unmet = index.unmet_dependencies(&task);
        if index.is_ready(&task) {
            out.push_str(&style.next_step(&format!("cairn task start {}", task.id)));
        } else if matches!(task.status, TaskStatus::Pending | TaskStatus::Researched)
            && !unmet.is_empty()
        {
            let _ = writeln!(out, "{} waiting on {}", style.dim("note:"), id_list(&unmet));
        }
        out
    })
}

/// How many subtasks `task show` names before pointing at `task list --parent`.
const SHOWN_SUBTASKS: PageArgs = PageArgs {
    limit: Some(20),
    offset: 0,
    all: false,
};

fn indent_block(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn transition(
    ctx: &Ctx,
    p: &ProjectId,
    id: &TaskId,
    to: TaskStatus,
    detail: MoveDetail,
) -> Result<Report, Failure> {
    let moved = ctx.block_on(ctx.service.move_task(p, id, to, detail))?;
    ctx.emit(&moved.task, |style| moved_text(style, &moved))
}

/// A move by an agent that may be refused by another agent's claim.
fn transition_as(
    ctx: &Ctx,
    p: &ProjectId,
    id: &TaskId,
    to: TaskStatus,
    detail: MoveDetail,
    actor: ActorArgs,
) -> Result<Report, Failure> {
    let actor = Actor {
        agent: actor.agent.filter(|a| !a.trim().is_empty()),
        force: actor.force,
    };
    let moved = ctx.block_on(ctx.service.move_task_as(p, id, to, detail, &actor))?;
    ctx.emit(&moved.task, |style| moved_text(style, &moved))
}

/// `T-003 Title: claimed by worker-1 until 2026-…` and what to do next.
fn leased_text(style: &Style, task: &Task, what: &str) -> String {
    let mut out = format!(
        "{} {}: {what} {} until {}\n",
        style.bold(task.id.as_str()),
        task.title,
        task.claimed_by.as_deref().unwrap_or("-"),
        task.lease_expires_at
            .as_ref()
            .map_or_else(|| "-".to_owned(), format_rfc3339)
    );
    let agent = task.claimed_by.as_deref().unwrap_or("NAME");
    out.push_str(&style.next_step(&format!(
        "cairn task complete {} --agent {agent} (renew with `cairn task heartbeat {} --agent {agent}`)",
        task.id, task.id
    )));
    out
}

fn moved_text(style: &Style, moved: &Moved) -> String {
    let task = &moved.task;
    let mut out = String::new();
    let arrow =
        |from: TaskStatus, to: TaskStatus| format!("{} → {}", style.status(from), style.status(to));
    // The move asked for first; then what it caused (cancelled subtasks, completed parents).
    if let Some((_, from, to)) = moved.changes.iter().find(|(t, _, _)| t == &task.id) {
        let _ = writeln!(
            out,
            "{} {}: {}",
            style.bold(task.id.as_str()),
            task.title,
            arrow(*from, *to)
        );
    }
    // Subtasks cancelled with their parent come before the task's own change; the parents a
    // cascade moved come after it.
    let own = moved.changes.iter().position(|(t, _, _)| t == &task.id);
    for (at, (other, from, to)) in moved.changes.iter().enumerate() {
        if Some(at) == own {
            continue;
        }
        let why = match to {
            TaskStatus::Complete => " (all its subtasks are complete)",
            TaskStatus::Cancelled if own.is_some_and(|own| at > own) => {
                " (all its subtasks were cancelled)"
            }
            _ => "",
        };
        let _ = writeln!(out, "  also {other}: {}{why}", arrow(*from, *to));
    }
    if let Some(n) = moved.checkpoint {
        let _ = writeln!(out, "{} written", checkpoint_name(n));
    }
    if let Some(m) = task
        .actual_minutes
        .as_ref()
        .filter(|_| task.status == TaskStatus::Complete)
    {
        let _ = writeln!(out, "  took {}", minutes(m.whole()));
    }
    if moved.project_status == Some(ProjectStatus::Complete) {
        let _ = writeln!(
            out,
            "{}",
            style.green("Project complete: every task is done (the project is now COMPLETE)")
        );
        return out;
    }
    let next = match task.status {
        TaskStatus::InResearch => Some(format!(
            "cairn task research {} --done --brief FILE",
            task.id
        )),
        TaskStatus::Researched | TaskStatus::Pending => {
            Some(format!("cairn task start {}", task.id))
        }
        TaskStatus::InProgress => Some(format!("cairn task complete {}", task.id)),
        TaskStatus::Validating => Some(format!(
            "cairn task complete {} (or `cairn task start {}` to rework it)",
            task.id, task.id
        )),
        TaskStatus::Complete | TaskStatus::Cancelled => Some("cairn task next".to_owned()),
        TaskStatus::Blocked => Some(format!(
            "cairn task unblock {} once it is resolved",
            task.id
        )),
    };
    if let Some(next) = next {
        out.push_str(&style.next_step(&next));
    }
    out
}

fn decompose(
    ctx: &Ctx,
    p: &ProjectId,
    id: &TaskId,
    titles: Vec<String>,
) -> Result<Report, Failure> {
    let children = titles.into_iter().map(NewTask::titled).collect();
    let (parent, children) = ctx.block_on(ctx.service.decompose(p, id, children))?;
    let value = json!({"parent": parent, "children": children});
    ctx.emit(&value, |style| {
        let mut out = format!(
            "{} {} now has {} subtask{} ({}):\n",
            style.bold(parent.id.as_str()),
            parent.title,
            children.len(),
            if children.len() == 1 { "" } else { "s" },
            style.status(parent.status)
        );
        for c in &children {
            let _ = writeln!(out, "  {}", task_line(style, c));
        }
        out.push_str(&style.next_step(&format!(
            "cairn task start {}",
            children.first().map_or("ID", |c| c.id.as_str())
        )));
        out
    })
}

fn next(ctx: &Ctx, p: &ProjectId) -> Result<Report, Failure> {
    let state = ctx.block_on(ctx.service.load(p))?;
    let next = graph::next(&state.tasks).cloned();
    let report = ctx.emit(&next, |style| match &next {
        Some(task) => {
            let mut out = format!("{}\n", task_line(style, task));
            if let Some(d) = &task.description {
                let _ = writeln!(out, "{}", indent_block(d));
            }
            for c in &task.completion_criteria {
                let _ = writeln!(out, "  - {c}");
            }
            out.push_str(&style.next_step(&format!("cairn task start {}", task.id)));
            out
        }
        None => nothing_ready(style, &state.tasks),
    });
    // The process exits right after answering: freeing tens of thousands of small allocations
    // one by one would only delay the caller. The OS reclaims the memory at exit.
    std::mem::forget(state);
    report
}

/// Why nothing is ready, and what would change that.
fn nothing_ready(style: &Style, doc: &TaskDoc) -> String {
    let mut counts: HashMap<TaskStatus, usize> = HashMap::new();
    for t in doc.tasks.iter().filter(|t| !t.is_parent()) {
        *counts.entry(t.status).or_default() += 1;
    }
    let open = doc
        .tasks
        .iter()
        .filter(|t| !t.is_parent() && t.status.is_open())
        .count();
    if doc.tasks.is_empty() {
        return format!(
            "Nothing is ready: there are no tasks yet.\n{}",
            style.next_step("cairn task add TITLE")
        );
    }
    if open == 0 {
        return "Nothing is ready: every task is complete or cancelled.\n".to_owned();
    }
    let running = counts.get(&TaskStatus::InProgress).copied().unwrap_or(0)
        + counts.get(&TaskStatus::InResearch).copied().unwrap_or(0)
        + counts.get(&TaskStatus::Validating).copied().unwrap_or(0);
    let blocked = counts.get(&TaskStatus::Blocked).copied().unwrap_or(0);
    let mut out = format!(
        "Nothing is ready: {open} open task{} ({running} under way, {blocked} blocked, the rest waiting on dependencies).\n",
        if open == 1 { "" } else { "s" }
    );
    out.push_str(&style.next_step(if blocked > 0 {
        "`cairn task list --blocked`, then `cairn task unblock ID`"
    } else {
        "`cairn task waves` shows what waits on what"
    }));
    out
}
