//! The `pg` group: `cairn task next`, `task complete` and `task claim --next` as processes on
//! the PostgreSQL store, beside the same commands on the files in the same run. The database is
//! loaded from the files' fixture with `cairn store import`, so both stores hold the same tasks.

use std::path::Path;

use crate::stats::Stats;
use crate::{Row, fixture, row, time_process};

/// The rows of one size: each command on the files, then on PostgreSQL (a fresh database at
/// `server`'s cluster, created and dropped here).
pub fn measure(
    cairn: &Path,
    server: &str,
    n: usize,
    iters: usize,
    floor_read: &Stats,
    floor_write: &Stats,
) -> Result<Vec<Row>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    fixture::build(dir.path(), n)?;
    let db = Database::create(server, n)?;
    let c = cairn.display().to_string();
    let root = dir.path().display().to_string();
    let import = std::process::Command::new(cairn)
        .args([
            "--root", &root, "--store", &db.url, "store", "import", &root,
        ])
        .output()
        .map_err(|e| e.to_string())?;
    if !import.status.success() {
        return Err(format!(
            "cairn store import: {}",
            String::from_utf8_lossy(&import.stderr)
        ));
    }
    let mut rows = Vec::new();
    for (store, label) in [(None, "files"), (Some(db.url.as_str()), "PostgreSQL")] {
        let argv = |rest: Vec<String>| {
            let mut argv = vec![c.clone(), "--root".into(), root.clone()];
            if let Some(url) = store {
                argv.extend(["--store".into(), url.to_owned()]);
            }
            argv.extend(rest);
            argv
        };
        let next = time_process(iters, |_| argv(vec!["task".into(), "next".into()]), None)?;
        rows.push(row(
            &format!("cairn task next ({label})"),
            n,
            &next,
            "process reading tasks.json",
            floor_read,
            None,
        ));
        let complete = time_process(
            iters,
            |i| {
                argv(vec![
                    "task".into(),
                    "complete".into(),
                    fixture::started_task(i).to_string(),
                ])
            },
            None,
        )?;
        rows.push(row(
            &format!("cairn task complete ({label})"),
            n,
            &complete,
            "process rewriting tasks.json",
            floor_write,
            None,
        ));
        let claim = time_process(
            iters,
            |i| {
                argv(vec![
                    "task".into(),
                    "claim".into(),
                    "--next".into(),
                    "--agent".into(),
                    format!("bench-{i}"),
                ])
            },
            None,
        )?;
        rows.push(row(
            &format!("cairn task claim --next ({label})"),
            n,
            &claim,
            "process rewriting tasks.json",
            floor_write,
            None,
        ));
    }
    Ok(rows)
}

/// A database of its own on the bench's server, dropped afterwards.
struct Database {
    url: String,
    admin: String,
    name: String,
}

impl Database {
    fn create(server: &str, n: usize) -> Result<Self, String> {
        let name = format!("cairn_bench_{}_{n}", std::process::id());
        psql(server, &format!("DROP DATABASE IF EXISTS {name}"))?;
        psql(server, &format!("CREATE DATABASE {name}"))?;
        let base = server.rsplit_once('/').map_or(server, |(base, _)| base);
        Ok(Self {
            url: format!("{base}/{name}"),
            admin: server.to_owned(),
            name,
        })
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = psql(
            &self.admin,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

/// One statement through `psql` (the server's own client, installed with it): the bench needs
/// no database driver of its own.
fn psql(server: &str, sql: &str) -> Result<(), String> {
    let out = std::process::Command::new("psql")
        .args([server, "-v", "ON_ERROR_STOP=1", "-qc", sql])
        .output()
        .map_err(|e| format!("psql: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}
