//! `cargo xtask demo [--keep DIR]`: builds cairn and runs a real session on a scratch git
//! repository — a project, tasks with dependencies, a refused transition, decomposition, the
//! completion cascade, the hook guarding a state file and priming a new session — printing every
//! command and its real output.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::util;

pub fn run(args: &[String]) -> Result<(), String> {
    util::cargo(&["build", "--quiet", "-p", "cairn-cli", "-p", "cairn-hooks"])?;
    let target = util::target_dir()?;
    let keep = args
        .iter()
        .position(|a| a == "--keep")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let scratch = std::env::temp_dir().join(format!("cairn-demo-{}", std::process::id()));
    let repo = keep.clone().unwrap_or(scratch);
    if repo.exists() {
        std::fs::remove_dir_all(&repo)
            .map_err(|e| format!("cannot clear {}: {e}", repo.display()))?;
    }
    std::fs::create_dir_all(repo.join(".git")).map_err(|e| e.to_string())?;
    let demo = Demo {
        cairn: util::built_binary(&target, "debug", "cairn"),
        hook: util::built_binary(&target, "debug", "cairn-hook"),
        repo: repo.clone(),
    };
    let result = demo.script();
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&repo);
    } else {
        println!("\nThe repository is kept at {}", repo.display());
    }
    result
}

struct Demo {
    cairn: PathBuf,
    hook: PathBuf,
    repo: PathBuf,
}

impl Demo {
    fn script(&self) -> Result<(), String> {
        println!(
            "cairn demo in a scratch repository: {}\n",
            self.repo.display()
        );
        self.cairn(
            &[
                "init",
                "--id",
                "web-app",
                "--name",
                "Web app",
                "--goal",
                "Ship the first public release",
            ],
            0,
        )?;
        self.cairn(
            &[
                "task",
                "add",
                "Design the API",
                "--priority",
                "HIGH",
                "--estimate",
                "60",
                "--criterion",
                "Endpoints documented in docs/api.md",
            ],
            0,
        )?;
        self.cairn(
            &[
                "task",
                "add",
                "Build the API",
                "--depends",
                "T-001",
                "--estimate",
                "120",
            ],
            0,
        )?;
        self.cairn(
            &[
                "task",
                "add",
                "Write the user guide",
                "--depends",
                "T-002",
                "--estimate",
                "90",
            ],
            0,
        )?;
        self.cairn(&["task", "next"], 0)?;
        self.note("Starting work whose dependency is unfinished is refused (exit 4), and nothing changes:");
        self.cairn(&["task", "start", "T-002"], 4)?;
        self.cairn(&["task", "start", "T-001"], 0)?;
        self.cairn(&["task", "complete", "T-001", "--actual", "45"], 0)?;
        self.note("Too big? Split it; the parent completes by itself when its subtasks do:");
        self.cairn(
            &[
                "task",
                "decompose",
                "T-002",
                "--into",
                "Routes",
                "--into",
                "Handlers",
            ],
            0,
        )?;
        self.cairn(&["task", "waves"], 0)?;
        for id in ["T-004", "T-005"] {
            self.cairn(&["task", "start", id], 0)?;
            self.cairn(&["task", "complete", id], 0)?;
        }
        self.note("Claude Code runs cairn-hook on every tool call. A direct edit of a state file is denied:");
        let tasks = self.repo.join(".claude/projects/web-app/tasks.json");
        let edit = serde_json::json!({
            "session_id": "demo", "transcript_path": "/tmp/demo.jsonl", "cwd": self.repo,
            "hook_event_name": "PreToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": tasks, "old_string": "PENDING", "new_string": "COMPLETE"}
        });
        self.hook(&edit)?;
        self.note("A new session starts with the project's state in its context:");
        let start = serde_json::json!({
            "session_id": "demo-2", "transcript_path": "/tmp/demo.jsonl", "cwd": self.repo,
            "hook_event_name": "SessionStart", "source": "startup"
        });
        self.hook(&start)?;
        self.cairn(&["status"], 0)?;
        self.cairn(&["log", "--tail", "4"], 0)?;
        Ok(())
    }

    fn note(&self, text: &str) {
        println!("# {text}");
    }

    fn cairn(&self, args: &[&str], expected: i32) -> Result<(), String> {
        let shown: Vec<String> = args
            .iter()
            .map(|a| {
                if a.contains(' ') {
                    format!("\"{a}\"")
                } else {
                    (*a).to_owned()
                }
            })
            .collect();
        println!("$ cairn {}", shown.join(" "));
        let out = Command::new(&self.cairn)
            .args(args)
            .current_dir(&self.repo)
            .env("NO_COLOR", "1")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("CAIRN_PROJECT")
            .output()
            .map_err(|e| format!("cannot run cairn: {e}"))?;
        print!("{}", String::from_utf8_lossy(&out.stdout));
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        let code = out.status.code().unwrap_or(-1);
        if code != expected {
            return Err(format!(
                "`cairn {}` exited {code}, expected {expected}",
                args.join(" ")
            ));
        }
        if code != 0 {
            println!("(exit {code})");
        }
        println!();
        Ok(())
    }

    fn hook(&self, payload: &serde_json::Value) -> Result<(), String> {
        println!(
            "$ echo '{{\"hook_event_name\": \"{}\", …}}' | cairn-hook",
            payload["hook_event_name"].as_str().unwrap_or("")
        );
        let mut child = Command::new(&self.hook)
            .current_dir(&self.repo)
            .env("CLAUDE_PROJECT_DIR", &self.repo)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run cairn-hook: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(payload.to_string().as_bytes())
                .map_err(|e| e.to_string())?;
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout);
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(value) => println!(
                "{}",
                serde_json::to_string_pretty(&value).unwrap_or_default()
            ),
            Err(_) => print!("{text}"),
        }
        println!();
        Ok(())
    }
}
