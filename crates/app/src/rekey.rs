//! Rotating the master key: every sealed value in the store opened with the
//! old key and sealed again with the new one, bound to the same identity, then
//! written together with the new key check value in one transaction (see
//! `Store::replace_sealed`). Run it with every server stopped: a running
//! server keeps the old key and would write values the new one cannot open.

use crate::credentials::sealed::credential_aad;
use crate::mcp_secrets::{agent_aad, session_aad};
use base64::Engine as _;
use secrets::Cipher;
use store::{Sealed, SealedKind, Store};

/// Why a rotation did not happen; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum RekeyError {
    #[error("the database has no master key check yet: there is nothing sealed to rotate")]
    NoKeyCheck,
    #[error("the current master key does not match the database's")]
    WrongKey,
    #[error("{what} cannot be opened with the current master key")]
    Unreadable { what: String },
    #[error("sealing with the new master key failed: {0}")]
    Seal(String),
    #[error("the database changed during the rotation (another rotation, or a running server); nothing was rotated")]
    Raced,
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// How many values were sealed again, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Rekeyed {
    pub credentials: usize,
    pub sessions: usize,
    pub agents: usize,
}

fn aad(v: &Sealed) -> Vec<u8> {
    let key = |i: usize| v.key.get(i).map_or("", String::as_str);
    match v.kind {
        SealedKind::Credential => credential_aad(&v.org_id, key(0), key(1)),
        SealedKind::Session => session_aad(&v.org_id, key(0)),
        SealedKind::Agent | SealedKind::AgentVersion => agent_aad(&v.org_id, key(0)),
    }
}

fn describe(v: &Sealed) -> String {
    match v.kind {
        SealedKind::Credential => format!("credential {}", v.key.get(1).map_or("", String::as_str)),
        SealedKind::Session => format!("session {}'s MCP secrets", v.key[0]),
        SealedKind::Agent | SealedKind::AgentVersion => format!("agent {}'s MCP secrets", v.key[0]),
    }
}

/// Re-seals one value: raw ciphertext for credentials, base64 text for the others.
fn reseal(old: &Cipher, new: &Cipher, v: &Sealed) -> Result<Vec<u8>, RekeyError> {
    let unreadable = || RekeyError::Unreadable { what: describe(v) };
    let b64 = base64::engine::general_purpose::STANDARD;
    let text = v.kind != SealedKind::Credential;
    let sealed = if text { b64.decode(&v.value).map_err(|_| unreadable())? } else { v.value.clone() };
    let plain = old.open(&sealed, &aad(v)).map_err(|_| unreadable())?;
    let again = new.seal(&plain, &aad(v)).map_err(|e| RekeyError::Seal(e.to_string()))?;
    Ok(if text { b64.encode(again).into_bytes() } else { again })
}

/// Seals everything again under `new`; `old` must be the database's key.
pub async fn rotate(store: &dyn Store, old: &Cipher, new: &Cipher) -> Result<Rekeyed, RekeyError> {
    let check = store.master_key_check().await?.ok_or(RekeyError::NoKeyCheck)?;
    old.verify_key_check(&check).map_err(|_| RekeyError::WrongKey)?;
    let mut values = store.sealed_values().await?;
    let mut done = Rekeyed::default();
    for v in &mut values {
        v.value = reseal(old, new, v)?;
        match v.kind {
            SealedKind::Credential => done.credentials += 1,
            SealedKind::Session => done.sessions += 1,
            SealedKind::Agent => done.agents += 1,
            SealedKind::AgentVersion => {}
        }
    }
    let new_check = new.key_check().map_err(|e| RekeyError::Seal(e.to_string()))?;
    if !store.replace_sealed(&check, &new_check, &values).await? {
        return Err(RekeyError::Raced);
    }
    Ok(done)
}
