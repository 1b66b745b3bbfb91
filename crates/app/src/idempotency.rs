//! Idempotent creates: a `POST` that creates an agent, session,
//! environment, vault or response may carry an `Idempotency-Key`. The
//! first request with a key runs and, when it succeeds, its answer is kept
//! for 24 hours; a retry with the same key and the same body gets that
//! answer again (the same id) without running; the same key with another
//! body, or while the first request still runs, is a 409. A request that
//! failed leaves nothing behind: its key may be used again.

use crate::{App, Error, Result, now};
use sha2::{Digest, Sha256};
use store::RequestKey;

/// The longest idempotency key.
pub const MAX_KEY: usize = 256;

/// A key claimed for a request that is to run now.
#[derive(Debug)]
pub struct Claim {
    operation: String,
    key: String,
}

/// What to do with a request that carries a key.
#[derive(Debug)]
pub enum Begun {
    /// Run it, then [`Service::finish`] or [`Service::release`] the claim.
    Run(Claim),
    /// Answer what the first request with this key answered.
    Replay { status: u16, body: String },
}

/// The idempotency keys of one organization.
pub struct Service<'a> {
    pub(crate) app: &'a App,
    pub(crate) org: &'a str,
}

impl Service<'_> {
    /// Claims `key` for a request of `operation` with this `body`, or finds
    /// the answer of the request that claimed it first.
    pub async fn begin(&self, operation: &str, key: &str, body: &[u8]) -> Result<Begun> {
        if key.is_empty() || key.len() > MAX_KEY || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Error::invalid("Idempotency-Key", format!("must be 1 to {MAX_KEY} printable characters")));
        }
        let fingerprint = hex::encode(Sha256::digest(body));
        let found = self.app.store.claim_request_key(self.org, operation, key, &fingerprint, now()).await?;
        match found {
            RequestKey::Claimed => Ok(Begun::Run(Claim { operation: operation.into(), key: key.into() })),
            RequestKey::Running { fingerprint: first } | RequestKey::Done { fingerprint: first, .. }
                if first != fingerprint =>
            {
                Err(Error::Conflict(format!(
                    "the Idempotency-Key '{key}' was already used with a different request body; use a new key \
                     for a different request"
                )))
            }
            RequestKey::Running { .. } => Err(Error::Conflict(format!(
                "a request with the Idempotency-Key '{key}' is still running; retry once it has answered"
            ))),
            RequestKey::Done { status, body, .. } => Ok(Begun::Replay { status, body }),
        }
    }

    /// Keeps the answer of a request that succeeded, for its retries.
    pub async fn finish(&self, claim: Claim, status: u16, body: &str) -> Result<()> {
        Ok(self.app.store.finish_request_key(self.org, &claim.operation, &claim.key, status, body).await?)
    }

    /// Frees the key of a request that failed (or whose answer is not kept).
    pub async fn release(&self, claim: Claim) -> Result<()> {
        Ok(self.app.store.release_request_key(self.org, &claim.operation, &claim.key).await?)
    }
}
