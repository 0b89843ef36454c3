//! Running the real Claude Code on a scratch repository with a scratch `HOME`.
//!
//! - [`claude_binary`]: the pinned CLI `cargo xtask claude-code` installed under the target
//!   directory (it writes the native binary's path to `claude-code/bin-path`).
//! - [`binaries`]: `cairn-hook` (cargo builds it for this test target), `cairn` and `xtask`
//!   (other packages' binaries, built by the same `cargo nextest run --workspace`).
//! - [`Scratch`]: a repository and a home directory; [`Scratch::claude`] runs one headless
//!   session (`claude -p … --output-format json`) against a [`FakeApi`], every child process
//!   under a deadline.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::api::FakeApi;

/// A whole headless session: start-up, a few scripted turns, the hooks of each.
const SESSION_DEADLINE: Duration = Duration::from_secs(120);
/// A `cairn` command, or `claude --version`.
const COMMAND_DEADLINE: Duration = Duration::from_secs(30);

pub const HOOK: &str = env!("CARGO_BIN_EXE_cairn-hook");

/// The build profile directory cargo put `cairn-hook` in (`target/debug`).
pub fn profile_dir() -> PathBuf {
    Path::new(HOOK).parent().unwrap().to_path_buf()
}

/// The target directory: the nearest ancestor of the profile directory holding the Claude Code
/// install (`target/debug`, or `target/<triple>/debug` when cross-compiling), else its parent.
pub fn target_dir() -> PathBuf {
    let profile = profile_dir();
    profile
        .ancestors()
        .skip(1)
        .find(|dir| dir.join("claude-code").join("bin-path").is_file())
        .unwrap_or_else(|| profile.parent().unwrap())
        .to_path_buf()
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The pinned version, from the committed package.json.
pub fn pinned_version() -> String {
    let path = workspace_root().join("tests/claude/npm/package.json");
    let manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["dependencies"]["@anthropic-ai/claude-code"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The installed Claude Code binary.
pub fn claude_binary() -> PathBuf {
    let record = target_dir().join("claude-code").join("bin-path");
    let path = std::fs::read_to_string(&record).unwrap_or_else(|_| {
        panic!(
            "Claude Code is not installed ({} is missing): run `cargo xtask claude-code` \
             (`cargo xtask ci` does it), which needs node and npm",
            record.display()
        )
    });
    let path = PathBuf::from(path.trim());
    assert!(
        path.is_file(),
        "{} is gone: run `cargo xtask claude-code` again",
        path.display()
    );
    path
}

/// `claude --version`, e.g. `2.1.330 (Claude Code)`.
pub fn claude_version() -> String {
    let mut cmd = Command::new(claude_binary());
    cmd.arg("--version");
    let out = bounded(cmd, COMMAND_DEADLINE, "claude --version");
    assert!(out.status.success(), "claude --version: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The directory holding fresh `cairn`, `cairn-hook` and `xtask` binaries.
///
/// cargo builds `cairn-hook` for this test target, but `cairn` and `xtask` belong to other
/// packages: `cargo nextest run --workspace` (hence `cargo xtask ci`, which also runs xtask)
/// builds them in the same run, and run alone the suite wants `cargo build -p cairn-cli -p
/// xtask` first. Building them from here instead would mean a nested cargo, which waits forever
/// on the lock `cargo test` holds, and whose feature set differs from the outer build's, so
/// both would keep relinking each other's binaries. A binary older than one of its sources is
/// refused rather than silently tested.
pub fn binaries() -> &'static Path {
    static CHECKED: OnceLock<PathBuf> = OnceLock::new();
    CHECKED.get_or_init(|| {
        let dir = profile_dir();
        let root = workspace_root();
        let cairn_sources = ["cli", "domain", "render", "storage-fs", "hooks", "mcp"]
            .map(|c| root.join("crates").join(c).join("src"));
        for (name, sources) in [
            ("cairn", cairn_sources.to_vec()),
            ("xtask", vec![root.join("xtask/src")]),
        ] {
            let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
            let built = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .unwrap_or_else(|_| {
                    panic!(
                        "{} is missing: run `cargo build -p cairn-cli -p xtask` first",
                        path.display()
                    )
                });
            if let Some(newer) = sources.iter().find_map(|dir| newer_file(dir, built)) {
                panic!(
                    "{} is older than {}: run `cargo build -p cairn-cli -p xtask` first",
                    path.display(),
                    newer.display()
                );
            }
        }
        dir
    })
}

/// A file under `dir` modified after `than`.
fn newer_file(dir: &Path, than: std::time::SystemTime) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = newer_file(&path, than) {
                return Some(found);
            }
        } else if entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|m| m > than)
        {
            return Some(path);
        }
    }
    None
}

