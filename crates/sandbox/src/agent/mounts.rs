//! Builds the sandbox's private root inside the agent's new mount namespace:
//! the host toolchain read-only, the environment's directory read-write at
//! `/workspace`, a private `/tmp`, a fresh `/proc` and a minimal `/dev`,
//! then pivots into it so nothing else of the host stays reachable. A
//! sandbox with a writable system gets overlayfs mounts instead of some
//! read-only binds (see `local::system`); masks go on top of everything.

use crate::sys::{attach_tree, clone_tree, overlay_tree, set_tree_attrs};
use crate::wire::InitConfig;
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

/// Where the new root is assembled (a tmpfs mounted over the old `/tmp`
/// in this namespace only; bind sources are cloned before it hides them).
const STAGE: &str = "/tmp";

fn cstr(p: &str) -> Result<CString, String> {
    CString::new(p).map_err(|_| format!("NUL byte in path {p:?}"))
}

fn tmpfs(target: &str, options: &str, flags: MsFlags) -> Result<(), String> {
    mount(Some("tmpfs"), target, Some("tmpfs"), flags | MsFlags::MS_NOSUID | MsFlags::MS_NODEV, Some(options))
        .map_err(|e| format!("mount tmpfs on {target}: {e}"))
}

fn staged(target: &str) -> String {
    format!("{STAGE}{target}")
}

pub(super) fn build_root(cfg: &InitConfig) -> Result<(), String> {
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(|e| format!("make / private: {e}"))?;

    // 1. Detached copies of every source, while the host tree is intact.
    let mut trees: Vec<(&crate::wire::BindSpec, OwnedFd)> = Vec::with_capacity(cfg.binds.len());
    for bind in &cfg.binds {
        let tree = clone_tree(&cstr(&bind.source)?, !bind.device)
            .map_err(|e| format!("clone mount of {}: {e}", bind.source))?;
        let mut attrs = libc::MOUNT_ATTR_NOSUID;
        if !bind.writable {
            attrs |= libc::MOUNT_ATTR_RDONLY;
        }
        if !bind.device {
            attrs |= libc::MOUNT_ATTR_NODEV;
        }
        set_tree_attrs(tree.as_fd(), attrs).map_err(|e| format!("set attributes of {}: {e}", bind.source))?;
        trees.push((bind, tree));
    }
    let overlays = overlays(cfg)?;
    let mut masks = Vec::new();
    for mask in &cfg.masks {
        match std::fs::symlink_metadata(mask) {
            Ok(m) if m.is_dir() => masks.push((mask.as_str(), None)),
            Ok(_) => {
                let null = clone_tree(c"/dev/null", false).map_err(|e| format!("clone /dev/null: {e}"))?;
                set_tree_attrs(null.as_fd(), libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOSUID)
                    .map_err(|e| format!("mask {mask}: {e}"))?;
                masks.push((mask.as_str(), Some(null)));
            }
            Err(_) => {}
        }
    }

    // 2. The staging root and its private filesystems.
    tmpfs(STAGE, "mode=0755,size=16m", MsFlags::empty())?;
    for dir in ["proc", "dev", "tmp", "workspace", "root", "var/tmp", "run", "home", "usr", "etc"] {
        mkdir(&staged(&format!("/{dir}")))?;
    }
    tmpfs(&staged("/dev"), "mode=0755,size=64k", MsFlags::MS_NOEXEC)?;
    tmpfs(&staged("/tmp"), &format!("mode=1777,size={}", cfg.tmp_bytes), MsFlags::empty())?;
    mkdir(&staged("/dev/shm"))?;
    tmpfs(&staged("/dev/shm"), &format!("mode=1777,size={}", cfg.tmp_bytes), MsFlags::MS_NOEXEC)?;
    if cfg.tmpfs_home {
        tmpfs(&staged("/root"), "mode=0700,size=1g", MsFlags::empty())?;
    }

    // 3. A layered workspace first (the skills' bind goes inside it), then
    // the binds, in order (a target after any bind that contains it).
    let (workspace, overlays): (Vec<_>, Vec<_>) =
        overlays.into_iter().partition(|(target, _)| target == crate::api::WORKSPACE);
    for (target, tree) in &workspace {
        mkdir(&staged(target))?;
        attach_tree(tree.as_fd(), &cstr(&staged(target))?).map_err(|e| format!("attach {target}: {e}"))?;
    }
    for (bind, tree) in &trees {
        let target = staged(&bind.target);
        if bind.device {
            touch(&target)?;
        } else {
            mkdir(&target)?;
        }
        attach_tree(tree.as_fd(), &cstr(&target)?)
            .map_err(|e| format!("bind {} at {}: {e}", bind.source, bind.target))?;
    }
    for (target, tree) in &overlays {
        if !Path::new(&staged(target)).exists() {
            mkdir(&staged(target))?;
        }
        attach_tree(tree.as_fd(), &cstr(&staged(target))?).map_err(|e| format!("attach {target}: {e}"))?;
    }
    for (path, null) in &masks {
        let target = staged(path);
        match null {
            Some(tree) => attach_tree(tree.as_fd(), &cstr(&target)?).map_err(|e| format!("mask {path}: {e}"))?,
            None => tmpfs(&target, "mode=0555,size=4k", MsFlags::MS_RDONLY)?,
        }
    }

    // 4. A fresh /proc for this pid namespace, and the usual /dev links.
    mount(
        Some("proc"),
        staged("/proc").as_str(),
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| format!("mount /proc: {e}"))?;
    harden_proc()?;
    for (at, to) in &cfg.symlinks {
        std::os::unix::fs::symlink(to, staged(at)).map_err(|e| format!("symlink {at}: {e}"))?;
    }
    for (link, to) in [
        ("/dev/fd", "/proc/self/fd"),
        ("/dev/stdin", "/proc/self/fd/0"),
        ("/dev/stdout", "/proc/self/fd/1"),
        ("/dev/stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(to, staged(link)).map_err(|e| format!("symlink {link}: {e}"))?;
    }

    // 5. Enter it; the old root is detached and unreachable from here on.
    std::env::set_current_dir(STAGE).map_err(|e| format!("chdir {STAGE}: {e}"))?;
    nix::unistd::pivot_root(".", ".").map_err(|e| format!("pivot_root: {e}"))?;
    umount2(".", MntFlags::MNT_DETACH).map_err(|e| format!("detach the old root: {e}"))?;
    std::env::set_current_dir("/").map_err(|e| format!("chdir /: {e}"))?;
    Ok(())
}

/// The overlays, detached, each followed by read-only copies of the host
/// mounts below its lower directory (an overlay does not cross mounts, and a
/// container's `/etc/resolv.conf` is often one): `(target, tree)` in
/// attach order.
fn overlays(cfg: &InitConfig) -> Result<Vec<(String, OwnedFd)>, String> {
    let mut out = Vec::new();
    if cfg.overlays.is_empty() {
        return Ok(out);
    }
    let mountinfo =
        std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| format!("read /proc/self/mountinfo: {e}"))?;
    let points: Vec<String> = mountinfo.lines().filter_map(|l| l.split(' ').nth(4)).map(unescape).collect();
    for o in &cfg.overlays {
        let attrs = libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV;
        let tree = overlay_tree(&cstr(&o.lower)?, &cstr(&o.upper)?, &cstr(&o.work)?, attrs)
            .map_err(|e| format!("overlay {} at {}: {e}", o.lower, o.target))?;
        out.push((o.target.clone(), tree));
        let below = |p: &str| p.strip_prefix(o.lower.as_str()).is_some_and(|r| r.starts_with('/'));
        let mut subs: Vec<&String> = points.iter().filter(|p| below(p)).collect();
        subs.sort();
        subs.dedup();
        let mut taken: Vec<&String> = Vec::new();
        for sub in subs {
            if taken.iter().any(|t| sub.strip_prefix(t.as_str()).is_some_and(|r| r.starts_with('/'))) {
                continue;
            }
            let tree = clone_tree(&cstr(sub)?, true).map_err(|e| format!("clone mount of {sub}: {e}"))?;
            set_tree_attrs(tree.as_fd(), libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV)
                .map_err(|e| format!("set attributes of {sub}: {e}"))?;
            let target = format!("{}{}", o.target, &sub[o.lower.len()..]);
            out.push((target, tree));
            taken.push(sub);
        }
    }
    Ok(out)
}

