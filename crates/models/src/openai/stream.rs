//! Decodes a streamed Chat Completions response: `data:` chunks with content
//! and `tool_calls` deltas (assembled by index), a usage chunk, `[DONE]`.

use crate::driver::WireDecoder;
use crate::sse::{StreamFault, clip};
use crate::types::{FinishReason, ModelEvent, Reasoning, ToolCall, ToolCallDelta, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::VecDeque;

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    /// vLLM, llama.cpp, DeepSeek.
    #[serde(borrow, default)]
    reasoning_content: Option<Text<'a>>,
    /// Ollama, OpenRouter, newer vLLM.
    #[serde(borrow, default)]
    reasoning: Option<Text<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<ToolCallFragment<'a>>>,
}

/// A reasoning field: text, or something else a server put there (ignored).
#[derive(Deserialize)]
#[serde(untagged)]
enum Text<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Other(serde::de::IgnoredAny),
}

impl<'a> Text<'a> {
    fn text(self) -> Option<Cow<'a, str>> {
        match self {
            Self::Text(text) if !text.is_empty() => Some(text),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct ToolCallFragment<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// A tool call whose fragments are still arriving.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    /// Bytes of `arguments` already yielded as deltas.
    announced: Option<usize>,
}

/// The state of one streamed completion.
#[derive(Debug, Default)]
pub(super) struct ChatDecoder {
    /// Tool calls by their `index`; emitted together at the finish reason.
    calls: Vec<PartialCall>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    /// Whether to yield [`ModelEvent::ToolCallDelta`]s.
    deltas: bool,
    /// The reasoning streamed so far, until the answer (or the end) starts.
    reasoning: Option<String>,
}

impl ChatDecoder {
    pub(super) fn new(deltas: bool) -> Self {
        ChatDecoder { deltas, ..Self::default() }
    }
}

impl WireDecoder for ChatDecoder {
    const END_MARKER: &'static str = "`data: [DONE]`";

    fn event(&mut self, _event: &str, data: &str, out: &mut VecDeque<ModelEvent>) -> Result<bool, StreamFault> {
        if data == "[DONE]" {
            self.end_reasoning(out);
            self.flush_calls(out);
            if let Some(usage) = self.usage.take() {
                out.push_back(ModelEvent::Usage(usage));
            }
            let finish = self.finish.take().unwrap_or(FinishReason::Stop);
            out.push_back(ModelEvent::Finish(finish));
            return Ok(true);
        }
        let chunk: Chunk<'_> = serde_json::from_str(data).map_err(|e| {
            StreamFault::Malformed(format!("chunk is not a chat completion chunk ({e}): {}", clip(data)))
        })?;
        if let Some(error) = chunk.error {
            return Err(StreamFault::Upstream(upstream_message(&error)));
        }
        for choice in chunk.choices.into_iter().flatten().filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                if let Some(thought) = delta.reasoning_content.or(delta.reasoning).and_then(Text::text) {
                    self.reasoning.get_or_insert_with(String::new).push_str(&thought);
                    out.push_back(ModelEvent::ReasoningDelta(thought.into_owned()));
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    self.end_reasoning(out);
                    out.push_back(ModelEvent::TextDelta(text.into_owned()));
                }
                for fragment in delta.tool_calls.into_iter().flatten() {
                    self.end_reasoning(out);
                    let index = self.add_fragment(fragment);
                    if self.deltas {
                        self.announce(index, out);
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.end_reasoning(out);
                self.finish = Some(finish_reason(&reason));
                self.flush_calls(out);
            }
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
                cached_tokens: usage.prompt_tokens_details.and_then(|d| d.cached_tokens).unwrap_or(0),
                reasoning_tokens: usage.completion_tokens_details.and_then(|d| d.reasoning_tokens).unwrap_or(0),
            });
        }
        Ok(false)
    }
}

impl ChatDecoder {
    /// The reasoning block is complete once anything else starts.
    fn end_reasoning(&mut self, out: &mut VecDeque<ModelEvent>) {
        if let Some(text) = self.reasoning.take() {
            out.push_back(ModelEvent::Reasoning(Reasoning::new(super::REASONING_ORIGIN, text)));
        }
    }

