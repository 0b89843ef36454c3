//! Paging for the MCP results: a page stops at [`DEFAULT_ROWS`] rows (or the `limit` asked for)
//! or at [`MAX_CHARS`] characters of JSON, whichever comes first, so a result stays far below
//! 8,000 tokens on any project. The envelope names `next_offset` while more remain.

use serde::Serialize;
use serde_json::{Value, json};

/// Rows on a page when no `limit` is given.
pub const DEFAULT_ROWS: usize = 50;
/// The most characters of rows on one page, whatever `limit` says (about 6,000 tokens of JSON
/// at the usual 3–4 characters per token). A page holds at least one row, so paging progresses.
pub const MAX_CHARS: usize = 20_000;

/// `{"items": [...], "total": N, "next_offset": M}` (`next_offset` only while more remain).
pub fn envelope<T: Serialize>(items: &[T], offset: usize, limit: Option<usize>) -> Value {
    let total = items.len();
    let offset = offset.min(total);
    let limit = limit.unwrap_or(DEFAULT_ROWS).max(1);
    let mut chars = 0;
    let mut rows = Vec::new();
    for item in &items[offset..] {
        let row = json!(item);
        chars += row.to_string().len();
        if !rows.is_empty() && (rows.len() == limit || chars > MAX_CHARS) {
            break;
        }
        rows.push(row);
    }
    let end = offset + rows.len();
    let mut page = json!({"items": rows, "total": total});
    if end < total {
        page["next_offset"] = json!(end);
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_stops_at_the_limit_and_says_where_the_next_starts() {
        let items: Vec<u32> = (0..10).collect();
        let page = envelope(&items, 2, Some(3));
        assert_eq!(
            page,
            json!({"items": [2, 3, 4], "total": 10, "next_offset": 5})
        );
        let last = envelope(&items, 8, Some(3));
        assert_eq!(last, json!({"items": [8, 9], "total": 10}));
    }

    #[test]
    fn a_page_stops_at_the_character_cap_whatever_the_limit() {
        let items: Vec<String> = (0..100).map(|_| "x".repeat(1_000)).collect();
        let page = envelope(&items, 0, Some(100));
        let shown = page["items"].as_array().unwrap().len();
        assert!(shown < 100 && shown > 10, "{shown}");
        assert_eq!(page["next_offset"], json!(shown));
    }
}
