//! The PostgreSQL backend: a pool over `postgres://…`, migrations
//! (`migrations/postgres`) applied on open under sqlx's advisory lock, so two
//! servers starting at once migrate once.
//!
//! Resources live as `jsonb` documents beside the columns that queries filter
//! and order on, as in SQLite; `doc::text` reads them back as the text serde
//! parses. Errors that mean the database is gone (refused or broken
//! connections, a shutdown) are [`Error::Unavailable`]: the pool reconnects by
//! itself once the database is back.

use crate::{ApiKeyRecord, Error, Page, Result, SessionFilter, Store};
use async_trait::async_trait;
use protocol::admin::Organization;
use protocol::agent::AgentRecord;
use protocol::event::Event;
use protocol::item::Item;
use protocol::list::PageRequest;
use protocol::session::SessionRecord;
use protocol::turn::Turn;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgPool, Row};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

pub(crate) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// How long a request waits for a pooled connection (and so for an
/// unreachable database) before it fails as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the first connection at start may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A store in one PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PgStore {
    pub(crate) pool: PgPool,
    pub(crate) sessions: Arc<crate::session_cache::SessionCache>,
    /// Where the journal writer connects.
    options: PgConnectOptions,
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
        Ok(Self { pool, sessions: Default::default(), options })
    }
}

/// Where `options` connect: `host:port`, or the Unix socket's path.
pub(crate) fn target(options: &PgConnectOptions) -> String {
    match options.get_socket() {
        Some(dir) => dir.join(format!(".s.PGSQL.{}", options.get_port())).display().to_string(),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    }
}

