//! Crash tests: a child process dies at a named failpoint (or is `kill -9`ed), and a fresh look
//! at the files must find every durability promise kept.
//!
//! This target has its own `main` (`harness = false`). Run normally it is the parent and runs each
//! scenario; it re-executes itself with `CAIRN_CRASH_CHILD=<role>` (and `CAIRN_FAILPOINT`) to get
//! a child that performs one operation and aborts where told. Failpoints are read once per
//! process, which is why every crash needs its own child.

// This file is its own test harness: reporting results on stdout is its job.
#![allow(clippy::print_stdout)]

use cairn_domain::StoreError;
use cairn_domain::log::LogRecord;
use cairn_storage_fs::{atomic, checkpoints, lock, progress_log};
use chrono::TimeZone;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime};

const CHILD_ENV: &str = "CAIRN_CRASH_CHILD";
const OLD: &[u8] = b"{\"tasks\": [\"old\"]}\n";
const NEW: &[u8] = b"{\"tasks\": [\"new\", \"and longer\"]}\n";

fn main() {
    if let Ok(role) = std::env::var(CHILD_ENV) {
        let dir = PathBuf::from(std::env::args_os().nth(1).expect("child needs a directory"));
        child(&role, &dir);
        return;
    }

    let scenarios: &[(&str, fn())] = &[
        (
            "atomic write without a failpoint completes",
            atomic_write_completes,
        ),
        (
            "atomic write crashing at each step leaves old or new, whole",
            atomic_write_crashes,
        ),
        (
            "log append crashing before fsync keeps the entry parsable",
            log_append_crash,
        ),
        (
            "checkpoint crashing after the link is complete and cleanable",
            checkpoint_crash,
        ),
        (
            "a kill -9ed lock holder leaves no stale lock",
            killed_lock_holder,
        ),
    ];
    let mut failed = 0;
    for (name, scenario) in scenarios {
        let outcome = std::panic::catch_unwind(scenario);
        println!(
            "test {name} ... {}",
            if outcome.is_ok() { "ok" } else { "FAILED" }
        );
        failed += usize::from(outcome.is_err());
    }
    println!(
        "\ncrash tests: {} passed; {failed} failed",
        scenarios.len() - failed
    );
    if failed > 0 {
        std::process::exit(1);
    }
}

fn record() -> LogRecord {
    let at = chrono::Utc
        .with_ymd_and_hms(2026, 11, 22, 2, 20, 44)
        .unwrap();
    LogRecord::new(at, "TASK_COMPLETE")
        .with("task", "T-002")
        .with("actual_minutes", 12)
}

/// What the child does; it only returns if no failpoint fired.
fn child(role: &str, dir: &Path) {
    match role {
        "atomic" => atomic::write_atomic(&dir.join("temp"), &dir.join("tasks.json"), NEW).unwrap(),
        "log" => progress_log::append(&dir.join("log.md"), &record()).unwrap(),
        "checkpoint" => {
            checkpoints::create_next(&dir.join("temp"), &dir.join("checkpoints"), NEW).unwrap();
        }
        "hold-lock" => {
            let _guard = lock::lock_exclusive(&dir.join(".lock"), Duration::from_secs(5)).unwrap();
            let mut out = std::io::stdout();
            writeln!(out, "locked").unwrap();
            out.flush().unwrap();
            std::thread::sleep(Duration::from_secs(120));
        }
        other => panic!("unknown child role {other}"),
    }
}

fn run_child(role: &str, dir: &Path, failpoint: Option<&str>) -> ExitStatus {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .arg(dir)
        .env(CHILD_ENV, role)
        .env_remove("CAIRN_FAILPOINT")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(name) = failpoint {
        command.env("CAIRN_FAILPOINT", name);
    }
    command.status().unwrap()
}

fn assert_aborted(status: ExitStatus, at: &str) {
    assert!(!status.success(), "the child should have died at {at}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(6),
            "the child should have died of SIGABRT at {at}: {status:?}"
        );
    }
}

fn debris(temp: &Path) -> Vec<PathBuf> {
    match fs::read_dir(temp) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

fn atomic_write_completes() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("tasks.json"), OLD).unwrap();
    assert!(run_child("atomic", dir.path(), None).success());
    assert_eq!(fs::read(dir.path().join("tasks.json")).unwrap(), NEW);
    assert!(debris(&dir.path().join("temp")).is_empty());
}

