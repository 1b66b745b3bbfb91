//! Copy-on-write workspaces: immutable layers shared between environments.
//!
//! An environment's directory (`<root>/<id>/`) keeps its workspace's changes
//! in `workspace/` as before. Once it has been forked (or was made from a
//! snapshot), `layers.json` names the read-only layers below it, top first,
//! and the sandbox's `/workspace` is an overlay of them under `workspace/`
//! (work directory `work/<generation>`). Layers live in `<root>/.layers/<id>/`,
//! each holding a `workspace/` that nothing writes again; one is deleted by
//! [`LayerStore::collect`] when no manifest names it any more (reference
//! counting by the manifests on disk, so it survives restarts by itself).
//!
//! A fork freezes the source, turns its current `workspace/` into a new layer
//! (a rename: no file is copied), gives the source a fresh empty upper over
//! [that layer + its old ones] inside its running sandbox
//! ([`crate::Sandbox::remount_workspace`]), gives the fork its own empty upper
//! over the same layers, then thaws the source. Its home, skills and writable
//! system (if any) are copied while it is frozen. When a process holds a
//! workspace file open for writing the remount is refused; the fork then gets
//! a copy of the source's upper instead (slower, the same result).

use crate::api::SandboxSpec;
use crate::error::{Error, Result};
use crate::sandbox::Sandbox;
use crate::wire::OverlaySpec;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MANIFEST: &str = "layers.json";
const LAYERS: &str = ".layers";

/// What lies under one environment's (or one snapshot's) workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Layer ids, top first.
    pub workspace: Vec<String>,
    /// Names the work directory of the current upper (`work/<generation>`).
    pub generation: u64,
}

/// How a fork went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forked {
    /// The source's files were copied (a file was open for writing), not layered.
    pub copied: bool,
    /// How long the source was frozen.
    pub frozen: Duration,
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |e| Error::io(context, e)
}

fn text(p: &Path) -> Result<String> {
    let s = p.to_str().ok_or_else(|| Error::Create(format!("path is not UTF-8: {}", p.display())))?;
    // overlayfs separates lower layers with `:` and options with `,`.
    if s.contains([':', ',', '\\']) {
        return Err(Error::Create(format!("workspace layers cannot live under {s}: no `:` `,` or `\\` allowed")));
    }
    Ok(s.to_string())
}

/// The agent's overlay for a layered workspace.
pub(crate) fn workspace_overlay(lowers: &[PathBuf], upper: &Path, work: &Path) -> Result<OverlaySpec> {
    let lower = lowers.iter().map(|p| text(p)).collect::<Result<Vec<_>>>()?.join(":");
    std::fs::create_dir_all(work).map_err(io(format!("create {}", work.display())))?;
    Ok(OverlaySpec { lower, upper: text(upper)?, work: text(work)?, target: crate::api::WORKSPACE.into() })
}

/// `cp -a FROM/. TO` (what exists of `from`; nothing if it does not).
pub async fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    if !from.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(to).map_err(io(format!("create {}", to.display())))?;
    let out = tokio::process::Command::new("cp")
        .arg("-a")
        .arg("--")
        .arg(from.join("."))
        .arg(to)
        .output()
        .await
        .map_err(io("run cp"))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(Error::Create(format!("copy {}: {why}", from.display())));
    }
    Ok(())
}

fn remove(p: &Path) {
    if let Err(e) = std::fs::remove_dir_all(p)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %p.display(), error = %e, "removing a directory failed");
    }
}

/// The layers of every environment under one root directory.
pub struct LayerStore {
    root: PathBuf,
    /// Held by forks and collections: a layer being made is named by no
    /// manifest yet.
    lock: tokio::sync::Mutex<()>,
}

