//! PostToolUse on Claude Code's task tools: the session's task list is pulled into the project
//! it is linked to, through the binary, with a scratch Claude Code configuration directory.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use cairn_domain::tasklist::{ListIdSources, TaskListService};
use cairn_storage_fs::FsTaskListStore;
use serde_json::{Value, json};

use super::*;

const LIST: &str = "feature-list";

struct Scene {
    repo: Repo,
    config: tempfile::TempDir,
}

impl Scene {
    /// The demo project pushed into list `feature-list` of a scratch configuration directory.
    fn pushed() -> Self {
        let scene = Self {
            repo: Repo::with_project(),
            config: tempfile::tempdir().unwrap(),
        };
        let projects = service(&scene.repo.root);
        let lists = Arc::new(FsTaskListStore::new(scene.tasks_root()));
        let sources = ListIdSources {
            flag: Some(LIST.into()),
            ..ListIdSources::default()
        };
        runtime().block_on(async {
            TaskListService::new(&projects, lists)
                .push(&demo(), &sources)
                .await
                .unwrap();
        });
        scene
    }

    fn tasks_root(&self) -> PathBuf {
        self.config.path().join("tasks")
    }

    fn file(&self, id: &str) -> PathBuf {
        self.tasks_root().join(LIST).join(format!("{id}.json"))
    }

    /// What Claude Code's TaskUpdate does to the file: rewrite it whole with the new status.
    fn set_status(&self, id: &str, status: &str) {
        let mut task: Value =
            serde_json::from_str(&std::fs::read_to_string(self.file(id)).unwrap()).unwrap();
        task["status"] = json!(status);
        write_pretty(&self.file(id), &task);
    }

    fn hook(&self, payload: &Value, list_env: Option<&str>) -> Output {
        let mut cmd = self.repo.command();
        cmd.env("CLAUDE_CONFIG_DIR", self.config.path())
            .env("HOME", self.config.path())
            .env_remove("CLAUDE_CODE_TASK_LIST_ID");
        if let Some(list) = list_env {
            cmd.env("CLAUDE_CODE_TASK_LIST_ID", list);
        }
        run_with(cmd, payload.to_string().as_bytes())
    }
}

fn write_pretty(path: &Path, value: &Value) {
    let mut text = serde_json::to_string_pretty(value).unwrap();
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

/// A PostToolUse payload as Claude Code sends it after a TaskUpdate.
fn task_update(task_id: &str, status: &str) -> Value {
    json!({
        "session_id": "0b7f-session", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
        "permission_mode": "default", "hook_event_name": "PostToolUse", "tool_name": "TaskUpdate",
        "tool_input": {"taskId": task_id, "status": status},
        "tool_response": {"success": true, "taskId": task_id, "updatedFields": ["status"]},
        "tool_use_id": "toolu_01"
    })
}

#[test]
fn a_task_update_in_the_list_lands_in_the_project() {
    let scene = Scene::pushed();
    scene.set_status("1", "completed");
    let output = scene.hook(&task_update("1", "completed"), Some(LIST));
    assert_well_behaved(&output, "TaskUpdate");
    assert_eq!(stdout(&output), "", "an accepted change says nothing");
    assert_eq!(scene.repo.status("T-001"), TaskStatus::Complete);
    assert_eq!(scene.repo.error_log(), None);

    // TaskCreate: Claude Code writes the next number without cairn's metadata.
    write_pretty(
        &scene.file("5"),
        &json!({"id": "5", "subject": "Add a changelog entry", "description": "",
            "activeForm": "Adding a changelog entry", "status": "pending", "blocks": [], "blockedBy": []}),
    );
    let mut create = task_update("5", "pending");
    create["tool_name"] = json!("TaskCreate");
    create["tool_input"] = json!({"subject": "Add a changelog entry", "description": ""});
    let output = scene.hook(&create, Some(LIST));
    assert_well_behaved(&output, "TaskCreate");
    assert_eq!(scene.repo.status("T-005"), TaskStatus::Pending);
}

#[test]
fn a_change_the_rules_refuse_is_told_not_forced() {
    let scene = Scene::pushed();
    // T-003 is BLOCKED: only an explicit unblock takes it out.
    scene.set_status("3", "completed");
    let output = scene.hook(&task_update("3", "completed"), Some(LIST));
    assert_well_behaved(&output, "refused TaskUpdate");
    let said: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let message = said["systemMessage"].as_str().unwrap();
    assert!(
        message.contains("T-003") && message.contains("list task 3 says completed"),
        "{message}"
    );
    assert!(said.get("decision").is_none(), "never blocks: {said}");
    assert_eq!(scene.repo.status("T-003"), TaskStatus::Blocked);
}

#[test]
fn a_list_cairn_never_pushed_is_left_alone() {
    let scene = Scene::pushed();
    // Without CLAUDE_CODE_TASK_LIST_ID the list is the session's own, which cairn never touched.
    let session_list = scene.tasks_root().join("0b7f-session");
    std::fs::create_dir_all(&session_list).unwrap();
    write_pretty(
        &session_list.join("1.json"),
        &json!({"id": "1", "subject": "Session scratch task", "status": "completed"}),
    );
    let before = std::fs::read(scene.repo.root.join(".claude/projects/demo/tasks.json")).unwrap();
    let output = scene.hook(&task_update("1", "completed"), None);
    assert_well_behaved(&output, "unlinked list");
    assert_eq!(stdout(&output), "");
    assert_eq!(
        std::fs::read(scene.repo.root.join(".claude/projects/demo/tasks.json")).unwrap(),
        before
    );
    assert_eq!(scene.repo.status("T-001"), TaskStatus::InProgress);

    // Another tool's PostToolUse never reads a list.
    let mut bash = task_update("1", "completed");
    bash["tool_name"] = json!("Bash");
    let output = scene.hook(&bash, Some(LIST));
    assert_well_behaved(&output, "Bash");
    assert_eq!(stdout(&output), "");
}

#[test]
fn a_traversing_list_id_is_an_error_log_entry_not_a_read() {
    let scene = Scene::pushed();
    let output = scene.hook(&task_update("1", "completed"), Some("../../etc"));
    assert_well_behaved(&output, "bad list id");
    assert_eq!(stdout(&output), "");
    let log = scene.repo.error_log().expect("the refusal is logged");
    assert!(log.contains("task list id `../../etc` refused"), "{log}");
}
