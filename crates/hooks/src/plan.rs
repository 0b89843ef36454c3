//! The active plan in the hook: what may be written in each state, the change manifest of
//! EXECUTE, and the plan's place in a new session's context.
//!
//! | event | reads | writes | prints |
//! |---|---|---|---|
//! | PreToolUse (Edit, Write, MultiEdit, NotebookEdit, Bash) | the pointer and the first bytes of `state.md` ([`peek_active`]) | nothing | deny in EXPLORE, PLAN, REFLECT, RE-PLAN for project files outside the plan directory |
//! | PostToolUse (Edit, Write, MultiEdit) | the same, then `state.md` in EXECUTE | the manifest and budget (`PlanService::record_change`) | `systemMessage` when over a hard budget limit (files added, new abstractions) or at the nuclear option |
//! | SessionStart | the plan | nothing | the plan's resume text, after the project's context |
//! | PreCompact | the plan | a checkpoint of `state.md` + `plan.md` | `systemMessage` naming it |
//!
//! PreToolUse stays bounded: without a pointer it costs one failed `open`; with one, two reads
//! of at most a few hundred bytes, whatever the size of the plan.
//!
//! Bash is judged with the guard's scanner (`guard/bash.rs`): every word of a command
//! that is not a read is a mention, and a mention that looks like a path (it holds a `/` or a
//! `.`, or a glob) and lies inside the repository but outside the plan directory makes the
//! command a project write. A bare word (`cargo test`, `rm notes`) is not taken for a path, so
//! build and test runs stay possible in REFLECT; like the guard, this is a seatbelt against
//! honest mistakes, not a sandbox.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use cairn_domain::NextStep;
use cairn_domain::error::Report;
use cairn_domain::plan::document::CLAUDE_DIR;
use cairn_domain::plan::{
    BudgetOverrun, Change, ChangeKind, EditVerdict, PlanId, PlanService, PlanState, decide_edit,
    project_edits_allowed,
};
use serde_json::Value;

use crate::dedupe;
use crate::dispatch::{Deps, Handled};
use crate::guard::{bash, normalize};
use crate::protocol::{HookEvent, HookInput, HookOutput, HookSpecificOutput};
use crate::wiring::peek_active;

/// The tools whose edits the plan rule judges before they run.
const EDIT_TOOLS: [&str; 4] = ["Edit", "Write", "MultiEdit", "NotebookEdit"];

fn service(root: &Path, deps: &Deps<'_>) -> Result<(PlanService, tokio::runtime::Runtime), String> {
    let runtime = crate::dispatch::runtime()?;
    let service = PlanService::new(
        crate::wiring::open_plan_store(root, crate::HOOK_LOCK_TIMEOUT),
        deps.clock.clone(),
        crate::wiring::random_ids(),
    );
    Ok((service, runtime))
}

/// The active plan under `root`, or why it could not be read (for the error log).
fn active(root: &Path) -> Result<Option<(PlanId, PlanState)>, String> {
    peek_active(root).map_err(|e| format!("reading the active plan: {}", Report(&e)))
}

fn plan_dir(root: &Path, id: &PlanId) -> PathBuf {
    root.join(CLAUDE_DIR).join(id.as_str())
}

/// PreToolUse: in EXPLORE, PLAN, REFLECT and RE-PLAN, a write to a project file outside the plan
/// directory is denied with the state and the command that moves on.
pub fn pre_tool_use(input: &HookInput, deps: &Deps<'_>) -> Handled {
    let Some(tool) = input.tool_name.as_deref() else {
        return Handled::silent();
    };
    if tool != "Bash" && !EDIT_TOOLS.contains(&tool) {
        return Handled::silent();
    }
    let Some(root) = deps.env.root(input.cwd.as_deref()) else {
        return Handled::silent();
    };
    let (id, state) = match active(&root) {
        Ok(Some(active)) => active,
        Ok(None) => return Handled::silent(),
        Err(problem) => return Handled::failed(root, problem),
    };
    if project_edits_allowed(state) {
        return Handled::silent();
    }
    let dir = plan_dir(&root, &id);
    let refusal = if tool == "Bash" {
        input
            .tool_input_str("command")
            .and_then(|command| bash_write(command, input.cwd.as_deref(), &root, &dir))
            .map(|path| {
                format!(
                    "the plan is in {state}: `{path}` is a project file outside the plan directory `{}`, and this command may write it",
                    dir.display()
                )
            })
    } else {
        let field = if tool == "NotebookEdit" {
            "notebook_path"
        } else {
            "file_path"
        };
        input.tool_input_str(field).and_then(|path| {
            let target = absolute(path, input.cwd.as_deref());
            match decide_edit(state, &target, &dir.display().to_string()) {
                EditVerdict::Allow => None,
                EditVerdict::Deny { reason } => Some(reason),
            }
        })
    };
    match refusal {
        Some(reason) => Handled {
            output: Some(HookOutput::deny(deny_reason(&id, state, &reason))),
            ..Handled::default()
        },
        None => Handled::silent(),
    }
}

