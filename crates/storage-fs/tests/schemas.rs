//! The embedded schemas against the 2020-12 meta-schema, and every fixture in `schemas/fixtures`.
//!
//! Layout: `schemas/fixtures/{valid,invalid}/<kind>/*.json`. Each `invalid/<kind>/EXPECTED` maps
//! every fixture to the instance path its error must be reported at, so an invalid fixture that
//! fails for the wrong reason (a typo elsewhere in it) fails this test.

use cairn_storage_fs::schema::{SchemaKind, validate};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn schemas_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas")
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

fn load(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_schema_is_a_valid_2020_12_schema() {
    for kind in SchemaKind::ALL {
        let schema = kind.schema();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema",
            "{}",
            kind.file_name()
        );
        assert_eq!(
            schema["$id"],
            format!(
                "{}{}",
                cairn_storage_fs::schema::SCHEMA_BASE_URI,
                kind.file_name()
            ),
            "the $id is what relative $refs resolve against"
        );
        if let Err(error) = jsonschema::draft202012::meta::validate(&schema) {
            panic!(
                "{} violates the 2020-12 meta-schema: {error}",
                kind.file_name()
            );
        }
    }
    // The check above can fail: a broken schema is caught.
    assert!(jsonschema::draft202012::meta::validate(&serde_json::json!({"type": 5})).is_err());
}

#[test]
fn the_embedded_text_is_the_file_in_schemas() {
    for kind in SchemaKind::ALL {
        let on_disk = fs::read_to_string(schemas_dir().join(kind.file_name())).unwrap();
        assert_eq!(kind.source(), on_disk, "{}", kind.file_name());
    }
}

#[test]
fn every_schema_file_has_a_kind() {
    let known: Vec<&str> = SchemaKind::ALL
        .iter()
        .map(|kind| kind.file_name())
        .collect();
    for path in json_files(&schemas_dir()) {
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(
            known.contains(&name),
            "{name} is in schemas/ but not embedded"
        );
    }
}

#[test]
fn valid_fixtures_pass() {
    for kind in SchemaKind::ALL {
        let files = json_files(&schemas_dir().join("fixtures/valid").join(kind.name()));
        assert!(
            files.len() >= 3,
            "{}: at least three valid fixtures",
            kind.name()
        );
        for path in files {
            if let Err(errors) = validate(kind, &load(&path)) {
                panic!(
                    "{} should pass the {} schema:\n{}",
                    path.display(),
                    kind.name(),
                    errors.join("\n")
                );
            }
        }
    }
}

fn expectations(dir: &Path) -> BTreeMap<String, String> {
    let text = fs::read_to_string(dir.join("EXPECTED"))
        .unwrap_or_else(|e| panic!("{}/EXPECTED: {e}", dir.display()));
    text.lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (file, path) = line
                .split_once(": ")
                .unwrap_or_else(|| panic!("bad EXPECTED line {line:?}"));
            (file.trim().to_owned(), path.trim().to_owned())
        })
        .collect()
}

#[test]
fn invalid_fixtures_fail_at_the_expected_place() {
    for kind in SchemaKind::ALL {
        let dir = schemas_dir().join("fixtures/invalid").join(kind.name());
        let expected = expectations(&dir);
        let files = json_files(&dir);
        assert!(
            files.len() >= 3,
            "{}: at least three invalid fixtures",
            kind.name()
        );
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            expected.keys().cloned().collect::<Vec<_>>(),
            "{}: EXPECTED lists every fixture",
            dir.display()
        );

        for path in files {
            let name = path.file_name().unwrap().to_str().unwrap();
            let errors = match validate(kind, &load(&path)) {
                Ok(()) => panic!("{} should fail the {} schema", path.display(), kind.name()),
                Err(errors) => errors,
            };
            let at = format!("{}: ", expected[name]);
            assert!(
                errors.iter().any(|error| error.starts_with(&at)),
                "{}: expected an error at {}, got:\n{}",
                path.display(),
                expected[name],
                errors.join("\n")
            );
        }
    }
}

#[test]
fn every_valid_task_fixture_survives_partial_recovery() {
    let dir = schemas_dir().join("fixtures/valid/task");
    let tasks: Vec<Value> = json_files(&dir).iter().map(|p| load(p)).collect();
    let mut document = serde_json::json!({ "tasks": tasks.clone() });
    // Interleave every invalid task fixture: recovery must drop exactly those.
    for invalid in json_files(&schemas_dir().join("fixtures/invalid/task")) {
        document["tasks"]
            .as_array_mut()
            .unwrap()
            .insert(1, load(&invalid));
    }
    assert_eq!(cairn_storage_fs::schema::valid_tasks(&document), tasks);
}

