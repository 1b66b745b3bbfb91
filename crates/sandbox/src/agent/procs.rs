//! The agent's child processes: spawning `/bin/sh -c` in its own process
//! group, output flow control, stdin feeding, timeouts, kills, and reaping
//! (as PID 1 it also reaps every orphan in the sandbox).

use crate::paths::cwd_path;
use crate::wire::{ErrorKind, Exited, ProcessSpec, WireError};
use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use std::collections::{BTreeMap, HashMap};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Output bytes a process may have in flight before the host acks them;
/// beyond it the agent stops reading its pipes, so the process blocks
/// instead of the host buffering without bound.
pub(super) const WINDOW: u64 = 1 << 20;

/// An ack of this many bytes means the host stopped listening: drop output.
pub(super) const DETACH: u64 = u64::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stream {
    Stdout,
    Stderr,
}

pub(super) struct Proc {
    pub pid: Pid,
    started: Instant,
    deadline: Option<Instant>,
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
    pub stdin: Option<OwnedFd>,
    pub stdin_buf: Vec<u8>,
    stdin_eof: bool,
    unacked: u64,
    pub detached: bool,
    timed_out: bool,
    killed: bool,
}

impl Proc {
    /// Whether its output pipes may be read now (flow control).
    pub fn window_open(&self) -> bool {
        self.detached || self.unacked < WINDOW
    }

    pub fn sent(&mut self, n: usize) {
        self.unacked += n as u64;
    }

    pub fn pipe(&mut self, stream: Stream) -> &mut Option<OwnedFd> {
        match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        }
    }

    /// Closes stdin once everything queued is written and the host said EOF.
    pub fn settle_stdin(&mut self) {
        if self.stdin_eof && self.stdin_buf.is_empty() {
            self.stdin = None;
        }
    }
}

#[derive(Default)]
pub(super) struct Procs {
    pub map: HashMap<u32, Proc>,
    pub by_pid: HashMap<i32, u32>,
    /// Pipes of exited commands still held open by their background
    /// children: drained and discarded, so those children never get SIGPIPE.
    pub orphans: Vec<OwnedFd>,
    pub env: BTreeMap<String, String>,
    /// The `cgroup.procs` every command joins before it runs (see
    /// [`crate::wire::InitConfig::command_cgroup`]).
    pub command_cgroup: Option<std::fs::File>,
    /// The thread commands are forked from, when there is one.
    pub spawner: Option<super::spawner::Spawner>,
    /// That thread is in the commands' cgroup already
    /// ([`crate::wire::InitConfig::command_thread`]).
    pub command_thread: bool,
}

impl Procs {
    pub fn spawn(&mut self, id: u32, spec: &ProcessSpec) -> Result<i32, WireError> {
        if self.map.contains_key(&id) {
            return Err(WireError::new(ErrorKind::BadRequest, format!("process id {id} is in use")));
        }
        let cwd = cwd_path(spec.cwd.as_deref());
        let mut child = self.start(spec, &cwd).map_err(|e| {
            let msg = if e.kind() == std::io::ErrorKind::NotFound && !std::path::Path::new(&cwd).is_dir() {
                format!("working directory {cwd} does not exist")
            } else {
                e.to_string()
            };
            WireError::new(ErrorKind::Spawn, msg)
        })?;
        let pid = Pid::from_raw(child.id() as i32);
        let stdout = child.stdout.take().map(OwnedFd::from).map(nonblocking);
        let stderr = child.stderr.take().map(OwnedFd::from).map(nonblocking);
        let stdin = child.stdin.take().map(OwnedFd::from).map(nonblocking);
        // The child is reaped by `reap` (waitpid(-1)), not through `child`.
        drop(child);
        let started = Instant::now();
        let proc = Proc {
            pid,
            started,
            deadline: spec.timeout_ms.map(|ms| started + Duration::from_millis(ms)),
            stdout,
            stderr,
            stdin,
            stdin_buf: Vec::new(),
            stdin_eof: false,
            unacked: 0,
            detached: false,
            timed_out: false,
            killed: false,
        };
        self.by_pid.insert(pid.as_raw(), id);
        self.map.insert(id, proc);
        Ok(pid.as_raw())
    }

