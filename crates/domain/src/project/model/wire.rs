//! `Deserialize` for [`Task`] and [`TaskDoc`], written by hand: they keep unknown fields
//! (`extra`), and serde's derived `#[serde(flatten)]` reads every object into an intermediate
//! buffer first and then reads that buffer again — for `TaskDoc` the whole 10,000-task array. Here
//! each known key is read straight into its field and only unknown keys are collected. The result
//! is what the derive gave: same fields, same defaults, same wrappers (`rfc3339`, `whole`),
//! duplicate known keys refused, unknown keys kept in order.

use std::borrow::Cow;

use serde::de::{Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::{Map, Task, TaskDoc, Timestamp, fmt, rfc3339, whole};

struct Rfc(Timestamp);
struct RfcOpt(Option<Timestamp>);
struct Whole(u32);
struct WholeOpt(Option<u32>);

macro_rules! via {
    ($wrapper:ident, $with:path) => {
        impl<'de> Deserialize<'de> for $wrapper {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $with(d).map($wrapper)
            }
        }
    };
}
via!(Rfc, rfc3339::deserialize);
via!(RfcOpt, rfc3339::option::deserialize);
via!(Whole, whole::required);
via!(WholeOpt, whole::option);

/// An object key, borrowed from the input when it can be: a known key costs no allocation.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

/// `field: "key", WireType, |read| value when present, value when absent;` for each known field;
/// every other key goes to `extra`.
macro_rules! with_extra {
    ($ty:ident, $($field:ident: $key:literal, $wire:ty, |$read:ident| $present:expr, $absent:expr;)*) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct FieldsVisitor;
                impl<'de> Visitor<'de> for FieldsVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!("struct ", stringify!($ty)))
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$ty, A::Error> {
                        $(let mut $field: Option<$wire> = None;)*
                        let mut extra = Map::new();
                        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                            match &*key {
                                $($key => {
                                    if $field.is_some() {
                                        return Err(A::Error::duplicate_field($key));
                                    }
                                    $field = Some(map.next_value()?);
                                })*
                                _ => {
                                    let value = map.next_value()?;
                                    extra.insert(key.into_owned(), value);
                                }
                            }
                        }
                        Ok($ty {
                            $($field: match $field {
                                Some($read) => $present,
                                None => $absent,
                            },)*
                            extra,
                        })
                    }
                }
                d.deserialize_map(FieldsVisitor)
            }
        }
    };
}

fn missing<T, E: serde::de::Error>(key: &'static str) -> Result<T, E> {
    Err(E::missing_field(key))
}

with_extra!(Task,
    id: "id", super::TaskId, |v| v, missing("id")?;
    title: "title", String, |v| v, missing("title")?;
    level: "level", super::Level, |v| v, missing("level")?;
    status: "status", super::TaskStatus, |v| v, missing("status")?;
    priority: "priority", super::Priority, |v| v, missing("priority")?;
    dependencies: "dependencies", Vec<super::TaskId>, |v| v, Vec::new();
    completion_criteria: "completion_criteria", Vec<String>, |v| v, Vec::new();
    created_at: "created_at", Rfc, |v| v.0, missing("created_at")?;
    description: "description", Option<String>, |v| v, None;
    phase_id: "phase_id", Option<String>, |v| v, None;
    parent_id: "parent_id", Option<super::TaskId>, |v| v, None;
    subtasks: "subtasks", Option<Vec<super::TaskId>>, |v| v, None;
    estimate_minutes: "estimate_minutes", WholeOpt, |v| v.0, None;
    actual_minutes: "actual_minutes", Option<super::Minutes>, |v| v, None;
    started_at: "started_at", RfcOpt, |v| v.0, None;
    completed_at: "completed_at", RfcOpt, |v| v.0, None;
    blocked_reason: "blocked_reason", Option<String>, |v| v, None;
    research_file: "research_file", Option<String>, |v| v, None;
    tags: "tags", Option<Vec<String>>, |v| v, None;
    external_id: "external_id", Option<String>, |v| v, None;
    stale_count: "stale_count", WholeOpt, |v| v.0, None;
    claimed_by: "claimed_by", Option<String>, |v| v, None;
    lease_expires_at: "lease_expires_at", RfcOpt, |v| v.0, None;
);

