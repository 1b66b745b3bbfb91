//! The master key at start: loaded (or created on a new database) and
//! checked against the store's key check value before anything is served.

use crate::{Config, StartError};
use secrets::{Cipher, MasterKey};
use store::Store;
use zeroize::Zeroizing;

/// Loads the master key and checks it against the store's key check value.
/// The key file is created (mode 0600) only on a database that has no key
/// check yet; a wrong key, or a missing key file for existing data, is an
/// error.
pub async fn open_cipher(store: &dyn Store, config: &Config) -> Result<(Cipher, Zeroizing<[u8; 32]>), StartError> {
    let existing = store.master_key_check().await?;
    let key_file = config.master_key_file.clone().unwrap_or_else(|| config.data_dir.join(secrets::KEY_FILE));
    let (key, created) = MasterKey::load(config.master_key.as_ref(), &key_file, existing.is_none())?;
    if created {
        tracing::info!(path = %key_file.display(), "created a new master key file (mode 0600): back it up");
    } else if config.master_key.is_none() {
        use std::os::unix::fs::PermissionsExt;
        if std::fs::metadata(&key_file).is_ok_and(|m| m.permissions().mode() & 0o077 != 0) {
            tracing::warn!(path = %key_file.display(), "the master key file is readable by other users: make it mode 0600");
        }
    }
    let cipher = Cipher::new(&key);
    let check = match existing {
        Some(check) => check,
        None => store.init_master_key_check(&cipher.key_check()?).await?,
    };
    cipher.verify_key_check(&check)?;
    Ok((cipher, key.derive("rebyte cluster secret")))
}
