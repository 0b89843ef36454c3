//! [`PgProjectStore`]: the project store in PostgreSQL tables (see `migrations/`).
//!
//! A write is one database transaction: lock the project's row (`SELECT … FOR UPDATE`, waiting at
//! most the lock timeout) → read the state → run the domain's mutation on a copy → validate what
//! changed against the same schemas the filesystem adapter uses → write only the changed task
//! rows, the log entries (numbered from the row's counter) and the checkpoint → commit. Nothing
//! is visible before the commit and nothing survives a rollback, so a client killed mid-way
//! leaves no trace, and the log can never disagree with the state.
//!
//! Readers run in a read-only REPEATABLE READ transaction: one snapshot, never a mix of two
//! commits, and they never wait for a writer.
//!
//! Each call opens its own connection, driven on the caller's runtime: the binaries run a
//! runtime per process and the contract suite one per thread, and a connection must not outlive
//! the runtime that drives it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use cairn_domain::log::LogRecord;
use cairn_domain::ports::Clock;
use cairn_domain::project::policy::{CHECKPOINT_RETENTION, Velocity};
use cairn_domain::project::store::{
    CheckpointInfo, Committed, DumpedCheckpoint, DumpedResearch, Loaded, LogRead, Mutation,
    ProjectDump, ProjectStore, Scrutiny, StoreHealth,
};
use cairn_domain::project::{Project, ProjectEvent, ProjectId, ProjectState, TaskDoc, TaskId};
use cairn_domain::time::{Timestamp, format_rfc3339, parse_rfc3339};
use cairn_domain::{DomainError, Entity, Error, StoreError};
use cairn_storage_fs::schema::{self, SchemaKind};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, IsolationLevel, NoTls, Transaction};

/// How long a writer waits for another writer of the same project before giving up: the
/// filesystem adapter's default, so a team sees the same behaviour on either store.
pub const DEFAULT_LOCK_TIMEOUT: Duration = cairn_storage_fs::project_store::DEFAULT_LOCK_TIMEOUT;

/// How long a connection attempt may take before the store is reported unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Attempts at a transaction that the server aborted to keep concurrent ones serialisable
/// (a serialization failure or a deadlock) before the error is reported.
const MAX_ATTEMPTS: u32 = 5;

/// The PostgreSQL adapter of [`ProjectStore`].
pub struct PgProjectStore {
    config: Config,
    /// The URL without its password: what errors and hints show.
    shown: String,
    lock_timeout: Duration,
    clock: Option<Arc<dyn Clock>>,
    migrated: AtomicBool,
}

impl std::fmt::Debug for PgProjectStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgProjectStore")
            .field("url", &self.shown)
            .field("lock_timeout", &self.lock_timeout)
            .finish_non_exhaustive()
    }
}

/// Why a step of a transaction failed: the database (maybe worth a retry), the store's own
/// checks, or the domain's mutation.
enum Fail {
    Pg(tokio_postgres::Error),
    Store(StoreError),
    Domain(DomainError),
    /// The transaction's new state failed validation: logged as an ERROR entry after the
    /// rollback, as the filesystem adapter logs a refused write.
    Refused(StoreError),
}

impl From<tokio_postgres::Error> for Fail {
    fn from(e: tokio_postgres::Error) -> Self {
        Fail::Pg(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Store(e)
    }
}

fn retryable(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    })
}

/// Runs `$body` (an expression of type `Result<T, Fail>` using the transaction `$tx`) in a fresh
/// transaction, commits, and retries the whole of it, bounded, when the server aborted it to
/// serialise it with another. `$again` says whether a retry is still possible (a transaction
/// whose mutation already ran cannot be replayed). A macro rather than a function taking an async
/// closure: the port's futures must be `Send`, which a generic closure's future cannot promise.
macro_rules! in_tx {
    ($store:expr, $read_only:expr, $again:expr, |$tx:ident| $body:expr) => {{
        let mut client = $store.client().await.map_err(Fail::Store)?;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let $tx = $store
                .begin(&mut client, $read_only)
                .await
                .map_err(Fail::Pg)?;
            let result: Result<_, Fail> = async { $body }.await;
            let result = match result {
                Ok(value) => $tx.commit().await.map(|()| value).map_err(Fail::Pg),
                Err(fail) => Err(fail),
            };
            match result {
                Err(Fail::Pg(e)) if retryable(&e) && attempt < MAX_ATTEMPTS && $again => {
                    continue;
                }
                Err(Fail::Pg(e)) => break Err(Fail::Store($store.pg_error("use", e))),
                other => break other,
            }
        }
    }};
}

/// [`in_tx!`] for the port's methods that return a `StoreError`: retried whenever the server
/// asks (none of them runs a mutation that could not be replayed).
macro_rules! store_tx {
    ($store:expr, $read_only:expr, |$tx:ident| $body:expr) => {
        (async { in_tx!($store, $read_only, true, |$tx| $body) })
            .await
            .map_err(Fail::into_store)
    };
}

