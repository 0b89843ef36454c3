//! Task ids across the bridge: cairn's `T-007` is Claude Code's `"7"` (and progress.md's `[7]`).

/// `T-007` → `7`. `None` unless the id is `T-` followed by digits.
pub fn list_task_id(project_id: &str) -> Option<String> {
    let digits = project_id.strip_prefix("T-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse::<u64>().ok()?.to_string())
}

/// `7` → `T-007` (zero-padded to at least three digits, as cairn writes ids). `None` unless the
/// id is all digits.
pub fn project_task_id(list_id: &str) -> Option<String> {
    if list_id.is_empty() || !list_id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(format!("T-{:03}", list_id.parse::<u64>().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_directions() {
        assert_eq!(list_task_id("T-007").as_deref(), Some("7"));
        assert_eq!(list_task_id("T-1234").as_deref(), Some("1234"));
        assert_eq!(list_task_id("T-000").as_deref(), Some("0"));
        for bad in ["T-", "7", "T-7a", "t-007", "T--7", "T-+7"] {
            assert_eq!(list_task_id(bad), None, "{bad}");
        }
        assert_eq!(project_task_id("7").as_deref(), Some("T-007"));
        assert_eq!(project_task_id("007").as_deref(), Some("T-007"));
        assert_eq!(project_task_id("1234").as_deref(), Some("T-1234"));
        for bad in ["", "T-007", "7.0", "-7", "+7"] {
            assert_eq!(project_task_id(bad), None, "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn round_trip(n in 0u64..10_000_000) {
            let project = project_task_id(&n.to_string()).unwrap();
            proptest::prop_assert_eq!(list_task_id(&project), Some(n.to_string()));
        }
    }
}
