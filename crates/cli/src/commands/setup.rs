//! `cairn setup claude`: the CLI face of `cairn_hooks::setup`; `cairn setup git`: the merge
//! driver's registration (git attributes, ignores, this clone's config).

use std::path::{Path, PathBuf};
use std::process::Command;

use cairn_hooks::setup::{self, SetupError, SetupOptions};
use serde_json::json;

use super::{Ctx, Report};
use crate::cli::{SetupClaudeArgs, SetupGitArgs};
use crate::exit::{Code, Failure};

pub fn claude(ctx: &Ctx, args: SetupClaudeArgs) -> Result<Report, Failure> {
    let settings_path = if args.global {
        config_dir()?.join("settings.json")
    } else {
        ctx.root.join(".claude").join("settings.json")
    };
    let hook_command = args.hook.unwrap_or_else(default_hook_command);
    let mcp_path = (!args.global).then(|| ctx.root.join(".mcp.json"));
    if let Some(path) = &mcp_path {
        // Both files are checked before either changes.
        setup::check_mcp(path).map_err(setup_failure)?;
    }
    let report = setup::apply(&SetupOptions {
        settings_path,
        hook_command: hook_command.clone(),
        remove: args.remove,
    })
    .map_err(setup_failure)?;
    // The MCP server goes in the repository's .mcp.json; Claude Code keeps user-scoped servers
    // in its own ~/.claude.json, which cairn does not edit.
    let mcp = match &mcp_path {
        Some(path) => Some(
            setup::register_mcp(path, &default_cairn_command(), args.remove)
                .map_err(setup_failure)?,
        ),
        None => None,
    };
    let value = json!({
        "settings_path": report.settings_path,
        "changed": report.changed,
        "backup": report.backup,
        "removed": report.removed,
        "registered": report.registered,
        "hook_command": hook_command,
        "mcp": mcp.as_ref().map(|m| json!({
            "path": m.path,
            "changed": m.changed,
            "backup": m.backup,
        })),
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
        if let Some(mcp) = &mcp {
            let path = mcp.path.display();
            out.push_str(&match (args.remove, mcp.changed) {
                (true, true) => format!("Removed the cairn MCP server from {path}\n"),
                (true, false) => format!("{path} has no cairn MCP server; nothing changed\n"),
                (false, true) => {
                    format!("The cairn MCP server (`cairn mcp`) is registered in {path}\n")
                }
                (false, false) => format!("{path} already registers the cairn MCP server\n"),
            });
            if let Some(backup) = &mcp.backup {
                out.push_str(&format!("  previous file kept at {}\n", backup.display()));
            }
        }
        out
    })
}

fn setup_failure(e: SetupError) -> Failure {
    let code = match e {
        SetupError::Io { .. } | SetupError::Write(_) => Code::Internal,
        SetupError::NotJson { .. } | SetupError::Shape { .. } => Code::Invalid,
    };
    Failure::new(code, e.to_string())
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
        Some(path) => quoted(&path),
        None => "cairn-hook".to_owned(),
    }
}

/// The files `cairn merge-driver` merges (committed in .gitattributes, so every clone merges them
/// the same way once its driver is configured).
const GIT_ATTRIBUTES: &[&str] = &[
    ".claude/projects/*/tasks.json merge=cairn",
    ".claude/projects/*/project.json merge=cairn",
    ".claude/projects/*/progress/log.md merge=cairn",
    ".claude/projects/*/progress/velocity.json merge=cairn",
    ".claude/projects/*/checkpoints/checkpoint-*.json merge=cairn",
];

/// The store's per-machine files: its lock, its staging directory, its validation stamps, the
/// read cache keyed by it, and what `doctor --full` remembers having validated. A committed stamp would name another machine's inode and conflict in
/// every merge.
const GIT_IGNORED: &[&str] = &[
    ".claude/projects/*/.lock",
    ".claude/projects/*/temp/",
    ".claude/projects/*/.tasks.json.validated",
    ".claude/projects/*/.project.json.validated",
    ".claude/projects/*/.tasks.json.cache",
    ".claude/projects/*/.checkpoints.validated",
];

const DRIVER_NAME: &str = "cairn semantic merge";

