//! cairn's benchmarks. Run through `cargo xtask bench`, which builds this and the real binaries in
//! release mode first.
//!
//! Every figure is reported beside a *floor* measured in the same run on the same machine: the
//! least work any implementation must do for that operation (write + fsync + rename a file of the
//! same size; start a process that reads its input and prints `{}`). Absolute times on a shared
//! machine mean little; the ratio to the floor is what we track. Nothing here asserts a timing.
//!
//! Internal modes (used by the harness on itself, so each measured process is a fresh one):
//! `store-one`, `rss`, `floor-hook`, `floor-read`, `floor-write`. And `profile N`, which times
//! each step of one update on N tasks, for finding what dominates.

mod big;
mod board;
mod fixture;
mod mcp;
mod pg;
mod session;
mod stats;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_domain::project::service::ProjectService;
use cairn_domain::project::{MoveDetail, TaskId, TaskStatus};
use cairn_storage_fs::{FsProjectStore, SystemClock};
use serde::{Deserialize, Serialize};

use stats::Stats;

const USAGE: &str = "usage: cairn-bench all [--cairn PATH] [--hook PATH] [--pg URL] [--quick] [--only store|cli|board|session|hook|pg|mcp|big]
       cairn-bench profile N

  all       every group, each beside its floor (a process doing the least the operation must);
            --cairn/--hook name the release binaries to measure (`cargo xtask bench` passes them),
            --quick stops at 10,000 tasks, --only runs one group (mcp also runs the cli
            rows it is compared with); --pg names a PostgreSQL server
            (a URL whose user may create databases) for the pg group, which `cargo xtask bench`
            starts; big (the commands that handle the whole store: doctor --full, checkpoint
            restore, merge-driver, a first import) runs at 100,000 tasks only, --quick or not
  profile   where the time of one store update on N tasks goes
  fixture DIR N
            builds the bench's N-task store in DIR (to run a profiler on one command)";

/// The allocator `cairn` and `cairn-hook` use, so a floor is measured with the same heap as the
/// command beside it.
#[global_allocator]
static HEAP: cairn_heap::Heap = cairn_heap::Heap;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // The floors and `profile` stand for a short cairn process, and tune their heap as it does.
    if matches!(
        args.first().map(String::as_str),
        Some("floor-read" | "floor-write" | "profile")
    ) {
        cairn_heap::tune_for_a_short_process();
    }
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let result = match args.first().map(String::as_str) {
        Some("all") => all(&args[1..]),
        Some("store-one") => store_one(&args[1..]),
        Some("rss") => rss(&args[1..]),
        Some("floor-hook") => floor_hook(),
        Some("floor-read") => floor_read(&args[1..]),
        Some("floor-write") => floor_write(&args[1..]),
        Some("profile") => profile(&args[1..]),
        Some("fixture") => make_fixture(&args[1..]),
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cairn-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| e.to_string())
}

/// One row of the report.
#[derive(Debug, Serialize, Deserialize)]
struct Row {
    operation: String,
    tasks: usize,
    median_ms: f64,
    p95_ms: f64,
    floor: String,
    floor_median_ms: f64,
    peak_rss_mb: Option<f64>,
}

impl Row {
    fn ratio(&self) -> f64 {
        if self.floor_median_ms > 0.0 {
            self.median_ms / self.floor_median_ms
        } else {
            f64::NAN
        }
    }
}

