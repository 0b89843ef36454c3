//! The filesystem project store: the shared contract, then what only a disk can get wrong.

use std::path::Path;
use std::sync::Arc;

use cairn_domain::ports::{Clock, FixedClock, Fresh};
use cairn_domain::project::contract;
use cairn_domain::project::service::{InitProject, ProjectService};
use cairn_domain::project::store::{Changes, ProjectStore, TaskSource};
use cairn_domain::project::{
    MoveDetail, NewTask, ProjectId, ProjectState, ProjectType, TaskStatus,
};
use cairn_domain::{Error, StoreError};
use cairn_storage_fs::FsProjectStore;
use chrono::{TimeZone, Utc};

mod support;

fn clock() -> Arc<FixedClock> {
    Arc::new(FixedClock::new(
        Utc.with_ymd_and_hms(2026, 5, 6, 7, 8, 9)
            .single()
            .expect("time"),
    ))
}

fn fresh() -> Fresh<dyn ProjectStore> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FsProjectStore::new(dir.path());
    Fresh {
        store: Arc::new(store),
        guard: Box::new(dir),
    }
}

cairn_domain::project_store_contract!(fs_contract, fresh);

/// The body of every child process of [`fs_contract_processes_lose_no_update`]; a no-op in an
/// ordinary run (see `support/mod.rs`).
#[test]
fn child_process_entry() {
    let Some(call) = support::child_call() else {
        return;
    };
    match call.role.as_str() {
        "contract-writer" => {
            let (writer, updates) = call.arg.split_once('/').expect("writer/updates");
            let store = FsProjectStore::new(&call.dir);
            support::block_on(contract::concurrency_writer(
                &store,
                writer.parse().expect("a writer number"),
                updates.parse().expect("an update count"),
            ));
        }
        other => panic!("unknown child role {other}"),
    }
}

/// The contract's concurrency check with a process per writer instead of a thread: the lock
/// must serialise writers that share nothing but the files.
#[test]
fn fs_contract_processes_lose_no_update() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FsProjectStore::new(dir.path());
    support::block_on(contract::concurrency_setup(&store));
    let args: Vec<String> = (0..contract::WRITERS)
        .map(|w| format!("{w}/{}", contract::UPDATES))
        .collect();
    support::run_together("contract-writer", dir.path(), &args);
    support::block_on(contract::concurrency_verify(
        &store,
        contract::WRITERS,
        contract::UPDATES,
    ));
}

struct Fixture {
    dir: tempfile::TempDir,
    service: ProjectService,
    id: ProjectId,
}

