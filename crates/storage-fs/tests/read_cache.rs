//! The binary read cache of tasks.json (`.tasks.json.cache`): a read through it gives exactly
//! what a read of the JSON gives, and a cache that is stale (tasks.json changed by anyone) or
//! damaged is never trusted.

use std::path::PathBuf;
use std::sync::Arc;

use cairn_domain::ports::FixedClock;
use cairn_domain::project::service::{InitProject, ProjectService};
use cairn_domain::project::{NewTask, ProjectId, ProjectState, ProjectType};
use cairn_storage_fs::FsProjectStore;
use chrono::{TimeZone, Utc};

struct Store {
    dir: tempfile::TempDir,
    service: ProjectService,
    id: ProjectId,
}

impl Store {
    /// A project with three tasks, one of them carrying what another tool writes: an unknown
    /// field and fractional minutes.
    async fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::new(
            Utc.with_ymd_and_hms(2026, 5, 6, 7, 8, 9)
                .single()
                .expect("time"),
        ));
        let store = Arc::new(FsProjectStore::new(dir.path()).with_clock(clock.clone()));
        let service = ProjectService::new(store, clock);
        let id: ProjectId = "demo".parse().expect("id");
        service
            .init(InitProject {
                id: id.clone(),
                name: "Demo".into(),
                goal: "Exercise the read cache".into(),
                kind: ProjectType::Software,
            })
            .await
            .expect("init");
        let s = Self { dir, service, id };
        for title in ["first task", "second task"] {
            s.service
                .add_task(&s.id, NewTask::titled(title.to_owned()))
                .await
                .expect("add");
        }
        // Another tool's edit (a new file, so unstamped and validated in full), then a cairn
        // write on top of it, which writes the cache.
        let text = std::fs::read_to_string(s.path("tasks.json")).expect("read");
        let edited = text.replacen(
            "\"title\":\"first task\"",
            "\"title\":\"first task\",\"actual_minutes\":12.5,\"x_tool\":{\"k\":[1,2.0]}",
            1,
        );
        assert_ne!(edited, text, "the fixture's edit applies");
        std::fs::remove_file(s.path("tasks.json")).expect("remove");
        std::fs::write(s.path("tasks.json"), edited).expect("write");
        s.service
            .add_task(&s.id, NewTask::titled("third task".to_owned()))
            .await
            .expect("add");
        s
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(".claude/projects/demo").join(rel)
    }

    async fn load(&self) -> ProjectState {
        self.service.load(&self.id).await.expect("load")
    }

    /// Changes tasks.json in place without changing its identity (same inode, size and
    /// modification time): only the cache can then tell the old content from the new.
    fn retitle_keeping_identity(&self, from: &str, to: &str) {
        assert_eq!(from.len(), to.len());
        let path = self.path("tasks.json");
        let modified = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .expect("mtime");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains(from));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        std::io::Write::write_all(&mut &file, text.replacen(from, to, 1).as_bytes())
            .expect("write in place");
        file.set_modified(modified).expect("restore mtime");
    }
}

fn titles(state: &ProjectState) -> Vec<&str> {
    state.tasks.tasks.iter().map(|t| t.title.as_str()).collect()
}

#[tokio::test]
async fn a_read_through_the_cache_is_the_read_of_the_json() {
    let s = Store::new().await;
    let cache = s.path(".tasks.json.cache");
    assert!(cache.is_file(), "a write leaves the cache of what it wrote");
    let cached = s.load().await;
    std::fs::remove_file(&cache).expect("remove the cache");
    let parsed = s.load().await;
    assert_eq!(cached, parsed);
    let first = &parsed.tasks.tasks[0];
    assert_eq!(
        first
            .actual_minutes
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some("12.5")
    );
    assert_eq!(first.extra["x_tool"], serde_json::json!({"k": [1, 2.0]}));
    assert!(
        cache.is_file(),
        "a read of a stamped file writes the cache again"
    );
    assert_eq!(s.load().await, parsed);
}

