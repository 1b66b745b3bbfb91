//! Choosing and opening credentials: the MCP server's credential (explicit
//! `credential_id`, or the one attached credential for its URL), refresh
//! before expiry and on a 401, and environment credential bindings.

use super::{CredentialError, Credentials, McpCredential, REFRESH_MARGIN};
use protocol::vault::{CredentialAuth, CredentialRecord, Networking, VaultCredentialBinding};
use reqwest::Url;
use secrets::Secret;

/// Whether two MCP server URLs name the same endpoint: scheme, host and port
/// compared as URLs (case and default ports normalized), the path without a
/// trailing slash, and the query.
pub fn same_server(a: &str, b: &str) -> bool {
    /// Scheme, host, port, path without a trailing slash, query.
    type Key = (String, String, Option<u16>, String, Option<String>);
    fn key(u: &str) -> Option<Key> {
        let u = Url::parse(u).ok()?;
        Some((
            u.scheme().to_string(),
            u.host_str()?.to_string(),
            u.port_or_known_default(),
            u.path().trim_end_matches('/').to_string(),
            u.query().map(str::to_string),
        ))
    }
    match (key(a), key(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

/// Whether an expiry (Unix seconds) is within the refresh margin of now.
fn expiring(expires_at: Option<i64>) -> bool {
    expires_at.is_some_and(|at| at - crate::now() <= REFRESH_MARGIN.as_secs() as i64)
}

fn expires_at_of(record: &CredentialRecord) -> Option<i64> {
    match &record.credential.auth {
        CredentialAuth::McpOauth(o) => super::sealed::expiry_seconds(o.expires_at.as_deref()),
        _ => None,
    }
}

impl Credentials {
    /// The credential an MCP server at `server_url` uses in a session with
    /// `vault_ids`: the attached credential `credential_id` when given (it
    /// must be an HTTP credential for this URL), otherwise the one attached
    /// credential whose `mcp_server_url` matches. `Ok(None)`: no
    /// `credential_id` and no attached credential for this URL. An
    /// `mcp_oauth` token expiring within [`REFRESH_MARGIN`] is refreshed first.
    pub async fn resolve_mcp(
        &self,
        org_id: &str,
        vault_ids: &[String],
        server_url: &str,
        credential_id: Option<&str>,
    ) -> Result<Option<McpCredential>, CredentialError> {
        let records = self.store().vault_credentials(org_id, vault_ids).await?;
        let record = match credential_id {
            Some(id) => {
                let record = records
                    .into_iter()
                    .find(|r| r.credential.id == id)
                    .ok_or_else(|| CredentialError::NotAttached { credential_id: id.to_string() })?;
                match record.credential.auth.mcp_server_url() {
                    None => {
                        return Err(CredentialError::WrongKind {
                            credential_id: id.to_string(),
                            kind: record.credential.auth.kind(),
                            wanted: "static_bearer or mcp_oauth",
                        });
                    }
                    Some(url) if !same_server(url, server_url) => {
                        return Err(CredentialError::UrlMismatch {
                            credential_id: id.to_string(),
                            credential_url: url.to_string(),
                            server_url: server_url.to_string(),
                        });
                    }
                    Some(_) => record,
                }
            }
            None => {
                let mut matching: Vec<CredentialRecord> = records
                    .into_iter()
                    .filter(|r| r.credential.auth.mcp_server_url().is_some_and(|u| same_server(u, server_url)))
                    .collect();
                match matching.len() {
                    0 => return Ok(None),
                    1 => matching.remove(0),
                    _ => {
                        return Err(CredentialError::Ambiguous {
                            server_url: server_url.to_string(),
                            candidates: matching.into_iter().map(|r| r.credential.id).collect(),
                        });
                    }
                }
            }
        };
        self.usable(org_id, record).await.map(Some)
    }

    /// After the MCP server answered 401 to `rejected`: a fresh token. If the
    /// stored credential changed since `rejected` was read (another caller
    /// refreshed, or it was rotated), that token is returned without a new
    /// refresh; otherwise an `mcp_oauth` credential with a refresh
    /// configuration is refreshed now. Concurrent callers share one refresh.
    pub async fn force_refresh(
        &self,
        org_id: &str,
        rejected: &McpCredential,
    ) -> Result<McpCredential, CredentialError> {
        let lock = self.lock_for(&rejected.credential_id);
        let _held = lock.lock().await;
        let current = self.reload(org_id, &rejected.vault_id, &rejected.credential_id).await?;
        if current.version != rejected.version {
            return self.token_of(org_id, &current);
        }
        let next = self.refresh_or_reload(org_id, current).await?;
        self.token_of(org_id, &next)
    }

    /// The values of environment credentials bound to an environment, as
    /// `(secret_name, secret_value)` in binding order. Every binding must name
    /// an `environment_variable` credential of this organization; two bindings
    /// may not set the same variable.
    pub async fn resolve_environment_credentials(
        &self,
        org_id: &str,
        bindings: &[VaultCredentialBinding],
    ) -> Result<Vec<(String, Secret)>, CredentialError> {
        let found = self.resolve_environment_secrets(org_id, bindings).await?;
        Ok(found.into_iter().map(|(name, value, _)| (name, value)).collect())
    }

    /// As [`Self::resolve_environment_credentials`], with each credential's
    /// allowed hosts when its networking is `limited` (`None`: unrestricted).
    pub async fn resolve_environment_secrets(
        &self,
        org_id: &str,
        bindings: &[VaultCredentialBinding],
    ) -> Result<Vec<(String, Secret, Option<Vec<String>>)>, CredentialError> {
        let mut out: Vec<(String, Secret, Option<Vec<String>>)> = Vec::with_capacity(bindings.len());
        for (i, b) in bindings.iter().enumerate() {
            let param = format!("vault_credentials[{i}]");
            let record =
                self.store().get_credential(org_id, &b.vault_id, &b.credential_id).await?.ok_or_else(|| {
                    CredentialError::BindingNotFound {
                        param: param.clone(),
                        vault_id: b.vault_id.clone(),
                        credential_id: b.credential_id.clone(),
                    }
                })?;
            let CredentialAuth::EnvironmentVariable { secret_name, networking } = &record.credential.auth else {
                return Err(CredentialError::WrongKind {
                    credential_id: b.credential_id.clone(),
                    kind: record.credential.auth.kind(),
                    wanted: "environment_variable",
                });
            };
            if out.iter().any(|(name, _, _)| name == secret_name) {
                return Err(CredentialError::DuplicateSecretName { param, secret_name: secret_name.clone() });
            }
            let value = self.open(org_id, &record)?.value;
            let hosts = match networking {
                Networking::Limited { allowed_hosts } => Some(allowed_hosts.clone()),
                Networking::Unrestricted => None,
            };
            out.push((secret_name.clone(), value, hosts));
        }
        Ok(out)
    }

    /// A token ready to send: refreshed first when it expires soon.
    async fn usable(&self, org_id: &str, record: CredentialRecord) -> Result<McpCredential, CredentialError> {
        if !expiring(expires_at_of(&record)) {
            return self.token_of(org_id, &record);
        }
        let id = record.credential.id.clone();
        let lock = self.lock_for(&id);
        let _held = lock.lock().await;
        // Whoever held the lock before us may have refreshed it already.
        let current = self.reload(org_id, &record.credential.vault_id, &id).await?;
        if !expiring(expires_at_of(&current)) {
            return self.token_of(org_id, &current);
        }
        let has_refresh = matches!(&current.credential.auth, CredentialAuth::McpOauth(o) if o.refresh.is_some());
        if !has_refresh {
            // Without a refresh configuration the token is used until it has
            // actually expired; then the error says why.
            if expires_at_of(&current).is_some_and(|at| at <= crate::now()) {
                return Err(CredentialError::Expired { credential_id: id });
            }
            return self.token_of(org_id, &current);
        }
        let next = self.refresh_or_reload(org_id, current).await?;
        self.token_of(org_id, &next)
    }

    /// Refreshes; when another process stored new tokens first, uses those.
    async fn refresh_or_reload(
        &self,
        org_id: &str,
        record: CredentialRecord,
    ) -> Result<CredentialRecord, CredentialError> {
        let (vault_id, id) = (record.credential.vault_id.clone(), record.credential.id.clone());
        match self.refresh(org_id, record).await {
            Err(CredentialError::Conflict { .. }) => self.reload(org_id, &vault_id, &id).await,
            other => other,
        }
    }

    async fn reload(&self, org_id: &str, vault_id: &str, id: &str) -> Result<CredentialRecord, CredentialError> {
        self.store()
            .get_credential(org_id, vault_id, id)
            .await?
            .ok_or_else(|| CredentialError::Gone { credential_id: id.to_string() })
    }

    fn token_of(&self, org_id: &str, record: &CredentialRecord) -> Result<McpCredential, CredentialError> {
        Ok(McpCredential {
            vault_id: record.credential.vault_id.clone(),
            credential_id: record.credential.id.clone(),
            token: self.open(org_id, record)?.value,
            version: record.version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::same_server;

    #[test]
    fn server_urls_match_as_urls() {
        assert!(same_server("https://MCP.example.com:443/mcp/", "https://mcp.example.com/mcp"));
        assert!(!same_server("https://mcp.example.com/mcp", "https://mcp.example.com/other"));
        assert!(!same_server("https://mcp.example.com/mcp", "http://mcp.example.com/mcp"));
        assert!(!same_server("https://a.example.com/mcp", "https://b.example.com/mcp"));
    }
}
