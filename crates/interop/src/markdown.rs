//! Markdown checklists (GitHub Flavored Markdown task list items,
//! <https://github.github.com/gfm/#task-list-items-extension->): `- [ ] title` open, `- [x] title`
//! done; `*` and `+` bullets too. An item indented under another is its subtask. Lines that are
//! not checklist items (headings, prose, plain bullets) are skipped.
//!
//! Beyond GFM, the markers other checklist tools use (Obsidian Tasks) are read and written:
//!
//! | marker | cairn |
//! |---|---|
//! | `[ ]` | PENDING (also IN_RESEARCH, RESEARCHED, BLOCKED on export) |
//! | `[/]` | IN_PROGRESS (also VALIDATING on export) |
//! | `[x]` `[X]` | COMPLETE |
//! | `[-]` | CANCELLED |
//!
//! A checklist has no ids, so an item's external id is its title path from the top
//! (`Release / Write notes`), with ` #2`, ` #3` … for a repeated path: re-importing an unchanged
//! file finds every task again; renaming an item makes it a new task.

use std::collections::HashMap;

use cairn_domain::project::import::{Incoming, IncomingTask};
use cairn_domain::project::{TaskDoc, TaskStatus};

use crate::Failed;
use crate::common::tree;

pub const SOURCE: &str = "markdown";

/// One checklist line: its indentation width, status and title; `None` for any other line.
fn item(line: &str, number: usize) -> Result<Option<(usize, TaskStatus, String)>, Failed> {
    let indent: usize = line
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum();
    let rest = line.trim_start();
    let Some(rest) = ["- [", "* [", "+ ["]
        .iter()
        .find_map(|b| rest.strip_prefix(b))
    else {
        return Ok(None);
    };
    let mut chars = rest.chars();
    let (Some(mark), Some(']')) = (chars.next(), chars.next()) else {
        return Ok(None);
    };
    let title = chars.as_str();
    if !title.is_empty() && !title.starts_with(' ') {
        return Ok(None);
    }
    let status = match mark {
        ' ' => TaskStatus::Pending,
        'x' | 'X' => TaskStatus::Complete,
        '/' => TaskStatus::InProgress,
        '-' => TaskStatus::Cancelled,
        other => {
            return Err((
                format!("line {number}"),
                format!("unknown checkbox `[{other}]`; use `[ ]`, `[/]`, `[x]` or `[-]`"),
            ));
        }
    };
    let title = title.trim();
    if title.is_empty() {
        return Err((
            format!("line {number}"),
            "a checklist item without a title".to_owned(),
        ));
    }
    Ok(Some((indent, status, title.to_owned())))
}

pub fn parse(text: &str) -> Result<Incoming, Failed> {
    let mut tasks: Vec<IncomingTask> = Vec::new();
    // The open ancestors: (indent, index in `tasks`, title path).
    let mut stack: Vec<(usize, usize, String)> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut in_fence = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let Some((indent, status, title)) = item(line, i + 1)? else {
            continue;
        };
        while stack.last().is_some_and(|(d, _, _)| *d >= indent) {
            stack.pop();
        }
        let path = match stack.last() {
            Some((_, _, parent)) => format!("{parent} / {title}"),
            None => title.clone(),
        };
        let n = seen.entry(path.clone()).or_insert(0);
        *n += 1;
        let key = if *n == 1 {
            path.clone()
        } else {
            format!("{path} #{n}")
        };
        let mut task = IncomingTask::new(key.clone(), title, status);
        task.parent = stack.last().map(|(_, p, _)| tasks[*p].key.clone());
        stack.push((indent, tasks.len(), key));
        tasks.push(task);
    }
    if tasks.is_empty() {
        return Err((
            "line 1".to_owned(),
            "no checklist items (`- [ ] title` or `- [x] title`) found".to_owned(),
        ));
    }
    Ok(Incoming::Foreign {
        source: SOURCE.to_owned(),
        tasks,
    })
}

pub fn render(doc: &TaskDoc) -> String {
    let mut out = String::new();
    for (task, depth) in tree(doc) {
        let mark = match task.status {
            TaskStatus::Complete => 'x',
            TaskStatus::InProgress | TaskStatus::Validating => '/',
            TaskStatus::Cancelled => '-',
            _ => ' ',
        };
        // A title is one line in a checklist.
        let title = task.title.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&format!("{}- [{mark}] {title}\n", "  ".repeat(depth)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_hierarchy_and_repeats_get_numbers() {
        let Incoming::Foreign { tasks, .. } =
            parse("# Plan\n- [ ] Ship\n  - [x] Build\n  - [x] Build\n- [/] Docs\n").unwrap()
        else {
            panic!("foreign")
        };
        let keys: Vec<_> = tasks.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, ["Ship", "Ship / Build", "Ship / Build #2", "Docs"]);
        assert_eq!(tasks[1].parent.as_deref(), Some("Ship"));
        assert_eq!(tasks[3].status, TaskStatus::InProgress);
    }

    #[test]
    fn bad_marks_name_the_line() {
        let err = parse("- [ ] ok\n- [q] bad\n").unwrap_err();
        assert_eq!(err.0, "line 2");
    }
}
