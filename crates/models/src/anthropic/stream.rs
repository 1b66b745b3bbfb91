//! Decodes a streamed Messages response: `message_start`, content blocks
//! (`text_delta`, `input_json_delta` for `tool_use`), `message_delta` with the
//! stop reason and output usage, `message_stop`; `ping` is ignored and an
//! `error` event fails the stream.

use crate::driver::WireDecoder;
use crate::sse::{StreamFault, clip};
use crate::types::{FinishReason, ModelEvent, Reasoning, ToolCall, ToolCallDelta, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::VecDeque;

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event<'a> {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        #[serde(borrow)]
        content_block: BlockStart<'a>,
    },
    ContentBlockDelta {
        index: usize,
        #[serde(borrow)]
        delta: BlockDelta<'a>,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: Option<MessageDeltaBody>,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockStart<'a> {
    Text {
        #[serde(borrow, default)]
        text: Cow<'a, str>,
    },
    ToolUse {
        id: String,
        name: String,
    },
    Thinking {
        #[serde(borrow, default)]
        thinking: Cow<'a, str>,
    },
    RedactedThinking {
        data: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta<'a> {
    TextDelta {
        #[serde(borrow)]
        text: Cow<'a, str>,
    },
    InputJsonDelta {
        #[serde(borrow)]
        partial_json: Cow<'a, str>,
    },
    ThinkingDelta {
        #[serde(borrow)]
        thinking: Cow<'a, str>,
    },
    SignatureDelta {
        signature: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

/// The state of one streamed message.
#[derive(Debug, Default)]
pub(super) struct MessagesDecoder {
    /// `tool_use` blocks by content-block index, until their `content_block_stop`.
    tools: Vec<Option<ToolCall>>,
    /// The thinking block open now (they do not interleave), with its index.
    thinking: Option<(usize, Reasoning)>,
    usage: Usage,
    finish: Option<FinishReason>,
    /// Whether to yield [`ModelEvent::ToolCallDelta`]s.
    deltas: bool,
}

impl MessagesDecoder {
    pub(super) fn new(deltas: bool) -> Self {
        MessagesDecoder { deltas, ..Self::default() }
    }
}

impl WireDecoder for MessagesDecoder {
    const END_MARKER: &'static str = "`message_stop`";

    fn event(&mut self, _event: &str, data: &str, out: &mut VecDeque<ModelEvent>) -> Result<bool, StreamFault> {
        let event: Event<'_> = serde_json::from_str(data).map_err(|e| {
            StreamFault::Malformed(format!("event is not a Messages stream event ({e}): {}", clip(data)))
        })?;
        match event {
            Event::MessageStart { message } => self.add_usage(message.usage.unwrap_or_default()),
            Event::ContentBlockStart { index, content_block } => match content_block {
                BlockStart::Text { text } if !text.is_empty() => {
                    out.push_back(ModelEvent::TextDelta(text.into_owned()))
                }
                BlockStart::ToolUse { id, name } => {
                    if self.tools.len() <= index {
                        self.tools.resize_with(index + 1, || None);
                    }
                    if self.deltas {
                        let (id, name, arguments) = (id.clone(), name.clone(), String::new());
                        out.push_back(ModelEvent::ToolCallDelta(ToolCallDelta { id, name, arguments }));
                    }
                    self.tools[index] = Some(ToolCall { id, name, arguments: String::new() });
                }
                BlockStart::Thinking { thinking } => {
                    if !thinking.is_empty() {
                        out.push_back(ModelEvent::ReasoningDelta(thinking.to_string()));
                    }
                    self.thinking = Some((index, Reasoning::new(super::REASONING_ORIGIN, thinking)));
                }
                BlockStart::RedactedThinking { data } => {
                    let reasoning = Reasoning { signature: Some(data), redacted: true, ..Reasoning::default() };
                    self.thinking =
                        Some((index, Reasoning { origin: Some(super::REASONING_ORIGIN.into()), ..reasoning }));
                }
                BlockStart::Text { .. } | BlockStart::Other => {}
            },
            Event::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } if !text.is_empty() => {
                    out.push_back(ModelEvent::TextDelta(text.into_owned()))
                }
                BlockDelta::InputJsonDelta { partial_json } => match self.tools.get_mut(index) {
                    Some(Some(call)) => {
                        call.arguments.push_str(&partial_json);
                        if self.deltas && !partial_json.is_empty() {
                            let (id, name, arguments) = (call.id.clone(), call.name.clone(), partial_json.into_owned());
                            out.push_back(ModelEvent::ToolCallDelta(ToolCallDelta { id, name, arguments }));
                        }
                    }
                    _ => {
                        return Err(StreamFault::Malformed(format!(
                            "input_json_delta for block {index}, not a tool_use"
                        )));
                    }
                },
                BlockDelta::ThinkingDelta { thinking } => {
                    let reasoning = self.thinking_at(index)?;
                    reasoning.text.push_str(&thinking);
                    if !thinking.is_empty() {
                        out.push_back(ModelEvent::ReasoningDelta(thinking.into_owned()));
                    }
                }
                BlockDelta::SignatureDelta { signature } => {
                    self.thinking_at(index)?.signature.get_or_insert_with(String::new).push_str(&signature);
                }
                BlockDelta::TextDelta { .. } | BlockDelta::Other => {}
            },
            Event::ContentBlockStop { index } => {
                if let Some((_, reasoning)) = self.thinking.take_if(|(at, _)| *at == index) {
                    out.push_back(ModelEvent::Reasoning(reasoning));
                }
                if let Some(mut call) = self.tools.get_mut(index).and_then(Option::take) {
                    if call.arguments.trim().is_empty() {
                        call.arguments.push_str("{}");
                    }
                    out.push_back(ModelEvent::ToolCall(call));
                }
            }
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.and_then(|d| d.stop_reason) {
                    self.finish = Some(finish_reason(&reason));
                }
                // `message_delta` usage is cumulative: it replaces the output count.
                if let Some(usage) = usage {
                    self.add_usage(usage);
                }
            }
            Event::MessageStop => {
                out.push_back(ModelEvent::Usage(self.usage));
                out.push_back(ModelEvent::Finish(self.finish.take().unwrap_or(FinishReason::Stop)));
                return Ok(true);
            }
            Event::Error { error } => return Err(StreamFault::Upstream(upstream_message(&error))),
            Event::Ping | Event::Unknown => {}
        }
        Ok(false)
    }
}

