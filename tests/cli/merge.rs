//! `cairn merge-driver` through real `git merge` on scratch repositories.

use std::process::Command;

use crate::support::Repo;

/// A git repository holding project `web`, with cairn registered as the merge driver of its files
/// by `cairn setup git`, as a user does.
fn git_repo() -> Repo {
    let repo = Repo::with_project();
    git(&repo, &["init", "-q", "-b", "main"]);
    for (key, value) in [("user.email", "t@example.com"), ("user.name", "t")] {
        git(&repo, &["config", key, value]);
    }
    repo.ok(&["setup", "git"]);
    repo
}

#[test]
fn setup_git_registers_the_driver_and_remove_takes_out_only_its_lines() {
    let repo = Repo::with_project();
    git(&repo, &["init", "-q", "-b", "main"]);
    let attributes = repo.root().join(".gitattributes");
    let ignore = repo.root().join(".gitignore");
    std::fs::write(&attributes, "*.png binary\n").unwrap();

    let first = repo.json(&["setup", "git"]);
    assert_eq!(first["gitattributes"]["changed"], true);
    assert_eq!(first["gitignore"]["changed"], true);
    assert_eq!(first["config"]["changed"], true);
    let text = std::fs::read_to_string(&attributes).unwrap();
    assert!(text.starts_with("*.png binary\n"), "{text}");
    assert!(
        text.contains(".claude/projects/*/tasks.json merge=cairn\n"),
        "{text}"
    );
    let ignored = std::fs::read_to_string(&ignore).unwrap();
    assert!(
        ignored.contains(".claude/projects/*/.tasks.json.validated\n"),
        "{ignored}"
    );
    let (set, driver) = git(&repo, &["config", "--get", "merge.cairn.driver"]);
    assert!(
        set && driver.trim().ends_with("merge-driver %O %A %B %P"),
        "{driver}"
    );
    // git sees the attribute on a project file.
    let (_, attr) = git(
        &repo,
        &["check-attr", "merge", ".claude/projects/web/tasks.json"],
    );
    assert!(attr.contains("merge: cairn"), "{attr}");

    let again = repo.json(&["setup", "git"]);
    for part in ["gitattributes", "gitignore", "config"] {
        assert_eq!(again[part]["changed"], false, "{part} is already set up");
    }

    repo.ok(&["setup", "git", "--remove"]);
    assert_eq!(
        std::fs::read_to_string(&attributes).unwrap(),
        "*.png binary\n"
    );
    assert_eq!(std::fs::read_to_string(&ignore).unwrap(), "");
    let (set, _) = git(&repo, &["config", "--get-regexp", "^merge\\.cairn\\."]);
    assert!(!set, "the driver is gone from the clone's config");
}

