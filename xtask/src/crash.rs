//! `cargo xtask crash [--kills N] [--seed S] [--power H]`: the long crash-safety run.
//!
//! Runs the SIGKILL test of `crates/storage-fs/tests/crash.rs` with `CAIRN_CRASH_KILLS=N`
//! (default 2,000; the ordinary test suite deals 200): writer processes doing project
//! transactions are killed at random moments, and after every kill the store must hold every
//! acknowledged update, parse and validate without recovery, have no stale lock, and clean its
//! debris. `--seed` replays the kill schedule a failing run printed.
//!
//! `--power H` runs the power-loss harness of `crates/storage-fs/tests/power_loss.rs` instead,
//! with `CAIRN_POWER_HISTORIES=H` random project histories (the ordinary run has 3, about 1,170
//! cuts; each history adds about 390): every syscall of each history is followed by a power cut.

const DEFAULT_KILLS: u64 = 2_000;
const TEST: &str = "sigkilled_writers_lose_no_acknowledged_update";
const POWER_TEST: &str = "every_acknowledged_update_survives_a_power_cut_after_any_syscall";
const USAGE: &str = "usage: cargo xtask crash [--kills N] [--seed S] | cargo xtask crash --power H";

pub fn run(args: &[String]) -> Result<(), String> {
    let mut kills = DEFAULT_KILLS;
    let mut seed = None;
    let mut power = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a number"))?
                .parse::<u64>()
                .map_err(|e| format!("{name}: {e}"))
        };
        match arg.as_str() {
            "--kills" => kills = value("--kills")?,
            "--seed" => seed = Some(value("--seed")?),
            "--power" => power = Some(value("--power")?),
            other => return Err(format!("unknown argument `{other}`; {USAGE}")),
        }
    }
    if let Some(histories) = power {
        return power_cuts(histories);
    }
    if kills == 0 {
        return Err("--kills must be at least 1".to_owned());
    }
    let kills = kills.to_string();
    let seed = seed.map(|s| s.to_string());
    let mut env = vec![("CAIRN_CRASH_KILLS", kills.as_str())];
    if let Some(seed) = &seed {
        env.push(("CAIRN_CRASH_SEED", seed.as_str()));
    }
    let started = std::time::Instant::now();
    crate::util::cargo_with_env(
        &[
            "test",
            "--package",
            "cairn-storage-fs",
            "--test",
            "crash",
            "--",
            "--exact",
            TEST,
            "--nocapture",
        ],
        &env,
    )?;
    eprintln!(
        "xtask crash: {kills} kills survived in {:.0?}",
        started.elapsed()
    );
    Ok(())
}

/// The power-loss harness over `histories` random histories.
fn power_cuts(histories: u64) -> Result<(), String> {
    if histories == 0 {
        return Err("--power must be at least 1".to_owned());
    }
    let histories = histories.to_string();
    let started = std::time::Instant::now();
    crate::util::cargo_with_env(
        &[
            "test",
            "--package",
            "cairn-storage-fs",
            "--test",
            "power_loss",
            "--",
            "--exact",
            POWER_TEST,
            "--nocapture",
        ],
        &[("CAIRN_POWER_HISTORIES", histories.as_str())],
    )?;
    eprintln!(
        "xtask crash: power cuts over {histories} histories survived in {:.0?}",
        started.elapsed()
    );
    Ok(())
}
