//! `Recorder`: writes one turn's progress — the turn row, its items, the
//! session's engine-owned state — and publishes the matching events, always
//! store first, then bus. It also counts what the turn did (its end, its tool
//! calls) in the server's metrics and logs the turn's start and end.

use crate::bus::Bus;
use crate::error::Result;
use crate::journal::Journal;
use protocol::event::{EventBody, SessionError};
use protocol::ids::SessionId;
use protocol::item::{Item, ItemStatus};
use protocol::session::{SessionRecord, SessionStatus, TokenUsage};
use protocol::turn::{Turn, TurnError, TurnStatus};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use store::Write;
use telemetry::{Metrics, ToolKind, ToolOutcome, TurnOutcome};

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// The turn error code (one the `openai` client knows) for a model failure.
pub fn model_error_code(e: &models::ModelError) -> &'static str {
    use models::ModelError as M;
    match e {
        M::UnknownModel { .. } => "resource_not_found",
        M::Config { .. } => "invalid_request",
        M::Status { status: 401 | 403, .. } => "authentication_error",
        M::Status { status: 404, .. } => "resource_not_found",
        M::Status { status: 429, .. } => "rate_limit_exceeded",
        M::Status { status: 400..=499, .. } => "invalid_request",
        M::Connect { .. } => "connection_failed",
        M::Timeout { .. } => "request_timeout",
        _ => "server_error",
    }
}

/// Adds one usage record to a running total.
pub fn add_usage(total: &mut Option<TokenUsage>, u: &models::Usage) {
    let t = total.get_or_insert_with(TokenUsage::default);
    t.input_tokens += u.input_tokens as i64;
    t.output_tokens += u.output_tokens as i64;
    t.input_tokens_details.cached_tokens += u.cached_tokens as i64;
    t.output_tokens_details.reasoning_tokens += u.reasoning_tokens as i64;
    t.total_tokens = t.input_tokens + t.output_tokens;
}

/// The recorder of one running turn.
pub struct Recorder {
    pub journal: Arc<Journal>,
    pub bus: Arc<Bus>,
    pub org_id: String,
    pub session: SessionRecord,
    pub turn: Turn,
    next_output_index: i64,
    /// The turn's output items in their latest form, in order (they join the
    /// session's history kept in memory when the turn ends).
    items: Vec<Item>,
    /// Where each item is in `items`, by id (an item is rewritten with each
    /// delta: a scan per write made a long turn quadratic).
    positions: HashMap<String, usize>,
    pub metrics: Arc<Metrics>,
    /// When the turn went in progress on this recorder (its duration's start).
    started: Option<Instant>,
}

impl Recorder {
    pub fn new(
        journal: Arc<Journal>,
        bus: Arc<Bus>,
        metrics: Arc<Metrics>,
        org_id: String,
        session: SessionRecord,
        turn: Turn,
    ) -> Self {
        Self {
            journal,
            bus,
            org_id,
            session,
            turn,
            next_output_index: 0,
            items: Vec::new(),
            positions: HashMap::new(),
            metrics,
            started: None,
        }
    }

    /// Continues a turn that already has `outputs` output items (a revived one).
    pub fn resume_at(&mut self, outputs: i64) {
        self.next_output_index = outputs;
    }

    /// The turn's items in their latest form, in order, taken out of the recorder.
    pub fn take_items(&mut self) -> Vec<Item> {
        self.positions.clear();
        std::mem::take(&mut self.items)
    }

    /// Counts a tool call whose item ended with `status`.
    pub fn tool_finished(&self, kind: ToolKind, status: ItemStatus) {
        let outcome = match status {
            ItemStatus::Completed => ToolOutcome::Completed,
            ItemStatus::Failed => ToolOutcome::Failed,
            ItemStatus::Incomplete | ItemStatus::InProgress => ToolOutcome::Incomplete,
        };
        self.metrics.tool_call(kind, outcome);
    }

