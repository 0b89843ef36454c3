//! `cargo xtask tidy`: checks that keep the code and its documents honest, run by `cargo xtask ci`
//! before the tests. Each check prints every offence with the file it is in and what to do; the
//! job fails if any check found one.
//!
//! | check | what it guards |
//! |---|---|
//! | [`deps`] | the hexagon's dependency directions, read from `cargo metadata` |
//! | [`confine`] | `cairn_storage_fs` is used only where a binary builds its adapters |
//! | [`codemap`] | every path ARCHITECTURE.md names exists, and none is outside the repository |
//! | [`exit_codes`] | README.md's exit-code table equals the codes `cairn` really returns |
//! | [`unused`] | every declared dependency is used by the targets that may use it |
//!
//! Then `cargo doc --no-deps --workspace --all-features` with warnings denied. (`--locked` needs no check: every
//! cargo run goes through [`crate::util::cargo`], which adds it.)

mod codemap;
mod confine;
mod deps;
mod exit_codes;
mod unused;

use std::path::Path;

use crate::util;

pub fn run(args: &[String]) -> Result<(), String> {
    let with_doc = match args {
        [] => true,
        [flag] if flag == "--no-doc" => false,
        _ => return Err("usage: cargo xtask tidy [--no-doc]".to_owned()),
    };
    let root = util::root();
    let metadata = util::metadata()?;
    let checks: [(&str, Vec<String>); 5] = [
        ("dependency directions", deps::check(&metadata)?),
        ("cairn_storage_fs confinement", confine::check(&root)),
        ("ARCHITECTURE.md code map", codemap::check(&root)?),
        ("README.md exit codes", exit_codes::check(&root)?),
        ("unused dependencies", unused::check(&root, &metadata)?),
    ];
    let mut failed = 0;
    for (name, offences) in &checks {
        if offences.is_empty() {
            eprintln!("tidy: {name}: ok");
        } else {
            failed += 1;
            eprintln!("tidy: {name}: {} problem(s)", offences.len());
            for offence in offences {
                eprintln!("  - {offence}");
            }
        }
    }
    if failed > 0 {
        return Err(format!("tidy: {failed} check(s) failed (see above)"));
    }
    if with_doc {
        util::cargo_with_env(
            // Every feature: the test-only `testkit` items are documented and linked to as well.
            &["doc", "--no-deps", "--workspace", "--all-features"],
            &[("RUSTDOCFLAGS", "-D warnings")],
        )
        .map_err(|e| format!("{e}: fix the rustdoc warnings it printed (broken intra-doc links, unclosed HTML tags, …)"))?;
    }
    Ok(())
}

/// `path` relative to the repository root, with `/` separators, for messages and rules.
pub fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The code of a source line: the line without a `//` comment (doc comments included). Good
/// enough for these checks: a `//` inside a string literal only hides the rest of that line.
pub fn code_of(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}
