//! Vault credentials at run time: which credential an MCP server gets, OAuth
//! refresh, and environment credentials. The MCP and environment code call
//! [`Credentials`]; the vault routes use it to seal what they store.
//!
//! # Layout
//! - [`Credentials`]: the resolver. [`Credentials::resolve_mcp`] picks the
//!   credential for an MCP server (by `credential_id`, or the one attached
//!   credential whose `mcp_server_url` matches) and returns its bearer token,
//!   refreshing an `mcp_oauth` token that expires within [`REFRESH_MARGIN`];
//!   [`Credentials::force_refresh`] is for a 401; both refresh one credential
//!   at a time (single-flight) and store the new tokens sealed.
//!   [`Credentials::resolve_environment_credentials`] opens the values bound
//!   through `environment.vault_credentials`.
//! - `sealed`: the encrypted secret part of a credential; `oauth`: the token
//!   endpoint; `resolve`: choosing among attached credentials.
//!
//! Errors ([`CredentialError`]) name the credential and never a secret.

mod error;
mod oauth;
mod resolve;
pub(crate) mod sealed;

pub use error::CredentialError;

use protocol::vault::CredentialRecord;
use secrets::{Cipher, Secret};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::Store;

/// An `mcp_oauth` token expiring within this margin is refreshed before use.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// How often a write that lost a race with another writer is retried.
const WRITE_ATTEMPTS: usize = 8;

/// The credential chosen for an MCP server.
#[derive(Debug, Clone)]
pub struct McpCredential {
    pub vault_id: String,
    pub credential_id: String,
    /// The bearer token (without the `Bearer ` prefix).
    pub token: Secret,
    /// The stored version the token was read at; [`Credentials::force_refresh`]
    /// uses it to tell whether someone else already replaced the token.
    pub version: i64,
}

impl McpCredential {
    /// The `Authorization` header value.
    pub fn authorization(&self) -> Secret {
        Secret::new(format!("Bearer {}", self.token.expose()))
    }
}

/// The resolver. Cheap to clone.
#[derive(Clone)]
pub struct Credentials {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    cipher: Cipher,
    http: reqwest::Client,
    // One async lock per credential id: at most one refresh or rotation of a
    // credential runs at a time in this process (other processes are held off
    // by the version check in `update_credential`).
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Credentials {
    /// Fails only when no HTTP client can be built (no TLS backend).
    pub fn new(store: Arc<dyn Store>, cipher: Cipher) -> Result<Self, CredentialError> {
        // No redirects: a 307 would carry the refresh token to another host.
        let http = reqwest::Client::builder()
            .timeout(oauth::TOKEN_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| CredentialError::HttpClient(e.to_string()))?;
        Ok(Self { inner: Arc::new(Inner { store, cipher, http, locks: Mutex::default() }) })
    }

    /// The cipher, for other secrets at rest (session-level MCP authorization …).
    pub fn cipher(&self) -> &Cipher {
        &self.inner.cipher
    }

    pub(crate) fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The lock that serializes refreshes and rotations of one credential.
    pub(crate) fn lock_for(&self, credential_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.inner.locks.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(locks.entry(credential_id.to_string()).or_default())
    }

    /// Checks that every id is a vault of this organization; the error names
    /// the first that is not (`vault_ids[i]`).
    pub async fn check_vault_ids(&self, org_id: &str, ids: &[String]) -> Result<(), CredentialError> {
        let found = self.inner.store.existing_vaults(org_id, ids).await?;
        for (i, id) in ids.iter().enumerate() {
            if ids[..i].contains(id) {
                return Err(CredentialError::DuplicateVault { param: format!("vault_ids[{i}]"), vault_id: id.clone() });
            }
            if !found.contains(id) {
                return Err(CredentialError::VaultNotFound { param: format!("vault_ids[{i}]"), vault_id: id.clone() });
            }
        }
        Ok(())
    }

    /// Opens the secret part of a stored credential.
    pub(crate) fn open(&self, org_id: &str, record: &CredentialRecord) -> Result<sealed::Sealed, CredentialError> {
        sealed::Sealed::open(&self.inner.cipher, org_id, record)
    }

    /// Replaces an `mcp_oauth` credential's tokens with new ones from its token
    /// endpoint. The caller holds the credential's lock.
    async fn refresh(&self, org_id: &str, record: CredentialRecord) -> Result<CredentialRecord, CredentialError> {
        let id = record.credential.id.clone();
        let protocol::vault::CredentialAuth::McpOauth(oauth) = &record.credential.auth else {
            return Err(CredentialError::NotRefreshable { credential_id: id, kind: record.credential.auth.kind() });
        };
        let Some(config) = oauth.refresh.clone() else {
            return Err(CredentialError::NoRefreshConfig { credential_id: id });
        };
        let mut secrets = self.open(org_id, &record)?;
        let Some(refresh_token) = secrets.refresh_token.clone() else {
            return Err(CredentialError::NoRefreshConfig { credential_id: id });
        };
        let answer = oauth::refresh(&self.inner.http, &config, &refresh_token, secrets.client_secret.as_ref())
            .await
            .map_err(|reason| CredentialError::RefreshFailed { credential_id: id.clone(), reason })?;
        tracing::info!(credential_id = %id, "refreshed an OAuth access token");
        secrets.value = answer.access_token;
        if let Some(rotated) = answer.refresh_token {
            secrets.refresh_token = Some(rotated);
        }
        let mut next = record.clone();
        if let protocol::vault::CredentialAuth::McpOauth(o) = &mut next.credential.auth {
            o.expires_at = answer.expires_in.and_then(|s| sealed::format_expiry(crate::now() + s));
        }
        next.credential.updated_at = crate::now();
        next.version = record.version + 1;
        next.sealed = secrets.seal(&self.inner.cipher, org_id, &next.credential)?;
        if !self.inner.store.update_credential(org_id, &next).await? {
            // Another process replaced or deleted it meanwhile; its tokens win.
            return Err(CredentialError::Conflict { credential_id: id });
        }
        Ok(next)
    }

    /// Applies `change` to a stored credential under its lock, retrying when a
    /// writer in another process got there first. For the update route.
    pub(crate) async fn update_with<F>(
        &self,
        org_id: &str,
        vault_id: &str,
        credential_id: &str,
        mut change: F,
    ) -> crate::Result<CredentialRecord>
    where
        F: FnMut(&Cipher, &CredentialRecord) -> crate::Result<CredentialRecord>,
    {
        let lock = self.lock_for(credential_id);
        let _held = lock.lock().await;
        for _ in 0..WRITE_ATTEMPTS {
            let Some(current) = self.inner.store.get_credential(org_id, vault_id, credential_id).await? else {
                return Err(crate::Error::not_found("credential", credential_id));
            };
            let next = change(&self.inner.cipher, &current)?;
            if self.inner.store.update_credential(org_id, &next).await? {
                return Ok(next);
            }
        }
        Err(crate::Error::Conflict(format!("credential '{credential_id}' is being changed concurrently; try again")))
    }
}
