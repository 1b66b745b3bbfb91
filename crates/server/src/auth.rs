//! Authentication: `Authorization: Bearer rbk_…` → the organization and scopes
//! of that key. A small cache in front of the store keeps the hot path off
//! SQLite; entries live a few seconds so that a revocation made by another
//! process (the CLI on SQLite) takes effect quickly, and a revocation through this
//! server's admin endpoint takes effect at once. In a cluster, a revocation
//! anywhere (another node, the CLI) is announced and empties every node's
//! cache as soon as it is heard ([`follow_revocations`]).

use crate::error::ApiError;
use crate::keys::hash_secret;
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use protocol::admin::Scope;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use store::ApiKeyRecord;
use store::cluster::notices::{Heard, Notice};
use tokio::sync::broadcast;

/// How long a looked-up key is trusted without asking the store again.
const CACHE_TTL: Duration = Duration::from_secs(5);
/// Past this many entries the cache is emptied rather than grown.
const CACHE_MAX: usize = 10_000;

/// The caller, as its key says.
#[derive(Debug, Clone)]
pub struct Auth {
    pub org_id: String,
    pub key_id: String,
    pub scopes: Vec<Scope>,
}

impl Auth {
    /// 403 unless the key has `scope`.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.scopes.contains(&scope) { Ok(()) } else { Err(ApiError(app::Error::MissingScope(scope))) }
    }
}

/// Key records by hash, each with the time it was read.
#[derive(Default)]
pub struct KeyCache {
    // A read-mostly map: every request reads, only misses and revocations write.
    entries: RwLock<HashMap<String, (ApiKeyRecord, Instant)>>,
}

impl KeyCache {
    fn get(&self, hash: &str) -> Option<ApiKeyRecord> {
        let entries = self.entries.read().ok()?;
        let (record, at) = entries.get(hash)?;
        (at.elapsed() < CACHE_TTL).then(|| record.clone())
    }

    fn put(&self, record: ApiKeyRecord) {
        if let Ok(mut entries) = self.entries.write() {
            if entries.len() >= CACHE_MAX {
                entries.clear();
            }
            entries.insert(record.hash.clone(), (record, Instant::now()));
        }
    }

    /// Forgets every key.
    fn clear(&self) {
        if let Ok(mut entries) = self.entries.write() {
            entries.clear();
        }
    }

    /// Forgets a key (after a revocation).
    pub fn forget(&self, key_id: &str) {
        if let Ok(mut entries) = self.entries.write() {
            entries.retain(|_, (r, _)| r.id != key_id);
        }
    }
}

/// Empties `keys` whenever the cluster says keys changed (or notices were
/// missed), for as long as the cache is held.
pub fn follow_revocations(keys: &Arc<KeyCache>, mut notices: broadcast::Receiver<Heard>) {
    let keys = Arc::downgrade(keys);
    tokio::spawn(async move {
        loop {
            let heard = notices.recv().await;
            let Some(keys) = keys.upgrade() else { return };
            match heard {
                Ok(Heard { notice: Notice::Keys | Notice::Missed, .. })
                | Err(broadcast::error::RecvError::Lagged(_)) => keys.clear(),
                Ok(_) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}

impl FromRequestParts<AppState> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        // Already authenticated by the request-rate middleware.
        if let Some(auth) = parts.extensions.get::<Auth>() {
            return Ok(auth.clone());
        }
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| ApiError::unauthorized("Missing API key: send 'Authorization: Bearer rbk_…'."))?;
        let secret = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .map(str::trim)
            .ok_or_else(|| ApiError::unauthorized("The Authorization header must be 'Bearer rbk_…'."))?;
        let hash = hash_secret(secret);
        let record = match state.keys.get(&hash) {
            Some(r) => r,
            None => {
                let found = state.app.store.find_api_key(&hash).await?;
                let record = found.ok_or_else(|| ApiError::unauthorized("Incorrect API key provided."))?;
                state.keys.put(record.clone());
                record
            }
        };
        if record.revoked_at.is_some() {
            return Err(ApiError::unauthorized("This API key has been revoked."));
        }
        Ok(Auth { org_id: record.org_id, key_id: record.id, scopes: record.scopes })
    }
}
