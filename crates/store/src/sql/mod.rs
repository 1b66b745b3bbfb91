//! The store both backends share: one [`SqlStore`] over a [`Backend`] (SQLite
//! or PostgreSQL). The statements are written once, in the SQL the two
//! dialects agree on (`$n` placeholders, which SQLite accepts too; documents
//! as [`Doc`], `TEXT` in both); the few that differ (JSON functions) are the
//! backend's [`Dialect`] and [`Backend::put_session`].
//!
//! # Layout
//! - [`Sql`]: a statement and its bound [`Value`]s; [`Exec`] runs it on a
//!   backend's pool (`exec_glue!` writes that once for both).
//! - `store.rs`: `impl Store for SqlStore`, which calls the modules below.
//! - `orgs.rs` (organizations, keys, agents), `sessions.rs`, `turns.rs`
//!   (turns, items, events, idempotency keys), `vaults.rs` (vaults,
//!   credentials, the master key check), `envs.rs` (environments, artifacts),
//!   `skills.rs` (skills and their versions), `files.rs` (uploaded files,
//!   environments' copies of their skills and files), `templates.rs`
//!   (environment templates), `rekey.rs` (every sealed value, for a master
//!   key rotation), `request_keys.rs`
//!   (idempotency keys of creates), `paging.rs` (cursor pagination).

// `SqlStore` is public only as `SqliteStore` and `PgStore`; its backends are
// this crate's own, so the traits its impls are bounded by stay private.
#![allow(private_bounds)]

mod doc;
mod envs;
mod files;
mod orgs;
mod paging;
mod rekey;
mod request_keys;
mod sessions;
mod skills;
mod store;
mod templates;
mod turns;
mod vaults;

pub(crate) use doc::{Doc, keep_state, set_state};

use crate::read_cache::{Keyed, ReadCache, Sharing};
use crate::session_cache::SessionCache;
use crate::{BatchWriter, Result};
use protocol::agent::AgentRecord;
use protocol::ids::{EnvironmentId, SessionId, TurnId};
use std::sync::Arc;

/// A store over one database: the backend's pool and the read caches of
/// sessions and agents.
#[derive(Debug, Clone)]
pub struct SqlStore<B> {
    pub(crate) db: B,
    pub(crate) sessions: Arc<SessionCache>,
    /// Agents as a session's create reads them (`agent_id`); served only
    /// while no other node shares the database (one [`Sharing`] for both
    /// caches, which the cluster sets through the sessions').
    pub(crate) agents: Arc<ReadCache<AgentRecord>>,
}

impl<B> SqlStore<B> {
    pub(crate) fn new(db: B) -> Self {
        let sharing = Arc::new(Sharing::default());
        let sessions = Arc::new(SessionCache::new(Arc::clone(&sharing)));
        Self { db, sessions, agents: Arc::new(ReadCache::new(sharing)) }
    }
}

/// A value bound to a placeholder.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    Text(String),
    OptText(Option<String>),
    Int(i64),
    OptInt(Option<i64>),
    Bytes(Vec<u8>),
    Doc(Doc),
}

macro_rules! value_from {
    ($($t:ty => $variant:ident),* $(,)?) => {
        $(impl From<$t> for Value {
            fn from(v: $t) -> Self {
                Value::$variant(v)
            }
        })*
    };
}
value_from!(String => Text, Option<String> => OptText, i64 => Int, Option<i64> => OptInt, Vec<u8> => Bytes, Doc => Doc);

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}

impl From<Option<&str>> for Value {
    fn from(v: Option<&str>) -> Self {
        Value::OptText(v.map(str::to_string))
    }
}

impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Self {
        Value::Bytes(v.to_vec())
    }
}

impl From<SessionId> for Value {
    fn from(v: SessionId) -> Self {
        Value::Text(v.to_string())
    }
}

impl From<&EnvironmentId> for Value {
    fn from(v: &EnvironmentId) -> Self {
        Value::Text(v.as_str().to_string())
    }
}