fn all(args: &[String]) -> Result<(), String> {
    let quick = args.iter().any(|a| a == "--quick");
    // `--only store|cli|board|session|hook|mcp` runs one group, for quick iterations on one part.
    let only = flag(args, "--only");
    if let Some(group) = only.as_deref()
        && ![
            "store", "cli", "board", "session", "hook", "pg", "mcp", "big",
        ]
        .contains(&group)
    {
        return Err(format!("--only {group}: no such group\n{USAGE}"));
    }
    let wants = |group: &str| only.as_deref().is_none_or(|o| o == group);
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut rows = Vec::new();

    let store_sizes: &[usize] = if quick {
        &[1_000, 10_000]
    } else {
        &[1_000, 10_000, 50_000, 100_000]
    };
    for &n in store_sizes.iter().filter(|_| wants("store")) {
        let iters = match n {
            100_000.. => 7,
            50_000.. => 15,
            _ => 30,
        };
        let out = Command::new(&me)
            .args(["store-one", &n.to_string(), &iters.to_string()])
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "store-one {n} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        rows.extend(
            serde_json::from_slice::<Vec<Row>>(&out.stdout)
                .map_err(|e| format!("store-one output: {e}"))?,
        );
    }

    // The MCP rows are read beside the CLI's whole-process ones, so `--only mcp` runs those too.
    let cairn = flag(args, "--cairn")
        .map(PathBuf::from)
        .filter(|_| wants("cli") || wants("mcp"));
    let mcp_cairn = flag(args, "--cairn")
        .map(PathBuf::from)
        .filter(|_| wants("mcp"));
    let hook = flag(args, "--hook")
        .map(PathBuf::from)
        .filter(|_| wants("hook"));
    let board_cairn = flag(args, "--cairn")
        .map(PathBuf::from)
        .filter(|_| wants("board"));
    let session_cairn = flag(args, "--cairn")
        .map(PathBuf::from)
        .filter(|_| wants("session"));
    let pg_cairn = flag(args, "--cairn")
        .map(PathBuf::from)
        .filter(|_| wants("pg"));
    let pg_server = flag(args, "--pg");
    let big_cairn = flag(args, "--cairn")
        .map(PathBuf::from)
        .filter(|_| wants("big"));
    // 100,000 tasks is the size at which every command must stay under 500 ms (#16).
    let process_sizes: &[usize] = if only.as_deref() == Some("big") {
        &[100_000]
    } else if quick {
        &[1_000, 10_000]
    } else {
        &[1_000, 10_000, 100_000]
    };
    for &n in process_sizes {
        // The PostgreSQL rows stop at 10,000 tasks; alone, they need no bigger fixture.
        if only.as_deref() == Some("pg") && n > 10_000 {
            continue;
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let iters = if n >= 100_000 { 7 } else { 20 };
        let tasks_json = fixture::build(dir.path(), n)?;
        let floor_read = time_process(
            iters,
            |_| {
                vec![
                    me.display().to_string(),
                    "floor-read".into(),
                    tasks_json.display().to_string(),
                ]
            },
            None,
        )?;
        let floor_write = time_process(
            iters,
            |_| {
                vec![
                    me.display().to_string(),
                    "floor-write".into(),
                    tasks_json.display().to_string(),
                ]
            },
            None,
        )?;
        let floor_hook = time_process(
            iters,
            |_| vec![me.display().to_string(), "floor-hook".into()],
            Some(b"{}"),
        )?;
        let root = dir.path().display().to_string();

        if let Some(cairn) = &cairn {
            let c = cairn.display().to_string();
            let next = |_| {
                vec![
                    c.clone(),
                    "--root".into(),
                    root.clone(),
                    "task".into(),
                    "next".into(),
                ]
            };
            let floor_read_argv = |_| {
                vec![
                    me.display().to_string(),
                    "floor-read".into(),
                    tasks_json.display().to_string(),
                ]
            };
            let floor_write_argv = |_| {
                vec![
                    me.display().to_string(),
                    "floor-write".into(),
                    tasks_json.display().to_string(),
                ]
            };
            let complete = |i| {
                vec![
                    c.clone(),
                    "--root".into(),
                    root.clone(),
                    "task".into(),
                    "complete".into(),
                    fixture::started_task(i).to_string(),
                ]
            };
            let [next, floor] = time_interleaved(iters, [&next, &floor_read_argv])?;
            rows.push(row(
                "cairn task next (process)",
                n,
                &next,
                "process reading tasks.json, interleaved",
                &floor,
                peak_rss(&me, &[&c, "--root", &root, "task", "next"], None),
            ));
            let [complete, floor] = time_interleaved(iters, [&complete, &floor_write_argv])?;
            let last = fixture::started_task(iters + 1).to_string();
            rows.push(row(
                "cairn task complete (process)",
                n,
                &complete,
                "process rewriting tasks.json, interleaved",
                &floor,
                peak_rss(&me, &[&c, "--root", &root, "task", "complete", &last], None),
            ));
        }
        if let Some(cairn) = &mcp_cairn {
            // The CLI's rows completed the first `iters + 2` started tasks.
            let (next, complete) = mcp::measure(cairn, dir.path(), iters, iters + 2)?;
            rows.push(row(
                "cairn mcp next (warm call)",
                n,
                &next,
                "process reading tasks.json",
                &floor_read,
                None,
            ));
            rows.push(row(
                "cairn mcp complete (warm call)",
                n,
                &complete,
                "process rewriting tasks.json",
                &floor_write,
                None,
            ));
        }
        if let Some(cairn) = &board_cairn {
            let (render, event) = board::measure(cairn, dir.path(), iters)?;
            rows.push(row(
                "cairn board GET /api/board",
                n,
                &render,
                "process reading tasks.json",
                &floor_read,
                None,
            ));
            let debounce = Stats::new(vec![Duration::from_millis(40)]);
            rows.push(row(
                "cairn board file change -> SSE",
                n,
                &event,
                "the 40 ms debounce",
                &debounce,
                None,
            ));
        }
        if let (Some(cairn), Some(server)) = (&pg_cairn, &pg_server)
            && n <= 10_000
        {
            rows.extend(pg::measure(
                cairn,
                server,
                n,
                iters,
                &floor_read,
                &floor_write,
            )?);
        }
        if let Some(cairn) = &session_cairn {
            let done = session::measure(cairn, dir.path(), iters)?;
            rows.push(row(
                "cairn session task done (process)",
                n,
                &done,
                "process rewriting tasks.json",
                &floor_write,
                None,
            ));
        }
        if let Some(hook) = &hook {
            let h = hook.display().to_string();
            type Payload = fn(&Path, usize) -> String;
            // Stop runs after SessionStart, whose sessions it reuses (see `fixture::stop`).
            let events: [(&str, Payload); 5] = [
                ("cairn-hook PreToolUse, allowed", |d, s| {
                    fixture::pre_tool_use(d, "src/main.rs", s)
                }),
                ("cairn-hook PreToolUse, denied", |d, s| {
                    fixture::pre_tool_use(d, ".claude/projects/bench/tasks.json", s)
                }),
                ("cairn-hook SessionStart", fixture::session_start),
                ("cairn-hook PreCompact", fixture::pre_compact),
                ("cairn-hook Stop", fixture::stop),
            ];
            for (name, payload) in events {
                let timed =
                    time_process_env(iters, &[h.as_str()], |i| payload(dir.path(), i), dir.path())?;
                let rss = peak_rss(
                    &me,
                    &[&h],
                    Some((payload(dir.path(), iters + 1).as_bytes(), dir.path())),
                );
                rows.push(row(name, n, &timed, "process echoing {}", &floor_hook, rss));
            }
            // Stop again once the sessions have work open: the reminder's full cost.
            fixture::start_a_ready_task(dir.path())?;
            let timed = time_process_env(
                iters,
                &[h.as_str()],
                |i| fixture::stop(dir.path(), i),
                dir.path(),
            )?;
            let rss = peak_rss(
                &me,
                &[&h],
                Some((fixture::stop(dir.path(), iters + 1).as_bytes(), dir.path())),
            );
            rows.push(row(
                "cairn-hook Stop, work open",
                n,
                &timed,
                "process echoing {}",
                &floor_hook,
                rss,
            ));
            // Last, so that no earlier row sees the plan: PreToolUse with an active plan.
            fixture::start_plan(dir.path())?;
            let edit = |i| fixture::pre_tool_use(dir.path(), "src/main.rs", i);
            let timed = time_process_env(iters, &[h.as_str()], edit, dir.path())?;
            let rss = peak_rss(&me, &[&h], Some((edit(iters + 1).as_bytes(), dir.path())));
            rows.push(row(
                "cairn-hook PreToolUse, plan in PLAN",
                n,
                &timed,
                "process echoing {}",
                &floor_hook,
                rss,
            ));
        }
        // Last: it restores a checkpoint and edits a task, which no other group expects.
        if let Some(cairn) = big_cairn.as_ref().filter(|_| n >= 100_000) {
            for big::Measured {
                name,
                stats,
                writes,
            } in big::measure(cairn, dir.path(), iters.min(5))?
            {
                let (floor_name, floor) = if writes {
                    ("process rewriting tasks.json", &floor_write)
                } else {
                    ("process reading tasks.json", &floor_read)
                };
                rows.push(row(name, n, &stats, floor_name, floor, None));
            }
        }
    }
    print_table(&rows);
    print_mcp_speedups(&rows);
    Ok(())
}

