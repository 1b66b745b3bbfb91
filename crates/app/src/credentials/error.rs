//! [`CredentialError`]: why a credential cannot be used. Every message names
//! the credential (or vault, or URL) and never a secret. As an [`Error`], a
//! missing vault in `vault_ids` is a 404 naming the field.

use crate::Error;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialError {
    #[error("No vault found with id '{vault_id}'.")]
    VaultNotFound { param: String, vault_id: String },
    #[error("vault '{vault_id}' is listed more than once")]
    DuplicateVault { param: String, vault_id: String },
    #[error("credential '{credential_id}' is not in any vault attached to this session")]
    NotAttached { credential_id: String },
    #[error("credential '{credential_id}' no longer exists")]
    Gone { credential_id: String },
    #[error("no credential '{credential_id}' in vault '{vault_id}'")]
    BindingNotFound { param: String, vault_id: String, credential_id: String },
    #[error("credential '{credential_id}' is {kind}, but {wanted} is needed here")]
    WrongKind { credential_id: String, kind: &'static str, wanted: &'static str },
    #[error("credential '{credential_id}' is for {credential_url}, not for the MCP server at {server_url}")]
    UrlMismatch { credential_id: String, credential_url: String, server_url: String },
    #[error(
        "{} attached credentials match the MCP server at {server_url} ({}); set credential_id to choose one",
        candidates.len(), candidates.join(", ")
    )]
    Ambiguous { server_url: String, candidates: Vec<String> },
    #[error("two environment credentials set {secret_name}")]
    DuplicateSecretName { param: String, secret_name: String },
    #[error("credential '{credential_id}': its access token has expired and it has no refresh configuration")]
    Expired { credential_id: String },
    #[error("credential '{credential_id}' is {kind} and cannot be refreshed")]
    NotRefreshable { credential_id: String, kind: &'static str },
    #[error("credential '{credential_id}' has no refresh configuration")]
    NoRefreshConfig { credential_id: String },
    #[error("credential '{credential_id}': refreshing the OAuth token failed: {reason}")]
    RefreshFailed { credential_id: String, reason: String },
    #[error("credential '{credential_id}' was changed by another writer")]
    Conflict { credential_id: String },
    #[error("credential '{0}' cannot be decrypted with the master key")]
    Open(String),
    #[error("credential '{0}' could not be encrypted")]
    Seal(String),
    #[error("cannot build the HTTP client for token endpoints: {0}")]
    HttpClient(String),
    #[error("store error: {0}")]
    Store(#[from] store::Error),
}

impl CredentialError {
    /// The request field at fault, when the error is about one.
    pub fn param(&self) -> Option<&str> {
        match self {
            CredentialError::VaultNotFound { param, .. }
            | CredentialError::DuplicateVault { param, .. }
            | CredentialError::BindingNotFound { param, .. }
            | CredentialError::DuplicateSecretName { param, .. } => Some(param),
            _ => None,
        }
    }
}

impl From<CredentialError> for Error {
    fn from(e: CredentialError) -> Self {
        let param = e.param().map(str::to_string);
        match e {
            CredentialError::Store(s) => s.into(),
            e @ (CredentialError::Open(_) | CredentialError::Seal(_) | CredentialError::HttpClient(_)) => {
                Error::Internal(e.to_string())
            }
            // 404 like any other organization's (or unknown) id, naming the field.
            CredentialError::VaultNotFound { param, vault_id } => {
                let message = CredentialError::VaultNotFound { param: param.clone(), vault_id }.to_string();
                Error::MissingReference { param, message }
            }
            e @ (CredentialError::BindingNotFound { .. }
            | CredentialError::NotAttached { .. }
            | CredentialError::Gone { .. }) => Error::Invalid { param, code: "not_found", message: e.to_string() },
            e => Error::Invalid { param, code: "invalid_value", message: e.to_string() },
        }
    }
}
