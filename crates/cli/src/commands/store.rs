//! `cairn store migrate | export DIR | import DIR`: the store's schema, and whole projects copied
//! between the run's store and a directory of files, through `StoreTransfer` (each adapter
//! writes only its own format).

use std::sync::Arc;

use cairn_domain::project::ProjectError;
use cairn_domain::project::ProjectId;
use cairn_domain::project::transfer::{Copied, StoreTransfer};
use cairn_domain::{DomainError, Error};
use serde::Serialize;

use super::{Ctx, Report};
use crate::cli::{StoreCommand, StoreCopyArgs};
use crate::exit::{Code, Failure};
use crate::wiring;

pub fn run(ctx: &Ctx, command: StoreCommand) -> Result<Report, Failure> {
    match command {
        StoreCommand::Migrate => migrate(ctx),
        StoreCommand::Export(args) => copy(ctx, args, Direction::Export),
        StoreCommand::Import(args) => copy(ctx, args, Direction::Import),
    }
}

fn migrate(ctx: &Ctx) -> Result<Report, Failure> {
    let store = ctx.global.store.as_deref();
    match ctx.block_on(wiring::migrate_store(&ctx.root, store))? {
        Some(migrated) => ctx.emit(&migrated, |_| {
            if migrated.applied.is_empty() {
                format!(
                    "{}: the schema is current (version {}); nothing to migrate\n",
                    migrated.store, migrated.version
                )
            } else {
                let mut out = format!("{}: applied", migrated.store);
                for m in &migrated.applied {
                    out.push_str(&format!(" {:03}_{}", m.version, m.name));
                }
                out.push_str(&format!(
                    "; the schema is at version {}\n",
                    migrated.version
                ));
                out
            }
        }),
        None => {
            // Exit 0: a deployment script may run `cairn store migrate` whatever the store is.
            let store = wiring::store_name(&ctx.root, store).map_err(bad_store)?;
            let value = serde_json::json!({ "store": "files", "applied": [], "version": null });
            ctx.emit(&value, |_| {
                format!("{store}: the filesystem store has no schema; nothing to migrate\n")
            })
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Direction {
    Export,
    Import,
}

#[derive(Serialize)]
struct Copy<'a> {
    from: String,
    to: String,
    projects: &'a [Copied],
}

fn copy(ctx: &Ctx, args: StoreCopyArgs, direction: Direction) -> Result<Report, Failure> {
    let dir = std::path::absolute(&args.dir).unwrap_or_else(|_| args.dir.clone());
    if direction == Direction::Import && !dir.join(".claude/projects").is_dir() {
        return Err(Failure::new(
            Code::NotFound,
            format!("{} holds no .claude/projects/ to import", dir.display()),
        )
        .with_hint("give the directory that holds .claude/projects/ (a repository root, or the DIR of `cairn store export DIR`)"));
    }
    let files = wiring::open_files_store(&dir, crate::clock::from_env()?);
    let store = Arc::clone(ctx.service.store());
    let store_name =
        wiring::store_name(&ctx.root, ctx.global.store.as_deref()).map_err(bad_store)?;
    let dir_name = format!("the files under {}", dir.display());
    let (transfer, from, to) = match direction {
        Direction::Export => (StoreTransfer::new(store, files), store_name, dir_name),
        Direction::Import => (StoreTransfer::new(files, store), dir_name, store_name),
    };
    let only = match ctx.global.project.as_deref() {
        Some(id) if ctx.global.project_on_command_line => Some(
            ProjectId::try_from(id.to_owned())
                .map_err(|e| Failure::new(Code::Usage, format!("--project {id}: {e}")))?,
        ),
        _ => None,
    };
    let copied = ctx
        .block_on(transfer.copy(only.as_ref(), args.replace))
        .map_err(|e| copy_failure(e, &from, &to))?;
    let verb = match direction {
        Direction::Export => "exported",
        Direction::Import => "imported",
    };
    let report = Copy {
        from,
        to,
        projects: &copied,
    };
    ctx.emit(&report, |_| {
        let mut out = format!(
            "{verb} {} project{} from {} to {}:\n",
            copied.len(),
            if copied.len() == 1 { "" } else { "s" },
            report.from,
            report.to
        );
        for c in &copied {
            out.push_str(&format!(
                "  {}: {} tasks, {} log entries, {} checkpoints, {} research briefs\n",
                c.project, c.tasks, c.log_entries, c.checkpoints, c.research_briefs
            ));
        }
        out
    })
}

fn bad_store(message: String) -> Failure {
    Failure::new(Code::Usage, message).with_kind("bad_store")
}

/// The store's failure, with the hints that fit a copy: nothing to copy, or a project the
/// destination has already.
fn copy_failure(error: Error, from: &str, to: &str) -> Failure {
    match error {
        Error::Domain(DomainError::Project(ProjectError::NoProjects)) => {
            Failure::new(Code::NotFound, format!("{from}: no project to copy"))
                .with_kind("not_found")
                .with_hint("`cairn project list` (with the same --store) shows what a store holds")
        }
        Error::Store(e @ cairn_domain::StoreError::AlreadyExists { .. }) => {
            let failure: Failure = e.into();
            failure.with_hint(format!(
                "nothing was written; {to} has that project already: pass --replace to overwrite it with the copy from {from}"
            ))
        }
        other => other.into(),
    }
}
