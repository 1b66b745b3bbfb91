//! Secrets in MCP configuration (an `Authorization` value, a header value, an
//! environment value) are the server's one [`Secret`] type, whose `Debug` and
//! `Display` print `[redacted]`; this module adds the fingerprint the catalog
//! cache keys on.

use sha2::{Digest, Sha256};

pub use secrets::Secret;

/// Feeds a secret into a hash (for the catalog cache's credential fingerprint).
pub(crate) fn digest_into(secret: &Secret, hasher: &mut Sha256) {
    let value = secret.expose();
    hasher.update((value.len() as u64).to_le_bytes());
    hasher.update(value.as_bytes());
}
