//! Issue #16: nothing acknowledged is lost, even when tasks.json or project.json is destroyed.
//! The progress log carries every commit's replay payload, written ahead of the state files, so
//! the newest trusted base (a checkpoint, or the project's creation) plus the commits after it
//! rebuild the state exactly.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cairn_domain::ports::FixedClock;
use cairn_domain::project::policy::Velocity;
use cairn_domain::project::service::{InitProject, ProjectService};
use cairn_domain::project::store::{ProjectStore, Scrutiny};
use cairn_domain::project::{
    MoveDetail, NewTask, ProjectId, ProjectState, ProjectType, TaskEdit, TaskId, TaskStatus,
};
use cairn_domain::{Error, StoreError};
use cairn_storage_fs::FsProjectStore;
use cairn_storage_fs::layout::ProjectLayout;
use chrono::{TimeZone, Utc};
use proptest::prelude::*;

struct Store {
    dir: tempfile::TempDir,
    service: ProjectService,
    id: ProjectId,
}

fn clock() -> Arc<FixedClock> {
    Arc::new(FixedClock::new(
        Utc.with_ymd_and_hms(2026, 5, 6, 7, 8, 9)
            .single()
            .expect("time"),
    ))
}

fn service(root: &std::path::Path) -> ProjectService {
    let clock = clock();
    let store = Arc::new(FsProjectStore::new(root).with_clock(clock.clone()));
    ProjectService::new(store, clock)
}

impl Store {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let service = service(dir.path());
        let id: ProjectId = "demo".parse().expect("id");
        block_on(service.init(InitProject {
            id: id.clone(),
            name: "Demo".into(),
            goal: "Lose nothing that was acknowledged".into(),
            kind: ProjectType::Software,
        }))
        .expect("init");
        Self { dir, service, id }
    }

    fn layout(&self) -> ProjectLayout {
        ProjectLayout::new(self.dir.path(), "demo").expect("layout")
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.layout().dir().join(rel)
    }

    fn load(&self) -> ProjectState {
        block_on(self.service.load(&self.id)).expect("load")
    }

    /// What a process started afresh reads.
    fn load_fresh(&self) -> Result<ProjectState, Error> {
        block_on(service(self.dir.path()).load(&self.id))
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(future)
}

fn task(n: u64) -> TaskId {
    TaskId::from_number(n)
}

/// One step of a random history. Steps a rule refuses (completing a task never started, a
/// dependency cycle …) change nothing and are part of the history too.
#[derive(Debug, Clone)]
enum Step {
    Add(u8),
    Start(u8),
    Complete(u8),
    Block(u8),
    Decompose(u8),
    Depend(u8, u8),
    Checkpoint,
    /// Restores one of the checkpoints there are (none: nothing happens).
    Restore(u8),
    /// Another tool rewrites tasks.json — pretty-printed, one task retitled, its `log_seq` kept,
    /// as a `git pull` brings another clone's file — and a task is then added: the first write
    /// over another tool's file, which keeps it as a checkpoint and logs its change from there.
    EditElsewhereThenAdd(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => any::<u8>().prop_map(Step::Add),
        3 => any::<u8>().prop_map(Step::Start),
        3 => any::<u8>().prop_map(Step::Complete),
        1 => any::<u8>().prop_map(Step::Block),
        1 => any::<u8>().prop_map(Step::Decompose),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(a, b)| Step::Depend(a, b)),
        1 => Just(Step::Checkpoint),
        1 => any::<u8>().prop_map(Step::Restore),
        1 => any::<u8>().prop_map(Step::EditElsewhereThenAdd),
    ]
}

/// How tasks.json (or project.json) is destroyed.
#[derive(Debug, Clone)]
enum Damage {
    /// Cut to this fraction (per mille) of its length; 0 leaves it empty.
    Truncate(u16),
    /// `0xFF` bytes (never valid JSON text) over `len` bytes at this fraction of the file.
    Garble {
        at: u16,
        len: u8,
    },
    Delete,
    Empty,
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (0u16..1000).prop_map(Damage::Truncate),
        (0u16..1000, 1u8..64).prop_map(|(at, len)| Damage::Garble { at, len }),
        Just(Damage::Delete),
        Just(Damage::Empty),
    ]
}