impl From<TurnId> for Value {
    fn from(v: TurnId) -> Self {
        Value::Text(v.to_string())
    }
}

/// A statement being built: SQL text with `$n` placeholders and the values
/// bound to them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sql {
    pub(crate) text: String,
    pub(crate) values: Vec<Value>,
}

impl Sql {
    pub(crate) fn new(text: impl Into<String>) -> Self {
        Self { text: text.into(), values: Vec::new() }
    }

    /// Binds the next placeholder of the text (`$1`, `$2`, … in order).
    pub(crate) fn bind(mut self, value: impl Into<Value>) -> Self {
        self.values.push(value.into());
        self
    }

    /// Appends SQL text.
    pub(crate) fn push(&mut self, text: impl AsRef<str>) -> &mut Self {
        self.text.push_str(text.as_ref());
        self
    }

    /// Appends a placeholder bound to `value`.
    pub(crate) fn push_bind(&mut self, value: impl Into<Value>) -> &mut Self {
        self.values.push(value.into());
        self.text.push_str(&format!("${}", self.values.len()));
        self
    }

    /// Appends `(v1, v2, …)` of placeholders bound to `values`.
    pub(crate) fn push_list<V: Into<Value> + Clone>(&mut self, values: &[V]) -> &mut Self {
        self.push("(");
        for (i, value) in values.iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.push_bind(value.clone());
        }
        self.push(")")
    }
}

/// Rows either backend can decode (`sqlx::FromRow` for both row types).
pub(crate) trait Decodable:
    for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow> + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin
{
}

impl<T> Decodable for T where
    T: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow>
        + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>
        + Send
        + Unpin
{
}

/// Runs statements on a backend's pool.
#[async_trait::async_trait]
pub(crate) trait Exec: Send + Sync + 'static {
    async fn fetch<T: Decodable>(&self, sql: &Sql) -> Result<Vec<T>>;
    /// Rows affected.
    async fn execute(&self, sql: &Sql) -> Result<u64>;
    /// Runs `first`, then — only if it affected a row — `then`, in one
    /// transaction; returns the rows `first` affected.
    async fn transaction(&self, first: &Sql, then: &[Sql]) -> Result<u64>;
}

/// What a backend adds to [`Exec`]: its dialect, the session write whose
/// JSON handling differs, and its journal writer.
#[async_trait::async_trait]
pub(crate) trait Backend: Exec + std::fmt::Debug {
    const DIALECT: Dialect;
    /// Replaces a session's document keeping its engine-owned fields as
    /// stored; false when it no longer exists.
    async fn put_session(&self, org_id: &str, id: SessionId, doc: Doc) -> Result<bool>;
    fn batch_writer(&self, sessions: Arc<SessionCache>) -> Result<Box<dyn BatchWriter>>;
    /// Registers a node of the cluster on this database, whose notices
    /// invalidate `sessions`; none by default (one process).
    async fn join_cluster(
        &self,
        _node: &crate::NodeSpec,
        _sessions: Arc<SessionCache>,
    ) -> Result<Option<Arc<crate::Cluster>>> {
        Ok(None)
    }
    /// Tells the other processes on this database of a change committed
    /// through the pool; nothing by default (no other process sees the database).
    async fn announce(&self, _notice: crate::cluster::notices::Notice) {}
}

/// The statements whose SQL differs between the backends (JSON functions).
#[derive(Debug)]
pub(crate) struct Dialect {
    /// Counts the sessions of organization $1 on environment $2.
    pub sessions_on_environment: &'static str,
    /// The ids of the sessions of organization $1 on environment $2, oldest first.
    pub environment_sessions: &'static str,
    /// Appends `AND <table>.doc's metadata[key] = value` to a statement.
    pub metadata: fn(&mut Sql, table: &str, key: &str, value: &str),
}

impl<B: Exec> SqlStore<B> {
    /// Rows of `sql` decoded as `T`.
    pub(crate) async fn fetch<T: Decodable>(&self, sql: Sql) -> Result<Vec<T>> {
        self.db.fetch(&sql).await
    }

