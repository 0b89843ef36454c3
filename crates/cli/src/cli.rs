//! The command line, as clap derive types. Parsing only: what each command does is in
//! [`crate::commands`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod orch;
pub use orch::*;
mod board;
pub use board::*;
mod plan;
pub use plan::*;

use crate::exit::EXIT_CODES_HELP;
use crate::json::JSON_HELP;

mod session;
pub use session::*;
mod tasklist;
pub use tasklist::*;
mod interop;
pub use interop::*;
mod merge;
pub use merge::*;
mod store;
pub use store::*;

/// A command group whose subcommands clap builds only when the group is entered
/// ([`clap::Command::defer`]). Building every command's arguments up front cost 0.5 ms of each
/// run's start — a tenth of `task complete` on a small store — for the one command it runs.
/// `--help` of any command and [`clap::Command::build`] still see the whole tree; what reads it
/// all at once, before building, asks for [`whole_command`].
#[derive(Debug)]
pub struct Deferred<T>(pub T);

/// Whether [`Deferred`] groups are built at once: set for good by [`whole_command`].
static WHOLE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The command line with every group built at once, for a reader of the whole tree: a completion
/// script also completes `cairn help <group> <command>`, and the root's `help` subcommand mirrors
/// the groups as they stand when the root is built — deferred ones have no subcommands yet.
pub fn whole_command() -> clap::Command {
    WHOLE.store(true, std::sync::atomic::Ordering::Relaxed);
    <Cli as clap::CommandFactory>::command()
}

impl<T> Deferred<T> {
    fn defer(cmd: clap::Command, augment: fn(clap::Command) -> clap::Command) -> clap::Command {
        if WHOLE.load(std::sync::atomic::Ordering::Relaxed) {
            augment(cmd)
        } else {
            cmd.defer(augment)
        }
    }
}

impl<T: clap::FromArgMatches> clap::FromArgMatches for Deferred<T> {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Self)
    }
    fn from_arg_matches_mut(matches: &mut clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Self)
    }
    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }
    fn update_from_arg_matches_mut(
        &mut self,
        matches: &mut clap::ArgMatches,
    ) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

impl<T: Subcommand> Subcommand for Deferred<T> {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        Self::defer(cmd, T::augment_subcommands)
    }
    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        Self::defer(cmd, T::augment_subcommands_for_update)
    }
    fn has_subcommand(name: &str) -> bool {
        T::has_subcommand(name)
    }
}

const ROOT_HELP: &str = "Examples:
  cairn init --id web-app --name \"Web app\" --goal \"Ship the first public release\"
  cairn task add \"Design the schema\" --priority HIGH --estimate 45
  cairn task next
  cairn task start T-001 && cairn task complete T-001
  cairn status
  cairn --json task list --ready | jq '.items[].id'

Environment:
  CLAUDE_PROJECT_DIR  repository root when --root is not given (else the enclosing git work tree,
                      else the current directory)
  CAIRN_PROJECT       default for --project
  NO_COLOR            set (non-empty) to turn colour off; colour is also off when stdout is not a
                      terminal
  CAIRN_LOCK_TIMEOUT_MS
                      how long a writer waits for another cairn process's lock (default 10000)
  CAIRN_NOW           an RFC 3339 instant that fixes cairn's clock for the whole run (a testing
                      and replay aid: every timestamp written is this instant)
  CAIRN_PLAN_HEX      8 lowercase hex digits used as the suffix of the next plan directory
                      (a testing and replay aid, like CAIRN_NOW)
";

