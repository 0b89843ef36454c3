//! The schemas and the typed model are one truth: every document the embedded schema accepts is
//! read by the typed reader, and writing it back keeps every field (#18: another tool's
//! `"actual_minutes": 12.5` made cairn roll back its whole edit).
//!
//! Generated documents mix every optional field, `null` where the schema allows it, numbers in
//! every form the schema allows (fractions, `12.0` for integers, large values, `-0.0`), timestamps
//! in every RFC 3339 spelling, odd-but-valid strings, and unknown fields at every level holding
//! anything (including enum-like values cairn does not know).
//!
//! What a round trip may change, by design: `null` and absent both mean "no value" for the
//! nullable fields and cairn writes absent; a whole number written as `12.0` in an integer field
//! comes back as `12` (the same JSON number); timestamps come back as the same instant in UTC with
//! a `Z`. Everything else — above all `actual_minutes` and unknown fields — comes back unchanged.

use cairn_domain::project::{Project, TaskDoc};
use cairn_storage_fs::schema::{SchemaKind, validate};
use proptest::prelude::*;
use serde_json::{Map, Number, Value, json};

const NULLABLE: &[&str] = &[
    "parent_id",
    "started_at",
    "completed_at",
    "blocked_reason",
    "research_file",
    "external_id",
    "claimed_by",
    "lease_expires_at",
];
const INTEGERS: &[&str] = &[
    "estimate_minutes",
    "stale_count",
    "version",
    "completions_since_checkpoint",
];
const TIMESTAMPS: &[&str] = &[
    "created_at",
    "updated_at",
    "started_at",
    "completed_at",
    "lease_expires_at",
];
const KNOWN_TASK_FIELDS: &[&str] = &[
    "id",
    "title",
    "description",
    "level",
    "status",
    "priority",
    "dependencies",
    "completion_criteria",
    "created_at",
    "phase_id",
    "parent_id",
    "subtasks",
    "estimate_minutes",
    "actual_minutes",
    "started_at",
    "completed_at",
    "blocked_reason",
    "research_file",
    "tags",
    "external_id",
    "stale_count",
    "claimed_by",
    "lease_expires_at",
];
const KNOWN_DOC_FIELDS: &[&str] = &[
    "version",
    "project_id",
    "tasks",
    "completions_since_checkpoint",
];

fn float(f: f64) -> Value {
    Value::Number(Number::from_f64(f).expect("finite"))
}

/// `T-` and up to 18 significant digits, sometimes zero-padded past cairn's three.
fn task_id() -> impl Strategy<Value = String> {
    (0u64..1_000_000_000_000_000_000, 0usize..4, any::<bool>()).prop_map(|(n, pad, small)| {
        let n = if small { n % 1000 } else { n };
        format!("T-{}{n}", "0".repeat(pad))
    })
}

fn unique_ids() -> impl Strategy<Value = Value> {
    prop::collection::btree_set(task_id(), 0..4).prop_map(|ids| json!(ids))
}

/// Any RFC 3339 date-time the schema's `date-time` format accepts.
fn timestamp() -> impl Strategy<Value = String> {
    (
        (
            1970i32..2200,
            1u32..=12,
            1u32..=28,
            0u32..24,
            0u32..60,
            0u32..60,
        ),
        prop::option::of(1usize..=9),
        0u32..1_000_000_000,
        prop_oneof![
            Just("Z".to_owned()),
            Just("z".to_owned()),
            Just("+00:00".to_owned()),
            Just("-00:00".to_owned()),
            (any::<bool>(), 0u32..24, 0u32..60)
                .prop_map(|(plus, h, m)| format!("{}{h:02}:{m:02}", if plus { '+' } else { '-' })),
        ],
        prop::sample::select(vec!['T', 't']),
    )
        .prop_map(|((y, mo, d, h, mi, s), digits, frac, offset, sep)| {
            let frac = digits
                .map(|n| format!(".{}", &format!("{frac:09}")[..n]))
                .unwrap_or_default();
            format!("{y:04}-{mo:02}-{d:02}{sep}{h:02}:{mi:02}:{s:02}{frac}{offset}")
        })
}

