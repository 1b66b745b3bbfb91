//! Streaming a response: the turn's session events translated into the
//! Responses event sequence (`response.created` … `response.completed`) that
//! the `openai` client's stream helpers accumulate.

use super::render;
use crate::auth::Auth;
use crate::error::ApiResult;
use crate::sse::EventSource;
use crate::state::AppState;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::stream::{self, Stream, StreamExt};
use protocol::event::{Event, EventBody};
use protocol::ids::TurnId;
use protocol::response::{self as view};
use protocol::session::SessionRecord;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

struct Translator {
    state: AppState,
    auth: Auth,
    session: SessionRecord,
    turn_id: TurnId,
    source: EventSource,
    background: bool,
    sequence: u64,
    /// Events numbered up to this one are not sent (`starting_after`).
    skip_through: Option<u64>,
    pending: std::collections::VecDeque<Value>,
    started: bool,
    done: bool,
}

impl Translator {
    fn push(&mut self, mut event: Value) {
        event["sequence_number"] = json!(self.sequence);
        if self.skip_through.is_none_or(|last| self.sequence > last) {
            self.pending.push_back(event);
        }
        self.sequence += 1;
    }

    async fn snapshot(&self) -> Option<Value> {
        let (_, turn) = self.state.app.responses(&self.auth.org_id).get(self.turn_id).await.ok()??;
        render(&self.state, &self.auth, &self.session, &turn, self.background).await.ok()
    }

    /// Translates one session event of this turn.
    async fn translate(&mut self, event: &Event) {
        let body = &event.body;
        match body {
            EventBody::TurnInProgress { .. } => {
                if let Some(mut r) = self.snapshot().await {
                    // The store may already hold a later state: this event
                    // reports the moment the turn started.
                    r["status"] = json!("in_progress");
                    r["output"] = json!([]);
                    r["completed_at"] = Value::Null;
                    r["usage"] = Value::Null;
                    r["error"] = Value::Null;
                    self.push(json!({"type": "response.in_progress", "response": r}));
                }
            }
            EventBody::ItemAdded { output_index: Some(index), item, .. } => {
                if let Some(out) = view::output_item(item) {
                    let is_message = out["type"] == "message";
                    let id = out["id"].clone();
                    self.push(json!({"type": "response.output_item.added", "output_index": index, "item": out}));
                    if is_message {
                        self.push(json!({"type": "response.content_part.added", "item_id": id, "output_index": index,
                            "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}}));
                    }
                }
            }
            EventBody::OutputTextDelta { item_id, output_index, content_index, delta, .. } => {
                self.push(
                    json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": output_index,
                    "content_index": content_index, "delta": delta, "logprobs": []}),
                );
            }
            EventBody::OutputTextDone { item_id, output_index, content_index, text, .. } => {
                self.push(
                    json!({"type": "response.output_text.done", "item_id": item_id, "output_index": output_index,
                    "content_index": content_index, "text": text, "logprobs": []}),
                );
                self.push(json!({"type": "response.content_part.done", "item_id": item_id, "output_index": output_index,
                    "content_index": content_index, "part": {"type": "output_text", "text": text, "annotations": [], "logprobs": []}}));
            }
            EventBody::ReasoningSummaryPartAdded { item_id, output_index, summary_index, part, .. } => {
                self.push(json!({"type": "response.reasoning_summary_part.added", "item_id": item_id,
                    "output_index": output_index, "summary_index": summary_index, "part": part}));
            }
            EventBody::ReasoningSummaryTextDelta { item_id, output_index, summary_index, delta, .. } => {
                self.push(json!({"type": "response.reasoning_summary_text.delta", "item_id": item_id,
                    "output_index": output_index, "summary_index": summary_index, "delta": delta}));
            }
            EventBody::ReasoningSummaryTextDone { item_id, output_index, summary_index, text, .. } => {
                self.push(json!({"type": "response.reasoning_summary_text.done", "item_id": item_id,
                    "output_index": output_index, "summary_index": summary_index, "text": text}));
            }
            EventBody::ReasoningSummaryPartDone { item_id, output_index, summary_index, part, .. } => {
                self.push(json!({"type": "response.reasoning_summary_part.done", "item_id": item_id,
                    "output_index": output_index, "summary_index": summary_index, "part": part}));
            }
            EventBody::ItemDone { output_index, item, .. } => {
                if let Some(out) = view::output_item(item) {
                    self.push(json!({"type": "response.output_item.done", "output_index": output_index, "item": out}));
                }
            }
            EventBody::SessionRequiresAction { .. } if app::responses::waits_for_caller(body, self.turn_id) => {
                self.finish("response.completed").await;
            }
            EventBody::TurnCompleted { .. } => self.finish("response.completed").await,
            EventBody::TurnFailed { .. } | EventBody::TurnCancelled { .. } => self.finish("response.failed").await,
            _ => {}
        }
    }

    async fn finish(&mut self, kind: &str) {
        if let Some(r) = self.snapshot().await {
            self.push(json!({"type": kind, "response": r}));
        }
        self.done = true;
    }

    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(v) = self.pending.pop_front() {
                return Some(v);
            }
            if self.done {
                return None;
            }
            if !self.started {
                self.started = true;
                let mut created = self.snapshot().await?;
                created["output"] = json!([]);
                created["status"] = json!(if self.background { "queued" } else { "in_progress" });
                created["completed_at"] = Value::Null;
                created["usage"] = Value::Null;
                created["error"] = Value::Null;
                self.push(json!({"type": "response.created", "response": created}));
                continue;
            }
            match self.source.next().await {
                Some(event)
                    if event.body.turn_id() == Some(self.turn_id)
                        || matches!(event.body, EventBody::SessionRequiresAction { .. }) =>
                {
                    self.translate(&event).await
                }
                Some(_) => {}
                None => self.finish("response.failed").await,
            }
        }
    }
}

/// Where a response's event stream starts.
pub enum From {
    /// A new response: its events as they happen (`POST` with `stream: true`).
    Live(broadcast::Receiver<Arc<Event>>),
    /// A stored one (`GET` with `stream=true`): every event from its start,
    /// those after `starting_after` sent, then live ones if it still runs.
    Replay { starting_after: Option<u64>, created_at: i64 },
}

/// The SSE answer to `POST /v1/responses` with `stream: true`, and to
/// retrieving a response with `stream=true`.
pub async fn respond(
    state: AppState,
    auth: Auth,
    session: SessionRecord,
    turn_id: TurnId,
    from: From,
    background: bool,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let (source, skip_through) = match from {
        From::Live(rx) => (EventSource::new(&state.app, session.id, (rx, 0), None), None),
        From::Replay { starting_after, created_at } => {
            let live = state.app.engine.subscribe_now(session.id).await?;
            let after = engine::clock::seq_before(created_at);
            (EventSource::new(&state.app, session.id, live, Some(after)), starting_after)
        }
    };
    let stop = state.shutdown.clone();
    let translator = Translator {
        state,
        auth,
        session,
        turn_id,
        source,
        background,
        sequence: 0,
        skip_through,
        pending: Default::default(),
        started: false,
        done: false,
    };
    let body = stream::unfold(translator, |mut t| async move {
        let event = t.next().await?;
        let kind = event["type"].as_str().unwrap_or_default().to_string();
        Some((Ok::<_, Infallible>(SseEvent::default().event(kind).data(event.to_string())), t))
    });
    // Ends (the client may retrieve the response) when the server shuts down.
    let body = body.take_until(stop.cancelled_owned());
    Ok(Sse::new(body.boxed()).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
