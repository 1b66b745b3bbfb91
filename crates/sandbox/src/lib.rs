//! Sandboxes for environments: the [`Sandbox`] and [`Backend`] traits, the
//! `local` Linux-namespace backend, the in-sandbox [`agent`] and the
//! [`wire`] protocol between them, and [`apply_setup`] for an
//! environment's one-time initialization.
//!
//! # Layout
//!
//! - [`api`]: plain data (requests, statuses, specs, limits).
//! - [`sandbox`]: the traits.
//! - [`wire`]: frames and messages, transport-agnostic.
//! - [`client`]: the host end of the protocol (streams, kills, stdio pumps).
//! - [`egress`]: network policy, the filtering proxy, dials into a sandbox.
//! - [`local`]: namespaces, private root, cgroups; starts the agent.
//! - [`agent`]: PID 1 inside the sandbox, a single-threaded poll loop.
//! - [`setup`]: files, env, packages and setup commands, applied once.
//! - [`layers`]: copy-on-write workspaces (forks, snapshots) as overlay layers.
//! - `sys`: the only `unsafe` (raw syscalls), small and commented.
//!
//! Data flows host → agent as requests and agent → host as replies, output
//! chunks and exits; nothing here knows about HTTP, MCP or the store.

pub mod agent;
pub mod api;
pub mod client;
pub mod disk;
pub mod egress;
mod error;
pub mod layers;
pub mod local;
pub mod paths;
pub mod sandbox;
pub mod setup;
mod sys;
pub mod wire;

pub use api::{
    DirEntry, ExecRequest, ExitStatus, FileKind, Limits, NetworkPolicy, SandboxSpec, SandboxState, SpawnRequest,
    WORKSPACE,
};
pub use client::{ExecEvent, ExecOutput, Execution, Killer, ProcessHandle, StdioProcess};
pub use error::{Error, Result};
pub use local::{LocalBackend, LocalConfig};
pub use sandbox::{Backend, Sandbox};
pub use setup::{LogBuffer, Packages, SetupEvent, SetupFile, SetupLog, SetupSpec, apply_setup, apply_setup_observed};
