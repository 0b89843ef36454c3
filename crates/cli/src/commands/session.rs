//! `session …`: execution sessions. Every command is one call to the domain's
//! [`SessionRunner`] (or the execution service) and a rendering of what it returns.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::PathBuf;

use cairn_domain::execution::ExecutionError;
use cairn_domain::execution::duration::{format_duration, parse_duration};
use cairn_domain::execution::lock::LockDecision;
use cairn_domain::execution::progress::{Progress, WaveProgress};
use cairn_domain::execution::run::{
    Recovered, Selection, SessionRunner, SessionStart, TaskEnd, TaskEndReport, TaskStep,
};
use cairn_domain::execution::service::{ExecutionService, LockHolder};
use cairn_domain::execution::state::Tally;
use cairn_domain::project::TaskId;
use cairn_domain::{DomainError, Entity, Error, StoreError};
use serde_json::{Value, json};

use super::{Ctx, Report};
use crate::cli::{
    SessionCommand, SessionContextCommand, SessionStartArgs, SessionTaskCommand,
    SessionWaveCommand, TaskEndArgs,
};
use crate::exit::{Code, Failure};
use crate::output::Style;
use cairn_render::session_json::{
    archive_json, lock_word, recovered_json, status_json, step_json, tally_json, wave_json,
};

pub fn run(ctx: &Ctx, command: SessionCommand) -> Result<Report, Failure> {
    let execution = execution_service(ctx)?;
    match command {
        SessionCommand::Start(args) => start(ctx, execution, args),
        SessionCommand::Status => status(ctx, &execution),
        SessionCommand::Task(c) => task(ctx, execution, c),
        SessionCommand::Context(SessionContextCommand::Add { task, text, file }) => {
            let id: TaskId = task.parse()?;
            let text = match (text, file) {
                (Some(text), _) => text,
                (None, Some(path)) => read_text(&path)?,
                (None, None) => unreachable!("clap requires TEXT or --file"),
            };
            let runner = SessionRunner::new(execution, &ctx.service);
            let list_id = ctx
                .block_on(runner.add_context(&id, &text))
                .map_err(session_failure)?;
            let file = format!("context-task-{list_id}.md");
            ctx.emit(
                &json!({"task": id, "list_id": list_id, "file": file}),
                |_| format!("{id}: learnings written to {file}; merged at the next wave\n"),
            )
        }
        SessionCommand::Wave(SessionWaveCommand::Next) => {
            let (merged, progress) = ctx
                .block_on(execution.next_wave())
                .map_err(session_failure)?;
            let value = json!({"wave": wave_json(progress.wave), "merged": merged});
            ctx.emit(&value, |style| {
                let mut out = format!("{}\n", style.bold(&wave_text(progress.wave)));
                if !merged.is_empty() {
                    let _ = writeln!(out, "merged the learnings of tasks {}", merged.join(", "));
                }
                out
            })
        }
        SessionCommand::Finish => {
            let runner = SessionRunner::new(execution, &ctx.service);
            let done = ctx.block_on(runner.finish()).map_err(session_failure)?;
            let value = json!({
                "session": done.session_id,
                "archive_dir": format!(".claude/sessions/{}/", done.archive_dir),
                "tally": tally_json(&done.tally),
                "merged": done.merged_task_contexts,
            });
            ctx.emit(&value, |style| {
                format!(
                    "{} finished: {}\narchived to .claude/sessions/{}/\n",
                    style.bold(&done.session_id),
                    tally_text(&done.tally),
                    done.archive_dir
                )
            })
        }
        SessionCommand::Recover { force } => {
            let project = ctx.project()?;
            let runner = SessionRunner::new(execution, &ctx.service);
            let recovered = ctx
                .block_on(runner.recover(&project, force))
                .map_err(session_failure)?;
            let value = match &recovered {
                None => json!({"recovered": false}),
                Some((r, lock)) => {
                    let mut v = recovered_json(r);
                    v["recovered"] = json!(true);
                    v["lock"] = json!(lock_word(lock));
                    v
                }
            };
            ctx.emit(&value, |style| match &recovered {
                None => "nothing to recover: no session is live\n".to_owned(),
                Some((r, _)) => recovered_text(style, r),
            })
        }
        SessionCommand::List(page) => {
            let archives = ctx.block_on(execution.archives())?;
            let rows: Vec<Value> = archives.iter().map(archive_json).collect();
            ctx.emit_page(
                rows,
                &page,
                "sessions",
                |_| 80,
                |style, page| {
                    let mut out = String::new();
                    if page.total == 0 {
                        out.push_str("no archived sessions\n");
                    }
                    for row in &page.items {
                        let kind = if row["interrupted"] == json!(true) {
                            "interrupted"
                        } else {
                            "finished"
                        };
                        let _ = writeln!(
                            out,
                            "{}  {kind}  {}",
                            style.bold(row["dir"].as_str().unwrap_or_default()),
                            tally_text_json(&row["tally"])
                        );
                    }
                    out
                },
            )
        }
    }
}