fn apply_damage(path: &std::path::Path, damage: &Damage) {
    let bytes = std::fs::read(path).expect("read before damage");
    let per_mille = |n: u16| bytes.len() * usize::from(n) / 1000;
    match damage {
        Damage::Truncate(keep) => std::fs::write(path, &bytes[..per_mille(*keep)]),
        Damage::Garble { at, len } => {
            let mut bytes = bytes.clone();
            let start = per_mille(*at);
            let end = (start + usize::from(*len)).min(bytes.len());
            bytes[start..end].fill(0xFF);
            std::fs::write(path, bytes)
        }
        Damage::Delete => std::fs::remove_file(path),
        Damage::Empty => std::fs::write(path, b""),
    }
    .expect("damage");
}

fn run(store: &Store, steps: &[Step]) {
    let s = &store.service;
    let id = &store.id;
    block_on(async {
        let mut count = 0u64;
        let pick = |n: u8, count: u64| task(1 + u64::from(n) % count.max(1));
        for step in steps {
            let _ = match step {
                Step::Add(n) => s
                    .add_task(id, NewTask::titled(format!("task made at step {n}")))
                    .await
                    .map(|_| ()),
                Step::Start(n) => s
                    .move_task(
                        id,
                        &pick(*n, count),
                        TaskStatus::InProgress,
                        MoveDetail::default(),
                    )
                    .await
                    .map(|_| ()),
                Step::Complete(n) => s
                    .move_task(
                        id,
                        &pick(*n, count),
                        TaskStatus::Complete,
                        MoveDetail {
                            actual_minutes: Some(u32::from(*n)),
                            reason: None,
                        },
                    )
                    .await
                    .map(|_| ()),
                Step::Block(n) => s
                    .move_task(
                        id,
                        &pick(*n, count),
                        TaskStatus::Blocked,
                        MoveDetail {
                            actual_minutes: None,
                            reason: Some("waiting for a review".into()),
                        },
                    )
                    .await
                    .map(|_| ()),
                Step::Decompose(n) => s
                    .decompose(
                        id,
                        &pick(*n, count),
                        vec![
                            NewTask::titled("first half"),
                            NewTask::titled("second half"),
                        ],
                    )
                    .await
                    .map(|_| ()),
                Step::Depend(a, b) => s
                    .depend(id, &pick(*a, count), &pick(*b, count), false)
                    .await
                    .map(|_| ()),
                Step::Checkpoint => s.write_checkpoint(id).await.map(|_| ()),
                Step::Restore(n) => {
                    let numbers: Vec<u32> = s
                        .checkpoints(id)
                        .await
                        .expect("list checkpoints")
                        .iter()
                        .map(|c| c.number)
                        .collect();
                    match numbers.get(usize::from(*n) % numbers.len().max(1)) {
                        Some(&number) => s.restore_checkpoint(id, number).await.map(|_| ()),
                        None => Ok(()),
                    }
                }
                Step::EditElsewhereThenAdd(n) => {
                    rewrite_as_another_tool(&store.path("tasks.json"), usize::from(*n));
                    s.add_task(id, NewTask::titled("added over an edit elsewhere"))
                        .await
                        .map(|_| ())
                }
            };
            count = s.load(id).await.expect("load").tasks.tasks.len() as u64;
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 40,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random histories through the real store; tasks.json (and in some cases project.json too)
    /// destroyed at random; a fresh process recovers exactly the state from before the damage.
    #[test]
    fn a_destroyed_state_file_comes_back_exactly_from_the_log(
        steps in prop::collection::vec(step(), 1..30),
        tasks_damage in damage(),
        project_damage in prop::option::of(damage()),
    ) {
        let store = Store::new();
        run(&store, &steps);
        let before = store.load();
        apply_damage(&store.path("tasks.json"), &tasks_damage);
        if let Some(damage) = &project_damage {
            apply_damage(&store.path("project.json"), damage);
        }
        let recovered = store.load_fresh().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&recovered, &before);
        // And the store goes on: the recovery was written, the next change lands on it.
        block_on(store.service.add_task(&store.id, NewTask::titled("after the recovery")))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(store.load_fresh().expect("load").tasks.tasks.len(), before.tasks.tasks.len() + 1);
    }
}

/// The report in #16: 14 tasks, tasks.json truncated, 10 came back (the checkpoint's). Each way of
/// destroying it, with and without a checkpoint, brings all 14 back.
#[test]
fn every_task_comes_back_whatever_destroyed_tasks_json() {
    for with_checkpoint in [false, true] {
        for damage in [
            Damage::Truncate(500),
            Damage::Garble { at: 300, len: 8 },
            Damage::Delete,
            Damage::Empty,
        ] {
            let what = format!("{damage:?}, checkpoint: {with_checkpoint}");
            let store = Store::new();
            let mut steps: Vec<Step> = (0..10).map(Step::Add).collect();
            if with_checkpoint {
                steps.push(Step::Checkpoint);
            }
            steps.extend((10..14).map(Step::Add));
            steps.push(Step::Start(3));
            run(&store, &steps);
            let before = store.load();
            assert_eq!(before.tasks.tasks.len(), 14, "{what}");
            apply_damage(&store.path("tasks.json"), &damage);
            let recovered = store.load_fresh().unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(recovered, before, "{what}");
        }
    }
}

/// Empties the store's `file` and checks that a process started afresh reads the state from
/// before.
fn assert_rebuilt_after_emptying(store: &Store, file: &str) {
    let before = store.load();
    std::fs::write(store.path(file), b"").expect("destroy");
    let recovered = store.load_fresh().expect("recover");
    assert_eq!(recovered, before, "{file} rebuilt");
}

/// Rewrites tasks.json as another tool would: pretty-printed, task `n` (modulo their number)
/// retitled, every other field kept — its `log_seq` too — in a new inode.
fn rewrite_as_another_tool(path: &std::path::Path, n: usize) {
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON");
    if let Some(tasks) = doc["tasks"].as_array_mut().filter(|t| !t.is_empty()) {
        let count = tasks.len();
        tasks[n % count]["title"] = format!("retitled elsewhere ({n})").into();
    }
    std::fs::remove_file(path).expect("remove");
    std::fs::write(path, serde_json::to_vec_pretty(&doc).expect("JSON")).expect("write");
}

/// Replaces `from` by `to` in the file as another tool would: a new inode (so the validation
/// stamp does not vouch for it), every other byte kept — its `log_seq` too.
fn edit_as_another_tool(path: &std::path::Path, from: &str, to: &str) {
    let edited = std::fs::read_to_string(path)
        .expect("read")
        .replace(from, to);
    std::fs::remove_file(path).expect("remove");
    std::fs::write(path, edited).expect("write");
}

/// The last commit's copy of the task titled `title` retitled `ab` in the log, by hand: two
/// characters, which the schema refuses and a decoder takes.
fn cut_title_in_the_log(store: &Store, title: &str) {
    let title = format!("\"title\":\"{title}\"");
    let log = store.path("progress/log.md");
    let text = std::fs::read_to_string(&log).expect("log");
    let at = text.rfind(&title).expect("the last commit puts the task");
    let edited = format!(
        "{}\"title\":\"ab\"{}",
        &text[..at],
        &text[at + title.len()..]
    );
    std::fs::write(&log, edited).expect("edit the log");
}

/// A rebuild from a checkpoint does not validate again the tasks the checkpoint kept (they were
/// validated as it was read), but always the ones the log put after it: a commit whose task
/// breaks the schema (its title cut to two characters in the log by hand) is refused, and
/// tasks.json is left as it was.
#[test]
fn a_rebuild_from_a_checkpoint_still_validates_what_the_log_put_after_it() {
    let store = Store::new();
    run(&store, &[Step::Add(1), Step::Add(2)]);
    block_on(store.service.write_checkpoint(&store.id)).expect("checkpoint");
    run(&store, &[Step::Add(3)]);
    cut_title_in_the_log(&store, &store.load().tasks.tasks[2].title);
    std::fs::write(store.path("tasks.json"), b"").expect("destroy");
    let refused = store
        .load_fresh()
        .expect_err("a task the schema refuses is not written");
    assert!(refused.to_string().contains("title"), "{refused}");
    assert_eq!(std::fs::read(store.path("tasks.json")).expect("read"), b"");
}

/// A checkpoint is trusted as a base only in the very bytes that passed a validation: one
/// edited by hand after `checkpoint write` (a title cut to two characters, which a decoder takes
/// and the schema refuses) is validated in a rebuild, found invalid, and so is no base — a
/// destroyed tasks.json comes back from the log as it was.
#[test]
fn a_checkpoint_edited_after_it_was_written_is_validated_in_a_rebuild() {
    let (store, before, kept) = checkpointed_between_adds();
    let title = serde_json::to_string(&before.tasks.tasks[0].title).expect("JSON");
    edit_field_as_another_tool(&kept, "title", &title, "\"ab\"");
    std::fs::write(store.path("tasks.json"), b"").expect("destroy");
    assert_eq!(store.load_fresh().expect("rebuilt from the log"), before);
}

/// A store with two tasks checkpointed and a third added after: the state, and the checkpoint.
fn checkpointed_between_adds() -> (Store, ProjectState, PathBuf) {
    let store = Store::new();
    run(&store, &[Step::Add(1), Step::Add(2)]);
    block_on(store.service.write_checkpoint(&store.id)).expect("checkpoint");
    run(&store, &[Step::Add(3)]);
    let before = store.load();
    let checkpoints =
        cairn_storage_fs::checkpoints::list(&store.path("checkpoints")).expect("list");
    let kept = checkpoints.last().expect("a checkpoint").path.clone();
    (store, before, kept)
}

/// The first `"field": value` in `path` (both JSON values as written) made `"field":to`, as
/// another tool would, whether the file is compact or pretty.
fn edit_field_as_another_tool(path: &std::path::Path, field: &str, value: &str, to: &str) {
    let text = std::fs::read_to_string(path).expect("read");
    let from = [
        format!("\"{field}\":{value}"),
        format!("\"{field}\": {value}"),
    ]
    .into_iter()
    .find(|from| text.contains(from.as_str()))
    .unwrap_or_else(|| panic!("{} holds no {field} {value}", path.display()));
    edit_as_another_tool(path, &from, &format!("\"{field}\":{to}"));
}

/// `0000-01-01T00:30:00+01:00`: valid RFC 3339 as written, but year −1 in UTC, which RFC 3339
/// cannot write — read and written back it became `-0001-12-31T23:30:00Z`, which the schema
/// refuses (found by a review of the rebuild that trusts a checkpoint's validation).
const OUT_OF_YEARS: &str = "0000-01-01T00:30:00+01:00";

/// Every task's `created_at` in `path` (the store's clock: 2026-05-06T07:08:09Z) made
/// [`OUT_OF_YEARS`], as another tool would, whether it writes JSON compact or pretty.
fn date_out_of_years(path: &std::path::Path) {
    let at = "\"2026-05-06T07:08:09Z\"";
    edit_field_as_another_tool(path, "created_at", at, &format!("\"{OUT_OF_YEARS}\""));
}

/// A checkpoint holding such a task is not valid throughout, so it is no base: a destroyed
/// tasks.json comes back from the log, and what the rebuild wrote reads back.
#[test]
fn a_checkpoint_whose_time_utc_cannot_write_is_no_base() {
    let (store, before, kept) = checkpointed_between_adds();
    date_out_of_years(&kept);
    std::fs::write(store.path("tasks.json"), b"").expect("destroy");
    assert_eq!(store.load_fresh().expect("rebuilt from the log"), before);
    assert_eq!(
        store.load_fresh().expect("what was written reads back"),
        before
    );
}

/// Another tool's tasks.json holding such tasks is damaged, not a list to build on: it is
/// rebuilt from the log, and the next write does not carry them into a file that no longer reads.
#[test]
fn another_tools_time_utc_cannot_write_never_reaches_a_write() {
    let store = Store::new();
    run(&store, &[Step::Add(1), Step::Add(2)]);
    date_out_of_years(&store.path("tasks.json"));
    run(&store, &[Step::Add(3)]);
    let after = store.load_fresh().expect("what the write left reads");
    let titles: Vec<&str> = (after.tasks.tasks.iter())
        .map(|t| t.title.as_str())
        .collect();
    assert_eq!(
        titles,
        [
            "task made at step 1",
            "task made at step 2",
            "task made at step 3"
        ]
    );
    let written = std::fs::read_to_string(store.path("tasks.json")).expect("read");
    assert!(!written.contains("-0001-"), "{written}");
}

/// A task garbled in tasks.json (a status no reader knows) while the file's other tasks still
/// read comes back as the last commit left it, not as the older checkpoint holds it: its
/// completion, acknowledged after the checkpoint, is kept.
#[test]
fn a_garbled_task_comes_back_as_the_last_commit_left_it() {
    let store = Store::new();
    run(&store, &[Step::Add(1), Step::Add(2)]);
    block_on(store.service.write_checkpoint(&store.id)).expect("checkpoint");
    run(&store, &[Step::Start(0), Step::Complete(0)]);
    let before = store.load();
    assert_eq!(before.tasks.tasks[0].status, TaskStatus::Complete);
    edit_as_another_tool(
        &store.path("tasks.json"),
        "\"status\":\"COMPLETE\"",
        "\"status\":\"FINISHED\"",
    );
    assert_eq!(store.load_fresh().expect("recovered"), before);
}

/// An edit another tool made to tasks.json, keeping its `log_seq`, that a cairn write then built
/// on is not lost when tasks.json is destroyed: that write kept the file it saw as a checkpoint
/// and logged its change from there, so the replay arrives at the edit too.
#[test]
fn another_tools_edit_that_a_write_built_on_survives_a_destroyed_tasks_json() {
    let store = Store::new();
    run(&store, &[Step::Add(1)]);
    let s = &store.service;
    block_on(s.write_checkpoint(&store.id)).expect("checkpoint");
    run(&store, &[Step::Add(2)]);
    let tasks_json = store.path("tasks.json");
    let title = store.load().tasks.tasks[0].title.clone();
    edit_as_another_tool(&tasks_json, &title, "edited by hand in another tool");
    run(&store, &[Step::Add(3)]);
    assert_eq!(
        store.load().tasks.tasks[0].title,
        "edited by hand in another tool"
    );
    assert_rebuilt_after_emptying(&store, "tasks.json");
}

/// The first write over another tool's tasks.json keeps that file as the next checkpoint, byte
/// for byte, logs that (CHECKPOINT_WRITTEN) and only its own change, starting from there — not
/// the whole list again — and a tasks.json destroyed after it comes back whole.
#[test]
fn the_first_write_over_another_tools_file_keeps_it_and_logs_only_its_change() {
    let (store, kept) = written_over_another_tools_file();
    let logged = String::from_utf8(std::fs::read(store.path("progress/log.md")).expect("log"))
        .expect("UTF-8");
    let (_, logged) = logged
        .rsplit_once("CHECKPOINT_WRITTEN")
        .expect("the file kept is logged");
    assert!(
        logged.contains(&format!("\"reset\":{{\"checkpoint\":{},", kept.number)),
        "{logged}"
    );
    assert!(
        !logged.contains("retitled elsewhere"),
        "the edited task is in the checkpoint, not in the log: {logged}"
    );
    assert_eq!(store.load().tasks.tasks.len(), 41);
    assert_rebuilt_after_emptying(&store, "tasks.json");
}

/// Without the checkpoint a write over another tool's file started from — removed, or another
/// file under its number — the log cannot replay past that write, and no change is applied to
/// another list: the rebuild takes what is left. With no checkpoint left, that is the log's
/// replay up to the write (the 40 tasks before the edit), logged whole for a later replay.
#[test]
fn without_the_checkpoint_it_started_from_a_write_is_not_replayed_onto_another_list() {
    let retitled = |state: &ProjectState, prefix: &str| {
        let tasks = state.tasks.tasks.iter();
        tasks.filter(|t| t.title.starts_with(prefix)).count()
    };
    let (store, kept) = written_over_another_tools_file();
    let bytes = String::from_utf8(std::fs::read(&kept.path).expect("read")).expect("UTF-8");
    std::fs::write(
        &kept.path,
        bytes.replace("retitled elsewhere", "retitled again"),
    )
    .expect("replace");
    std::fs::write(store.path("tasks.json"), b"").expect("destroy");
    let recovered = store.load_fresh().expect("rebuilt from what is left");
    // The newest valid checkpoint's list, as any recovery the log cannot serve.
    assert_eq!(recovered.tasks.tasks.len(), 40);
    assert_eq!(retitled(&recovered, "retitled again"), 1);

    let (store, kept) = written_over_another_tools_file();
    std::fs::remove_file(&kept.path).expect("remove");
    std::fs::write(store.path("tasks.json"), b"").expect("destroy");
    let recovered = store
        .load_fresh()
        .expect("rebuilt from the log, as far as it goes");
    assert_eq!(recovered.tasks.tasks.len(), 40);
    assert_eq!(retitled(&recovered, "retitled"), 0);
    run(&store, &[Step::Add(41)]);
    assert_rebuilt_after_emptying(&store, "tasks.json");
}

/// `doctor --full` says when the checkpoint the log's newest base names is gone or holds other
/// bytes — a destroyed tasks.json would then come back only as it was before that write — and
/// stops saying it once a checkpoint taken since stands in for it.
#[test]
fn doctor_full_names_a_base_the_log_cannot_rebuild_from() {
    let damaged = |store: &Store| {
        block_on(store.service.doctor(&store.id, false, Scrutiny::Full))
            .expect("doctor")
            .store
            .damaged
    };
    let (store, kept) = written_over_another_tools_file();
    assert_eq!(damaged(&store), Vec::new());
    let bytes = std::fs::read(&kept.path).expect("read");
    std::fs::write(
        &kept.path,
        String::from_utf8_lossy(&bytes).replace("step 1\"", "step one\""),
    )
    .expect("replace");
    let found = damaged(&store);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.contains("other bytes"), "{found:?}");
    std::fs::remove_file(&kept.path).expect("remove");
    let found = damaged(&store);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, kept.path.display().to_string());
    assert!(found[0].1.contains("is gone") && found[0].1.contains("cairn checkpoint write"));
    block_on(store.service.write_checkpoint(&store.id)).expect("checkpoint");
    assert_eq!(damaged(&store), Vec::new());
}

