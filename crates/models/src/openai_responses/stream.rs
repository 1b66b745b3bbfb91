//! Decodes a streamed Responses API answer: `response.output_item.added` /
//! `.done` frame each output item (message, `function_call`, `reasoning`);
//! text, argument and reasoning deltas stream in between; the stream ends
//! with `response.completed` or `response.incomplete` (usage, status), or
//! fails with `response.failed` or `error`.

use crate::driver::WireDecoder;
use crate::sse::{StreamFault, clip};
use crate::types::{FinishReason, ModelEvent, Reasoning, ToolCall, ToolCallDelta, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Event<'a> {
    #[serde(rename = "response.output_item.added")]
    ItemAdded { item: OutputItem },
    #[serde(rename = "response.output_item.done")]
    ItemDone { item: OutputItem },
    #[serde(rename = "response.output_text.delta")]
    TextDelta {
        #[serde(borrow)]
        delta: Cow<'a, str>,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta {
        item_id: String,
        #[serde(borrow)]
        delta: Cow<'a, str>,
    },
    #[serde(rename = "response.reasoning_summary_part.added")]
    SummaryPartAdded {
        #[serde(default)]
        summary_index: usize,
    },
    #[serde(rename = "response.reasoning_summary_text.delta", alias = "response.reasoning_text.delta")]
    ReasoningDelta {
        #[serde(borrow)]
        delta: Cow<'a, str>,
    },
    #[serde(rename = "response.completed", alias = "response.incomplete")]
    Completed { response: Finished },
    #[serde(rename = "response.failed")]
    Failed { response: Finished },
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        code: Option<String>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutputItem {
    FunctionCall {
        #[serde(default)]
        id: Option<String>,
        call_id: String,
        name: String,
        #[serde(default)]
        arguments: String,
    },
    Reasoning {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        summary: Vec<TextPart>,
        #[serde(default)]
        content: Option<Vec<TextPart>>,
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct TextPart {
    #[serde(default)]
    text: String,
}

#[derive(Deserialize)]
struct Finished {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<Incomplete>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Incomplete {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<Details>,
    #[serde(default)]
    output_tokens_details: Option<Details>,
}

#[derive(Deserialize)]
struct Details {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// A function call whose arguments are streaming.
struct OpenCall {
    call_id: String,
    name: String,
}

/// The state of one streamed response.
#[derive(Default)]
pub(super) struct ResponsesDecoder {
    /// Function calls by item id, while their arguments stream.
    calls: HashMap<String, OpenCall>,
    /// Whether any function call completed.
    called: bool,
    /// Whether to yield [`ModelEvent::ToolCallDelta`]s.
    deltas: bool,
}

impl ResponsesDecoder {
    pub(super) fn new(deltas: bool) -> Self {
        Self { deltas, ..Self::default() }
    }
}

impl WireDecoder for ResponsesDecoder {
    const END_MARKER: &'static str = "`response.completed`";

    fn event(&mut self, _event: &str, data: &str, out: &mut VecDeque<ModelEvent>) -> Result<bool, StreamFault> {
        let event: Event<'_> = serde_json::from_str(data).map_err(|e| {
            StreamFault::Malformed(format!("event is not a Responses stream event ({e}): {}", clip(data)))
        })?;
        match event {
            Event::ItemAdded { item: OutputItem::FunctionCall { id, call_id, name, arguments } } => {
                if self.deltas {
                    let delta = ToolCallDelta { id: call_id.clone(), name: name.clone(), arguments };
                    out.push_back(ModelEvent::ToolCallDelta(delta));
                }
                self.calls.insert(id.unwrap_or_else(|| call_id.clone()), OpenCall { call_id, name });
            }
            Event::ItemAdded { .. } | Event::Other => {}
            Event::ItemDone { item } => self.item_done(item, out),
            Event::TextDelta { delta } if !delta.is_empty() => out.push_back(ModelEvent::TextDelta(delta.into_owned())),
            Event::TextDelta { .. } => {}
            Event::ArgumentsDelta { item_id, delta } => {
                if let Some(call) = self.calls.get(&item_id).filter(|_| self.deltas && !delta.is_empty()) {
                    let (id, name) = (call.call_id.clone(), call.name.clone());
                    out.push_back(ModelEvent::ToolCallDelta(ToolCallDelta { id, name, arguments: delta.into_owned() }));
                }
            }
            // Parts of one summary are joined by a blank line, in the deltas as in the text.
            Event::SummaryPartAdded { summary_index } if summary_index > 0 => {
                out.push_back(ModelEvent::ReasoningDelta(PART_SEPARATOR.to_owned()));
            }
            Event::SummaryPartAdded { .. } => {}
            Event::ReasoningDelta { delta } if !delta.is_empty() => {
                out.push_back(ModelEvent::ReasoningDelta(delta.into_owned()))
            }
            Event::ReasoningDelta { .. } => {}
            Event::Completed { mut response } => {
                if let Some(usage) = response.usage.take() {
                    out.push_back(ModelEvent::Usage(usage.into()));
                }
                out.push_back(ModelEvent::Finish(self.finish(&response)));
                return Ok(true);
            }
            Event::Failed { response } => {
                let error = response.error.unwrap_or(Value::Null);
                return Err(StreamFault::Upstream(upstream_message(&error)));
            }
            Event::Error { message, code } => {
                let message = message.unwrap_or_else(|| "(no message)".to_owned());
                return Err(StreamFault::Upstream(match code {
                    Some(code) => format!("{code}: {message}"),
                    None => message,
                }));
            }
        }
        Ok(false)
    }
}

/// What joins the parts of a reasoning summary.
const PART_SEPARATOR: &str = "\n\n";

impl ResponsesDecoder {
    fn item_done(&mut self, item: OutputItem, out: &mut VecDeque<ModelEvent>) {
        match item {
            OutputItem::FunctionCall { id, call_id, name, arguments } => {
                self.calls.remove(id.as_deref().unwrap_or(&call_id));
                self.called = true;
                let arguments = if arguments.trim().is_empty() { "{}".to_owned() } else { arguments };
                out.push_back(ModelEvent::ToolCall(ToolCall { id: call_id, name, arguments }));
            }
            OutputItem::Reasoning { id, summary, content, encrypted_content } => {
                let parts = if summary.is_empty() { content.unwrap_or_default() } else { summary };
                let text = parts.into_iter().map(|part| part.text).collect::<Vec<_>>().join(PART_SEPARATOR);
                out.push_back(ModelEvent::Reasoning(Reasoning {
                    text,
                    signature: encrypted_content,
                    redacted: false,
                    id,
                    origin: Some(super::REASONING_ORIGIN.to_owned()),
                }));
            }
            OutputItem::Other => {}
        }
    }

    fn finish(&self, response: &Finished) -> FinishReason {
        let reason = response.incomplete_details.as_ref().and_then(|details| details.reason.as_deref());
        match (response.status.as_deref(), reason) {
            (Some("incomplete"), Some("max_output_tokens")) => FinishReason::Length,
            (Some("incomplete"), Some("content_filter")) => FinishReason::ContentFilter,
            (Some("incomplete"), other) => FinishReason::Other(other.unwrap_or("incomplete").to_owned()),
            _ if self.called => FinishReason::ToolCalls,
            _ => FinishReason::Stop,
        }
    }
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cached_tokens: usage.input_tokens_details.and_then(|d| d.cached_tokens).unwrap_or(0),
            reasoning_tokens: usage.output_tokens_details.and_then(|d| d.reasoning_tokens).unwrap_or(0),
        }
    }
}

fn upstream_message(error: &Value) -> String {
    let message = error.get("message").and_then(Value::as_str).unwrap_or("the response failed");
    match error.get("code").and_then(Value::as_str) {
        Some(code) => format!("{code}: {message}"),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(decoder: &mut ResponsesDecoder, events: &[&str]) -> Vec<ModelEvent> {
        let mut out = VecDeque::new();
        for data in events {
            decoder.event("", data, &mut out).unwrap();
        }
        out.into_iter().collect()
    }

    #[test]
    fn reasoning_text_and_calls_become_events_in_order() {
        let events = run(
            &mut ResponsesDecoder::new(true),
            &[
                r#"{"type":"response.created","response":{"id":"resp_1"}}"#,
                r#"{"type":"response.output_item.added","item":{"type":"reasoning","id":"rs_1","summary":[]}}"#,
                r#"{"type":"response.reasoning_summary_part.added","summary_index":0}"#,
                r#"{"type":"response.reasoning_summary_text.delta","delta":"First."}"#,
                r#"{"type":"response.reasoning_summary_part.added","summary_index":1}"#,
                r#"{"type":"response.reasoning_summary_text.delta","delta":"Second."}"#,
                r#"{"type":"response.output_item.done","item":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"First."},{"type":"summary_text","text":"Second."}],"encrypted_content":"enc"}}"#,
                r#"{"type":"response.output_text.delta","item_id":"msg_1","delta":"Ok"}"#,
                r#"{"type":"response.output_item.added","item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"ls","arguments":""}}"#,
                r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{\"a\":"}"#,
                r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"1}"}"#,
                r#"{"type":"response.output_item.done","item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"ls","arguments":"{\"a\":1}"}}"#,
                r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":9,"output_tokens":5,"input_tokens_details":{"cached_tokens":4},"output_tokens_details":{"reasoning_tokens":3}}}}"#,
            ],
        );
        let delta = |arguments: &str| {
            ModelEvent::ToolCallDelta(ToolCallDelta {
                id: "call_1".into(),
                name: "ls".into(),
                arguments: arguments.into(),
            })
        };
        assert_eq!(
            events,
            vec![
                ModelEvent::ReasoningDelta("First.".into()),
                ModelEvent::ReasoningDelta(PART_SEPARATOR.into()),
                ModelEvent::ReasoningDelta("Second.".into()),
                ModelEvent::Reasoning(Reasoning {
                    text: format!("First.{PART_SEPARATOR}Second."),
                    signature: Some("enc".into()),
                    redacted: false,
                    id: Some("rs_1".into()),
                    origin: Some(super::super::REASONING_ORIGIN.into()),
                }),
                ModelEvent::TextDelta("Ok".into()),
                delta(""),
                delta("{\"a\":"),
                delta("1}"),
                ModelEvent::ToolCall(ToolCall::new("call_1", "ls", "{\"a\":1}")),
                ModelEvent::Usage(Usage { input_tokens: 9, output_tokens: 5, cached_tokens: 4, reasoning_tokens: 3 }),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn an_incomplete_response_says_why_and_a_failure_is_an_upstream_error() {
        let done = r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#;
        assert_eq!(run(&mut ResponsesDecoder::default(), &[done]), vec![ModelEvent::Finish(FinishReason::Length)]);
        let failed = r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}"#;
        let fault = ResponsesDecoder::default().event("", failed, &mut VecDeque::new()).unwrap_err();
        assert_eq!(fault, StreamFault::Upstream("server_error: boom".into()));
        let error = r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down"}"#;
        let fault = ResponsesDecoder::default().event("", error, &mut VecDeque::new()).unwrap_err();
        assert_eq!(fault, StreamFault::Upstream("rate_limit_exceeded: slow down".into()));
    }
}
