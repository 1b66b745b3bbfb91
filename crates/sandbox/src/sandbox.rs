//! The two traits the rest of the server programs against: a [`Backend`]
//! creates sandboxes, a [`Sandbox`] runs commands and moves files. Both are
//! object-safe and used as `Arc<dyn …>`.

use crate::api::{DirEntry, ExecRequest, Limits, SandboxSpec, SandboxState, SpawnRequest};
use crate::client::{Execution, StdioProcess};
use crate::egress::BoxStream;
use crate::egress::intercept::LimitedSecret;
use crate::error::Result;
use crate::local::ProxyEndpoint;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One environment's sandbox: one set of namespaces (or one pod, one VM)
/// in which every command of every session runs and sees the others.
///
/// Every operation on a paused sandbox resumes it first.
#[async_trait]
pub trait Sandbox: Send + Sync {
    fn id(&self) -> &str;

    fn state(&self) -> SandboxState;

    fn limits(&self) -> Limits;

    /// Starts `/bin/sh -c command`; output streams from the returned handle.
    async fn exec(&self, request: ExecRequest) -> Result<Execution>;

    /// Starts a long-lived process with piped stdin and stdout.
    async fn spawn_stdio(&self, request: SpawnRequest) -> Result<StdioProcess>;

    /// Reads a file under `/workspace` (413 beyond the transfer limit).
    async fn read_file(&self, path: &str) -> Result<Vec<u8>>;

    /// Writes a file under `/workspace`, creating its parent directories.
    async fn write_file(&self, path: &str, data: Vec<u8>) -> Result<()>;

    async fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>>;

    /// Deletes a file, a symlink or a directory tree under `/workspace`.
    async fn delete(&self, path: &str) -> Result<()>;

    /// Creates a directory and its parents under `/workspace` (`mkdir -p`,
    /// with no process of its own).
    async fn make_dir(&self, path: &str) -> Result<()>;

    /// Adds variables to the environment of every later command.
    async fn set_env(&self, vars: BTreeMap<String, String>) -> Result<()>;

    /// Opens a TCP connection as the sandbox's network sees it: `localhost`
    /// is the sandbox's own loopback; anything else only as its network
    /// policy allows.
    async fn connect(&self, host: &str, port: u16) -> Result<BoxStream>;

    /// An HTTP proxy on the host through which the server's own clients
    /// reach what the sandbox reaches (environment-origin connections);
    /// `None` when the sandbox shares the host's network.
    async fn http_proxy(&self) -> Result<Option<ProxyEndpoint>>;

    /// The placeholder a process in the sandbox gets for a limited secret
    /// (`name`, its real `value`, the `hosts` it may be sent to), with the
    /// environment that process needs to send it through the egress proxy,
    /// which swaps the value in toward those hosts only.
    async fn bind_limited_secret(&self, name: &str, value: &str, hosts: &[String]) -> Result<LimitedSecret> {
        let _ = (name, value, hosts);
        Err(crate::Error::Unsupported("this sandbox backend cannot hold limited secrets".into()))
    }

    /// Freezes every process in the sandbox.
    async fn pause(&self) -> Result<()>;

    /// Thaws it; processes and files are as they were.
    async fn resume(&self) -> Result<()>;

    /// Gives the (paused) sandbox new mounts at the swaps' targets
    /// (`/workspace`, `/root`): overlays of their `lowers` (host directories,
    /// top first, immutable from now on) under empty uppers; the old mounts
    /// become read-only and are detached (see [`crate::layers`]).
    /// [`crate::Error::Busy`] while a process holds a file in one open for
    /// writing, and nothing changed.
    async fn remount(&self, swaps: &[crate::agent::remount::Swap]) -> Result<()> {
        let _ = swaps;
        Err(crate::Error::Unsupported("this sandbox backend cannot layer a workspace".into()))
    }

    /// Kills everything and releases the sandbox's resources. The
    /// environment's directory on the host is left as it is.
    async fn destroy(&self) -> Result<()>;
}

/// Creates sandboxes.
#[async_trait]
pub trait Backend: Send + Sync {
    /// A short name for logs and status (`"local"`).
    fn name(&self) -> &'static str;

    /// Builds and starts a sandbox; returns once it accepts commands.
    async fn create(&self, spec: SandboxSpec) -> Result<Arc<dyn Sandbox>>;
}
