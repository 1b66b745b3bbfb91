//! The PostgreSQL backend's environments, artifacts, vaults and credentials.
//! Secret values arrive sealed; this module only ever sees ciphertext.
//! Artifact content is stored inline (`bytea`).

use crate::postgres::{PgStore, parse_doc};
use crate::{Artifact, Result};
use protocol::environment::EnvironmentRecord;
use protocol::vault::{CredentialRecord, Vault};
use sqlx::Row;
use uuid::Uuid;

fn credential_from_row(row: &sqlx::postgres::PgRow) -> Result<CredentialRecord> {
    Ok(CredentialRecord {
        credential: serde_json::from_str(row.try_get::<&str, _>("doc")?)?,
        version: row.try_get("version")?,
        sealed: row.try_get("sealed")?,
    })
}

impl PgStore {
    /// Runs a statement of `(id, org_id)` binds; whether it touched a row.
    async fn by_id(&self, sql: &str, id: &str, org_id: &str) -> Result<bool> {
        let done = sqlx::query(sql).bind(id).bind(org_id).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }

    /// The document of `(id, org_id)` in a `SELECT doc::text … WHERE id = $1 AND org_id = $2`.
    async fn doc_by_id<T: serde::de::DeserializeOwned>(&self, sql: &str, id: &str, org_id: &str) -> Result<Option<T>> {
        let doc: Option<String> = sqlx::query_scalar(sql).bind(id).bind(org_id).fetch_optional(&self.pool).await?;
        parse_doc(doc)
    }

