//! A writable system for the sandboxes that ask for one
//! ([`crate::SandboxSpec::writable_system`], e.g. to install system
//! packages): each host system directory (`/usr`, `/etc`, `/opt` …) becomes
//! an overlayfs whose lower layer is the host directory, never changed, and
//! whose upper layer lives in the environment's own directory, so changes
//! persist with the environment and nowhere else. `/var` is a fresh
//! directory of the environment, with the host's package databases
//! (`/var/lib/dpkg`, debconf's and ucf's) overlaid in it, and the host's
//! directories (not files) two levels deep.
//!
//! Layout of the directory (`<data-dir>/environments/<id>/system`):
//! `upper/<path>` and `work/<path>` for each overlaid host path, `var/`
//! bound read-write at `/var`.

use super::toolchain::Toolchain;
use crate::error::{Error, Result};
use crate::wire::{BindSpec, OverlaySpec};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Host directories under `/var` that dpkg and its helpers need as they are
/// on the host (the database of installed packages), overlaid if present.
const VAR_LAYERS: &[&str] = &["/var/lib/dpkg", "/var/cache/debconf", "/var/lib/ucf"];

fn text(p: &Path) -> Result<String> {
    let s = p.to_str().ok_or_else(|| Error::Create(format!("path is not UTF-8: {}", p.display())))?;
    // overlayfs separates lower layers with `:` and options with `,`.
    if s.contains([':', ',', '\\']) {
        return Err(Error::Create(format!("a writable system cannot live under {s}: no `:` `,` or `\\` allowed")));
    }
    Ok(s.to_string())
}

fn mkdir(p: &Path) -> Result<()> {
    std::fs::create_dir_all(p).map_err(|e| Error::io(format!("create {}", p.display()), e))
}

/// Recreates the directories of `from` (not their files), `depth` levels
/// deep, under `to`: maintainer scripts expect `/var/log`, `/var/cache/man`
/// … to exist, and would fail to create them for users the sandbox cannot
/// map. Owned by the sandbox's root.
fn skeleton(from: &Path, to: &Path, depth: u32) -> Result<()> {
    mkdir(to)?;
    if depth == 0 {
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(from) else { return Ok(()) };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            skeleton(&entry.path(), &to.join(entry.file_name()), depth - 1)?;
        }
    }
    Ok(())
}

/// Creates what is missing under `dir` and returns the `/var` bind and the
/// overlays, in mount order.
pub(super) fn layout(dir: &Path, toolchain: &Toolchain) -> Result<(BindSpec, Vec<OverlaySpec>)> {
    // Host system files belong to root. Inside, root is the server's uid:
    // only when that is root do they belong to the sandbox's root (which has
    // no capabilities to override permissions).
    if !nix::unistd::geteuid().is_root() {
        return Err(Error::Create(
            "a writable system (system packages) needs the server to run as root: the host's system files \
             belong to root, and a sandbox's root is the server's user"
                .into(),
        ));
    }
    let dir = dir.to_path_buf();
    let var = dir.join("var");
    if !var.exists() {
        skeleton(Path::new("/var"), &var, 2)?;
    }
    mkdir(&var.join("tmp"))?;
    mkdir(&var.join("log/apt"))?;
    std::fs::set_permissions(var.join("tmp"), std::fs::Permissions::from_mode(0o1777))
        .map_err(|e| Error::io("chmod /var/tmp", e))?;
    for (link, to) in [("run", "/run"), ("lock", "/run/lock")] {
        if var.join(link).symlink_metadata().is_err() {
            std::os::unix::fs::symlink(to, var.join(link)).map_err(|e| Error::io("symlink under /var", e))?;
        }
    }
    let var_bind = BindSpec { source: text(&var)?, target: "/var".into(), writable: true, device: false };
    let var_layers = VAR_LAYERS.iter().map(Path::new).filter(|p| p.is_dir());
    let mut overlays = Vec::new();
    for lower in toolchain.system_dirs().map(|p| p.as_path()).chain(var_layers) {
        let rel = lower.strip_prefix("/").unwrap_or(lower);
        let (upper, work) = (dir.join("upper").join(rel), dir.join("work").join(rel));
        mkdir(&upper)?;
        mkdir(&work)?;
        let target = text(lower)?;
        overlays.push(OverlaySpec { lower: target.clone(), upper: text(&upper)?, work: text(&work)?, target });
    }
    Ok((var_bind, overlays))
}
