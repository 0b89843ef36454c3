//! Crash tests with real processes: a child dies at a named failpoint (SIGABRT), is SIGKILLed at
//! a random moment, or runs out of file size, and a fresh look at the files must find every
//! durability promise kept.
//!
//! **How the children are made.** Every child is this same test binary, re-executed (see
//! `support/mod.rs`, shared with the other tests that need processes, and
//! [`child_process_entry`]). Failpoints are read once per process, which is one reason each crash
//! gets its own child; the other is that only a real process can be SIGKILLed.
//!
//! **Knobs.** `CAIRN_CRASH_KILLS` sets how many writers the SIGKILL test kills (default
//! [`DEFAULT_KILLS`]; `cargo xtask crash --kills N` sets it), `CAIRN_CRASH_SEED` replays the
//! random kill schedule a failure printed.

// The signals are the point of these tests; Windows has neither SIGKILL nor SIGABRT semantics.
#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use cairn_domain::log::LogRecord;
use cairn_domain::project::service::{InitProject, ProjectService};
use cairn_domain::project::{
    MoveDetail, NewTask, ProjectId, ProjectState, ProjectType, TaskId, TaskStatus,
};
use cairn_domain::{Error, StoreError};
use cairn_storage_fs::failpoints::FAILPOINT_ENV;
use cairn_storage_fs::layout::ProjectLayout;
use cairn_storage_fs::schema::{self, SchemaKind};
use cairn_storage_fs::{FsProjectStore, SystemClock, atomic, checkpoints, lock, progress_log};
use chrono::TimeZone;

mod support;
use support::{ChildCall, block_on, child_call, child_command, describe};

/// How many SIGKILLs [`sigkilled_writers_lose_no_acknowledged_update`] deals.
const KILLS_ENV: &str = "CAIRN_CRASH_KILLS";
/// Replays a kill schedule.
const SEED_ENV: &str = "CAIRN_CRASH_SEED";

const DEFAULT_KILLS: usize = 200;
const PROJECT: &str = "demo";
const SIGABRT: i32 = 6;
const SIGKILL: i32 = 9;

const OLD: &[u8] = b"{\"tasks\": [\"old\"]}\n";
const NEW: &[u8] = b"{\"tasks\": [\"new\", \"and longer\"]}\n";

// ---------------------------------------------------------------------------------------------
// The child side.

/// The body of every child process; a no-op when run as an ordinary test.
///
/// The parent tests start children by re-executing this binary with `--exact
/// child_process_entry` and `CAIRN_CRASH_CHILD=<role>`, which works the same under `cargo test`
/// and nextest. Without that variable (the ordinary run of the suite, which lists every test) it
/// returns at once and passes, doing nothing.
#[test]
fn child_process_entry() {
    let Some(ChildCall { role, dir, arg }) = child_call() else {
        return;
    };
    match role.as_str() {
        "atomic" => atomic::write_atomic(&dir.join("temp"), &dir.join("tasks.json"), NEW).unwrap(),
        "log" => progress_log::append(&dir.join("log.md"), &record()).unwrap(),
        "checkpoint" => {
            checkpoints::create_next(&dir.join("temp"), &dir.join("checkpoints"), NEW).unwrap();
        }
        "hold-lock" => {
            let _guard = lock::lock_exclusive(&dir.join(".lock"), Duration::from_secs(5)).unwrap();
            say("locked");
            std::thread::sleep(Duration::from_secs(120));
        }
        "add-tasks" => block_on(add_tasks(&dir, &arg)),
        "writer" => block_on(writer(&dir, &arg)),
        "complete-last" => block_on(async {
            service(&dir)
                .move_task(
                    &project_id(),
                    &TaskId::from_number(LAST_STARTED),
                    TaskStatus::Complete,
                    MoveDetail::default(),
                )
                .await
                .unwrap();
            say("DONE");
        }),
        "add-big-task" => block_on(async {
            let outcome = service(&dir).add_task(&project_id(), big_task()).await;
            say(&match outcome {
                Ok(task) => format!("OUTCOME ok {}", task.id),
                Err(Error::Store(StoreError::Io { op, source, .. })) => {
                    format!("OUTCOME io {op} errno {:?}", source.raw_os_error())
                }
                Err(other) => format!("OUTCOME other {other:?}"),
            });
        }),
        other => panic!("unknown child role {other}"),
    }
}

/// One line to the parent, flushed at once so that a kill right after cannot swallow it. A
/// parent that is gone (the pipe is closed) ends the child: nobody is left to report to.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
        std::process::exit(0);
    }
}

fn service(root: &Path) -> ProjectService {
    ProjectService::new(Arc::new(FsProjectStore::new(root)), Arc::new(SystemClock))
}

fn project_id() -> ProjectId {
    PROJECT.parse().expect("a valid project id")
}

