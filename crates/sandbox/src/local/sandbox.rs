//! A running local sandbox: the agent process (watched through its pidfd,
//! reaped, its cgroups removed when it ends) and the [`Sandbox`]
//! implementation on top of the agent connection.

use super::cgroup::{Enforced, SandboxCgroup};
use super::freeze::Freezer;
use super::network::{Network, ProxyEndpoint};
use crate::api::{DirEntry, ExecRequest, Limits, SandboxState, SpawnRequest};
use crate::client::{Connection, Execution, Resume, StdioProcess};
use crate::egress::intercept::LimitedSecret;
use crate::egress::{BoxStream, Egress};
use crate::error::{Error, Result};
use crate::sandbox::Sandbox;
use crate::sys::{Spawned, pidfd_send_signal};
use crate::wire::Request;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The agent process of one sandbox, from the host's side.
pub(crate) struct AgentProcess {
    pid: i32,
    exec_status: OwnedFd,
    pidfd: Arc<OwnedFd>,
    pub cgroup: Option<Arc<SandboxCgroup>>,
    /// Becomes true once the agent was reaped and its cgroups removed.
    pub exited: watch::Receiver<bool>,
}

impl AgentProcess {
    /// Starts a task that reaps the agent when it exits, for whatever reason.
    pub fn watch(spawned: Spawned, cgroup: Option<SandboxCgroup>) -> AgentProcess {
        let pidfd = Arc::new(spawned.pidfd);
        let cgroup = cgroup.map(Arc::new);
        let (tx, exited) = watch::channel(false);
        let (fd, cg) = (pidfd.clone(), cgroup.clone());
        tokio::spawn(async move {
            if let Ok(afd) = crate::sys::async_pidfd(fd.clone()) {
                let _ = afd.readable().await;
            }
            let _ = tokio::task::spawn_blocking(move || {
                let _ =
                    nix::sys::wait::waitid(nix::sys::wait::Id::PIDFd(fd.as_fd()), nix::sys::wait::WaitPidFlag::WEXITED);
                if let Some(cg) = cg {
                    cg.remove();
                }
            })
            .await;
            let _ = tx.send(true);
        });
        AgentProcess { pid: spawned.pid, exec_status: spawned.exec_status, pidfd, cgroup, exited }
    }

    /// Why the agent's exec failed, if it did (once it has exited).
    pub fn exec_error(&self) -> Option<std::io::Error> {
        crate::sys::exec_error(&self.exec_status)
    }

    pub fn has_exited(&self) -> bool {
        *self.exited.borrow()
    }

    /// Kills the agent (and with it every process of the sandbox: it is
    /// PID 1 of their namespace) and waits until it is reaped.
    pub async fn kill_and_wait(&self) {
        self.kill();
        let mut rx = self.exited.clone();
        let _ = tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|e| *e)).await;
    }

    fn kill(&self) {
        if let Some(cg) = &self.cgroup {
            // Frozen tasks do not die until thawed.
            cg.thaw_now();
        }
        let _ = pidfd_send_signal(self.pidfd.as_fd(), libc::SIGKILL);
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        if self.has_exited() {
            return;
        }
        self.kill();
        // The watcher task may never run again (its runtime may be shutting
        // down): reap and clean up from a thread of our own.
        let (fd, cg) = (self.pidfd.clone(), self.cgroup.clone());
        std::thread::spawn(move || {
            let _ = nix::sys::wait::waitid(nix::sys::wait::Id::PIDFd(fd.as_fd()), nix::sys::wait::WaitPidFlag::WEXITED);
            if let Some(cg) = cg {
                cg.remove();
            }
        });
    }
}

/// The host's network, for sandboxes that share it.
static HOST_NETWORK: Egress = Egress {
    network: crate::api::NetworkPolicy::Enabled,
    domains: crate::egress::DomainPolicy { allowed: Vec::new(), blocked: Vec::new() },
    dial_socket: None,
    resume: None,
    secrets: None,
};

/// A sandbox on this machine. See [`Sandbox`].
pub struct LocalSandbox {
    id: String,
    conn: Arc<Connection>,
    process: AgentProcess,
    freezer: Arc<Freezer>,
    limits: Limits,
    enforced: Enforced,
    agent_setup: Duration,
    /// `None` on the host's network.
    network: Option<Network>,
    /// How to start the helper that remounts the workspace (the agent program).
    helper: Option<Arc<super::LocalConfig>>,
}

