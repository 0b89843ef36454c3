//! `orch …`: orchestration sessions. Each command is one call to [`OrchestrationService`]; this
//! module parses what the user typed into the domain's values and renders what comes back.

mod git;
mod plan;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cairn_domain::orchestration::resume::{
    self, PhaseRef, ResumeSummary, UnresolvedError, error_id,
};
use cairn_domain::orchestration::{
    AgentOutput, ArchiveOutcome, DownstreamContext, ErrorKind, FileChanges, NewError, NewSession,
    OrchestrationService, Phase, PhaseId, PhaseReport, PhaseStatus, PhaseTransition, Session,
    SessionId, SessionState, SessionStatus, TokenCounts, UserDecision, WorkflowMode,
};
use cairn_domain::{DomainError, Entity, Error, StoreError};
use serde_json::{Value, json};

use super::{Ctx, Report};
use crate::cli::{
    OrchArchiveArgs, OrchCommand, OrchContextArgs, OrchErrorKind, OrchMode, OrchPhaseCommand,
    OrchReportArgs, OrchStartArgs, OrchTransitionArgs, PageArgs,
};
use crate::exit::{Code, Failure};
use crate::output::{Cell, Style, Table};
use crate::page::{Page, json_size};

/// Who an error is attributed to when neither `--agent` nor the phase names one.
const DEFAULT_AGENT: &str = "orchestrator";

struct Orch<'a> {
    ctx: &'a Ctx,
    service: OrchestrationService,
    state_dir: PathBuf,
}

pub fn run(ctx: &Ctx, command: OrchCommand) -> Result<Report, Failure> {
    let clock = crate::clock::from_env()?;
    let (store, state_dir) =
        crate::wiring::open_orchestration_store(&ctx.root, super::lock_timeout_from_env()?);
    let orch = Orch {
        ctx,
        service: OrchestrationService::new(store, clock),
        state_dir,
    };
    orch.run(command).map_err(with_no_session_hint)
}

/// "No active session" is the commonest mistake: say how to get one.
fn with_no_session_hint(failure: Failure) -> Failure {
    if failure.code == Code::NotFound
        && failure.hint.is_none()
        && failure.message.contains("orchestration session")
    {
        failure.with_hint("start one with `cairn orch start --topic TEXT --phase NAME:AGENT …`; `cairn orch list` shows the archived ones")
    } else {
        failure
    }
}