impl MessagesDecoder {
    /// The open thinking block at `index`, which a thinking delta must be for.
    fn thinking_at(&mut self, index: usize) -> Result<&mut Reasoning, StreamFault> {
        match &mut self.thinking {
            Some((at, reasoning)) if *at == index => Ok(reasoning),
            _ => Err(StreamFault::Malformed(format!("thinking delta for block {index}, not a thinking block"))),
        }
    }

    /// Folds Anthropic usage into ours: its `input_tokens` excludes cache
    /// reads and writes, ours includes them.
    fn add_usage(&mut self, usage: WireUsage) {
        let cached = usage.cache_read_input_tokens;
        if usage.input_tokens.is_some() || cached.is_some() || usage.cache_creation_input_tokens.is_some() {
            self.usage.cached_tokens = cached.unwrap_or(0);
            self.usage.input_tokens =
                usage.input_tokens.unwrap_or(0) + cached.unwrap_or(0) + usage.cache_creation_input_tokens.unwrap_or(0);
        }
        if let Some(output) = usage.output_tokens {
            self.usage.output_tokens = output;
        }
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

fn upstream_message(error: &Value) -> String {
    let message = error.get("message").and_then(Value::as_str).unwrap_or("(no message)");
    match error.get("type").and_then(Value::as_str) {
        Some(kind) => format!("{kind}: {message}"),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_event_fails_the_stream_with_its_type_and_message() {
        let data = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let fault = MessagesDecoder::default().event("error", data, &mut VecDeque::new()).unwrap_err();
        assert_eq!(fault, StreamFault::Upstream("overloaded_error: Overloaded".into()));
    }

    #[test]
    fn thinking_blocks_stream_as_reasoning_and_end_with_their_signature() {
        let mut decoder = MessagesDecoder::default();
        let mut out = VecDeque::new();
        for data in [
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Two and "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"two."}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"b3Bh"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"4"}}"#,
        ] {
            decoder.event("", data, &mut out).unwrap();
        }
        let origin = Some(super::super::REASONING_ORIGIN.to_owned());
        assert_eq!(
            out.into_iter().collect::<Vec<_>>(),
            vec![
                ModelEvent::ReasoningDelta("Two and ".into()),
                ModelEvent::ReasoningDelta("two.".into()),
                ModelEvent::Reasoning(Reasoning {
                    text: "Two and two.".into(),
                    signature: Some("c2ln".into()),
                    origin: origin.clone(),
                    ..Reasoning::default()
                }),
                ModelEvent::Reasoning(Reasoning {
                    signature: Some("b3Bh".into()),
                    redacted: true,
                    origin,
                    ..Reasoning::default()
                }),
                ModelEvent::TextDelta("4".into()),
            ]
        );
        let stray = r#"{"type":"content_block_delta","index":5,"delta":{"type":"thinking_delta","thinking":"x"}}"#;
        assert!(matches!(decoder.event("", stray, &mut VecDeque::new()), Err(StreamFault::Malformed(_))));
    }

    #[test]
    fn usage_counts_cache_reads_as_input() {
        let mut decoder = MessagesDecoder::default();
        let mut out = VecDeque::new();
        for data in [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":1}}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":7}}"#,
            r#"{"type":"message_stop"}"#,
        ] {
            decoder.event("", data, &mut out).unwrap();
        }
        assert_eq!(
            out.into_iter().collect::<Vec<_>>(),
            vec![
                ModelEvent::Usage(Usage {
                    input_tokens: 100,
                    output_tokens: 7,
                    cached_tokens: 90,
                    reasoning_tokens: 0
                }),
                ModelEvent::Finish(FinishReason::Length),
            ]
        );
    }
}