    fn put_item(&mut self, item: &Item) {
        match self.positions.get(item.id()).and_then(|&at| self.items.get_mut(at)) {
            Some(existing) => *existing = item.clone(),
            None => {
                self.positions.insert(item.id().to_string(), self.items.len());
                self.items.push(item.clone());
            }
        }
        self.journal.write(Write::Item {
            org_id: self.org_id.clone(),
            session_id: self.session.id,
            item: item.clone(),
        });
    }

    fn put_turn(&self) {
        self.journal.write(Write::Turn { org_id: self.org_id.clone(), turn: self.turn.clone() });
    }

    fn put_state(&self) {
        self.journal.write(Write::SessionState {
            org_id: self.org_id.clone(),
            session_id: self.session.id,
            state: self.session.state(),
        });
    }

    fn sid(&self) -> SessionId {
        self.session.id
    }

    /// Publishes events of this session.
    pub async fn emit(&self, bodies: Vec<EventBody>) -> Result<()> {
        self.bus.publish(self.session.id, bodies);
        Ok(())
    }

    /// Publishes streamed output (text, command output) and commits it at
    /// once on this task: a subscriber is waiting for it.
    pub fn emit_now(&self, bodies: Vec<EventBody>) {
        self.bus.publish_now(self.session.id, bodies);
    }

    /// Stores a new output item and announces it; returns its output index.
    /// Stores an item of the session that is not an output of the turn (a
    /// function's result, which the caller sent): no output index, no
    /// `item.added`/`item.done` (the client's output items have no such member);
    /// `items.list` shows it.
    pub fn add_session_item(&mut self, item: Item) {
        self.put_item(&item);
    }

    pub async fn add_item(&mut self, item: Item) -> Result<i64> {
        let (index, added) = self.added(item);
        self.emit(vec![added]).await?;
        Ok(index)
    }

    /// Stores a new output item and announces it together with the first
    /// output `follow` makes of its index, committed at once (see [`Self::emit_now`]).
    pub fn add_item_now(&mut self, item: Item, follow: impl FnOnce(i64) -> Vec<EventBody>) -> i64 {
        let (index, added) = self.added(item);
        let mut events = vec![added];
        events.extend(follow(index));
        self.emit_now(events);
        index
    }

    fn added(&mut self, item: Item) -> (i64, EventBody) {
        let index = self.next_output_index;
        self.next_output_index += 1;
        self.put_item(&item);
        (index, EventBody::ItemAdded { session_id: self.sid(), turn_id: self.turn.id, output_index: Some(index), item })
    }

    /// Stores an item's final form and announces it done, with extra events first.
    pub async fn done_item(&mut self, item: Item, index: i64, mut before: Vec<EventBody>) -> Result<()> {
        self.put_item(&item);
        before.push(EventBody::ItemDone { session_id: self.sid(), turn_id: self.turn.id, output_index: index, item });
        self.emit(before).await
    }

    /// Adds an item that is complete from the start (added then done).
    pub async fn add_done_item(&mut self, item: Item) -> Result<()> {
        let index = self.add_item(item.clone()).await?;
        self.done_item(item, index, Vec::new()).await
    }

    /// Writes the turn's status and the session's, then the events.
    pub async fn set_status(
        &mut self,
        turn: TurnStatus,
        session: SessionStatus,
        actions: Vec<serde_json::Value>,
    ) -> Result<()> {
        let events = self.status_events(turn, session, actions);
        self.emit(events).await
    }

    /// Commits what is queued once this task next waits ([`Bus::commit_soon`]).
    pub fn commit_soon(&self) {
        self.bus.commit_soon();
    }

    /// [`Self::set_status`] with its writes and events only queued: whoever
    /// flushes the journal next commits them.
    pub fn set_status_queued(&mut self, turn: TurnStatus, session: SessionStatus) {
        let events = self.status_events(turn, session, Vec::new());
        self.bus.queue(self.session.id, events);
    }