/// cairn: durable, crash-safe working memory for AI coding agents.
///
/// Projects and tasks live under `<root>/.claude/projects/<id>/` as plain JSON and an append-only
/// Markdown log. Every change is checked by cairn's rules, written atomically under a lock, and
/// logged; a damaged tasks.json is restored from the newest valid checkpoint.
#[derive(Debug, Parser)]
#[command(
    name = "cairn",
    version,
    about = "cairn — durable working memory for AI coding agents: projects and tasks on plain files",
    long_about = None,
    after_help = format!("{ROOT_HELP}\n{JSON_HELP}\n\n{EXIT_CODES_HELP}"),
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// Repository root holding .claude/projects (default: $CLAUDE_PROJECT_DIR, else the enclosing
    /// git work tree, else the current directory)
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// Project to work on (default: the only project, else the one IN_PROGRESS)
    #[arg(long, global = true, value_name = "ID", env = "CAIRN_PROJECT")]
    pub project: Option<String>,

    /// Print machine-readable JSON on stdout (stable shapes, listed in `cairn --help`)
    #[arg(long, global = true)]
    pub json: bool,

    /// Project store: a postgres:// URL shared by a team (default: `store = "…"` in
    /// .claude/cairn.toml, else files under the root)
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "CAIRN_STORE",
        hide_env_values = true
    )]
    pub store: Option<String>,

    /// Whether `--project` came from the command line rather than `CAIRN_PROJECT`: a default
    /// from the environment is not a filter, so only a typed one is refused where it cannot
    /// apply. Set by main from the parser's value sources.
    #[arg(skip)]
    pub project_on_command_line: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a project in this repository
    #[command(after_help = "Examples:
  cairn init --id web-app --name \"Web app\" --goal \"Ship the first public release\"
  cairn init --id docs --name Docs --goal \"Rewrite the user guide\" --type content")]
    Init(InitArgs),

    /// Show, list or change projects
    #[command(
        subcommand,
        after_help = "Examples:
  cairn project show
  cairn project list
  cairn project set-status PAUSED"
    )]
    Project(Deferred<ProjectCommand>),

    /// Add, inspect, move and schedule tasks
    #[command(
        subcommand,
        after_help = "Examples:
  cairn task add \"Write the parser\" --estimate 45
  cairn task next
  cairn task start T-001
  cairn task complete T-001
  cairn task list --status IN_PROGRESS"
    )]
    Task(Deferred<TaskCommand>),

    /// Declare, list, start and complete the project's phases
    #[command(
        subcommand,
        after_help = "Examples:
  cairn phase add design --name \"Design the API\"
  cairn phase list
  cairn phase start design
  cairn phase complete design"
    )]
    Phase(Deferred<PhaseCommand>),

    /// Orchestration sessions: phases, retries, tokens, errors, archive and resume
    #[command(
        subcommand,
        after_help = "Examples:
  cairn orch start --topic \"Auth rewrite\" --phase schema:coder --phase api:coder:1
  cairn orch phase start 1 --agent coder
  cairn orch tokens --agent coder --input 1200 --output 300
  cairn orch phase complete 1
  cairn orch resume
  cairn orch archive