impl PgProjectStore {
    /// A store on the database at `url` (`postgres://user:password@host:port/dbname`). Connects
    /// on first use, applying the schema migrations the database lacks.
    /// Errors: `Io` when `url` is not a connection string.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        let shown = crate::url::redact(url);
        let mut config: Config = url.parse().map_err(|e| StoreError::Io {
            op: "parse the store URL",
            path: shown.clone(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
        })?;
        config.connect_timeout(CONNECT_TIMEOUT);
        config.application_name("cairn");
        Ok(Self {
            config,
            shown,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            clock: None,
            migrated: AtomicBool::new(false),
        })
    }

    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    /// The clock recoveries would be stamped with; kept for parity with the filesystem adapter
    /// (a database never needs a recovery, so nothing reads it yet).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The URL without its password.
    pub fn shown_url(&self) -> &str {
        &self.shown
    }

    /// Applies the schema migrations the database lacks; returns the versions applied (none
    /// when it was current). Errors: `Io` (cannot connect, or a migration failed).
    pub async fn migrate(&self) -> Result<Vec<i32>, StoreError> {
        let mut client = self.connect().await?;
        let applied = crate::migrate::apply(&mut client)
            .await
            .map_err(|e| self.pg_error("migrate the schema of", e))?;
        self.migrated.store(true, Ordering::Release);
        Ok(applied)
    }