    /// `/bin/sh -c` for `spec`, without its cgroup.
    fn command(&self, spec: &ProcessSpec, cwd: &str) -> Command {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(&spec.command)
            .current_dir(cwd)
            .env_clear()
            .envs(&self.env)
            .envs(&spec.env)
            .process_group(0)
            .stdin(if spec.stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        crate::sys::unblock_signals_on_spawn(&mut cmd);
        cmd
    }

    /// Starts the command in the commands' cgroup: forked by the spawn
    /// thread, which is in it already when the host put it there; otherwise,
    /// or when that cgroup is full (a fork bomb: the agent's headroom is for
    /// the command that stops it), forked here and joining it as it starts.
    fn start(&self, spec: &ProcessSpec, cwd: &str) -> std::io::Result<std::process::Child> {
        let join = |cmd: &mut Command| {
            if let Some(procs) = &self.command_cgroup {
                crate::sys::join_cgroup_on_spawn(cmd, std::os::fd::AsRawFd::as_raw_fd(procs));
            }
        };
        let placed = self.command_thread && self.spawner.is_some();
        let mut cmd = self.command(spec, cwd);
        if !placed {
            join(&mut cmd);
        }
        let spawned = match &self.spawner {
            Some(spawner) => spawner.spawn(cmd),
            None => cmd.spawn(),
        };
        match spawned {
            Err(e) if placed && e.raw_os_error() == Some(libc::EAGAIN) => {
                let mut cmd = self.command(spec, cwd);
                join(&mut cmd);
                cmd.spawn()
            }
            spawned => spawned,
        }
    }

    /// Signals the process group of process `id`. Unknown ids (already
    /// exited) are not an error: the caller's intent is met.
    pub fn kill(&mut self, id: u32, signal: Option<i32>) -> Result<(), WireError> {
        let Some(p) = self.map.get_mut(&id) else { return Ok(()) };
        let sig = match signal {
            None => Signal::SIGKILL,
            Some(n) => {
                Signal::try_from(n).map_err(|_| WireError::new(ErrorKind::BadRequest, format!("unknown signal {n}")))?
            }
        };
        if sig == Signal::SIGKILL || sig == Signal::SIGTERM {
            p.killed = true;
        }
        match killpg(p.pid, sig) {
            Ok(()) | Err(Errno::ESRCH) => Ok(()),
            Err(e) => Err(WireError::new(ErrorKind::Io, format!("kill: {e}"))),
        }
    }

    pub fn stdin_data(&mut self, id: u32, data: Vec<u8>) {
        if let Some(p) = self.map.get_mut(&id)
            && p.stdin.is_some()
        {
            p.stdin_buf.extend_from_slice(&data);
        }
    }

    pub fn stdin_eof(&mut self, id: u32) {
        if let Some(p) = self.map.get_mut(&id) {
            p.stdin_eof = true;
            p.settle_stdin();
        }
    }

    pub fn ack(&mut self, id: u32, n: u64) {
        if let Some(p) = self.map.get_mut(&id) {
            if n == DETACH {
                p.detached = true;
            } else {
                p.unacked = p.unacked.saturating_sub(n);
            }
        }
    }

    /// Kills process groups whose timeout passed.
    pub fn enforce_deadlines(&mut self, now: Instant) {
        for p in self.map.values_mut() {
            if p.deadline.is_some_and(|d| d <= now) {
                p.deadline = None;
                p.timed_out = true;
                let _ = killpg(p.pid, Signal::SIGKILL);
            }
        }
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.map.values().filter_map(|p| p.deadline).min()
    }

    /// Reaps every exited child; returns the ids of tracked processes that
    /// ended, with their exit records.
    pub fn reap(&mut self) -> Vec<(u32, Exited)> {
        let mut done = Vec::new();
        loop {
            let (pid, code, signal) = match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) => (pid, Some(code), None),
                Ok(WaitStatus::Signaled(pid, sig, _)) => (pid, None, Some(sig as i32)),
                Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => break,
                Ok(_) | Err(Errno::EINTR) => continue,
                Err(_) => break,
            };
            let Some(id) = self.by_pid.remove(&pid.as_raw()) else { continue };
            if let Some(p) = self.map.get(&id) {
                let exited = Exited {
                    code,
                    signal,
                    duration_us: p.started.elapsed().as_micros() as u64,
                    timed_out: p.timed_out,
                    killed: p.killed,
                };
                done.push((id, exited));
            }
        }
        done
    }

    /// Forgets process `id`; its still-open pipes become orphans.
    pub fn remove(&mut self, id: u32) -> Option<Proc> {
        let mut p = self.map.remove(&id)?;
        self.orphans.extend(p.stdout.take());
        self.orphans.extend(p.stderr.take());
        Some(p)
    }
}

fn nonblocking(fd: OwnedFd) -> OwnedFd {
    if let Ok(flags) = fcntl(&fd, FcntlArg::F_GETFL) {
        let _ = fcntl(&fd, FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK));
    }
    fd
}
