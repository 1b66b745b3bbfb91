//! One disk image: a sparse file formatted as ext4 (its size is the quota: a
//! write past it fails with `ENOSPC`), mounted through a loop device. An
//! image is made once per size with `mkfs` (~40 ms) and copied after that
//! (its ~4 MiB of written blocks, the holes left holes: a few milliseconds).

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
/// files are written) and formats it, holding a copy of the directory
/// `skeleton` when given (`mkfs -d`: the directories every environment
/// starts with, made once here instead of on each first use).
pub(super) fn make(img: &Path, bytes: u64, skeleton: Option<&Path>) -> Result<()> {
    let file = std::fs::File::create(img).map_err(|e| Error::io(format!("create {}", img.display()), e))?;
    file.set_len(bytes).map_err(|e| Error::io(format!("size {}", img.display()), e))?;
    drop(file);
    let mut mkfs = Command::new("mkfs.ext4");
    mkfs.args(["-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard"]);
    if let Some(skeleton) = skeleton {
        mkfs.arg("-d").arg(skeleton);
    }
    let made = run(mkfs.arg(img), "mkfs.ext4");
    if made.is_err() {
        let _ = std::fs::remove_file(img);
    }
    made
}

/// Makes `img` a copy of the formatted image `master`: its data ranges
/// copied in the kernel (`copy_file_range`), its holes left holes, so the
/// copy uses the blocks the master does (the filesystems share a UUID,
/// which mounting by path does not mind).
pub(super) fn copy(master: &Path, img: &Path) -> Result<()> {
    let copied = copy_ranges(master, img);
    if copied.is_err() {
        let _ = std::fs::remove_file(img);
    }
    copied
}

fn copy_ranges(master: &Path, img: &Path) -> Result<()> {
    use nix::unistd::{Whence, lseek};
    use std::io::{Read, Seek, SeekFrom};
    let sys = |what: &'static str| move |e: nix::Error| Error::io(what, std::io::Error::from(e));
    let mut from = std::fs::File::open(master).map_err(|e| Error::io(format!("open {}", master.display()), e))?;
    let mut to = std::fs::File::create(img).map_err(|e| Error::io(format!("create {}", img.display()), e))?;
    let size = from.metadata().map_err(|e| Error::io("read a disk image's size", e))?.len();
    let size = i64::try_from(size).map_err(|_| Error::Create("a disk image too large to copy".into()))?;
    let mut at = 0;
    while at < size {
        let data = match lseek(&from, at, Whence::SeekData) {
            Ok(data) => data,
            // No data past `at`: the rest is a hole.
            Err(nix::Error::ENXIO) => break,
            Err(e) => return Err(sys("find a disk image's data")(e)),
        };
        let hole = lseek(&from, data, Whence::SeekHole).map_err(sys("find a disk image's hole"))?;
        let (start, len) = (data as u64, (hole - data) as u64);
        from.seek(SeekFrom::Start(start)).map_err(|e| Error::io("seek in a disk image", e))?;
        to.seek(SeekFrom::Start(start)).map_err(|e| Error::io("seek in a disk image", e))?;
        let done = std::io::copy(&mut (&mut from).take(len), &mut to).map_err(|e| Error::io("copy a disk image", e))?;
        if done != len {
            return Err(Error::Create(format!("copied {done} of {len} bytes of a disk image")));
        }
        at = hole;
    }
    to.set_len(size as u64).map_err(|e| Error::io(format!("size {}", img.display()), e))
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
