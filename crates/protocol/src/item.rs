//! Items: what a session's history is made of — messages, function calls and
//! their outputs, MCP calls, command executions and Dynamic Workflow programs with their
//! outputs — in the client's shapes.

use crate::ids::TurnId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Status of a message item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    InProgress,
    Completed,
    Incomplete,
    Failed,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// Message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    InputText { text: String },
    InputImage { image_url: String },
    OutputText { text: String },
}

impl Content {
    /// The text of text content.
    pub fn text(&self) -> Option<&str> {
        match self {
            Content::InputText { text } | Content::OutputText { text } => Some(text),
            Content::InputImage { .. } => None,
        }
    }
}

/// Whether an assistant message is commentary or the final answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Commentary,
    FinalAnswer,
}

/// One part of a reasoning item's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename = "summary_text")]
pub struct SummaryText {
    pub text: String,
}

/// Where a reasoning item came from, so that it can go back to the model that
/// wrote it (Rebyte extension; opaque to clients).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReasoningSource {
    /// The upstream wire format (`anthropic`, `openai_chat`, `openai_responses`).
    pub format: String,
    /// The upstream's own id of the item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_id: Option<String>,
    /// The upstream withheld the text (`encrypted_content` holds it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

/// One item of a session's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Item {
    Message {
        id: String,
        turn_id: TurnId,
        role: Role,
        status: ItemStatus,
        content: Vec<Content>,
        #[serde(default)]
        phase: Option<Phase>,
    },
    FunctionCall {
        id: String,
        turn_id: TurnId,
        call_id: String,
        name: String,
        /// The parsed JSON arguments, or the raw string when the model emitted invalid JSON.
        arguments: Value,
        status: ItemStatus,
    },
    FunctionCallOutput {
        id: String,
        turn_id: TurnId,
        call_id: String,
        /// A string or a list of content parts.
        output: Option<Value>,
        error: Option<String>,
        status: ItemStatus,
    },
    McpCall {
        id: String,
        turn_id: TurnId,
        /// Rebyte extension: the model's call id, to rebuild the history.
        call_id: String,
        server_label: String,
        name: String,
        arguments: Value,
        output: Value,
        error: Value,
        status: ItemStatus,
    },
    CommandExecution {
        id: String,
        turn_id: TurnId,
        /// Rebyte extension: the model's call id, to rebuild the history.
        call_id: String,
        command: String,
        cwd: Option<String>,
        output: Option<String>,
        exit_code: Option<i64>,
        duration_ms: Option<i64>,
        status: ItemStatus,
    },
    /// The model's reasoning before a step's answer: its summary text, and
    /// what the provider needs back on the next step.
    Reasoning {
        id: String,
        turn_id: TurnId,
        status: ItemStatus,
        summary: Vec<SummaryText>,
        /// The provider's opaque reasoning state (a signature, encrypted content).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<ReasoningSource>,
    },
    /// A Dynamic Workflow program the model ran (`dynamic_workflow`).
    Program {
        id: String,
        turn_id: TurnId,
        call_id: String,
        /// The JavaScript the model wrote (the body of an async function).
        code: String,
        /// Opaque to clients: the SHA-256 of the code.
        fingerprint: String,
    },
    /// How a program ended: what it returned (or why it stopped), then its console output.
    ProgramOutput {
        id: String,
        turn_id: TurnId,
        call_id: String,
        result: String,
        /// `completed` or `incomplete`.
        status: ItemStatus,
    },
}

impl Item {
    pub fn id(&self) -> &str {
        match self {
            Item::Message { id, .. }
            | Item::FunctionCall { id, .. }
            | Item::FunctionCallOutput { id, .. }
            | Item::McpCall { id, .. }
            | Item::CommandExecution { id, .. }
            | Item::Reasoning { id, .. }
            | Item::Program { id, .. }
            | Item::ProgramOutput { id, .. } => id,
        }
    }

    pub fn turn_id(&self) -> TurnId {
        match self {
            Item::Message { turn_id, .. }
            | Item::FunctionCall { turn_id, .. }
            | Item::FunctionCallOutput { turn_id, .. }
            | Item::McpCall { turn_id, .. }
            | Item::CommandExecution { turn_id, .. }
            | Item::Reasoning { turn_id, .. }
            | Item::Program { turn_id, .. }
            | Item::ProgramOutput { turn_id, .. } => *turn_id,
        }
    }

    /// The concatenated output text of an assistant message.
    pub fn output_text(&self) -> Option<String> {
        match self {
            Item::Message { role: Role::Assistant, content, .. } => Some(
                content
                    .iter()
                    .filter_map(|c| match c {
                        Content::OutputText { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// A new item id.
pub fn new_item_id() -> String {
    format!("item_{}", uuid::Uuid::new_v4().simple())
}

/// One user message of an input: `{"role":"user","content":[…]}` (`type` optional).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputMessage {
    pub role: InputRole,
    pub content: InputContent,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<MessageKind>,
}

/// Only users send input messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputRole {
    User,
}

/// The constant `"message"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    Message,
}

/// Message content as input: a string or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum InputContent {
    Text(String),
    Parts(Vec<Content>),
}

impl InputContent {
    /// The content as parts.
    pub fn into_parts(self) -> Vec<Content> {
        match self {
            InputContent::Text(text) => vec![Content::InputText { text }],
            InputContent::Parts(parts) => parts,
        }
    }
}

/// A turn's input: a string, or a list of user messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Input {
    Text(String),
    Messages(Vec<InputMessage>),
}

impl Input {
    /// The input as message content lists, one per message; empty input is an error.
    pub fn into_messages(self) -> Result<Vec<Vec<Content>>, String> {
        let messages = match self {
            Input::Text(text) if text.is_empty() => return Err("input must not be empty".into()),
            Input::Text(text) => vec![vec![Content::InputText { text }]],
            Input::Messages(list) => list.into_iter().map(|m| m.content.into_parts()).collect(),
        };
        if messages.is_empty() || messages.iter().any(Vec::is_empty) {
            return Err("input must contain at least one message with content".into());
        }
        if messages.iter().flatten().any(|c| matches!(c, Content::OutputText { .. })) {
            return Err("user input cannot contain output_text content".into());
        }
        Ok(messages)
    }
}
