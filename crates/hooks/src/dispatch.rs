//! What cairn-hook does for each event.
//!
//! | event | store | effect | stdout |
//! |---|---|---|---|
//! | PreToolUse | never (plans: the pointer and state.md's first bytes) | guard ([`crate::guard`]); the active plan's edit rule ([`crate::plan`]) | deny object, or nothing |
//! | SessionStart | yes | reconcile (resume, or staleness only after `compact`; other agents' live claims are left alone), clean debris, log `SESSION_START` | `additionalContext`: the `cairn prime` text under a header shaped by `source`; with several projects and none chosen, the list and how to choose |
//! | PreCompact | yes | checkpoint (unless the newest already holds the list), log `SESSION_PRECOMPACT` | nothing |
//! | SessionEnd | yes | log `SESSION_END` (reason) | nothing |
//! | SubagentStart / SubagentStop | yes | log `SESSION_SUBAGENT_START` / `_STOP` (agent type and id) | nothing |
//! | SessionStart, SubagentStart / SubagentStop, SessionEnd | orchestration too | see [`crate::orchestration`]: active agent, token usage, the active orchestration in the context | |
//! | SessionStart | a live execution session too | none | the live session in the context, or at `startup` with a stale lock the proposal to recover it ([`crate::execution`]) |
//! | Stop | reads | none | `systemMessage` reminding of tasks this session started and left IN_PROGRESS, or nothing |
//! | PostToolUse on `TaskCreate`, `TaskUpdate`, `TodoWrite` | only if the session's task list holds files cairn pushed for this project | pull that list into the project ([`crate::tasklist`]) | `systemMessage` naming the changes cairn's rules refused, or nothing |
//! | PostToolUse (Edit, Write, MultiEdit) | the plan store, in EXECUTE only | the change manifest and complexity budget of the active plan ([`crate::plan`]) | `systemMessage` when over budget, or nothing |
//! | other PostToolUse, UserPromptSubmit, others | never | none | nothing |
//!
//! PostToolUse, Stop and UserPromptSubmit fire on every tool call, every turn and every prompt:
//! logging them would bury the progress log's real history (and push completions out of the
//! window velocity reads), and a prompt is the user's text, not cairn's to keep. None of them
//! writes the project store; PostToolUse writes only an active plan's change manifest, in
//! EXECUTE; Stop alone reads (a bounded log tail and the task list) for its reminder.
//!
//! Store-changing events are deduplicated ([`crate::dedupe`]); a duplicate SessionStart prints
//! nothing either, since the first delivery already gave Claude the context.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use cairn_domain::NextStep;
use cairn_domain::error::{Error, Report};
use cairn_domain::ports::Clock;
use cairn_domain::project::ProjectId;
use cairn_domain::project::policy::Reconciled;
use cairn_domain::project::report;
use cairn_domain::project::service::{
    OpenWork, ProjectOverview, ProjectService, ReconcileReport, ReconcileScope,
};
use cairn_domain::project::store::{ProjectStore, Recovery};
use cairn_domain::project::{ProjectStatus, TaskId};

use crate::dedupe;
use crate::guard;
use crate::protocol::{HookEvent, HookInput, HookOutput};

/// The process environment the hook depends on, captured once so tests can supply their own.
#[derive(Debug, Clone, Default)]
pub struct HookEnv {
    /// `$CLAUDE_PROJECT_DIR`.
    pub claude_project_dir: Option<OsString>,
    /// `$CAIRN_PROJECT`: the project to use when the store holds several.
    pub cairn_project: Option<String>,
    pub process_cwd: Option<PathBuf>,
}

impl HookEnv {
    pub fn from_process() -> Self {
        Self {
            claude_project_dir: std::env::var_os(crate::wiring::CLAUDE_PROJECT_DIR),
            cairn_project: std::env::var("CAIRN_PROJECT")
                .ok()
                .filter(|p| !p.trim().is_empty()),
            process_cwd: std::env::current_dir().ok(),
        }
    }

