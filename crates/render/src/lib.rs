//! cairn's text for people and agents.
//!
//! The domain returns values — reports, refusals, typed [`NextStep`]s — and never command syntax.
//! Both text interfaces (the `cairn` CLI and `cairn-hook`, whose readers act through the CLI)
//! render them here, so they say the same thing in the same words. The MCP server renders next
//! steps as tool calls instead, and does not use this crate.

mod plan;
pub mod plan_json;
pub mod session_json;
pub use plan::{plan_duties, plan_rereads, plan_resume};

use cairn_domain::NextStep;
use cairn_domain::project::report::{Summary, clip};
use cairn_domain::project::{TaskDoc, TaskId};

/// The `cairn` command line that carries out `step`.
pub fn command(step: &NextStep) -> String {
    match step {
        NextStep::InitProject => "cairn init --id ID --name NAME --goal GOAL".to_owned(),
        NextStep::ChooseProject { .. } => "cairn --project ID …".to_owned(),
        NextStep::AddTask => "cairn task add TITLE".to_owned(),
        NextStep::NextTask => "cairn task next".to_owned(),
        NextStep::ListReady => "cairn task ready".to_owned(),
        NextStep::Start { task } => format!("cairn task start {task}"),
        NextStep::StartResearch { task } => format!("cairn task research {task}"),
        NextStep::FinishResearch { task } => format!("cairn task research {task} --done"),
        NextStep::Complete { task } => format!("cairn task complete {task}"),
        NextStep::Block { task } => format!("cairn task block {task} --reason \"…\""),
        NextStep::Unblock { task } => format!("cairn task unblock {task}"),
        NextStep::Decompose { task } => format!("cairn task decompose {task} --into TITLE …"),
        NextStep::RemoveDependency { task, on } => {
            format!("cairn task depend {task} --on {on} --remove")
        }
        NextStep::Doctor => "cairn doctor".to_owned(),
        NextStep::DoctorFix => "cairn doctor --fix".to_owned(),
        NextStep::EditTask { task } => format!("cairn task edit {task} --title TITLE …"),
        NextStep::AddPhase => "cairn phase add ID --name NAME".to_owned(),
        NextStep::ListPhases => "cairn phase list".to_owned(),
        NextStep::AddTaskToPhase { phase } => format!("cairn task add TITLE --phase {phase}"),
        NextStep::ForceCompletePhase { phase } => format!("cairn phase complete {phase} --force"),
        NextStep::ListTasks => "cairn task list".to_owned(),
        NextStep::ShowTask { task } => format!("cairn task show {task}"),
        NextStep::ShowProject { project } => format!("cairn --project {project} status"),
        NextStep::SetProjectStatus { project, status } => {
            format!("cairn --project {project} project set-status {status}")
        }
        NextStep::ListInProgress => "cairn task list --status IN_PROGRESS".to_owned(),
        NextStep::ClaimNext => "cairn task claim --next --agent NAME".to_owned(),
        NextStep::PlanNew { force: false } => "cairn plan new GOAL".to_owned(),
        NextStep::PlanNew { force: true } => "cairn plan new GOAL --force".to_owned(),
        NextStep::PlanStatus => "cairn plan status".to_owned(),
        NextStep::PlanResume => "cairn plan resume".to_owned(),
        NextStep::PlanList => "cairn plan list".to_owned(),
        NextStep::PlanGo { to } => format!("cairn plan go {to} --reason \"…\""),
        NextStep::PlanGoOneOf { to } => {
            let names: Vec<&str> = to.iter().map(|s| s.as_str()).collect();
            format!("cairn plan go {} --reason \"…\"", names.join("|"))
        }
        NextStep::PlanApprove => "cairn plan approve".to_owned(),
        NextStep::PlanDecide => "cairn plan decide \"…\"".to_owned(),
        NextStep::PlanFinding => "cairn plan finding \"…\"".to_owned(),
        NextStep::PlanClose => "cairn plan close --reason \"…\"".to_owned(),
        // `NextStep` is non-exhaustive so that new wings can add steps; a step this renderer
        // does not know yet still gets a pointer to the help instead of nothing.
        #[allow(unreachable_patterns)]
        _ => "cairn --help".to_owned(),
    }
}

