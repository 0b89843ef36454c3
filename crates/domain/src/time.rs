//! Timestamps as cairn writes them: RFC 3339, UTC, `Z` suffix.

use chrono::{DateTime, Datelike, SecondsFormat, Timelike, Utc};

/// Every instant cairn stores. Always UTC.
pub type Timestamp = DateTime<Utc>;

/// Formats as `2026-11-22T02:20:44Z` (fractional seconds only when present).
pub fn format_rfc3339(at: &Timestamp) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Parses an RFC 3339 timestamp and converts it to UTC — one whose UTC time RFC 3339 can write
/// too: in years 0000–9999, and a leap second only at 23:59 UTC (see `writable`).
pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
        .filter(writable)
}

/// Whether [`format_rfc3339`] writes `at` as RFC 3339: in years 0000–9999, and a leap second
/// only at 23:59 UTC. An offset can carry a time out of those years (`0000-01-01T00:30:00+01:00`
/// is year −1 in UTC), which would be written with a signed year, and chrono reads a leap second
/// at any minute (`12:34:60Z`) and writes it back so. No reader of the files accepts either:
/// read, such a task passed its schema; written back, it failed it.
fn writable(at: &Timestamp) -> bool {
    let leap = at.nanosecond() >= 1_000_000_000;
    (0..=9999).contains(&at.year()) && (!leap || (at.hour(), at.minute()) == (23, 59))
}

/// Why `text` is not read as a timestamp.
fn unreadable(text: &str) -> String {
    if DateTime::parse_from_rfc3339(text.trim()).is_ok() {
        format!(
            "{text:?} is a time that cannot be written back: in UTC it falls outside the years \
             0000-9999, or is a leap second away from 23:59"
        )
    } else {
        format!("not an RFC 3339 timestamp: {text:?}")
    }
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
        parse_rfc3339(&text).ok_or_else(|| D::Error::custom(unreadable(&text)))
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
                Some(text) => parse_rfc3339(&text)
                    .map(Some)
                    .ok_or_else(|| D::Error::custom(unreadable(&text))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is read is what can be written: a time an offset carries out of the four-digit
    /// years is refused, and the edges of the years RFC 3339 can write are kept as written.
    #[test]
    fn a_timestamp_is_read_only_when_its_utc_time_can_be_written() {
        for outside in [
            "0000-01-01T00:30:00+01:00",
            "9999-12-31T23:30:00-01:00",
            "2016-12-31T12:34:60Z",
            "2016-12-31T23:59:60+01:00",
        ] {
            assert_eq!(parse_rfc3339(outside), None, "{outside}");
            assert!(
                unreadable(outside).contains("cannot be written back"),
                "{outside}"
            );
        }
        assert!(unreadable("yesterday").contains("not an RFC 3339 timestamp"));
        for (inside, written) in [
            ("0000-01-01T01:00:00+01:00", "0000-01-01T00:00:00Z"),
            ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z"),
            ("2026-11-22T03:20:44+01:00", "2026-11-22T02:20:44Z"),
            ("2016-12-31T23:59:60Z", "2016-12-31T23:59:60Z"),
            ("2017-01-01T00:59:60+01:00", "2016-12-31T23:59:60Z"),
        ] {
            let read = parse_rfc3339(inside).unwrap_or_else(|| panic!("{inside} reads"));
            assert_eq!(format_rfc3339(&read), written);
            assert_eq!(parse_rfc3339(written), Some(read));
        }
    }
}
