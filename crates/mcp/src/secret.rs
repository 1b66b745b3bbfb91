//! [`Secret`]: a string (an `Authorization` value, a header value, an environment value) whose
//! `Debug` and `Display` print `[redacted]`, so it cannot leak into logs, events or errors.

use sha2::{Digest, Sha256};

/// A secret string. Read it with [`Secret::expose`] only where it is put on the wire.
#[derive(Clone, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret value itself.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Feeds the secret into a hash (for the catalog cache's credential fingerprint).
    pub(crate) fn digest_into(&self, hasher: &mut Sha256) {
        hasher.update((self.0.len() as u64).to_le_bytes());
        hasher.update(self.0.as_bytes());
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}
