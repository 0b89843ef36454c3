//! Timestamps as cairn writes them: RFC 3339, UTC, `Z` suffix.

use chrono::{DateTime, SecondsFormat, Utc};

/// Every instant cairn stores. Always UTC.
pub type Timestamp = DateTime<Utc>;

/// Formats as `2026-11-22T02:20:44Z` (fractional seconds only when present).
pub fn format_rfc3339(at: &Timestamp) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Parses any RFC 3339 timestamp and converts it to UTC.
pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// serde helpers for `Timestamp` fields so the written form is always [`format_rfc3339`].
pub mod rfc3339 {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub fn serialize<S: Serializer>(at: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_rfc3339(at))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(d)?;
        parse_rfc3339(&text)
            .ok_or_else(|| D::Error::custom(format!("not an RFC 3339 timestamp: {text:?}")))
    }

    /// The same for `Option<Timestamp>` fields (`null` or absent is `None`).
    pub mod option {
        use super::*;

        pub fn serialize<S: Serializer>(at: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
            match at {
                Some(at) => s.serialize_str(&format_rfc3339(at)),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
            match Option::<String>::deserialize(d)? {
                None => Ok(None),
                Some(text) => parse_rfc3339(&text).map(Some).ok_or_else(|| {
                    D::Error::custom(format!("not an RFC 3339 timestamp: {text:?}"))
                }),
            }
        }
    }
}
