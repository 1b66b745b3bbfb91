//! `rebyte keys rotate-master`: a new master key, every sealed value of the
//! database sealed again under it in one transaction, and the key file
//! replaced (the old one kept beside it as `<file>.old`). The new key is
//! written to `<file>.new` before the database changes, so a crash in between
//! leaves it recoverable; given through `REBYTE_MASTER_KEY`, the new key is
//! printed once instead. Every server on the database must be stopped.

use anyhow::{Context, Result, bail};
use secrets::{Cipher, MasterKey};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Writes `key` to a new file at `path`, mode 0600.
fn write_key(path: &Path, key: &MasterKey) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {} (left by an earlier rotation? remove it)", path.display()))?;
    file.write_all(format!("{}\n", key.to_base64().expose()).as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

pub async fn rotate_master(config: &server::Config) -> Result<()> {
    let store = server::open_existing_store(config).await?;
    let from_env = std::env::var("REBYTE_MASTER_KEY").ok().filter(|k| !k.trim().is_empty()).map(secrets::Secret::from);
    let key_file = config.master_key_file.clone().unwrap_or_else(|| config.data_dir.join(secrets::KEY_FILE));
    let (old, _) = MasterKey::load(from_env.as_ref(), &key_file, false)?;
    let new = MasterKey::generate();
    let staged = with_suffix(&key_file, ".new");
    if from_env.is_none() {
        write_key(&staged, &new)?;
    }
    let rotated = server::rekey::rotate(store.as_ref(), &Cipher::new(&old), &Cipher::new(&new)).await;
    let done = match rotated {
        Ok(done) => done,
        Err(e) => {
            if from_env.is_none() {
                let _ = std::fs::remove_file(&staged);
            }
            bail!("the master key was not rotated: {e}");
        }
    };
    eprintln!(
        "Sealed again under the new master key: {} credentials, {} sessions' and {} agents' MCP secrets.",
        done.credentials, done.sessions, done.agents
    );
    if from_env.is_some() {
        eprintln!("The new master key is shown once; set REBYTE_MASTER_KEY to it on every node before starting:");
        println!("{}", new.to_base64().expose());
        return Ok(());
    }
    let old_file = with_suffix(&key_file, ".old");
    std::fs::rename(&key_file, &old_file).and_then(|()| std::fs::rename(&staged, &key_file)).with_context(|| {
        format!(
            "the database is sealed under the key in {}, but it could not be moved to {}: move it there by hand",
            staged.display(),
            key_file.display()
        )
    })?;
    eprintln!(
        "{} holds the new key (the old one is in {}: delete it, and its backups, once the servers start with the new one).",
        key_file.display(),
        old_file.display()
    );
    Ok(())
}
