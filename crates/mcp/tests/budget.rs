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
