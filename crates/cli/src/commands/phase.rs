//! `phase …`: declaring, listing, starting and completing the project's phases.

use std::fmt::Write as _;

use cairn_domain::NextStep;
use cairn_domain::project::phases::PhaseProgress;
use cairn_domain::project::{Phase, PhaseStatus, TaskId};

use super::{Ctx, Report};
use crate::cli::PhaseCommand;
use crate::exit::Failure;
use crate::json::checkpoint_name;
use crate::output::{Cell, Style, Table, id_list};

pub fn run(ctx: &Ctx, command: PhaseCommand) -> Result<Report, Failure> {
    let p = ctx.project()?;
    match command {
        PhaseCommand::Add { id, name } => {
            let phase = ctx.block_on(ctx.service.add_phase(&p, &id, &name))?;
            ctx.emit(&phase, |style| {
                format!(
                    "Added phase {} ({}) [{}]\n{}",
                    style.bold(&phase.id),
                    phase.name,
                    phase.status,
                    style.next_step(&cairn_render::command(&NextStep::AddTaskToPhase {
                        phase: phase.id.clone()
                    }))
                )
            })
        }
        PhaseCommand::List => {
            let phases = ctx.block_on(ctx.service.phases(&p))?;
            ctx.emit(&crate::json::phases(&phases), |style| list(style, &phases))
        }
        PhaseCommand::Start { phase } => {
            let phase = ctx.block_on(ctx.service.start_phase(&p, &phase))?;
            ctx.emit(&phase, |style| moved(style, &phase))
        }
        PhaseCommand::Complete { phase, force } => {
            let done = ctx.block_on(ctx.service.complete_phase(&p, &phase, force))?;
            ctx.emit(&crate::json::phase_completed(&done), |style| {
                let mut out = moved(style, &done.phase);
                if !done.still_open.is_empty() {
                    let _ = writeln!(
                        out,
                        "  completed with {} task{} still open: {}",
                        done.still_open.len(),
                        if done.still_open.len() == 1 { "" } else { "s" },
                        open_ids(&done.still_open)
                    );
                    if done.still_open.len() > OPEN_SHOWN {
                        let _ = writeln!(
                            out,
                            "  `cairn task list --phase {}` lists them",
                            done.phase.id
                        );
                    }
                }
                if let Some(n) = done.checkpoint {
                    let _ = writeln!(out, "{} written", checkpoint_name(n));
                }
                out
            })
        }
    }
}

fn moved(style: &Style, phase: &Phase) -> String {
    format!(
        "Phase {} ({}) is {}\n",
        style.bold(&phase.id),
        phase.name,
        phase.status
    )
}

fn list(style: &Style, phases: &[PhaseProgress]) -> String {
    if phases.is_empty() {
        return format!(
            "No phases yet.\n{}",
            style.next_step(&cairn_render::command(&NextStep::AddPhase))
        );
    }
    let mut table = Table::new(&["ID", "STATUS", "DONE", "OPEN", "NAME"]);
    for ph in phases {
        let status = ph.status.to_string();
        let shown = match ph.status {
            PhaseStatus::Complete => style.green(&status),
            PhaseStatus::InProgress => style.yellow(&status),
            PhaseStatus::Pending | PhaseStatus::Skipped => style.dim(&status),
        };
        table.row(vec![
            Cell::styled(ph.id.clone(), style.bold(&ph.id)),
            Cell::styled(status, shown),
            format!("{}/{}", ph.complete, ph.tasks).into(),
            open_ids(&ph.open).into(),
            ph.name.clone().into(),
        ]);
    }
    table.render(style)
}

/// How many open task ids a row of `phase list` names before counting the rest.
const OPEN_SHOWN: usize = 3;

/// `T-002, T-003, T-004 +5`, or `-` when nothing is open.
fn open_ids(open: &[TaskId]) -> String {
    if open.is_empty() {
        return "-".to_owned();
    }
    let mut text = id_list(open.iter().take(OPEN_SHOWN));
    if open.len() > OPEN_SHOWN {
        text.push_str(&format!(" +{}", open.len() - OPEN_SHOWN));
    }
    text
}
