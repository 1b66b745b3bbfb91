//! The crate's only `unsafe`: raw system calls that neither std nor nix wrap
//! (clone3 into new namespaces, the fd-based mount API, capability dropping,
//! a seccomp filter, a loopback ioctl, pidfd signals). Each wrapper is small and safe to call.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_int, c_void};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::fcntl::OFlag;
use nix::unistd::pipe2;

/// `struct clone_args` from `linux/sched.h` (version 2, 88 bytes).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// `struct mount_attr` from `linux/mount.h` (version 0).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// A child started by [`spawn_namespaced`].
pub(crate) struct Spawned {
    pub pid: i32,
    pub pidfd: OwnedFd,
    /// Read end of a close-on-exec pipe: EOF once the exec succeeded, or
    /// the exec's errno if it failed. Checked only when the agent does not
    /// answer, so nobody waits for the exec itself.
    pub exec_status: OwnedFd,
}

/// Why the exec failed, from [`Spawned::exec_status`], once the child exited.
pub(crate) fn exec_error(exec_status: &OwnedFd) -> Option<io::Error> {
    let mut errno = [0u8; 4];
    match read_full(exec_status, &mut errno) {
        Ok(4) => Some(io::Error::from_raw_os_error(i32::from_ne_bytes(errno))),
        _ => None,
    }
}

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

