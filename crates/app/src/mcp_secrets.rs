//! MCP secrets on the server side: a session's inline HTTP `authorization` and `headers` and
//! its stdio transports' `env` are sealed with the master key before the session is stored
//! (the stored tools carry none of them; resources never show them), as is a saved agent's
//! stdio `env` (opened again into each session made from it), and [`EngineCredentials`] gives the engine's MCP tools what it
//! needs at turn time — those secrets opened, vault bearers (with OAuth refresh), and the
//! environment credentials a stdio server's `env_vars` select.

use crate::credentials::{Credentials, McpCredential};
use crate::{Error, Result};
use base64::Engine as _;
use engine::mcp_connect::{CredentialFailure, EnvCredential, InlineSecrets, McpCredentials, VaultToken};
use protocol::agent::AgentRecord;
use protocol::environment::VaultCredentialBinding;
use protocol::ids::SessionId;
use protocol::session::SessionRecord;
use protocol::tool::{McpTransportParam, ToolParam};
use secrets::Cipher;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use zeroize::Zeroizing;

/// One server's inline secrets as sealed.
#[derive(Serialize, Deserialize, Default)]
struct Stored {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    authorization: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
    /// A stdio transport's inline `env`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
}

impl Stored {
    fn is_empty(&self) -> bool {
        self.authorization.is_none() && self.headers.is_empty() && self.env.is_empty()
    }
}

/// Takes every MCP tool's inline secrets out of `tools`, by server label.
fn take_secrets(tools: &mut [ToolParam]) -> BTreeMap<String, Stored> {
    let mut found = BTreeMap::new();
    for tool in tools {
        let ToolParam::Mcp(m) = tool else { continue };
        let stored = match &mut m.transport {
            McpTransportParam::Http { authorization, headers, .. } => Stored {
                authorization: authorization.take(),
                headers: headers.take().unwrap_or_default(),
                env: BTreeMap::new(),
            },
            McpTransportParam::Stdio { env, .. } => Stored { env: env.take().unwrap_or_default(), ..Stored::default() },
        };
        if !stored.is_empty() {
            found.insert(m.server_label.clone(), stored);
        }
    }
    found
}

fn seal(cipher: &Cipher, found: &BTreeMap<String, Stored>, aad: &[u8]) -> Result<String> {
    let plain =
        Zeroizing::new(serde_json::to_vec(found).map_err(|e| Error::Internal(format!("encoding MCP secrets: {e}")))?);
    let sealed = cipher.seal(&plain, aad).map_err(|e| Error::Internal(format!("sealing MCP secrets failed: {e}")))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(sealed))
}

fn open(cipher: &Cipher, sealed: &str, aad: &[u8]) -> Option<BTreeMap<String, Stored>> {
    let sealed = base64::engine::general_purpose::STANDARD.decode(sealed).ok()?;
    let plain = cipher.open(&sealed, aad).ok()?;
    serde_json::from_slice(&plain).ok()
}

/// Binds a saved agent's sealed stdio `env` to its organization and agent.
pub(crate) fn agent_aad(org_id: &str, agent_id: &str) -> Vec<u8> {
    format!("rebyte/agent-mcp-secrets/v1/{org_id}/{agent_id}").into_bytes()
}

/// Moves the inline `env` of a saved agent's stdio MCP tools into its sealed
/// field (saved agents keep no inline HTTP secrets: validation refuses them).
/// `tools_replaced` as for sessions.
pub fn seal_agent_secrets(cipher: &Cipher, org_id: &str, record: &mut AgentRecord, tools_replaced: bool) -> Result<()> {
    let found = take_secrets(&mut record.config.tools);
    if found.is_empty() {
        if tools_replaced {
            record.sealed_mcp_secrets = None;
        }
        return Ok(());
    }
    record.sealed_mcp_secrets = Some(seal(cipher, &found, &agent_aad(org_id, &record.id))?);
    Ok(())
}

/// Puts a saved agent's sealed stdio `env` back into `tools` (a session made
/// from the agent seals it again as its own).
pub fn unseal_agent_secrets(
    cipher: &Cipher,
    org_id: &str,
    record: &AgentRecord,
    tools: &mut [ToolParam],
) -> Result<()> {
    let Some(sealed) = &record.sealed_mcp_secrets else { return Ok(()) };
    let mut stored = open(cipher, sealed, &agent_aad(org_id, &record.id)).ok_or_else(|| {
        Error::Internal(format!("agent {}'s MCP secrets cannot be decrypted with the master key", record.id))
    })?;
    for tool in tools {
        if let ToolParam::Mcp(m) = tool
            && let McpTransportParam::Stdio { env, .. } = &mut m.transport
            && let Some(s) = stored.remove(&m.server_label)
            && !s.env.is_empty()
        {
            env.get_or_insert_with(BTreeMap::new).extend(s.env);
        }
    }
    Ok(())
}

