//! `cairn tasklist …`: the bridge to Claude Code's own task lists.

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum TasklistCommand {
    /// Write the project's tasks into the Claude Code task list (`T-007` becomes `7.json`)
    ///
    /// Files cairn did not write are never written over or deleted: a Claude Code task at a
    /// task's number is reported as a conflict (pull it first). Linked files of cancelled tasks
    /// are removed.
    #[command(after_help = "Examples:
  cairn tasklist push
  cairn tasklist push --list my-feature
  cairn --json tasklist push | jq '.written[].list_task'")]
    Push(TaskListArgs),

    /// Bring the list's changes into the project, each through cairn's rules
    ///
    /// A status changed in the list since the last sync moves the task (`completed` → COMPLETE,
    /// starting it first if needed); a move the rules refuse is reported, not forced. A task
    /// created in the list becomes a project task.
    #[command(after_help = "Examples:
  cairn tasklist pull
  cairn --json tasklist pull | jq .refused")]
    Pull(TaskListArgs),

    /// Show what differs between the project and the list, in both directions
    #[command(after_help = "Examples:
  cairn tasklist status
  cairn tasklist status --list my-feature")]
    Status(TaskListArgs),
}

#[derive(Debug, Args)]
pub struct TaskListArgs {
    /// The task list (a directory under ~/.claude/tasks, or $CLAUDE_CONFIG_DIR/tasks). Default:
    /// $CLAUDE_CODE_TASK_LIST_ID, else that variable in the env block of .claude/settings.json,
    /// else the project id
    #[arg(long, value_name = "ID")]
    pub list: Option<String>,
}