impl Fixture {
    async fn new(tasks: usize) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = clock();
        let store = Arc::new(FsProjectStore::new(dir.path()).with_clock(clock.clone()));
        let service = ProjectService::new(store, clock);
        let id: ProjectId = "demo".parse().expect("id");
        service
            .init(InitProject {
                id: id.clone(),
                name: "Demo".into(),
                goal: "Exercise the disk adapter".into(),
                kind: ProjectType::Software,
            })
            .await
            .expect("init");
        for i in 0..tasks {
            service
                .add_task(&id, NewTask::titled(format!("task number {i}")))
                .await
                .expect("add");
        }
        Self { dir, service, id }
    }

    fn path(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join(".claude/projects/demo").join(rel)
    }

    fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).expect("read")
    }

    fn log(&self) -> String {
        String::from_utf8(self.read("progress/log.md")).expect("utf8")
    }

    /// Makes the store one from before the log carried replay payloads (#16): the same entries,
    /// without the `- replay:` lines, so only the files and checkpoints can rebuild it.
    fn forget_replay(&self) {
        let legacy: String = self
            .log()
            .lines()
            .filter(|line| !line.starts_with("- replay: "))
            .map(|line| format!("{line}\n"))
            .collect();
        std::fs::write(self.path("progress/log.md"), legacy).expect("rewrite the log");
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn project_json_is_pretty_and_tasks_json_has_one_task_per_line() {
    let f = Fixture::new(2).await;
    for file in ["project.json", "tasks.json"] {
        let text = String::from_utf8(f.read(file)).expect("utf8");
        assert!(text.ends_with("}\n"), "{file} ends with a newline");
    }
    let project = String::from_utf8(f.read("project.json")).expect("utf8");
    assert!(
        project.contains("\n  \""),
        "project.json is indented by two spaces"
    );
    let tasks = String::from_utf8(f.read("tasks.json")).expect("utf8");
    let lines: Vec<&str> = tasks.lines().collect();
    assert_eq!(lines.len(), 4, "{tasks}");
    assert!(lines[0].ends_with("\"tasks\":["), "{tasks}");
    assert!(
        lines[1].starts_with("{\"id\":\"T-001\"") && lines[1].ends_with("},"),
        "{tasks}"
    );
    assert!(
        lines[2].starts_with("{\"id\":\"T-002\"") && lines[2].ends_with('}'),
        "{tasks}"
    );
    assert!(lines[3].starts_with(']'), "{tasks}");
    serde_json::from_str::<serde_json::Value>(&tasks).expect("tasks.json is one JSON document");
    let log = f.log();
    assert!(
        log.contains("## 2026-05-06T07:08:09Z — PROJECT_CREATED\n"),
        "{log}"
    );
    assert!(log.contains("— TASK_CREATED\n- task: T-001\n"), "{log}");
}

#[tokio::test]
async fn truncated_tasks_json_is_recovered_from_the_newest_valid_checkpoint() {
    let f = Fixture::new(3).await;
    f.service
        .write_checkpoint(&f.id)
        .await
        .expect("checkpoint 1");
    f.service
        .add_task(&f.id, NewTask::titled("after the first checkpoint"))
        .await
        .expect("add");
    f.service
        .write_checkpoint(&f.id)
        .await
        .expect("checkpoint 2");
    std::fs::write(f.path("checkpoints/checkpoint-002.json"), b"{ garbage")
        .expect("damage checkpoint");
    let tasks = f.read("tasks.json");
    std::fs::write(f.path("tasks.json"), &tasks[..tasks.len() / 2]).expect("truncate");

    let state = f.service.load(&f.id).await.expect("load recovers");
    assert_eq!(
        state.tasks.tasks.len(),
        4,
        "checkpoint 1 (checkpoint 2 is garbage) and the log after it: nothing is lost (#16)"
    );
    let recoveries = f.service.take_recoveries();
    assert_eq!(recoveries.len(), 1, "the caller is told about the recovery");
    assert_eq!(
        (
            recoveries[0].checkpoint,
            recoveries[0].kept.len(),
            recoveries[0].dropped.len()
        ),
        (Some(1), 4, 0)
    );
    use cairn_domain::project::store::TaskSource::{Checkpoint, Log};
    let sources: Vec<_> = recoveries[0].kept.iter().map(|k| k.source).collect();
    assert_eq!(sources, [Checkpoint(1), Checkpoint(1), Checkpoint(1), Log]);
    let copy = std::fs::read(&recoveries[0].damaged_copy).expect("the damaged file is kept");
    assert_eq!(
        copy,
        &tasks[..tasks.len() / 2],
        "the damaged copy holds the damaged bytes"
    );
    assert!(
        f.log().contains("— ERROR\n"),
        "an ERROR entry records the recovery"
    );
    assert!(f.log().contains("— STORE_RECOVERED\n"));
    // And the store works again.
    f.service
        .add_task(&f.id, NewTask::titled("life goes on"))
        .await
        .expect("add after recovery");
}

#[tokio::test]
async fn one_invalid_task_is_dropped_and_the_valid_ones_are_kept() {
    let f = Fixture::new(3).await;
    f.forget_replay();
    f.service.write_checkpoint(&f.id).await.expect("checkpoint");
    let mut checkpoint: serde_json::Value =
        serde_json::from_slice(&f.read("checkpoints/checkpoint-001.json")).expect("json");
    checkpoint["tasks"][1]["title"] = serde_json::json!("x");
    std::fs::write(
        f.path("checkpoints/checkpoint-001.json"),
        serde_json::to_vec(&checkpoint).expect("ser"),
    )
    .expect("write");
    std::fs::write(f.path("tasks.json"), b"").expect("empty tasks.json");
    let state = f.service.load(&f.id).await.expect("partial recovery");
    let ids: Vec<&str> = state.tasks.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["T-001", "T-003"], "partial recovery beats none");
    let dropped = &f.service.take_recoveries()[0].dropped;
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0].id.as_deref(), Some("T-002"));
    assert_eq!(dropped[0].index, 1);
    assert!(dropped[0].reason.contains("/title"), "{:?}", dropped[0]);
}

