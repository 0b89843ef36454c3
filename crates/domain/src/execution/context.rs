//! `execution_context.md`: what tasks of a session learned, shared with the tasks after them.
//!
//! Five sections. The first four are lists of bullets; Task History is a list of
//! `### Task [id]: title` entries, each with free lines under it:
//!
//! ```text
//! # Execution Context
//!
//! ## Project Patterns
//! - TypeScript strict mode throughout
//!
//! ## Key Decisions
//!
//! ## Known Issues
//!
//! ## File Map
//! - src/lib/auth.ts — JWT verification and token refresh
//!
//! ## Task History
//! ### Task [1]: Implement auth middleware - PASS
//! - Files modified: src/middleware.ts, src/lib/auth.ts
//! ```
//!
//! **Compaction.** Task History keeps the newest [`HISTORY_KEEP`] entries in full. When it grows
//! past that, the oldest entries are folded, oldest first, into one line each
//! (`- Task [id]: title`) under a `### Earlier tasks (compacted)` block at the top of the section;
//! their bodies are dropped. The block only grows by one short line per task.
//!
//! **Parsing** is lenient: `*` bullets are bullets, a line that is not a bullet becomes an entry
//! of its own, an indented line continues the bullet above it, unknown `##` sections are kept
//! verbatim after the five, and text before the first section other than the title is ignored.

use std::collections::{BTreeMap, HashSet};

/// Task History entries kept in full; older ones are folded into one-line summaries.
pub const HISTORY_KEEP: usize = 10;

const TITLE: &str = "# Execution Context";
const COMPACTED_HEADING: &str = "Earlier tasks (compacted)";

