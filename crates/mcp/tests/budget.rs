//! The token budget of `tools/list`: what every session that loads the server pays before any
//! work. Counted with cl100k (tiktoken) on the exact JSON the server sends.

use cairn_mcp::tools;
use rmcp::model::ListToolsResult;

/// The ceiling for the whole `tools/list` answer.
const BUDGET: usize = 2_000;

fn tokens(text: &str) -> usize {
    tiktoken_rs::cl100k_base()
        .expect("cl100k ships with tiktoken-rs")
        .encode_with_special_tokens(text)
        .len()
}

#[test]
fn the_whole_tool_list_fits_the_budget() {
    let list = serde_json::to_string(&ListToolsResult::with_all_items(tools::list())).unwrap();
    let total = tokens(&list);
    println!(
        "tools/list: {} tools, {total} tokens (cl100k)",
        tools::SPECS.len()
    );
    for spec in tools::SPECS {
        let one = serde_json::to_string(&spec.tool()).unwrap();
        println!("  {:<20} {:>4}", spec.name, tokens(&one));
    }
    assert!(
        total <= BUDGET,
        "tools/list costs {total} tokens, over {BUDGET}"
    );
}

#[test]
fn every_tool_carries_the_three_hints() {
    for tool in tools::list() {
        let a = tool.annotations.as_ref().expect("annotations");
        assert!(
            a.read_only_hint.is_some()
                && a.destructive_hint.is_some()
                && a.idempotent_hint.is_some(),
            "{} lacks a hint",
            tool.name
        );
    }
}

/// The grouping the `plan` tool replaced, measured beside it: one tool per `cairn plan` command,
/// with the same kind of one-line description and flat schema. The one tool with an `action`
/// enum must stay the cheaper, or the choice should be made again.
#[test]
fn one_plan_tool_with_an_action_costs_less_than_one_tool_per_command() {
    use rmcp::model::{Tool, ToolAnnotations};
    use serde_json::{Value, json};
    use std::sync::Arc;

    /// (name, description, (field, JSON type) …)
    type Split = (
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str)],
    );
    let split: &[Split] = &[
        (
            "plan_new",
            "Start a plan in EXPLORE.",
            &[("goal", "string"), ("force", "boolean")],
        ),
        ("plan_status", "Where the active plan stands.", &[]),
        (
            "plan_go",
            "Move the plan to a state.",
            &[("state", "string"), ("reason", "string")],
        ),
        ("plan_approve", "The user approves the plan (refused).", &[]),
        (
            "plan_step",
            "Mark the plan step being worked on.",
            &[("step", "string")],
        ),
        (
            "plan_fix",
            "Count a fix attempt on a step.",
            &[("step", "string"), ("note", "string")],
        ),
        (
            "plan_fail",
            "Count a failure of an area.",
            &[("area", "string")],
        ),
        ("plan_decide", "Log a decision.", &[("text", "string")]),
        (
            "plan_finding",
            "Record a finding.",
            &[("text", "string"), ("file", "string")],
        ),
        (
            "plan_budget",
            "The complexity budget.",
            &[("estimate", "integer"), ("abstraction", "string")],
        ),
        ("plan_close", "Close the plan.", &[("reason", "string")]),
        (
            "plan_list",
            "Every plan, paged.",
            &[("offset", "integer"), ("limit", "integer")],
        ),
        ("plan_resume", "Everything to continue the plan.", &[]),
    ];
    let tools: Vec<Tool> = split
        .iter()
        .map(|(name, description, fields)| {
            let properties: serde_json::Map<String, Value> = fields
                .iter()
                .map(|(f, t)| ((*f).to_owned(), json!({"type": t})))
                .collect();
            let Value::Object(schema) = json!({"type": "object", "properties": properties}) else {
                unreachable!()
            };
            Tool::new(*name, *description, Arc::new(schema)).annotate(
                ToolAnnotations::new()
                    .read_only(false)
                    .destructive(false)
                    .idempotent(false),
            )
        })
        .collect();
    let per_command: usize = tools
        .iter()
        .map(|t| tokens(&serde_json::to_string(t).unwrap()))
        .sum();
    let one = tokens(&serde_json::to_string(&tools::find("plan").unwrap().tool()).unwrap());
    println!("plan wing: one tool with an action {one} tokens, one tool per command {per_command}");
    assert!(one < per_command, "{one} vs {per_command}");
}

#[test]
fn the_wing_tools_carry_the_right_hints() {
    let hints = |name: &str| {
        let tool = tools::find(name).expect(name).tool();
        let a = tool.annotations.expect("annotations");
        (
            a.read_only_hint == Some(true),
            a.destructive_hint == Some(true),
            a.idempotent_hint == Some(true),
        )
    };
    // (read only, destructive, idempotent)
    assert_eq!(hints("get_session_status"), (true, false, true));
    assert_eq!(hints("update_session"), (false, false, true));
    assert_eq!(hints("create_session"), (false, false, false));
    assert_eq!(hints("transition_phase"), (false, false, false));
    assert_eq!(hints("archive_session"), (false, true, false));
    assert_eq!(hints("plan"), (false, false, false));
    assert_eq!(hints("session"), (false, true, false));
}
