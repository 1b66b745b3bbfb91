//! Copy-on-write workspaces: immutable layers shared between environments.
//!
//! An environment's directory (`<root>/<id>/`) keeps its workspace's changes
//! in `workspace/` as before. Once it has been forked (or was made from a
//! snapshot), `layers.json` names the read-only layers below it, top first,
//! and the sandbox's `/workspace` is an overlay of them under `workspace/`
//! (work directories `work/<generation>/{workspace,home}`). Layers live in `<root>/.layers/<id>/`,
//! each holding a `workspace/` that nothing writes again; one is deleted by
//! [`LayerStore::collect`] when no manifest names it any more (reference
//! counting by the manifests on disk, so it survives restarts by itself).
//!
//! The home (`home/`, at `/root`, where `pip install --user` and `npm -g`
//! go) is layered the same way, each layer holding both (`workspace/`, `home/`).
//!
//! A fork freezes the source, turns its current uppers into a new layer
//! (renames: no file is copied), gives the source fresh empty uppers over
//! [that layer + its old ones] inside its running sandbox
//! ([`crate::Sandbox::remount`]), gives the fork its own empty uppers over the
//! same layers, then thaws the source. Its skills and writable system (if
//! any) are copied while it is frozen. When a process holds a file open for
//! writing in either the remount is refused; the fork then gets a copy of the
//! source's uppers instead (slower, the same result).
//!
//! A layer is renamed out of an upper, so it must stay on the upper's
//! filesystem: when an environment's directory is a disk image of its own
//! ([`crate::disk`]), a fork's new layer lives inside it
//! (`<root>/<src>/.layers/<id>/`) and `<root>/.layers/<id>` is a symlink
//! to it; collecting the layer removes both.

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
    /// Names the work directory of the current upper (`work/<generation>/…`).
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