/// A string of any characters, at least `min` of them (JSON Schema counts code points).
fn text(min: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(any::<char>(), min..min + 12).prop_map(|c| c.into_iter().collect()),
        "[a-zA-Z ]{0,20}".prop_map(move |s| format!("{}{s}", "x".repeat(min))),
    ]
}

/// Any JSON value, nested a little, with enum-like strings cairn does not know.
fn anything() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(float),
        prop::sample::select(vec![
            "WEIRD_STATUS",
            "phase",
            "micro",
            "URGENT",
            "T-xyz",
            ""
        ])
        .prop_map(|s| json!(s)),
        text(0).prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Unknown fields: names cairn does not use, any values.
fn unknown_fields(known: &'static [&'static str]) -> impl Strategy<Value = Vec<(String, Value)>> {
    prop::collection::vec(
        ("x_[a-z_]{1,10}|status_|_level|[A-Z][a-z]{1,6}", anything()),
        0..4,
    )
    .prop_map(move |fields| {
        fields
            .into_iter()
            .filter(|(k, _)| !known.contains(&k.as_str()))
            .collect()
    })
}

/// A value of an integer field between `lo` and `hi`, as JSON integer or as a whole float.
fn integer(lo: u32, hi: u32) -> impl Strategy<Value = Value> {
    (lo..=hi, any::<bool>()).prop_map(|(n, as_float)| {
        if as_float {
            float(f64::from(n))
        } else {
            json!(n)
        }
    })
}

fn actual_minutes() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u32>().prop_map(|n| json!(n)),
        (0u32..100_000, 1u32..100).prop_map(|(n, d)| float(f64::from(n) / f64::from(d))),
        Just(float(12.5)),
        Just(float(12.0)),
        Just(float(-0.0)),
        Just(json!(0)),
        Just(json!(u64::MAX)),
        (0.0f64..1e300).prop_map(float),
    ]
}

/// What an optional field may be: absent, `null` (where the schema allows it), or a value.
fn optional<S: Strategy<Value = Value> + 'static>(
    value: S,
    nullable: bool,
) -> BoxedStrategy<Option<Value>> {
    if nullable {
        prop_oneof![Just(None), Just(Some(Value::Null)), value.prop_map(Some)].boxed()
    } else {
        prop_oneof![Just(None), value.prop_map(Some)].boxed()
    }
}

/// The values of an enum property of the task schema, taken from the schema itself so that a value
/// the schema allows and the model lacks is generated.
fn schema_enum(kind: SchemaKind, pointer: &str) -> impl Strategy<Value = String> + use<> {
    let schema = kind.schema();
    let values: Vec<String> = schema
        .pointer(pointer)
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{pointer} is an enum in {}", kind.file_name()))
        .iter()
        .map(|v| v.as_str().expect("string enum").to_owned())
        .collect();
    prop::sample::select(values)
}

