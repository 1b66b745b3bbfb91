//! What a model stream yields, and the parts those events carry.

use super::{Reasoning, ToolCall};
use serde::{Deserialize, Serialize};

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

/// What a model stream yields.
///
/// # Order
/// - Reasoning comes first in a step, as the model thinks before it answers:
///   [`ModelEvent::ReasoningDelta`]s as its text streams, then the complete
///   block as one [`ModelEvent::Reasoning`] when the block ends, before the
///   text or the tool calls that follow it. A step may have several blocks
///   (or none); joined, a block's deltas are its [`Reasoning::text`].
/// - Text deltas, as soon as they are parsed.
/// - Complete tool calls. When the request asks for
///   [`super::ModelRequest::tool_call_deltas`], each call's
///   [`ModelEvent::ToolCallDelta`]s come as its fragments arrive, before the
///   complete call.
/// - At most one usage, then exactly one `Finish`, after which the stream ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelEvent {
    /// Reasoning text as it streams (a summary or the thinking itself).
    ReasoningDelta(String),
    /// One complete reasoning block, to keep in the history.
    Reasoning(Reasoning),
    TextDelta(String),
    ToolCallDelta(ToolCallDelta),
    ToolCall(ToolCall),
    Usage(Usage),
    Finish(FinishReason),
}
