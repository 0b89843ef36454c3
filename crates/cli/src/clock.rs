//! Which clock a run uses.
//!
//! `CAIRN_NOW` (an RFC 3339 instant) fixes the clock for the whole run: every timestamp cairn
//! writes is that instant. It is a testing and replay aid — snapshot tests use it so that output
//! does not depend on when they run — and is read once, at startup. Without it, the system clock.

use std::sync::Arc;

use cairn_domain::ports::{Clock, FixedClock};
use cairn_domain::time::parse_rfc3339;

use crate::exit::{Code, Failure};

pub const CAIRN_NOW: &str = "CAIRN_NOW";

pub fn from_env() -> Result<Arc<dyn Clock>, Failure> {
    match std::env::var(CAIRN_NOW) {
        Ok(text) if !text.trim().is_empty() => match parse_rfc3339(&text) {
            Some(at) => Ok(Arc::new(FixedClock::new(at))),
            None => Err(Failure::new(
                Code::Usage,
                format!("{CAIRN_NOW}=`{text}` is not an RFC 3339 instant"),
            )
            .with_hint(format!(
                "use e.g. {CAIRN_NOW}=2026-01-15T09:30:00Z, or unset it to use the system clock"
            ))),
        },
        _ => Ok(crate::wiring::system_clock()),
    }
}
