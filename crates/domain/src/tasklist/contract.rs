//! The contract every [`TaskListStore`] adapter must pass. Each check is a `pub async fn` taking
//! a fresh, empty store; an adapter's tests turn every one into its own `#[test]` with
//! [`tasklist_store_contract!`](crate::tasklist_store_contract).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::store::{CAIRN_METADATA_KEY, ListId, Removal, TaskListStore};
use super::task::{ClaudeTask, ClaudeTaskStatus};
use crate::StoreError;
use crate::ports::on_threads;

/// Generates one `#[test]` per check of this suite, in a module `$name`, each on a fresh store
/// from `$fresh` (a `fn() -> Fresh<dyn TaskListStore>` in scope).
#[macro_export]
macro_rules! tasklist_store_contract {
    ($name:ident, $fresh:ident) => {
        $crate::contract_tests!($name, $fresh; tasklist;
            empty_store,
            write_and_read_back,
            write_replaces_the_whole_file,
            lists_are_separate,
            remove_deletes_only_what_cairn_wrote,
            unsafe_task_ids_are_refused,
            concurrent_writes_lose_nothing,
        );
    };
}

fn list(id: &str) -> ListId {
    ListId::parse(id).expect("valid test list id")
}

/// A task as Claude Code writes it: no `cairn` metadata.
fn foreign(id: &str, subject: &str) -> ClaudeTask {
    ClaudeTask {
        id: id.to_owned(),
        subject: subject.to_owned(),
        description: String::new(),
        active_form: String::new(),
        status: ClaudeTaskStatus::Pending,
        blocks: Vec::new(),
        blocked_by: Vec::new(),
        owner: None,
        metadata: None,
        extra: Map::new(),
    }
}

/// A task as cairn writes it.
fn ours(id: &str, subject: &str) -> ClaudeTask {
    let mut metadata = Map::new();
    metadata.insert(
        CAIRN_METADATA_KEY.to_owned(),
        json!({"project": "demo", "task": format!("T-{id:0>3}")}),
    );
    metadata.insert("priority".to_owned(), json!("high"));
    ClaudeTask {
        metadata: Some(metadata),
        active_form: format!("Working on {subject}"),
        ..foreign(id, subject)
    }
}

pub async fn empty_store(store: Arc<dyn TaskListStore>) {
    assert!(store.list().await.expect("list").is_empty());
    let read = store.load(&list("nothing")).await.expect("load");
    assert!(read.tasks.is_empty() && read.problems.is_empty());
    assert_eq!(
        store
            .remove_task(&list("nothing"), "1")
            .await
            .expect("remove"),
        Removal::Missing
    );
}

pub async fn write_and_read_back(store: Arc<dyn TaskListStore>) {
    let l = list("demo");
    let mut rich = ours("2", "Second");
    rich.status = ClaudeTaskStatus::InProgress;
    rich.blocks = vec!["10".to_owned()];
    rich.owner = Some("agent-1".to_owned());
    rich.extra.insert("team".to_owned(), json!({"x": 1}));
    let mut last = foreign("10", "Tenth");
    last.blocked_by = vec!["2".to_owned()];
    for task in [&last, &rich, &foreign("1", "First")] {
        store.write_task(&l, task).await.expect("write");
    }
    let read = store.load(&l).await.expect("load");
    assert!(read.problems.is_empty(), "{:?}", read.problems);
    let ids: Vec<_> = read.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "10"], "tasks come back in numeric id order");
    assert_eq!(
        read.tasks[1], rich,
        "every field survives, unknown ones too"
    );
    assert_eq!(read.tasks[2], last);
    assert_eq!(store.list().await.expect("list"), vec![l]);
}

pub async fn write_replaces_the_whole_file(store: Arc<dyn TaskListStore>) {
    let l = list("demo");
    store
        .write_task(&l, &ours("7", "Old"))
        .await
        .expect("write");
    let newer = foreign("7", "New");
    store.write_task(&l, &newer).await.expect("rewrite");
    let read = store.load(&l).await.expect("load");
    assert_eq!(read.tasks, vec![newer], "no field of the old file is left");
}

pub async fn lists_are_separate(store: Arc<dyn TaskListStore>) {
    store
        .write_task(&list("a"), &foreign("1", "In a"))
        .await
        .expect("write a");
    store
        .write_task(&list("b"), &foreign("1", "In b"))
        .await
        .expect("write b");
    assert_eq!(
        store.load(&list("a")).await.expect("load a").tasks[0].subject,
        "In a"
    );
    assert_eq!(
        store.load(&list("b")).await.expect("load b").tasks[0].subject,
        "In b"
    );
    assert_eq!(
        store.list().await.expect("list"),
        vec![list("a"), list("b")]
    );
}

pub async fn remove_deletes_only_what_cairn_wrote(store: Arc<dyn TaskListStore>) {
    let l = list("demo");
    store
        .write_task(&l, &ours("1", "Ours"))
        .await
        .expect("write");
    store
        .write_task(&l, &foreign("2", "Claude's"))
        .await
        .expect("write");
    assert_eq!(
        store.remove_task(&l, "1").await.expect("remove"),
        Removal::Removed
    );
    assert_eq!(
        store.remove_task(&l, "2").await.expect("remove"),
        Removal::Kept
    );
    assert_eq!(
        store.remove_task(&l, "1").await.expect("again"),
        Removal::Missing
    );
    let ids: Vec<_> = store
        .load(&l)
        .await
        .expect("load")
        .tasks
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids, ["2"], "a foreign file is never deleted");
}

pub async fn unsafe_task_ids_are_refused(store: Arc<dyn TaskListStore>) {
    let l = list("demo");
    for id in ["../escape", "a/b", "..", ""] {
        let refused = store.write_task(&l, &ours(id, "Bad")).await;
        assert!(
            matches!(refused, Err(StoreError::Invalid { .. })),
            "{id:?}: {refused:?}"
        );
    }
    assert!(store.load(&l).await.expect("load").tasks.is_empty());
    assert_eq!(
        store.remove_task(&l, "../escape").await.expect("remove"),
        Removal::Missing,
        "an id that cannot name a file names no file"
    );
}

pub async fn concurrent_writes_lose_nothing(store: Arc<dyn TaskListStore>) {
    const THREADS: usize = 4;
    const EACH: usize = 10;
    on_threads(&store, THREADS, |store, thread| async move {
        let l = list("demo");
        for i in 0..EACH {
            let id = (thread * EACH + i + 1).to_string();
            store
                .write_task(&l, &ours(&id, &format!("Task {id}")))
                .await
                .expect("write");
        }
    });
    let read = store.load(&list("demo")).await.expect("load");
    assert!(read.problems.is_empty(), "{:?}", read.problems);
    assert_eq!(read.tasks.len(), THREADS * EACH);
    let value = serde_json::to_value(&read.tasks[0]).expect("serialize");
    assert!(value.get("metadata").is_some_and(Value::is_object));
}
