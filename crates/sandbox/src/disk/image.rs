//! One disk image: a sparse file formatted as ext4 (its size is the quota: a
//! write past it fails with `ENOSPC`), mounted through a loop device.

use crate::error::{Error, Result};
use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd.output().map_err(|e| Error::io(format!("run {what}"), e))?;
    if out.status.success() {
        return Ok(());
    }
    let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Err(Error::Create(format!("{what} failed ({}): {why}", out.status)))
}

/// Creates the image file `img` of `bytes` (sparse: blocks are used as
/// files are written) and formats it.
pub(super) fn make(img: &Path, bytes: u64) -> Result<()> {
    let file = std::fs::File::create(img).map_err(|e| Error::io(format!("create {}", img.display()), e))?;
    file.set_len(bytes).map_err(|e| Error::io(format!("size {}", img.display()), e))?;
    drop(file);
    let made = run(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard"])
            .arg(img),
        "mkfs.ext4",
    );
    if made.is_err() {
        let _ = std::fs::remove_file(img);
    }
    made
}

/// Mounts `img` at `dir` (created if missing) through a loop device freed
/// when it is unmounted; the image's `lost+found` is removed (an empty
/// directory nothing needs).
pub(super) fn mount(img: &Path, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
    run(Command::new("mount").args(["-t", "ext4", "-o", "loop,nosuid,nodev"]).arg(img).arg(dir), "mount")?;
    let _ = std::fs::remove_dir(dir.join("lost+found"));
    Ok(())
}
