//! The in-sandbox agent: PID 1 of the sandbox's pid namespace. It builds the
//! private root (local backend), drops every capability, installs the
//! seccomp filter every process it starts inherits, then serves the
//! [`crate::wire`] protocol on fd 3 with a single-threaded poll loop: runs
//! commands, streams their output, reaps every zombie, reads and writes
//! files and keeps long-lived processes. No async runtime, to stay small.
//!
//! Layout: `mounts` builds the root, `control` buffers the channel,
//! `procs` owns child processes, `files` the confined file operations,
//! `seccomp` the system-call filter, `serve` the loop that ties them together.

mod control;
mod files;
pub(crate) mod mounts;
mod netif;
mod procs;
mod relay;
pub mod remount;
mod seccomp;
mod serve;
mod spawner;

use crate::wire::{Fatal, Frame, Hello, InitConfig, Kind, PROTOCOL_VERSION};
use control::Control;
use std::time::Instant;

/// Entry point of the agent process (`rebyte sandbox-agent`, or the crate's
/// `rebyte-sandbox-agent` binary); never returns. Call it before starting
/// any async runtime or thread.
///
/// The control channel is fd 3 (the local backend's socket pair), or, with
/// `--listen ADDR` among the arguments, the first TCP connection accepted on
/// ADDR (a remote backend: a pod or VM whose agent the server dials; it
/// prints `listening on ADDR` first). The host speaks first with
/// [`InitConfig`]; empty `binds` skip building a root (the machine is the
/// sandbox).
pub fn main() -> ! {
    if let Some(n) = threads().filter(|n| *n > 1) {
        // SIGCHLD would go to other threads, capabilities would stay with them.
        eprintln!("rebyte sandbox agent: {n} threads; call agent::main before starting a runtime");
        std::process::exit(2);
    }
    crate::sys::close_fds_from(4);
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--remount") {
        remount::main(args.get(at + 1))
    }
    let listen = args.iter().position(|a| a == "--listen").and_then(|i| args.get(i + 1));
    let fd = match listen.map_or_else(crate::sys::take_control_fd, |addr| accept_one(addr)) {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("rebyte sandbox agent: {e}");
            std::process::exit(2);
        }
    };
    let mut ctl = match Control::new(fd) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rebyte sandbox agent: {e}");
            std::process::exit(2);
        }
    };
    // Before the init: the host moves it into the commands' cgroup meanwhile.
    let spawner = match spawner::Spawner::start() {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("rebyte sandbox agent: no spawn thread ({e}); commands are forked by the agent itself");
            None
        }
    };
    let init = ctl.read_blocking();
    // A warm agent may have waited long for its init: time the setup alone.
    let started = Instant::now();
    let init = match init {
        Ok(Some(frame)) if frame.kind == Kind::Init => frame.parse::<InitConfig>(),
        Ok(_) => std::process::exit(2),
        Err(e) => Err(e),
    };
    let result =
        init.map_err(|e| e.to_string()).and_then(|cfg| setup(&cfg, spawner.as_ref()).map(|started| (cfg, started)));
    match result {
        Ok((cfg, (relays, command_cgroup))) => {
            let hello = Hello {
                version: PROTOCOL_VERSION,
                pid: std::process::id() as i32,
                setup_us: started.elapsed().as_micros() as u64,
            };
            if let Ok(frame) = Frame::json(Kind::Hello, 0, &hello, Vec::new()) {
                ctl.send(&frame);
            }
            let procs = procs::Procs {
                env: cfg.env,
                command_cgroup,
                spawner,
                command_thread: cfg.command_thread,
                ..Default::default()
            };
            serve::run(ctl, procs, relays)
        }
        Err(message) => {
            if let Ok(frame) = Frame::json(Kind::Fatal, 0, &Fatal { message }, Vec::new()) {
                ctl.send(&frame);
                let _ = ctl.flush_blocking();
            }
            std::process::exit(1)
        }
    }
}

