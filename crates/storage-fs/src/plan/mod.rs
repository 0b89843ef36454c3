//! The on-disk formats of a plan directory (SPEC §4): `state.md`, `decisions.md`, the
//! `.claude/.current_plan` pointer and the templates of the documents a new plan starts with.
//!
//! The domain holds the values ([`PlanRecord`](cairn_domain::plan::PlanRecord),
//! [`Decision`](cairn_domain::plan::Decision), [`PlanId`](cairn_domain::plan::PlanId)) and the
//! file names; this module holds what the files say. Renderers are pure and total; parsers are
//! lenient where another tool's or a hand's variation is harmless and strict where a guess would
//! change what is enforced.

mod decisions_md;
mod documents;
mod findings_md;
mod pointer;
mod state_md;

pub use decisions_md::{
    DECISION_LOG_HEADER, next_decision_number, parse_decision_log, render_decision,
    render_decision_log,
};
pub use documents::template;
pub use findings_md::{append_finding_detail, append_finding_line};
pub use pointer::{parse_pointer, render_pointer};
pub use state_md::{parse_state, peek_state, render_state};

/// Splits `A → B` (or `A -> B`) at the first arrow.
fn split_arrow(text: &str) -> Option<(&str, &str)> {
    if let Some((a, b)) = text.split_once('→') {
        return Some((a.trim(), b.trim()));
    }
    text.split_once("->").map(|(a, b)| (a.trim(), b.trim()))
}
