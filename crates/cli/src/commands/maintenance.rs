//! Checkpoints, the log, velocity, reconciliation, doctor, status and prime.

use std::collections::HashMap;
use std::fmt::Write as _;

use cairn_domain::project::report::{Finding, clip};
use cairn_domain::project::service::Outlook;
use cairn_domain::project::service::{LogQuery, ReconcileScope};
use cairn_domain::project::store::Scrutiny;
use cairn_domain::project::{ProjectStatus, TaskId, TaskStatus};
use cairn_domain::time::{Timestamp, format_rfc3339};
use cairn_render::PRIME_MAX_CHARS;
use serde_json::{Map, Value, json};

use super::{Ctx, Report};
use crate::cli::{CheckpointCommand, DoctorArgs, LogArgs, PageArgs, PrimeArgs, ReconcileArgs};
use crate::exit::{Code, Failure};
use crate::json::{self, checkpoint_name};
use crate::output::{Cell, Table, minutes};
use crate::page::{Page, json_size};
use crate::progress::Spinner;

pub fn checkpoint(ctx: &Ctx, command: CheckpointCommand) -> Result<Report, Failure> {
    let p = ctx.project()?;
    match command {
        CheckpointCommand::List(page) => {
            let list = ctx.block_on(ctx.service.checkpoints(&p))?;
            let items: Vec<Value> = list.iter().map(json::checkpoint).collect();
            // Rows and JSON items are the same checkpoints in the same order.
            ctx.emit_page(items, &page, "checkpoints", |_| 60, |style, page| {
                if page.total == 0 {
                    return format!(
                        "No checkpoints yet (one is written after every phase and every 10 completions).\n{}",
                        style.next_step("cairn checkpoint write")
                    );
                }
                let mut table = Table::new(&["NUMBER", "NAME", "WRITTEN", "SIZE"]);
                for c in &list[page.offset..page.offset + page.returned()] {
                    table.row(vec![
                        c.number.to_string().into(),
                        checkpoint_name(c.number).into(),
                        c.written_at
                            .as_ref()
                            .map(format_rfc3339)
                            .unwrap_or_else(|| "unknown".into())
                            .into(),
                        format!("{} B", c.size_bytes).into(),
                    ]);
                }
                table.render(style)
            })
        }
        CheckpointCommand::Write => {
            let info = ctx.block_on(ctx.service.write_checkpoint(&p))?;
            ctx.emit(&json::checkpoint(&info), |_| {
                format!("{} written\n", checkpoint_name(info.number))
            })
        }
        CheckpointCommand::Restore { number } => {
            let committed = ctx.block_on(ctx.service.restore_checkpoint(&p, number))?;
            let tasks = committed.state.tasks.tasks.len();
            ctx.emit(&json!({"restored": number, "tasks": tasks}), |style| {
                format!(
                    "Restored {} ({tasks} task{}). The tasks it replaced were saved as a new checkpoint first.\n{}",
                    checkpoint_name(number),
                    if tasks == 1 { "" } else { "s" },
                    style.next_step("`cairn checkpoint list` to undo with `cairn checkpoint restore N`")
                )
            })
        }
    }
}

pub fn log(ctx: &Ctx, args: LogArgs) -> Result<Report, Failure> {
    let p = ctx.project()?;
    let query = LogQuery {
        tail: args.tail,
        kind: args.event,
        task: args.task.as_deref().map(str::parse::<TaskId>).transpose()?,
    };
    let (records, torn) = ctx.block_on(ctx.service.log(&p, &query))?;
    if torn.is_some() {
        eprintln!(
            "cairn: the progress log ends in a torn entry (a write cut off by a crash); it is left as it is"
        );
    }
    if ctx.global.json {
        let items: Vec<Value> = records
            .iter()
            .map(|r| {
                let fields: Map<String, Value> = r
                    .fields
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                json!({"at": format_rfc3339(&r.at), "event": r.kind, "fields": fields})
            })
            .collect();
        return ctx.emit_page(items, &args.page, "entries", |_| 0, |_, _| String::new());
    }
    let style = &ctx.style;
    let lines: Vec<String> = records
        .iter()
        .map(|r| {
            let fields = r
                .fields
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "{}  {}  {fields}\n",
                style.dim(&format_rfc3339(&r.at)),
                style.bold(&r.kind)
            )
        })
        .collect();
    // Pages count from the oldest entry, so the footer also points at the newest.
    let noun = if args.tail.is_some() {
        "entries"
    } else {
        "entries (oldest first; --tail N for the newest N)"
    };
    ctx.emit_page(lines, &args.page, noun, String::len, |_, page| {
        if page.total == 0 {
            return "No log entries match.\n".to_owned();
        }
        page.items.concat()
    })
}

