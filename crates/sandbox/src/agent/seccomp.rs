//! The seccomp filter over every process of a sandbox. The agent installs it
//! on itself as the last step of its setup (the root built, every capability
//! dropped, `no_new_privs` set), so every command, setup script and stdio
//! server it starts inherits it, and nothing inside can lift it.
//!
//! Like a container runtime's default profile, it refuses:
//! - kernel-wide operations a sandbox has no use for, each a large attack
//!   surface: modules, kexec, eBPF, perf events, userfaultfd, the kernel
//!   keyrings, io_uring, file handles (`open_by_handle_at` opens files past a
//!   bind mount's root), swap, reboot, the kernel log, process accounting,
//!   quotas, setting the clock, port I/O, `vhangup` and obsolete calls:
//!   `EPERM`;
//! - namespaces: `clone` or `unshare` with any `CLONE_NEW*` flag, and
//!   `setns`. A new user namespace would give its creator every capability
//!   inside it, and with them mounts of fresh filesystems, new network
//!   stacks and much more kernel code: `EPERM`;
//! - `clone3`, whose flags are in memory a filter cannot read: `ENOSYS`, so
//!   libc falls back to `clone`, whose flags it checks;
//! - `personality` other than Linux's own (its 32-bit and uname26 variants,
//!   or a query): `EPERM`;
//! - system calls of another ABI (i386 through `int 0x80`, x32): the process
//!   is killed, as the numbers below are the native ABI's only.
//!
//! Everything else is allowed. `mount` and the new mount API stay (the
//! sandbox's processes have no capabilities, so the kernel refuses them
//! anyway); `ptrace` stays, as in Docker: it only reaches the sandbox's own
//! processes, and since Linux 4.8 the filter runs again after a tracer
//! changes a system call, so tracing cannot skip it.

use std::io;

/// `AUDIT_ARCH_*` of the native ABI (`EM_*` | 64-bit | little-endian).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// Offsets in `struct seccomp_data`: the number, the architecture, and the
/// low half of the first argument (little-endian).
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0_LOW: u32 = 16;

/// Refused with `EPERM` on every architecture.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const DENIED: &[libc::c_long] = &[
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_setns,
    libc::SYS_pivot_root,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_syslog,
    libc::SYS_acct,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_lookup_dcookie,
    libc::SYS_quotactl,
    libc::SYS_quotactl_fd,
    libc::SYS_nfsservctl,
    libc::SYS_vhangup,
];

/// Refused with `EPERM` where the architecture has them.
#[cfg(target_arch = "x86_64")]
const DENIED_NATIVE: &[libc::c_long] = &[libc::SYS_iopl, libc::SYS_ioperm, libc::SYS_uselib, libc::SYS__sysctl];
#[cfg(target_arch = "aarch64")]
const DENIED_NATIVE: &[libc::c_long] = &[];

/// Every `CLONE_NEW*` flag `clone` takes (its low byte is the exit signal).
const CLONE_NAMESPACES: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;
/// And `unshare`'s, which adds the time namespace.
const UNSHARE_NAMESPACES: u32 = CLONE_NAMESPACES | libc::CLONE_NEWTIME as u32;

/// The personalities allowed, as Docker allows them: `PER_LINUX`,
/// `PER_LINUX32`, `UNAME26` alone and with `PER_LINUX32`, and the query.
const PERSONALITIES: &[u32] = &[0x0, 0x8, 0x2_0000, 0x2_0008, 0xffff_ffff];

const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;
const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
const ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter { code: code as u16, jt: 0, jf: 0, k }
}

fn jump(op: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code: (libc::BPF_JMP | op | libc::BPF_K) as u16, jt, jf, k }
}

fn load(offset: u32) -> libc::sock_filter {
    stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, offset)
}

fn ret(action: u32) -> libc::sock_filter {
    stmt(libc::BPF_RET | libc::BPF_K, action)
}

/// Returns `action` for system call `nr`, then goes on with the next check.
fn on(program: &mut Vec<libc::sock_filter>, nr: libc::c_long, action: u32) {
    program.push(jump(libc::BPF_JEQ, nr as u32, 0, 1));
    program.push(ret(action));
}

/// `EPERM` for system call `nr` when its first argument has any of `flags`.
fn deny_flags(program: &mut Vec<libc::sock_filter>, nr: libc::c_long, flags: u32) {
    program.push(jump(libc::BPF_JEQ, nr as u32, 0, 4));
    program.push(load(ARG0_LOW));
    program.push(jump(libc::BPF_JSET, flags, 0, 1));
    program.push(ret(EPERM));
    program.push(ret(ALLOW));
}

/// `EPERM` for system call `nr` unless its first argument is one of `values`.
fn allow_values(program: &mut Vec<libc::sock_filter>, nr: libc::c_long, values: &[u32]) {
    let n = values.len() as u8;
    program.push(jump(libc::BPF_JEQ, nr as u32, 0, n + 3));
    program.push(load(ARG0_LOW));
    for (i, value) in values.iter().enumerate() {
        // To the `ALLOW` after the remaining values and the `EPERM`.
        program.push(jump(libc::BPF_JEQ, *value, n - i as u8, 0));
    }
    program.push(ret(EPERM));
    program.push(ret(ALLOW));
}

