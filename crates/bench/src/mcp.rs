//! `cairn mcp` measured through the real binary: one warm server process, driven with raw
//! JSON-RPC over its stdin/stdout (newline-delimited, as MCP's stdio transport frames it), timing
//! one `tools/call` round trip each — what an agent's client waits for, without the process
//! start-up every `cairn task …` command pays.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use crate::fixture;
use crate::stats::Stats;

/// A running `cairn mcp`, initialized. Dropping it closes its stdin (which ends the server) and
/// reaps it.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if self.child.try_wait().ok().flatten().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(50));
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(cairn: &Path, root: &Path) -> Result<Self, String> {
        let mut child = Command::new(cairn)
            .arg("--root")
            .arg(root)
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cairn mcp: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut server = Self {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
        };
        server.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "cairn-bench", "version": env!("CARGO_PKG_VERSION")},
            }),
        )?;
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(server)
    }

    fn send(&mut self, message: &Value) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        writeln!(stdin, "{message}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("write to cairn mcp: {e}"))
    }

    /// Sends a request and reads lines until its response (skipping the server's notifications).
    fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let mut line = String::new();
            if self
                .stdout
                .read_line(&mut line)
                .map_err(|e| e.to_string())?
                == 0
            {
                return Err(format!("cairn mcp closed its output during `{method}`"));
            }
            let message: Value = serde_json::from_str(&line)
                .map_err(|e| format!("cairn mcp wrote no JSON ({e}): {line}"))?;
            if message["id"] != id {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Err(format!("`{method}` failed: {error}"));
            }
            return Ok(message["result"].clone());
        }
    }

    /// One tool call; a tool error is an error here (the benchmark measures work done).
    fn call(&mut self, tool: &str, args: Value) -> Result<Value, String> {
        let result = self.request("tools/call", json!({"name": tool, "arguments": args}))?;
        if result["isError"] == true {
            return Err(format!("{tool} {args} failed: {}", result["content"]));
        }
        Ok(result)
    }
}

/// (warm `next`, warm `complete`), `iters` samples each, on one server. `complete` completes the
/// fixture's started tasks from the `first_started`-th on (the CLI's rows take those before it).
pub fn measure(
    cairn: &Path,
    root: &Path,
    iters: usize,
    first_started: usize,
) -> Result<(Stats, Stats), String> {
    let mut server = Server::start(cairn, root)?;
    // Warm: the first call resolves the project and loads what a server loads once.
    server.call("next", json!({}))?;
    let mut next = Vec::with_capacity(iters);
    for _ in 0..iters {
        let start = Instant::now();
        server.call("next", json!({}))?;
        next.push(start.elapsed());
    }
    let mut complete = Vec::with_capacity(iters);
    for i in 0..iters {
        let id = fixture::started_task(first_started + i).to_string();
        let start = Instant::now();
        server.call("complete", json!({"id": id}))?;
        complete.push(start.elapsed());
    }
    Ok((Stats::new(next), Stats::new(complete)))
}