/// A mount point of `/proc/self/mountinfo`, whose spaces and the like are
/// octal escapes (`\040`).
pub(crate) fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b.get(i + 1..i + 4).filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match oct {
            Some(d) => {
                let v = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sandbox root is the host's uid with no capabilities: file permissions
/// alone would let it write root-owned `/proc` knobs (sysctls, sysrq). Make
/// them read-only and hide the kernel's own secrets, as container runtimes do.
fn harden_proc() -> Result<(), String> {
    const READ_ONLY: &[&str] = &["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"];
    const HIDDEN: &[&str] = &[
        "/proc/kcore",
        "/proc/keys",
        "/proc/timer_list",
        "/proc/sched_debug",
        "/proc/latency_stats",
        "/proc/acpi",
        "/proc/scsi",
        "/proc/asound",
    ];
    let ro = MsFlags::MS_REMOUNT
        | MsFlags::MS_BIND
        | MsFlags::MS_RDONLY
        | MsFlags::MS_NOSUID
        | MsFlags::MS_NODEV
        | MsFlags::MS_NOEXEC;
    for path in READ_ONLY {
        let target = staged(path);
        if !Path::new(&target).exists() {
            continue;
        }
        mount(Some(target.as_str()), target.as_str(), None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>)
            .and_then(|()| mount(None::<&str>, target.as_str(), None::<&str>, ro, None::<&str>))
            .map_err(|e| format!("make {path} read-only: {e}"))?;
    }
    for path in HIDDEN {
        let target = staged(path);
        match std::fs::metadata(&target) {
            Ok(m) if m.is_dir() => tmpfs(&target, "mode=0555,size=4k", MsFlags::MS_RDONLY)?,
            Ok(_) => {
                mount(Some(staged("/dev/null").as_str()), target.as_str(), None::<&str>, MsFlags::MS_BIND, None::<&str>)
                    .map_err(|e| format!("hide {path}: {e}"))?
            }
            Err(_) => {}
        }
    }
    Ok(())
}

fn mkdir(path: &str) -> Result<(), String> {
    match std::fs::create_dir_all(path) {
        Ok(()) => Ok(()),
        Err(_) if Path::new(path).is_dir() => Ok(()),
        Err(e) => Err(format!("mkdir {path}: {e}")),
    }
}

fn touch(path: &str) -> Result<(), String> {
    if let Some(parent) = Path::new(path).parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("mkdir {}: {e}", parent.display()))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map(drop)
        .map_err(|e| format!("create {path}: {e}"))
}