/// A tasks.json that is a symbolic link to another tool's file is not kept by a second name (that
/// would keep the link, not the bytes): the write over it logs the whole list, and a rebuild
/// comes from there.
#[test]
fn a_write_over_a_symbolic_link_logs_the_whole_list() {
    let store = Store::new();
    run(&store, &(0..5).map(Step::Add).collect::<Vec<_>>());
    let tasks_json = store.path("tasks.json");
    let elsewhere = store.dir.path().join("tasks-elsewhere.json");
    std::fs::copy(&tasks_json, &elsewhere).expect("copy");
    std::fs::remove_file(&tasks_json).expect("remove");
    std::os::unix::fs::symlink(&elsewhere, &tasks_json).expect("symlink");
    run(&store, &[Step::Add(5)]);
    let checkpoints =
        cairn_storage_fs::checkpoints::list(&store.path("checkpoints")).expect("list");
    assert!(checkpoints.is_empty(), "{checkpoints:?}");
    let log = std::fs::read_to_string(store.path("progress/log.md")).expect("log");
    let last = log.lines().rev().find(|l| l.starts_with("- replay: "));
    assert!(
        last.is_some_and(|l| l.contains("\"reset\":true")),
        "the whole list is logged: {last:?}"
    );
    assert_eq!(store.load().tasks.tasks.len(), 6);
    assert_rebuilt_after_emptying(&store, "tasks.json");
}