/// The reason shown to the agent: what the rule says, then the command that moves on.
pub fn deny_reason(id: &PlanId, state: PlanState, rule: &str) -> String {
    let cmd = |step: NextStep| cairn_render::command(&step);
    let next = match state {
        PlanState::Explore => format!(
            "when the findings are written, `{}`; code changes wait for the approved plan (EXECUTE)",
            cmd(NextStep::PlanGo {
                to: PlanState::Plan
            })
        ),
        PlanState::Plan => format!(
            "present plan.md to the user; the user approves it with `{}`, which enters EXECUTE",
            cmd(NextStep::PlanApprove)
        ),
        PlanState::Reflect => format!(
            "to change code, `{}`, then PLAN and the user's approval",
            cmd(NextStep::PlanGo {
                to: PlanState::RePlan
            })
        ),
        PlanState::RePlan => format!(
            "log the pivot, then `{}` and get the new plan approved",
            cmd(NextStep::PlanGo {
                to: PlanState::Plan
            })
        ),
        PlanState::Execute | PlanState::Close => format!("`{}`", cmd(NextStep::PlanStatus)),
    };
    format!("cairn plan {id}: {rule}. Next: {next}.")
}

/// `path` made absolute against `cwd` when it is relative and a `cwd` is known; as written
/// otherwise (the domain's rule then refuses what it cannot place).
fn absolute(path: &str, cwd: Option<&str>) -> String {
    let anchored = path.starts_with(['/', '\\'])
        || (path.len() >= 2
            && path.as_bytes()[1] == b':'
            && path.as_bytes()[0].is_ascii_alphabetic());
    match cwd {
        Some(cwd) if !anchored && !cwd.is_empty() => {
            format!("{}/{path}", cwd.trim_end_matches('/'))
        }
        _ => path.to_owned(),
    }
}

/// Does a word look like a path rather than a subcommand or a value?
fn looks_like_path(word: &str) -> bool {
    !word.starts_with('-')
        && word.contains(['/', '.', '*', '?', '['])
        && word != "."
        && word != ".."
}

/// The first path a Bash command may write that lies in the repository but outside the plan
/// directory.
fn bash_write(command: &str, cwd: Option<&str>, root: &Path, plan_dir: &Path) -> Option<String> {
    let root_str = root.display().to_string();
    let root_parts = normalize(&root_str, None);
    let plan_parts = normalize(&plan_dir.display().to_string(), None);
    bash::mentions(command, cwd)
        .into_iter()
        .filter(|m| looks_like_path(&m.path))
        .find_map(|m| {
            let path = ["${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR"]
                .iter()
                .find_map(|var| m.path.strip_prefix(var))
                .map_or_else(|| m.path.clone(), |rest| format!("{root_str}{rest}"));
            // A relative word after an unknown `cd` cannot be placed; the guard's rule for state
            // files still applies to it.
            if !path.starts_with('/') && m.cwd.is_none() {
                return None;
            }
            let parts = normalize(&path, m.cwd.as_deref());
            let inside = |dir: &[String]| parts.len() >= dir.len() && parts[..dir.len()] == *dir;
            (inside(&root_parts) && !inside(&plan_parts)).then_some(m.path)
        })
}

