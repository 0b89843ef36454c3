//! Which directory is the repository root, i.e. where `.claude/projects` lives.
//!
//! In order: the explicit `--root` value; else `$CLAUDE_PROJECT_DIR` (Claude Code sets it for
//! hooks, whose working directory may be anywhere in the repo); else the nearest enclosing git work
//! tree; else the current directory. A relative `--root` or `$CLAUDE_PROJECT_DIR` is taken
//! relative to the current directory; an empty variable counts as unset.
//!
//! The git work tree is found by walking up from the current directory looking for a `.git`
//! directory, or a `.git` file starting with `gitdir:` (linked worktrees and submodules). git is
//! not spawned: hooks run on every tool call and must stay fast, and git may not be installed.
//!
//! [`resolve_root_from`] takes the environment and the current directory as arguments so that the
//! rules are testable; [`resolve_root`] is the thin wrapper that reads the real process state.
//! Paths are not canonicalised (symlinks are the user's business) and need not exist yet.

use cairn_domain::StoreError;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The environment variable Claude Code sets to the project directory.
pub const CLAUDE_PROJECT_DIR: &str = "CLAUDE_PROJECT_DIR";

/// Which rule picked the root; shown by diagnostics so a user can see why cairn looked where it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootSource {
    /// `--root` on the command line.
    Explicit,
    /// `$CLAUDE_PROJECT_DIR`.
    ClaudeProjectDir,
    /// The enclosing git work tree.
    GitWorkTree,
    /// Nothing else applied.
    CurrentDir,
}

/// The resolved repository root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoRoot {
    pub path: PathBuf,
    pub source: RootSource,
}

/// Resolves the root from explicit inputs; reads the filesystem only to look for `.git`.
///
/// `cwd` should be absolute (as [`std::env::current_dir`] returns it).
pub fn resolve_root_from(
    explicit: Option<&Path>,
    claude_project_dir: Option<&OsStr>,
    cwd: &Path,
) -> RepoRoot {
    if let Some(path) = explicit.filter(|path| !path.as_os_str().is_empty()) {
        return RepoRoot {
            path: cwd.join(path),
            source: RootSource::Explicit,
        };
    }
    if let Some(dir) = claude_project_dir.filter(|dir| !dir.is_empty()) {
        return RepoRoot {
            path: cwd.join(dir),
            source: RootSource::ClaudeProjectDir,
        };
    }
    match find_git_work_tree(cwd) {
        Some(path) => RepoRoot {
            path,
            source: RootSource::GitWorkTree,
        },
        None => RepoRoot {
            path: cwd.to_path_buf(),
            source: RootSource::CurrentDir,
        },
    }
}

/// Resolves the root from `explicit` (the `--root` value), the process environment and the
/// current directory.
///
/// Errors: [`StoreError::Io`] if the current directory cannot be determined (it was deleted, say)
/// and it is needed.
pub fn resolve_root(explicit: Option<&Path>) -> Result<RepoRoot, StoreError> {
    let env = std::env::var_os(CLAUDE_PROJECT_DIR);
    let cwd = std::env::current_dir().map_err(|source| StoreError::Io {
        op: "read current directory",
        path: ".".to_owned(),
        source,
    })?;
    Ok(resolve_root_from(explicit, env.as_deref(), &cwd))
}

/// The nearest ancestor of `start` (itself included) that holds a git marker.
pub fn find_git_work_tree(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| has_git_marker(dir))
        .map(Path::to_path_buf)
}