/// Starts `program` as a direct child in new namespaces (`clone_flags`, e.g.
/// `CLONE_NEWUSER | CLONE_NEWPID | …`), with `ctl` as its fd 3. The child
/// waits until `prepare(pid)` (uid maps, cgroups) has run in the parent,
/// then execs; this returns without waiting for the exec.
///
/// The child is a copy of this (possibly multi-threaded) process, so between
/// clone and exec it only makes async-signal-safe system calls on data built
/// beforehand: no allocation, no locks.
pub(crate) fn spawn_namespaced(
    clone_flags: u64,
    program: &CStr,
    argv: &[CString],
    envp: &[CString],
    ctl: BorrowedFd<'_>,
    prepare: impl FnOnce(i32) -> io::Result<()>,
) -> io::Result<Spawned> {
    let (sync_r, sync_w) = pipe2(OFlag::O_CLOEXEC)?;
    let (err_r, err_w) = pipe2(OFlag::O_CLOEXEC)?;
    let argv_ptrs: Vec<*const libc::c_char> =
        argv.iter().map(|a| a.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let envp_ptrs: Vec<*const libc::c_char> =
        envp.iter().map(|a| a.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let mut pidfd: c_int = -1;
    let mut args = CloneArgs {
        flags: clone_flags | libc::CLONE_PIDFD as u64,
        pidfd: &mut pidfd as *mut c_int as u64,
        exit_signal: libc::SIGCHLD as u64,
        ..Default::default()
    };
    // SAFETY: clone3 without CLONE_VM behaves like fork: the child gets a
    // copy-on-write copy of the address space and continues here with ret 0.
    // `args` and `pidfd` outlive the call.
    let ret = unsafe { libc::syscall(libc::SYS_clone3, &mut args as *mut CloneArgs, std::mem::size_of::<CloneArgs>()) };
    let pid = check(ret)? as i32;
    if pid == 0 {
        child_exec(
            sync_r.as_raw_fd(),
            sync_w.as_raw_fd(),
            err_w.as_raw_fd(),
            ctl.as_raw_fd(),
            program,
            &argv_ptrs,
            &envp_ptrs,
        );
    }
    // SAFETY: CLONE_PIDFD stored a new pidfd that nothing else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    drop(sync_r);
    drop(err_w);
    let spawned = Spawned { pid, pidfd, exec_status: err_r };
    if let Err(e) = prepare(pid) {
        reap_after_failure(&spawned);
        return Err(e);
    }
    let one = [1u8];
    if let Err(e) = nix::unistd::write(&sync_w, &one) {
        reap_after_failure(&spawned);
        return Err(e.into());
    }
    Ok(spawned)
}

fn reap_after_failure(child: &Spawned) {
    let _ = pidfd_send_signal(child.pidfd.as_fd(), libc::SIGKILL);
    let _ =
        nix::sys::wait::waitid(nix::sys::wait::Id::PIDFd(child.pidfd.as_fd()), nix::sys::wait::WaitPidFlag::WEXITED);
}

fn read_full(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match nix::unistd::read(fd, &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(got)
}

/// The child between clone3 and execve. Never returns.
fn child_exec(
    sync_r: RawFd,
    sync_w: RawFd,
    err_w: RawFd,
    ctl: RawFd,
    program: &CStr,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
) -> ! {
    // SAFETY: only async-signal-safe system calls on fds and pointers that
    // were valid before the clone (argv/envp are NUL-terminated arrays of
    // NUL-terminated strings); the child ends in execve or _exit.
    unsafe {
        libc::close(sync_w);
        let mut byte = 0u8;
        if libc::read(sync_r, &mut byte as *mut u8 as *mut c_void, 1) != 1 {
            libc::_exit(125);
        }
        let mut err_w = err_w;
        if err_w == 3 {
            err_w = libc::fcntl(err_w, libc::F_DUPFD_CLOEXEC, 4);
        }
        if ctl == 3 {
            let flags = libc::fcntl(3, libc::F_GETFD);
            libc::fcntl(3, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
        } else if libc::dup2(ctl, 3) < 0 {
            child_fail(err_w);
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        libc::execve(program.as_ptr(), argv.as_ptr(), envp.as_ptr());
        child_fail(err_w);
    }
}

/// Reports errno to the parent and exits. Only called in the cloned child.
fn child_fail(err_w: RawFd) -> ! {
    let errno = io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL).to_ne_bytes();
    // SAFETY: write and _exit are async-signal-safe; `errno` is a local array.
    unsafe {
        libc::write(err_w, errno.as_ptr() as *const c_void, errno.len());
        libc::_exit(127);
    }
}

/// Sends a signal through a pidfd (no pid-reuse race).
pub(crate) fn pidfd_send_signal(pidfd: BorrowedFd<'_>, signal: c_int) -> io::Result<()> {
    // SAFETY: plain syscall on a valid fd; the siginfo pointer may be NULL.
    let ret =
        unsafe { libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), signal, std::ptr::null::<c_void>(), 0) };
    check(ret).map(drop)
}

/// Puts the calling thread (and what it clones or forks from now on) at
/// `SCHED_IDLE`: it runs only when a CPU has nothing else to do.
pub(crate) fn set_idle_priority() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; the parameter is a valid struct.
    let ret = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    check(ret as libc::c_long).map(drop)
}

/// Puts thread `tid` (0: the calling one) back at `SCHED_OTHER`, with the
/// nice value it had (leaving `SCHED_IDLE` needs `CAP_SYS_NICE`).
pub(crate) fn set_normal_priority(tid: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: as above.
    let ret = unsafe { libc::sched_setscheduler(tid, libc::SCHED_OTHER, &param) };
    check(ret as libc::c_long).map(drop)
}

/// A detached copy of the mount tree at `path` (`open_tree(OPEN_TREE_CLONE)`),
/// taken before the staging root hides it.
pub(crate) fn clone_tree(path: &CStr, recursive: bool) -> io::Result<OwnedFd> {
    let mut flags = libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC;
    if recursive {
        flags |= libc::AT_RECURSIVE as libc::c_uint;
    }
    // SAFETY: `path` is NUL-terminated; the returned fd is new and ours.
    let fd = check(unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) })?;
    // SAFETY: the kernel returned a fresh fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Sets mount attributes (`MOUNT_ATTR_*`) on every mount of a detached tree.
pub(crate) fn set_tree_attrs(tree: BorrowedFd<'_>, attr_set: u64) -> io::Result<()> {
    let attr = MountAttr { attr_set, attr_clr: 0, propagation: libc::MS_PRIVATE, userns_fd: 0 };
    let flags = libc::AT_EMPTY_PATH | libc::AT_RECURSIVE;
    // SAFETY: `attr` is a valid mount_attr of the size passed; "" is NUL-terminated.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(ret).map(drop)
}

