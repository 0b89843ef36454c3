//! The hook on a project kept in PostgreSQL (`store = "postgres://…"` in .claude/cairn.toml):
//! the same SessionStart context as on files, and a database it cannot reach fails open.

use cairn_storage_pg::PgProjectStore;
use cairn_storage_pg::testkit::TestDb;

use super::*;

fn configure(repo: &Repo, url: &str) {
    std::fs::create_dir_all(repo.root.join(".claude")).unwrap();
    std::fs::write(
        repo.root.join(".claude/cairn.toml"),
        format!("store = \"{url}\"\n"),
    )
    .unwrap();
}

#[test]
fn session_start_reads_a_project_kept_in_postgres() {
    let db = TestDb::new();
    let repo = Repo::bare();
    configure(&repo, &db.url);
    let store = PgProjectStore::new(&db.url).unwrap();
    seed(
        &ProjectService::new(Arc::new(store), Arc::new(SystemClock)),
        "demo",
        true,
    );
    let output = repo.run(&fixture("session_start_startup"));
    assert_well_behaved(&output, "session start on postgres");
    let context = stdout(&output);
    assert!(context.contains("cairn project `demo`"), "{context}");
    assert!(context.contains("Set up CI"), "{context}");
    assert_eq!(repo.error_log(), None);
    assert!(
        !repo.root.join(".claude/projects").exists(),
        "nothing is written to files"
    );
}

#[test]
fn an_unreachable_database_fails_open_and_logs_the_url_without_its_password() {
    let repo = Repo::bare();
    // Port 1 on localhost: nothing listens there, so the connection is refused at once.
    configure(&repo, "postgres://cairn:hunter2@127.0.0.1:1/team");
    let output = repo.run(&fixture("session_start_startup"));
    assert_well_behaved(&output, "unreachable postgres");
    let log = repo.error_log().expect("the failure is logged");
    assert!(log.contains("postgres://cairn@127.0.0.1:1/team"), "{log}");
    assert!(!log.contains("hunter2"), "{log}");
}
