//! Issue #16, power loss: what survives when every write that was not made durable is lost.
//!
//! A SIGKILL keeps the page cache; a power cut does not. This harness runs a real writer — this
//! test binary re-executed, driving the real store through `ProjectService` — under `strace`,
//! which records every filesystem syscall it makes (opens, writes, `fsync`/`fdatasync`, renames,
//! links, unlinks, mkdirs) with their full data. A simulated filesystem then replays the trace,
//! keeping two views of every file and directory: what the process saw, and what is durable.
//!
//! - file data becomes durable only at an `fsync`/`fdatasync` of that file;
//! - a directory entry (a create, a rename, a link, an unlink, a mkdir) becomes durable only at
//!   an `fsync` of the directory holding it, and a durable entry under a directory whose own
//!   entry is not durable is unreachable.
//!
//! That is the strict POSIX worst case (stricter than ext4's ordered mode, which commits earlier
//! metadata with any fsync). A *cut* after syscall `k` is the durable view at that moment,
//! written out to a fresh directory. For every cut the checks are: every state file present
//! parses (tasks.json, project.json, checkpoints, velocity.json), the log has at most a torn
//! tail, a fresh store loads, and every update the writer acknowledged before the cut (it prints
//! an `ACK` line, itself a syscall in the trace) is there.
//!
//! Cuts are taken after every syscall of the trace that changes the simulated filesystem, over
//! several random histories: thousands of cuts (`CAIRN_POWER_HISTORIES` sets how many histories).
#![cfg(target_os = "linux")]

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use cairn_domain::execution::ExecutionService;
use cairn_domain::execution::TaskOutcome;
use cairn_domain::execution::run::{
    Selection, SessionRunner, SessionStart, TaskEnd, TaskEndReport,
};
use cairn_domain::plan::{DecisionDraft, PlanId, PlanRecord, PlanState, PlanStore, UserApproval};
use cairn_domain::project::service::{InitProject, ProjectService};
use cairn_domain::project::{MoveDetail, NewTask, ProjectId, ProjectType, TaskId, TaskStatus};
use cairn_storage_fs::execution_store::{PROJECT_MOVES_FILE, SESSIONS_DIR, parse_project_moves};
use cairn_storage_fs::{
    FsExecutionSessionStore, FsPlanStore, FsProjectStore, SystemClock, intent, progress_log,
};
use chrono::{TimeZone, Utc};

mod support;
use support::{ChildCall, block_on, child_call, child_command};

const HISTORIES_ENV: &str = "CAIRN_POWER_HISTORIES";
const DEFAULT_HISTORIES: u64 = 3;
/// Steps of one history (each one transaction, or a checkpoint).
const STEPS: u64 = 30;

// ---------------------------------------------------------------------------------------------
// The child: a writer that acknowledges what it was told is saved.

#[test]
fn child_process_entry() {
    let Some(ChildCall { role, dir, arg }) = child_call() else {
        return;
    };
    match role.as_str() {
        "history" => block_on(history(&dir, arg.parse().expect("a seed"))),
        "plan-history" => block_on(plan_history(&dir)),
        "session-history" => block_on(session_history(&dir)),
        other => panic!("unknown role {other}"),
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .expect("stdout");
}

fn project_id() -> ProjectId {
    "demo".parse().expect("id")
}

async fn history(root: &Path, seed: u64) {
    let service = ProjectService::new(Arc::new(FsProjectStore::new(root)), Arc::new(SystemClock));
    let id = project_id();
    service
        .init(InitProject {
            id: id.clone(),
            name: "Power".into(),
            goal: "Survive a power cut".into(),
            kind: ProjectType::Software,
        })
        .await
        .expect("init");
    say("ACK INIT");
    let mut rng = Rng(seed.max(1));
    for step in 0..STEPS {
        let state = service.load(&id).await.expect("load");
        let movable: Vec<_> = state
            .tasks
            .tasks
            .iter()
            .filter(|t| matches!(t.status, TaskStatus::Pending | TaskStatus::InProgress))
            .map(|t| (t.id.clone(), t.status))
            .collect();
        match rng.below(9) {
            0 => {
                service.write_checkpoint(&id).await.expect("checkpoint");
            }
            8 => {
                // Another tool rewrites tasks.json, as `git pull` does: a new file renamed into
                // place, nothing synced, every task as it was. The next write keeps it as a
                // checkpoint and logs its change from there.
                let tasks_json = root.join(".claude/projects/demo/tasks.json");
                let doc: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&tasks_json).expect("read"))
                        .expect("JSON");
                let pulled = tasks_json.with_extension("json.pulled");
                std::fs::write(&pulled, serde_json::to_vec_pretty(&doc).expect("JSON"))
                    .expect("write");
                std::fs::rename(&pulled, &tasks_json).expect("rename");
                // Half the time a change to project.json alone follows, whose rename and sync in
                // the project's directory must not keep the pulled name without its bytes.
                if rng.below(2) == 0 {
                    let phase = format!("pulled-{step}");
                    service
                        .add_phase(&id, &phase, "Pulled")
                        .await
                        .expect("phase");
                }
            }
            n if n < 4 || movable.is_empty() => {
                let title = format!("step {step}");
                let task = service
                    .add_task(&id, NewTask::titled(title.clone()))
                    .await
                    .expect("add");
                say(&format!("ACK ADD {} {title}", task.id));
            }
            _ => {
                let (task, from) = &movable[rng.below(movable.len() as u64) as usize];
                let to = match from {
                    TaskStatus::Pending => TaskStatus::InProgress,
                    _ => TaskStatus::Complete,
                };
                service
                    .move_task(&id, task, to, MoveDetail::default())
                    .await
                    .expect("move");
                say(&format!("ACK MOVE {task} {to}"));
            }
        }
    }
}

