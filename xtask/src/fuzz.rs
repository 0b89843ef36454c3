//! `cargo xtask fuzz [--minutes N | --seconds S]`: long fuzz runs of every parser (issue #16).
//!
//! The stable toolchain has no libFuzzer, so the targets are proptest properties over arbitrary
//! bytes and structured mutations of valid files, in one `tests/fuzz.rs` per crate
//! (`crates/storage-fs/tests/fuzz.rs`, `crates/hooks/tests/fuzz.rs`). The ordinary test run
//! gives each target a few dozen cases; this job lists the targets (the tests outside a
//! `pinned::` module), splits the wall-clock budget evenly between them and runs them with
//! `CAIRN_FUZZ_SECONDS`, printing each target's case count. `cargo xtask ci` runs a short budget.

use std::process::Command;

use crate::util;

const DEFAULT_MINUTES: f64 = 10.0;
/// The budget `cargo xtask ci` spends (it also pays for building the two test binaries).
pub const CI_SECONDS: f64 = 40.0;
/// Cases per batch: small, so a target stops close to its deadline even when a case does I/O.
const BATCH: &str = "32";
/// Targets run two at a time: the machines CI uses have two cores.
const THREADS: usize = 2;

/// The test binaries holding fuzz targets: (package, test name).
const SUITES: [(&str, &str); 2] = [("cairn-storage-fs", "fuzz"), ("cairn-hooks", "fuzz")];

pub fn run(args: &[String]) -> Result<(), String> {
    let mut seconds = DEFAULT_MINUTES * 60.0;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a number"))?
                .parse::<f64>()
                .map_err(|e| format!("{name}: {e}"))
        };
        match arg.as_str() {
            "--minutes" => seconds = value("--minutes")? * 60.0,
            "--seconds" => seconds = value("--seconds")?,
            other => {
                return Err(format!(
                    "unknown argument `{other}`; usage: cargo xtask fuzz [--minutes N | --seconds S]"
                ));
            }
        }
    }
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err("the budget must be a positive number".to_owned());
    }
    budgeted(seconds)
}

/// Runs every fuzz target for a share of `seconds` of wall-clock time.
pub fn budgeted(seconds: f64) -> Result<(), String> {
    let mut suites = Vec::new();
    for (package, test) in SUITES {
        suites.push((package, test, targets(package, test)?));
    }
    let count: usize = suites.iter().map(|(_, _, t)| t.len()).sum();
    if count == 0 {
        return Err("no fuzz targets found".to_owned());
    }
    // Targets run THREADS at a time, so each one may take THREADS shares of the budget.
    let share = seconds * THREADS as f64 / count as f64;
    eprintln!("xtask fuzz: {count} targets, {share:.1}s each, {seconds:.0}s in all");
    let share = format!("{share:.3}");
    let threads = format!("--test-threads={THREADS}");
    let started = std::time::Instant::now();
    for (package, test, targets) in &suites {
        let mut args = vec!["test", "--package", package, "--test", test, "--"];
        args.extend([threads.as_str(), "--nocapture", "--exact"]);
        args.extend(targets.iter().map(String::as_str));
        util::cargo_with_env(
            &args,
            &[
                ("CAIRN_FUZZ_SECONDS", share.as_str()),
                ("CAIRN_FUZZ_CASES", BATCH),
                // A panic inside a case is expected while shrinking; its backtrace is noise.
                ("RUST_BACKTRACE", "0"),
            ],
        )?;
    }
    eprintln!(
        "xtask fuzz: {count} targets, no panic, every property held ({:.0?})",
        started.elapsed()
    );
    Ok(())
}

/// The fuzz targets of one test binary: every test but the pinned inputs.
fn targets(package: &str, test: &str) -> Result<Vec<String>, String> {
    let args = util::locked(&[
        "test",
        "--package",
        package,
        "--test",
        test,
        "--",
        "--list",
        "--format",
        "terse",
    ]);
    let output = Command::new(util::cargo_bin())
        .args(&args)
        .current_dir(util::root())
        .output()
        .map_err(|e| format!("could not run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "listing the fuzz targets of {package} failed:\n{}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .filter(|name| !name.starts_with("pinned::"))
        .map(str::to_owned)
        .collect())
}
