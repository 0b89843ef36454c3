//! `Deserialize` for [`Task`] and [`TaskDoc`], written by hand: they keep unknown fields
//! (`extra`), and serde's derived `#[serde(flatten)]` reads every object into an intermediate
//! buffer first and then reads that buffer again — for `TaskDoc` the whole 10,000-task array. Here
//! each known key is read straight into its field and only unknown keys are collected. The result
//! is what the derive gave: same fields, same defaults, same wrappers (`rfc3339`, `whole`),
//! duplicate known keys refused, unknown keys kept in order.

use std::borrow::Cow;

use serde::de::{Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use serde_json::Value as Json;

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
                        // Unknown keys are rare, and kept in an object with room for exactly them.
                        let mut extra = Entries::new();
                        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                            match &*key {
                                $($key => {
                                    if $field.is_some() {
                                        return Err(A::Error::duplicate_field($key));
                                    }
                                    $field = Some(map.next_value()?);
                                })*
                                _ => {
                                    let Exact(value) = map.next_value()?;
                                    extra.push((key.into_owned(), value));
                                }
                            }
                        }
                        Ok($ty {
                            $($field: match $field {
                                Some($read) => $present,
                                None => $absent,
                            },)*
                            extra: extra.into_map(),
                        })
                    }
                }
                d.deserialize_map(FieldsVisitor)
            }
        }
    };
}

/// A JSON value read as [`serde_json::Value`] reads it, except that each object and array is
/// made with room for exactly its entries. An object grows from nothing to room for three entries
/// of about 110 bytes each: a task another tool tagged with `"metadata": {"import": {"source": …,
/// "id": …}}` took 1.1 KB for its three objects, most of it never used — at 100,000 imported
/// tasks, a third of the fresh memory a first read of tasks.json touched. The entries are held on
/// the stack until the object is made (a block of the heap's arena, once freed, is not reused: see
/// `cairn-heap`). The value is the one [`serde_json::Value`] gives: the same numbers, the last of
/// a key given twice in the first one's place.
#[derive(Debug)]
pub struct Exact(pub Json);

/// The entries of an object or array as read: the first few on the stack, the rest on the heap.
struct Entries<T> {
    first: [Option<T>; 4],
    len: usize,
    more: Vec<T>,
}

impl<T> Entries<T> {
    fn new() -> Self {
        Self {
            first: Default::default(),
            len: 0,
            more: Vec::new(),
        }
    }

    fn push(&mut self, entry: T) {
        match self.first.get_mut(self.len) {
            Some(slot) => *slot = Some(entry),
            None => self.more.push(entry),
        }
        self.len += 1;
    }

    fn in_order(self) -> impl Iterator<Item = T> {
        self.first.into_iter().flatten().chain(self.more)
    }
}

impl Entries<(String, Json)> {
    fn into_map(self) -> Map<String, Json> {
        let mut map = Map::with_capacity(self.len);
        for (key, value) in self.in_order() {
            map.insert(key, value);
        }
        map
    }
}

impl<'de> Deserialize<'de> for Exact {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ExactVisitor).map(Exact)
    }
}

struct ExactVisitor;

impl<'de> Visitor<'de> for ExactVisitor {
    type Value = Json;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        // As `Value` reads it: a float JSON cannot hold is null.
        Ok(Json::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        Exact::deserialize(d).map(|Exact(value)| value)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Entries::new();
        while let Some(Exact(item)) = seq.next_element()? {
            items.push(item);
        }
        let mut array = Vec::with_capacity(items.len);
        array.extend(items.in_order());
        Ok(Json::Array(array))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Entries::new();
        // As `Value` reads it (serde_json's `raw_value`): an object whose first key is the raw
        // value token is the JSON text its value holds, and only a string may be that text.
        match map.next_key::<String>()? {
            None => return Ok(Json::Object(Map::new())),
            Some(key) if key == RAW_VALUE_TOKEN => {
                let text = map.next_value_seed(RawText)?;
                return serde_json::from_str(&text)
                    .map(|Exact(value)| value)
                    .map_err(A::Error::custom);
            }
            Some(key) => {
                let Exact(value) = map.next_value()?;
                entries.push((key, value));
            }
        }
        while let Some((key, Exact(value))) = map.next_entry::<String, Exact>()? {
            entries.push((key, value));
        }
        Ok(Json::Object(entries.into_map()))
    }
}

/// serde_json's private key for a `RawValue` carried through a map (`raw_value` feature).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// The string under [`RAW_VALUE_TOKEN`], refused as serde_json refuses anything else there.
struct RawText;

impl<'de> serde::de::DeserializeSeed<'de> for RawText {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for RawText {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("raw value")
    }
    fn visit_str<E>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_string<E>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
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

