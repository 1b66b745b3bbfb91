//! Disk quotas per environment: each environment's directory
//! (`<root>/<id>/`: its workspace, home, writable system) is an ext4 image
//! of its own, `<root>/.images/<id>.img`, loop-mounted there; the image's
//! size is the quota, so a write past it fails with `ENOSPC` inside that
//! sandbox and nowhere else. Images are sparse (a 10 GiB one uses a few MB
//! until written).
//!
//! The root is bound onto itself as a shared mount when opened, so an image
//! mounted under it later propagates into warm agents' mount namespaces
//! (cloned before it, as slaves); open it before any agent is cloned. New
//! images come formatted and mounted from a small pool ([`pool`]) and are
//! moved into place. A restart mounts every image again (a killed server's
//! mounts are reused as they are); an opening also detaches what a killed
//! server left mounted over a data directory deleted since (its images, the
//! root's and the pool's binds), so that the directory can go. A deleted
//! environment's files go at once; its image stays while a fork's layer
//! made from it ([`crate::layers::LayerStore::fork`], which puts a layer on
//! the source's filesystem) is still in use, and [`Images::sweep`] frees it
//! after.
//!
//! Without root or a loop device there is no quota: [`Images::open`] says
//! why in one warning and returns none.

mod image;
mod mounts;
mod pool;

use crate::error::{Error, Result};
use pool::Pool;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The directory of the images under the environments' root.
pub const IMAGES: &str = ".images";
/// The directory under [`IMAGES`] where prepared images are mounted.
const POOL: &str = "pool";
/// Written in [`IMAGES`] by every opening before it mounts anything: a root
/// whose images directory lost it (and its images) was deleted.
const OPENED: &str = "opened";
/// Marks an image whose environment is deleted (kept for its layers).
const DELETED: &str = ".deleted";
/// Where a forked environment's layers live inside its image.
const LAYERS: &str = ".layers";

/// The roots with an [`Images`] open in this process, once per opening: the
/// last one closed unmounts.
static OPEN: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The disk images of the environments under one root.
pub struct Images {
    root: PathBuf,
    pool: Arc<Pool>,
    base: u64,
}

impl std::fmt::Debug for Images {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Images").field("root", &self.root).field("base", &self.base).finish()
    }
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |e| Error::io(context, e)
}

impl Images {
    /// The images of the environments in `root`, each `base_bytes` unless
    /// asked otherwise; none when `base_bytes` is 0 or the host cannot loop
    /// mount (a warning says why). Blocks for one image's preparation.
    pub fn open(root: &Path, base_bytes: u64) -> Option<Arc<Images>> {
        Self::open_with(root, base_bytes, &[])
    }

