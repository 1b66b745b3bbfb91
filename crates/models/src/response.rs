//! The final message of one model call, accumulated from its events: what
//! the engine appends to the history once the stream has finished.

use crate::error::Result;
use crate::provider::ModelStream;
use crate::types::{FinishReason, Message, ModelEvent, Reasoning, ToolCall, Usage};
use futures::StreamExt;

/// Everything one model call produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelResponse {
    /// The complete reasoning blocks, in order.
    pub reasoning: Vec<Reasoning>,
    /// The text deltas, concatenated.
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    /// `None` until the `Finish` event arrived.
    pub finish: Option<FinishReason>,
}

impl ModelResponse {
    /// Folds one event in. The engine can forward each event to its own
    /// subscribers and apply it here, so it never walks the stream twice.
    pub fn apply(&mut self, event: &ModelEvent) {
        match event {
            ModelEvent::ReasoningDelta(_) => {}
            ModelEvent::Reasoning(reasoning) => self.reasoning.push(reasoning.clone()),
            ModelEvent::TextDelta(delta) => self.text.push_str(delta),
            ModelEvent::ToolCallDelta(_) => {}
            ModelEvent::ToolCall(call) => self.tool_calls.push(call.clone()),
            ModelEvent::Usage(usage) => self.usage = Some(*usage),
            ModelEvent::Finish(reason) => self.finish = Some(reason.clone()),
        }
    }

    /// Reads the whole stream; the first error ends it.
    pub async fn collect(mut stream: ModelStream) -> Result<Self> {
        let mut response = Self::default();
        while let Some(event) = stream.next().await {
            response.apply(&event?);
        }
        Ok(response)
    }

    /// The history entries this answer adds: its reasoning, its text (when
    /// there is any), then its tool calls, ready for the next request's `messages`.
    pub fn to_messages(&self) -> Vec<Message> {
        let text = (!self.text.is_empty()).then(|| Message::assistant(self.text.clone()));
        let reasoning = self.reasoning.iter().cloned().map(Message::Reasoning);
        reasoning.chain(text).chain(self.tool_calls.iter().cloned().map(Message::ToolCall)).collect()
    }
}
