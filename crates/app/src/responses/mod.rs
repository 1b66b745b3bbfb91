//! The Responses API's view of sessions and turns: a response is one turn
//! (`resp_<uuid>` = turn `<uuid>`) of a conversation (`conv_<uuid>` =
//! session `<uuid>`). This service finds or creates the conversation a
//! request names, starts the turn (or hands a waiting one its function
//! results), waits for it, cancels it, and reads what it produced.

pub mod input;

use crate::sessions::{NewSession, check_agent};
use crate::{App, Error, Result};
use input::{Reply, ResponseInput};
use protocol::Metadata;
use protocol::approval::Decision;
use protocol::event::{Event, EventBody};
use protocol::ids::{SessionId, TurnId};
use protocol::item::Item;
use protocol::list::{Order, PageRequest};
use protocol::session::{INLINE_AGENT_ID, SessionRecord};
use protocol::turn::Turn;
use protocol::turn_settings::NewTurn;
use protocol::validate;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// How long a cancel waits for the turn to end before answering.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// What a response request says about its conversation and agent.
#[derive(Debug, Default)]
pub struct ConversationRequest {
    /// `conversation`: an id, `{"id": …}`, or nothing for a new one.
    pub conversation: Option<Value>,
    pub model: Option<String>,
    pub instructions: Option<String>,
    /// `tools`, in the Responses shape.
    pub tools: Option<Vec<Value>>,
    /// The new conversation's metadata.
    pub metadata: Option<Metadata>,
    /// `previous_response_id`: continue that response's conversation (it
    /// must be the conversation's latest response).
    pub previous_response_id: Option<String>,
}

/// A turn started (or resumed) by a response request, with the session's
/// events from before it was submitted.
pub struct Started {
    pub turn_id: TurnId,
    pub events: broadcast::Receiver<Arc<Event>>,
}

/// The responses of one organization.
pub struct Service<'a> {
    pub(crate) app: &'a App,
    pub(crate) org: &'a str,
}

