//! Vaults, credentials and the master key check. Secret values arrive
//! sealed; this module only ever sees ciphertext. A credential's `version`
//! increases with every change of its sealed part: writers compare it.

use super::{Backend, Doc, Sql, SqlStore};
use crate::{Page, Result};
use protocol::list::PageRequest;
use protocol::vault::{Credential, CredentialRecord, Vault};

const CREDENTIAL_COLUMNS: &str = "SELECT doc, version, sealed FROM vault_credentials";

fn credential((doc, version, sealed): (Doc, i64, Vec<u8>)) -> Result<CredentialRecord> {
    Ok(CredentialRecord { credential: doc.parse()?, version, sealed })
}

impl<B: Backend> SqlStore<B> {
    /// Appends the `metadata[key] = value` conditions on `table.doc`.
    fn metadata<'a>(table: &'a str, metadata: &'a [(String, String)]) -> impl FnOnce(&mut Sql) + 'a {
        move |q| {
            for (key, value) in metadata {
                (B::DIALECT.metadata)(q, table, key, value);
            }
        }
    }

    pub(crate) async fn create_vault_impl(&self, org_id: &str, vault: &Vault) -> Result<()> {
        let sql = Sql::new("INSERT INTO vaults (id, org_id, doc) VALUES ($1, $2, $3)")
            .bind(vault.id.as_str())
            .bind(org_id)
            .bind(Doc(serde_json::to_string(vault)?));
        self.db.execute(&sql).await.map(drop)
    }

    pub(crate) async fn get_vault_impl(&self, org_id: &str, id: &str) -> Result<Option<Vault>> {
        self.doc(Sql::new("SELECT doc FROM vaults WHERE id = $1 AND org_id = $2").bind(id).bind(org_id)).await
    }

    pub(crate) async fn put_vault_impl(&self, org_id: &str, vault: &Vault) -> Result<bool> {
        let sql = Sql::new("UPDATE vaults SET doc = $1 WHERE id = $2 AND org_id = $3")
            .bind(Doc(serde_json::to_string(vault)?))
            .bind(vault.id.as_str())
            .bind(org_id);
        self.changed(sql).await
    }

    pub(crate) async fn list_vaults_impl(
        &self,
        org_id: &str,
        metadata: &[(String, String)],
        page: &PageRequest,
    ) -> Result<Page<Vault>> {
        self.page_of("vaults", org_id, page, Self::metadata("vaults", metadata)).await
    }

    pub(crate) async fn delete_vault_impl(&self, org_id: &str, id: &str) -> Result<bool> {
        let vault = Sql::new("DELETE FROM vaults WHERE id = $1 AND org_id = $2").bind(id).bind(org_id);
        // Its credentials go with it (the foreign key cascades; said here too).
        let credentials =
            Sql::new("DELETE FROM vault_credentials WHERE vault_id = $1 AND org_id = $2").bind(id).bind(org_id);
        Ok(self.db.transaction(&vault, &[credentials]).await? > 0)
    }

    /// Which of `ids` are rows of `table` of this organization.
    async fn existing_ids(&self, table: &str, org_id: &str, ids: &[String]) -> Result<Vec<String>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = Sql::new(format!("SELECT id FROM {table} WHERE org_id = $1 AND id IN ")).bind(org_id);
        sql.push_list(ids);
        Ok(self.fetch::<(String,)>(sql).await?.into_iter().map(|(id,)| id).collect())
    }

    pub(crate) async fn existing_vaults_impl(&self, org_id: &str, ids: &[String]) -> Result<Vec<String>> {
        self.existing_ids("vaults", org_id, ids).await
    }

    pub(crate) async fn existing_credentials_impl(&self, org_id: &str, ids: &[String]) -> Result<Vec<String>> {
        self.existing_ids("vault_credentials", org_id, ids).await
    }

    pub(crate) async fn create_credential_impl(&self, org_id: &str, record: &CredentialRecord) -> Result<()> {
        let c = &record.credential;
        let sql = Sql::new(
            "INSERT INTO vault_credentials (id, org_id, vault_id, version, doc, sealed) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(c.id.as_str())
        .bind(org_id)
        .bind(c.vault_id.as_str())
        .bind(record.version)
        .bind(Doc(serde_json::to_string(c)?))
        .bind(record.sealed.clone());
        self.db.execute(&sql).await.map(drop)
    }

    pub(crate) async fn get_credential_impl(
        &self,
        org_id: &str,
        vault_id: &str,
        id: &str,
    ) -> Result<Option<CredentialRecord>> {
        let sql = Sql::new(format!("{CREDENTIAL_COLUMNS} WHERE id = $1 AND vault_id = $2 AND org_id = $3"))
            .bind(id)
            .bind(vault_id)
            .bind(org_id);
        self.fetch_optional(sql).await?.map(credential).transpose()
    }

    pub(crate) async fn update_credential_impl(&self, org_id: &str, record: &CredentialRecord) -> Result<bool> {
        let c = &record.credential;
        let sql = Sql::new(
            "UPDATE vault_credentials SET version = $1, doc = $2, sealed = $3 \
             WHERE id = $4 AND vault_id = $5 AND org_id = $6 AND version = $7",
        )
        .bind(record.version)
        .bind(Doc(serde_json::to_string(c)?))
        .bind(record.sealed.clone())
        .bind(c.id.as_str())
        .bind(c.vault_id.as_str())
        .bind(org_id)
        .bind(record.version - 1);
        self.changed(sql).await
    }

    pub(crate) async fn list_credentials_impl(
        &self,
        org_id: &str,
        vault_id: &str,
        metadata: &[(String, String)],
        page: &PageRequest,
    ) -> Result<Page<Credential>> {
        let by_metadata = Self::metadata("vault_credentials", metadata);
        self.page_of("vault_credentials", org_id, page, |q| {
            q.push(" AND vault_id = ");
            q.push_bind(vault_id);
            by_metadata(q);
        })
        .await
    }

    pub(crate) async fn delete_credential_impl(&self, org_id: &str, vault_id: &str, id: &str) -> Result<bool> {
        let sql = Sql::new("DELETE FROM vault_credentials WHERE id = $1 AND vault_id = $2 AND org_id = $3")
            .bind(id)
            .bind(vault_id)
            .bind(org_id);
        self.changed(sql).await
    }

    pub(crate) async fn vault_credentials_impl(
        &self,
        org_id: &str,
        vault_ids: &[String],
    ) -> Result<Vec<CredentialRecord>> {
        if vault_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = Sql::new(format!("{CREDENTIAL_COLUMNS} WHERE org_id = $1 AND vault_id IN ")).bind(org_id);
        sql.push_list(vault_ids);
        sql.push(" ORDER BY seq");
        self.fetch(sql).await?.into_iter().map(credential).collect()
    }

    pub(crate) async fn master_key_check_impl(&self) -> Result<Option<Vec<u8>>> {
        let sql = Sql::new("SELECT sealed FROM master_key_check WHERE id = 1");
        Ok(self.fetch_optional::<(Vec<u8>,)>(sql).await?.map(|(sealed,)| sealed))
    }

    pub(crate) async fn init_master_key_check_impl(&self, sealed: &[u8]) -> Result<Vec<u8>> {
        // First writer wins; everyone reads back the value that was kept.
        let sql = Sql::new("INSERT INTO master_key_check (id, sealed) VALUES (1, $1) ON CONFLICT (id) DO NOTHING")
            .bind(sealed);
        self.db.execute(&sql).await?;
        Ok(self.master_key_check_impl().await?.unwrap_or_default())
    }
}
