//! Plain data exchanged with a sandbox: command requests, exit statuses,
//! directory entries, the spec a backend builds a sandbox from, and limits.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The sandbox path that holds the environment's files.
pub const WORKSPACE: &str = "/workspace";

/// A shell command to run to completion: `/bin/sh -c command`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecRequest {
    pub command: String,
    /// Absolute, or relative to `/workspace` (the default).
    pub cwd: Option<String>,
    /// Added to the sandbox's environment for this command only.
    pub env: BTreeMap<String, String>,
    /// Written to the command's stdin, then closed; `None` gives `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// The command's process group is killed after this long.
    pub timeout: Option<Duration>,
}

impl ExecRequest {
    pub fn new(command: impl Into<String>) -> Self {
        ExecRequest { command: command.into(), ..Default::default() }
    }

    pub fn cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    pub fn stdin(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(data.into());
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// A long-lived process with piped stdin and stdout (an MCP server).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpawnRequest {
    pub command: String,
    pub cwd: Option<String>,
    pub env: BTreeMap<String, String>,
}

impl SpawnRequest {
    pub fn new(command: impl Into<String>) -> Self {
        SpawnRequest { command: command.into(), ..Default::default() }
    }

    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitStatus {
    /// The exit code, if it exited normally.
    pub code: Option<i32>,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    pub duration: Duration,
    /// Killed because its timeout passed.
    pub timed_out: bool,
    /// Killed on request ([`crate::Execution::kill`]).
    pub killed: bool,
}

impl ExitStatus {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirEntry {
    pub name: String,
    pub kind: FileKind,
    pub size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// The environment's network policy, fixed when the sandbox is created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NetworkPolicy {
    /// A private network namespace with only loopback.
    #[default]
    Disabled,
    /// The internet: a private network namespace with a veth pair to the
    /// host and NAT, whose traffic never reaches the host's own addresses,
    /// link-local, private or multicast ranges unless the operator allows
    /// them (`local::NetworkConfig`).
    Enabled,
    /// A private network namespace with only loopback, and an HTTP proxy at
    /// `127.0.0.1:3128` (in `HTTP_PROXY` and friends) that reaches the
    /// domains [`SandboxSpec::domains`] allows, from the host.
    Restricted,
}

impl NetworkPolicy {
    /// Whether the sandbox gets a network namespace of its own: every
    /// policy does (an enabled one is routed out of it with NAT).
    pub fn private_namespace(self) -> bool {
        true
    }
}

/// A per-process resource limit, for hosts without cgroup limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rlimit {
    Nproc,
    /// Private writable memory (heap, anonymous maps); unlike RLIMIT_AS it
    /// does not count address space merely reserved (V8, the JVM).
    Data,
    Fsize,
    Core,
}

/// Resource limits. Memory and process counts go to cgroups when the host
/// offers them (v2 or v1), else to rlimits; everything is best effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Memory of the whole sandbox (cgroup), or of each process (RLIMIT_DATA).
    pub memory_bytes: Option<u64>,
    /// Processes in the whole sandbox (cgroup pids), or RLIMIT_NPROC.
    pub max_processes: Option<u64>,
    /// Largest file a process may write (RLIMIT_FSIZE).
    pub max_file_bytes: Option<u64>,
    /// Largest file moved through `read_file` / `write_file` (413 beyond).
    pub max_transfer_bytes: u64,
    /// Size of the private `/tmp` (a tmpfs).
    pub tmp_bytes: u64,
    /// CPU time per wall-clock second in thousandths of one CPU (cgroup
    /// `cpu` quota; 1500 = one and a half CPUs). `None`: no quota, the
    /// sandbox still competes as one group for its fair share.
    pub cpu_millicores: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: Some(4 << 30),
            max_processes: Some(1024),
            max_file_bytes: Some(8 << 30),
            max_transfer_bytes: 32 << 20,
            tmp_bytes: 1 << 30,
            cpu_millicores: None,
        }
    }
}

/// What a backend builds one sandbox from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSpec {
    /// Names the sandbox (cgroups, hostname): `[A-Za-z0-9_-]`, ≤ 64 chars.
    pub id: String,
    /// The environment's own host directory, bound read-write at `/workspace`.
    pub workspace: PathBuf,
    /// A host directory bound read-write at `/root` (so `pip install --user`
    /// and `npm install -g` survive a restart); `None` gives a tmpfs.
    pub home: Option<PathBuf>,
    pub network: NetworkPolicy,
    /// The domains a restricted network reaches.
    pub domains: crate::egress::DomainPolicy,
    /// A host directory that makes the system writable for this sandbox
    /// alone (system packages): overlays of the host's `/usr`, `/etc` …
    /// and a `/var` of its own keep their changes there, across restarts.
    /// `None` (the default, and cheaper): the host's system read-only.
    pub writable_system: Option<PathBuf>,
    /// The base environment of every command (the environment's `env`).
    pub env: BTreeMap<String, String>,
    pub limits: Limits,
    /// Host directories bound read-only at paths inside `/workspace`
    /// (`(host directory, sandbox path)`: an environment's skills at
    /// `/workspace/.agents/skills`); nothing in the sandbox can change them.
    pub read_only: Vec<(PathBuf, String)>,
    /// Immutable directories under the workspace, top first (the layers a
    /// fork or a template's snapshot left, see [`crate::layers`]): with any,
    /// `/workspace` is an overlay of them under `workspace` (where changes
    /// go) and its work directory `workspace_work`; without, `workspace` is
    /// bound as it is.
    pub workspace_lowers: Vec<PathBuf>,
    pub workspace_work: Option<PathBuf>,
    /// The same for `/root` over `home` (which must then be set).
    pub home_lowers: Vec<PathBuf>,
    pub home_work: Option<PathBuf>,
}

impl SandboxSpec {
    pub fn new(id: impl Into<String>, workspace: impl Into<PathBuf>) -> Self {
        SandboxSpec {
            id: id.into(),
            workspace: workspace.into(),
            home: None,
            network: NetworkPolicy::Disabled,
            domains: Default::default(),
            writable_system: None,
            env: BTreeMap::new(),
            limits: Limits::default(),
            read_only: Vec::new(),
            workspace_lowers: Vec::new(),
            workspace_work: None,
            home_lowers: Vec::new(),
            home_work: None,
        }
    }
}

/// Where a sandbox is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxState {
    Running,
    /// Every process is frozen; the next use resumes it.
    Paused,
    /// Destroyed on request, or its agent died.
    Gone,
}
