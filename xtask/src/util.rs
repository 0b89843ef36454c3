//! Small helpers shared by the jobs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (xtask lives one level below it).
pub fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

pub fn cargo_bin() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// Runs `cargo <args>` in the workspace root, inheriting stdio.
pub fn cargo(args: &[&str]) -> Result<(), String> {
    cargo_with_env(args, &[])
}

/// Runs `cargo <args>` in the workspace root with extra environment variables (which the tests
/// it runs inherit), inheriting stdio.
pub fn cargo_with_env(args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    let args = locked(args);
    let shown: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    eprintln!("$ {}cargo {}", shown.concat(), args.join(" "));
    let status = Command::new(cargo_bin())
        .args(&args)
        .envs(env.iter().copied())
        .current_dir(root())
        .status()
        .map_err(|e| format!("could not run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

/// `args` with `--locked` after the subcommand, so no job can silently resolve different
/// dependency versions than Cargo.lock records (CI must test what is committed). `fmt` takes no
/// such flag; `nextest run` takes it after `run`.
pub fn locked<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut out = args.to_vec();
    let at = match args.first() {
        None | Some(&"fmt") => return out,
        Some(&"nextest") => 2.min(args.len()),
        Some(_) => 1,
    };
    if !args[..args.iter().position(|a| *a == "--").unwrap_or(args.len())].contains(&"--locked") {
        out.insert(at, "--locked");
    }
    out
}

pub fn has_nextest() -> bool {
    Command::new(cargo_bin())
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `cargo metadata` for the workspace's own packages, parsed.
pub fn metadata() -> Result<serde_json::Value, String> {
    let output = Command::new(cargo_bin())
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .current_dir(root())
        .output()
        .map_err(|e| format!("could not run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo metadata` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("`cargo metadata` printed something that is not JSON: {e}"))
}

/// Where cargo puts build output. Cargo itself is asked, so `CARGO_TARGET_DIR`, `build.target-dir`
/// in any config file and the default `./target` all resolve the way the build did.
pub fn target_dir() -> Result<PathBuf, String> {
    metadata()?
        .get("target_directory")
        .and_then(|d| d.as_str())
        .map(PathBuf::from)
        .ok_or_else(|| "`cargo metadata` did not say where the target directory is".to_owned())
}

/// The path of binary `name` built in `profile` ("debug" or "release").
pub fn built_binary(target_dir: &Path, profile: &str, name: &str) -> PathBuf {
    target_dir
        .join(profile)
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// Every `.rs` file under `dir`, sorted, skipping build output.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if entry.file_name() != "target" {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::locked;

    #[test]
    fn every_cargo_invocation_is_locked_except_fmt() {
        assert_eq!(
            locked(&["build", "-p", "x"]),
            ["build", "--locked", "-p", "x"]
        );
        assert_eq!(
            locked(&["nextest", "run", "--workspace"]),
            ["nextest", "run", "--locked", "--workspace"]
        );
        assert_eq!(
            locked(&["test", "--", "--locked"]),
            ["test", "--locked", "--", "--locked"]
        );
        assert_eq!(locked(&["clippy", "--locked"]), ["clippy", "--locked"]);
        assert_eq!(locked(&["fmt", "--all"]), ["fmt", "--all"]);
    }
}