State dir: $MAESTRO_STATE_DIR (relative to the root), default docs/maestro."
    )]
    Orch(Deferred<OrchCommand>),

    /// List, write or restore snapshots of tasks.json
    #[command(
        subcommand,
        after_help = "Examples:
  cairn checkpoint list
  cairn checkpoint write
  cairn checkpoint restore 3"
    )]
    Checkpoint(Deferred<CheckpointCommand>),

    /// Read the progress log
    #[command(after_help = "Examples:
  cairn log --tail 20
  cairn log --event TASK_COMPLETE --tail 5
  cairn log --task T-004")]
    Log(LogArgs),

    /// Recompute and show velocity (throughput, estimate accuracy, ETA)
    #[command(after_help = "Examples:
  cairn velocity
  cairn --json velocity | jq .eta")]
    Velocity,

    /// Resume reconciliation and the staleness check
    ///
    /// Tasks left IN_RESEARCH, IN_PROGRESS or VALIDATING by an interrupted session go back to
    /// RESEARCHED (a fresh research brief exists) or PENDING. Tasks in progress for more than 4×
    /// their estimate are reset to PENDING, and BLOCKED the second time.
    #[command(after_help = "Examples:
  cairn reconcile --dry-run
  cairn reconcile
  cairn reconcile --staleness-only")]
    Reconcile(ReconcileArgs),

    /// Check the store: orphans, dangling ids, cycles, parent/child mismatches, damaged files,
    /// leftover temporary files
    ///
    /// Exits 0 when everything is clean, 9 when problems remain. With --fix, repairs only what is
    /// safe (dangling references, one-sided parent links, stale temporary files, parents whose
    /// subtasks are all complete) and logs each repair.
    ///
    /// By default the files are checked as every command reads them: tasks.json in full unless it
    /// is the very file cairn validated and wrote, checkpoints for being cut short, the log for a
    /// torn last entry; this takes about as long as one read. --full validates every file against
    /// its schema, every checkpoint in full and the whole log (seconds on a very large store).
    #[command(after_help = "Examples:
  cairn doctor
  cairn doctor --fix
  cairn doctor --full")]
    Doctor(DoctorArgs),

    /// A human summary: progress, work under way, blocked tasks, what is next
    #[command(after_help = "Examples:
  cairn status
  cairn --project web-app status
  cairn --json status | jq .leaves_complete")]
    Status,

    /// Compact context for an agent (at most 2,000 characters, however large the project)
    #[command(after_help = "Examples:
  cairn prime
  cairn prime --header \"Project memory (cairn):\"")]
    Prime(PrimeArgs),

    /// Run the project's tasks in an execution session: waves, a live progress view, a task log
    /// and shared learnings under .claude/sessions/
    #[command(
        subcommand,
        after_help = "Examples:
  cairn session start --max-parallel 3
  cairn session task start T-001
  cairn session task done T-001 --duration 2m34s
  cairn session wave next
  cairn session finish"
    )]
    Session(Deferred<SessionCommand>),
    /// Iterative plans: EXPLORE → PLAN → EXECUTE → REFLECT → RE-PLAN → CLOSE, enforced
    #[command(
        subcommand,
        after_help = "Examples:
  cairn plan new \"Move sessions to signed tokens\"
  cairn plan go PLAN --reason \"callers mapped\"
  cairn plan approve
  cairn plan status
  cairn plan resume"
    )]
    Plan(Deferred<PlanCommand>),

    /// Register cairn's hooks with Claude Code
    #[command(
        subcommand,
        after_help = "Examples:
  cairn setup claude             # this repository's .claude/settings.json
  cairn setup claude --global    # ~/.claude/settings.json, for every repository
  cairn setup claude --remove    # take exactly cairn's entries out again"
    )]
    Setup(Deferred<SetupCommand>),

    /// Mirror the project into a Claude Code task list and back
    #[command(
        subcommand,
        after_help = "Examples:
  cairn tasklist push            # project tasks -> ~/.claude/tasks/<list>/
  cairn tasklist status          # what differs, both ways
  cairn tasklist pull            # list changes -> project, through cairn's rules"
    )]
    Tasklist(Deferred<TasklistCommand>),

    /// Serve every wing as MCP tools on stdin/stdout (for Claude Code and other MCP clients)
    #[command(after_help = "Examples:
  cairn mcp                      # what .mcp.json starts: {\"command\": \"cairn\", \"args\": [\"mcp\"]}
  cairn --project web-app mcp    # tools work on this project only
  cairn setup claude             # registers the server in the repository's .mcp.json")]
    Mcp,

    /// Bring tasks in from another tool's file (re-importing changes nothing)
    #[command(after_help = "Examples:
  cairn import taskmaster .taskmaster/tasks/tasks.json --dry-run
  cairn import beads .beads/issues.jsonl
  task export > tw.json && cairn import taskwarrior tw.json
  cairn import claude ~/.claude/tasks/my-list
  cairn import markdown TODO.md
  cairn import cairn backup.json     # a file of `cairn export cairn`")]
    Import(ImportArgs),

    /// Write the project's tasks in another tool's format
    #[command(after_help = "Examples:
  cairn export markdown              # to standard output
  cairn export taskmaster .taskmaster/tasks/tasks.json
  cairn export taskwarrior | task import
  cairn export claude ~/.claude/tasks/my-list
  cairn export cairn backup.json")]
    Export(ExportArgs),

    /// The git merge driver for tasks.json, project.json, progress/log.md, velocity.json and
    /// checkpoints (git runs it; see
    /// README "Git: merging branches" for the set-up): merges by task id and field, exits 4 when
    /// a person must decide
    #[command(
        name = "merge-driver",
        after_help = "Examples:
  git config merge.cairn.driver \"cairn merge-driver %O %A %B %P\"   # what git runs
  cairn merge-driver base.json ours.json theirs.json .claude/projects/web-app/tasks.json
                                     # by hand: the result replaces ours.json

Edits to different tasks or fields merge; tasks both sides added get distinct ids (theirs
renumbered, their dependencies and parents rewritten); a field both sides changed is written
between <<<<<<< ours / ======= / >>>>>>> theirs markers and exits 4, as does a merged list the
rules find wrong (e.g. a parent completed on one side, a child added on the other). The log
merges as a union in time order, velocity.json by both sides' completions; a checkpoint both
sides wrote under one number keeps ours'."
    )]
    MergeDriver(MergeDriverArgs),
    /// Serve a live Kanban of the repository's cairn state to a local browser
    #[command(after_help = "Examples:
  cairn board                    # prints http://127.0.0.1:PORT/?token=… and serves until Ctrl-C
  cairn board --port 7777 --open # a fixed port, opened in the default browser")]
    Board(BoardArgs),

    /// The project store itself: apply PostgreSQL migrations, copy projects to and from files
    #[command(
        subcommand,
        after_help = "Examples:
  cairn --store postgres://cairn@db.internal/team store migrate
  cairn --store postgres://cairn@db.internal/team store import .      # files -> database
  cairn --store postgres://cairn@db.internal/team store export /tmp/b # database -> files"
    )]
    Store(Deferred<StoreCommand>),

    /// Print a shell completion script
    #[command(after_help = "Examples:
  cairn completions bash > ~/.local/share/bash-completion/completions/cairn
  cairn completions zsh > \"${fpath[1]}/_cairn\"
  cairn completions fish > ~/.config/fish/completions/cairn.fish")]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
