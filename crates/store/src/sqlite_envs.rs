//! The SQLite backend's environments and artifacts.

use crate::sqlite::{SqliteStore, page_of};
use crate::{Artifact, Page, Result};
use protocol::environment::EnvironmentRecord;
use protocol::list::PageRequest;
use sqlx::Row;
use uuid::Uuid;

impl SqliteStore {
    pub(crate) async fn put_environment_impl(&self, org_id: &str, env: &EnvironmentRecord) -> Result<()> {
        sqlx::query(
            "INSERT INTO environments (id, org_id, doc) VALUES (?, ?, ?) \
             ON CONFLICT(id) DO UPDATE SET doc = excluded.doc WHERE environments.org_id = excluded.org_id",
        )
        .bind(&env.id)
        .bind(org_id)
        .bind(serde_json::to_string(env)?)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(crate) async fn get_environment_impl(&self, org_id: &str, id: &str) -> Result<Option<EnvironmentRecord>> {
        let doc: Option<String> = sqlx::query_scalar("SELECT doc FROM environments WHERE id = ? AND org_id = ?")
            .bind(id)
            .bind(org_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(doc.map(|d| serde_json::from_str(&d)).transpose()?)
    }

    pub(crate) async fn list_environments_impl(
        &self,
        org_id: &str,
        page: &PageRequest,
    ) -> Result<Page<EnvironmentRecord>> {
        page_of(&self.pool, "environments", org_id, page, |_| {}).await
    }

    pub(crate) async fn delete_environment_impl(&self, org_id: &str, id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM environments WHERE id = ? AND org_id = ?")
            .bind(id)
            .bind(org_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(crate) async fn sessions_on_environment_impl(&self, org_id: &str, env_id: &str) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM sessions WHERE org_id = ? AND json_extract(doc, '$.environment.id') = ?",
        )
        .bind(org_id)
        .bind(env_id)
        .fetch_one(&self.pool)
        .await?)
    }

    pub(crate) async fn put_artifact_impl(&self, org_id: &str, artifact: &Artifact, content: &[u8]) -> Result<()> {
        sqlx::query(
            "INSERT INTO artifacts (id, org_id, session_id, turn_id, path, sha256, doc, content) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(session_id, path, turn_id) DO NOTHING",
        )
        .bind(&artifact.id)
        .bind(org_id)
        .bind(&artifact.session_id)
        .bind(&artifact.turn_id)
        .bind(&artifact.path)
        .bind(&artifact.sha256)
        .bind(serde_json::to_string(artifact)?)
        .bind(content)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(crate) async fn artifact_hashes_impl(&self, org_id: &str, session_id: Uuid) -> Result<Vec<(String, String)>> {
        let rows = sqlx::query("SELECT path, sha256 FROM artifacts WHERE org_id = ? AND session_id = ? ORDER BY seq")
            .bind(org_id)
            .bind(session_id.to_string())
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| Ok((r.try_get("path")?, r.try_get("sha256")?))).collect()
    }

    pub(crate) async fn list_artifacts_impl(
        &self,
        org_id: &str,
        session_id: Uuid,
        page: &PageRequest,
    ) -> Result<Page<Artifact>> {
        let sid = session_id.to_string();
        page_of(&self.pool, "artifacts", org_id, page, |q| {
            q.push(" AND session_id = ");
            q.push_bind(sid.clone());
        })
        .await
    }

    pub(crate) async fn get_artifact_impl(
        &self,
        org_id: &str,
        session_id: Uuid,
        id: &str,
    ) -> Result<Option<(Artifact, Vec<u8>)>> {
        let row = sqlx::query("SELECT doc, content FROM artifacts WHERE id = ? AND org_id = ? AND session_id = ?")
            .bind(id)
            .bind(org_id)
            .bind(session_id.to_string())
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| Ok((serde_json::from_str(r.try_get::<&str, _>("doc")?)?, r.try_get::<Vec<u8>, _>("content")?)))
            .transpose()
    }

    pub(crate) async fn delete_artifact_impl(&self, org_id: &str, session_id: Uuid, id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM artifacts WHERE id = ? AND org_id = ? AND session_id = ?")
            .bind(id)
            .bind(org_id)
            .bind(session_id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
}
