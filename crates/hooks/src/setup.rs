//! `cairn setup claude [--global] [--remove]`: cairn's hook entries in a Claude Code settings.json.
//!
//! The file belongs to the user, so the merge touches nothing but cairn's own handlers: every
//! other key, event, matcher group and handler keeps its value and its place (serde_json's
//! `preserve_order`). cairn's handlers are recognised by their command running `cairn-hook`, so
//! entries written by an older cairn (another path, other events) are replaced, not duplicated.
//! Re-running is idempotent: cairn's group keeps its position in each event's list, and a file
//! that would not change is not rewritten. A file that is not valid JSON is refused, never
//! overwritten.
//!
//! Before a change the previous file is copied to `settings.json.bak`; the new content is written
//! to a temporary file beside it, synced, and renamed over the target, so Claude Code never reads
//! a half-written settings file.
//!
//! Which events are registered ([`CAIRN_HOOKS`]): the ones where cairn-hook does something —
//! Stop included, for the reminder of work left IN_PROGRESS, and PostToolUse only for Claude
//! Code's task tools (the task-list pull) and for Edit, Write and MultiEdit (an active plan's
//! change manifest). UserPromptSubmit and PostToolUse on other tools are accepted by the binary
//! but not registered — it does nothing for them, and they fire constantly (see
//! [`crate::dispatch`]).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// One hook registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSpec {
    pub event: &'static str,
    /// Tool-name pattern for tool events; `None` means every occurrence of the event.
    pub matcher: Option<&'static str>,
    /// Seconds before Claude Code kills the hook.
    pub timeout: u32,
}

/// The events cairn registers for.
pub const CAIRN_HOOKS: [HookSpec; 9] = [
    HookSpec {
        event: "SessionStart",
        matcher: None,
        timeout: 15,
    },
    HookSpec {
        event: "PreToolUse",
        matcher: Some("Edit|Write|MultiEdit|NotebookEdit|Bash"),
        timeout: 5,
    },
    HookSpec {
        event: "PreCompact",
        matcher: None,
        timeout: 15,
    },
    HookSpec {
        event: "SessionEnd",
        matcher: None,
        timeout: 10,
    },
    HookSpec {
        event: "SubagentStart",
        matcher: None,
        timeout: 10,
    },
    HookSpec {
        event: "SubagentStop",
        matcher: None,
        timeout: 10,
    },
    HookSpec {
        event: "Stop",
        matcher: None,
        timeout: 10,
    },
    HookSpec {
        event: "PostToolUse",
        matcher: Some(TASK_TOOLS_MATCHER),
        timeout: 10,
    },
    // The active plan's change manifest in EXECUTE (see `crate::plan`).
    HookSpec {
        event: "PostToolUse",
        matcher: Some("Edit|Write|MultiEdit"),
        timeout: 10,
    },
];

/// The PostToolUse matcher: Claude Code's task tools ([`crate::tasklist::TASK_TOOLS`]).
pub const TASK_TOOLS_MATCHER: &str = "TaskCreate|TaskUpdate|TodoWrite";

/// The command the plugin's hooks.json runs: the plugin's own binary when Claude Code provides
/// `CLAUDE_PLUGIN_ROOT`, else `cairn-hook` from `PATH` (Claude Code puts an enabled plugin's
/// `bin/` on it; a `cargo install`ed cairn is there too). Plain POSIX `sh` expansion, which is
/// what Claude Code runs hook commands with.
pub const PLUGIN_HOOK_COMMAND: &str =
    "\"${CLAUDE_PLUGIN_ROOT:+${CLAUDE_PLUGIN_ROOT}/bin/}cairn-hook\"";

/// `{"SessionStart": [{"hooks": [{"type": "command", "command": …, "timeout": 15}]}], …}`. An
/// event registered for two purposes (PostToolUse) gets one group per matcher, in table order.
pub fn hooks_object(command: &str) -> Value {
    let mut events = Map::new();
    for spec in CAIRN_HOOKS {
        let groups = events
            .entry(spec.event.to_owned())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(groups) = groups {
            groups.push(group(spec, command));
        }
    }
    Value::Object(events)
}

fn group(spec: HookSpec, command: &str) -> Value {
    let handler = json!({"type": "command", "command": command, "timeout": spec.timeout});
    match spec.matcher {
        Some(matcher) => json!({"matcher": matcher, "hooks": [handler]}),
        None => json!({"hooks": [handler]}),
    }
}

