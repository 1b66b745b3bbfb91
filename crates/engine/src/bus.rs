//! The session event bus: every event is written to the store first (which
//! assigns its ordered `event_id`) and then broadcast to live subscribers, so
//! a subscriber that falls behind or reconnects can always catch up from the
//! store with `Last-Event-ID`.

use crate::error::Result;
use protocol::event::{Event, EventBody};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use store::Store;
use tokio::sync::broadcast;
use uuid::Uuid;

/// Events buffered per session for live subscribers; a slower one lags and
/// re-reads from the store.
const CAPACITY: usize = 4096;

/// Publishes and fans out session events.
pub struct Bus {
    store: Arc<dyn Store>,
    // One channel per session that has (or had) subscribers or events since start.
    channels: Mutex<HashMap<Uuid, broadcast::Sender<Arc<Event>>>>,
}

impl Bus {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store, channels: Mutex::default() }
    }

    fn sender(&self, session_id: Uuid) -> broadcast::Sender<Arc<Event>> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        channels.entry(session_id).or_insert_with(|| broadcast::channel(CAPACITY).0).clone()
    }

    /// Persists `bodies` in order, then broadcasts them.
    pub async fn publish(&self, session_id: Uuid, bodies: Vec<EventBody>) -> Result<Vec<Arc<Event>>> {
        let events = self.store.append_events(session_id, bodies).await?;
        let sender = self.sender(session_id);
        let events: Vec<Arc<Event>> = events.into_iter().map(Arc::new).collect();
        for event in &events {
            // No receiver is fine: the event is in the store.
            let _ = sender.send(Arc::clone(event));
        }
        Ok(events)
    }

    /// Live events of a session from now on.
    pub fn subscribe(&self, session_id: Uuid) -> broadcast::Receiver<Arc<Event>> {
        self.sender(session_id).subscribe()
    }

    /// Forgets a deleted session's channel (its subscribers see the end).
    pub fn close(&self, session_id: Uuid) {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        channels.remove(&session_id);
    }
}
