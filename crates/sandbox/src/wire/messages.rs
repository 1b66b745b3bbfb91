//! The JSON headers carried by frames: requests, replies, process exits, the
//! agent's hello and the local backend's init configuration.

use crate::api::DirEntry;
use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped on any incompatible change; the host refuses a different agent.
pub const PROTOCOL_VERSION: u32 = 1;

/// Host → agent requests. Each gets exactly one [`Reply`] with the same id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Start a process; the id then names its output, stdin, acks and exit.
    Exec(ProcessSpec),
    /// Signal a process's whole process group (default SIGKILL).
    Kill {
        process: u32,
        signal: Option<i32>,
    },
    ReadFile {
        path: String,
        max_bytes: u64,
    },
    /// The frame's data is the content.
    WriteFile {
        path: String,
        max_bytes: u64,
    },
    ListDir {
        path: String,
    },
    /// Removes a file, a symlink or a directory tree.
    Delete {
        path: String,
    },
    /// Creates a directory and its parents; one that exists is no error.
    MakeDir {
        path: String,
    },
    /// Merges variables into the environment of every later process.
    SetEnv {
        vars: BTreeMap<String, String>,
    },
    /// Stops every process in the sandbox (SIGSTOP), for hosts without a
    /// freezer; the agent keeps serving.
    Pause,
    /// Continues every process (SIGCONT) after [`Request::Pause`].
    Resume,
    /// Kills every process and exits.
    Shutdown,
}

/// A process to start: `/bin/sh -c command`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessSpec {
    pub command: String,
    /// Absolute, or relative to `/workspace`. Default `/workspace`.
    pub cwd: Option<String>,
    /// Added to (and overriding) the sandbox's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A pipe for stdin (fed by [`crate::wire::Kind::Stdin`] frames); else `/dev/null`.
    pub stdin: bool,
    /// Killed (process group, SIGKILL) after this long.
    pub timeout_ms: Option<u64>,
}

/// Agent → host: the answer to one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    Ok,
    /// The process runs with this pid (inside the sandbox's pid namespace).
    Started {
        pid: i32,
    },
    /// The frame's data is the file content.
    File {
        size: u64,
    },
    Entries {
        entries: Vec<DirEntry>,
    },
    Error(WireError),
}

/// An error crossing the wire, mapped back to [`Error`] on the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    pub kind: ErrorKind,
    pub message: String,
    /// Why a path is invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    PathEscape,
    InvalidPath,
    TooLarge,
    NotFound,
    Spawn,
    Io,
    BadRequest,
}

impl WireError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        WireError { kind, message: message.into(), reason: None, size: None, limit: None }
    }

    pub fn too_large(size: u64, limit: u64) -> Self {
        WireError {
            kind: ErrorKind::TooLarge,
            message: String::new(),
            reason: None,
            size: Some(size),
            limit: Some(limit),
        }
    }

    pub fn invalid_path(path: impl Into<String>, reason: impl Into<String>) -> Self {
        WireError { reason: Some(reason.into()), ..WireError::new(ErrorKind::InvalidPath, path) }
    }

    pub fn into_error(self) -> Error {
        match self.kind {
            ErrorKind::PathEscape => Error::PathEscape(self.message),
            ErrorKind::InvalidPath => {
                Error::InvalidPath { path: self.message, reason: self.reason.unwrap_or_default() }
            }
            ErrorKind::TooLarge => Error::TooLarge { size: self.size.unwrap_or(0), limit: self.limit.unwrap_or(0) },
            ErrorKind::NotFound => Error::NotFound(self.message),
            ErrorKind::Spawn => Error::Spawn(self.message),
            ErrorKind::Io => Error::io("inside the sandbox", std::io::Error::other(self.message)),
            ErrorKind::BadRequest => Error::Protocol(self.message),
        }
    }
}

/// Agent → host: how a process ended. Sent once all its output was sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exited {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub duration_us: u64,
    pub timed_out: bool,
    pub killed: bool,
}

