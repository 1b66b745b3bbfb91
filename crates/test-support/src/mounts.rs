//! Mounts a test's server leaves under its data directory. An in-process
//! server's sandbox images stay mounted when the test ends before the server
//! lets go of them (threads of its own hold them until the process exits),
//! and a mount point cannot be removed: the temporary directory would stay
//! behind, mounts and all. Tests detach them before the directory goes.

use std::path::{Path, PathBuf};

/// Detaches what is mounted under a directory when dropped (declare it
/// before the directory's `TempDir`, so it drops first), unless defused.
pub struct DetachOnDrop(Option<PathBuf>);

impl DetachOnDrop {
    pub fn new(dir: &Path) -> Self {
        Self(Some(dir.to_path_buf()))
    }

    /// Leaves the mounts where they are (the directory goes on to another server).
    pub fn defuse(&mut self) {
        self.0 = None;
    }
}

impl Drop for DetachOnDrop {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            detach_below(&dir);
        }
    }
}

/// Lazily detaches every mount at or below `dir`, deepest first. Errors are
/// ignored: without the privilege to unmount, nothing was mounted either.
pub fn detach_below(dir: &Path) {
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else { return };
    let mut below: Vec<String> = table
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(unescape)
        .filter(|target| Path::new(target).starts_with(dir))
        .collect();
    below.sort_by_key(|target| std::cmp::Reverse(target.len()));
    for target in below {
        let _ = nix::mount::umount2(target.as_str(), nix::mount::MntFlags::MNT_DETACH);
    }
}

/// A mount point as the kernel writes it: space, tab, newline and backslash
/// as three octal digits.
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 4).and_then(|d| u8::from_str_radix(d, 8).ok());
        match code {
            Some(byte) => {
                out.push(char::from(byte));
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_mount_points_read_back() {
        assert_eq!(unescape(r"/tmp/a\040b\134c"), r"/tmp/a b\c");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape(r"/odd\x"), r"/odd\x");
    }
}