/// Clears mount attributes (`MOUNT_ATTR_*`) on every mount of a tree.
pub(crate) fn clear_tree_attrs(tree: BorrowedFd<'_>, attr_clr: u64) -> io::Result<()> {
    let attr = MountAttr { attr_set: 0, attr_clr, propagation: 0, userns_fd: 0 };
    let flags = libc::AT_EMPTY_PATH | libc::AT_RECURSIVE;
    // SAFETY: `attr` is a valid mount_attr of the size passed; "" is NUL-terminated.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(ret).map(drop)
}

/// Attaches a detached tree at `target` (`move_mount`).
pub(crate) fn attach_tree(tree: BorrowedFd<'_>, target: &CStr) -> io::Result<()> {
    // SAFETY: both strings are NUL-terminated; fds are valid.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            libc::MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    check(ret).map(drop)
}

/// A detached overlayfs mount (`fsopen` / `fsconfig` / `fsmount`): `lower`
/// read-only under `upper` (where changes go) with its `work` directory, all
/// resolved now, while the host tree is intact. Uses `user.overlay.*` xattrs
/// (`userxattr`), the only kind a user namespace may write. Errors carry the
/// kernel's own message when it gave one.
pub(crate) fn overlay_tree(lower: &CStr, upper: &CStr, work: &CStr, mount_attrs: u64) -> io::Result<OwnedFd> {
    const FSOPEN_CLOEXEC: libc::c_uint = 1;
    const FSCONFIG_SET_FLAG: libc::c_uint = 0;
    const FSCONFIG_SET_STRING: libc::c_uint = 1;
    const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
    const FSMOUNT_CLOEXEC: libc::c_uint = 1;
    // SAFETY: the name is NUL-terminated; the returned fd is new and ours.
    let fs = check(unsafe { libc::syscall(libc::SYS_fsopen, c"overlay".as_ptr(), FSOPEN_CLOEXEC) })?;
    // SAFETY: the kernel returned a fresh fd that nothing else owns.
    let fs = unsafe { OwnedFd::from_raw_fd(fs as RawFd) };
    let with_log = |e: io::Error| {
        let mut buf = [0u8; 512];
        match nix::unistd::read(&fs, &mut buf) {
            Ok(n) if n > 0 => io::Error::new(e.kind(), format!("{e} ({})", String::from_utf8_lossy(&buf[..n]).trim())),
            _ => e,
        }
    };
    let set = |cmd: libc::c_uint, key: &CStr, value: Option<&CStr>| {
        let value = value.map_or(std::ptr::null(), |v| v.as_ptr());
        // SAFETY: key and value are NUL-terminated (or value NULL for a flag).
        check(unsafe { libc::syscall(libc::SYS_fsconfig, fs.as_raw_fd(), cmd, key.as_ptr(), value, 0) }).map(drop)
    };
    // fsconfig takes strings of 256 bytes at most: several layers (`a:b`, top
    // first) go one by one (`lowerdir+`, Linux 6.8+).
    let layers: Vec<&[u8]> = lower.to_bytes().split(|b| *b == b':').collect();
    let lowers = if layers.len() == 1 {
        set(FSCONFIG_SET_STRING, c"lowerdir", Some(lower))
    } else {
        layers.iter().try_for_each(|layer| {
            let layer = std::ffi::CString::new(*layer).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            set(FSCONFIG_SET_STRING, c"lowerdir+", Some(&layer))
        })
    };
    lowers
        .and_then(|()| set(FSCONFIG_SET_STRING, c"upperdir", Some(upper)))
        .and_then(|()| set(FSCONFIG_SET_STRING, c"workdir", Some(work)))
        .and_then(|()| set(FSCONFIG_SET_FLAG, c"userxattr", None))
        .and_then(|()| {
            let null = std::ptr::null::<c_void>();
            // SAFETY: a command on a valid fs context fd, without key or value.
            let ret = unsafe { libc::syscall(libc::SYS_fsconfig, fs.as_raw_fd(), FSCONFIG_CMD_CREATE, null, null, 0) };
            check(ret).map(drop)
        })
        .map_err(with_log)?;
    // SAFETY: plain syscall on a valid fs context fd.
    let mnt = check(unsafe { libc::syscall(libc::SYS_fsmount, fs.as_raw_fd(), FSMOUNT_CLOEXEC, mount_attrs) })
        .map_err(with_log)?;
    // SAFETY: the kernel returned a fresh fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(mnt as RawFd) })
}