    /// The repository root: `$CLAUDE_PROJECT_DIR` if it holds a store, else the git work tree
    /// around it; without it, the git work tree around the payload's
    /// `cwd` (or that `cwd` itself), else the same from the process's working directory.
    pub fn root(&self, payload_cwd: Option<&str>) -> Option<PathBuf> {
        let base = self.process_cwd.clone().unwrap_or_default();
        if let Some(dir) = self.claude_project_dir.as_ref().filter(|d| !d.is_empty()) {
            // Claude Code sets it to the directory it was started in, which may be below the
            // repository root: a store there is used, else the git work tree's (where `cairn`
            // run from that directory looks too).
            let dir = base.join(dir);
            if crate::wiring::layout::projects_dir(&dir).is_dir() {
                return Some(dir);
            }
            return Some(crate::wiring::find_git_work_tree(&dir).unwrap_or(dir));
        }
        let start = match payload_cwd.filter(|c| !c.is_empty()) {
            Some(cwd) => base.join(cwd),
            None => self.process_cwd.clone()?,
        };
        Some(crate::wiring::find_git_work_tree(&start).unwrap_or(start))
    }
}

/// Opens the project store of a repository root.
pub type StoreOpener = dyn Fn(&Path) -> Result<Arc<dyn ProjectStore>, String> + Send + Sync;

/// Everything a store-touching event needs besides its payload.
pub struct Deps<'a> {
    pub env: &'a HookEnv,
    pub open_store: &'a StoreOpener,
    pub clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Deps<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deps")
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

/// The result of handling one event: what to print, and cairn's own problems to put in the hook
/// error log (under `root`). Problems never change what is printed into an error for Claude.
#[derive(Debug, Default)]
pub struct Handled {
    pub output: Option<HookOutput>,
    pub root: Option<PathBuf>,
    pub problems: Vec<String>,
}

impl Handled {
    pub(crate) fn silent() -> Self {
        Self::default()
    }

    pub(crate) fn failed(root: PathBuf, problem: String) -> Self {
        Self {
            output: None,
            root: Some(root),
            problems: vec![problem],
        }
    }
}

/// Handles one parsed payload.
pub fn handle(input: &HookInput, deps: &Deps<'_>) -> Handled {
    match &input.event {
        // The hot path: the state-file guard decides from the payload alone; only when it lets
        // the call pass does the plan rule peek at the pointer and state.md's first line.
        HookEvent::PreToolUse => match guard::check(input) {
            Some(refusal) => Handled {
                output: Some(HookOutput::deny(refusal.reason())),
                ..Handled::default()
            },
            None => crate::plan::pre_tool_use(input, deps),
        },
        HookEvent::SessionStart
        | HookEvent::PreCompact
        | HookEvent::SessionEnd
        | HookEvent::SubagentStart
        | HookEvent::SubagentStop => {
            let mut handled = with_store(input, deps);
            if matches!(input.event, HookEvent::SessionStart | HookEvent::PreCompact) {
                crate::plan::session_event(input, deps, &mut handled);
            }
            if input.event != HookEvent::PreCompact {
                crate::orchestration::handle(input, deps, &mut handled);
            }
            if input.event == HookEvent::SessionStart {
                crate::execution::session_start(input, deps, &mut handled);
            }
            handled
        }
        HookEvent::Stop => stop(input, deps),
        HookEvent::PostToolUse => match input.tool_name.as_deref() {
            Some(tool) if crate::tasklist::TASK_TOOLS.contains(&tool) => {
                crate::tasklist::post_tool_use(input, deps)
            }
            _ => crate::plan::post_tool_use(input, deps),
        },
        HookEvent::UserPromptSubmit | HookEvent::Other(_) => Handled::silent(),
    }
}