    /// The first row of `sql`, if any.
    pub(crate) async fn fetch_optional<T: Decodable>(&self, sql: Sql) -> Result<Option<T>> {
        Ok(self.db.fetch(&sql).await?.into_iter().next())
    }

    /// The documents of `sql` (its one column), parsed.
    pub(crate) async fn docs<T: serde::de::DeserializeOwned>(&self, sql: Sql) -> Result<Vec<T>> {
        self.db.fetch::<(Doc,)>(&sql).await?.iter().map(|(d,)| d.parse()).collect()
    }

    /// The first document of `sql`, parsed.
    pub(crate) async fn doc<T: serde::de::DeserializeOwned>(&self, sql: Sql) -> Result<Option<T>> {
        self.fetch_optional::<(Doc,)>(sql).await?.map(|(d,)| d.parse()).transpose()
    }

    /// Record `id` of `org_id` from `cache`, or the document of the
    /// statement `sql` makes (only on a miss), parsed and cached unless a
    /// write raced the read.
    pub(crate) async fn cached_doc<T: Keyed + serde::de::DeserializeOwned>(
        &self,
        cache: &ReadCache<T>,
        org_id: &str,
        id: &T::Key,
        sql: impl FnOnce() -> Sql,
    ) -> Result<Option<T>> {
        let generation = match cache.get(org_id, id) {
            Ok(record) => return Ok(Some(record)),
            Err(generation) => generation,
        };
        let record: Option<T> = self.doc(sql()).await?;
        if let Some(record) = &record {
            cache.fill(org_id, record, generation);
        }
        Ok(record)
    }

    /// Whether `sql` affected a row.
    pub(crate) async fn changed(&self, sql: Sql) -> Result<bool> {
        Ok(self.db.execute(&sql).await? > 0)
    }
}

/// `Exec` for one sqlx database: the same code for SQLite and PostgreSQL.
macro_rules! exec_glue {
    ($backend:ty, $db:ty) => {
        impl $backend {
            fn arguments(values: &[$crate::sql::Value]) -> <$db as sqlx::Database>::Arguments<'_> {
                use sqlx::Arguments;
                let mut args = <$db as sqlx::Database>::Arguments::default();
                for value in values {
                    use $crate::sql::Value as V;
                    let added = match value {
                        V::Text(v) => args.add(v.as_str()),
                        V::OptText(v) => args.add(v.as_deref()),
                        V::Int(v) => args.add(*v),
                        V::OptInt(v) => args.add(*v),
                        V::Bytes(v) => args.add(v.as_slice()),
                        V::Doc(v) => args.add(v.clone()),
                    };
                    if let Err(e) = added {
                        // Only a value that cannot be encoded fails; the statement then fails as unbound.
                        tracing::error!(error = %e, "a query parameter could not be encoded");
                    }
                }
                args
            }
        }

        #[async_trait::async_trait]
        impl $crate::sql::Exec for $backend {
            async fn fetch<T: $crate::sql::Decodable>(&self, sql: &$crate::sql::Sql) -> $crate::Result<Vec<T>> {
                let query = sqlx::query_as_with::<$db, T, _>(&sql.text, Self::arguments(&sql.values));
                Ok(query.fetch_all(&self.pool).await?)
            }

            async fn execute(&self, sql: &$crate::sql::Sql) -> $crate::Result<u64> {
                let query = sqlx::query_with::<$db, _>(&sql.text, Self::arguments(&sql.values));
                Ok(query.execute(&self.pool).await?.rows_affected())
            }

            async fn transaction(&self, first: &$crate::sql::Sql, then: &[$crate::sql::Sql]) -> $crate::Result<u64> {
                let mut tx = self.pool.begin().await?;
                let done = sqlx::query_with::<$db, _>(&first.text, Self::arguments(&first.values))
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if done == 0 {
                    return Ok(0);
                }
                for sql in then {
                    sqlx::query_with::<$db, _>(&sql.text, Self::arguments(&sql.values)).execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(done)
            }
        }
    };
}
pub(crate) use exec_glue;
