//! The SQLite backend: one file in WAL mode, migrations (`migrations/sqlite`)
//! applied on open. The statements are the shared ones ([`crate::sql`]); this
//! module holds the connection settings, the dialect's JSON functions
//! (`json_set`, `json_each`) and the journal's own rusqlite connection
//! (`sqlite_batch`).

use crate::session_cache::SessionCache;
use crate::sql::{Backend, Dialect, Doc, Exec, Sql, SqlStore, exec_glue};
use crate::{BatchWriter, Error, Result};
use protocol::ids::SessionId;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// A store in one SQLite file.
pub type SqliteStore = SqlStore<SqliteDb>;

/// The SQLite database: its pool, and the file for the journal writer's own connection.
#[derive(Debug, Clone)]
pub struct SqliteDb {
    pub(crate) pool: SqlitePool,
    path: PathBuf,
}

exec_glue!(SqliteDb, sqlx::Sqlite);

#[async_trait::async_trait]
impl Backend for SqliteDb {
    const DIALECT: Dialect = Dialect {
        sessions_on_environment: "SELECT COUNT(*) FROM sessions \
             WHERE org_id = $1 AND json_extract(doc, '$.environment.id') = $2",
        environment_sessions: "SELECT id FROM sessions \
             WHERE org_id = $1 AND json_extract(doc, '$.environment.id') = $2 ORDER BY seq",
        metadata,
    };

    async fn put_session(&self, org_id: &str, id: SessionId, doc: Doc) -> Result<bool> {
        // One statement: json_set keeps the stored engine-owned fields.
        let sql = Sql::new(
            "UPDATE sessions SET doc = json_set($1, \
               '$.status', doc -> '$.status', '$.error', doc -> '$.error', \
               '$.last_active_at', doc -> '$.last_active_at', '$.usage', doc -> '$.usage', \
               '$.required_actions', json(coalesce(doc -> '$.required_actions', '[]'))) \
             WHERE id = $2 AND org_id = $3",
        )
        .bind(doc)
        .bind(id)
        .bind(org_id);
        Ok(self.execute(&sql).await? > 0)
    }

    fn batch_writer(&self, sessions: Arc<SessionCache>) -> Result<Box<dyn BatchWriter>> {
        Ok(Box::new(crate::sqlite_batch::SqliteWriter::open(&self.path, sessions)?))
    }
}

/// Keeps the database's files to their owner: a missing database file is
/// created 0600 before SQLite opens it (SQLite gives its `-wal` and `-shm`
/// the main file's mode), and an existing one's files lose their group and
/// other permissions. What cannot be done is logged; SQLite's own open
/// reports a file it cannot use.
fn private_files(path: &Path) {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let created = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path);
    if let Err(e) = created
        && e.kind() != std::io::ErrorKind::AlreadyExists
    {
        tracing::warn!(path = %path.display(), error = %e, "cannot create the database file with mode 0600");
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        let Ok(meta) = std::fs::metadata(&file) else { continue };
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0
            && let Err(e) = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode & 0o700))
        {
            tracing::warn!(path = %file.display(), error = %e, "cannot restrict the database file to its owner");
        }
    }
}

/// `AND metadata[key] = value` on `table.doc`.
fn metadata(q: &mut Sql, table: &str, key: &str, value: &str) {
    q.push(format!(" AND EXISTS (SELECT 1 FROM json_each({table}.doc, '$.metadata') WHERE key = "));
    q.push_bind(key);
    q.push(" AND value = ");
    q.push_bind(value);
    q.push(")");
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path` and migrates it.
    pub async fn open(path: &Path) -> Result<Self> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // NORMAL in WAL mode is durable across process crashes; only a power
            // loss may drop the last commits.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true)
            .pragma("cache_size", "-16000");
        Self::connect(options).await
    }

    /// Opens a database from a `sqlite://…` URL (a file: an in-memory
    /// database would lose everything at each restart, and the journal writes
    /// through a connection of its own).
    pub async fn open_url(url: &str) -> Result<Self> {
        if url.contains(":memory:") || url.contains("mode=memory") {
            return Err(Error::Config(format!("{url}: an in-memory database is not supported; name a file")));
        }
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        Self::connect(options).await
    }

    async fn connect(options: SqliteConnectOptions) -> Result<Self> {
        let path = options.get_filename().to_path_buf();
        private_files(&path);
        // No ping before each statement (sqlx's default): a SQLite connection is a file this
        // process holds, with no server to lose it, and the ping was a round trip to the
        // connection's thread before every query.
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .min_connections(2)
            .test_before_acquire(false)
            .connect_with(options)
            .await?;
        crate::migrate::run(&MIGRATOR, &pool).await?;
        Ok(SqlStore::new(SqliteDb { pool, path }))
    }
}