    /// As [`Images::open`], each new image holding the (empty) directories
    /// `skeleton` from the start: what every environment makes first,
    /// made once per size instead of on each first use.
    pub fn open_with(root: &Path, base_bytes: u64, skeleton: &[&str]) -> Option<Arc<Images>> {
        if base_bytes == 0 {
            tracing::info!("environments have no disk quota (--environment-disk-gib 0)");
            return None;
        }
        match Self::try_open(root, base_bytes, skeleton) {
            Ok(images) => Some(images),
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    "environments have no disk quota: this host cannot loop-mount disk images (it needs root, \
                     mkfs.ext4 and a loop device)"
                );
                None
            }
        }
    }

    fn try_open(root: &Path, base: u64, skeleton: &[&str]) -> Result<Arc<Images>> {
        if !nix::unistd::geteuid().is_root() {
            return Err(Error::Create("not running as root".into()));
        }
        if !Path::new("/dev/loop-control").exists() {
            return Err(Error::Create("no /dev/loop-control".into()));
        }
        let pool_dir = root.join(IMAGES).join(POOL);
        std::fs::create_dir_all(&pool_dir).map_err(io(format!("create {}", pool_dir.display())))?;
        let opened = root.join(IMAGES).join(OPENED);
        std::fs::write(&opened, b"").map_err(io(format!("write {}", opened.display())))?;
        let root = std::fs::canonicalize(root).map_err(io(format!("resolve {}", root.display())))?;
        let pool_dir = root.join(IMAGES).join(POOL);
        mounts::share(&root)?;
        mounts::private(&pool_dir)?;
        let skeleton = skeleton.iter().map(|d| d.to_string()).collect();
        let pool = Arc::new(Pool::new(root.join(IMAGES), pool_dir, skeleton));
        // A killed server's prepared images, and the mounts of killed servers
        // whose data directories were deleted since.
        pool.clear();
        let swept = mounts::sweep_orphans();
        let roots = mounts::sweep_deleted_roots(OPENED);
        if swept + roots > 0 {
            tracing::info!(mounts = swept, roots, "detached the disk images of deleted data directories");
        }
        let images = Images { root, pool, base };
        OPEN.lock().unwrap_or_else(|e| e.into_inner()).push(images.root.clone());
        let first = images.pool.prepare(base)?;
        images.pool.put(base, first);
        images.mount_all();
        Ok(Arc::new(images))
    }

    /// Mounts every image not mounted (after a restart).
    fn mount_all(&self) {
        for (id, img) in self.list() {
            let dir = self.root.join(&id);
            match mounts::is_mountpoint(&dir) {
                Ok(true) => {}
                _ => {
                    if let Err(e) = image::mount(&img, &dir) {
                        tracing::warn!(environment = %id, error = %e, "mounting an environment's disk image failed");
                    }
                }
            }
        }
    }

    /// The environments' images: (id, image file).
    fn list(&self) -> Vec<(String, PathBuf)> {
        let entries = std::fs::read_dir(self.root.join(IMAGES)).into_iter().flatten().flatten();
        entries
            .filter_map(|e| {
                let name = e.file_name().to_str()?.strip_suffix(".img")?.to_string();
                if name.starts_with(pool::PREFIX) {
                    return None;
                }
                Some((name, e.path()))
            })
            .collect()
    }

    /// Every image's size unless asked otherwise.
    pub fn base_bytes(&self) -> u64 {
        self.base
    }

    /// The environments' root, resolved (where the images are mounted).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The image file of environment `id`.
    pub fn image(&self, id: &str) -> PathBuf {
        self.root.join(IMAGES).join(format!("{id}.img"))
    }

    /// Makes `<root>/<id>/` environment `id`'s image of `bytes` (a new one,
    /// or its own mounted again). Returns whether it has a quota: a
    /// directory that already holds files without an image (made before
    /// quotas) keeps them, without one.
    pub async fn ensure(self: &Arc<Self>, id: &str, bytes: u64) -> Result<bool> {
        let (this, id) = (Arc::clone(self), id.to_string());
        tokio::task::spawn_blocking(move || this.ensure_now(&id, bytes))
            .await
            .map_err(|e| Error::Create(format!("giving an environment its disk image: {e}")))?
    }

    fn ensure_now(&self, id: &str, bytes: u64) -> Result<bool> {
        let dir = self.root.join(id);
        let img = self.image(id);
        // Only an environment with an image can have it mounted: a new one
        // skips reading the mount table (a millisecond on a first use).
        if img.exists() {
            if !mounts::is_mountpoint(&dir)? {
                image::mount(&img, &dir)?;
            }
            return Ok(true);
        }
        if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
            return Ok(false);
        }
        let prepared = match self.pool.take(bytes) {
            Some(p) => p,
            None => self.pool.prepare(bytes)?,
        };
        std::fs::rename(&prepared.img, &img).map_err(io("name a prepared disk image"))?;
        std::fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
        if let Err(e) = mounts::move_mount(&prepared.mnt, &dir) {
            tracing::warn!(error = %e, "moving a prepared disk image failed; mounting it again");
            mounts::detach(&prepared.mnt);
            image::mount(&img, &dir)?;
        }
        self.pool.retire(prepared.mnt);
        self.pool.refill(bytes);
        Ok(true)
    }

    /// Deletes environment `id`'s files. Returns false when it has no image
    /// (the caller deletes its directory). Its image goes at once unless a
    /// layer made by forking it is left, which [`Images::sweep`] frees later.
    pub async fn remove(self: &Arc<Self>, id: &str) -> Result<bool> {
        let (this, id) = (Arc::clone(self), id.to_string());
        tokio::task::spawn_blocking(move || this.remove_now(&id))
            .await
            .map_err(|e| Error::Create(format!("deleting an environment's disk image: {e}")))?
    }

    fn remove_now(&self, id: &str) -> Result<bool> {
        let dir = self.root.join(id);
        if !mounts::is_mountpoint(&dir)? {
            return Ok(false);
        }
        for entry in std::fs::read_dir(&dir).map_err(io(format!("read {}", dir.display())))?.flatten() {
            if entry.file_name() == LAYERS {
                continue;
            }
            let p = entry.path();
            let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
            removed.map_err(io(format!("remove {}", p.display())))?;
        }
        std::fs::write(dir.join(DELETED), b"").map_err(io("mark a deleted environment's image"))?;
        self.release_if_unused(id);
        Ok(true)
    }

    /// Frees the images of deleted environments whose layers no one uses any
    /// more (call after [`crate::layers::LayerStore::collect`]).
    pub async fn sweep(self: &Arc<Self>) {
        let this = Arc::clone(self);
        let _ = tokio::task::spawn_blocking(move || {
            for (id, _) in this.list() {
                if this.root.join(&id).join(DELETED).exists() {
                    this.release_if_unused(&id);
                }
            }
        })
        .await;
    }

    fn release_if_unused(&self, id: &str) {
        let dir = self.root.join(id);
        let layers = std::fs::read_dir(dir.join(LAYERS)).map(|mut d| d.next().is_some());
        if layers.unwrap_or(false) {
            return;
        }
        mounts::detach(&dir);
        if let Err(e) = std::fs::remove_file(self.image(id)) {
            tracing::warn!(environment = %id, error = %e, "deleting a disk image failed");
        }
        let _ = std::fs::remove_dir(&dir);
    }
}

/// Detaches every mount strictly below `dir`, deepest first: what a server
/// that let go of its images without closing them (killed, or its process
/// holding them until exit) left mounted under its data directory.
pub fn detach_below(dir: &Path) {
    for mnt in mounts::below(dir).unwrap_or_default() {
        mounts::detach(&mnt);
    }
}

/// [`detach_below`], then `root` itself: everything images opened over
/// `root` mounted, the root's own bind included.
pub fn detach_root(root: &Path) {
    detach_below(root);
    mounts::detach(root);
}

impl Drop for Images {
    /// The last one open over a root unmounts its images (the next start
    /// mounts them again) and the root's own bind.
    fn drop(&mut self) {
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = open.iter().position(|r| *r == self.root) {
            open.remove(i);
        }
        if open.contains(&self.root) {
            return;
        }
        self.pool.close();
        detach_root(&self.root);
    }
}
