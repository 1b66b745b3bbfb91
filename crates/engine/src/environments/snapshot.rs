//! Templates prepared once: a template's packages, inline files and setup
//! commands run a single time, in a sandbox of their own over
//! `<root>/.snapshots/<template id>_v<version>/`, whose workspace then
//! becomes an immutable layer ([`sandbox::layers::LayerStore::seal`]). An
//! environment made from that version of the template, whose setup is the
//! template's (no field of it overridden), starts at its first
//! initialization from copy-on-write layers of the snapshot (workspace and
//! home; a writable system is copied) and runs only what the snapshot cannot hold: its
//! uploaded (`file_id`) files, whose bytes are its own. Its setup log says so.
//! A snapshot missing here (another node, not ready yet, removed) means the
//! environment runs its setup as before.
//!
//! Setup is the tenant's code: with disk quotas it runs in a scratch image
//! of the environment's size (`prep_<key>`), so it cannot fill the host's
//! disk either, and what it made is copied out into the snapshot once.

use super::Environments;
use protocol::environment::{EnvironmentConfig, EnvironmentRecord, FileParam};
use std::path::PathBuf;

const SNAPSHOTS: &str = ".snapshots";
/// The setup a snapshot holds the result of, beside its manifest.
const SETUP: &str = "setup.json";

/// The snapshot directory's name for one version of a template.
pub fn snapshot_key(template_id: &str, version: i64) -> String {
    format!("{template_id}_v{version}")
}

/// Why a template's preparation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepareFailure {
    pub step: String,
    pub message: String,
    pub output: Option<String>,
    /// What setup printed until then.
    pub log: String,
}

impl PrepareFailure {
    fn at(step: &str, message: impl Into<String>) -> Self {
        PrepareFailure { step: step.into(), message: message.into(), output: None, log: String::new() }
    }
}

/// The disk image a template's setup runs in while it is prepared.
fn scratch_id(key: &str) -> String {
    format!("prep_{key}")
}

/// What of a configuration decides a snapshot's files.
fn setup_of(config: &EnvironmentConfig) -> serde_json::Value {
    serde_json::json!({
        "files": config.files,
        "env": config.env,
        "setup_commands": config.setup_commands,
        "packages": config.packages,
    })
}

/// Keeps of `setup` what a snapshot does not hold: the uploaded files.
pub(super) fn applied_already(record: &EnvironmentRecord, setup: &mut sandbox::SetupSpec) {
    let uploaded: Vec<bool> =
        record.config.files.iter().flatten().map(|f| matches!(f, FileParam::FileId { .. })).collect();
    let mut i = 0;
    setup.files.retain(|_| {
        i += 1;
        uploaded.get(i - 1).copied().unwrap_or(false)
    });
    setup.setup_commands.clear();
    setup.packages = sandbox::Packages::default();
}

impl Environments {
    fn snapshot_dir(&self, key: &str) -> PathBuf {
        self.config.root.join(SNAPSHOTS).join(key)
    }

    /// Prepares the snapshot `key` of `record` (a record never stored,
    /// holding the template's configuration): setup runs once, then its
    /// workspace is sealed into a layer. Returns setup's log.
    pub async fn prepare_snapshot(&self, key: &str, record: &EnvironmentRecord) -> Result<String, PrepareFailure> {
        let dir = self.snapshot_dir(key);
        let _ = std::fs::remove_dir_all(&dir);
        let scratch = self.scratch_disk(key, record).await;
        let result = match &scratch {
            Ok(Some(at)) => self.prepare_in(key, record, at, &dir).await,
            Ok(None) => self.prepare_in(key, record, &dir, &dir).await,
            Err(e) => Err(e.clone()),
        };
        if let (Ok(Some(_)), Some(images)) = (&scratch, &self.config.disk)
            && let Err(e) = images.remove(&scratch_id(key)).await
        {
            tracing::warn!(snapshot = key, error = %e, "deleting a preparation's disk image failed");
        }
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        result
    }

    /// The directory setup runs in, an image of the template's disk quota
    /// of its own; `None` without disk quotas (setup runs in the snapshot).
    async fn scratch_disk(&self, key: &str, record: &EnvironmentRecord) -> Result<Option<PathBuf>, PrepareFailure> {
        let Some(images) = &self.config.disk else { return Ok(None) };
        let id = scratch_id(key);
        // A preparation a stopped server left.
        let _ = images.remove(&id).await;
        let bytes = super::disk::disk_bytes(images.base_bytes(), record.config.container_size.as_deref());
        match images.ensure(&id, bytes).await {
            Ok(true) => Ok(Some(images.root().join(id))),
            Ok(false) => Ok(None),
            Err(e) => Err(PrepareFailure::at("sandbox", format!("no disk for the preparation: {e}"))),
        }
    }