/// The four list sections, in file order, with the headings they are written under.
pub const LIST_SECTIONS: [&str; 4] = [
    "Project Patterns",
    "Key Decisions",
    "Known Issues",
    "File Map",
];
pub const TASK_HISTORY: &str = "Task History";

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
    fn heading(&self) -> String {
        match (self.task_id.is_empty(), self.title.is_empty()) {
            (true, _) => self.title.clone(),
            (false, true) => format!("Task [{}]", self.task_id),
            (false, false) => format!("Task [{}]: {}", self.task_id, self.title),
        }
    }

    fn parse_heading(heading: &str) -> Self {
        let heading = heading.trim();
        let rest = heading
            .strip_prefix("Task ")
            .unwrap_or(heading)
            .trim_start();
        let parsed = rest
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .map(|(id, title)| {
                (
                    id.trim().to_owned(),
                    title.trim_start().trim_start_matches(':').trim().to_owned(),
                )
            });
        match parsed {
            Some((task_id, title)) if !task_id.is_empty() => Self {
                task_id,
                title,
                body: Vec::new(),
            },
            _ => Self {
                task_id: String::new(),
                title: heading.to_owned(),
                body: Vec::new(),
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherSection {
    pub heading: String,
    pub lines: Vec<String>,
}

/// What [`ExecutionContext::parse`] found, plus the lines outside every section (a per-task file
/// often has no section headings at all).
struct Parsed {
    context: ExecutionContext,
    loose: Vec<String>,
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

    fn list_section_mut(&mut self, index: usize) -> &mut Vec<String> {
        match index {
            0 => &mut self.project_patterns,
            1 => &mut self.key_decisions,
            2 => &mut self.known_issues,
            _ => &mut self.file_map,
        }
    }

    pub fn render(&self) -> String {
        let mut blocks = Vec::new();
        blocks.push(format!("{TITLE}\n"));
        for (index, heading) in LIST_SECTIONS.iter().enumerate() {
            let mut block = format!("## {heading}\n");
            for item in self.list_section(index) {
                block += &format!("- {item}\n");
            }
            blocks.push(block);
        }
        let mut history = vec![];
        if !self.compacted_history.is_empty() {
            let mut block = format!("### {COMPACTED_HEADING}\n");
            for line in &self.compacted_history {
                block += &format!("- {line}\n");
            }
            history.push(block);
        }
        for entry in &self.task_history {
            let mut block = format!("### {}\n", entry.heading());
            for line in &entry.body {
                block += &format!("{line}\n");
            }
            history.push(block);
        }
        blocks.push(format!("## {TASK_HISTORY}\n{}", history.join("\n")));
        for section in &self.other_sections {
            let mut block = format!("## {}\n", section.heading);
            for line in &section.lines {
                block += &format!("{line}\n");
            }
            blocks.push(block);
        }
        blocks.join("\n")
    }

    /// Never fails; see the module documentation for what is tolerated.
    pub fn parse(text: &str) -> Self {
        parse(text).context
    }

    /// Folds a task's `context-task-{id}.md` into this context: its list bullets are added to the
    /// matching sections unless already there (compared ignoring case, spacing and a final `.`),
    /// its history entries are appended unless an identical one exists, bullets outside any
    /// section become the body of a `### Task [id]` entry (or extend its last entry), and unknown
    /// sections are merged by heading. Merging the same file twice changes nothing the second time.
    pub fn merge_task_context(&mut self, task_id: &str, text: &str) {
        let Parsed {
            context: incoming,
            loose,
        } = parse(text);
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
    pub fn merge_wave(&mut self, per_task: &BTreeMap<String, String>) -> Vec<String> {
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

enum Target {
    Preamble,
    List(usize),
    History,
    Compacted,
    Entry,
    Other,
}

fn parse(text: &str) -> Parsed {
    let mut context = ExecutionContext::default();
    let mut loose = Vec::new();
    let mut target = Target::Preamble;
    for raw in text.lines() {
        let line = raw.trim_end();
        if let Some(heading) = line.strip_prefix("## ") {
            let heading = heading.trim();
            target = if let Some(i) = LIST_SECTIONS
                .iter()
                .position(|s| s.eq_ignore_ascii_case(heading))
            {
                Target::List(i)
            } else if heading.eq_ignore_ascii_case(TASK_HISTORY) {
                Target::History
            } else {
                context.other_sections.push(OtherSection {
                    heading: heading.to_owned(),
                    lines: Vec::new(),
                });
                Target::Other
            };
            continue;
        }
        if let Some(heading) = line.strip_prefix("### ")
            && matches!(
                target,
                Target::Preamble | Target::History | Target::Compacted | Target::Entry
            )
        {
            if heading.trim().eq_ignore_ascii_case(COMPACTED_HEADING) {
                target = Target::Compacted;
            } else {
                context
                    .task_history
                    .push(HistoryEntry::parse_heading(heading));
                target = Target::Entry;
            }
            continue;
        }
        match target {
            Target::Preamble => {
                if line.trim() != TITLE && !line.trim().is_empty() {
                    loose.push(line.trim().to_owned());
                }
            }
            Target::List(i) => push_item(context.list_section_mut(i), line),
            Target::Compacted => push_item(&mut context.compacted_history, line),
            Target::History => {
                if !line.trim().is_empty() {
                    context
                        .task_history
                        .push(HistoryEntry::parse_heading(line.trim()));
                    target = Target::Entry;
                }
            }
            Target::Entry => context
                .task_history
                .last_mut()
                .expect("an entry is open")
                .body
                .push(line.to_owned()),
            Target::Other => context
                .other_sections
                .last_mut()
                .expect("a section is open")
                .lines
                .push(line.to_owned()),
        }
    }
    for entry in &mut context.task_history {
        trim_blank_ends(&mut entry.body);
    }
    for section in &mut context.other_sections {
        trim_blank_ends(&mut section.lines);
    }
    Parsed { context, loose }
}

/// A bullet starts an item; an indented line continues the previous one; blank lines separate.
fn push_item(items: &mut Vec<String>, line: &str) {
    if line.trim().is_empty() {
        return;
    }
    if line.starts_with([' ', '\t'])
        && let Some(last) = items.last_mut()
    {
        last.push('\n');
        last.push_str(line);
        return;
    }
    let text = line.trim();
    let text = text
        .strip_prefix("- ")
        .or_else(|| text.strip_prefix("* "))
        .unwrap_or(text);
    items.push(text.trim().to_owned());
}

fn trim_blank_ends(lines: &mut Vec<String>) {
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let leading = lines.iter().take_while(|l| l.trim().is_empty()).count();
    lines.drain(..leading);
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = "# Execution Context

## Project Patterns
- TypeScript strict mode throughout
- Barrel exports in each module directory
- Error handling at service boundaries only

## Key Decisions
- Chose Zod over io-ts for runtime validation
- API routes use middleware chain pattern

## Known Issues
- Test runner requires Node 18+ for fetch support

## File Map
- src/lib/auth.ts \u{2014} JWT verification and token refresh
- src/middleware.ts \u{2014} Express middleware chain

## Task History
### Task [1]: Implement auth middleware - PASS
- Files modified: src/middleware.ts, src/lib/auth.ts
- Key learnings: Project uses barrel exports, middleware chain pattern
- Issues encountered: None
";

    #[test]
    fn the_seed_parses_and_renders_back_byte_for_byte() {
        let context = ExecutionContext::parse(SEED);
        assert_eq!(context.project_patterns.len(), 3);
        assert_eq!(context.task_history[0].task_id, "1");
        assert_eq!(
            context.task_history[0].title,
            "Implement auth middleware - PASS"
        );
        assert_eq!(context.task_history[0].body.len(), 3);
        assert_eq!(context.render(), SEED);
    }

    #[test]
    fn the_template_has_five_empty_sections_and_round_trips() {
        let text = ExecutionContext::template().render();
        for heading in LIST_SECTIONS.iter().chain([&TASK_HISTORY]) {
            assert!(text.contains(&format!("## {heading}\n")), "{text}");
        }
        assert_eq!(ExecutionContext::parse(&text), ExecutionContext::template());
    }

    #[test]
    fn wave_merge_dedupes_bullets_orders_history_by_id_and_is_idempotent() {
        let mut shared = ExecutionContext::parse(SEED);
        let per_task = BTreeMap::from([
            (
                "10".to_owned(),
                "## Project Patterns\n- typescript strict mode   throughout.\n- Uses pnpm\n\n## Task History\n### Task [10]: Late - PASS\n- Files modified: a.ts\n".to_owned(),
            ),
            ("2".to_owned(), "- learned something\n* and something else\n".to_owned()),
        ]);
        assert_eq!(shared.merge_wave(&per_task), vec!["2", "10"]);
        assert_eq!(shared.project_patterns.len(), 4);
        assert_eq!(shared.project_patterns[3], "Uses pnpm");
        let ids: Vec<_> = shared
            .task_history
            .iter()
            .map(|e| e.task_id.as_str())
            .collect();
        assert_eq!(ids, ["1", "2", "10"]);
        assert_eq!(
            shared.task_history[1].body,
            ["- learned something", "* and something else"]
        );
        let once = shared.clone();
        shared.merge_wave(&per_task);
        assert_eq!(shared, once);
        assert_eq!(ExecutionContext::parse(&shared.render()), shared);
    }

    #[test]
    fn history_past_ten_entries_is_folded_into_one_liners() {
        let mut context = ExecutionContext::template();
        for id in 1..=12 {
            context.merge_task_context(
                &id.to_string(),
                &format!("### Task [{id}]: Step {id} - PASS\n- detail {id}\n"),
            );
        }
        context.compact_history();
        assert_eq!(context.task_history.len(), HISTORY_KEEP);
        assert_eq!(context.task_history[0].task_id, "3");
        assert_eq!(
            context.compacted_history,
            ["Task [1]: Step 1 - PASS", "Task [2]: Step 2 - PASS"]
        );
        let text = context.render();
        assert!(
            text.contains(
                "## Task History\n### Earlier tasks (compacted)\n- Task [1]: Step 1 - PASS\n"
            ),
            "{text}"
        );
        assert!(!text.contains("detail 1\n"));
        assert_eq!(ExecutionContext::parse(&text), context);
    }

    #[test]
    fn inheritance_takes_the_four_sections_but_not_history() {
        let archived = ExecutionContext::parse(SEED);
        let mut fresh = ExecutionContext::template();
        fresh
            .known_issues
            .push("TEST RUNNER requires Node 18+ for fetch support.".into());
        fresh.inherit_from(&archived);
        assert_eq!(fresh.project_patterns, archived.project_patterns);
        assert_eq!(fresh.known_issues.len(), 1);
        assert_eq!(fresh.file_map.len(), 2);
        assert!(fresh.task_history.is_empty());
    }

    #[test]
    fn unknown_sections_and_continuations_survive() {
        let text = "# Execution Context\n\n## Project Patterns\n- one\n  continued\nplain line\n\n## Notes\nkeep me\n\n## Task History\n";
        let context = ExecutionContext::parse(text);
        assert_eq!(context.project_patterns, ["one\n  continued", "plain line"]);
        assert_eq!(
            context.other_sections,
            [OtherSection {
                heading: "Notes".into(),
                lines: vec!["keep me".into()]
            }]
        );
        assert_eq!(ExecutionContext::parse(&context.render()), context);
    }
}
