//! Issue #16, fuzzing the hook's parsers: the stdin payload (read with its cap and deadline, then
//! decoded), the PreToolUse guard's reading of paths and shell commands, and the merge of a user's
//! `settings.json`. Never a panic: a payload is decoded or refused with a typed
//! [`MalformedInput`], a command is guarded or let through, a settings file is merged or refused
//! with a message. The harness is storage-fs's (`CAIRN_FUZZ_CASES`, `CAIRN_FUZZ_SECONDS`; see
//! `crates/storage-fs/tests/fuzz.rs`).

#[path = "../../storage-fs/tests/fuzzing/mod.rs"]
mod fuzzing;

use std::io::Cursor;
use std::time::Duration;

use cairn_hooks::guard;
use cairn_hooks::input::read_payload;
use cairn_hooks::protocol::{HookInput, MalformedInput};
use cairn_hooks::setup;
use fuzzing::{fuzz, input, inputs, text};
use proptest::prelude::*;

macro_rules! fixtures {
    ($($name:literal),* $(,)?) => {
        &[$(include_bytes!(concat!("../../../tests/hook/fixtures/", $name, ".json"))),*]
    };
}

/// Real payloads of every event the hook handles, as Claude Code sends them.
const PAYLOADS: &[&[u8]] = fixtures![
    "pre_tool_use_bash_heredoc_notes",
    "pre_tool_use_write_tasks_windows",
    "pre_tool_use_notebook_edit_checkpoint",
    "pre_tool_use_multiedit_log",
    "pre_tool_use_mcp_tool",
    "post_tool_use_write",
    "session_start_startup",
    "session_start_compact",
    "subagent_stop",
    "user_prompt_submit",
    "stop",
];

/// Shell commands that name state files in the ways the guard has to see through.
const COMMANDS: &[&[u8]] = &[
    b"cat > docs/notes.md <<'EOF'\nNever run: echo {} > .claude/projects/demo/tasks.json\nEOF\ncat .claude/projects/demo/tasks.json | jq '.tasks | length'",
    b"sed -i 's/PENDING/COMPLETE/' .claude/projects/*/tasks.json && echo done",
    b"cd .claude/projects/web && rm -rf progress/ ; (tee -a ../web/progress/log.md < x) 2>&1",
    b"sudo env FOO=1 nice cp \"$HOME/x\" './.claude/projects/w\\eb/project.json' || mv a{b,c} .claude/.current_plan",
    b"python3 -c \"open('.claude/projects/web/tasks.json','w')\" | xargs -0 truncate -s0 $(ls .claude)",
];

#[test]
fn hook_stdin() {
    fuzz("hook stdin", inputs(PAYLOADS), |bytes| {
        // A small cap now and then, so the over-the-cap path runs on every kind of input.
        let cap = if bytes.len() % 3 == 0 {
            bytes.len() / 2
        } else {
            1 << 20
        };
        match read_payload(Cursor::new(bytes), cap, Duration::from_secs(2)) {
            Ok(payload) => match HookInput::parse(&payload) {
                Ok(input) => {
                    let _ = guard::check(&input);
                }
                Err(refused) => prop_assert!(!refused.to_string().is_empty()),
            },
            Err(refused) => prop_assert!(
                matches!(refused, MalformedInput::TooLarge(_)),
                "a complete in-memory read can only be refused for its size: {refused:?}"
            ),
        }
        Ok(())
    });
}

#[test]
fn guard_shell_commands_and_paths() {
    fuzz("PreToolUse guard", inputs(COMMANDS), |bytes| {
        let command = text(&bytes);
        for (tool, key) in [("Bash", "command"), ("Write", "file_path")] {
            let payload = serde_json::json!({
                "hook_event_name": "PreToolUse",
                "cwd": "/repo/sub",
                "tool_name": tool,
                "tool_input": { key: command },
            });
            let input = HookInput::parse(payload.to_string().as_bytes());
            prop_assert!(input.is_ok(), "a well-formed payload is refused: {input:?}");
            let _ = guard::check(&input.expect("checked"));
        }
        Ok(())
    });
}

#[test]
fn settings_json_merge() {
    const SETTINGS: &[u8] = include_bytes!("../../storage-fs/tests/fuzz_corpus/settings.json");
    fuzz("settings.json merge", input(SETTINGS), |bytes| {
        let Ok(mut settings) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            return Ok(());
        };
        if setup::merge(&mut settings, Some("cairn-hook")).is_ok() {
            // Merging twice changes nothing more: a re-run of `cairn setup` is a no-op.
            let once = settings.clone();
            let again = setup::merge(&mut settings, Some("cairn-hook"));
            prop_assert!(again.is_ok(), "a merged file is refused: {again:?}");
            prop_assert_eq!(once, settings);
        }
        Ok(())
    });
}