// A plan wing writer: each transaction records a failure in its own area (state.md) with a
// decision explaining it (decisions.md), the two files of one change (issue #16).

/// Transactions of the plan history.
const PLAN_STEPS: usize = 6;

fn plan_id() -> PlanId {
    PlanId::parse(".plan_2026-03-14_0000abcd").expect("plan id")
}

fn plan_at(minute: u32) -> cairn_domain::time::Timestamp {
    Utc.with_ymd_and_hms(2026, 3, 14, 9, minute, 0)
        .single()
        .expect("time")
}

/// A plan approved into EXECUTE, written before the trace starts (so a cut always has it).
async fn executing_plan(root: &Path) {
    let store = FsPlanStore::new(root);
    let record =
        PlanRecord::new(plan_id(), "survive a power cut", plan_at(0)).expect("plan record");
    store.create(&record, false).await.expect("create plan");
    let approval = UserApproval::from_user("go").expect("approval");
    store
        .transact(
            &plan_id(),
            Box::new(move |p| {
                p.transition(PlanState::Plan, "ready", None, plan_at(1))?;
                p.transition(PlanState::Execute, "approved", Some(&approval), plan_at(2))?;
                Ok(Vec::new())
            }),
        )
        .await
        .expect("reach EXECUTE");
}

async fn plan_history(root: &Path) {
    let store = FsPlanStore::new(root);
    for step in 0..PLAN_STEPS {
        store
            .transact(
                &plan_id(),
                Box::new(move |p| {
                    p.record_failure(&format!("area-{step}"))?;
                    let draft = DecisionDraft::new(
                        PlanState::Execute,
                        PlanState::Execute,
                        plan_at(3).date_naive(),
                        &format!("failure {step}"),
                    )?;
                    Ok(vec![draft])
                }),
            )
            .await
            .expect("transact");
        say(&format!("ACK PLAN {step}"));
    }
}

/// After a cut the plan loads, and each step is in both files or in neither; acknowledged ones
/// in both.
fn check_plan_cut(dir: &Path, acked: usize, what: &str) -> Result<(), String> {
    let store = FsPlanStore::new(dir);
    let plan = block_on(store.load(&plan_id())).map_err(|e| format!("{what}: load: {e}"))?;
    let decisions =
        block_on(store.decisions(&plan_id())).map_err(|e| format!("{what}: decisions: {e}"))?;
    for step in 0..PLAN_STEPS {
        let strike = plan.strikes_on(&format!("area-{step}")) == 1;
        let logged = decisions
            .iter()
            .filter(|d| d.body.contains(&format!("failure {step}")))
            .count();
        if logged > 1 || strike != (logged == 1) {
            return Err(format!(
                "{what}: step {step}: strike {strike}, decision logged {logged} times"
            ));
        }
        if step < acked && !strike {
            return Err(format!("{what}: acknowledged step {step} is lost"));
        }
    }
    Ok(())
}

// A session writer (issue #16): `session start`, task starts and ends of every kind, a task's
// learnings merged into the shared context, `finish` — each end one unit across the session and
// the project.

/// The tasks of the session history and how each ends.
const SESSION_ENDS: [(&str, TaskEnd); 4] = [
    ("T-001", TaskEnd::Done),
    ("T-002", TaskEnd::Failed),
    ("T-003", TaskEnd::Done),
    ("T-004", TaskEnd::Skipped),
];

/// A project with the session history's four independent tasks, written before the trace.
async fn session_project(root: &Path) {
    let service = ProjectService::new(Arc::new(FsProjectStore::new(root)), Arc::new(SystemClock));
    service
        .init(InitProject {
            id: project_id(),
            name: "Power".into(),
            goal: "Survive a power cut".into(),
            kind: ProjectType::Software,
        })
        .await
        .expect("init");
    for (n, _) in SESSION_ENDS.iter().enumerate() {
        service
            .add_task(&project_id(), NewTask::titled(format!("task {n}")))
            .await
            .expect("add");
    }
}

fn session_runner<'a>(root: &Path, projects: &'a ProjectService) -> SessionRunner<'a> {
    let execution = ExecutionService::new(
        Arc::new(FsExecutionSessionStore::new(root)),
        Arc::new(SystemClock),
    );
    SessionRunner::new(execution, projects)
}

