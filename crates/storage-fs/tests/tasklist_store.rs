//! The filesystem task-list store: the shared contract, then what only a disk can get wrong —
//! garbage files, files that are not tasks, Claude Code's own files, leftovers of a write.

use std::path::Path;
use std::sync::Arc;

use cairn_domain::ports::{Fresh, block_on};
use cairn_domain::tasklist::{ListId, Removal, TaskListStore, parse_task};
use cairn_storage_fs::FsTaskListStore;
use serde_json::json;

fn fresh() -> Fresh<dyn TaskListStore> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FsTaskListStore::new(dir.path().join("tasks"));
    Fresh {
        store: Arc::new(store),
        guard: Box::new(dir),
    }
}

cairn_domain::tasklist_store_contract!(fs_contract, fresh);

fn list() -> ListId {
    ListId::parse("demo").unwrap()
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn garbage_and_foreign_files_are_reported_or_skipped_never_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FsTaskListStore::new(tmp.path());
    let dir = store.list_dir(&list());
    write(
        &dir,
        "1.json",
        r#"{"id": 1, "subject": "numeric id", "status": "weird"}"#,
    );
    write(&dir, "2.json", "{\"id\": \"2\", \"subj");
    write(
        &dir,
        "3.json",
        r#"{"id": "3", "description": "no subject"}"#,
    );
    write(&dir, "4.json", "");
    write(
        &dir,
        "execution_pointer.md",
        "/home/me/repo/.claude/sessions/__live_session__/\n",
    );
    write(&dir, ".lock", "");
    write(&dir, ".highwatermark", "4");
    let read = block_on(store.load(&list())).unwrap();
    assert_eq!(read.tasks.len(), 1);
    assert_eq!(read.tasks[0].id, "1", "ids are coerced to strings");
    let reported: Vec<_> = read
        .problems
        .iter()
        .map(|p| (p.file.as_str(), p.skipped))
        .collect();
    assert_eq!(
        reported,
        [
            ("1.json", false),
            ("2.json", true),
            ("3.json", true),
            ("4.json", true)
        ],
        "{:?}",
        read.problems
    );
    assert!(read.problems[0].problem.contains("unknown status"));
}

#[test]
fn writes_leave_one_whole_file_and_nothing_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FsTaskListStore::new(tmp.path());
    let value = json!({"id": "7", "subject": "Ship it", "description": "", "activeForm": "Shipping",
        "status": "in_progress", "blocks": [], "blockedBy": ["3"],
        "metadata": {"cairn": {"project": "demo", "task": "T-007"}}});
    let task = parse_task(&value, None).task.unwrap();
    block_on(store.write_task(&list(), &task)).unwrap();
    let names: Vec<_> = std::fs::read_dir(store.list_dir(&list()))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["7.json"]);
    let text = std::fs::read_to_string(store.list_dir(&list()).join("7.json")).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text).unwrap(),
        value
    );
    assert!(text.ends_with("}\n"));
}

#[test]
fn a_foreign_or_unreadable_file_is_never_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FsTaskListStore::new(tmp.path());
    let dir = store.list_dir(&list());
    write(&dir, "5.json", r#"{"id": "5", "subject": "Claude's"}"#);
    write(&dir, "6.json", "not json");
    assert_eq!(
        block_on(store.remove_task(&list(), "5")).unwrap(),
        Removal::Kept
    );
    assert_eq!(
        block_on(store.remove_task(&list(), "6")).unwrap(),
        Removal::Kept
    );
    assert!(dir.join("5.json").is_file() && dir.join("6.json").is_file());
}

#[test]
fn list_ids_name_directories_only_when_valid() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FsTaskListStore::new(tmp.path());
    std::fs::create_dir_all(tmp.path().join("b-list")).unwrap();
    std::fs::create_dir_all(tmp.path().join("a-list")).unwrap();
    std::fs::create_dir_all(tmp.path().join(".hidden")).unwrap();
    write(tmp.path(), "stray.json", "{}");
    let ids: Vec<_> = block_on(store.list())
        .unwrap()
        .into_iter()
        .map(|l| l.to_string())
        .collect();
    assert_eq!(ids, ["a-list", "b-list"]);
}

#[test]
fn the_execution_pointer_is_accepted_only_under_home() {
    use cairn_domain::tasklist::PointerState;
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let live = home.join("repo/.claude/sessions/__live_session__");
    std::fs::create_dir_all(&live).unwrap();
    let store = FsTaskListStore::new(home.join(".claude/tasks")).with_home(&home);
    let dir = store.list_dir(&list());
    let pointer = |text: &str| {
        write(&dir, "execution_pointer.md", text);
        block_on(store.load(&list())).unwrap().pointer
    };
    assert_eq!(block_on(store.load(&list())).unwrap().pointer, None);
    assert_eq!(
        pointer(&format!("{}/\n", live.display())),
        Some(PointerState::Accepted {
            dir: live.display().to_string()
        })
    );
    for outside in [
        "/etc/passwd".to_owned(),
        format!("{}/../elsewhere", home.display()),
        "relative/path".to_owned(),
    ] {
        assert!(
            matches!(pointer(&outside), Some(PointerState::Refused { .. })),
            "{outside}"
        );
    }
    #[cfg(unix)]
    {
        let escape = home.join("escape");
        std::os::unix::fs::symlink(tmp.path(), &escape).unwrap();
        let Some(PointerState::Refused { reason, .. }) = pointer(&escape.display().to_string())
        else {
            panic!("a link out of the home directory must be refused");
        };
        assert!(reason.contains("symbolic link"), "{reason}");
    }
}
