//! `cairn board`: the server's guards over raw HTTP, and the page in a real headless browser
//! (Debian's `chromium` driven through `chromedriver` over WebDriver; `.ci/run` installs both).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource as _, MOUSE_BUTTON_LEFT, MouseActions, PointerAction};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::support::{Repo, cairn_command};

/// A running `cairn board`, stopped when dropped.
struct Board {
    child: Child,
    port: u16,
    token: String,
    url: String,
}

impl Board {
    fn start(repo: &Repo) -> Self {
        let mut child = cairn_command(repo.root(), &["board"])
            .env("CLAUDE_CONFIG_DIR", repo.root().join("claude-config"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start cairn board");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the board's address");
        let url = line
            .trim()
            .strip_prefix("cairn board: ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        let port = url["http://127.0.0.1:".len()..]
            .split('/')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port in the URL");
        let token = url
            .split("token=")
            .nth(1)
            .expect("token in the URL")
            .to_owned();
        assert_eq!(token.len(), 32, "{url}");
        Self {
            child,
            port,
            token,
            url,
        }
    }

    /// One raw HTTP/1.1 exchange: the status code and the body.
    fn http(
        &self,
        method: &str,
        target: &str,
        host: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        let mut request = format!(
            "{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes()).expect("send");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("receive");
        let status = response[9..12].parse().expect("status code");
        let body = response
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_owned();
        (status, body)
    }

    fn get(&self, target: &str) -> (u16, String) {
        let host = format!("127.0.0.1:{}", self.port);
        self.http("GET", target, &host, &[("X-Cairn-Token", &self.token)], "")
    }
}

impl Drop for Board {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn every_request_needs_the_token_and_a_localhost_host() {
    let repo = Repo::with_project();
    repo.add(&["Write the parser"]);
    let board = Board::start(&repo);
    let local = format!("127.0.0.1:{}", board.port);
    let with_token = format!("/?token={}", board.token);

    let (status, body) = board.http("GET", "/", &local, &[], "");
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("no token"), "{body}");
    let (status, _) = board.http(
        "GET",
        "/?token=00000000000000000000000000000000",
        &local,
        &[],
        "",
    );
    assert_eq!(status, 403);
    let (status, body) = board.http("GET", &with_token, "evil.example", &[], "");
    assert_eq!(status, 403, "DNS rebinding: {body}");
    assert!(body.contains("Host"), "{body}");
    let (status, body) = board.http("GET", &with_token, &local, &[], "");
    assert_eq!(status, 200);
    assert!(body.contains("<title>cairn board</title>") && body.contains("EventSource"));
    let (status, body) = board.http(
        "GET",
        &with_token,
        &format!("localhost:{}", board.port),
        &[],
        "",
    );
    assert_eq!(status, 200, "{body}");

    // A mutation carries the token in a header: in the query string it is refused.
    let add = r#"{"title": "Sneaky"}"#;
    let (status, _) = board.http(
        "POST",
        &format!("/api/tasks?token={}", board.token),
        &local,
        &[("Content-Type", "application/json")],
        add,
    );
    assert_eq!(status, 403);
    let headers = [
        ("Content-Type", "application/json"),
        ("X-Cairn-Token", board.token.as_str()),
    ];
    let (status, body) = board.http("POST", "/api/tasks", &local, &headers, add);
    assert_eq!(status, 201, "{body}");
    assert_eq!(repo.task("T-002")["title"], "Sneaky");

    let (status, body) = board.get("/api/board");
    assert_eq!(status, 200);
    let board_json: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(board_json["total"], 2);
    assert_eq!(board_json["columns"].as_array().map(Vec::len), Some(8));

    // A list id that would climb out of the task-list directory is refused before any path is
    // built, as `cairn session start --list` refuses it.
    let (status, body) = board.get("/api/tasklists/..%2F..%2Fetc");
    assert_eq!(status, 409, "{body}");
    let error: Value = serde_json::from_str(&body).expect("JSON error");
    assert_eq!(error["error"]["exit_code"], 4, "{body}");
    assert!(body.contains("contains `..`"), "{body}");

    // A refused move answers the CLI's error object and changes nothing.
    let (status, body) = board.http(
        "POST",
        "/api/tasks/T-001/move",
        &local,
        &headers,
        r#"{"to": "COMPLETE"}"#,
    );
    assert_eq!(status, 409, "{body}");
    let error: Value = serde_json::from_str(&body).expect("JSON error");
    assert_eq!(error["error"]["kind"], "illegal_transition", "{body}");
    assert_eq!(repo.status_of("T-001"), "PENDING");
}

/// A free local port (the listener is dropped before chromedriver binds it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_driver() -> (Driver, u16) {
    let port = free_port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver: install Debian's chromium and chromium-driver (.ci/run does)");
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    (Driver(child), port)
}

async fn browser(port: u16) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1700,1000"]}),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a chromium session")
}

