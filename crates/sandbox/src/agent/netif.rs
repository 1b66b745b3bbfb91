//! The agent's end of an `enabled` sandbox's veth pair: the address, the
//! link up and the default route through the host end (ioctls in the
//! agent's own network namespace, before every capability is dropped, so no
//! sandboxed process can change them), and the host's generated
//! `resolv.conf` bound over the sandbox's.

use crate::sys::{attach_tree, clone_tree, set_tree_attrs};
use crate::wire::VethInit;
use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// A detached read-only copy of the host's file, taken while the host tree
/// is still visible.
pub(super) fn clone_resolv_conf(veth: &VethInit) -> Result<Option<OwnedFd>, String> {
    let Some(path) = &veth.resolv_conf else { return Ok(None) };
    let c = CString::new(path.as_str()).map_err(|_| format!("NUL byte in path {path:?}"))?;
    let tree = clone_tree(&c, false).map_err(|e| format!("clone {path}: {e}"))?;
    set_tree_attrs(tree.as_fd(), libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV)
        .map_err(|e| format!("set attributes of {path}: {e}"))?;
    Ok(Some(tree))
}

/// Binds `tree` at the file `/etc/resolv.conf` names inside the new root
/// (a symlink into `/run`, systemd-resolved's, is created there).
pub(super) fn attach_resolv_conf(tree: OwnedFd) -> Result<(), String> {
    let target = follow(Path::new("/etc/resolv.conf"))?;
    if !target.exists() {
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("create {}: {e}", parent.display()))?;
        }
        std::fs::write(&target, b"").map_err(|e| format!("create {}: {e}", target.display()))?;
    }
    let c = CString::new(target.as_os_str().as_encoded_bytes()).map_err(|_| "NUL byte in resolv.conf's path")?;
    attach_tree(tree.as_fd(), &c).map_err(|e| format!("bind resolv.conf at {}: {e}", target.display()))
}

/// `path` with its symlinks resolved one by one (the last may dangle).
fn follow(path: &Path) -> Result<PathBuf, String> {
    let mut at = path.to_path_buf();
    for _ in 0..16 {
        match std::fs::read_link(&at) {
            Ok(to) => at = at.parent().unwrap_or(Path::new("/")).join(to),
            Err(_) => return Ok(at),
        }
    }
    Err(format!("{}: too many symlinks", path.display()))
}

/// Address, netmask, up, default route.
pub(super) fn configure(veth: &VethInit) -> Result<(), String> {
    crate::sys::configure_ipv4_link(&veth.name, veth.address, veth.prefix, veth.gateway)
        .map_err(|e| format!("configure {}: {e}", veth.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_are_followed_relative_to_their_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("etc")).unwrap();
        let link = dir.path().join("etc/resolv.conf");
        std::os::unix::fs::symlink("../run/systemd/resolve/stub-resolv.conf", &link).unwrap();
        assert_eq!(follow(&link).unwrap(), dir.path().join("etc/../run/systemd/resolve/stub-resolv.conf"));
        assert_eq!(follow(Path::new("/nonexistent")).unwrap(), Path::new("/nonexistent"));
    }
}
