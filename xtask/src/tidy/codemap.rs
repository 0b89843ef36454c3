//! Every path ARCHITECTURE.md names exists, and none lies outside the repository.
//!
//! A backticked span is a path when it is made only of `A-Z a-z 0-9 _ . - / *` and contains a `/`
//! or ends in `.rs` (so `model.rs`, `project/`, `crates/cli/src/exit.rs`, `schemas/*.schema.json`;
//! not `FsProjectStore`, `cargo xtask ci` or `~/.claude/tasks/<list>/<id>.json`). Paths under
//! [`RUNTIME`] name files in the user's repository that cairn writes at run time, not files of this
//! one, and are skipped.
//!
//! A path resolves, in order: under the section's base (its `src/`, then the base itself) when the
//! section's heading names a path first (`### \`crates/domain\` …`, `## Tidy (\`xtask/src/tidy/\`)`),
//! then under the repository root, then under any crate's `src/` (so `project/status.rs` in a
//! state-machine heading resolves). Within a list item whose first path is a directory
//! (`- \`project/\` — …`), that item's paths and those of the items nested under it are tried under
//! the directory first. `*` matches within one path component.
//! A span with a `..` component or a leading `/` names something outside the repository.

use std::path::{Path, PathBuf};

const DOCUMENT: &str = "ARCHITECTURE.md";

/// Where cairn keeps state in the repository it works on: `.claude/` (projects, sessions, plans,
/// the hook's files) and `docs/maestro/` (orchestration sessions, where the original tool put them).
const RUNTIME: &[&str] = &[".claude/", "docs/maestro/"];

pub fn check(root: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(root.join(DOCUMENT))
        .map_err(|e| format!("cannot read {DOCUMENT}: {e}"))?;
    let crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .map_err(|e| format!("cannot list crates/: {e}"))?
        .flatten()
        .map(|e| e.path().join("src"))
        .collect();
    let mut out = Vec::new();
    for reference in references(&text) {
        let line = reference.line;
        let path = reference.path;
        if path.starts_with('/') || path.split('/').any(|c| c == "..") {
            out.push(format!(
                "{DOCUMENT}:{line}: `{path}` is outside the repository; name only files in it (describe outside documents in words)"
            ));
            continue;
        }
        let mut bases = Vec::new();
        if let Some(base) = &reference.base {
            bases.push(root.join(base).join("src"));
            bases.push(root.join(base));
        }
        bases.push(root.to_path_buf());
        bases.extend(crates.iter().cloned());
        let mut candidates = vec![path.clone()];
        if !reference.dirs.is_empty() {
            candidates.insert(0, format!("{}/{path}", reference.dirs.join("/")));
        }
        let found = bases
            .iter()
            .any(|base| candidates.iter().any(|c| exists(base, c)));
        if !found {
            let place = reference
                .base
                .as_deref()
                .map(|k| format!(" (looked under {k}, the repository root and crates/*/src)"))
                .unwrap_or_default();
            out.push(format!(
                "{DOCUMENT}:{line}: `{path}` does not exist{place}; fix the path or the code map"
            ));
        }
    }
    Ok(out)
}

#[derive(Debug, PartialEq)]
struct Reference {
    line: usize,
    path: String,
    /// The path the heading of the reference's section names first (`crates/domain`).
    base: Option<String>,
    /// The directories the enclosing list items name first (`project/`), outermost first.
    dirs: Vec<String>,
}

fn references(text: &str) -> Vec<Reference> {
    let mut out = Vec::new();
    let mut base = None;
    // The open list items: their indentation and the directory each names first, if any.
    let mut items: Vec<(usize, Option<String>)> = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let spans = spans(line);
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if line.starts_with('#') {
            base = spans.first().filter(|s| is_path(s)).map(|s| s.to_string());
            items.clear();
        } else if trimmed.is_empty() || (indent == 0 && !trimmed.starts_with("- ")) {
            items.clear();
        } else if let Some(item) = trimmed.strip_prefix("- ") {
            items.retain(|(open, _)| *open < indent);
            let dir = item
                .trim_start()
                .strip_prefix('`')
                .and_then(|rest| rest.split('`').next())
                .filter(|s| is_path(s) && s.ends_with('/'))
                .map(|s| s.trim_end_matches('/').to_owned());
            items.push((indent, dir));
        }
        let dirs: Vec<String> = items.iter().filter_map(|(_, d)| d.clone()).collect();
        for span in spans {
            if is_path(span) && !RUNTIME.iter().any(|r| span.starts_with(r)) {
                out.push(Reference {
                    line: n + 1,
                    path: span.to_owned(),
                    base: base.clone(),
                    dirs: dirs.clone(),
                });
            }
        }
    }
    out
}

