//! Server-sent event streams of a session: replay from the store after a
//! `Last-Event-ID`, then live events from the bus — falling back to the store
//! whenever a slow subscriber lags, so no event is ever skipped.

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::stream::{self, Stream, StreamExt};
use protocol::event::{Event, EventBody};
use protocol::ids::{SessionId, TurnId};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use store::Store;
use tokio::sync::broadcast::{self, error::RecvError};

/// Events read from the store per catch-up query.
const REPLAY_BATCH: u32 = 500;

/// When a finite stream ends.
#[derive(Debug, Clone)]
pub enum Until {
    /// Never: the standing stream.
    Forever,
    /// After the session reports idle or failed once this turn has ended.
    TurnEnds(TurnId),
}

/// A session's events in order: those stored after a sequence number
/// (when asked to catch up), then live ones from the bus, reading the store
/// again whenever the subscriber lags.
pub struct EventSource {
    store: Arc<dyn Store>,
    engine: engine::Engine,
    session_id: SessionId,
    rx: broadcast::Receiver<Arc<Event>>,
    /// The last sequence number delivered (or to start after).
    last: i64,
    backlog: std::collections::VecDeque<Arc<Event>>,
    /// Whether to read the store before live events.
    catch_up: bool,
}

impl EventSource {
    /// Events after `after` (stored ones first) when it is `Some`; else only
    /// those `rx` receives after sequence `floor`.
    pub fn new(
        app: &app::App,
        session_id: SessionId,
        (rx, floor): (broadcast::Receiver<Arc<Event>>, i64),
        after: Option<i64>,
    ) -> Self {
        Self {
            store: app.store.clone(),
            engine: app.engine.clone(),
            session_id,
            rx,
            last: after.unwrap_or(floor),
            backlog: Default::default(),
            catch_up: after.is_some(),
        }
    }

    /// The next event, or `None` once the bus is gone (or the store fails).
    pub async fn next(&mut self) -> Option<Arc<Event>> {
        let event = self.read().await?;
        self.last = self.last.max(event.event_id.seq());
        Some(event)
    }

    async fn read(&mut self) -> Option<Arc<Event>> {
        loop {
            if let Some(event) = self.backlog.pop_front() {
                return Some(event);
            }
            if self.catch_up {
                // Published events reach the store through the journal.
                if let Err(e) = self.engine.flush().await {
                    tracing::warn!(error = %e, "event replay could not flush the journal");
                    return None;
                }
                match self.store.events_after(self.session_id, self.last, REPLAY_BATCH).await {
                    Ok(events) if !events.is_empty() => {
                        self.backlog.extend(events.into_iter().map(Arc::new));
                        continue;
                    }
                    Ok(_) => self.catch_up = false,
                    Err(e) => {
                        tracing::warn!(error = %e, "event replay failed");
                        return None;
                    }
                }
            }
            match self.rx.recv().await {
                Ok(event) => {
                    if event.event_id.seq() > self.last {
                        return Some(event);
                    }
                }
                Err(RecvError::Lagged(_)) => self.catch_up = true,
                Err(RecvError::Closed) => return None,
            }
        }
    }
}

struct State {
    source: EventSource,
    until: Until,
    turn_ended: bool,
    done: bool,
}

impl State {
    fn note(&mut self, event: &Event) {
        if let Until::TurnEnds(turn_id) = &self.until {
            if event.body.ends_turn() && event.body.turn_id() == Some(*turn_id) {
                self.turn_ended = true;
            }
            if self.turn_ended && matches!(event.body, EventBody::SessionIdle { .. } | EventBody::SessionFailed { .. })
            {
                self.done = true;
            }
        }
    }
}

/// One SSE frame: the event's JSON and `type`, made once for the store and
/// every subscriber.
fn frame(event: &Event) -> SseEvent {
    let data = event.json().unwrap_or_else(|_| Arc::from("{}"));
    let mut frame = SseEvent::default().id(event.event_id.to_string()).data(data);
    if let Ok(Some(kind)) = event.kind() {
        frame = frame.event(kind);
    }
    frame
}

/// The SSE response for a session's events from `source`, ending as `until`
/// says, or without `[DONE]` when `stop` is cancelled (the server shuts down;
/// the client reconnects with `Last-Event-ID`).
pub fn events(
    source: EventSource,
    until: Until,
    stop: tokio_util::sync::CancellationToken,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let state = State { source, until, turn_ended: false, done: false };
    let body = stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        let event = state.source.next().await?;
        state.note(&event);
        Some((Ok::<_, Infallible>(frame(&event)), state))
    });
    let finite = body.chain(stream::once(async { Ok(SseEvent::default().data("[DONE]")) }));
    Sse::new(finite.take_until(stop.cancelled_owned())).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
