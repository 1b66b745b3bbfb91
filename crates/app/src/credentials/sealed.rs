//! The secret part of a credential and how it is sealed: one JSON payload,
//! encrypted with the master key and bound to the credential's identity
//! (organization, vault, id), so that a ciphertext copied to another row does
//! not open. Also: building a new credential record and applying a rotation.

use super::CredentialError;
use crate::now;
use crate::{Error, Result};
use chrono::{DateTime, SecondsFormat, Utc};
use protocol::Metadata;
use protocol::agent::Patch;
use protocol::validate;
use protocol::vault::{
    Credential, CredentialAuth, CredentialAuthCreate, CredentialAuthRotate, CredentialCreate, CredentialRecord,
    CredentialUpdate, TokenEndpointAuth, TokenEndpointAuthRotate, check_name, check_secret,
};
use secrets::{Cipher, Secret};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

/// The secret values of one credential, whatever its kind.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Sealed {
    /// The bearer token, the OAuth access token, or the environment value.
    #[serde(serialize_with = "Secret::serialize_exposed")]
    pub value: Secret,
    #[serde(default, serialize_with = "Secret::serialize_exposed_opt")]
    pub refresh_token: Option<Secret>,
    #[serde(default, serialize_with = "Secret::serialize_exposed_opt")]
    pub client_secret: Option<Secret>,
}

/// What a credential's ciphertext is bound to.
fn aad(org_id: &str, c: &Credential) -> Vec<u8> {
    credential_aad(org_id, &c.vault_id, &c.id)
}

/// The same, from the credential's identity alone (a key rotation).
pub(crate) fn credential_aad(org_id: &str, vault_id: &str, id: &str) -> Vec<u8> {
    format!("rebyte:credential:v1:{org_id}:{vault_id}:{id}").into_bytes()
}

impl Sealed {
    pub fn seal(&self, cipher: &Cipher, org_id: &str, c: &Credential) -> Result<Vec<u8>, CredentialError> {
        let plain = Zeroizing::new(serde_json::to_vec(self).map_err(|_| CredentialError::Seal(c.id.clone()))?);
        cipher.seal(&plain, &aad(org_id, c)).map_err(|_| CredentialError::Seal(c.id.clone()))
    }

    pub fn open(cipher: &Cipher, org_id: &str, record: &CredentialRecord) -> Result<Self, CredentialError> {
        let c = &record.credential;
        let plain = cipher.open(&record.sealed, &aad(org_id, c)).map_err(|_| CredentialError::Open(c.id.clone()))?;
        serde_json::from_slice(&plain).map_err(|_| CredentialError::Open(c.id.clone()))
    }
}

/// Parses an RFC 3339 expiry into Unix seconds and its normalized UTC form.
pub(crate) fn parse_expiry(param: &str, text: &str) -> Result<(i64, String)> {
    let at = DateTime::parse_from_rfc3339(text)
        .map_err(|_| Error::invalid(param, format!("'{text}' is not an RFC 3339 timestamp")))?;
    let utc = at.with_timezone(&Utc);
    Ok((utc.timestamp(), utc.to_rfc3339_opts(SecondsFormat::Secs, true)))
}

/// Unix seconds of a stored (normalized) expiry; None when absent or unreadable.
pub(crate) fn expiry_seconds(text: Option<&str>) -> Option<i64> {
    text.and_then(|t| DateTime::parse_from_rfc3339(t).ok()).map(|t| t.timestamp())
}

/// The RFC 3339 form of Unix seconds.
pub(crate) fn format_expiry(seconds: i64) -> Option<String> {
    DateTime::<Utc>::from_timestamp(seconds, 0).map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
}

fn metadata(m: Option<Metadata>) -> Result<Metadata> {
    let m = m.unwrap_or_default();
    validate::metadata("metadata", &m)?;
    Ok(m)
}