#[tokio::test]
async fn without_a_valid_checkpoint_the_damage_is_reported_and_left_in_place() {
    let f = Fixture::new(2).await;
    f.forget_replay();
    std::fs::write(f.path("tasks.json"), b"not json").expect("damage");
    let err = f
        .service
        .load(&f.id)
        .await
        .expect_err("nothing to recover from");
    assert!(
        matches!(err, Error::Store(StoreError::Corrupt { .. })),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("checkpoint"),
        "the message says what to do: {err}"
    );
    assert_eq!(
        f.read("tasks.json"),
        b"not json",
        "nothing is deleted or replaced to make an error go away"
    );
    std::fs::create_dir_all(f.path("checkpoints")).ok();
    std::fs::write(f.path("checkpoints/checkpoint-001.json"), b"[]").expect("garbage checkpoint");
    assert!(
        f.service.load(&f.id).await.is_err(),
        "a garbage checkpoint is not a valid one"
    );
}

#[tokio::test]
async fn a_write_that_fails_validation_changes_nothing_and_logs_an_error() {
    let f = Fixture::new(1).await;
    let before = f.read("tasks.json");
    // What the fixture's own writes left there: the tasks.json the last one replaced.
    let temp_before = files_in(&f.path("temp"));
    let store = f.service.store().clone();
    let result = store
        .transact(
            &f.id,
            Utc::now(),
            Box::new(|s: &mut ProjectState| {
                // Something the domain would never do, but another code path might: break the schema.
                s.tasks.tasks[0].title = "no".into();
                Ok(Changes::default())
            }),
        )
        .await;
    assert!(
        matches!(result, Err(Error::Store(StoreError::Invalid { .. }))),
        "{result:?}"
    );
    assert_eq!(
        f.read("tasks.json"),
        before,
        "the target is byte-for-byte untouched"
    );
    assert!(f.log().contains("— ERROR\n"), "an ERROR entry says why");
    assert_eq!(
        files_in(&f.path("temp")),
        temp_before,
        "no temp file is left behind, and none removed"
    );
}

#[tokio::test]
async fn every_tenth_completion_writes_a_checkpoint() {
    let f = Fixture::new(12).await;
    let mut written = Vec::new();
    for i in 1..=11u64 {
        let id = cairn_domain::project::TaskId::from_number(i);
        f.service
            .move_task(&f.id, &id, TaskStatus::InProgress, MoveDetail::default())
            .await
            .expect("start");
        let moved = f
            .service
            .move_task(&f.id, &id, TaskStatus::Complete, MoveDetail::default())
            .await
            .expect("complete");
        written.extend(moved.checkpoint);
    }
    assert_eq!(
        written,
        [1],
        "one checkpoint after ten completions, none after eleven"
    );
    assert_eq!(files_in(&f.path("checkpoints")), ["checkpoint-001.json"]);
    let velocity: serde_json::Value =
        serde_json::from_slice(&f.read("progress/velocity.json")).expect("velocity");
    assert_eq!(
        velocity["completed_count"], 11,
        "velocity is recomputed after every completion"
    );
}

#[tokio::test]
async fn project_ids_cannot_escape_the_store() {
    assert!("../evil".parse::<ProjectId>().is_err());
    assert!("a/b".parse::<ProjectId>().is_err());
    assert!("".parse::<ProjectId>().is_err());
}

#[cfg(unix)]
#[tokio::test]
async fn a_read_only_store_fails_cleanly_and_loses_nothing() {
    let f = Fixture::new(1).await;
    let dir = f.path("");
    let before = f.read("tasks.json");
    let read_only = ReadOnly::new(&dir);
    let Some(read_only) = read_only else {
        eprintln!("skipped: cannot make {} read-only here", dir.display());
        return;
    };
    let result = f
        .service
        .add_task(&f.id, NewTask::titled("cannot replace tasks.json"))
        .await;
    // Write-ahead: the log (in its own, writable directory) took the commit before tasks.json
    // could not be replaced, so the change is saved and must not be repeated.
    assert!(
        matches!(&result, Err(Error::Store(StoreError::AfterCommit { source })) if matches!(**source, StoreError::Io { .. })),
        "the rename into a read-only directory fails after the commit: {result:?}"
    );
    assert_eq!(f.read("tasks.json"), before, "tasks.json is untouched");
    assert!(
        files_in(&f.path("temp")).is_empty(),
        "the temp file of the failed write is removed"
    );
    let titles = |state: &ProjectState| -> Vec<String> {
        state.tasks.tasks.iter().map(|t| t.title.clone()).collect()
    };
    let read = f
        .service
        .load(&f.id)
        .await
        .expect("a reader needs no write");
    assert_eq!(
        titles(&read),
        ["task number 0", "cannot replace tasks.json"],
        "a reader sees the committed change, applied from the log"
    );
    drop(read_only);
    f.service
        .add_task(&f.id, NewTask::titled("after the repair"))
        .await
        .expect("the next writer persists the logged change first");
    let on_disk: cairn_domain::project::TaskDoc =
        serde_json::from_slice(&f.read("tasks.json")).expect("tasks.json");
    let titles: Vec<&str> = on_disk.tasks.iter().map(|t| t.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "task number 0",
            "cannot replace tasks.json",
            "after the repair"
        ]
    );
}

