//! `sandbox-agent --remount SPEC`: a short-lived helper the host starts to
//! give a running sandbox a new `/workspace` and `/root` (a fork made their
//! old upper layers immutable). Not the agent: a fresh, single-threaded
//! process of the host that enters the sandbox's user namespace (the
//! server's uid owns it), and, in order:
//!
//! 1. builds each new overlay (`lowers` top first, `upper`, `work`) in a
//!    mount namespace of its own, copied from the host's (where the layers'
//!    paths resolve; a layer's mount must be in the caller's namespace) and
//!    owned by the sandbox's user namespace, so the overlay is the sandbox's
//!    to mount; if that fails nothing has changed; then it enters the
//!    sandbox's mount namespace, where it
//! 2. clones the mounts directly below each target (the read-only skills);
//! 3. makes each old mount read-only — refused (`EBUSY`, exit [`BUSY`])
//!    while a process holds a file in it open for writing, and then the
//!    others are made writable again and nothing has changed;
//! 4. detaches the old mounts (a process whose working directory is in one
//!    keeps that read-only view of the moment), attaches the new ones and the
//!    clones over them.
//!
//! The sandbox is frozen meanwhile (the host's caller does that).

use crate::sys::{attach_tree, attached_tree, clear_tree_attrs, clone_tree, overlay_tree, set_tree_attrs};
use nix::mount::{MntFlags, umount2};
use nix::sched::{CloneFlags, setns, unshare};
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsFd;

/// The exit code when a file is open for writing in the old workspace.
pub const BUSY: i32 = 3;

/// One mount to replace: `target` (`/workspace`, `/root`) becomes an
/// overlay of `lowers` (host directories, top first, all read-only from now
/// on) under the new, empty `upper` and its `work` directory (same filesystem).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Swap {
    pub target: String,
    pub lowers: Vec<String>,
    pub upper: String,
    pub work: String,
}

/// What the host asks for (as JSON, the argument after `--remount`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RemountSpec {
    /// The agent's pid on the host.
    pub pid: i32,
    pub swaps: Vec<Swap>,
}

/// Runs the helper; never returns.
pub fn main(spec: Option<&String>) -> ! {
    let outcome = spec
        .ok_or_else(|| (2, "--remount needs a specification".to_string()))
        .and_then(|s| serde_json::from_str::<RemountSpec>(s).map_err(|e| (2, format!("bad specification: {e}"))))
        .and_then(|s| run(&s));
    match outcome {
        Ok(()) => std::process::exit(0),
        Err((code, message)) => {
            eprintln!("{message}");
            std::process::exit(code)
        }
    }
}

fn fail(what: &str) -> impl Fn(std::io::Error) -> (i32, String) + '_ {
    move |e| (1, format!("{what}: {e}"))
}

fn cstr(p: &str) -> Result<CString, (i32, String)> {
    CString::new(p).map_err(|_| (2, format!("NUL byte in path {p:?}")))
}

/// The mount points directly below the topmost mount at `target`, as the
/// sandbox sees them (its mountinfo, read from the host).
fn submounts(info: &str, target: &str) -> Result<Vec<String>, (i32, String)> {
    let rows: Vec<(&str, &str, &str)> = info
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            Some((f.next()?, f.next()?, f.nth(2)?))
        })
        .collect();
    let Some((id, _, _)) = rows.iter().rev().find(|(_, _, point)| *point == target) else {
        return Err((1, format!("the sandbox has no {target} mount")));
    };
    Ok(rows.iter().filter(|(_, parent, _)| parent == id).map(|(_, _, point)| point.to_string()).collect())
}

const LOCKED: u64 = libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV;

fn run(spec: &RemountSpec) -> Result<(), (i32, String)> {
    let info =
        std::fs::read_to_string(format!("/proc/{}/mountinfo", spec.pid)).map_err(fail("read the sandbox's mounts"))?;
    let subs = spec.swaps.iter().map(|s| submounts(&info, &s.target)).collect::<Result<Vec<_>, _>>()?;
    let ns = |kind: &str| File::open(format!("/proc/{}/ns/{kind}", spec.pid)).map_err(fail("open the namespace"));
    let (user, mnt) = (ns("user")?, ns("mnt")?);
    setns(user.as_fd(), CloneFlags::CLONE_NEWUSER).map_err(|e| (1, format!("enter the user namespace: {e}")))?;
    unshare(CloneFlags::CLONE_NEWNS).map_err(|e| (1, format!("copy the host's mounts: {e}")))?;
    let attrs = libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV;
    let mut trees = Vec::new();
    for swap in &spec.swaps {
        let lowers = cstr(&swap.lowers.join(":"))?;
        let tree = overlay_tree(&lowers, &cstr(&swap.upper)?, &cstr(&swap.work)?, attrs).map_err(fail(&swap.target))?;
        trees.push(tree);
    }
    setns(mnt.as_fd(), CloneFlags::CLONE_NEWNS).map_err(|e| (1, format!("enter the mount namespace: {e}")))?;
    let mut clones = Vec::new();
    for sub in subs.iter().flatten() {
        clones.push((sub, clone_tree(&cstr(sub)?, true).map_err(fail(sub))?));
    }
    // Every old mount read-only first: a busy one undoes the others and changes nothing.
    let mut olds = Vec::new();
    for swap in &spec.swaps {
        let old = attached_tree(&cstr(&swap.target)?).map_err(fail("open the mount"))?;
        if let Err(e) = set_tree_attrs(old.as_fd(), LOCKED) {
            for done in &olds {
                let _ = clear_tree_attrs(std::os::fd::AsFd::as_fd(done), libc::MOUNT_ATTR_RDONLY);
            }
            let code = if e.raw_os_error() == Some(libc::EBUSY) { BUSY } else { 1 };
            return Err((code, format!("make the old {} read-only: {e}", swap.target)));
        }
        olds.push(old);
    }
    drop(olds);
    for (swap, tree) in spec.swaps.iter().zip(&trees) {
        umount2(swap.target.as_str(), MntFlags::MNT_DETACH)
            .map_err(|e| (1, format!("detach the old {}: {e}", swap.target)))?;
        attach_tree(tree.as_fd(), &cstr(&swap.target)?).map_err(fail(&swap.target))?;
    }
    for (sub, clone) in &clones {
        attach_tree(clone.as_fd(), &cstr(sub)?).map_err(fail(sub))?;
    }
    Ok(())
}