    /// Writes the turn's status and the session's; the events that say so.
    fn status_events(
        &mut self,
        turn: TurnStatus,
        session: SessionStatus,
        actions: Vec<serde_json::Value>,
    ) -> Vec<EventBody> {
        self.turn.status = turn;
        if turn == TurnStatus::InProgress && self.started.is_none() {
            self.started = Some(Instant::now());
            tracing::info!(
                org = %self.org_id,
                session = %self.session.id,
                turn = %self.turn.id,
                model = %self.session.agent.config.model,
                "turn started"
            );
        }
        if turn == TurnStatus::InProgress && self.turn.started_at.is_none() {
            self.turn.started_at = Some(now());
        }
        self.put_turn();
        self.session.status = session;
        self.session.required_actions = actions;
        self.session.last_active_at = now();
        self.put_state();
        let (sid, tid, t) = (self.sid(), self.turn.id, self.turn.clone());
        let session_event = match session {
            SessionStatus::InProgress => EventBody::SessionInProgress { session: Box::new(self.session.resource()) },
            SessionStatus::RequiresAction => {
                EventBody::SessionRequiresAction { session: Box::new(self.session.resource()) }
            }
            SessionStatus::Idle => EventBody::SessionIdle { session: Box::new(self.session.resource()) },
            SessionStatus::Failed => EventBody::SessionFailed { session: Box::new(self.session.resource()) },
        };
        let turn_event = match turn {
            TurnStatus::InProgress => Some(EventBody::TurnInProgress { session_id: sid, turn_id: tid, turn: t }),
            _ => None,
        };
        turn_event.into_iter().chain([session_event]).collect()
    }

    /// Ends the turn: completed, failed (with its error) or cancelled; the
    /// session goes idle, ready for the next input.
    pub async fn finish(&mut self, status: TurnStatus, error: Option<TurnError>) -> Result<()> {
        self.turn.status = status;
        self.turn.completed_at = Some(now());
        self.turn.error = error.clone();
        self.put_turn();
        self.count_end(status, error.as_ref());
        if let Some(u) = &self.turn.usage {
            let total = self.session.usage.get_or_insert_with(TokenUsage::default);
            total.input_tokens += u.input_tokens;
            total.output_tokens += u.output_tokens;
            total.input_tokens_details.cached_tokens += u.input_tokens_details.cached_tokens;
            total.output_tokens_details.reasoning_tokens += u.output_tokens_details.reasoning_tokens;
            total.total_tokens = total.input_tokens + total.output_tokens;
        }
        self.session.status = SessionStatus::Idle;
        self.session.required_actions = Vec::new();
        self.session.last_active_at = now();
        self.put_state();
        let (sid, tid, turn, usage) = (self.sid(), self.turn.id, self.turn.clone(), self.turn.usage.clone());
        let mut events = Vec::new();
        if let Some(e) = error {
            events.push(EventBody::Error {
                session_id: sid,
                error: SessionError { code: Some(e.code), message: e.message, param: None, kind: "turn_error".into() },
            });
        }
        events.push(match status {
            TurnStatus::Completed => EventBody::TurnCompleted { session_id: sid, turn_id: tid, turn, usage },
            TurnStatus::Cancelled => EventBody::TurnCancelled { session_id: sid, turn_id: tid, turn, usage },
            _ => EventBody::TurnFailed { session_id: sid, turn_id: tid, turn, usage },
        });
        events.push(EventBody::SessionIdle { session: Box::new(self.session.resource()) });
        self.emit(events).await
    }

    /// The turn's end in the metrics and the log.
    fn count_end(&self, status: TurnStatus, error: Option<&TurnError>) {
        let outcome = match status {
            TurnStatus::Completed => TurnOutcome::Completed,
            TurnStatus::Cancelled => TurnOutcome::Cancelled,
            _ => TurnOutcome::Failed,
        };
        let model = &self.session.agent.config.model;
        let duration = self.started.map(|s| s.elapsed());
        self.metrics.turn_ended(outcome, model, duration);
        let (org, session, turn) = (&self.org_id, self.session.id, &self.turn.id);
        let duration_ms = duration.map(telemetry::millis);
        let status = outcome.label();
        match error {
            Some(e) => tracing::info!(
                %org, %session, %turn, %model, %status, duration_ms, code = %e.code, error = %e.message, "turn failed"
            ),
            None => tracing::info!(%org, %session, %turn, %model, %status, duration_ms, "turn ended"),
        }
    }
}
