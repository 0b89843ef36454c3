//! Dispatch: every command goes through [`ProjectService`]; nothing here touches a state file.

mod board;
mod interop;
mod maintenance;
mod mcp;
mod merge;
mod orch;
mod phase;
mod plan;
mod project;
mod session;
mod setup;
mod store;
mod task;
mod tasklist;

use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cairn_domain::ports::Clock;
use cairn_domain::project::ProjectId;
use cairn_domain::project::service::ProjectService;
use cairn_domain::project::store::{ProjectStore, Recovery};
use serde::Serialize;

use crate::cli::{Cli, Command, Deferred, Global, PageArgs};
use crate::exit::{Code, Failure};
use crate::json;
use crate::output::Style;
use crate::page::{Page, json_size};

/// How long a writer waits for another process's lock before giving up (exit 6), in
/// milliseconds. Unset: the adapter's default (10 s).
pub const CAIRN_LOCK_TIMEOUT_MS: &str = "CAIRN_LOCK_TIMEOUT_MS";

fn lock_timeout_from_env() -> Result<Option<Duration>, Failure> {
    match std::env::var(CAIRN_LOCK_TIMEOUT_MS) {
        Ok(text) if !text.trim().is_empty() => text
            .trim()
            .parse::<u64>()
            .map(|ms| Some(Duration::from_millis(ms)))
            .map_err(|_| {
                Failure::new(
                    Code::Usage,
                    format!("{CAIRN_LOCK_TIMEOUT_MS}=`{text}` is not a number of milliseconds"),
                )
            }),
        _ => Ok(None),
    }
}

/// What a successful command prints on stdout, and its exit code (0 unless the command reports a
/// finding, like `doctor`).
#[derive(Debug)]
pub struct Report {
    pub stdout: String,
    pub code: Code,
}

impl From<String> for Report {
    fn from(stdout: String) -> Self {
        Self {
            stdout,
            code: Code::Ok,
        }
    }
}

pub struct Ctx {
    pub service: ProjectService,
    runtime: tokio::runtime::Runtime,
    pub global: Global,
    pub style: Style,
    pub root: PathBuf,
}

impl Ctx {
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// The project the command is about (`--project`, else the only one, else the one IN
    /// PROGRESS).
    pub fn project(&self) -> Result<ProjectId, Failure> {
        Ok(self.block_on(self.service.resolve(self.global.project.as_deref()))?)
    }

    /// One page of a list: under `--json` the envelope of [`Page::envelope`], else `human`'s
    /// rendering of the page followed by its footer. `row_size` estimates a row's characters in
    /// the human output (JSON rows are measured as printed).
    pub fn emit_page<T: Serialize>(
        &self,
        items: Vec<T>,
        args: &PageArgs,
        noun: &str,
        row_size: impl Fn(&T) -> usize,
        human: impl FnOnce(&Style, &Page<T>) -> String,
    ) -> Result<Report, Failure> {
        if self.global.json {
            let page = Page::of(items, args, json_size);
            Ok(json::render(&page.envelope())?.into())
        } else {
            let page = Page::of(items, args, row_size);
            let mut out = human(&self.style, &page);
            out.push_str(&page.footer(noun));
            Ok(out.into())
        }
    }

    /// JSON when `--json` was given, else the human rendering.
    pub fn emit<T: Serialize>(
        &self,
        value: &T,
        human: impl FnOnce(&Style) -> String,
    ) -> Result<Report, Failure> {
        if self.global.json {
            Ok(json::render(value)?.into())
        } else {
            Ok(human(&self.style).into())
        }
    }
}

pub fn run(cli: Cli) -> Code {
    let json = cli.global.json;
    let mut recoveries = Vec::new();
    let result = execute(cli, &mut recoveries);
    // Recoveries are news even when the command then failed: the user should know a file was
    // restored.
    for r in &recoveries {
        eprintln!("{}", recovery_notice(r));
    }
    match result {
        Ok(report) => {
            let printed = print(&report.stdout);
            if printed == Code::Ok {
                report.code
            } else {
                printed
            }
        }
        Err(failure) => fail(&failure, json),
    }
}

/// Reports a failure: as text on stderr, or under `--json` as the JSON error object on stdout
/// (a program parsing stdout then always gets JSON). Returns its exit code.
pub fn fail(failure: &Failure, json: bool) -> Code {
    if !json {
        eprintln!("{failure}");
        return failure.code;
    }
    match json::render(&failure.to_json()) {
        Ok(text) => match print(&text) {
            Code::Ok => failure.code,
            printed => printed,
        },
        Err(e) => {
            eprintln!("{failure}\n{e}");
            failure.code
        }
    }
}