pub fn velocity(ctx: &Ctx) -> Result<Report, Failure> {
    let p = ctx.project()?;
    let v = ctx.block_on(ctx.service.velocity(&p))?;
    ctx.emit(&v, |style| {
        let unknown = || "not enough data yet".to_owned();
        let mut out = String::new();
        let mut field = |key: &str, value: String| {
            let _ = writeln!(out, "{}  {value}", style.dim(&format!("{key:<22}")));
        };
        field(
            "completed (window)",
            format!("{} (last {} at most)", v.completed_count, v.window),
        );
        field(
            "mean time per task",
            v.mean_actual_minutes
                .map(|m| minutes(m.round() as u32))
                .unwrap_or_else(unknown),
        );
        field(
            "actual / estimate",
            v.estimate_ratio
                .map(|r| format!("{r:.2}×"))
                .unwrap_or_else(unknown),
        );
        field(
            "throughput",
            v.throughput_per_day
                .map(|t| format!("{t:.1} tasks/day"))
                .unwrap_or_else(unknown),
        );
        field(
            "remaining",
            format!(
                "{} tasks, {} estimated",
                v.remaining_tasks,
                minutes(u32::try_from(v.remaining_estimate_minutes).unwrap_or(u32::MAX))
            ),
        );
        field(
            "eta",
            v.eta.as_ref().map(format_rfc3339).unwrap_or_else(unknown),
        );
        out
    })
}

pub fn reconcile(ctx: &Ctx, args: ReconcileArgs) -> Result<Report, Failure> {
    let p = ctx.project()?;
    let scope = if args.staleness_only {
        ReconcileScope::StalenessOnly
    } else {
        ReconcileScope::Resume
    };
    let agent = args.agent.as_deref().filter(|a| !a.trim().is_empty());
    let report = ctx.block_on(ctx.service.reconcile_as(&p, scope, args.dry_run, agent))?;
    ctx.emit(&json::reconcile(&report), |style| {
        let mut out = String::new();
        let verb = if args.dry_run { "would move" } else { "moved" };
        // Moves already made cannot be listed again page by page, so the rest are summarised;
        // each one is in the log.
        let moves: Vec<_> = report.reconciled.iter().chain(&report.stale).collect();
        let page = Page::of(moves, &PageArgs::default(), |r| r.reason.len() + 40);
        for r in &page.items {
            let _ = writeln!(
                out,
                "{} {verb} {} → {} ({})",
                style.bold(r.task.as_str()),
                style.status(r.from),
                style.status(r.to),
                r.reason
            );
        }
        if let Some(next) = page.next_offset() {
            let rest = page.total - next;
            let _ = writeln!(
                out,
                "… and {rest} more (`--json` lists them all{})",
                if args.dry_run {
                    ""
                } else {
                    "; `cairn log` records each"
                }
            );
        }
        if out.is_empty() {
            out.push_str("Nothing to reconcile: no interrupted or stale work.\n");
        } else if args.dry_run {
            out.push_str(&style.next_step("run `cairn reconcile` to apply"));
        }
        out
    })
}

