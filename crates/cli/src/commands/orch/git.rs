//! The files git says changed, for `orch resume` to compare with the phases' manifests. Git runs
//! as a subprocess here, on the CLI side: the domain only compares lists.

use std::path::Path;
use std::process::Command;

use cairn_domain::time::Timestamp;

/// Paths (relative to the work tree's top, `/`-separated) changed in the work tree — staged,
/// unstaged or untracked — or in a commit made after `since`. Err says why git could not tell.
pub fn changed_paths(root: &Path, since: Timestamp) -> Result<Vec<String>, String> {
    let status = git(
        root,
        &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
    )?;
    let mut paths = Vec::new();
    let mut records = status.split('\0').filter(|r| !r.is_empty());
    while let Some(record) = records.next() {
        let (code, path) = record.split_at(record.len().min(3));
        paths.push(path.to_owned());
        // A rename or copy is followed by its source path, which changed too.
        if code.starts_with(['R', 'C'])
            && let Some(source) = records.next()
        {
            paths.push(source.to_owned());
        }
    }
    let log = git(
        root,
        &[
            "log",
            &format!("--since={}", since.to_rfc3339()),
            "--name-only",
            "--pretty=format:",
        ],
    )
    // A repository without commits has no log: only the work tree changed.
    .unwrap_or_default();
    paths.extend(
        log.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned),
    );
    let mut seen = std::collections::BTreeSet::new();
    paths.retain(|p| seen.insert(p.clone()));
    Ok(paths)
}

fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "core.quotePath=false"])
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "git {} failed: {}",
            args.first().copied().unwrap_or_default(),
            stderr.trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