/// Checks a create request and builds the record, secrets sealed.
pub(crate) fn new_record(
    cipher: &Cipher,
    org_id: &str,
    vault_id: &str,
    req: CredentialCreate,
) -> Result<CredentialRecord> {
    let name = check_name("name", &req.name)?;
    let metadata = metadata(req.metadata)?;
    let mut auth = req.auth.check("auth")?;
    if let CredentialAuth::McpOauth(o) = &mut auth
        && let Some(text) = &o.expires_at
    {
        o.expires_at = Some(parse_expiry("auth.expires_at", text)?.1);
    }
    let sealed = match req.auth {
        CredentialAuthCreate::StaticBearer { token, .. } => {
            Sealed { value: token, refresh_token: None, client_secret: None }
        }
        CredentialAuthCreate::EnvironmentVariable { secret_value, .. } => {
            Sealed { value: secret_value, refresh_token: None, client_secret: None }
        }
        CredentialAuthCreate::McpOauth { access_token, refresh, .. } => {
            let (refresh_token, client_secret) = match refresh {
                Some(r) => (Some(r.refresh_token), r.token_endpoint_auth.client_secret().cloned()),
                None => (None, None),
            };
            Sealed { value: access_token, refresh_token, client_secret }
        }
    };
    let at = now();
    let credential = Credential {
        id: protocol::vault::new_credential_id(),
        auth,
        created_at: at,
        metadata,
        name,
        object: "vault.credential".into(),
        updated_at: at,
        vault_id: vault_id.to_string(),
    };
    let sealed = sealed.seal(cipher, org_id, &credential)?;
    Ok(CredentialRecord { credential, version: 1, sealed })
}

/// Applies an update (metadata and/or a rotation) to a stored record, giving
/// the next version.
pub(crate) fn rotate(
    cipher: &Cipher,
    org_id: &str,
    record: &CredentialRecord,
    req: &CredentialUpdate,
) -> Result<CredentialRecord> {
    let mut credential = record.credential.clone();
    if let Some(m) = &req.metadata {
        credential.metadata = metadata(Some(m.clone()))?;
    }
    let mut sealed = Sealed::open(cipher, org_id, record)?;
    if let Some(auth) = &req.auth {
        rotate_auth(&mut credential.auth, &mut sealed, auth)?;
    }
    credential.updated_at = now();
    let sealed = sealed.seal(cipher, org_id, &credential)?;
    Ok(CredentialRecord { credential, version: record.version + 1, sealed })
}

fn rotate_auth(auth: &mut CredentialAuth, sealed: &mut Sealed, req: &CredentialAuthRotate) -> Result<()> {
    if auth.kind() != req.kind() {
        return Err(Error::invalid(
            "auth.type",
            format!("this credential is {}; a rotation must use type '{}'", auth.kind(), auth.kind()),
        ));
    }
    match (auth, req) {
        (CredentialAuth::StaticBearer { .. }, CredentialAuthRotate::StaticBearer { token }) => {
            check_secret("auth.token", token)?;
            sealed.value = token.clone();
        }
        (CredentialAuth::EnvironmentVariable { .. }, CredentialAuthRotate::EnvironmentVariable { secret_value }) => {
            check_secret("auth.secret_value", secret_value)?;
            sealed.value = secret_value.clone();
        }
        (CredentialAuth::McpOauth(o), CredentialAuthRotate::McpOauth { access_token, expires_at, refresh }) => {
            if let Some(token) = access_token {
                check_secret("auth.access_token", token)?;
                sealed.value = token.clone();
            }
            match expires_at {
                Patch::Absent if access_token.is_some() => o.expires_at = None,
                Patch::Absent => {}
                Patch::Null => o.expires_at = None,
                Patch::Value(text) => o.expires_at = Some(parse_expiry("auth.expires_at", text)?.1),
            }
            if let Some(r) = refresh {
                let Some(current) = o.refresh.as_mut() else {
                    return Err(Error::invalid(
                        "auth.refresh",
                        "this credential has no refresh configuration; create a new credential to add one",
                    ));
                };
                if let Some(token) = &r.refresh_token {
                    check_secret("auth.refresh.refresh_token", token)?;
                    sealed.refresh_token = Some(token.clone());
                }
                match &r.scope {
                    Patch::Absent => {}
                    Patch::Null => current.scope = None,
                    Patch::Value(scope) => {
                        validate::text("auth.refresh.scope", scope, 1, 1024)?;
                        current.scope = Some(scope.clone());
                    }
                }
                if let Some(method) = &r.token_endpoint_auth {
                    let (kind, secret) = match method {
                        TokenEndpointAuthRotate::ClientSecretBasic { client_secret } => {
                            (TokenEndpointAuth::ClientSecretBasic, client_secret)
                        }
                        TokenEndpointAuthRotate::ClientSecretPost { client_secret } => {
                            (TokenEndpointAuth::ClientSecretPost, client_secret)
                        }
                    };
                    if kind != current.token_endpoint_auth {
                        return Err(Error::invalid(
                            "auth.refresh.token_endpoint_auth.type",
                            "the token endpoint authentication method cannot change; create a new credential",
                        ));
                    }
                    if let Some(secret) = secret {
                        check_secret("auth.refresh.token_endpoint_auth.client_secret", secret)?;
                        sealed.client_secret = Some(secret.clone());
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}