pub enum SetupCommand {
    /// Merge cairn-hook into Claude Code's settings.json, keeping everything else (a backup of the
    /// previous file is written beside it)
    #[command(after_help = "Examples:
  cairn setup claude
  cairn setup claude --global
  cairn setup claude --remove
  cairn setup claude --hook /opt/cairn/bin/cairn-hook")]
    Claude(SetupClaudeArgs),

    /// Make git merge cairn's files with `cairn merge-driver`: the merge attributes in
    /// .gitattributes, the store's per-machine files in .gitignore, the driver in this clone's
    /// git config
    #[command(after_help = "Examples:
  cairn setup git                  # then commit .gitattributes and .gitignore
  cairn setup git --cairn /opt/cairn/bin/cairn
  cairn setup git --remove         # takes out exactly what it added")]
    Git(SetupGitArgs),
}

#[derive(Debug, Args)]
pub struct SetupGitArgs {
    /// Remove cairn's lines and the driver instead of adding them
    #[arg(long)]
    pub remove: bool,

    /// The cairn git runs (default: this cairn's own path, so the driver works without PATH)
    #[arg(long, value_name = "COMMAND")]
    pub cairn: Option<String>,
}

#[derive(Debug, Args)]
pub struct SetupClaudeArgs {
    /// Change ~/.claude/settings.json (or $CLAUDE_CONFIG_DIR/settings.json) instead of the
    /// repository's .claude/settings.json
    #[arg(long)]
    pub global: bool,

    /// Remove cairn's hook entries instead of adding them
    #[arg(long)]
    pub remove: bool,

    /// The command Claude Code runs (default: the cairn-hook installed beside this cairn, else
    /// `cairn-hook` on PATH)
    #[arg(long, value_name = "COMMAND")]
    pub hook: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "lower")]
pub enum ProjectKind {
    Software,
    Content,
    Research,
    Business,
    Auto,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Project id: lowercase letters, digits and dashes (it names the directory)
    #[arg(long, value_name = "ID")]
    pub id: String,
    /// Display name
    #[arg(long)]
    pub name: String,
    /// What the project is for, in at least 10 characters
    #[arg(long)]
    pub goal: String,
    /// Kind of project
    #[arg(long = "type", value_enum, default_value = "software")]
    pub kind: ProjectKind,
}