/// Agent → host, first frame: the agent is serving.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub version: u32,
    pub pid: i32,
    /// Time from the init frame to ready (building the sandbox).
    pub setup_us: u64,
}

/// Agent → host: setup failed; the agent exits after sending it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fatal {
    pub message: String,
}

/// Host → agent (local backend): how to build the sandbox's private root.
/// Sent before the agent runs, so it costs no round trip.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitConfig {
    /// Applied in order: a target must come after any bind that contains it.
    pub binds: Vec<BindSpec>,
    /// Writable copies of host directories, mounted after the binds (a
    /// target may lie inside a bind, not the reverse).
    #[serde(default)]
    pub overlays: Vec<OverlaySpec>,
    /// Host files hidden behind an empty file or directory (secrets under
    /// /etc), applied after the binds and overlays.
    pub masks: Vec<String>,
    /// `(path, target)` symlinks recreated in the new root (`/bin -> usr/bin`).
    pub symlinks: Vec<(String, String)>,
    pub hostname: String,
    /// Bring `lo` up (the sandbox has its own network namespace).
    pub loopback: bool,
    /// Size of the private `/tmp` and `/dev/shm` tmpfs, bytes.
    pub tmp_bytes: u64,
    /// A tmpfs at `/root` when no home directory is bound there.
    pub tmpfs_home: bool,
    /// `(resource, limit)` pairs applied to the agent and inherited by every
    /// process: names as in [`crate::api::Rlimit`].
    pub rlimits: Vec<(crate::api::Rlimit, u64)>,
    /// The base environment of every process.
    pub env: BTreeMap<String, String>,
    /// Restricted network: listen on `127.0.0.1:port` in the sandbox and
    /// relay each connection to the proxy socket at `socket` (a path inside
    /// the sandbox).
    #[serde(default)]
    pub egress: Option<EgressInit>,
    /// Serve dials into the sandbox's loopback on a Unix socket created at
    /// this host path (before the root is built).
    #[serde(default)]
    pub dial_socket: Option<String>,
    /// The host path of the `cgroup.procs` every command joins (a child of
    /// the sandbox's pids cgroup with a lower limit, so the agent keeps
    /// headroom): opened before the root is built.
    #[serde(default)]
    pub command_cgroup: Option<String>,
    /// The agent's spawn thread is in that cgroup already: commands forked
    /// from it start there, and join it themselves only when it is full and
    /// the agent forks them from its headroom instead.
    #[serde(default)]
    pub command_thread: bool,
    /// Network access enabled: the `eth0` of a veth pair the host created in
    /// the agent's network namespace, configured before privileges drop.
    #[serde(default)]
    pub veth: Option<VethInit>,
}

/// The name (`comm`) of the agent's spawn thread, which forks its commands:
/// the host moves it into the sandbox's `commands` cgroup.
pub const SPAWN_THREAD: &str = "rebyte-spawn";

/// How the agent configures its end of an `enabled` sandbox's veth pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VethInit {
    /// The link's name in the sandbox (`eth0`).
    pub name: String,
    /// The sandbox's address, its prefix length and the default gateway
    /// (the host end).
    pub address: std::net::Ipv4Addr,
    pub prefix: u8,
    pub gateway: std::net::Ipv4Addr,
    /// A host file bound read-only over the sandbox's `/etc/resolv.conf`
    /// (following its symlinks inside the sandbox).
    pub resolv_conf: Option<String>,
}

/// Where the agent's egress port listens and relays to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressInit {
    pub port: u16,
    pub socket: String,
}

/// An overlayfs at `target`: the host directory `lower` (never changed)
/// under `upper`, which keeps every change (`work` is overlayfs's scratch
/// directory, on the same filesystem as `upper`). All paths are absolute
/// host paths without `:` `,` or `\\`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlaySpec {
    pub lower: String,
    pub upper: String,
    pub work: String,
    pub target: String,
}

/// One bind mount of a host path into the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindSpec {
    pub source: String,
    pub target: String,
    pub writable: bool,
    /// A device node (bound without `nodev`); the mount point is a file.
    #[serde(default)]
    pub device: bool,
}