fn execute(cli: Cli, recoveries: &mut Vec<Recovery>) -> Result<Report, Failure> {
    let clock = crate::clock::from_env()?;
    let root = crate::wiring::resolve_root(cli.global.root.as_deref())?;
    // I/O and timers: the PostgreSQL store talks to its server on this runtime.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(Code::Internal, format!("cannot start the runtime: {e}")))?;
    let store = open_project_store(&root, cli.global.store.as_deref(), Arc::clone(&clock))?;
    let ctx = Ctx {
        service: ProjectService::new(store, clock),
        runtime,
        global: cli.global,
        style: Style::detect(),
        root,
    };
    session::settle_recorded_moves(&ctx);
    let result = dispatch(&ctx, cli.command);
    recoveries.extend(ctx.service.take_recoveries());
    result
}

/// The project store the run was pointed at (`--store`, `CAIRN_STORE`, `.claude/cairn.toml`, else
/// the files), with the lock timeout from the environment.
pub(crate) fn open_project_store(
    root: &Path,
    store: Option<&str>,
    clock: Arc<dyn Clock>,
) -> Result<Arc<dyn ProjectStore>, Failure> {
    crate::wiring::open_store(root, store, clock, lock_timeout_from_env()?)
        .map_err(|e| Failure::new(Code::Usage, e).with_kind("bad_store"))
}

/// A filter or option the command accepted but could not honour: refusing it beats answering a
/// different question than the one asked.
pub fn not_applicable(option: &str, why: &str, instead: &str) -> Failure {
    Failure::new(Code::Usage, format!("{option} does not apply here: {why}"))
        .with_hint(instead.to_owned())
        .with_kind("option_not_applicable")
}

/// The commands that are about no single project, so a typed `--project` would be ignored.
fn without_project(command: &Command) -> Option<&'static str> {
    match command {
        Command::Init(_) => Some("`cairn init` creates a project; its id is --id"),
        Command::Project(Deferred(crate::cli::ProjectCommand::List(_))) => {
            Some("`cairn project list` lists every project in the repository")
        }
        Command::Setup(_) => {
            Some("`cairn setup` works on the repository, for every project at once")
        }
        Command::Plan(_) => Some("plans belong to the repository, not to a project"),
        Command::Completions { .. } => Some("completion scripts are the same for every project"),
        Command::MergeDriver(_) => Some("the merge driver takes the project from the file's path"),
        Command::Orch(_) => Some("orchestration sessions belong to the repository, not a project"),
        _ => None,
    }
}

fn dispatch(ctx: &Ctx, command: Command) -> Result<Report, Failure> {
    if ctx.global.project_on_command_line
        && let Some(why) = without_project(&command)
    {
        return Err(not_applicable("--project", why, "drop --project"));
    }
    match command {
        Command::Init(args) => project::init(ctx, args),
        Command::Project(Deferred(c)) => project::run(ctx, c),
        Command::Task(Deferred(c)) => task::run(ctx, c),
        Command::Phase(Deferred(c)) => phase::run(ctx, c),
        Command::Orch(Deferred(c)) => orch::run(ctx, c),
        Command::Checkpoint(Deferred(c)) => maintenance::checkpoint(ctx, c),
        Command::Log(args) => maintenance::log(ctx, args),
        Command::Velocity => maintenance::velocity(ctx),
        Command::Reconcile(args) => maintenance::reconcile(ctx, args),
        Command::Doctor(args) => maintenance::doctor(ctx, args),
        Command::Status => maintenance::status(ctx),
        Command::Prime(args) => maintenance::prime(ctx, args),
        Command::Session(Deferred(c)) => session::run(ctx, c),
        Command::Plan(Deferred(c)) => plan::run(ctx, c),
        Command::Setup(Deferred(crate::cli::SetupCommand::Claude(args))) => {
            setup::claude(ctx, args)
        }
        Command::Setup(Deferred(crate::cli::SetupCommand::Git(args))) => setup::git(ctx, args),
        Command::Tasklist(Deferred(c)) => tasklist::run(ctx, c),
        Command::Mcp => mcp::serve(ctx),
        Command::Import(args) => interop::import(ctx, args),
        Command::Export(args) => interop::export(ctx, args),
        Command::MergeDriver(args) => merge::driver(ctx, args),
        Command::Board(args) => board::run(ctx, args),
        Command::Store(Deferred(c)) => store::run(ctx, c),
        Command::Completions { shell } => Ok(completions(shell)),
    }
}

/// The script is the same whatever `--json` says: shells read it, not programs.
fn completions(shell: clap_complete::Shell) -> Report {
    let mut script = Vec::new();
    clap_complete::generate(
        shell,
        &mut crate::cli::whole_command(),
        "cairn",
        &mut script,
    );
    String::from_utf8_lossy(&script).into_owned().into()
}

pub fn recovery_notice(r: &Recovery) -> String {
    format!(
        "cairn: tasks.json was damaged and rebuilt: {}; the damaged file is kept at {}",
        r.summary(),
        r.damaged_copy
    )
}

/// Writes stdout in one go. A closed pipe (`cairn task list | head -1`) is not an error.
fn print(text: &str) -> Code {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Code::Ok,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Code::Ok,
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            Code::Internal
        }
    }
}
