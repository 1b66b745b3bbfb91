//! Fencing a node's late writes by lease epoch. A node cut off from the
//! database longer than a lease lasts (a pause, a partition) goes on running
//! its turns in memory while another node takes their sessions over and
//! settles them; when it is back, its writes must not land over what the new
//! holder wrote.
//!
//! [`Leases`] knows, for each session whose lease this node holds, the epoch
//! it took it as. The journal tags every write with the epoch of its
//! session's lease *when it is queued* ([`Leases::epoch`]); the store commits
//! a session's tagged writes only while the lease row still names this node
//! with that epoch or a later one, and returns the sessions whose writes it
//! left out. Those are lost here ([`Leases::lose`]): every later write of
//! theirs is refused as well until what ran of them has stopped and the
//! lease is given up, and the engine hears of each once
//! ([`Leases::subscribe`]) and stops what runs of it here ([`stop_lost`]).
//!
//! A lease stops tagging the moment its release begins, before the release
//! flushes the journal: every write made under it is committed before the
//! lease row goes, so a release never refuses its own writes. Writes made
//! without a lease (no cluster, another node's session, a start's recovery)
//! are not fenced.

use crate::Engine;
use crate::runtime::Inner;
use protocol::ids::SessionId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, Weak};
use tokio::sync::broadcast;

/// Lost leases buffered for a slow listener (one that lags misses the
/// notice only: the writes stay refused whether or not it hears).
const LOST_BUFFER: usize = 256;
/// The epoch a lost lease's writes are tagged with: no lease row reaches it.
const LOST: i64 = i64::MAX;

/// The leases this node holds, as the journal tags writes with them.
pub struct Leases {
    held: Mutex<HashMap<SessionId, i64>>,
    /// Whether a lease was ever taken (one process alone never takes one:
    /// its writes skip the lookup).
    used: AtomicBool,
    lost: broadcast::Sender<SessionId>,
}

impl Default for Leases {
    fn default() -> Self {
        Self { held: Mutex::default(), used: AtomicBool::new(false), lost: broadcast::channel(LOST_BUFFER).0 }
    }
}

impl Leases {
    fn held(&self) -> MutexGuard<'_, HashMap<SessionId, i64>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The epoch the session's writes queued now are made under, if any.
    pub fn epoch(&self, session: SessionId) -> Option<i64> {
        if !self.used.load(Ordering::Relaxed) {
            return None;
        }
        self.held().get(&session).copied()
    }

    /// This node holds the session's lease as `epoch` (of two acquisitions
    /// racing, the later one — the larger epoch — is the row's). A lost
    /// lease stays lost until [`Self::forget`].
    pub fn hold(&self, session: SessionId, epoch: i64) {
        self.used.store(true, Ordering::Relaxed);
        let mut held = self.held();
        let at = held.entry(session).or_insert(epoch);
        *at = (*at).max(epoch);
    }

    /// The lease's release begins: later writes are not made under it. A
    /// lost lease's writes stay refused.
    pub fn unhold(&self, session: SessionId) {
        let mut held = self.held();
        if held.get(&session).is_some_and(|e| *e != LOST) {
            held.remove(&session);
        }
    }

    /// Nothing of the session runs here any more: whatever it held is gone.
    pub fn forget(&self, session: SessionId) {
        self.held().remove(&session);
    }

    /// The store refused these sessions' writes: another node holds their
    /// leases now. Their writes are refused from here on, and the engine is
    /// told of each (once).
    pub fn lose(&self, sessions: &[SessionId]) {
        let mut held = self.held();
        for session in sessions {
            let was = held.insert(*session, LOST);
            if was != Some(LOST) {
                tracing::warn!(%session, epoch = ?was, "another node holds this session's lease now: \
                     this node's writes to it are refused");
                let _ = self.lost.send(*session);
            }
        }
    }

    /// Sessions whose lease this node lost while it still wrote to them.
    pub fn subscribe(&self) -> broadcast::Receiver<SessionId> {
        self.lost.subscribe()
    }
}

/// Stops what runs here of each session whose lease another node took over
/// while this node was cut off (the store refused its writes to it).
pub(crate) async fn stop_lost(engine: Weak<Inner>, mut lost: broadcast::Receiver<SessionId>) {
    loop {
        let session = match lost.recv().await {
            Ok(session) => session,
            // A burst past the buffer: the missed sessions' writes stay
            // refused all the same; what runs of them here ends on its own.
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(inner) = engine.upgrade() else { return };
        let engine = Engine { inner };
        if let Some(epoch) = engine.stop_lost(session) {
            engine.release(session, epoch).await;
        }
    }
}

impl Engine {
    /// Stops what runs and waits of a session another node took over (its
    /// turns are that node's to settle); its history is read again next
    /// time. The lease to give up, when nothing of the session runs any more
    /// and its release has not begun already (else the run's end gives it up).
    fn stop_lost(&self, session: SessionId) -> Option<Option<i64>> {
        tracing::warn!(%session, "another node took this session over: what ran of it here is stopped");
        self.inner.histories.invalidate(session);
        self.inner.metrics.lease_lost();
        let mut slots = self.slots();
        let slot = slots.get_mut(&session)?;
        slot.lost = true;
        slot.stop();
        let release = slot.unused() && !slot.releasing;
        slot.releasing |= release;
        release.then_some(slot.lease)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_tagged_with_the_lease_held_when_they_are_queued() {
        let leases = Leases::default();
        let (session, other) = (SessionId::new(), SessionId::new());
        assert_eq!(leases.epoch(session), None, "no lease, no fence");
        leases.hold(session, 4);
        leases.hold(session, 3);
        assert_eq!(leases.epoch(session), Some(4), "an earlier acquisition answered late keeps the later epoch");
        assert_eq!(leases.epoch(other), None);
        leases.unhold(session);
        assert_eq!(leases.epoch(session), None, "a release in progress tags nothing");
        leases.hold(session, 5);
        assert_eq!(leases.epoch(session), Some(5));
    }

    #[test]
    fn a_lost_lease_refuses_every_later_write_until_forgotten_and_is_told_once() {
        let leases = Leases::default();
        let mut lost = leases.subscribe();
        let session = SessionId::new();
        leases.hold(session, 2);
        leases.lose(&[session]);
        leases.lose(&[session]);
        assert_eq!(lost.try_recv().ok(), Some(session));
        assert!(lost.try_recv().is_err(), "told once");
        assert_eq!(leases.epoch(session), Some(LOST));
        leases.unhold(session);
        leases.hold(session, 9);
        assert_eq!(leases.epoch(session), Some(LOST), "neither a release nor a new lease clears it");
        leases.forget(session);
        assert_eq!(leases.epoch(session), None);
    }
}