    async fn connect(&self) -> Result<Client, StoreError> {
        let (client, connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(|e| self.pg_error("connect to the PostgreSQL store at", e))?;
        tokio::spawn(async move {
            // The connection ends when the client is dropped; an error then has no one to tell.
            let _ = connection.await;
        });
        Ok(client)
    }

    /// A connection to a database whose schema is current.
    async fn client(&self) -> Result<Client, StoreError> {
        let mut client = self.connect().await?;
        if !self.migrated.load(Ordering::Acquire) {
            crate::migrate::apply(&mut client)
                .await
                .map_err(|e| self.pg_error("migrate the schema of", e))?;
            self.migrated.store(true, Ordering::Release);
        }
        Ok(client)
    }

    async fn begin<'c>(
        &self,
        client: &'c mut Client,
        read_only: bool,
    ) -> Result<Transaction<'c>, tokio_postgres::Error> {
        let tx = if read_only {
            client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await?
        } else {
            client.transaction().await?
        };
        if !read_only {
            let ms = self.lock_timeout.as_millis().max(1);
            tx.batch_execute(&format!("SET LOCAL lock_timeout = {ms}"))
                .await?;
        }
        Ok(tx)
    }

    fn pg_error(&self, op: &'static str, e: tokio_postgres::Error) -> StoreError {
        if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) {
            return StoreError::LockTimeout {
                lock: format!("a project's row in {}", self.shown),
                waited_ms: u64::try_from(self.lock_timeout.as_millis()).unwrap_or(u64::MAX),
            };
        }
        let op = match op {
            "use" => "use the PostgreSQL store at",
            other => other,
        };
        StoreError::Io {
            op,
            path: self.shown.clone(),
            source: std::io::Error::other(e),
        }
    }

    /// Where a project's document lives, for errors: the database and the file it stands for.
    fn place(&self, id: &ProjectId, what: &str) -> String {
        format!("{} (project {id}, {what})", self.shown)
    }

    fn invalid(&self, id: &ProjectId, what: &str, detail: String) -> StoreError {
        StoreError::Invalid {
            path: self.place(id, what),
            detail,
        }
    }

    fn corrupt(&self, id: &ProjectId, what: &str, detail: String) -> StoreError {
        StoreError::Corrupt {
            path: self.place(id, what),
            detail,
        }
    }

    /// Serialises `value` after validating it against `kind`, as the filesystem adapter does
    /// before every write.
    fn checked<T: Serialize>(
        &self,
        id: &ProjectId,
        what: &str,
        value: &T,
        kind: SchemaKind,
    ) -> Result<Value, StoreError> {
        let json =
            serde_json::to_value(value).map_err(|e| self.invalid(id, what, e.to_string()))?;
        schema::validate(kind, &json)
            .map_err(|errors| self.invalid(id, what, errors.join("; ")))?;
        Ok(json)
    }

    /// tasks.json without its tasks, validated.
    fn checked_top(&self, id: &ProjectId, doc: &TaskDoc) -> Result<String, StoreError> {
        let mut value = self.checked(id, "tasks.json", &doc.without_tasks(), SchemaKind::Tasks)?;
        if let Value::Object(fields) = &mut value {
            fields.remove("tasks");
        }
        Ok(value.to_string())
    }

    /// The project's row, locked for this transaction; `NotFound` when there is none.
    async fn lock_row(&self, tx: &Transaction<'_>, id: &ProjectId) -> Result<Head, Fail> {
        let row = tx
            .query_opt(
                "SELECT record, task_doc, log_seq, checkpoint_seq FROM cairn_projects
                 WHERE id = $1 FOR UPDATE",
                &[&id.as_str()],
            )
            .await?
            .ok_or_else(|| not_found(id))?;
        Ok(Head::from_row(&row))
    }

    /// Fails with `NotFound` unless the project exists (no lock).
    async fn exists(&self, tx: &Transaction<'_>, id: &ProjectId) -> Result<(), Fail> {
        tx.query_opt(
            "SELECT 1 FROM cairn_projects WHERE id = $1",
            &[&id.as_str()],
        )
        .await?
        .map(|_| ())
        .ok_or_else(|| Fail::Store(not_found(id)))
    }

    async fn read_state(
        &self,
        tx: &Transaction<'_>,
        id: &ProjectId,
        head: &Head,
    ) -> Result<ProjectState, Fail> {
        let project = self.parse_project(id, &head.record)?;
        let rows = tx
            .query(
                "SELECT body FROM cairn_tasks WHERE project = $1 ORDER BY position",
                &[&id.as_str()],
            )
            .await?;
        let mut top: Map<String, Value> = serde_json::from_str(&head.task_doc)
            .map_err(|e| self.corrupt(id, "tasks.json", e.to_string()))?;
        let tasks = rows
            .iter()
            .map(|row| serde_json::from_str::<Value>(row.get(0)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.corrupt(id, "tasks.json", e.to_string()))?;
        top.insert("tasks".into(), Value::Array(tasks));
        let tasks: TaskDoc = serde_json::from_value(Value::Object(top))
            .map_err(|e| self.corrupt(id, "tasks.json", e.to_string()))?;
        Ok(ProjectState { project, tasks })
    }

    fn parse_project(&self, id: &ProjectId, record: &str) -> Result<Project, StoreError> {
        serde_json::from_str(record).map_err(|e| self.corrupt(id, "project.json", e.to_string()))
    }

    /// Writes the tasks of `next` that differ from `before` (every one when there is no
    /// `before`): a transaction that moves one task of ten thousand writes one row.
    async fn write_tasks(
        &self,
        tx: &Transaction<'_>,
        id: &ProjectId,
        before: Option<&TaskDoc>,
        next: &TaskDoc,
    ) -> Result<(), Fail> {
        let empty = TaskDoc::new(id.clone());
        let before = before.unwrap_or(&empty);
        let (mut ids, mut positions, mut bodies) = (Vec::new(), Vec::new(), Vec::new());
        for (i, task) in next.tasks.iter().enumerate() {
            if before.tasks.get(i) == Some(task) {
                continue;
            }
            let body = self.checked(id, "tasks.json", task, SchemaKind::Task)?;
            ids.push(task.id.to_string());
            positions.push(i32::try_from(i).unwrap_or(i32::MAX));
            bodies.push(body.to_string());
        }
        let kept: std::collections::HashSet<&TaskId> = next.tasks.iter().map(|t| &t.id).collect();
        let gone: Vec<String> = before
            .tasks
            .iter()
            .filter(|t| !kept.contains(&t.id))
            .map(|t| t.id.to_string())
            .collect();
        if !gone.is_empty() {
            tx.execute(
                "DELETE FROM cairn_tasks WHERE project = $1 AND id = ANY($2)",
                &[&id.as_str(), &gone],
            )
            .await?;
        }
        if !ids.is_empty() {
            tx.execute(
                "INSERT INTO cairn_tasks (project, id, position, body)
                 SELECT $1, * FROM unnest($2::text[], $3::int[], $4::text[])
                 ON CONFLICT (project, id)
                 DO UPDATE SET position = EXCLUDED.position, body = EXCLUDED.body",
                &[&id.as_str(), &ids, &positions, &bodies],
            )
            .await?;
        }
        Ok(())
    }

    /// Appends `records` after the log's `seq`-th entry; returns the new last number. The
    /// caller holds the project's row, so numbers are handed out in commit order.
    async fn write_log(
        &self,
        tx: &Transaction<'_>,
        id: &ProjectId,
        seq: i64,
        records: &[LogRecord],
    ) -> Result<i64, Fail> {
        if records.is_empty() {
            return Ok(seq);
        }
        let seqs: Vec<i64> = (1..=records.len() as i64).map(|n| seq + n).collect();
        let ats: Vec<String> = records.iter().map(|r| format_rfc3339(&r.at)).collect();
        let kinds: Vec<String> = records.iter().map(|r| r.kind.clone()).collect();
        let fields: Vec<String> = records
            .iter()
            .map(|r| serde_json::to_string(&r.fields).unwrap_or_else(|_| "[]".into()))
            .collect();
        tx.execute(
            "INSERT INTO cairn_log (project, seq, at, kind, fields)
             SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[])",
            &[&id.as_str(), &seqs, &ats, &kinds, &fields],
        )
        .await?;
        let last = seq + records.len() as i64;
        tx.execute(
            "UPDATE cairn_projects SET log_seq = $2 WHERE id = $1",
            &[&id.as_str(), &last],
        )
        .await?;
        Ok(last)
    }

    /// Snapshots `doc` as checkpoint `checkpoint_seq + 1`, prunes to the newest ten; returns the
    /// number and the snapshot's size.
    async fn write_snapshot(
        &self,
        tx: &Transaction<'_>,
        id: &ProjectId,
        checkpoint_seq: i32,
        doc: &TaskDoc,
        at: Timestamp,
    ) -> Result<(u32, u64), Fail> {
        let value = self.checked(id, "checkpoint", doc, SchemaKind::Checkpoint)?;
        let mut body = serde_json::to_string_pretty(&value)
            .map_err(|e| self.invalid(id, "checkpoint", e.to_string()))?;
        body.push('\n');
        let number = checkpoint_seq + 1;
        tx.execute(
            "INSERT INTO cairn_checkpoints (project, number, written_at, body)
             VALUES ($1, $2, $3, $4)",
            &[&id.as_str(), &number, &format_rfc3339(&at), &body],
        )
        .await?;
        tx.execute(
            "UPDATE cairn_projects SET checkpoint_seq = $2 WHERE id = $1",
            &[&id.as_str(), &number],
        )
        .await?;
        let keep = i64::try_from(CHECKPOINT_RETENTION).unwrap_or(i64::MAX);
        tx.execute(
            "DELETE FROM cairn_checkpoints WHERE project = $1 AND number NOT IN
               (SELECT number FROM cairn_checkpoints WHERE project = $1
                ORDER BY number DESC LIMIT $2)",
            &[&id.as_str(), &keep],
        )
        .await?;
        Ok((u32::try_from(number).unwrap_or(u32::MAX), body.len() as u64))
    }

    /// One column of the project's row, read without a lock. `column` is one of this crate's
    /// constants, never input.
    async fn project_column<T>(&self, id: &ProjectId, column: &str) -> Result<T, StoreError>
    where
        T: for<'r> tokio_postgres::types::FromSql<'r> + Send,
    {
        let sql = format!("SELECT {column} FROM cairn_projects WHERE id = $1");
        store_tx!(self, true, |tx| {
            let row = tx
                .query_opt(sql.as_str(), &[&id.as_str()])
                .await?
                .ok_or_else(|| not_found(id))?;
            Ok(row.get(0))
        })
    }

    /// The log entries of `rows` (`at`, `kind`, `fields` as stored), in the rows' order.
    fn log_records(
        &self,
        id: &ProjectId,
        rows: Vec<(String, String, String)>,
    ) -> Result<Vec<LogRecord>, StoreError> {
        rows.into_iter()
            .map(|(at, kind, fields)| {
                let at = parse_rfc3339(&at)
                    .ok_or_else(|| self.corrupt(id, "progress log", format!("bad time {at}")))?;
                let fields = serde_json::from_str(&fields)
                    .map_err(|e| self.corrupt(id, "progress log", e.to_string()))?;
                Ok(LogRecord { at, kind, fields })
            })
            .collect()
    }

    /// Logs that a write was refused, in a transaction of its own (the refused one rolled back),
    /// as the filesystem adapter does.
    async fn log_refusal(&self, id: &ProjectId, at: Timestamp, error: &StoreError) {
        let events = vec![ProjectEvent::Error {
            task: None,
            message: format!("write refused, nothing changed: {error}"),
        }];
        // The refusal is what the caller must hear about; failing to log it adds nothing.
        let _ = self.append_log(id, at, events).await;
    }
}

