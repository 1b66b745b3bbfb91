//! Vaults and their credentials, shaped as the client's `beta.agents.vaults`
//! and `vaults.credentials` send and parse them.
//!
//! Requests carry secrets as [`Secret`] (never printed, never echoed by a parse
//! error); resources ([`Vault`], [`Credential`]) carry none: a credential's
//! `auth` shows only its non-secret configuration. Checks that need no clock
//! or I/O live here too ([`CredentialAuthCreate::check`] …).

use crate::Metadata;
use crate::agent::Patch;
use crate::validate::{Result, invalid};
use secrets::Secret;
use serde::{Deserialize, Serialize};

/// Prefix of vault ids.
pub const VAULT_PREFIX: &str = "vault_";
/// Prefix of credential ids.
pub const CREDENTIAL_PREFIX: &str = "cred_";
/// The longest secret value accepted, in bytes.
pub const SECRET_MAX_BYTES: usize = 16 * 1024;

/// A new vault id: `vault_` and 32 hex digits.
pub fn new_vault_id() -> String {
    format!("{VAULT_PREFIX}{}", uuid::Uuid::new_v4().simple())
}

/// A new credential id: `cred_` and 32 hex digits.
pub fn new_credential_id() -> String {
    format!("{CREDENTIAL_PREFIX}{}", uuid::Uuid::new_v4().simple())
}

fn has_shape(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|rest| rest.len() == 32 && rest.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether `id` looks like a vault id.
pub fn is_vault_id(id: &str) -> bool {
    has_shape(id, VAULT_PREFIX)
}

/// Whether `id` looks like a credential id.
pub fn is_credential_id(id: &str) -> bool {
    has_shape(id, CREDENTIAL_PREFIX)
}

/// The Vault resource (`vault`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Vault {
    pub id: String,
    pub created_at: i64,
    pub metadata: Metadata,
    pub name: Option<String>,
    pub object: String,
}

/// `POST /v1/vaults`.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VaultCreate {
    #[serde(default)]
    pub metadata: Option<Metadata>,
    #[serde(default)]
    pub name: Option<String>,
}

/// `POST /v1/vaults/{vault_id}`: omitted fields are kept, a null name clears it.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VaultUpdate {
    #[serde(default)]
    pub metadata: Option<Metadata>,
    #[serde(default)]
    pub name: Patch<String>,
}

/// `DELETE /v1/vaults/{vault_id}` and `…/credentials/{credential_id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Deleted {
    pub id: String,
    pub deleted: bool,
    pub object: String,
}

/// The Credential resource (`vault.credential`): never a secret value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Credential {
    pub id: String,
    pub auth: CredentialAuth,
    pub created_at: i64,
    pub metadata: Metadata,
    pub name: String,
    pub object: String,
    pub updated_at: i64,
    pub vault_id: String,
}

/// A credential as the server keeps it: the public resource, the sealed
/// (encrypted) secret part, and a version that every secret change increments.
#[derive(Debug, Clone, PartialEq)]
pub struct CredentialRecord {
    pub credential: Credential,
    pub version: i64,
    pub sealed: Vec<u8>,
}

/// A credential's method and non-secret configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CredentialAuth {
    McpOauth(McpOauthAuth),
    StaticBearer { mcp_server_url: String },
    EnvironmentVariable { networking: Networking, secret_name: String },
}

impl CredentialAuth {
    /// The MCP server URL this credential authorizes, for the HTTP kinds.
    pub fn mcp_server_url(&self) -> Option<&str> {
        match self {
            CredentialAuth::McpOauth(o) => Some(&o.mcp_server_url),
            CredentialAuth::StaticBearer { mcp_server_url } => Some(mcp_server_url),
            CredentialAuth::EnvironmentVariable { .. } => None,
        }
    }

    /// The `type` string.
    pub fn kind(&self) -> &'static str {
        match self {
            CredentialAuth::McpOauth(_) => "mcp_oauth",
            CredentialAuth::StaticBearer { .. } => "static_bearer",
            CredentialAuth::EnvironmentVariable { .. } => "environment_variable",
        }
    }
}

/// Public metadata of an OAuth credential.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct McpOauthAuth {
    /// RFC 3339, when known.
    pub expires_at: Option<String>,
    pub mcp_server_url: String,
    pub refresh: Option<OauthRefresh>,
}

/// Public refresh metadata: no refresh token, no client secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OauthRefresh {
    pub client_id: String,
    pub resource: Option<String>,
    pub scope: Option<String>,
    pub token_endpoint: String,
    pub token_endpoint_auth: TokenEndpointAuth,
}

/// How the OAuth client authenticates to the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TokenEndpointAuth {
    None,
    ClientSecretBasic,
    ClientSecretPost,
}

/// Where an environment credential may be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Networking {
    Unrestricted,
    Limited { allowed_hosts: Vec<String> },
}

/// `POST /v1/vaults/{vault_id}/credentials`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialCreate {
    pub auth: CredentialAuthCreate,
    pub name: String,
    #[serde(default)]
    pub metadata: Option<Metadata>,
}

/// The method and write-only secrets of a new credential.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum CredentialAuthCreate {
    McpOauth {
        #[schemars(with = "String")]
        access_token: Secret,
        mcp_server_url: String,
        #[serde(default)]
        expires_at: Option<String>,
        #[serde(default)]
        refresh: Option<OauthRefreshCreate>,
    },
    StaticBearer {
        #[schemars(with = "String")]
        token: Secret,
        mcp_server_url: String,
    },
    EnvironmentVariable {
        networking: Networking,
        secret_name: String,
        #[schemars(with = "String")]
        secret_value: Secret,
    },
}