pub fn cairn_bin() -> PathBuf {
    binaries().join(format!("cairn{}", std::env::consts::EXE_SUFFIX))
}

/// Runs `cmd` with stdin closed, collecting its output, killing it at `deadline`.
pub fn bounded(mut cmd: Command, deadline: Duration, what: &str) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {what}: {e}"));
    // Read both pipes on threads, so a chatty child never blocks on a full pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let err = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
            panic!("{what} did not finish within {deadline:?}; it was killed. stderr:\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// `PATH` without any directory holding a cairn binary (an installed cairn must not stand in for
/// the one under test), with `extra` in front.
fn path_with(extra: &[&Path]) -> std::ffi::OsString {
    let ambient = std::env::var_os("PATH").unwrap_or_default();
    let kept = std::env::split_paths(&ambient).filter(|dir| {
        !["cairn", "cairn-hook"].iter().any(|b| {
            dir.join(format!("{b}{}", std::env::consts::EXE_SUFFIX))
                .exists()
        })
    });
    std::env::join_paths(extra.iter().map(|p| p.to_path_buf()).chain(kept)).unwrap()
}

/// What one headless session printed.
#[derive(Debug)]
pub struct Session {
    /// The `--output-format json` result object.
    pub result: Value,
    pub stderr: String,
    /// The session's transcript (`~/.claude/projects/<dir>/<session id>.jsonl`), one value per
    /// line: Claude Code records there how it took each hook's answer.
    pub transcript: Vec<Value>,
}

impl Session {
    /// The session ended without an error, having played the whole script.
    pub fn assert_completed(&self, api: &FakeApi) {
        assert!(
            self.result["is_error"] == false && api.unused() == 0,
            "the session did not play out as scripted ({} turns left):\n{:#}\nstderr:\n{}",
            api.unused(),
            self.result,
            self.stderr
        );
    }

    pub fn session_id(&self) -> &str {
        self.result["session_id"].as_str().expect("session_id")
    }

    /// Every hook outcome Claude Code recorded as a failure: an attachment of a `hook_…error…`
    /// (or cancelled, or invalid-output) type, or a Stop summary listing hook errors.
    pub fn hook_failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for line in &self.transcript {
            let kind = line["attachment"]["type"].as_str().unwrap_or("");
            if kind.starts_with("hook_")
                && ["error", "cancel", "invalid"]
                    .iter()
                    .any(|w| kind.contains(w))
            {
                out.push(line["attachment"].to_string());
            }
            if line["subtype"] == "stop_hook_summary"
                && line["hookErrors"].as_array().is_some_and(|e| !e.is_empty())
            {
                out.push(line["hookErrors"].to_string());
            }
        }
        out
    }

    /// Claude Code recorded no hook failure: every answer valid, every exit code 0. (A silent
    /// hook leaves no trace in the transcript; one that answered leaves `hook_success`.)
    pub fn assert_hooks_accepted(&self) {
        let failures = self.hook_failures();
        assert!(
            failures.is_empty(),
            "Claude Code recorded hook failures:\n{}",
            failures.join("\n")
        );
    }

    /// The `systemMessage`s of `event`'s hooks that Claude Code showed.
    pub fn hook_system_messages(&self, event: &str) -> Vec<String> {
        self.transcript
            .iter()
            .map(|l| &l["attachment"])
            .filter(|a| a["type"] == "hook_system_message" && a["hookEvent"] == event)
            .filter_map(|a| a["content"].as_str().map(str::to_owned))
            .collect()
    }
}

/// The transcript of `session` under `home`, wherever Claude Code named its project directory.
fn read_transcript(home: &Path, session: &str) -> Vec<Value> {
    let projects = home.join(".claude").join("projects");
    let file = std::fs::read_dir(&projects)
        .into_iter()
        .flatten()
        .flatten()
        .map(|dir| dir.path().join(format!("{session}.jsonl")))
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("no transcript of {session} under {}", projects.display()));
    std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// A scratch repository (`root`, with a `.git` directory) and a scratch `HOME`.