/// Finishes, before any command of either wing runs, the project moves a `session task
/// done|fail|skip` recorded in the session but died before making, so `task next`, `session
/// status` and the rest see both stores agree without `session recover`. Best effort: a
/// failure is reported on stderr and the move stays recorded for the next command.
pub(super) fn settle_recorded_moves(ctx: &Ctx) {
    if !crate::wiring::session_moves_recorded(&ctx.root) {
        return;
    }
    let settled = execution_service(ctx)
        .map_err(|f| f.to_string())
        .and_then(|execution| {
            let runner = SessionRunner::new(execution, &ctx.service);
            ctx.block_on(runner.settle())
                .map_err(|e| session_failure(e).to_string())
        });
    match settled {
        Ok(moved) if moved.is_empty() => {}
        Ok(moved) => {
            let ids: Vec<String> = moved.iter().map(ToString::to_string).collect();
            eprintln!(
                "cairn: finished the project side of an interrupted session task end: {}",
                ids.join(", ")
            );
        }
        Err(e) => eprintln!("cairn: the session's recorded project moves wait: {e}"),
    }
}

/// The execution service over this repository's sessions; its locks name this process and host.
pub(super) fn execution_service(ctx: &Ctx) -> Result<ExecutionService, Failure> {
    let store = crate::wiring::open_execution_store(&ctx.root, super::lock_timeout_from_env()?);
    Ok(
        ExecutionService::new(store, crate::clock::from_env()?).with_lock_holder(LockHolder {
            pid: std::process::id().to_string(),
            host: crate::wiring::hostname(),
        }),
    )
}

/// A failure with the next step the execution rules imply.
pub(super) fn session_failure(error: Error) -> Failure {
    let hint = match &error {
        Error::Domain(DomainError::Execution(e)) => match e {
            ExecutionError::SessionLocked { .. } => Some(
                "wait for that session to finish; if it is dead, `cairn session recover --force` archives it, or `cairn session start --force` takes over",
            ),
            ExecutionError::NoLiveSession | ExecutionError::NotActive { .. } => Some(
                "`cairn session start` starts a session; `cairn session status` shows the live one",
            ),
            ExecutionError::TasksStillActive { .. } => Some(
                "end each with `cairn session task done|fail|skip ID`, then `cairn session wave next`",
            ),
            ExecutionError::WaveOutOfOrder { .. } => {
                Some("that was the last wave: `cairn session finish` ends the session")
            }
            ExecutionError::NothingToRun { .. } | ExecutionError::NotSchedulable { .. } => {
                Some("`cairn task waves` shows what can run and in which order")
            }
            _ => None,
        },
        Error::Store(StoreError::NotFound {
            entity: Entity::ExecutionSession,
            ..
        }) => Some("`cairn session start` starts a session"),
        _ => None,
    };
    let failure = Failure::from(error);
    match (hint, &failure.hint) {
        (Some(hint), None) => failure.with_hint(hint),
        _ => failure,
    }
}

