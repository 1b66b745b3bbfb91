//! Each environment's disk quota ([`sandbox::disk`]): its directory becomes
//! a disk image of its own before its files are first made (at its first
//! initialization, or when it is made as a fork), sized by its
//! `container_size` ([`disk_bytes`]), and deleting it frees the image once
//! no fork uses a layer inside it. Without images (`--environment-disk-gib
//! 0`, or a host that cannot loop-mount) directories are plain, as before.

use super::{EnvFailure, Environments};
use protocol::ids::EnvironmentId;

/// The quota of a `container_size` over the server's `base`: `small` half of
/// it, `medium` (and no size) `base`, `large` twice it.
pub fn disk_bytes(base: u64, size: Option<&str>) -> u64 {
    match size {
        Some("small") => base / 2,
        Some("large") => base.saturating_mul(2),
        _ => base,
    }
}

impl Environments {
    /// Gives `env_id`'s directory its disk image (new, or its own mounted
    /// again); nothing without images.
    pub(super) async fn give_disk(&self, env_id: &EnvironmentId, size: Option<&str>) -> Result<(), EnvFailure> {
        let Some(images) = &self.config.disk else { return Ok(()) };
        let bytes = disk_bytes(images.base_bytes(), size);
        match images.ensure(env_id.as_str(), bytes).await {
            Ok(_) => Ok(()),
            Err(e) => Err(EnvFailure::new("sandbox_error", format!("environment {env_id} has no disk: {e}"))),
        }
    }

    /// Deletes `env_id`'s files, then the layers and images no one uses any more.
    pub(super) async fn remove_files(&self, env_id: &EnvironmentId) {
        let imaged = match &self.config.disk {
            Some(images) => images.remove(env_id.as_str()).await.unwrap_or_else(|e| {
                tracing::warn!(environment = %env_id, error = %e, "deleting an environment's disk image failed");
                false
            }),
            None => false,
        };
        if !imaged {
            let _ = std::fs::remove_dir_all(self.config.root.join(env_id.as_str()));
        }
        self.collect_layers(env_id.as_str()).await;
    }

    /// Deletes the layers no environment or snapshot uses, then the images
    /// of deleted environments that held only those.
    pub(super) async fn collect_layers(&self, what: &str) {
        if let Err(e) = self.layers.collect().await {
            tracing::warn!(of = what, error = %e, "collecting unused workspace layers failed");
        }
        if let Some(images) = &self.config.disk {
            images.sweep().await;
        }
    }
}
