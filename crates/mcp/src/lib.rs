//! `cairn mcp`: cairn's Model Context Protocol server, on the official Rust SDK (`rmcp`).
//!
//! Agents pay for every tool schema in their context before any work, so the design bends to a
//! budget: the whole `tools/list` costs at most 2,000 tokens (cl100k, a test counts it) and no
//! result more than 8,000. To stay there:
//!
//! - the tool table ([`tools`]) is written by hand — short names, one-line descriptions, flat
//!   schemas — instead of derived (a derived schema carries `$schema`, titles and formats that
//!   cost tokens and tell a model nothing);
//! - results are compact JSON text (no `structuredContent` beside it: the same value twice would
//!   cost twice), lists are paged with `next_offset` and capped by size ([`page`]);
//! - next steps are tool calls (`{"tool":"complete","args":{"id":"T-003"}}`), rendered here from
//!   the domain's typed [`cairn_domain::NextStep`]s ([`render`]) — never `cairn …` syntax, which
//!   an MCP client cannot run.
//!
//! The server holds no rules and touches no file: every tool makes the domain service call the
//! matching `cairn` command makes and renders what it returns. The stores come from the CLI's
//! composition root (`cairn mcp` in `crates/cli`), so the server takes the same locks as the CLI
//! and the hook, and errors carry the CLI's kind and hint through the [`Classify`] function the
//! CLI hands in (one mapping from error to kind, not two).

mod orch;
pub mod page;
mod plan;
mod project;
pub mod render;
mod session;
pub mod tools;

use std::sync::Arc;

use cairn_domain::Error;
use cairn_domain::execution::service::ExecutionService;
use cairn_domain::orchestration::OrchestrationService;
use cairn_domain::plan::PlanService;
use cairn_domain::project::service::ProjectService;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

/// What the CLI says about an error: its stable kind (`illegal_transition`, `not_found` …), its
/// message with causes, and its hint. The server renders a domain refusal's next steps as tool
/// calls itself and uses the hint only when there are none.
#[derive(Debug, Clone)]
pub struct Classified {
    pub kind: &'static str,
    pub message: String,
    pub hint: Option<String>,
}

/// The CLI's error → kind/hint mapping, handed in so that there is one.
pub type Classify = Arc<dyn Fn(Error) -> Classified + Send + Sync>;

/// Every service the tools call, built by the CLI's composition root.
pub struct Wings {
    pub project: ProjectService,
    /// `cairn --project ID mcp`: the project the tools work on; otherwise the one
    /// [`ProjectService::resolve`] picks, resolved at each call (projects come and go).
    pub project_id: Option<String>,
    /// The orchestration session of the repository (seed 004's tools).
    pub orchestration: OrchestrationService,
    /// The repository's plans (`cairn plan`).
    pub plan: PlanService,
    /// The repository's execution sessions (`cairn session`), run with [`Self::project`].
    pub execution: ExecutionService,
    pub classify: Classify,
}

impl std::fmt::Debug for Wings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wings")
            .field("project_id", &self.project_id)
            .finish_non_exhaustive()
    }
}

/// A tool that failed: rendered as an MCP tool error (`isError: true`) whose text is
/// `{"error":{"kind","message","hint"?,"next"?}}`.
#[derive(Debug)]
pub struct ToolError {
    pub kind: &'static str,
    pub message: String,
    pub hint: Option<String>,
    /// What to do instead, as tool calls.
    pub next: Vec<Value>,
}

impl ToolError {
    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            kind: "usage",
            message: message.into(),
            hint: Some(hint.into()),
            next: Vec::new(),
        }
    }

    fn to_json(&self) -> Value {
        let mut error = Map::new();
        error.insert("kind".into(), json!(self.kind));
        error.insert("message".into(), json!(self.message));
        if let Some(hint) = &self.hint {
            error.insert("hint".into(), json!(hint));
        }
        if !self.next.is_empty() {
            error.insert("next".into(), json!(self.next));
        }
        json!({ "error": error })
    }
}

impl Wings {
    /// A domain or store error as a tool error: the CLI's kind and message; a refusal's typed
    /// next steps as tool calls, else the CLI's hint.
    pub fn fail(&self, e: Error) -> ToolError {
        let steps = match &e {
            Error::Domain(d) => d.next_steps(),
            Error::Store(_) => Vec::new(),
        };
        let Classified {
            kind,
            message,
            hint,
        } = (self.classify)(e);
        let next = render::tool_calls(&steps);
        ToolError {
            kind,
            message,
            hint: if next.is_empty() { hint } else { None },
            next,
        }
    }
}

/// What a tool returns: the JSON to send, or the error.
pub type Outcome = Result<Value, ToolError>;

/// The MCP server over [`Wings`].
#[derive(Debug, Clone)]
pub struct CairnServer {
    wings: Arc<Wings>,
}

impl CairnServer {
    pub fn new(wings: Wings) -> Self {
        Self {
            wings: Arc::new(wings),
        }
    }

    /// Runs one tool by name; unknown tools and bad arguments are tool errors too, so the model
    /// reads what went wrong.
    pub async fn call(&self, name: &str, args: Value) -> Outcome {
        let Some(spec) = tools::find(name) else {
            return Err(ToolError::usage(
                format!("no tool `{name}`"),
                "tools/list names every tool",
            ));
        };
        match spec.wing {
            tools::Wing::Project => project::call(&self.wings, name, args).await,
            tools::Wing::Orchestration => orch::call(&self.wings, name, args).await,
            tools::Wing::Plan => plan::call(&self.wings, args).await,
            tools::Wing::Session => session::call(&self.wings, args).await,
        }
    }

    /// Serves MCP on stdin/stdout until the client closes the connection, on a runtime of its
    /// own: rmcp needs timers (its shutdown waits with a timeout), which the CLI's runtime does
    /// not start.
    pub fn serve_stdio(self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let running = self.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
            Ok(())
        })
    }
}

/// The text of a result: compact JSON (indentation would cost tokens and tell a model nothing).
pub fn result_of(outcome: &Outcome) -> CallToolResult {
    match outcome {
        Ok(value) => CallToolResult::success(vec![ContentBlock::text(value.to_string())]),
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_json().to_string())]),
    }
}

impl ServerHandler for CairnServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("cairn", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(INSTRUCTIONS.to_owned());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let outcome = self.call(&request.name, args).await;
        Ok(result_of(&outcome).into())
    }
}

/// What the client may show the model once, at initialize.
const INSTRUCTIONS: &str =
    "cairn: durable task memory. Loop: next → start → complete; results carry `next` tool calls.";