/// The project's row as a writer locked it.
struct Head {
    record: String,
    task_doc: String,
    log_seq: i64,
    checkpoint_seq: i32,
}

impl Head {
    /// A row that starts `record, task_doc, log_seq, checkpoint_seq` (further columns are the
    /// caller's).
    fn from_row(row: &tokio_postgres::Row) -> Head {
        Head {
            record: row.get(0),
            task_doc: row.get(1),
            log_seq: row.get(2),
            checkpoint_seq: row.get(3),
        }
    }
}

fn not_found(id: &ProjectId) -> StoreError {
    StoreError::NotFound {
        entity: Entity::Project,
        id: id.to_string(),
    }
}

fn records(at: Timestamp, events: &[ProjectEvent]) -> Vec<LogRecord> {
    events.iter().map(|e| e.to_record(at)).collect()
}

impl Fail {
    fn into_store(self) -> StoreError {
        match self {
            Fail::Store(e) | Fail::Refused(e) => e,
            // Only `transact` runs a mutation, and it maps this variant itself.
            Fail::Domain(e) => StoreError::Io {
                op: "run a mutation outside a transaction",
                path: String::new(),
                source: std::io::Error::other(e.to_string()),
            },
            Fail::Pg(e) => StoreError::Io {
                op: "use the PostgreSQL store",
                path: String::new(),
                source: std::io::Error::other(e),
            },
        }
    }

    fn into_error(self) -> Error {
        match self {
            Fail::Domain(e) => Error::Domain(e),
            other => Error::Store(other.into_store()),
        }
    }
}

#[async_trait]
impl ProjectStore for PgProjectStore {
    async fn list(&self) -> Result<Vec<ProjectId>, StoreError> {
        let ids: Vec<String> = store_tx!(self, true, |tx| {
            let rows = tx.query("SELECT id FROM cairn_projects", &[]).await?;
            Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
        })?;
        let mut ids: Vec<ProjectId> = ids
            .into_iter()
            .filter_map(|id| ProjectId::try_from(id).ok())
            .collect();
        ids.sort();
        Ok(ids)
    }

    async fn create(
        &self,
        project: &Project,
        at: Timestamp,
        events: Vec<ProjectEvent>,
    ) -> Result<(), StoreError> {
        let id = &project.id;
        let record = self
            .checked(id, "project.json", project, SchemaKind::Project)?
            .to_string();
        let doc = TaskDoc::new(id.clone());
        let top = self.checked_top(id, &doc)?;
        let entries = records(at, &events);
        store_tx!(self, false, |tx| {
            let inserted = tx
                .execute(
                    "INSERT INTO cairn_projects (id, record, task_doc) VALUES ($1, $2, $3)
                         ON CONFLICT (id) DO NOTHING",
                    &[&id.as_str(), &record, &top],
                )
                .await?;
            if inserted == 0 {
                return Err(Fail::Store(StoreError::AlreadyExists {
                    entity: Entity::Project,
                    id: id.to_string(),
                }));
            }
            self.write_log(&tx, id, 0, &entries).await?;
            Ok(())
        })
    }