impl LocalSandbox {
    pub(crate) fn new(
        id: String,
        conn: Arc<Connection>,
        process: AgentProcess,
        limits: Limits,
        enforced: Enforced,
        agent_setup: Duration,
        network: Option<Network>,
    ) -> Self {
        let freezer = Arc::new(Freezer::new(id.clone(), conn.clone(), process.cgroup.clone(), process.exited.clone()));
        let network = network.map(|n| n.with_resume(freezer.clone()));
        LocalSandbox { id, conn, process, freezer, limits, enforced, agent_setup, network, helper: None }
    }

    pub(crate) fn with_helper(mut self, config: &Arc<super::LocalConfig>) -> Self {
        self.helper = Some(Arc::clone(config));
        self
    }

    /// The agent's pid on the host.
    pub fn agent_pid(&self) -> i32 {
        self.process.pid
    }

    /// How long the agent took, from its start to ready (mounts, pivot).
    pub fn agent_setup_time(&self) -> Duration {
        self.agent_setup
    }

    /// Whether memory and process-count limits are enforced by a cgroup
    /// (otherwise by per-process rlimits, if at all).
    pub fn cgroup_limits(&self) -> (bool, bool) {
        (self.enforced.memory, self.enforced.pids)
    }

    /// Whether a CPU quota (`Limits::cpu_millicores`) is enforced by a cgroup.
    pub fn cpu_quota_enforced(&self) -> bool {
        self.enforced.cpu
    }

    /// Resumes a paused sandbox; fails on a gone one.
    async fn ready(&self) -> Result<()> {
        self.freezer.ensure_running().await
    }

    fn resumer(&self) -> Option<Arc<dyn Resume>> {
        Some(self.freezer.clone())
    }
}

#[async_trait]
impl Sandbox for LocalSandbox {
    fn id(&self) -> &str {
        &self.id
    }

    fn state(&self) -> SandboxState {
        self.freezer.state()
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    async fn exec(&self, request: ExecRequest) -> Result<Execution> {
        self.ready().await?;
        self.conn.exec(request, self.resumer()).await
    }

    async fn spawn_stdio(&self, request: SpawnRequest) -> Result<StdioProcess> {
        self.ready().await?;
        self.conn.spawn_stdio(request, self.resumer()).await
    }

    async fn read_file(&self, path: &str) -> Result<Vec<u8>> {
        self.ready().await?;
        self.conn.read_file(path, self.limits.max_transfer_bytes).await
    }

    async fn write_file(&self, path: &str, data: Vec<u8>) -> Result<()> {
        self.ready().await?;
        self.conn.write_file(path, data, self.limits.max_transfer_bytes).await
    }

    async fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>> {
        self.ready().await?;
        self.conn.list_dir(path).await
    }

    async fn delete(&self, path: &str) -> Result<()> {
        self.ready().await?;
        self.conn.delete(path).await
    }

    async fn make_dir(&self, path: &str) -> Result<()> {
        self.ready().await?;
        self.conn.make_dir(path).await
    }

    async fn set_env(&self, vars: BTreeMap<String, String>) -> Result<()> {
        self.ready().await?;
        self.conn.request(&Request::SetEnv { vars }, Vec::new()).await.map(drop)
    }

    async fn connect(&self, host: &str, port: u16) -> Result<BoxStream> {
        match &self.network {
            Some(n) => Ok(n.egress.connect(host, port).await?),
            None => Ok(HOST_NETWORK.connect(host, port).await?),
        }
    }

    async fn http_proxy(&self) -> Result<Option<ProxyEndpoint>> {
        match &self.network {
            Some(n) => n.host_proxy().await.map(Some),
            None => Ok(None),
        }
    }

    async fn bind_limited_secret(&self, name: &str, value: &str, hosts: &[String]) -> Result<LimitedSecret> {
        match &self.network {
            Some(n) => n.bind_limited_secret(name, value, hosts),
            None => Err(Error::Unsupported(
                "a limited credential needs the environment's network access restricted or enabled".into(),
            )),
        }
    }

    async fn pause(&self) -> Result<()> {
        self.freezer.pause().await
    }

    async fn resume(&self) -> Result<()> {
        self.freezer.resume().await
    }

    async fn remount(&self, swaps: &[crate::agent::remount::Swap]) -> Result<()> {
        let Some(config) = &self.helper else {
            return Err(crate::Error::Unsupported("this sandbox cannot remount its workspace".into()));
        };
        super::remount::remount(config, self.process.pid, swaps).await
    }

    async fn destroy(&self) -> Result<()> {
        let _t = self.freezer.mark_gone().await;
        self.process.kill_and_wait().await;
        Ok(())
    }
}
