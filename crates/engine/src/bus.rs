//! The session event bus. Each event gets its ordered `event_id` here and is
//! queued to the journal; once the journal has committed it, it is broadcast
//! to live subscribers (so an event a client saw survives a crash). A
//! subscriber that falls behind or reconnects catches up from the store
//! after a journal flush, so no event is ever skipped.

use crate::error::Result;
use crate::journal::Journal;
use protocol::event::{Event, EventBody};
use protocol::ids::EventId;
use protocol::ids::SessionId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use store::{Store, Write};
use tokio::sync::broadcast;

/// Events buffered per session for live subscribers; a slower one lags and
/// re-reads from the store.
const CAPACITY: usize = 4096;

/// Publishes and fans out session events.
pub struct Bus {
    journal: Arc<Journal>,
    /// The last event sequence number handed out.
    seq: AtomicI64,
    // One channel per session that has subscribers.
    channels: Arc<Channels>,
}

type Channels = Mutex<HashMap<SessionId, broadcast::Sender<Arc<Event>>>>;

/// Broadcasts a committed batch's events, in order, to their sessions' subscribers.
fn deliver(channels: &Channels, writes: &[Write]) {
    let mut channels = channels.lock().unwrap_or_else(|e| e.into_inner());
    for write in writes {
        let Write::Event { session_id, event } = write else { continue };
        let Some(sender) = channels.get(session_id) else { continue };
        if sender.receiver_count() == 0 {
            // A channel exists only while someone listens.
            channels.remove(session_id);
            continue;
        }
        // A receiver that went away in between is fine: the event is in the store.
        let _ = sender.send(Arc::clone(event));
    }
}

/// Live subscribers of every session.
fn subscribers(channels: &Channels) -> u64 {
    let channels = channels.lock().unwrap_or_else(|e| e.into_inner());
    channels.values().map(|sender| sender.receiver_count() as u64).sum()
}

impl Bus {
    /// A bus continuing after the store's last event, broadcasting what
    /// `journal` commits. A crash can still lose events that were published
    /// but not committed (never delivered): the sequence restarts above the
    /// current time in microseconds, so their ids are never handed out again.
    /// Its live subscribers are the `metrics` gauge of event-stream subscribers.
    pub async fn new(store: &Arc<dyn Store>, journal: Arc<Journal>, metrics: &telemetry::Metrics) -> Result<Self> {
        let now_micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX / 2));
        let last = store.max_event_seq().await?.max(now_micros);
        let channels: Arc<Channels> = Arc::default();
        let sink = Arc::clone(&channels);
        journal.on_commit(Box::new(move |writes| deliver(&sink, writes)));
        let counted = Arc::downgrade(&channels);
        metrics.read(
            telemetry::Gauge::EventStreamSubscribers,
            Box::new(move || counted.upgrade().map_or(0, |c| subscribers(&c))),
        );
        Ok(Self { journal, seq: AtomicI64::new(last), channels })
    }

    /// Queues `bodies` for the store, in order, committed once the caller's
    /// task next waits ([`Journal::commit_soon`]); each is broadcast once committed.
    pub fn publish(&self, session_id: SessionId, bodies: Vec<EventBody>) -> Vec<Arc<Event>> {
        let events = self.queue(session_id, bodies);
        self.journal.commit_soon();
        events
    }

    /// Queues `bodies` and commits them (with everything queued before) on
    /// this thread, for a subscriber waiting on them (streamed text).
    pub fn publish_now(&self, session_id: SessionId, bodies: Vec<EventBody>) -> Vec<Arc<Event>> {
        let events = self.queue(session_id, bodies);
        self.journal.commit();
        events
    }

    /// Queues `bodies` without committing: the caller flushes next.
    pub fn queue(&self, session_id: SessionId, bodies: Vec<EventBody>) -> Vec<Arc<Event>> {
        // Ids are taken and queued under one lock, so the journal (and every
        // subscriber after it) sees a session's events in increasing id order.
        let order = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        let mut events = Vec::with_capacity(bodies.len());
        for body in bodies {
            let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
            let event = Arc::new(Event { event_id: EventId::from_seq(seq), body });
            self.journal.write(Write::Event { session_id, event: Arc::clone(&event) });
            events.push(event);
        }
        // Committed once this lock is released (delivery takes it).
        drop(order);
        events
    }

    /// Waits until every event published so far is in the store.
    pub async fn flush(&self) -> Result<()> {
        Ok(self.journal.flush().await?)
    }

    /// Live events of a session from now on: the receiver, and the last
    /// sequence number handed out when it was created. Events published
    /// before that can still arrive (they are broadcast once committed); a
    /// subscriber that wants only new ones skips those up to the number.
    pub fn subscribe_now(&self, session_id: SessionId) -> (broadcast::Receiver<Arc<Event>>, i64) {
        // Subscribed first: anything published after the number is read is received.
        let rx = self.subscribe(session_id);
        (rx, self.seq.load(Ordering::SeqCst))
    }

    /// Live events of a session, as they are committed.
    pub fn subscribe(&self, session_id: SessionId) -> broadcast::Receiver<Arc<Event>> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        channels.entry(session_id).or_insert_with(|| broadcast::channel(CAPACITY).0).subscribe()
    }

    /// Forgets a deleted session's channel (its subscribers see the end).
    pub fn close(&self, session_id: SessionId) {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        channels.remove(&session_id);
    }
}