/// Refresh configuration of a new OAuth credential.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OauthRefreshCreate {
    pub client_id: String,
    #[schemars(with = "String")]
    pub refresh_token: Secret,
    pub token_endpoint: String,
    pub token_endpoint_auth: TokenEndpointAuthCreate,
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub scope: Option<String>,
}

/// Token endpoint authentication with its write-only client secret.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum TokenEndpointAuthCreate {
    None,
    ClientSecretBasic {
        #[schemars(with = "String")]
        client_secret: Secret,
    },
    ClientSecretPost {
        #[schemars(with = "String")]
        client_secret: Secret,
    },
}

impl TokenEndpointAuthCreate {
    pub fn public(&self) -> TokenEndpointAuth {
        match self {
            TokenEndpointAuthCreate::None => TokenEndpointAuth::None,
            TokenEndpointAuthCreate::ClientSecretBasic { .. } => TokenEndpointAuth::ClientSecretBasic,
            TokenEndpointAuthCreate::ClientSecretPost { .. } => TokenEndpointAuth::ClientSecretPost,
        }
    }

    pub fn client_secret(&self) -> Option<&Secret> {
        match self {
            TokenEndpointAuthCreate::None => None,
            TokenEndpointAuthCreate::ClientSecretBasic { client_secret }
            | TokenEndpointAuthCreate::ClientSecretPost { client_secret } => Some(client_secret),
        }
    }
}

/// `POST /v1/vaults/{vault_id}/credentials/{credential_id}`: new metadata
/// and/or a rotation of the existing method's secrets.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialUpdate {
    #[serde(default)]
    pub auth: Option<CredentialAuthRotate>,
    #[serde(default)]
    pub metadata: Option<Metadata>,
}

/// Replacement secrets for a credential's existing method.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum CredentialAuthRotate {
    McpOauth {
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        access_token: Option<Secret>,
        /// Omitted: kept, unless a new access token is given (then cleared).
        #[serde(default)]
        expires_at: Patch<String>,
        #[serde(default)]
        refresh: Option<OauthRefreshRotate>,
    },
    StaticBearer {
        #[schemars(with = "String")]
        token: Secret,
    },
    EnvironmentVariable {
        #[schemars(with = "String")]
        secret_value: Secret,
    },
}

impl CredentialAuthRotate {
    pub fn kind(&self) -> &'static str {
        match self {
            CredentialAuthRotate::McpOauth { .. } => "mcp_oauth",
            CredentialAuthRotate::StaticBearer { .. } => "static_bearer",
            CredentialAuthRotate::EnvironmentVariable { .. } => "environment_variable",
        }
    }
}

/// Replacement refresh secrets and scopes.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OauthRefreshRotate {
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub refresh_token: Option<Secret>,
    #[serde(default)]
    pub scope: Patch<String>,
    #[serde(default)]
    pub token_endpoint_auth: Option<TokenEndpointAuthRotate>,
}

/// A replacement client secret for the existing token endpoint method.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum TokenEndpointAuthRotate {
    ClientSecretBasic {
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        client_secret: Option<Secret>,
    },
    ClientSecretPost {
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        client_secret: Option<Secret>,
    },
}

/// Rebyte extension: an environment credential bound to an environment
/// (`environment.vault_credentials`, DESIGN §7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VaultCredentialBinding {
    pub vault_id: String,
    pub credential_id: String,
}

/// Checks a name and returns it trimmed: 1 to 256 UTF-8 bytes after trimming.
pub fn check_name(param: &str, name: &str) -> Result<String> {
    let trimmed = name.trim();
    if trimmed.is_empty() || trimmed.len() > 256 {
        return Err(invalid(param, format!("must be 1 to 256 bytes after trimming, got {}", trimmed.len())));
    }
    Ok(trimmed.to_string())
}

mod check;
pub use check::{check_secret, check_secret_name, check_url, normalize_networking};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_kind_the_client_sends() {
        let oauth: CredentialCreate = serde_json::from_value(json!({
            "name": "gh", "auth": {"type": "mcp_oauth", "access_token": "at", "mcp_server_url": "https://m/mcp",
            "expires_at": "2030-01-01T00:00:00Z", "refresh": {"client_id": "c", "refresh_token": "rt",
            "token_endpoint": "https://t/token", "token_endpoint_auth": {"type": "client_secret_basic", "client_secret": "cs"},
            "scope": null}}
        }))
        .unwrap();
        let view = oauth.auth.check("auth").unwrap();
        let shown = serde_json::to_string(&view).unwrap();
        assert!(!shown.contains("\"at\"") && !shown.contains("rt") && !shown.contains("cs"), "{shown}");
        let env: CredentialAuthCreate = serde_json::from_value(json!({"type": "environment_variable",
            "secret_name": "K", "secret_value": "v", "networking": {"type": "limited", "allowed_hosts": ["a.b"]}}))
        .unwrap();
        assert_eq!(env.check("auth").unwrap().kind(), "environment_variable");
        let unknown = serde_json::from_value::<CredentialAuthCreate>(json!({"type": "static_bearer",
            "token": "t", "mcp_server_url": "https://m", "tokn": "x"}));
        assert!(unknown.unwrap_err().to_string().contains("tokn"));
    }

    #[test]
    fn rotation_distinguishes_omitted_and_null_expiry() {
        let r: CredentialAuthRotate =
            serde_json::from_value(json!({"type": "mcp_oauth", "access_token": "n", "expires_at": null})).unwrap();
        assert!(matches!(r, CredentialAuthRotate::McpOauth { expires_at: Patch::Null, .. }));
        let r: CredentialAuthRotate = serde_json::from_value(json!({"type": "mcp_oauth"})).unwrap();
        assert!(matches!(r, CredentialAuthRotate::McpOauth { expires_at: Patch::Absent, access_token: None, .. }));
    }
}
