//! Schema migrations, embedded in the binary and applied in order, once each.

use tokio_postgres::Client;

/// One schema change.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    pub version: i32,
    pub name: &'static str,
    pub sql: &'static str,
}

/// Every migration, oldest first. Append only: an applied migration is never edited.
pub const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    name: "project_store",
    sql: include_str!("../migrations/001_project_store.sql"),
}];

/// Serialises migrators: two processes opening a fresh database at once must not both create
/// the tables. Any constant works; this one spells "cairn".
const MIGRATION_LOCK: i64 = 0x63_61_69_72_6e;

/// Applies the migrations `client`'s database lacks; returns the versions it applied. Cheap when
/// the schema is current: one read, no lock.
pub(crate) async fn apply(client: &mut Client) -> Result<Vec<i32>, tokio_postgres::Error> {
    let latest = MIGRATIONS.last().map_or(0, |m| m.version);
    if current(client).await? >= latest {
        return Ok(Vec::new());
    }
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS cairn_schema_migrations (
             version     integer PRIMARY KEY,
             name        text NOT NULL,
             applied_at  timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await?;
    let row = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM cairn_schema_migrations",
            &[],
        )
        .await?;
    let have: i32 = row.get(0);
    let mut applied = Vec::new();
    for migration in MIGRATIONS.iter().filter(|m| m.version > have) {
        tx.batch_execute(migration.sql).await?;
        tx.execute(
            "INSERT INTO cairn_schema_migrations (version, name) VALUES ($1, $2)",
            &[&migration.version, &migration.name],
        )
        .await?;
        applied.push(migration.version);
    }
    tx.commit().await?;
    Ok(applied)
}

/// The newest applied migration; 0 for a database cairn never used.
async fn current(client: &Client) -> Result<i32, tokio_postgres::Error> {
    let exists = client
        .query_one(
            "SELECT to_regclass('cairn_schema_migrations') IS NOT NULL",
            &[],
        )
        .await?
        .get::<_, bool>(0);
    if !exists {
        return Ok(0);
    }
    Ok(client
        .query_one(
            "SELECT coalesce(max(version), 0) FROM cairn_schema_migrations",
            &[],
        )
        .await?
        .get(0))
}
