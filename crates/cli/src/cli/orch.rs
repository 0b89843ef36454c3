//! `cairn orch …`: orchestration sessions (SPEC §5), parsing only.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::PageArgs;

#[derive(Debug, Subcommand)]
pub enum OrchCommand {
    /// Start a session: phases from --phase (in plan order) or from an implementation plan
    #[command(after_help = "Examples:
  cairn orch start --topic \"Auth rewrite\" --phase schema:coder --phase api:coder:1 \\
      --phase docs:writer:1 --phase review:reviewer:2,3
  cairn orch start --topic \"Auth rewrite\" --plan docs/maestro/plans/auth-impl-plan.md \\
      --design docs/maestro/plans/auth-design.md

A phase spec is NAME:AGENT[+AGENT…][:BLOCKER,…] with blockers the numbers of earlier phases;
phases with the same blockers form a parallel batch. A plan file gives one phase per heading
`## Phase N: Name`, with optional `Agent: a, b` and `Blocked by: 1, 2` lines below it.")]
    Start(OrchStartArgs),

    /// Show the active session: phases, tokens, open errors
    #[command(after_help = "Examples:
  cairn orch status
  cairn --json orch status | jq '.phases[] | {id, status}'")]
    Status,

    /// Move a phase: start, complete, fail, retry (at most 2), skip (user-approved only)
    #[command(
        subcommand,
        after_help = "Examples:
  cairn orch phase start 2 --agent coder
  cairn orch phase complete 2 --validation \"cargo test: 42 passed\"
  cairn orch phase fail 2 --type runtime --message \"tests fail\"
  cairn orch phase retry 2
  cairn orch phase skip 3 --user-approved --reason \"docs are out of scope\""
    )]
    Phase(OrchPhaseCommand),

    /// Record files a phase created, modified or deleted (its manifest)
    #[command(after_help = "Examples:
  cairn orch files --phase 2 --created src/auth.rs --modified src/lib.rs Cargo.toml")]
    Files(OrchFilesArgs),

    /// Record what a phase hands on to the phases after it (Handoff Report part 2: its
    /// downstream context), merged into what it already handed on
    #[command(after_help = "Examples:
  cairn orch handoff --phase 2 --interface \"AuthService::login(email, password)\" \\
      --pattern \"errors are thiserror enums\" --warning \"sessions expire after 1 h\"
  cairn orch handoff --phase 3 --integration \"/api/login calls AuthService\" --assumption \"one tenant\"")]
    Handoff(OrchHandoffArgs),

    /// Add an agent's token usage to the session totals and the agent's own
    #[command(after_help = "Examples:
  cairn orch tokens --agent coder --input 1200 --output 300 --cached 800")]
    Tokens(OrchTokensArgs),

    /// Record an error on a phase that ran, without moving it
    #[command(after_help = "Examples:
  cairn orch error --phase 2 --type validation --message \"clippy warnings\"")]
    Error(OrchErrorArgs),

    /// Mark an error resolved (ids as `status` and `resume` show them: PHASE.N)
    #[command(after_help = "Examples:
  cairn orch resolve 2.1 --resolution \"fixed the lint\"")]
    Resolve(OrchResolveArgs),

    /// Archive the session, its design document and its plan, and verify nothing is left
    #[command(after_help = "Examples:
  cairn orch archive
  cairn orch archive --user-approved --reason \"abandoned: requirements changed\"")]
    Archive(OrchArchiveArgs),

    /// Where to pick up: last completed, current and failed phases, open errors, and files
    /// changed (per git) that no phase's manifest lists
    #[command(after_help = "Examples:
  cairn orch resume
  cairn --json orch resume | jq .outside_manifest")]
    Resume,

    /// One orchestration step in one write (seed 004's transition_phase): complete a phase with
    /// its files, downstream context and tokens, and start the next phase or parallel batch
    #[command(after_help = "Examples:
  cairn orch transition --next 1
  cairn orch transition --complete 1 --next 2,3 --batch b2 --created src/auth.rs \\
      --interface \"AuthService::login\" --input 1200 --output 300
  cairn orch transition --session 2026-03-14-auth --complete 3

