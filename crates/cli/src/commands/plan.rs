//! `plan …`: the iterative planner. Each command makes one [`PlanService`] call and renders
//! what it returns; the rules (transition table, leash, 3 strikes, budget) are the domain's.

use std::fmt::Write as _;
use std::io::{BufRead, IsTerminal, Write as _};
use std::sync::Arc;

use cairn_domain::NextStep;
use cairn_domain::plan::{
    BudgetReport, BudgetStatus, MAX_FILES_ADDED, MAX_FIX_ATTEMPTS, MAX_NEW_ABSTRACTIONS,
    NET_LINES_TARGET, PlanOverview, PlanRecord, PlanService, PlanState, STRIKES_TO_REPLAN,
    TransitionReport, UserApproval,
};
use cairn_domain::ports::IdGen;
use serde_json::{Value, json};

use super::{Ctx, Report};
use crate::cli::PlanCommand;
use crate::exit::{Code, Failure};
use crate::output::{Cell, Style, Table};
use cairn_render::plan_json::{
    budget_status_json, decision_json, fix_json, overview_json, record_json, strike_json,
    summary_json, transition_json,
};

/// Fixes the 8-hex suffix of the next plan directory: a testing and replay aid like
/// `CAIRN_NOW`, so golden files of a plan directory do not depend on randomness.
pub const CAIRN_PLAN_HEX: &str = "CAIRN_PLAN_HEX";

/// The id generator `CAIRN_PLAN_HEX` asks for.
#[derive(Debug)]
struct FixedHex(u32);

impl IdGen for FixedHex {
    fn random_u128(&self) -> u128 {
        u128::from(self.0)
    }
}

fn ids_from_env() -> Result<Arc<dyn IdGen>, Failure> {
    match std::env::var(CAIRN_PLAN_HEX) {
        Ok(text) if !text.trim().is_empty() => {
            let hex = text.trim();
            let valid = hex.len() == 8
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            match u32::from_str_radix(hex, 16) {
                Ok(n) if valid => Ok(Arc::new(FixedHex(n))),
                _ => Err(Failure::new(
                    Code::Usage,
                    format!("{CAIRN_PLAN_HEX}=`{text}` is not 8 lowercase hex digits"),
                )
                .with_hint(format!(
                    "use e.g. {CAIRN_PLAN_HEX}=0000abcd, or unset it for a random suffix"
                ))),
            }
        }
        _ => Ok(crate::wiring::random_ids()),
    }
}

pub(super) fn service(ctx: &Ctx) -> Result<PlanService, Failure> {
    Ok(PlanService::new(
        crate::wiring::open_plan_store(&ctx.root, super::lock_timeout_from_env()?),
        crate::clock::from_env()?,
        ids_from_env()?,
    ))
}

