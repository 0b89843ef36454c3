//! `cairn board`: a local web server showing the repository's cairn state as a live Kanban.
//!
//! The binary wires the stores and hands this crate the domain services (`Sources`); every JSON
//! route makes one service call, the same one the CLI makes, and turns its value into the page's
//! shape here (presentation stays out of the domain). A file watcher turns any change on disk, by
//! any tool, into a Server-Sent Event, and the page refetches what it shows.
//!
//! Security model: the server binds to the loopback interface only; every request carries a
//! random per-run token (query parameter for the page and its event stream, `X-Cairn-Token`
//! header for every POST, which a cross-site form cannot set), and the `Host` header must name
//! the local machine so that a DNS-rebinding page cannot reach it under a foreign name.

mod api;
mod assets;
mod graph;
mod panels;
mod security;
mod view;
mod watch;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use cairn_domain::Error;
use cairn_domain::execution::service::ExecutionService;
use cairn_domain::orchestration::OrchestrationService;
use cairn_domain::plan::PlanService;
use cairn_domain::ports::IdGen;
use cairn_domain::project::ProjectId;
use cairn_domain::project::service::ProjectService;
use cairn_domain::tasklist::TaskListStore;
use tokio::sync::broadcast;

pub use security::Token;

/// How an error reads to a user: the CLI's own mapping (exit code, error kind, message, hint),
/// handed in by the binary so the board and the CLI explain a refusal in the same words.
pub type Explain = Arc<dyn Fn(Error) -> Explained + Send + Sync>;

/// An error as the CLI would report it under `--json`.
#[derive(Debug, Clone)]
pub struct Explained {
    /// The CLI's exit code for this error (2 usage, 3 not found, 4 refused, …).
    pub exit_code: u8,
    /// The CLI's `{"error": {"kind", "message", "hint", "exit_code"}}` object.
    pub body: serde_json::Value,
}

/// Everything the board reads and changes, built by the binary's composition root.
pub struct Sources {
    pub projects: ProjectService,
    /// The project the board shows (resolved by the binary as every command resolves it).
    pub project: ProjectId,
    pub execution: ExecutionService,
    pub plans: PlanService,
    pub orchestration: OrchestrationService,
    /// Claude Code's task lists; `None` when no configuration directory is known.
    pub task_lists: Option<Arc<dyn TaskListStore>>,
    /// Directories whose changes the page must see (watched recursively when they exist).
    pub watch: Vec<PathBuf>,
    pub explain: Explain,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources")
            .field("project", &self.project)
            .field("watch", &self.watch)
            .finish_non_exhaustive()
    }
}

/// Where and how to serve.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// 0 picks a free port.
    pub port: u16,
}

/// The state every handler shares.
pub(crate) struct Shared {
    pub sources: Sources,
    pub token: Token,
    pub changes: broadcast::Sender<u64>,
}

/// A board bound to its port, not yet serving: the binary prints [`Bound::url`] (which carries
/// the token) and then calls [`Bound::serve`].
#[derive(Debug)]
pub struct Bound {
    runtime: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    app: axum::Router,
    url: String,
    /// Keeps the file watcher alive as long as the server.
    _watcher: Option<watch::Watcher>,
    pub warnings: Vec<String>,
}

impl Bound {
    /// The page's address, with the run's token.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Serves until the process is stopped.
    pub fn serve(self) -> std::io::Result<()> {
        let Self {
            runtime,
            listener,
            app,
            _watcher,
            ..
        } = self;
        runtime.block_on(async move { axum::serve(listener, app).await })
    }
}

/// Binds 127.0.0.1:`port`, starts the file watcher and builds the routes.
pub fn bind(sources: Sources, options: Options, ids: &dyn IdGen) -> std::io::Result<Bound> {
    // Two workers: a slow store read (a lock wait) must not hold up the event stream.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let token = Token::random(ids);
    let (changes, _) = broadcast::channel(64);
    let listener = runtime.block_on(tokio::net::TcpListener::bind(SocketAddr::from((
        Ipv4Addr::LOCALHOST,
        options.port,
    ))))?;
    let port = listener.local_addr()?.port();
    let url = format!("http://127.0.0.1:{port}/?token={}", token.as_str());
    let (watcher, warnings) = {
        let _guard = runtime.enter();
        watch::start(&sources.watch, changes.clone())
    };
    let shared = Arc::new(Shared {
        sources,
        token,
        changes,
    });
    let app = api::router(shared);
    Ok(Bound {
        runtime,
        listener,
        app,
        url,
        _watcher: watcher,
        warnings,
    })
}
