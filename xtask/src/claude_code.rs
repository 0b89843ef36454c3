//! `cargo xtask claude-code`: installs the pinned Claude Code CLI that the end-to-end suite in
//! `tests/claude` runs cairn inside, and prints its version.
//!
//! The pin is `tests/claude/npm/package.json` + `package-lock.json` (committed, so the version
//! and its integrity hashes change only in review). They are copied to
//! `<target>/claude-code/` and installed there with `npm ci --ignore-scripts` ([`npm::Pin`]): the registry
//! package carries the native binary in a per-platform optional dependency, and the package's
//! postinstall script (which only hard-links that binary into place, and wants a newer node than
//! a CI machine may have) is not needed, because this job resolves the binary itself and writes
//! its path to `<target>/claude-code/bin-path`, where the suite reads it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{npm, util};

/// The file the suite reads the binary's path from (relative to the install directory).
const BIN_PATH_FILE: &str = "bin-path";

/// The committed pin and where it is installed.
const PIN: npm::Pin = npm::Pin {
    pin: "tests/claude/npm",
    dir: "claude-code",
};

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

/// The binary an install recorded, if it is still there.
fn recorded(dir: &Path) -> Option<PathBuf> {
    let path = fs::read_to_string(dir.join(BIN_PATH_FILE)).ok()?;
    let path = PathBuf::from(path.trim());
    path.is_file().then_some(path)
}

/// Installs the pinned Claude Code under `target/claude-code` unless that exact install is
/// there already; returns the native binary.
pub fn install(target: &Path) -> Result<PathBuf, String> {
    let dir = PIN.install(
        target,
        |dir| recorded(dir).is_some(),
        |dir| {
            let binary = native_binary(&dir.join("node_modules").join("@anthropic-ai"))?;
            fs::write(dir.join(BIN_PATH_FILE), format!("{}\n", binary.display()))
                .map_err(|e| format!("write {}: {e}", dir.join(BIN_PATH_FILE).display()))
        },
    )?;
    recorded(&dir).ok_or_else(|| format!("{} names no binary", dir.join(BIN_PATH_FILE).display()))
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
