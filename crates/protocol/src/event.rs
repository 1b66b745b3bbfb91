//! Session events: the standing stream (`agent.session.*`) and the inputs a
//! caller posts to `POST /v1/agents/sessions/{id}/events`.

use crate::ids::{EnvironmentId, SessionId, TurnId};
use crate::item::{InputMessage, Item};
use crate::session::{Session, TokenUsage};
use crate::turn::Turn;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One event of a session's stream. `event_id` is unique and ordered; a
/// reconnecting client sends the last one it saw as `Last-Event-ID`.
///
/// An event is written once and read many times (the store, then every live
/// subscriber's stream): its JSON is made on first use and kept
/// ([`Event::json`], with its `type`: [`Event::kind`]), so an event is not
/// changed once it is shared.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Event {
    #[schemars(with = "String")]
    pub event_id: crate::ids::EventId,
    #[serde(flatten)]
    pub body: EventBody,
    #[serde(skip)]
    #[schemars(skip)]
    rendered: std::sync::OnceLock<Rendered>,
}

/// An event's JSON and the `type` read back from it.
#[derive(Debug, Clone)]
struct Rendered {
    json: std::sync::Arc<str>,
    kind: Option<String>,
}

/// The `type` member of a serialized event (its body's tag).
#[derive(Deserialize)]
struct Tag<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
}

impl Event {
    /// The event `event_id` saying `body`.
    pub fn new(event_id: crate::ids::EventId, body: EventBody) -> Self {
        Self { event_id, body, rendered: std::sync::OnceLock::new() }
    }

    /// Its JSON (what the store keeps and a stream sends), made once.
    pub fn json(&self) -> Result<std::sync::Arc<str>, serde_json::Error> {
        Ok(std::sync::Arc::clone(&self.rendered()?.json))
    }

    /// Its `type` (`agent.session.turn.created`, …), read back from its JSON once.
    pub fn kind(&self) -> Result<Option<&str>, serde_json::Error> {
        Ok(self.rendered()?.kind.as_deref())
    }

    fn rendered(&self) -> Result<&Rendered, serde_json::Error> {
        if let Some(rendered) = self.rendered.get() {
            return Ok(rendered);
        }
        let json = serde_json::to_string(self)?;
        let kind = serde_json::from_str::<Tag>(&json).ok().map(|t| t.kind.into_owned());
        // Another thread may have made it meanwhile: the same text.
        Ok(self.rendered.get_or_init(|| Rendered { json: json.into(), kind }))
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.event_id == other.event_id && self.body == other.body
    }
}

/// The error payload of an `error` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionError {
    pub code: Option<String>,
    pub message: String,
    pub param: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type")]
