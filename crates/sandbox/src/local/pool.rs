//! Warm agents: a few agents already cloned into fresh namespaces and
//! exec'd, blocked on their init frame, so that an environment's first use
//! pays only for its cgroup, its mounts and one round trip. Each sandbox
//! still gets namespaces of its own; the pool refills in the background.

use super::LocalConfig;
use super::launch::spawn_agent;
use crate::api::NetworkPolicy;
use crate::error::Result;
use crate::sys::{Spawned, pidfd_send_signal};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

/// An agent waiting for its init frame. Killed and reaped if dropped unused.
pub(crate) struct Pending {
    inner: Option<(Spawned, UnixStream)>,
}

impl Pending {
    pub fn new(spawned: Spawned, stream: UnixStream) -> Self {
        Pending { inner: Some((spawned, stream)) }
    }

    pub fn pid(&self) -> i32 {
        self.inner.as_ref().map_or(0, |(s, _)| s.pid)
    }

    /// Still alive (a dead one would fail its handshake).
    fn alive(&self) -> bool {
        let Some((s, _)) = &self.inner else { return false };
        let mut fds = [nix::poll::PollFd::new(s.pidfd.as_fd(), nix::poll::PollFlags::POLLIN)];
        matches!(nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO), Ok(0))
    }

    /// The agent and its socket, no longer killed on drop.
    pub fn into_parts(mut self) -> Option<(Spawned, UnixStream)> {
        self.inner.take()
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some((s, _)) = self.inner.take() {
            let _ = pidfd_send_signal(s.pidfd.as_fd(), libc::SIGKILL);
            let _ = nix::sys::wait::waitid(
                nix::sys::wait::Id::PIDFd(s.pidfd.as_fd()),
                nix::sys::wait::WaitPidFlag::WEXITED,
            );
        }
    }
}

/// Warm agents per network namespace kind (fixed at clone time; every
/// policy has a namespace of its own now, so one kind serves all: an
/// enabled sandbox's veth is added after the clone).
pub(crate) struct Pool {
    size: usize,
    // Held only to push or pop, never across an await or a clone.
    slots: Mutex<Vec<(NetworkPolicy, Pending)>>,
}

impl Pool {
    pub fn new(size: usize) -> Self {
        Pool { size, slots: Mutex::new(Vec::new()) }
    }

    /// The policy agents are cloned and kept under for `network`.
    fn kind(network: NetworkPolicy) -> NetworkPolicy {
        if network.private_namespace() { NetworkPolicy::Disabled } else { NetworkPolicy::Enabled }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<(NetworkPolicy, Pending)>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A live warm agent for `network`, if there is one.
    pub fn take(&self, network: NetworkPolicy) -> Option<Pending> {
        let network = Self::kind(network);
        loop {
            let taken = {
                let mut slots = self.slots();
                let i = slots.iter().position(|(n, _)| *n == network)?;
                slots.swap_remove(i).1
            };
            if taken.alive() {
                return Some(taken);
            }
        }
    }

    pub fn count(&self, network: NetworkPolicy) -> usize {
        let network = Self::kind(network);
        self.slots().iter().filter(|(n, _)| *n == network).count()
    }

    /// Tops the pool up for `network` on a blocking thread.
    pub fn refill(self: &Arc<Self>, config: &Arc<LocalConfig>, network: NetworkPolicy) {
        if self.size == 0 || self.count(network) >= self.size {
            return;
        }
        let (pool, config) = (self.clone(), config.clone());
        tokio::task::spawn_blocking(move || pool.fill(&config, network));
    }

    /// Tops the pool up for `network` now.
    pub fn fill(&self, config: &LocalConfig, network: NetworkPolicy) -> Result<()> {
        let network = Self::kind(network);
        while self.count(network) < self.size {
            let agent = spawn_agent(config, network)?;
            self.slots().push((network, agent));
        }
        Ok(())
    }
}
