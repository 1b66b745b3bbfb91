//! The `local` backend: one sandbox is one set of Linux namespaces (user,
//! mount, pid, ipc, uts and net; a restricted network gets its egress
//! through the host's filtering proxy, an enabled one a veth pair with NAT
//! and host-side rules) whose PID 1
//! is the agent, with a private root, per-sandbox cgroups where the host
//! offers them and rlimits otherwise. Needs nothing installed: the agent is
//! this same executable (`/proc/self/exe sandbox-agent` by default).

mod cgroup;
mod dns;
mod freeze;
mod launch;
mod nat;
mod network;
mod pool;
mod remount;
mod sandbox;
mod system;
mod toolchain;

pub use cgroup::CgroupSupport;
pub use nat::{BLOCKED, Ipv4Cidr, NetworkConfig, remove_stale_rules};
pub use network::{EGRESS_PORT, ProxyEndpoint};
pub use sandbox::LocalSandbox;
pub use toolchain::Toolchain;

use crate::api::{NetworkPolicy, SandboxSpec};
use crate::error::Result;
use async_trait::async_trait;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How the local backend starts sandboxes.
#[derive(Debug, Clone)]
pub struct LocalConfig {
    /// The executable that becomes the agent. Default `/proc/self/exe`: the
    /// running server binary itself, even if its file was replaced since.
    pub agent_program: PathBuf,
    /// Its arguments. Default `["sandbox-agent"]` (the hidden subcommand of
    /// `rebyte` that calls [`crate::agent::main`]).
    pub agent_args: Vec<String>,
    /// What of the host is visible read-only.
    pub toolchain: Toolchain,
    /// How long a new sandbox may take to report ready.
    pub ready_timeout: Duration,
    /// Agents kept cloned and exec'd ahead of need, per network policy, so
    /// that a first use does not wait for them (0 turns this off).
    pub warm_agents: usize,
    /// Use cgroups where the host offers them (limits, freezing). Without,
    /// limits fall back to rlimits and pause to SIGSTOP/SIGCONT.
    pub use_cgroups: bool,
    /// Addresses and allowed ranges of `enabled` sandboxes (veth + NAT).
    pub network: NetworkConfig,
}

impl Default for LocalConfig {
    fn default() -> Self {
        LocalConfig {
            agent_program: PathBuf::from("/proc/self/exe"),
            agent_args: vec!["sandbox-agent".into()],
            toolchain: Toolchain::detect(),
            ready_timeout: Duration::from_secs(10),
            warm_agents: 1,
            use_cgroups: true,
            network: NetworkConfig::default(),
        }
    }
}

impl LocalConfig {
    /// The default configuration with another agent executable (tests use
    /// the crate's `rebyte-sandbox-agent` binary).
    pub fn with_agent(program: impl Into<PathBuf>, args: Vec<String>) -> Self {
        LocalConfig { agent_program: program.into(), agent_args: args, ..Default::default() }
    }
}

/// Creates sandboxes on this machine.
pub struct LocalBackend {
    config: Arc<LocalConfig>,
    cgroups: Arc<CgroupSupport>,
    pool: Arc<pool::Pool>,
}

impl LocalBackend {
    /// Detects the host's cgroup support once.
    pub fn new(config: LocalConfig) -> Self {
        let cgroups = Arc::new(if config.use_cgroups { CgroupSupport::detect() } else { CgroupSupport::disabled() });
        let pool = Arc::new(pool::Pool::new(config.warm_agents, Arc::clone(&cgroups)));
        LocalBackend { config: Arc::new(config), cgroups, pool }
    }

    /// Fills the warm pool for `network` now (e.g. at server start);
    /// otherwise it fills after the first sandbox with that policy.
    pub async fn prewarm(&self, network: NetworkPolicy) -> Result<()> {
        let (pool, config) = (self.pool.clone(), self.config.clone());
        tokio::task::spawn_blocking(move || pool.fill(&config, network))
            .await
            .map_err(|e| crate::Error::Create(format!("prewarm: {e}")))?
    }

    /// How many warm agents wait for `network`.
    pub fn warm_agents(&self, network: NetworkPolicy) -> usize {
        self.pool.count(network)
    }

    /// What the host offers for limits and pausing, and why not.
    pub fn cgroups(&self) -> &CgroupSupport {
        &self.cgroups
    }

    /// Like [`crate::Backend::create`], with the concrete type.
    pub async fn create_local(&self, spec: SandboxSpec) -> Result<Arc<LocalSandbox>> {
        launch::launch(&self.config, &self.cgroups, &self.pool, spec).await.map(Arc::new)
    }
}

#[async_trait]
impl crate::Backend for LocalBackend {
    fn name(&self) -> &'static str {
        "local"
    }

    async fn create(&self, spec: SandboxSpec) -> Result<Arc<dyn crate::Sandbox>> {
        Ok(self.create_local(spec).await?)
    }
}