/// A store of 40 tasks whose tasks.json another tool rewrote, then one task added over it; and
/// the checkpoint that write kept, checked to be that tool's file byte for byte.
fn written_over_another_tools_file() -> (Store, cairn_storage_fs::checkpoints::Checkpoint) {
    let store = Store::new();
    run(&store, &(0..40).map(Step::Add).collect::<Vec<_>>());
    let tasks_json = store.path("tasks.json");
    rewrite_as_another_tool(&tasks_json, 3);
    let theirs = std::fs::read(&tasks_json).expect("read");
    run(&store, &[Step::Add(40)]);
    let checkpoints =
        cairn_storage_fs::checkpoints::list(&store.path("checkpoints")).expect("list");
    let kept = checkpoints.last().expect("the file kept").clone();
    assert_eq!(std::fs::read(&kept.path).expect("read"), theirs);
    (store, kept)
}

/// The same for project.json: another tool's edit of the record, kept by the next write, is not
/// lost when project.json is destroyed and rebuilt from the log.
#[test]
fn another_tools_edit_of_project_json_survives_a_destroyed_project_json() {
    let store = Store::new();
    run(&store, &[Step::Add(1)]);
    let project_json = store.path("project.json");
    edit_as_another_tool(
        &project_json,
        "Lose nothing that was acknowledged",
        "Lose nothing, not even an edit by hand",
    );
    run(&store, &[Step::Add(2)]);
    assert_eq!(
        store.load().project.goal,
        "Lose nothing, not even an edit by hand"
    );
    assert_rebuilt_after_emptying(&store, "project.json");
}