pub fn run(ctx: &Ctx, command: PlanCommand) -> Result<Report, Failure> {
    let service = service(ctx)?;
    match command {
        PlanCommand::New { goal, force } => {
            let plan = ctx.block_on(service.create(&goal, force))?;
            ctx.emit(&record_json(&plan), |style| {
                let mut out = format!(
                    "Started plan {} [{}]: {}\n  directory: .claude/{}/ (the pointer .claude/.current_plan names it)\n",
                    style.bold(plan.id().as_str()),
                    plan.state(),
                    plan.goal(),
                    plan.id()
                );
                out.push_str(&next_line(style, &[NextStep::PlanFinding, go(PlanState::Plan)]));
                out
            })
        }
        PlanCommand::Status => {
            let overview = ctx.block_on(service.overview())?;
            ctx.emit(&overview_json(&overview), |style| status(style, &overview))
        }
        PlanCommand::Go { state, reason } => {
            let report = ctx.block_on(service.transition(state, &reason, None))?;
            ctx.emit(&transition_json(&report), |style| {
                transitioned(style, &report)
            })
        }
        PlanCommand::Approve { yes, statement } => approve(ctx, &service, yes, statement),
        PlanCommand::Step { step } => {
            let plan = ctx.block_on(service.set_step(&step))?;
            ctx.emit(&record_json(&plan), |_| {
                format!(
                    "Working on step {} (iteration {})\n",
                    plan.current_step().unwrap_or("N/A"),
                    plan.iteration()
                )
            })
        }
        PlanCommand::Fix { step, note } => {
            let outcome = ctx.block_on(service.record_fix_attempt(&step, &note))?;
            ctx.emit(&fix_json(&outcome), |style| {
                let mut out = format!(
                    "Fix attempt {}/{MAX_FIX_ATTEMPTS} on step {} recorded\n",
                    outcome.attempt, outcome.step
                );
                if outcome.remaining == 0 {
                    out.push_str(
                        "That was the last one: if it fails, stop, go to REFLECT and present the situation to the user.\n",
                    );
                    out.push_str(&next_line(style, &[go(PlanState::Reflect)]));
                }
                out
            })
        }
        PlanCommand::Fail { area } => {
            let verdict = ctx.block_on(service.record_failure(&area))?;
            let (area, strikes, forced) =
                (verdict.area(), verdict.strikes(), verdict.replan_forced());
            ctx.emit(&strike_json(&verdict), |style| {
                if forced {
                    format!(
                        "3-STRIKE: `{area}` has failed {strikes} times — the approach is wrong. RE-PLAN is forced: no more fixes; after REFLECT only RE-PLAN is allowed.\n{}",
                        next_line(style, &[go(PlanState::Reflect), go(PlanState::RePlan)])
                    )
                } else {
                    format!(
                        "Failure {strikes}/{STRIKES_TO_REPLAN} of `{area}` recorded; {} more forces RE-PLAN\n",
                        STRIKES_TO_REPLAN - strikes
                    )
                }
            })
        }
        PlanCommand::Decide { text } => {
            let decision = ctx.block_on(service.log_decision(&text))?;
            ctx.emit(&decision_json(&decision), |_| {
                format!(
                    "Logged {} | {} → {} | {} in decisions.md\n",
                    decision.label(),
                    decision.from,
                    decision.to,
                    decision.date
                )
            })
        }
        PlanCommand::Finding { text, file } => {
            ctx.block_on(service.record_finding(&text, file.as_deref()))?;
            let value = json!({"recorded": true, "file": file});
            ctx.emit(&value, |_| match &file {
                Some(f) => format!("Finding recorded in findings/{f} and indexed in findings.md\n"),
                None => "Finding recorded in findings.md\n".to_owned(),
            })
        }
        PlanCommand::Budget {
            estimate,
            abstraction,
        } => {
            if let Some(lines) = estimate {
                ctx.block_on(service.estimate_scope(lines))?;
            }
            if let Some(name) = &abstraction {
                ctx.block_on(service.record_abstraction(name))?;
            }
            let budget = ctx.block_on(service.budget())?;
            ctx.emit(&budget_status_json(&budget), |style| {
                budget_text(style, &budget)
            })
        }
        PlanCommand::Close { reason } => {
            let plan = ctx.block_on(service.close(&reason))?;
            ctx.emit(&record_json(&plan), |_| {
                format!(
                    "Closed plan {} [{}]; .claude/.current_plan released. In CLOSE: write summary.md, audit the DECISION D-NNN comments in code, clean up.\n",
                    plan.id(),
                    plan.state()
                )
            })
        }
        PlanCommand::List(args) => {
            let plans = ctx.block_on(service.list())?;
            let items: Vec<Value> = plans.iter().map(summary_json).collect();
            ctx.emit_page(
                items,
                &args,
                "plans",
                |v| 60 + v["goal"].as_str().map_or(0, str::len),
                |style, page| {
                    let mut table = Table::new(&["", "PLAN", "STATE", "ITER", "GOAL"]);
                    for v in &page.items {
                        let state = v["damaged"].as_str().map_or_else(
                            || v["state"].as_str().unwrap_or("").to_owned(),
                            |_| "DAMAGED".to_owned(),
                        );
                        table.row(vec![
                            Cell::from(if v["current"] == true { "*" } else { "" }),
                            Cell::from(v["id"].as_str().unwrap_or("")),
                            Cell::from(state),
                            Cell::from(v["iteration"].to_string()),
                            Cell::from(
                                v["damaged"]
                                    .as_str()
                                    .or(v["goal"].as_str())
                                    .unwrap_or("")
                                    .to_owned(),
                            ),
                        ]);
                    }
                    table.render(style)
                },
            )
        }
        PlanCommand::Resume => {
            let overview = ctx.block_on(service.overview())?;
            let text = cairn_render::plan_resume(&overview, None);
            let mut value = overview_json(&overview);
            value["resume"] = json!(text);
            ctx.emit(&value, |_| text.clone())
        }
    }
}