#[tokio::test]
async fn a_cache_is_used_only_while_it_is_whole_and_of_this_very_file() {
    let s = Store::new().await;
    let cache = s.path(".tasks.json.cache");
    let good = std::fs::read(&cache).expect("cache");
    s.retitle_keeping_identity("second task", "SECOND TASK");
    // The file's identity did not change: the cache answers (which is how we know it is read).
    assert_eq!(
        titles(&s.load().await),
        ["first task", "second task", "third task"]
    );

    let mut flipped = good.clone();
    let last = flipped.len() - 5;
    flipped[last] ^= 0x20;
    let damaged: [(&str, Vec<u8>); 4] = [
        ("one byte changed", flipped),
        ("truncated", good[..good.len() - 7].to_vec()),
        ("empty", Vec::new()),
        (
            "garbage",
            b"cairn tasks.json cache v1\nnot a key\n\0\0\0".to_vec(),
        ),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&cache, &bytes).expect("damage the cache");
        assert_eq!(
            titles(&s.load().await),
            ["first task", "SECOND TASK", "third task"],
            "cache {what}: the JSON is read instead"
        );
        assert_ne!(
            std::fs::read(&cache).expect("cache"),
            bytes,
            "cache {what} is replaced"
        );
    }
}

#[tokio::test]
async fn any_change_to_tasks_json_makes_the_cache_stale() {
    let s = Store::new().await;
    // Another tool rewrites the file (an editor's save: same length, a new modification time).
    let path = s.path("tasks.json");
    let text = std::fs::read_to_string(&path).expect("read");
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, text.replacen("second task", "SECOND TASK", 1)).expect("edit");
    assert_eq!(
        titles(&s.load().await),
        ["first task", "SECOND TASK", "third task"]
    );
    // And a cairn write: the next read sees it, from the cache the write left.
    s.service
        .add_task(&s.id, NewTask::titled("fourth task".to_owned()))
        .await
        .expect("add");
    let state = s.load().await;
    assert_eq!(
        titles(&state),
        ["first task", "SECOND TASK", "third task", "fourth task"]
    );
    std::fs::remove_file(s.path(".tasks.json.cache")).expect("remove the cache");
    assert_eq!(s.load().await, state);
}

/// A tasks.json another tool wrote (a `git pull`, an editor) is validated in full by the first
/// read only: that read caches it under a key that says it is not cairn's own, and later reads of
/// the same file come from the cache. A cairn write on top renders it afresh, in cairn's layout.
#[tokio::test]
async fn a_file_another_tool_wrote_is_validated_once_then_read_from_the_cache() {
    let s = Store::new().await;
    let path = s.path("tasks.json");
    let cache = s.path(".tasks.json.cache");
    let text = std::fs::read_to_string(&path).expect("read");
    let value: serde_json::Value = serde_json::from_str(&text).expect("json");
    let pretty = serde_json::to_string_pretty(&value)
        .expect("pretty")
        .replacen("second task", "SECOND TASK", 1);
    std::fs::remove_file(&path).expect("remove");
    std::fs::write(&path, pretty).expect("another tool's write");
    std::fs::remove_file(&cache).expect("no cache yet");

    let state = s.load().await;
    assert_eq!(titles(&state), ["first task", "SECOND TASK", "third task"]);
    let head = std::fs::read(&cache).expect("the read cached the file");
    assert!(
        head.split(|&b| b == b'\n')
            .nth(1)
            .is_some_and(|key| key.ends_with(b" validated")),
        "keyed as validated, not as cairn's own"
    );
    s.retitle_keeping_identity("third task", "THIRD TASK");
    assert_eq!(
        s.load().await,
        state,
        "the same file (same identity) is read from the cache, not parsed again"
    );

    s.service
        .add_task(&s.id, NewTask::titled("fourth task".to_owned()))
        .await
        .expect("add");
    let written = std::fs::read_to_string(&path).expect("read");
    assert!(
        written
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("{\"id\":\"T-001\"")),
        "rewritten one task per line: {written}"
    );
    assert_eq!(
        titles(&s.load().await),
        ["first task", "SECOND TASK", "third task", "fourth task"]
    );
}