async fn session_history(root: &Path) {
    let projects = ProjectService::new(Arc::new(FsProjectStore::new(root)), Arc::new(SystemClock));
    let runner = session_runner(root, &projects);
    let project = project_id();
    let start = SessionStart {
        project: project.clone(),
        group: None,
        max_parallel: 4,
        selection: Selection::All,
        force: false,
    };
    runner
        .start(start, |_| "# Plan\n".to_owned())
        .await
        .expect("session start");
    say("ACK START");
    for (task, end) in SESSION_ENDS {
        let id: TaskId = task.parse().expect("id");
        runner.start_task(&project, &id).await.expect("task start");
        say(&format!("ACK STARTED {task}"));
        if end == TaskEnd::Done && task == "T-003" {
            runner
                .add_context(&id, "- learned something\n")
                .await
                .expect("context add");
            say(&format!("ACK CONTEXT {task}"));
        }
        let report = TaskEndReport {
            end,
            duration: None,
            tokens: None,
            note: None,
        };
        runner
            .end_task(&project, &id, report)
            .await
            .expect("task end");
        say(&format!("ACK END {task}"));
    }
    runner.finish().await.expect("finish");
    say("ACK FINISH");
}

/// After a cut: the intents parse, the next command's settling runs, and then the session and
/// the project agree on every task the session logged, with every acknowledged step there.
fn check_session_cut(dir: &Path, acks: &[String], what: &str) -> Result<(), String> {
    let sessions = dir.join(SESSIONS_DIR);
    if let Ok(bytes) = std::fs::read(sessions.join(intent::INTENT_FILE)) {
        intent::parse(&bytes).map_err(|e| format!("{what}: the intent does not parse: {e}"))?;
    }
    if let Ok(text) = std::fs::read_to_string(sessions.join(PROJECT_MOVES_FILE)) {
        parse_project_moves(&text).map_err(|e| format!("{what}: the moves do not parse: {e}"))?;
    }
    let projects = ProjectService::new(Arc::new(FsProjectStore::new(dir)), Arc::new(SystemClock));
    let runner = session_runner(dir, &projects);
    block_on(runner.settle()).map_err(|e| format!("{what}: the next command fails: {e}"))?;
    let state = block_on(projects.load(&project_id()))
        .map_err(|e| format!("{what}: the project does not load: {e}"))?;
    let execution = runner.execution();
    let mut seen = vec![block_on(execution.live()).map_err(|e| format!("{what}: {e}"))?];
    let archives = block_on(execution.archives()).map_err(|e| format!("{what}: {e}"))?;
    for archive in &archives {
        seen.push(block_on(execution.archived(&archive.dir)).map_err(|e| format!("{what}: {e}"))?);
    }
    let acked = |line: &str| acks.iter().any(|a| a == line);
    for (task, end) in SESSION_ENDS {
        let id: TaskId = task.parse().expect("id");
        let status = state.tasks.get(&id).map(|t| t.status);
        let list_id = &task[2..].trim_start_matches('0').to_owned();
        let rows: Vec<TaskOutcome> = seen
            .iter()
            .filter_map(|s| s.task_log.as_ref())
            .flat_map(|l| l.rows.iter().filter(|r| &r.task_id == list_id))
            .map(|r| r.status)
            .collect();
        let expected_row = match end {
            TaskEnd::Done => Some(TaskOutcome::Pass),
            TaskEnd::Failed => Some(TaskOutcome::Fail),
            TaskEnd::Skipped => None,
        };
        let ended = match expected_row {
            Some(row) => {
                if rows.len() > 1 || rows.iter().any(|r| *r != row) {
                    return Err(format!("{what}: {task} rows {rows:?}"));
                }
                rows.len() == 1
            }
            // A skip logs no row: it shows as the task leaving the active ones.
            None => status == Some(TaskStatus::Pending) && acked(&format!("ACK STARTED {task}")),
        };
        let after = match end {
            TaskEnd::Done => TaskStatus::Complete,
            _ => TaskStatus::Pending,
        };
        if ended && status != Some(after) {
            return Err(format!(
                "{what}: the session ended {task} but the project holds {status:?}"
            ));
        }
        if acked(&format!("ACK END {task}")) && !ended {
            return Err(format!("{what}: the acknowledged end of {task} is lost"));
        }
        if acked(&format!("ACK STARTED {task}")) && status == Some(TaskStatus::Pending) && !ended {
            return Err(format!("{what}: the acknowledged start of {task} is lost"));
        }
    }
    if acked("ACK CONTEXT T-003") {
        let kept = seen.iter().any(|s| {
            s.task_contexts.contains_key("3")
                || s.context
                    .as_ref()
                    .is_some_and(|c| format!("{c:?}").contains("learned something"))
        });
        if !kept {
            return Err(format!(
                "{what}: the acknowledged learnings of T-003 are lost"
            ));
        }
    }
    if acked("ACK FINISH") && !archives.iter().any(|a| a.summary.is_some()) {
        return Err(format!("{what}: the acknowledged finish is lost"));
    }
    Ok(())
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % bound.max(1)
    }
}

