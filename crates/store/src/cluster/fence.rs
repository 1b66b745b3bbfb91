//! Fencing a node's writes by lease epoch. A node cut off from the database
//! longer than a lease lasts goes on running its turns in memory while
//! another node takes their sessions over and fails those turns; when it is
//! back, its journal must not write over what the new holder settled.
//!
//! The [`Fence`] knows the epoch of every lease this node took. The journal's
//! writer commits a session's turns, items, events and state only if the
//! session's lease row still names this node with that epoch or a later one
//! (this node taking the lease again while a write is on its way bumps the
//! epoch; epochs come from one sequence, so a later one is larger). The row
//! is read under a share lock in the batch's own statement, so the lease
//! cannot change hands while it commits. Otherwise those writes are dropped,
//! the lease is marked lost here, and the engine hears of it
//! ([`Fence::subscribe`]) and stops what it runs of that session. A session
//! whose lease this node never took (no cluster, a create, a start's
//! recovery) is not fenced.

use crate::Write;
use protocol::ids::SessionId;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::broadcast;

/// Lost leases buffered for a slow listener (one lagging re-reads nothing:
/// the writes stay fenced whether or not it hears).
const LOST_BUFFER: usize = 256;
/// An epoch no lease reaches: writes of a session already known lost are
/// dropped by the same statement, whatever its lease row says.
const NO_EPOCH: i64 = i64::MAX;

/// The leases this node holds, as the journal's writer checks them.
#[derive(Debug)]
pub(crate) struct Fence {
    /// This node's id, once it joined a cluster (nothing is fenced before).
    node: std::sync::OnceLock<String>,
    leases: Mutex<HashMap<SessionId, Held>>,
    lost: broadcast::Sender<SessionId>,
}

#[derive(Debug, Clone, Copy)]
struct Held {
    epoch: i64,
    /// Another node holds it now: every later write of the session is dropped.
    lost: bool,
}

/// A batch's fenced sessions, as the statement's parameters: each one with
/// the epoch its lease must still have.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Guards {
    /// The node whose leases they are.
    pub(crate) node: String,
    pub(crate) sessions: Vec<String>,
    pub(crate) epochs: Vec<i64>,
}

impl Default for Fence {
    fn default() -> Self {
        Self { node: Default::default(), leases: Mutex::default(), lost: broadcast::channel(LOST_BUFFER).0 }
    }
}

impl Fence {
    fn leases(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Held>> {
        self.leases.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This node joined a cluster as `node`.
    pub(crate) fn joined(&self, node: &str) {
        let _ = self.node.set(node.to_string());
    }

    /// This node took the session's lease as `epoch`. Epochs come from one
    /// sequence: of two acquisitions racing here, the later (larger) one is
    /// what the lease row has.
    pub(crate) fn took(&self, session: SessionId, epoch: i64) {
        let mut leases = self.leases();
        let held = leases.entry(session).or_insert(Held { epoch, lost: false });
        if epoch >= held.epoch {
            *held = Held { epoch, lost: false };
        }
    }

    /// This node gave up the lease it took as `epoch` (or lost it): the
    /// session is no longer fenced (a later acquisition is kept).
    pub(crate) fn released(&self, session: SessionId, epoch: i64) {
        let mut leases = self.leases();
        if leases.get(&session).is_some_and(|h| h.epoch == epoch) {
            leases.remove(&session);
        }
    }

    /// Forgets every lease (this node's leases were dropped or expired).
    pub(crate) fn clear(&self) {
        self.leases().clear();
    }

    /// The guards of the sessions `writes` touch that this node took leases of.
    pub(crate) fn guards(&self, writes: &[Write]) -> Guards {
        let leases = self.leases();
        let mut guards = Guards::default();
        let Some(node) = self.node.get() else { return guards };
        if leases.is_empty() {
            return guards;
        }
        guards.node.clone_from(node);
        let mut seen: Vec<SessionId> = Vec::new();
        for write in writes {
            let session = write.session_id();
            if seen.contains(&session) {
                continue;
            }
            seen.push(session);
            if let Some(held) = leases.get(&session) {
                guards.sessions.push(session.to_string());
                guards.epochs.push(if held.lost { NO_EPOCH } else { held.epoch });
            }
        }
        guards
    }

    /// The writer found these sessions' leases gone: their writes are
    /// dropped from now on, and the engine is told (once per lease).
    pub(crate) fn lose(&self, sessions: &[SessionId]) {
        let mut leases = self.leases();
        for session in sessions {
            if let Some(held) = leases.get_mut(session)
                && !std::mem::replace(&mut held.lost, true)
            {
                eprintln!("FENCE LOST {session} {}", held.epoch);
                tracing::warn!(%session, epoch = held.epoch, "another node holds this session's lease now: \
                     this node's writes to it are refused");
                let _ = self.lost.send(*session);
            }
        }
    }

    /// Sessions whose lease this node lost while it still wrote to them.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<SessionId> {
        self.lost.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::session::{SessionState, SessionStatus};

    fn state(session: SessionId) -> Write {
        let state = SessionState {
            status: SessionStatus::Idle,
            error: None,
            last_active_at: 0,
            usage: None,
            required_actions: Vec::new(),
        };
        Write::SessionState { org_id: "org".into(), session_id: session, state }
    }

    #[test]
    fn only_sessions_whose_lease_was_taken_are_guarded_once_each() {
        let fence = Fence::default();
        let (held, free) = (SessionId::new(), SessionId::new());
        fence.took(held, 7);
        assert_eq!(fence.guards(&[state(held)]), Guards::default(), "not a node of a cluster");
        fence.joined("n1");
        let guards = fence.guards(&[state(held), state(free), state(held)]);
        assert_eq!(guards, Guards { node: "n1".into(), sessions: vec![held.to_string()], epochs: vec![7] });
    }

    #[test]
    fn a_lost_lease_is_told_once_and_guarded_by_no_epoch_until_released() {
        let fence = Fence::default();
        fence.joined("n1");
        let mut lost = fence.subscribe();
        let session = SessionId::new();
        fence.took(session, 3);
        fence.lose(&[session]);
        fence.lose(&[session]);
        assert_eq!(lost.try_recv().ok(), Some(session));
        assert!(lost.try_recv().is_err(), "told once");
        assert_eq!(fence.guards(&[state(session)]).epochs, vec![NO_EPOCH]);
        fence.released(session, 2);
        assert_eq!(fence.guards(&[state(session)]).epochs, vec![NO_EPOCH], "another epoch's release keeps it");
        fence.released(session, 3);
        assert_eq!(fence.guards(&[state(session)]), Guards::default());
        fence.took(session, 9);
        assert_eq!(fence.guards(&[state(session)]).epochs, vec![9], "a new lease is guarded by its epoch");
        fence.took(session, 8);
        assert_eq!(fence.guards(&[state(session)]).epochs, vec![9], "an earlier acquisition answered late");
    }
}
