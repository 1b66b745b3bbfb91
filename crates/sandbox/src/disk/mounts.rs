//! The host mount operations disk images need: reading the mount table,
//! binding the environments' root onto itself as a shared mount (so that an
//! image mounted under it later reaches warm agents cloned before), moving a
//! prepared image's mount into place, detaching one, and detaching those a
//! killed server left over a data directory deleted since (its images' loop
//! mounts, then the binds they were under).

use crate::agent::mounts::unescape;
use crate::error::{Error, Result};
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use std::path::{Path, PathBuf};

/// One line of `/proc/self/mountinfo`, the parts used here.
pub(super) struct MountEntry {
    pub target: PathBuf,
    /// The directory of the mounted filesystem it shows (`/` unless a bind
    /// of a directory below that filesystem's top).
    pub fs_root: PathBuf,
    pub shared: bool,
    /// The mounted device (`/dev/loop3`) or other source.
    pub source: String,
}

/// The mounts of this process's namespace.
pub(super) fn table() -> Result<Vec<MountEntry>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| Error::io("read mountinfo", e))?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let fs_root = PathBuf::from(unescape(fields.get(3)?));
            let target = PathBuf::from(unescape(fields.get(4)?));
            let optional = fields.iter().skip(6).take_while(|f| **f != "-");
            let shared = optional.clone().any(|f| f.starts_with("shared:"));
            let mut after = fields.iter().skip_while(|f| **f != "-");
            let source = after.nth(2).map(|s| unescape(s)).unwrap_or_default();
            Some(MountEntry { target, fs_root, shared, source })
        })
        .collect())
}

/// Whether something is mounted at `path` (itself, not above it).
pub(super) fn is_mountpoint(path: &Path) -> Result<bool> {
    Ok(table()?.iter().any(|m| m.target == path))
}

/// Makes `root` a mount of its own with shared propagation (a bind onto
/// itself unless it already is one, from an earlier start).
pub(super) fn share(root: &Path) -> Result<()> {
    let mounted = table()?.into_iter().rev().find(|m| m.target == root);
    if mounted.as_ref().is_some_and(|m| m.shared) {
        return Ok(());
    }
    if mounted.is_none() {
        mount(Some(root), root, None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>)
            .map_err(|e| Error::Create(format!("bind {} onto itself: {e}", root.display())))?;
    }
    mount(None::<&str>, root, None::<&str>, MsFlags::MS_SHARED, None::<&str>)
        .map_err(|e| Error::Create(format!("make {} a shared mount: {e}", root.display())))
}

