//! A real PostgreSQL for tests: one server per test run, a fresh database per test.
//!
//! `CAIRN_TEST_PG` names a server to use (a URL whose user may create databases; `xtask ci` sets
//! it). Without it, the first test starts a throwaway cluster (`initdb` + `pg_ctl`, as the
//! `postgres` user when run as root, on a free port of 127.0.0.1, fsync off) in the system temp
//! dir and later tests, in this process or any other, reuse it; a file lock keeps two test
//! processes from starting two. nextest runs each test in a process of its own, so starting a
//! cluster per test would cost seconds each.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tokio_postgres::NoTls;

/// The variable naming the server tests use.
pub const TEST_PG_ENV: &str = "CAIRN_TEST_PG";

/// A database of its own for one test, dropped (with any connection still open) when this is.
#[derive(Debug)]
pub struct TestDb {
    pub url: String,
    server: String,
    name: String,
}

impl TestDb {
    /// A fresh, empty database on the test server. Panics when no server can be had: a test
    /// that needs PostgreSQL must not pass without one.
    pub fn new() -> Self {
        let server = server_url();
        let name = format!(
            "cairn_test_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        );
        admin(&server, &format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("cannot create the test database {name}: {e}"));
        Self {
            url: with_database(&server, &name),
            server,
            name,
        }
    }
}

impl Default for TestDb {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let _ = admin(
            &self.server,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

/// `server` (a URL ending in a database name) pointed at database `name`.
pub fn with_database(server: &str, name: &str) -> String {
    let (base, query) = match server.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (server, String::new()),
    };
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[after_scheme..]
        .find('/')
        .map_or(base.len(), |i| after_scheme + i);
    format!("{}/{name}{query}", &base[..host_end])
}

/// Runs one statement on `server`, on a runtime of its own (callers may be inside another).
fn admin(server: &str, sql: &str) -> Result<(), String> {
    let (server, sql) = (server.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&server, NoTls)
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(connection);
            client.batch_execute(&sql).await.map_err(|e| e.to_string())
        })
    })
    .join()
    .map_err(|_| "the admin thread panicked".to_owned())?
}

/// The test server's URL: `CAIRN_TEST_PG`, else the shared throwaway cluster, started if need
/// be.
pub fn server_url() -> String {
    if let Ok(url) = std::env::var(TEST_PG_ENV)
        && !url.is_empty()
    {
        return url;
    }
    shared_cluster().unwrap_or_else(|e| panic!("cannot start a test PostgreSQL: {e}"))
}

fn shared_cluster() -> Result<String, String> {
    let base = std::env::temp_dir().join(format!("cairn-test-pg-{}", user_id()));
    std::fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    let lock = File::create(base.join("lock")).map_err(|e| e.to_string())?;
    lock.lock()
        .map_err(|e| format!("lock the test cluster: {e}"))?;
    let url_file = base.join("url");
    if let Ok(url) = std::fs::read_to_string(&url_file)
        && admin(url.trim(), "SELECT 1").is_ok()
    {
        return Ok(url.trim().to_owned());
    }
    let url = start_cluster(&base)?;
    std::fs::write(&url_file, &url).map_err(|e| e.to_string())?;
    Ok(url)
}

/// Starts a cluster in `<base>/cluster` (made anew); returns its URL.
pub fn start_cluster(base: &Path) -> Result<String, String> {
    let bin = bin_dir()
        .ok_or("no initdb: install PostgreSQL (apt-get install postgresql) or set CAIRN_TEST_PG")?;
    let dir = base.join("cluster");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let as_root = user_id() == "0";
    if as_root {
        run(Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(&dir))?;
    }
    let data = dir.join("data");
    let port = free_port()?;
    let mut initdb = pg_command(as_root, &bin.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
    run(&mut initdb)?;
    let mut start = pg_command(as_root, &bin.join("pg_ctl"));
    start
        .arg("-D")
        .arg(&data)
        .arg("-l")
        .arg(dir.join("server.log"))
        .arg("-o")
        .arg(format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off \
             -c synchronous_commit=off -c full_page_writes=off",
            dir.display()
        ))
        .args(["-w", "-t", "60", "start"]);
    run(&mut start)?;
    Ok(format!("postgres://postgres@127.0.0.1:{port}/postgres"))
}

/// Stops the cluster [`start_cluster`] started in `base`.
pub fn stop_cluster(base: &Path) -> Result<(), String> {
    let bin = bin_dir().ok_or("no pg_ctl")?;
    let mut stop = pg_command(user_id() == "0", &bin.join("pg_ctl"));
    stop.arg("-D")
        .arg(base.join("cluster").join("data"))
        .args(["-m", "fast", "-w", "stop"]);
    run(&mut stop)
}

fn pg_command(as_root: bool, program: &Path) -> Command {
    if as_root {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn run(command: &mut Command) -> Result<(), String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{command:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{command:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The newest installed PostgreSQL's `bin`, else the directory of `initdb` on the PATH.
pub fn bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_string_lossy().parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).find(|dir| dir.join("initdb").exists()))
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

fn user_id() -> String {
    Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