/// PostToolUse of Edit, Write or MultiEdit while the active plan is in EXECUTE: the change goes
/// into the manifest and the budget; an overrun is reported to the agent.
pub fn post_tool_use(input: &HookInput, deps: &Deps<'_>) -> Handled {
    let Some(tool @ ("Edit" | "Write" | "MultiEdit")) = input.tool_name.as_deref() else {
        return Handled::silent();
    };
    let Some(root) = deps.env.root(input.cwd.as_deref()) else {
        return Handled::silent();
    };
    let id = match active(&root) {
        Ok(Some((id, PlanState::Execute))) => id,
        Ok(_) => return Handled::silent(),
        Err(problem) => return Handled::failed(root, problem),
    };
    let Some(change) = change_of(tool, input, &root) else {
        return Handled::silent();
    };
    // One tool call is counted once, however often its PostToolUse is delivered.
    if let Some(call) = input.tool_use_id.as_deref() {
        let key = format!("plan-change\u{0}{call}");
        if !dedupe::claim(&dedupe::marker_dir(&root), &key, SystemTime::now()) {
            return Handled::silent();
        }
    }
    let (service, runtime) = match service(&root, deps) {
        Ok(opened) => opened,
        Err(problem) => return Handled::failed(root, problem),
    };
    match runtime.block_on(service.record_change(change)) {
        Ok(outcome) => {
            let mut warnings: Vec<String> = Vec::new();
            // The hard limits only: net lines is a target that most edits overshoot for a
            // while, and a warning after every such edit would drown the real ones. `cairn plan
            // budget` and state.md show it.
            let over: Vec<String> = outcome
                .budget
                .over
                .iter()
                .filter(|o| !matches!(o, BudgetOverrun::NetLines { .. }))
                .map(ToString::to_string)
                .collect();
            if !over.is_empty() {
                warnings.push(format!(
                    "cairn plan {id}: over the complexity budget ({}). Stop and REFLECT: `{}`.",
                    over.join("; "),
                    cairn_render::command(&NextStep::PlanGo {
                        to: PlanState::Reflect
                    })
                ));
            }
            if let Some(nuclear) = outcome.nuclear {
                warnings.push(format!("cairn plan {id}: NUCLEAR OPTION: {nuclear}."));
            }
            Handled {
                output: (!warnings.is_empty())
                    .then(|| HookOutput::system_message(warnings.join("\n"))),
                root: Some(root),
                problems: Vec::new(),
            }
        }
        Err(e) => Handled::failed(root, format!("recording a plan change: {}", Report(&e))),
    }
}

/// The change a finished Edit, Write or MultiEdit made, relative to `root`; `None` for a file
/// outside the repository or inside `.claude/` (plan files are not project changes).
fn change_of(tool: &str, input: &HookInput, root: &Path) -> Option<Change> {
    let path = input.tool_input_str("file_path")?;
    let target = normalize(&absolute(path, input.cwd.as_deref()), None);
    let root_parts = normalize(&root.display().to_string(), None);
    if target.len() <= root_parts.len() || target[..root_parts.len()] != *root_parts {
        return None;
    }
    let relative = &target[root_parts.len()..];
    if relative.first().is_some_and(|c| c == CLAUDE_DIR) {
        return None;
    }
    let response = input.tool_response.as_ref();
    let kind = match (
        tool,
        response.and_then(|r| r.get("type")).and_then(Value::as_str),
    ) {
        ("Write", Some("create")) => ChangeKind::Added,
        _ => ChangeKind::Modified,
    };
    let patch = response
        .and_then(|r| r.get("structuredPatch"))
        .and_then(Value::as_array)
        .filter(|hunks| !hunks.is_empty());
    let (added, removed) = match patch {
        Some(hunks) => patch_lines(hunks),
        None => fallback_lines(tool, input, kind),
    };
    Some(Change {
        path: relative.join("/"),
        kind,
        lines_added: added,
        lines_removed: removed,
    })
}

/// Lines added and removed in Claude Code's `structuredPatch` hunks (`+`/`-` prefixed lines).
fn patch_lines(hunks: &[Value]) -> (u32, u32) {
    let mut counts = (0u32, 0u32);
    for line in hunks
        .iter()
        .filter_map(|h| h.get("lines")?.as_array())
        .flatten()
        .filter_map(Value::as_str)
    {
        if line.starts_with('+') {
            counts.0 = counts.0.saturating_add(1);
        } else if line.starts_with('-') {
            counts.1 = counts.1.saturating_add(1);
        }
    }
    counts
}