/// What `cairn doctor` found about the plan pointer: the plan it names when that plan does not
/// exist, and whether `--fix` removed it.
#[derive(Debug, Default)]
pub struct PointerCheck {
    pub dangling: Option<String>,
    pub repaired: bool,
}

impl PointerCheck {
    /// Healthy when the pointer is fine, or was repaired.
    pub fn is_clean(&self) -> bool {
        self.dangling.is_none() || self.repaired
    }

    pub fn json(&self) -> Value {
        json!({"dangling": self.dangling, "repaired": self.repaired})
    }

    pub fn text(&self, style: &Style) -> String {
        match (&self.dangling, self.repaired) {
            (None, _) => String::new(),
            (Some(id), true) => format!(
                "{} .claude/.current_plan named the missing plan directory {id}; the pointer was removed\n",
                style.green("repaired")
            ),
            (Some(id), false) => format!(
                "{}  plan-pointer-dangling  .claude/.current_plan names {id}, but there is no such plan directory\n",
                style.red("error  ")
            ),
        }
    }
}

/// `cairn doctor`'s plan check: a pointer naming a missing plan directory is reported, and
/// removed with `--fix` (the plans themselves are never touched).
pub fn check_pointer(ctx: &Ctx, fix: bool) -> Result<PointerCheck, Failure> {
    let service = service(ctx)?;
    let Some(id) = ctx.block_on(service.dangling_pointer())? else {
        return Ok(PointerCheck::default());
    };
    let repaired = fix && ctx.block_on(service.repair_pointer())?.is_some();
    Ok(PointerCheck {
        dangling: Some(id.to_string()),
        repaired,
    })
}

fn go(to: PlanState) -> NextStep {
    NextStep::PlanGo { to }
}

fn next_line(style: &Style, steps: &[NextStep]) -> String {
    if steps.is_empty() {
        return String::new();
    }
    format!("{}\n", style.next_step(&cairn_render::commands(steps)))
}

/// Approval is the user's act: an agent running commands has no terminal on stdin, so without
/// one the approval must be stated explicitly with `--yes`.
fn approve(
    ctx: &Ctx,
    service: &PlanService,
    yes: bool,
    statement: Option<String>,
) -> Result<Report, Failure> {
    let plan = ctx.block_on(service.current())?;
    if plan.state() != PlanState::Plan {
        // The table's own refusal (with what is allowed) says more than any prompt could.
        ctx.block_on(service.transition(PlanState::Execute, "approval", None))?;
    }
    let words = if yes {
        statement.unwrap_or_else(|| "approved with --yes".to_owned())
    } else if std::io::stdin().is_terminal() {
        ask(&plan, statement.as_deref())?
    } else {
        return Err(Failure::new(
            Code::Refused,
            format!(
                "approving plan {} is the user's act and stdin is not a terminal, so no one can be asked",
                plan.id()
            ),
        )
        .with_hint(
            "the user runs `cairn plan approve` in a terminal, or confirms with `cairn plan approve --yes --statement \"<what the user said>\"`",
        )
        .with_kind("approval_needs_a_person"));
    };
    let approval = UserApproval::from_user(&words)?;
    let report = ctx.block_on(service.approve(approval))?;
    ctx.emit(&transition_json(&report), |style| {
        transitioned(style, &report)
    })
}

/// Asks on the terminal; a blank answer or `no` refuses.
fn ask(plan: &PlanRecord, statement: Option<&str>) -> Result<String, Failure> {
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "Approve plan {} ({}) and start EXECUTE?\nType your approval (e.g. \"yes\"); blank or \"no\" refuses: ",
        plan.id(),
        plan.goal()
    );
    let _ = err.flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Failure::new(Code::Internal, format!("cannot read the answer: {e}")))?;
    let answer = line.trim();
    if answer.is_empty() || answer.eq_ignore_ascii_case("no") || answer.eq_ignore_ascii_case("n") {
        return Err(Failure::new(
            Code::Refused,
            format!("plan {} was not approved; it stays in PLAN", plan.id()),
        )
        .with_kind("not_approved"));
    }
    Ok(match statement {
        Some(s) => format!("{answer} — {s}"),
        None => answer.to_owned(),
    })
}

