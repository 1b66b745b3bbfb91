//! Provider-neutral request and event types: what the engine sends to a model
//! and what comes back. Every provider translates from and to these; none of
//! them carries a wire detail of a particular API.
//!
//! - this module: the [`ModelRequest`] and its history of [`Message`]s.
//! - `options`: what a request asks of the output ([`TextFormat`],
//!   [`ReasoningEffort`], [`ReasoningSummary`], [`Verbosity`]).
//! - `events`: what a stream yields ([`ModelEvent`], [`Usage`], …).
//! - `reasoning`: [`Reasoning`], the model's thinking, kept in the history.

pub(crate) mod encoded;
mod events;
mod options;
mod reasoning;

pub use encoded::EncodedHistory;
pub use events::{FinishReason, ModelEvent, ToolCallDelta, Usage};
pub use options::{ReasoningEffort, ReasoningSummary, TextFormat, Verbosity};
pub use reasoning::Reasoning;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One model call: the whole context the model sees for one step of a turn.
///
/// Each provider's module doc says which of the settings it sends, and what
/// it does with those its API has no place for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The model name as the upstream knows it ([`crate::ResolvedModel::upstream`]).
    pub model: String,
    /// The system prompt, sent before the history.
    pub instructions: Option<String>,
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    pub tools: Vec<ToolSpec>,
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Asks for a summary of the model's reasoning (Responses API only).
    pub reasoning_summary: Option<ReasoningSummary>,
    /// Constrains the final text to JSON: a schema, or any one object.
    pub text_format: Option<TextFormat>,
    /// Upper bound on generated tokens, reasoning included; Anthropic requires
    /// one and gets [`crate::anthropic::DEFAULT_MAX_TOKENS`] when this is `None`.
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling: only the tokens of this much probability mass.
    pub top_p: Option<f64>,
    /// How long the answer should be (OpenAI's GPT-5 `verbosity`).
    pub verbosity: Option<Verbosity>,
    /// The upstream's processing tier (`auto`, `default`, `flex`, `priority`
    /// at OpenAI), passed through as given.
    pub service_tier: Option<String>,
    /// Also yield [`ModelEvent::ToolCallDelta`]s while tool calls stream (not sent upstream).
    #[serde(default)]
    pub tool_call_deltas: bool,
    /// The history's wire encodings, kept across the steps of one turn: give
    /// each step's request the turn's one [`EncodedHistory`] (not sent).
    #[serde(skip)]
    pub encoded: EncodedHistory,
}

impl ModelRequest {
    /// A request for `model` with no history yet.
    pub fn new(model: impl Into<String>) -> Self {
        Self { model: model.into(), ..Self::default() }
    }

    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    pub fn message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    pub fn tool(mut self, tool: ToolSpec) -> Self {
        self.tools.push(tool);
        self
    }
}

/// One entry of the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// What the user said.
    User { text: String },
    /// The model's reasoning of one step, placed before that step's text and
    /// tool calls. Each provider sends back only what it produced itself
    /// ([`Reasoning::origin`]) and drops the rest.
    Reasoning(Reasoning),
    /// Text the model answered.
    Assistant { text: String },
    /// A tool call the model made; consecutive calls (and the assistant text
    /// right before them) are sent as one assistant message.
    ToolCall(ToolCall),
    /// The output of a tool call, sent back to the model.
    ToolResult { call_id: String, content: String },
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Self::User { text: text.into() }
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Self::Assistant { text: text.into() }
    }

    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self::ToolResult { call_id: call_id.into(), content: content.into() }
    }
}

/// A complete tool call, assembled from the streamed fragments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The upstream's call id; tool results refer to it.
    pub id: String,
    pub name: String,
    /// The arguments exactly as the model produced them: usually a JSON
    /// object, but a model can emit invalid JSON, which is passed through
    /// untouched so the engine can send the parse error back to the model.
    /// An empty string from the upstream becomes `{}`.
    pub arguments: String,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self { id: id.into(), name: name.into(), arguments: arguments.into() }
    }

    /// Parses [`Self::arguments`]; the error text is what to tell the model.
    pub fn parse_arguments(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&self.arguments)
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

impl ToolSpec {
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self { name: name.into(), description: description.into(), parameters }
    }
}