/// The mount tree attached at `path`, not a copy (`open_tree` without
/// `OPEN_TREE_CLONE`), to change its attributes.
pub(crate) fn attached_tree(path: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: `path` is NUL-terminated; the returned fd is new and ours.
    let fd =
        check(unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), libc::OPEN_TREE_CLOEXEC) })?;
    // SAFETY: the kernel returned a fresh fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Brings the loopback interface of the current network namespace up.
pub(crate) fn loopback_up() -> io::Result<()> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socket};
    let sock = socket(AddressFamily::Inet, SockType::Datagram, SockFlag::SOCK_CLOEXEC, None)?;
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write the ifreq we own; the
    // union member ifru_flags is the one these ioctls use.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut ifr) < 0 {
            return Err(io::Error::last_os_error());
        }
        ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &ifr) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "link name too long"));
    }
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(ifr)
}

fn sockaddr_v4(ip: std::net::Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size on Linux and any
    // bit pattern is a valid sockaddr.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

/// Gives the link `name` of this network namespace `address/prefix`, brings
/// it up and adds a default route through `gateway` (needs CAP_NET_ADMIN).
pub(crate) fn configure_ipv4_link(
    name: &str,
    address: std::net::Ipv4Addr,
    prefix: u8,
    gateway: std::net::Ipv4Addr,
) -> io::Result<()> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socket};
    let sock = socket(AddressFamily::Inet, SockType::Datagram, SockFlag::SOCK_CLOEXEC, None)?;
    let fd = sock.as_raw_fd();
    let mask = u32::MAX.checked_shl(32 - u32::from(prefix.min(32))).unwrap_or(0);
    let (mut addr, mut netmask, mut flags) = (ifreq(name)?, ifreq(name)?, ifreq(name)?);
    addr.ifr_ifru.ifru_addr = sockaddr_v4(address);
    netmask.ifr_ifru.ifru_netmask = sockaddr_v4(std::net::Ipv4Addr::from(mask));
    // SAFETY: rtentry is plain old data; all-zero is a valid value.
    let mut route: libc::rtentry = unsafe { std::mem::zeroed() };
    route.rt_dst = sockaddr_v4(std::net::Ipv4Addr::UNSPECIFIED);
    route.rt_genmask = sockaddr_v4(std::net::Ipv4Addr::UNSPECIFIED);
    route.rt_gateway = sockaddr_v4(gateway);
    route.rt_flags = libc::RTF_UP | libc::RTF_GATEWAY;
    // SAFETY: each request reads or writes the one struct passed, of the
    // type it takes (ifreq for SIOC[SG]IF*, rtentry for SIOCADDRT); the
    // flags member of the union is the one SIOCGIFFLAGS filled.
    unsafe {
        if libc::ioctl(fd, libc::SIOCSIFADDR, &addr) < 0
            || libc::ioctl(fd, libc::SIOCSIFNETMASK, &netmask) < 0
            || libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut flags) < 0
        {
            return Err(io::Error::last_os_error());
        }
        flags.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(fd, libc::SIOCSIFFLAGS, &flags) < 0 || libc::ioctl(fd, libc::SIOCADDRT, &route) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Drops every capability (bounding, ambient, effective, permitted,
/// inheritable), so no later exec, even of a setuid-root file, regains any.
pub(crate) fn drop_all_capabilities(last_cap: u32) -> io::Result<()> {
    for cap in 0..=last_cap {
        // SAFETY: prctl with integer arguments only.
        let r = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
        if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0) };
    #[repr(C)]
    struct Header {
        version: u32,
        pid: c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let header = Header { version: 0x2008_0522, pid: 0 };
    let data = [Data { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: capset reads a version-3 header and two data structs we own.
    let ret = unsafe { libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr()) };
    check(ret).map(drop)
}

/// Installs a seccomp filter (a classic BPF program) on the calling thread;
/// every child inherits it. Needs `no_new_privs` or `CAP_SYS_ADMIN`.
pub(crate) fn install_seccomp_filter(program: &[libc::sock_filter]) -> io::Result<()> {
    let len = u16::try_from(program.len()).map_err(|_| io::Error::other("seccomp program too long"))?;
    let prog = libc::sock_fprog { len, filter: program.as_ptr().cast_mut() };
    // SAFETY: `prog` points to `len` instructions of `program`, which the
    // kernel only reads (and copies) during the call.
    let ret =
        unsafe { libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &prog as *const libc::sock_fprog) };
    check(ret).map(drop)
}

/// Closes every fd from `first` up (inherited strays).
pub(crate) fn close_fds_from(first: u32) {
    // SAFETY: close_range only closes descriptors; callers own none above `first`.
    unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, 0) };
}