// ---------------------------------------------------------------------------------------------
// The trace.

/// One syscall that matters to the simulated filesystem, with paths made absolute.
#[derive(Debug, Clone)]
enum Op {
    Open {
        fd: i64,
        path: PathBuf,
        create: bool,
        truncate: bool,
        append: bool,
    },
    Write {
        fd: i64,
        data: Vec<u8>,
    },
    Seek {
        fd: i64,
        to: u64,
    },
    Truncate {
        fd: i64,
        len: u64,
    },
    Sync {
        fd: i64,
    },
    Close {
        fd: i64,
    },
    Rename {
        from: PathBuf,
        to: PathBuf,
    },
    Link {
        from: PathBuf,
        to: PathBuf,
    },
    Unlink {
        path: PathBuf,
    },
    Mkdir {
        path: PathBuf,
    },
    /// The writer acknowledged something (a line on its stdout).
    Ack(String),
}

/// Decodes strace's `-xx` strings (`"\x61\x62"`) and the `<…>` path of a `-y` fd.
fn unhex(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 4);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'x') {
            let hex = std::str::from_utf8(&bytes[i + 2..i + 4]).expect("hex");
            out.push(u8::from_str_radix(hex, 16).expect("hex digit"));
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// Splits the arguments of a syscall at top-level commas.
fn split_args(args: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    let bytes = args.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            b'<' | b'[' | b'{' | b'(' if !quoted => depth += 1,
            b'>' | b']' | b'}' | b')' if !quoted => depth -= 1,
            b',' if !quoted && depth == 0 => {
                parts.push(args[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(args[start..].trim());
    parts
}

fn string_arg(arg: &str) -> Vec<u8> {
    unhex(arg.trim_matches('"'))
}

/// The fd number and the path `-y` printed for it (`3<\x2f…>`, `AT_FDCWD<\x2f…>`).
fn fd_arg(arg: &str) -> (Option<i64>, Option<PathBuf>) {
    let (number, path) = match arg.split_once('<') {
        Some((n, rest)) => (n, Some(rest.trim_end_matches('>'))),
        None => (arg, None),
    };
    let path = path.map(|p| PathBuf::from(String::from_utf8_lossy(&unhex(p)).into_owned()));
    (number.parse().ok(), path)
}

fn at_path(dir: &str, path: &str) -> PathBuf {
    let path = PathBuf::from(String::from_utf8_lossy(&string_arg(path)).into_owned());
    if path.is_absolute() {
        return path;
    }
    let (_, base) = fd_arg(dir);
    base.expect("a relative path needs its directory")
        .join(path)
}

fn parse_trace(text: &str) -> Vec<Op> {
    let mut ops = Vec::new();
    // A syscall another thread interrupted is printed in two halves; it happened when it returned.
    let mut unfinished: HashMap<&str, &str> = HashMap::new();
    for line in text.lines() {
        // `PID name(args) = ret` from `strace -f`; signals and exits have no `(`.
        let Some((pid, call)) = line.split_once(' ') else {
            continue;
        };
        let call = call.trim_start();
        if let Some(head) = call.strip_suffix(" <unfinished ...>") {
            unfinished.insert(pid, head);
            continue;
        }
        let joined;
        let call = match call.strip_prefix("<... ") {
            Some(resumed) => {
                let rest = resumed.split_once(" resumed>").map_or("", |(_, rest)| rest);
                joined = format!("{}{rest}", unfinished.remove(pid).unwrap_or_default());
                joined.as_str()
            }
            None => call,
        };
        let Some((name, rest)) = call.split_once('(') else {
            continue;
        };
        // strace pads a short line (a resumed half) to a column: `<... fsync resumed>)     = 0`.
        // Every byte of an argument is hex-escaped (`-xx`), so the last ` = ` is the return's.
        let Some((args, ret)) = rest.rsplit_once(" = ") else {
            continue;
        };
        let Some(args) = args.trim_end().strip_suffix(')') else {
            continue;
        };
        let ret = ret.split_whitespace().next().unwrap_or("-1");
        let (ret_number, _) = fd_arg(ret);
        if ret_number.is_none_or(|r| r < 0) {
            continue; // failed calls change nothing
        }
        let args = split_args(args);
        let fd = |i: usize| fd_arg(args[i]).0.expect("an fd");
        let op = match name {
            "openat" => {
                let flags = args[2];
                Op::Open {
                    fd: ret_number.expect("fd"),
                    path: at_path(args[0], args[1]),
                    create: flags.contains("O_CREAT"),
                    truncate: flags.contains("O_TRUNC"),
                    append: flags.contains("O_APPEND"),
                }
            }
            "write" => {
                let (fd, path) = fd_arg(args[0]);
                let data = string_arg(args[1]);
                if path.is_some_and(|p| p.to_string_lossy().starts_with("pipe:")) {
                    let text = String::from_utf8_lossy(&data);
                    for line in text.lines().filter(|l| l.starts_with("ACK ")) {
                        ops.push(Op::Ack(line.to_owned()));
                    }
                    continue;
                }
                assert_eq!(
                    data.len() as i64,
                    ret_number.expect("count"),
                    "a short write is not simulated: {line}"
                );
                Op::Write {
                    fd: fd.expect("fd"),
                    data,
                }
            }
            // The first `ret` bytes of the buffers, in order: what the kernel wrote.
            "writev" => {
                let mut data: Vec<u8> = args[1]
                    .split("iov_base=\"")
                    .skip(1)
                    .flat_map(|base| unhex(base.split_once('"').map_or(base, |(hex, _)| hex)))
                    .collect();
                data.truncate(usize::try_from(ret_number.expect("count")).expect("a count"));
                Op::Write { fd: fd(0), data }
            }
            "lseek" => Op::Seek {
                fd: fd(0),
                to: ret_number.expect("offset") as u64,
            },
            "ftruncate" => Op::Truncate {
                fd: fd(0),
                len: args[1].parse().expect("length"),
            },
            "fsync" | "fdatasync" => Op::Sync { fd: fd(0) },
            "close" => Op::Close { fd: fd(0) },
            "rename" => Op::Rename {
                from: at_path("AT_FDCWD", args[0]),
                to: at_path("AT_FDCWD", args[1]),
            },
            "renameat" | "renameat2" => Op::Rename {
                from: at_path(args[0], args[1]),
                to: at_path(args[2], args[3]),
            },
            "link" => Op::Link {
                from: at_path("AT_FDCWD", args[0]),
                to: at_path("AT_FDCWD", args[1]),
            },
            "linkat" => Op::Link {
                from: at_path(args[0], args[1]),
                to: at_path(args[2], args[3]),
            },
            "unlink" => Op::Unlink {
                path: at_path("AT_FDCWD", args[0]),
            },
            "unlinkat" => Op::Unlink {
                path: at_path(args[0], args[1]),
            },
            "mkdir" => Op::Mkdir {
                path: at_path("AT_FDCWD", args[0]),
            },
            "mkdirat" => Op::Mkdir {
                path: at_path(args[0], args[1]),
            },
            _ => continue,
        };
        ops.push(op);
    }
    ops
}

// ---------------------------------------------------------------------------------------------
// The simulated filesystem.

#[derive(Debug, Clone, Default)]
struct Inode {
    dir: bool,
    data: Vec<u8>,
    durable: Vec<u8>,
}

struct OpenFile {
    inode: usize,
    offset: u64,
    append: bool,
}

/// Two namespaces over one set of inodes: what the process sees, and what a cut keeps. Paths
/// outside `root` are not simulated.
struct SimFs {
    root: PathBuf,
    inodes: Vec<Inode>,
    seen: BTreeMap<PathBuf, usize>,
    durable: BTreeMap<PathBuf, usize>,
    fds: HashMap<i64, OpenFile>,
    /// The durable entries inside a directory whose own durable entry went away (renamed, or
    /// replaced), by the directory's inode, relative to it: they belong to the directory, not
    /// to its old path, and come back wherever its entry next becomes durable.
    detached: HashMap<usize, Vec<(PathBuf, usize)>>,
}

impl SimFs {
    fn new(root: &Path) -> Self {
        let mut fs = Self {
            root: root.to_path_buf(),
            inodes: vec![Inode {
                dir: true,
                ..Inode::default()
            }],
            seen: BTreeMap::new(),
            durable: BTreeMap::new(),
            fds: HashMap::new(),
            detached: HashMap::new(),
        };
        fs.seen.insert(root.to_path_buf(), 0);
        fs.durable.insert(root.to_path_buf(), 0);
        fs
    }

    /// Takes what is already under the root as durable (written before the trace began).
    fn adopt_tree(&mut self, dir: &Path) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("list")
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            let is_dir = path.is_dir();
            let inode = self.new_inode(is_dir);
            if is_dir {
                self.adopt_tree(&path);
            } else {
                let data = std::fs::read(&path).expect("read");
                self.inodes[inode].durable = data.clone();
                self.inodes[inode].data = data;
            }
            self.seen.insert(path.clone(), inode);
            self.durable.insert(path, inode);
        }
    }

    fn inside(&self, path: &Path) -> bool {
        path.starts_with(&self.root) && path != self.root
    }

    fn new_inode(&mut self, dir: bool) -> usize {
        self.inodes.push(Inode {
            dir,
            ..Inode::default()
        });
        self.inodes.len() - 1
    }

    /// Applies `op`; whether it changed the simulated filesystem (and so deserves a cut after).
    fn apply(&mut self, op: &Op) -> bool {
        match op {
            Op::Open {
                fd,
                path,
                create,
                truncate,
                append,
            } => {
                if !self.inside(path) && path != &self.root {
                    return false;
                }
                let inode = match self.seen.get(path) {
                    Some(&inode) => inode,
                    None if *create => {
                        let inode = self.new_inode(false);
                        self.seen.insert(path.clone(), inode);
                        inode
                    }
                    None => panic!(
                        "opened {} which the simulation does not have",
                        path.display()
                    ),
                };
                if *truncate {
                    self.inodes[inode].data.clear();
                }
                self.fds.insert(
                    *fd,
                    OpenFile {
                        inode,
                        offset: 0,
                        append: *append,
                    },
                );
                *create || *truncate
            }
            Op::Write { fd, data } => {
                let Some(file) = self.fds.get_mut(fd) else {
                    return false;
                };
                let inode = &mut self.inodes[file.inode];
                let at = if file.append {
                    inode.data.len()
                } else {
                    file.offset as usize
                };
                if inode.data.len() < at + data.len() {
                    inode.data.resize(at + data.len(), 0);
                }
                inode.data[at..at + data.len()].copy_from_slice(data);
                file.offset = (at + data.len()) as u64;
                true
            }
            Op::Seek { fd, to } => {
                if let Some(file) = self.fds.get_mut(fd) {
                    file.offset = *to;
                }
                false
            }
            Op::Truncate { fd, len } => {
                let Some(file) = self.fds.get(fd) else {
                    return false;
                };
                self.inodes[file.inode].data.resize(*len as usize, 0);
                true
            }
            Op::Sync { fd } => {
                let Some(file) = self.fds.get(fd) else {
                    return false;
                };
                let inode = file.inode;
                if self.inodes[inode].dir {
                    let dir = self
                        .seen
                        .iter()
                        .find(|(_, i)| **i == inode)
                        .map(|(p, _)| p.clone())
                        .expect("a directory with a name");
                    // The directory's own entries become what the process sees.
                    let old: Vec<(PathBuf, usize)> = self
                        .durable
                        .iter()
                        .filter(|(p, _)| p.parent() == Some(dir.as_path()))
                        .map(|(p, &i)| (p.clone(), i))
                        .collect();
                    let new: BTreeMap<PathBuf, usize> = self
                        .seen
                        .iter()
                        .filter(|(p, _)| p.parent() == Some(dir.as_path()))
                        .map(|(p, &i)| (p.clone(), i))
                        .collect();
                    for (path, inode) in old {
                        self.durable.remove(&path);
                        if new.get(&path) != Some(&inode) && self.inodes[inode].dir {
                            // A subdirectory's durable contents travel with it (a rename), and
                            // a new directory at its old path does not inherit them.
                            let inside: Vec<(PathBuf, usize)> = self
                                .durable
                                .iter()
                                .filter(|(p, _)| p.starts_with(&path) && **p != path)
                                .map(|(p, &i)| (p.strip_prefix(&path).expect("inside").into(), i))
                                .collect();
                            for (rel, _) in &inside {
                                self.durable.remove(&path.join(rel));
                            }
                            self.detached.entry(inode).or_default().extend(inside);
                        }
                    }
                    for (path, inode) in new {
                        if let Some(inside) = self.detached.remove(&inode) {
                            for (rel, i) in inside {
                                self.durable.insert(path.join(rel), i);
                            }
                        }
                        self.durable.insert(path, inode);
                    }
                } else {
                    let node = &mut self.inodes[inode];
                    node.durable = node.data.clone();
                }
                true
            }
            Op::Close { fd } => {
                self.fds.remove(fd);
                false
            }
            Op::Rename { from, to } => {
                if !self.inside(from) {
                    return false;
                }
                let moved: Vec<(PathBuf, usize)> = self
                    .seen
                    .iter()
                    .filter(|(p, _)| p.starts_with(from))
                    .map(|(p, &i)| (p.clone(), i))
                    .collect();
                for (path, _) in &moved {
                    self.seen.remove(path);
                }
                self.seen.retain(|p, _| !p.starts_with(to));
                for (path, inode) in moved {
                    let rest = path.strip_prefix(from).expect("prefix");
                    self.seen.insert(to.join(rest), inode);
                }
                true
            }
            Op::Link { from, to } => {
                if !self.inside(to) {
                    return false;
                }
                let inode = self.seen[from];
                self.seen.insert(to.clone(), inode);
                true
            }
            Op::Unlink { path } => {
                if !self.inside(path) {
                    return false;
                }
                self.seen.remove(path);
                true
            }
            Op::Mkdir { path } => {
                if !self.inside(path) {
                    return false;
                }
                let inode = self.new_inode(true);
                self.seen.insert(path.clone(), inode);
                true
            }
            Op::Ack(_) => false,
        }
    }

    /// Writes what a power cut now would leave into `into` (standing for `root`).
    fn materialize(&self, into: &Path) {
        for (path, &inode) in &self.durable {
            if path == &self.root {
                continue;
            }
            // Reachable only through durable directories all the way up.
            let reachable = path
                .ancestors()
                .skip(1)
                .take_while(|a| *a != self.root)
                .all(|a| self.durable.get(a).is_some_and(|&i| self.inodes[i].dir));
            if !reachable {
                continue;
            }
            let target = into.join(path.strip_prefix(&self.root).expect("inside"));
            let node = &self.inodes[inode];
            if node.dir {
                std::fs::create_dir_all(&target).expect("mkdir");
            } else {
                std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
                std::fs::write(&target, &node.durable).expect("write");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The checks after a cut.

#[derive(Default)]
struct Acked {
    init: bool,
    /// Task → (title, furthest status acknowledged).
    tasks: BTreeMap<TaskId, (Option<String>, TaskStatus)>,
}

impl Acked {
    fn note(&mut self, ack: &str) {
        let mut parts = ack.splitn(4, ' ');
        let (_, kind, task, rest) = (parts.next(), parts.next(), parts.next(), parts.next());
        match kind {
            Some("INIT") => self.init = true,
            Some("ADD") => {
                let task: TaskId = task.expect("id").parse().expect("id");
                self.tasks
                    .insert(task, (rest.map(str::to_owned), TaskStatus::Pending));
            }
            Some("MOVE") => {
                let task: TaskId = task.expect("id").parse().expect("id");
                let to: TaskStatus = rest.expect("status").parse().expect("status");
                self.tasks.get_mut(&task).expect("moved an added task").1 = to;
            }
            _ => panic!("bad ack {ack}"),
        }
    }
}

fn rank(status: TaskStatus) -> u8 {
    match status {
        TaskStatus::Pending => 0,
        TaskStatus::InProgress => 1,
        _ => 2,
    }
}

/// Every state file present parses, and the store holds every acknowledged update.
fn check_cut(dir: &Path, acked: &Acked, what: &str) -> Result<(), String> {
    let project = dir.join(".claude/projects/demo");
    let mut files = vec![project.join("tasks.json"), project.join("project.json")];
    files.push(project.join("progress/velocity.json"));
    if let Ok(entries) = std::fs::read_dir(project.join("checkpoints")) {
        files.extend(entries.flatten().map(|e| e.path()));
    }
    for file in files {
        if let Ok(bytes) = std::fs::read(&file) {
            serde_json::from_slice::<serde_json::Value>(&bytes).map_err(|e| {
                format!(
                    "{what}: {} ({} bytes) does not parse: {e}",
                    file.display(),
                    bytes.len()
                )
            })?;
        }
    }
    let log =
        progress_log::read_all(&project.join("progress/log.md")).map_err(|e| e.to_string())?;
    if !log.skipped.is_empty() {
        return Err(format!("{what}: damaged log entries {:?}", log.skipped));
    }
    if !acked.init {
        return Ok(());
    }
    let service = ProjectService::new(Arc::new(FsProjectStore::new(dir)), Arc::new(SystemClock));
    let state = block_on(service.load(&project_id()))
        .map_err(|e| format!("{what}: the store does not load: {e}"))?;
    for (task, (title, status)) in &acked.tasks {
        let found = state
            .tasks
            .get(task)
            .ok_or_else(|| format!("{what}: acknowledged {task} is gone"))?;
        if let Some(title) = title
            && &found.title != title
        {
            return Err(format!(
                "{what}: {task} is {:?}, not {title:?}",
                found.title
            ));
        }
        if rank(found.status) < rank(*status) {
            return Err(format!(
                "{what}: {task} is {}, but {status} was acknowledged",
                found.status
            ));
        }
    }
    Ok(())
}

/// Runs one traced history and cuts after every syscall that changed the simulated filesystem.
/// Returns the number of cuts.
fn cut_history(seed: u64) -> usize {
    let acked = std::cell::RefCell::new(Acked::default());
    let cuts = trace_and_cut(
        "history",
        &seed.to_string(),
        |_| {},
        |line| acked.borrow_mut().note(line),
        |dir, what| check_cut(dir, &acked.borrow(), what),
    );
    assert!(
        acked.borrow().init,
        "seed {seed}: the trace holds the writer's acknowledgements"
    );
    cuts
}

/// Runs the child `role` under strace on a fresh root (`setup` writes what exists before the
/// trace) and cuts after every syscall that changed the simulated filesystem, checking each cut
/// with `check` after feeding it every acknowledgement so far. Returns the number of cuts.
fn trace_and_cut<'a>(
    role: &str,
    arg: &str,
    setup: impl FnOnce(&Path),
    mut ack: impl FnMut(&str) + 'a,
    check: impl Fn(&Path, &str) -> Result<(), String> + 'a,
) -> usize {
    let work = tempfile::tempdir().expect("tempdir");
    let root = work.path().join("repo");
    std::fs::create_dir(&root).expect("root");
    setup(&root);
    // What exists before the trace is durable at its start; adopted now, before the writer
    // runs (adopting it afterwards would start every cut from the writer's final files).
    let canonical = root.canonicalize().expect("canonical root");
    let mut fs = SimFs::new(&canonical);
    fs.adopt_tree(&canonical);
    let trace = work.path().join("trace.txt");
    let child = child_command(role, &root, arg);
    let mut command = Command::new("strace");
    command
        .args(["-f", "-y", "-xx", "-s", "100000000", "-qq", "-o"])
        .arg(&trace)
        .args([
            "-e",
            "trace=openat,write,writev,lseek,ftruncate,fsync,fdatasync,close,rename,renameat,renameat2,link,linkat,unlink,unlinkat,mkdir,mkdirat",
        ])
        .arg(child.get_program())
        .args(child.get_args())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in child.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    let output = command.output().expect("run strace");
    assert!(
        output.status.success(),
        "the traced writer failed: {}",
        support::describe(&output)
    );
    let ops = parse_trace(&std::fs::read_to_string(&trace).expect("trace"));
    let mut cuts = 0;
    for (k, op) in ops.iter().enumerate() {
        if let Op::Ack(line) = op {
            ack(line);
            continue;
        }
        if !fs.apply(op) {
            continue;
        }
        let cut = tempfile::tempdir().expect("cut dir");
        fs.materialize(cut.path());
        let what = format!("{role} {arg}, cut after syscall {k} ({op:?})");
        if let Err(failure) = check(cut.path(), &what) {
            let kept = cut.keep();
            let trace = work.keep().join("trace.txt");
            panic!(
                "{failure}\nthe cut's files are kept in {}, the trace in {}",
                kept.display(),
                trace.display()
            );
        }
        cuts += 1;
    }
    cuts
}

#[test]
fn every_acknowledged_update_survives_a_power_cut_after_any_syscall() {
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("skipped: strace is not installed");
        return;
    }
    let histories: u64 = std::env::var(HISTORIES_ENV)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_HISTORIES);
    let mut cuts = 0;
    for seed in 1..=histories {
        cuts += cut_history(seed * 7919);
    }
    eprintln!("{cuts} power cuts over {histories} histories, every one clean");
    assert!(cuts >= 1000, "{cuts} cuts is too few to mean much");
}

/// Issue #16 for the plan wing: a transaction writes state.md and decisions.md through its
/// intent, so after a cut anywhere the two agree, and nothing acknowledged is lost.
#[test]
fn a_plan_transaction_cut_anywhere_leaves_state_and_decisions_agreeing() {
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("skipped: strace is not installed");
        return;
    }
    let acked = std::cell::Cell::new(0);
    let cuts = trace_and_cut(
        "plan-history",
        "",
        |root| block_on(executing_plan(root)),
        |_| acked.set(acked.get() + 1),
        |dir, what| check_plan_cut(dir, acked.get(), what),
    );
    eprintln!("{cuts} power cuts over {PLAN_STEPS} plan transactions, every one clean");
    assert_eq!(acked.get(), PLAN_STEPS, "every transaction acknowledged");
    assert!(
        cuts >= 10 * PLAN_STEPS,
        "{cuts} cuts is too few to mean much"
    );
}

/// Issue #16 for execution sessions: a session writer cut after any syscall leaves files that
/// parse, and once the next command has settled, a session and a project that agree on every
/// task, with every acknowledged step present.
#[test]
fn a_session_cut_anywhere_leaves_session_and_project_agreeing() {
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("skipped: strace is not installed");
        return;
    }
    let acks = std::cell::RefCell::new(Vec::new());
    let cuts = trace_and_cut(
        "session-history",
        "",
        |root| block_on(session_project(root)),
        |line| acks.borrow_mut().push(line.to_owned()),
        |dir, what| check_session_cut(dir, &acks.borrow(), what),
    );
    eprintln!("{cuts} power cuts over a session's start, task ends and finish, every one clean");
    assert!(
        acks.borrow().iter().any(|a| a == "ACK FINISH"),
        "the whole history ran"
    );
    assert!(cuts >= 100, "{cuts} cuts is too few to mean much");
}

/// The harness is only as good as its reading of the trace: a syscall it drops is a write or a
/// sync the simulated disk never sees. A call another thread interrupted arrives in two halves,
/// the second padded to a column; a vectored write carries its bytes in several buffers.
#[test]
fn the_trace_reader_keeps_split_calls_and_vectored_writes() {
    let hex = |text: &str| {
        text.bytes()
            .map(|b| format!("\\x{b:02x}"))
            .collect::<String>()
    };
    let file = hex("/r/t");
    let trace = format!(
        "7 openat(AT_FDCWD<{root}>, \"{file}\", O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0666) = 4<{file}>\n\
         7 writev(4<{file}>, [{{iov_base=\"{ab}\", iov_len=2}}, {{iov_base=\"{cd}\", iov_len=2}}], 2) = 3\n\
         7 fsync(4<{file}> <unfinished ...>\n\
         8 close(5<{file}>) = 0\n\
         7 <... fsync resumed>)              = 0\n",
        root = hex("/r"),
        ab = hex("ab"),
        cd = hex("cd"),
    );
    let ops = parse_trace(&trace);
    let kinds: Vec<String> = ops.iter().map(|op| format!("{op:?}")).collect();
    assert_eq!(ops.len(), 4, "{kinds:?}");
    assert!(
        matches!(&ops[1], Op::Write { fd: 4, data } if data == b"abc"),
        "{kinds:?}"
    );
    assert!(matches!(ops[2], Op::Close { fd: 5 }), "{kinds:?}");
    assert!(matches!(ops[3], Op::Sync { fd: 4 }), "{kinds:?}");
}
