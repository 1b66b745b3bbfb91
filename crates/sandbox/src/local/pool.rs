//! Warm agents: a few agents already cloned into fresh namespaces, exec'd
//! and moved into cgroups of their own, blocked on their init frame, so that
//! an environment's first use pays only for its limits, its mounts and one
//! round trip. Each sandbox still gets namespaces and cgroups of its own
//! (renamed after it as it takes them); the pool refills in the background.
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
use super::cgroup::{CgroupSupport, Enforced, SandboxCgroup};
use super::launch::spawn_agent;
use crate::api::{Limits, NetworkPolicy};
use crate::error::{Error, Result};
use crate::sys::{Spawned, pidfd_send_signal, set_idle_priority, set_normal_priority};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// How long a refill waits before it clones: past the first use that
/// emptied the slot (its sandbox start, `ready` write and first command).
const REFILL_DELAY: std::time::Duration = std::time::Duration::from_millis(10);

/// An agent waiting for its init frame. Killed and reaped if dropped
/// unused, and its cgroup removed.
pub(crate) struct Pending {
    inner: Option<(Spawned, UnixStream)>,
    /// Cloned at idle priority (a background refill's).
    idle: bool,
    /// Its cgroup, once it is in one: a warm agent is moved into one named
    /// `pool.…` while it waits, off the first use's path.
    cgroup: Option<SandboxCgroup>,
}

impl Pending {
    pub fn new(spawned: Spawned, stream: UnixStream) -> Self {
        Pending { inner: Some((spawned, stream)), idle: false, cgroup: None }
    }

    /// Moves the agent into cgroups of its own named after `prefix`.
    fn enter_cgroup(&mut self, support: &CgroupSupport, prefix: &str) -> std::io::Result<()> {
        if let Some(mut cg) = SandboxCgroup::new(support, prefix) {
            let entered = cg.enter(self.pid());
            // Kept even if the move failed: removed with the agent.
            self.cgroup = Some(cg);
            entered?;
        }
        Ok(())
    }

    /// Gives the agent the sandbox `id`'s cgroup with `limits`: a warm
    /// agent's is renamed and limited (no move: it is in it already),
    /// otherwise one is made and the agent moved in now.
    pub fn claim_cgroup(&mut self, support: &CgroupSupport, id: &str, limits: &Limits) -> Result<Enforced> {
        if self.cgroup.is_none() {
            self.enter_cgroup(support, id).map_err(|e| Error::io("move the agent into its cgroup", e))?;
        } else if let Some(cg) = &mut self.cgroup {
            cg.rename_for(id);
        }
        Ok(self.cgroup.as_ref().map(|cg| cg.limit(limits)).unwrap_or_default())
    }

    pub fn cgroup(&self) -> Option<&SandboxCgroup> {
        self.cgroup.as_ref()
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

    /// The agent, its socket and its cgroup, no longer killed on drop.
    pub fn into_parts(mut self) -> Option<(Spawned, UnixStream, Option<SandboxCgroup>)> {
        let (spawned, stream) = self.inner.take()?;
        Some((spawned, stream, self.cgroup.take()))
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
        if let Some(cg) = self.cgroup.take() {
            cg.remove();
        }
    }
}

/// Warm agents per network namespace kind (fixed at clone time; every
/// policy has a namespace of its own now, so one kind serves all: an
/// enabled sandbox's veth is added after the clone).
pub(crate) struct Pool {
    size: usize,
    /// Where warm agents wait: cgroups of their own, entered as they are cloned.
    cgroups: Arc<CgroupSupport>,
    // Held only to push or pop, never across an await or a clone.
    slots: Mutex<Vec<(NetworkPolicy, Pending)>>,
    /// A refill's thread is running.
    filling: AtomicBool,
}

impl Pool {
    pub fn new(size: usize, cgroups: Arc<CgroupSupport>) -> Self {
        Pool { size, cgroups, slots: Mutex::new(Vec::new()), filling: AtomicBool::new(false) }
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
                    && let Err(e) = normal_priority(taken.pid())
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
            agent.enter_cgroup(&self.cgroups, "pool").map_err(|e| Error::io("move a warm agent into its cgroup", e))?;
            self.slots().push((network, agent));
        }
        Ok(())
    }
}

/// Puts every thread of the agent `pid` (its main and spawn threads: each
/// has a policy of its own) back at normal priority.
fn normal_priority(pid: i32) -> std::io::Result<()> {
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))?.flatten() {
        if let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) {
            set_normal_priority(tid)?;
        }
    }
    Ok(())
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
