//! Images formatted and mounted ahead of time, so that an environment's
//! first use moves one into place (a rename and a mount move, well under a
//! millisecond) instead of paying for a format and a loop mount. Each size
//! is formatted once (`mkfs`, ~40 ms: its master) and copied after that
//! (a few milliseconds). Two are kept ready per size asked for; a thread
//! refills after each take, at idle priority, and removes the mount points
//! the taken images left (an `rmdir` on the path waited up to 7 ms for the
//! mount table's lock while a refill mounted).

use super::image;
use crate::error::Result;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// How many ready images each size keeps.
const READY: usize = 2;

/// How long a refill waits before it copies and mounts: past the first use
/// that took an image (its sandbox's start, whose mounts would wait for the
/// mount table's lock while the refill's `mount`, at idle priority, held it).
const REFILL_DELAY: std::time::Duration = std::time::Duration::from_millis(15);

/// A formatted image mounted in the pool's directory.
pub(super) struct Prepared {
    pub img: PathBuf,
    pub mnt: PathBuf,
}

/// The prefix of a prepared image's file name.
pub(super) const PREFIX: &str = "pool-";

/// Ready images by size in bytes: files in `files` (beside the
/// environments' images: renamed into place), mounted in `dir` (a private
/// mount).
pub(super) struct Pool {
    files: PathBuf,
    dir: PathBuf,
    /// Directories every image starts with (in its master).
    skeleton: Vec<String>,
    ready: Mutex<HashMap<u64, Vec<Prepared>>>,
    /// Sizes a thread is filling now.
    filling: Mutex<Vec<u64>>,
    /// Formats each size's master once.
    masters: Mutex<()>,
    /// Mount points of taken images, removed by the next refill.
    spent: Mutex<Vec<PathBuf>>,
    /// Set when the images close: a refill under way stops, and what it
    /// prepares meanwhile is discarded rather than kept mounted.
    closed: AtomicBool,
}

impl Pool {
    pub fn new(files: PathBuf, dir: PathBuf, skeleton: Vec<String>) -> Self {
        Pool {
            files,
            dir,
            skeleton,
            ready: Mutex::default(),
            filling: Mutex::default(),
            masters: Mutex::default(),
            spent: Mutex::default(),
            closed: AtomicBool::new(false),
        }
    }

    /// The formatted image every image of `bytes` is copied from, made the
    /// first time it is asked for.
    fn master(&self, bytes: u64) -> Result<PathBuf> {
        let master = self.files.join(format!("{PREFIX}master-{bytes}.img"));
        let _one = self.masters.lock().unwrap_or_else(|e| e.into_inner());
        if !master.exists() {
            // Formatted under another name: a master is whole or absent.
            let making = self.files.join(format!("{PREFIX}making-{bytes}.img"));
            let skeleton = self.files.join(format!("skeleton-{bytes}"));
            let _ = std::fs::remove_dir_all(&skeleton);
            for d in &self.skeleton {
                let d = skeleton.join(d);
                std::fs::create_dir_all(&d).map_err(|e| crate::Error::io(format!("create {}", d.display()), e))?;
            }
            let made = image::make(&making, bytes, (!self.skeleton.is_empty()).then_some(skeleton.as_path()));
            let _ = std::fs::remove_dir_all(&skeleton);
            made?;
            std::fs::rename(&making, &master).map_err(|e| crate::Error::io("name a disk image's master", e))?;
        }
        Ok(master)
    }

    /// Copies and mounts one image of `bytes` in the pool's directory.
    pub fn prepare(&self, bytes: u64) -> Result<Prepared> {
        let name = format!("{:016x}", rand::random::<u64>());
        let (img, mnt) = (self.files.join(format!("{PREFIX}{name}.img")), self.dir.join(&name));
        image::copy(&self.master(bytes)?, &img)?;
        if let Err(e) = image::mount(&img, &mnt) {
            let _ = std::fs::remove_file(&img);
            let _ = std::fs::remove_dir(&mnt);
            return Err(e);
        }
        Ok(Prepared { img, mnt })
    }

    /// A ready image of `bytes`, if one is.
    pub fn take(&self, bytes: u64) -> Option<Prepared> {
        self.ready.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&bytes)?.pop()
    }

    /// Hands the mount point a taken image left to the next refill.
    pub fn retire(&self, mnt: PathBuf) {
        self.spent.lock().unwrap_or_else(|e| e.into_inner()).push(mnt);
    }

    /// Keeps `prepared` ready, or discards it once the pool is closed.
    pub fn put(&self, bytes: u64, prepared: Prepared) {
        let mut ready = self.ready.lock().unwrap_or_else(|e| e.into_inner());
        if self.closed.load(Ordering::Acquire) {
            drop(ready);
            discard(&prepared);
            return;
        }
        ready.entry(bytes).or_default().push(prepared);
    }

    /// Stops refilling and clears the pool (the images are closing): an
    /// image a refill finishes after this is discarded by [`Pool::put`].
    pub fn close(&self) {
        {
            // Under the lock `put` takes, so no image lands after the clear.
            let _ready = self.ready.lock().unwrap_or_else(|e| e.into_inner());
            self.closed.store(true, Ordering::Release);
        }
        self.clear();
    }

    /// Brings the images of `bytes` back to [`READY`] in a thread of its own.
    pub fn refill(self: &Arc<Self>, bytes: u64) {
        {
            let mut filling = self.filling.lock().unwrap_or_else(|e| e.into_inner());
            if filling.contains(&bytes) {
                return;
            }
            filling.push(bytes);
        }
        let this = Arc::clone(self);
        std::thread::spawn(move || {
            // Idle priority: `mkfs` and the mount use only CPU time nothing
            // else wants (the first use that took an image goes first).
            let _ = crate::sys::set_idle_priority();
            std::thread::sleep(REFILL_DELAY);
            while !this.closed.load(Ordering::Acquire) {
                for mnt in std::mem::take(&mut *this.spent.lock().unwrap_or_else(|e| e.into_inner())) {
                    let _ = std::fs::remove_dir(mnt);
                }
                let have = this.ready.lock().unwrap_or_else(|e| e.into_inner()).get(&bytes).map_or(0, Vec::len);
                if have >= READY {
                    break;
                }
                match this.prepare(bytes) {
                    Ok(p) => this.put(bytes, p),
                    // A failure because the pool closed under it is expected.
                    Err(_) if this.closed.load(Ordering::Acquire) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "preparing a disk image ahead failed");
                        break;
                    }
                }
            }
            this.filling.lock().unwrap_or_else(|e| e.into_inner()).retain(|b| *b != bytes);
        });
    }

    /// Unmounts and deletes every image in the pool's directory (ready ones,
    /// and those a killed server left).
    pub fn clear(&self) {
        self.ready.lock().unwrap_or_else(|e| e.into_inner()).clear();
        for mnt in super::mounts::below(&self.dir).unwrap_or_default() {
            super::mounts::detach(&mnt);
        }
        for entry in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let _ = std::fs::remove_dir(entry.path());
        }
        for entry in std::fs::read_dir(&self.files).into_iter().flatten().flatten() {
            if entry.file_name().to_str().is_some_and(|n| n.starts_with(PREFIX)) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Unmounts and deletes one prepared image.
fn discard(prepared: &Prepared) {
    super::mounts::detach(&prepared.mnt);
    let _ = std::fs::remove_dir(&prepared.mnt);
    let _ = std::fs::remove_file(&prepared.img);
}