/// `<writer>/<count>`: adds `count` tasks titled `writer <writer> task <i>`, one transaction each.
async fn add_tasks(root: &Path, arg: &str) {
    let (writer, count) = arg.split_once('/').expect("writer/count");
    let count: usize = count.parse().expect("a task count");
    let service = service(root);
    for i in 0..count {
        service
            .add_task(&project_id(), NewTask::titled(adder_title(writer, i)))
            .await
            .unwrap_or_else(|e| panic!("writer {writer}, task {i}: {e}"));
    }
}

fn adder_title(writer: &str, i: usize) -> String {
    format!("writer {writer} task {i}")
}

/// `<name>/<seed>`: adds tasks and moves them PENDING → IN_PROGRESS → COMPLETE at random until
/// killed, printing `ACK ADD <id> <title>` or `ACK MOVE <id> <status>` after each call returned,
/// and `READY` once the first add is done.
async fn writer(root: &Path, arg: &str) {
    let (name, seed) = arg.split_once('/').expect("name/seed");
    let mut rng = Rng::new(seed.parse().expect("a seed"));
    let service = service(root);
    let id = project_id();
    // A safety net for a parent that died without killing us; the tests kill far sooner.
    let deadline = Instant::now() + Duration::from_secs(120);
    // The first transaction of a process also compiles the schemas, which takes longer than all
    // the later ones together in a debug build: get it done before the parent starts its clock,
    // so that the kills land in the transactions, not in the warm-up.
    let mut added = 0;
    let mut first = true;
    while Instant::now() < deadline {
        let state = service.load(&id).await.expect("load");
        let movable: Vec<_> = state
            .tasks
            .tasks
            .iter()
            .filter(|t| matches!(t.status, TaskStatus::Pending | TaskStatus::InProgress))
            .map(|t| (t.id.clone(), t.status))
            .collect();
        if first || movable.is_empty() || rng.below(3) == 0 {
            let title = format!("{name} task {added}");
            added += 1;
            let task = service
                .add_task(&id, NewTask::titled(title.clone()))
                .await
                .expect("add a task");
            say(&format!("ACK ADD {} {title}", task.id));
            if std::mem::take(&mut first) {
                say("READY");
            }
        } else {
            let (task, from) = &movable[rng.below(movable.len() as u64) as usize];
            let to = match from {
                TaskStatus::Pending => TaskStatus::InProgress,
                _ => TaskStatus::Complete,
            };
            match service
                .move_task(&id, task, to, MoveDetail::default())
                .await
            {
                Ok(_) => say(&format!("ACK MOVE {task} {to}")),
                // The other writer moved it first; the refusal changed nothing.
                Err(Error::Domain(_)) => {}
                Err(error) => panic!("moving {task} to {to}: {error}"),
            }
        }
    }
}

/// Small, seedable, dependency-free randomness (xorshift64*); good enough to scatter kills.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }
}

// ---------------------------------------------------------------------------------------------
// The parent side: starting and judging children.

/// Runs a child to its end and returns what it did.
fn run_child(role: &str, dir: &Path, arg: &str, failpoint: Option<&str>) -> Output {
    let mut command = child_command(role, dir, arg);
    if let Some(name) = failpoint {
        command.env(FAILPOINT_ENV, name);
    }
    command.output().expect("run the child")
}

fn assert_died_of(status: ExitStatus, signal: i32, what: &str, stderr: &str) {
    assert_eq!(
        status.signal(),
        Some(signal),
        "{what}: the child should have died of signal {signal}, but {status:?}; its stderr:\n{stderr}"
    );
}

/// A running child whose stdout lines are collected by a thread, so that it never blocks on a
/// full pipe. Dropping it kills the child, so a failed assertion leaves no process behind.
struct Running {
    child: Child,
    ready: mpsc::Receiver<()>,
    stdout: Option<JoinHandle<Vec<String>>>,
}

impl Running {
    fn spawn(role: &str, dir: &Path, arg: &str) -> Self {
        let mut child = child_command(role, dir, arg)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn a child");
        let stdout = child.stdout.take().expect("piped stdout");
        let (ready_tx, ready) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line == "READY" {
                    let _ = ready_tx.send(());
                }
                lines.push(line);
            }
            lines
        });
        Self {
            child,
            ready,
            stdout: Some(reader),
        }
    }

    fn wait_ready(&mut self, what: &str) {
        if self.ready.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = self.child.kill();
            let status = self.child.wait().expect("wait");
            panic!(
                "{what}: the child never got ready ({status:?}); its stderr:\n{}",
                self.stderr()
            );
        }
    }

    /// SIGKILLs the child and returns every line it printed.
    fn kill(&mut self, what: &str) -> Vec<String> {
        self.child.kill().expect("SIGKILL the child");
        let status = self.child.wait().expect("wait for the child");
        assert_died_of(status, SIGKILL, what, &self.stderr());
        self.stdout
            .take()
            .expect("killed once")
            .join()
            .expect("the reader thread")
    }

    fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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