/// A restore over a tasks.json another tool edited, keeping its `log_seq`, logs the list it
/// restored (naming the checkpoint): the edited file is not what the log arrives at, so a
/// difference from it would replay wrong.
/// Here the edit puts a title back to the checkpoint's, so a difference would leave the title out
/// and a replay from the older checkpoint would bring back the logged one.
#[test]
fn a_restore_over_another_tools_edit_replays_to_the_restored_list() {
    let store = Store::new();
    run(&store, &[Step::Add(1)]);
    let s = &store.service;
    block_on(s.write_checkpoint(&store.id)).expect("checkpoint 1");
    let first = store.load().tasks.tasks[0].title.clone();
    let retitle = |title: &str| TaskEdit {
        title: Some(title.to_owned()),
        ..TaskEdit::default()
    };
    block_on(s.edit_task(&store.id, &task(1), retitle("the title the log knows"))).expect("edit");
    let tasks_json = store.path("tasks.json");
    edit_as_another_tool(&tasks_json, "the title the log knows", &first);
    block_on(s.restore_checkpoint(&store.id, 1)).expect("restore");
    assert_eq!(store.load().tasks.tasks[0].title, first);
    // Only the first checkpoint and the log are left to recover from.
    std::fs::remove_file(store.path("checkpoints/checkpoint-002.json")).expect("remove");
    assert_rebuilt_after_emptying(&store, "tasks.json");
}