/// Makes a directory refuse new entries and renames — for root too, which ignores permission
/// bits (CI runs as root): `chattr +i` there. Undone on drop, even when an assertion fails, so the
/// temporary directory can be deleted.
#[cfg(unix)]
struct ReadOnly {
    dir: std::path::PathBuf,
    immutable: bool,
}

#[cfg(unix)]
impl ReadOnly {
    fn new(dir: &Path) -> Option<Self> {
        use std::os::unix::fs::PermissionsExt;
        if nix_is_root() {
            let ok = std::process::Command::new("chattr")
                .arg("+i")
                .arg(dir)
                .status()
                .is_ok_and(|s| s.success());
            ok.then(|| Self {
                dir: dir.to_path_buf(),
                immutable: true,
            })
        } else {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).ok()?;
            Some(Self {
                dir: dir.to_path_buf(),
                immutable: false,
            })
        }
    }
}

#[cfg(unix)]
impl Drop for ReadOnly {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        if self.immutable {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(&self.dir)
                .status();
        } else {
            let _ = std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o755));
        }
    }
}

#[cfg(unix)]
fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

#[tokio::test]
async fn an_invalid_edit_by_another_tool_is_caught_despite_the_validation_stamp() {
    let f = Fixture::new(2).await;
    f.service.write_checkpoint(&f.id).await.expect("checkpoint");
    let text = String::from_utf8(f.read("tasks.json")).expect("utf8");
    // Same length, still valid JSON, but a title under three characters breaks the schema.
    let edited = text.replacen("\"task number 0\"", "\"no\"           ", 1);
    assert_eq!(edited.len(), text.len());
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(f.path("tasks.json"), &edited).expect("edit in place");
    let state = f.service.load(&f.id).await.expect("recovers");
    assert_eq!(
        f.service.take_recoveries().len(),
        1,
        "the schema violation was detected, not skipped"
    );
    assert!(state.tasks.tasks.iter().all(|t| t.title.len() >= 3));
}

/// Damage with nothing to recover from — a log without replay payloads (a store from before
/// #16) — for every way the checkpoints can be "nothing": the
/// directory empty, missing, or holding only snapshots without a single valid task. Both the read
/// path and the write path must refuse with a `Corrupt` error that says what to do, and leave
/// every file — the damaged one above all — exactly as it was.
#[tokio::test]
async fn damage_without_a_usable_checkpoint_is_refused_on_read_and_write_and_touches_nothing() {
    let damages: [(&str, Option<&[u8]>); 4] = [
        ("truncated", Some(b"{\"version\": 1, \"tasks\": [")),
        (
            "fails its schema",
            Some(b"{\"version\": 1, \"tasks\": [{\"id\": \"not-a-task-id\"}]}\n"),
        ),
        ("empty", Some(b"")),
        ("missing", None),
    ];
    let checkpoint_states = ["empty dir", "no dir", "only a checkpoint without tasks"];
    for (damage, bytes) in damages {
        for checkpoints in checkpoint_states {
            let what = format!("tasks.json {damage}, checkpoints: {checkpoints}");
            let f = Fixture::new(2).await;
            f.forget_replay();
            match bytes {
                Some(bytes) => std::fs::write(f.path("tasks.json"), bytes).expect("damage"),
                None => std::fs::remove_file(f.path("tasks.json")).expect("remove"),
            }
            match checkpoints {
                "empty dir" => assert!(files_in(&f.path("checkpoints")).is_empty(), "{what}"),
                "no dir" => std::fs::remove_dir(f.path("checkpoints")).expect("rmdir"),
                _ => std::fs::write(
                    f.path("checkpoints/checkpoint-001.json"),
                    b"{\"version\": 1, \"tasks\": []}\n",
                )
                .expect("write an empty checkpoint"),
            }
            let log_before = f.read("progress/log.md");
            let files_before = files_in(&f.path(""));
            let temp_before = files_in(&f.path("temp"));

            let read = f.service.load(&f.id).await;
            let write = f
                .service
                .add_task(&f.id, NewTask::titled("cannot be added"))
                .await;

            for (path, result) in [("load", read.map(|_| ())), ("add", write.map(|_| ()))] {
                let err = result.expect_err(&format!("{what}: {path} must fail"));
                let Error::Store(StoreError::Corrupt { path: file, detail }) = &err else {
                    panic!("{what}: {path}: expected Corrupt, got {err:?}");
                };
                assert!(
                    file.ends_with("tasks.json"),
                    "{what}: names the file: {file}"
                );
                assert!(
                    detail.contains("cairn checkpoint restore"),
                    "{what}: says what to do: {detail}"
                );
            }
            assert_eq!(
                std::fs::read(f.path("tasks.json")).ok().as_deref(),
                bytes,
                "{what}: tasks.json is left exactly as it was"
            );
            assert_eq!(f.read("progress/log.md"), log_before, "{what}: log");
            assert_eq!(files_in(&f.path("")), files_before, "{what}: no file added");
            assert_eq!(
                files_in(&f.path("temp")),
                temp_before,
                "{what}: no temp file left or removed"
            );
            assert!(f.service.take_recoveries().is_empty(), "{what}");
        }
    }
}