    /// Adds a fragment to its call; returns the call's index.
    fn add_fragment(&mut self, fragment: ToolCallFragment<'_>) -> usize {
        // A server that omits `index` streams one call at a time: a fragment
        // with an id starts a new call, any other continues the last one.
        let index = match fragment.index {
            Some(index) => index,
            None if fragment.id.is_some() || self.calls.is_empty() => self.calls.len(),
            None => self.calls.len() - 1,
        };
        if self.calls.len() <= index {
            self.calls.resize_with(index + 1, PartialCall::default);
        }
        let call = &mut self.calls[index];
        // Some servers repeat the id and name in every fragment: the first wins.
        if let Some(id) = fragment.id.filter(|_| call.id.is_empty()) {
            call.id = id.into_owned();
        }
        if let Some(function) = fragment.function {
            if let Some(name) = function.name.filter(|_| call.name.is_empty()) {
                call.name = name.into_owned();
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
        index
    }

    /// Yields the arguments of call `index` not yielded yet, once its name is known.
    fn announce(&mut self, index: usize, out: &mut VecDeque<ModelEvent>) {
        let Some(call) = self.calls.get_mut(index).filter(|call| !call.name.is_empty()) else { return };
        let from = call.announced.unwrap_or(0);
        if call.announced.is_some() && from == call.arguments.len() {
            return;
        }
        call.announced = Some(call.arguments.len());
        let id = if call.id.is_empty() { format!("call_{index}") } else { call.id.clone() };
        let arguments = call.arguments[from..].to_owned();
        out.push_back(ModelEvent::ToolCallDelta(ToolCallDelta { id, name: call.name.clone(), arguments }));
    }

    fn flush_calls(&mut self, out: &mut VecDeque<ModelEvent>) {
        for (index, call) in self.calls.drain(..).enumerate() {
            if call.name.is_empty() && call.arguments.is_empty() {
                continue;
            }
            let id = if call.id.is_empty() { format!("call_{index}") } else { call.id };
            let arguments = if call.arguments.trim().is_empty() { "{}".to_owned() } else { call.arguments };
            out.push_back(ModelEvent::ToolCall(ToolCall { id, name: call.name, arguments }));
        }
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The human part of an `{"error": …}` object.
fn upstream_message(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(message) => match error.get("type").and_then(Value::as_str) {
            Some(kind) => format!("{kind}: {message}"),
            None => message.to_owned(),
        },
        None => clip(&error.to_string()).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&str]) -> Vec<ModelEvent> {
        let mut decoder = ChatDecoder::default();
        let mut out = VecDeque::new();
        for chunk in chunks {
            decoder.event("message", chunk, &mut out).unwrap();
        }
        out.into_iter().collect()
    }

    #[test]
    fn tool_call_fragments_are_assembled_by_index() {
        let events = run(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"ls","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"cat","arguments":"{\"p\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":2}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
            "[DONE]",
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::ToolCall(ToolCall::new("a", "ls", "{\"x\":1}")),
                ModelEvent::ToolCall(ToolCall::new("b", "cat", "{\"p\":2}")),
                ModelEvent::Usage(Usage { input_tokens: 5, output_tokens: 2, ..Usage::default() }),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn argument_fragments_are_yielded_as_deltas_when_asked() {
        let chunks = [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"arguments":"{\"s"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"call_tool","arguments":"\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ];
        let mut decoder = ChatDecoder::new(true);
        let mut out = VecDeque::new();
        for chunk in chunks {
            decoder.event("message", chunk, &mut out).unwrap();
        }
        let delta = |arguments: &str| {
            ModelEvent::ToolCallDelta(ToolCallDelta {
                id: "a".into(),
                name: "call_tool".into(),
                arguments: arguments.into(),
            })
        };
        assert_eq!(
            out.into_iter().collect::<Vec<_>>(),
            vec![
                delta("{\"s\":"),
                delta("1}"),
                ModelEvent::ToolCall(ToolCall::new("a", "call_tool", "{\"s\":1}")),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn reasoning_deltas_of_either_name_end_in_one_block_before_the_answer() {
        let events = run(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Let me "}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning":"think.","content":""}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning":{"format":"unknown"},"content":"4"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::ReasoningDelta("Let me ".into()),
                ModelEvent::ReasoningDelta("think.".into()),
                ModelEvent::Reasoning(Reasoning::new(super::super::REASONING_ORIGIN, "Let me think.")),
                ModelEvent::TextDelta("4".into()),
                ModelEvent::Finish(FinishReason::Stop),
            ]
        );
    }

    #[test]
    fn an_error_object_in_the_stream_is_an_upstream_error() {
        let mut decoder = ChatDecoder::default();
        let fault = decoder
            .event("message", r#"{"error":{"message":"overloaded","type":"server_error"}}"#, &mut VecDeque::new())
            .unwrap_err();
        assert_eq!(fault, StreamFault::Upstream("server_error: overloaded".into()));
    }
}