/// Is there a cairn project under `root` (the named one, or any)? Answered from directory
/// entries alone, so a repository that does not use cairn costs a `read_dir` and nothing else —
/// and gets no error log: cairn installed globally must leave other repositories alone. A
/// repository that names a shared store (a database) is taken to use cairn: whether the
/// project is there is the store's to say, and an unreachable store must reach the error log.
pub(crate) fn has_cairn_project(root: &Path, named: Option<&str>) -> bool {
    if crate::wiring::names_shared_store(root) {
        return true;
    }
    let projects = crate::wiring::layout::projects_dir(root);
    match named {
        Some(id) => projects
            .join(id)
            .join(crate::wiring::layout::PROJECT_JSON)
            .is_file(),
        None => std::fs::read_dir(&projects).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.path().join(crate::wiring::layout::PROJECT_JSON).is_file())
        }),
    }
}

fn with_store(input: &HookInput, deps: &Deps<'_>) -> Handled {
    let Some(root) = deps.env.root(input.cwd.as_deref()) else {
        return Handled::silent();
    };
    if !has_cairn_project(&root, deps.env.cairn_project.as_deref()) {
        return Handled::silent();
    }
    let key = dedupe_key(input);
    let first = dedupe::claim(&dedupe::marker_dir(&root), &key, SystemTime::now());
    if !first {
        return Handled {
            root: Some(root),
            ..Handled::default()
        };
    }
    let (service, runtime) = match open_service(&root, deps) {
        Ok(opened) => opened,
        Err(problem) => return Handled::failed(root, problem),
    };
    let mut handled = runtime.block_on(async {
        let id = match service.resolve(deps.env.cairn_project.as_deref()).await {
            Ok(id) => id,
            Err(e) => {
                let mut failed = Handled::failed(
                    root.clone(),
                    format!(
                        "which project: {} (set CAIRN_PROJECT to choose)",
                        Report(&e)
                    ),
                );
                // Claude still learns which projects there are and how to pick one.
                if input.event == HookEvent::SessionStart {
                    match service.overview().await {
                        Ok(projects) if projects.len() > 1 => {
                            let source = input.source.as_deref().unwrap_or("startup");
                            failed.output = Some(HookOutput::session_context(choose_project(
                                source, &projects,
                            )));
                        }
                        Ok(_) => {}
                        Err(e) => failed
                            .problems
                            .push(format!("listing projects: {}", Report(&e))),
                    }
                }
                return failed;
            }
        };
        let mut problems = Vec::new();
        let result = match &input.event {
            HookEvent::SessionStart => {
                dedupe::prune(&dedupe::marker_dir(&root), SystemTime::now());
                session_start(&service, &id, input, &mut problems)
                    .await
                    .map(Some)
            }
            HookEvent::PreCompact => pre_compact(&service, &id, input).await.map(|()| None),
            _ => record(&service, &id, input).await.map(|()| None),
        };
        let output = result.unwrap_or_else(|e| {
            problems.push(Report(&e).to_string());
            None
        });
        for r in service.take_recoveries() {
            problems.push(format!("recovered: {}", recovery_note(&r)));
        }
        Handled {
            output,
            root: Some(root.clone()),
            problems,
        }
    });
    handled.root = Some(root);
    handled
}

/// The project service over the store under `root`, and a runtime to drive it.
pub(crate) fn open_service(
    root: &Path,
    deps: &Deps<'_>,
) -> Result<(ProjectService, tokio::runtime::Runtime), String> {
    let store =
        (deps.open_store)(root).map_err(|e| format!("cannot open the project store: {e}"))?;
    Ok((ProjectService::new(store, deps.clock.clone()), runtime()?))
}

/// The one runtime a hook event drives its services on (a current thread: the hook is one short
/// process).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    // I/O and timers: the PostgreSQL store talks to its server on this runtime.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

