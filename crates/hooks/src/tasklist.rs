//! PostToolUse on Claude Code's task tools (`TaskCreate`, `TaskUpdate`, `TodoWrite`): pull the
//! session's task list into the project it is linked to, so an agent's native task updates land
//! in cairn without a command.
//!
//! Which list: `CLAUDE_CODE_TASK_LIST_ID` (the hook inherits the session's environment, where
//! Claude Code applies the settings' `env` block), else that variable in the repository's
//! settings files, else the session id — Claude Code's own default list. A list is pulled only
//! if cairn pushed this project into it ([`TaskListService::pull_if_linked`]): a list cairn never
//! touched is none of its business, and its tasks must not turn into project tasks.
//!
//! Bounded: one list directory is read (the adapter caps files and sizes), and the project store
//! is opened only when the list holds a linked file. Never blocks: a change the rules refuse is
//! told as a `systemMessage`; cairn's own failures go to the hook error log.

use cairn_domain::error::Report;
use cairn_domain::tasklist::{ListIdSources, PullReport, TaskListService, TaskListStore};
use std::sync::Arc;

use crate::dispatch::{Deps, Handled, has_cairn_project, open_service};
use crate::protocol::{HookInput, HookOutput};

/// The tools whose use may have changed a task list.
pub const TASK_TOOLS: [&str; 3] = ["TaskCreate", "TaskUpdate", "TodoWrite"];

/// How many refusals the message lists before it summarises.
const REFUSALS_LISTED: usize = 3;

pub fn post_tool_use(input: &HookInput, deps: &Deps<'_>) -> Handled {
    if !input
        .tool_name
        .as_deref()
        .is_some_and(|tool| TASK_TOOLS.contains(&tool))
    {
        return Handled::default();
    }
    let Some(root) = deps.env.root(input.cwd.as_deref()) else {
        return Handled::default();
    };
    if !has_cairn_project(&root, deps.env.cairn_project.as_deref()) {
        return Handled::default();
    }
    let Some(lists) = crate::wiring::open_tasklist_store() else {
        return Handled::default();
    };
    let (environment, settings) = crate::wiring::task_list_id_settings(&root);
    let sources = ListIdSources {
        flag: None,
        environment,
        settings,
        session: input.session_id.clone(),
    };
    let (service, runtime) = match open_service(&root, deps) {
        Ok(opened) => opened,
        Err(problem) => return failed(root, problem),
    };
    let lists: Arc<dyn TaskListStore> = lists;
    let outcome = runtime.block_on(async {
        // No project chosen among several: SessionStart already said how to choose.
        let Ok(project) = service.resolve(deps.env.cairn_project.as_deref()).await else {
            return Ok(None);
        };
        TaskListService::new(&service, lists)
            .pull_if_linked(&project, &sources)
            .await
    });
    match outcome {
        Ok(Some(report)) if !report.refused.is_empty() => Handled {
            output: Some(HookOutput::system_message(refusals(&report))),
            root: Some(root),
            problems: Vec::new(),
        },
        Ok(_) => Handled {
            root: Some(root),
            ..Handled::default()
        },
        Err(e) => failed(root, format!("task list pull: {}", Report(&e))),
    }
}

fn failed(root: std::path::PathBuf, problem: String) -> Handled {
    Handled {
        output: None,
        root: Some(root),
        problems: vec![problem],
    }
}

/// "cairn refused 1 task-list change: T-002 (list task 2 says completed): …".
pub fn refusals(report: &PullReport) -> String {
    let n = report.refused.len();
    let mut out = format!(
        "cairn refused {n} task-list change{} from list {} (the project keeps its state; fix the cause, or set the list back):",
        if n == 1 { "" } else { "s" },
        report.list
    );
    for r in report.refused.iter().take(REFUSALS_LISTED) {
        let task = r.task.as_ref().map(|t| format!("{t} ")).unwrap_or_default();
        let says = if r.fields.is_empty() {
            format!("says {}", r.wanted.as_str())
        } else {
            format!(
                "edits its {}; `cairn task edit` takes the list's value",
                r.fields.join(" and ")
            )
        };
        out.push_str(&format!(
            "\n- {task}(list task {} {says}): {}",
            r.list_task, r.reason
        ));
    }
    if n > REFUSALS_LISTED {
        out.push_str(&format!(
            "\n- … and {} more (`cairn tasklist pull` lists them)",
            n - REFUSALS_LISTED
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_list_edit_is_told_as_an_edit_with_how_to_settle_it() {
        use cairn_domain::tasklist::{ClaudeTaskStatus, ListId, ListIdSource, Refusal};
        let refusal = |fields: Vec<&'static str>| Refusal {
            list_task: "2".into(),
            task: Some(cairn_domain::project::TaskId::from_number(2)),
            wanted: ClaudeTaskStatus::Pending,
            fields,
            left_at: None,
            reason: "changed on both sides".into(),
        };
        let report = PullReport {
            project: "demo".parse().unwrap(),
            list: ListId::parse("demo").unwrap(),
            list_source: ListIdSource::Session,
            moved: Vec::new(),
            edited: Vec::new(),
            created: Vec::new(),
            refused: vec![refusal(vec!["subject"]), refusal(Vec::new())],
            unchanged: 0,
            ignored: Vec::new(),
            problems: Vec::new(),
        };
        let message = refusals(&report);
        assert!(
            message.contains(
                "T-002 (list task 2 edits its subject; `cairn task edit` takes the list's value)"
            ) && message.contains("T-002 (list task 2 says pending)"),
            "{message}"
        );
    }

    #[test]
    fn setup_registers_exactly_these_tools() {
        assert_eq!(TASK_TOOLS.join("|"), crate::setup::TASK_TOOLS_MATCHER);
    }
}
