//! Images formatted and mounted ahead of time, so that an environment's
//! first use moves one into place (a rename and a mount move, well under a
//! millisecond) instead of paying for `mkfs` and a loop mount (~35 ms).
//! Two are kept ready per size asked for (environments made in a burst,
//! each ~40 ms apart, outran a single one: its refill takes about as long);
//! a thread refills after each take, at idle priority.

use super::image;
use crate::error::Result;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// How many ready images each size keeps.
const READY: usize = 2;

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
    ready: Mutex<HashMap<u64, Vec<Prepared>>>,
    /// Sizes a thread is filling now.
    filling: Mutex<Vec<u64>>,
}

impl Pool {
    pub fn new(files: PathBuf, dir: PathBuf) -> Self {
        Pool { files, dir, ready: Mutex::default(), filling: Mutex::default() }
    }

    /// Formats and mounts one image of `bytes` in the pool's directory.
    pub fn prepare(&self, bytes: u64) -> Result<Prepared> {
        let name = format!("{:016x}", rand::random::<u64>());
        let (img, mnt) = (self.files.join(format!("{PREFIX}{name}.img")), self.dir.join(&name));
        image::make(&img, bytes)?;
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

    pub fn put(&self, bytes: u64, prepared: Prepared) {
        self.ready.lock().unwrap_or_else(|e| e.into_inner()).entry(bytes).or_default().push(prepared);
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
            loop {
                let have = this.ready.lock().unwrap_or_else(|e| e.into_inner()).get(&bytes).map_or(0, Vec::len);
                if have >= READY {
                    break;
                }
                match this.prepare(bytes) {
                    Ok(p) => this.put(bytes, p),
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