fn task() -> impl Strategy<Value = Value> {
    let required = (
        task_id(),
        text(3),
        schema_enum(SchemaKind::Task, "/properties/level/enum"),
        schema_enum(SchemaKind::Task, "/properties/status/enum"),
        schema_enum(SchemaKind::Task, "/properties/priority/enum"),
        unique_ids(),
        prop::collection::vec(text(5), 0..=12),
        timestamp(),
    );
    let optional_a = (
        optional(text(0).prop_map(Value::String), false),
        optional("[a-z0-9-]{0,12}".prop_map(Value::String), false),
        optional(task_id().prop_map(Value::String), true),
        optional(unique_ids(), false),
        optional(integer(1, 480), false),
        optional(actual_minutes(), false),
    );
    let optional_b = (
        optional(timestamp().prop_map(Value::String), true),
        optional(timestamp().prop_map(Value::String), true),
        optional(text(0).prop_map(Value::String), true),
        optional(text(0).prop_map(Value::String), true),
        optional(
            prop::collection::vec(text(0), 0..4).prop_map(|t| json!(t)),
            false,
        ),
        optional(text(0).prop_map(Value::String), true),
        optional(integer(0, u32::MAX), false),
        optional(text(0).prop_map(Value::String), true),
        optional(timestamp().prop_map(Value::String), true),
    );
    (
        required,
        optional_a,
        optional_b,
        unknown_fields(KNOWN_TASK_FIELDS),
    )
        .prop_map(|(r, a, b, unknown)| {
            let mut task = Map::new();
            task.insert("id".into(), json!(r.0));
            task.insert("title".into(), json!(r.1));
            task.insert("level".into(), json!(r.2));
            task.insert("status".into(), json!(r.3));
            task.insert("priority".into(), json!(r.4));
            task.insert("dependencies".into(), r.5);
            task.insert("completion_criteria".into(), json!(r.6));
            task.insert("created_at".into(), json!(r.7));
            let optionals = [
                ("description", a.0),
                ("phase_id", a.1),
                ("parent_id", a.2),
                ("subtasks", a.3),
                ("estimate_minutes", a.4),
                ("actual_minutes", a.5),
                ("started_at", b.0),
                ("completed_at", b.1),
                ("blocked_reason", b.2),
                ("research_file", b.3),
                ("tags", b.4),
                ("external_id", b.5),
                ("stale_count", b.6),
                ("claimed_by", b.7),
                ("lease_expires_at", b.8),
            ];
            for (key, value) in optionals {
                if let Some(value) = value {
                    task.insert(key.into(), value);
                }
            }
            task.extend(unknown);
            Value::Object(task)
        })
}

fn document() -> impl Strategy<Value = Value> {
    (
        optional(integer(1, u32::MAX), false),
        optional("[a-z0-9-]{1,128}".prop_map(Value::String), false),
        optional(integer(0, u32::MAX), false),
        prop::collection::vec(task(), 0..5),
        unknown_fields(KNOWN_DOC_FIELDS),
    )
        .prop_map(|(version, project_id, completions, tasks, unknown)| {
            let mut doc = Map::new();
            for (key, value) in [
                ("version", version),
                ("project_id", project_id),
                ("completions_since_checkpoint", completions),
            ] {
                if let Some(value) = value {
                    doc.insert(key.into(), value);
                }
            }
            doc.insert("tasks".into(), Value::Array(tasks));
            doc.extend(unknown);
            Value::Object(doc)
        })
}

/// `written` says the same as `original`, allowing only the normalisations in the module docs.
fn assert_same(original: &Value, written: &Value, at: &str) {
    let (Value::Object(original), Value::Object(written)) = (original, written) else {
        panic!("{at}: not objects");
    };
    for (key, before) in original {
        let after = written.get(key);
        let at = format!("{at}/{key}");
        match (before, after) {
            (Value::Null, None) if NULLABLE.contains(&key.as_str()) => {}
            (before, Some(after)) if INTEGERS.contains(&key.as_str()) => {
                assert_eq!(before.as_f64(), after.as_f64(), "{at}: {before} → {after}");
            }
            (Value::String(before), Some(Value::String(after)))
                if TIMESTAMPS.contains(&key.as_str()) =>
            {
                let parse = |t: &str| {
                    chrono::DateTime::parse_from_rfc3339(t)
                        .unwrap_or_else(|e| panic!("{at}: {t}: {e}"))
                };
                assert_eq!(parse(before), parse(after), "{at}: {before} → {after}");
                assert!(after.ends_with('Z'), "{at}: written in UTC: {after}");
            }
            (Value::Array(before), Some(Value::Array(after)))
                if key == "tasks" || key == "phases" =>
            {
                assert_eq!(before.len(), after.len(), "{at}: task count");
                for (i, (b, a)) in before.iter().zip(after).enumerate() {
                    assert_same(b, a, &format!("{at}/{i}"));
                }
            }
            (before, after) => assert_eq!(Some(before), after, "{at}"),
        }
    }
    for key in written.keys() {
        assert!(
            original.contains_key(key)
                || matches!(
                    key.as_str(),
                    "version" | "dependencies" | "completion_criteria" | "phases"
                ),
            "{at}: `{key}` appeared from nowhere"
        );
    }
}