/// Takes ownership of fd 3, the control channel the host handed the agent.
pub(crate) fn take_control_fd() -> io::Result<OwnedFd> {
    // SAFETY: fcntl(F_GETFD) only queries; it fails with EBADF if 3 is not open.
    if unsafe { libc::fcntl(3, libc::F_GETFD) } < 0 {
        return Err(io::Error::other("fd 3 (the control channel) is not open: run by a sandbox backend only"));
    }
    // SAFETY: fd 3 is open, was handed to this process for this purpose, and
    // nothing else in the agent claims it.
    Ok(unsafe { OwnedFd::from_raw_fd(3) })
}

/// A pidfd shared between the sandbox (to signal) and its watcher (to wait).
pub(crate) struct SharedFd(pub std::sync::Arc<OwnedFd>);

impl AsRawFd for SharedFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Registers a pidfd with the tokio reactor (readable once the process exits).
pub(crate) fn async_pidfd(fd: std::sync::Arc<OwnedFd>) -> io::Result<tokio::io::unix::AsyncFd<SharedFd>> {
    // SAFETY: the `Arc` inside `SharedFd` keeps the fd open, and always the
    // same fd, for as long as the `AsyncFd` owns it.
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(SharedFd(fd), tokio::io::Interest::READABLE) }
        .map_err(|e| e.into_parts().1)
}

/// Makes the child of `cmd` write `0` to `procs` (an open `cgroup.procs` of
/// the sandbox's command cgroup) between fork and exec, so it joins that
/// cgroup before it runs anything, and everything it starts is counted
/// there. A failed write leaves it where it was (the sandbox's own cgroup).
pub(crate) fn join_cgroup_on_spawn(cmd: &mut std::process::Command, procs: RawFd) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec; it only
    // calls write(2), which is async-signal-safe, on a descriptor the parent
    // keeps open, with a static buffer: no allocation, no locks.
    unsafe {
        cmd.pre_exec(move || {
            let _ = libc::write(procs, b"0".as_ptr().cast::<c_void>(), 1);
            Ok(())
        });
    }
}

/// Makes the child of `cmd` start with no signal blocked: a command forked
/// by an agent thread would otherwise inherit that thread's mask (`SIGCHLD`,
/// which the agent reads through a signalfd).
pub(crate) fn unblock_signals_on_spawn(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and only
    // calls sigemptyset and pthread_sigmask, both async-signal-safe, on a
    // set on its own stack.
    unsafe {
        cmd.pre_exec(|| {
            let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            libc::sigemptyset(set.as_mut_ptr());
            libc::pthread_sigmask(libc::SIG_SETMASK, set.as_ptr(), std::ptr::null_mut());
            Ok(())
        });
    }
}
