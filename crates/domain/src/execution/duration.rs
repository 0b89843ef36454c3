//! Durations as the session files write them: `45s`, `2m 34s`, `1h 5m 0s`.

use std::time::Duration;

use chrono::TimeDelta;

/// Whole seconds only: the files never show fractions, so the model does not keep them either.
pub fn format_duration(duration: Duration) -> String {
    let total = duration.as_secs();
    let (h, m, s) = (total / 3600, (total / 60) % 60, total % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m {s}s"),
        _ => format!("{h}h {m}m {s}s"),
    }
}

/// Reads `2m 34s`, `2m34s`, `1h`, `90s`, `1h 2m 3s`, any case. Anything else (`N/A`, `-`, blank,
/// a bare number, a repeated unit) is `None`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim().to_ascii_lowercase();
    if text.is_empty() {
        return None;
    }
    let mut total: u64 = 0;
    let mut digits = String::new();
    let mut seen = [false; 3];
    for c in text.chars() {
        match c {
            '0'..='9' => digits.push(c),
            'h' | 'm' | 's' => {
                let (slot, scale) = match c {
                    'h' => (0, 3600),
                    'm' => (1, 60),
                    _ => (2, 1),
                };
                if digits.is_empty() || seen[slot] {
                    return None;
                }
                seen[slot] = true;
                total = total.checked_add(digits.parse::<u64>().ok()?.checked_mul(scale)?)?;
                digits.clear();
            }
            c if c.is_whitespace() && digits.is_empty() => {}
            _ => return None,
        }
    }
    digits.is_empty().then_some(Duration::from_secs(total))
}

/// An age for people: `1h 12m`, `35m`, `20s`.
pub fn format_age(age: TimeDelta) -> String {
    let secs = age.num_seconds().max(0);
    let (h, m) = (secs / 3600, (secs / 60) % 60);
    match (h, m) {
        (0, 0) => format!("{secs}s"),
        (0, _) => format!("{m}m"),
        _ => format!("{h}h {m}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_the_seed() {
        assert_eq!(format_duration(Duration::from_secs(154)), "2m 34s");
        assert_eq!(format_duration(Duration::from_secs(245)), "4m 5s");
        assert_eq!(format_duration(Duration::from_secs(45)), "45s");
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h 0m 0s");
        assert_eq!(format_duration(Duration::from_millis(1999)), "1s");
    }

    #[test]
    fn parses_leniently_but_not_blindly() {
        assert_eq!(parse_duration("2m 34s"), Some(Duration::from_secs(154)));
        assert_eq!(parse_duration(" 2M34S "), Some(Duration::from_secs(154)));
        assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
        for bad in ["N/A", "", "12", "m", "2m 3m", "2 m", "2.5m", "-"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn format_then_parse_is_identity(secs in 0u64..10_000_000) {
            proptest::prop_assert_eq!(parse_duration(&format_duration(Duration::from_secs(secs))), Some(Duration::from_secs(secs)));
        }
    }
}
