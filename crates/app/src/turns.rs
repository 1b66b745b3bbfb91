//! Turns (= Responses), their items, and the inputs that drive them: input
//! messages become turns (committed `queued` before the caller is answered),
//! cancels and client tool results reach the running turn, and an
//! `Idempotency-Key` makes a retried submission change nothing.

use crate::{App, Error, Result, now};
use engine::turn::ToolResult;
use engine::waiting::Answer;
use protocol::approval::ApprovalResponse;
use protocol::event::InputEvent;
use protocol::ids::{SessionId, TurnId};
use protocol::item::{Content, InputMessage, Item};
use protocol::list::PageRequest;
use protocol::session::SessionRecord;
use protocol::turn::{Turn, TurnStatus};
use protocol::turn_settings::NewTurn;
use store::Page;

/// Longest `Idempotency-Key` accepted.
const MAX_IDEMPOTENCY_KEY: usize = 256;
/// Most input events one request may carry.
pub const MAX_EVENTS: usize = 100;

/// Checks input messages and turns them into content lists.
pub fn input_messages(param: &str, input: Vec<InputMessage>) -> Result<Vec<Vec<Content>>> {
    protocol::item::Input::Messages(input).into_messages().map_err(|m| Error::invalid(param, m))
}

/// One checked input, ready to apply.
enum Planned {
    Message(Vec<Vec<Content>>),
    Cancel,
    /// For a turn id that is not one, `None`: no turn waits for that call.
    ToolResult(Option<TurnId>, ToolResult),
    /// A decision on an MCP approval request.
    Approval(String, ApprovalResponse),
}

fn plan(events: Vec<InputEvent>) -> Result<Vec<Planned>> {
    if events.is_empty() {
        return Err(Error::invalid("events", "at least one event is required"));
    }
    if events.len() > MAX_EVENTS {
        return Err(Error::invalid(
            "events",
            format!("at most {MAX_EVENTS} events are accepted per request; this one has {}", events.len()),
        ));
    }
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| match event {
            InputEvent::Message { input } => {
                Ok(Planned::Message(input_messages(&format!("events[{i}].input"), input)?))
            }
            InputEvent::Cancel {} => Ok(Planned::Cancel),
            InputEvent::ToolResult { turn_id, call_id, success, output, error } => {
                Ok(Planned::ToolResult(TurnId::parse(&turn_id), ToolResult { call_id, success, output, error }))
            }
            InputEvent::McpApprovalRequestResult { request_id, response } => {
                let response: ApprovalResponse = serde_json::from_value(response)
                    .map_err(|e| Error::invalid(format!("events[{i}].response"), e.to_string()))?;
                Ok(Planned::Approval(request_id, response))
            }
        })
        .collect()
}

/// The turn an approval request of the session's required actions belongs to.
pub(crate) fn approval_turn(session: &SessionRecord, request_id: &str) -> Option<TurnId> {
    session.required_actions.iter().find_map(|a| {
        let matches = a.get("type").and_then(serde_json::Value::as_str) == Some("mcp_approval_request")
            && a.get("request_id").and_then(serde_json::Value::as_str) == Some(request_id);
        matches.then(|| a.get("turn_id").and_then(serde_json::Value::as_str).and_then(TurnId::parse)).flatten()
    })
}

/// The turns of one organization's sessions.
pub struct Service<'a> {
    pub(crate) app: &'a App,
    pub(crate) org: &'a str,
}