fn demo_project() -> cairn_domain::project::Project {
    cairn_domain::project::Project {
        id: "demo".parse().expect("id"),
        name: "Demo".into(),
        goal: "Exercise the disk adapter".into(),
        kind: ProjectType::Software,
        status: cairn_domain::project::ProjectStatus::Ready,
        phases: Vec::new(),
        created_at: clock().now(),
        updated_at: clock().now(),
        extra: Default::default(),
    }
}

/// Makes the progress log unwritable by putting a directory where the file goes.
fn block_the_log(root: &Path) {
    let log = cairn_storage_fs::layout::ProjectLayout::new(root, "demo")
        .expect("layout")
        .log_md();
    if log.exists() {
        std::fs::remove_file(&log).expect("remove the log");
    }
    std::fs::create_dir_all(&log).expect("a directory in the log's place");
}

fn assert_after_commit<T: std::fmt::Debug>(result: Result<T, StoreError>, what: &str) {
    assert!(
        matches!(&result, Err(StoreError::AfterCommit { source }) if matches!(**source, StoreError::Io { .. })),
        "{what}: the change is saved, so the failure must be AfterCommit, got {result:?}"
    );
}

/// Write-ahead: the log entry is the commit, so a create whose entry cannot be written creates
/// nothing (before #16 it created the project and then said the log failed).
#[tokio::test]
async fn a_create_whose_log_entry_fails_creates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FsProjectStore::new(dir.path());
    block_the_log(dir.path());
    let project = demo_project();
    let created = store
        .create(
            &project,
            clock().now(),
            vec![cairn_domain::project::ProjectEvent::ProjectCreated {
                project: project.id.clone(),
                name: project.name.clone(),
            }],
        )
        .await;
    assert!(
        matches!(created, Err(StoreError::Io { .. })),
        "nothing is committed: a plain I/O error, got {created:?}"
    );
    assert!(
        matches!(
            store.load_project(&project.id).await,
            Err(StoreError::NotFound { .. })
        ),
        "no project"
    );
    let project_dir = store.project_dir(&project.id);
    assert!(!project_dir.join("project.json").exists());
    assert!(!project_dir.join("tasks.json").exists());
}

/// The demo project, created in a store of its own (the directory lives as long as the guard).
async fn created() -> (
    tempfile::TempDir,
    FsProjectStore,
    cairn_domain::project::Project,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FsProjectStore::new(dir.path());
    let project = demo_project();
    store
        .create(&project, clock().now(), vec![])
        .await
        .expect("create");
    (dir, store, project)
}

/// Adds a task through a bare transaction of the store.
async fn add_titled(store: &FsProjectStore, project: &ProjectId, title: &str) {
    (store as &dyn ProjectStore)
        .transact_with(project, clock().now(), |state: &mut ProjectState| {
            let (_, events) = state
                .tasks
                .add_task(NewTask::titled(title), clock().now())?;
            Ok((Changes::events(events), ()))
        })
        .await
        .expect("add a task");
}

