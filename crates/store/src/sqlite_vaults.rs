//! The SQLite backend's vaults, credentials and master key check. Secret
//! values arrive sealed; this module only ever sees ciphertext.

use crate::sqlite::{SqliteStore, page_of};
use crate::{Page, Result};
use protocol::list::PageRequest;
use protocol::vault::{Credential, CredentialRecord, Vault};
use sqlx::{QueryBuilder, Row, Sqlite};

/// Adds `metadata[key] = value` conditions on `table.doc`.
fn metadata_filter<'a>(table: &'a str, metadata: &'a [(String, String)]) -> impl Fn(&mut crate::paging::Sql) + 'a {
    move |q| {
        for (key, value) in metadata {
            q.push(format!(" AND EXISTS (SELECT 1 FROM json_each({table}.doc, '$.metadata') WHERE key = "));
            q.push_bind(key.clone());
            q.push(" AND value = ");
            q.push_bind(value.clone());
            q.push(")");
        }
    }
}

fn credential_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<CredentialRecord> {
    Ok(CredentialRecord {
        credential: serde_json::from_str(row.try_get::<&str, _>("doc")?)?,
        version: row.try_get("version")?,
        sealed: row.try_get("sealed")?,
    })
}

impl SqliteStore {
    pub(crate) async fn create_vault_impl(&self, org_id: &str, vault: &Vault) -> Result<()> {
        sqlx::query("INSERT INTO vaults (id, org_id, doc) VALUES (?, ?, ?)")
            .bind(&vault.id)
            .bind(org_id)
            .bind(serde_json::to_string(vault)?)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub(crate) async fn get_vault_impl(&self, org_id: &str, id: &str) -> Result<Option<Vault>> {
        let doc: Option<String> = sqlx::query_scalar("SELECT doc FROM vaults WHERE id = ? AND org_id = ?")
            .bind(id)
            .bind(org_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(doc.map(|d| serde_json::from_str(&d)).transpose()?)
    }

    pub(crate) async fn put_vault_impl(&self, org_id: &str, vault: &Vault) -> Result<bool> {
        let done = sqlx::query("UPDATE vaults SET doc = ? WHERE id = ? AND org_id = ?")
            .bind(serde_json::to_string(vault)?)
            .bind(&vault.id)
            .bind(org_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(crate) async fn list_vaults_impl(
        &self,
        org_id: &str,
        metadata: &[(String, String)],
        page: &PageRequest,
    ) -> Result<Page<Vault>> {
        page_of(&self.pool, "vaults", org_id, page, metadata_filter("vaults", metadata)).await
    }

    pub(crate) async fn delete_vault_impl(&self, org_id: &str, id: &str) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM vault_credentials WHERE vault_id = ? AND org_id = ?")
            .bind(id)
            .bind(org_id)
            .execute(&mut *tx)
            .await?;
        let done = sqlx::query("DELETE FROM vaults WHERE id = ? AND org_id = ?")
            .bind(id)
            .bind(org_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    pub(crate) async fn create_credential_impl(&self, org_id: &str, record: &CredentialRecord) -> Result<()> {
        let c = &record.credential;
        sqlx::query(
            "INSERT INTO vault_credentials (id, org_id, vault_id, version, doc, sealed) VALUES (?, ?, ?, ?, ?, ?)",
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
            "SELECT doc, version, sealed FROM vault_credentials WHERE id = ? AND vault_id = ? AND org_id = ?",
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
            "UPDATE vault_credentials SET version = ?, doc = ?, sealed = ? \
             WHERE id = ? AND vault_id = ? AND org_id = ? AND version = ?",
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

    pub(crate) async fn list_credentials_impl(
        &self,
        org_id: &str,
        vault_id: &str,
        metadata: &[(String, String)],
        page: &PageRequest,
    ) -> Result<Page<Credential>> {
        let by_metadata = metadata_filter("vault_credentials", metadata);
        page_of(&self.pool, "vault_credentials", org_id, page, |q| {
            q.push(" AND vault_id = ");
            q.push_bind(vault_id.to_string());
            by_metadata(q);
        })
        .await
    }

    pub(crate) async fn delete_credential_impl(&self, org_id: &str, vault_id: &str, id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM vault_credentials WHERE id = ? AND vault_id = ? AND org_id = ?")
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
        if vault_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut q: QueryBuilder<Sqlite> =
            QueryBuilder::new("SELECT doc, version, sealed FROM vault_credentials WHERE org_id = ");
        q.push_bind(org_id.to_string());
        q.push(" AND vault_id IN (");
        let mut ids = q.separated(", ");
        for id in vault_ids {
            ids.push_bind(id.clone());
        }
        q.push(") ORDER BY seq");
        let rows = q.build().fetch_all(&self.pool).await?;
        rows.iter().map(credential_from_row).collect()
    }

    pub(crate) async fn existing_vaults_impl(&self, org_id: &str, ids: &[String]) -> Result<Vec<String>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut q: QueryBuilder<Sqlite> = QueryBuilder::new("SELECT id FROM vaults WHERE org_id = ");
        q.push_bind(org_id.to_string());
        q.push(" AND id IN (");
        let mut list = q.separated(", ");
        for id in ids {
            list.push_bind(id.clone());
        }
        q.push(")");
        let rows = q.build().fetch_all(&self.pool).await?;
        rows.iter().map(|r| Ok(r.try_get::<String, _>("id")?)).collect()
    }

    pub(crate) async fn master_key_check_impl(&self) -> Result<Option<Vec<u8>>> {
        Ok(sqlx::query_scalar("SELECT sealed FROM master_key_check WHERE id = 1").fetch_optional(&self.pool).await?)
    }

    pub(crate) async fn init_master_key_check_impl(&self, sealed: &[u8]) -> Result<Vec<u8>> {
        // First writer wins; everyone reads back the value that was kept.
        sqlx::query("INSERT INTO master_key_check (id, sealed) VALUES (1, ?) ON CONFLICT(id) DO NOTHING")
            .bind(sealed)
            .execute(&self.pool)
            .await?;
        Ok(sqlx::query_scalar("SELECT sealed FROM master_key_check WHERE id = 1").fetch_one(&self.pool).await?)
    }
}
