//! The on-disk format of orchestration sessions (SPEC §5): the Markdown log below the front
//! matter of `state/active-session.md`.
//!
//! The domain holds the session ([`Session`](cairn_domain::orchestration::Session)): the front
//! matter as serde types with the seed's field names, and the log as
//! [`LogEntry`](cairn_domain::orchestration::LogEntry) values; this module writes and reads the
//! log's text.

mod log_md;

pub use log_md::{
    GLYPH_COMPLETED, GLYPH_FAILED, GLYPH_IN_PROGRESS, GLYPH_PENDING, GLYPH_SKIPPED, parse_log,
    render_entry, render_log, render_phase_section, status_glyph,
};
