//! The PostgreSQL backend: a pool over `postgres://…`, migrations
//! (`migrations/postgres`) applied on open under sqlx's advisory lock, so two
//! servers starting at once migrate once. The statements are the shared ones
//! ([`crate::sql`]); this module holds the connection settings, the dialect's
//! JSON operators (`||`, `->>`) and the journal's writer (`postgres_batch`).
//!
//! Documents are `TEXT` (`jsonb` cannot hold U+0000); the two queries that
//! look inside them read them as `jsonb` with that escape replaced.
//!
//! Errors that mean the database is gone (refused or
//! broken connections, a shutdown) are [`Error::Unavailable`]: the pool
//! reconnects by itself once the database is back.

use crate::cluster::notices::{CHANNEL, Notice, Sender};
use crate::session_cache::SessionCache;
use crate::sql::{Backend, Dialect, Doc, Sql, SqlStore, exec_glue, keep_state};
use crate::{BatchWriter, Error, Result};
use protocol::ids::SessionId;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgPool};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// How long a request waits for a pooled connection (and so for an
/// unreachable database) before it fails as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the first connection at start may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A store in one PostgreSQL database.
pub type PgStore = SqlStore<PgDb>;

/// The PostgreSQL database: its pool, and where the journal writer connects.
#[derive(Clone)]
pub struct PgDb {
    pub(crate) pool: PgPool,
    options: PgConnectOptions,
    /// This process's slot on the notices it sends (once it is a node).
    sender: Arc<Sender>,
}

impl std::fmt::Debug for PgDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the connect options: they may hold a password.
        f.debug_struct("PgDb").field("target", &target(&self.options)).finish_non_exhaustive()
    }
}

exec_glue!(PgDb, sqlx::Postgres);

#[async_trait::async_trait]
impl Backend for PgDb {
    const DIALECT: Dialect = Dialect {
        sessions_on_environment: "SELECT COUNT(*) FROM sessions \
             WHERE org_id = $1 AND replace(doc, '\\u0000', '\\ufffd')::jsonb -> 'environment' ->> 'id' = $2",
        environment_sessions: "SELECT id FROM sessions \
             WHERE org_id = $1 AND replace(doc, '\\u0000', '\\ufffd')::jsonb -> 'environment' ->> 'id' = $2 \
             ORDER BY seq",
        metadata,
    };

    async fn put_session(&self, org_id: &str, id: SessionId, doc: Doc) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let keep = |stored: &str| keep_state(&doc.0, stored);
        let done = crate::postgres_batch::rewrite_session(&mut tx, org_id, id, keep).await?;
        tx.commit().await?;
        Ok(done)
    }

    fn batch_writer(&self, sessions: Arc<SessionCache>) -> Result<Box<dyn BatchWriter>> {
        let sender = Arc::clone(&self.sender);
        Ok(Box::new(crate::postgres_batch::PgWriter::new(self.options.clone(), sessions, sender)?))
    }

    async fn join_cluster(
        &self,
        node: &crate::NodeSpec,
        sessions: Arc<SessionCache>,
    ) -> Result<Option<Arc<crate::Cluster>>> {
        let sender = Arc::clone(&self.sender);
        crate::Cluster::join(self.pool.clone(), node.clone(), sender, sessions).await.map(Some)
    }

    async fn announce(&self, notice: Notice) {
        // Failing, the database is going away: the other nodes' listeners drop
        // too, and so clear what they cached.
        let sent = sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(self.sender.payload(&notice))
            .execute(&self.pool)
            .await;
        if let Err(e) = sent {
            tracing::warn!(error = %e, "a change could not be announced to the other nodes");
        }
    }
}

/// `AND metadata[key] = value` on `table.doc`. PostgreSQL's JSON types
/// cannot hold U+0000: the document is read with its escapes of it
/// replaced, which only a filter naming such a string could tell.
fn metadata(q: &mut Sql, table: &str, key: &str, value: &str) {
    q.push(format!(" AND replace({table}.doc, '\\u0000', '\\ufffd')::jsonb -> 'metadata' ->> "));
    q.push_bind(key);
    q.push(" = ");
    q.push_bind(value);
}

/// Where `options` connect: `host:port`, or the Unix socket's path.
pub(crate) fn target(options: &PgConnectOptions) -> String {
    match options.get_socket() {
        Some(dir) => dir.join(format!(".s.PGSQL.{}", options.get_port())).display().to_string(),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    }
}

impl PgStore {
    /// Connects to the database a `postgres://…` URL names and migrates it.
    /// An unreachable database is [`Error::Connect`] naming where it was looked for.
    pub async fn open_url(url: &str) -> Result<Self> {
        let options = PgConnectOptions::from_str(url).map_err(|e| {
            // The URL may hold a password: not repeated here.
            Error::Config(format!("malformed PostgreSQL URL: {e}"))
        })?;
        // One connection first: a clear error at once instead of a pool's retries.
        let connect = tokio::time::timeout(CONNECT_TIMEOUT, sqlx::PgConnection::connect_with(&options)).await;
        let mut conn = match connect {
            Ok(Ok(conn)) => conn,
            Ok(Err(source)) => return Err(Error::Connect { target: target(&options), source }),
            Err(_) => return Err(Error::Connect { target: target(&options), source: sqlx::Error::PoolTimedOut }),
        };
        crate::migrate::run(&MIGRATOR, &mut conn).await?;
        conn.close().await?;
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .min_connections(2)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_lazy_with(options.clone());
        Ok(SqlStore::new(PgDb { pool, options, sender: Arc::default() }))
    }
}
