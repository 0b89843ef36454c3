//! The Claude Code plugin's files (`plugin/` at the workspace root, assembled by
//! `cargo xtask plugin`): every JSON file has the shape Claude Code expects, hooks.json registers
//! exactly what `cairn setup claude` registers, and the markdown carries its front matter.

use std::path::{Path, PathBuf};

use cairn_hooks::setup::{self, CAIRN_HOOKS, PLUGIN_HOOK_COMMAND};
use serde_json::Value;

fn plugin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugin")
}

fn json(relative: &str) -> Value {
    let path = plugin_dir().join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{relative}: {e}"));
    assert!(text.ends_with('\n'), "{relative}: trailing newline");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// The `---` front matter of a markdown file, as `key: value` pairs.
fn front_matter(relative: &str) -> (Vec<(String, String)>, String) {
    let text = std::fs::read_to_string(plugin_dir().join(relative)).unwrap();
    let rest = text
        .strip_prefix("---\n")
        .unwrap_or_else(|| panic!("{relative}: no front matter"));
    let (head, body) = rest
        .split_once("\n---\n")
        .unwrap_or_else(|| panic!("{relative}: unterminated front matter"));
    let pairs = head
        .lines()
        .map(|l| {
            let (k, v) = l
                .split_once(": ")
                .unwrap_or_else(|| panic!("{relative}: `{l}`"));
            (k.to_owned(), v.to_owned())
        })
        .collect();
    (pairs, body.to_owned())
}

fn get<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[test]
fn the_manifest_names_the_plugin_and_matches_the_crate_version() {
    let manifest = json(".claude-plugin/plugin.json");
    let name = manifest["name"].as_str().expect("name is required");
    assert_eq!(name, "cairn");
    assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
    assert_eq!(manifest["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        manifest["description"]
            .as_str()
            .is_some_and(|d| d.len() > 20)
    );
    assert!(manifest["author"]["name"].is_string());
    assert!(
        manifest.get("hooks").is_none(),
        "hooks/hooks.json is loaded automatically; referencing it again loads it twice"
    );
}

#[test]
fn hooks_json_registers_what_setup_registers() {
    let hooks = json("hooks/hooks.json");
    let object = hooks.as_object().unwrap();
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    assert_eq!(keys, ["description", "hooks"]);
    assert_eq!(hooks["hooks"], setup::hooks_object(PLUGIN_HOOK_COMMAND));
    for spec in CAIRN_HOOKS {
        let groups = hooks["hooks"][spec.event].as_array().unwrap();
        let purposes = CAIRN_HOOKS.iter().filter(|s| s.event == spec.event).count();
        assert_eq!(groups.len(), purposes, "{}", spec.event);
        let group = groups
            .iter()
            .filter_map(Value::as_object)
            .find(|g| g.get("matcher").and_then(Value::as_str) == spec.matcher)
            .unwrap_or_else(|| panic!("{} has no group for {:?}", spec.event, spec.matcher));
        let handler = &group["hooks"][0];
        assert_eq!(handler["type"], "command");
        let command = handler["command"].as_str().unwrap();
        assert!(command.contains("${CLAUDE_PLUGIN_ROOT}/bin/"));
        assert!(
            setup::is_cairn_handler(handler),
            "setup --remove must recognise it"
        );
        assert!(
            handler["timeout"]
                .as_u64()
                .is_some_and(|t| (1..=60).contains(&t))
        );
    }
    assert_eq!(
        hooks["hooks"]["PreToolUse"][0]["matcher"],
        "Edit|Write|MultiEdit|NotebookEdit|Bash"
    );
}

#[test]
fn the_plugin_starts_the_mcp_server_setup_registers() {
    let config = json(".mcp.json");
    let keys: Vec<&str> = config
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["mcpServers"]);
    assert_eq!(
        config["mcpServers"]["cairn"],
        setup::mcp_server("${CLAUDE_PLUGIN_ROOT}/bin/cairn"),
        "the same entry `cairn setup claude` writes, with the plugin's own binary"
    );
}

#[test]
fn the_hook_command_falls_back_to_path_without_the_variable() {
    let expand = |root: Option<&str>| {
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s' {PLUGIN_HOOK_COMMAND}"))
            .env_remove("CLAUDE_PLUGIN_ROOT")
            .envs(root.map(|r| ("CLAUDE_PLUGIN_ROOT", r)))
            .output();
        output.ok().map(|o| String::from_utf8(o.stdout).unwrap())
    };
    // Only where a POSIX shell exists (Claude Code needs one to run hooks anyway).
    if let Some(with) = expand(Some("/opt/plugins/cairn")) {
        assert_eq!(with, "/opt/plugins/cairn/bin/cairn-hook");
        assert_eq!(expand(None).unwrap(), "cairn-hook");
        assert_eq!(expand(Some("")).unwrap(), "cairn-hook");
    }
}

#[test]
fn the_skill_teaches_the_workflow() {
    let (meta, body) = front_matter("skills/cairn/SKILL.md");
    assert_eq!(get(&meta, "name"), Some("cairn"));
    assert!(get(&meta, "description").is_some_and(|d| d.len() > 40));
    for must in [
        "cairn prime",
        "cairn task next",
        "cairn task start",
        "cairn task complete",
        "cairn task decompose",
        "cairn task block",
        "Never edit",
        "tasks.json",
    ] {
        assert!(body.contains(must), "SKILL.md should mention `{must}`");
    }
}

#[test]
fn every_command_has_a_description_and_runs_only_cairn() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(plugin_dir().join("commands")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let (meta, body) = front_matter(&format!("commands/{name}"));
        assert!(get(&meta, "description").is_some(), "{name}");
        assert_eq!(get(&meta, "allowed-tools"), Some("Bash(cairn:*)"), "{name}");
        assert!(body.contains("cairn "), "{name}");
        names.push(name);
    }
    names.sort();
    assert_eq!(names, ["done.md", "next.md", "plan.md", "status.md"]);
}
