//! The adapters (`cairn_storage_fs`, `cairn_storage_pg`) are named only in composition roots.
//!
//! The binaries reach the store through the domain's services and ports; only the place that
//! builds the adapters names the filesystem adapter. A composition root is a binary's `main.rs`
//! or its `wiring.rs` (the one module that builds adapters), the adapter crate itself, the
//! benchmark harness, tests and xtask.

use std::path::Path;

use super::{code_of, relative};
use crate::util;

const NEEDLES: &[&str] = &["cairn_storage_fs", "cairn_storage_pg"];

/// Files outside the composition roots that may still name the adapter, each with its reason.
const EXCEPTIONS: &[(&str, &str)] = &[];

pub fn check(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    // An exception outlives its reason silently unless it is checked too.
    for (rel, _) in EXCEPTIONS {
        let text = std::fs::read_to_string(root.join(rel)).unwrap_or_default();
        if !text.lines().any(|line| names_adapter(line).is_some()) {
            out.push(format!(
                "{rel} no longer uses an adapter; remove its entry from EXCEPTIONS in xtask/src/tidy/confine.rs"
            ));
        }
    }
    for dir in ["crates", "tests", "xtask"] {
        for file in util::rust_files(&root.join(dir)) {
            let rel = relative(root, &file);
            if allowed(&rel) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&file) else {
                out.push(format!("{rel}: cannot be read"));
                continue;
            };
            out.extend(offences(&rel, &text));
        }
    }
    out
}

fn allowed(rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    match parts.as_slice() {
        ["crates", "storage-fs" | "storage-pg" | "bench", ..] | ["tests" | "xtask", ..] => true,
        ["crates", _, "tests", ..] => true,
        ["crates", _, "src", "main.rs" | "wiring.rs"] => true,
        _ => EXCEPTIONS.iter().any(|(path, _)| *path == rel),
    }
}

fn names_adapter(line: &str) -> Option<&'static str> {
    let code = code_of(line);
    NEEDLES.iter().copied().find(|needle| code.contains(needle))
}

fn offences(rel: &str, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter_map(|(n, line)| names_adapter(line).map(|needle| (n, needle)))
        .map(|(n, needle)| {
            format!(
                "{rel}:{}: uses `{needle}` outside a composition root; build the adapter in the binary's src/wiring.rs (or main.rs) and pass what it built in",
                n + 1
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composition_roots_may_use_the_adapter() {
        for rel in [
            "crates/cli/src/main.rs",
            "crates/cli/src/wiring.rs",
            "crates/hooks/src/wiring.rs",
            "crates/storage-fs/src/atomic.rs",
            "crates/bench/src/fixture.rs",
            "crates/hooks/tests/plugin.rs",
            "tests/cli/main.rs",
            "xtask/src/main.rs",
        ] {
            assert!(allowed(rel), "{rel}");
        }
    }

    #[test]
    fn an_exception_that_is_no_longer_needed_is_reported() {
        let dir = std::env::temp_dir().join(format!("xtask-confine-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("crates/cli/src")).unwrap();
        std::fs::write(
            dir.join("crates/cli/src/lib.rs"),
            "use cairn_storage_fs::x;\n",
        )
        .unwrap();
        let found = check(&dir);
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(found.len(), EXCEPTIONS.len() + 1, "{found:?}");
        assert!(
            found
                .iter()
                .all(|f| f.contains("EXCEPTIONS") || f.starts_with("crates/cli/src/lib.rs:1:")),
            "{found:?}"
        );
    }

    #[test]
    fn other_modules_may_not() {
        for rel in [
            "crates/cli/src/commands/mod.rs",
            "crates/cli/src/clock.rs",
            "crates/domain/src/lib.rs",
            "crates/render/src/lib.rs",
            "crates/cli/src/wiring/extra.rs",
        ] {
            assert!(!allowed(rel), "{rel}");
        }
        let found = offences(
            "crates/cli/src/clock.rs",
            "// cairn_storage_fs in a comment is fine\nuse cairn_storage_fs::SystemClock;\n",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("crates/cli/src/clock.rs:2:"),
            "{found:?}"
        );
    }
}