    pub(crate) async fn put_environment_impl(&self, org_id: &str, env: &EnvironmentRecord) -> Result<()> {
        sqlx::query(
            "INSERT INTO environments (id, org_id, doc) VALUES ($1, $2, $3::jsonb) \
             ON CONFLICT (id) DO UPDATE SET doc = excluded.doc WHERE environments.org_id = excluded.org_id",
        )
        .bind(&env.id)
        .bind(org_id)
        .bind(serde_json::to_string(env)?)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(crate) async fn get_environment_impl(&self, org_id: &str, id: &str) -> Result<Option<EnvironmentRecord>> {
        self.doc_by_id("SELECT doc::text FROM environments WHERE id = $1 AND org_id = $2", id, org_id).await
    }

    pub(crate) async fn delete_environment_impl(&self, org_id: &str, id: &str) -> Result<bool> {
        self.by_id("DELETE FROM environments WHERE id = $1 AND org_id = $2", id, org_id).await
    }

    pub(crate) async fn sessions_on_environment_impl(&self, org_id: &str, env_id: &str) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM sessions WHERE org_id = $1 AND doc -> 'environment' ->> 'id' = $2")
            .bind(org_id)
            .bind(env_id)
            .fetch_one(&self.pool)
            .await?)
    }

    pub(crate) async fn put_artifact_impl(&self, org_id: &str, artifact: &Artifact, content: &[u8]) -> Result<()> {
        sqlx::query(
            "INSERT INTO artifacts (id, org_id, session_id, turn_id, path, sha256, doc, content) \
             VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8) ON CONFLICT (session_id, path, turn_id) DO NOTHING",
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
        Ok(sqlx::query_as("SELECT path, sha256 FROM artifacts WHERE org_id = $1 AND session_id = $2 ORDER BY seq")
            .bind(org_id)
            .bind(session_id.to_string())
            .fetch_all(&self.pool)
            .await?)
    }

    pub(crate) async fn get_artifact_impl(
        &self,
        org_id: &str,
        session_id: Uuid,
        id: &str,
    ) -> Result<Option<(Artifact, Vec<u8>)>> {
        let row = sqlx::query(
            "SELECT doc::text AS doc, content FROM artifacts WHERE id = $1 AND org_id = $2 AND session_id = $3",
        )
        .bind(id)
        .bind(org_id)
        .bind(session_id.to_string())
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| Ok((serde_json::from_str(r.try_get::<&str, _>("doc")?)?, r.try_get::<Vec<u8>, _>("content")?)))
            .transpose()
    }

    pub(crate) async fn delete_artifact_impl(&self, org_id: &str, session_id: Uuid, id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM artifacts WHERE id = $1 AND org_id = $2 AND session_id = $3")
            .bind(id)
            .bind(org_id)
            .bind(session_id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(crate) async fn create_vault_impl(&self, org_id: &str, vault: &Vault) -> Result<()> {
        sqlx::query("INSERT INTO vaults (id, org_id, doc) VALUES ($1, $2, $3::jsonb)")
            .bind(&vault.id)
            .bind(org_id)
            .bind(serde_json::to_string(vault)?)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub(crate) async fn get_vault_impl(&self, org_id: &str, id: &str) -> Result<Option<Vault>> {
        self.doc_by_id("SELECT doc::text FROM vaults WHERE id = $1 AND org_id = $2", id, org_id).await
    }

    pub(crate) async fn put_vault_impl(&self, org_id: &str, vault: &Vault) -> Result<bool> {
        let done = sqlx::query("UPDATE vaults SET doc = $1::jsonb WHERE id = $2 AND org_id = $3")
            .bind(serde_json::to_string(vault)?)
            .bind(&vault.id)
            .bind(org_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(crate) async fn delete_vault_impl(&self, org_id: &str, id: &str) -> Result<bool> {
        // The credentials go with it (ON DELETE CASCADE).
        self.by_id("DELETE FROM vaults WHERE id = $1 AND org_id = $2", id, org_id).await
    }

    pub(crate) async fn create_credential_impl(&self, org_id: &str, record: &CredentialRecord) -> Result<()> {
        let c = &record.credential;
        sqlx::query(
            "INSERT INTO vault_credentials (id, org_id, vault_id, version, doc, sealed) \
             VALUES ($1, $2, $3, $4, $5::jsonb, $6)",
        )
        .bind(&c.id)
        .bind(org_id)
        .bind(&c.vault_id)
        .bind(record.version)
        .bind(serde_json::to_string(c)?)
        .bind(&record.sealed)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(crate) async fn get_credential_impl(
        &self,
        org_id: &str,
        vault_id: &str,
        id: &str,
    ) -> Result<Option<CredentialRecord>> {
        let row = sqlx::query(
            "SELECT doc::text AS doc, version, sealed FROM vault_credentials \
             WHERE id = $1 AND vault_id = $2 AND org_id = $3",
        )
        .bind(id)
        .bind(vault_id)
        .bind(org_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(credential_from_row).transpose()
    }

    pub(crate) async fn update_credential_impl(&self, org_id: &str, record: &CredentialRecord) -> Result<bool> {
        let c = &record.credential;
        let done = sqlx::query(
            "UPDATE vault_credentials SET version = $1, doc = $2::jsonb, sealed = $3 \
             WHERE id = $4 AND vault_id = $5 AND org_id = $6 AND version = $7",
        )
        .bind(record.version)
        .bind(serde_json::to_string(c)?)
        .bind(&record.sealed)
        .bind(&c.id)
        .bind(&c.vault_id)
        .bind(org_id)
        .bind(record.version - 1)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(crate) async fn delete_credential_impl(&self, org_id: &str, vault_id: &str, id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM vault_credentials WHERE id = $1 AND vault_id = $2 AND org_id = $3")
            .bind(id)
            .bind(vault_id)
            .bind(org_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(crate) async fn vault_credentials_impl(
        &self,
        org_id: &str,
        vault_ids: &[String],
    ) -> Result<Vec<CredentialRecord>> {
        let rows = sqlx::query(
            "SELECT doc::text AS doc, version, sealed FROM vault_credentials \
             WHERE org_id = $1 AND vault_id = ANY($2) ORDER BY seq",
        )
        .bind(org_id)
        .bind(vault_ids)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(credential_from_row).collect()
    }
}
