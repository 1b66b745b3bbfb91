//! Vaults and their credentials. Secret values are write-only: they are
//! sealed with the master key before they reach the store, and nothing
//! returned carries them. Another organization's vault or credential is not
//! found.

use crate::credentials::sealed;
use crate::{App, Error, Result, now};
use protocol::agent::Patch;
use protocol::list::PageRequest;
use protocol::validate;
use protocol::vault::{
    Credential, CredentialCreate, CredentialUpdate, Vault, VaultCreate, VaultUpdate, check_name, is_credential_id,
    is_vault_id, new_vault_id,
};
use store::Page;

/// What a vault or credential list keeps: `metadata` pairs that must all
/// match, and whether `active` ones are wanted (nothing here is archived, so
/// a filter for `archived` only matches nothing).
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub metadata: Vec<(String, String)>,
    pub active: bool,
}

fn empty<T>() -> Page<T> {
    Page { items: Vec::new(), has_more: false }
}

fn check_credential_id(id: &str) -> Result<()> {
    if is_credential_id(id) { Ok(()) } else { Err(Error::not_found("credential", id)) }
}

/// The vaults of one organization.
pub struct Service<'a> {
    pub(crate) app: &'a App,
    pub(crate) org: &'a str,
}

impl Service<'_> {
    /// The vault, or 404.
    pub async fn get(&self, id: &str) -> Result<Vault> {
        if !is_vault_id(id) {
            return Err(Error::not_found("vault", id));
        }
        self.app.store.get_vault(self.org, id).await?.ok_or_else(|| Error::not_found("vault", id))
    }

    pub async fn create(&self, req: VaultCreate) -> Result<Vault> {
        let name = req.name.as_deref().map(|n| check_name("name", n)).transpose()?;
        let metadata = req.metadata.unwrap_or_default();
        validate::metadata("metadata", &metadata)?;
        let vault = Vault { id: new_vault_id(), created_at: now(), metadata, name, object: "vault".into() };
        self.app.store.create_vault(self.org, &vault).await?;
        Ok(vault)
    }

    pub async fn update(&self, id: &str, req: VaultUpdate) -> Result<Vault> {
        let mut vault = self.get(id).await?;
        if let Some(metadata) = req.metadata {
            validate::metadata("metadata", &metadata)?;
            vault.metadata = metadata;
        }
        let name = match req.name {
            Patch::Value(n) => Patch::Value(check_name("name", &n)?),
            other => other,
        };
        name.apply_opt(&mut vault.name);
        if !self.app.store.put_vault(self.org, &vault).await? {
            return Err(Error::not_found("vault", id));
        }
        Ok(vault)
    }

    pub async fn list(&self, filter: &ListFilter, page: &PageRequest) -> Result<Page<Vault>> {
        validate::metadata("metadata", &filter.metadata.iter().cloned().collect())?;
        if !filter.active {
            return Ok(empty());
        }
        Ok(self.app.store.list_vaults(self.org, &filter.metadata, page).await?)
    }

    /// Deletes a vault with its credentials.
    pub async fn delete(&self, id: &str) -> Result<()> {
        if !is_vault_id(id) || !self.app.store.delete_vault(self.org, id).await? {
            return Err(Error::not_found("vault", id));
        }
        Ok(())
    }

    /// Seals the new credential's secrets and stores it.
    pub async fn create_credential(&self, vault_id: &str, req: CredentialCreate) -> Result<Credential> {
        let vault = self.get(vault_id).await?;
        let record = sealed::new_record(self.app.credentials.cipher(), self.org, &vault.id, req)?;
        self.app.store.create_credential(self.org, &record).await?;
        tracing::info!(credential_id = %record.credential.id, vault_id = %vault.id, kind = record.credential.auth.kind(), "created a credential");
        Ok(record.credential)
    }

    pub async fn get_credential(&self, vault_id: &str, id: &str) -> Result<Credential> {
        self.get(vault_id).await?;
        check_credential_id(id)?;
        let record = self.app.store.get_credential(self.org, vault_id, id).await?;
        record.map(|r| r.credential).ok_or_else(|| Error::not_found("credential", id))
    }

    /// Changes a credential (rotating its secrets when `auth` is given).
    pub async fn update_credential(&self, vault_id: &str, id: &str, req: CredentialUpdate) -> Result<Credential> {
        self.get(vault_id).await?;
        check_credential_id(id)?;
        let org = self.org;
        let record = self
            .app
            .credentials
            .update_with(org, vault_id, id, |cipher, current| sealed::rotate(cipher, org, current, &req))
            .await?;
        if req.auth.is_some() {
            tracing::info!(credential_id = %id, vault_id = %vault_id, "rotated a credential");
        }
        Ok(record.credential)
    }

    pub async fn list_credentials(
        &self,
        vault_id: &str,
        filter: &ListFilter,
        page: &PageRequest,
    ) -> Result<Page<Credential>> {
        self.get(vault_id).await?;
        validate::metadata("metadata", &filter.metadata.iter().cloned().collect())?;
        if !filter.active {
            return Ok(empty());
        }
        Ok(self.app.store.list_credentials(self.org, vault_id, &filter.metadata, page).await?)
    }

    pub async fn delete_credential(&self, vault_id: &str, id: &str) -> Result<()> {
        self.get(vault_id).await?;
        if !is_credential_id(id) || !self.app.store.delete_credential(self.org, vault_id, id).await? {
            return Err(Error::not_found("credential", id));
        }
        Ok(())
    }
}
