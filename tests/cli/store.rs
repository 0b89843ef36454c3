//! The project store in PostgreSQL: chosen by `--store`, `CAIRN_STORE` or `.claude/cairn.toml`,
//! used by every project command exactly like the files, on a real server (a fresh database per
//! test, see `cairn_storage_pg::testkit`).

use cairn_storage_pg::testkit::TestDb;

use crate::support::{INIT_WEB, Repo, code};

fn init(repo: &Repo, env: &[(&str, &str)]) {
    repo.ok_env(INIT_WEB, env);
}

#[test]
fn every_day_commands_work_on_postgres_and_write_no_project_files() {
    let db = TestDb::new();
    let repo = Repo::new();
    let env = [("CAIRN_STORE", db.url.as_str())];
    init(&repo, &env);
    repo.ok_env(&["task", "add", "Design the schema"], &env);
    repo.ok_env(&["task", "add", "Write the migration"], &env);
    let next = repo.ok_env(&["task", "next"], &env);
    assert!(next.contains("Design the schema"), "{next}");
    repo.ok_env(&["task", "start", "T-001"], &env);
    repo.ok_env(&["task", "complete", "T-001"], &env);
    let list = repo.ok_env(&["--json", "task", "list", "--status", "COMPLETE"], &env);
    assert!(list.contains("T-001") && !list.contains("T-002"), "{list}");
    let log = repo.ok_env(&["log"], &env);
    assert!(log.contains("TASK_COMPLETE"), "{log}");
    assert!(
        !repo.root().join(".claude/projects").exists(),
        "the project lives in the database only"
    );
    // The files stay the default: without the variable, there is no project.
    repo.fails(&["task", "list"], code::NOT_FOUND);
}

#[test]
fn the_flag_and_the_config_file_select_the_database_too() {
    let db = TestDb::new();
    let repo = Repo::new();
    init(&repo, &[]);
    repo.ok(&[
        "--store",
        &db.url,
        "init",
        "--id",
        "team",
        "--name",
        "Team",
        "--goal",
        "Work as a team on one store",
    ]);
    std::fs::write(
        repo.root().join(".claude/cairn.toml"),
        format!("# the team's shared store\nstore = \"{}\"\n", db.url),
    )
    .unwrap();
    let listed = repo.ok(&["project", "list"]);
    assert!(
        listed.contains("team") && !listed.contains("web"),
        "{listed}"
    );
}

#[test]
fn an_unreachable_database_is_exit_1_with_a_hint_that_hides_the_password() {
    let repo = Repo::new();
    let run = repo.fails(
        &[
            "--store",
            "postgres://cairn:hunter2@127.0.0.1:1/team",
            "task",
            "list",
        ],
        1,
    );
    assert!(
        run.stderr
            .contains("hint: check that the database at postgres://cairn@127.0.0.1:1/team"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
}

#[test]
fn a_store_that_is_not_a_postgres_url_is_a_usage_error() {
    let repo = Repo::new();
    let run = repo.fails(&["--store", "/srv/team", "task", "list"], code::USAGE);
    assert!(
        run.stderr.contains("not a postgres:// URL"),
        "{}",
        run.stderr
    );
}