const KNOWN_PROJECT_FIELDS: &[&str] = &[
    "id",
    "name",
    "goal",
    "type",
    "status",
    "phases",
    "created_at",
    "updated_at",
];
const KNOWN_PHASE_FIELDS: &[&str] = &["id", "name", "status", "task_ids"];

fn phase() -> impl Strategy<Value = Value> {
    (
        "[a-z0-9-]{0,12}",
        text(0),
        schema_enum(SchemaKind::Project, "/$defs/phase/properties/status/enum"),
        optional(unique_ids(), false),
        unknown_fields(KNOWN_PHASE_FIELDS),
    )
        .prop_map(|(id, name, status, task_ids, unknown)| {
            let mut phase = Map::new();
            phase.insert("id".into(), json!(id));
            phase.insert("name".into(), json!(name));
            phase.insert("status".into(), json!(status));
            if let Some(task_ids) = task_ids {
                phase.insert("task_ids".into(), task_ids);
            }
            phase.extend(unknown);
            Value::Object(phase)
        })
}

fn project() -> impl Strategy<Value = Value> {
    (
        "[a-z0-9-]{1,128}",
        text(1),
        text(10),
        schema_enum(SchemaKind::Project, "/properties/type/enum"),
        schema_enum(SchemaKind::Project, "/properties/status/enum"),
        prop::collection::vec(phase(), 0..4),
        (timestamp(), timestamp()),
        unknown_fields(KNOWN_PROJECT_FIELDS),
    )
        .prop_map(
            |(id, name, goal, kind, status, phases, (created, updated), unknown)| {
                let mut project = Map::new();
                for (key, value) in [
                    ("id", json!(id)),
                    ("name", json!(name)),
                    ("goal", json!(goal)),
                    ("type", json!(kind)),
                    ("status", json!(status)),
                    ("phases", json!(phases)),
                    ("created_at", json!(created)),
                    ("updated_at", json!(updated)),
                ] {
                    project.insert(key.into(), value);
                }
                project.extend(unknown);
                Value::Object(project)
            },
        )
}

/// Validates, reads as `T`, writes back, validates again and compares (see the module docs).
fn check_round_trip<T>(kind: SchemaKind, doc: &Value)
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    // Through text, as another tool would hand it over.
    let text = serde_json::to_string_pretty(doc).expect("serialize");
    let doc: Value = serde_json::from_str(&text).expect("parse");
    if let Err(errors) = validate(kind, &doc) {
        panic!("the generator made an invalid document: {errors:#?}\n{text}");
    }
    let typed: T = serde_json::from_value(doc.clone())
        .unwrap_or_else(|e| panic!("schema-valid but unreadable: {e}\n{text}"));
    let written = serde_json::to_value(&typed).expect("write");
    if let Err(errors) = validate(kind, &written) {
        panic!("cairn's rewrite fails the schema: {errors:#?}\n{written:#}");
    }
    assert_same(&doc, &written, "");
    // And a second read-write changes nothing at all.
    let again: T = serde_json::from_value(written.clone()).expect("reread");
    assert_eq!(serde_json::to_value(&again).expect("rewrite"), written);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_schema_valid_document_reads_and_round_trips(doc in document()) {
        check_round_trip::<TaskDoc>(SchemaKind::Tasks, &doc);
    }

    #[test]
    fn every_schema_valid_project_reads_and_round_trips(project in project()) {
        check_round_trip::<Project>(SchemaKind::Project, &project);
    }
}