/// The agent's overlay for a layered workspace or home (`target`).
pub(crate) fn overlay(lowers: &[PathBuf], upper: &Path, work: &Path, target: &str) -> Result<OverlaySpec> {
    let lower = lowers.iter().map(|p| text(p)).collect::<Result<Vec<_>>>()?.join(":");
    std::fs::create_dir_all(work).map_err(io(format!("create {}", work.display())))?;
    Ok(OverlaySpec { lower, upper: text(upper)?, work: text(work)?, target: target.into() })
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

    /// Sets the workspace (and home) layers of a sandbox about to start over
    /// `dir` (whose `workspace/` is `spec.workspace`, `home/` its home), and
    /// removes the work directories of earlier uppers (no sandbox uses them).
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
        let work = dir.join("work").join(current);
        spec.workspace_lowers = manifest.workspace.iter().map(|id| self.layer(id).join("workspace")).collect();
        spec.workspace_work = Some(work.join("workspace"));
        if spec.home.is_some() {
            let homes: Vec<PathBuf> = manifest.workspace.iter().map(|id| self.layer(id).join("home")).collect();
            for home in &homes {
                // A layer made where there was no home has none.
                std::fs::create_dir_all(home).map_err(io(format!("create {}", home.display())))?;
            }
            spec.home_lowers = homes;
            spec.home_work = Some(work.join("home"));
        }
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

    /// Creates the directory of a new layer `id` made from `dir`'s uppers, on
    /// `dir`'s filesystem: [`Self::layer`] itself, or inside `dir` (a disk
    /// image) with [`Self::layer`] a symlink to it.
    fn place(&self, dir: &Path, id: &str) -> Result<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let layers = self.root.join(LAYERS);
        std::fs::create_dir_all(&layers).map_err(io(format!("create {}", layers.display())))?;
        let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).map_err(io(format!("stat {}", p.display())));
        let link = self.layer(id);
        if dev(dir)? == dev(&layers)? {
            std::fs::create_dir_all(&link).map_err(io(format!("create {}", link.display())))?;
            return Ok(link);
        }
        let real = dir.join(LAYERS).join(id);
        std::fs::create_dir_all(&real).map_err(io(format!("create {}", real.display())))?;
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let target = if dir.parent() == Some(self.root.as_path()) {
            PathBuf::from("..").join(name).join(LAYERS).join(id)
        } else {
            real.clone()
        };
        std::os::unix::fs::symlink(&target, &link).map_err(io(format!("link {}", link.display())))?;
        Ok(real)
    }

    /// The parts of `dir` that are layered: the workspace, and the home if it has one.
    fn parts(dir: &Path) -> Vec<(&'static str, &'static str)> {
        let mut parts = vec![("workspace", crate::api::WORKSPACE)];
        if dir.join("home").is_dir() {
            parts.push(("home", "/root"));
        }
        parts
    }

    async fn fork_frozen(&self, src: &Path, dst: &Path, sandbox: &dyn Sandbox) -> Result<bool> {
        let old = self.manifest(src)?;
        let generation = old.generation + 1;
        let work = src.join("work").join(generation.to_string());
        let parts = Self::parts(src);
        let mut swaps = Vec::new();
        remove(&work);
        for (part, target) in &parts {
            let next = src.join(format!("{part}.next"));
            for d in [&next, &work.join(part)] {
                remove(d);
                std::fs::create_dir_all(d).map_err(io(format!("create {}", d.display())))?;
            }
            let mut lowers = vec![text(&src.join(part))?];
            for id in &old.workspace {
                let lower = self.layer(id).join(part);
                std::fs::create_dir_all(&lower).map_err(io(format!("create {}", lower.display())))?;
                lowers.push(text(&lower)?);
            }
            let (upper, work) = (text(&next)?, text(&work.join(part))?);
            swaps.push(crate::agent::remount::Swap { target: target.to_string(), lowers, upper, work });
        }
        let discard = |parts: &[(&str, &str)]| {
            for (part, _) in parts {
                remove(&src.join(format!("{part}.next")));
            }
            remove(&work);
        };
        let copied = match sandbox.remount(&swaps).await {
            Ok(()) => {
                // The source's mounts hold their directories open: renaming them changes nothing for it.
                let id = format!("lay_{:016x}", rand::random::<u64>());
                let layer = self.place(src, &id)?;
                for (part, _) in &parts {
                    std::fs::rename(src.join(part), layer.join(part)).map_err(io("turn an upper into a layer"))?;
                    std::fs::rename(src.join(format!("{part}.next")), src.join(part))
                        .map_err(io("give the source a new upper"))?;
                    std::fs::create_dir_all(dst.join(part)).map_err(io("create the fork's upper"))?;
                }
                let mut workspace = vec![id];
                workspace.extend(old.workspace.iter().cloned());
                self.write_manifest(src, &Manifest { workspace: workspace.clone(), generation })?;
                self.write_manifest(dst, &Manifest { workspace, generation: 0 })?;
                false
            }
            Err(Error::Busy(why)) => {
                tracing::info!(reason = %why, "forking by copying the upper layers");
                discard(&parts);
                for (part, _) in &parts {
                    copy_tree(&src.join(part), &dst.join(part)).await?;
                    std::fs::create_dir_all(dst.join(part)).map_err(io("create the fork's upper"))?;
                }
                self.write_manifest(dst, &Manifest { workspace: old.workspace.clone(), generation: 0 })?;
                true
            }
            Err(e) => {
                discard(&parts);
                return Err(e);
            }
        };
        for part in ["skills", "system"] {
            copy_tree(&src.join(part), &dst.join(part)).await?;
        }
        Ok(copied)
    }

    /// Turns `dir`'s `workspace/` and `home/` (no sandbox running over them)
    /// into a new layer on top of its others, leaving them empty uppers: a
    /// template's snapshot. Returns the new manifest.
    pub async fn seal(&self, dir: &Path) -> Result<Manifest> {
        let _held = self.lock.lock().await;
        let old = self.manifest(dir)?;
        let id = format!("lay_{:016x}", rand::random::<u64>());
        let layer = self.place(dir, &id)?;
        for part in ["workspace", "home"] {
            let upper = dir.join(part);
            std::fs::create_dir_all(&upper).map_err(io(format!("create {}", upper.display())))?;
            std::fs::rename(&upper, layer.join(part)).map_err(io("turn an upper into a layer"))?;
            std::fs::create_dir_all(&upper).map_err(io(format!("create {}", upper.display())))?;
        }
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
                Some(LAYERS) | Some(crate::disk::IMAGES) => {}
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
                let path = entry.path();
                if let Ok(target) = std::fs::read_link(&path) {
                    // A layer inside a disk image: its files, then the link.
                    remove(&self.root.join(LAYERS).join(target));
                    if let Err(e) = std::fs::remove_file(&path) {
                        tracing::warn!(path = %path.display(), error = %e, "removing a layer's link failed");
                    }
                    removed += 1;
                    continue;
                }
                remove(&path);
                removed += 1;
            }
        }
        Ok(removed)
    }
}
