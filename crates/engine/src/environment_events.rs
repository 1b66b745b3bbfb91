//! Tells the sessions attached to an environment of its sandbox's pauses and
//! resumes: `agent.session.environment.suspended` when an idle sandbox is
//! paused, `agent.session.environment.connected` (with no turn) when its next
//! use resumes it — one event on the stream of every session on the
//! environment (its owner and those that reference it), in the order the
//! changes happened. The changes come from [`Environments::changes`] on the
//! node that runs the sandbox, after the environment's status is stored.

use crate::bus::Bus;
use crate::environments::{Change, ChangeKind, Environments};
use protocol::event::{EnvironmentState, EventBody};
use protocol::ids::SessionId;
use std::sync::Arc;
use store::Store;
use tokio::sync::broadcast::error::RecvError;

/// Announces `envs`' changes on the sessions' streams (through `bus`, which
/// stores them) until `envs` is dropped.
pub fn follow(envs: &Environments, store: Arc<dyn Store>, bus: Arc<Bus>) {
    let mut changes = envs.changes();
    tokio::spawn(async move {
        loop {
            match changes.recv().await {
                Ok(change) => announce(store.as_ref(), &bus, &change).await,
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "environment changes were not announced to their sessions");
                }
                Err(RecvError::Closed) => return,
            }
        }
    });
}

/// One change's event on each session attached to its environment.
async fn announce(store: &dyn Store, bus: &Bus, change: &Change) {
    let sessions = match store.environment_sessions(&change.org_id, &change.env_id).await {
        Ok(sessions) => sessions,
        Err(e) => {
            tracing::warn!(environment = %change.env_id, error = %e, "an environment's sessions could not be read");
            return;
        }
    };
    for session_id in sessions {
        bus.publish(session_id, vec![event(change, session_id)]);
    }
}

/// The event telling `session_id` of `change`.
pub fn event(change: &Change, session_id: SessionId) -> EventBody {
    let status = match change.kind {
        ChangeKind::Suspended => "suspended",
        ChangeKind::Resumed => "connected",
    };
    let environment = EnvironmentState {
        id: change.env_id.clone(),
        status: status.into(),
        kind: "openai_hosted".into(),
        error: None,
        setup: None,
    };
    match change.kind {
        ChangeKind::Suspended => EventBody::EnvironmentSuspended { session_id, turn_id: None, environment },
        ChangeKind::Resumed => EventBody::EnvironmentConnected { session_id, turn_id: None, environment },
    }
}