/// Each warm MCP call beside the `cairn task` command doing the same in a process of its own.
fn print_mcp_speedups(rows: &[Row]) {
    let pairs = [
        ("cairn mcp next (warm call)", "cairn task next (process)"),
        (
            "cairn mcp complete (warm call)",
            "cairn task complete (process)",
        ),
    ];
    let mut out = std::io::stdout().lock();
    for mcp in rows {
        let Some((_, cli)) = pairs.iter().find(|(m, _)| *m == mcp.operation) else {
            continue;
        };
        if let Some(cli) = rows
            .iter()
            .find(|r| r.operation == *cli && r.tasks == mcp.tasks)
        {
            let _ = writeln!(
                out,
                "{} at {} tasks: {:.2} ms, {:.2}x the process's {:.2} ms",
                mcp.operation,
                mcp.tasks,
                mcp.median_ms,
                mcp.median_ms / cli.median_ms,
                cli.median_ms
            );
        }
    }
}

fn row(
    operation: &str,
    tasks: usize,
    timed: &Stats,
    floor: &str,
    floor_stats: &Stats,
    rss: Option<f64>,
) -> Row {
    Row {
        operation: operation.to_owned(),
        tasks,
        median_ms: timed.median_ms(),
        p95_ms: timed.p95_ms(),
        floor: floor.to_owned(),
        floor_median_ms: floor_stats.median_ms(),
        peak_rss_mb: rss,
    }
}

