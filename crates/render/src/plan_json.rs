//! The plan wing's values as JSON, one shape for every interface that shows them: `cairn plan
//! … --json` and the MCP server's `plan` tool.

use cairn_domain::plan::{
    BudgetReport, BudgetStatus, Decision, FixAttemptOutcome, MAX_FILES_ADDED, MAX_FIX_ATTEMPTS,
    MAX_NEW_ABSTRACTIONS, PlanOverview, PlanRecord, PlanSummary, STRIKES_TO_REPLAN, StrikeVerdict,
    TransitionReport,
};
use cairn_domain::time::format_rfc3339;
use serde_json::{Value, json};

pub fn record_json(plan: &PlanRecord) -> Value {
    json!({
        "id": plan.id().as_str(),
        "goal": plan.goal(),
        "state": plan.state(),
        "iteration": plan.iteration(),
        "created_at": format_rfc3339(&plan.created_at()),
        "current_step": plan.current_step(),
        "fix_attempts": plan.fix_attempts().iter().map(|a| json!({
            "step": a.step, "attempt": a.attempt, "note": a.note,
        })).collect::<Vec<_>>(),
        "manifest": plan.manifest().iter().map(|e| json!({
            "path": e.path,
            "kind": e.kind.as_str(),
            "lines_added": e.lines_added,
            "lines_removed": e.lines_removed,
        })).collect::<Vec<_>>(),
        "abstractions": plan.abstractions(),
        "strikes": plan.strikes(),
        "scope_estimate": plan.scope_estimate(),
        "lines_added_total": plan.lines_added_total(),
        "last_transition": plan.last_transition().map(|t| json!({
            "from": t.from, "to": t.to, "at": format_rfc3339(&t.at),
        })),
        "budget": budget_json(&plan.budget()),
    })
}

/// A fix attempt on a step, against the leash.
pub fn fix_json(outcome: &FixAttemptOutcome) -> Value {
    json!({
        "step": outcome.step,
        "attempt": outcome.attempt,
        "max": MAX_FIX_ATTEMPTS,
        "remaining": outcome.remaining,
    })
}

/// A failure counted against an area, against the 3-strike rule.
pub fn strike_json(verdict: &StrikeVerdict) -> Value {
    json!({
        "area": verdict.area(),
        "strikes": verdict.strikes(),
        "max": STRIKES_TO_REPLAN,
        "replan_forced": verdict.replan_forced(),
    })
}

pub fn budget_json(b: &BudgetReport) -> Value {
    json!({
        "files_added": b.files_added,
        "max_files_added": MAX_FILES_ADDED,
        "new_abstractions": b.new_abstractions,
        "max_new_abstractions": MAX_NEW_ABSTRACTIONS,
        "lines_added": b.lines_added,
        "lines_removed": b.lines_removed,
        "net_lines": b.net_lines(),
        "over": b.over.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}

pub fn budget_status_json(s: &BudgetStatus) -> Value {
    json!({
        "plan": s.plan.id().as_str(),
        "iteration": s.plan.iteration(),
        "budget": budget_json(&s.budget),
        "scope_estimate": s.scope_estimate,
        "lines_added_total": s.lines_added_total,
        "nuclear": s.nuclear.as_ref().map(ToString::to_string),
    })
}

pub fn decision_json(d: &Decision) -> Value {
    json!({
        "id": d.label(),
        "number": d.number,
        "from": d.from,
        "to": d.to,
        "date": d.date.to_string(),
        "body": d.body,
    })
}

pub fn summary_json(s: &PlanSummary) -> Value {
    json!({
        "id": s.id.as_str(),
        "state": s.state,
        "iteration": s.iteration,
        "goal": s.goal,
        "current": s.current,
        "damaged": s.damaged,
    })
}

pub fn transition_json(r: &TransitionReport) -> Value {
    json!({
        "from": r.outcome.from,
        "to": r.outcome.to,
        "iteration": r.outcome.iteration,
        "decision": r.decision.as_ref().map(decision_json),
        "checkpoint": r.checkpoint,
        "nuclear": r.outcome.nuclear.as_ref().map(ToString::to_string),
        "plan": record_json(&r.plan),
    })
}

pub fn overview_json(o: &PlanOverview) -> Value {
    let mut value = record_json(&o.plan);
    value["allowed"] = json!(o.allowed);
    value["decisions"] = json!(o.decisions.iter().map(decision_json).collect::<Vec<_>>());
    value["checkpoints"] = json!(o.checkpoints);
    value["forced_replan"] = json!(o.forced_replan.as_ref().map(|f| json!({
        "area": f.area, "strikes": f.strikes,
    })));
    value["nuclear"] = json!(o.nuclear.as_ref().map(ToString::to_string));
    value["next_steps"] = json!(o.next);
    value
}
