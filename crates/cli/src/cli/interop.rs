//! `cairn import` and `cairn export`: other tools' task files in and out.

use std::path::PathBuf;

use cairn_interop::Format;
use clap::Args;

fn format(text: &str) -> Result<Format, String> {
    text.parse()
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// taskmaster, claude, beads, taskwarrior, markdown or cairn
    #[arg(value_parser = format)]
    pub format: Format,

    /// The file to read (for `claude`, the task-list directory)
    pub path: PathBuf,

    /// Show what would change and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// taskmaster, claude, beads, taskwarrior, markdown or cairn
    #[arg(value_parser = format)]
    pub format: Format,

    /// Where to write (for `claude`, a directory); standard output when left out
    pub path: Option<PathBuf>,
}
