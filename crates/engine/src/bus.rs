//! The session event bus. Each event gets its ordered `event_id` here and is
//! queued to the journal; once the journal has committed it, it is broadcast
//! to live subscribers (so an event a client saw survives a crash). A
//! subscriber that falls behind or reconnects catches up from the store
//! after a journal flush, so no event is ever skipped.
//!
//! In a cluster, events committed by other nodes reach this node's
//! subscribers too ([`Bus::follow`]): a notice says a session's events were
//! committed up to a sequence number, and the bus reads the ones its
//! subscribers have not had from the store. Sequence numbers are a hybrid
//! clock ([`crate::clock`]): the time in microseconds by the database's
//! clock, pushed past every number this node has seen, times 64 plus the
//! node's slot, so two nodes never hand out the same one.

use crate::clock::Clock;
use crate::error::Result;
use crate::journal::Journal;
use protocol::event::{Event, EventBody};
use protocol::ids::EventId;
use protocol::ids::SessionId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use store::cluster::notices::{Heard, Notice};
use store::{Store, Write};
use tokio::sync::broadcast;

/// Events buffered per session for live subscribers; a slower one lags and
/// re-reads from the store.
const CAPACITY: usize = 4096;

/// Events read from the store per catch-up query of another node's events.
const FOLLOW_BATCH: u32 = 500;

/// Publishes and fans out session events.
pub struct Bus {
    journal: Arc<Journal>,
    /// Hands out event sequence numbers.
    clock: Arc<Clock>,
    // One channel per session that has subscribers.
    channels: Arc<Channels>,
}

/// A session's live subscribers and the last event they were sent.
struct Channel {
    sender: broadcast::Sender<Arc<Event>>,
    last: i64,
}

type Channels = Mutex<HashMap<SessionId, Channel>>;

impl Channel {
    /// Sends `event` unless one at or after it was sent (another node's
    /// events read from the store may pass this node's own on their way).
    fn send(&mut self, event: &Arc<Event>) {
        let seq = event.event_id.seq();
        if seq > self.last {
            self.last = seq;
            // A receiver that went away in between is fine: the event is in the store.
            let _ = self.sender.send(Arc::clone(event));
        }
    }
}

/// Broadcasts a committed batch's events, in order, to their sessions' subscribers.
fn deliver(channels: &Channels, writes: &[Write]) {
    let mut channels = channels.lock().unwrap_or_else(|e| e.into_inner());
    for write in writes {
        let Write::Event { session_id, event } = write else { continue };
        let Some(channel) = channels.get_mut(session_id) else { continue };
        if channel.sender.receiver_count() == 0 {
            // A channel exists only while someone listens.
            channels.remove(session_id);
            continue;
        }
        channel.send(event);
    }
}

/// Live subscribers of every session.
fn subscribers(channels: &Channels) -> u64 {
    let channels = channels.lock().unwrap_or_else(|e| e.into_inner());
    channels.values().map(|channel| channel.sender.receiver_count() as u64).sum()
}

impl Bus {
    /// A bus continuing after the store's last event, broadcasting what
    /// `journal` commits. A crash can still lose events that were published
    /// but not committed (never delivered): the sequence restarts above the
    /// current time in microseconds, so their ids are never handed out again.
    /// Its live subscribers are the `metrics` gauge of event-stream subscribers.
    pub async fn new(store: &Arc<dyn Store>, journal: Arc<Journal>, metrics: &telemetry::Metrics) -> Result<Self> {
        let clock = Arc::new(Clock::default());
        clock.observe(store.max_event_seq().await?);
        let channels: Arc<Channels> = Arc::default();
        let sink = Arc::clone(&channels);
        journal.on_commit(Box::new(move |writes| deliver(&sink, writes)));
        let counted = Arc::downgrade(&channels);
        metrics.read(
            telemetry::Gauge::EventStreamSubscribers,
            Box::new(move || counted.upgrade().map_or(0, |c| subscribers(&c))),
        );
        Ok(Self { journal, clock, channels })
    }

    /// The clock that numbers events (a node sets its slot and the database's time on it).
    pub fn clock(&self) -> &Arc<Clock> {
        &self.clock
    }

    /// Queues `bodies` for the store, in order, committed once the caller's
    /// task next waits ([`Journal::commit_soon`]); each is broadcast once committed.
    pub fn publish(&self, session_id: SessionId, bodies: Vec<EventBody>) -> Vec<Arc<Event>> {
        let events = self.queue(session_id, bodies);
        self.journal.commit_soon();
        events
    }

    /// Commits what is queued once the caller's task next waits ([`Journal::commit_soon`]).
    pub fn commit_soon(&self) {
        self.journal.commit_soon();
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
            let seq = self.clock.next();
            let event = Arc::new(Event::new(EventId::from_seq(seq), body));
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
        (rx, self.clock.last())
    }

    /// Live events of a session, as they are committed. Another node's
    /// events may come from a little before (its clock's lead is unknown),
    /// so a subscriber picks the ones it waits for by their id or turn.
    pub fn subscribe(&self, session_id: SessionId) -> broadcast::Receiver<Arc<Event>> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        let channel = channels
            .entry(session_id)
            .or_insert_with(|| Channel { sender: broadcast::channel(CAPACITY).0, last: self.clock.recent() });
        channel.sender.subscribe()
    }

    /// Delivers the events other nodes commit, as `notices` tell of them,
    /// to this node's subscribers (read from `store`, in order). `own` is
    /// this node's slot: its own events are delivered as they commit.
    pub fn follow(self: &Arc<Self>, store: Arc<dyn Store>, mut notices: broadcast::Receiver<Heard>, own: i32) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let heard = notices.recv().await;
                let Some(bus) = weak.upgrade() else { return };
                let sessions = match heard {
                    Ok(Heard { from, notice: Notice::Events { session, seq } }) if from != Some(own) => {
                        bus.clock.observe(seq);
                        vec![session]
                    }
                    Ok(Heard { notice: Notice::Missed, .. }) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        bus.followed()
                    }
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                for session in sessions {
                    if let Err(e) = bus.catch_up(store.as_ref(), session).await {
                        tracing::warn!(%session, error = %e, "another node's events could not be read");
                    }
                }
            }
        });
    }

    /// Sessions with subscribers on this node.
    fn followed(&self) -> Vec<SessionId> {
        self.channels.lock().unwrap_or_else(|e| e.into_inner()).keys().copied().collect()
    }

    /// Sends a session's subscribers the stored events they have not had.
    async fn catch_up(&self, store: &dyn Store, session: SessionId) -> Result<()> {
        loop {
            let Some(last) = self.last_sent(session) else { return Ok(()) };
            let events = store.events_after(session, last, FOLLOW_BATCH).await?;
            let full = events.len() == FOLLOW_BATCH as usize;
            let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
            let Some(channel) = channels.get_mut(&session) else { return Ok(()) };
            for event in events {
                channel.send(&Arc::new(event));
            }
            if !full {
                return Ok(());
            }
        }
    }

    fn last_sent(&self, session: SessionId) -> Option<i64> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        let channel = channels.get(&session)?;
        if channel.sender.receiver_count() == 0 {
            channels.remove(&session);
            return None;
        }
        Some(channel.last)
    }

    /// Forgets a deleted session's channel (its subscribers see the end).
    pub fn close(&self, session_id: SessionId) {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        channels.remove(&session_id);
    }
}