    proptest::proptest! {
        /// Any JSON text reads as the same value as `Value` reads it, and a task keeps it as an
        /// unknown field unchanged, in place.
        #[test]
        fn an_exact_value_is_the_value_serde_json_reads(value in json(), spacing in 0..2u8) {
            let text = match spacing {
                0 => serde_json::to_string(&value).unwrap(),
                _ => serde_json::to_string_pretty(&value).unwrap(),
            };
            // Compared with `Value`'s own reading: a float may not read back bit for bit.
            let read: Json = serde_json::from_str(&text).unwrap();
            let Exact(exact) = serde_json::from_str(&text).unwrap();
            proptest::prop_assert_eq!(&exact, &read);
            let Exact(from_value) = serde_json::from_value(value.clone()).unwrap();
            proptest::prop_assert_eq!(&from_value, &value);
            let task_text = FULL.replacen(r#"{"a":[1,2.5,"s"]}"#, &text, 1);
            let task: Task = serde_json::from_str(&task_text).unwrap();
            proptest::prop_assert_eq!(&task.extra["x_first"], &read);
            proptest::prop_assert_eq!(
                task.extra.keys().collect::<Vec<_>>(),
                ["x_first", "x_last"]
            );
        }
    }

    fn json() -> impl proptest::strategy::Strategy<Value = Json> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::Bool),
            any::<i64>().prop_map(Json::from),
            any::<u64>().prop_map(Json::from),
            any::<f64>().prop_map(Json::from),
            "[a-z\\\\\"é😀]{0,6}".prop_map(Json::String),
        ];
        leaf.prop_recursive(4, 48, 7, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..7).prop_map(Json::Array),
                proptest::collection::vec(("[a-c]{1,2}", inner), 0..7)
                    .prop_map(|pairs| Json::Object(pairs.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn a_key_given_twice_keeps_its_first_place_and_its_last_value() {
        let text = r#"{"a":1,"b":2,"a":3}"#;
        let Exact(exact) = serde_json::from_str(text).unwrap();
        let value: Json = serde_json::from_str(text).unwrap();
        assert_eq!(exact, value);
        assert_eq!(
            exact.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(exact["a"], 3);
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

    /// serde_json's `Value` reads an object whose first key is the `raw_value` token as the JSON
    /// text its value holds; `Exact` must read it the same, errors included.
    #[test]
    fn an_exact_value_reads_the_raw_value_token_as_value_does() {
        for text in [
            r#"{"$serde_json::private::RawValue":"[1,2]"}"#,
            r#"{"$serde_json::private::RawValue":"{\"a\":1}","b":2}"#,
            r#"[{"$serde_json::private::RawValue":"nope"}]"#,
            r#"{"$serde_json::private::RawValue":5}"#,
            r#"{"a":{"$serde_json::private::RawValue":"true"}}"#,
        ] {
            let value = serde_json::from_str::<Json>(text).map_err(|e| e.to_string());
            let exact = serde_json::from_str::<Exact>(text)
                .map(|Exact(v)| v)
                .map_err(|e| e.to_string());
            assert_eq!(exact, value, "{text}");
        }
    }

    /// A task's unknown field reads the same from text as through a `Value` (the validated path).
    #[test]
    fn a_task_reads_the_same_from_text_and_from_a_value() {
        let text = FULL.replacen(
            r#"{"a":[1,2.5,"s"]}"#,
            r#"{"$serde_json::private::RawValue":"[1,2]"}"#,
            1,
        );
        let direct: Task = serde_json::from_str(&text).unwrap();
        let value: Json = serde_json::from_str(&text).unwrap();
        let through_value: Task = serde_json::from_value(value).unwrap();
        assert_eq!(direct.extra["x_first"], through_value.extra["x_first"]);
    }

    /// Numbers, escapes and errors as `Value` reads them, from text and from a `Value`.
    #[test]
    fn edge_values_read_as_value_reads_them() {
        for text in [
            "-0.0",
            "0",
            "-0",
            "1e308",
            "1e309",
            "-1e309",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "123456789012345678901234567890",
            "0.1",
            "2.5e-324",
            "1e-400",
            r#""\u00e9\ud83d\ude00\n\"\\""#,
            r#""\ud800""#,
            "null",
            "[]",
            "{}",
            "[1,]",
            r#"{"a":1,"a":{"b":2},"c":3,"a":[4]}"#,
            r#"{"a":1,"b":2,"c":3,"d":4,"e":5,"a":6}"#,
        ] {
            let value = serde_json::from_str::<Json>(text).map_err(|e| e.to_string());
            let exact = serde_json::from_str::<Exact>(text)
                .map(|Exact(v)| v)
                .map_err(|e| e.to_string());
            assert_eq!(exact, value, "{text}");
            if let (Ok(exact), Ok(value)) = (&exact, &value) {
                assert_eq!(
                    serde_json::to_string(exact).unwrap(),
                    serde_json::to_string(value).unwrap(),
                    "order and bits: {text}"
                );
                let Exact(again) = serde_json::from_value(value.clone()).unwrap();
                assert_eq!(
                    serde_json::to_string(&again).unwrap(),
                    serde_json::to_string(value).unwrap()
                );
                let Exact(by_ref) = Exact::deserialize(value).unwrap();
                assert_eq!(&by_ref, value);
            }
        }
        // A `Value` made in code with the token as its first key reads back as `Value` reads it.
        let made = serde_json::json!({"$serde_json::private::RawValue": "[1]"});
        let value = serde_json::from_value::<Json>(made.clone()).map_err(|e| e.to_string());
        let exact = serde_json::from_value::<Exact>(made)
            .map(|Exact(v)| v)
            .map_err(|e| e.to_string());
        assert_eq!(exact, value);
    }
}