/// Several steps as one line: `cairn task start T-001, then cairn task complete T-001`.
pub fn commands(steps: &[NextStep]) -> String {
    steps
        .iter()
        .map(command)
        .collect::<Vec<_>>()
        .join(", then ")
}

/// The most characters [`prime`] ever returns, however large the store.
pub const PRIME_MAX_CHARS: usize = 2_000;

/// How to drive cairn, closing every prime text.
const WORKFLOW: &str = "Workflow: `cairn task next` → `cairn task start ID` → `cairn task complete ID`; `cairn task decompose ID --into …` when a task is too big; `cairn task block ID --reason …` when stuck. Never edit .claude/projects/ files by hand.\n";

/// Compact context for an agent (`cairn prime`, and what SessionStart injects) from the domain's
/// [`cairn_domain::project::report::prime`]: what the project is, where it stands, what is
/// under way or stuck, what to do next, and the commands to do it with. Lists are cut to fit
/// [`PRIME_MAX_CHARS`], saying how many were left out.
pub fn prime(s: &Summary, header: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(h) = header {
        out.push_str(h);
        out.push('\n');
    }
    out.push_str(&format!(
        "cairn project `{}` — {} [{}]\n",
        s.project,
        clip(&s.name, 80),
        s.status
    ));
    out.push_str(&format!("Goal: {}\n", clip(&s.goal, 240)));
    let pct = (s.leaves_complete * 100)
        .checked_div(s.leaves_total)
        .unwrap_or(0);
    out.push_str(&format!(
        "Progress: {}/{} tasks complete ({pct}%)\n",
        s.leaves_complete, s.leaves_total
    ));
    if let Some(p) = &s.current_phase {
        out.push_str(&format!(
            "Current phase: {} — {} [{}], {}/{} tasks complete\n",
            clip(&p.id, 40),
            clip(&p.name, 60),
            p.status,
            p.complete,
            p.tasks
        ));
    }
    let budget = PRIME_MAX_CHARS.saturating_sub(WORKFLOW.chars().count());
    let sections: [(&str, Vec<String>); 3] = [
        (
            "In progress",
            s.in_progress
                .iter()
                .map(|(id, t)| {
                    // Another agent's claim tells a new session to leave the task alone.
                    match s.claims.iter().find(|(c, _, _)| c == id) {
                        Some((_, holder, _)) => {
                            format!("{id} {} [claimed by {}]", clip(t, 90), clip(holder, 40))
                        }
                        None => format!("{id} {}", clip(t, 90)),
                    }
                })
                .collect(),
        ),
        (
            "Blocked",
            s.blocked
                .iter()
                .map(|(id, t, why)| format!("{id} {} — {}", clip(t, 70), clip(why, 80)))
                .collect(),
        ),
        (
            "Next ready",
            s.next
                .iter()
                .map(|(id, t)| format!("{id} {}", clip(t, 90)))
                .collect(),
        ),
    ];
    for (title, items) in sections {
        if items.is_empty() {
            continue;
        }
        let heading = format!("{title}:\n");
        if out.chars().count() + heading.chars().count() + 40 > budget {
            break;
        }
        out.push_str(&heading);
        for (i, item) in items.iter().enumerate() {
            let line = format!("- {item}\n");
            let more = format!("- … and {} more\n", items.len() - i);
            if out.chars().count() + line.chars().count() + more.chars().count() > budget {
                out.push_str(&more);
                break;
            }
            out.push_str(&line);
        }
    }
    if s.next.is_empty() && s.in_progress.is_empty() {
        out.push_str(if s.all_complete() {
            "All tasks are complete.\n"
        } else {
            "Nothing is ready: add tasks with `cairn task add`, or unblock one.\n"
        });
    }
    out.push_str(WORKFLOW);
    // The pieces above are budgeted; this is the hard guarantee.
    if out.chars().count() > PRIME_MAX_CHARS {
        out = out.chars().take(PRIME_MAX_CHARS - 1).collect::<String>();
        out.push('…');
    }
    out
}

