//! Organization API keys: minting (`rbk_` + 43 base62 characters, 256 bits),
//! hashing (only the SHA-256 is stored), and the organization/key operations
//! that the CLI, the bootstrap and the admin endpoints share.

use crate::now;
use crate::{Error, Result};
use protocol::admin::{ApiKey, ApiKeyCreated, Organization, Scope};
use protocol::ids::{API_KEY_PREFIX, Kind};
use rand::Rng;
use sha2::{Digest, Sha256};
use store::{ApiKeyRecord, Store};

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// 43 base62 characters carry just over 256 bits.
const SECRET_CHARS: usize = 43;

/// A new random key secret.
pub fn mint_secret() -> String {
    let mut rng = rand::rng();
    let body: String = (0..SECRET_CHARS).map(|_| BASE62[rng.random_range(0..BASE62.len())] as char).collect();
    format!("{API_KEY_PREFIX}{body}")
}

/// The stored form of a secret: hex SHA-256. Keys carry 256 random bits, so a
/// fast hash is enough; no password stretching is needed.
pub fn hash_secret(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether a string has the shape of a key secret.
pub fn is_well_formed(secret: &str) -> bool {
    secret.strip_prefix(API_KEY_PREFIX).is_some_and(|b| b.len() >= 32 && b.bytes().all(|c| c.is_ascii_alphanumeric()))
}

/// The public view of a stored key.
pub fn view(k: &ApiKeyRecord) -> ApiKey {
    ApiKey {
        id: k.id.clone(),
        object: "api_key".into(),
        organization_id: k.org_id.clone(),
        name: k.name.clone(),
        scopes: k.scopes.clone(),
        prefix: k.prefix.clone(),
        created_at: k.created_at,
        revoked_at: k.revoked_at,
    }
}

/// Creates an organization.
pub async fn create_organization(store: &dyn Store, name: &str) -> Result<Organization> {
    protocol::validate::text("name", name, 1, 128)?;
    let org = Organization {
        id: Kind::Organization.mint(),
        object: "organization".into(),
        name: name.into(),
        created_at: now(),
    };
    store.create_organization(&org).await?;
    Ok(org)
}

/// Finds an organization by name, creating it when missing.
pub async fn ensure_organization(store: &dyn Store, name: &str) -> Result<Organization> {
    match store.find_organization(name).await? {
        Some(org) => Ok(org),
        None => create_organization(store, name).await,
    }
}

/// Stores a key for `org_id`; `secret` is minted when `None`.
pub async fn create_key(
    store: &dyn Store,
    org_id: &str,
    name: Option<String>,
    scopes: Vec<Scope>,
    secret: Option<String>,
) -> Result<ApiKeyCreated> {
    if store.get_organization(org_id).await?.is_none() {
        return Err(Error::not_found("organization", org_id));
    }
    let secret = secret.unwrap_or_else(mint_secret);
    if !is_well_formed(&secret) {
        return Err(Error::invalid("key", "keys are rbk_ followed by at least 32 letters or digits"));
    }
    let mut scopes = scopes;
    scopes.sort();
    scopes.dedup();
    let record = ApiKeyRecord {
        id: Kind::ApiKey.mint(),
        org_id: org_id.into(),
        hash: hash_secret(&secret),
        prefix: secret.chars().take(12).collect(),
        name,
        scopes,
        created_at: now(),
        revoked_at: None,
    };
    store.create_api_key(&record).await?;
    Ok(ApiKeyCreated { key: view(&record), secret })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_secrets_are_well_formed_and_distinct() {
        let a = mint_secret();
        let b = mint_secret();
        assert!(is_well_formed(&a), "{a}");
        assert_eq!(a.len(), 4 + SECRET_CHARS);
        assert_ne!(a, b);
        assert_ne!(hash_secret(&a), hash_secret(&b));
        assert_eq!(hash_secret(&a).len(), 64);
        assert!(!is_well_formed("rbk_short"));
        assert!(!is_well_formed("sk-abcdefghijklmnopqrstuvwxyz0123456789"));
    }
}