    /// Runs the template's setup in `at` and makes `dir` its snapshot (a
    /// copy of what setup made when `at` is a scratch image).
    async fn prepare_in(
        &self,
        key: &str,
        record: &EnvironmentRecord,
        at: &std::path::Path,
        dir: &std::path::Path,
    ) -> Result<String, PrepareFailure> {
        for d in [at.join("workspace"), at.join("home"), dir.to_path_buf()] {
            std::fs::create_dir_all(&d)
                .map_err(|e| PrepareFailure::at("sandbox", format!("cannot create {}: {e}", d.display())))?;
        }
        let log = self.run_setup(key, record, at).await?;
        if at != dir {
            for part in ["workspace", "home", "system"] {
                sandbox::layers::copy_tree(&at.join(part), &dir.join(part))
                    .await
                    .map_err(|e| PrepareFailure::at("snapshot", e.to_string()))?;
            }
        }
        self.layers.seal(dir).await.map_err(|e| PrepareFailure::at("snapshot", e.to_string()))?;
        let held =
            serde_json::to_vec(&setup_of(&record.config)).map_err(|e| PrepareFailure::at("snapshot", e.to_string()))?;
        std::fs::write(dir.join(SETUP), held).map_err(|e| PrepareFailure::at("snapshot", e.to_string()))?;
        Ok(log)
    }

    /// The template's setup, once, in a sandbox over `dir`; its log.
    async fn run_setup(
        &self,
        key: &str,
        record: &EnvironmentRecord,
        dir: &std::path::Path,
    ) -> Result<String, PrepareFailure> {
        let spec =
            self.sandbox_spec(&format!("prep_{key}"), record, dir).map_err(|m| PrepareFailure::at("sandbox", m))?;
        let sandbox = self.backend.create(spec).await.map_err(|e| PrepareFailure::at("sandbox", e.to_string()))?;
        let mut setup = self.setup_spec(record);
        // Uploaded files are applied by each environment (their bytes are its own).
        let uploaded: Vec<bool> =
            record.config.files.iter().flatten().map(|f| matches!(f, FileParam::FileId { .. })).collect();
        let mut i = 0;
        setup.files.retain(|_| {
            i += 1;
            !uploaded.get(i - 1).copied().unwrap_or(false)
        });
        let began = std::time::Instant::now();
        let applied = sandbox::apply_setup(sandbox.as_ref(), &setup).await;
        self.metrics.setup_ran(began.elapsed());
        if let Err(e) = sandbox.destroy().await {
            tracing::warn!(snapshot = key, error = %e, "stopping a preparation sandbox failed");
        }
        let log = applied.map_err(|e| match e {
            sandbox::Error::Setup(f) => PrepareFailure {
                step: f.step.clone(),
                message: f.reason.clone(),
                output: Some(f.output.clone()),
                log: f.log.clone(),
            },
            other => PrepareFailure::at("setup", other.to_string()),
        })?;
        tracing::info!(snapshot = key, duration_ms = telemetry::millis(began.elapsed()), "template setup ran");
        Ok(log.log)
    }

    /// At an environment's first initialization: starts `dir` from the
    /// snapshot of its template's version, when it is ready here and holds the
    /// same setup. Returns the note its setup log begins with.
    pub(super) async fn take_snapshot(&self, record: &EnvironmentRecord, dir: &std::path::Path) -> Option<String> {
        let origin = record.template.as_ref()?;
        let from = self.snapshot_dir(&snapshot_key(origin.id.as_str(), origin.version));
        let held: serde_json::Value = serde_json::from_slice(&std::fs::read(from.join(SETUP)).ok()?).ok()?;
        if held != setup_of(&record.config) {
            return None;
        }
        let manifest = self.layers.manifest(&from).ok().filter(|m| !m.workspace.is_empty())?;
        for part in ["system"] {
            if let Err(e) = sandbox::layers::copy_tree(&from.join(part), &dir.join(part)).await {
                tracing::warn!(environment = %record.id, error = %e, "copying a template's snapshot failed");
                return None;
            }
        }
        let layered = sandbox::layers::Manifest { workspace: manifest.workspace, generation: 0 };
        if let Err(e) = self.layers.write_manifest(dir, &layered) {
            tracing::warn!(environment = %record.id, error = %e, "starting from a template's snapshot failed");
            return None;
        }
        Some(format!(
            "Prepared once from environment template {} (version {}); its setup did not run again here.\n",
            origin.id, origin.version
        ))
    }

    /// Deletes one snapshot (a version no longer current), then the layers no
    /// environment uses any more.
    pub async fn remove_snapshot(&self, key: &str) {
        let _ = std::fs::remove_dir_all(self.snapshot_dir(key));
        self.collect_layers(key).await;
    }

    /// Deletes a template's snapshots (all, or all but `keep`'s key), then the
    /// layers no environment uses any more.
    pub async fn remove_snapshots(&self, template_id: &str, keep: Option<&str>) {
        let prefix = format!("{template_id}_v");
        for entry in std::fs::read_dir(self.config.root.join(SNAPSHOTS)).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(&prefix) && Some(name) != keep {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        self.collect_layers(template_id).await;
    }
}