pub fn doctor(ctx: &Ctx, args: DoctorArgs) -> Result<Report, Failure> {
    let plan = super::plan::check_pointer(ctx, args.fix)?;
    let p = match ctx.project() {
        Ok(p) => p,
        // A repository with plans and no project still gets its plan pointer checked.
        Err(failure) if failure.code == Code::NotFound && plan.dangling.is_some() => {
            let mut report = ctx.emit(&json!({"plan_pointer": plan.json()}), |style| {
                plan.text(style)
            })?;
            if !plan.is_clean() {
                report.code = Code::Unhealthy;
            }
            return Ok(report);
        }
        Err(failure) => return Err(failure),
    };
    let report = {
        let _spinner = Spinner::start(if args.fix {
            "checking and repairing the store…"
        } else {
            "checking the store…"
        });
        let scrutiny = if args.full {
            Scrutiny::Full
        } else {
            Scrutiny::Usual
        };
        ctx.block_on(ctx.service.doctor(&p, args.fix, scrutiny))?
    };
    let git = super::setup::git_problems(&ctx.root);
    let clean = report.is_clean() && plan.is_clean() && git.is_empty();
    // Findings are the list that grows with the store; the rest is a handful of files.
    let row = |f: &Finding| f.message.len() + f.code.len() + 12;
    let findings = if ctx.global.json {
        Page::of(report.findings.clone(), &args.page, json_size)
    } else {
        Page::of(report.findings.clone(), &args.page, row)
    };
    let mut value = json::doctor(&report);
    if let Value::Object(map) = &mut value {
        map.insert("findings".into(), json!(findings.items));
        map.extend(findings.fields());
        map.insert("plan_pointer".into(), plan.json());
        map.insert("git".into(), json!(git));
        map.insert("clean".into(), json!(clean));
    }
    let mut rendered = ctx.emit(&value, |style| {
        let mut out = plan.text(style);
        for r in &report.repaired {
            let _ = writeln!(out, "{} {r}", style.green("repaired"));
        }
        for d in &report.debris_removed {
            let _ = writeln!(out, "{} leftover temporary file {d}", style.green("removed"));
        }
        for f in &findings.items {
            let severity = match f.severity {
                cairn_domain::project::report::Severity::Error => style.red("error  "),
                cairn_domain::project::report::Severity::Warning => style.yellow("warning"),
            };
            let _ = writeln!(out, "{severity}  {}  {}", f.code, f.message);
            // Fixable findings share the one `doctor --fix` line below.
            if !f.fixable && !f.next_steps.is_empty() {
                let _ = writeln!(out, "         fix: {}", cairn_render::commands(&f.next_steps));
            }
        }
        for (path, detail) in &report.store.damaged {
            let _ = writeln!(out, "{}  damaged file {path}: {detail}", style.red("error  "));
        }
        for d in &report.store.debris {
            let _ = writeln!(
                out,
                "{}  leftover temporary file {d}",
                style.yellow("warning")
            );
        }
        for problem in &git {
            let _ = writeln!(
                out,
                "{}  git_setup  {}",
                style.yellow("warning"),
                problem.message
            );
            let _ = writeln!(out, "         fix: {}", problem.fix);
        }
        out.push_str(&findings.footer("findings"));
        if report.store.torn_log {
            let _ = writeln!(
                out,
                "{}  the progress log ends in a torn entry (a crash mid-write); it is kept as it is",
                style.yellow("warning")
            );
        }
        if clean {
            let _ = writeln!(out, "{} project {p} is healthy", style.green("✓"));
        } else if report.is_clean() && plan.is_clean() {
            out.push_str(&style.next_step(
                "the store is healthy; `cairn setup git` sets git up to merge it",
            ));
        } else {
            let fixable = report.findings.iter().filter(|f| f.fixable).count()
                + report.store.debris.len();
            if report.store.unmerged_log.is_some() {
                // Nothing else can be repaired, nor a checkpoint restored, until then.
                out.push_str(&style.next_step(
                    "finish the merge of progress/log.md first (see its message): every write is refused until then",
                ));
            } else if fixable > 0 && !args.fix {
                out.push_str(&style.next_step(&format!(
                    "`cairn doctor --fix` repairs {fixable} of these safely"
                )));
            } else {
                out.push_str(&style.next_step(
                    "the rest needs a human: see each message; `cairn checkpoint restore N` rolls the tasks back",
                ));
            }
        }
        out
    })?;
    if !clean {
        rendered.code = Code::Unhealthy;
    }
    Ok(rendered)
}

/// How many rows each section of the human `status` shows.
const STATUS_SECTION: PageArgs = PageArgs {
    limit: Some(crate::page::SUMMARY_ROWS),
    offset: 0,
    all: false,
};

