//! The text of a plan for an agent: `cairn plan resume`, and what SessionStart and PreCompact
//! put in the context while a plan is active.

use cairn_domain::NextStep;
use cairn_domain::plan::document::CLAUDE_DIR;
use cairn_domain::plan::{MAX_FIX_ATTEMPTS, PlanOverview, PlanState};

use crate::{clip, commands};

/// What the protocol says to re-read in each state before acting (seed 003, "Mandatory
/// Re-reads").
pub fn plan_rereads(state: PlanState) -> &'static str {
    match state {
        PlanState::Explore => "findings.md, decisions.md",
        PlanState::Plan | PlanState::RePlan => {
            "decisions.md, findings.md and the relevant findings/*"
        }
        PlanState::Execute => {
            "state.md and plan.md before each step; decisions.md before writing a fix"
        }
        PlanState::Reflect => "plan.md (its success criteria) and progress.md",
        PlanState::Close => "decisions.md (audit the DECISION D-NNN comments in code)",
    }
}

/// What may be done in each state, in one line.
pub fn plan_duties(state: PlanState) -> &'static str {
    match state {
        PlanState::Explore => {
            "read-only on project files; write what you learn to findings.md / findings/ (`cairn plan finding`)"
        }
        PlanState::Plan => {
            "write plan.md (steps, risks, success criteria); no code changes until the user approves"
        }
        PlanState::Execute => {
            "implement the current step; at most 2 small fix attempts per step, then REFLECT"
        }
        PlanState::Reflect => "observe results against the success criteria; no code changes",
        PlanState::RePlan => {
            "log the pivot (`cairn plan decide`); do not write plan.md or code until PLAN"
        }
        PlanState::Close => "write summary.md, audit decision comments, clean up",
    }
}

/// The whole picture an agent needs to continue the active plan: where it stands, what it may do,
/// what to re-read, the latest decisions, and the commands that move on.
pub fn plan_resume(o: &PlanOverview, header: Option<&str>) -> String {
    let plan = &o.plan;
    let mut out = String::new();
    if let Some(h) = header {
        out.push_str(h);
        out.push('\n');
    }
    out.push_str(&format!(
        "Plan {} — {}\n",
        plan.id(),
        clip(plan.goal(), 240)
    ));
    out.push_str(&format!(
        "Directory: {CLAUDE_DIR}/{}/\nState: {} (iteration {}); step: {}\n",
        plan.id(),
        plan.state(),
        plan.iteration(),
        plan.current_step().unwrap_or("N/A")
    ));
    out.push_str(&format!(
        "In {}: {}.\n",
        plan.state(),
        plan_duties(plan.state())
    ));
    if let Some(step) = plan.current_step() {
        let used = plan.fix_attempts_on(step);
        if plan.state() == PlanState::Execute && used > 0 {
            out.push_str(&format!(
                "Fix attempts on step {step}: {used}/{MAX_FIX_ATTEMPTS}\n"
            ));
        }
    }
    let b = &o.budget;
    out.push_str(&format!(
        "Budget: files added {}/{}, new abstractions {}/{}, net lines {:+}{}\n",
        b.files_added,
        cairn_domain::plan::MAX_FILES_ADDED,
        b.new_abstractions,
        cairn_domain::plan::MAX_NEW_ABSTRACTIONS,
        b.net_lines(),
        if b.is_over() {
            " — OVER BUDGET: stop and REFLECT"
        } else {
            ""
        }
    ));
    if let Some(forced) = &o.forced_replan {
        out.push_str(&format!(
            "3-STRIKE: `{}` failed {} times — only RE-PLAN lies ahead (via REFLECT).\n",
            forced.area, forced.strikes
        ));
    }
    if let Some(nuclear) = &o.nuclear {
        out.push_str(&format!("NUCLEAR OPTION: {nuclear}\n"));
    }
    if let Some(t) = plan.history().last() {
        out.push_str(&format!(
            "Last transition: {} → {} ({})\n",
            t.from,
            t.to,
            clip(&t.reason, 200)
        ));
    }
    const DECISIONS_SHOWN: usize = 3;
    if !o.decisions.is_empty() {
        out.push_str(&format!("Decisions ({}), latest:\n", o.decisions.len()));
        let skip = o.decisions.len().saturating_sub(DECISIONS_SHOWN);
        for d in &o.decisions[skip..] {
            let first = d.body.lines().next().unwrap_or("");
            out.push_str(&format!(
                "- {} | {} → {}: {}\n",
                d.label(),
                d.from,
                d.to,
                clip(first, 160)
            ));
        }
    }
    out.push_str(&format!("Re-read now: {}.\n", plan_rereads(plan.state())));
    if !o.allowed.is_empty() {
        let allowed: Vec<&str> = o.allowed.iter().map(|s| s.as_str()).collect();
        out.push_str(&format!("May move to: {}\n", allowed.join(", ")));
    }
    if !o.next.is_empty() {
        out.push_str(&format!("Next: {}\n", commands(&o.next)));
    }
    if plan.state() != PlanState::Close {
        out.push_str(&format!(
            "Never edit state.md or decisions.md by hand: `{}`, `{}`, `cairn plan step|fix|fail|decide|finding`.\n",
            crate::command(&NextStep::PlanStatus),
            crate::command(&NextStep::PlanResume)
        ));
    }
    out
}
