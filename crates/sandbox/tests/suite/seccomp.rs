//! The seccomp filter: every process of a sandbox runs under it, the system
//! calls a container runtime denies by default are refused (`EPERM`,
//! `ENOSYS` for `clone3`, another ABI killed), and ordinary work still runs.

use super::support::*;
use sandbox::{Sandbox, SpawnRequest};
use tokio::io::AsyncBufReadExt;

/// An argument of a probed call: a number or a C string.
enum Arg {
    N(i64),
    S(&'static str),
}
use Arg::{N, S};

impl Arg {
    fn python(&self) -> String {
        match self {
            N(n) => n.to_string(),
            S(s) => format!("{s:?}"),
        }
    }
}

/// Runs each call in the sandbox with python's ctypes; returns, per name,
/// `ok` or the errno it failed with.
async fn probe(sb: &TestSandbox, calls: &[(&str, libc::c_long, Vec<Arg>)]) -> Vec<(String, String)> {
    let cases: Vec<String> = calls
        .iter()
        .map(|(name, nr, args)| {
            let args: Vec<String> = args.iter().map(Arg::python).collect();
            format!("({name:?}, {nr}, [{}])", args.join(", "))
        })
        .collect();
    let script = format!(
        r#"import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def arg(a):
    return ctypes.c_char_p(a.encode()) if isinstance(a, str) else ctypes.c_long(a)
for name, nr, args in [{}]:
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[arg(a) for a in args])
    if name.startswith("clone") and r == 0:
        os._exit(0)
    if name.startswith("clone") and r > 0:
        os.waitpid(r, 0)
    print(name, ctypes.get_errno() if r == -1 else "ok", flush=True)
"#,
        cases.join(", ")
    );
    std::fs::write(sb.host_path("probe.py"), script).unwrap();
    let out = sh(&*sb.sandbox, "python3 /workspace/probe.py").await;
    out.lines()
        .map(|l| {
            let (name, result) = l.split_once(' ').unwrap();
            (name.to_string(), result.to_string())
        })
        .collect()
}

#[tokio::test]
async fn the_calls_a_container_runtime_denies_are_refused_with_eperm() {
    let sb = start("seccomp-deny").await;
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut calls: Vec<(&str, libc::c_long, Vec<Arg>)> = vec![
        ("kexec_load", libc::SYS_kexec_load, vec![N(0), N(0), N(0), N(0)]),
        ("kexec_file_load", libc::SYS_kexec_file_load, vec![N(-1), N(-1), N(0), N(0), N(0)]),
        ("init_module", libc::SYS_init_module, vec![N(0), N(0), S("")]),
        ("finit_module", libc::SYS_finit_module, vec![N(-1), S(""), N(0)]),
        ("delete_module", libc::SYS_delete_module, vec![S("rebyte_none"), N(0)]),
        ("bpf", libc::SYS_bpf, vec![N(0), N(0), N(0)]),
        ("perf_event_open", libc::SYS_perf_event_open, vec![N(0), N(0), N(-1), N(-1), N(0)]),
        // UFFD_USER_MODE_ONLY: allowed to anyone since Linux 5.11.
        ("userfaultfd", libc::SYS_userfaultfd, vec![N((libc::O_CLOEXEC | 1) as i64)]),
        // KEYCTL_GET_KEYRING_ID of the session keyring, created if missing.
        ("keyctl", libc::SYS_keyctl, vec![N(0), N(-3), N(1)]),
        ("add_key", libc::SYS_add_key, vec![S("user"), S("rebyte-probe"), S("v"), N(1), N(-2)]),
        ("request_key", libc::SYS_request_key, vec![S("user"), S("rebyte-probe"), N(0), N(0)]),
        ("io_uring_setup", libc::SYS_io_uring_setup, vec![N(1), N(0)]),
        ("io_uring_enter", libc::SYS_io_uring_enter, vec![N(-1), N(0), N(0), N(0), N(0), N(0)]),
        ("io_uring_register", libc::SYS_io_uring_register, vec![N(-1), N(0), N(0), N(0)]),
        ("open_by_handle_at", libc::SYS_open_by_handle_at, vec![N(-1), N(0), N(0)]),
        ("name_to_handle_at", libc::SYS_name_to_handle_at, vec![N(-100), S("/"), N(0), N(0), N(0)]),
        ("setns", libc::SYS_setns, vec![N(-1), N(0)]),
        ("pivot_root", libc::SYS_pivot_root, vec![S("/tmp"), S("/tmp")]),
        ("swapon", libc::SYS_swapon, vec![S("/tmp/none"), N(0)]),
        ("swapoff", libc::SYS_swapoff, vec![S("/tmp/none")]),
        ("reboot", libc::SYS_reboot, vec![N(0), N(0), N(0), N(0)]),
        ("syslog", libc::SYS_syslog, vec![N(3), N(0), N(0)]),
        ("acct", libc::SYS_acct, vec![N(0)]),
        ("settimeofday", libc::SYS_settimeofday, vec![N(0), N(0)]),
        ("clock_settime", libc::SYS_clock_settime, vec![N(0), N(0)]),
        ("lookup_dcookie", libc::SYS_lookup_dcookie, vec![N(0), N(0), N(0)]),
        ("quotactl", libc::SYS_quotactl, vec![N(0), N(0), N(0), N(0)]),
        ("quotactl_fd", libc::SYS_quotactl_fd, vec![N(-1), N(0), N(0), N(0)]),
        ("nfsservctl", libc::SYS_nfsservctl, vec![N(0), N(0), N(0)]),
        ("vhangup", libc::SYS_vhangup, vec![]),
        // ADDR_NO_RANDOMIZE: not one of the personalities allowed.
        ("personality", libc::SYS_personality, vec![N(0x0040000)]),
        ("clone_newuser", libc::SYS_clone, vec![N((libc::CLONE_NEWUSER | libc::SIGCHLD) as i64), N(0), N(0), N(0)]),
        ("unshare_newnet", libc::SYS_unshare, vec![N(libc::CLONE_NEWNET as i64)]),
        // Last: without the filter it would succeed and change the probe.
        ("unshare_newuser", libc::SYS_unshare, vec![N(libc::CLONE_NEWUSER as i64)]),
    ];
    #[cfg(target_arch = "x86_64")]
    calls.splice(
        0..0,
        [
            ("iopl", libc::SYS_iopl, vec![N(0)]),
            ("ioperm", libc::SYS_ioperm, vec![N(0x80), N(1), N(0)]),
            ("uselib", libc::SYS_uselib, vec![S("/nonexistent")]),
            ("_sysctl", libc::SYS__sysctl, vec![N(0)]),
        ],
    );
    let results = probe(&sb, &calls).await;
    assert_eq!(results.len(), calls.len(), "{results:?}");
    let eperm = libc::EPERM.to_string();
    let wrong: Vec<_> = results.iter().filter(|(_, r)| *r != eperm).collect();
    assert!(wrong.is_empty(), "not refused with EPERM: {wrong:?}");
}