    async fn load_project(&self, id: &ProjectId) -> Result<Project, StoreError> {
        let record: String = self.project_column(id, "record").await?;
        self.parse_project(id, &record)
    }

    async fn load(&self, id: &ProjectId) -> Result<Loaded, StoreError> {
        store_tx!(self, true, |tx| {
            let row = tx
                .query_opt(
                    "SELECT record, task_doc, log_seq, checkpoint_seq FROM cairn_projects
                         WHERE id = $1",
                    &[&id.as_str()],
                )
                .await?
                .ok_or_else(|| not_found(id))?;
            let head = Head::from_row(&row);
            let state = self.read_state(&tx, id, &head).await?;
            Ok(Loaded {
                state,
                recovered: None,
            })
        })
    }

    async fn transact(
        &self,
        id: &ProjectId,
        at: Timestamp,
        mutation: Mutation<'_>,
    ) -> Result<Committed, Error> {
        let mut mutation = Some(mutation);
        let result = (async {
            in_tx!(self, false, mutation.is_some(), |tx| {
                let head = self.lock_row(&tx, id).await?;
                let state = self.read_state(&tx, id, &head).await?;
                let mut next = state.clone();
                let Some(mutation) = mutation.take() else {
                    return Err(Fail::Store(StoreError::Io {
                        op: "retry a transaction whose mutation already ran on",
                        path: self.shown.clone(),
                        source: std::io::Error::other("the server aborted it after the mutation"),
                    }));
                };
                let changes = mutation(&mut next).map_err(Fail::Domain)?;
                if next.project != state.project {
                    let record = self
                        .checked(id, "project.json", &next.project, SchemaKind::Project)
                        .map_err(Fail::Refused)?
                        .to_string();
                    tx.execute(
                        "UPDATE cairn_projects SET record = $2 WHERE id = $1",
                        &[&id.as_str(), &record],
                    )
                    .await?;
                }
                if next.tasks != state.tasks {
                    let top = self.checked_top(id, &next.tasks).map_err(Fail::Refused)?;
                    if top != head.task_doc {
                        tx.execute(
                            "UPDATE cairn_projects SET task_doc = $2 WHERE id = $1",
                            &[&id.as_str(), &top],
                        )
                        .await?;
                    }
                    self.write_tasks(&tx, id, Some(&state.tasks), &next.tasks)
                        .await
                        .map_err(|fail| match fail {
                            Fail::Store(e) => Fail::Refused(e),
                            other => other,
                        })?;
                }
                let mut entries = records(at, &changes.events);
                let checkpoint = if changes.checkpoint {
                    let (number, _) = self
                        .write_snapshot(&tx, id, head.checkpoint_seq, &next.tasks, at)
                        .await?;
                    entries.push(
                        ProjectEvent::CheckpointWritten {
                            number,
                            tasks: next.tasks.tasks.len(),
                        }
                        .to_record(at),
                    );
                    Some(number)
                } else {
                    None
                };
                self.write_log(&tx, id, head.log_seq, &entries).await?;
                // Everything is written and nothing committed: a client dying here must leave
                // no trace (the crash test of `tests/cli/store.rs`).
                cairn_storage_fs::failpoint("pg:before-commit");
                Ok(Committed {
                    state: next,
                    checkpoint,
                    recovered: None,
                    velocity: None,
                })
            })
        })
        .await;
        match result {
            Err(Fail::Refused(e)) => {
                self.log_refusal(id, at, &e).await;
                Err(Error::Store(e))
            }
            other => other.map_err(Fail::into_error),
        }
    }

    async fn append_log(
        &self,
        id: &ProjectId,
        at: Timestamp,
        events: Vec<ProjectEvent>,
    ) -> Result<(), StoreError> {
        let entries = records(at, &events);
        store_tx!(self, false, |tx| {
            let head = self.lock_row(&tx, id).await?;
            self.write_log(&tx, id, head.log_seq, &entries).await?;
            Ok(())
        })
    }

