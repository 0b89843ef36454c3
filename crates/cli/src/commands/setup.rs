//! `cairn setup claude`: the CLI face of `cairn_hooks::setup`.

use std::path::PathBuf;

use cairn_hooks::setup::{self, SetupError, SetupOptions};
use serde_json::json;

use super::{Ctx, Report};
use crate::cli::SetupClaudeArgs;
use crate::exit::{Code, Failure};

pub fn claude(ctx: &Ctx, args: SetupClaudeArgs) -> Result<Report, Failure> {
    let settings_path = if args.global {
        config_dir()?.join("settings.json")
    } else {
        ctx.root.join(".claude").join("settings.json")
    };
    let hook_command = args.hook.unwrap_or_else(default_hook_command);
    let report = setup::apply(&SetupOptions {
        settings_path,
        hook_command: hook_command.clone(),
        remove: args.remove,
    })
    .map_err(|e| {
        let code = match e {
            SetupError::Io { .. } | SetupError::Write(_) => Code::Internal,
            SetupError::NotJson { .. } | SetupError::Shape { .. } => Code::Invalid,
        };
        Failure::new(code, e.to_string())
    })?;
    let value = json!({
        "settings_path": report.settings_path,
        "changed": report.changed,
        "backup": report.backup,
        "removed": report.removed,
        "registered": report.registered,
        "hook_command": hook_command,
    });
    ctx.emit(&value, |_| {
        let path = report.settings_path.display();
        let mut out = if args.remove {
            format!(
                "Removed {} cairn hook entr{} from {path}\n",
                report.removed,
                if report.removed == 1 { "y" } else { "ies" }
            )
        } else if report.changed {
            format!(
                "cairn-hook now runs on {} (in {path})\n  command: {hook_command}\n",
                report.registered.join(", ")
            )
        } else {
            format!("{path} already registers cairn-hook; nothing changed\n")
        };
        if let Some(backup) = &report.backup {
            out.push_str(&format!("  previous file kept at {}\n", backup.display()));
        }
        out
    })
}

/// Claude Code's configuration directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub(super) fn config_dir() -> Result<PathBuf, Failure> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(".claude"))
        .ok_or_else(|| {
            Failure::new(Code::Usage, "cannot find your home directory").with_hint(
                "set HOME, or CLAUDE_CONFIG_DIR to Claude Code's configuration directory",
            )
        })
}

/// The cairn-hook shipped beside this binary (quoted if its path has spaces), else the bare name
/// for PATH lookup.
fn default_hook_command() -> String {
    let beside = std::env::current_exe().ok().and_then(|exe| {
        let hook = exe.with_file_name(format!("cairn-hook{}", std::env::consts::EXE_SUFFIX));
        hook.is_file().then_some(hook)
    });
    match beside {
        Some(path) => {
            let text = path.display().to_string();
            if text.contains(' ') {
                format!("\"{text}\"")
            } else {
                text
            }
        }
        None => "cairn-hook".to_owned(),
    }
}