with_extra!(TaskDoc,
    version: "version", Whole, |v| v.0, super::one();
    project_id: "project_id", Option<super::ProjectId>, |v| v, None;
    tasks: "tasks", Vec<Task>, |v| super::TaskList::as_read(v), missing("tasks")?;
    completions_since_checkpoint: "completions_since_checkpoint", Whole, |v| v.0, 0;
);

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"{"id":"T-7","title":"t","level":"task","status":"IN_PROGRESS","priority":"HIGH","dependencies":["T-001"],"completion_criteria":["c"],"created_at":"2026-01-02T03:04:05Z","x_first":{"a":[1,2.5,"s"]},"description":"d","phase_id":"p","parent_id":"T-002","subtasks":[],"estimate_minutes":12,"actual_minutes":1.5,"started_at":"2026-01-02T03:04:06Z","completed_at":null,"blocked_reason":"b","research_file":"research/T-7.md","tags":["x"],"external_id":"e","stale_count":2,"claimed_by":"a","lease_expires_at":"2026-01-02T04:04:05Z","x_last":null}"#;

    #[test]
    fn a_task_reads_every_field_and_keeps_unknown_ones_in_order() {
        let task: Task = serde_json::from_str(FULL).unwrap();
        assert_eq!(task.id.as_str(), "T-7");
        assert_eq!(task.estimate_minutes, Some(12));
        assert_eq!(task.stale_count, Some(2));
        assert!(task.started_at.is_some() && task.completed_at.is_none());
        assert_eq!(
            task.extra.keys().collect::<Vec<_>>(),
            ["x_first", "x_last"],
            "unknown fields, in file order"
        );
        // The same through a `Value` (how a file another tool wrote is read, after validation).
        let value: serde_json::Value = serde_json::from_str(FULL).unwrap();
        assert_eq!(serde_json::from_value::<Task>(value).unwrap(), task);
        let again: Task = serde_json::from_str(&serde_json::to_string(&task).unwrap()).unwrap();
        assert_eq!(again, task);
    }

    #[test]
    fn absent_fields_take_their_defaults_and_whole_numbers_may_be_written_as_floats() {
        let doc: TaskDoc = serde_json::from_str(
            r#"{"tasks":[{"id":"T-001","title":"t","level":"task","status":"PENDING","priority":"LOW","created_at":"2026-01-02T03:04:05Z","estimate_minutes":12.0}]}"#,
        )
        .unwrap();
        assert_eq!(doc.version, 1);
        assert_eq!(doc.completions_since_checkpoint, 0);
        assert!(doc.project_id.is_none() && doc.extra.is_empty());
        let task = &doc.tasks[0];
        assert!(task.dependencies.is_empty() && task.description.is_none());
        assert_eq!(task.estimate_minutes, Some(12));
    }

    #[test]
    fn what_the_derive_refused_is_still_refused() {
        let error = |json: &str| {
            serde_json::from_str::<TaskDoc>(json)
                .unwrap_err()
                .to_string()
        };
        assert!(error(r#"{"version":1}"#).contains("missing field `tasks`"));
        assert!(error(r#"{"tasks":[],"tasks":[]}"#).contains("duplicate field `tasks`"));
        assert!(error(r#"{"tasks":[{"id":"T-001"}]}"#).contains("missing field `title`"));
        assert!(error(r#"{"version":1.5,"tasks":[]}"#).contains("whole number"));
        assert!(error(r#"{"tasks":[],"completions_since_checkpoint":null}"#).contains("null"));
        assert!(error(r#"[]"#).contains("struct TaskDoc"));
        let bad_time = FULL.replace("2026-01-02T03:04:06Z", "yesterday");
        assert!(
            serde_json::from_str::<Task>(&bad_time)
                .unwrap_err()
                .to_string()
                .contains("RFC 3339")
        );
    }
}