pub fn git(ctx: &Ctx, args: SetupGitArgs) -> Result<Report, Failure> {
    let root = &ctx.root;
    let inside = run_git(root, &["rev-parse", "--is-inside-work-tree"])?;
    if inside.as_deref() != Some("true") {
        return Err(Failure::new(
            Code::Usage,
            format!("{} is not in a git work tree", root.display()),
        )
        .with_hint("run `git init` first, or point --root at the repository"));
    }
    let driver = format!(
        "{} merge-driver %O %A %B %P",
        args.cairn.unwrap_or_else(default_cairn_command)
    );
    // The config first: a failure there leaves both files as they were.
    let config_changed = if args.remove {
        let had = run_git(root, &["config", "--get-regexp", "^merge\\.cairn\\."])?.is_some();
        if had {
            run_git_ok(root, &["config", "--remove-section", "merge.cairn"])?;
        }
        had
    } else {
        let mut changed = false;
        for (key, value) in [
            ("merge.cairn.name", DRIVER_NAME),
            ("merge.cairn.driver", &driver),
        ] {
            if run_git(root, &["config", "--get", key])?.as_deref() != Some(value) {
                run_git_ok(root, &["config", key, value])?;
                changed = true;
            }
        }
        changed
    };
    let attributes = root.join(".gitattributes");
    let ignore = root.join(".gitignore");
    let attributes_changed = edit_file(&attributes, GIT_ATTRIBUTES, args.remove)?;
    let ignore_changed = edit_file(&ignore, GIT_IGNORED, args.remove)?;
    let value = json!({
        "removed": args.remove,
        "gitattributes": {"path": attributes, "changed": attributes_changed},
        "gitignore": {"path": ignore, "changed": ignore_changed},
        "config": {"changed": config_changed, "driver": (!args.remove).then_some(&driver)},
    });
    ctx.emit(&value, |_| {
        let mark = |changed: bool| if changed { "changed" } else { "unchanged" };
        let mut out = String::new();
        if args.remove {
            out.push_str("git no longer merges cairn's files with cairn merge-driver\n");
        } else {
            out.push_str(&format!("git merges cairn's files with: {driver}\n"));
        }
        out.push_str(&format!(
            "  .gitattributes {}, .gitignore {}, git config (this clone) {}\n",
            mark(attributes_changed),
            mark(ignore_changed),
            mark(config_changed)
        ));
        if !args.remove && (attributes_changed || ignore_changed) {
            out.push_str("next: commit .gitattributes and .gitignore; each clone runs `cairn setup git` once\n");
        }
        out
    })
}

/// Whether `root` is in a git work tree whose .gitattributes does not ask for cairn's merge
/// driver: there a first commit takes the store's per-machine files (the read cache, temp/) and
/// every merge of two branches conflicts on the log, so `cairn init` says to run `cairn setup
/// git`. False where git cannot be asked.
pub fn git_not_set_up(root: &Path) -> bool {
    let asked = std::fs::read_to_string(root.join(".gitattributes"))
        .is_ok_and(|text| text.contains("merge=cairn"));
    !asked
        && run_git(root, &["rev-parse", "--is-inside-work-tree"])
            .is_ok_and(|inside| inside.as_deref() == Some("true"))
}

/// What is wrong with the git set-up of a repository whose .gitattributes asks for cairn's merge
/// driver (`merge=cairn`): the lines an older cairn did not add (git then merges those files as
/// text, and two clones conflict on them), and a clone that does not define the driver (a fresh
/// clone: git then merges every store file as text). Empty where nothing asked for the driver or
/// git cannot be asked.
pub fn git_problems(root: &Path) -> Vec<GitProblem> {
    let Ok(text) = std::fs::read_to_string(root.join(".gitattributes")) else {
        return Vec::new();
    };
    if !text.contains("merge=cairn") {
        return Vec::new();
    }
    let mut problems = Vec::new();
    let missing = missing_lines(&text, GIT_ATTRIBUTES);
    if !missing.is_empty() {
        problems.push(GitProblem {
            message: format!(
                ".gitattributes lacks cairn's merge lines {}: git merges those files as text, and two clones that both wrote them conflict",
                missing.join(", ")
            ),
            fix: "cairn setup git, then commit .gitattributes",
        });
    }
    if let Ok(None) = run_git(root, &["config", "--get", "merge.cairn.driver"]) {
        problems.push(GitProblem {
            message: "this clone does not define the cairn merge driver .gitattributes names: git merges the store's files as text".to_owned(),
            fix: "cairn setup git",
        });
    }
    problems
}

