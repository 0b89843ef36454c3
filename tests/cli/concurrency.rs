//! Several cairn processes writing one project at once lose nothing.

use std::collections::HashSet;

use crate::support::{Adapter, Repo, cairn_command};

const WORKERS: usize = 8;
const TASKS_EACH: usize = 4;

#[test]
fn eight_processes_adding_and_completing_tasks_lose_no_update_and_share_no_id() {
    let repo = Repo::with_project();
    let root = repo.root().to_path_buf();
    let handles: Vec<_> = (0..WORKERS)
        .map(|w| {
            let root = root.clone();
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for t in 0..TASKS_EACH {
                    let title = format!("worker {w} task {t}");
                    let out = cairn_command(&root, &["--json", "task", "add", &title])
                        .output()
                        .expect("run cairn");
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    let task: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                    let id = task["id"].as_str().unwrap().to_owned();
                    for verb in ["start", "complete"] {
                        let out = cairn_command(&root, &["task", verb, &id]).output().unwrap();
                        assert!(
                            out.status.success(),
                            "{verb} {id}: {}",
                            String::from_utf8_lossy(&out.stderr)
                        );
                    }
                    ids.push((id, title));
                }
                ids
            })
        })
        .collect();
    let created: Vec<(String, String)> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("worker thread"))
        .collect();

    let unique: HashSet<&String> = created.iter().map(|(id, _)| id).collect();
    assert_eq!(
        unique.len(),
        WORKERS * TASKS_EACH,
        "every add got its own id"
    );

    let doc = repo.tasks_json();
    let tasks = doc["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), WORKERS * TASKS_EACH, "no add was lost");
    let on_disk: HashSet<&str> = tasks.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(on_disk.len(), tasks.len(), "no duplicate id on disk");
    for (id, title) in &created {
        let task = tasks.iter().find(|t| t["id"] == id.as_str()).unwrap();
        assert_eq!(task["title"], title.as_str(), "{id} kept its own title");
        assert_eq!(
            task["status"], "COMPLETE",
            "{id}: no status update was lost"
        );
    }
    let completions = repo.items(&["log", "--event", "TASK_COMPLETE"]);
    assert_eq!(completions.len(), WORKERS * TASKS_EACH);
    // 32 completions: checkpoints 1-3, one per ten.
    assert_eq!(repo.items(&["checkpoint", "list"]).len(), 3);
}

crate::support::on_both_adapters!(eight_processes_adding_tasks_at_once_lose_none);

/// 8 processes × 25 `cairn task add` on one store: every task there, each with its own id and
/// its TASK_CREATED entry. `CAIRN_ADD_RACE=8x200` runs the 1,600, as `cargo xtask ci`
/// does (minutes on a two-core machine, too long for a quick local run).
fn eight_processes_adding_tasks_at_once_lose_none(adapter: Adapter) {
    let (workers, each) = crate::support::size_from_env("CAIRN_ADD_RACE", (8, 25));
    let repo = Repo::with_project_on(adapter);
    std::thread::scope(|scope| {
        for w in 0..workers {
            let repo = &repo;
            scope.spawn(move || {
                for t in 0..each {
                    let out = repo
                        .command(&["task", "add", &format!("worker {w} task {t}")])
                        .env("CAIRN_LOCK_TIMEOUT_MS", "120000")
                        .output()
                        .expect("run cairn");
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            });
        }
    });
    let doc: serde_json::Value = serde_json::from_str(&repo.tasks_state()).unwrap();
    let tasks = doc["tasks"].as_array().unwrap();
    let ids: HashSet<&str> = tasks.iter().map(|t| t["id"].as_str().unwrap()).collect();
    let titles: HashSet<&str> = tasks.iter().map(|t| t["title"].as_str().unwrap()).collect();
    let total = workers * each;
    assert_eq!(
        (tasks.len(), ids.len(), titles.len()),
        (total, total, total)
    );
    let created = repo.items(&["log", "--event", "TASK_CREATED"]);
    assert_eq!(created.len(), total, "one log entry per add");
}
