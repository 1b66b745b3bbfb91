//! The SQLite backend: one file in WAL mode, migrations applied on open.
//!
//! Resources live as JSON documents; `seq` (an autoincrement rowid) gives the
//! creation order that cursor pagination walks.

use crate::{ApiKeyRecord, Error, Page, Result, SessionFilter, Store};
use async_trait::async_trait;
use protocol::admin::Organization;
use protocol::agent::AgentRecord;
use protocol::event::Event;
use protocol::item::Item;
use protocol::list::PageRequest;
use protocol::session::SessionRecord;
use protocol::turn::Turn;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;
use uuid::Uuid;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// A store in one SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pub(crate) pool: SqlitePool,
    pub(crate) sessions: std::sync::Arc<crate::session_cache::SessionCache>,
    /// The database file, for the journal writer's own connection.
    path: PathBuf,
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
        let pool = SqlitePoolOptions::new().max_connections(8).min_connections(2).connect_with(options).await?;
        crate::migrate::run(&MIGRATOR, &pool).await?;
        Ok(Self { pool, sessions: Default::default(), path })
    }
}

fn key_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<ApiKeyRecord> {
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

fn org_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<Organization> {
    Ok(Organization {
        id: row.try_get("id")?,
        object: "organization".into(),
        name: row.try_get("name")?,
        created_at: row.try_get("created_at")?,
    })
}

/// Cursor pagination over one of this backend's tables (see [`crate::paging`]).
pub(crate) async fn page_of<T: serde::de::DeserializeOwned>(
    pool: &SqlitePool,
    table: &str,
    org_id: &str,
    page: &PageRequest,
    filter: impl Fn(&mut crate::paging::Sql),
) -> Result<Page<T>> {
    crate::paging::page_of(pool, table, "doc", org_id, page, filter).await
}

#[async_trait]
impl Store for SqliteStore {
    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn create_organization(&self, org: &Organization) -> Result<()> {
        sqlx::query("INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)")
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
        let row = sqlx::query("SELECT * FROM organizations WHERE id = ?").bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(org_from_row).transpose()
    }

    async fn find_organization(&self, name: &str) -> Result<Option<Organization>> {
        let row =
            sqlx::query("SELECT * FROM organizations WHERE name = ?").bind(name).fetch_optional(&self.pool).await?;
        row.as_ref().map(org_from_row).transpose()
    }

    async fn count_organizations(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM organizations").fetch_one(&self.pool).await?)
    }

    async fn create_api_key(&self, key: &ApiKeyRecord) -> Result<()> {
        let scopes: Vec<&str> = key.scopes.iter().map(|s| s.as_str()).collect();
        sqlx::query(
            "INSERT INTO api_keys (id, org_id, hash, prefix, name, scopes, created_at, revoked_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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
        let row = sqlx::query("SELECT * FROM api_keys WHERE hash = ?").bind(hash).fetch_optional(&self.pool).await?;
        row.as_ref().map(key_from_row).transpose()
    }

    async fn list_api_keys(&self, org_id: Option<&str>) -> Result<Vec<ApiKeyRecord>> {
        let rows = sqlx::query("SELECT * FROM api_keys WHERE ?1 IS NULL OR org_id = ?1 ORDER BY created_at, id")
            .bind(org_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(key_from_row).collect()
    }

    async fn revoke_api_key(&self, org_id: Option<&str>, id: &str, at: i64) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?1) WHERE id = ?2 AND (?3 IS NULL OR org_id = ?3)",
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
        sqlx::query("INSERT INTO agents (id, org_id, version, doc) VALUES (?, ?, ?, ?)")
            .bind(&agent.id)
            .bind(org_id)
            .bind(agent.version)
            .bind(&doc)
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO agent_versions (agent_id, version, doc) VALUES (?, ?, ?)")
            .bind(&agent.id)
            .bind(agent.version)
            .bind(&doc)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn get_agent(&self, org_id: &str, id: &str) -> Result<Option<AgentRecord>> {
        let doc: Option<String> = sqlx::query_scalar("SELECT doc FROM agents WHERE id = ? AND org_id = ?")
            .bind(id)
            .bind(org_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(doc.map(|d| serde_json::from_str(&d)).transpose()?)
    }

    async fn update_agent(&self, org_id: &str, agent: &AgentRecord) -> Result<bool> {
        let doc = serde_json::to_string(agent)?;
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query("UPDATE agents SET version = ?, doc = ? WHERE id = ? AND org_id = ? AND version = ?")
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
        sqlx::query("INSERT INTO agent_versions (agent_id, version, doc) VALUES (?, ?, ?)")
            .bind(&agent.id)
            .bind(agent.version)
            .bind(&doc)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn list_agents(&self, org_id: &str, page: &PageRequest) -> Result<Page<AgentRecord>> {
        page_of(&self.pool, "agents", org_id, page, |_| {}).await
    }

    async fn delete_agent(&self, org_id: &str, id: &str) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query("DELETE FROM agents WHERE id = ? AND org_id = ?")
            .bind(id)
            .bind(org_id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() > 0 {
            sqlx::query("DELETE FROM agent_versions WHERE agent_id = ?").bind(id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    async fn create_session(&self, org_id: &str, session: &SessionRecord) -> Result<()> {
        sqlx::query("INSERT INTO sessions (id, org_id, agent_id, doc) VALUES (?, ?, ?, ?)")
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
        let doc: Option<String> = sqlx::query_scalar("SELECT doc FROM sessions WHERE id = ? AND org_id = ?")
            .bind(id.to_string())
            .bind(org_id)
            .fetch_optional(&self.pool)
            .await?;
        let record: Option<SessionRecord> = doc.map(|d| serde_json::from_str(&d)).transpose()?;
        if let Some(record) = &record {
            self.sessions.fill(org_id, record, generation);
        }
        Ok(record)
    }

    async fn put_session(&self, org_id: &str, session: &SessionRecord) -> Result<bool> {
        // The engine-owned fields keep their stored values: a metadata update
        // racing a running turn must not roll its status back.
        let done = sqlx::query(
            "UPDATE sessions SET doc = json_set(?, \
               '$.status', doc -> '$.status', '$.error', doc -> '$.error', \
               '$.last_active_at', doc -> '$.last_active_at', '$.usage', doc -> '$.usage', \
               '$.required_actions', json(coalesce(doc -> '$.required_actions', '[]'))) \
             WHERE id = ? AND org_id = ?",
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
        page_of(&self.pool, "sessions", org_id, page, |q| {
            if let Some(agent_id) = &filter.agent_id {
                q.push(" AND agent_id = ");
                q.push_bind(agent_id.clone());
            }
            for (key, value) in &filter.metadata {
                q.push(" AND EXISTS (SELECT 1 FROM json_each(sessions.doc, '$.metadata') WHERE key = ");
                q.push_bind(key.clone());
                q.push(" AND value = ");
                q.push_bind(value.clone());
                q.push(")");
            }
        })
        .await
    }

    async fn delete_session(&self, org_id: &str, id: Uuid) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query("DELETE FROM sessions WHERE id = ? AND org_id = ?")
            .bind(id.to_string())
            .bind(org_id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() > 0 {
            self.delete_session_rows(&mut tx, &id.to_string()).await?;
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
        let docs: Vec<String> = sqlx::query_scalar(
            "SELECT doc FROM items WHERE turn_id = ? AND session_id = ? AND org_id = ? ORDER BY seq",
        )
        .bind(turn_id)
        .bind(session_id.to_string())
        .bind(org_id)
        .fetch_all(&self.pool)
        .await?;
        docs.iter().map(|d| Ok(serde_json::from_str(d)?)).collect()
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
        self.list_environments_impl(org_id, page).await
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
        self.list_artifacts_impl(org_id, session_id, page).await
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
        Ok(Box::new(crate::sqlite_batch::SqliteWriter::open(&self.path, std::sync::Arc::clone(&self.sessions))?))
    }

    async fn max_event_seq(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM events").fetch_one(&self.pool).await?)
    }

    async fn events_after(&self, session_id: Uuid, after: i64, limit: u32) -> Result<Vec<Event>> {
        self.events_after_impl(session_id, after, limit).await
    }

    async fn claim_idempotency_key(&self, org_id: &str, session_id: Uuid, key: &str, at: i64) -> Result<bool> {
        self.claim_idempotency_key_impl(org_id, session_id, key, at).await
    }

    async fn release_idempotency_key(&self, org_id: &str, session_id: Uuid, key: &str) -> Result<()> {
        sqlx::query("DELETE FROM idempotency_keys WHERE org_id = ? AND session_id = ? AND key = ?")
            .bind(org_id)
            .bind(session_id.to_string())
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    // ---- Vaults and credentials: sqlite_vaults.rs ----

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
        self.list_vaults_impl(org_id, metadata, page).await
    }

    async fn delete_vault(&self, org_id: &str, id: &str) -> Result<bool> {
        self.delete_vault_impl(org_id, id).await
    }

    async fn existing_vaults(&self, org_id: &str, ids: &[String]) -> Result<Vec<String>> {
        self.existing_vaults_impl(org_id, ids).await
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
        self.list_credentials_impl(org_id, vault_id, metadata, page).await
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
        self.master_key_check_impl().await
    }

    async fn init_master_key_check(&self, sealed: &[u8]) -> Result<Vec<u8>> {
        self.init_master_key_check_impl(sealed).await
    }
}