impl Orch<'_> {
    fn run(&self, command: OrchCommand) -> Result<Report, Failure> {
        let ctx = self.ctx;
        match command {
            OrchCommand::Start(args) => {
                let spec = self.new_session(args)?;
                let session = ctx.block_on(self.service.create(spec))?;
                self.emit_session(&session, |style| {
                    format!(
                        "Started orchestration {} with {} phases\n{}",
                        style.bold(session.id().as_str()),
                        session.state.total_phases,
                        style.next_step("cairn orch phase start 1")
                    )
                })
            }
            OrchCommand::Status => {
                let session = self.active()?;
                self.emit_session(&session, |style| status(style, &session))
            }
            OrchCommand::Phase(command) => self.phase(command),
            OrchCommand::Files(args) => {
                let changes = FileChanges {
                    created: args.created,
                    modified: args.modified,
                    deleted: args.deleted,
                };
                if changes.created.is_empty()
                    && changes.modified.is_empty()
                    && changes.deleted.is_empty()
                {
                    return Err(Failure::new(Code::Usage, "no files given")
                        .with_hint("name them with --created, --modified or --deleted"));
                }
                let session = ctx.block_on(self.service.record_files(args.phase, changes))?;
                self.emit_session(&session, |_| {
                    let phase = phase_of(&session, args.phase);
                    format!(
                        "Phase {}: {} created, {} modified, {} deleted in its manifest\n",
                        args.phase,
                        phase.map_or(0, |p| p.files_created.len()),
                        phase.map_or(0, |p| p.files_modified.len()),
                        phase.map_or(0, |p| p.files_deleted.len()),
                    )
                })
            }
            OrchCommand::Handoff(args) => {
                let context = downstream(args.context);
                if context.labelled().iter().all(|(_, items)| items.is_empty()) {
                    return Err(Failure::new(Code::Usage, "nothing to hand on")
                        .with_hint("name it with --interface, --pattern, --integration, --assumption or --warning"));
                }
                let session = ctx.block_on(self.service.record_downstream(args.phase, context))?;
                self.emit_session(&session, |_| {
                    let kept = phase_of(&session, args.phase).map_or(0, |p| {
                        p.downstream_context
                            .labelled()
                            .iter()
                            .map(|(_, items)| items.len())
                            .sum()
                    });
                    format!(
                        "Phase {} hands on {kept} item(s) of downstream context\n",
                        args.phase
                    )
                })
            }
            OrchCommand::Tokens(args) => {
                let counts = TokenCounts {
                    input: args.input,
                    output: args.output,
                    cached: args.cached,
                };
                let session =
                    ctx.block_on(self.service.record_tokens(args.agent.clone(), counts))?;
                self.emit_session(&session, |_| {
                    let usage = &session.state.token_usage;
                    format!(
                        "Recorded tokens for {}; session total: input {}, output {}, cached {}\n",
                        args.agent.trim(),
                        usage.total_input,
                        usage.total_output,
                        usage.total_cached
                    )
                })
            }
            OrchCommand::Error(args) => {
                let agent = self.agent_for(args.phase, args.agent)?;
                let error = NewError {
                    agent,
                    kind: error_kind(args.kind),
                    message: args.message,
                };
                let (session, index) =
                    ctx.block_on(self.service.record_error(args.phase, error))?;
                let id = error_id(args.phase, index);
                if ctx.global.json {
                    return Ok(crate::json::render(
                        &json!({"error_id": id, "session": session.state}),
                    )?
                    .into());
                }
                Ok(format!(
                    "Recorded error {} on phase {}\n{}",
                    ctx.style.bold(&id),
                    args.phase,
                    ctx.style
                        .next_step(&format!("cairn orch resolve {id} --resolution TEXT"))
                )
                .into())
            }
            OrchCommand::Resolve(args) => {
                let (phase, index) = parse_error_id(&args.error)?;
                let session =
                    ctx.block_on(self.service.resolve_error(phase, index, args.resolution))?;
                self.emit_session(&session, |_| {
                    format!("Resolved error {}\n", args.error.trim())
                })
            }
            OrchCommand::Archive(args) => self.archive(args),
            OrchCommand::Resume => self.resume(),
            OrchCommand::List(args) => self.list(&args),
            OrchCommand::Transition(args) => self.transition(args),
        }
    }

    fn phase(&self, command: OrchPhaseCommand) -> Result<Report, Failure> {
        let ctx = self.ctx;
        let (id, session) = match command {
            OrchPhaseCommand::Start { id, agents } => {
                (id, ctx.block_on(self.service.start_phase(id, agents))?)
            }
            OrchPhaseCommand::Complete { id, report } => {
                let report = phase_report(report)?;
                (
                    id,
                    ctx.block_on(self.service.complete_phase_logged(id, report))?,
                )
            }
            OrchPhaseCommand::Fail {
                id,
                kind,
                message,
                agent,
                report,
            } => {
                let error = NewError {
                    agent: self.agent_for(id, agent)?,
                    kind: error_kind(kind),
                    message,
                };
                let report = phase_report(report)?;
                (
                    id,
                    ctx.block_on(self.service.fail_phase_logged(id, error, report))?,
                )
            }
            OrchPhaseCommand::Retry { id } => (id, ctx.block_on(self.service.retry_phase(id))?),
            OrchPhaseCommand::Skip {
                id,
                user_approved: _,
                reason,
            } => {
                let decision = UserDecision::by_user(
                    reason.unwrap_or_else(|| "the user approved skipping it".to_owned()),
                )
                .map_err(|e| Failure::new(Code::Usage, e.to_string()))?;
                (id, ctx.block_on(self.service.skip_phase(id, decision))?)
            }
        };
        self.emit_session(&session, |style| {
            let Some(phase) = phase_of(&session, id) else {
                return String::new();
            };
            let mut out = format!(
                "Phase {} ({}) is {}",
                style.bold(&phase.id.to_string()),
                phase.name,
                phase_status(style, phase.status)
            );
            if phase.retry_count > 0 {
                let _ = write!(
                    out,
                    " (retry {} of {})",
                    phase.retry_count,
                    cairn_domain::orchestration::phase::MAX_RETRIES
                );
            }
            out.push('\n');
            if session.state.status == cairn_domain::orchestration::SessionStatus::Completed {
                out.push_str(&style.next_step("cairn orch archive"));
            }
            out
        })
    }

    fn archive(&self, args: OrchArchiveArgs) -> Result<Report, Failure> {
        let decision =
            if args.user_approved {
                Some(
                    UserDecision::by_user(args.reason.unwrap_or_else(|| {
                        "the user approved archiving unfinished work".to_owned()
                    }))
                    .map_err(|e| Failure::new(Code::Usage, e.to_string()))?,
                )
            } else {
                None
            };
        let outcome = self.ctx.block_on(self.service.archive(decision)).map_err(|e| {
            let blocked = matches!(
                &e,
                Error::Domain(cairn_domain::DomainError::Orchestration(
                    cairn_domain::orchestration::OrchestrationError::ArchiveBlocked { .. }
                ))
            );
            let failure = Failure::from(e);
            if blocked {
                failure.with_hint("finish or fail the phases in progress; to archive pending or failed phases the user must approve: --user-approved --reason TEXT")
            } else {
                failure
            }
        })?;
        let value = archive_json(&outcome);
        let complete = outcome.verification.is_complete();
        let mut report: Report = if self.ctx.global.json {
            crate::json::render(&value)?.into()
        } else {
            archive_human(&self.ctx.style, &outcome).into()
        };
        if !complete {
            // The moves ran but something is still where it was: the user must look.
            report.code = Code::Unhealthy;
        }
        Ok(report)
    }

    fn resume(&self) -> Result<Report, Failure> {
        let session = self.active()?;
        let changed = git::changed_paths(&self.ctx.root, session.state.created);
        let paths: Vec<String> = match &changed {
            Ok(paths) => paths
                .iter()
                .filter(|p| !self.in_state_dir(p))
                .cloned()
                .collect(),
            Err(_) => Vec::new(),
        };
        let summary = self
            .ctx
            .block_on(self.service.resume_summary(&paths))?
            .ok_or_else(no_session)?;
        let git_error = changed.err();
        if self.ctx.global.json {
            return Ok(crate::json::render(&resume_json(&summary, git_error.as_deref()))?.into());
        }
        Ok(resume_human(&self.ctx.style, &summary, git_error.as_deref()).into())
    }

    /// The active session, then the archived ones a page at a time (archives only grow).
    fn list(&self, args: &PageArgs) -> Result<Report, Failure> {
        let active = self.ctx.block_on(self.service.active())?;
        let archived = self.ctx.block_on(self.service.archived())?;
        if self.ctx.global.json {
            let mut value = Page::of(archived, args, json_size).envelope();
            value["active"] = json!(active.as_ref().map(|s| json!({
                "session_id": s.id(),
                "status": s.state.status,
                "current_phase": s.state.current_phase,
                "total_phases": s.state.total_phases,
            })));
            return Ok(crate::json::render(&value)?.into());
        }
        let style = &self.ctx.style;
        let mut out = String::new();
        match &active {
            Some(s) => {
                let _ = writeln!(
                    out,
                    "Active: {} ({}, phase {} of {})",
                    style.bold(s.id().as_str()),
                    snake(&s.state.status),
                    s.state.current_phase,
                    s.state.total_phases
                );
            }
            None => out.push_str("No active orchestration.\n"),
        }
        let page = Page::of(archived, args, |id| id.as_str().len() + 3);
        if page.total == 0 {
            out.push_str("No archived sessions.\n");
        } else {
            let _ = writeln!(out, "Archived ({}):", page.total);
            for id in &page.items {
                let _ = writeln!(out, "  {id}");
            }
            out.push_str(&page.footer("archived sessions"));
        }
        Ok(out.into())
    }

    fn transition(&self, args: OrchTransitionArgs) -> Result<Report, Failure> {
        let id = args
            .session
            .map(SessionId::parse)
            .transpose()
            .map_err(DomainError::from)?;
        let tokens =
            (args.input.is_some() || args.output.is_some() || args.cached.is_some()).then(|| {
                TokenCounts {
                    input: args.input.unwrap_or(0),
                    output: args.output.unwrap_or(0),
                    cached: args.cached.unwrap_or(0),
                }
            });
        let step = PhaseTransition {
            completed: args.complete,
            files: FileChanges {
                created: args.created,
                modified: args.modified,
                deleted: args.deleted,
            },
            downstream: downstream(args.context),
            tokens,
            next: args.next,
            batch: args.batch,
        };
        let (session, started) = self.ctx.block_on(self.service.transition(id, step))?;
        self.emit_session(&session, |style| {
            let mut out = String::new();
            if let Some(done) = args.complete {
                let _ = writeln!(out, "Phase {done} completed");
            }
            if !started.is_empty() {
                let _ = writeln!(out, "Started phase(s) {}", dash_list(&started));
            }
            let _ = writeln!(out, "Current phase: {}", session.state.current_phase);
            let next = if session.state.status == SessionStatus::Completed {
                "cairn orch archive".to_owned()
            } else {
                format!(
                    "cairn orch transition --complete {}",
                    session.state.current_phase
                )
            };
            out.push_str(&style.next_step(&next));
            out
        })
    }

    fn active(&self) -> Result<Session, Failure> {
        self.ctx
            .block_on(self.service.active())?
            .ok_or_else(no_session)
    }

    /// `--agent`, else the phase's first agent, else [`DEFAULT_AGENT`].
    fn agent_for(&self, phase: PhaseId, agent: Option<String>) -> Result<String, Failure> {
        if let Some(agent) = agent.filter(|a| !a.trim().is_empty()) {
            return Ok(agent);
        }
        let session = self.active()?;
        Ok(phase_of(&session, phase)
            .and_then(|p| p.agents.first().cloned())
            .unwrap_or_else(|| DEFAULT_AGENT.to_owned()))
    }

    fn new_session(&self, args: OrchStartArgs) -> Result<NewSession, Failure> {
        let (mut phases, implementation_plan) = match &args.plan {
            Some(file) => {
                let text = std::fs::read_to_string(file).map_err(|e| {
                    Failure::new(
                        Code::NotFound,
                        format!("cannot read the plan {}: {e}", file.display()),
                    )
                    .with_hint("give the path of an existing implementation plan")
                })?;
                let recorded = self.recorded_path(file);
                (plan::parse_plan(&text, &recorded)?, Some(recorded))
            }
            None => {
                let phases = args
                    .phases
                    .iter()
                    .enumerate()
                    .map(|(i, spec)| plan::parse_spec(spec, i + 1))
                    .collect::<Result<Vec<_>, _>>()?;
                (phases, None)
            }
        };
        plan::mark_parallel(&mut phases);
        let design_document = match &args.design {
            Some(file) if !file.is_file() => {
                return Err(Failure::new(
                    Code::NotFound,
                    format!("the design document {} does not exist", file.display()),
                )
                .with_hint(
                    "give the path of the approved design document, or leave --design out",
                ));
            }
            Some(file) => Some(self.recorded_path(file)),
            None => None,
        };
        let workflow_mode = match args.mode {
            Some(OrchMode::Standard) => WorkflowMode::Standard,
            Some(OrchMode::Express) => WorkflowMode::Express,
            None if design_document.is_some() => WorkflowMode::Standard,
            None => WorkflowMode::Express,
        };
        let id = args
            .id
            .map(SessionId::parse)
            .transpose()
            .map_err(DomainError::from)?;
        Ok(NewSession {
            id,
            task: args.task.unwrap_or_else(|| args.topic.clone()),
            topic: args.topic,
            workflow_mode,
            design_document,
            implementation_plan,
            execution_mode: None,
            execution_backend: None,
            task_complexity: None,
            phases,
        })
    }

    /// A document path as the session records it: relative to the root when inside it (so the
    /// archive finds it from any directory), else absolute.
    fn recorded_path(&self, file: &Path) -> String {
        let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let path = canonical(&absolute);
        match path.strip_prefix(canonical(&self.ctx.root)) {
            Ok(relative) => relative.to_string_lossy().replace('\\', "/"),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// Whether a root-relative path is one of the state directory's own files.
    fn in_state_dir(&self, path: &str) -> bool {
        self.state_dir
            .strip_prefix(&self.ctx.root)
            .is_ok_and(|dir| Path::new(path).starts_with(dir))
    }

    /// The session's front matter under `--json` (the object active-session.md holds), else
    /// `human`.
    fn emit_session(
        &self,
        session: &Session,
        human: impl FnOnce(&Style) -> String,
    ) -> Result<Report, Failure> {
        self.ctx.emit(&session.state, human)
    }
}

fn no_session() -> Failure {
    with_no_session_hint(Failure::from(Error::from(StoreError::not_found(
        Entity::Session,
        cairn_domain::orchestration::archive::ACTIVE_SESSION_PATH,
    ))))
}

fn phase_of(session: &Session, id: PhaseId) -> Option<&Phase> {
    session.phase(id)
}

fn downstream(args: OrchContextArgs) -> DownstreamContext {
    DownstreamContext {
        key_interfaces_introduced: args.interfaces,
        patterns_established: args.patterns,
        integration_points: args.integrations,
        assumptions: args.assumptions,
        warnings: args.warnings,
        extra: Default::default(),
    }
}

fn error_kind(kind: OrchErrorKind) -> ErrorKind {
    match kind {
        OrchErrorKind::Validation => ErrorKind::Validation,
        OrchErrorKind::Timeout => ErrorKind::Timeout,
        OrchErrorKind::FileConflict => ErrorKind::FileConflict,
        OrchErrorKind::Runtime => ErrorKind::Runtime,
        OrchErrorKind::Dependency => ErrorKind::Dependency,
    }
}

/// A domain enum's snake_case name, as the session file writes it.
fn snake(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        _ => String::new(),
    }
}

