//! The `plan` tool: every `cairn plan …` command as one tool with an `action`, each action making
//! the [`PlanService`](cairn_domain::plan::PlanService) call its command makes and answering
//! with the JSON `cairn --json plan …` prints (one shape, from `cairn_render::plan_json`).

use cairn_domain::plan::PlanState;
use cairn_domain::{Error, NextStep};
use cairn_render::plan_json::{
    budget_status_json, decision_json, fix_json, overview_json, record_json, strike_json,
    summary_json, transition_json,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::project::args;
use crate::render::with_next;
use crate::{Outcome, ToolError, Wings, page};

/// The actions, as `tools/list` names them.
pub const ACTIONS: &[&str] = &[
    "new", "status", "go", "approve", "step", "fix", "fail", "decide", "finding", "budget",
    "close", "list", "resume",
];

/// Every action's arguments, flat: each action takes the few it needs and refuses none of the
/// others' absence until it needs them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanArgs {
    action: String,
    goal: Option<String>,
    #[serde(default)]
    force: bool,
    state: Option<String>,
    reason: Option<String>,
    step: Option<String>,
    note: Option<String>,
    area: Option<String>,
    text: Option<String>,
    file: Option<String>,
    estimate: Option<u32>,
    abstraction: Option<String>,
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
}

/// The value of a field `action` needs.
fn need<'a>(action: &str, field: &str, value: Option<&'a str>) -> Result<&'a str, ToolError> {
    value.ok_or_else(|| {
        ToolError::usage(
            format!("plan action `{action}` needs `{field}`"),
            format!("call plan with {{\"action\":\"{action}\",\"{field}\":…}}"),
        )
    })
}

pub(crate) async fn call(w: &Wings, raw: Value) -> Outcome {
    let a: PlanArgs = args("plan", raw)?;
    let s = &w.plan;
    let fail = |e: Error| w.fail(e);
    let action = a.action.as_str();
    match action {
        "new" => {
            let plan = s
                .create(need(action, "goal", a.goal.as_deref())?, a.force)
                .await
                .map_err(fail)?;
            Ok(with_next(
                record_json(&plan),
                &[NextStep::PlanFinding, go(PlanState::Plan)],
            ))
        }
        "status" => {
            let overview = s.overview().await.map_err(fail)?;
            Ok(overview_json(&overview))
        }
        "go" => {
            let text = need(action, "state", a.state.as_deref())?;
            let to = PlanState::parse(text).ok_or_else(|| {
                ToolError::usage(
                    format!("`{text}` is not a plan state"),
                    "one of EXPLORE, PLAN, EXECUTE, REFLECT, RE-PLAN, CLOSE",
                )
            })?;
            let reason = need(action, "reason", a.reason.as_deref())?;
            let report = s.transition(to, reason, None).await.map_err(fail)?;
            Ok(transition_json(&report))
        }
        "approve" => {
            // A person's act: the server answers as the CLI does without a terminal, and never
            // approves. A plan not in PLAN gets the table's own refusal first, as the CLI's.
            let plan = s.current().await.map_err(fail)?;
            if plan.state() != PlanState::Plan {
                s.transition(PlanState::Execute, "approval", None)
                    .await
                    .map_err(fail)?;
            }
            Err(ToolError {
                kind: "approval_needs_a_person",
                message: format!(
                    "approving plan {} is the user's act; a tool call cannot be the user",
                    plan.id()
                ),
                hint: Some("ask the user to run `cairn plan approve` in a terminal".to_owned()),
                next: Vec::new(),
            })
        }
        "step" => {
            let plan = s
                .set_step(need(action, "step", a.step.as_deref())?)
                .await
                .map_err(fail)?;
            Ok(record_json(&plan))
        }
        "fix" => {
            let step = need(action, "step", a.step.as_deref())?;
            let note = need(action, "note", a.note.as_deref())?;
            let outcome = s.record_fix_attempt(step, note).await.map_err(fail)?;
            let steps = if outcome.remaining == 0 {
                vec![go(PlanState::Reflect)]
            } else {
                Vec::new()
            };
            Ok(with_next(fix_json(&outcome), &steps))
        }
        "fail" => {
            let area = need(action, "area", a.area.as_deref())?;
            let verdict = s.record_failure(area).await.map_err(fail)?;
            let steps = if verdict.replan_forced() {
                vec![go(PlanState::Reflect)]
            } else {
                Vec::new()
            };
            Ok(with_next(strike_json(&verdict), &steps))
        }
        "decide" => {
            let decision = s
                .log_decision(need(action, "text", a.text.as_deref())?)
                .await
                .map_err(fail)?;
            Ok(decision_json(&decision))
        }
        "finding" => {
            let text = need(action, "text", a.text.as_deref())?;
            s.record_finding(text, a.file.as_deref())
                .await
                .map_err(fail)?;
            Ok(json!({"recorded": true, "file": a.file}))
        }
        "budget" => {
            if let Some(lines) = a.estimate {
                s.estimate_scope(lines).await.map_err(fail)?;
            }
            if let Some(name) = &a.abstraction {
                s.record_abstraction(name).await.map_err(fail)?;
            }
            let budget = s.budget().await.map_err(fail)?;
            Ok(budget_status_json(&budget))
        }
        "close" => {
            let plan = s
                .close(need(action, "reason", a.reason.as_deref())?)
                .await
                .map_err(fail)?;
            Ok(record_json(&plan))
        }
        "list" => {
            let plans = s.list().await.map_err(fail)?;
            let rows: Vec<Value> = plans.iter().map(summary_json).collect();
            Ok(page::envelope(&rows, a.offset, a.limit))
        }
        "resume" => {
            let overview = s.overview().await.map_err(fail)?;
            let mut value = overview_json(&overview);
            value["resume"] = json!(cairn_render::plan_resume(&overview, None));
            Ok(value)
        }
        other => Err(ToolError::usage(
            format!("no plan action `{other}`"),
            format!("action is one of {}", ACTIONS.join(", ")),
        )),
    }
}

fn go(to: PlanState) -> NextStep {
    NextStep::PlanGo { to }
}