pub struct Scratch {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    tmp: PathBuf,
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

impl Scratch {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let home = dir.path().join("home");
        let tmp = dir.path().join("tmp");
        for d in [root.join(".git"), home.clone(), tmp.clone()] {
            std::fs::create_dir_all(d).unwrap();
        }
        Self {
            _dir: dir,
            root,
            home,
            tmp,
        }
    }

    /// Runs the `cairn` under test in the repository; panics unless it succeeds.
    pub fn cairn(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(cairn_bin());
        cmd.args(args)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env_remove("CAIRN_PROJECT")
            .env_remove("CLAUDE_CONFIG_DIR");
        let out = bounded(cmd, COMMAND_DEADLINE, &format!("cairn {}", args.join(" ")));
        assert!(
            out.status.success(),
            "cairn {}: {}\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A project `demo` with T-001 (ready) and T-002 (waiting on T-001).
    pub fn with_project(self) -> Self {
        self.cairn(&[
            "init",
            "--id",
            "demo",
            "--name",
            "Claude loop demo",
            "--goal",
            "Prove cairn works inside Claude Code",
        ]);
        self.cairn(&["task", "add", "Write the parser"]);
        self.cairn(&["task", "add", "Ship the parser", "--depends", "T-001"]);
        self
    }

    pub fn tasks_json(&self) -> PathBuf {
        self.root.join(".claude/projects/demo/tasks.json")
    }

    pub fn progress_log(&self) -> String {
        std::fs::read_to_string(self.root.join(".claude/projects/demo/progress/log.md"))
            .unwrap_or_default()
    }

    /// How many progress-log entries of `event` hold every one of `needles` (the session id, a
    /// detail).
    pub fn log_entries(&self, event: &str, needles: &[&str]) -> usize {
        let log = self.progress_log();
        let heading = format!("— {event}");
        log.split("\n## ")
            .filter(|entry| {
                entry.lines().next().is_some_and(|h| h.ends_with(&heading))
                    && needles.iter().all(|n| entry.contains(n))
            })
            .count()
    }

    pub fn hook_errors(&self) -> String {
        std::fs::read_to_string(self.root.join(".claude/cairn/hook-errors.log")).unwrap_or_default()
    }

    /// One headless session: `claude -p <prompt> --output-format json <args>`, its model the
    /// fake at `api`, the tools the scenarios script allowed without asking, the cairn binaries
    /// on `PATH` when `cairn_on_path`.
    pub fn claude(
        &self,
        api: &FakeApi,
        prompt: &str,
        args: &[&str],
        cairn_on_path: bool,
    ) -> Session {
        self.claude_in(&self.root, api, prompt, args, cairn_on_path)
    }

    /// [`Scratch::claude`] started in `dir` (a subdirectory of the repository, say).
    pub fn claude_in(
        &self,
        dir: &Path,
        api: &FakeApi,
        prompt: &str,
        args: &[&str],
        cairn_on_path: bool,
    ) -> Session {
        self.claude_with(dir, api, prompt, args, cairn_on_path, &[])
    }

    /// [`Scratch::claude_in`] with `env` added to the session's environment (a switch of
    /// Claude Code's, say).
    pub fn claude_with(
        &self,
        dir: &Path,
        api: &FakeApi,
        prompt: &str,
        args: &[&str],
        cairn_on_path: bool,
        env: &[(&str, &str)],
    ) -> Session {
        let mut cmd = Command::new(claude_binary());
        let extra: Vec<&Path> = if cairn_on_path {
            vec![binaries()]
        } else {
            Vec::new()
        };
        cmd.args(["-p", prompt, "--output-format", "json"])
            .args(["--allowedTools", "Bash,Edit,Write,Read"])
            .args(["--max-turns", "20"])
            .args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", path_with(&extra))
            .env("HOME", &self.home)
            .env("TMPDIR", &self.tmp)
            .env("ANTHROPIC_BASE_URL", api.base_url())
            .env("ANTHROPIC_API_KEY", "sk-ant-cairn-test-dummy")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("DISABLE_BUG_COMMAND", "1")
            .envs(env.iter().copied());
        let out = bounded(cmd, SESSION_DEADLINE, "claude -p");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "claude printed no JSON result ({e}); status {}\nstdout:\n{}\nstderr:\n{stderr}",
                out.status,
                String::from_utf8_lossy(&out.stdout)
            )
        });
        let session = result["session_id"]
            .as_str()
            .expect("session_id")
            .to_owned();
        Session {
            transcript: read_transcript(&self.home, &session),
            result,
            stderr,
        }
    }
}
