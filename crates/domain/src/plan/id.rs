//! Plan directory names (`.plan_YYYY-MM-DD_XXXXXXXX`), which are also the plans' ids.

use std::fmt;

use chrono::NaiveDate;

use super::error::PlanError;

const PREFIX: &str = ".plan_";
/// `.plan_` + `YYYY-MM-DD` + `_` + 8 hex digits.
const NAME_LEN: usize = 6 + 10 + 1 + 8;

/// The name of a plan directory, which is also the plan's id. Always well-formed: the creation
/// date is a real calendar date and the suffix is eight lowercase hex digits, so the name can be
/// joined to a path without any chance of escaping `.claude/`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PlanId(String);

impl PlanId {
    /// A new id from the creation date and eight lowercase hex digits (from `IdGen::hex8`).
    pub fn new(date: NaiveDate, hex8: &str) -> Result<Self, PlanError> {
        Self::parse(&format!("{PREFIX}{}_{hex8}", date.format("%Y-%m-%d")))
    }

    /// Accepts exactly `.plan_YYYY-MM-DD_XXXXXXXX` and nothing around it.
    pub fn parse(name: &str) -> Result<Self, PlanError> {
        let bad = |reason: &str| PlanError::BadPlanId {
            name: name.to_owned(),
            reason: reason.to_owned(),
        };
        if name.len() != NAME_LEN || !name.is_ascii() {
            return Err(bad(
                "expected `.plan_YYYY-MM-DD_XXXXXXXX` (25 ASCII characters)",
            ));
        }
        let Some(rest) = name.strip_prefix(PREFIX) else {
            return Err(bad("must start with `.plan_`"));
        };
        let (date, hex) = rest.split_at(10);
        let Some(hex) = hex.strip_prefix('_') else {
            return Err(bad("expected `_` between the date and the hex suffix"));
        };
        let digits_ok = date.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
        if !digits_ok || NaiveDate::parse_from_str(date, "%Y-%m-%d").is_err() {
            return Err(bad(
                "the date must be a real calendar date written YYYY-MM-DD",
            ));
        }
        if !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(bad("the suffix must be 8 lowercase hex digits"));
        }
        Ok(Self(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The creation date encoded in the name.
    pub fn date(&self) -> NaiveDate {
        NaiveDate::parse_from_str(&self.0[PREFIX.len()..PREFIX.len() + 10], "%Y-%m-%d")
            .expect("PlanId is validated on construction")
    }
}

impl fmt::Display for PlanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