Nothing changes unless every part is accepted. Tokens are shared among the completed phase's
agents; a phase in --next already in progress is left as it is, a failed one is retried.")]
    Transition(OrchTransitionArgs),

    /// List the active session and every archived one
    #[command(after_help = "Examples:
  cairn orch list
  cairn --json orch list --limit 20 --offset 20")]
    List(PageArgs),
}

#[derive(Debug, Args)]
pub struct OrchStartArgs {
    /// The design topic: becomes the session id (YYYY-MM-DD-slug) and the log title
    #[arg(long, value_name = "TEXT")]
    pub topic: String,

    /// The session id, instead of YYYY-MM-DD-slug of the topic (letters, digits, - and _)
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,

    /// The user's original task description (default: the topic)
    #[arg(long, value_name = "TEXT")]
    pub task: Option<String>,

    /// A phase, in plan order: `NAME:AGENT[+AGENT…][:BLOCKER,…]` (repeatable)
    #[arg(
        long = "phase",
        value_name = "SPEC",
        required_unless_present = "plan",
        conflicts_with = "plan"
    )]
    pub phases: Vec<String>,

    /// The implementation plan to read the phases from (recorded, and archived with the session)
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,

    /// The approved design document (recorded, and archived with the session)
    #[arg(long, value_name = "FILE")]
    pub design: Option<PathBuf>,

    /// Workflow mode (default: standard with --design, else express)
    #[arg(long, value_enum)]
    pub mode: Option<OrchMode>,
}

#[derive(Debug, Args)]
pub struct OrchTransitionArgs {
    /// The session the step is for (refused when another one is active)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// The phase that finished: in_progress → completed, its log section appended
    #[arg(long, value_name = "ID")]
    pub complete: Option<u32>,
    /// The phases to start: one, or a parallel batch (comma-separated)
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub next: Vec<u32>,
    /// Files the completed phase created
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub created: Vec<String>,
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub modified: Vec<String>,
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub deleted: Vec<String>,
    #[command(flatten)]
    pub context: OrchContextArgs,
    /// Tokens the completed phase used (input, output, cached)
    #[arg(long, value_name = "N")]
    pub input: Option<u64>,
    #[arg(long, value_name = "N")]
    pub output: Option<u64>,
    #[arg(long, value_name = "N")]
    pub cached: Option<u64>,
    /// The parallel batch now being dispatched
    #[arg(long, value_name = "ID")]
    pub batch: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OrchMode {
    Standard,
    Express,
}

#[derive(Debug, Subcommand)]
pub enum OrchPhaseCommand {
    /// pending → in_progress (a failed phase: use retry)
    #[command(after_help = "Examples:
  cairn orch phase start 2 --agent coder --agent tester")]
    Start {
        id: u32,
        /// An agent working on the phase (repeatable)
        #[arg(long = "agent", value_name = "NAME")]
        agents: Vec<String>,
    },
    /// in_progress → completed, appending the phase's section to the log
    #[command(after_help = "Examples:
  cairn orch phase complete 2 --output \"coder=added the parser\" --validation \"cargo test: pass\"")]
    Complete {
        id: u32,
        #[command(flatten)]
        report: OrchReportArgs,
    },
    /// in_progress → failed, recording the error
    #[command(after_help = "Examples:
  cairn orch phase fail 2 --type validation --message \"2 tests fail\"")]
    Fail {
        id: u32,
        #[arg(long = "type", value_enum, default_value = "runtime")]
        kind: OrchErrorKind,
        #[arg(long, value_name = "TEXT")]
        message: String,
        /// Who failed (default: the phase's first agent, else `orchestrator`)
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        #[command(flatten)]
        report: OrchReportArgs,
    },
    /// failed → in_progress; refused after 2 retries (escalate to the user)
    #[command(after_help = "Examples:
  cairn orch phase retry 2")]
    Retry { id: u32 },
    /// pending → skipped; only the user may decide it
    #[command(after_help = "Examples:
  cairn orch phase skip 4 --user-approved --reason \"release is next sprint\"")]
    Skip {
        id: u32,
        /// The user approved skipping this phase (required)
        #[arg(long, required = true)]
        user_approved: bool,
        /// Why, in the user's words (recorded in the log)
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
}

