//! The shared context of a session: what its tasks learned, shared with the tasks after them
//! (`execution_context.md` on disk; its text is the filesystem adapter's,
//! `cairn_storage_fs::execution`).
//!
//! Five sections: four lists (the [`LIST_SECTIONS`]) and the Task History, a list of entries
//! (`Task [id]: title`, each with free lines under it).
//!
//! **Compaction.** Task History keeps the newest [`HISTORY_KEEP`] entries in full. When it grows
//! past that, the oldest entries are folded, oldest first, into one line each (their
//! [`HistoryEntry::heading`]); their bodies are dropped. The folded list only grows by one short
//! line per task.

use std::collections::{BTreeMap, HashSet};

/// Task History entries kept in full; older ones are folded into one-line summaries.
pub const HISTORY_KEEP: usize = 10;

/// The four list sections, in order, by the seed's names.
pub const LIST_SECTIONS: [&str; 4] = [
    "Project Patterns",
    "Key Decisions",
    "Known Issues",
    "File Map",
];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecutionContext {
    pub project_patterns: Vec<String>,
    pub key_decisions: Vec<String>,
    pub known_issues: Vec<String>,
    pub file_map: Vec<String>,
    /// One line per folded entry, oldest first (without the leading `- `).
    pub compacted_history: Vec<String>,
    pub task_history: Vec<HistoryEntry>,
    /// Sections other tools added, kept in order after the five.
    pub other_sections: Vec<OtherSection>,
}

/// `### Task [id]: title` and the lines under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryEntry {
    /// Empty when the heading did not name a task.
    pub task_id: String,
    /// E.g. `Implement auth middleware - PASS`; may be empty.
    pub title: String,
    /// Raw lines, without leading or trailing blank lines.
    pub body: Vec<String>,
}

impl HistoryEntry {
    /// The entry's one-line title: `Task [id]: title`, `Task [id]`, or the title alone.
    pub fn heading(&self) -> String {
        match (self.task_id.is_empty(), self.title.is_empty()) {
            (true, _) => self.title.clone(),
            (false, true) => format!("Task [{}]", self.task_id),
            (false, false) => format!("Task [{}]: {}", self.task_id, self.title),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherSection {
    pub heading: String,
    pub lines: Vec<String>,
}

/// What a task executor reported in concurrent mode (`context-task-{id}.md`): sections like the
/// shared context's, plus the lines outside every section (a per-task report often has no
/// section headings at all), kept as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskContext {
    pub context: ExecutionContext,
    pub loose: Vec<String>,
}

impl TaskContext {
    /// A report that is only lines outside any section.
    pub fn from_lines<S: Into<String>>(lines: impl IntoIterator<Item = S>) -> Self {
        Self {
            context: ExecutionContext::default(),
            loose: lines.into_iter().map(Into::into).collect(),
        }
    }
}

impl ExecutionContext {
    /// The template a new session starts with: five empty sections.
    pub fn template() -> Self {
        Self::default()
    }

    pub fn list_section(&self, index: usize) -> &Vec<String> {
        [
            &self.project_patterns,
            &self.key_decisions,
            &self.known_issues,
            &self.file_map,
        ][index]
    }

    pub fn list_section_mut(&mut self, index: usize) -> &mut Vec<String> {
        match index {
            0 => &mut self.project_patterns,
            1 => &mut self.key_decisions,
            2 => &mut self.known_issues,
            _ => &mut self.file_map,
        }
    }

    /// Folds a task's report (`context-task-{id}.md`) into this context: its list bullets are added to the
    /// matching sections unless already there (compared ignoring case, spacing and a final `.`),
    /// its history entries are appended unless an identical one exists, bullets outside any
    /// section become the body of a `### Task [id]` entry (or extend its last entry), and unknown
    /// sections are merged by heading. Merging the same file twice changes nothing the second time.
    pub fn merge_task_context(&mut self, task_id: &str, report: &TaskContext) {
        let TaskContext {
            context: incoming,
            loose,
        } = report.clone();
        for index in 0..LIST_SECTIONS.len() {
            add_unique(self.list_section_mut(index), incoming.list_section(index));
        }
        let mut entries = incoming.task_history;
        for entry in &mut entries {
            if entry.task_id.is_empty() {
                entry.task_id = task_id.to_owned();
            }
        }
        match entries.last_mut() {
            Some(last) => last.body.extend(loose),
            None if !loose.is_empty() => entries.push(HistoryEntry {
                task_id: task_id.to_owned(),
                title: String::new(),
                body: loose,
            }),
            None => {}
        }
        for entry in entries {
            if !self.task_history.contains(&entry) {
                self.task_history.push(entry);
            }
        }
        for section in incoming.other_sections {
            match self
                .other_sections
                .iter_mut()
                .find(|s| s.heading.eq_ignore_ascii_case(&section.heading))
            {
                Some(existing) => add_unique(&mut existing.lines, &section.lines),
                None => self.other_sections.push(section),
            }
        }
    }

    /// The wave merge: every per-task context, in task-id order (numeric ids numerically), then
    /// compaction. Returns the ids in the order merged.
    pub fn merge_wave(&mut self, per_task: &BTreeMap<String, TaskContext>) -> Vec<String> {
        let mut ids: Vec<&String> = per_task.keys().collect();
        ids.sort_by(|a, b| task_id_order(a, b));
        for id in &ids {
            self.merge_task_context(id, &per_task[*id]);
        }
        self.compact_history();
        ids.into_iter().cloned().collect()
    }

    /// Folds all but the newest [`HISTORY_KEEP`] entries into one-line summaries.
    pub fn compact_history(&mut self) {
        let excess = self.task_history.len().saturating_sub(HISTORY_KEEP);
        for entry in self.task_history.drain(..excess) {
            self.compacted_history.push(entry.heading());
        }
    }

    /// Cross-session inheritance: the first four sections of an archived session's context are
    /// merged (deduplicated) into this one. Its Task History belongs to that session and stays.
    pub fn inherit_from(&mut self, archived: &ExecutionContext) {
        for index in 0..LIST_SECTIONS.len() {
            add_unique(self.list_section_mut(index), archived.list_section(index));
        }
    }
}

/// Numeric ids by value, then everything else by text, so `2` sorts before `10`.
pub fn task_id_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

fn dedupe_key(item: &str) -> String {
    item.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches('.')
        .to_lowercase()
}

fn add_unique(into: &mut Vec<String>, items: &[String]) {
    let mut seen: HashSet<String> = into.iter().map(|i| dedupe_key(i)).collect();
    for item in items {
        if seen.insert(dedupe_key(item)) {
            into.push(item.clone());
        }
    }
}
