//! `cairn setup claude`: merging into settings.json through the real binary.

use serde_json::{Value, json};

use crate::support::Repo;

fn settings(repo: &Repo) -> Value {
    let text =
        std::fs::read_to_string(repo.root().join(".claude/settings.json")).expect("settings.json");
    serde_json::from_str(&text).expect("valid JSON")
}

#[test]
fn setup_merges_idempotently_keeps_other_settings_and_removes_only_its_own() {
    let repo = Repo::new();
    let mine = json!({
        "model": "opus",
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]}]}
    });
    std::fs::create_dir_all(repo.root().join(".claude")).expect("mkdir");
    std::fs::write(
        repo.root().join(".claude/settings.json"),
        serde_json::to_string_pretty(&mine).expect("json"),
    )
    .expect("write");

    let out = repo.json(&["setup", "claude", "--hook", "/opt/cairn/bin/cairn-hook"]);
    assert_eq!(out["changed"], true);
    assert!(
        out["backup"].is_string(),
        "the previous file is backed up: {out}"
    );
    let merged = settings(&repo);
    assert_eq!(merged["model"], "opus", "unrelated settings survive");
    let text = merged.to_string();
    assert!(text.contains("my-linter"), "other hooks survive: {text}");
    for event in ["SessionStart", "PreToolUse", "PreCompact"] {
        assert!(
            merged["hooks"][event]
                .to_string()
                .contains("/opt/cairn/bin/cairn-hook"),
            "{event} registered: {text}"
        );
    }

    let again = repo.json(&["setup", "claude", "--hook", "/opt/cairn/bin/cairn-hook"]);
    assert_eq!(again["changed"], false, "a second run changes nothing");
    assert_eq!(settings(&repo), merged);

    let removed = repo.json(&["setup", "claude", "--remove"]);
    assert!(removed["removed"].as_u64().unwrap_or(0) >= 3, "{removed}");
    let after = settings(&repo);
    assert!(
        !after.to_string().contains("cairn-hook"),
        "every cairn entry is gone: {after}"
    );
    assert_eq!(after["model"], "opus");
    assert!(
        after.to_string().contains("my-linter"),
        "the user's own hook stays"
    );
}

#[test]
fn setup_refuses_to_touch_a_settings_file_that_is_not_json() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.root().join(".claude")).expect("mkdir");
    std::fs::write(repo.root().join(".claude/settings.json"), "{ not json").expect("write");
    let run = repo.fails(&["setup", "claude"], 5);
    assert!(run.stderr.contains("not valid JSON"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(repo.root().join(".claude/settings.json")).expect("read"),
        "{ not json"
    );
}

#[test]
fn setup_registers_the_mcp_server_beside_other_servers_and_removes_only_its_own() {
    let repo = Repo::new();
    let mcp = repo.root().join(".mcp.json");
    std::fs::write(
        &mcp,
        r#"{"mcpServers": {"docs": {"command": "docs-server", "args": []}}}"#,
    )
    .expect("write");

    let out = repo.json(&["setup", "claude", "--hook", "/opt/cairn/bin/cairn-hook"]);
    assert_eq!(out["mcp"]["changed"], true, "{out}");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&mcp).expect("read")).expect("json");
    assert_eq!(config["mcpServers"]["docs"]["command"], "docs-server");
    assert_eq!(config["mcpServers"]["cairn"]["args"], json!(["mcp"]));
    let command = config["mcpServers"]["cairn"]["command"].as_str().unwrap();
    assert!(
        command.ends_with(&format!("cairn{}", std::env::consts::EXE_SUFFIX)),
        "{command}"
    );

    let again = repo.json(&["setup", "claude", "--hook", "/opt/cairn/bin/cairn-hook"]);
    assert_eq!(
        again["mcp"]["changed"], false,
        "a second run changes nothing"
    );

    repo.ok(&["setup", "claude", "--remove"]);
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&mcp).expect("read")).expect("json");
    assert_eq!(
        config,
        json!({"mcpServers": {"docs": {"command": "docs-server", "args": []}}}),
        "only cairn's server is gone"
    );
}

#[test]
fn a_broken_mcp_json_is_refused_before_anything_changes() {
    let repo = Repo::new();
    std::fs::write(repo.root().join(".mcp.json"), "{ nope").expect("write");
    let run = repo.fails(&["setup", "claude"], 5);
    assert!(run.stderr.contains(".mcp.json"), "{}", run.stderr);
    assert!(
        !repo.root().join(".claude/settings.json").exists(),
        "settings.json is not written either"
    );
    assert_eq!(
        std::fs::read_to_string(repo.root().join(".mcp.json")).expect("read"),
        "{ nope"
    );
}
