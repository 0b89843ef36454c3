//! A temporary repository and a way to run `cairn` in it with a fixed clock and no colour.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub const NOW: &str = "2026-01-15T09:30:00Z";

/// The exit codes documented in `cairn --help`.
pub mod code {
    pub const OK: i32 = 0;
    pub const USAGE: i32 = 2;
    pub const NOT_FOUND: i32 = 3;
    pub const REFUSED: i32 = 4;
    pub const INVALID: i32 = 5;
    pub const LOCK_TIMEOUT: i32 = 6;
    pub const CORRUPT: i32 = 7;
    pub const ALREADY_EXISTS: i32 = 8;
    pub const UNHEALTHY: i32 = 9;
}

/// The arguments that create project `web`.
pub const INIT_WEB: &[&str] = &[
    "init",
    "--id",
    "web",
    "--name",
    "Web app",
    "--goal",
    "Ship the first public release",
];

#[derive(Debug)]
pub struct Repo {
    dir: tempfile::TempDir,
    /// The PostgreSQL database every run of this repository uses, if any.
    db: Option<cairn_storage_pg::testkit::TestDb>,
}

/// Which project store a test's runs use: one test body, run on both adapters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adapter {
    Files,
    Postgres,
}

#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(output: Output) -> Self {
        Self {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

pub fn cairn_command(root: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cairn"));
    cmd.arg("--root")
        .arg(root)
        .args(args)
        .env("CAIRN_NOW", NOW)
        .env("NO_COLOR", "1")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("CAIRN_PROJECT")
        .env_remove("CAIRN_AGENT")
        .env_remove("CAIRN_LOCK_TIMEOUT_MS")
        .env_remove("CAIRN_STORE")
        .env_remove("CLAUDE_CODE_TASK_LIST_ID");
    cmd
}

impl Repo {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
            db: None,
        }
    }

    /// A repository whose runs all use `adapter` (a fresh database for PostgreSQL, dropped with
    /// the repository).
    pub fn on(adapter: Adapter) -> Self {
        let mut repo = Self::new();
        if adapter == Adapter::Postgres {
            repo.db = Some(cairn_storage_pg::testkit::TestDb::new());
        }
        repo
    }

    /// [`Self::with_project`] on `adapter`.
    pub fn with_project_on(adapter: Adapter) -> Self {
        let repo = Self::on(adapter);
        repo.ok(INIT_WEB);
        repo
    }

    /// A `cairn` command on this repository and its store.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = cairn_command(self.root(), args);
        if let Some(db) = &self.db {
            cmd.env("CAIRN_STORE", &db.url);
        }
        cmd
    }

    /// The project's tasks as the store holds them, whichever the store (`export cairn`):
    /// equal before and after a command that must change nothing.
    pub fn tasks_state(&self) -> String {
        self.ok(&["export", "cairn"])
    }

    /// A repository with project `web` initialised.
    pub fn with_project() -> Self {
        let repo = Self::new();
        repo.ok(INIT_WEB);
        repo
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn project_dir(&self, id: &str) -> PathBuf {
        self.root().join(".claude").join("projects").join(id)
    }

    pub fn tasks_file(&self) -> PathBuf {
        self.project_dir("web").join("tasks.json")
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().expect("run cairn"))
    }

    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Run::from(cmd.output().expect("run cairn"))
    }

    /// Runs and insists on success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_env(args, &[])
    }

    /// [`Self::ok`] with extra environment variables.
    pub fn ok_env(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let run = self.run_env(args, env);
        assert_eq!(
            run.code,
            code::OK,
            "cairn {args:?} failed\nstdout:\n{}\nstderr:\n{}",
            run.stdout,
            run.stderr
        );
        run.stdout
    }

    /// Runs with `--json`, insists on success, parses stdout.
    pub fn json(&self, args: &[&str]) -> Value {
        self.json_exiting(args, code::OK)
    }

    /// Runs with `--json`, insists on exit code `expected`, parses stdout.
    pub fn json_exiting(&self, args: &[&str], expected: i32) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let run = self.run(&all);
        assert_eq!(
            run.code, expected,
            "cairn {all:?}\nstdout:\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        );
        serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("cairn {all:?} printed invalid JSON ({e}):\n{}", run.stdout))
    }

    /// Runs a list command with `--json --all`, checks the list envelope says it is whole, and
    /// returns its items.
    pub fn items(&self, args: &[&str]) -> Vec<Value> {
        let mut all = args.to_vec();
        all.push("--all");
        let page = self.json(&all);
        let items = page["items"]
            .as_array()
            .unwrap_or_else(|| panic!("cairn {all:?}: no items in {page}"))
            .clone();
        assert_eq!(page["total"], items.len(), "{page}");
        assert_eq!(page["returned"], items.len(), "{page}");
        assert_eq!(page["truncated"], false, "{page}");
        assert_eq!(page["next_offset"], Value::Null, "{page}");
        items
    }

    /// Runs and insists on the given failure code; returns the run.
    pub fn fails(&self, args: &[&str], expected: i32) -> Run {
        let run = self.run(args);
        assert_eq!(
            run.code, expected,
            "cairn {args:?}: wrong exit code\nstdout:\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        );
        assert!(
            run.stderr.starts_with("error: "),
            "a failure says `error: …` on stderr, got:\n{}",
            run.stderr
        );
        run
    }

    pub fn tasks_json(&self) -> Value {
        let text = std::fs::read_to_string(self.tasks_file()).expect("read tasks.json");
        serde_json::from_str(&text).expect("tasks.json parses")
    }

    pub fn task(&self, id: &str) -> Value {
        self.json(&["task", "show", id])
    }

    pub fn status_of(&self, id: &str) -> String {
        self.task(id)["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Adds a task and returns its id.
    pub fn add(&self, args: &[&str]) -> String {
        let mut all = vec!["task", "add"];
        all.extend_from_slice(args);
        self.json(&all)["id"]
            .as_str()
            .expect("added task has an id")
            .to_owned()
    }

    pub fn start_and_complete(&self, id: &str) -> String {
        self.ok(&["task", "start", id]);
        self.ok(&["task", "complete", id])
    }

    /// The damaged files recovery set aside in project `web` (`tasks.json.corrupt-<time>`, …).
    pub fn set_aside_files(&self) -> Vec<String> {
        names_in(&self.project_dir("web"), |n| n.contains(".corrupt-"))
    }

    pub fn checkpoint_files(&self) -> Vec<String> {
        names_in(&self.project_dir("web").join("checkpoints"), |n| {
            n.starts_with("checkpoint-")
        })
    }
}

/// The names of the files in `dir` that `keep` accepts, sorted; none for a missing directory.
fn names_in(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| keep(n))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Runs each test body (`fn NAME(adapter: Adapter)`) on both adapters: `mod NAME { files,
/// postgres }`.
macro_rules! on_both_adapters {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use crate::support::Adapter;

            #[test]
            fn files() {
                super::$name(Adapter::Files);
            }

            #[test]
            fn postgres() {
                super::$name(Adapter::Postgres);
            }
        }
    )*};
}
pub(crate) use on_both_adapters;

/// The size of a race, `AxB` in the variable `name` (processes × operations), else `default`.
pub fn size_from_env(name: &str, default: (usize, usize)) -> (usize, usize) {
    std::env::var(name)
        .ok()
        .and_then(|v| {
            let (a, b) = v.split_once('x')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .unwrap_or(default)
}