#[tokio::test]
async fn a_checkpoint_whose_log_entry_fails_is_saved_and_says_so() {
    let (dir, store, project) = created().await;
    add_titled(&store, &project.id, "kept by the checkpoint").await;
    block_the_log(dir.path());
    assert_after_commit(
        store.write_checkpoint(&project.id, clock().now()).await,
        "write_checkpoint",
    );
    let listed = store.list_checkpoints(&project.id).await.expect("list");
    assert_eq!(listed.len(), 1, "the checkpoint was written");
    let before = std::fs::read(store.project_dir(&project.id).join("tasks.json")).expect("read");
    let restored = store
        .restore_checkpoint(&project.id, 1, clock().now())
        .await;
    assert!(
        matches!(restored, Err(StoreError::Io { .. })),
        "a restore is committed by its log entry: without it, nothing changed, got {restored:?}"
    );
    assert_eq!(
        std::fs::read(store.project_dir(&project.id).join("tasks.json")).expect("read"),
        before
    );
}

/// A restore saves the list it replaces as a checkpoint by a second name (the restore's rename
/// leaves that name the only one): a tasks.json cairn validated and wrote, or another tool's
/// still the file read. The checkpoint holds what tasks.json held, and restoring it brings that
/// back.
#[tokio::test]
async fn a_restore_saves_the_list_it_replaces_by_a_link_or_a_copy() {
    use std::os::unix::fs::MetadataExt;
    for stamped in [true, false] {
        let (_dir, store, project) = created().await;
        add_titled(&store, &project.id, "in the first checkpoint").await;
        store
            .write_checkpoint(&project.id, clock().now())
            .await
            .expect("checkpoint");
        add_titled(&store, &project.id, "added after it").await;
        let tasks = store.project_dir(&project.id).join("tasks.json");
        if !stamped {
            // Another tool's copy of the same bytes: a new inode the stamp does not vouch for.
            let bytes = std::fs::read(&tasks).expect("read");
            std::fs::remove_file(&tasks).expect("remove");
            std::fs::write(&tasks, &bytes).expect("write");
        }
        let replaced = std::fs::read(&tasks).expect("read");
        let inode = std::fs::metadata(&tasks).expect("stat").ino();
        let restored = store
            .restore_checkpoint(&project.id, 1, clock().now())
            .await
            .expect("restore");
        assert_eq!(restored.state.tasks.tasks.len(), 1);
        let saved = store
            .project_dir(&project.id)
            .join("checkpoints/checkpoint-002.json");
        assert_eq!(
            std::fs::read(&saved).expect("read"),
            replaced,
            "stamped: {stamped}"
        );
        assert_eq!(
            std::fs::metadata(&saved).expect("stat").ino(),
            inode,
            "linked, stamped: {stamped}"
        );
        let undone = store
            .restore_checkpoint(&project.id, 2, clock().now())
            .await
            .expect("undo");
        assert_eq!(undone.state.tasks.tasks.len(), 2, "stamped: {stamped}");
    }
}

fn edit_tasks(f: &Fixture, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut doc: serde_json::Value = serde_json::from_slice(&f.read("tasks.json")).expect("json");
    edit(&mut doc);
    // Another tool's write: a new inode, so the validation stamp does not vouch for it.
    std::fs::remove_file(f.path("tasks.json")).expect("remove");
    std::fs::write(
        f.path("tasks.json"),
        serde_json::to_vec_pretty(&doc).expect("ser"),
    )
    .expect("write");
}

fn new_task_json(id: &str, title: &str) -> serde_json::Value {
    serde_json::json!({
        "id": id, "title": title, "level": "task", "status": "PENDING", "priority": "LOW",
        "dependencies": [], "completion_criteria": [], "created_at": "2026-05-06T08:00:00Z",
        "x_tool": {"status": "NOT_A_CAIRN_STATUS"}
    })
}

