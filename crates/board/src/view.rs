//! The project's tasks as the page shows them: one column per status, cards with their place in
//! the hierarchy and their dependencies, paginated so that 10,000 tasks stay usable.

use std::collections::HashMap;

use cairn_domain::project::{ProjectState, Task, TaskDoc, TaskStatus};
use serde::Serialize;

/// Cards a column sends at once; the page asks for the next page when it is scrolled to.
pub const PAGE: usize = 200;

#[derive(Debug, Serialize)]
pub struct Board {
    pub project: ProjectHead,
    pub total: usize,
    pub columns: Vec<Column>,
}

#[derive(Debug, Serialize)]
pub struct ProjectHead {
    pub id: String,
    pub name: String,
    pub goal: String,
    pub status: serde_json::Value,
}

#[derive(Debug, Serialize)]
pub struct Column {
    pub status: TaskStatus,
    pub total: usize,
    pub offset: usize,
    pub cards: Vec<Card>,
}

#[derive(Debug, Serialize)]
pub struct Card {
    pub id: String,
    pub title: String,
    pub level: serde_json::Value,
    pub priority: serde_json::Value,
    /// Ancestors above this task (0 for a root task), for indentation.
    pub depth: usize,
    pub parent: Option<String>,
    pub children: usize,
    pub dependencies: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
}

/// Depth of every task in the hierarchy. A parent chain that loops or names a missing task
/// (a damaged file another tool wrote) stops there rather than failing the page.
fn depths(doc: &TaskDoc) -> HashMap<&str, usize> {
    let parent: HashMap<&str, &str> = doc
        .tasks
        .iter()
        .filter_map(|t| Some((t.id.as_str(), t.parent_id.as_ref()?.as_str())))
        .collect();
    let mut out = HashMap::with_capacity(doc.tasks.len());
    for task in &doc.tasks {
        let mut depth = 0;
        let mut at = task.id.as_str();
        while let Some(up) = parent.get(at) {
            depth += 1;
            if depth > doc.tasks.len() {
                break;
            }
            at = up;
        }
        out.insert(task.id.as_str(), depth);
    }
    out
}

fn card(task: &Task, depth: usize) -> Card {
    Card {
        id: task.id.to_string(),
        title: task.title.clone(),
        level: serde_json::to_value(task.level).unwrap_or_default(),
        priority: serde_json::to_value(task.priority).unwrap_or_default(),
        depth,
        parent: task.parent_id.as_ref().map(ToString::to_string),
        children: task.subtasks.as_ref().map_or(0, Vec::len),
        dependencies: task.dependencies.iter().map(ToString::to_string).collect(),
        blocked_reason: task.blocked_reason.clone(),
        claimed_by: task.claimed_by.clone(),
    }
}

/// One page of one column: the tasks in `status`, in the file's order, from `offset`.
pub fn column(state: &ProjectState, status: TaskStatus, offset: usize, limit: usize) -> Column {
    let depth = depths(&state.tasks);
    let all: Vec<&Task> = state
        .tasks
        .tasks
        .iter()
        .filter(|t| t.status == status)
        .collect();
    Column {
        status,
        total: all.len(),
        offset,
        cards: all
            .iter()
            .skip(offset)
            .take(limit)
            .map(|t| card(t, depth.get(t.id.as_str()).copied().unwrap_or(0)))
            .collect(),
    }
}

/// Every column's first page.
pub fn board(state: &ProjectState, limit: usize) -> Board {
    let depth = depths(&state.tasks);
    let mut columns: Vec<Column> = TaskStatus::ALL
        .iter()
        .map(|&status| Column {
            status,
            total: 0,
            offset: 0,
            cards: Vec::new(),
        })
        .collect();
    for task in &state.tasks.tasks {
        if let Some(column) = columns.iter_mut().find(|c| c.status == task.status) {
            column.total += 1;
            if column.cards.len() < limit {
                let d = depth.get(task.id.as_str()).copied().unwrap_or(0);
                column.cards.push(card(task, d));
            }
        }
    }
    let project = &state.project;
    Board {
        project: ProjectHead {
            id: project.id.to_string(),
            name: project.name.clone(),
            goal: project.goal.clone(),
            status: serde_json::to_value(project.status).unwrap_or_default(),
        },
        total: state.tasks.tasks.len(),
        columns,
    }
}
