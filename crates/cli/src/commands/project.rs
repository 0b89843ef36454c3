//! `init` and `project …`.

use std::fmt::Write as _;

use cairn_domain::project::service::InitProject;
use cairn_domain::project::{Project, ProjectStatus, ProjectType};
use cairn_domain::time::format_rfc3339;

use super::{Ctx, Report};
use crate::cli::{InitArgs, ProjectCommand, ProjectKind};
use crate::exit::Failure;
use crate::output::{Cell, Style, Table};

pub fn init(ctx: &Ctx, args: InitArgs) -> Result<Report, Failure> {
    let kind = match args.kind {
        ProjectKind::Software => ProjectType::Software,
        ProjectKind::Content => ProjectType::Content,
        ProjectKind::Research => ProjectType::Research,
        ProjectKind::Business => ProjectType::Business,
        ProjectKind::Auto => ProjectType::Auto,
    };
    let project = ctx.block_on(ctx.service.init(InitProject {
        id: args.id.parse()?,
        name: args.name,
        goal: args.goal,
        kind,
    }))?;
    let dir = ctx
        .root
        .join(".claude")
        .join("projects")
        .join(project.id.as_str());
    let git_not_set_up = !ctx.global.json && super::setup::git_not_set_up(&ctx.root);
    ctx.emit(&project, |style| {
        let mut out = format!(
            "Created project {} ({}) in {}\n",
            style.bold(project.id.as_str()),
            project.name,
            dir.display()
        );
        out.push_str(&style.next_step("add tasks with `cairn task add TITLE`"));
        if git_not_set_up {
            out.push_str(&style.next_step(
                "`cairn setup git` once per clone: branches then merge by task id, and the store's per-machine files (read cache, temp/) stay out of commits",
            ));
        }
        out
    })
}

pub fn run(ctx: &Ctx, command: ProjectCommand) -> Result<Report, Failure> {
    match command {
        ProjectCommand::Show => {
            let id = ctx.project()?;
            let project = ctx.block_on(ctx.service.load(&id))?.project;
            ctx.emit(&project, |style| show(style, &project))
        }
        ProjectCommand::List(page) => {
            let projects = ctx.block_on(ctx.service.projects())?;
            let size = |p: &Project| p.id.as_str().len() + p.name.len() + 30;
            ctx.emit_page(projects, &page, "projects", size, |style, page| {
                list(style, page.total, &page.items)
            })
        }
        ProjectCommand::SetStatus { status } => {
            let to: ProjectStatus = status.parse()?;
            let id = ctx.project()?;
            let project = ctx.block_on(ctx.service.set_project_status(&id, to))?;
            ctx.emit(&project, |style| {
                format!(
                    "Project {} is now {}\n",
                    style.bold(project.id.as_str()),
                    project.status
                )
            })
        }
    }
}

fn show(style: &Style, p: &Project) -> String {
    let mut out = format!("{} — {}\n", style.bold(p.id.as_str()), p.name);
    let phases = if p.phases.is_empty() {
        "none".to_owned()
    } else {
        p.phases
            .iter()
            .map(|ph| format!("{} ({})", ph.id, ph.status))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (key, value) in [
        ("status", p.status.to_string()),
        ("type", p.kind.to_string()),
        ("goal", p.goal.clone()),
        ("phases", phases),
        ("created", format_rfc3339(&p.created_at)),
        ("updated", format_rfc3339(&p.updated_at)),
    ] {
        let _ = writeln!(out, "  {}  {value}", style.dim(&format!("{key:<8}")));
    }
    out
}

fn list(style: &Style, total: usize, projects: &[Project]) -> String {
    if total == 0 {
        return format!(
            "No projects here yet.\n{}",
            style.next_step("cairn init --id ID --name NAME --goal GOAL")
        );
    }
    let mut table = Table::new(&["ID", "STATUS", "TYPE", "NAME"]);
    for p in projects {
        table.row(vec![
            Cell::styled(p.id.as_str(), style.bold(p.id.as_str())),
            p.status.to_string().into(),
            p.kind.to_string().into(),
            p.name.clone().into(),
        ]);
    }
    table.render(style)
}
