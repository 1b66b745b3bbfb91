//! [`MasterKey`]: the 32 bytes every sealed value depends on, from
//! `REBYTE_MASTER_KEY` or from `<data-dir>/master.key`.
//!
//! Accepted encodings (surrounding whitespace ignored): 64 hex digits, or
//! base64 of exactly 32 bytes (standard or URL-safe alphabet, padded or not).
//! A key file created by the server holds standard padded base64 and a newline;
//! it is created with mode 0600 and never rewritten.

use crate::{Error, Result, Secret};
use base64::Engine as _;
use rand::RngCore;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use zeroize::Zeroizing;

/// Length of the master key in bytes.
pub const KEY_LEN: usize = 32;
/// The key file's name inside the data directory.
pub const KEY_FILE: &str = "master.key";

/// A 32-byte master key, zeroed on drop.
pub struct MasterKey(Zeroizing<[u8; KEY_LEN]>);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey([redacted])")
    }
}

impl MasterKey {
    /// A secret derived from this key for one purpose (`label`): the same
    /// wherever the key is, and telling nothing about the key.
    pub fn derive(&self, label: &str) -> Zeroizing<[u8; 32]> {
        use sha2::Digest;
        let mut hash = sha2::Sha256::new();
        hash.update(label.as_bytes());
        hash.update([0]);
        hash.update(self.0.as_ref());
        Zeroizing::new(hash.finalize().into())
    }

    /// A new random key.
    pub fn generate() -> Self {
        let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
        rand::rng().fill_bytes(bytes.as_mut());
        MasterKey(bytes)
    }

    /// Parses a key written as 64 hex digits or base64 of 32 bytes.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let decoded: Zeroizing<Vec<u8>> = if text.len() == 2 * KEY_LEN && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            Zeroizing::new(hex::decode(text).ok()?)
        } else {
            let engines = [
                base64::engine::general_purpose::STANDARD,
                base64::engine::general_purpose::STANDARD_NO_PAD,
                base64::engine::general_purpose::URL_SAFE,
                base64::engine::general_purpose::URL_SAFE_NO_PAD,
            ];
            Zeroizing::new(engines.iter().find_map(|e| e.decode(text).ok())?)
        };
        let bytes: [u8; KEY_LEN] = decoded.as_slice().try_into().ok()?;
        Some(MasterKey(Zeroizing::new(bytes)))
    }

    /// The key as standard padded base64 (what a created key file holds).
    pub fn to_base64(&self) -> Secret {
        Secret::new(base64::engine::general_purpose::STANDARD.encode(self.0.as_ref()))
    }

    pub(crate) fn bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// Finds the key: `from_env` (the value of `REBYTE_MASTER_KEY`) when set,
    /// otherwise the file at `key_file`. A missing file is created with a new
    /// random key (mode 0600) only when `may_create`; the caller passes false
    /// when the database already holds data sealed under some key. Returns the
    /// key and whether the file was just created.
    pub fn load(from_env: Option<&Secret>, key_file: &Path, may_create: bool) -> Result<(Self, bool)> {
        if let Some(value) = from_env {
            return Self::parse(value.expose()).map(|k| (k, false)).ok_or(Error::BadKeyEncoding);
        }
        let io = |source| Error::KeyFile { path: key_file.to_path_buf(), source };
        match std::fs::read_to_string(key_file) {
            Ok(text) => {
                let text = Zeroizing::new(text);
                return Self::parse(&text)
                    .map(|k| (k, false))
                    .ok_or_else(|| Error::BadKeyFile { path: key_file.to_path_buf() });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
        if !may_create {
            return Err(Error::MissingKey { path: key_file.to_path_buf() });
        }
        let key = Self::generate();
        let created = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(key_file);
        let mut file = match created {
            Ok(f) => f,
            // Another process created it first: use that one.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Self::load(None, key_file, false),
            Err(e) => return Err(io(e)),
        };
        let line = Zeroizing::new(format!("{}\n", key.to_base64().expose()));
        file.write_all(line.as_bytes()).and_then(|_| file.sync_all()).map_err(io)?;
        Ok((key, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn parses_hex_and_base64_of_32_bytes_only() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let from_hex = MasterKey::parse(hex).unwrap();
        let b64 = from_hex.to_base64();
        let from_b64 = MasterKey::parse(b64.expose()).unwrap();
        assert_eq!(from_hex.bytes(), from_b64.bytes());
        assert!(MasterKey::parse(&format!("  {}\n", b64.expose().trim_end_matches('='))).is_some());
        assert!(MasterKey::parse(&hex[..62]).is_none());
        assert!(MasterKey::parse("c2hvcnQ=").is_none(), "base64 of fewer than 32 bytes");
        assert!(MasterKey::parse("not a key at all").is_none());
    }

    #[test]
    fn creates_the_key_file_with_mode_0600_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        assert!(matches!(MasterKey::load(None, &path, false), Err(Error::MissingKey { .. })));
        let (first, created) = MasterKey::load(None, &path, true).unwrap();
        assert!(created);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let (again, created) = MasterKey::load(None, &path, true).unwrap();
        assert!(!created);
        assert_eq!(first.bytes(), again.bytes());
    }

    #[test]
    fn the_environment_wins_and_must_be_well_formed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        let env = MasterKey::generate().to_base64();
        let (key, created) = MasterKey::load(Some(&env), &path, true).unwrap();
        assert!(!created && !path.exists());
        assert_eq!(key.to_base64().expose(), env.expose());
        let bad = Secret::new("zzzz");
        let err = MasterKey::load(Some(&bad), &path, true).unwrap_err();
        assert!(matches!(err, Error::BadKeyEncoding));
        assert!(!err.to_string().contains("zzzz"));
    }

    #[test]
    fn a_garbled_key_file_is_an_error_not_a_new_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        std::fs::write(&path, "garbage").unwrap();
        assert!(matches!(MasterKey::load(None, &path, true), Err(Error::BadKeyFile { .. })));
    }
}