/// Stop: a reminder of the work this session started and left IN_PROGRESS, as a
/// `systemMessage` — never a block, so Claude is never made to continue and no hook can loop.
/// Writes nothing, so it is not deduplicated.
fn stop(input: &HookInput, deps: &Deps<'_>) -> Handled {
    // Claude is already continuing because of a Stop hook: stay out of it.
    if input.stop_hook_active {
        return Handled::silent();
    }
    let (Some(session), Some(root)) = (
        input.session_id.as_deref(),
        deps.env.root(input.cwd.as_deref()),
    ) else {
        return Handled::silent();
    };
    let named = deps.env.cairn_project.as_deref();
    if !has_cairn_project(&root, named) {
        return Handled::silent();
    }
    let (service, runtime) = match open_service(&root, deps) {
        Ok(opened) => opened,
        Err(problem) => return Handled::failed(root, problem),
    };
    let mut handled = runtime.block_on(async {
        // No project chosen among several: the session start already said how to choose, and
        // repeating that failure after every turn would only fill the error log.
        let Ok(id) = service.resolve(named).await else {
            return Handled::silent();
        };
        match service.open_work_of_session(&id, session).await {
            Ok(open) if open.is_empty() => Handled::silent(),
            Ok(open) => Handled {
                output: Some(HookOutput::system_message(stop_reminder(&open))),
                ..Handled::default()
            },
            Err(e) => Handled::failed(
                root.clone(),
                format!("open work of the session: {}", Report(&e)),
            ),
        }
    });
    for r in service.take_recoveries() {
        handled
            .problems
            .push(format!("recovered: {}", recovery_note(&r)));
    }
    handled.root = Some(root);
    handled
}

const REMINDER_LIST_MAX: usize = 3;

/// "cairn: T-003 Build the API is still IN_PROGRESS — complete it (`…`) or block it …".
pub fn stop_reminder(open: &[OpenWork]) -> String {
    let steps = |task: &TaskId| {
        format!(
            "`{}` or `{}`",
            cairn_render::command(&NextStep::Complete { task: task.clone() }),
            cairn_render::command(&NextStep::Block { task: task.clone() })
        )
    };
    if let [one] = open {
        return format!(
            "cairn: {} {} is still IN_PROGRESS — complete it or block it with a reason: {}.",
            one.task,
            clip(&one.title, 80),
            steps(&one.task)
        );
    }
    let mut out = format!(
        "cairn: {} tasks started in this session are still IN_PROGRESS — complete or block each:",
        open.len()
    );
    for w in open.iter().take(REMINDER_LIST_MAX) {
        out.push_str(&format!(
            "\n- {} {}: {}",
            w.task,
            clip(&w.title, 80),
            steps(&w.task)
        ));
    }
    if open.len() > REMINDER_LIST_MAX {
        out.push_str(&format!(
            "\n- … and {} more (`{}`)",
            open.len() - REMINDER_LIST_MAX,
            cairn_render::command(&NextStep::ListInProgress)
        ));
    }
    out
}

/// The SessionStart context when several projects exist and none is chosen: the list, and the
/// ways to choose — matching [`ProjectService::resolve`]: `CAIRN_PROJECT` (read by cairn-hook and,
/// as the default of `--project`, by every cairn command), or making one the only IN_PROGRESS
/// project.
pub fn choose_project(source: &str, projects: &[ProjectOverview]) -> String {
    let mut out = format!(
        "{}\nThis repository holds {} cairn projects and none is chosen for this session, so no project state was loaded:",
        session_title(source),
        projects.len()
    );
    for p in projects {
        out.push_str(&format!(
            "\n- `{}` {} — {}, {}/{} tasks complete",
            p.id,
            clip(&p.name, 80),
            p.status,
            p.leaves_complete,
            p.leaves_total
        ));
    }
    let Some(example) = projects
        .iter()
        .find(|p| p.status == ProjectStatus::InProgress)
        .or(projects.first())
    else {
        return out;
    };
    let active: Vec<_> = projects
        .iter()
        .filter(|p| p.status == ProjectStatus::InProgress)
        .collect();
    out.push_str(&format!(
        "\nTo choose one: set CAIRN_PROJECT={id} in the environment Claude Code runs in (cairn-hook and every cairn command read it) and start a new session; or name it on each command (`{show}`); or make it the only IN_PROGRESS project (`{set}`) — cairn picks the only IN_PROGRESS project by itself.",
        id = example.id,
        show = cairn_render::command(&NextStep::ShowProject {
            project: example.id.clone()
        }),
        set = cairn_render::command(&NextStep::SetProjectStatus {
            project: example.id.clone(),
            status: ProjectStatus::InProgress
        }),
    ));
    if active.len() > 1 {
        out.push_str(&format!(
            "\n{} projects are IN_PROGRESS now; pause the others (`{}`).",
            active.len(),
            cairn_render::command(&NextStep::SetProjectStatus {
                project: active[1].id.clone(),
                status: ProjectStatus::Paused
            })
        ));
    }
    out
}

