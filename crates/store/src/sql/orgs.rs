//! Organizations, API keys and agents (with their versions).

use super::{Backend, Doc, Sql, SqlStore};
use crate::{ApiKeyRecord, Error, Page, Result};
use protocol::admin::Organization;
use protocol::agent::AgentRecord;
use protocol::list::PageRequest;

/// An `api_keys` row.
#[derive(sqlx::FromRow)]
struct KeyRow {
    id: String,
    org_id: String,
    hash: String,
    prefix: String,
    name: Option<String>,
    scopes: String,
    created_at: i64,
    revoked_at: Option<i64>,
}

impl From<KeyRow> for ApiKeyRecord {
    fn from(r: KeyRow) -> Self {
        ApiKeyRecord {
            id: r.id,
            org_id: r.org_id,
            hash: r.hash,
            prefix: r.prefix,
            name: r.name,
            scopes: super::paging::parse_scopes(&r.scopes),
            created_at: r.created_at,
            revoked_at: r.revoked_at,
        }
    }
}

const KEY_COLUMNS: &str = "SELECT id, org_id, hash, prefix, name, scopes, created_at, revoked_at FROM api_keys";

fn org((id, name, created_at): (String, String, i64)) -> Organization {
    Organization { id, object: "organization".into(), name, created_at }
}

fn agent_version(agent: &AgentRecord, doc: &Doc) -> Sql {
    Sql::new("INSERT INTO agent_versions (agent_id, version, doc) VALUES ($1, $2, $3)")
        .bind(agent.id.as_str())
        .bind(agent.version)
        .bind(doc.clone())
}

impl<B: Backend> SqlStore<B> {
    pub(crate) async fn create_organization_impl(&self, org: &Organization) -> Result<()> {
        let sql = Sql::new("INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, $3)")
            .bind(org.id.as_str())
            .bind(org.name.as_str())
            .bind(org.created_at);
        match self.db.execute(&sql).await {
            Err(Error::Database(sqlx::Error::Database(d))) if d.is_unique_violation() => {
                Err(Error::Conflict(format!("an organization named '{}' already exists", org.name)))
            }
            other => other.map(drop),
        }
    }

    pub(crate) async fn organization_where(&self, column: &str, value: &str) -> Result<Option<Organization>> {
        let sql = Sql::new(format!("SELECT id, name, created_at FROM organizations WHERE {column} = $1")).bind(value);
        Ok(self.fetch_optional(sql).await?.map(org))
    }

    pub(crate) async fn count_organizations_impl(&self) -> Result<i64> {
        let (count,) =
            self.fetch_optional::<(i64,)>(Sql::new("SELECT COUNT(*) FROM organizations")).await?.unwrap_or((0,));
        Ok(count)
    }

    pub(crate) async fn create_api_key_impl(&self, key: &ApiKeyRecord) -> Result<()> {
        let scopes: Vec<&str> = key.scopes.iter().map(|s| s.as_str()).collect();
        let sql = Sql::new(
            "INSERT INTO api_keys (id, org_id, hash, prefix, name, scopes, created_at, revoked_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(key.id.as_str())
        .bind(key.org_id.as_str())
        .bind(key.hash.as_str())
        .bind(key.prefix.as_str())
        .bind(key.name.clone())
        .bind(scopes.join(","))
        .bind(key.created_at)
        .bind(key.revoked_at);
        self.db.execute(&sql).await.map(drop)
    }

    pub(crate) async fn find_api_key_impl(&self, hash: &str) -> Result<Option<ApiKeyRecord>> {
        let sql = Sql::new(format!("{KEY_COLUMNS} WHERE hash = $1")).bind(hash);
        Ok(self.fetch_optional::<KeyRow>(sql).await?.map(Into::into))
    }

    pub(crate) async fn list_api_keys_impl(&self, org_id: Option<&str>) -> Result<Vec<ApiKeyRecord>> {
        let sql =
            Sql::new(format!("{KEY_COLUMNS} WHERE CAST($1 AS TEXT) IS NULL OR org_id = $1 ORDER BY created_at, id"))
                .bind(org_id);
        Ok(self.fetch::<KeyRow>(sql).await?.into_iter().map(Into::into).collect())
    }

    pub(crate) async fn revoke_api_key_impl(&self, org_id: Option<&str>, id: &str, at: i64) -> Result<bool> {
        let revoked = self
            .changed(
                Sql::new(
                    "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) \
                 WHERE id = $2 AND (CAST($3 AS TEXT) IS NULL OR org_id = $3)",
                )
                .bind(at)
                .bind(id)
                .bind(org_id),
            )
            .await;
        self.db.announce(crate::cluster::notices::Notice::Keys).await;
        revoked
    }

    pub(crate) async fn create_agent_impl(&self, org_id: &str, agent: &AgentRecord) -> Result<()> {
        let doc = Doc(serde_json::to_string(agent)?);
        let insert = Sql::new("INSERT INTO agents (id, org_id, version, doc) VALUES ($1, $2, $3, $4)")
            .bind(agent.id.as_str())
            .bind(org_id)
            .bind(agent.version)
            .bind(doc.clone());
        self.db.transaction(&insert, &[agent_version(agent, &doc)]).await?;
        self.agents.created(org_id, agent);
        Ok(())
    }

    pub(crate) async fn get_agent_impl(&self, org_id: &str, id: &str) -> Result<Option<AgentRecord>> {
        let sql = || Sql::new("SELECT doc FROM agents WHERE id = $1 AND org_id = $2").bind(id).bind(org_id);
        self.cached_doc(&self.agents, org_id, &id.to_string(), sql).await
    }

    pub(crate) async fn update_agent_impl(&self, org_id: &str, agent: &AgentRecord) -> Result<bool> {
        let doc = Doc(serde_json::to_string(agent)?);
        let update =
            Sql::new("UPDATE agents SET version = $1, doc = $2 WHERE id = $3 AND org_id = $4 AND version = $5")
                .bind(agent.version)
                .bind(doc.clone())
                .bind(agent.id.as_str())
                .bind(org_id)
                .bind(agent.version - 1);
        let updated = self.db.transaction(&update, &[agent_version(agent, &doc)]).await;
        self.agents.invalidate([agent.id.clone()]);
        Ok(updated? > 0)
    }

    pub(crate) async fn list_agents_impl(&self, org_id: &str, page: &PageRequest) -> Result<Page<AgentRecord>> {
        self.page_of("agents", org_id, page, |_| {}).await
    }

    pub(crate) async fn delete_agent_impl(&self, org_id: &str, id: &str) -> Result<bool> {
        let delete = Sql::new("DELETE FROM agents WHERE id = $1 AND org_id = $2").bind(id).bind(org_id);
        let versions = Sql::new("DELETE FROM agent_versions WHERE agent_id = $1").bind(id);
        let deleted = self.db.transaction(&delete, &[versions]).await;
        self.agents.invalidate([id.to_string()]);
        Ok(deleted? > 0)
    }
}