fn atomic_write_crashes() {
    /// A crash point, the content the target must have afterwards, and the content of the temp
    /// file the crash leaves behind, if any.
    struct Case {
        failpoint: &'static str,
        target: &'static [u8],
        leftover: Option<&'static [u8]>,
    }
    let cases = [
        Case {
            failpoint: "atomic:after-temp-create",
            target: OLD,
            leftover: Some(b""),
        },
        Case {
            failpoint: "atomic:after-temp-write",
            target: OLD,
            leftover: Some(NEW),
        },
        Case {
            failpoint: "atomic:after-temp-fsync",
            target: OLD,
            leftover: Some(NEW),
        },
        Case {
            failpoint: "atomic:after-rename",
            target: NEW,
            leftover: None,
        },
        Case {
            failpoint: "atomic:after-dir-fsync",
            target: NEW,
            leftover: None,
        },
    ];
    for Case {
        failpoint,
        target: target_content,
        leftover,
    } in cases
    {
        let dir = tempfile::tempdir().unwrap();
        let (temp, target) = (dir.path().join("temp"), dir.path().join("tasks.json"));
        fs::write(&target, OLD).unwrap();

        assert_aborted(run_child("atomic", dir.path(), Some(failpoint)), failpoint);

        assert_eq!(
            fs::read(&target).unwrap(),
            target_content,
            "target after a crash at {failpoint}"
        );
        let left = debris(&temp);
        match leftover {
            Some(content) => {
                assert_eq!(
                    left.len(),
                    1,
                    "one temp file left by a crash at {failpoint}: {left:?}"
                );
                let name = left[0].file_name().unwrap().to_string_lossy().into_owned();
                assert!(name.starts_with(atomic::TEMP_PREFIX), "{name}");
                assert_eq!(
                    fs::read(&left[0]).unwrap(),
                    content,
                    "temp file after a crash at {failpoint}"
                );
            }
            None => assert!(
                left.is_empty(),
                "no temp file after a crash at {failpoint}: {left:?}"
            ),
        }

        // Debris is only collected once it is old enough to be abandoned.
        assert!(
            atomic::remove_debris(&temp, SystemTime::now(), atomic::DEBRIS_MAX_AGE)
                .unwrap()
                .is_empty()
        );
        let later = SystemTime::now() + atomic::DEBRIS_MAX_AGE + Duration::from_secs(1);
        assert_eq!(
            atomic::remove_debris(&temp, later, atomic::DEBRIS_MAX_AGE).unwrap(),
            left
        );
        assert!(debris(&temp).is_empty());
        assert_eq!(
            fs::read(&target).unwrap(),
            target_content,
            "cleaning debris never touches the target"
        );
    }
}

fn log_append_crash() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.md");
    let first = LogRecord::new(record().at, "TASK_STARTED").with("task", "T-001");
    progress_log::append(&log, &first).unwrap();

    assert_aborted(
        run_child("log", dir.path(), Some("log:after-append")),
        "log:after-append",
    );

    let read = progress_log::read_all(&log).unwrap();
    assert_eq!(read.records, vec![first, record()]);
    assert_eq!(read.torn_tail, None);
    assert!(read.skipped.is_empty());
}

fn checkpoint_crash() {
    let dir = tempfile::tempdir().unwrap();
    let (temp, checkpoint_dir) = (dir.path().join("temp"), dir.path().join("checkpoints"));

    assert_aborted(
        run_child("checkpoint", dir.path(), Some("checkpoint:after-link")),
        "checkpoint:after-link",
    );

    assert_eq!(
        checkpoints::read(&checkpoint_dir, 1).unwrap(),
        NEW,
        "the linked snapshot is whole"
    );
    let left = debris(&temp);
    assert_eq!(left.len(), 1, "the staging file is left behind: {left:?}");
    let later = SystemTime::now() + atomic::DEBRIS_MAX_AGE + Duration::from_secs(1);
    assert_eq!(
        atomic::remove_debris(&temp, later, atomic::DEBRIS_MAX_AGE).unwrap(),
        left
    );
    assert_eq!(
        checkpoints::read(&checkpoint_dir, 1).unwrap(),
        NEW,
        "removing the other link keeps the snapshot"
    );
    assert_eq!(
        checkpoints::create_next(&temp, &checkpoint_dir, OLD)
            .unwrap()
            .number,
        2
    );
}

fn killed_lock_holder() {
    let dir = tempfile::tempdir().unwrap();
    let lock_path = dir.path().join(".lock");
    let mut holder = Command::new(std::env::current_exe().unwrap())
        .arg(dir.path())
        .env(CHILD_ENV, "hold-lock")
        .env_remove("CAIRN_FAILPOINT")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(
        line, "locked\n",
        "the holder reports that it holds the lock"
    );

    match lock::lock_exclusive(&lock_path, Duration::from_millis(200)) {
        Err(StoreError::LockTimeout { .. }) => {}
        other => panic!("the lock should be held by the child, got {other:?}"),
    }

    holder.kill().unwrap(); // SIGKILL: no destructor runs, no unlock call is made.
    holder.wait().unwrap();

    let started = Instant::now();
    let guard = lock::lock_exclusive(&lock_path, Duration::from_secs(5)).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
    drop(guard);
}