/// Is this hook handler cairn's? Its command runs a program named `cairn-hook` (any directory,
/// quoted or not, `.exe` or not) — not merely mentions the word.
pub fn is_cairn_handler(handler: &Value) -> bool {
    let Some(command) = handler.get("command").and_then(Value::as_str) else {
        return false;
    };
    command.match_indices("cairn-hook").any(|(at, m)| {
        let before = command[..at].chars().next_back();
        let after = &command[at + m.len()..];
        let starts = before.is_none_or(|c| matches!(c, '/' | '\\' | '"' | '\'' | '}' | ' '));
        let ends =
            after.is_empty() || after.starts_with(['"', '\'', ' ']) || after.starts_with(".exe");
        starts && ends
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupOptions {
    /// `.claude/settings.json` of a project, or `~/.claude/settings.json`.
    pub settings_path: PathBuf,
    /// How Claude Code should run cairn-hook (an absolute path, quoted if it has spaces).
    pub hook_command: String,
    /// Take cairn's entries out instead of putting them in.
    pub remove: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupReport {
    pub settings_path: PathBuf,
    /// The file was rewritten (false: it already said exactly this).
    pub changed: bool,
    /// Where the previous content was saved, when there was a previous file and it changed.
    pub backup: Option<PathBuf>,
    /// cairn handlers taken out (older or current ones, before adding back).
    pub removed: usize,
    /// Events cairn is now registered for (empty with `remove`).
    pub registered: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON ({detail}); fix or move it, cairn will not overwrite it")]
    NotJson { path: String, detail: String },
    #[error("{path}: {detail}; cairn will not guess how to merge into it")]
    Shape { path: String, detail: String },
    /// The atomic write of the new settings failed; the old file is unchanged.
    #[error(transparent)]
    Write(#[from] cairn_domain::StoreError),
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> SetupError + 'a {
    move |source| SetupError::Io {
        op,
        path: path.display().to_string(),
        source,
    }
}

/// Merges (or removes) cairn's hooks in `options.settings_path`.
pub fn apply(options: &SetupOptions) -> Result<SetupReport, SetupError> {
    let command = (!options.remove).then_some(options.hook_command.as_str());
    let (changed, backup, removed) =
        edit_json_file(&options.settings_path, options.remove, |settings| {
            merge(settings, command)
        })?;
    let registered = if options.remove {
        Vec::new()
    } else {
        CAIRN_HOOKS.iter().map(|s| s.event.to_owned()).collect()
    };
    Ok(SetupReport {
        settings_path: options.settings_path.clone(),
        changed,
        backup,
        removed: if changed { removed } else { 0 },
        registered,
    })
}

/// The MCP server entry Claude Code starts for cairn (`cairn mcp` on stdio).
pub fn mcp_server(cairn_command: &str) -> Value {
    serde_json::json!({"command": cairn_command, "args": ["mcp"]})
}

/// What [`register_mcp`] did to `.mcp.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpReport {
    pub path: PathBuf,
    pub changed: bool,
    pub backup: Option<PathBuf>,
}

/// Puts `mcpServers.cairn` into a project's `.mcp.json` (or, with `remove`, takes it out),
/// keeping every other server; a file left with no server and nothing else is left as `{}`.
pub fn register_mcp(
    path: &Path,
    cairn_command: &str,
    remove: bool,
) -> Result<McpReport, SetupError> {
    let (changed, backup, _) = edit_json_file(path, remove, |config| {
        edit_mcp(config, cairn_command, remove)
    })?;
    Ok(McpReport {
        path: path.to_path_buf(),
        changed,
        backup,
    })
}

/// Whether [`register_mcp`] would succeed on `path`, writing nothing: `cairn setup claude` checks
/// both files before it changes either.
pub fn check_mcp(path: &Path) -> Result<(), SetupError> {
    let (_, mut config) = read_json(path)?;
    edit_mcp(&mut config, "cairn", false)
        .map(|_| ())
        .map_err(|detail| SetupError::Shape {
            path: path.display().to_string(),
            detail,
        })
}

fn edit_mcp(config: &mut Value, cairn_command: &str, remove: bool) -> Result<usize, String> {
    let root = config
        .as_object_mut()
        .ok_or("the top level is not a JSON object")?;
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("\"mcpServers\" is not an object")?;
    let had = servers.remove("cairn").is_some();
    if !remove {
        servers.insert("cairn".to_owned(), mcp_server(cairn_command));
    }
    if servers.is_empty() {
        root.remove("mcpServers");
    }
    Ok(usize::from(had))
}

/// A JSON settings file as text (`None`: missing) and value (missing or blank: `{}`).
fn read_json(path: &Path) -> Result<(Option<String>, Value), SetupError> {
    let existing = match fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io("read", path)(e)),
    };
    let value = match existing.as_deref() {
        None => Value::Object(Map::new()),
        Some(text) if text.trim().is_empty() => Value::Object(Map::new()),
        Some(text) => serde_json::from_str(text).map_err(|e| SetupError::NotJson {
            path: path.display().to_string(),
            detail: e.to_string(),
        })?,
    };
    Ok((existing, value))
}

/// Reads a JSON settings file (missing or blank: `{}`), lets `edit` change it, and writes it back
/// atomically — with the previous content kept beside it — only when the text changed. A missing
/// file is not created just to remove something from it. Returns (changed, backup, edit's count).
fn edit_json_file(
    path: &Path,
    remove: bool,
    edit: impl FnOnce(&mut Value) -> Result<usize, String>,
) -> Result<(bool, Option<PathBuf>, usize), SetupError> {
    let (existing, original) = read_json(path)?;
    let mut edited = original.clone();
    let count = edit(&mut edited).map_err(|detail| SetupError::Shape {
        path: path.display().to_string(),
        detail,
    })?;
    // Compared as text: with preserve_order, a moved key is a change too.
    let unchanged = render(&edited) == render(&original) && (existing.is_some() || remove);
    if unchanged {
        return Ok((false, None, count));
    }
    let backup = match existing {
        Some(_) => {
            let backup = backup_path(path);
            fs::copy(path, &backup).map_err(io("back up", path))?;
            Some(backup)
        }
        None => None,
    };
    write_atomically(path, render(&edited).as_bytes())?;
    Ok((true, backup, count))
}

pub fn backup_path(settings: &Path) -> PathBuf {
    let mut name = settings.file_name().unwrap_or_default().to_os_string();
    name.push(".bak");
    settings.with_file_name(name)
}

fn render(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// Takes every cairn handler out of `settings` and, with `command`, puts cairn's groups back
/// where the first one was (or at the end of the event's list). Containers emptied by taking
/// cairn out are dropped; everything else is left as it was. Returns how many handlers were
/// taken out.
pub fn merge(settings: &mut Value, command: Option<&str>) -> Result<usize, String> {
    let root = settings
        .as_object_mut()
        .ok_or("the settings file is not a JSON object")?;
    let had_hooks = root.contains_key("hooks");
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("`hooks` is not an object")?;
    let mut removed = 0;
    let mut insert_at = std::collections::HashMap::new();
    let mut emptied = Vec::new();
    for (event, groups) in hooks.iter_mut() {
        let groups = groups
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{event}` is not a list"))?;
        let mut first = None;
        let mut kept = Vec::with_capacity(groups.len());
        for mut group in std::mem::take(groups) {
            let handlers = group.get_mut("hooks").and_then(Value::as_array_mut);
            let Some(handlers) = handlers else {
                kept.push(group);
                continue;
            };
            let before = handlers.len();
            handlers.retain(|h| !is_cairn_handler(h));
            let taken = before - handlers.len();
            if taken > 0 {
                removed += taken;
                first.get_or_insert(kept.len());
                if handlers.is_empty() {
                    continue;
                }
            }
            kept.push(group);
        }
        if let Some(at) = first {
            insert_at.insert(event.clone(), at);
            if kept.is_empty() {
                emptied.push(event.clone());
            }
        }
        *groups = kept;
    }
    if let Some(command) = command {
        for spec in CAIRN_HOOKS {
            let groups = hooks
                .entry(spec.event)
                .or_insert_with(|| Value::Array(Vec::new()));
            let groups = groups.as_array_mut().ok_or("unreachable: checked above")?;
            let at = insert_at
                .get(spec.event)
                .copied()
                .unwrap_or(groups.len())
                .min(groups.len());
            groups.insert(at, group(spec, command));
            // An event with two of cairn's groups keeps them in table order, run after run.
            insert_at.insert(spec.event.to_owned(), at + 1);
        }
    }
    for event in emptied {
        if hooks
            .get(&event)
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            hooks.shift_remove(&event);
        }
    }
    if hooks.is_empty() && (removed > 0 || !had_hooks) {
        root.shift_remove("hooks");
    }
    Ok(removed)
}

/// With the store's one atomic writer (temp file, fsync, rename, fsync the directory), staging in
/// the settings file's own directory so the rename never crosses a filesystem.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), SetupError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).map_err(io("create directory", &dir))?;
    Ok(crate::wiring::write_atomic(&dir, path, bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "/opt/cairn/bin/cairn-hook";

    fn options(path: &Path, remove: bool) -> SetupOptions {
        SetupOptions {
            settings_path: path.to_path_buf(),
            hook_command: CMD.to_owned(),
            remove,
        }
    }

    fn read(path: &Path) -> Value {
        serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
    }

    /// A settings file with a user's own hooks around where cairn's go, and unrelated keys.
    fn user_settings() -> Value {
        json!({
            "model": "opus",
            "permissions": {"allow": ["Bash(cargo test:*)"], "deny": []},
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/audit-bash.sh"}]}
                ],
                "Notification": [
                    {"hooks": [{"type": "command", "command": "notify-send claude", "timeout": 3}]}
                ]
            },
            "env": {"FOO": "1"},
            "x-unknown": [1, {"nested": true}]
        })
    }

    #[test]
    fn a_fresh_file_gets_every_cairn_hook() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude").join("settings.json");
        let report = apply(&options(&path, false)).unwrap();
        assert!(report.changed);
        assert_eq!(report.backup, None);
        assert_eq!(read(&path), json!({"hooks": hooks_object(CMD)}));
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("}\n") && text.contains("\n  \"hooks\""));
        assert_eq!(
            read(&path)["hooks"]["PreToolUse"],
            json!([{"matcher": "Edit|Write|MultiEdit|NotebookEdit|Bash", "hooks": [{"type": "command", "command": CMD, "timeout": 5}]}])
        );
        assert_eq!(
            read(&path)["hooks"]["PostToolUse"],
            json!([
                {"matcher": "TaskCreate|TaskUpdate|TodoWrite", "hooks": [{"type": "command", "command": CMD, "timeout": 10}]},
                {"matcher": "Edit|Write|MultiEdit", "hooks": [{"type": "command", "command": CMD, "timeout": 10}]}
            ])
        );
    }

    #[test]
    fn the_atomic_write_leaves_nothing_beside_the_settings_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        apply(&options(&path, false)).unwrap();
        apply(&options(&path, true)).unwrap();
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let backup = backup_path(&path);
        let backup = backup.file_name().unwrap().to_string_lossy();
        assert_eq!(names, ["settings.json", backup.as_ref()]);
    }

    #[test]
    fn other_content_is_kept_in_place_and_a_backup_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let original = serde_json::to_string_pretty(&user_settings()).unwrap();
        fs::write(&path, &original).unwrap();
        let report = apply(&options(&path, false)).unwrap();
        assert!(report.changed);
        assert_eq!(
            fs::read_to_string(report.backup.unwrap()).unwrap(),
            original
        );
        let merged = read(&path);
        let keys: Vec<&String> = merged.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["model", "permissions", "hooks", "env", "x-unknown"]);
        assert_eq!(merged["x-unknown"], json!([1, {"nested": true}]));
        let events: Vec<&String> = merged["hooks"].as_object().unwrap().keys().collect();
        assert_eq!(
            events,
            [
                "PreToolUse",
                "Notification",
                "SessionStart",
                "PreCompact",
                "SessionEnd",
                "SubagentStart",
                "SubagentStop",
                "Stop",
                "PostToolUse"
            ]
        );
        let pre = merged["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0]["hooks"][0]["command"], "~/bin/audit-bash.sh");
        assert_eq!(pre[1]["hooks"][0]["command"], CMD);
    }

    #[test]
    fn rerunning_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        fs::write(
            &path,
            serde_json::to_string_pretty(&user_settings()).unwrap(),
        )
        .unwrap();
        apply(&options(&path, false)).unwrap();
        let once = fs::read_to_string(&path).unwrap();
        fs::remove_file(backup_path(&path)).unwrap();
        let again = apply(&options(&path, false)).unwrap();
        assert!(!again.changed);
        assert_eq!(again.backup, None);
        assert_eq!(fs::read_to_string(&path).unwrap(), once);
        assert!(
            !backup_path(&path).exists(),
            "no backup when nothing changes"
        );
    }

    #[test]
    fn a_new_command_replaces_the_old_one_in_its_place() {
        let mut settings = user_settings();
        merge(&mut settings, Some("/old/cairn-hook")).unwrap();
        // The user adds a hook after cairn's.
        settings["hooks"]["PreToolUse"]
            .as_array_mut()
            .unwrap()
            .push(json!({"matcher": "Write", "hooks": [{"type": "command", "command": "fmt.sh"}]}));
        let removed = merge(
            &mut settings,
            Some("\"C:\\Program Files\\cairn\\cairn-hook.exe\""),
        )
        .unwrap();
        assert_eq!(removed, CAIRN_HOOKS.len());
        let pre = settings["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 3);
        assert_eq!(
            pre[1]["hooks"][0]["command"],
            "\"C:\\Program Files\\cairn\\cairn-hook.exe\""
        );
        assert_eq!(pre[2]["hooks"][0]["command"], "fmt.sh");
    }

    #[test]
    fn remove_takes_out_exactly_cairns_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        // A group shared by a user handler and a cairn handler keeps the user's handler.
        let mut start = user_settings();
        start["hooks"]["UserPromptSubmit"] = json!([{"hooks": [
            {"type": "command", "command": "say done"},
            {"type": "command", "command": "cairn-hook"}
        ]}]);
        fs::write(&path, serde_json::to_string_pretty(&start).unwrap()).unwrap();
        // Adding already replaces the stray handler (cairn does not register UserPromptSubmit).
        assert_eq!(apply(&options(&path, false)).unwrap().removed, 1);
        let report = apply(&options(&path, true)).unwrap();
        assert!(report.changed);
        assert_eq!(report.removed, CAIRN_HOOKS.len());
        let mut expected = start.clone();
        expected["hooks"]["UserPromptSubmit"] =
            json!([{"hooks": [{"type": "command", "command": "say done"}]}]);
        assert_eq!(
            serde_json::to_string(&read(&path)).unwrap(),
            serde_json::to_string(&expected).unwrap(),
            "same content in the same order"
        );
    }

    #[test]
    fn add_then_remove_restores_a_file_without_hooks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        fs::write(&path, "{\n  \"model\": \"opus\"\n}\n").unwrap();
        apply(&options(&path, false)).unwrap();
        apply(&options(&path, true)).unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "{\n  \"model\": \"opus\"\n}\n"
        );
    }

    #[test]
    fn removing_from_a_missing_file_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let report = apply(&options(&path, true)).unwrap();
        assert!(!report.changed);
        assert!(!path.exists());
    }

    #[test]
    fn an_empty_file_counts_as_empty_settings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        fs::write(&path, "  \n").unwrap();
        assert!(apply(&options(&path, false)).unwrap().changed);
        assert_eq!(read(&path), json!({"hooks": hooks_object(CMD)}));
    }

    #[test]
    fn unreadable_or_oddly_shaped_files_are_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        for (text, is_shape) in [
            ("{\"hooks\": ", false),
            ("[1, 2]", true),
            ("{\"hooks\": []}", true),
            ("{\"hooks\": {\"PreToolUse\": {}}}", true),
        ] {
            fs::write(&path, text).unwrap();
            let err = apply(&options(&path, false)).unwrap_err();
            assert_eq!(
                matches!(err, SetupError::Shape { .. }),
                is_shape,
                "{text}: {err}"
            );
            assert!(matches!(
                err,
                SetupError::Shape { .. } | SetupError::NotJson { .. }
            ));
            assert_eq!(fs::read_to_string(&path).unwrap(), text);
            assert!(!backup_path(&path).exists());
        }
    }

    #[test]
    fn cairn_handlers_are_recognised_by_the_program_they_run() {
        let cairn = [
            "cairn-hook",
            "/usr/local/bin/cairn-hook",
            "\"C:\\Program Files\\cairn\\cairn-hook.exe\"",
            PLUGIN_HOOK_COMMAND,
            "'/home/me/my dir/cairn-hook' --verbose",
        ];
        for command in cairn {
            assert!(is_cairn_handler(&json!({"command": command})), "{command}");
        }
        for command in [
            "my-cairn-hook.sh",
            "echo cairn-hooks",
            "cairn-hook-wrapper",
            "x",
        ] {
            assert!(!is_cairn_handler(&json!({"command": command})), "{command}");
        }
        assert!(!is_cairn_handler(
            &json!({"type": "prompt", "prompt": "cairn-hook"})
        ));
    }
}