impl Service<'_> {
    /// Checks a request's own settings before anything is created for it.
    pub fn check(&self, new: &NewTurn) -> Result<()> {
        match &new.settings {
            Some(settings) => Ok(validate::settings::turn_settings(settings)?),
            None => Ok(()),
        }
    }

    /// Checks the `include` values of a request: each is refused by name.
    pub fn include(&self, values: &[String]) -> Result<()> {
        Ok(validate::settings::include("include", values)?)
    }

    /// The conversation a request names, or a new one (created as every
    /// session is). The conversation's agent wins; the request fills in the
    /// model and instructions it lacks, and an inline agent takes its tools.
    pub async fn conversation(&self, req: ConversationRequest) -> Result<SessionRecord> {
        let named = match req.conversation {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(id),
            Some(Value::Object(o)) => o.get("id").and_then(Value::as_str).map(str::to_string),
            Some(_) => return Err(Error::invalid("conversation", "conversation must be an id or {\"id\": …}")),
        };
        let tools = input::function_tools(req.tools)?;
        let sessions = self.app.sessions(self.org);
        let mut session = match (named, req.previous_response_id) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    "previous_response_id",
                    "pass conversation or previous_response_id, not both",
                ));
            }
            (None, Some(previous)) => self.continued(&previous).await?,
            (Some(id), None) => {
                let session_id = SessionId::parse_conversation(&id).ok_or_else(|| {
                    Error::invalid("conversation", format!("'{id}' is not a conversation id: expected conv_<uuid>"))
                })?;
                sessions.get(session_id).await.map_err(|_| Error::not_found("conversation", &id))?
            }
            (None, None) => {
                sessions.create(NewSession::conversation(req.metadata.unwrap_or_default(), Vec::new())).await?.session
            }
        };
        let mut changed = false;
        let config = &mut session.agent.config;
        if config.model.is_empty() {
            config.model =
                req.model.ok_or_else(|| Error::invalid("model", "model is required: the conversation has none"))?;
            changed = true;
        }
        if config.instructions.is_none() && req.instructions.is_some() {
            config.instructions = req.instructions;
            changed = true;
        }
        if let Some(tools) = tools.filter(|_| session.agent.id == INLINE_AGENT_ID) {
            session.agent.config.tools = tools;
            changed = true;
        }
        if changed {
            check_agent(&session.agent.config)?;
            sessions.put(&session).await?;
        }
        Ok(session)
    }

    /// The conversation of `previous`, which must be its latest response:
    /// every response here belongs to one conversation, so chaining from an
    /// earlier one would fork it.
    async fn continued(&self, previous: &str) -> Result<SessionRecord> {
        let turn_id = TurnId::parse_response(previous).ok_or_else(|| {
            Error::invalid("previous_response_id", format!("'{previous}' is not a response id: expected resp_<uuid>"))
        })?;
        let (session, _) = self.get(turn_id).await?.ok_or_else(|| Error::MissingReference {
            param: "previous_response_id".into(),
            message: format!("No response found with id '{previous}'."),
        })?;
        let newest = PageRequest { limit: 1, order: Order::Desc, ..PageRequest::default() };
        let latest = self.app.turns(self.org).list(session.id, &newest).await?.items.into_iter().next();
        match latest {
            Some(latest) if latest.id != turn_id => Err(Error::invalid(
                "previous_response_id",
                format!(
                    "'{previous}' is not the latest response of its conversation ('{}' is); continue the \
                     conversation '{}' instead",
                    latest.id.response(),
                    session.id.conversation()
                ),
            )),
            _ => Ok(session),
        }
    }

    /// Submits the input: new messages become a turn; function results go
    /// to the turn waiting for them. Events are subscribed to first, so the
    /// caller sees the turn from its start.
    pub async fn start(&self, session: &SessionRecord, input: ResponseInput, new: NewTurn) -> Result<Started> {
        let engine = &self.app.engine;
        let events = engine.bus().subscribe(session.id);
        let turn_id = match input {
            ResponseInput::Messages(messages) => self.app.turns(self.org).submit(session, messages, new).await?.id,
            ResponseInput::Results(results) => {
                let turn_id = engine.active_turn(self.org, session.id).await?.ok_or_else(|| {
                    Error::invalid("input", "the conversation has no response waiting for function_call_output")
                })?;
                for answer in results {
                    let answer = match answer {
                        Reply::Result(result) => engine::waiting::Answer::Result(result),
                        Reply::Approval { request_id, approve } => {
                            if crate::turns::approval_turn(session, &request_id) != Some(turn_id) {
                                return Err(engine::Error::UnknownApproval { request_id }.into());
                            }
                            let decision = if approve { Decision::Approve } else { Decision::Deny };
                            engine::waiting::Answer::Approval { request_id, decision }
                        }
                    };
                    engine.submit_answer(self.org, session.id, turn_id, answer).await?;
                }
                turn_id
            }
        };
        Ok(Started { turn_id, events })
    }

    /// The turn behind a `resp_` id, with its conversation.
    pub async fn find(&self, response_id: &str) -> Result<(SessionRecord, Turn)> {
        let turn_id = TurnId::parse_response(response_id).ok_or_else(|| {
            Error::invalid("response_id", format!("'{response_id}' is not a response id: expected resp_<uuid>"))
        })?;
        self.get(turn_id).await?.ok_or_else(|| Error::not_found("response", response_id))
    }

    /// A turn with its conversation, as stored now.
    pub async fn get(&self, turn_id: TurnId) -> Result<Option<(SessionRecord, Turn)>> {
        self.app.turns(self.org).find(turn_id).await
    }

    /// Cancels a response that has not ended and waits (a bounded time) for
    /// it to end; answers it as stored then.
    pub async fn cancel(&self, response_id: &str) -> Result<(SessionRecord, Turn)> {
        let (session, turn) = self.find(response_id).await?;
        if turn.status.is_terminal() {
            return Ok((session, turn));
        }
        let mut events = self.app.engine.bus().subscribe(session.id);
        if self.app.engine.cancel(self.org, session.id, Some(turn.id)).await.is_ok() {
            let ended = async {
                loop {
                    match events.recv().await {
                        Ok(e) if e.body.ends_turn() && e.body.turn_id() == Some(turn.id) => return,
                        Err(broadcast::error::RecvError::Closed) => return,
                        _ => {}
                    }
                }
            };
            let _ = tokio::time::timeout(CANCEL_WAIT, ended).await;
        }
        self.find(response_id).await
    }

    /// Deletes an ended response with its items (409 for one still running).
    pub async fn delete(&self, response_id: &str) -> Result<()> {
        let (session, turn) = self.find(response_id).await?;
        self.app.turns(self.org).delete(session.id, turn.id).await
    }

    /// Every item of a response read by [`Service::find`] or [`Service::get`]
    /// (which made the journal's writes visible), in order.
    pub async fn items(&self, session: &SessionRecord, turn: &Turn) -> Result<Vec<Item>> {
        Ok(self.app.store.turn_items(self.org, session.id, turn.id).await?)
    }
}

/// Waits until the turn ends or waits for the caller (its function calls).
pub async fn settle(events: &mut broadcast::Receiver<Arc<Event>>, turn_id: TurnId) {
    loop {
        match events.recv().await {
            Ok(e) if e.body.ends_turn() && e.body.turn_id() == Some(turn_id) => return,
            Ok(e) if waits_for_caller(&e.body, turn_id) => return,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Whether the event says the session waits for client function results of `turn_id`.
pub fn waits_for_caller(body: &EventBody, turn_id: TurnId) -> bool {
    matches!(body, EventBody::SessionRequiresAction { session }
        if session.required_actions.iter().any(|a| a["turn_id"].as_str().and_then(TurnId::parse) == Some(turn_id)))
}