/// A clone whose .gitattributes asks for the driver but that lacks it — a fresh clone that has
/// not run `cairn setup git`, or lines an older cairn did not add — is told so by the doctor.
#[test]
fn the_doctor_tells_a_clone_set_up_short_of_the_driver() {
    let repo = git_repo();
    repo.ok(&["doctor"]);
    assert_eq!(repo.json(&["doctor"])["git"], serde_json::json!([]));

    let attributes = repo.root().join(".gitattributes");
    let text = std::fs::read_to_string(&attributes).unwrap();
    let older: String = text
        .lines()
        .filter(|l| !l.contains("velocity.json") && !l.contains("checkpoint-"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&attributes, older).unwrap();
    git(&repo, &["config", "--remove-section", "merge.cairn"]);
    let run = repo.run(&["doctor"]);
    assert_eq!(run.code, crate::support::code::UNHEALTHY, "{run:?}");
    assert!(run.stdout.contains("git_setup"), "{}", run.stdout);
    assert!(
        run.stdout.contains("velocity.json merge=cairn"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("does not define the cairn merge driver"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("cairn setup git"), "{}", run.stdout);
    let json = repo.json_exiting(&["doctor"], crate::support::code::UNHEALTHY);
    assert_eq!(json["git"].as_array().map(Vec::len), Some(2), "{json}");

    repo.ok(&["setup", "git"]);
    repo.ok(&["doctor"]);
}

/// `cairn init` in a git repository that has not registered the driver says to; once it has, or
/// outside git, it does not.
#[test]
fn init_in_a_repository_without_the_driver_points_at_setup_git() {
    let repo = Repo::new();
    git(&repo, &["init", "-q", "-b", "main"]);
    let first = repo.ok(crate::support::INIT_WEB);
    assert!(
        first.contains("`cairn setup git` once per clone"),
        "{first}"
    );
    repo.ok(&["setup", "git"]);
    let second = repo.ok(&[
        "init",
        "--id",
        "api",
        "--name",
        "Api",
        "--goal",
        "Ship the api too",
    ]);
    assert!(!second.contains("cairn setup git"), "{second}");

    let outside = Repo::new();
    let run = outside.ok(crate::support::INIT_WEB);
    assert!(!run.contains("cairn setup git"), "{run}");
}

#[test]
fn setup_git_outside_a_repository_is_refused_and_writes_nothing() {
    let repo = Repo::with_project();
    let run = repo.run(&["setup", "git"]);
    assert_eq!(run.code, crate::support::code::USAGE, "{}", run.stderr);
    assert!(
        run.stderr.contains("not in a git work tree"),
        "{}",
        run.stderr
    );
    assert!(!repo.root().join(".gitattributes").exists());
    assert!(!repo.root().join(".gitignore").exists());
}

fn git(repo: &Repo, args: &[&str]) -> (bool, String) {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo.root())
        .env_remove("GIT_DIR")
        .output()
        .expect("run git");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn commit(repo: &Repo, message: &str) {
    git(repo, &["add", "-A"]);
    // A script whose every edit is refused (completing a PENDING task) changes nothing; the
    // branch still needs its commit for the merge to be the one under test.
    let (ok, text) = git(repo, &["commit", "-q", "--allow-empty", "-m", message]);
    assert!(ok, "{text}");
}

/// Commits the base, runs `theirs` on branch `other` and `ours` on main, then merges `other`.
fn merge(repo: &Repo, theirs: impl FnOnce(&Repo), ours: impl FnOnce(&Repo)) -> (bool, String) {
    commit(repo, "base");
    git(repo, &["checkout", "-q", "-b", "other"]);
    theirs(repo);
    commit(repo, "theirs");
    git(repo, &["checkout", "-q", "main"]);
    ours(repo);
    commit(repo, "ours");
    git(repo, &["merge", "other", "-m", "merge"])
}

fn at(time: &str) -> [(&'static str, String); 1] {
    [("CAIRN_NOW", format!("2026-11-22T{time}Z"))]
}

fn ok_at(repo: &Repo, time: &str, args: &[&str]) -> String {
    let env = at(time);
    repo.ok_env(args, &[(env[0].0, env[0].1.as_str())])
}

/// Two tasks, theirs started on branch `other` and ours on main, merged: each branch at the same
/// commit number.
fn each_side_started_one() -> Repo {
    each_side_started_one_after(&[], &[])
}

/// [`each_side_started_one`], each side running its own command first (none when empty).
fn each_side_started_one_after(theirs_first: &[&str], ours_first: &[&str]) -> Repo {
    let repo = git_repo();
    repo.add(&["one"]);
    repo.add(&["two"]);
    let side = |r: &Repo, at: &str, first: &[&str], task: &str| {
        if !first.is_empty() {
            ok_at(r, at, first);
        }
        ok_at(r, at, &["task", "start", task]);
    };
    let (ok, text) = merge(
        &repo,
        |r| side(r, "10:00:00", theirs_first, "T-002"),
        |r| side(r, "11:00:00", ours_first, "T-001"),
    );
    assert!(ok, "{text}");
    repo
}

#[test]
fn edits_to_different_tasks_merge_cleanly() {
    let repo = each_side_started_one();
    assert_eq!(repo.status_of("T-001"), "IN_PROGRESS");
    assert_eq!(repo.status_of("T-002"), "IN_PROGRESS");
    repo.ok(&["doctor"]);
    // The log holds both sides' entries, in time order.
    let log =
        std::fs::read_to_string(repo.project_dir("web").join("progress/log.md")).expect("log");
    let (theirs, ours) = (
        log.find("T-002").expect("theirs' entry"),
        log.rfind("T-001").expect("ours' entry"),
    );
    assert!(theirs < ours, "{log}");
}

/// After a merge the log holds both branches' commits, interleaved, and no replay crosses them:
/// the first write after it logs the whole list, a base a rebuild replays from — even when both
/// branches reached the same commit number, so cairn's own last list looks like the log's.
#[test]
fn a_write_after_a_merge_is_a_base_a_rebuild_replays_from() {
    let repo = each_side_started_one();
    ok_at(&repo, "12:00:00", &["task", "add", "three"]);
    std::fs::write(repo.project_dir("web").join("tasks.json"), "").expect("destroy tasks.json");
    assert_eq!(repo.status_of("T-001"), "IN_PROGRESS");
    assert_eq!(repo.status_of("T-002"), "IN_PROGRESS");
    assert_eq!(repo.status_of("T-003"), "PENDING");
}

/// One task, started on branch `other` and blocked on main, merged: a conflict on its status.
fn each_side_moved_one_task_elsewhere() -> (Repo, String) {
    let repo = git_repo();
    repo.add(&["one"]);
    let (ok, text) = merge(
        &repo,
        |r| {
            r.ok(&["task", "start", "T-001"]);
        },
        |r| {
            r.ok(&["task", "block", "T-001", "--reason", "waiting on the API"]);
        },
    );
    assert!(!ok, "git must report the conflict: {text}");
    (repo, text)
}

#[test]
fn one_field_changed_on_both_sides_is_a_conflict_showing_both_values() {
    let (repo, text) = each_side_moved_one_task_elsewhere();
    assert!(text.contains("conflict: T-001 status"), "{text}");
    let tasks = std::fs::read_to_string(repo.tasks_file()).expect("tasks");
    let ours = tasks.find("<<<<<<< ours").expect("ours marker");
    let blocked = tasks.find("\"BLOCKED\"").expect("ours' value");
    let theirs = tasks.find("\"IN_PROGRESS\"").expect("theirs' value");
    let end = tasks.find(">>>>>>> theirs").expect("theirs marker");
    assert!(
        ours < blocked && blocked < theirs && theirs < end,
        "{tasks}"
    );
}

/// The branch merged in made more commits than ours, and ours made its last one later: the last
/// commit in the merged log is not the highest.
fn merged_a_longer_branch(crlf: bool) -> Repo {
    let repo = git_repo();
    if crlf {
        // Git for Windows' default: the merged log is written with CRLF line endings.
        git(&repo, &["config", "core.autocrlf", "true"]);
    }
    ok_at(&repo, "09:00:00", &["task", "add", "base one"]);
    let (ok, text) = merge(
        &repo,
        |r| {
            for title in ["theirs two", "theirs three", "theirs four"] {
                ok_at(r, "10:00:00", &["task", "add", title]);
            }
        },
        |r| {
            ok_at(r, "11:00:00", &["task", "add", "ours two"]);
        },
    );
    assert!(ok, "{text}");
    repo
}

/// The tasks as they are, then as a rebuild of a destroyed tasks.json gives them: equal.
fn assert_a_rebuild_keeps_every_task(repo: &Repo, count: usize) {
    let before = repo.tasks_json()["tasks"].clone();
    assert_eq!(before.as_array().map(Vec::len), Some(count), "{before}");
    std::fs::write(repo.tasks_file(), "").expect("destroy tasks.json");
    repo.ok(&["task", "list"]);
    assert_eq!(repo.tasks_json()["tasks"], before);
}

/// A write after the merge is numbered above every commit, so it is a base a rebuild finds — not
/// one that repeats a number of theirs, behind which the rebuild took theirs' commit and fell
/// back to an older list. The same with the log merged with CRLF line endings.
#[test]
fn a_write_after_a_merge_is_numbered_above_both_branches() {
    for crlf in [false, true] {
        let repo = merged_a_longer_branch(crlf);
        ok_at(&repo, "12:00:00", &["task", "add", "after the merge"]);
        ok_at(&repo, "12:00:01", &["task", "add", "and another"]);
        assert_a_rebuild_keeps_every_task(&repo, 7);
    }
}

/// A restore after the merge is a base numbered above both branches too, and the writes after it
/// follow it.
#[test]
fn a_restore_after_a_merge_and_the_writes_after_it_survive_a_rebuild() {
    let repo = merged_a_longer_branch(false);
    repo.ok(&["checkpoint", "restore", "1"]);
    ok_at(&repo, "12:00:00", &["task", "add", "after the restore"]);
    ok_at(&repo, "12:00:01", &["task", "add", "and another"]);
    let count = repo.tasks_json()["tasks"].as_array().map_or(0, Vec::len);
    assert_a_rebuild_keeps_every_task(&repo, count);
}

/// A merge that changed only project.json (theirs added phases): tasks.json is still the file
/// cairn wrote, but the log now holds theirs' commits numbered after the fork. The writes after
/// the merge start a base numbered above both branches, and a rebuild keeps them and ours.
#[test]
fn writes_after_a_merge_of_project_json_alone_survive_a_rebuild() {
    let repo = git_repo();
    ok_at(&repo, "09:00:00", &["task", "add", "base one"]);
    let (ok, text) = merge(
        &repo,
        |r| {
            for (id, name) in [("design", "Design"), ("build", "Build"), ("ship", "Ship")] {
                ok_at(r, "10:00:00", &["phase", "add", id, "--name", name]);
            }
        },
        |r| {
            ok_at(r, "11:00:00", &["task", "add", "ours two"]);
        },
    );
    assert!(ok, "{text}");
    ok_at(&repo, "12:00:00", &["task", "add", "after the merge"]);
    ok_at(&repo, "12:00:01", &["task", "add", "and another"]);
    assert_a_rebuild_keeps_every_task(&repo, 4);
}

/// Runs cairn with `args`, killed right after the commit's log entry, before any rename.
fn killed_after_its_log_entry(repo: &Repo, args: &[&str]) {
    let out = repo
        .command(args)
        .env("CAIRN_FAILPOINT", "project:after-log-append")
        .output()
        .expect("run cairn");
    assert!(!out.status.success(), "{args:?} must die at the failpoint");
}

/// The first write after a merge keeps the merged file (which has no commit marker) as the
/// checkpoint it starts from. Killed between its log entry and its rename, it is committed all
/// the same: the next command finds tasks.json still that very file and rolls the commit forward
/// — before, the write was lost, and the next add logged a second task under its id.
#[test]
fn a_write_after_a_merge_killed_before_its_rename_is_rolled_forward() {
    let repo = each_side_started_one();
    killed_after_its_log_entry(&repo, &["task", "add", "after the merge"]);
    let titles: Vec<String> = repo
        .items(&["task", "list"])
        .iter()
        .map(|t| t["title"].as_str().expect("title").to_owned())
        .collect();
    assert_eq!(titles, ["one", "two", "after the merge"]);
    repo.add(&["next"]);
    assert_eq!(repo.task("T-004")["title"], "next");
    repo.ok(&["doctor"]);
}

/// After a merge that changed both files, neither has a commit marker, and the first write
/// changes both: killed before its renames, all of it is rolled forward — its project.json part
/// (a phase) too, not its tasks alone.
#[test]
fn a_two_file_write_after_a_merge_killed_before_its_renames_is_rolled_forward_whole() {
    let repo = each_side_started_one_after(
        &["phase", "add", "alpha", "--name", "Alpha"],
        &["phase", "add", "beta", "--name", "Beta"],
    );
    killed_after_its_log_entry(&repo, &["phase", "add", "zeta", "--name", "Zeta"]);
    repo.add(&["four"]);
    let phases = repo.ok(&["phase", "list"]);
    assert!(phases.contains("zeta"), "{phases}");
    repo.ok(&["doctor"]);
}

/// Both branches number their commits from the fork, and a checkpoint has no place in the log:
/// a rebuild after the merge never continues one branch's checkpoint with the other's commits.
/// (Ours' checkpoint is at ours' last commit; theirs' later commits follow it by number.)
#[test]
fn a_rebuild_after_a_merge_never_mixes_the_two_branches() {
    let repo = git_repo();
    repo.add(&["base one"]);
    repo.add(&["base two"]);
    let (ok, text) = merge(
        &repo,
        |r| {
            r.add(&["theirs three"]);
            r.add(&["theirs four"]);
            r.add(&["theirs five"]);
            r.ok(&["task", "start", "T-003"]);
        },
        |r| {
            r.add(&["ours three"]);
            r.add(&["ours four"]);
            r.ok(&["checkpoint", "write"]);
        },
    );
    assert!(ok, "{text}");
    std::fs::write(repo.tasks_file(), "").expect("destroy tasks.json");
    // Staged destroyed, git's index holds no list either (see the test below).
    git(&repo, &["add", "--", ".claude/projects/web/tasks.json"]);
    repo.ok(&["task", "list"]);
    let titles: Vec<String> = repo.tasks_json()["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["title"].as_str().expect("title").to_owned())
        .collect();
    let side = |name: &str| {
        titles
            .iter()
            .all(|t| t.starts_with("base") || t.starts_with(name))
    };
    assert!(
        !titles.is_empty() && (side("ours") || side("theirs")),
        "{titles:?}"
    );
}

/// Between a merge and the first cairn write after it, the log cannot replay the merged list (the
/// branches' commits share numbers, see above), but git's index holds it: a destroyed tasks.json
/// comes back as the merge made it, and the recovery logs it whole, so that a later rebuild
/// replays to it and to every write after it.
#[test]
fn a_list_destroyed_right_after_a_merge_comes_back_as_git_merged_it() {
    let repo = git_repo();
    repo.add(&["base one"]);
    let (ok, text) = merge(
        &repo,
        |r| {
            r.add(&["theirs two"]);
            r.ok(&["task", "start", "T-001"]);
        },
        |r| {
            r.add(&["ours two"]);
            r.add(&["ours three"]);
            r.ok(&["checkpoint", "write"]);
        },
    );
    assert!(ok, "{text}");
    let merged = repo.tasks_json()["tasks"].clone();
    assert_eq!(merged.as_array().map(Vec::len), Some(4), "{merged}");

    std::fs::write(repo.tasks_file(), "").expect("destroy tasks.json");
    let listed = repo.run(&["task", "list"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    assert!(
        listed.stderr.contains("4 merged by git, from its index"),
        "{}",
        listed.stderr
    );
    assert_eq!(repo.tasks_json()["tasks"], merged);

    repo.ok(&["task", "complete", "T-001"]);
    let after = repo.tasks_json()["tasks"].clone();
    std::fs::remove_file(repo.tasks_file()).expect("destroy tasks.json again");
    // The index still holds the merge's list, older than the completion: the log, which now
    // replays, wins.
    repo.ok(&["task", "list"]);
    assert_eq!(repo.tasks_json()["tasks"], after);
    repo.ok(&["doctor"]);
}

/// Main merges branch `a` and writes (a base numbered above both), then merges branch `b`, forked
/// before `a` was merged, whose one commit was made at `b_at`: `b`'s commit is numbered below
/// main's newest base, which is no base of the merge. Each commit is `step(repo, name, at)`.
fn merged_a_branch_numbered_below_ours(b_at: &str, step: impl Fn(&Repo, &str, &str)) -> Repo {
    let repo = git_repo();
    ok_at(&repo, "09:00:00", &["task", "add", "base one"]);
    commit(&repo, "base");
    git(&repo, &["branch", "a"]);
    git(&repo, &["branch", "b"]);
    git(&repo, &["checkout", "-q", "a"]);
    step(&repo, "atwo", "10:00:00");
    step(&repo, "athree", "10:00:01");
    commit(&repo, "a");
    git(&repo, &["checkout", "-q", "b"]);
    step(&repo, "btwo", b_at);
    commit(&repo, "b");
    git(&repo, &["checkout", "-q", "main"]);
    step(&repo, "maintwo", "11:00:00");
    commit(&repo, "main");
    let (ok, text) = git(&repo, &["merge", "a", "-m", "merge a"]);
    assert!(ok, "{text}");
    step(&repo, "aftera", "12:00:00");
    commit(&repo, "after a");
    let (ok, text) = git(&repo, &["merge", "b", "-m", "merge b"]);
    assert!(ok, "{text}");
    repo
}

/// Both times of `b`'s commit: before main's newest base (the log holds it before that base) and
/// after it.
const B_AT: [&str; 2] = ["10:30:00", "13:00:00"];

/// A tasks.json destroyed right after merging a branch whose commits are all numbered below a
/// base ours made since the fork (a write after merging another branch, as here; after a pull or
/// a checkout that rewrote the file; a restore) comes back as git merged it. The log's numbers
/// say nothing of that merge: before, a replay from ours' base "succeeded" without the branch's
/// tasks (its commit made earlier, the log holds it before that base), or, its commit made later,
/// the list came back at an older checkpoint, losing ours' writes too.
#[test]
fn a_list_destroyed_right_after_merging_a_branch_numbered_below_ours_comes_back_as_git_merged_it() {
    for b_at in B_AT {
        let repo = merged_a_branch_numbered_below_ours(b_at, |r, name, at| {
            ok_at(r, at, &["task", "add", name]);
        });
        let merged = repo.tasks_json()["tasks"].clone();
        assert_eq!(merged.as_array().map(Vec::len), Some(6), "{merged}");
        std::fs::write(repo.tasks_file(), "").expect("destroy tasks.json");
        repo.ok(&["task", "list"]);
        assert_eq!(repo.tasks_json()["tasks"], merged, "b's commit at {b_at}");
        // Logged whole: a write after it, and a rebuild, keep it.
        repo.add(&["after merging b"]);
        assert_a_rebuild_keeps_every_task(&repo, 7);
        repo.ok(&["doctor"]);
    }
}

/// The same for project.json: before, it came back as the last project record in the log's
/// order — main's, without `b`'s phase, or `b`'s alone, without any other.
#[test]
fn a_project_record_destroyed_right_after_merging_a_branch_numbered_below_ours_comes_back_as_git_merged_it()
 {
    for b_at in B_AT {
        let repo = merged_a_branch_numbered_below_ours(b_at, |r, name, at| {
            ok_at(r, at, &["phase", "add", name, "--name", name]);
        });
        let merged = phase_ids(&repo);
        assert_eq!(merged.len(), 5, "{merged:?}");
        let project_json = repo.project_dir("web").join("project.json");
        std::fs::write(&project_json, "").expect("destroy project.json");
        assert_eq!(phase_ids(&repo), merged, "b's commit at {b_at}");
        repo.ok(&["phase", "add", "afterb", "--name", "After b"]);
        std::fs::write(&project_json, "").expect("destroy project.json again");
        assert_eq!(phase_ids(&repo).len(), 6, "b's commit at {b_at}");
        repo.ok(&["doctor"]);
    }
}

/// A write after a merge, then only the log staged (`git add` of it alone): git's index holds the
/// log's every commit but not the list they arrive at — the log's replay, not git's index, brings
/// the list back, with CRLF line endings too (`core.autocrlf`: the file kept as the write's base
/// is not the index's bytes as they are).
#[test]
fn a_write_after_a_merge_with_only_the_log_staged_since_survives_a_rebuild() {
    for crlf in [false, true] {
        let repo = merged_a_longer_branch(crlf);
        ok_at(&repo, "12:00:00", &["task", "add", "after the merge"]);
        git(
            &repo,
            &["add", "--", ".claude/projects/web/progress/log.md"],
        );
        assert_a_rebuild_keeps_every_task(&repo, 6);
    }
}

/// The ids of the project's phases, sorted.
fn phase_ids(repo: &Repo) -> Vec<String> {
    let mut ids: Vec<String> = repo
        .json(&["phase", "list"])
        .as_array()
        .expect("phases")
        .iter()
        .map(|p| p["id"].as_str().expect("id").to_owned())
        .collect();
    ids.sort();
    ids
}

/// The same for project.json: the log's last project record is one branch's, git's index holds
/// the merge of both; the damaged file is kept aside under its own name.
#[test]
fn a_project_record_destroyed_right_after_a_merge_comes_back_as_git_merged_it() {
    let repo = git_repo();
    repo.add(&["base one"]);
    let (ok, text) = merge(
        &repo,
        |r| {
            r.ok(&["phase", "add", "alpha", "--name", "Alpha"]);
        },
        |r| {
            r.ok(&["phase", "add", "beta", "--name", "Beta"]);
        },
    );
    assert!(ok, "{text}");
    assert_eq!(phase_ids(&repo), ["alpha", "beta"]);
    let project_json = repo.project_dir("web").join("project.json");
    std::fs::write(&project_json, "").expect("destroy project.json");
    assert_eq!(phase_ids(&repo), ["alpha", "beta"], "both sides' phases");
    let aside = repo.set_aside_files();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert!(aside[0].starts_with("project.json.corrupt-"), "{aside:?}");

    repo.add(&["after the merge"]);
    std::fs::write(&project_json, "").expect("destroy project.json again");
    assert_eq!(
        phase_ids(&repo),
        ["alpha", "beta"],
        "from the log, once written"
    );
    repo.ok(&["doctor"]);
}

/// `git checkout -m` of the log: the merge of it made again from git's stages (entry by entry
/// once `cairn setup git` registered the driver).
fn merge_the_log_again(repo: &Repo) {
    let log = ".claude/projects/web/progress/log.md";
    let (ok, text) = git(repo, &["checkout", "-m", "--", log]);
    assert!(ok, "{text}");
}

/// A clone without the driver (git merges the project's files as text) where each branch added
/// tasks after "base one" — theirs `theirs`, ours "ours two" — merged: the log conflicted, and
/// tasks.json resolved by `git checkout <side>` (`--ours`, `--theirs`) and added.
fn merged_without_the_driver(theirs: &[&str], side: &str) -> Repo {
    let repo = Repo::with_project();
    git(&repo, &["init", "-q", "-b", "main"]);
    for (key, value) in [("user.email", "t@example.com"), ("user.name", "t")] {
        git(&repo, &["config", key, value]);
    }
    repo.add(&["base one"]);
    let (merged, text) = merge(
        &repo,
        |r| {
            for title in theirs {
                r.add(&[title]);
            }
        },
        |r| {
            r.add(&["ours two"]);
        },
    );
    assert!(!merged, "the log conflicts without the driver: {text}");
    let tasks = ".claude/projects/web/tasks.json";
    git(&repo, &["checkout", side, "--", tasks]);
    git(&repo, &["add", "--", tasks]);
    repo
}

/// A clone without the driver merges the log as text, and two branches' appends conflict. An
/// entry appended to the conflicted log would be lost to the merge's resolution (`git checkout
/// -m`, `--ours` or `--theirs` take the file from the merge's stages): a write is refused, with
/// every file left as it was, until the log is merged — which the driver then does entry by entry.
#[test]
fn nothing_is_appended_to_a_log_a_merge_left_conflicted() {
    let repo = merged_without_the_driver(&["theirs two"], "--theirs");
    let log = repo.project_dir("web").join("progress").join("log.md");
    repo.ok(&["task", "list"]);

    let before = (
        std::fs::read(&log).expect("log"),
        std::fs::read(repo.tasks_file()).expect("tasks"),
    );
    let refused = repo.fails(&["task", "add", "after"], crate::support::code::CORRUPT);
    assert!(
        refused.stderr.contains("unresolved git merge")
            && refused.stderr.contains("git checkout -m"),
        "{}",
        refused.stderr
    );
    let after = (
        std::fs::read(&log).expect("log"),
        std::fs::read(repo.tasks_file()).expect("tasks"),
    );
    assert!(before == after, "a refused write changes nothing");
    let doctor = repo.run(&["doctor"]);
    assert_eq!(doctor.code, crate::support::code::UNHEALTHY, "{doctor:?}");
    assert!(
        doctor
            .stdout
            .contains("log.md: holds an unresolved git merge")
            && doctor
                .stdout
                .contains("next: finish the merge of progress/log.md first"),
        "{}",
        doctor.stdout
    );
    let json = repo.json_exiting(&["doctor"], crate::support::code::UNHEALTHY);
    assert!(json["unmerged_log"].as_u64().is_some(), "{json}");

    repo.ok(&["setup", "git"]);
    merge_the_log_again(&repo);
    repo.add(&["after"]);
    let titles = repo.ok(&["log", "--event", "TASK_CREATED", "--json"]);
    for title in ["ours two", "theirs two", "after"] {
        assert!(titles.contains(title), "{title}: {titles}");
    }
    repo.ok(&["doctor"]);
}

/// What a refused commit would have saved first is not made either: the write after another
/// tool's tasks.json (git's) keeps that file as a checkpoint, `checkpoint restore` the list it
/// replaces, `checkpoint write` its snapshot (and prunes). Each left one more checkpoint, in no
/// log entry, on every attempt — ten of them pruned the one ours' commit starts from — and
/// `checkpoint write` said "the change was saved" (exit 1) instead of naming the merge.
#[test]
fn a_write_a_conflicted_log_refuses_keeps_no_checkpoint() {
    let repo = merged_without_the_driver(&["theirs two"], "--theirs");
    let checkpoints = repo.checkpoint_files();
    assert!(
        !checkpoints.is_empty(),
        "ours' write after the checkout kept one"
    );
    let tasks = std::fs::read(repo.tasks_file()).expect("tasks");
    repo.fails(&["task", "add", "after"], crate::support::code::CORRUPT);
    let written = repo.fails(&["checkpoint", "write"], crate::support::code::CORRUPT);
    assert!(
        written.stderr.contains("unresolved git merge") && !written.stderr.contains("was saved"),
        "{}",
        written.stderr
    );
    repo.fails(
        &["checkpoint", "restore", "1"],
        crate::support::code::CORRUPT,
    );
    assert_eq!(repo.checkpoint_files(), checkpoints);
    assert!(std::fs::read(repo.tasks_file()).expect("tasks") == tasks);
}

/// The conflicted log's last commit is theirs' (their side comes last), made from the list
/// ours' tasks.json — taken with `git checkout --ours` — also carries the number of: neither a
/// reader nor a refused writer rolls it forward onto ours' file. A reader listed theirs' last
/// task on ours' list (without theirs' first), and the refused write wrote it there.
#[test]
fn a_conflicted_log_rolls_nothing_forward() {
    let repo = merged_without_the_driver(&["theirs two", "theirs three"], "--ours");
    let tasks = std::fs::read(repo.tasks_file()).expect("tasks");
    let listed = repo.ok(&["task", "list"]);
    assert!(
        listed.contains("ours two") && !listed.contains("theirs"),
        "{listed}"
    );
    repo.fails(&["task", "add", "after"], crate::support::code::CORRUPT);
    assert!(
        std::fs::read(repo.tasks_file()).expect("tasks") == tasks,
        "a refused write changes nothing"
    );
}

/// A damaged file whose recovery the conflicted log refuses is not set aside either: each read
/// left one more `tasks.json.corrupt-*` (`project.json.corrupt-*`) behind its refusal.
#[test]
fn a_recovery_a_conflicted_log_refuses_sets_nothing_aside() {
    let repo = merged_without_the_driver(&["theirs two"], "--theirs");
    for file in [
        repo.tasks_file(),
        repo.project_dir("web").join("project.json"),
    ] {
        let before = std::fs::read(&file).expect("file");
        std::fs::write(&file, "{\"garbage").expect("damage");
        for _ in 0..2 {
            repo.fails(&["task", "list"], crate::support::code::CORRUPT);
        }
        assert_eq!(repo.set_aside_files(), Vec::<String>::new());
        std::fs::write(&file, before).expect("repair");
    }
}

/// Conflict markers further back than an append looks — a merge committed as it was, then
/// appended to (as cairn did before it looked) — are `doctor --full`'s to report, but not with
/// the advice for a merge git still holds unmerged: `git checkout -m` of a file that git holds
/// resolved puts back the file as git holds it, and every entry appended since is lost.
#[test]
fn markers_a_committed_merge_left_far_back_are_not_met_with_git_checkout_m() {
    let repo = Repo::with_project();
    git(&repo, &["init", "-q", "-b", "main"]);
    for (key, value) in [("user.email", "t@example.com"), ("user.name", "t")] {
        git(&repo, &["config", key, value]);
    }
    let note = "n".repeat(4000);
    for title in ["one", "two", "three", "four", "five"] {
        repo.add(&[title, "--description", &note]);
    }
    // A conflict committed after the project's first entry, appended to since.
    let log = repo.project_dir("web").join("progress").join("log.md");
    let text = std::fs::read_to_string(&log).expect("log");
    let first = text.find("\n\n").expect("an entry") + 2;
    let conflict = "<<<<<<< HEAD\n=======\n>>>>>>> other\n\n";
    std::fs::write(
        &log,
        format!("{}{conflict}{}", &text[..first], &text[first..]),
    )
    .expect("the merge committed");
    commit(&repo, "a merge committed unresolved, and appended to");
    repo.add(&["after the commit"]);

    let doctor = repo.run(&["doctor", "--full"]);
    assert_eq!(doctor.code, crate::support::code::UNHEALTHY, "{doctor:?}");
    assert!(
        doctor.stdout.contains("further back than an append looks")
            && !doctor.stdout.contains("merges it entry by entry"),
        "{}",
        doctor.stdout
    );
    // What the advice for an unresolved merge does to this log.
    merge_the_log_again(&repo);
    let titles = repo.ok(&["log", "--event", "TASK_CREATED", "--json"]);
    assert!(!titles.contains("after the commit"), "{titles}");
}

/// Until the conflict is resolved, cairn reads nothing from the file and rebuilds nothing: a
/// rebuild would set the merge aside and roll the list back to an older checkpoint.
#[test]
fn a_list_left_unmerged_is_refused_untouched_until_the_conflict_is_resolved() {
    let (repo, _) = each_side_moved_one_task_elsewhere();
    let conflicted = std::fs::read(repo.tasks_file()).expect("tasks");
    assert!(
        !repo.checkpoint_files().is_empty(),
        "a checkpoint to restore"
    );
    for args in [
        &["task", "list"][..],
        &["doctor"],
        &["task", "add", "two"],
        &["checkpoint", "restore", "1"],
    ] {
        let run = repo.fails(args, crate::support::code::CORRUPT);
        assert!(
            run.stderr.contains("unresolved git merge") && run.stderr.contains("from line"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(run.stderr.contains("git checkout --ours"), "{}", run.stderr);
    }
    let failure = repo.json_exiting(&["task", "list"], crate::support::code::CORRUPT);
    assert_eq!(failure["error"]["kind"], "unmerged", "{failure}");
    assert_eq!(std::fs::read(repo.tasks_file()).expect("tasks"), conflicted);
    assert_eq!(
        repo.set_aside_files(),
        Vec::<String>::new(),
        "nothing is set aside"
    );

    let (resolved, text) = git(&repo, &["checkout", "--ours", "--", "."]);
    assert!(resolved, "{text}");
    assert_eq!(repo.status_of("T-001"), "BLOCKED");
    repo.ok(&["doctor"]);
}

/// Two clones that each completed ten tasks each wrote the next checkpoint under the same number
/// and a velocity.json of their own: both merge without a conflict.
#[test]
fn checkpoints_and_velocity_both_clones_wrote_merge_cleanly() {
    let repo = git_repo();
    for i in 0..20 {
        repo.add(&[&format!("task number {i}")]);
    }
    let complete = |r: &Repo, from: usize| {
        for i in from..from + 10 {
            r.start_and_complete(&format!("T-{:03}", i + 1));
        }
    };
    let velocity = repo.project_dir("web").join("progress/velocity.json");
    let mut theirs_files = None;
    let (ok, text) = merge(
        &repo,
        |r| {
            complete(r, 10);
            theirs_files = Some((
                r.checkpoint_files(),
                std::fs::read(&velocity).expect("velocity"),
            ));
        },
        |r| complete(r, 0),
    );
    let (theirs_checkpoints, theirs_velocity) = theirs_files.expect("theirs ran");
    assert!(ok, "{text}");
    let (_, status) = git(&repo, &["status", "--porcelain"]);
    assert_eq!(status.trim(), "", "nothing left to resolve");
    // The merge above is the case under test: both wrote the same checkpoint name.
    let checkpoints = repo.checkpoint_files();
    assert!(
        theirs_checkpoints.iter().any(|n| checkpoints.contains(n)),
        "{theirs_checkpoints:?} {checkpoints:?}"
    );
    let (_, ours_checkpoint) = git(
        &repo,
        &[
            "show",
            &format!(
                "HEAD^1:.claude/projects/web/checkpoints/{}",
                checkpoints[checkpoints.len() - 1]
            ),
        ],
    );
    let last = repo
        .project_dir("web")
        .join("checkpoints")
        .join(&checkpoints[checkpoints.len() - 1]);
    assert_eq!(
        std::fs::read_to_string(last).expect("checkpoint"),
        ours_checkpoint,
        "ours is kept"
    );

    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&velocity).expect("velocity")).expect("json");
    let theirs: serde_json::Value = serde_json::from_slice(&theirs_velocity).expect("json");
    assert_ne!(theirs["recent_completions"], merged["recent_completions"]);
    assert_eq!(merged["completed_count"], 20, "{merged}");
    let done: Vec<&str> = merged["recent_completions"]
        .as_array()
        .expect("window")
        .iter()
        .map(|c| c["task"].as_str().expect("task"))
        .collect();
    assert_eq!(done.len(), 20, "{merged}");
    for i in 1..=20 {
        assert!(done.contains(&format!("T-{i:03}").as_str()), "{done:?}");
    }
    repo.ok(&["doctor"]);
    // The next completion goes on from the merged window.
    repo.add(&["after the merge"]);
    repo.start_and_complete("T-021");
    let after: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&velocity).expect("velocity")).expect("json");
    assert_eq!(after["completed_count"], 21, "{after}");
}

#[test]
fn tasks_added_on_both_sides_get_distinct_ids_with_dependencies_rewritten() {
    let repo = git_repo();
    repo.add(&["one"]);
    let (ok, text) = merge(
        &repo,
        |r| {
            r.add(&["theirs a"]);
            r.add(&["theirs b", "--depends", "T-002"]);
        },
        |r| {
            r.add(&["ours"]);
        },
    );
    assert!(ok, "{text}");
    assert!(text.contains("theirs' new T-002 is now T-003"), "{text}");
    assert_eq!(repo.task("T-002")["title"], "ours");
    assert_eq!(repo.task("T-003")["title"], "theirs a");
    assert_eq!(repo.task("T-004")["title"], "theirs b");
    assert_eq!(
        repo.task("T-004")["dependencies"],
        serde_json::json!(["T-003"])
    );
    repo.ok(&["doctor"]);
}

#[test]
fn a_parent_completed_on_one_side_and_a_child_added_on_the_other_is_reported() {
    let repo = git_repo();
    repo.add(&["parent"]);
    repo.add(&["child", "--parent", "T-001"]);
    let (ok, text) = merge(
        &repo,
        |r| {
            r.add(&["late child", "--parent", "T-001"]);
        },
        |r| {
            r.start_and_complete("T-002");
        },
    );
    assert!(!ok, "git must refuse the merge: {text}");
    assert!(text.contains("break a rule"), "{text}");
    assert_eq!(repo.status_of("T-001"), "COMPLETE");
    assert_eq!(repo.task("T-003")["title"], "late child");
}

#[test]
fn a_file_the_driver_does_not_know_is_refused_and_left_alone() {
    let repo = Repo::new();
    let file = repo.root().join("notes.md");
    std::fs::write(&file, "mine\n").expect("write");
    let path = file.to_str().expect("utf-8");
    let run = repo.run(&["merge-driver", path, path, path, "notes.md"]);
    assert_eq!(run.code, crate::support::code::USAGE, "{run:?}");
    assert!(
        run.stderr.contains("is not a file cairn merges"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "mine\n");
}

/// The merge is written over ours in place: an ours longer than the merge (the same tasks,
/// pretty-printed by another tool) leaves nothing of itself past the merge's end, and the merge
/// is the one a compact ours gives.
#[test]
fn a_merge_shorter_than_ours_leaves_nothing_of_ours_behind() {
    let repo = Repo::with_project();
    repo.add(&["one"]);
    repo.add(&["two"]);
    let tasks = repo.project_dir("web").join("tasks.json");
    let dir = tempfile::tempdir().expect("temp dir");
    let [base, ours, theirs] = ["base", "ours", "theirs"].map(|n| dir.path().join(n));
    std::fs::copy(&tasks, &base).expect("copy");
    repo.ok(&["task", "start", "T-002"]);
    std::fs::copy(&tasks, &theirs).expect("copy");
    let driver = |ours_bytes: &[u8]| {
        std::fs::write(&ours, ours_bytes).expect("write");
        let paths = [&base, &ours, &theirs].map(|p| p.to_str().expect("utf-8").to_owned());
        let run = repo.run(&[
            "merge-driver",
            &paths[0],
            &paths[1],
            &paths[2],
            ".claude/projects/web/tasks.json",
        ]);
        assert_eq!(run.code, 0, "{run:?}");
        std::fs::read(&ours).expect("read")
    };
    let compact = driver(&std::fs::read(&base).expect("read"));
    let base_value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&base).expect("read")).expect("json");
    let pretty = serde_json::to_vec_pretty(&base_value).expect("json");
    assert!(pretty.len() > compact.len());
    assert_eq!(driver(&pretty), compact);
    let merged: serde_json::Value = serde_json::from_slice(&compact).expect("the merge is JSON");
    assert_eq!(merged["tasks"][1]["status"], "IN_PROGRESS");
}

/// One change a user makes with cairn to one task.
#[derive(Debug, Clone)]
enum Edit {
    Title(u8),
    Priority(&'static str),
    Tag(u8),
    Start,
    Complete,
    Block,
}

impl Edit {
    fn args(&self, id: &str) -> Vec<String> {
        let words: Vec<String> = match self {
            Edit::Title(n) => vec![
                "edit".into(),
                id.into(),
                "--title".into(),
                format!("Title {n} of {id}"),
            ],
            Edit::Priority(p) => vec!["edit".into(), id.into(), "--priority".into(), (*p).into()],
            Edit::Tag(n) => vec!["edit".into(), id.into(), "--tag".into(), format!("t{n}")],
            Edit::Start => vec!["start".into(), id.into()],
            Edit::Complete => vec!["complete".into(), id.into()],
            Edit::Block => vec![
                "block".into(),
                id.into(),
                "--reason".into(),
                "waiting on review".into(),
            ],
        };
        std::iter::once("task".to_owned()).chain(words).collect()
    }
}

fn edit() -> impl proptest::strategy::Strategy<Value = Edit> {
    use proptest::prelude::*;
    prop_oneof![
        (0u8..4).prop_map(Edit::Title),
        prop::sample::select(vec!["CRITICAL", "HIGH", "LOW"]).prop_map(Edit::Priority),
        (0u8..3).prop_map(Edit::Tag),
        Just(Edit::Start),
        Just(Edit::Complete),
        Just(Edit::Block),
    ]
}

/// A script: edits on tasks `first..first + 3`, by task offset.
fn script(first: u8) -> impl proptest::strategy::Strategy<Value = Vec<(String, Edit)>> {
    use proptest::prelude::*;
    prop::collection::vec(
        (
            (0u8..3).prop_map(move |k| format!("T-00{}", first + k)),
            edit(),
        ),
        1..5,
    )
}

/// The project with six tasks, the same bytes in every repository (the clock is fixed).
fn seeded(repo: &Repo) {
    for n in 1..=6 {
        repo.ok(&["task", "add", &format!("Task number {n}")]);
    }
}

fn apply(repo: &Repo, script: &[(String, Edit)]) {
    for (id, edit) in script {
        let args = edit.args(id);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // A refused edit is refused the same way on either path: the task is in the same state.
        repo.run(&args);
    }
}

fn tasks(repo: &Repo) -> serde_json::Value {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo.tasks_file()).unwrap()).unwrap();
    doc["tasks"].clone()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(8))]

    /// Two branches editing different tasks, merged by real git through the driver, give the
    /// tasks that applying both scripts one after the other gives.
    #[test]
    fn a_git_merge_of_scripts_on_different_tasks_equals_applying_both(
        ours in script(1),
        theirs in script(4),
    ) {
        let repo = git_repo();
        seeded(&repo);
        let (merged, text) = merge(&repo, |r| apply(r, &theirs), |r| apply(r, &ours));
        proptest::prop_assert!(merged, "git merge failed:\n{}", text);

        let sequential = Repo::with_project();
        seeded(&sequential);
        apply(&sequential, &ours);
        apply(&sequential, &theirs);
        proptest::prop_assert_eq!(tasks(&repo), tasks(&sequential));
    }
}

/// Breaks task `index` of tasks.json as another tool would (a priority no reader knows), in a new
/// inode, pretty-printed.
fn break_task(repo: &Repo, index: usize) {
    let mut doc = repo.tasks_json();
    doc["tasks"][index]["priority"] = "URGENT".into();
    std::fs::remove_file(repo.tasks_file()).expect("remove");
    std::fs::write(
        repo.tasks_file(),
        serde_json::to_vec_pretty(&doc).expect("JSON"),
    )
    .expect("write");
}

/// Each task of tasks.json as `ID title`.
fn ids_and_titles(repo: &Repo) -> Vec<String> {
    repo.tasks_json()["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                t["id"].as_str().unwrap_or("?"),
                t["title"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

/// Main merges branch `b`, whose newest base (a whole list it logged, here by a salvage) is
/// numbered above every commit the two branches share a number with, and whose commits since
/// the fork are all later than main's: the merged log replays to b's list alone. The merge
/// renumbered b's new tasks (T-002 of b is T-003 in the merged list). Another tool then breaks
/// main's T-002 in the merged tasks.json: its copy must be main's T-002, which main's checkpoint
/// holds — not b's T-002, a different task (found by review: the merged file carries no commit
/// marker, so the log's replay is not the list it was written from).
#[test]
fn a_task_broken_after_a_merge_is_not_replaced_by_the_other_branchs_task_of_that_id() {
    let repo = git_repo();
    ok_at(&repo, "09:00:00", &["task", "add", "base one"]);
    commit(&repo, "base");
    git(&repo, &["checkout", "-q", "-b", "b"]);
    ok_at(&repo, "10:00:00", &["task", "add", "b two"]);
    ok_at(&repo, "10:00:01", &["task", "add", "b three"]);
    // On b, another tool breaks the file's top level (every task still valid); the salvage logs
    // b's whole list.
    let mut doc = repo.tasks_json();
    doc["version"] = "one".into();
    std::fs::remove_file(repo.tasks_file()).expect("remove");
    std::fs::write(
        repo.tasks_file(),
        serde_json::to_vec_pretty(&doc).expect("JSON"),
    )
    .expect("write");
    let run = repo.run_env(&["task", "list"], &[("CAIRN_NOW", "2026-11-22T10:01:00Z")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    commit(&repo, "b");
    git(&repo, &["checkout", "-q", "main"]);
    ok_at(&repo, "09:30:00", &["task", "add", "main two"]);
    ok_at(&repo, "09:31:00", &["checkpoint", "write"]);
    commit(&repo, "main");
    let (ok, text) = git(&repo, &["merge", "b", "-m", "merge b"]);
    assert!(ok, "{text}");
    let merged = ids_and_titles(&repo);
    assert_eq!(merged[1], "T-002 main two");

    break_task(&repo, 1);
    let run = repo.run_env(&["task", "list"], &[("CAIRN_NOW", "2026-11-22T12:00:00Z")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let after = ids_and_titles(&repo);
    assert_eq!(after[1], "T-002 main two", "{after:?}");
}
