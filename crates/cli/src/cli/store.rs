//! `cairn store`: the project store itself — its schema, and copying projects in and out.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Apply the PostgreSQL store's schema migrations it lacks and say which ran (idempotent;
    /// every command also applies them on first use). On the files there is nothing to migrate.
    #[command(after_help = "Examples:
  cairn --store postgres://cairn@db.internal/team store migrate
  CAIRN_STORE=postgres://cairn@db.internal/team cairn --json store migrate")]
    Migrate,

    /// Write the store's projects as the files the filesystem store keeps (project.json,
    /// tasks.json, progress/log.md, checkpoints/, research/, velocity.json under
    /// DIR/.claude/projects/ID/)
    #[command(after_help = "Examples:
  cairn --store postgres://cairn@db.internal/team store export /tmp/backup
  cairn --store postgres://cairn@db.internal/team --project web store export . --replace
                                     # the database's copy of `web` into this repository's files")]
    Export(StoreCopyArgs),

    /// Load the projects of DIR's files (DIR/.claude/projects/) into the store
    #[command(after_help = "Examples:
  cairn --store postgres://cairn@db.internal/team store import .
                                     # move this repository's projects into the team database
  cairn --store postgres://cairn@db.internal/team store import /tmp/backup --replace")]
    Import(StoreCopyArgs),
}

#[derive(Debug, Args)]
pub struct StoreCopyArgs {
    /// A directory holding (or to hold) .claude/projects/, like a repository root
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// Replace a project the destination already has (refused otherwise, nothing written)
    #[arg(long)]
    pub replace: bool,
}