async fn script(client: &Client, js: &str) -> Value {
    client.execute(js, vec![]).await.expect("script runs")
}

/// Polls `js` (a boolean expression) every 10 ms until true; the time it took.
async fn until(client: &Client, js: &str, limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        if script(client, &format!("return !!({js});")).await == Value::Bool(true) {
            return start.elapsed();
        }
        assert!(start.elapsed() < limit, "not true within {limit:?}: {js}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn card_in(id: &str, status: &str) -> String {
    format!(r#"document.querySelector('.column[data-status="{status}"] .card[data-id="{id}"]')"#)
}

/// One drag attempt; an error when the page redrew the card meanwhile (a stale element).
async fn try_drag(client: &Client, id: &str, to: &str) -> Result<(), fantoccini::error::CmdError> {
    let card = client
        .find(Locator::Css(&format!(r#".card[data-id="{id}"]"#)))
        .await?;
    let column = client
        .find(Locator::Css(&format!(r#".column[data-status="{to}"] h2"#)))
        .await?;
    let step = Some(Duration::from_millis(50));
    let actions = MouseActions::new("mouse".into())
        .then(PointerAction::MoveToElement {
            element: card,
            duration: None,
            x: 0.0,
            y: 0.0,
        })
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::MoveBy {
            duration: step,
            x: 15.0,
            y: 10.0,
        })
        .then(PointerAction::MoveToElement {
            element: column,
            duration: step,
            x: 0.0,
            y: 20.0,
        })
        .then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        });
    client.perform_actions(actions).await
}

/// A live refresh can replace the card between finding it and dragging it: try again then.
async fn drag(client: &Client, id: &str, to: &str) {
    for attempt in 1..=3 {
        match try_drag(client, id, to).await {
            Ok(()) => return,
            Err(e) if attempt < 3 => eprintln!("drag of {id} retried: {e}"),
            Err(e) => panic!("drag of {id} to {to}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn the_board_in_a_real_browser() {
    let repo = Repo::with_project();
    repo.add(&["Write the parser"]);
    repo.add(&["Ship it", "--depends", "T-001"]);
    repo.add(&["Fix the build"]);
    repo.ok(&["task", "start", "T-003"]);
    let list = repo.root().join("claude-config/tasks/team-a");
    std::fs::create_dir_all(&list).expect("task list dir");
    std::fs::write(
        list.join("1.json"),
        r#"{"id": "1", "subject": "Review the parser", "status": "in_progress", "activeForm": "Reviewing the parser", "blocks": [], "blockedBy": []}"#,
    )
    .expect("task file");

    let board = Board::start(&repo);
    let (_driver, driver_port) = start_driver();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = browser(driver_port).await;
        client.goto(&board.url).await.expect("open the page");

        // The page renders the project: its name, every column, the cards where they belong.
        until(&client, &card_in("T-001", "PENDING"), Duration::from_secs(5)).await;
        until(&client, &card_in("T-003", "IN_PROGRESS"), Duration::from_secs(1)).await;
        assert_eq!(script(&client, "return document.getElementById('project-name').textContent").await, "Web app");
        assert_eq!(script(&client, "return document.querySelectorAll('.column').length").await, 8);
        assert_eq!(
            script(&client, r#"return document.querySelector('.card[data-id="T-002"]').dataset.deps"#).await,
            "T-001"
        );
        until(&client, "document.querySelector('#graph svg .node')", Duration::from_secs(2)).await;
        until(&client, "document.querySelector('#burndown svg')", Duration::from_secs(2)).await;
        until(&client, "document.querySelector('#tasklists').textContent.includes('Reviewing the parser')", Duration::from_secs(2)).await;
        until(&client, "document.getElementById('live').classList.contains('on')", Duration::from_secs(5)).await;

        // Another process adds a task: its card appears without a reload, within 500 ms.
        let id = repo.add(&["Added from a terminal"]);
        let took = until(&client, &card_in(&id, "PENDING"), Duration::from_secs(3)).await;
        println!("`cairn task add` → card on the page: {took:?}");
        assert!(took <= Duration::from_millis(500), "the card took {took:?}");

        // Drag IN_PROGRESS → COMPLETE: completed on disk, through the state machine.
        drag(&client, "T-003", "COMPLETE").await;
        let start = Instant::now();
        while repo.status_of("T-003") != "COMPLETE" {
            assert!(start.elapsed() < Duration::from_secs(3), "T-003 was not completed on disk");
            std::thread::sleep(Duration::from_millis(20));
        }
        until(&client, &card_in("T-003", "COMPLETE"), Duration::from_secs(2)).await;

        // A refused move: the reason is shown, the card snaps back, nothing changes on disk.
        drag(&client, "T-001", "COMPLETE").await;
        until(&client, "!document.getElementById('message').hidden && document.getElementById('message').textContent.includes('illegal_transition')", Duration::from_secs(3)).await;
        let message = script(&client, "return document.getElementById('message').textContent").await;
        assert!(message.as_str().is_some_and(|m| m.contains("cannot move from PENDING to COMPLETE")), "{message}");
        until(&client, &card_in("T-001", "PENDING"), Duration::from_secs(2)).await;
        assert_eq!(repo.status_of("T-001"), "PENDING");

        let png = client.screenshot().await.expect("screenshot");
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cairn-board.png");
        std::fs::write(&path, png).expect("save the screenshot");
        println!("screenshot of the board: {}", path.display());
        client.close().await.expect("close the browser");
    });
}

/// Hovers over a card (its buttons show on hover) and clicks its `button` (`block`,
/// `decompose`); retried when a live refresh replaced the card meanwhile.
async fn click_card_button(client: &Client, id: &str, button: &str) {
    for attempt in 1..=3 {
        let clicked = async {
            let card = client
                .find(Locator::Css(&format!(r#".card[data-id="{id}"]"#)))
                .await?;
            let hover = MouseActions::new("mouse".into()).then(PointerAction::MoveToElement {
                element: card.clone(),
                duration: None,
                x: 0.0,
                y: 0.0,
            });
            client.perform_actions(hover).await?;
            card.find(Locator::Css(&format!("button.{button}")))
                .await?
                .click()
                .await
        };
        match clicked.await {
            Ok(()) => return,
            Err(e) if attempt < 3 => eprintln!("{button} on {id} retried: {e}"),
            Err(e) => panic!("{button} on {id}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Types `text` into the page's dialog (a textarea: a newline starts another line) and presses OK.
async fn answer_dialog(client: &Client, text: &str) {
    until(
        client,
        "document.getElementById('dialog').open",
        Duration::from_secs(2),
    )
    .await;
    let input = by_id(client, "dialog-input").await;
    input.send_keys(text).await.expect("type into the dialog");
    by_id(client, "dialog-ok")
        .await
        .click()
        .await
        .expect("press OK");
}

async fn by_id(client: &Client, id: &str) -> fantoccini::elements::Element {
    client
        .find(Locator::Id(id))
        .await
        .unwrap_or_else(|e| panic!("#{id} on the page: {e}"))
}

/// Polls tasks.json until `done` holds for it (the page's request is asynchronous).
fn on_disk(repo: &Repo, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let doc = repo.tasks_json();
        if done(&doc) {
            return doc;
        }
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{what}: not on disk within 3 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn task_in<'a>(doc: &'a Value, id: &str) -> Option<&'a Value> {
    doc["tasks"].as_array()?.iter().find(|t| t["id"] == id)
}

/// Waits (up to 3 s) for `id`'s card in the `status` column.
async fn shows(client: &Client, id: &str, status: &str) {
    until(client, &card_in(id, status), Duration::from_secs(3)).await;
}

/// Add, block and decompose from the page as a person would (typing, the hover buttons, the
/// dialog), each checked in tasks.json afterwards.
#[test]
fn add_block_and_decompose_from_the_page() {
    let repo = Repo::with_project();
    repo.add(&["Write the parser"]);
    repo.add(&["Design the API"]);
    let board = Board::start(&repo);
    let (_driver, driver_port) = start_driver();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = browser(driver_port).await;
        client.goto(&board.url).await.expect("open the page");
        until(
            &client,
            &card_in("T-002", "PENDING"),
            Duration::from_secs(5),
        )
        .await;

        // Add: a title and a priority in the form, then the button.
        let title = by_id(&client, "add-title").await;
        title
            .send_keys("Added from the page")
            .await
            .expect("type the title");
        let priority = by_id(&client, "add-priority").await;
        priority.select_by_label("HIGH").await.expect("pick HIGH");
        by_id(&client, "add-submit")
            .await
            .click()
            .await
            .expect("press add");
        let doc = on_disk(&repo, "the added task", |doc| {
            task_in(doc, "T-003").is_some()
        });
        let added = task_in(&doc, "T-003").unwrap();
        assert_eq!(added["title"], "Added from the page");
        assert_eq!(added["priority"], "HIGH");
        assert_eq!(added["status"], "PENDING");
        shows(&client, "T-003", "PENDING").await;

        // Block: the card's button, the reason in the dialog.
        click_card_button(&client, "T-001", "block").await;
        answer_dialog(&client, "waiting on the grammar").await;
        let doc = on_disk(&repo, "T-001 blocked", |doc| {
            task_in(doc, "T-001").is_some_and(|t| t["status"] == "BLOCKED")
        });
        assert_eq!(
            task_in(&doc, "T-001").unwrap()["blocked_reason"],
            "waiting on the grammar"
        );
        shows(&client, "T-001", "BLOCKED").await;

        // Decompose: one subtask title per line.
        click_card_button(&client, "T-002", "decompose").await;
        answer_dialog(&client, "Sketch the endpoints\nWrite the schema").await;
        let doc = on_disk(&repo, "T-002 decomposed", |doc| {
            task_in(doc, "T-002").is_some_and(|t| t["subtasks"].is_array())
        });
        let parent = task_in(&doc, "T-002").unwrap();
        assert_eq!(parent["status"], "IN_PROGRESS");
        let children: Vec<&str> = parent["subtasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(children.len(), 2, "{parent}");
        for (id, title) in children
            .iter()
            .zip(["Sketch the endpoints", "Write the schema"])
        {
            let child = task_in(&doc, id).unwrap_or_else(|| panic!("{id} on disk"));
            assert_eq!(child["title"], title);
            assert_eq!(child["parent_id"], "T-002");
            shows(&client, id, "PENDING").await;
        }
        client.close().await.expect("close the browser");
    });
}