fn has_git_marker(dir: &Path) -> bool {
    let marker = dir.join(".git");
    match std::fs::metadata(&marker) {
        Ok(metadata) if metadata.is_dir() => true,
        Ok(metadata) if metadata.is_file() => {
            // Read only the start: a stray huge file named .git must not stall a hook.
            use std::io::Read;
            let mut head = [0u8; 7];
            std::fs::File::open(&marker)
                .and_then(|mut file| file.read_exact(&mut head))
                .is_ok()
                && &head == b"gitdir:"
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    struct Tree {
        _dir: tempfile::TempDir,
        repo: PathBuf,
        deep: PathBuf,
    }

    /// `<tmp>/repo/.git/` with a nested `<tmp>/repo/a/b/c` working directory.
    fn tree() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let deep = repo.join("a").join("b").join("c");
        fs::create_dir_all(&deep).unwrap();
        fs::create_dir(repo.join(".git")).unwrap();
        Tree {
            _dir: dir,
            repo,
            deep,
        }
    }

    #[test]
    fn explicit_root_wins() {
        let t = tree();
        let root = resolve_root_from(
            Some(Path::new("/elsewhere")),
            Some(OsStr::new("/env")),
            &t.deep,
        );
        assert_eq!(
            root,
            RepoRoot {
                path: PathBuf::from("/elsewhere"),
                source: RootSource::Explicit
            }
        );
    }

    #[test]
    fn relative_values_are_taken_from_the_current_directory() {
        let t = tree();
        let root = resolve_root_from(Some(Path::new("../x")), None, &t.deep);
        assert_eq!(root.path, t.deep.join("../x"));
        let root = resolve_root_from(None, Some(OsStr::new("sub")), &t.deep);
        assert_eq!(
            root,
            RepoRoot {
                path: t.deep.join("sub"),
                source: RootSource::ClaudeProjectDir
            }
        );
    }

    #[test]
    fn claude_project_dir_beats_git() {
        let t = tree();
        let root = resolve_root_from(None, Some(OsStr::new("/claude/project")), &t.deep);
        assert_eq!(
            root,
            RepoRoot {
                path: PathBuf::from("/claude/project"),
                source: RootSource::ClaudeProjectDir
            }
        );
    }

    #[test]
    fn empty_values_count_as_unset() {
        let t = tree();
        let root = resolve_root_from(Some(Path::new("")), Some(OsStr::new("")), &t.deep);
        assert_eq!(
            root,
            RepoRoot {
                path: t.repo.clone(),
                source: RootSource::GitWorkTree
            }
        );
    }

    #[test]
    fn the_nearest_git_work_tree_is_found_from_a_subdirectory() {
        let t = tree();
        assert_eq!(
            resolve_root_from(None, None, &t.deep),
            RepoRoot {
                path: t.repo.clone(),
                source: RootSource::GitWorkTree
            }
        );
        assert_eq!(resolve_root_from(None, None, &t.repo).path, t.repo);

        // A nested checkout (a linked worktree or submodule uses a .git *file*) is nearer.
        let nested = t.repo.join("a");
        fs::write(nested.join(".git"), "gitdir: /somewhere/.git/worktrees/a\n").unwrap();
        assert_eq!(resolve_root_from(None, None, &t.deep).path, nested);
    }

    #[test]
    fn a_git_file_that_is_not_a_gitdir_pointer_is_not_a_work_tree() {
        let t = tree();
        fs::write(t.repo.join("a").join(".git"), "just a file").unwrap();
        assert_eq!(resolve_root_from(None, None, &t.deep).path, t.repo);
    }

    #[test]
    fn without_git_the_current_directory_is_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("plain");
        fs::create_dir(&cwd).unwrap();
        // Guard against running inside a checkout that encloses the temp dir: then the walk-up
        // legitimately finds it, and this case cannot be observed here.
        let enclosing = find_git_work_tree(dir.path());
        let expected = match enclosing {
            Some(path) => RepoRoot {
                path,
                source: RootSource::GitWorkTree,
            },
            None => RepoRoot {
                path: cwd.clone(),
                source: RootSource::CurrentDir,
            },
        };
        assert_eq!(resolve_root_from(None, None, &cwd), expected);
    }

    #[test]
    fn the_wrapper_reads_the_real_process_state() {
        let root = resolve_root(Some(Path::new("/explicit"))).unwrap();
        assert_eq!(
            root,
            RepoRoot {
                path: PathBuf::from("/explicit"),
                source: RootSource::Explicit
            }
        );
    }
}
