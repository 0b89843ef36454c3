//! Dispatch: every command goes through [`ProjectService`]; nothing here touches a state file.

mod maintenance;
mod phase;
mod project;
mod setup;
mod task;

use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cairn_domain::ports::Clock;
use cairn_domain::project::ProjectId;
use cairn_domain::project::service::ProjectService;
use cairn_domain::project::store::{ProjectStore, Recovery};
use cairn_storage_fs::FsProjectStore;
use clap::CommandFactory;
use serde::Serialize;

use crate::cli::{Cli, Command, Global};
use crate::exit::{Code, Failure};
use crate::json;
use crate::output::Style;

/// How long a writer waits for another process's lock before giving up (exit 6), in
/// milliseconds. Unset: the adapter's default (10 s).
pub const CAIRN_LOCK_TIMEOUT_MS: &str = "CAIRN_LOCK_TIMEOUT_MS";

/// The one place the store adapter is chosen. The adapter gets the run's clock too, so what it
/// stamps by itself (recoveries) follows `CAIRN_NOW` like everything else.
fn open_store(
    root: &Path,
    clock: Arc<dyn Clock>,
    lock_timeout: Option<Duration>,
) -> Arc<dyn ProjectStore> {
    let store = FsProjectStore::new(root).with_clock(clock);
    Arc::new(match lock_timeout {
        Some(timeout) => store.with_lock_timeout(timeout),
        None => store,
    })
}

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
        Err(failure) => {
            eprintln!("{failure}");
            failure.code
        }
    }
}

fn execute(cli: Cli, recoveries: &mut Vec<Recovery>) -> Result<Report, Failure> {
    let clock = crate::clock::from_env()?;
    let root = cairn_storage_fs::root::resolve_root(cli.global.root.as_deref())?.path;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| Failure::new(Code::Internal, format!("cannot start the runtime: {e}")))?;
    let ctx = Ctx {
        service: ProjectService::new(
            open_store(&root, Arc::clone(&clock), lock_timeout_from_env()?),
            clock,
        ),
        runtime,
        global: cli.global,
        style: Style::detect(),
        root,
    };
    let result = dispatch(&ctx, cli.command);
    recoveries.extend(ctx.service.take_recoveries());
    result
}

fn dispatch(ctx: &Ctx, command: Command) -> Result<Report, Failure> {
    match command {
        Command::Init(args) => project::init(ctx, args),
        Command::Project(c) => project::run(ctx, c),
        Command::Task(c) => task::run(ctx, c),
        Command::Phase(c) => phase::run(ctx, c),
        Command::Checkpoint(c) => maintenance::checkpoint(ctx, c),
        Command::Log(args) => maintenance::log(ctx, args),
        Command::Velocity => maintenance::velocity(ctx),
        Command::Reconcile(args) => maintenance::reconcile(ctx, args),
        Command::Doctor(args) => maintenance::doctor(ctx, args),
        Command::Status => maintenance::status(ctx),
        Command::Prime(args) => maintenance::prime(ctx, args),
        Command::Setup(crate::cli::SetupCommand::Claude(args)) => setup::claude(ctx, args),
        Command::Completions { shell } => Ok(completions(shell)),
    }
}

/// The script is the same whatever `--json` says: shells read it, not programs.
fn completions(shell: clap_complete::Shell) -> Report {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "cairn", &mut script);
    String::from_utf8_lossy(&script).into_owned().into()
}

pub fn recovery_notice(r: &Recovery) -> String {
    format!(
        "cairn: tasks.json was damaged; restored from {} ({} task{} kept, {} dropped); the damaged file is kept at {}",
        json::checkpoint_name(r.checkpoint),
        r.kept,
        if r.kept == 1 { "" } else { "s" },
        r.dropped,
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