impl LayerStore {
    /// The store of the environments in `root` (`<root>/<id>/`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        LayerStore { root: root.into(), lock: tokio::sync::Mutex::new(()) }
    }

    /// The directory of one layer.
    pub fn layer(&self, id: &str) -> PathBuf {
        self.root.join(LAYERS).join(id)
    }

    /// The manifest of the environment (or snapshot) in `dir`; none written: no layers.
    pub fn manifest(&self, dir: &Path) -> Result<Manifest> {
        match std::fs::read(dir.join(MANIFEST)) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| Error::Create(format!("{}: {e}", dir.join(MANIFEST).display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest::default()),
            Err(e) => Err(Error::io(format!("read {}", dir.join(MANIFEST).display()), e)),
        }
    }

    /// Writes a manifest (a new file renamed over the old one).
    pub fn write_manifest(&self, dir: &Path, manifest: &Manifest) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
        let bytes = serde_json::to_vec(manifest).map_err(|e| Error::Protocol(e.to_string()))?;
        let tmp = dir.join(format!("{MANIFEST}.tmp"));
        std::fs::write(&tmp, bytes).map_err(io(format!("write {}", tmp.display())))?;
        std::fs::rename(&tmp, dir.join(MANIFEST)).map_err(io("store the layers manifest"))
    }

    /// Sets the workspace layers of a sandbox about to start over `dir`
    /// (whose `workspace/` is `spec.workspace`), and removes the work
    /// directories of earlier uppers (no sandbox uses them any more).
    pub fn prepare(&self, dir: &Path, spec: &mut SandboxSpec) -> Result<()> {
        let manifest = self.manifest(dir)?;
        if manifest.workspace.is_empty() {
            return Ok(());
        }
        let current = manifest.generation.to_string();
        if let Ok(entries) = std::fs::read_dir(dir.join("work")) {
            for entry in entries.flatten().filter(|e| e.file_name().to_str() != Some(current.as_str())) {
                remove(&entry.path());
            }
        }
        spec.workspace_lowers = manifest.workspace.iter().map(|id| self.layer(id).join("workspace")).collect();
        spec.workspace_work = Some(dir.join("work").join(current));
        Ok(())
    }

    /// Makes `dst` (a new environment's directory) a copy-on-write copy of
    /// `src`'s files as they are now; `sandbox` is `src`'s, running (or
    /// paused) and left as it was. See the module's documentation.
    pub async fn fork(&self, src: &Path, dst: &Path, sandbox: &dyn Sandbox) -> Result<Forked> {
        let _held = self.lock.lock().await;
        let was_paused = sandbox.state() == crate::SandboxState::Paused;
        sandbox.pause().await?;
        let began = Instant::now();
        let result = self.fork_frozen(src, dst, sandbox).await;
        let frozen = began.elapsed();
        if !was_paused && let Err(e) = sandbox.resume().await {
            tracing::warn!(error = %e, "thawing a forked sandbox failed");
        }
        if result.is_err() {
            remove(dst);
        }
        result.map(|copied| Forked { copied, frozen })
    }

    async fn fork_frozen(&self, src: &Path, dst: &Path, sandbox: &dyn Sandbox) -> Result<bool> {
        let old = self.manifest(src)?;
        let upper = src.join("workspace");
        let next = src.join("workspace.next");
        let generation = old.generation + 1;
        let work = src.join("work").join(generation.to_string());
        for d in [&next, &work] {
            remove(d);
            std::fs::create_dir_all(d).map_err(io(format!("create {}", d.display())))?;
        }
        let mut lowers = vec![upper.clone()];
        lowers.extend(old.workspace.iter().map(|id| self.layer(id).join("workspace")));
        let copied = match sandbox.remount_workspace(&lowers, &next, &work).await {
            Ok(()) => {
                // The source's mount holds its directories open: renaming them changes nothing for it.
                let id = format!("lay_{:016x}", rand::random::<u64>());
                let layer = self.layer(&id);
                std::fs::create_dir_all(&layer).map_err(io(format!("create {}", layer.display())))?;
                std::fs::rename(&upper, layer.join("workspace")).map_err(io("turn the workspace into a layer"))?;
                std::fs::rename(&next, &upper).map_err(io("give the source a new upper"))?;
                let mut workspace = vec![id];
                workspace.extend(old.workspace.iter().cloned());
                self.write_manifest(src, &Manifest { workspace: workspace.clone(), generation })?;
                std::fs::create_dir_all(dst.join("workspace")).map_err(io("create the fork's workspace"))?;
                self.write_manifest(dst, &Manifest { workspace, generation: 0 })?;
                false
            }
            Err(Error::Busy(why)) => {
                tracing::info!(reason = %why, "forking by copying the workspace's upper layer");
                remove(&next);
                remove(&work);
                copy_tree(&upper, &dst.join("workspace")).await?;
                std::fs::create_dir_all(dst.join("workspace")).map_err(io("create the fork's workspace"))?;
                self.write_manifest(dst, &Manifest { workspace: old.workspace.clone(), generation: 0 })?;
                true
            }
            Err(e) => {
                remove(&next);
                remove(&work);
                return Err(e);
            }
        };
        for part in ["home", "skills", "system"] {
            copy_tree(&src.join(part), &dst.join(part)).await?;
        }
        Ok(copied)
    }

    /// Turns `dir`'s `workspace/` (no sandbox running over it) into a new
    /// layer on top of its others, leaving it an empty upper: a template's
    /// snapshot. Returns the new manifest.
    pub async fn seal(&self, dir: &Path) -> Result<Manifest> {
        let _held = self.lock.lock().await;
        let old = self.manifest(dir)?;
        let id = format!("lay_{:016x}", rand::random::<u64>());
        let layer = self.layer(&id);
        std::fs::create_dir_all(&layer).map_err(io(format!("create {}", layer.display())))?;
        let upper = dir.join("workspace");
        std::fs::create_dir_all(&upper).map_err(io(format!("create {}", upper.display())))?;
        std::fs::rename(&upper, layer.join("workspace")).map_err(io("turn the workspace into a layer"))?;
        std::fs::create_dir_all(&upper).map_err(io(format!("create {}", upper.display())))?;
        let mut workspace = vec![id];
        workspace.extend(old.workspace);
        let manifest = Manifest { workspace, generation: old.generation + 1 };
        self.write_manifest(dir, &manifest)?;
        Ok(manifest)
    }

    /// Deletes the layers no manifest under the root names (environments'
    /// `<root>/<id>/`, and snapshots' one level deeper in `<root>/.<kind>/<id>/`);
    /// returns how many.
    pub async fn collect(&self) -> Result<usize> {
        let _held = self.lock.lock().await;
        let mut used = std::collections::HashSet::new();
        let entries = match std::fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(Error::io(format!("read {}", self.root.display()), e)),
        };
        let mut dirs = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            match name.to_str() {
                Some(LAYERS) => {}
                Some(n) if n.starts_with('.') => {
                    dirs.extend(std::fs::read_dir(entry.path()).into_iter().flatten().flatten().map(|e| e.path()))
                }
                _ => dirs.push(entry.path()),
            }
        }
        for dir in dirs {
            used.extend(self.manifest(&dir)?.workspace);
        }
        let mut removed = 0;
        for entry in std::fs::read_dir(self.root.join(LAYERS)).into_iter().flatten().flatten() {
            if entry.file_name().to_str().is_some_and(|n| !used.contains(n)) {
                remove(&entry.path());
                removed += 1;
            }
        }
        Ok(removed)
    }
}