pub fn status(ctx: &Ctx) -> Result<Report, Failure> {
    let p = ctx.project()?;
    let outlook = ctx.block_on(ctx.service.outlook(&p))?;
    let now = ctx.service.now();
    let s = &outlook.summary;
    ctx.emit(&json::outlook(&outlook), |style| {
        let mut out = format!("{} — {} [{}]\n", style.bold(&s.project), s.name, s.status);
        let _ = writeln!(out, "Goal: {}", s.goal);
        let pct = (s.leaves_complete * 100)
            .checked_div(s.leaves_total)
            .unwrap_or(0);
        let width = 20;
        let filled = (s.leaves_complete * width)
            .checked_div(s.leaves_total)
            .unwrap_or(0);
        let _ = writeln!(
            out,
            "Progress: {}{} {}/{} tasks complete ({pct}%)",
            style.green(&"█".repeat(filled)),
            style.dim(&"░".repeat(width - filled)),
            s.leaves_complete,
            s.leaves_total
        );
        let counts: Vec<String> = TaskStatus::ALL
            .iter()
            .filter_map(|st| {
                let n = s.counts.get(st.as_str()).copied().unwrap_or(0);
                (n > 0).then(|| format!("{n} {}", style.status(*st)))
            })
            .collect();
        if !counts.is_empty() {
            let _ = writeln!(out, "Tasks: {}", counts.join(" · "));
        }
        if !s.phases.is_empty() {
            let phases: Vec<String> = s
                .phases
                .iter()
                .map(|(id, st)| format!("{id} {st}"))
                .collect();
            let _ = writeln!(out, "Phases: {}", phases.join(", "));
        }
        if let Some(ph) = &s.current_phase {
            let _ = writeln!(
                out,
                "Current phase: {} — {} [{}], {}/{} tasks complete",
                style.bold(&ph.id),
                clip(&ph.name, 40),
                ph.status,
                ph.complete,
                ph.tasks
            );
        }
        if s.status == ProjectStatus::Complete.as_str() {
            let _ = writeln!(
                out,
                "{}",
                style.green(&format!(
                    "Project complete: {}/{} tasks",
                    s.leaves_complete, s.leaves_total
                ))
            );
        } else if !outlook.critical_path.is_empty() {
            let _ = writeln!(out, "Critical path: {}", critical_path(&outlook));
        }
        // A summary, not a listing: each section shows its first rows and where the rest are.
        let mut section = |title: String, rows: Vec<(String, String)>, rest: &str| {
            if rows.is_empty() {
                return;
            }
            let _ = writeln!(out, "\n{title}");
            let page = Page::of(rows, &STATUS_SECTION, |_| 0);
            let mut table = Table::new(&["ID", "TITLE"]);
            for (id, text) in &page.items {
                table.row(vec![
                    Cell::styled(id.clone(), style.bold(id)),
                    text.as_str().into(),
                ]);
            }
            // The section title stands in for the header row.
            for line in table.render(style).lines().skip(1) {
                let _ = writeln!(out, "  {line}");
            }
            if let Some(next) = page.next_offset() {
                let _ = writeln!(out, "  … and {} more: {rest}", page.total - next);
            }
        };
        let claims: HashMap<&TaskId, (&String, &Option<Timestamp>)> = s
            .claims
            .iter()
            .map(|(id, holder, until)| (id, (holder, until)))
            .collect();
        section(
            style.yellow("In progress"),
            s.in_progress
                .iter()
                .map(|(id, t)| {
                    let text = match claims.get(id) {
                        Some((holder, Some(until))) if *until > now => {
                            format!("{t} — claimed by {holder} until {}", format_rfc3339(until))
                        }
                        Some((holder, _)) => {
                            format!("{t} — claimed by {holder}, lease expired: reclaimable")
                        }
                        None => t.clone(),
                    };
                    (id.to_string(), text)
                })
                .collect(),
            "`cairn task list --status IN_PROGRESS,IN_RESEARCH,VALIDATING`",
        );
        section(
            style.red("Blocked"),
            s.blocked
                .iter()
                .map(|(id, t, why)| (id.to_string(), format!("{t} — {why}")))
                .collect(),
            "`cairn task list --blocked`",
        );
        section(
            style.bold("Next up"),
            s.next
                .iter()
                .map(|(id, t)| (id.to_string(), t.clone()))
                .collect(),
            "`cairn task ready`",
        );
        let steps = s.next_steps();
        if !steps.is_empty() {
            // An empty project's lists are empty too: no blank line to separate from.
            if s.total > 0 {
                out.push('\n');
            }
            out.push_str(&style.next_step(&cairn_render::commands(&steps)));
        }
        out
    })
}

pub fn prime(ctx: &Ctx, args: PrimeArgs) -> Result<Report, Failure> {
    let p = ctx.project()?;
    let summary = ctx.block_on(ctx.service.prime(&p))?;
    let text = cairn_render::prime(&summary, args.header.as_deref());
    debug_assert!(text.chars().count() <= PRIME_MAX_CHARS);
    let chars = text.chars().count();
    ctx.emit(&json!({"prime": text, "chars": chars}), |_| {
        let mut t = text.clone();
        if !t.ends_with('\n') {
            t.push('\n');
        }
        t
    })
}

/// How many steps of the critical path `status` names before counting the rest.
const CRITICAL_PATH_SHOWN: usize = 3;

/// `T-003 Write the guide → T-004 Publish it (2h left)`: a bounded line however long the path.
fn critical_path(outlook: &Outlook) -> String {
    let path = &outlook.critical_path;
    let mut steps: Vec<String> = path
        .iter()
        .take(CRITICAL_PATH_SHOWN)
        .map(|(id, title, _)| format!("{id} {}", clip(title, 32)))
        .collect();
    if path.len() > CRITICAL_PATH_SHOWN {
        steps.push(format!("… {} more", path.len() - CRITICAL_PATH_SHOWN));
    }
    let estimated = path.iter().all(|(_, _, estimate)| estimate.is_some());
    format!(
        "{} ({}{} left)",
        steps.join(" → "),
        if estimated { "" } else { "≈" },
        minutes(u32::try_from(outlook.critical_minutes).unwrap_or(u32::MAX))
    )
}