fn print_table(rows: &[Row]) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{:<34} {:>6} {:>9} {:>9} {:>11} {:>7} {:>9}  floor",
        "operation", "tasks", "median", "p95", "floor med.", "ratio", "peak RSS"
    );
    for r in rows {
        let rss = r
            .peak_rss_mb
            .map_or_else(|| "-".to_owned(), |m| format!("{m:.1} MB"));
        let _ = writeln!(
            out,
            "{:<34} {:>6} {:>7.2}ms {:>7.2}ms {:>9.2}ms {:>6.2}x {:>9}  {}",
            r.operation,
            r.tasks,
            r.median_ms,
            r.p95_ms,
            r.floor_median_ms,
            r.ratio(),
            rss,
            r.floor
        );
    }
}

/// `store-one N ITERS`: one task status update through `FsProjectStore`, in this process.
fn store_one(args: &[String]) -> Result<(), String> {
    let n: usize = args
        .first()
        .and_then(|a| a.parse().ok())
        .ok_or("store-one N ITERS")?;
    let iters: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .ok_or("store-one N ITERS")?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let tasks_json = fixture::build(dir.path(), n)?;
    let size = std::fs::metadata(&tasks_json)
        .map_err(|e| e.to_string())?
        .len() as usize;
    let rt = runtime()?;
    let service = ProjectService::new(
        Arc::new(FsProjectStore::new(dir.path())),
        Arc::new(SystemClock),
    );
    let id = fixture::project_id();
    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters {
        let task = TaskId::from_number(fixture::FIRST_FREE_TASK + i as u64);
        let start = Instant::now();
        rt.block_on(service.move_task(&id, &task, TaskStatus::InProgress, MoveDetail::default()))
            .map_err(|e| e.to_string())?;
        samples.push(start.elapsed());
    }
    let floor_file = dir.path().join("floor.json");
    let payload = vec![b'x'; size];
    let mut floor = Vec::with_capacity(iters);
    for _ in 0..iters {
        let start = Instant::now();
        write_fsync_rename(&floor_file, &payload)?;
        floor.push(start.elapsed());
    }
    let rss = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|u| u.max_rss() as f64 / 1024.0)
        .ok();
    let update = Stats::new(samples);
    let write_ahead = write_ahead_cost(&tasks_json, &dir.path().join("wal-copy.md"), iters)?;
    let rows = [
        row(
            "store: one task status update",
            n,
            &update,
            "write+fsync+rename, same size",
            &Stats::new(floor),
            rss,
        ),
        row(
            "store: its write-ahead log append",
            n,
            &write_ahead,
            "the whole update (share)",
            &update,
            None,
        ),
    ];
    serde_json::to_writer(std::io::stdout(), &rows).map_err(|e| e.to_string())
}

/// What the write-ahead log adds to an update: the update's own last log entry (its event and
/// replay payload, as the store wrote it) appended again, with its fsync, to a copy of the log.
/// The rest of the update (read, validate, render, stage, rename) is the same with or without it.
fn write_ahead_cost(tasks_json: &Path, copy: &Path, iters: usize) -> Result<Stats, String> {
    use cairn_storage_fs::progress_log;
    let log = tasks_json.with_file_name("progress").join("log.md");
    let tail = progress_log::read_tail(&log, 64 * 1024).map_err(|e| e.to_string())?;
    let last = tail.records.last().ok_or("the update logged nothing")?;
    std::fs::copy(&log, copy).map_err(|e| e.to_string())?;
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        let start = Instant::now();
        progress_log::append_all(copy, std::slice::from_ref(last)).map_err(|e| e.to_string())?;
        samples.push(start.elapsed());
    }
    Ok(Stats::new(samples))
}