/// #18: `"actual_minutes": 12.5` is schema-valid, but cairn read it as damage and restored the
/// checkpoint, silently undoing the tool's other changes.
#[tokio::test]
async fn another_tools_valid_edit_with_fractional_minutes_is_read_as_written() {
    let f = Fixture::new(2).await;
    f.service.write_checkpoint(&f.id).await.expect("checkpoint");
    edit_tasks(&f, |doc| {
        doc["tasks"][0]["actual_minutes"] = serde_json::json!(12.5);
        doc["tasks"][1]["status"] = serde_json::json!("CANCELLED");
        doc["tasks"][1]["estimate_minutes"] = serde_json::json!(30.0);
        let tasks = doc["tasks"].as_array_mut().expect("tasks");
        tasks.push(new_task_json("T-003", "added by another tool"));
    });

    let state = f.service.load(&f.id).await.expect("reads");
    assert!(
        f.service.take_recoveries().is_empty(),
        "nothing is recovered"
    );
    let statuses: Vec<_> = state.tasks.tasks.iter().map(|t| t.status).collect();
    assert_eq!(
        statuses,
        [
            TaskStatus::Pending,
            TaskStatus::Cancelled,
            TaskStatus::Pending
        ],
        "nothing is rolled back"
    );
    assert!(!f.log().contains("— ERROR\n"), "{}", f.log());

    // cairn's next write keeps the number as the tool wrote it.
    f.service
        .add_task(&f.id, NewTask::titled("added by cairn"))
        .await
        .expect("add");
    let written: serde_json::Value = serde_json::from_slice(&f.read("tasks.json")).expect("json");
    assert_eq!(written["tasks"][0]["actual_minutes"].to_string(), "12.5");
    assert_eq!(written["tasks"][1]["estimate_minutes"], 30);
    assert_eq!(
        written["tasks"][2]["x_tool"]["status"],
        "NOT_A_CAIRN_STATUS"
    );
    assert_eq!(written["tasks"].as_array().expect("tasks").len(), 4);
    assert!(f.service.take_recoveries().is_empty());
}

/// Recovery keeps every entry of the damaged file that is valid on its own — including changes
/// and tasks the checkpoint never saw — and takes only the broken entry from the checkpoint,
/// when the log cannot replay (here it is gone; a store from before the log held its commits);
/// when it can, from the log (see `a_damaged_file_with_valid_tasks_recovers_without_any_checkpoint`).
#[tokio::test]
async fn recovery_salvages_the_damaged_file_task_by_task_before_the_checkpoint() {
    let f = Fixture::new(3).await;
    f.service.write_checkpoint(&f.id).await.expect("checkpoint");
    edit_tasks(&f, |doc| {
        doc["tasks"][0]["status"] = serde_json::json!("CANCELLED");
        doc["tasks"][1]["title"] = serde_json::json!("x");
        doc["tasks"][2]["priority"] = serde_json::json!("WHENEVER");
        doc["tasks"][2]["id"] = serde_json::json!("T-009");
        let tasks = doc["tasks"].as_array_mut().expect("tasks");
        tasks.push(new_task_json("T-004", "new since the checkpoint"));
        tasks.push(serde_json::json!("not a task at all"));
    });
    std::fs::remove_file(f.path("progress/log.md")).expect("no log to replay");

    let state = f.service.load(&f.id).await.expect("recovers");
    let ids: Vec<&str> = state.tasks.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["T-001", "T-002", "T-004"]);
    assert_eq!(
        state.tasks.tasks[0].status,
        TaskStatus::Cancelled,
        "the damaged file's valid change is kept"
    );
    assert_eq!(
        state.tasks.tasks[1].title, "task number 1",
        "the broken entry comes from the checkpoint"
    );
    let recovery = f.service.take_recoveries().pop().expect("reported");
    assert_eq!(recovery.checkpoint, Some(1));
    use cairn_domain::project::store::TaskSource::{Checkpoint, DamagedFile};
    let kept: Vec<_> = recovery
        .kept
        .iter()
        .map(|k| (k.id.as_str(), k.source))
        .collect();
    assert_eq!(
        kept,
        [
            ("T-001", DamagedFile),
            ("T-002", Checkpoint(1)),
            ("T-004", DamagedFile)
        ]
    );
    let dropped: Vec<_> = recovery
        .dropped
        .iter()
        .map(|d| (d.id.as_deref(), d.index, d.replaced_from))
        .collect();
    assert_eq!(
        dropped,
        [
            (Some("T-002"), 1, Some(Checkpoint(1))),
            (Some("T-009"), 2, None),
            (None, 4, None)
        ]
    );
    assert!(
        recovery.dropped[1].reason.contains("/priority"),
        "{:?}",
        recovery.dropped[1]
    );
    let log = f.log();
    assert!(
        log.contains("dropped 3: T-002 of the damaged file")
            && log.contains("T-009")
            && log.contains("entry #4"),
        "the ERROR entry names what was dropped: {log}"
    );
}

