//! `execution_context.md` (the shared context) and `context-task-{id}.md` (one task's report).
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
//! **Compaction** (a domain rule, [`ExecutionContext::compact_history`]): Task History keeps the
//! newest `HISTORY_KEEP` entries in full. When it grows
//! past that, the oldest entries are folded, oldest first, into one line each
//! (`- Task [id]: title`) under a `### Earlier tasks (compacted)` block at the top of the section;
//! their bodies are dropped. The block only grows by one short line per task.
//!
//! **Parsing** is lenient: `*` bullets are bullets, a line that is not a bullet becomes an entry
//! of its own, an indented line continues the bullet above it, unknown `##` sections are kept
//! verbatim after the five, and text before the first section other than the title is ignored.

use cairn_domain::execution::context::{
    ExecutionContext, HistoryEntry, LIST_SECTIONS, OtherSection, TaskContext,
};

const TITLE: &str = "# Execution Context";
const COMPACTED_HEADING: &str = "Earlier tasks (compacted)";
const TASK_HISTORY: &str = "Task History";

/// The whole file: the title, the five sections in order (empty ones keep their heading), then
/// the sections other tools added.
pub fn render_context(context: &ExecutionContext) -> String {
    let mut blocks = Vec::new();
    blocks.push(format!("{TITLE}\n"));
    for (index, heading) in LIST_SECTIONS.iter().enumerate() {
        let mut block = format!("## {heading}\n");
        for item in context.list_section(index) {
            block += &format!("- {item}\n");
        }
        blocks.push(block);
    }
    let mut history = vec![];
    if !context.compacted_history.is_empty() {
        let mut block = format!("### {COMPACTED_HEADING}\n");
        for line in &context.compacted_history {
            block += &format!("- {line}\n");
        }
        history.push(block);
    }
    for entry in &context.task_history {
        let mut block = format!("### {}\n", entry.heading());
        for line in &entry.body {
            block += &format!("{line}\n");
        }
        history.push(block);
    }
    blocks.push(format!("## {TASK_HISTORY}\n{}", history.join("\n")));
    for section in &context.other_sections {
        let mut block = format!("## {}\n", section.heading);
        for line in &section.lines {
            block += &format!("{line}\n");
        }
        blocks.push(block);
    }
    blocks.join("\n")
}

/// Never fails; see the module documentation for what is tolerated.
pub fn parse_context(text: &str) -> ExecutionContext {
    parse(text).context
}

/// A task's report: the sections it has, and the lines outside any of them.
pub fn parse_task_context(text: &str) -> TaskContext {
    parse(text)
}

/// A task's report as a file: its loose lines first (where [`parse_task_context`] finds them),
/// then its sections.
pub fn render_task_context(report: &TaskContext) -> String {
    let mut out = String::new();
    for line in &report.loose {
        out.push_str(line);
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out + &render_context(&report.context)
}

fn parse_history_heading(heading: &str) -> HistoryEntry {
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
        Some((task_id, title)) if !task_id.is_empty() => HistoryEntry {
            task_id,
            title,
            body: Vec::new(),
        },
        _ => HistoryEntry {
            task_id: String::new(),
            title: heading.to_owned(),
            body: Vec::new(),
        },
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

fn parse(text: &str) -> TaskContext {
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
                context.task_history.push(parse_history_heading(heading));
                target = Target::Entry;
            }
            continue;
        }
        match target {
            Target::Preamble => {
                let text = line.trim();
                if text != TITLE && !text.is_empty() {
                    // Trimmed, a line like `\r## Key Decisions` would be written back as a
                    // heading and read as one next time; it keeps its indent to stay loose.
                    let keep = if text.starts_with('#') { line } else { text };
                    loose.push(keep.to_owned());
                }
            }
            Target::List(i) => push_item(context.list_section_mut(i), line),
            Target::Compacted => push_item(&mut context.compacted_history, line),
            Target::History if line.trim().eq_ignore_ascii_case(COMPACTED_HEADING) => {
                // As an entry's title it would render as the compacted block's heading.
                target = Target::Compacted;
            }
            Target::History => {
                if !line.trim().is_empty() {
                    context
                        .task_history
                        .push(parse_history_heading(line.trim()));
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
    TaskContext { context, loose }
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
