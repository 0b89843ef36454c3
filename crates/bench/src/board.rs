//! `cairn board` measured through the real binary: the first page's data (`GET /api/board`, what
//! the page waits for before its first render) and the latency from a file change on disk to the
//! Server-Sent Event every open page receives.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::stats::Stats;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn request(port: u16, token: &str, target: &str) -> Result<TcpStream, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Cairn-Token: {token}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    Ok(stream)
}

/// (first-page fetch, file change → SSE event), `iters` samples each.
pub fn measure(cairn: &Path, root: &Path, iters: usize) -> Result<(Stats, Stats), String> {
    let mut child = Command::new(cairn)
        .arg("--root")
        .arg(root)
        .arg("board")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cairn board: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let url = line
        .trim()
        .strip_prefix("cairn board: ")
        .ok_or(line.clone())?;
    let port: u16 = url["http://127.0.0.1:".len()..]
        .split('/')
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or("no port")?;
    let token = url.split("token=").nth(1).ok_or("no token")?.to_owned();

    let mut render = Vec::with_capacity(iters);
    for _ in 0..iters {
        let start = Instant::now();
        let mut body = Vec::new();
        request(port, &token, "/api/board")?
            .read_to_end(&mut body)
            .map_err(|e| e.to_string())?;
        render.push(start.elapsed());
        if !body.starts_with(b"HTTP/1.1 200") {
            return Err(format!(
                "GET /api/board: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            ));
        }
    }

    let mut events = BufReader::new(request(port, &token, "/events")?);
    let mut wait_for = |prefix: &str| -> Result<(), String> {
        loop {
            let mut line = String::new();
            if events.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err("the event stream ended".into());
            }
            if line.starts_with(prefix) {
                return Ok(());
            }
        }
    };
    wait_for("event: hello")?;
    let touched = root.join(".claude").join("bench-board-touch");
    let mut latency = Vec::with_capacity(iters);
    for i in 0..iters {
        // Past the previous burst's debounce, so each write is its own event.
        std::thread::sleep(Duration::from_millis(120));
        let start = Instant::now();
        std::fs::write(&touched, i.to_string()).map_err(|e| e.to_string())?;
        wait_for("event: change")?;
        latency.push(start.elapsed());
    }
    drop(server);
    Ok((Stats::new(render), Stats::new(latency)))
}