fn debris(temp: &Path) -> Vec<PathBuf> {
    match fs::read_dir(temp) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

/// A project store with a fresh project in a fresh directory.
struct Store {
    dir: tempfile::TempDir,
    service: ProjectService,
    layout: ProjectLayout,
}

impl Store {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let service = service(dir.path());
        block_on(service.init(InitProject {
            id: project_id(),
            name: "Crash".into(),
            goal: "Survive every kill".into(),
            kind: ProjectType::Software,
        }))
        .expect("init");
        let layout = ProjectLayout::new(dir.path(), PROJECT).expect("layout");
        Self {
            dir,
            service,
            layout,
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn load(&self) -> ProjectState {
        let loaded = block_on(self.service.store().load(&project_id())).expect("the store loads");
        assert_eq!(
            loaded.recovered, None,
            "atomic writes never leave tasks.json needing recovery"
        );
        loaded.state
    }

    fn log(&self) -> progress_log::LogRead {
        progress_log::read_all(&self.layout.log_md()).expect("read the log")
    }

    /// No writer holds the lock: it is taken without waiting at all.
    fn assert_lock_free(&self, what: &str) {
        let taken = lock::lock_exclusive(&self.layout.lock_file(), Duration::ZERO);
        assert!(taken.is_ok(), "{what}: stale lock: {taken:?}");
    }

    /// Both state files parse and pass their schemas, read straight from disk.
    fn assert_files_valid(&self, what: &str) {
        for (path, kind) in [
            (self.layout.tasks_json(), SchemaKind::Tasks),
            (self.layout.project_json(), SchemaKind::Project),
        ] {
            let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{what}: {path:?}: {e}"));
            let value: serde_json::Value = serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("{what}: {path:?} does not parse: {e}"));
            if let Err(errors) = schema::validate(kind, &value) {
                panic!("{what}: {path:?} fails its schema: {errors:?}");
            }
        }
    }

    /// Runs `clean_debris` as if it were tomorrow and checks that no temp file is left; returns
    /// how many it removed.
    fn clean_debris(&self, what: &str) -> usize {
        let tomorrow = chrono::Utc::now() + chrono::Duration::days(1);
        let removed = block_on(self.service.store().clean_debris(&project_id(), tomorrow))
            .expect("clean debris");
        let left: Vec<_> = debris(&self.layout.temp_dir())
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(atomic::TEMP_PREFIX))
            })
            .collect();
        assert!(
            left.is_empty(),
            "{what}: debris left after cleaning: {left:?}"
        );
        removed.len()
    }
}

// ---------------------------------------------------------------------------------------------
// The primitives, one crash at a time.

#[test]
fn atomic_write_without_a_failpoint_completes() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("tasks.json"), OLD).unwrap();
    let output = run_child("atomic", dir.path(), "", None);
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(fs::read(dir.path().join("tasks.json")).unwrap(), NEW);
    assert!(debris(&dir.path().join("temp")).is_empty());
}

#[test]
fn atomic_write_crashing_at_each_step_leaves_old_or_new_whole() {
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

        let output = run_child("atomic", dir.path(), "", Some(failpoint));
        assert_died_of(
            output.status,
            SIGABRT,
            failpoint,
            &String::from_utf8_lossy(&output.stderr),
        );

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

#[test]
fn log_append_crashing_before_fsync_keeps_the_entry_parsable() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.md");
    let first = LogRecord::new(record().at, "TASK_STARTED").with("task", "T-001");
    progress_log::append(&log, &first).unwrap();

    let output = run_child("log", dir.path(), "", Some("log:after-append"));
    assert_died_of(
        output.status,
        SIGABRT,
        "log:after-append",
        &String::from_utf8_lossy(&output.stderr),
    );

    let read = progress_log::read_all(&log).unwrap();
    assert_eq!(read.records, vec![first, record()]);
    assert_eq!(read.torn_tail, None);
    assert!(read.skipped.is_empty());
}

