//! Every declared dependency is used by the targets that may use it.
//!
//! A `[dependencies]` entry must be named (as its crate name with `-` → `_`, or its rename) in the
//! sources of the package's library or binaries: a path (`serde::Serialize`, `#[tokio::main]`,
//! `serde_json::json!`), a `use` or an `extern crate`. Named only by tests, it belongs in
//! `[dev-dependencies]`. A `[dev-dependencies]` entry must be named somewhere in the package (its
//! tests, benches, examples, or `#[cfg(test)]` code and doctests in `src/`), and must not repeat a
//! `[dependencies]` entry that already gives it with the same features. A
//! `[workspace.dependencies]` entry must be used by some member. Comments do not count.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{code_of, relative};
use crate::util;

/// Declared dependencies a crate does not use yet, because the change that uses them is on its
/// way: (package, dependency, why). The check fails once such a dependency is used, so the entry
/// cannot outlive its reason.
const PENDING: &[(&str, &str, &str)] = &[];

pub fn check(root: &Path, metadata: &Value) -> Result<Vec<String>, String> {
    let packages = metadata["packages"]
        .as_array()
        .ok_or("`cargo metadata` has no package list")?;
    let mut out = Vec::new();
    let mut used_anywhere = BTreeSet::new();
    for package in packages {
        let manifest = PathBuf::from(package["manifest_path"].as_str().unwrap_or("?"));
        let manifest = relative(root, &manifest);
        let (main_text, test_text) = sources(package);
        let package_name = package["name"].as_str().unwrap_or("?");
        let deps = package["dependencies"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        for dep in deps {
            let name = dep["name"].as_str().unwrap_or("?");
            used_anywhere.insert(name.to_owned());
            let ident = dep["rename"].as_str().unwrap_or(name).replace('-', "_");
            let in_main = mentions(&main_text, &ident);
            let in_tests = mentions(&test_text, &ident);
            if PENDING
                .iter()
                .any(|(p, d, _)| *p == package_name && *d == name)
            {
                if in_main || in_tests {
                    out.push(format!(
                        "{manifest}: `{name}` is used now; remove its PENDING entry in xtask/src/tidy/unused.rs"
                    ));
                }
                continue;
            }
            match dep["kind"].as_str() {
                None if !in_main && in_tests => out.push(format!(
                    "{manifest}: `{name}` is used only by tests; move it to [dev-dependencies]"
                )),
                None if !in_main => out.push(format!(
                    "{manifest}: `{name}` is never used; remove it from [dependencies]"
                )),
                Some("dev") if !in_main && !in_tests => out.push(format!(
                    "{manifest}: `{name}` is never used; remove it from [dev-dependencies]"
                )),
                Some("dev") if repeats_normal(dep, deps) => out.push(format!(
                    "{manifest}: `{name}` is already in [dependencies] with these features; remove it from [dev-dependencies]"
                )),
                _ => {}
            }
        }
    }
    let workspace_manifest = std::fs::read_to_string(root.join("Cargo.toml"))
        .map_err(|e| format!("cannot read Cargo.toml: {e}"))?;
    for name in workspace_dependencies(&workspace_manifest) {
        if !used_anywhere.contains(&name) {
            out.push(format!(
                "Cargo.toml: [workspace.dependencies] `{name}` is used by no member; remove it"
            ));
        }
    }
    Ok(out)
}

/// The code of the package's library and binaries, and of its other targets, each concatenated.
fn sources(package: &Value) -> (String, String) {
    let mut main_dirs = BTreeSet::new();
    let mut test_dirs = BTreeSet::new();
    for target in package["targets"].as_array().into_iter().flatten() {
        let Some(src) = target["src_path"].as_str().map(Path::new) else {
            continue;
        };
        let kinds: Vec<&str> = target["kind"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if kinds.contains(&"custom-build") {
            // A build script is one file at the crate root; its directory is the whole crate.
            main_dirs.insert(src.to_path_buf());
            continue;
        }
        let dir = src.parent().unwrap_or(src).to_path_buf();
        if kinds
            .iter()
            .any(|k| matches!(*k, "test" | "bench" | "example"))
        {
            test_dirs.insert(dir);
        } else {
            main_dirs.insert(dir);
        }
    }
    let read = |dirs: &BTreeSet<PathBuf>| {
        let mut text = String::new();
        for dir in dirs {
            let files = if dir.is_file() {
                vec![dir.clone()]
            } else {
                util::rust_files(dir)
            };
            for file in files {
                for line in std::fs::read_to_string(file).unwrap_or_default().lines() {
                    text.push_str(code_of(line));
                    text.push('\n');
                }
            }
        }
        text
    };
    (read(&main_dirs), read(&test_dirs))
}

/// Whether `code` names crate `ident`: `ident::…`, `use ident` or `extern crate ident`.
fn mentions(code: &str, ident: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices(ident).any(|(at, _)| {
        let before = &code[..at];
        let after = &code[at + ident.len()..];
        if before.ends_with(is_ident) || after.starts_with(is_ident) {
            return false;
        }
        // `a::serde::x` is a module path, not the crate; a leading `::serde::x` is the crate.
        let before_path = before.strip_suffix("::");
        if before_path.is_some_and(|b| b.ends_with(is_ident)) {
            return false;
        }
        let ends_with_word = |word: &str| {
            before
                .trim_end()
                .strip_suffix(word)
                .is_some_and(|b| !b.ends_with(is_ident))
        };
        after.starts_with("::") || ends_with_word("use") || ends_with_word("extern crate")
    })
}

/// Whether dev-dependency `dev` adds nothing to a non-optional `[dependencies]` entry.
fn repeats_normal(dev: &Value, deps: &[Value]) -> bool {
    deps.iter().any(|normal| {
        normal["kind"].is_null()
            && normal["name"] == dev["name"]
            && normal["rename"] == dev["rename"]
            && normal["optional"] == false
            && (normal["uses_default_features"] == true || dev["uses_default_features"] == false)
            && dev["features"]
                .as_array()
                .into_iter()
                .flatten()
                .all(|f| normal["features"].as_array().is_some_and(|n| n.contains(f)))
    })
}

/// The names declared in `[workspace.dependencies]` of a workspace manifest.
fn workspace_dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[workspace.dependencies]";
        } else if inside
            && !line.starts_with('#')
            && let Some((name, _)) = line.split_once('=')
        {
            out.push(name.trim().trim_matches('"').to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_crate_is_mentioned_by_paths_uses_and_macros_only() {
        for code in [
            "use serde::Serialize;",
            "#[derive(serde::Deserialize)]",
            "let v = serde_json::json!({});",
            "#[tokio::main]",
            "use thiserror;",
            "let x = ::uuid::Uuid::nil();",
            "extern crate camino;",
        ] {
            let ident = code
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .find(|w| {
                    [
                        "serde",
                        "serde_json",
                        "tokio",
                        "thiserror",
                        "uuid",
                        "camino",
                    ]
                    .contains(w)
                })
                .unwrap();
            assert!(mentions(code, ident), "{code}");
        }
        for (code, ident) in [
            ("use serde_json::Value;", "serde"),
            ("let uuid = 3;", "uuid"),
            ("crate::camino::Utf8Path", "camino"),
            ("my_tokio::spawn()", "tokio"),
            ("\"thiserror\"", "thiserror"),
            ("reuse thiserror;", "thiserror"),
        ] {
            assert!(!mentions(code, ident), "{code} must not count as {ident}");
        }
    }

    #[test]
    fn a_dev_dependency_repeating_a_dependency_is_found() {
        let dep = |kind: Value, optional: bool, features: Value| {
            json!({"name": "tokio", "rename": null, "kind": kind, "optional": optional,
                   "uses_default_features": true, "features": features})
        };
        let dev = dep(json!("dev"), false, json!([]));
        assert!(repeats_normal(
            &dev,
            &[dep(Value::Null, false, json!(["rt"])), dev.clone()]
        ));
        // An optional dependency is not there for the tests unless its feature is on.
        assert!(!repeats_normal(
            &dev,
            &[dep(Value::Null, true, json!([])), dev.clone()]
        ));
        let dev_more = dep(json!("dev"), false, json!(["macros"]));
        assert!(!repeats_normal(
            &dev_more,
            &[dep(Value::Null, false, json!([]))]
        ));
    }

    #[test]
    fn workspace_dependencies_are_read_from_their_section_only() {
        let manifest = "[workspace]\nmembers = [\"a\"]\n[workspace.dependencies]\nserde = \"1\"\n# x = 1\ncamino = { version = \"1\" }\n[profile.release]\nlto = \"thin\"\n";
        assert_eq!(workspace_dependencies(manifest), ["serde", "camino"]);
    }
}
