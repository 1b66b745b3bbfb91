//! First start: with no organization in the store, create `default` and one
//! key with every scope — `REBYTE_BOOTSTRAP_KEY` if set, otherwise a new one,
//! printed once and written to `<data-dir>/bootstrap-key` with mode 0600.

use crate::keys;
use crate::{Config, StartError};
use protocol::admin::Scope;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use store::Store;

/// The organization the first start creates.
pub const DEFAULT_ORG: &str = "default";

/// Runs the bootstrap; does nothing on a store that already has organizations,
/// except installing `bootstrap_key` if it is given and not yet known.
pub async fn run(store: &dyn Store, config: &Config) -> Result<(), StartError> {
    let fail = |e: app::Error| StartError::Bootstrap(e.to_string());
    let empty = store.count_organizations().await? == 0;
    if let Some(secret) = &config.bootstrap_key {
        if store.find_api_key(&keys::hash_secret(secret)).await?.is_none() {
            let org = keys::ensure_organization(store, DEFAULT_ORG).await.map_err(fail)?;
            keys::create_key(store, &org.id, Some("bootstrap".into()), Scope::ALL.to_vec(), Some(secret.clone()))
                .await
                .map_err(fail)?;
            tracing::info!("installed REBYTE_BOOTSTRAP_KEY for organization '{DEFAULT_ORG}'");
        }
        return Ok(());
    }
    if !empty {
        return Ok(());
    }
    let org = keys::ensure_organization(store, DEFAULT_ORG).await.map_err(fail)?;
    let created =
        keys::create_key(store, &org.id, Some("bootstrap".into()), Scope::ALL.to_vec(), None).await.map_err(fail)?;
    let path = config.data_dir.join("bootstrap-key");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .map_err(|source| StartError::DataDir { path: path.clone(), source })?;
    writeln!(file, "{}", created.secret).map_err(|source| StartError::DataDir { path: path.clone(), source })?;
    // Printed once, on stdout, so that a user running `serve` sees it.
    println!("Created organization '{DEFAULT_ORG}' and its bootstrap key (also in {}):", path.display());
    println!("{}", created.secret);
    Ok(())
}
