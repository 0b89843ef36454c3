//! `cairn board`: builds the services every other command uses, hands them to `cairn-board`,
//! prints the page's address (with the run's token) and serves until stopped.

use std::io::Write as _;
use std::sync::Arc;

use cairn_board::{Explained, Options, Sources};
use cairn_domain::Error;
use cairn_domain::orchestration::OrchestrationService;
use cairn_domain::project::service::ProjectService;

use super::{Ctx, Report};
use crate::cli::BoardArgs;
use crate::exit::{Code, Failure};

/// The CLI's own error mapping, so a refused drag reads exactly as `cairn task move` says it.
fn explain(error: Error) -> Explained {
    let failure = Failure::from(error);
    Explained {
        exit_code: failure.code as u8,
        body: failure.to_json(),
    }
}

pub fn run(ctx: &Ctx, args: BoardArgs) -> Result<Report, Failure> {
    let project = ctx.project()?;
    let clock = crate::clock::from_env()?;
    let lock_timeout = super::lock_timeout_from_env()?;
    let (orchestration_store, state_dir) =
        crate::wiring::open_orchestration_store(&ctx.root, lock_timeout);
    let sources = Sources {
        projects: ProjectService::new(
            super::open_project_store(&ctx.root, ctx.global.store.as_deref(), Arc::clone(&clock))?,
            Arc::clone(&clock),
        ),
        project,
        execution: super::session::execution_service(ctx)?,
        plans: super::plan::service(ctx)?,
        orchestration: OrchestrationService::new(orchestration_store, clock),
        task_lists: crate::wiring::open_tasklist_store(),
        watch: crate::wiring::open_board_store(&ctx.root, &state_dir),
        explain: Arc::new(explain),
    };
    let ids = crate::wiring::random_ids();
    let bound =
        cairn_board::bind(sources, Options { port: args.port }, ids.as_ref()).map_err(|e| {
            Failure::new(
                Code::Usage,
                format!("cannot listen on 127.0.0.1:{}: {e}", args.port),
            )
            .with_hint("choose another --port, or leave it out for a free one")
        })?;
    for warning in &bound.warnings {
        eprintln!("warning: {warning}; the page will not update by itself");
    }
    // The address goes out before serving starts (tests and scripts read it from stdout).
    let url = bound.url().to_owned();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "cairn board: {url}");
    let _ = writeln!(out, "(serving until interrupted with Ctrl-C)");
    let _ = out.flush();
    drop(out);
    if args.open {
        open_browser(&url);
    }
    bound
        .serve()
        .map_err(|e| Failure::new(Code::Internal, format!("the board server stopped: {e}")))?;
    Ok(String::new().into())
}

/// Best effort: a machine without a desktop still has the printed URL.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    if let Err(e) = std::process::Command::new(opener).arg(url).spawn() {
        eprintln!("warning: cannot open a browser ({opener}: {e}); open the URL above");
    }
}