/// What makes two deliveries "the same event".
fn dedupe_key(input: &HookInput) -> String {
    let discriminator = match input.event {
        HookEvent::SessionStart => input.source.as_deref(),
        HookEvent::PreCompact => input.trigger.as_deref(),
        HookEvent::SessionEnd => input.reason.as_deref(),
        _ => input.agent_id.as_deref(),
    };
    format!(
        "{}\u{0}{}\u{0}{}",
        input.event.name(),
        input.session_id.as_deref().unwrap_or(""),
        discriminator.unwrap_or("")
    )
}

fn session_id(input: &HookInput) -> &str {
    input.session_id.as_deref().unwrap_or("unknown")
}

/// Reconcile, clean, log, and hand back the prime text. Only `prime` failing fails the event:
/// without the rest Claude still gets the context.
async fn session_start(
    service: &ProjectService,
    id: &ProjectId,
    input: &HookInput,
    problems: &mut Vec<String>,
) -> Result<HookOutput, Error> {
    let source = input.source.as_deref().unwrap_or("startup");
    // After a compaction the same agent is still on its in-progress work: only staleness applies.
    let scope = if source == "compact" {
        ReconcileScope::StalenessOnly
    } else {
        ReconcileScope::Resume
    };
    // One load serves the common case, where there is nothing to reconcile: the task list is the
    // bulk of a session start's cost (a 10,000-task list is megabytes of validated JSON).
    let mut state = service.load(id).await?;
    // Claims named after this session are its own interrupted work; other agents' live claims
    // are theirs and stay as they are.
    let this_session = input.session_id.as_deref();
    let work = scope.has_work_for(&state.tasks, service.now(), this_session);
    let mut report = ReconcileReport::default();
    if work {
        match service.reconcile_as(id, scope, false, this_session).await {
            Ok(done) => {
                report = done;
                state = service.load(id).await?;
            }
            Err(e) => problems.push(format!("reconciliation: {}", Report(&e))),
        }
    }
    if let Err(e) = service.clean_debris(id).await {
        problems.push(format!("debris cleanup: {}", Report(&e)));
    }
    let checkpoint = if source == "compact" {
        match service.checkpoints(id).await {
            Ok(list) => list.last().map(|c| c.number),
            Err(e) => {
                problems.push(format!("listing checkpoints: {}", Report(&e)));
                None
            }
        }
    } else {
        None
    };
    let recoveries = service.take_recoveries();
    for r in &recoveries {
        problems.push(format!("recovered: {}", recovery_note(r)));
    }
    let header = session_header(source, &report, checkpoint, &recoveries);
    let text = cairn_render::prime(&report::prime(&state), Some(&header));
    // The process exits right after answering: freeing tens of thousands of small allocations
    // one by one would only delay Claude. The OS reclaims the memory at exit.
    std::mem::forget(state);
    let mut detail = format!("source: {source}");
    if !report.reconciled.is_empty() || !report.stale.is_empty() {
        detail.push_str(&format!(
            "; reconciled: {}; stale: {}",
            report.reconciled.len(),
            report.stale.len()
        ));
    }
    if let Err(e) = service
        .record_session_event(id, "START", session_id(input), Some(detail))
        .await
    {
        problems.push(format!("logging the session start: {}", Report(&e)));
    }
    Ok(HookOutput::session_context(text))
}