/// Without a checkpoint, a broken entry comes back as the last commit left it: the log replays
/// to the list before the damage, and holds every task (before it could, the entry was dropped).
#[tokio::test]
async fn a_damaged_file_with_valid_tasks_recovers_without_any_checkpoint() {
    let f = Fixture::new(2).await;
    let before = f.service.load(&f.id).await.expect("load");
    edit_tasks(&f, |doc| {
        doc["tasks"][1]["level"] = serde_json::json!("galaxy")
    });
    let state = f.service.load(&f.id).await.expect("recovers");
    assert_eq!(state.tasks, before.tasks);
    let recovery = f.service.take_recoveries().pop().expect("reported");
    assert_eq!(recovery.checkpoint, None);
    assert_eq!(recovery.dropped[0].id.as_deref(), Some("T-002"));
    assert_eq!(recovery.dropped[0].replaced_from, Some(TaskSource::Log));
    assert!(
        recovery
            .summary()
            .contains("its copy from the progress log was kept"),
        "{}",
        recovery.summary()
    );
    assert!(
        std::fs::read(&recovery.damaged_copy).is_ok(),
        "the damaged file is kept"
    );
}

/// #8: the completion is saved before velocity is refreshed, so a failed refresh must say
/// "saved; do not repeat it", not read as a failed completion.
#[tokio::test]
async fn a_failed_velocity_refresh_after_a_completion_says_the_completion_was_saved() {
    let f = Fixture::new(1).await;
    let task = "T-001".parse().expect("id");
    f.service
        .move_task(&f.id, &task, TaskStatus::InProgress, MoveDetail::default())
        .await
        .expect("start");
    // A non-empty directory where velocity.json goes: the atomic rename over it fails.
    std::fs::create_dir_all(f.path("progress/velocity.json/blocked")).expect("block");

    let err = f
        .service
        .move_task(&f.id, &task, TaskStatus::Complete, MoveDetail::default())
        .await
        .expect_err("the velocity write fails");

    assert!(
        matches!(err, Error::Store(StoreError::AfterCommit { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains("do not repeat it"), "{err}");
    let state = f.service.load(&f.id).await.expect("load");
    assert_eq!(
        state.tasks.tasks[0].status,
        TaskStatus::Complete,
        "the completion was saved"
    );
}

#[tokio::test]
async fn writing_a_research_brief_records_its_research_file_once() {
    let f = Fixture::new(1).await;
    let task = "T-001".parse().expect("id");
    f.service
        .write_research(&f.id, &task, "# findings\n")
        .await
        .expect("brief");
    let state = f.service.load(&f.id).await.expect("load");
    assert_eq!(
        state.tasks.tasks[0].research_file.as_deref(),
        Some("research/T-001.md")
    );
    assert!(
        f.dir
            .path()
            .join(".claude/projects/demo")
            .join(state.tasks.tasks[0].research_file.as_deref().expect("set"))
            .is_file(),
        "the path is relative to the project directory"
    );
    f.service
        .write_research(&f.id, &task, "# more findings\n")
        .await
        .expect("rewrite");
    assert_eq!(
        f.log().matches("— RESEARCH_WRITTEN\n").count(),
        1,
        "{}",
        f.log()
    );
}

/// tasks.json in the pretty layout cairn wrote before #16 (or any other valid layout another tool
/// writes) is read as it is; cairn's next write rewrites it one task per line, losing nothing.
#[tokio::test]
async fn a_pretty_tasks_json_is_read_and_rewritten_one_task_per_line() {
    let f = Fixture::new(3).await;
    edit_tasks(&f, |doc| {
        doc["tasks"][1]["title"] = serde_json::json!("renamed in the old layout");
    });
    assert!(
        String::from_utf8(f.read("tasks.json"))
            .expect("utf8")
            .contains("\n      \"id\": \"T-002\""),
        "the fixture is pretty-printed"
    );
    let state = f
        .service
        .load(&f.id)
        .await
        .expect("reads the pretty layout");
    assert_eq!(state.tasks.tasks[1].title, "renamed in the old layout");

    f.service
        .add_task(&f.id, NewTask::titled("added after"))
        .await
        .expect("add");
    let text = String::from_utf8(f.read("tasks.json")).expect("utf8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert!(
        lines[2].contains("\"title\":\"renamed in the old layout\""),
        "{text}"
    );
    let titles: Vec<String> = f
        .service
        .load(&f.id)
        .await
        .expect("reads")
        .tasks
        .tasks
        .into_iter()
        .map(|t| t.title)
        .collect();
    assert_eq!(
        titles,
        [
            "task number 0",
            "renamed in the old layout",
            "task number 2",
            "added after"
        ]
    );
    assert!(f.service.take_recoveries().is_empty());
}