#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// Show the current project record
    #[command(after_help = "Examples:
  cairn project show
  cairn --project web-app --json project show")]
    Show,
    /// List the projects in this repository
    #[command(after_help = "Examples:
  cairn project list
  cairn --json project list | jq -r '.items[].id'")]
    List(PageArgs),
    /// Change the project's status (INITIALIZING, READY, PLANNED, IN_PROGRESS, PAUSED, BLOCKED,
    /// COMPLETE, CANCELLED)
    #[command(after_help = "Examples:
  cairn project set-status PAUSED
  cairn project set-status in-progress")]
    SetStatus {
        #[arg(value_name = "STATUS")]
        status: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Add a task (under a parent with --parent)
    #[command(after_help = "Examples:
  cairn task add \"Set up CI\" --priority HIGH --estimate 30
  cairn task add \"Write the login form\" --depends T-001,T-002 --criterion \"form validates e-mail\"
  cairn task add \"Handle expired tokens\" --parent T-004 --phase auth")]
    Add(AddArgs),

    /// Change a task's title, description, priority, estimate, criteria, phase, tags or
    /// external id
    ///
    /// Validated like `task add` and logged as TASK_UPDATED (each field old → new). Status,
    /// parent and dependencies have their own commands. On a COMPLETE or CANCELLED task only
    /// --title, --description, --tag/--untag and --external-id are accepted: priority,
    /// estimate, criteria and phase were the plan of work that is now history (velocity and
    /// phase progress are computed from them). An empty --description, --phase or --external-id
    /// clears the field.
    #[command(after_help = "Examples:
  cairn task edit T-003 --title \"Design the API\"
  cairn task edit T-003 --priority HIGH --estimate 90
  cairn task edit T-003 --remove-criterion 2 --add-criterion \"Endpoints documented in docs/api.md\"
  cairn task edit T-003 --tag backend --untag frontend --external-id GH-42
  cairn task edit T-003 --phase \"\"            # take it out of its phase")]
    Edit(EditArgs),

    /// List tasks, filtered
    #[command(after_help = "Examples:
  cairn task list
  cairn task list --status IN_PROGRESS,VALIDATING
  cairn task list --ready
  cairn task list --offset 50
  cairn task list --parent T-004
  cairn --json task list --phase auth --all")]
    List(ListArgs),

    /// Show one task in full
    #[command(after_help = "Examples:
  cairn task show T-004
  cairn task show 4")]
    Show { id: String },

    /// Start researching a task (IN_RESEARCH), or with --done record that research is done
    #[command(after_help = "Examples:
  cairn task research T-003
  cairn task research T-003 --done --brief notes.md")]
    Research {
        id: String,
        /// Research is finished: move to RESEARCHED
        #[arg(long)]
        done: bool,
        /// Store this file (`-` for stdin) as the task's research brief
        #[arg(long, value_name = "FILE")]
        brief: Option<PathBuf>,
    },

    /// Start work on a task (IN_PROGRESS); its dependencies must be complete
    #[command(after_help = "Examples:
  cairn task start T-003")]
    Start { id: String },

    /// Move a task to VALIDATING (work done, being checked)
    #[command(after_help = "Examples:
  cairn task validate T-003")]
    Validate { id: String },

    /// Complete a task; its parent completes by itself when all its subtasks are complete
    #[command(after_help = "Examples:
  cairn task complete T-003
  cairn task complete T-003 --actual 40")]
    Complete {
        id: String,
        /// Minutes actually spent (default: measured from when it was started)
        #[arg(long, value_name = "MIN")]
        actual: Option<u32>,
        #[command(flatten)]
        actor: ActorArgs,
    },

    /// Block a task, saying why
    #[command(after_help = "Examples:
  cairn task block T-003 --reason \"waiting for API keys\"")]
    Block {
        id: String,
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        actor: ActorArgs,
    },

    /// Unblock a task (a leaf goes back to PENDING, a parent to IN_PROGRESS)
    #[command(after_help = "Examples:
  cairn task unblock T-003")]
    Unblock { id: String },

    /// Cancel a task (and its open subtasks)
    #[command(after_help = "Examples:
  cairn task cancel T-007 --reason \"out of scope\"")]
    Cancel {
        id: String,
        #[arg(long)]
        reason: Option<String>,
        #[command(flatten)]
        actor: ActorArgs,
    },

    /// Put a task back to PENDING (research briefs are kept)
    #[command(after_help = "Examples:
  cairn task reset T-003")]
    Reset {
        id: String,
        #[arg(long)]
        reason: Option<String>,
        #[command(flatten)]
        actor: ActorArgs,
    },

    /// Move a task to any status the rules allow (for scripts)
    #[command(after_help = "Examples:
  cairn task move T-003 --to IN_PROGRESS
  cairn task move T-003 --to BLOCKED --reason \"flaky test\"
  cairn task move T-003 --to COMPLETE --actual 25")]
    Move {
        id: String,
        /// Target status
        #[arg(long, value_name = "STATUS")]
        to: String,
        #[arg(long)]
        reason: Option<String>,
        #[arg(long, value_name = "MIN")]
        actual: Option<u32>,
        #[command(flatten)]
        actor: ActorArgs,
    },

    /// Claim a ready task for an agent (IN_PROGRESS, held until its lease lapses)
    ///
    /// Takes the task (or with --next the one `task next` would pick, chosen in the same
    /// transaction, so racing agents never get the same task) from PENDING or RESEARCHED to
    /// IN_PROGRESS and records the holder and the lease's expiry. While the lease runs, other
    /// agents cannot complete, block, cancel or reset the task without --force, and resume
    /// reconciliation leaves it alone; renew it with `task heartbeat`. A lapsed lease is
    /// reclaimable. Claiming a task you already hold renews the lease.
    #[command(after_help = "Examples:
  cairn task claim --next --agent worker-1
  cairn task claim T-003 --agent worker-1 --lease 1h
  CAIRN_AGENT=worker-1 cairn --json task claim --next | jq -r .id")]
    Claim(ClaimArgs),

    /// Extend the lease of a task you hold (the holder only)
    #[command(after_help = "Examples:
  cairn task heartbeat T-003 --agent worker-1
  cairn task heartbeat T-003 --agent worker-1 --lease 2h")]
    Heartbeat {
        id: String,
        #[command(flatten)]
        lease: LeaseArgs,
    },

    /// Split a task into subtasks (the task becomes their parent and moves to IN_PROGRESS)
    #[command(after_help = "Examples:
  cairn task decompose T-004 --into \"Write the parser\" --into \"Write the printer\"")]
    Decompose {
        id: String,
        /// A subtask title (repeat for several)
        #[arg(long = "into", value_name = "TITLE", required = true)]
        into: Vec<String>,
    },

    /// Add (or with --remove, remove) a dependency: ID waits for --on
    #[command(after_help = "Examples:
  cairn task depend T-005 --on T-003
  cairn task depend T-005 --on T-003 --remove")]
    Depend {
        id: String,
        #[arg(long, value_name = "ID")]
        on: String,
        #[arg(long)]
        remove: bool,
    },

    /// The task to do next: ready, by priority, critical path, estimate, then age
    #[command(after_help = "Examples:
  cairn task next
  cairn --json task next | jq -r .id")]
    Next,

    /// Every ready task, in the order `next` hands them out
    #[command(after_help = "Examples:
  cairn task ready
  cairn task ready --limit 5
  cairn --json task ready | jq -r '.items[].id'")]
    Ready(PageArgs),

    /// Ready and pending leaves in topological layers (tasks in one wave can run in parallel)
    #[command(after_help = "Examples:
  cairn task waves
  cairn --json task waves | jq '.waves[0]'")]
    Waves(PageArgs),

    /// Dependencies (solid) and hierarchy (dotted) as Mermaid or Graphviz dot
    ///
    /// A page holds tasks (nodes) in tasks.json order with every edge that touches them; a task
    /// off the page that an edge reaches appears as a bare id. A partial graph ends with a
    /// comment saying how many tasks were left out.
    #[command(after_help = "Examples:
  cairn task graph --all > tasks.mmd
  cairn task graph --limit 20
  cairn task graph --format dot --all | dot -Tsvg > tasks.svg")]
    Graph {
        #[arg(long, value_enum, default_value = "mermaid")]
        format: GraphFormat,
        #[command(flatten)]
        page: PageArgs,
    },
}