/// `cairn task graph`: Mermaid or Graphviz dot of dependencies (solid) and hierarchy (dotted).
pub fn graph(doc: &TaskDoc, dot: bool) -> String {
    let node = |id: &TaskId| id.as_str().replace('-', "_");
    let mut out = String::new();
    if dot {
        out.push_str("digraph tasks {\n  rankdir=LR;\n");
        for t in &doc.tasks {
            out.push_str(&format!(
                "  {} [label=\"{}\\n{}\\n{}\"];\n",
                node(&t.id),
                t.id,
                t.title.replace('"', "'"),
                t.status
            ));
        }
        for t in &doc.tasks {
            for d in &t.dependencies {
                out.push_str(&format!("  {} -> {};\n", node(d), node(&t.id)));
            }
            for c in t.children() {
                out.push_str(&format!(
                    "  {} -> {} [style=dotted, arrowhead=none];\n",
                    node(&t.id),
                    node(c)
                ));
            }
        }
        out.push_str("}\n");
    } else {
        out.push_str("graph LR\n");
        for t in &doc.tasks {
            let title = t.title.replace(['"', '[', ']'], "'");
            out.push_str(&format!(
                "  {}[\"{} {}<br/>{}\"]\n",
                node(&t.id),
                t.id,
                title,
                t.status
            ));
        }
        for t in &doc.tasks {
            for d in &t.dependencies {
                out.push_str(&format!("  {} --> {}\n", node(d), node(&t.id)));
            }
            for c in t.children() {
                out.push_str(&format!("  {} -.- {}\n", node(&t.id), node(c)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::HashMap;

    fn summary(in_progress: usize, blocked: usize, next: usize) -> Summary {
        let id = |n: usize| TaskId::from_number(n as u64 + 1);
        let title = |n: usize| {
            format!("A long task title number {n} that goes on and on to fill space quickly")
        };
        Summary {
            project: "web".into(),
            name: "Web app".into(),
            goal: "Ship it".into(),
            status: "IN_PROGRESS".into(),
            counts: HashMap::new(),
            total: in_progress + blocked + next,
            leaves_total: in_progress + blocked + next,
            leaves_complete: 0,
            in_progress: (0..in_progress).map(|n| (id(n), title(n))).collect(),
            claims: Vec::new(),
            blocked: (0..blocked)
                .map(|n| (id(n), title(n), "waiting for review".into()))
                .collect(),
            next: (0..next).map(|n| (id(n), title(n))).collect(),
            phases: Vec::new(),
            current_phase: None,
        }
    }

    #[test]
    fn prime_stays_under_its_budget_and_says_what_it_left_out() {
        let text = prime(&summary(3000, 400, 5), Some("Session resumed."));
        assert!(
            text.chars().count() <= PRIME_MAX_CHARS,
            "{} chars",
            text.chars().count()
        );
        assert!(
            text.contains("more"),
            "cut lists say how many were left out:\n{text}"
        );
        assert!(
            text.starts_with("Session resumed.\ncairn project `web`"),
            "{text}"
        );
        assert!(
            text.ends_with(WORKFLOW),
            "the workflow always closes it:\n{text}"
        );
    }

    #[test]
    fn prime_says_when_nothing_is_ready() {
        let text = prime(&summary(0, 1, 0), None);
        assert!(text.contains("Blocked:\n- T-001 "), "{text}");
        assert!(text.contains("Nothing is ready"), "{text}");
    }

    #[test]
    fn prime_names_the_holder_of_a_claimed_task() {
        let mut s = summary(2, 0, 0);
        s.claims = vec![(s.in_progress[1].0.clone(), "session-a".to_owned(), None)];
        let text = prime(&s, None);
        let claimed = format!("{} ", s.in_progress[1].0);
        let line = text.lines().find(|l| l.contains(&claimed)).unwrap();
        assert!(line.ends_with("[claimed by session-a]"), "{text}");
        assert!(!text.contains(&format!("{} {} [", s.in_progress[0].0, s.in_progress[0].1)));
    }

    #[test]
    fn task_steps_name_the_task() {
        let task: TaskId = "T-003".parse().unwrap();
        assert_eq!(
            command(&NextStep::Start { task: task.clone() }),
            "cairn task start T-003"
        );
        assert_eq!(
            commands(&[
                NextStep::FinishResearch { task: task.clone() },
                NextStep::Start { task }
            ]),
            "cairn task research T-003 --done, then cairn task start T-003"
        );
    }
}
