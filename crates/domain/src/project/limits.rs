//! The longest value cairn writes into each free-text field, so that no single task can flood an
//! agent's context when it is listed, shown or primed.
//!
//! Limits apply to what cairn itself writes: every operation that takes a value from a caller
//! checks it here before it changes anything. A file written by another tool with a longer value
//! still loads, lists and moves (the schemas set no maximum), because refusing to read a user's
//! data would be worse than showing it long.
//!
//! Lengths are counted in characters (Unicode scalar values), after the trimming each operation
//! already does, like the minimum lengths in [`super::tasks`].

use crate::error::DomainError;

pub const MAX_TITLE_CHARS: usize = 500;
pub const MAX_DESCRIPTION_CHARS: usize = 10_000;
/// Blocked, cancelled, reset and move reasons: they are shown in lists and logged.
pub const MAX_REASON_CHARS: usize = 2_000;
/// Each completion criterion (there are at most [`super::tasks::MAX_CRITERIA`]).
pub const MAX_CRITERION_CHARS: usize = 500;
/// Phase ids, which double as phase names when no name is given.
pub const MAX_PHASE_CHARS: usize = 100;
pub const MAX_TAG_CHARS: usize = 100;
pub const MAX_TAGS: usize = 20;
pub const MAX_PROJECT_NAME_CHARS: usize = 200;
pub const MAX_GOAL_CHARS: usize = 2_000;
/// An agent name holding a claim: a session id or a short name, shown in lists.
pub const MAX_AGENT_CHARS: usize = 128;

/// A free-text field with a length limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Title,
    Description,
    Reason,
    Criterion,
    Phase,
    Tag,
    ProjectName,
    Goal,
    Agent,
}

impl Field {
    /// The field's name, as [`DomainError::Invalid`] reports it.
    pub fn name(self) -> &'static str {
        match self {
            Field::Title => "title",
            Field::Description => "description",
            Field::Reason => "reason",
            Field::Criterion => "criterion",
            Field::Phase => "phase",
            Field::Tag => "tag",
            Field::ProjectName => "name",
            Field::Goal => "goal",
            Field::Agent => "agent",
        }
    }

    pub fn max_chars(self) -> usize {
        match self {
            Field::Title => MAX_TITLE_CHARS,
            Field::Description => MAX_DESCRIPTION_CHARS,
            Field::Reason => MAX_REASON_CHARS,
            Field::Criterion => MAX_CRITERION_CHARS,
            Field::Phase => MAX_PHASE_CHARS,
            Field::Tag => MAX_TAG_CHARS,
            Field::ProjectName => MAX_PROJECT_NAME_CHARS,
            Field::Goal => MAX_GOAL_CHARS,
            Field::Agent => MAX_AGENT_CHARS,
        }
    }

    /// What to do with text that does not fit.
    fn advice(self) -> &'static str {
        match self {
            Field::Title | Field::Criterion | Field::ProjectName => {
                "keep it to one line and put the detail in the description"
            }
            Field::Description | Field::Goal | Field::Reason => {
                "summarise it and keep the full text in a file the task links to"
            }
            Field::Phase | Field::Tag | Field::Agent => "use a short identifier",
        }
    }
}

/// Refuses `value` when it is longer than `field` allows, naming the field, the limit and the
/// length.
pub fn check(field: Field, value: &str) -> Result<(), DomainError> {
    let length = value.chars().count();
    let max = field.max_chars();
    if length <= max {
        return Ok(());
    }
    let start: String = value.chars().take(40).collect();
    Err(DomainError::invalid(
        field.name(),
        format!(
            "the {} starting `{start}…` is {length} characters long; at most {max} are allowed: {}",
            field.name(),
            field.advice()
        ),
    ))
}

/// [`check`] for every value of a repeated field, and the count of tags.
pub fn check_all<'a>(
    field: Field,
    values: impl IntoIterator<Item = &'a String>,
) -> Result<(), DomainError> {
    let mut count = 0;
    for value in values {
        check(field, value)?;
        count += 1;
    }
    if field == Field::Tag && count > MAX_TAGS {
        return Err(DomainError::invalid(
            field.name(),
            format!("{count} tags given; at most {MAX_TAGS} are allowed"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_at_the_limit_passes_and_one_past_it_is_refused_with_its_length() {
        let at_limit = "é".repeat(MAX_TITLE_CHARS);
        assert!(
            check(Field::Title, &at_limit).is_ok(),
            "characters, not bytes"
        );
        let long = "x".repeat(MAX_TITLE_CHARS + 1);
        let message = check(Field::Title, &long).unwrap_err().to_string();
        assert!(message.contains("title"), "{message}");
        assert!(message.contains("501 characters"), "{message}");
        assert!(message.contains("at most 500"), "{message}");
    }

    #[test]
    fn too_many_tags_are_refused_even_when_each_is_short() {
        let tags: Vec<String> = (0..=MAX_TAGS).map(|i| format!("t{i}")).collect();
        assert!(check_all(Field::Tag, &tags[..MAX_TAGS]).is_ok());
        let message = check_all(Field::Tag, &tags).unwrap_err().to_string();
        assert!(message.contains("21 tags"), "{message}");
    }

    #[test]
    fn the_write_paths_refuse_long_values_and_change_nothing() {
        use crate::project::{MoveDetail, NewTask, TaskDoc, TaskStatus};
        use chrono::TimeZone;
        let at = chrono::Utc.with_ymd_and_hms(2026, 1, 15, 9, 30, 0).unwrap();
        let mut doc: TaskDoc = serde_json::from_value(serde_json::json!({"tasks": []})).unwrap();
        let (id, _) = doc.add_task(NewTask::titled("A fine task"), at).unwrap();
        let before = doc.clone();
        let long = |n: usize| "x".repeat(n + 1);
        let refused = [
            NewTask::titled(long(MAX_TITLE_CHARS)),
            NewTask {
                description: Some(long(MAX_DESCRIPTION_CHARS)),
                ..NewTask::titled("Fine title")
            },
            NewTask {
                completion_criteria: vec![long(MAX_CRITERION_CHARS)],
                ..NewTask::titled("Fine title")
            },
            NewTask {
                tags: vec![long(MAX_TAG_CHARS)],
                ..NewTask::titled("Fine title")
            },
            NewTask {
                phase_id: Some(long(MAX_PHASE_CHARS)),
                ..NewTask::titled("Fine title")
            },
        ];
        for new in refused {
            assert!(doc.add_task(new.clone(), at).is_err(), "{new:?}");
            assert!(doc.decompose(&id, vec![new], at).is_err());
        }
        let reason = MoveDetail {
            actual_minutes: None,
            reason: Some(long(MAX_REASON_CHARS)),
        };
        assert!(doc.move_task(&id, TaskStatus::Blocked, reason, at).is_err());
        assert_eq!(doc, before);
    }
}