/// Makes `dir` a private mount of its own (a mount can be moved only from
/// under a parent that is not shared).
pub(super) fn private(dir: &Path) -> Result<()> {
    if !is_mountpoint(dir)? {
        mount(Some(dir), dir, None::<&str>, MsFlags::MS_BIND, None::<&str>)
            .map_err(|e| Error::Create(format!("bind {} onto itself: {e}", dir.display())))?;
    }
    mount(None::<&str>, dir, None::<&str>, MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(|e| Error::Create(format!("make {} a private mount: {e}", dir.display())))
}

/// Moves the mount at `from` to `to` (an existing directory).
pub(super) fn move_mount(from: &Path, to: &Path) -> Result<()> {
    mount(Some(from), to, None::<&str>, MsFlags::MS_MOVE, None::<&str>)
        .map_err(|e| Error::Create(format!("move the mount {} to {}: {e}", from.display(), to.display())))
}

/// Detaches whatever is mounted at `path` (and below it); its loop device
/// goes once nothing uses it. Nothing mounted is fine.
pub(super) fn detach(path: &Path) {
    if let Err(e) = umount2(path, MntFlags::MNT_DETACH)
        && e != nix::errno::Errno::EINVAL
        && e != nix::errno::Errno::ENOENT
    {
        tracing::warn!(path = %path.display(), error = %e, "unmounting a disk image failed");
    }
}

/// The mounts strictly below `dir`, deepest first.
pub(super) fn below(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> =
        table()?.into_iter().map(|m| m.target).filter(|t| t != dir && t.starts_with(dir)).collect();
    found.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    found.dedup();
    Ok(found)
}

/// Detaches every loop mount of a disk image whose file is gone (a server
/// killed before it could unmount, its data directory deleted since): the
/// mount would otherwise hold its loop device until the host restarts.
/// Images of data directories that still exist are left alone. Returns how
/// many were detached.
pub(super) fn sweep_orphans() -> usize {
    let Ok(entries) = table() else { return 0 };
    let mut swept = 0;
    for m in entries.iter().rev() {
        let Some(device) = m.source.strip_prefix("/dev/") else { continue };
        if !device.starts_with("loop") {
            continue;
        }
        let Ok(backing) = std::fs::read_to_string(format!("/sys/block/{device}/loop/backing_file")) else { continue };
        let backing = backing.trim_end();
        let Some(file) = backing.strip_suffix(" (deleted)") else { continue };
        if orphaned_image(Path::new(file)) {
            detach(&m.target);
            swept += 1;
        }
    }
    swept
}

/// Detaches the binds a killed server left over a data directory deleted
/// since, which hold no image but keep `rm -rf` from removing their mount
/// points: the pool's directory (`<root>/.images/pool`) and the
/// environments' root bound onto itself. A root counts as deleted when its
/// images directory has lost its `marker` (written by every opening before
/// its first mount) and every image; a root that is a filesystem's own top
/// (a volume mounted there) is never detached, only the pool's bind below
/// it. Run after [`sweep_orphans`]. Returns how many roots were swept.
pub(super) fn sweep_deleted_roots(marker: &str) -> usize {
    let Ok(entries) = table() else { return 0 };
    let mut pools: Vec<&Path> = entries.iter().map(|m| m.target.as_path()).filter(|t| is_pool(t)).collect();
    pools.sort();
    pools.dedup();
    let mut swept = 0;
    for pool in pools {
        let Some(images) = pool.parent() else { continue };
        if !deleted(images, marker) {
            continue;
        }
        detach(pool);
        if let Some(root) = images.parent()
            && entries.iter().any(|m| m.target == root && m.fs_root != Path::new("/"))
        {
            detach(root);
        }
        swept += 1;
    }
    swept
}

/// Whether `path` is directly in an images directory (`…/.images/*`).
fn in_images(path: &Path) -> bool {
    path.parent().and_then(Path::file_name).is_some_and(|d| d == super::IMAGES)
}

/// Whether `path` is an images directory's pool (`…/.images/pool`).
fn is_pool(path: &Path) -> bool {
    in_images(path) && path.file_name().is_some_and(|n| n == super::POOL)
}

/// Whether the images directory `images` is what deleting its data
/// directory leaves: no `marker`, no image.
fn deleted(images: &Path, marker: &str) -> bool {
    if images.join(marker).exists() {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(images) else { return false };
    !entries.flatten().any(|e| e.path().extension().is_some_and(|x| x == "img"))
}

/// Whether `file` names one of this module's images (`…/.images/*.img`).
fn orphaned_image(file: &Path) -> bool {
    in_images(file) && file.extension().is_some_and(|e| e == "img")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_of_an_images_directory_count_as_orphaned_images() {
        assert!(orphaned_image(Path::new("/tmp/x/environments/.images/env_1.img")));
        assert!(orphaned_image(Path::new("/d/environments/.images/pool-ab.img")));
        assert!(!orphaned_image(Path::new("/srv/disks/vm.img")));
        assert!(!orphaned_image(Path::new("/tmp/x/environments/.images/notes.txt")));
    }

    #[test]
    fn only_an_images_directorys_pool_counts_as_a_pool() {
        assert!(is_pool(Path::new("/d/environments/.images/pool")));
        assert!(!is_pool(Path::new("/d/environments/pool")));
        assert!(!is_pool(Path::new("/d/environments/.images/env_pool")));
    }

    #[test]
    fn an_images_directory_counts_as_deleted_without_its_marker_and_images() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pool")).unwrap();
        assert!(deleted(dir.path(), "opened"), "what rm -rf leaves");
        std::fs::write(dir.path().join("env_1.img"), b"").unwrap();
        assert!(!deleted(dir.path(), "opened"), "an image left");
        std::fs::remove_file(dir.path().join("env_1.img")).unwrap();
        std::fs::write(dir.path().join("opened"), b"").unwrap();
        assert!(!deleted(dir.path(), "opened"), "opened, before its first image");
    }

    #[test]
    fn the_mount_table_names_each_mounts_source() {
        let table = table().unwrap();
        let root = table.iter().find(|m| m.target == Path::new("/")).expect("/ is mounted");
        assert!(!root.source.is_empty());
    }
}