fn key_from_row(row: &sqlx::postgres::PgRow) -> Result<ApiKeyRecord> {
    Ok(ApiKeyRecord {
        id: row.try_get("id")?,
        org_id: row.try_get("org_id")?,
        hash: row.try_get("hash")?,
        prefix: row.try_get("prefix")?,
        name: row.try_get("name")?,
        scopes: crate::paging::parse_scopes(&row.try_get::<String, _>("scopes")?),
        created_at: row.try_get("created_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

fn org_from_row(row: &sqlx::postgres::PgRow) -> Result<Organization> {
    Ok(Organization {
        id: row.try_get("id")?,
        object: "organization".into(),
        name: row.try_get("name")?,
        created_at: row.try_get("created_at")?,
    })
}

/// Parses the documents of `docs`.
pub(crate) fn parse_docs<T: serde::de::DeserializeOwned>(docs: &[String]) -> Result<Vec<T>> {
    docs.iter().map(|d| Ok(serde_json::from_str(d)?)).collect()
}

/// Parses an optional document.
pub(crate) fn parse_doc<T: serde::de::DeserializeOwned>(doc: Option<String>) -> Result<Option<T>> {
    Ok(doc.map(|d| serde_json::from_str(&d)).transpose()?)
}

/// Cursor pagination over one of this backend's tables (see [`crate::paging`]).
pub(crate) async fn page_of<T: serde::de::DeserializeOwned>(
    pool: &PgPool,
    table: &str,
    org_id: &str,
    page: &PageRequest,
    filter: impl Fn(&mut crate::paging::Sql),
) -> Result<Page<T>> {
    crate::paging::page_of(pool, table, "doc::text", org_id, page, filter).await
}

/// Adds `metadata[key] = value` conditions on `table.doc`.
pub(crate) fn metadata_filter<'a>(
    table: &'a str,
    metadata: &'a [(String, String)],
) -> impl Fn(&mut crate::paging::Sql) + 'a {
    move |q| {
        for (key, value) in metadata {
            q.push(format!(" AND {table}.doc -> 'metadata' ->> "));
            q.push_bind(key.clone());
            q.push(" = ");
            q.push_bind(value.clone());
        }
    }
}

#[async_trait]
impl Store for PgStore {
    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn create_organization(&self, org: &Organization) -> Result<()> {
        sqlx::query("INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, $3)")
            .bind(&org.id)
            .bind(&org.name)
            .bind(org.created_at)
            .execute(&self.pool)
            .await
            .map_err(|e| match e {
                sqlx::Error::Database(d) if d.is_unique_violation() => {
                    Error::Conflict(format!("an organization named '{}' already exists", org.name))
                }
                e => e.into(),
            })?;
        Ok(())
    }

    async fn get_organization(&self, id: &str) -> Result<Option<Organization>> {
        let row = sqlx::query("SELECT * FROM organizations WHERE id = $1").bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(org_from_row).transpose()
    }

    async fn find_organization(&self, name: &str) -> Result<Option<Organization>> {
        let row =
            sqlx::query("SELECT * FROM organizations WHERE name = $1").bind(name).fetch_optional(&self.pool).await?;
        row.as_ref().map(org_from_row).transpose()
    }

    async fn count_organizations(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM organizations").fetch_one(&self.pool).await?)
    }

    async fn create_api_key(&self, key: &ApiKeyRecord) -> Result<()> {
        let scopes: Vec<&str> = key.scopes.iter().map(|s| s.as_str()).collect();
        sqlx::query(
            "INSERT INTO api_keys (id, org_id, hash, prefix, name, scopes, created_at, revoked_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&key.id)
        .bind(&key.org_id)
        .bind(&key.hash)
        .bind(&key.prefix)
        .bind(&key.name)
        .bind(scopes.join(","))
        .bind(key.created_at)
        .bind(key.revoked_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn find_api_key(&self, hash: &str) -> Result<Option<ApiKeyRecord>> {
        let row = sqlx::query("SELECT * FROM api_keys WHERE hash = $1").bind(hash).fetch_optional(&self.pool).await?;
        row.as_ref().map(key_from_row).transpose()
    }

    async fn list_api_keys(&self, org_id: Option<&str>) -> Result<Vec<ApiKeyRecord>> {
        let rows = sqlx::query("SELECT * FROM api_keys WHERE $1::text IS NULL OR org_id = $1 ORDER BY created_at, id")
            .bind(org_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(key_from_row).collect()
    }

    async fn revoke_api_key(&self, org_id: Option<&str>, id: &str, at: i64) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) \
             WHERE id = $2 AND ($3::text IS NULL OR org_id = $3)",
        )
        .bind(at)
        .bind(id)
        .bind(org_id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn create_agent(&self, org_id: &str, agent: &AgentRecord) -> Result<()> {
        let doc = serde_json::to_string(agent)?;
        let mut tx = self.pool.begin().await?;
        sqlx::query("INSERT INTO agents (id, org_id, version, doc) VALUES ($1, $2, $3, $4::jsonb)")
            .bind(&agent.id)
            .bind(org_id)
            .bind(agent.version)
            .bind(&doc)
            .execute(&mut *tx)
            .await?;
        self.insert_agent_version(&mut tx, agent, &doc).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn get_agent(&self, org_id: &str, id: &str) -> Result<Option<AgentRecord>> {
        let doc: Option<String> = sqlx::query_scalar("SELECT doc::text FROM agents WHERE id = $1 AND org_id = $2")
            .bind(id)
            .bind(org_id)
            .fetch_optional(&self.pool)
            .await?;
        parse_doc(doc)
    }

    async fn update_agent(&self, org_id: &str, agent: &AgentRecord) -> Result<bool> {
        let doc = serde_json::to_string(agent)?;
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query(
            "UPDATE agents SET version = $1, doc = $2::jsonb WHERE id = $3 AND org_id = $4 AND version = $5",
        )
        .bind(agent.version)
        .bind(&doc)
        .bind(&agent.id)
        .bind(org_id)
        .bind(agent.version - 1)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        self.insert_agent_version(&mut tx, agent, &doc).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn list_agents(&self, org_id: &str, page: &PageRequest) -> Result<Page<AgentRecord>> {
        page_of(&self.pool, "agents", org_id, page, |_| {}).await
    }

    async fn delete_agent(&self, org_id: &str, id: &str) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query("DELETE FROM agents WHERE id = $1 AND org_id = $2")
            .bind(id)
            .bind(org_id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() > 0 {
            sqlx::query("DELETE FROM agent_versions WHERE agent_id = $1").bind(id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    async fn create_session(&self, org_id: &str, session: &SessionRecord) -> Result<()> {
        sqlx::query("INSERT INTO sessions (id, org_id, agent_id, doc) VALUES ($1, $2, $3, $4::jsonb)")
            .bind(session.id.to_string())
            .bind(org_id)
            .bind(&session.agent.id)
            .bind(serde_json::to_string(session)?)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn get_session(&self, org_id: &str, id: Uuid) -> Result<Option<SessionRecord>> {
        let generation = match self.sessions.get(org_id, id) {
            Ok(record) => return Ok(Some(record)),
            Err(generation) => generation,
        };
        let doc: Option<String> = sqlx::query_scalar("SELECT doc::text FROM sessions WHERE id = $1 AND org_id = $2")
            .bind(id.to_string())
            .bind(org_id)
            .fetch_optional(&self.pool)
            .await?;
        let record: Option<SessionRecord> = parse_doc(doc)?;
        if let Some(record) = &record {
            self.sessions.fill(org_id, record, generation);
        }
        Ok(record)
    }

    async fn put_session(&self, org_id: &str, session: &SessionRecord) -> Result<bool> {
        // The engine-owned fields keep their stored values: a metadata update
        // racing a running turn must not roll its status back.
        let done = sqlx::query(
            "UPDATE sessions SET doc = $1::jsonb || jsonb_build_object(\
               'status', doc -> 'status', 'error', doc -> 'error', \
               'last_active_at', doc -> 'last_active_at', 'usage', doc -> 'usage', \
               'required_actions', coalesce(doc -> 'required_actions', '[]'::jsonb)) \
             WHERE id = $2 AND org_id = $3",
        )
        .bind(serde_json::to_string(session)?)
        .bind(session.id.to_string())
        .bind(org_id)
        .execute(&self.pool)
        .await?;
        self.sessions.invalidate([session.id]);
        Ok(done.rows_affected() > 0)
    }

    async fn list_sessions(
        &self,
        org_id: &str,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> Result<Page<SessionRecord>> {
        let by_metadata = metadata_filter("sessions", &filter.metadata);
        page_of(&self.pool, "sessions", org_id, page, |q| {
            if let Some(agent_id) = &filter.agent_id {
                q.push(" AND agent_id = ");
                q.push_bind(agent_id.clone());
            }
            by_metadata(q);
        })
        .await
    }

    async fn delete_session(&self, org_id: &str, id: Uuid) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query("DELETE FROM sessions WHERE id = $1 AND org_id = $2")
            .bind(id.to_string())
            .bind(org_id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() > 0 {
            for table in ["turns", "items", "events", "idempotency_keys"] {
                sqlx::query(&format!("DELETE FROM {table} WHERE session_id = $1"))
                    .bind(id.to_string())
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        self.sessions.invalidate([id]);
        Ok(done.rows_affected() > 0)
    }

    async fn get_turn(&self, org_id: &str, id: Uuid) -> Result<Option<Turn>> {
        self.get_turn_impl(org_id, id).await
    }

    async fn list_turns(&self, org_id: &str, session_id: Uuid, page: &PageRequest) -> Result<Page<Turn>> {
        self.list_turns_impl(org_id, session_id, page).await
    }

    async fn open_turns(&self) -> Result<Vec<(String, Turn)>> {
        self.open_turns_impl().await
    }

    async fn list_items(
        &self,
        org_id: &str,
        session_id: Uuid,
        turn_id: Option<&str>,
        page: &PageRequest,
    ) -> Result<Page<Item>> {
        self.list_items_impl(org_id, session_id, turn_id, page).await
    }

    async fn turn_items(&self, org_id: &str, session_id: Uuid, turn_id: &str) -> Result<Vec<Item>> {
        self.turn_items_impl(org_id, session_id, turn_id).await
    }

    async fn history(&self, org_id: &str, session_id: Uuid) -> Result<Vec<Item>> {
        self.history_impl(org_id, session_id).await
    }

    async fn put_environment(&self, org_id: &str, env: &protocol::environment::EnvironmentRecord) -> Result<()> {
        self.put_environment_impl(org_id, env).await
    }

    async fn get_environment(
        &self,
        org_id: &str,
        id: &str,
    ) -> Result<Option<protocol::environment::EnvironmentRecord>> {
        self.get_environment_impl(org_id, id).await
    }

    async fn list_environments(
        &self,
        org_id: &str,
        page: &PageRequest,
    ) -> Result<Page<protocol::environment::EnvironmentRecord>> {
        page_of(&self.pool, "environments", org_id, page, |_| {}).await
    }

    async fn delete_environment(&self, org_id: &str, id: &str) -> Result<bool> {
        self.delete_environment_impl(org_id, id).await
    }

    async fn sessions_on_environment(&self, org_id: &str, env_id: &str) -> Result<i64> {
        self.sessions_on_environment_impl(org_id, env_id).await
    }

    async fn put_artifact(&self, org_id: &str, artifact: &crate::Artifact, content: &[u8]) -> Result<()> {
        self.put_artifact_impl(org_id, artifact, content).await
    }

    async fn artifact_hashes(&self, org_id: &str, session_id: Uuid) -> Result<Vec<(String, String)>> {
        self.artifact_hashes_impl(org_id, session_id).await
    }

    async fn list_artifacts(
        &self,
        org_id: &str,
        session_id: Uuid,
        page: &PageRequest,
    ) -> Result<Page<crate::Artifact>> {
        let sid = session_id.to_string();
        page_of(&self.pool, "artifacts", org_id, page, |q| {
            q.push(" AND session_id = ");
            q.push_bind(sid.clone());
        })
        .await
    }

    async fn get_artifact(
        &self,
        org_id: &str,
        session_id: Uuid,
        id: &str,
    ) -> Result<Option<(crate::Artifact, Vec<u8>)>> {
        self.get_artifact_impl(org_id, session_id, id).await
    }

    async fn delete_artifact(&self, org_id: &str, session_id: Uuid, id: &str) -> Result<bool> {
        self.delete_artifact_impl(org_id, session_id, id).await
    }

    fn batch_writer(&self) -> Result<Box<dyn crate::BatchWriter>> {
        Ok(Box::new(crate::postgres_batch::PgWriter::new(self.options.clone(), Arc::clone(&self.sessions))?))
    }

    async fn max_event_seq(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0)::bigint FROM events").fetch_one(&self.pool).await?)
    }

    async fn events_after(&self, session_id: Uuid, after: i64, limit: u32) -> Result<Vec<Event>> {
        self.events_after_impl(session_id, after, limit).await
    }

    async fn claim_idempotency_key(&self, org_id: &str, session_id: Uuid, key: &str, at: i64) -> Result<bool> {
        self.claim_idempotency_key_impl(org_id, session_id, key, at).await
    }

    async fn release_idempotency_key(&self, org_id: &str, session_id: Uuid, key: &str) -> Result<()> {
        sqlx::query("DELETE FROM idempotency_keys WHERE org_id = $1 AND session_id = $2 AND key = $3")
            .bind(org_id)
            .bind(session_id.to_string())
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    // ---- Vaults and credentials: postgres_vaults.rs ----

    async fn create_vault(&self, org_id: &str, vault: &protocol::vault::Vault) -> Result<()> {
        self.create_vault_impl(org_id, vault).await
    }

    async fn get_vault(&self, org_id: &str, id: &str) -> Result<Option<protocol::vault::Vault>> {
        self.get_vault_impl(org_id, id).await
    }

    async fn put_vault(&self, org_id: &str, vault: &protocol::vault::Vault) -> Result<bool> {
        self.put_vault_impl(org_id, vault).await
    }

    async fn list_vaults(
        &self,
        org_id: &str,
        metadata: &[(String, String)],
        page: &PageRequest,
    ) -> Result<Page<protocol::vault::Vault>> {
        page_of(&self.pool, "vaults", org_id, page, metadata_filter("vaults", metadata)).await
    }

    async fn delete_vault(&self, org_id: &str, id: &str) -> Result<bool> {
        self.delete_vault_impl(org_id, id).await
    }

    async fn existing_vaults(&self, org_id: &str, ids: &[String]) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar("SELECT id FROM vaults WHERE org_id = $1 AND id = ANY($2)")
            .bind(org_id)
            .bind(ids)
            .fetch_all(&self.pool)
            .await?)
    }

    async fn create_credential(&self, org_id: &str, record: &protocol::vault::CredentialRecord) -> Result<()> {
        self.create_credential_impl(org_id, record).await
    }

    async fn get_credential(
        &self,
        org_id: &str,
        vault_id: &str,
        id: &str,
    ) -> Result<Option<protocol::vault::CredentialRecord>> {
        self.get_credential_impl(org_id, vault_id, id).await
    }

    async fn update_credential(&self, org_id: &str, record: &protocol::vault::CredentialRecord) -> Result<bool> {
        self.update_credential_impl(org_id, record).await
    }

    async fn list_credentials(
        &self,
        org_id: &str,
        vault_id: &str,
        metadata: &[(String, String)],
        page: &PageRequest,
    ) -> Result<Page<protocol::vault::Credential>> {
        let by_metadata = metadata_filter("vault_credentials", metadata);
        page_of(&self.pool, "vault_credentials", org_id, page, |q| {
            q.push(" AND vault_id = ");
            q.push_bind(vault_id.to_string());
            by_metadata(q);
        })
        .await
    }

    async fn delete_credential(&self, org_id: &str, vault_id: &str, id: &str) -> Result<bool> {
        self.delete_credential_impl(org_id, vault_id, id).await
    }

    async fn vault_credentials(
        &self,
        org_id: &str,
        vault_ids: &[String],
    ) -> Result<Vec<protocol::vault::CredentialRecord>> {
        self.vault_credentials_impl(org_id, vault_ids).await
    }

    async fn master_key_check(&self) -> Result<Option<Vec<u8>>> {
        Ok(sqlx::query_scalar("SELECT sealed FROM master_key_check WHERE id = 1").fetch_optional(&self.pool).await?)
    }

    async fn init_master_key_check(&self, sealed: &[u8]) -> Result<Vec<u8>> {
        // First writer wins; everyone reads back the value that was kept.
        sqlx::query("INSERT INTO master_key_check (id, sealed) VALUES (1, $1) ON CONFLICT (id) DO NOTHING")
            .bind(sealed)
            .execute(&self.pool)
            .await?;
        Ok(sqlx::query_scalar("SELECT sealed FROM master_key_check WHERE id = 1").fetch_one(&self.pool).await?)
    }
}

impl PgStore {
    async fn insert_agent_version(&self, tx: &mut sqlx::PgConnection, agent: &AgentRecord, doc: &str) -> Result<()> {
        sqlx::query("INSERT INTO agent_versions (agent_id, version, doc) VALUES ($1, $2, $3::jsonb)")
            .bind(&agent.id)
            .bind(agent.version)
            .bind(doc)
            .execute(&mut *tx)
            .await?;
        Ok(())
    }
}