/// A restore of the oldest checkpoint, over another tool's file, which the restore keeps as an
/// eleventh checkpoint — so its prune removes the one restored — logs the restored list whole
/// instead of naming a checkpoint that is gone: a destroyed tasks.json still comes back as
/// restored.
#[test]
fn a_restore_of_a_checkpoint_its_prune_removes_logs_the_whole_list() {
    let store = Store::new();
    for n in 0..10 {
        run(&store, &[Step::Add(n), Step::Checkpoint]);
    }
    rewrite_as_another_tool(&store.path("tasks.json"), 0);
    block_on(store.service.restore_checkpoint(&store.id, 1)).expect("restore");
    assert!(
        !store.path("checkpoints/checkpoint-001.json").exists(),
        "pruned"
    );
    assert_eq!(store.load().tasks.tasks.len(), 1);
    assert_rebuilt_after_emptying(&store, "tasks.json");
}

#[test]
fn a_damaged_or_deleted_project_json_is_rebuilt_from_the_log() {
    for damage in [Damage::Empty, Damage::Delete, Damage::Truncate(400)] {
        let store = Store::new();
        run(&store, &[Step::Add(1), Step::Start(0)]);
        let before = store.load();
        apply_damage(&store.path("project.json"), &damage);
        let recovered = store
            .load_fresh()
            .unwrap_or_else(|e| panic!("{damage:?}: {e}"));
        assert_eq!(recovered, before, "{damage:?}");
        let log = std::fs::read_to_string(store.path("progress/log.md")).expect("log");
        assert!(
            log.contains("project.json was damaged"),
            "{damage:?}: the rebuild is logged"
        );
    }
}

