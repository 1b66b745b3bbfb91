//! Secrets at rest and in memory.
//!
//! # Layout
//! - [`Secret`]: a string whose `Debug` and `Display` print `[redacted]`, whose
//!   deserialization errors never echo the value, and whose memory is zeroed
//!   when dropped. Read it with [`Secret::expose`] only where it goes on the wire.
//! - [`Cipher`]: XChaCha20-Poly1305 under a 32-byte master key. Every sealed
//!   value carries a random 192-bit nonce and is bound to associated data (the
//!   row and field it belongs to), so a ciphertext moved to another row fails
//!   to open.
//! - [`MasterKey`]: where the key comes from: `REBYTE_MASTER_KEY` (64 hex digits,
//!   or standard/URL-safe base64 of 32 bytes, padded or not), or the key file
//!   `<data-dir>/master.key`, created with mode 0600 on first start.
//! - Key check: [`Cipher::key_check`] seals a known constant; the store keeps it,
//!   and [`Cipher::verify_key_check`] on each start turns a wrong key into a
//!   clear error instead of garbage.

#![forbid(unsafe_code)]

mod cipher;
mod key;
mod secret;

pub use cipher::Cipher;
pub use key::{KEY_FILE, KEY_LEN, MasterKey};
pub use secret::Secret;

/// What can go wrong with keys and sealed values. Messages never contain
/// secret material.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(
        "REBYTE_MASTER_KEY must be 32 bytes written as 64 hex digits or as base64 (e.g. `openssl rand -base64 32`)"
    )]
    BadKeyEncoding,
    #[error("the master key file {path} is not a valid key: it must hold 32 bytes as 64 hex digits or base64")]
    BadKeyFile { path: std::path::PathBuf },
    #[error("cannot read or create the master key file {path}: {source}")]
    KeyFile { path: std::path::PathBuf, source: std::io::Error },
    #[error(
        "the master key file {path} is missing, but the database holds data encrypted with a master key: \
         restore the file or set REBYTE_MASTER_KEY to the key it held"
    )]
    MissingKey { path: std::path::PathBuf },
    #[error(
        "the master key does not match the key this database was encrypted with (key check failed): \
         set REBYTE_MASTER_KEY or <data-dir>/master.key to the original key"
    )]
    WrongKey,
    #[error("a sealed value could not be opened: it is corrupt, or belongs to another record")]
    Open,
    #[error("a value is too large to seal")]
    Seal,
    #[error("a sealed value has an unknown format (version {0})")]
    Format(u8),
}

pub type Result<T> = std::result::Result<T, Error>;