#[tokio::test]
async fn clone3_is_enosys_so_libc_falls_back_and_ordinary_calls_pass() {
    let sb = start("seccomp-allow").await;
    let calls: Vec<(&str, libc::c_long, Vec<Arg>)> = vec![
        ("clone3", libc::SYS_clone3, vec![N(0), N(0)]),
        ("getpid", libc::SYS_getpid, vec![]),
        ("clone_fork", libc::SYS_clone, vec![N(libc::SIGCHLD as i64), N(0), N(0), N(0)]),
        ("unshare_fs", libc::SYS_unshare, vec![N(libc::CLONE_FS as i64)]),
        ("personality_query", libc::SYS_personality, vec![N(0xffff_ffff)]),
        ("personality_linux32", libc::SYS_personality, vec![N(0x8)]),
    ];
    let results = probe(&sb, &calls).await;
    let expected: Vec<(String, String)> = [
        ("clone3", libc::ENOSYS.to_string()),
        ("getpid", "ok".into()),
        ("clone_fork", "ok".into()),
        ("unshare_fs", "ok".into()),
        ("personality_query", "ok".into()),
        ("personality_linux32", "ok".into()),
    ]
    .map(|(n, r)| (n.to_string(), r))
    .to_vec();
    assert_eq!(results, expected);
}

#[tokio::test]
async fn every_process_runs_filtered_and_ordinary_work_still_runs() {
    let sb = start("seccomp-work").await;
    let status = "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\\t ' ' '";
    assert_eq!(sh(&*sb.sandbox, status).await, "NoNewPrivs: 1\nSeccomp: 2");
    // A long-lived stdio process (an MCP server) inherits it too.
    let proc = sb.spawn_stdio(SpawnRequest::new(format!("{status}; exec cat"))).await.unwrap();
    let mut lines = tokio::io::BufReader::new(proc.stdout).lines();
    assert_eq!(lines.next_line().await.unwrap().unwrap(), "NoNewPrivs: 1");
    assert_eq!(lines.next_line().await.unwrap().unwrap(), "Seccomp: 2");
    proc.handle.kill().await.unwrap();

    assert_eq!(sh(&*sb.sandbox, "seq 1 1000 | sort -rn | head -n 1 | tr -d '\\n' | wc -c").await, "4");
    // Threads (pthread_create tries clone3 first), fork and exec.
    let python = r#"python3 -c '
import subprocess, threading
out = []
ts = [threading.Thread(target=lambda i=i: out.append(i)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print(len(out), subprocess.run(["echo", "child"], capture_output=True, text=True).stdout.strip())
'"#;
    assert_eq!(sh(&*sb.sandbox, python).await, "8 child");
    let unshare = run(&*sb.sandbox, "unshare -U true").await;
    assert!(!unshare.status.success(), "a new user namespace was created");
    assert!(unshare.stderr_str().contains("Operation not permitted"), "{}", unshare.stderr_str());
}

#[cfg(target_arch = "x86_64")]
#[tokio::test]
async fn system_calls_of_another_abi_kill_the_process() {
    let sb = start("seccomp-abi").await;
    // An x32 getpid: without the filter ENOSYS (or the pid), with it SIGSYS.
    let x32 = "python3 -c 'import ctypes; ctypes.CDLL(None).syscall(0x40000000 | 39)'; echo $?";
    assert_eq!(sh(&*sb.sandbox, x32).await, "159", "not killed by SIGSYS");
    // An i386 getpid through int 0x80, from executable memory.
    let i386 = r#"python3 -c '
import ctypes, mmap
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(b"\xb8\x14\x00\x00\x00\xcd\x80\xc3")
ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))()
'; echo $?"#;
    let status = sh(&*sb.sandbox, i386).await;
    // 139 (SIGSEGV): a kernel without i386 emulation has no such calls at all.
    assert!(status == "159" || status == "139", "not killed by SIGSYS: {status}");
}