pub enum EventBody {
    #[serde(rename = "agent.session.created")]
    SessionCreated { session: Box<Session> },
    #[serde(rename = "agent.session.in_progress")]
    SessionInProgress { session: Box<Session> },
    #[serde(rename = "agent.session.idle")]
    SessionIdle { session: Box<Session> },
    #[serde(rename = "agent.session.requires_action")]
    SessionRequiresAction { session: Box<Session> },
    #[serde(rename = "agent.session.failed")]
    SessionFailed { session: Box<Session> },
    #[serde(rename = "error")]
    Error { session_id: SessionId, error: SessionError },
    #[serde(rename = "agent.session.turn.created")]
    TurnCreated { session_id: SessionId, turn_id: TurnId, turn: Turn },
    #[serde(rename = "agent.session.turn.in_progress")]
    TurnInProgress { session_id: SessionId, turn_id: TurnId, turn: Turn },
    #[serde(rename = "agent.session.turn.completed")]
    TurnCompleted { session_id: SessionId, turn_id: TurnId, turn: Turn, usage: Option<TokenUsage> },
    #[serde(rename = "agent.session.turn.failed")]
    TurnFailed { session_id: SessionId, turn_id: TurnId, turn: Turn, usage: Option<TokenUsage> },
    #[serde(rename = "agent.session.turn.cancelled")]
    TurnCancelled { session_id: SessionId, turn_id: TurnId, turn: Turn, usage: Option<TokenUsage> },
    #[serde(rename = "agent.session.turn.item.added")]
    ItemAdded { session_id: SessionId, turn_id: TurnId, output_index: Option<i64>, item: Item },
    #[serde(rename = "agent.session.turn.item.done")]
    ItemDone { session_id: SessionId, turn_id: TurnId, output_index: i64, item: Item },
    #[serde(rename = "agent.session.turn.output_text.delta")]
    OutputTextDelta {
        session_id: SessionId,
        turn_id: TurnId,
        item_id: String,
        output_index: i64,
        content_index: i64,
        delta: String,
    },
    /// An output text part of a message starts (empty; its deltas follow).
    #[serde(rename = "agent.session.turn.content_part.added")]
    ContentPartAdded {
        session_id: SessionId,
        turn_id: TurnId,
        item_id: String,
        output_index: i64,
        content_index: i64,
        part: crate::item::Content,
    },
    /// An output text part of a message is whole (after its `output_text.done`).
    #[serde(rename = "agent.session.turn.content_part.done")]
    ContentPartDone {
        session_id: SessionId,
        turn_id: TurnId,
        item_id: String,
        output_index: i64,
        content_index: i64,
        part: crate::item::Content,
    },
    #[serde(rename = "agent.session.turn.output_text.done")]
    OutputTextDone {
        session_id: SessionId,
        turn_id: TurnId,
        item_id: String,
        output_index: i64,
        content_index: i64,
        text: String,
    },
    /// A reasoning item's summary part starts (empty; its deltas follow).
    #[serde(rename = "agent.session.turn.reasoning_summary_part.added")]
    ReasoningSummaryPartAdded {
        session_id: SessionId,
        turn_id: TurnId,
        item_id: String,
        output_index: i64,
        summary_index: i64,
        part: crate::item::SummaryText,
    },
    #[serde(rename = "agent.session.turn.reasoning_summary_text.delta")]
    ReasoningSummaryTextDelta {
        session_id: SessionId,
        turn_id: TurnId,
        item_id: String,
        output_index: i64,
        summary_index: i64,
        delta: String,
    },
    #[serde(rename = "agent.session.turn.reasoning_summary_text.done")]
    ReasoningSummaryTextDone {
        session_id: SessionId,
        turn_id: TurnId,
        item_id: String,
        output_index: i64,
        summary_index: i64,
        text: String,
    },
    /// A summary part is whole (after its `reasoning_summary_text.done`).
    #[serde(rename = "agent.session.turn.reasoning_summary_part.done")]
    ReasoningSummaryPartDone {
        session_id: SessionId,
        turn_id: TurnId,
        item_id: String,
        output_index: i64,
        summary_index: i64,
        part: crate::item::SummaryText,
    },
    #[serde(rename = "agent.output.command_execution_output.delta")]
    CommandOutputDelta { session_id: SessionId, turn_id: TurnId, item_id: String, output_index: i64, delta: String },
    /// A turn waits for the environment's initialization: once when it starts
    /// waiting, then with each piece of setup output (Rebyte extension:
    /// `setup_output`, and `environment.setup` saying which step runs).
    #[serde(rename = "agent.session.environment.pending")]
    EnvironmentPending {
        session_id: SessionId,
        turn_id: Option<TurnId>,
        environment: EnvironmentState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        setup_output: Option<String>,
    },
    /// The initialization a turn waited for finished.
    #[serde(rename = "agent.session.environment.ready")]
    EnvironmentReady { session_id: SessionId, turn_id: Option<TurnId>, environment: EnvironmentState },
    /// A turn attached to the environment's running sandbox (once per turn).
    #[serde(rename = "agent.session.environment.connected")]
    EnvironmentConnected { session_id: SessionId, turn_id: Option<TurnId>, environment: EnvironmentState },
    /// The environment could not be initialized (final) or its sandbox is gone.
    #[serde(rename = "agent.session.environment.failed")]
    EnvironmentFailed { session_id: SessionId, turn_id: Option<TurnId>, environment: EnvironmentState },
    /// The node that runs the environment is gone (a cluster): it is
    /// unavailable until that node is back, with its files.
    #[serde(rename = "agent.session.environment.disconnected")]
    EnvironmentDisconnected { session_id: SessionId, turn_id: Option<TurnId>, environment: EnvironmentState },
    /// The environment's sandbox was paused after idling (its processes and
    /// files kept): on every session attached to it. Its next use resumes it,
    /// announced to them as `connected` again.
    #[serde(rename = "agent.session.environment.suspended")]
    EnvironmentSuspended { session_id: SessionId, turn_id: Option<TurnId>, environment: EnvironmentState },
}

