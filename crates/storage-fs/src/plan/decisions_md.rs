//! `decisions.md`: the append-only decision log.
//!
//! Each entry is a block headed `## D-NNN | FROM → TO | YYYY-MM-DD` followed by a Markdown
//! body. A body never holds a line starting with `## D-` (the domain's `DecisionDraft` refuses
//! one), so reading the blocks back cannot split an entry in two.

use cairn_domain::plan::{Decision, PlanState};
use chrono::NaiveDate;

use super::split_arrow;

pub const DECISION_LOG_HEADER: &str = "# Decision Log\n";

/// One block, ending in a blank line so blocks can be appended one after another.
pub fn render_decision(decision: &Decision) -> String {
    format!(
        "## {} | {} → {} | {}\n{}\n\n",
        decision.label(),
        decision.from,
        decision.to,
        decision.date.format("%Y-%m-%d"),
        decision.body
    )
}

/// The whole file.
pub fn render_decision_log(decisions: &[Decision]) -> String {
    let mut out = format!("{DECISION_LOG_HEADER}\n");
    for decision in decisions {
        out.push_str(&render_decision(decision));
    }
    out
}

/// The number in a `## D-NNN …` heading line, if the line is one.
fn heading_number(line: &str) -> Option<u32> {
    let rest = line.trim_start().strip_prefix("## D-")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn parse_heading(line: &str) -> Option<(u32, PlanState, PlanState, NaiveDate)> {
    let number = heading_number(line)?;
    let mut fields = line.split('|').map(str::trim).skip(1);
    let (from, to) = split_arrow(fields.next()?)?;
    let date = NaiveDate::parse_from_str(fields.next()?, "%Y-%m-%d").ok()?;
    Some((number, PlanState::parse(from)?, PlanState::parse(to)?, date))
}

/// Reads the log leniently: text before the first entry is ignored, `->` works for `→`, and a
/// block whose heading cannot be read is skipped (its number still counts, see
/// [`next_decision_number`]).
pub fn parse_decision_log(text: &str) -> Vec<Decision> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| heading_number(lines[i]).is_some())
        .collect();
    starts
        .iter()
        .enumerate()
        .filter_map(|(k, &start)| {
            let (number, from, to, date) = parse_heading(lines[start])?;
            let end = starts.get(k + 1).copied().unwrap_or(lines.len());
            let body = lines[start + 1..end].join("\n").trim().to_owned();
            Some(Decision {
                number,
                from,
                to,
                date,
                body,
            })
        })
        .collect()
}

/// The number the next entry gets: one more than the highest number present, counting headings
/// that are otherwise unreadable, so numbering never goes backwards.
pub fn next_decision_number(text: &str) -> u32 {
    text.lines()
        .filter_map(heading_number)
        .max()
        .map_or(1, |n| n.saturating_add(1))
}