/// A schema-valid file always reads with the typed model (#18), and writing it back keeps its
/// fields: numbers as written where cairn keeps them, unknown fields as they were.
#[test]
fn every_valid_fixture_reads_with_the_typed_model_and_keeps_its_fields() {
    use cairn_domain::project::{Project, Task, TaskDoc};

    fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(path: &Path) -> Value {
        let typed: T = serde_json::from_value(load(path))
            .unwrap_or_else(|e| panic!("{} is schema-valid but unreadable: {e}", path.display()));
        serde_json::to_value(&typed).expect("serialize")
    }
    let mut read = 0;
    for kind in SchemaKind::ALL {
        for path in json_files(&schemas_dir().join("fixtures/valid").join(kind.name())) {
            let written = match kind {
                SchemaKind::Project => round_trip::<Project>(&path),
                SchemaKind::Task => round_trip::<Task>(&path),
                SchemaKind::Tasks | SchemaKind::Checkpoint => round_trip::<TaskDoc>(&path),
                SchemaKind::Velocity => continue,
            };
            if let Err(errors) = validate(kind, &written) {
                panic!("{}: the rewrite fails: {errors:#?}", path.display());
            }
            read += 1;
        }
    }
    assert!(read >= 15, "{read} fixtures read");

    let dir = schemas_dir().join("fixtures/valid/tasks");
    let written = round_trip::<TaskDoc>(&dir.join("other-tool-fractional-minutes.json"));
    let original = load(&dir.join("other-tool-fractional-minutes.json"));
    assert_eq!(written["tasks"][0]["actual_minutes"].to_string(), "12.5");
    assert_eq!(written["tasks"][1]["actual_minutes"].to_string(), "12.0");
    assert_eq!(written["tasks"][2]["actual_minutes"].to_string(), "0");
    assert_eq!(written["tasks"][0]["estimate_minutes"], 60);
    assert_eq!(written["x_sync"], original["x_sync"]);
    assert_eq!(
        written["tasks"][0]["review"],
        original["tasks"][0]["review"]
    );
    assert_eq!(
        written["tasks"][1]["x-owner"],
        original["tasks"][1]["x-owner"]
    );
    assert_eq!(written["tasks"][2]["id"], "T-0000000000000003");
    assert_eq!(
        written["tasks"][0]["created_at"], "2026-11-22T00:20:44.123456789Z",
        "the same instant, in UTC"
    );
}

/// The validators cairn runs are generated at build time by jsonschema's macro; here every fixture,
/// valid and invalid, is also judged by a validator jsonschema compiles at run time from the same
/// file, and the two must report the same errors, word for word.
#[test]
fn the_generated_validators_judge_every_fixture_as_a_compiled_one_does() {
    let registry = jsonschema::Registry::new()
        .extend([SchemaKind::Task, SchemaKind::Tasks].map(|kind| {
            (
                format!(
                    "{}{}",
                    cairn_storage_fs::schema::SCHEMA_BASE_URI,
                    kind.file_name()
                ),
                kind.schema(),
            )
        }))
        .and_then(|builder| builder.prepare())
        .expect("the schemas form a registry");
    let mut judged = 0;
    for kind in SchemaKind::ALL {
        let compiled = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .with_registry(&registry)
            .should_validate_formats(true)
            .offline()
            .build(&kind.schema())
            .expect("compiles");
        for set in ["valid", "invalid"] {
            for path in json_files(&schemas_dir().join("fixtures").join(set).join(kind.name())) {
                let instance = load(&path);
                let expected: Vec<String> = compiled
                    .iter_errors(&instance)
                    .map(|error| {
                        let at = error.instance_path().as_str();
                        let at = if at.is_empty() { "(root)" } else { at };
                        format!("{at}: {error}")
                    })
                    .collect();
                let generated = validate(kind, &instance).err().unwrap_or_default();
                assert_eq!(generated, expected, "{}", path.display());
                assert_eq!(
                    cairn_storage_fs::schema::is_valid(kind, &instance),
                    expected.is_empty(),
                    "{}",
                    path.display()
                );
                judged += 1;
            }
        }
    }
    assert!(judged >= 30, "only {judged} fixtures judged");
}
