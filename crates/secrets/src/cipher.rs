//! [`Cipher`]: XChaCha20-Poly1305 sealing under the master key.
//!
//! A sealed value is `[version = 1][24-byte random nonce][ciphertext + 16-byte tag]`.
//! The 192-bit nonce makes random nonces safe for any number of values under
//! one key. The associated data names what the value is (for example
//! `credential:<org>:<id>`), so a ciphertext copied into another row does not open.

use crate::{Error, MasterKey, Result};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use rand::RngCore;
use zeroize::Zeroizing;

const VERSION: u8 = 1;
const NONCE_LEN: usize = 24;
/// Associated data and plaintext of the key check value.
const CHECK_AAD: &[u8] = b"rebyte-master-key-check";
const CHECK_PLAINTEXT: &[u8] = b"rebyte master key check v1";

/// Seals and opens values under one master key.
pub struct Cipher {
    aead: XChaCha20Poly1305,
}

impl std::fmt::Debug for Cipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cipher([redacted])")
    }
}

impl Cipher {
    pub fn new(key: &MasterKey) -> Self {
        Self { aead: XChaCha20Poly1305::new(Key::from_slice(key.bytes())) }
    }

    /// Encrypts `plaintext`, bound to `aad`.
    pub fn seal(&self, plaintext: &[u8], aad: &[u8]) -> Result<Vec<u8>> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        // Fails only for messages beyond 256 GiB.
        let ciphertext =
            self.aead.encrypt(XNonce::from_slice(&nonce), Payload { msg: plaintext, aad }).map_err(|_| Error::Seal)?;
        let mut out = Vec::with_capacity(1 + NONCE_LEN + ciphertext.len());
        out.push(VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ciphertext);
        Ok(out)
    }

    /// Decrypts a value sealed with the same key and `aad`.
    pub fn open(&self, sealed: &[u8], aad: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
        let (&version, rest) = sealed.split_first().ok_or(Error::Open)?;
        if version != VERSION {
            return Err(Error::Format(version));
        }
        if rest.len() < NONCE_LEN + 16 {
            return Err(Error::Open);
        }
        let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
        self.aead
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ciphertext, aad })
            .map(Zeroizing::new)
            .map_err(|_| Error::Open)
    }

    /// A value to store beside sealed data, proving later which key sealed it.
    pub fn key_check(&self) -> Result<Vec<u8>> {
        self.seal(CHECK_PLAINTEXT, CHECK_AAD)
    }

    /// Whether `stored` (from [`Cipher::key_check`]) was made with this key.
    pub fn verify_key_check(&self, stored: &[u8]) -> Result<()> {
        match self.open(stored, CHECK_AAD) {
            Ok(p) if p.as_slice() == CHECK_PLAINTEXT => Ok(()),
            _ => Err(Error::WrongKey),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_and_opens_bound_to_associated_data() {
        let c = Cipher::new(&MasterKey::generate());
        let sealed = c.seal(b"top secret", b"credential:org:1").unwrap();
        assert!(!sealed.windows(10).any(|w| w == b"top secret"));
        assert_eq!(c.open(&sealed, b"credential:org:1").unwrap().as_slice(), b"top secret");
        assert!(matches!(c.open(&sealed, b"credential:org:2"), Err(Error::Open)));
        let mut tampered = sealed.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert!(matches!(c.open(&tampered, b"credential:org:1"), Err(Error::Open)));
        assert_ne!(c.seal(b"x", b"a").unwrap(), c.seal(b"x", b"a").unwrap(), "fresh nonce per seal");
    }

    #[test]
    fn the_key_check_tells_keys_apart() {
        let a = Cipher::new(&MasterKey::generate());
        let b = Cipher::new(&MasterKey::generate());
        let check = a.key_check().unwrap();
        assert!(a.verify_key_check(&check).is_ok());
        assert!(matches!(b.verify_key_check(&check), Err(Error::WrongKey)));
        assert!(matches!(a.verify_key_check(b"\x02junk"), Err(Error::WrongKey)));
    }
}