fn start(
    ctx: &Ctx,
    execution: ExecutionService,
    args: SessionStartArgs,
) -> Result<Report, Failure> {
    let project = ctx.project()?;
    let list_id = super::tasklist::list_id_sources(ctx, args.list.clone())
        .resolve(&project)
        .map_err(|e| super::tasklist::failure(DomainError::from(e).into()))?
        .0
        .to_string();
    let selection = if args.ready {
        Selection::Ready
    } else if args.tasks.is_empty() {
        Selection::All
    } else {
        Selection::Tasks(
            args.tasks
                .iter()
                .map(|t| t.parse())
                .collect::<Result<Vec<TaskId>, _>>()?,
        )
    };
    let runner = SessionRunner::new(execution, &ctx.service);
    let started = ctx
        .block_on(runner.start(
            SessionStart {
                project: project.clone(),
                group: args.group,
                max_parallel: args.max_parallel,
                selection,
                force: args.force,
            },
            cairn_render::session_json::execution_plan,
        ))
        .map_err(session_failure)?;

    // The session is live whatever happens to the pointer: a failure here is a warning.
    let pointer = match super::setup::config_dir() {
        Ok(config) => {
            match crate::wiring::link_task_list(&config.join("tasks").join(&list_id), &ctx.root) {
                Ok(path) => Some(path),
                Err(e) => {
                    eprintln!(
                        "warning: the session started, but the task list was not linked: {e}"
                    );
                    None
                }
            }
        }
        Err(e) => {
            eprintln!(
                "warning: the session started, but the task list was not linked: {}",
                e.message
            );
            None
        }
    };
    let outcome = &started.outcome;
    let plan = &started.plan;
    // The first waves, and how many more: a 100,000-task project plans 8,000 of them, all in
    // execution_plan.md, and printed them all (450 KB).
    let (waves, more_waves) = crate::page::summary_rows(&plan.waves);
    let value = json!({
        "session": outcome.session_id,
        "project": project,
        "live_dir": ".claude/sessions/__live_session__/",
        "waves": waves.iter().map(|w| w.iter().map(|t| json!({"id": t.id, "list_id": t.list_id, "title": t.title})).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "more": {"waves": more_waves},
        "total_waves": plan.waves.len(),
        "max_parallel": plan.max_parallel,
        "lock": lock_word(&outcome.lock),
        "interrupted_archive": outcome.interrupted_archive,
        "recovered": recovered_json(&started.recovered),
        "inherited_from": outcome.inherited_from,
        "list": list_id,
        "pointer": pointer.as_ref().map(|p| p.display().to_string()),
        "wave": wave_json(started.progress.wave),
    });
    ctx.emit(&value, |style| {
        let mut out = String::new();
        match &outcome.lock {
            LockDecision::Stale { holder, .. } => {
                let _ = writeln!(out, "took over the stale lock of session {holder}");
            }
            LockDecision::Forced { holder, .. } => {
                let _ = writeln!(out, "forced the lock of session {holder}");
            }
            _ => {}
        }
        if started.recovered.archive.is_some() {
            out.push_str(&recovered_text(style, &started.recovered));
        }
        let _ = writeln!(
            out,
            "{} started: {} tasks in {} waves (max parallel {})",
            style.bold(&outcome.session_id),
            plan.task_count(),
            plan.waves.len(),
            plan.max_parallel
        );
        for (n, wave) in waves.iter().enumerate() {
            let ids: Vec<&str> = wave.iter().map(|t| t.id.as_str()).collect();
            let _ = writeln!(out, "  wave {}: {}", n + 1, ids.join(", "));
        }
        if more_waves > 0 {
            let _ = writeln!(
                out,
                "  … and {more_waves} more waves (all in .claude/sessions/__live_session__/execution_plan.md)"
            );
        }
        if let Some(from) = &outcome.inherited_from {
            let _ = writeln!(out, "learnings inherited from {from}");
        }
        if let Some(path) = &pointer {
            let _ = writeln!(out, "task list {list_id} linked ({})", path.display());
        }
        if let Some(first) = plan.waves.first().and_then(|w| w.first()) {
            out.push_str(&style.next_step(&format!("cairn session task start {}", first.id)));
        }
        out
    })
}

fn status(ctx: &Ctx, execution: &ExecutionService) -> Result<Report, Failure> {
    let status = ctx.block_on(execution.status())?;
    let Some(status) = status else {
        return ctx.emit(&Value::Null, |style| {
            format!(
                "no execution session is live\n{}",
                style.next_step("cairn session start")
            )
        });
    };
    let state = &status.state;
    let value = status_json(&status);
    ctx.emit(&value, |style| {
        let name = if state.id.is_empty() {
            "(unnamed session)"
        } else {
            &state.id
        };
        let mut out = format!(
            "{}  {}  {}\n",
            style.bold(name),
            state.phase,
            wave_text(state.wave)
        );
        let _ = writeln!(out, "results: {}", tally_text(&state.tally));
        if status.active.is_empty() {
            out.push_str("no task active\n");
        }
        for task in &status.active {
            let _ = writeln!(
                out,
                "  active [{}] {} — {}",
                task.id, task.subject, task.phase
            );
        }
        if status.stale {
            out.push_str(&style.yellow(
                "the lock is stale (older than 4 h, or missing): the session is presumed dead\n",
            ));
            out.push_str(&style.next_step("cairn session recover"));
        }
        out
    })
}

fn task(
    ctx: &Ctx,
    execution: ExecutionService,
    command: SessionTaskCommand,
) -> Result<Report, Failure> {
    let project = ctx.project()?;
    let runner = SessionRunner::new(execution, &ctx.service);
    let step = match command {
        SessionTaskCommand::Start { id } => {
            let id: TaskId = id.parse()?;
            ctx.block_on(runner.start_task(&project, &id))
        }
        SessionTaskCommand::Done(args) => end(ctx, &runner, &project, TaskEnd::Done, args)?,
        SessionTaskCommand::Fail(args) => end(ctx, &runner, &project, TaskEnd::Failed, args)?,
        SessionTaskCommand::Skip(args) => end(ctx, &runner, &project, TaskEnd::Skipped, args)?,
    }
    .map_err(session_failure)?;
    ctx.emit(&step_json(&step), |style| step_text(style, &step))
}

fn end(
    ctx: &Ctx,
    runner: &SessionRunner<'_>,
    project: &cairn_domain::project::ProjectId,
    end: TaskEnd,
    args: TaskEndArgs,
) -> Result<Result<TaskStep, Error>, Failure> {
    let id: TaskId = args.id.parse()?;
    let duration = match &args.duration {
        Some(text) => Some(parse_duration(text).ok_or_else(|| {
            Failure::new(
                Code::Invalid,
                format!("--duration `{text}` is not a duration"),
            )
            .with_hint("write it as the task log does: `2m 34s`, `2m34s`, `94s` or `1h 5m`")
        })?),
        None => None,
    };
    Ok(ctx.block_on(runner.end_task(
        project,
        &id,
        TaskEndReport {
            end,
            duration,
            tokens: args.tokens,
            note: args.note,
        },
    )))
}

fn step_text(style: &Style, step: &TaskStep) -> String {
    let mut out = format!(
        "{} {}: {}",
        style.bold(step.task.as_str()),
        step.title,
        style.status(step.status)
    );
    if let Some(a) = step.attempts {
        let _ = write!(out, " (attempt {}/{})", a.used, a.max);
    }
    out.push('\n');
    let _ = writeln!(out, "{}", progress_line(&step.progress));
    out
}

fn progress_line(progress: &Progress) -> String {
    format!(
        "{}: {} active, {} completed this session",
        wave_text(progress.wave),
        progress.active.len(),
        progress.completed.len()
    )
}

fn wave_text(wave: Option<WaveProgress>) -> String {
    match wave {
        Some(w) => format!("wave {} of {}", w.current, w.total),
        None => "no wave yet".to_owned(),
    }
}

fn tally_text(tally: &Tally) -> String {
    format!(
        "{} PASS, {} PARTIAL, {} FAIL ({} of task time)",
        tally.pass,
        tally.partial,
        tally.fail,
        format_duration(tally.task_time)
    )
}

fn tally_text_json(tally: &Value) -> String {
    format!(
        "{} PASS, {} PARTIAL, {} FAIL",
        tally["pass"], tally["partial"], tally["fail"]
    )
}

fn recovered_text(style: &Style, r: &Recovered) -> String {
    let mut out = String::new();
    if let Some(dir) = &r.archive {
        let _ = writeln!(
            out,
            "{} the leftovers of an interrupted session to .claude/sessions/{dir}/",
            style.yellow("archived")
        );
    }
    let ids = |ids: &[TaskId]| {
        ids.iter()
            .map(TaskId::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !r.reset.is_empty() {
        let _ = writeln!(out, "reset to PENDING: {}", ids(&r.reset));
    }
    if !r.completed.is_empty() {
        let _ = writeln!(out, "completed (logged as PASS): {}", ids(&r.completed));
    }
    for (task, agent) in &r.claimed {
        let _ = writeln!(out, "kept {task}: claimed by {agent}");
    }
    out
}

/// A file's text, or stdin's for `-`.
fn read_text(path: &PathBuf) -> Result<String, Failure> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::new(Code::Internal, format!("cannot read stdin: {e}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(|e| {
        Failure::new(
            Code::NotFound,
            format!("cannot read {}: {e}", path.display()),
        )
        .with_hint("give a readable file, or `-` to read the learnings from stdin")
    })
}
