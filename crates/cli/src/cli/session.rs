//! `cairn session …`: execution sessions (SPEC §3), as clap types.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::PageArgs;

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Start an execution session: plan waves from the dependency graph, write the live session
    /// under .claude/sessions/__live_session__/, link the Claude Code task list, begin wave 1
    ///
    /// A live session whose lock is younger than 4 h refuses a second start (exit 4) unless
    /// --force; an older lock is stale and is taken over. Leftovers of a dead session are moved
    /// to .claude/sessions/interrupted-YYYYMMDD-HHMMSS/ and its under-way tasks reset first.
    #[command(after_help = "Examples:
  cairn session start
  cairn session start --ready --max-parallel 3
  cairn session start --tasks T-001,T-004 --group auth
  cairn session start --force          # take over a live-looking lock")]
    Start(SessionStartArgs),

    /// Show the live session: wave, active tasks, results so far, lock age
    #[command(after_help = "Examples:
  cairn session status
  cairn --json session status | jq .wave")]
    Status,

    /// Start or end one task of the session (a task_log.md row, progress.md lines and the
    /// project task's own transition, in one command)
    #[command(
        subcommand,
        after_help = "Examples:
  cairn session task start T-001
  cairn session task done T-001 --duration 2m34s --tokens 12000
  cairn session task fail T-002 --note \"tests still red\"
  cairn session task skip T-003"
    )]
    Task(SessionTaskCommand),

    /// Record a task's learnings; they are merged into execution_context.md at the next wave
    #[command(
        subcommand,
        after_help = "Examples:
  cairn session context add --task T-001 \"Project uses barrel exports\"
  cairn session context add --task T-001 --file notes.md"
    )]
    Context(SessionContextCommand),

    /// Move between waves
    #[command(
        subcommand,
        after_help = "Examples:
  cairn session wave next"
    )]
    Wave(SessionWaveCommand),

    /// End the session: Status: Complete, session_summary.md, then move everything to
    /// .claude/sessions/{session-id}/
    #[command(after_help = "Examples:
  cairn session finish")]
    Finish,

    /// Archive a dead session's leftovers to interrupted-YYYYMMDD-HHMMSS/ and reset its
    /// in-progress tasks (tasks it logged as PASS are completed; other agents' claims are kept)
    #[command(after_help = "Examples:
  cairn session recover
  cairn session recover --force   # the lock is younger than 4 h but the session is dead")]
    Recover {
        /// Recover even though the lock is younger than 4 h
        #[arg(long)]
        force: bool,
    },

    /// List archived and interrupted sessions
    #[command(after_help = "Examples:
  cairn session list
  cairn --json session list | jq -r '.items[].dir'")]
    List(PageArgs),
}

#[derive(Debug, Args)]
pub struct SessionStartArgs {
    /// Name the session `NAME-YYYYMMDD-HHMMSS` and run only tasks whose phase or a tag is NAME
    #[arg(long, value_name = "NAME")]
    pub group: Option<String>,
    /// Most tasks in one wave
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub max_parallel: u32,
    /// Run only these tasks (comma-separated), in dependency waves
    #[arg(
        long,
        value_name = "IDS",
        value_delimiter = ',',
        conflicts_with = "ready"
    )]
    pub tasks: Vec<String>,
    /// Run only the tasks ready now
    #[arg(long)]
    pub ready: bool,
    /// Take over a lock younger than 4 h
    #[arg(long)]
    pub force: bool,
    /// Claude Code task list to link (default: $CLAUDE_CODE_TASK_LIST_ID from the environment or .claude/settings.json, else the project id)
    #[arg(long, value_name = "ID")]
    pub list: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SessionTaskCommand {
    /// The task goes IN_PROGRESS and joins the active tasks
    #[command(after_help = "Examples:\n  cairn session task start T-001")]
    Start {
        #[arg(value_name = "ID")]
        id: String,
    },
    /// PASS: logged, listed as completed, and the task COMPLETE
    #[command(
        after_help = "Examples:\n  cairn session task done T-001 --duration 2m34s --tokens 12000"
    )]
    Done(TaskEndArgs),
    /// FAIL: logged; the task back to PENDING for a retry, BLOCKED after its third attempt
    #[command(after_help = "Examples:\n  cairn session task fail T-002 --note \"tests still red\"")]
    Fail(TaskEndArgs),
    /// Not now: off the active tasks (no row), the task back to PENDING
    #[command(after_help = "Examples:\n  cairn session task skip T-003")]
    Skip(TaskEndArgs),
}

#[derive(Debug, Args)]
pub struct TaskEndArgs {
    #[arg(value_name = "ID")]
    pub id: String,
    /// How long the task took: `2m 34s`, `2m34s`, `94s`, `1h 5m`
    #[arg(long, value_name = "D")]
    pub duration: Option<String>,
    /// Tokens the task used
    #[arg(long, value_name = "N")]
    pub tokens: Option<u64>,
    /// Why, in a few words (kept in the progress log)
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SessionContextCommand {
    /// Write the task's context-task-{id}.md (replacing an earlier one)
    #[command(
        after_help = "Examples:\n  cairn session context add --task T-001 \"Uses barrel exports\""
    )]
    Add {
        #[arg(long, value_name = "ID")]
        task: String,
        /// The learnings, one per line
        #[arg(
            value_name = "TEXT",
            required_unless_present = "file",
            conflicts_with = "file"
        )]
        text: Option<String>,
        /// Read the learnings from this file (`-` for stdin)
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionWaveCommand {
    /// Merge the wave's task contexts into execution_context.md (compacting old history) and
    /// begin the next wave
    #[command(after_help = "Examples:\n  cairn session wave next")]
    Next,
}