/// What goes into the phase's section of the log.
#[derive(Debug, Args)]
pub struct OrchReportArgs {
    /// A paragraph under the phase heading (repeatable)
    #[arg(long = "note", value_name = "TEXT")]
    pub notes: Vec<String>,
    /// An agent's output summary, AGENT=TEXT (repeatable)
    #[arg(long = "output", value_name = "AGENT=TEXT")]
    pub outputs: Vec<String>,
    /// The validation result (default in the log: `Not run`)
    #[arg(long, value_name = "TEXT")]
    pub validation: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum OrchErrorKind {
    Validation,
    Timeout,
    FileConflict,
    Runtime,
    Dependency,
}

#[derive(Debug, Args)]
pub struct OrchFilesArgs {
    #[arg(long, value_name = "ID")]
    pub phase: u32,
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub created: Vec<String>,
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub modified: Vec<String>,
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub deleted: Vec<String>,
}

#[derive(Debug, Args)]
pub struct OrchHandoffArgs {
    /// The phase handing on (one that ran: not pending, not skipped)
    #[arg(long, value_name = "ID")]
    pub phase: u32,
    #[command(flatten)]
    pub context: OrchContextArgs,
}

/// A Handoff Report's part 2: what a phase hands on to the phases after it.
#[derive(Debug, Args)]
pub struct OrchContextArgs {
    /// A key interface the phase introduced (repeat for more)
    #[arg(long = "interface", value_name = "TEXT")]
    pub interfaces: Vec<String>,
    /// A pattern the phase established
    #[arg(long = "pattern", value_name = "TEXT")]
    pub patterns: Vec<String>,
    /// An integration point later phases connect to
    #[arg(long = "integration", value_name = "TEXT")]
    pub integrations: Vec<String>,
    /// An assumption later phases must hold to
    #[arg(long = "assumption", value_name = "TEXT")]
    pub assumptions: Vec<String>,
    /// A warning for later phases
    #[arg(long = "warning", value_name = "TEXT")]
    pub warnings: Vec<String>,
}

#[derive(Debug, Args)]
pub struct OrchTokensArgs {
    #[arg(long, value_name = "NAME")]
    pub agent: String,
    #[arg(long, value_name = "N")]
    pub input: u64,
    #[arg(long, value_name = "N")]
    pub output: u64,
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub cached: u64,
}

#[derive(Debug, Args)]
pub struct OrchErrorArgs {
    #[arg(long, value_name = "ID")]
    pub phase: u32,
    #[arg(long = "type", value_enum)]
    pub kind: OrchErrorKind,
    #[arg(long, value_name = "TEXT")]
    pub message: String,
    /// Who reported it (default: the phase's first agent, else `orchestrator`)
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
}

#[derive(Debug, Args)]
pub struct OrchResolveArgs {
    /// PHASE.N: the phase and the error's number in it, from 1
    #[arg(value_name = "ERROR-ID")]
    pub error: String,
    #[arg(long, value_name = "TEXT")]
    pub resolution: String,
}

#[derive(Debug, Args)]
pub struct OrchArchiveArgs {
    /// The user decided to archive with phases unfinished (pending or failed)
    #[arg(long)]
    pub user_approved: bool,
    /// Why, in the user's words (with --user-approved; recorded in the log)
    #[arg(long, value_name = "TEXT", requires = "user_approved")]
    pub reason: Option<String>,
}
