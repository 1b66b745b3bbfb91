//! Warm agents: a few agents already cloned into fresh namespaces and
//! exec'd, blocked on their init frame, so that an environment's first use
//! pays only for its cgroup, its mounts and one round trip. Each sandbox
//! still gets namespaces of its own; the pool refills in the background.
//!
//! A refill runs on a thread of its own at `SCHED_IDLE` (when the process
//! may raise a thread back, `CAP_SYS_NICE`): the clone into new namespaces
//! and the agent's exec then use only CPU time nothing else wants, so a
//! refill started by one environment's first use no longer competes with
//! that first use on a busy machine. An agent cloned so inherits the idle
//! policy and is put back to normal as it is taken. The refill also waits
//! [`REFILL_DELAY`] first: idle priority does not stop a clone's kernel work
//! from holding a CPU for a while once it has it (the `ready` write that
//! followed a take waited 2.7–3.2 ms for one, 0.5–0.7 ms with the wait), and
//! by then the first use that took the agent is mostly past.

use super::LocalConfig;
use super::launch::spawn_agent;
use crate::api::NetworkPolicy;
use crate::error::Result;
use crate::sys::{Spawned, pidfd_send_signal, set_idle_priority, set_normal_priority};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// How long a refill waits before it clones: past the first use that
/// emptied the slot (its sandbox start, `ready` write and first command).
const REFILL_DELAY: std::time::Duration = std::time::Duration::from_millis(10);

/// An agent waiting for its init frame. Killed and reaped if dropped unused.
pub(crate) struct Pending {
    inner: Option<(Spawned, UnixStream)>,
    /// Cloned at idle priority (a background refill's).
    idle: bool,
}

impl Pending {
    pub fn new(spawned: Spawned, stream: UnixStream) -> Self {
        Pending { inner: Some((spawned, stream)), idle: false }
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
    /// A refill's thread is running.
    filling: AtomicBool,
}

impl Pool {
    pub fn new(size: usize) -> Self {
        Pool { size, slots: Mutex::new(Vec::new()), filling: AtomicBool::new(false) }
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
                if taken.idle
                    && let Err(e) = set_normal_priority(taken.pid())
                {
                    tracing::warn!(error = %e, "a warm agent could not be put back to normal priority");
                }
                return Some(taken);
            }
        }
    }

    pub fn count(&self, network: NetworkPolicy) -> usize {
        let network = Self::kind(network);
        self.slots().iter().filter(|(n, _)| *n == network).count()
    }

    /// Tops the pool up for `network` on a thread of its own, at idle
    /// priority where that can be undone for the agents it clones.
    pub fn refill(self: &Arc<Self>, config: &Arc<LocalConfig>, network: NetworkPolicy) {
        if self.size == 0 || self.count(network) >= self.size || self.filling.swap(true, Ordering::SeqCst) {
            return;
        }
        let (pool, config) = (self.clone(), config.clone());
        let spawned = std::thread::Builder::new().name("rebyte-warm-agents".into()).spawn(move || {
            let idle = idle_is_reversible() && set_idle_priority().is_ok();
            // What follows a first use (its `ready` write, its first command) runs first.
            std::thread::sleep(REFILL_DELAY);
            if let Err(e) = pool.fill_as(&config, network, idle) {
                tracing::warn!(error = %e, "refilling the warm agents failed");
            }
            pool.filling.store(false, Ordering::SeqCst);
        });
        if spawned.is_err() {
            self.filling.store(false, Ordering::SeqCst);
        }
    }

    /// Tops the pool up for `network` now.
    pub fn fill(&self, config: &LocalConfig, network: NetworkPolicy) -> Result<()> {
        self.fill_as(config, network, false)
    }

    fn fill_as(&self, config: &LocalConfig, network: NetworkPolicy, idle: bool) -> Result<()> {
        let network = Self::kind(network);
        while self.count(network) < self.size {
            let mut agent = spawn_agent(config, network)?;
            agent.idle = idle;
            self.slots().push((network, agent));
        }
        Ok(())
    }
}

/// Whether a thread put at idle priority can be put back (probed once, on
/// a thread of its own): without it, refills run at normal priority, since
/// their agents could not leave the idle policy.
fn idle_is_reversible() -> bool {
    static REVERSIBLE: OnceLock<bool> = OnceLock::new();
    *REVERSIBLE.get_or_init(|| {
        std::thread::spawn(|| set_idle_priority().is_ok() && set_normal_priority(0).is_ok()).join().unwrap_or(false)
    })
}
