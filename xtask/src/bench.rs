//! `cargo xtask bench [--quick]`: builds the benchmark harness and the real binaries in release
//! mode, starts a throwaway PostgreSQL for the pg group, then runs every benchmark beside its
//! floor (see `crates/bench`).

use crate::util;

pub fn run(args: &[String]) -> Result<(), String> {
    util::cargo(&[
        "build",
        "--release",
        "-p",
        "cairn-bench",
        "-p",
        "cairn-cli",
        "-p",
        "cairn-hooks",
    ])?;
    // The pg group's server, stopped when the bench ends.
    let pg = crate::pg::Cluster::start()?;
    let target = util::target_dir()?;
    let exe = |name: &str| util::built_binary(&target, "release", name);
    let mut command = std::process::Command::new(exe("cairn-bench"));
    command
        .arg("all")
        .arg("--cairn")
        .arg(exe("cairn"))
        .arg("--hook")
        .arg(exe("cairn-hook"))
        .arg("--pg")
        .arg(&pg.url)
        .args(args);
    let status = command
        .status()
        .map_err(|e| format!("could not run cairn-bench: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cairn-bench failed ({status})"))
    }
}