/// The lines above the prime text: why Claude is getting it now, and what cairn just changed.
pub fn session_header(
    source: &str,
    report: &ReconcileReport,
    checkpoint: Option<u32>,
    recoveries: &[Recovery],
) -> String {
    let mut out = format!("{} Current project state:", session_title(source));
    if let Some(n) = checkpoint {
        out.push_str(&format!(
            "\nThe task list from before the compaction is saved as checkpoint {n} (`cairn checkpoint restore {n}` brings it back)."
        ));
    }
    push_moves(
        &mut out,
        "Reconciled interrupted work (start it again when you pick it up)",
        &report.reconciled,
    );
    push_moves(&mut out, "Reset as stale", &report.stale);
    for r in recoveries {
        out.push_str(&format!("\nWarning: {}", recovery_note(r)));
    }
    out
}

/// "cairn — session start." and its siblings: why Claude is getting context now.
fn session_title(source: &str) -> &'static str {
    match source {
        "resume" => "cairn — session resumed.",
        "clear" => "cairn — context cleared.",
        "compact" => "cairn — context compacted.",
        _ => "cairn — session start.",
    }
}

const HEADER_LIST_MAX: usize = 5;

fn push_moves(out: &mut String, title: &str, moves: &[Reconciled]) {
    if moves.is_empty() {
        return;
    }
    out.push_str(&format!("\n{title}:"));
    for m in moves.iter().take(HEADER_LIST_MAX) {
        out.push_str(&format!(
            "\n- {} {} → {} ({})",
            m.task,
            m.from,
            m.to,
            clip(&m.reason, 100)
        ));
    }
    if moves.len() > HEADER_LIST_MAX {
        out.push_str(&format!(
            "\n- … and {} more (`cairn log`)",
            moves.len() - HEADER_LIST_MAX
        ));
    }
}

fn recovery_note(r: &Recovery) -> String {
    format!(
        "tasks.json was damaged and rebuilt: {}; the damaged copy is at {}",
        clip(&r.summary(), 600),
        clip(&r.damaged_copy, 200)
    )
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(max - 1).collect();
        out.push('…');
        out
    }
}

/// Snapshot before Claude forgets: the checkpoint is the state to go back to.
async fn pre_compact(
    service: &ProjectService,
    id: &ProjectId,
    input: &HookInput,
) -> Result<(), Error> {
    let (checkpoint, written) = service.keep_checkpoint(id).await?;
    let detail = format!(
        "trigger: {}; checkpoint: {}{}",
        input.trigger.as_deref().unwrap_or("unknown"),
        checkpoint.number,
        if written {
            ""
        } else {
            " (already the current list)"
        }
    );
    service
        .record_session_event(id, "PRECOMPACT", session_id(input), Some(detail))
        .await
}

async fn record(service: &ProjectService, id: &ProjectId, input: &HookInput) -> Result<(), Error> {
    let (hook, detail) = match input.event {
        HookEvent::SessionEnd => (
            "END",
            format!("reason: {}", input.reason.as_deref().unwrap_or("unknown")),
        ),
        HookEvent::SubagentStart => ("SUBAGENT_START", agent_detail(input)),
        HookEvent::SubagentStop => ("SUBAGENT_STOP", agent_detail(input)),
        _ => return Ok(()),
    };
    service
        .record_session_event(id, hook, session_id(input), Some(detail))
        .await
}

fn agent_detail(input: &HookInput) -> String {
    format!(
        "agent: {} ({})",
        // Claude Code's own agents (the compaction forks) stop with `"agent_type": ""`.
        input
            .agent_type
            .as_deref()
            .filter(|t| !t.is_empty())
            .unwrap_or("unknown"),
        input.agent_id.as_deref().unwrap_or("no id")
    )
}
