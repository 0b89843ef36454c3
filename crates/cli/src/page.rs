//! Paging: every command that lists things shows one page, so an agent reading the output pays
//! for at most about [`DEFAULT_ROWS`] rows or [`DEFAULT_CHARS`] characters, however large the
//! project. The same window applies to the human text and to `--json`; the human text ends with
//! a footer saying what was left out and how to get it, the JSON carries the same facts in its
//! envelope ([`Page::envelope`]).

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Value, json};

use crate::cli::PageArgs;

/// Rows on a page when no `--limit` is given.
pub const DEFAULT_ROWS: usize = 50;
/// Characters on a page when no `--limit` is given: rows stop being added once the page would
/// pass this (a page always holds at least one row, so paging makes progress).
pub const DEFAULT_CHARS: usize = 6_000;
/// Rows each list of a summary (`status`, for people and under `--json`) shows; the rest are
/// counted, never listed, so a summary stays one screen and one agent-sized answer.
pub const SUMMARY_ROWS: usize = 10;

/// The first [`SUMMARY_ROWS`] of `items`, and how many were left out.
pub fn summary_rows<T>(items: &[T]) -> (&[T], usize) {
    let shown = items.len().min(SUMMARY_ROWS);
    (&items[..shown], items.len() - shown)
}

/// One page of a list: the rows shown, and where they sit in the whole list.
#[derive(Debug)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub total: usize,
    pub offset: usize,
}

impl<T> Page<T> {
    /// The page `args` asks for. `size` is how many characters a row takes in the output being
    /// produced; it only matters for the default page.
    pub fn of(items: Vec<T>, args: &PageArgs, size: impl Fn(&T) -> usize) -> Self {
        let total = items.len();
        let offset = args.offset.min(total);
        let mut rest = items.into_iter().skip(offset);
        let items: Vec<T> = if args.all {
            rest.collect()
        } else if let Some(limit) = args.limit {
            rest.take(limit).collect()
        } else {
            let mut chars = 0;
            let mut page = Vec::new();
            for item in rest.by_ref() {
                chars += size(&item);
                if !page.is_empty() && (page.len() == DEFAULT_ROWS || chars > DEFAULT_CHARS) {
                    break;
                }
                page.push(item);
            }
            page
        };
        Self {
            items,
            total,
            offset,
        }
    }

    pub fn returned(&self) -> usize {
        self.items.len()
    }

    /// Where the next page starts; `None` on the last page.
    pub fn next_offset(&self) -> Option<usize> {
        let end = self.offset + self.returned();
        (end < self.total).then_some(end)
    }

    pub fn truncated(&self) -> bool {
        self.returned() < self.total
    }

    /// The paging fields every JSON list carries, without the rows.
    pub fn fields(&self) -> serde_json::Map<String, Value> {
        let Value::Object(map) = json!({
            "total": self.total,
            "offset": self.offset,
            "returned": self.returned(),
            "truncated": self.truncated(),
            "next_offset": self.next_offset(),
        }) else {
            unreachable!("json! of an object literal is an object")
        };
        map
    }

    /// The line that ends a partial page of human output, or nothing when the page is the whole
    /// list. `noun` names the rows (`tasks`, `entries`, …).
    pub fn footer(&self, noun: &str) -> String {
        if !self.truncated() {
            return String::new();
        }
        let shown = if self.returned() == 0 {
            format!(
                "none of {} {noun} shown (the offset is past the end)",
                self.total
            )
        } else {
            format!(
                "{}–{} of {} {noun} shown",
                self.offset + 1,
                self.offset + self.returned(),
                self.total
            )
        };
        match self.next_offset() {
            Some(next) => format!(
                "… {shown}; {} more: --offset {next} for the next page, --limit N for another page size, --all for every one\n",
                self.total - next
            ),
            None => format!("… {shown}; --offset 0 for the first page, --all for every one\n"),
        }
    }
}

impl<T: Serialize> Page<T> {
    /// `{"items": [...], "total", "offset", "returned", "truncated", "next_offset"}`.
    pub fn envelope(&self) -> Value {
        let mut map = self.fields();
        map.insert("items".into(), json!(self.items));
        Value::Object(map)
    }
}

/// The characters a value takes in `--json` output, for [`Page::of`]: pretty-printed, and
/// indented one level deeper as an item of the envelope's `items`.
pub fn json_size(value: &impl Serialize) -> usize {
    serde_json::to_string_pretty(value).map_or(0, |s| s.len() + 4 * (s.lines().count() + 1))
}

/// The lines of a default page, then how many more of the `total` there are and where to see
/// them: what a command did (an import, a push) cannot be listed again page by page. Only the
/// lines a default page can hold are made (an import of 100,000 tasks made 160,000 to print 50).
pub fn one_page(
    out: &mut String,
    lines: impl Iterator<Item = String>,
    total: usize,
    noun: &str,
    where_to_see: &str,
) {
    let lines = lines.take(DEFAULT_ROWS).collect();
    let page = Page::of(lines, &PageArgs::default(), |l| l.len() + 1);
    for line in &page.items {
        out.push_str(line);
        out.push('\n');
    }
    let shown = page.items.len();
    if shown < total {
        let _ = writeln!(
            out,
            "  … and {} more {noun} ({where_to_see})",
            total - shown
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(limit: Option<usize>, offset: usize, all: bool) -> PageArgs {
        PageArgs { limit, offset, all }
    }

    #[test]
    fn the_default_page_stops_at_the_row_limit() {
        let page = Page::of((0..120).collect(), &PageArgs::default(), |_| 1);
        assert_eq!(page.returned(), DEFAULT_ROWS);
        assert_eq!(page.next_offset(), Some(DEFAULT_ROWS));
        assert!(page.truncated());
        assert!(page.footer("tasks").contains("70 more: --offset 50"));
    }

    #[test]
    fn the_default_page_stops_at_the_character_budget_but_holds_at_least_one_row() {
        let page = Page::of((0..10).collect(), &PageArgs::default(), |_| 2_500);
        assert_eq!(page.items, vec![0, 1]);
        let huge = Page::of(vec![1, 2], &PageArgs::default(), |_| DEFAULT_CHARS * 3);
        assert_eq!(
            huge.items,
            vec![1],
            "a row bigger than the budget still comes out"
        );
    }

    #[test]
    fn limit_offset_and_all_choose_the_window() {
        let page = Page::of((0..10).collect(), &args(Some(3), 8, false), |_| 1);
        assert_eq!(page.items, vec![8, 9]);
        assert_eq!(page.next_offset(), None);
        assert!(page.truncated(), "rows before the offset were left out");
        assert!(page.footer("tasks").contains("9–10 of 10 tasks"));
        let all = Page::of((0..200).collect(), &args(None, 0, true), |_| 10_000);
        assert_eq!(all.returned(), 200);
        assert!(!all.truncated());
        assert_eq!(all.footer("tasks"), "");
        let past = Page::of((0..3).collect::<Vec<i32>>(), &args(None, 7, false), |_| 1);
        assert_eq!(past.returned(), 0);
        assert_eq!(past.offset, 3);
        assert!(past.footer("tasks").contains("past the end"));
    }

    #[test]
    fn the_envelope_says_whether_the_list_is_partial() {
        let page = Page::of(vec!["a", "b", "c"], &args(Some(2), 0, false), |_| 1);
        assert_eq!(
            page.envelope(),
            json!({"items": ["a", "b"], "total": 3, "offset": 0, "returned": 2, "truncated": true, "next_offset": 2})
        );
    }
}