/// The floor of a state-file update: the bytes must reach the disk and replace the old file.
fn write_fsync_rename(target: &Path, bytes: &[u8]) -> Result<(), String> {
    let temp = target.with_extension("tmp");
    let mut f = std::fs::File::create(&temp).map_err(|e| e.to_string())?;
    f.write_all(bytes).map_err(|e| e.to_string())?;
    f.sync_all().map_err(|e| e.to_string())?;
    std::fs::rename(&temp, target).map_err(|e| e.to_string())
}

fn time_process(
    iters: usize,
    argv: impl Fn(usize) -> Vec<String>,
    stdin: Option<&[u8]>,
) -> Result<Stats, String> {
    let samples = (0..iters)
        .map(|i| time_once(&argv(i), stdin))
        .collect::<Result<_, _>>()?;
    Ok(Stats::new(samples))
}

/// `iters` runs of each of the commands, alternated — A B, B A, A B, … — so that the machine's
/// drift during the run lands on each of them alike. A floor timed as a block of its own, minutes
/// from its command's block, moved a ratio by as much as the machine moved in between (on this
/// VM the floor of a rewrite took 7.4 ms in one run and 9.8 ms in the next).
fn time_interleaved<const N: usize>(
    iters: usize,
    argvs: [&dyn Fn(usize) -> Vec<String>; N],
) -> Result<[Stats; N], String> {
    let mut samples: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::with_capacity(iters));
    for i in 0..iters {
        let mut order: Vec<usize> = (0..N).collect();
        if i % 2 == 1 {
            order.reverse();
        }
        for k in order {
            samples[k].push(time_once(&argvs[k](i), None)?);
        }
    }
    Ok(samples.map(Stats::new))
}

