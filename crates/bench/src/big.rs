//! The commands that handle a whole large store at once, at 100,000 tasks (`--only big`): #16
//! wants every command under 500 ms there, and these are the ones that read, check or write the
//! whole list — a full check (with the verdicts of earlier checks, and without them as in a fresh
//! clone), a restore, a merge, a first import from another tool (and, on the project it made,
//! whose every task carries the source's link in `metadata`, `task next`, a fresh clone's full
//! check and the rebuild of its tasks.json destroyed, with and without checkpoints), the first
//! read in a fresh clone and the first write over a tasks.json another tool wrote. Each is timed
//! as a whole process after an untimed step that gives it its usual input:
//! a write before the check and the restore (so tasks.json is new, as it is after a day's work),
//! the verdicts removed, a fresh copy of ours for each merge, a new project for each import, the
//! files git leaves out of a clone removed before the imported project's check, for the first
//! read a copy of tasks.json put in its place (a new file, as a clone or a `git pull` leaves it)
//! without the read cache, and for the first write such a copy read once.

use std::path::Path;

use crate::stats::Stats;
use crate::time_once;

/// One measured command: its row's name, its samples, and whether its floor is a rewrite of
/// tasks.json (else a read).
pub struct Measured {
    pub name: &'static str,
    pub stats: Stats,
    pub writes: bool,
}