#[test]
fn checkpoint_crashing_after_the_link_is_complete_and_cleanable() {
    let dir = tempfile::tempdir().unwrap();
    let (temp, checkpoint_dir) = (dir.path().join("temp"), dir.path().join("checkpoints"));

    let output = run_child("checkpoint", dir.path(), "", Some("checkpoint:after-link"));
    assert_died_of(
        output.status,
        SIGABRT,
        "checkpoint:after-link",
        &String::from_utf8_lossy(&output.stderr),
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

#[test]
fn a_sigkilled_lock_holder_leaves_no_stale_lock() {
    let dir = tempfile::tempdir().unwrap();
    let lock_path = dir.path().join(".lock");
    let mut holder = child_command("hold-lock", dir.path(), "")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut stdout = BufReader::new(holder.stdout.take().unwrap());
    // libtest prints its own lines first; ours is the one that says the lock is held.
    while line.trim_end() != "locked" {
        line.clear();
        assert_ne!(
            stdout.read_line(&mut line).unwrap(),
            0,
            "the holder exited without taking the lock"
        );
    }

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

// ---------------------------------------------------------------------------------------------
// The project store, with many processes.

/// Issue #3: eight processes each add 200 tasks at once, every one a read-modify-write of the
/// whole task list. Any update lost to a race would show as a missing task, a reused id, or a
/// missing log entry.
#[test]
fn eight_processes_adding_200_tasks_each_lose_no_update() {
    const WRITERS: usize = 8;
    const EACH: usize = 200;
    let store = Store::new();

    let started = Instant::now();
    let children: Vec<Child> = (0..WRITERS)
        .map(|w| {
            child_command("add-tasks", store.root(), &format!("{w}/{EACH}"))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn a writer")
        })
        .collect();
    for (w, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().expect("wait for a writer");
        assert!(output.status.success(), "writer {w}: {}", describe(&output));
    }
    eprintln!(
        "{WRITERS} processes x {EACH} adds took {:?}",
        started.elapsed()
    );

    let state = store.load();
    let ids: Vec<TaskId> = state.tasks.tasks.iter().map(|t| t.id.clone()).collect();
    let expected: Vec<TaskId> = (1..=(WRITERS * EACH) as u64)
        .map(TaskId::from_number)
        .collect();
    assert_eq!(
        ids, expected,
        "every task is there, ids unique and dense, in creation order"
    );
    let mut by_writer: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for task in &state.tasks.tasks {
        let writer = task
            .title
            .strip_prefix("writer ")
            .and_then(|rest| rest.split_once(' '))
            .map(|(w, _)| w.to_owned())
            .unwrap_or_else(|| panic!("unexpected title {:?}", task.title));
        by_writer
            .entry(writer)
            .or_default()
            .push(task.title.clone());
    }
    for w in 0..WRITERS {
        let writer = w.to_string();
        let expected: Vec<String> = (0..EACH).map(|i| adder_title(&writer, i)).collect();
        assert_eq!(
            by_writer.get(&writer),
            Some(&expected),
            "writer {w}'s tasks, each once, in the order it added them"
        );
    }

    let log = store.log();
    assert_eq!(log.torn_tail, None);
    assert!(log.skipped.is_empty(), "{:?}", log.skipped);
    let created: Vec<&str> = log
        .records
        .iter()
        .filter(|r| r.kind == "TASK_CREATED")
        .map(|r| r.get("task").expect("a task field"))
        .collect();
    assert_eq!(created.len(), WRITERS * EACH, "one TASK_CREATED per update");
    assert_eq!(
        created,
        expected.iter().map(TaskId::as_str).collect::<Vec<_>>(),
        "logged in commit order"
    );
}

/// What a writer reported as done.
#[derive(Debug)]
enum Ack {
    Add { task: TaskId, title: String },
    Move { task: TaskId, to: TaskStatus },
}

fn parse_acks(lines: &[String]) -> Vec<Ack> {
    lines
        .iter()
        .filter_map(|line| line.strip_prefix("ACK "))
        .map(|ack| {
            let mut parts = ack.splitn(3, ' ');
            let (kind, task, rest) = (parts.next(), parts.next(), parts.next());
            let task: TaskId = task
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("bad ack {ack:?}"));
            let rest = rest.unwrap_or_else(|| panic!("bad ack {ack:?}")).to_owned();
            match kind {
                Some("ADD") => Ack::Add { task, title: rest },
                Some("MOVE") => Ack::Move {
                    task,
                    to: rest.parse().unwrap_or_else(|_| panic!("bad ack {ack:?}")),
                },
                _ => panic!("bad ack {ack:?}"),
            }
        })
        .collect()
}

/// How far along PENDING → IN_PROGRESS → COMPLETE a task is; the writers only move forward.
fn progress(status: TaskStatus) -> u8 {
    match status {
        TaskStatus::Pending => 0,
        TaskStatus::InProgress => 1,
        TaskStatus::Complete => 2,
        other => panic!("the writers never move a task to {other}"),
    }
}

#[derive(Debug, Default)]
struct KillStats {
    kills: usize,
    adds: usize,
    moves: usize,
    max_torn_entries: usize,
    debris: usize,
}

/// Issue #3: writers SIGKILLed at random moments in the middle of their transactions. After
/// every kill: both state files parse and validate without any recovery, every acknowledged
/// update is in tasks.json and in the log, the log has nothing worse than torn entries (at most
/// one per kill), the lock is free, and cleaning debris leaves no temp file.
#[test]
fn sigkilled_writers_lose_no_acknowledged_update() {
    /// Writers alive at once: two, so that kills also land while one waits for the other's lock.
    const WRITERS: usize = 2;
    /// A fresh project after this many kills keeps the task list, and so each step, small.
    const KILLS_PER_PROJECT: usize = 20;
    const MAX_FIRST_KILL_MS: u64 = 60;
    const MAX_SECOND_KILL_MS: u64 = 20;

    let kills: usize = std::env::var(KILLS_ENV)
        .ok()
        .map(|n| n.parse().expect("CAIRN_CRASH_KILLS is a number"))
        .unwrap_or(DEFAULT_KILLS);
    let seed: u64 = std::env::var(SEED_ENV).ok().map_or_else(
        || {
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        },
        |s| s.parse().expect("CAIRN_CRASH_SEED is a number"),
    );
    eprintln!("kill schedule: {SEED_ENV}={seed} {KILLS_ENV}={kills}");
    let mut rng = Rng::new(seed);
    let mut stats = KillStats::default();
    let started = Instant::now();

    let mut project = 0;
    while stats.kills < kills {
        project += 1;
        let store = Store::new();
        let mut acks = Vec::new();
        let mut kills_here = 0;
        let mut step = 0;
        while kills_here < KILLS_PER_PROJECT && stats.kills < kills {
            step += 1;
            let what = format!("seed {seed}, project {project}, step {step}");
            let mut writers: Vec<Running> = (0..WRITERS)
                .map(|w| {
                    let arg = format!("p{project}s{step}w{w}/{}", rng.next());
                    Running::spawn("writer", store.root(), &arg)
                })
                .collect();
            for writer in &mut writers {
                writer.wait_ready(&what);
            }
            let mut removable = 0;
            for (w, writer) in writers.iter_mut().enumerate() {
                let delay = if w == 0 {
                    MAX_FIRST_KILL_MS
                } else {
                    MAX_SECOND_KILL_MS
                };
                std::thread::sleep(Duration::from_millis(rng.below(delay + 1)));
                acks.extend(parse_acks(&writer.kill(&what)));
                removable += 1;
                kills_here += 1;
                stats.kills += 1;
            }
            check_after_kills(&store, &acks, kills_here, removable, &what, &mut stats);
        }
        // The store takes the next transaction as if nothing had happened.
        block_on(
            store
                .service
                .add_task(&project_id(), NewTask::titled("after the kills")),
        )
        .expect("a transaction after the kills");
        store.assert_lock_free("after the last transaction");
        stats.adds += acks.iter().filter(|a| matches!(a, Ack::Add { .. })).count();
        stats.moves += acks
            .iter()
            .filter(|a| matches!(a, Ack::Move { .. }))
            .count();
    }

    eprintln!("{stats:?} in {:?}", started.elapsed());
    assert!(
        stats.adds > 0 && stats.moves > 0,
        "the writers got adds and moves acknowledged between kills: {stats:?}"
    );
}

fn check_after_kills(
    store: &Store,
    acks: &[Ack],
    kills_so_far: usize,
    killed_now: usize,
    what: &str,
    stats: &mut KillStats,
) {
    store.assert_lock_free(what);
    store.assert_files_valid(what);

    let state = store.load();
    let tasks: BTreeMap<&TaskId, _> = state.tasks.tasks.iter().map(|t| (&t.id, t)).collect();
    let log = store.log();
    let logged: BTreeSet<(&str, &str)> = log
        .records
        .iter()
        .filter_map(|r| Some((r.kind.as_str(), r.get("task")?)))
        .collect();
    for ack in acks {
        match ack {
            Ack::Add { task, title } => {
                let found = tasks
                    .get(task)
                    .unwrap_or_else(|| panic!("{what}: acknowledged {task} is gone"));
                assert_eq!(&found.title, title, "{what}: {task}'s title");
                assert!(
                    logged.contains(&("TASK_CREATED", task.as_str())),
                    "{what}: no TASK_CREATED for acknowledged {task}"
                );
            }
            Ack::Move { task, to } => {
                let found = tasks
                    .get(task)
                    .unwrap_or_else(|| panic!("{what}: acknowledged {task} is gone"));
                assert!(
                    progress(found.status) >= progress(*to),
                    "{what}: {task} was acknowledged {to} but is {}",
                    found.status
                );
                let kind = match to {
                    TaskStatus::InProgress => "TASK_STARTED",
                    _ => "TASK_COMPLETE",
                };
                assert!(
                    logged.contains(&(kind, task.as_str())),
                    "{what}: no {kind} for acknowledged move of {task}"
                );
            }
        }
    }

    // A killed append can leave one torn entry; later appends move it from the tail into the
    // middle, where the reader skips it. Nothing else may be damaged.
    let torn = log.skipped.len() + usize::from(log.torn_tail.is_some());
    assert!(
        torn <= kills_so_far,
        "{what}: {torn} damaged log entries after {kills_so_far} kills: {:?} {:?}",
        log.skipped,
        log.torn_tail
    );
    stats.max_torn_entries = stats.max_torn_entries.max(torn);

    // Each killed writer had at most three staged files in flight: velocity.json, tasks.json and
    // project.json (all three are staged before the commit); or, once tasks.json is installed,
    // the validation stamp's staging file beside the other two; or one checkpoint.
    let removed = store.clean_debris(what);
    assert!(
        removed <= 3 * killed_now,
        "{what}: {removed} temp files from {killed_now} killed writers"
    );
    stats.debris += removed;
}

// ---------------------------------------------------------------------------------------------
// The project store, crashing at every failpoint of a transaction.

/// The task the failpoint children complete; its completion is the tenth, so it writes a
/// checkpoint and every failpoint of the transaction path is on the way.
const LAST_STARTED: u64 = 10;

/// Where a crash leaves a transaction that completes [`LAST_STARTED`].
#[derive(Debug, Clone, Copy)]
struct Expect {
    /// tasks.json holds the new state.
    committed: bool,
    /// The transaction's checkpoint exists.
    checkpoint: bool,
    /// The transaction's log entries were written.
    logged: bool,
    /// Temp files the crash leaves behind.
    debris: usize,
}

const BEFORE_COMMIT: Expect = Expect {
    committed: false,
    checkpoint: false,
    logged: false,
    debris: 1,
};
/// Write-ahead: the log entry is the commit. A crash after it leaves the staged tasks.json and
/// velocity.json behind, and the next read applies the entry.
const AFTER_LOG: Expect = Expect {
    committed: true,
    checkpoint: false,
    logged: true,
    debris: 2,
};
/// tasks.json is in place; the staged velocity.json is not yet.
const AFTER_TASKS_RENAME: Expect = Expect {
    debris: 1,
    ..AFTER_LOG
};
const AFTER_STATE_WRITE: Expect = Expect {
    debris: 0,
    ..AFTER_LOG
};

/// Every failpoint on the path of a project transaction, in the order it passes them (each
/// child dies at the first pass). A completion stages velocity.json before tasks.json's temp file
/// is made, so the first `atomic:after-temp-*` passes are its staging's (one temp file left);
/// tasks.json's own are the same code, crashed at each step in `atomic_write_crashing_at_each_step_leaves_old_or_new_whole`, and
/// velocity.json's install passes the `atomic:` install ones again after tasks.json's.
const TRANSACTION_FAILPOINTS: &[(&str, Expect)] = &[
    ("atomic:after-temp-create", BEFORE_COMMIT),
    ("atomic:after-temp-write", BEFORE_COMMIT),
    ("atomic:after-temp-fsync", BEFORE_COMMIT),
    ("log:after-append", AFTER_LOG),
    ("project:after-log-append", AFTER_LOG),
    ("atomic:after-rename", AFTER_TASKS_RENAME),
    ("atomic:after-dir-fsync", AFTER_TASKS_RENAME),
    ("project:after-state-write", AFTER_STATE_WRITE),
    (
        "checkpoint:after-link",
        Expect {
            committed: true,
            checkpoint: true,
            logged: true,
            debris: 1,
        },
    ),
];

/// The names passed to `failpoint("…")` anywhere in this crate's sources.
fn failpoints_in_source() -> BTreeSet<String> {
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    let mut names = BTreeSet::new();
    // The format modules live in subdirectories (`plan/`, `execution/`, …): walk them all.
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("list src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = fs::read_to_string(&path).expect("read a source file");
            for (at, _) in text.match_indices("failpoint(\"") {
                let rest = &text[at + "failpoint(\"".len()..];
                let end = rest.find('"').expect("a closing quote");
                names.insert(rest[..end].to_owned());
            }
        }
    }
    names
}

#[test]
fn the_failpoint_list_covers_every_failpoint_in_the_code() {
    let tested: BTreeSet<String> = TRANSACTION_FAILPOINTS
        .iter()
        .map(|(name, _)| (*name).to_owned())
        .collect();
    // The plan, session and orchestration stores' failpoints are exercised by their own tests
    // (`tests/plan_store.rs`, `tests/execution_store.rs`, `tests/orchestration_store.rs`).
    let project: BTreeSet<String> = failpoints_in_source()
        .into_iter()
        .filter(|name| {
            !["plan:", "session:", "orch:"]
                .iter()
                .any(|area| name.starts_with(area))
        })
        .collect();
    assert_eq!(
        project, tested,
        "a failpoint was added or removed: list it in TRANSACTION_FAILPOINTS with where it leaves a transaction"
    );
}

/// A project with tasks T-001 … T-009 complete, T-010 in progress and T-011 pending.
fn store_one_completion_before_a_checkpoint() -> Store {
    let store = Store::new();
    let id = project_id();
    block_on(async {
        for i in 1..=LAST_STARTED + 1 {
            store
                .service
                .add_task(&id, NewTask::titled(format!("task number {i}")))
                .await
                .expect("add");
        }
        for i in 1..=LAST_STARTED {
            let task = TaskId::from_number(i);
            store
                .service
                .move_task(&id, &task, TaskStatus::InProgress, MoveDetail::default())
                .await
                .expect("start");
            if i < LAST_STARTED {
                store
                    .service
                    .move_task(&id, &task, TaskStatus::Complete, MoveDetail::default())
                    .await
                    .expect("complete");
            }
        }
    });
    store
}

/// A write over another tool's tasks.json that dies after its log entry, before its rename: the
/// next command applies the change to the file the write kept as a checkpoint (tasks.json itself,
/// by a second name). Edited in place before that (by another tool: the checkpoint shares its
/// inode until the rename), the file no longer holds the bytes the entry names: the edit stands,
/// and the next write goes on instead of failing on a commit that cannot be applied.
#[test]
fn a_write_over_another_tools_file_killed_after_its_entry_is_applied_or_yields_to_an_edit() {
    for edited_in_place in [false, true] {
        let store = Store::new();
        let id = project_id();
        for title in ["first", "second", "third"] {
            block_on(store.service.add_task(&id, NewTask::titled(title))).expect("add");
        }
        let tasks_json = store.layout.tasks_json();
        let doc: serde_json::Value =
            serde_json::from_slice(&fs::read(&tasks_json).expect("read")).expect("JSON");
        fs::remove_file(&tasks_json).expect("remove");
        fs::write(&tasks_json, serde_json::to_vec_pretty(&doc).expect("JSON")).expect("write");
        let out = run_child(
            "add-tasks",
            store.root(),
            "w/1",
            Some("project:after-log-append"),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_died_of(out.status, SIGABRT, "the write", &stderr);
        if edited_in_place {
            let edited = fs::read_to_string(&tasks_json)
                .expect("read")
                .replace("\"first\"", "\"first, edited\"");
            let mut file = fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&tasks_json)
                .expect("open in place");
            file.write_all(edited.as_bytes()).expect("edit in place");
        }
        let titles = |state: &ProjectState| -> Vec<String> {
            state.tasks.tasks.iter().map(|t| t.title.clone()).collect()
        };
        let loaded = block_on(service(store.root()).load(&id)).expect("loads");
        let expected: &[&str] = if edited_in_place {
            &["first, edited", "second", "third"]
        } else {
            &["first", "second", "third", "writer w task 0"]
        };
        assert_eq!(
            titles(&loaded),
            expected,
            "edited in place: {edited_in_place}"
        );
        block_on(service(store.root()).add_task(&id, NewTask::titled("after it")))
            .unwrap_or_else(|e| panic!("edited in place: {edited_in_place}: {e}"));
        let after = block_on(service(store.root()).load(&id)).expect("loads");
        assert_eq!(titles(&after).len(), expected.len() + 1);
    }
}

/// Issue #3: a child aborts at each failpoint of a transaction. The store then loads (the old or
/// the new state, whole), nothing committed before is lost, the lock is free, the debris is
/// exactly what the crash point predicts, and the next transaction succeeds.
#[test]
fn a_transaction_aborted_at_every_failpoint_keeps_the_store_whole() {
    let last = TaskId::from_number(LAST_STARTED);
    for &(failpoint, expect) in TRANSACTION_FAILPOINTS {
        let store = store_one_completion_before_a_checkpoint();
        let before_tasks = fs::read(store.layout.tasks_json()).expect("tasks.json");
        let before_log = store.log();

        let output = run_child("complete-last", store.root(), "", Some(failpoint));
        assert_died_of(
            output.status,
            SIGABRT,
            &format!("{failpoint} (it never triggered if the child printed DONE)"),
            &describe(&output),
        );

        store.assert_lock_free(failpoint);
        store.assert_files_valid(failpoint);
        let state = store.load();
        let status_of = |n: u64| {
            state
                .tasks
                .get(&TaskId::from_number(n))
                .unwrap_or_else(|| panic!("{failpoint}: T-{n:03} is gone"))
                .status
        };
        for n in 1..LAST_STARTED {
            assert_eq!(status_of(n), TaskStatus::Complete, "{failpoint}: T-{n:03}");
        }
        assert_eq!(
            status_of(LAST_STARTED + 1),
            TaskStatus::Pending,
            "{failpoint}"
        );
        let tasks_now = fs::read(store.layout.tasks_json()).expect("tasks.json");
        if expect.committed {
            assert_eq!(
                status_of(LAST_STARTED),
                TaskStatus::Complete,
                "{failpoint}: new state"
            );
        } else {
            assert_eq!(
                tasks_now, before_tasks,
                "{failpoint}: tasks.json is the old one, byte for byte"
            );
        }

        let checkpoint = checkpoints::read(&store.layout.checkpoints_dir(), 1).ok();
        assert_eq!(
            checkpoint.is_some(),
            expect.checkpoint,
            "{failpoint}: checkpoint"
        );
        if let Some(bytes) = checkpoint {
            assert_eq!(
                bytes, tasks_now,
                "{failpoint}: the checkpoint is the committed task list"
            );
        }

        let log = store.log();
        assert_eq!(log.torn_tail, None, "{failpoint}");
        assert!(log.skipped.is_empty(), "{failpoint}: {:?}", log.skipped);
        assert!(
            log.records.starts_with(&before_log.records),
            "{failpoint}: every entry from before the crash is still there"
        );
        let completed_last = log.records[before_log.records.len()..]
            .iter()
            .any(|r| r.kind == "TASK_COMPLETE" && r.get("task") == Some(last.as_str()));
        assert_eq!(completed_last, expect.logged, "{failpoint}: log entry");

        assert_eq!(
            store.clean_debris(failpoint),
            expect.debris,
            "{failpoint}: temp files left by the crash"
        );

        block_on(async {
            let id = project_id();
            if !expect.committed {
                let moved = store
                    .service
                    .move_task(&id, &last, TaskStatus::Complete, MoveDetail::default())
                    .await
                    .unwrap_or_else(|e| panic!("{failpoint}: retry the completion: {e}"));
                assert_eq!(moved.checkpoint, Some(1), "{failpoint}");
            }
            store
                .service
                .add_task(&id, NewTask::titled("after the crash"))
                .await
                .unwrap_or_else(|e| panic!("{failpoint}: the next transaction: {e}"));
        });
        store.assert_lock_free(failpoint);
        // The writer after the crash put the logged completion into the file itself, and
        // nothing was logged twice.
        let on_disk: cairn_domain::project::TaskDoc =
            serde_json::from_slice(&fs::read(store.layout.tasks_json()).expect("tasks.json"))
                .expect("tasks.json parses");
        let last_on_disk = on_disk.tasks.iter().find(|t| t.id == last).expect("T-010");
        assert_eq!(last_on_disk.status, TaskStatus::Complete, "{failpoint}");
        let completions = store
            .log()
            .records
            .iter()
            .filter(|r| r.kind == "TASK_COMPLETE" && r.get("task") == Some(last.as_str()))
            .count();
        assert_eq!(completions, 1, "{failpoint}: logged once");
    }
}

// ---------------------------------------------------------------------------------------------
// A full disk.

fn big_task() -> NewTask {
    NewTask {
        description: Some("a long description that fills the disk ".repeat(200)),
        ..NewTask::titled("a task too big for the disk")
    }
}

/// A write that runs out of space must fail cleanly. The child gets a file-size limit
/// (RLIMIT_FSIZE, set by util-linux `prlimit`) just above the current tasks.json, so the temp file
/// of the next write hits it: `write` returns EFBIG. SIGXFSZ, which the kernel sends along and
/// which would kill the child, is ignored by the shell that execs it (an ignored disposition
/// survives exec), so the child sees the plain error. No root and no real full disk needed.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_fails_the_write_with_an_io_error_and_changes_nothing() {
    const EFBIG: i32 = 27;
    let store = Store::new();
    let id = project_id();
    block_on(async {
        for i in 0..3 {
            store
                .service
                .add_task(&id, NewTask::titled(format!("task number {i}")))
                .await
                .expect("add");
        }
    });
    let files = [
        store.layout.tasks_json(),
        store.layout.project_json(),
        store.layout.log_md(),
    ];
    let before: Vec<Vec<u8>> = files.iter().map(|f| fs::read(f).expect("read")).collect();
    let limit = before[0].len() + 512;

    let child = child_command("add-big-task", store.root(), "");
    let output = Command::new("sh")
        .arg("-c")
        .arg(r#"trap '' XFSZ; exec prlimit --fsize="$CAIRN_CRASH_FSIZE" -- "$0" "$@""#)
        .arg(child.get_program())
        .args(child.get_args())
        .envs(
            child
                .get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))),
        )
        .env_remove(FAILPOINT_ENV)
        .env("CAIRN_CRASH_FSIZE", limit.to_string())
        .output()
        .expect("run sh");
    assert!(
        output.status.success(),
        "the limited child (this test needs `prlimit` from util-linux): {}",
        describe(&output)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let outcome = stdout
        .lines()
        .find_map(|l| l.strip_prefix("OUTCOME "))
        .unwrap_or_else(|| panic!("no outcome: {}", describe(&output)));
    assert_eq!(
        outcome,
        format!("io write temp file errno Some({EFBIG})"),
        "the store reports the failed write, naming the step and the errno"
    );

    for (file, bytes) in files.iter().zip(&before) {
        assert_eq!(
            &fs::read(file).expect("read"),
            bytes,
            "{file:?} is byte for byte what it was"
        );
    }
    assert!(
        debris(&store.layout.temp_dir()).is_empty(),
        "the failed temp file was removed"
    );
    store.assert_lock_free("after the failed write");
    let added = block_on(store.service.add_task(&id, big_task()))
        .expect("without the limit the same write succeeds");
    assert_eq!(added.id, TaskId::from_number(4));
}
