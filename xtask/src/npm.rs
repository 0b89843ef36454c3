//! Installing a pinned npm package set under the target directory, for the suites that run a
//! real node program (Claude Code in `tests/claude`, the MCP TypeScript SDK's client in
//! `tests/cli/mcp_node.rs`).
//!
//! A pin is a committed directory holding `package.json` + `package-lock.json` (so versions and
//! their integrity hashes change only in review). They are copied to `<target>/<name>/` and
//! installed there with `npm ci --ignore-scripts`: no install script of a dependency runs, and the
//! result is exactly the lock file. An install whose stamp equals the committed lock file (and
//! whose caller says its product is still there) is kept: the job costs nothing on a warm machine.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;

/// A copy of the lock file of the last complete install: equal to the committed one means done.
const INSTALLED_STAMP: &str = "installed.lock";

/// One pinned package set: the committed pin directory (relative to the workspace root) and the
/// directory under the target directory it is installed in.
pub struct Pin {
    pub pin: &'static str,
    pub dir: &'static str,
}

impl Pin {
    /// Where this pin is installed under `target`.
    pub fn dir(&self, target: &Path) -> PathBuf {
        target.join(self.dir)
    }

    /// Installs the pin under `target` unless that exact install is there and `kept` says its
    /// product still is; `finish` runs after a fresh `npm ci` (to record what the suite reads)
    /// and before the stamp is written, so a failed `finish` is retried next time. Returns the
    /// install directory.
    pub fn install(
        &self,
        target: &Path,
        kept: impl Fn(&Path) -> bool,
        finish: impl FnOnce(&Path) -> Result<(), String>,
    ) -> Result<PathBuf, String> {
        let pin = util::root().join(self.pin);
        let dir = self.dir(target);
        let lock = read(&pin.join("package-lock.json"))?;
        let stamp = dir.join(INSTALLED_STAMP);
        if fs::read(&stamp).is_ok_and(|installed| installed == lock) && kept(&dir) {
            return Ok(dir);
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
        finish(&dir)?;
        fs::write(&stamp, lock).map_err(|e| format!("write {}: {e}", stamp.display()))?;
        Ok(dir)
    }
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))
}
