//! `cairn session task done` measured through the real binary: one command that appends the
//! session's `task_log.md` row, rewrites `progress.md` (through the write-ahead intent) and moves
//! the project task to COMPLETE — three stores' worth of writes, beside a process that rewrites
//! tasks.json alone.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::fixture;
use crate::stats::Stats;

/// Runs a cairn command that is set-up, not measured; the task-list pointer `session start`
/// writes goes under `root`, never the user's home.
fn setup(cairn: &Path, root: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new(cairn)
        .arg("--root")
        .arg(root)
        .args(args)
        .env("CLAUDE_CONFIG_DIR", root.join(".bench-claude"))
        .output()
        .map_err(|e| format!("cairn {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cairn {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// `iters` samples of `session task done` in a session over `iters` of the fixture's ready tasks,
/// each started beforehand. The session is finished afterwards, so later rows (the hook's
/// SessionStart) see the project as before.
pub fn measure(cairn: &Path, root: &Path, iters: usize) -> Result<Stats, String> {
    let ids: Vec<String> = (0..iters)
        .map(|i| fixture::session_task(i).to_string())
        .collect();
    setup(
        cairn,
        root,
        &["session", "start", "--tasks", &ids.join(",")],
    )?;
    for id in &ids {
        setup(cairn, root, &["session", "task", "start", id])?;
    }
    let mut samples = Vec::with_capacity(iters);
    for id in &ids {
        let start = Instant::now();
        let out = Command::new(cairn)
            .arg("--root")
            .arg(root)
            .args(["session", "task", "done", id, "--duration", "1m"])
            .output()
            .map_err(|e| format!("cairn session task done: {e}"))?;
        samples.push(start.elapsed());
        if !out.status.success() {
            return Err(format!(
                "cairn session task done {id} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    setup(cairn, root, &["session", "finish"])?;
    Ok(Stats::new(samples))
}