/// The inline code spans of a line (text between pairs of backticks).
fn spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

fn is_path(span: &str) -> bool {
    !span.is_empty()
        && span
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/' | '*'))
        && (span.contains('/') || span.ends_with(".rs"))
}

/// Whether `rel` (components separated by `/`, `*` a wildcard within one) names something under
/// `base`.
fn exists(base: &Path, rel: &str) -> bool {
    let parts: Vec<&str> = rel
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    matches_under(base, &parts)
}

fn matches_under(dir: &Path, parts: &[&str]) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return dir.exists();
    };
    if !first.contains('*') {
        return matches_under(&dir.join(first), rest);
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        wildcard(first, &entry.file_name().to_string_lossy()) && matches_under(&entry.path(), rest)
    })
}

/// `*` matches any run of characters; everything else matches itself.
fn wildcard(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            name.starts_with(head)
                && (0..=name.len() - head.len()).any(|skip| {
                    name.is_char_boundary(head.len() + skip)
                        && wildcard(tail, &name[head.len() + skip..])
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Architecture\n\
The spec is `../shared/SPEC.md`.\n\
## Code map\n\
### `crates/domain` (`cairn-domain`)\n\
- `ports.rs` — `Clock`; `project/` holds `model.rs`.\n\
- files in `.claude/cairn/hook-errors.log` and `~/.claude/tasks/<list>/<id>.json`\n\
```\n\
`not/a/reference.rs`\n\
```\n\
### `crates/bench`, `schemas/`\n\
- `schemas/*.schema.json`, `cargo xtask ci`\n\
## Testing\n\
- `crates/domain/tests/*_model.rs`\n";

    #[test]
    fn paths_are_extracted_with_their_section_base() {
        let found: Vec<(usize, String, Option<String>)> = references(DOC)
            .into_iter()
            .map(|r| (r.line, r.path, r.base))
            .collect();
        let domain = Some("crates/domain".to_owned());
        let bench = Some("crates/bench".to_owned());
        assert_eq!(
            found,
            [
                (2, "../shared/SPEC.md".to_owned(), None),
                (4, "crates/domain".to_owned(), domain.clone()),
                (5, "ports.rs".to_owned(), domain.clone()),
                (5, "project/".to_owned(), domain.clone()),
                (5, "model.rs".to_owned(), domain),
                (10, "crates/bench".to_owned(), bench.clone()),
                (10, "schemas/".to_owned(), bench.clone()),
                (11, "schemas/*.schema.json".to_owned(), bench),
                (13, "crates/domain/tests/*_model.rs".to_owned(), None),
            ]
        );
    }

    #[test]
    fn wildcards_match_within_a_component() {
        assert!(wildcard("*.schema.json", "tasks.schema.json"));
        assert!(wildcard("*_model.rs", "plan_model.rs"));
        assert!(!wildcard("*_model.rs", "plan_model.rs.bak"));
        assert!(wildcard("*", "anything"));
    }

    #[test]
    fn a_missing_or_outside_path_is_reported() {
        let dir = std::env::temp_dir().join(format!("xtask-codemap-{}", std::process::id()));
        let src = dir.join("crates/domain/src");
        std::fs::create_dir_all(src.join("project")).unwrap();
        std::fs::write(src.join("ports.rs"), "").unwrap();
        std::fs::write(src.join("project/model.rs"), "").unwrap();
        std::fs::write(
            dir.join(DOCUMENT),
            "See `../x.md`.\n### `crates/domain`\n- `ports.rs`, `project/model.rs`, `gone.rs`\n\
- `project/` — a folder\n  - `model.rs` is in it,\n    and `ports.rs` is not\n- `model.rs` is not here\n",
        )
        .unwrap();
        let found = check(&dir).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            found[0].contains(":1: `../x.md` is outside the repository"),
            "{found:?}"
        );
        assert!(
            found[1].contains(":3: `gone.rs` does not exist"),
            "{found:?}"
        );
        assert!(
            found[2].contains(":7: `model.rs` does not exist"),
            "{found:?}"
        );
    }
}