/// The wall time of one run of `args`, from its spawn to its exit; an error if it fails.
fn time_once(args: &[String], stdin: Option<&[u8]>) -> Result<Duration, String> {
    let start = Instant::now();
    let mut child = Command::new(&args[0])
        .args(&args[1..])
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", args[0]))?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input).map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let took = start.elapsed();
    if !out.status.success() {
        return Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(took)
}

fn time_process_env(
    iters: usize,
    argv: &[&str],
    stdin: impl Fn(usize) -> String,
    project_dir: &Path,
) -> Result<Stats, String> {
    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters {
        let stdin = stdin(i);
        let start = Instant::now();
        let mut child = Command::new(argv[0])
            .args(&argv[1..])
            .env("CLAUDE_PROJECT_DIR", project_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{}: {e}", argv[0]))?;
        if let Some(mut pipe) = child.stdin.take() {
            pipe.write_all(stdin.as_bytes())
                .map_err(|e| e.to_string())?;
        }
        child.wait().map_err(|e| e.to_string())?;
        samples.push(start.elapsed());
    }
    Ok(Stats::new(samples))
}

/// Peak RSS of one run of `cmd`, measured by a fresh `cairn-bench rss` process whose only child
/// is `cmd`, so `RUSAGE_CHILDREN` is exactly that child's.
fn peak_rss(me: &Path, cmd: &[&str], stdin: Option<(&[u8], &Path)>) -> Option<f64> {
    let mut command = Command::new(me);
    command
        .arg("rss")
        .args(cmd)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some((_, dir)) = stdin {
        command.env("CLAUDE_PROJECT_DIR", dir).stdin(Stdio::piped());
    } else {
        command.stdin(Stdio::null());
    }
    let mut child = command.spawn().ok()?;
    if let (Some((input, _)), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input).ok()?;
    }
    let out = child.wait_with_output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse::<f64>()
        .ok()
}

/// `rss CMD ARGS…`: runs the command with this process's stdin, prints its peak RSS in MB.
fn rss(args: &[String]) -> Result<(), String> {
    let (cmd, rest) = args.split_first().ok_or("rss CMD ARGS…")?;
    Command::new(cmd)
        .args(rest)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map_err(|e| e.to_string())?;
    println_mb(usage.max_rss() as f64 / 1024.0)
}

fn println_mb(mb: f64) -> Result<(), String> {
    writeln!(std::io::stdout(), "{mb:.2}").map_err(|e| e.to_string())
}

/// The hook floor: drain stdin, print `{}`.
fn floor_hook() -> Result<(), String> {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .map_err(|e| e.to_string())?;
    write!(std::io::stdout(), "{{}}").map_err(|e| e.to_string())
}

fn floor_read(args: &[String]) -> Result<(), String> {
    let path = args.first().ok_or("floor-read FILE")?;
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    write!(std::io::stdout(), "{}", bytes.len()).map_err(|e| e.to_string())
}

fn floor_write(args: &[String]) -> Result<(), String> {
    let path = PathBuf::from(args.first().ok_or("floor-write FILE")?);
    let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
    write_fsync_rename(&path.with_file_name("floor-copy.json"), &bytes)
}

fn make_fixture(args: &[String]) -> Result<(), String> {
    let [dir, n] = args else {
        return Err("fixture DIR N".to_owned());
    };
    let n: usize = n
        .parse()
        .map_err(|_| format!("fixture: {n:?} is not a task count"))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{dir}: {e}"))?;
    let tasks_json = fixture::build(Path::new(dir), n)?;
    println!("{}", tasks_json.display());
    Ok(())
}

/// `profile N`: where one update's time goes, step by step (for finding what dominates).
pub fn profile(args: &[String]) -> Result<(), String> {
    use cairn_storage_fs::schema::{self, SchemaKind};
    let n: usize = args
        .first()
        .and_then(|a| a.parse().ok())
        .ok_or("profile N")?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = fixture::build(dir.path(), n)?;
    let mut out = std::io::stdout().lock();
    let mut step = |name: &str, start: Instant| {
        let _ = writeln!(
            out,
            "{name:<28} {:>8.2} ms",
            start.elapsed().as_secs_f64() * 1e3
        );
    };
    let t = Instant::now();
    let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
    step("read file", t);
    let t = Instant::now();
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    step("parse to Value", t);
    let t = Instant::now();
    let ok = schema::is_valid(SchemaKind::Tasks, &value);
    step("schema validate (warm?)", t);
    let t = Instant::now();
    let _ = schema::is_valid(SchemaKind::Tasks, &value);
    step("schema validate again", t);
    let t = Instant::now();
    let _ = schema::validate(SchemaKind::Tasks, &value);
    step("schema validate (errors)", t);
    let t = Instant::now();
    let doc: cairn_domain::project::TaskDoc =
        serde_json::from_value(value).map_err(|e| e.to_string())?;
    step("from_value TaskDoc", t);
    let t = Instant::now();
    let _doc2: cairn_domain::project::TaskDoc =
        serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    step("from_slice TaskDoc", t);
    let t = Instant::now();
    let copy = doc.clone();
    step("clone", t);
    let t = Instant::now();
    let _eq = copy == doc;
    step("compare", t);
    let t = Instant::now();
    let v = serde_json::to_value(&doc).map_err(|e| e.to_string())?;
    step("to_value", t);
    let t = Instant::now();
    let _b = serde_json::to_vec_pretty(&v).map_err(|e| e.to_string())?;
    step("to_vec_pretty(Value)", t);
    let t = Instant::now();
    let _b = serde_json::to_vec_pretty(&doc).map_err(|e| e.to_string())?;
    step("to_vec_pretty(doc)", t);
    let t = Instant::now();
    let lines =
        cairn_storage_fs::project_store::render_tasks_json(&doc).map_err(|e| e.to_string())?;
    step("render_tasks_json(doc)", t);
    let t = Instant::now();
    let _doc3: cairn_domain::project::TaskDoc =
        serde_json::from_slice(&lines).map_err(|e| e.to_string())?;
    step("from_slice, one per line", t);
    let state = cairn_domain::project::ProjectState {
        project: serde_json::from_slice(
            &std::fs::read(path.with_file_name("project.json")).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?,
        tasks: doc,
    };
    let t = Instant::now();
    let _ = cairn_domain::project::graph::critical_path(&state.tasks);
    step("critical_path", t);
    let t = Instant::now();
    let _ = cairn_domain::project::graph::schedule(&state.tasks);
    step("schedule", t);
    let t = Instant::now();
    let _ = cairn_render::prime(&cairn_domain::project::report::prime(&state), None);
    step("prime", t);
    let t = Instant::now();
    let _ = cairn_domain::project::policy::stale_candidates(&state.tasks, chrono::Utc::now());
    step("stale_candidates", t);
    let _ = writeln!(std::io::stdout(), "valid={ok} bytes={}", bytes.len());
    Ok(())
}
