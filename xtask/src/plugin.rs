//! `cargo xtask plugin [--out DIR] [--no-build] [--bin-dir DIR]`: assembles an installable Claude Code plugin.
//!
//! The plugin's text files live in `plugin/` at the workspace root, so they are reviewed like
//! code and checked by `crates/hooks/tests/plugin.rs` (every JSON file's shape, and hooks.json
//! equal to what `cairn setup claude` writes). This job builds the release binaries, copies the
//! templates to the output directory (default `plugin/cairn` in the target directory) and puts the binaries in its
//! `bin/`. `--no-build` skips the build and takes whatever release binaries already exist;
//! `--bin-dir` takes the binaries from another directory (the Claude Code suite in
//! `tests/claude` assembles a plugin from the debug binaries it has just built).

use std::fs;
use std::path::{Path, PathBuf};

use crate::util;

const BINARIES: [&str; 2] = ["cairn", "cairn-hook"];

pub fn run(args: &[String]) -> Result<(), String> {
    let mut out = None;
    let mut build = true;
    let mut bin_dir = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = Some(PathBuf::from(args.next().ok_or("--out needs a directory")?)),
            "--no-build" => build = false,
            "--bin-dir" => {
                bin_dir = Some(PathBuf::from(
                    args.next().ok_or("--bin-dir needs a directory")?,
                ));
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}`; usage: cargo xtask plugin [--out DIR] [--no-build] [--bin-dir DIR]"
                ));
            }
        }
    }
    let root = util::root();
    let target = util::target_dir()?;
    let out = out.unwrap_or_else(|| target.join("plugin").join("cairn"));
    if build && bin_dir.is_none() {
        util::cargo(&["build", "--release", "-p", "cairn-cli", "-p", "cairn-hooks"])?;
    }
    let given = bin_dir.is_some();
    let release = bin_dir.unwrap_or_else(|| target.join("release"));
    let missing = assemble(&root.join("plugin"), &out, &release)?;
    for name in &missing {
        eprintln!(
            "xtask: warning: no release binary `{name}` in {}; the plugin will use `{name}` from PATH",
            release.display()
        );
    }
    if given && !missing.is_empty() {
        return Err(format!(
            "{} lacks {}",
            release.display(),
            missing.join(", ")
        ));
    }
    if build && !missing.is_empty() {
        return Err("the release build did not produce every binary".to_owned());
    }
    eprintln!("plugin assembled in {}", out.display());
    Ok(())
}

/// Copies `template` to `out` (replacing an earlier plugin build there) and the binaries found
/// in `bin_dir` to `out/bin`. Returns the binaries that were not found.
pub fn assemble(template: &Path, out: &Path, bin_dir: &Path) -> Result<Vec<String>, String> {
    if out.exists() {
        let ours = out.join(".claude-plugin").join("plugin.json").is_file();
        let empty = fs::read_dir(out)
            .map_err(|e| format!("read {}: {e}", out.display()))?
            .next()
            .is_none();
        if !ours && !empty {
            return Err(format!(
                "{} exists and is not a plugin directory; refusing to replace it",
                out.display()
            ));
        }
        fs::remove_dir_all(out).map_err(|e| format!("remove {}: {e}", out.display()))?;
    }
    copy_tree(template, out)?;
    for json in json_files(out)? {
        let text =
            fs::read_to_string(&json).map_err(|e| format!("read {}: {e}", json.display()))?;
        json_balanced(&text).map_err(|e| format!("{} is not valid JSON: {e}", json.display()))?;
    }
    let bin = out.join("bin");
    fs::create_dir_all(&bin).map_err(|e| format!("create {}: {e}", bin.display()))?;
    let mut missing = Vec::new();
    for name in BINARIES {
        let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
        let from = bin_dir.join(&file);
        if !from.is_file() {
            missing.push(name.to_owned());
            continue;
        }
        let to = bin.join(&file);
        fs::copy(&from, &to).map_err(|e| format!("copy {}: {e}", from.display()))?;
        make_executable(&to)?;
    }
    Ok(missing)
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|e| format!("create {}: {e}", to.display()))?;
    for entry in fs::read_dir(from).map_err(|e| format!("read {}: {e}", from.display()))? {
        let entry = entry.map_err(|e| format!("read {}: {e}", from.display()))?;
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)
                .map_err(|e| format!("copy {}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}

fn json_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| format!("read {}: {e}", dir.display()))? {
        let path = entry
            .map_err(|e| format!("read {}: {e}", dir.display()))?
            .path();
        if path.is_dir() {
            out.extend(json_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
    Ok(out)
}

/// A structural JSON check without a JSON dependency: xtask stays dependency-free, and the real
/// shape checks live in `crates/hooks/tests/plugin.rs`. This only catches a truncated or
/// unbalanced file before it ships.
fn json_balanced(text: &str) -> Result<(), String> {
    let mut depth: Vec<char> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth.push(c),
            '}' if depth.pop() != Some('{') => return Err("unbalanced `}`".into()),
            ']' if depth.pop() != Some('[') => return Err("unbalanced `]`".into()),
            _ => {}
        }
    }
    if in_string || !depth.is_empty() {
        return Err("unterminated".into());
    }
    Ok(())
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("chmod {}: {e}", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<(), String> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cairn-xtask-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn assembles_the_templates_and_the_binaries() {
        let dir = scratch("assemble");
        let bins = dir.join("release");
        fs::create_dir_all(&bins).unwrap();
        let hook = format!("cairn-hook{}", std::env::consts::EXE_SUFFIX);
        fs::write(bins.join(&hook), b"binary").unwrap();
        let out = dir.join("out").join("cairn");
        let missing = assemble(&util::root().join("plugin"), &out, &bins).unwrap();
        assert_eq!(missing, ["cairn"]);
        for file in [
            ".claude-plugin/plugin.json",
            "hooks/hooks.json",
            ".mcp.json",
            "skills/cairn/SKILL.md",
            "commands/next.md",
        ] {
            assert!(out.join(file).is_file(), "{file}");
        }
        assert_eq!(fs::read(out.join("bin").join(&hook)).unwrap(), b"binary");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(out.join("bin").join(&hook))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o111, 0o111);
        }
        // A second run replaces the first build.
        fs::write(out.join("stale.txt"), "old").unwrap();
        assemble(&util::root().join("plugin"), &out, &bins).unwrap();
        assert!(!out.join("stale.txt").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn refuses_to_replace_a_directory_that_is_not_a_plugin() {
        let dir = scratch("refuse");
        fs::write(dir.join("precious.txt"), "keep").unwrap();
        let err = assemble(&util::root().join("plugin"), &dir, &dir).unwrap_err();
        assert!(err.contains("refusing"), "{err}");
        assert!(dir.join("precious.txt").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_structural_check_catches_truncation() {
        assert!(json_balanced(r#"{"a": ["}", 1]}"#).is_ok());
        assert!(json_balanced(r#"{"a": [1}"#).is_err());
        assert!(json_balanced(r#"{"a": "x"#).is_err());
    }
}