/// Without a patch in the response: from the tool's input.
fn fallback_lines(tool: &str, input: &HookInput, kind: ChangeKind) -> (u32, u32) {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    let Some(tool_input) = input.tool_input.as_ref() else {
        return (0, 0);
    };
    match tool {
        "Write" => {
            let new = text(tool_input, "content");
            let old = match kind {
                ChangeKind::Added => String::new(),
                _ => input
                    .tool_response
                    .as_ref()
                    .map(|r| text(r, "originalFile"))
                    .unwrap_or_default(),
            };
            replaced_lines(&old, &new)
        }
        "Edit" => replaced_lines(
            &text(tool_input, "old_string"),
            &text(tool_input, "new_string"),
        ),
        _ => tool_input
            .get("edits")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|e| replaced_lines(&text(e, "old_string"), &text(e, "new_string")))
            .fold((0, 0), |a, b| {
                (a.0.saturating_add(b.0), a.1.saturating_add(b.1))
            }),
    }
}

/// Lines added and removed replacing `old` by `new`, not counting the lines they share at the
/// start and the end.
fn replaced_lines(old: &str, new: &str) -> (u32, u32) {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    (
        count(new.len() - prefix - suffix),
        count(old.len() - prefix - suffix),
    )
}

/// SessionStart and PreCompact with an active plan: its resume text goes after the project's
/// context; before a compaction, a checkpoint is written and named.
pub fn session_event(input: &HookInput, deps: &Deps<'_>, handled: &mut Handled) {
    let Some(root) = deps.env.root(input.cwd.as_deref()) else {
        return;
    };
    let fail = |handled: &mut Handled, problem: String| {
        handled.root.get_or_insert_with(|| root.clone());
        handled.problems.push(problem);
    };
    match active(&root) {
        Ok(Some(_)) => {}
        Ok(None) => return,
        Err(problem) => return fail(handled, problem),
    }
    let discriminator = match input.event {
        HookEvent::PreCompact => input.trigger.as_deref(),
        _ => input.source.as_deref(),
    };
    let key = format!(
        "plan\u{0}{}\u{0}{}\u{0}{}",
        input.event.name(),
        input.session_id.as_deref().unwrap_or(""),
        discriminator.unwrap_or("")
    );
    if !dedupe::claim(&dedupe::marker_dir(&root), &key, SystemTime::now()) {
        return;
    }
    let (service, runtime) = match service(&root, deps) {
        Ok(opened) => opened,
        Err(problem) => return fail(handled, problem),
    };
    let result = runtime.block_on(async {
        let checkpoint = match input.event {
            HookEvent::PreCompact => service.checkpoint("precompact").await?,
            _ => None,
        };
        Ok::<_, cairn_domain::Error>((checkpoint, service.overview().await?))
    });
    let (checkpoint, overview) = match result {
        Ok(done) => done,
        Err(e) => return fail(handled, format!("the active plan: {}", Report(&e))),
    };
    match input.event {
        HookEvent::PreCompact => {
            let next = cairn_render::commands(&overview.next);
            let text = format!(
                "cairn plan {} is in {} (iteration {}); checkpoint {} written before compaction. Next: {next}",
                overview.plan.id(),
                overview.plan.state(),
                overview.plan.iteration(),
                checkpoint.unwrap_or_default()
            );
            match &mut handled.output {
                Some(output) => {
                    let joined = output
                        .system_message
                        .take()
                        .map_or_else(|| text.clone(), |m| format!("{m}\n{text}"));
                    output.system_message = Some(joined);
                }
                None => handled.output = Some(HookOutput::system_message(text)),
            }
        }
        _ => {
            let text = cairn_render::plan_resume(&overview, Some("Active plan (cairn plan):"));
            let context = match handled.output.take() {
                Some(HookOutput {
                    hook_specific_output:
                        Some(HookSpecificOutput::SessionStart { additional_context }),
                    ..
                }) => format!("{additional_context}\n\n{text}"),
                _ => text,
            };
            handled.output = Some(HookOutput::session_context(context));
        }
    }
    handled.root.get_or_insert(root);
}