/// The state of a session's environment in `agent.session.environment.*` events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnvironmentState {
    pub id: EnvironmentId,
    /// `pending`, `ready`, `connected`, `disconnected`, `suspended` or `failed`.
    pub status: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub error: Option<EnvironmentStateError>,
    /// Rebyte extension: where the environment's setup is, while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<crate::environment::EnvironmentSetup>,
}

/// Why an environment failed (the `error` of its state in events).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnvironmentStateError {
    pub code: String,
    pub message: String,
    #[serde(rename = "type")]
    pub kind: String,
}

impl EventBody {
    /// The turn an event belongs to, if any.
    pub fn turn_id(&self) -> Option<TurnId> {
        match self {
            EventBody::TurnCreated { turn_id, .. }
            | EventBody::TurnInProgress { turn_id, .. }
            | EventBody::TurnCompleted { turn_id, .. }
            | EventBody::TurnFailed { turn_id, .. }
            | EventBody::TurnCancelled { turn_id, .. }
            | EventBody::ItemAdded { turn_id, .. }
            | EventBody::ItemDone { turn_id, .. }
            | EventBody::OutputTextDelta { turn_id, .. }
            | EventBody::OutputTextDone { turn_id, .. }
            | EventBody::ContentPartAdded { turn_id, .. }
            | EventBody::ContentPartDone { turn_id, .. }
            | EventBody::ReasoningSummaryPartAdded { turn_id, .. }
            | EventBody::ReasoningSummaryTextDelta { turn_id, .. }
            | EventBody::ReasoningSummaryTextDone { turn_id, .. }
            | EventBody::ReasoningSummaryPartDone { turn_id, .. }
            | EventBody::CommandOutputDelta { turn_id, .. } => Some(*turn_id),
            EventBody::EnvironmentPending { turn_id, .. }
            | EventBody::EnvironmentReady { turn_id, .. }
            | EventBody::EnvironmentConnected { turn_id, .. }
            | EventBody::EnvironmentFailed { turn_id, .. }
            | EventBody::EnvironmentDisconnected { turn_id, .. }
            | EventBody::EnvironmentSuspended { turn_id, .. } => *turn_id,
            _ => None,
        }
    }

    /// Whether this event ends a turn.
    pub fn ends_turn(&self) -> bool {
        matches!(self, EventBody::TurnCompleted { .. } | EventBody::TurnFailed { .. } | EventBody::TurnCancelled { .. })
    }
}

/// `POST /v1/agents/sessions/{id}/events`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsCreate {
    pub events: Vec<InputEvent>,
}

/// An input a caller submits to a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type")]
pub enum InputEvent {
    /// New user input: becomes a turn (queued behind a running one).
    #[serde(rename = "agent.session.input.message")]
    Message { input: Vec<InputMessage> },
    /// Stop the active turn.
    #[serde(rename = "agent.session.input.cancel")]
    Cancel {},
    /// The result of a client function call the turn waits for.
    #[serde(rename = "agent.session.input.tool_result")]
    ToolResult {
        turn_id: String,
        call_id: String,
        success: bool,
        #[serde(default)]
        output: Option<Value>,
        #[serde(default)]
        error: Option<String>,
    },
    /// An answer to an MCP approval request.
    #[serde(rename = "agent.session.input.mcp_approval_request_result")]
    McpApprovalRequestResult { request_id: String, response: Value },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::EventId;

    #[test]
    fn an_events_json_is_its_serialization_and_its_kind_the_bodys_tag() {
        let session_id = SessionId::new();
        let bodies = [
            EventBody::Error {
                session_id,
                error: SessionError {
                    code: Some("c".into()),
                    message: "m \"quoted\" type".into(),
                    param: None,
                    kind: "warning".into(),
                },
            },
            EventBody::OutputTextDelta {
                session_id,
                turn_id: TurnId::new(),
                item_id: "msg_1".into(),
                output_index: 0,
                content_index: 0,
                delta: "{\"type\": \"not this\"}".into(),
            },
        ];
        for body in bodies {
            let expected = serde_json::to_value(&body).unwrap()["type"].as_str().unwrap().to_string();
            let event = Event::new(EventId::from_seq(7), body);
            assert_eq!(event.kind().unwrap(), Some(expected.as_str()));
            assert_eq!(*event.json().unwrap(), *serde_json::to_string(&event).unwrap(), "made once, the same text");
        }
    }
}