fn parse_error_id(text: &str) -> Result<(PhaseId, usize), Failure> {
    resume::parse_error_id(text).ok_or_else(|| {
        Failure::new(Code::Usage, format!("`{text}` is not an error id"))
            .with_hint("error ids are PHASE.N, e.g. 2.1 for the first error of phase 2; `cairn orch status` lists the open ones")
    })
}

fn phase_report(args: OrchReportArgs) -> Result<PhaseReport, Failure> {
    let outputs = args
        .outputs
        .iter()
        .map(|o| match o.split_once('=') {
            Some((agent, summary)) if !agent.trim().is_empty() => Ok(AgentOutput {
                agent: agent.trim().to_owned(),
                summary: summary.to_owned(),
            }),
            _ => Err(
                Failure::new(Code::Usage, format!("--output `{o}` has no agent")).with_hint(
                    "write an output as AGENT=TEXT, e.g. --output \"coder=added the parser\"",
                ),
            ),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PhaseReport {
        notes: args.notes,
        outputs,
        validation: args.validation,
    })
}

fn phase_status(style: &Style, status: PhaseStatus) -> String {
    let text = status.as_str();
    match status {
        PhaseStatus::Completed => style.green(text),
        PhaseStatus::InProgress => style.yellow(text),
        PhaseStatus::Failed => style.red(text),
        PhaseStatus::Skipped => style.dim(text),
        PhaseStatus::Pending => text.to_owned(),
    }
}

fn dash_list<T: ToString>(items: &[T]) -> String {
    if items.is_empty() {
        "-".to_owned()
    } else {
        items
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

fn status(style: &Style, session: &Session) -> String {
    let s: &SessionState = &session.state;
    let mut out = format!(
        "Orchestration {} ({}, {}) — phase {} of {}\nTask: {}\n",
        style.bold(s.session_id.as_str()),
        snake(&s.status),
        snake(&s.workflow_mode),
        s.current_phase,
        s.total_phases,
        s.task
    );
    out.push('\n');
    let mut table = Table::new(&["ID", "STATUS", "RETRIES", "BLOCKED_BY", "AGENTS", "NAME"]);
    for phase in &s.phases {
        table.row(vec![
            phase.id.to_string().into(),
            Cell::styled(phase.status.as_str(), phase_status(style, phase.status)),
            phase.retry_count.to_string().into(),
            dash_list(&phase.blocked_by).into(),
            dash_list(&phase.agents).into(),
            (if phase.parallel {
                format!("{} (parallel)", phase.name)
            } else {
                phase.name.clone()
            })
            .into(),
        ]);
    }
    out.push_str(&table.render(style));
    let usage = &s.token_usage;
    let _ = writeln!(
        out,
        "\nTokens: input {}, output {}, cached {} ({} agent{})",
        usage.total_input,
        usage.total_output,
        usage.total_cached,
        usage.by_agent.len(),
        if usage.by_agent.len() == 1 { "" } else { "s" }
    );
    let open: Vec<String> = s
        .phases
        .iter()
        .flat_map(|p| {
            p.errors
                .iter()
                .enumerate()
                .filter(|(_, e)| !e.resolved)
                .map(move |(i, e)| (p.id, i, e))
        })
        .map(|(phase, i, e)| {
            format!(
                "  {} [{}] {}: {}",
                error_id(phase, i),
                snake(&e.kind),
                e.agent,
                e.message
            )
        })
        .collect();
    if !open.is_empty() {
        let _ = writeln!(out, "Unresolved errors:\n{}", open.join("\n"));
    }
    out
}

fn archive_json(outcome: &ArchiveOutcome) -> Value {
    let moves = |moves: &[cairn_domain::orchestration::PlannedMove]| -> Vec<Value> {
        moves
            .iter()
            .map(|m| json!({"file": m.file.to_string(), "from": m.from.to_string(), "to": m.to.to_string()}))
            .collect()
    };
    let locations = |l: &[cairn_domain::orchestration::Location]| -> Vec<String> {
        l.iter().map(ToString::to_string).collect()
    };
    json!({
        "session_id": outcome.session.id(),
        "status": outcome.session.state.status,
        "moved": moves(&outcome.moved),
        "absent": moves(&outcome.absent),
        "complete": outcome.verification.is_complete(),
        "left_behind": locations(&outcome.verification.left_behind),
        "missing": locations(&outcome.verification.missing),
    })
}

fn archive_human(style: &Style, outcome: &ArchiveOutcome) -> String {
    let mut out = format!("Archived {}\n", style.bold(outcome.session.id().as_str()));
    for m in &outcome.moved {
        let _ = writeln!(out, "  moved {}: {} -> {}", m.file, m.from, m.to);
    }
    for m in &outcome.absent {
        let _ = writeln!(out, "  no {} at {} (nothing to move)", m.file, m.from);
    }
    let v = &outcome.verification;
    if v.is_complete() {
        out.push_str("Verified: nothing left behind.\n");
    } else {
        for l in &v.left_behind {
            let _ = writeln!(
                out,
                "{} still exists at {l}: delete it",
                style.red("left behind:")
            );
        }
        for l in &v.missing {
            let _ = writeln!(out, "{} {l}", style.red("missing:"));
        }
    }
    out
}

fn phase_ref_json(p: &PhaseRef) -> Value {
    json!({"id": p.id, "name": p.name, "status": p.status})
}

fn unresolved_json(u: &UnresolvedError) -> Value {
    json!({
        "id": u.id(),
        "phase": u.phase,
        "agent": u.error.agent,
        "type": u.error.kind,
        "message": u.error.message,
        "timestamp": cairn_domain::time::format_rfc3339(&u.error.timestamp),
    })
}

fn resume_json(s: &ResumeSummary, git_error: Option<&str>) -> Value {
    json!({
        "session_id": s.session_id,
        "status": s.status,
        "workflow_mode": s.workflow_mode,
        "last_completed": s.last_completed.as_ref().map(phase_ref_json),
        "current": s.current.as_ref().map(phase_ref_json),
        "interrupted": s.interrupted.iter().map(phase_ref_json).collect::<Vec<_>>(),
        "failed": s.failed.iter().map(|f| json!({
            "id": f.phase.id,
            "name": f.phase.name,
            "retry_count": f.retry_count,
            "retries_left": f.retries_left,
        })).collect::<Vec<_>>(),
        "unresolved_errors": s.unresolved_errors.iter().map(unresolved_json).collect::<Vec<_>>(),
        "outside_manifest": if git_error.is_some() { Value::Null } else { json!(s.outside_manifest) },
        "implementation_plan_changed": s.implementation_plan_changed,
        "git_error": git_error,
    })
}

fn resume_human(style: &Style, s: &ResumeSummary, git_error: Option<&str>) -> String {
    let name = |p: &PhaseRef| format!("{} ({})", p.id, p.name);
    let mut out = format!(
        "Resuming {} ({})\n",
        style.bold(s.session_id.as_str()),
        snake(&s.status)
    );
    let _ = writeln!(
        out,
        "Last completed: {}",
        s.last_completed.as_ref().map_or("none".to_owned(), name)
    );
    let _ = writeln!(
        out,
        "Current: {}",
        s.current
            .as_ref()
            .map_or("none".to_owned(), |p| format!("{} [{}]", name(p), p.status))
    );
    for p in &s.interrupted {
        let _ = writeln!(
            out,
            "{} phase {} was in progress: its files may be half written",
            style.yellow("interrupted:"),
            name(p)
        );
    }
    for f in &s.failed {
        let next = if f.retries_left == 0 {
            "no retries left: ask the user".to_owned()
        } else {
            format!(
                "{} retr{} left: cairn orch phase retry {}",
                f.retries_left,
                if f.retries_left == 1 { "y" } else { "ies" },
                f.phase.id
            )
        };
        let _ = writeln!(
            out,
            "{} phase {} ({next})",
            style.red("failed:"),
            name(&f.phase)
        );
    }
    if s.unresolved_errors.is_empty() {
        out.push_str("Unresolved errors: none\n");
    } else {
        out.push_str("Unresolved errors:\n");
        for u in &s.unresolved_errors {
            let _ = writeln!(
                out,
                "  {} [{}] {}: {}",
                u.id(),
                snake(&u.error.kind),
                u.error.agent,
                u.error.message
            );
        }
    }
    match git_error {
        Some(why) => {
            let _ = writeln!(out, "Files changed outside the manifest: unknown ({why})");
        }
        None if s.outside_manifest.is_empty() => {
            out.push_str("Files changed outside the manifest: none\n");
        }
        None => {
            out.push_str("Files changed outside the manifest:\n");
            for path in &s.outside_manifest {
                let _ = writeln!(out, "  {path}");
            }
        }
    }
    if s.implementation_plan_changed {
        out.push_str("The implementation plan changed since execution began: re-read it.\n");
    }
    out
}
