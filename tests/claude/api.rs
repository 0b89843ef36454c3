//! A scripted stand-in for the Anthropic Messages API on 127.0.0.1.
//!
//! Claude Code is pointed at it with `ANTHROPIC_BASE_URL`. Every `POST /v1/messages` that offers
//! tools is answered with the next scripted [`Turn`] (a `tool_use` block or text), as
//! server-sent events when the request says `"stream": true` and as one JSON message otherwise;
//! a request without tools, and any once the script is used up, gets text saying the model is
//! done, so a session always ends. Every other request (token counting and
//! whatever a future version adds) gets a harmless `200 {}`-like answer. Each request body is
//! kept, so a test can assert what reached the model.
//!
//! Plain std: one thread accepts, one thread per connection speaks HTTP/1.1 with keep-alive.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

/// One answer of the model.
#[derive(Debug, Clone)]
pub struct Turn {
    reply: Reply,
    /// The prompt size the answer reports in `usage.input_tokens`: Claude Code decides when to
    /// compact from it, so a large value makes the next step an automatic compaction.
    input_tokens: u64,
}

#[derive(Debug, Clone)]
enum Reply {
    /// The model calls tool `name` with `input`.
    Tool { name: String, input: Value },
    /// The model answers with text and ends its turn.
    Text(String),
}

impl Turn {
    pub fn tool(name: &str, input: Value) -> Self {
        Self::new(Reply::Tool {
            name: name.to_owned(),
            input,
        })
    }

    pub fn bash(command: &str) -> Self {
        Self::tool(
            "Bash",
            json!({"command": command, "description": "scripted by the cairn test"}),
        )
    }

    pub fn text(text: &str) -> Self {
        Self::new(Reply::Text(text.to_owned()))
    }

    /// This answer reports a context all but full (995,000 of a 1M window, more than any
    /// smaller window), so Claude Code compacts before its next request.
    pub fn filling_the_context(mut self) -> Self {
        self.input_tokens = 995_000;
        self
    }

    fn new(reply: Reply) -> Self {
        Self {
            reply,
            input_tokens: 10,
        }
    }
}

/// A request the fake received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Value,
}

#[derive(Debug, Default)]
struct Shared {
    script: Mutex<VecDeque<Turn>>,
    requests: Mutex<Vec<Request>>,
    /// How many tool calls were handed out, for unique `tool_use` ids.
    calls: Mutex<u32>,
    stop: AtomicBool,
}

/// The running fake; it stops when dropped.
pub struct FakeApi {
    port: u16,
    shared: Arc<Shared>,
}

impl FakeApi {
    pub fn start(script: Vec<Turn>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into()),
            ..Shared::default()
        });
        let accept = Arc::clone(&shared);
        thread::spawn(move || {
            for stream in listener.incoming() {
                if accept.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let shared = Arc::clone(&accept);
                thread::spawn(move || serve(stream, &shared));
            }
        });
        Self { port, shared }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The bodies of the agent's model requests (`POST /v1/messages` offering tools; side
    /// queries left out), in order.
    pub fn messages(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path.split('?').next() == Some("/v1/messages"))
            .map(|r| r.body)
            .filter(offers_tools)
            .collect()
    }

    /// Scripted turns not handed out yet.
    pub fn unused(&self) -> usize {
        self.shared.script.lock().unwrap().len()
    }

    /// The `tool_result` blocks Claude Code sent back, in the order the tools were called, each
    /// as (text of its content, is_error). The last request carries the whole conversation.
    pub fn tool_results(&self) -> Vec<(String, bool)> {
        let Some(last) = self.messages().pop() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for message in last["messages"].as_array().into_iter().flatten() {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" {
                    out.push((content_text(&block["content"]), block["is_error"] == true));
                }
            }
        }
        out
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A tool_result's content as text: a string, or the text blocks of an array.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

fn serve(stream: TcpStream, shared: &Shared) {
    // A connection Claude Code keeps open must not keep this thread forever.
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut writer = write_half;
    while !shared.stop.load(Ordering::SeqCst) {
        let Some((method, path, body)) = read_request(&mut reader) else {
            return;
        };
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        shared.requests.lock().unwrap().push(Request {
            method: method.clone(),
            path: path.clone(),
            body: body.clone(),
        });
        let route = path.split('?').next().unwrap_or("");
        let (content_type, bytes) = match (method.as_str(), route) {
            ("POST", "/v1/messages") => answer(shared, &body),
            ("POST", "/v1/messages/count_tokens") => {
                ("application/json", br#"{"input_tokens":1}"#.to_vec())
            }
            _ => ("application/json", b"{}".to_vec()),
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nrequest-id: req_cairn\r\n\r\n",
            bytes.len()
        );
        // A HEAD answer has the headers of a GET and no body.
        let body = if method == "HEAD" {
            &[][..]
        } else {
            &bytes[..]
        };
        if writer.write_all(head.as_bytes()).is_err()
            || writer.write_all(body).is_err()
            || writer.flush().is_err()
        {
            return;
        }
    }
}

/// Reads one HTTP/1.1 request: (method, path, body). `None` at end of stream or on garbage.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, String, Vec<u8>)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "content-length" {
            length = value.parse().ok()?;
        } else if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body).ok()?;
    }
    Some((method, path, body))
}

fn offers_tools(request: &Value) -> bool {
    request["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// The next scripted turn as the response to a Messages request.
fn answer(shared: &Shared, request: &Value) -> (&'static str, Vec<u8>) {
    // A request that offers no tools is a side query of Claude Code's own (a title, a topic),
    // not a step of the agent: it must not take a scripted turn, or the script would shift.
    let scripted = offers_tools(request)
        .then(|| shared.script.lock().unwrap().pop_front())
        .flatten();
    let turn = scripted.unwrap_or_else(|| Turn::text("Done."));
    let model = request["model"].as_str().unwrap_or("claude-test");
    let (block, stop_reason) = match &turn.reply {
        Reply::Tool { name, input } => {
            let mut calls = shared.calls.lock().unwrap();
            *calls += 1;
            let id = format!("toolu_cairn_{:03}", *calls);
            (
                json!({"type": "tool_use", "id": id, "name": name, "input": input}),
                "tool_use",
            )
        }
        Reply::Text(text) => (json!({"type": "text", "text": text}), "end_turn"),
    };
    let usage = json!({"input_tokens": turn.input_tokens, "output_tokens": 5});
    if request["stream"] != true {
        let message = json!({
            "id": "msg_cairn", "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop_reason, "stop_sequence": null, "usage": usage,
        });
        return ("application/json", message.to_string().into_bytes());
    }
    // Streaming: the block starts empty and its content arrives as one delta.
    let (start, delta) = match &turn.reply {
        Reply::Tool { input, .. } => {
            let mut start = block.clone();
            start["input"] = json!({});
            (
                start,
                json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            )
        }
        Reply::Text(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
        ),
    };
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": "msg_cairn", "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage,
            }}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    let mut text = String::new();
    for (name, data) in events {
        text.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    ("text/event-stream", text.into_bytes())
}
