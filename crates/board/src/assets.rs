//! The page: one HTML file, one script and one stylesheet, embedded in the binary so the board
//! needs no build step, no network and no files next to the executable.
//!
//! The script and the stylesheet are inlined into the page when it is served: every request must
//! carry the run's token, and a `<script src>` the browser fetches by itself would carry none.

use std::sync::OnceLock;

use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

const PAGE: &str = include_str!("../assets/board.html");
const SCRIPT: &str = include_str!("../assets/board.js");
const STYLE: &str = include_str!("../assets/board.css");

/// Nothing but this page's own inline code and same-origin requests: a task title that slipped
/// through as markup could still not load or send anything elsewhere.
const POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                      connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
                      frame-ancestors 'none'";

fn assembled() -> &'static str {
    static PAGE_TEXT: OnceLock<String> = OnceLock::new();
    PAGE_TEXT.get_or_init(|| {
        PAGE.replacen("/*STYLE*/", STYLE, 1)
            .replacen("/*SCRIPT*/", SCRIPT, 1)
    })
}

pub async fn page() -> Response {
    (
        [
            // The token is in the URL; a new run's page must never be an old run's.
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        Html(assembled()),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_page_inlines_its_script_and_style() {
        let page = super::assembled();
        assert!(!page.contains("/*STYLE*/") && !page.contains("/*SCRIPT*/"));
        assert!(page.contains("EventSource"));
    }
}
