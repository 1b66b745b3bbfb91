//! `sandbox-agent --remount SPEC`: a short-lived helper the host starts to
//! give a running sandbox a new `/workspace` (a fork made the old upper
//! layer immutable). Not the agent: a fresh, single-threaded process of the
//! host that enters the sandbox's user namespace (the server's uid owns it),
//! and, in order:
//!
//! 1. builds the new overlay (`lowers` top first, `upper`, `work`) in a mount
//!    namespace of its own, copied from the host's (where the layers' paths
//!    resolve; a layer's mount must be in the caller's namespace) and owned
//!    by the sandbox's user namespace, so the overlay is the sandbox's to
//!    mount; if that fails nothing has changed; then it enters the
//!    sandbox's mount namespace, where it
//! 2. clones the mounts below `/workspace` (the read-only skills);
//! 3. makes the old `/workspace` read-only — refused (`EBUSY`, exit
//!    [`BUSY`]) while a process holds a file in it open for writing, and
//!    then still nothing has changed;
//! 4. detaches the old mount (a process whose working directory is in it
//!    keeps that read-only view of the moment), attaches the new one and the
//!    clones over it.
//!
//! The sandbox is frozen meanwhile (the host's caller does that).

use crate::sys::{attach_tree, attached_tree, clone_tree, overlay_tree, set_tree_attrs};
use nix::mount::{MntFlags, umount2};
use nix::sched::{CloneFlags, setns, unshare};
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsFd;

/// The exit code when a file is open for writing in the old workspace.
pub const BUSY: i32 = 3;

/// What the host asks for (as JSON, the argument after `--remount`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RemountSpec {
    /// The agent's pid on the host.
    pub pid: i32,
    /// Host directories, top first, all read-only from now on.
    pub lowers: Vec<String>,
    /// The new, empty upper directory and its work directory (same filesystem).
    pub upper: String,
    pub work: String,
}

const TARGET: &str = crate::api::WORKSPACE;

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

/// The mount points directly below the topmost `/workspace` mount, as the
/// sandbox sees them (its mountinfo, read from the host).
fn submounts(pid: i32) -> Result<Vec<String>, (i32, String)> {
    let info = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).map_err(fail("read the sandbox's mounts"))?;
    let rows: Vec<(&str, &str, &str)> = info
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            Some((f.next()?, f.next()?, f.nth(2)?))
        })
        .collect();
    let Some((id, _, _)) = rows.iter().rev().find(|(_, _, point)| *point == TARGET) else {
        return Err((1, format!("the sandbox has no {TARGET} mount")));
    };
    Ok(rows.iter().filter(|(_, parent, _)| parent == id).map(|(_, _, point)| point.to_string()).collect())
}

fn run(spec: &RemountSpec) -> Result<(), (i32, String)> {
    let subs = submounts(spec.pid)?;
    let ns = |kind: &str| File::open(format!("/proc/{}/ns/{kind}", spec.pid)).map_err(fail("open the namespace"));
    let (user, mnt) = (ns("user")?, ns("mnt")?);
    setns(user.as_fd(), CloneFlags::CLONE_NEWUSER).map_err(|e| (1, format!("enter the user namespace: {e}")))?;
    unshare(CloneFlags::CLONE_NEWNS).map_err(|e| (1, format!("copy the host's mounts: {e}")))?;
    let attrs = libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV;
    let lowers = cstr(&spec.lowers.join(":"))?;
    let tree =
        overlay_tree(&lowers, &cstr(&spec.upper)?, &cstr(&spec.work)?, attrs).map_err(fail("mount the new overlay"))?;
    setns(mnt.as_fd(), CloneFlags::CLONE_NEWNS).map_err(|e| (1, format!("enter the mount namespace: {e}")))?;
    let mut clones = Vec::new();
    for sub in &subs {
        clones.push((sub, clone_tree(&cstr(sub)?, true).map_err(fail(sub))?));
    }
    let old = attached_tree(&cstr(TARGET)?).map_err(fail("open the workspace mount"))?;
    if let Err(e) =
        set_tree_attrs(old.as_fd(), libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV)
    {
        let code = if e.raw_os_error() == Some(libc::EBUSY) { BUSY } else { 1 };
        return Err((code, format!("make the old workspace read-only: {e}")));
    }
    drop(old);
    umount2(TARGET, MntFlags::MNT_DETACH).map_err(|e| (1, format!("detach the old workspace: {e}")))?;
    attach_tree(tree.as_fd(), &cstr(TARGET)?).map_err(fail("attach the new workspace"))?;
    for (sub, clone) in &clones {
        attach_tree(clone.as_fd(), &cstr(sub)?).map_err(fail(sub))?;
    }
    Ok(())
}
