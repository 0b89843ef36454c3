//! `$CLAUDE_PROJECT_DIR` is the directory Claude Code was started in, which may be below the
//! repository root (seen with Claude Code 2.1.330 in `tests/claude`).

use super::*;

#[test]
fn a_claude_project_dir_below_the_root_finds_the_store_at_the_git_work_tree() {
    let repo = Repo::with_project();
    let sub = repo.root.join("src").join("deep");
    std::fs::create_dir_all(&sub).unwrap();
    let mut cmd = repo.command();
    cmd.env("CLAUDE_PROJECT_DIR", &sub).current_dir(&sub);
    let output = run_with(cmd, &fixture("session_start_startup"));
    assert_well_behaved(&output, "project dir below the root");
    assert!(
        stdout(&output).contains("cairn project `demo`"),
        "{}",
        stdout(&output)
    );
    assert!(!sub.join(".claude").exists());
}

#[test]
fn a_store_at_claude_project_dir_itself_is_still_the_one_used() {
    // A store in a package directory below the git root, Claude Code started there.
    let repo = Repo::bare();
    let package = repo.root.join("packages").join("api");
    std::fs::create_dir_all(&package).unwrap();
    let nested = Repo {
        _dir: tempfile::tempdir().unwrap(),
        root: package.clone(),
    };
    nested.add_project("demo", true);
    let mut cmd = nested.command();
    cmd.current_dir(&package);
    let output = run_with(cmd, &fixture("session_start_startup"));
    assert_well_behaved(&output, "store at the project dir");
    assert!(
        stdout(&output).contains("cairn project `demo`"),
        "{}",
        stdout(&output)
    );
    assert!(!repo.root.join(".claude").exists());
}