/// Drops every capability of the calling thread for good, after
/// `no_new_privs`, and installs the seccomp filter every child inherits.
fn lock_down(last_cap: u32) -> Result<(), String> {
    nix::sys::prctl::set_no_new_privs().map_err(|e| format!("no_new_privs: {e}"))?;
    crate::sys::drop_all_capabilities(last_cap).map_err(|e| format!("drop capabilities: {e}"))?;
    seccomp::install().map_err(|e| format!("seccomp filter: {e}"))
}

/// Serves the first connection on `addr`, for a remote backend.
fn accept_one(addr: &str) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::io::Write;
    let listener = std::net::TcpListener::bind(addr)?;
    let mut out = std::io::stdout();
    writeln!(out, "listening on {}", listener.local_addr()?)?;
    out.flush()?;
    let (stream, _) = listener.accept()?;
    stream.set_nodelay(true)?;
    Ok(stream.into())
}

fn threads() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|n| n.trim().parse().ok())
}

/// Builds the sandbox from the init config: dial socket, private root,
/// hostname, loopback, the veth, egress port, rlimits; then drops every capability
/// for good and installs the seccomp filter every child inherits.
fn setup(
    cfg: &InitConfig,
    spawner: Option<&spawner::Spawner>,
) -> Result<(relay::Relays, Option<std::fs::File>), String> {
    let mut relays = relay::Relays::default();
    if let Some(path) = &cfg.dial_socket {
        // At its host path, while the host tree is still visible.
        relays.listen_dial(path).map_err(|e| format!("dial socket {path}: {e}"))?;
    }
    // Likewise: the cgroup commands join, kept open for the agent's life.
    let command_cgroup = match &cfg.command_cgroup {
        Some(path) => Some(
            std::fs::OpenOptions::new().write(true).open(path).map_err(|e| format!("command cgroup {path}: {e}"))?,
        ),
        None => None,
    };
    let resolv_conf = cfg.veth.as_ref().map(netif::clone_resolv_conf).transpose()?.flatten();
    if !cfg.binds.is_empty() {
        mounts::build_root(cfg)?;
        nix::unistd::sethostname(&cfg.hostname).map_err(|e| format!("sethostname: {e}"))?;
    }
    if let Some(tree) = resolv_conf {
        netif::attach_resolv_conf(tree)?;
    }
    if std::process::id() != 1 {
        // Not PID 1 (a remote agent in a container that has its own init):
        // orphans of its commands still come to it to be reaped.
        nix::sys::prctl::set_child_subreaper(true).map_err(|e| format!("subreaper: {e}"))?;
    }
    if cfg.loopback {
        crate::sys::loopback_up().map_err(|e| format!("bring up lo: {e}"))?;
    }
    if let Some(veth) = &cfg.veth {
        netif::configure(veth)?;
    }
    if let Some(egress) = &cfg.egress {
        relays
            .listen_egress(egress.port, egress.socket.clone().into())
            .map_err(|e| format!("egress port {}: {e}", egress.port))?;
    }
    for (resource, limit) in &cfg.rlimits {
        use nix::sys::resource::{Resource, setrlimit};
        let r = match resource {
            crate::api::Rlimit::Nproc => Resource::RLIMIT_NPROC,
            crate::api::Rlimit::Data => Resource::RLIMIT_DATA,
            crate::api::Rlimit::Fsize => Resource::RLIMIT_FSIZE,
            crate::api::Rlimit::Core => Resource::RLIMIT_CORE,
        };
        setrlimit(r, *limit, *limit).map_err(|e| format!("setrlimit {resource:?}: {e}"))?;
    }
    let last_cap =
        std::fs::read_to_string("/proc/sys/kernel/cap_last_cap").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(40);
    nix::sys::prctl::set_dumpable(false).map_err(|e| format!("dumpable: {e}"))?;
    // Each thread holds its own privileges: the spawn thread drops its own.
    if let Some(spawner) = spawner {
        spawner.lock_down(move || lock_down(last_cap)).map_err(|e| format!("spawn thread: {e}"))?;
    }
    lock_down(last_cap)?;
    Ok((relays, command_cgroup))
}
