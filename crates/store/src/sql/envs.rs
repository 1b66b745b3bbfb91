//! Environments and session artifacts (immutable: a changed output is a new
//! artifact). Artifact content is stored inline (SQLite `BLOB`, PostgreSQL
//! `bytea`).

use super::{Backend, Doc, Sql, SqlStore};
use crate::{Artifact, Page, Result};
use protocol::environment::EnvironmentRecord;
use protocol::ids::EnvironmentId;
use protocol::ids::SessionId;
use protocol::list::PageRequest;

impl<B: Backend> SqlStore<B> {
    pub(crate) async fn put_environment_impl(&self, org_id: &str, env: &EnvironmentRecord) -> Result<()> {
        let sql = Sql::new(
            "INSERT INTO environments (id, org_id, doc, template_id) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id) DO UPDATE SET doc = excluded.doc WHERE environments.org_id = excluded.org_id",
        )
        .bind(env.id.as_str())
        .bind(org_id)
        .bind(Doc(serde_json::to_string(env)?))
        .bind(env.template.as_ref().map(|t| t.id.to_string()));
        self.db.execute(&sql).await.map(drop)
    }

    pub(crate) async fn get_environment_impl(
        &self,
        org_id: &str,
        id: &EnvironmentId,
    ) -> Result<Option<EnvironmentRecord>> {
        self.doc(Sql::new("SELECT doc FROM environments WHERE id = $1 AND org_id = $2").bind(id).bind(org_id)).await
    }

    pub(crate) async fn list_environments_impl(
        &self,
        org_id: &str,
        page: &PageRequest,
    ) -> Result<Page<EnvironmentRecord>> {
        self.page_of("environments", org_id, page, |_| {}).await
    }

    pub(crate) async fn delete_environment_impl(&self, org_id: &str, id: &EnvironmentId) -> Result<bool> {
        self.changed(Sql::new("DELETE FROM environments WHERE id = $1 AND org_id = $2").bind(id).bind(org_id)).await
    }

    pub(crate) async fn sessions_on_environment_impl(&self, org_id: &str, env_id: &EnvironmentId) -> Result<i64> {
        let sql = Sql::new(B::DIALECT.sessions_on_environment).bind(org_id).bind(env_id);
        Ok(self.fetch_optional::<(i64,)>(sql).await?.map_or(0, |(n,)| n))
    }

    pub(crate) async fn environment_sessions_impl(
        &self,
        org_id: &str,
        env_id: &EnvironmentId,
    ) -> Result<Vec<SessionId>> {
        let sql = Sql::new(B::DIALECT.environment_sessions).bind(org_id).bind(env_id);
        let rows = self.fetch::<(String,)>(sql).await?;
        Ok(rows.iter().filter_map(|(id,)| SessionId::parse(id)).collect())
    }

    pub(crate) async fn put_artifact_impl(&self, org_id: &str, artifact: &Artifact, content: &[u8]) -> Result<()> {
        let sql = Sql::new(
            "INSERT INTO artifacts (id, org_id, session_id, turn_id, path, sha256, doc, content) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (session_id, path, turn_id) DO NOTHING",
        )
        .bind(artifact.id.as_str())
        .bind(org_id)
        .bind(artifact.session_id)
        .bind(artifact.turn_id)
        .bind(artifact.path.as_str())
        .bind(artifact.sha256.as_str())
        .bind(Doc(serde_json::to_string(artifact)?))
        .bind(content);
        self.db.execute(&sql).await.map(drop)
    }

    pub(crate) async fn artifact_hashes_impl(
        &self,
        org_id: &str,
        session_id: SessionId,
    ) -> Result<Vec<(String, String)>> {
        let sql = Sql::new("SELECT path, sha256 FROM artifacts WHERE org_id = $1 AND session_id = $2 ORDER BY seq")
            .bind(org_id)
            .bind(session_id);
        self.fetch(sql).await
    }

    pub(crate) async fn list_artifacts_impl(
        &self,
        org_id: &str,
        session_id: SessionId,
        page: &PageRequest,
    ) -> Result<Page<Artifact>> {
        self.page_of("artifacts", org_id, page, |q| {
            q.push(" AND session_id = ");
            q.push_bind(session_id);
        })
        .await
    }

    pub(crate) async fn get_artifact_impl(
        &self,
        org_id: &str,
        session_id: SessionId,
        id: &str,
    ) -> Result<Option<(Artifact, Vec<u8>)>> {
        let sql = Sql::new("SELECT doc, content FROM artifacts WHERE id = $1 AND org_id = $2 AND session_id = $3")
            .bind(id)
            .bind(org_id)
            .bind(session_id);
        self.fetch_optional::<(Doc, Vec<u8>)>(sql).await?.map(|(doc, content)| Ok((doc.parse()?, content))).transpose()
    }

    pub(crate) async fn delete_artifact_impl(&self, org_id: &str, session_id: SessionId, id: &str) -> Result<bool> {
        let sql = Sql::new("DELETE FROM artifacts WHERE id = $1 AND org_id = $2 AND session_id = $3")
            .bind(id)
            .bind(org_id)
            .bind(session_id);
        self.changed(sql).await
    }
}