pub fn measure(cairn: &Path, root: &Path, iters: usize) -> Result<Vec<Measured>, String> {
    let c = cairn.display().to_string();
    let r = root.display().to_string();
    let on = |root: &str, args: &[&str]| -> Vec<String> {
        let mut argv = vec![c.clone(), "--root".into(), root.to_owned()];
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        argv
    };
    let run = |argv: Vec<String>| time_once(&argv, None).map(|_| ());
    let edit = |i: usize| {
        run(on(
            &r,
            &[
                "task",
                "edit",
                "T-00050",
                "--title",
                &format!("edited for run {i}"),
            ],
        ))
    };
    // A file the run removes, as git leaves it ignored in a fresh clone; absent is as good.
    let remove = |path: &Path| match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.to_string()),
        _ => Ok(()),
    };
    let mut out = Vec::new();

    run(on(&r, &["checkpoint", "write"]))?;
    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters {
        edit(i)?;
        samples.push(time_once(&on(&r, &["doctor", "--full"]), None)?);
    }
    out.push(Measured {
        name: "cairn doctor --full (after a write)",
        stats: Stats::new(samples),
        writes: false,
    });

    // As in a fresh clone, which has no verdicts (git ignores them): every tasks document is
    // validated — tasks.json and the store's checkpoints (two here).
    let verdicts = root.join(".claude/projects/bench/.checkpoints.validated");
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        remove(&verdicts)?;
        samples.push(time_once(&on(&r, &["doctor", "--full"]), None)?);
    }
    out.push(Measured {
        name: "cairn doctor --full (no verdicts kept)",
        stats: Stats::new(samples),
        writes: false,
    });

    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters {
        edit(iters + i)?;
        samples.push(time_once(&on(&r, &["checkpoint", "restore", "1"]), None)?);
    }
    out.push(Measured {
        name: "cairn checkpoint restore (after a write)",
        stats: Stats::new(samples),
        writes: true,
    });

    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let tasks_json = root.join(".claude/projects/bench/tasks.json");
    let [base, ours, theirs] =
        ["base.json", "ours.json", "theirs.json"].map(|f| work.path().join(f));
    let copy = |from: &Path, to: &Path| {
        std::fs::copy(from, to)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    copy(&tasks_json, &base)?;
    edit(2 * iters)?;
    copy(&tasks_json, &theirs)?;
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        copy(&base, &ours)?;
        // git runs the driver at the top of the work tree, where the path it names finds the
        // project (and its read cache): named whole here, it finds them from anywhere.
        let argv: Vec<String> = [
            c.as_str(),
            "merge-driver",
            &base.display().to_string(),
            &ours.display().to_string(),
            &theirs.display().to_string(),
            &tasks_json.display().to_string(),
        ]
        .map(str::to_owned)
        .to_vec();
        samples.push(time_once(&argv, None)?);
    }
    out.push(Measured {
        name: "cairn merge-driver (one side edited)",
        stats: Stats::new(samples),
        writes: true,
    });

    let export = work.path().join("taskmaster.json");
    run(on(
        &r,
        &["export", "taskmaster", &export.display().to_string()],
    ))?;
    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters {
        let fresh = work.path().join(format!("import-{i}"));
        std::fs::create_dir(&fresh).map_err(|e| e.to_string())?;
        let fresh = fresh.display().to_string();
        run(on(
            &fresh,
            &[
                "init",
                "--id",
                "imported",
                "--name",
                "Imported",
                "--goal",
                "Everything from the export",
            ],
        ))?;
        let import = on(
            &fresh,
            &["import", "taskmaster", &export.display().to_string()],
        );
        samples.push(time_once(&import, None)?);
    }
    out.push(Measured {
        name: "cairn import taskmaster (all, new)",
        stats: Stats::new(samples),
        writes: true,
    });

    // The last import's project: every task carries its link to the source in `metadata`, as
    // the tasks of a team that moved from another tool do.
    let imported = work
        .path()
        .join(format!("import-{}", iters.saturating_sub(1)));
    let imported_dir = imported.join(".claude/projects/imported");
    let imported = imported.display().to_string();
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        samples.push(time_once(&on(&imported, &["task", "next"]), None)?);
    }
    out.push(Measured {
        name: "cairn task next (imported: metadata on every task)",
        stats: Stats::new(samples),
        writes: false,
    });
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        // What git leaves out of a clone (see `cairn setup git`), gone before each run.
        for ignored in [
            ".tasks.json.cache",
            ".tasks.json.validated",
            ".project.json.validated",
            ".checkpoints.validated",
        ] {
            remove(&imported_dir.join(ignored))?;
        }
        samples.push(time_once(&on(&imported, &["doctor", "--full"]), None)?);
    }
    out.push(Measured {
        name: "cairn doctor --full (imported, in a fresh clone)",
        stats: Stats::new(samples),
        writes: false,
    });
    // Its tasks.json destroyed: the list comes back from the log, whose import commit holds
    // every task; then the same with checkpoints, as a project that has been worked on keeps
    // them: the newest is the base, the others are not read.
    let rebuilt = |name: &'static str| -> Result<Measured, String> {
        let mut samples = Vec::with_capacity(iters);
        for _ in 0..iters {
            std::fs::write(imported_dir.join("tasks.json"), "").map_err(|e| e.to_string())?;
            samples.push(time_once(&on(&imported, &["task", "next"]), None)?);
        }
        Ok(Measured {
            name,
            stats: Stats::new(samples),
            writes: true,
        })
    };
    out.push(rebuilt(
        "cairn task next (imported, tasks.json destroyed: rebuilt from the log)",
    )?);
    for _ in 0..4 {
        run(on(&imported, &["checkpoint", "write"]))?;
    }
    out.push(rebuilt(
        "cairn task next (imported, destroyed, four checkpoints kept)",
    )?);

    // As in a fresh clone: tasks.json a file cairn did not write here (no stamp) and no read
    // cache (git ignores both), so the first command validates every task.
    let pulled = work.path().join("pulled.json");
    let cache = root.join(".claude/projects/bench/.tasks.json.cache");
    // tasks.json replaced by a copy of itself: a new file, as a clone or a `git pull` leaves it.
    let pull = || {
        copy(&tasks_json, &pulled)?;
        std::fs::rename(&pulled, &tasks_json).map_err(|e| e.to_string())
    };
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        pull()?;
        remove(&cache)?;
        samples.push(time_once(&on(&r, &["task", "next"]), None)?);
    }
    out.push(Measured {
        name: "cairn task next (first read in a fresh clone)",
        stats: Stats::new(samples),
        writes: false,
    });

    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters {
        pull()?;
        run(on(&r, &["task", "next"]))?;
        let title = format!("first write {i}");
        samples.push(time_once(
            &on(&r, &["task", "edit", "T-00060", "--title", &title]),
            None,
        )?);
    }
    out.push(Measured {
        name: "cairn task edit (first write over a copy)",
        stats: Stats::new(samples),
        writes: true,
    });
    Ok(out)
}