    async fn read_log(&self, id: &ProjectId, tail: Option<usize>) -> Result<LogRead, StoreError> {
        let limit = tail.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let rows: Vec<(String, String, String)> = store_tx!(self, true, |tx| {
            self.exists(&tx, id).await?;
            let rows = tx
                .query(
                    "SELECT at, kind, fields FROM cairn_log WHERE project = $1
                         ORDER BY seq DESC LIMIT $2",
                    &[&id.as_str(), &limit],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2)))
                .collect())
        })?;
        let mut records = self.log_records(id, rows)?;
        records.reverse();
        Ok(LogRead {
            records,
            torn_tail: None,
        })
    }

    async fn research_modified(
        &self,
        id: &ProjectId,
        task: &TaskId,
    ) -> Result<Option<Timestamp>, StoreError> {
        let at: Option<String> = store_tx!(self, true, |tx| {
            self.exists(&tx, id).await?;
            Ok(tx
                .query_opt(
                    "SELECT modified_at FROM cairn_research WHERE project = $1 AND task = $2",
                    &[&id.as_str(), &task.as_str()],
                )
                .await?
                .map(|r| r.get(0)))
        })?;
        Ok(at.and_then(|at| parse_rfc3339(&at)))
    }

    async fn read_research(
        &self,
        id: &ProjectId,
        task: &TaskId,
    ) -> Result<Option<String>, StoreError> {
        store_tx!(self, true, |tx| {
            self.exists(&tx, id).await?;
            Ok(tx
                .query_opt(
                    "SELECT body FROM cairn_research WHERE project = $1 AND task = $2",
                    &[&id.as_str(), &task.as_str()],
                )
                .await?
                .map(|r| r.get(0)))
        })
    }

    async fn write_research(
        &self,
        id: &ProjectId,
        task: &TaskId,
        text: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        let at = format_rfc3339(&at);
        store_tx!(self, false, |tx| {
            self.exists(&tx, id).await?;
            tx.execute(
                "INSERT INTO cairn_research (project, task, modified_at, body)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (project, task)
                     DO UPDATE SET modified_at = EXCLUDED.modified_at, body = EXCLUDED.body",
                &[&id.as_str(), &task.as_str(), &at, &text],
            )
            .await?;
            Ok(())
        })
    }

    async fn list_checkpoints(&self, id: &ProjectId) -> Result<Vec<CheckpointInfo>, StoreError> {
        store_tx!(self, true, |tx| {
            self.exists(&tx, id).await?;
            let rows = tx
                .query(
                    "SELECT number, written_at, octet_length(body)
                         FROM cairn_checkpoints WHERE project = $1 ORDER BY number",
                    &[&id.as_str()],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| CheckpointInfo {
                    number: u32::try_from(r.get::<_, i32>(0)).unwrap_or(0),
                    written_at: parse_rfc3339(r.get(1)),
                    size_bytes: u64::try_from(r.get::<_, i32>(2)).unwrap_or(0),
                })
                .collect())
        })
    }

    async fn write_checkpoint(
        &self,
        id: &ProjectId,
        at: Timestamp,
    ) -> Result<CheckpointInfo, StoreError> {
        store_tx!(self, false, |tx| {
            let head = self.lock_row(&tx, id).await?;
            let state = self.read_state(&tx, id, &head).await?;
            let (number, size) = self
                .write_snapshot(&tx, id, head.checkpoint_seq, &state.tasks, at)
                .await?;
            let entry = ProjectEvent::CheckpointWritten {
                number,
                tasks: state.tasks.tasks.len(),
            }
            .to_record(at);
            self.write_log(&tx, id, head.log_seq, &[entry]).await?;
            Ok(CheckpointInfo {
                number,
                written_at: Some(at),
                size_bytes: size,
            })
        })
    }

    async fn restore_checkpoint(
        &self,
        id: &ProjectId,
        number: u32,
        at: Timestamp,
    ) -> Result<Committed, StoreError> {
        let wanted = i32::try_from(number).unwrap_or(i32::MAX);
        store_tx!(self, false, |tx| {
            let head = self.lock_row(&tx, id).await?;
            let body: String = tx
                .query_opt(
                    "SELECT body FROM cairn_checkpoints WHERE project = $1 AND number = $2",
                    &[&id.as_str(), &wanted],
                )
                .await?
                .ok_or_else(|| StoreError::NotFound {
                    entity: Entity::Checkpoint,
                    id: number.to_string(),
                })?
                .get(0);
            let what = format!("checkpoint {number}");
            let doc = salvage(&body).ok_or_else(|| {
                self.corrupt(id, &what, "the checkpoint holds no valid task".into())
            })?;
            let state = self.read_state(&tx, id, &head).await?;
            // Save what is being replaced, so the restore can be undone.
            let (saved, _) = self
                .write_snapshot(&tx, id, head.checkpoint_seq, &state.tasks, at)
                .await?;
            let top = self.checked_top(id, &doc)?;
            tx.execute(
                "UPDATE cairn_projects SET task_doc = $2 WHERE id = $1",
                &[&id.as_str(), &top],
            )
            .await?;
            self.write_tasks(&tx, id, Some(&state.tasks), &doc).await?;
            let entries = records(
                at,
                &[
                    ProjectEvent::CheckpointWritten {
                        number: saved,
                        tasks: state.tasks.tasks.len(),
                    },
                    ProjectEvent::CheckpointRestored {
                        number,
                        tasks: doc.tasks.len(),
                    },
                ],
            );
            self.write_log(&tx, id, head.log_seq, &entries).await?;
            Ok(Committed {
                state: ProjectState {
                    project: state.project,
                    tasks: doc,
                },
                checkpoint: None,
                recovered: None,
                velocity: None,
            })
        })
    }

    async fn read_velocity(&self, id: &ProjectId) -> Result<Option<Velocity>, StoreError> {
        let text: Option<String> = self.project_column(id, "velocity").await?;
        text.map(|text| {
            serde_json::from_str(&text)
                .map_err(|e| self.corrupt(id, "velocity.json", e.to_string()))
        })
        .transpose()
    }

    async fn write_velocity(&self, id: &ProjectId, velocity: &Velocity) -> Result<(), StoreError> {
        let text = self
            .checked(id, "velocity.json", velocity, SchemaKind::Velocity)?
            .to_string();
        store_tx!(self, false, |tx| {
            self.lock_row(&tx, id).await?;
            tx.execute(
                "UPDATE cairn_projects SET velocity = $2 WHERE id = $1",
                &[&id.as_str(), &text],
            )
            .await?;
            Ok(())
        })
    }

    async fn update_velocity(
        &self,
        id: &ProjectId,
        update: &(dyn Fn(Option<Velocity>) -> Option<Velocity> + Send + Sync),
    ) -> Result<Option<Velocity>, StoreError> {
        store_tx!(self, false, |tx| {
            self.lock_row(&tx, id).await?;
            let row = tx
                .query_one(
                    "SELECT velocity FROM cairn_projects WHERE id = $1",
                    &[&id.as_str()],
                )
                .await?;
            let text: Option<String> = row.get(0);
            // A damaged value is replaced by what the update makes of nothing, like a missing one.
            let current = text.and_then(|text| serde_json::from_str(&text).ok());
            let Some(next) = update(current) else {
                return Ok(None);
            };
            let text = self
                .checked(id, "velocity.json", &next, SchemaKind::Velocity)?
                .to_string();
            tx.execute(
                "UPDATE cairn_projects SET velocity = $2 WHERE id = $1",
                &[&id.as_str(), &text],
            )
            .await?;
            Ok(Some(next))
        })
    }

    async fn clean_debris(
        &self,
        id: &ProjectId,
        _now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        // A transaction that did not commit left nothing behind: there is never debris.
        store_tx!(self, true, |tx| self.exists(&tx, id).await)?;
        Ok(Vec::new())
    }

    async fn export_project(&self, id: &ProjectId) -> Result<ProjectDump, StoreError> {
        type Rows = Vec<(String, String, String)>;
        // One read-only snapshot: the state, the log and the checkpoints of one moment.
        let (state, velocity, log, checkpoints, research): (
            ProjectState,
            Option<String>,
            Rows,
            Vec<(i32, String, String)>,
            Rows,
        ) = store_tx!(self, true, |tx| {
            let row = tx
                .query_opt(
                    "SELECT record, task_doc, log_seq, checkpoint_seq, velocity
                     FROM cairn_projects WHERE id = $1",
                    &[&id.as_str()],
                )
                .await?
                .ok_or_else(|| not_found(id))?;
            let head = Head::from_row(&row);
            let state = self.read_state(&tx, id, &head).await?;
            let triples = |rows: Vec<tokio_postgres::Row>| -> Rows {
                rows.iter()
                    .map(|r| (r.get(0), r.get(1), r.get(2)))
                    .collect()
            };
            let log = triples(
                tx.query(
                    "SELECT at, kind, fields FROM cairn_log WHERE project = $1 ORDER BY seq",
                    &[&id.as_str()],
                )
                .await?,
            );
            let checkpoints = tx
                .query(
                    "SELECT number, written_at, body FROM cairn_checkpoints WHERE project = $1
                     ORDER BY number",
                    &[&id.as_str()],
                )
                .await?
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2)))
                .collect();
            let research = triples(
                tx.query(
                    "SELECT task, modified_at, body FROM cairn_research WHERE project = $1
                     ORDER BY task",
                    &[&id.as_str()],
                )
                .await?,
            );
            Ok((state, row.get(4), log, checkpoints, research))
        })?;
        let checkpoints = checkpoints
            .into_iter()
            .map(|(number, written_at, body)| {
                let what = format!("checkpoint {number}");
                Ok(DumpedCheckpoint {
                    number: u32::try_from(number).unwrap_or(0),
                    written_at: parse_rfc3339(&written_at),
                    tasks: serde_json::from_str(&body)
                        .map_err(|e| self.corrupt(id, &what, e.to_string()))?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let mut research = research
            .into_iter()
            .map(|(task, modified_at, text)| {
                let task = TaskId::try_from(task)
                    .map_err(|e| self.corrupt(id, "research", e.to_string()))?;
                Ok(DumpedResearch {
                    task,
                    modified_at: parse_rfc3339(&modified_at),
                    text,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        research.sort_by(|a, b| a.task.cmp(&b.task));
        let velocity = velocity
            .map(|text| {
                serde_json::from_str(&text)
                    .map_err(|e| self.corrupt(id, "velocity.json", e.to_string()))
            })
            .transpose()?;
        Ok(ProjectDump {
            state,
            log: self.log_records(id, log)?,
            checkpoints,
            research,
            velocity,
        })
    }

    async fn import_project(&self, dump: &ProjectDump, replace: bool) -> Result<(), StoreError> {
        let ProjectState { project, tasks } = &dump.state;
        let id = &project.id;
        // Everything is validated before the transaction starts; the transaction then writes it
        // all or, killed or refused, nothing.
        let record = self
            .checked(id, "project.json", project, SchemaKind::Project)?
            .to_string();
        let top = self.checked_top(id, tasks)?;
        let velocity = dump
            .velocity
            .as_ref()
            .map(|v| {
                self.checked(id, "velocity.json", v, SchemaKind::Velocity)
                    .map(|v| v.to_string())
            })
            .transpose()?;
        let mut snapshots = Vec::new();
        for c in &dump.checkpoints {
            let value = self.checked(id, "checkpoint", &c.tasks, SchemaKind::Checkpoint)?;
            let mut body = serde_json::to_string_pretty(&value)
                .map_err(|e| self.invalid(id, "checkpoint", e.to_string()))?;
            body.push('\n');
            let written_at = format_rfc3339(&c.written_at.unwrap_or(project.updated_at));
            snapshots.push((
                i32::try_from(c.number).unwrap_or(i32::MAX),
                written_at,
                body,
            ));
        }
        let newest = snapshots.iter().map(|s| s.0).max().unwrap_or(0);
        store_tx!(self, false, |tx| {
            let present = tx
                .query_opt(
                    "SELECT 1 FROM cairn_projects WHERE id = $1 FOR UPDATE",
                    &[&id.as_str()],
                )
                .await?
                .is_some();
            if present && !replace {
                return Err(Fail::Store(StoreError::AlreadyExists {
                    entity: Entity::Project,
                    id: id.to_string(),
                }));
            }
            if present {
                tx.execute("DELETE FROM cairn_projects WHERE id = $1", &[&id.as_str()])
                    .await?;
            }
            tx.execute(
                "INSERT INTO cairn_projects (id, record, task_doc, velocity, checkpoint_seq)
                 VALUES ($1, $2, $3, $4, $5)",
                &[&id.as_str(), &record, &top, &velocity, &newest],
            )
            .await?;
            self.write_tasks(&tx, id, None, tasks).await?;
            self.write_log(&tx, id, 0, &dump.log).await?;
            for (number, written_at, body) in &snapshots {
                tx.execute(
                    "INSERT INTO cairn_checkpoints (project, number, written_at, body)
                     VALUES ($1, $2, $3, $4)",
                    &[&id.as_str(), number, written_at, body],
                )
                .await?;
            }
            for brief in &dump.research {
                let at = format_rfc3339(&brief.modified_at.unwrap_or(project.updated_at));
                tx.execute(
                    "INSERT INTO cairn_research (project, task, modified_at, body)
                     VALUES ($1, $2, $3, $4)",
                    &[&id.as_str(), &brief.task.as_str(), &at, &brief.text],
                )
                .await?;
            }
            Ok(())
        })
    }

    /// Every scrutiny looks at everything: the rows were written whole by transactions, so
    /// there is no torn file to look for, and what is checked is each document's schema.
    async fn health(
        &self,
        id: &ProjectId,
        _now: Timestamp,
        _scrutiny: Scrutiny,
    ) -> Result<StoreHealth, StoreError> {
        let (head, velocity, checkpoints): (Head, Option<String>, Vec<(i32, String)>) =
            store_tx!(self, true, |tx| {
                let row = tx
                    .query_opt(
                        "SELECT record, task_doc, velocity FROM cairn_projects WHERE id = $1",
                        &[&id.as_str()],
                    )
                    .await?
                    .ok_or_else(|| not_found(id))?;
                let head = Head {
                    record: row.get(0),
                    task_doc: row.get(1),
                    log_seq: 0,
                    checkpoint_seq: 0,
                };
                let checkpoints = tx
                    .query(
                        "SELECT number, body FROM cairn_checkpoints WHERE project = $1
                         ORDER BY number",
                        &[&id.as_str()],
                    )
                    .await?
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect();
                Ok((head, row.get(2), checkpoints))
            })?;
        let mut health = StoreHealth::default();
        let mut check = |what: String, text: &str, kind: SchemaKind| {
            let problem = match serde_json::from_str::<Value>(text) {
                Err(e) => Some(format!("not valid JSON: {e}")),
                Ok(mut value) => {
                    if kind == SchemaKind::Tasks
                        && let Value::Object(fields) = &mut value
                    {
                        fields.insert("tasks".into(), Value::Array(Vec::new()));
                    }
                    schema::validate(kind, &value)
                        .err()
                        .map(|errors| format!("fails its schema: {}", errors.join("; ")))
                }
            };
            if let Some(problem) = problem {
                health.damaged.push((what, problem));
            }
        };
        check(
            self.place(id, "project.json"),
            &head.record,
            SchemaKind::Project,
        );
        check(
            self.place(id, "tasks.json"),
            &head.task_doc,
            SchemaKind::Tasks,
        );
        if let Some(velocity) = &velocity {
            check(
                self.place(id, "velocity.json"),
                velocity,
                SchemaKind::Velocity,
            );
        }
        for (number, body) in &checkpoints {
            check(
                self.place(id, &format!("checkpoint {number}")),
                body,
                SchemaKind::Checkpoint,
            );
        }
        Ok(health)
    }
}

/// The tasks of a checkpoint that pass validation, in the checkpoint's document; `None` when
/// it holds none.
fn salvage(body: &str) -> Option<TaskDoc> {
    let Value::Object(mut fields) = serde_json::from_str(body).ok()? else {
        return None;
    };
    let tasks = schema::valid_tasks(&Value::Object(fields.clone()));
    if tasks.is_empty() {
        return None;
    }
    fields.insert("tasks".into(), Value::Array(Vec::new()));
    let shell = Value::Object(fields);
    let mut doc: TaskDoc = if schema::is_valid(SchemaKind::Tasks, &shell) {
        serde_json::from_value(shell).ok()?
    } else {
        TaskDoc {
            version: 1,
            project_id: None,
            tasks: Default::default(),
            completions_since_checkpoint: 0,
            extra: Map::new(),
        }
    };
    doc.tasks = tasks
        .into_iter()
        .filter_map(|t| serde_json::from_value(t).ok())
        .collect();
    (!doc.tasks.is_empty()).then_some(doc)
}