/// One of [`git_problems`]: what is wrong, and the command that puts it right.
#[derive(Debug, serde::Serialize)]
pub struct GitProblem {
    pub message: String,
    pub fix: &'static str,
}

/// Adds the missing `lines` to the file (or takes exactly them out), keeping every other line;
/// `Ok(false)` when there was nothing to do. Written atomically; a file that does not exist and
/// would stay empty is not created.
fn edit_file(path: &Path, lines: &[&str], remove: bool) -> Result<bool, Failure> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(Failure::new(
                Code::Internal,
                format!("cannot read {}: {e}", path.display()),
            ));
        }
    };
    let Some(edited) = edit_lines(&text, lines, remove) else {
        return Ok(false);
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::wiring::write_atomic(dir, path, edited.as_bytes())
        .map_err(|e| Failure::new(Code::Internal, e.to_string()))?;
    Ok(true)
}

/// Those of `lines` that are not lines of `text` (trailing blanks aside).
fn missing_lines<'l>(text: &str, lines: &[&'l str]) -> Vec<&'l str> {
    let present = |line: &str| text.lines().any(|l| l.trim_end() == line);
    lines.iter().copied().filter(|l| !present(l)).collect()
}

/// The text with `lines` appended where missing (or removed); `None` when it would not change.
fn edit_lines(text: &str, lines: &[&str], remove: bool) -> Option<String> {
    let missing = missing_lines(text, lines);
    if remove {
        if missing.len() == lines.len() {
            return None;
        }
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| !lines.contains(&l.trim_end()))
            .collect();
        return Some(if kept.is_empty() {
            String::new()
        } else {
            kept.join("\n") + "\n"
        });
    }
    if missing.is_empty() {
        return None;
    }
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    for line in missing {
        out.push_str(line);
        out.push('\n');
    }
    Some(out)
}

/// `git ARGS` in the repository: its trimmed output, or `None` when git says no (exit 1, e.g.
/// an unset key, or not a repository).
fn run_git(root: &Path, args: &[&str]) -> Result<Option<String>, Failure> {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .map_err(|e| {
            Failure::new(Code::Usage, format!("cannot run git: {e}"))
                .with_hint("install git, or put it on PATH")
        })?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
}

fn run_git_ok(root: &Path, args: &[&str]) -> Result<(), Failure> {
    run_git(root, args)?.map(|_| ()).ok_or_else(|| {
        Failure::new(
            Code::Internal,
            format!("git {} failed in {}", args.join(" "), root.display()),
        )
    })
}

/// This cairn's own path (quoted when it has spaces), so git finds the driver without PATH.
fn default_cairn_command() -> String {
    match std::env::current_exe() {
        Ok(path) => quoted(&path),
        Err(_) => "cairn".to_owned(),
    }
}

fn quoted(path: &Path) -> String {
    let text = path.display().to_string();
    if text.contains(' ') {
        format!("\"{text}\"")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::edit_lines;

    #[test]
    fn adding_keeps_other_lines_and_adds_only_what_is_missing() {
        let text = "*.png binary\nb merge=cairn";
        assert_eq!(
            edit_lines(text, &["a merge=cairn", "b merge=cairn"], false).as_deref(),
            Some("*.png binary\nb merge=cairn\na merge=cairn\n")
        );
        assert_eq!(edit_lines("a\nb\n", &["a", "b"], false), None);
    }

    #[test]
    fn removing_takes_out_exactly_those_lines() {
        assert_eq!(
            edit_lines("x\na\ny\nb\n", &["a", "b"], true).as_deref(),
            Some("x\ny\n")
        );
        assert_eq!(edit_lines("x\n", &["a"], true), None);
        assert_eq!(edit_lines("a\n", &["a"], true).as_deref(), Some(""));
    }
}