/// Binds a sealed blob to its organization and session: moved to another row, it fails to open.
fn aad(org_id: &str, session_id: SessionId) -> Vec<u8> {
    session_aad(org_id, &session_id.to_string())
}

/// The same, from the session id's text (a key rotation).
pub(crate) fn session_aad(org_id: &str, session_id: &str) -> Vec<u8> {
    format!("rebyte/session-mcp-secrets/v1/{org_id}/{session_id}").into_bytes()
}

/// Moves the inline `authorization` and `headers` of the session's HTTP MCP tools into its
/// sealed field. `tools_replaced`: the tool list was just supplied (a create, or an update
/// that replaced it), so secrets it no longer carries are dropped; otherwise the stored tools
/// carry none and the sealed field is kept.
pub fn seal_session_secrets(
    cipher: &Cipher,
    org_id: &str,
    record: &mut SessionRecord,
    tools_replaced: bool,
) -> Result<()> {
    let found = take_secrets(&mut record.agent.config.tools);
    if found.is_empty() {
        if tools_replaced {
            record.sealed_mcp_secrets = None;
        }
        return Ok(());
    }
    record.sealed_mcp_secrets = Some(seal(cipher, &found, &aad(org_id, record.id))?);
    Ok(())
}

/// The session's inline MCP secrets by server label, opened.
pub fn open_session_secrets(
    cipher: &Cipher,
    org_id: &str,
    record: &SessionRecord,
) -> Result<BTreeMap<String, InlineSecrets>, CredentialFailure> {
    let Some(sealed) = &record.sealed_mcp_secrets else { return Ok(BTreeMap::new()) };
    let stored = open(cipher, sealed, &aad(org_id, record.id))
        .ok_or_else(|| CredentialFailure("the session's MCP secrets cannot be decrypted with the master key".into()))?;
    Ok(stored
        .into_iter()
        .map(|(label, s)| {
            let secrets = InlineSecrets {
                authorization: s.authorization.map(mcp::Secret::new),
                headers: s.headers.into_iter().map(|(k, v)| (k, mcp::Secret::new(v))).collect(),
                env: s.env.into_iter().map(|(k, v)| (k, mcp::Secret::new(v))).collect(),
            };
            (label, secrets)
        })
        .collect())
}

/// The engine's view of the server's credentials.
pub struct EngineCredentials(pub Credentials);

fn token(c: McpCredential) -> VaultToken {
    VaultToken {
        vault_id: c.vault_id,
        credential_id: c.credential_id,
        token: mcp::Secret::new(c.token.expose()),
        version: c.version,
    }
}

fn failure(e: crate::credentials::CredentialError) -> CredentialFailure {
    CredentialFailure(e.to_string())
}

#[async_trait::async_trait]
impl McpCredentials for EngineCredentials {
    fn session_secrets(
        &self,
        org_id: &str,
        session: &SessionRecord,
    ) -> Result<BTreeMap<String, InlineSecrets>, CredentialFailure> {
        open_session_secrets(self.0.cipher(), org_id, session)
    }

    async fn vault_token(
        &self,
        org_id: &str,
        vault_ids: &[String],
        server_url: &str,
        credential_id: Option<&str>,
    ) -> Result<Option<VaultToken>, CredentialFailure> {
        Ok(self.0.resolve_mcp(org_id, vault_ids, server_url, credential_id).await.map_err(failure)?.map(token))
    }

    async fn refresh(&self, org_id: &str, rejected: &VaultToken) -> Result<VaultToken, CredentialFailure> {
        let rejected = McpCredential {
            vault_id: rejected.vault_id.clone(),
            credential_id: rejected.credential_id.clone(),
            token: secrets::Secret::new(rejected.token.expose()),
            version: rejected.version,
        };
        self.0.force_refresh(org_id, &rejected).await.map(token).map_err(failure)
    }

    async fn environment_credentials(
        &self,
        org_id: &str,
        bindings: &[VaultCredentialBinding],
    ) -> Result<Vec<EnvCredential>, CredentialFailure> {
        let values = self.0.resolve_environment_secrets(org_id, bindings).await.map_err(failure)?;
        Ok(values
            .into_iter()
            .map(|(name, value, allowed_hosts)| EnvCredential {
                name,
                value: mcp::Secret::new(value.expose()),
                allowed_hosts,
            })
            .collect())
    }
}