fn transitioned(style: &Style, report: &TransitionReport) -> String {
    let o = &report.outcome;
    let mut out = format!(
        "Plan {}: {} → {} (iteration {})\n",
        report.plan.id(),
        o.from,
        style.bold(o.to.as_str()),
        o.iteration
    );
    if let Some(d) = &report.decision {
        let _ = writeln!(out, "Logged {} in decisions.md", d.label());
    }
    if let Some(c) = &report.checkpoint {
        let _ = writeln!(
            out,
            "Checkpoint checkpoints/{c}/ written (state.md, plan.md)"
        );
    }
    if let Some(n) = &o.nuclear {
        let _ = writeln!(out, "NUCLEAR OPTION: {n}");
    }
    let _ = writeln!(out, "In {}: {}.", o.to, cairn_render::plan_duties(o.to));
    let allowed = report.plan.allowed_targets_now();
    let steps: Vec<NextStep> = match o.to {
        PlanState::Plan => vec![NextStep::PlanApprove],
        PlanState::Close => Vec::new(),
        _ => NextStep::plan_go(&allowed).into_iter().collect(),
    };
    out.push_str(&next_line(style, &steps));
    out
}

fn status(style: &Style, o: &PlanOverview) -> String {
    let plan = &o.plan;
    let mut out = format!(
        "Plan {} — {}\n",
        style.bold(plan.id().as_str()),
        plan.goal()
    );
    let _ = writeln!(
        out,
        "State: {}   Iteration: {}   Step: {}",
        style.bold(plan.state().as_str()),
        plan.iteration(),
        plan.current_step().unwrap_or("N/A")
    );
    let _ = writeln!(out, "Budget: {}", budget_line(&o.budget));
    if !plan.strikes().is_empty() {
        let strikes: Vec<String> = plan
            .strikes()
            .iter()
            .map(|(a, n)| format!("`{a}` {n}/{STRIKES_TO_REPLAN}"))
            .collect();
        let _ = writeln!(out, "Strikes: {}", strikes.join(", "));
    }
    if let Some(f) = &o.forced_replan {
        let _ = writeln!(
            out,
            "{}",
            style.red(&format!(
                "3-STRIKE: `{}` failed {} times — RE-PLAN is forced",
                f.area, f.strikes
            ))
        );
    }
    if let Some(n) = &o.nuclear {
        let _ = writeln!(out, "{}", style.red(&format!("NUCLEAR OPTION: {n}")));
    }
    match o.decisions.last() {
        Some(d) => {
            let _ = writeln!(
                out,
                "Decisions: {} (last {} | {} → {})",
                o.decisions.len(),
                d.label(),
                d.from,
                d.to
            );
        }
        None => out.push_str("Decisions: none yet\n"),
    }
    for to in &o.allowed {
        if let Some(rule) = plan.state().rule_to(*to) {
            let _ = writeln!(out, "May go to {to}: {}", rule.trigger);
        }
    }
    out.push_str(&next_line(style, &o.next));
    out
}

fn budget_line(b: &BudgetReport) -> String {
    let mut line = format!(
        "files added {}/{MAX_FILES_ADDED}, new abstractions {}/{MAX_NEW_ABSTRACTIONS}, net lines {:+} (+{}/-{}, target {NET_LINES_TARGET})",
        b.files_added,
        b.new_abstractions,
        b.net_lines(),
        b.lines_added,
        b.lines_removed
    );
    if b.is_over() {
        line.push_str(" — OVER BUDGET: stop and REFLECT");
    }
    line
}

fn budget_text(style: &Style, s: &BudgetStatus) -> String {
    let mut out = format!(
        "Complexity budget of plan {} (iteration {}):\n  {}\n",
        s.plan.id(),
        s.plan.iteration(),
        budget_line(&s.budget)
    );
    for over in &s.budget.over {
        let _ = writeln!(out, "  {}", style.yellow(&format!("over: {over}")));
    }
    match s.scope_estimate {
        Some(estimate) => {
            let _ = writeln!(
                out,
                "  scope: {} lines added in all iterations against an estimate of {estimate} ({:.1}×)",
                s.lines_added_total,
                s.lines_added_total as f64 / f64::from(estimate)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  scope: {} lines added in all iterations; no estimate (set one in PLAN: `cairn plan budget --estimate LINES`)",
                s.lines_added_total
            );
        }
    }
    if let Some(n) = &s.nuclear {
        let _ = writeln!(out, "{}", style.red(&format!("NUCLEAR OPTION: {n}")));
    }
    out
}
