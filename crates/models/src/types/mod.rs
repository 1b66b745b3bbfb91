//! Provider-neutral request and event types: what the engine sends to a model
//! and what comes back. Every provider translates from and to these; none of
//! them carries a wire detail of a particular API.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One model call: the whole context the model sees for one step of a turn.
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
    /// Constrains the final text to a JSON Schema (OpenAI `response_format`).
    pub text_format: Option<TextFormat>,
    /// Upper bound on generated tokens; Anthropic requires one and gets
    /// [`crate::anthropic::DEFAULT_MAX_TOKENS`] when this is `None`.
    pub max_output_tokens: Option<u32>,
    /// Also yield [`ModelEvent::ToolCallDelta`]s while tool calls stream (not sent upstream).
    #[serde(default)]
    pub tool_call_deltas: bool,
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

/// How hard a reasoning model should think (OpenAI `reasoning_effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    None,
    Minimal,
    Low,
    Medium,
    High,
    #[serde(rename = "xhigh")]
    XHigh,
}

impl ReasoningEffort {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::XHigh => "xhigh",
        }
    }
}

/// Structured output: the final text must match this JSON Schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextFormat {
    pub name: String,
    pub schema: Value,
    pub strict: bool,
}

/// Token counts of one model call. `input_tokens` includes the cached ones
/// and `output_tokens` the reasoning ones, whatever the upstream's convention.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub reasoning_tokens: u64,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end of the answer.
    Stop,
    /// The model wants the tool calls it emitted to run.
    ToolCalls,
    /// The output token limit was reached.
    Length,
    /// The upstream withheld or refused the content.
    ContentFilter,
    /// Anything else, as the upstream named it.
    Other(String),
}

/// A fragment of a tool call's arguments as it streams, before the call is
/// complete. The first delta of a call carries every argument byte received so
/// far (possibly none: the name alone), each later one the bytes after the
/// previous delta; joined, they are a prefix of the final [`ToolCall::arguments`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallDelta {
    /// The id the complete [`ToolCall`] will carry.
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// What a model stream yields, in this order: text deltas (as soon as they
/// are parsed), complete tool calls, at most one usage, then exactly one
/// `Finish`, after which the stream ends. When the request asks for
/// [`ModelRequest::tool_call_deltas`], each call's [`ModelEvent::ToolCallDelta`]s
/// come as its fragments arrive, before the complete call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelEvent {
    TextDelta(String),
    ToolCallDelta(ToolCallDelta),
    ToolCall(ToolCall),
    Usage(Usage),
    Finish(FinishReason),
}
