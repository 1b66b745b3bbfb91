//! Serializes a [`ModelRequest`] into a Messages API request body. Roles must
//! alternate there, so consecutive entries of one role share a message:
//! assistant text and its `tool_use` blocks, and the `tool_result` blocks
//! (plus any user text) that answer them.

use super::{DEFAULT_MAX_TOKENS, JSON_OBJECT_INSTRUCTION, MIN_THINKING_BUDGET};
use crate::error::{ModelError, Result};
use crate::types::encoded::{Place, Span, spans};
use crate::types::{Message, ModelRequest, Reasoning, ReasoningEffort, TextFormat, ToolCall};
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
}

#[derive(Serialize)]
struct Thinking {
    r#type: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize)]
struct OutputConfig<'a> {
    format: OutputFormat<'a>,
}

#[derive(Serialize)]
struct OutputFormat<'a> {
    r#type: &'static str,
    schema: &'a Value,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Thinking { thinking: &'a str, signature: &'a str },
    RedactedThinking { data: &'a str },
    Text { text: &'a str },
    ToolUse { id: &'a str, name: &'a str, input: Input<'a> },
    ToolResult { tool_use_id: &'a str, content: &'a str },
}

/// `tool_use.input` must be a JSON object: the model's own arguments when
/// they are one, otherwise the raw text wrapped so the history stays valid.
#[derive(Serialize)]
#[serde(untagged)]
enum Input<'a> {
    Raw(&'a RawValue),
    Wrapped(Value),
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

pub(super) fn body(request: &ModelRequest, provider: &str) -> Result<Bytes> {
    let fail = |error: serde_json::Error| ModelError::Config {
        message: format!("model provider `{provider}`: cannot serialize the request: {error}"),
    };
    let messages = spans(&request.messages, |message| role(message).map(|role| Place { role, joins: true }));
    // The messages first, their encodings reused from the turn's earlier steps.
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(b"{\"messages\":[");
    let wire = |span: &Span| WireMessage {
        role: span.role,
        content: request.messages.get(span.range.clone()).unwrap_or_default().iter().filter_map(block).collect(),
    };
    request.encoded.write("anthropic", request.messages.len(), &messages, wire, &mut out).map_err(fail)?;
    out.extend_from_slice(b"],");
    let (max_tokens, thinking) = budget(request);
    let thinks = thinking.is_some();
    let sampling = |value: Option<f64>| value.filter(|_| !thinks);
    let body = Body {
        model: &request.model,
        max_tokens,
        system: system(request),
        thinking,
        temperature: sampling(request.temperature),
        top_p: sampling(request.top_p),
        output_config: match &request.text_format {
            Some(TextFormat::JsonSchema { schema, .. }) => {
                Some(OutputConfig { format: OutputFormat { r#type: "json_schema", schema } })
            }
            Some(TextFormat::JsonObject) | None => None,
        },
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool { name: &tool.name, description: &tool.description, input_schema: &tool.parameters })
            .collect(),
        stream: true,
    };
    let rest = serde_json::to_vec(&body).map_err(fail)?;
    // `rest` is an object with `model` at least: its fields follow the messages.
    out.extend_from_slice(rest.get(1..).unwrap_or_default());
    Ok(Bytes::from(out))
}

/// The thinking budget for the requested effort: `max_tokens` counts the
/// thinking too, so an unset limit grows by the budget, and a set one
/// smaller than the smallest budget the API takes (1024) turns thinking off.
fn budget(request: &ModelRequest) -> (u32, Option<Thinking>) {
    let budget = match request.reasoning_effort {
        None | Some(ReasoningEffort::None) => None,
        Some(ReasoningEffort::Minimal | ReasoningEffort::Low) => Some(MIN_THINKING_BUDGET),
        Some(ReasoningEffort::Medium) => Some(4096),
        Some(ReasoningEffort::High) => Some(16384),
        Some(ReasoningEffort::XHigh) => Some(32768),
    };
    let thinking = |budget_tokens| Some(Thinking { r#type: "enabled", budget_tokens });
    match (request.max_output_tokens, budget) {
        (None, None) => (DEFAULT_MAX_TOKENS, None),
        (None, Some(budget)) => (DEFAULT_MAX_TOKENS + budget, thinking(budget)),
        (Some(max), Some(budget)) if max > MIN_THINKING_BUDGET => (max, thinking(budget.min(max - 1))),
        (Some(max), _) => (max, None),
    }
}

/// The system prompt; `json_object`, which the API has no setting for,
/// becomes a sentence at its end.
fn system(request: &ModelRequest) -> Option<Cow<'_, str>> {
    let instructions = request.instructions.as_deref();
    match (&request.text_format, instructions) {
        (Some(TextFormat::JsonObject), Some(text)) => Some(Cow::Owned(format!("{text}\n\n{JSON_OBJECT_INSTRUCTION}"))),
        (Some(TextFormat::JsonObject), None) => Some(Cow::Borrowed(JSON_OBJECT_INSTRUCTION)),
        (_, text) => text.map(Cow::Borrowed),
    }
}

/// A thinking block to send back: only Anthropic's own, with the signature
/// the API checks; a block without one (cut off mid-stream) is dropped.
/// The role of the message a history message goes into, or `None` when it
/// is left out (empty text, another provider's reasoning): consecutive ones
/// of a role share a message.
fn role(message: &Message) -> Option<&'static str> {
    Some(match message {
        Message::User { .. } | Message::ToolResult { .. } => "user",
        Message::Reasoning(reasoning) => thinking_block(reasoning).map(|_| "assistant")?,
        Message::Assistant { text } if text.is_empty() => return None,
        Message::Assistant { .. } | Message::ToolCall(_) => "assistant",
    })
}

/// A history message's block, or `None` when it is left out (as [`role`] says).
fn block(message: &Message) -> Option<Block<'_>> {
    Some(match message {
        Message::User { text } => Block::Text { text },
        Message::Reasoning(reasoning) => thinking_block(reasoning)?,
        Message::Assistant { text } if text.is_empty() => return None,
        Message::Assistant { text } => Block::Text { text },
        Message::ToolCall(call) => tool_use(call),
        Message::ToolResult { call_id, content } => Block::ToolResult { tool_use_id: call_id, content },
    })
}

fn thinking_block(reasoning: &Reasoning) -> Option<Block<'_>> {
    let signature = reasoning.signature.as_deref().filter(|_| reasoning.is_from(super::REASONING_ORIGIN))?;
    Some(match reasoning.redacted {
        true => Block::RedactedThinking { data: signature },
        false => Block::Thinking { thinking: &reasoning.text, signature },
    })
}

fn tool_use(call: &ToolCall) -> Block<'_> {
    let input = match serde_json::from_str::<&RawValue>(&call.arguments) {
        Ok(raw) if raw.get().trim_start().starts_with('{') => Input::Raw(raw),
        _ => Input::Wrapped(serde_json::json!({ "raw_arguments": call.arguments })),
    };
    Block::ToolUse { id: &call.id, name: &call.name, input }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_turns_kept_encodings_change_no_body() {
        crate::types::encoded::assert_reuse_changes_nothing(|r| body(r, "p").unwrap());
    }
    use serde_json::json;

    #[test]
    fn tool_use_and_tool_results_are_grouped_into_alternating_turns() {
        let request = ModelRequest {
            model: "claude-x".into(),
            instructions: Some("sys".into()),
            messages: vec![
                Message::user("hi"),
                Message::assistant("looking"),
                Message::ToolCall(ToolCall::new("t1", "ls", "{\"a\": 1}")),
                Message::ToolCall(ToolCall::new("t2", "ls", "{oops")),
                Message::tool_result("t1", "out1"),
                Message::tool_result("t2", "bad arguments"),
                Message::user("and?"),
            ],
            ..ModelRequest::default()
        };
        let sent: Value = serde_json::from_slice(&body(&request, "anthropic").unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({
                "model": "claude-x",
                "max_tokens": DEFAULT_MAX_TOKENS,
                "system": "sys",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "looking"},
                        {"type": "tool_use", "id": "t1", "name": "ls", "input": {"a": 1}},
                        {"type": "tool_use", "id": "t2", "name": "ls", "input": {"raw_arguments": "{oops"}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "out1"},
                        {"type": "tool_result", "tool_use_id": "t2", "content": "bad arguments"},
                        {"type": "text", "text": "and?"}
                    ]}
                ],
                "stream": true
            })
        );
    }

    fn with(effort: Option<ReasoningEffort>, max: Option<u32>) -> Value {
        let mut request = ModelRequest::new("claude-x").message(Message::user("hi"));
        request.reasoning_effort = effort;
        request.max_output_tokens = max;
        request.temperature = Some(0.2);
        serde_json::from_slice(&body(&request, "anthropic").unwrap()).unwrap()
    }

    #[test]
    fn effort_becomes_a_thinking_budget_inside_max_tokens_and_drops_sampling() {
        let sent = with(Some(ReasoningEffort::Medium), None);
        assert_eq!(sent["thinking"], json!({"type": "enabled", "budget_tokens": 4096}));
        assert_eq!(sent["max_tokens"], json!(DEFAULT_MAX_TOKENS + 4096));
        assert_eq!(sent.get("temperature"), None);
        let sent = with(Some(ReasoningEffort::XHigh), Some(20000));
        assert_eq!(sent["thinking"], json!({"type": "enabled", "budget_tokens": 19999}));
        assert_eq!(sent["max_tokens"], json!(20000));
        let sent = with(Some(ReasoningEffort::High), Some(1000));
        assert_eq!((sent.get("thinking"), &sent["max_tokens"]), (None, &json!(1000)));
        assert_eq!(sent["temperature"], json!(0.2));
        let sent = with(Some(ReasoningEffort::None), None);
        assert_eq!((sent.get("thinking"), &sent["temperature"]), (None, &json!(0.2)));
    }

    #[test]
    fn own_signed_thinking_goes_back_first_and_other_reasoning_does_not() {
        let signed =
            Reasoning { signature: Some("sig".into()), ..Reasoning::new(super::super::REASONING_ORIGIN, "hm") };
        let redacted = Reasoning {
            signature: Some("opaque".into()),
            redacted: true,
            ..Reasoning::new(super::super::REASONING_ORIGIN, "")
        };
        let foreign = Reasoning { signature: Some("enc".into()), ..Reasoning::new("openai_responses", "x") };
        let unsigned = Reasoning::new(super::super::REASONING_ORIGIN, "cut off");
        let request = ModelRequest::new("claude-x")
            .message(Message::user("hi"))
            .message(Message::Reasoning(signed))
            .message(Message::Reasoning(redacted))
            .message(Message::Reasoning(foreign))
            .message(Message::Reasoning(unsigned))
            .message(Message::ToolCall(ToolCall::new("t1", "ls", "{}")));
        let sent: Value = serde_json::from_slice(&body(&request, "anthropic").unwrap()).unwrap();
        assert_eq!(
            sent["messages"][1],
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}
            ]})
        );
    }

    #[test]
    fn a_schema_is_an_output_format_and_json_object_a_sentence_of_the_system_prompt() {
        let mut request = ModelRequest::new("claude-x").instructions("be brief").message(Message::user("hi"));
        request.text_format = Some(TextFormat::json_schema("answer", json!({"type": "object"})));
        let sent: Value = serde_json::from_slice(&body(&request, "anthropic").unwrap()).unwrap();
        assert_eq!(sent["output_config"], json!({"format": {"type": "json_schema", "schema": {"type": "object"}}}));
        assert_eq!(sent["system"], json!("be brief"));
        request.text_format = Some(TextFormat::JsonObject);
        let sent: Value = serde_json::from_slice(&body(&request, "anthropic").unwrap()).unwrap();
        assert_eq!(sent.get("output_config"), None);
        assert_eq!(sent["system"], json!(format!("be brief\n\n{JSON_OBJECT_INSTRUCTION}")));
    }
}
