//! `cargo xtask claude-code`: installs the pinned Claude Code CLI that the end-to-end suite in
//! `tests/claude` runs cairn inside, and prints its version.
//!
//! The pin is `tests/claude/npm/package.json` + `package-lock.json` (committed, so the version
//! and its integrity hashes change only in review). They are copied to
//! `<target>/claude-code/` and installed there with `npm ci --ignore-scripts`: the registry
//! package carries the native binary in a per-platform optional dependency, and the package's
//! postinstall script (which only hard-links that binary into place, and wants a newer node than
//! a CI machine may have) is not needed, because this job resolves the binary itself and writes
//! its path to `<target>/claude-code/bin-path`, where the suite reads it. An install whose lock
//! file equals the committed one is kept: the job costs nothing on a warm machine.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;

/// The file the suite reads the binary's path from (relative to the install directory).
const BIN_PATH_FILE: &str = "bin-path";
/// A copy of the lock file of the last complete install: equal to the committed one means done.
const INSTALLED_STAMP: &str = "installed.lock";

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(arg) = args.first() {
        return Err(format!(
            "unknown argument `{arg}`; usage: cargo xtask claude-code"
        ));
    }
    let binary = install(&util::target_dir()?)?;
    let version = Command::new(&binary)
        .arg("--version")
        .output()
        .map_err(|e| format!("could not run {}: {e}", binary.display()))?;
    if !version.status.success() {
        return Err(format!(
            "{} --version failed ({}): {}",
            binary.display(),
            version.status,
            String::from_utf8_lossy(&version.stderr).trim()
        ));
    }
    eprintln!(
        "Claude Code {} at {}",
        String::from_utf8_lossy(&version.stdout).trim(),
        binary.display()
    );
    Ok(())
}

/// Installs the pinned Claude Code under `target/claude-code` unless that exact install is
/// there already; returns the native binary.
pub fn install(target: &Path) -> Result<PathBuf, String> {
    let pin = util::root().join("tests").join("claude").join("npm");
    let dir = target.join("claude-code");
    let lock = read(&pin.join("package-lock.json"))?;
    let stamp = dir.join(INSTALLED_STAMP);
    if fs::read(&stamp).is_ok_and(|installed| installed == lock)
        && let Ok(path) = fs::read_to_string(dir.join(BIN_PATH_FILE))
        && Path::new(path.trim()).is_file()
    {
        return Ok(PathBuf::from(path.trim()));
    }
    fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    // A half-finished earlier install must not pass for a whole one.
    let _ = fs::remove_file(&stamp);
    for name in ["package.json", "package-lock.json"] {
        fs::write(dir.join(name), read(&pin.join(name))?)
            .map_err(|e| format!("write {}: {e}", dir.join(name).display()))?;
    }
    let npm = if cfg!(windows) { "npm.cmd" } else { "npm" };
    eprintln!("$ (cd {} && npm ci --ignore-scripts)", dir.display());
    let status = Command::new(npm)
        .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
        .current_dir(&dir)
        .status()
        .map_err(|e| format!("could not run npm (is node installed?): {e}"))?;
    if !status.success() {
        return Err(format!("`npm ci` in {} failed ({status})", dir.display()));
    }
    let binary = native_binary(&dir.join("node_modules").join("@anthropic-ai"))?;
    let text = binary.display().to_string();
    fs::write(dir.join(BIN_PATH_FILE), format!("{text}\n"))
        .map_err(|e| format!("write {}: {e}", dir.join(BIN_PATH_FILE).display()))?;
    fs::write(&stamp, lock).map_err(|e| format!("write {}: {e}", stamp.display()))?;
    Ok(binary)
}

/// This machine as npm names it in the platform packages (`linux`, `x64`, …).
fn npm_platform() -> (&'static str, &'static str) {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    (os, arch)
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))
}

/// The platform package npm picked (`claude-code-linux-x64`, `…-linux-x64-musl`, …): npm
/// installs only the optional dependency whose os/cpu/libc match, so the one present is right.
fn native_binary(scope: &Path) -> Result<PathBuf, String> {
    let (os, arch) = npm_platform();
    let file = if cfg!(windows) {
        "claude.exe"
    } else {
        "claude"
    };
    let candidates: Vec<PathBuf> = ["", "-musl"]
        .iter()
        .map(|libc| {
            scope
                .join(format!("claude-code-{os}-{arch}{libc}"))
                .join(file)
        })
        .collect();
    candidates
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .ok_or_else(|| {
            format!(
                "npm installed no Claude Code binary for {os}-{arch}; looked for {}",
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("cairn-xtask-cc-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn platform_dir(scope: &Path, libc: &str) -> PathBuf {
        let (os, arch) = npm_platform();
        scope.join(format!("claude-code-{os}-{arch}{libc}"))
    }

    #[test]
    fn the_platform_package_npm_installed_is_found_glibc_or_musl() {
        let file = if cfg!(windows) {
            "claude.exe"
        } else {
            "claude"
        };
        for libc in ["", "-musl"] {
            let scope = scratch(&format!("found{libc}"));
            let dir = platform_dir(&scope, libc);
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join(file), b"binary").unwrap();
            assert_eq!(native_binary(&scope).unwrap(), dir.join(file));
            let _ = fs::remove_dir_all(&scope);
        }
    }

    #[test]
    fn no_platform_package_is_an_error_naming_where_it_looked() {
        let scope = scratch("missing");
        let err = native_binary(&scope).unwrap_err();
        assert!(
            err.contains("no Claude Code binary") && err.contains("-musl"),
            "{err}"
        );
        let _ = fs::remove_dir_all(&scope);
    }
}