impl Service<'_> {
    /// Queues one turn's input (committed before this returns).
    pub async fn submit(&self, session: &SessionRecord, messages: Vec<Vec<Content>>, new: NewTurn) -> Result<Turn> {
        self.app.check_active_turns(self.org).await?;
        Ok(self.app.engine.submit_input(self.org, session, messages, new).await?)
    }

    /// Applies a session's input events in order. With an idempotency key,
    /// a retry of a submission that was applied changes nothing; a failed one
    /// did not happen, so its key may be used again.
    pub async fn apply(&self, session_id: SessionId, events: Vec<InputEvent>, key: Option<&str>) -> Result<()> {
        let session = self.app.sessions(self.org).get(session_id).await?;
        let planned = plan(events)?;
        self.check_room(&session, &planned).await?;
        if let Some(key) = key {
            if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY {
                return Err(Error::invalid("Idempotency-Key", "must be 1 to 256 characters"));
            }
            if !self.app.store.claim_idempotency_key(self.org, session.id, key, now()).await? {
                return Ok(());
            }
        }
        let outcome = self.apply_planned(&session, planned).await;
        if let (Err(_), Some(key)) = (&outcome, key) {
            self.app.store.release_idempotency_key(self.org, session.id, key).await?;
        }
        outcome
    }

    /// 429 when the request's messages would pass the session's limit of
    /// queued turns, before any of them is applied. The engine checks each
    /// turn as it is queued (on whichever node runs the session); this check
    /// keeps a request of many messages from being applied in part.
    async fn check_room(&self, session: &SessionRecord, planned: &[Planned]) -> Result<()> {
        let messages = planned.iter().filter(|p| matches!(p, Planned::Message(_))).count();
        if messages < 2 {
            return Ok(());
        }
        let limit = engine::MAX_QUEUED_TURNS;
        self.app.engine.flush().await?;
        let page = PageRequest { limit: limit as u32 + 1, ..Default::default() };
        let latest = self.app.store.list_turns(self.org, session.id, &page).await?;
        let queued = latest.items.iter().filter(|t| t.status == TurnStatus::Queued).count();
        if queued + messages > limit {
            return Err(Error::TooManyQueued(format!(
                "the session already has {queued} queued turns: {messages} more would pass the limit of {limit}"
            )));
        }
        Ok(())
    }

    async fn apply_planned(&self, session: &SessionRecord, planned: Vec<Planned>) -> Result<()> {
        for p in planned {
            match p {
                Planned::Message(messages) => {
                    self.submit(session, messages, NewTurn::plain()).await?;
                }
                Planned::Cancel => {
                    self.app.engine.cancel(self.org, session.id, None).await?;
                }
                Planned::ToolResult(Some(turn_id), result) => {
                    self.app.engine.submit_answer(self.org, session.id, turn_id, Answer::Result(result)).await?;
                }
                Planned::Approval(request_id, response) => {
                    let turn_id = approval_turn(session, &request_id)
                        .ok_or_else(|| engine::Error::UnknownApproval { request_id: request_id.clone() })?;
                    let answer = Answer::Approval { request_id, decision: response.decision };
                    self.app.engine.submit_answer(self.org, session.id, turn_id, answer).await?;
                }
                Planned::ToolResult(None, result) => {
                    return Err(engine::Error::UnknownToolCall { call_id: result.call_id }.into());
                }
            }
        }
        Ok(())
    }

    /// A turn of a session, or 404.
    pub async fn get(&self, session_id: SessionId, turn_id: TurnId) -> Result<Turn> {
        self.app.engine.flush().await?;
        self.stored(session_id, turn_id).await
    }

    /// A turn of a session as stored, or 404 (the caller has flushed the journal).
    async fn stored(&self, session_id: SessionId, turn_id: TurnId) -> Result<Turn> {
        let not_found = || Error::not_found("turn", &turn_id.to_string());
        let turn = self.app.store.get_turn(self.org, turn_id).await?.ok_or_else(not_found)?;
        if turn.session_id != session_id {
            return Err(not_found());
        }
        Ok(turn)
    }

    /// A turn by its id alone, with its session (the Responses API's view).
    pub async fn find(&self, turn_id: TurnId) -> Result<Option<(SessionRecord, Turn)>> {
        self.app.engine.flush().await?;
        let Some(turn) = self.app.store.get_turn(self.org, turn_id).await? else { return Ok(None) };
        match self.app.store.get_session(self.org, turn.session_id).await? {
            Some(session) => Ok(Some((session, turn))),
            None => Ok(None),
        }
    }

    pub async fn list(&self, session_id: SessionId, page: &PageRequest) -> Result<Page<Turn>> {
        let session = self.app.sessions(self.org).get(session_id).await?;
        Ok(self.app.store.list_turns(self.org, session.id, page).await?)
    }

    /// A session's items, or one turn's.
    /// One item of a session, or 404.
    pub async fn item(&self, session_id: SessionId, item_id: &str) -> Result<Item> {
        let session = self.app.sessions(self.org).get(session_id).await?;
        let item = self.app.store.get_item(self.org, session.id, item_id).await?;
        item.ok_or_else(|| Error::not_found("item", item_id))
    }

    /// Deletes one item from a session's history (409 while a turn of it
    /// has not ended: the turn reads and extends that history).
    pub async fn delete_item(&self, session_id: SessionId, item_id: &str) -> Result<()> {
        let session = self.app.sessions(self.org).get(session_id).await?;
        self.idle(session.id).await?;
        if !self.app.store.delete_item(self.org, session.id, item_id).await? {
            return Err(Error::not_found("item", item_id));
        }
        self.app.engine.forget_history(session.id);
        Ok(())
    }

    /// Deletes an ended turn with its items (409 for one that has not ended).
    pub async fn delete(&self, session_id: SessionId, turn_id: TurnId) -> Result<()> {
        let turn = self.stored(session_id, turn_id).await?;
        if !turn.status.is_terminal() {
            return Err(Error::Conflict(format!("'{}' has not ended: cancel it first", turn_id.response())));
        }
        self.app.store.delete_turn(self.org, turn.id).await?;
        self.app.engine.forget_history(session_id);
        Ok(())
    }

    /// 409 while a turn of the session has not ended.
    async fn idle(&self, session_id: SessionId) -> Result<()> {
        let page = PageRequest { limit: 1, ..Default::default() };
        let latest = self.app.store.list_turns(self.org, session_id, &page).await?;
        match latest.items.first() {
            Some(turn) if !turn.status.is_terminal() => Err(Error::Conflict(format!(
                "the conversation has a response that has not ended ({}): wait for it or cancel it",
                turn.id.response()
            ))),
            _ => Ok(()),
        }
    }

    pub async fn items(
        &self,
        session_id: SessionId,
        turn_id: Option<TurnId>,
        page: &PageRequest,
    ) -> Result<Page<Item>> {
        let session = self.app.sessions(self.org).get(session_id).await?;
        let turn = match turn_id {
            Some(id) => Some(self.stored(session.id, id).await?),
            None => None,
        };
        Ok(self.app.store.list_items(self.org, session.id, turn.map(|t| t.id), page).await?)
    }

    /// Every item of one turn, in order.
    pub async fn turn_items(&self, session_id: SessionId, turn_id: TurnId) -> Result<Vec<Item>> {
        self.app.engine.flush().await?;
        Ok(self.app.store.turn_items(self.org, session_id, turn_id).await?)
    }
}