/// velocity.json is a state file like the others: it changes only under the project lock.
#[test]
fn velocity_is_written_under_the_project_lock() {
    let store = Store::new();
    let fs = FsProjectStore::new(store.dir.path()).with_lock_timeout(Duration::from_millis(200));
    let velocity: Velocity = block_on(store.service.velocity(&store.id)).expect("velocity");
    let held =
        cairn_storage_fs::lock::lock_exclusive(&store.layout().lock_file(), Duration::from_secs(1))
            .expect("hold the lock");
    let written = block_on(fs.write_velocity(&store.id, &velocity));
    assert!(
        matches!(written, Err(StoreError::LockTimeout { .. })),
        "a velocity write waits for the lock holder: {written:?}"
    );
    drop(held);
    block_on(fs.write_velocity(&store.id, &velocity)).expect("written once the lock is free");
}

/// The log put back to an earlier state (`git checkout -- progress/log.md`, a backup of the log
/// restored) while tasks.json, its marker above the log's last commit, is kept, and a checkpoint
/// was taken after the log's last surviving commit: the log does not replay to the list the file
/// was written from, so a task garbled in tasks.json comes back as the checkpoint holds it, not
/// as the older list the cut-back log replays to (found by review).
#[test]
fn a_log_cut_back_does_not_undo_a_completion_the_checkpoint_holds() {
    let store = Store::new();
    run(&store, &[Step::Add(1), Step::Add(2)]);
    let cut = std::fs::read(store.path("progress/log.md")).expect("log");
    run(&store, &[Step::Start(0), Step::Complete(0)]);
    block_on(store.service.write_checkpoint(&store.id)).expect("checkpoint");
    let before = store.load();
    assert_eq!(before.tasks.tasks[0].status, TaskStatus::Complete);
    std::fs::write(store.path("progress/log.md"), cut).expect("log cut back");
    assert_eq!(store.load_fresh().expect("still reads").tasks, before.tasks);
    edit_as_another_tool(
        &store.path("tasks.json"),
        "\"status\":\"COMPLETE\"",
        "\"status\":\"FINISHED\"",
    );
    let recovered = store.load_fresh().expect("recovered");
    assert_eq!(
        recovered.tasks.tasks[0].status,
        TaskStatus::Complete,
        "{:?}",
        recovered.tasks.tasks[0]
    );
}

/// The log's copy of a broken task is judged before it is taken: one the schema refuses (here a
/// title cut to two characters in the log by hand, as in
/// `a_rebuild_from_a_checkpoint_still_validates_what_the_log_put_after_it`) is not, and the
/// checkpoint's valid copy is; taken, it made the salvage's write refused, and every read with it
/// (found by review).
#[test]
fn a_log_copy_the_schema_refuses_does_not_sink_a_salvage() {
    let store = Store::new();
    run(
        &store,
        &[Step::Add(1), Step::Add(2), Step::Checkpoint, Step::Start(1)],
    );
    let before = store.load();
    assert_eq!(before.tasks.tasks[1].status, TaskStatus::InProgress);
    cut_title_in_the_log(&store, &before.tasks.tasks[1].title);
    edit_as_another_tool(
        &store.path("tasks.json"),
        "\"status\":\"IN_PROGRESS\"",
        "\"status\":\"STARTED\"",
    );
    let recovered = store.load_fresh();
    assert!(recovered.is_ok(), "{recovered:?}");
}