/// The filter, as a classic BPF program over `struct seccomp_data`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn program() -> Vec<libc::sock_filter> {
    let mut p = vec![load(ARCH), jump(libc::BPF_JEQ, AUDIT_ARCH, 1, 0), ret(KILL), load(NR)];
    if cfg!(target_arch = "x86_64") {
        // x32 numbers have bit 30 set; -1 (a tracer skipping a call) is no call.
        p.push(jump(libc::BPF_JGE, 0x4000_0000, 0, 2));
        p.push(jump(libc::BPF_JEQ, 0xffff_ffff, 1, 0));
        p.push(ret(KILL));
    }
    for nr in DENIED.iter().chain(DENIED_NATIVE) {
        on(&mut p, *nr, EPERM);
    }
    on(&mut p, libc::SYS_clone3, ENOSYS);
    deny_flags(&mut p, libc::SYS_clone, CLONE_NAMESPACES);
    deny_flags(&mut p, libc::SYS_unshare, UNSHARE_NAMESPACES);
    allow_values(&mut p, libc::SYS_personality, PERSONALITIES);
    p.push(ret(ALLOW));
    p
}

/// Installs the filter on this process, for it and every child it starts.
/// Needs `no_new_privs` (or `CAP_SYS_ADMIN`) and a single thread.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn install() -> io::Result<()> {
    crate::sys::install_seccomp_filter(&program())
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn install() -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "no seccomp filter is written for this architecture"))
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::*;

    /// Runs the program the way the kernel would, over the subset it uses.
    fn run(program: &[libc::sock_filter], arch: u32, nr: u32, arg0: u64) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&arch.to_le_bytes());
        data[16..24].copy_from_slice(&arg0.to_le_bytes());
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let insn = program[pc];
            let code = u32::from(insn.code);
            pc += 1;
            if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS {
                let at = insn.k as usize;
                a = u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            } else if code == libc::BPF_RET | libc::BPF_K {
                return insn.k;
            } else {
                let taken = match code & !(libc::BPF_JMP | libc::BPF_K) {
                    op if op == libc::BPF_JEQ => a == insn.k,
                    op if op == libc::BPF_JGE => a >= insn.k,
                    op if op == libc::BPF_JSET => a & insn.k != 0,
                    op => panic!("unexpected instruction {op:#x}"),
                };
                pc += usize::from(if taken { insn.jt } else { insn.jf });
            }
            assert!(pc < program.len(), "jumped past the end");
        }
    }

    fn call(nr: libc::c_long, arg0: u64) -> u32 {
        run(&program(), AUDIT_ARCH, nr as u32, arg0)
    }

    #[test]
    fn ordinary_calls_are_allowed() {
        for nr in
            [libc::SYS_read, libc::SYS_write, libc::SYS_execve, libc::SYS_mount, libc::SYS_ptrace, libc::SYS_wait4]
        {
            assert_eq!(call(nr, 0), ALLOW, "{nr}");
        }
        assert_eq!(call(libc::SYS_clone, (libc::CLONE_VM | libc::CLONE_THREAD | libc::SIGCHLD) as u64), ALLOW);
        assert_eq!(call(libc::SYS_unshare, (libc::CLONE_FS | libc::CLONE_FILES) as u64), ALLOW);
        assert_eq!(call(libc::SYS_personality, 0xffff_ffff), ALLOW);
        assert_eq!(call(libc::SYS_personality, 0x8), ALLOW);
    }

    #[test]
    fn the_denied_calls_get_eperm_and_clone3_enosys() {
        for nr in DENIED.iter().chain(DENIED_NATIVE) {
            assert_eq!(call(*nr, 0), EPERM, "{nr}");
        }
        assert_eq!(call(libc::SYS_clone3, 0), ENOSYS);
        assert_eq!(call(libc::SYS_clone, (libc::CLONE_NEWUSER | libc::SIGCHLD) as u64), EPERM);
        assert_eq!(call(libc::SYS_clone, libc::CLONE_NEWNET as u64), EPERM);
        assert_eq!(call(libc::SYS_unshare, libc::CLONE_NEWUSER as u64), EPERM);
        assert_eq!(call(libc::SYS_unshare, libc::CLONE_NEWTIME as u64), EPERM);
        // Only the low half of the first argument counts, as for the kernel.
        assert_eq!(call(libc::SYS_unshare, (1 << 40) | libc::CLONE_NEWUSER as u64), EPERM);
        assert_eq!(call(libc::SYS_personality, 0x0040000), EPERM, "ADDR_NO_RANDOMIZE");
    }

    #[test]
    fn other_abis_are_killed() {
        assert_eq!(run(&program(), 0x4000_0003, 20, 0), KILL, "i386");
        if cfg!(target_arch = "x86_64") {
            assert_eq!(run(&program(), AUDIT_ARCH, 0x4000_0000 | 39, 0), KILL, "x32");
            assert_eq!(run(&program(), AUDIT_ARCH, u32::MAX, 0), ALLOW, "a skipped call");
        }
    }

    #[test]
    fn the_program_fits_the_kernel() {
        assert!(program().len() < 4096);
    }
}
