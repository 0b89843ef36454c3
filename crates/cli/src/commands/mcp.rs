//! `cairn mcp`: the MCP server on stdin/stdout. This module only composes: the services come
//! from the same wiring as every other command (same stores, same locks), and a tool's error is
//! classified by the same mapping that gives a failed command its kind and hint.

use std::sync::Arc;

use cairn_domain::orchestration::OrchestrationService;
use cairn_domain::project::service::ProjectService;
use cairn_domain::{DomainError, Error};
use cairn_mcp::{CairnServer, Classified, Wings};

use super::{Ctx, Report};
use crate::exit::{Code, Failure};

/// What the CLI would print for `e`, as the server's error kind, message and hint. Execution
/// errors go through the session commands' mapping, which adds their hints.
fn classify(e: Error) -> Classified {
    let failure = match e {
        e @ Error::Domain(DomainError::Execution(_)) => super::session::session_failure(e),
        e => Failure::from(e),
    };
    Classified {
        kind: failure.kind,
        message: failure.message,
        hint: failure.hint,
    }
}

pub fn serve(ctx: &Ctx) -> Result<Report, Failure> {
    let clock = crate::clock::from_env()?;
    let store =
        super::open_project_store(&ctx.root, ctx.global.store.as_deref(), Arc::clone(&clock))?;
    let lock_timeout = super::lock_timeout_from_env()?;
    let (orchestration, _) = crate::wiring::open_orchestration_store(&ctx.root, lock_timeout);
    let wings = Wings {
        project: ProjectService::new(store, Arc::clone(&clock)),
        project_id: ctx.global.project.clone(),
        orchestration: OrchestrationService::new(orchestration, clock),
        plan: super::plan::service(ctx)?,
        execution: super::session::execution_service(ctx)?,
        classify: Arc::new(classify),
    };
    CairnServer::new(wings)
        .serve_stdio()
        .map_err(|e| Failure::new(Code::Internal, format!("the MCP server stopped: {e}")))?;
    // stdout belongs to the protocol: nothing more to print.
    Ok(String::new().into())
}