/// Who acts on a task that an agent may hold a claim on.
#[derive(Debug, Clone, Args)]
pub struct ActorArgs {
    /// The agent acting (default: $CAIRN_AGENT). Refused when another agent holds a live claim
    /// on the task; without any agent the change is a person's and is allowed
    #[arg(long, env = "CAIRN_AGENT", value_name = "NAME")]
    pub agent: Option<String>,
    /// Act although another agent holds a live claim on the task
    #[arg(long)]
    pub force: bool,
}

/// The holder of a claim and how long it holds.
#[derive(Debug, Clone, Args)]
pub struct LeaseArgs {
    /// The agent holding the claim: a session id or a short name (default: $CAIRN_AGENT)
    #[arg(long, env = "CAIRN_AGENT", value_name = "NAME")]
    pub agent: String,
    /// How long the claim holds without a heartbeat: 90s, 30m, 1h, 1h30m (at most 24h)
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_lease)]
    pub lease: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct ClaimArgs {
    /// The task to claim (or --next)
    #[arg(required_unless_present = "next", conflicts_with = "next")]
    pub id: Option<String>,
    /// Claim the task `task next` would pick
    #[arg(long)]
    pub next: bool,
    #[command(flatten)]
    pub lease: LeaseArgs,
}

fn parse_lease(text: &str) -> Result<std::time::Duration, String> {
    cairn_domain::execution::duration::parse_duration(text)
        .ok_or_else(|| format!("`{text}` is not a duration: write it like 90s, 30m, 1h or 1h30m"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    Mermaid,
    Dot,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// What to do, in at least 3 characters
    pub title: String,
    /// epic, story, task, subtask or micro-task (default: task, or one below the parent)
    #[arg(long)]
    pub level: Option<String>,
    /// Parent task id
    #[arg(long, value_name = "ID")]
    pub parent: Option<String>,
    /// Tasks that must be complete first, comma-separated
    #[arg(long, value_name = "ID,ID", value_delimiter = ',')]
    pub depends: Vec<String>,
    /// CRITICAL, HIGH, MEDIUM or LOW (default: MEDIUM, or the parent's)
    #[arg(long)]
    pub priority: Option<String>,
    /// Estimated minutes (1-480)
    #[arg(long, value_name = "MIN")]
    pub estimate: Option<u32>,
    /// A completion criterion (repeat for several; at most 12, each at least 5 characters)
    #[arg(long = "criterion", value_name = "TEXT")]
    pub criteria: Vec<String>,
    /// Longer description (context, links, notes)
    #[arg(long, value_name = "TEXT")]
    pub description: Option<String>,
    /// Phase id (lowercase letters, digits and dashes)
    #[arg(long)]
    pub phase: Option<String>,
    /// A tag (repeat for several)
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
}

#[derive(Debug, Args)]
pub struct EditArgs {
    /// The task to change
    pub id: String,
    /// New title, at least 3 characters
    #[arg(long)]
    pub title: Option<String>,
    /// New description (empty clears it)
    #[arg(long, value_name = "TEXT")]
    pub description: Option<String>,
    /// CRITICAL, HIGH, MEDIUM or LOW
    #[arg(long)]
    pub priority: Option<String>,
    /// Estimated minutes (1-480)
    #[arg(long, value_name = "MIN")]
    pub estimate: Option<u32>,
    /// Add a completion criterion (repeatable; at least 5 characters, at most 12 in all)
    #[arg(long = "add-criterion", value_name = "TEXT")]
    pub add_criteria: Vec<String>,
    /// Remove criterion N, counting from 1 as `task show` lists them (repeatable; removals
    /// happen before additions)
    #[arg(long = "remove-criterion", value_name = "N")]
    pub remove_criteria: Vec<usize>,
    /// Move to this phase id (empty takes it out of its phase)
    #[arg(long)]
    pub phase: Option<String>,
    /// Add a tag (repeatable)
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Remove a tag (repeatable)
    #[arg(long = "untag", value_name = "TAG")]
    pub untags: Vec<String>,
    /// The id of this task in another tracker, e.g. GH-42 (empty clears it)
    #[arg(long = "external-id", value_name = "ID")]
    pub external_id: Option<String>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only these statuses, comma-separated
    #[arg(long, value_name = "S,S", value_delimiter = ',')]
    pub status: Vec<String>,
    /// Only this level
    #[arg(long, value_name = "L")]
    pub level: Option<String>,
    /// Only this phase
    #[arg(long, value_name = "P")]
    pub phase: Option<String>,
    /// Only ready tasks (leaves in PENDING or RESEARCHED whose dependencies are complete)
    #[arg(long)]
    pub ready: bool,
    /// Only BLOCKED tasks
    #[arg(long)]
    pub blocked: bool,
    /// Only the subtasks of this task (its direct children)
    #[arg(long, value_name = "ID")]
    pub parent: Option<String>,
    #[command(flatten)]
    pub page: PageArgs,
}

/// Which page of a list to print. Every command that lists things takes these.
#[derive(Debug, Clone, Copy, Default, Args)]
#[command(next_help_heading = "Paging (default: 50 rows or 6,000 characters, whichever is less)")]
pub struct PageArgs {
    /// Print at most N rows (at least 1)
    #[arg(long, value_name = "N", conflicts_with = "all", value_parser = positive)]
    pub limit: Option<usize>,
    /// Skip the first N rows (the footer of a partial page gives the next offset)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: usize,
    /// Print every row, however many
    #[arg(long)]
    pub all: bool,
}

/// A page of no rows would never reach the end of the list.
fn positive(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("a page holds at least 1 row; use --all for every row".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

#[derive(Debug, Subcommand)]
pub enum PhaseCommand {
    /// Declare a phase (PENDING) in project.json; tasks join it with `--phase ID`
    #[command(after_help = "Examples:
  cairn phase add design --name \"Design the API\"
  cairn task add \"Sketch the endpoints\" --phase design")]
    Add {
        /// Phase id: lowercase letters, digits and dashes
        id: String,
        /// Display name
        #[arg(long)]
        name: String,
    },
    /// List the phases with their status and progress (complete/total tasks, open tasks)
    #[command(after_help = "Examples:
  cairn phase list
  cairn --json phase list | jq -r '.[] | select(.status == \"IN_PROGRESS\") | .id'")]
    List,
    /// Start a phase: PENDING → IN_PROGRESS (logs PHASE_STARTED)
    #[command(after_help = "Examples:
  cairn phase start design")]
    Start { phase: String },
    /// Mark a phase COMPLETE, log PHASE_COMPLETE and write a checkpoint
    ///
    /// Refused (exit 4) while tasks of the phase are unfinished, naming them; --force completes
    /// it anyway and lists the tasks still open.
    #[command(after_help = "Examples:
  cairn phase complete design
  cairn phase complete design --force   # even with open tasks")]
    Complete {
        phase: String,
        /// Complete it even though some of its tasks are unfinished
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum CheckpointCommand {
    /// List checkpoints, oldest first
    #[command(after_help = "Examples:
  cairn checkpoint list
  cairn checkpoint list --all")]
    List(PageArgs),
    /// Snapshot tasks.json now
    #[command(after_help = "Examples:
  cairn checkpoint write")]
    Write,
    /// Replace the tasks with checkpoint N (the current tasks are saved as a new checkpoint
    /// first, so a restore can be undone)
    #[command(after_help = "Examples:
  cairn checkpoint list
  cairn checkpoint restore 3")]
    Restore { number: u32 },
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only the last N entries (after filtering)
    #[arg(long, value_name = "N")]
    pub tail: Option<usize>,
    /// Only entries of this kind, e.g. TASK_COMPLETE, ERROR
    #[arg(long, value_name = "KIND")]
    pub event: Option<String>,
    /// Only entries about this task
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    #[command(flatten)]
    pub page: PageArgs,
}

#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// Say what would change, change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Only the staleness check (the same session continues, e.g. after a compaction)
    #[arg(long)]
    pub staleness_only: bool,
    /// The resuming agent (default: $CAIRN_AGENT): its own claimed tasks are reset too. Other
    /// agents' claims are reset only once their lease expired
    #[arg(long, env = "CAIRN_AGENT", value_name = "NAME")]
    pub agent: Option<String>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Repair what is safe to repair, logging each repair
    #[arg(long)]
    pub fix: bool,
    /// Validate every file in full: tasks.json even when cairn wrote it, every checkpoint, the
    /// whole log
    #[arg(long)]
    pub full: bool,
    /// Pages the findings (the exit code counts all of them)
    #[command(flatten)]
    pub page: PageArgs,
}

#[derive(Debug, Args)]
pub struct PrimeArgs {
    /// A first line to put above the context
    #[arg(long)]
    pub header: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// Every command's path, `help` included, as a completion script sees them.
    fn paths(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for sub in cmd.get_subcommands() {
            let path = format!("{path} {}", sub.get_name());
            out.push(path.clone());
            paths(sub, &path, out);
        }
    }

    #[test]
    fn the_whole_command_line_completes_help_for_every_command() {
        // First as a run parses (groups deferred), then as a completion script reads it.
        let mut deferred = Cli::command();
        deferred.build();
        let mut built = Vec::new();
        paths(&deferred, "cairn", &mut built);
        let mut whole = whole_command();
        whole.build();
        let mut all = Vec::new();
        paths(&whole, "cairn", &mut all);
        for path in [
            "cairn task complete",
            "cairn help task complete",
            "cairn help plan",
        ] {
            assert!(all.iter().any(|p| p == path), "{path} missing from {all:?}");
        }
        // Built, the deferred tree holds the same commands; only its `help` mirror is shallow.
        let outside_help = |paths: &[String]| -> Vec<String> {
            paths
                .iter()
                .filter(|p| !p.starts_with("cairn help"))
                .cloned()
                .collect()
        };
        assert_eq!(outside_help(&built), outside_help(&all));
        assert!(all.len() > 150, "{} commands", all.len());
    }

    #[test]
    fn every_command_shows_examples_in_its_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            // clap's own `help` commands, which a built tree has, are not ours to document.
            for sub in cmd.get_subcommands().filter(|sub| sub.get_name() != "help") {
                let path = format!("{path} {}", sub.get_name());
                let help = sub
                    .get_after_help()
                    .map(|h| h.to_string())
                    .unwrap_or_default();
                if !help.contains("Examples:") {
                    missing.push(path.clone());
                }
                walk(sub, &path, missing);
            }
        }
        let mut missing = Vec::new();
        // Built, so that the deferred groups hold their subcommands.
        let mut cli = Cli::command();
        cli.build();
        walk(&cli, "cairn", &mut missing);
        assert!(
            missing.is_empty(),
            "no examples in the help of: {missing:?}"
        );
    }
}
