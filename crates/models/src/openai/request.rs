//! Serializes a [`ModelRequest`] into a Chat Completions request body,
//! borrowing from the request instead of copying the history.

use crate::error::{ModelError, Result};
use crate::types::encoded::{Place, Span, spans};
use crate::types::{Message, ModelRequest, TextFormat};
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

/// The body after its `messages`, which are written first (see [`body`]).
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verbosity: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_tier: Option<&'a str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    /// `null` for an assistant message made of tool calls only.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> WireMessage<'a> {
    fn new(role: &'static str, content: Option<&'a str>) -> Self {
        Self { role, content, tool_calls: Vec::new(), tool_call_id: None }
    }
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    r#type: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResponseFormat<'a> {
    JsonSchema { json_schema: JsonSchema<'a> },
    JsonObject,
}

#[derive(Serialize)]
struct JsonSchema<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    schema: &'a Value,
    strict: bool,
}

impl<'a> ResponseFormat<'a> {
    fn new(format: &'a TextFormat) -> Self {
        match format {
            TextFormat::JsonSchema { name, description, schema, strict } => Self::JsonSchema {
                json_schema: JsonSchema { name, description: description.as_deref(), schema, strict: *strict },
            },
            TextFormat::JsonObject => Self::JsonObject,
        }
    }
}

/// The JSON body for `request`, always streamed with usage: `messages`
/// first (the history's encodings reused from the turn's earlier steps),
/// then the other fields.
pub(super) fn body(request: &ModelRequest, provider: &str) -> Result<Bytes> {
    let fail = |error: serde_json::Error| ModelError::Config {
        message: format!("model provider `{provider}`: cannot serialize the request: {error}"),
    };
    let history = spans(&request.messages, place);
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(b"{\"messages\":[");
    if let Some(instructions) = &request.instructions {
        serde_json::to_writer(&mut out, &WireMessage::new("system", Some(instructions))).map_err(fail)?;
        if !history.is_empty() {
            out.push(b',');
        }
    }
    let wire = |span: &Span| wire_message(request.messages.get(span.range.clone()).unwrap_or_default(), span.role);
    request.encoded.write("openai_chat", request.messages.len(), &history, wire, &mut out).map_err(fail)?;
    out.extend_from_slice(b"],");
    let rest = Body {
        model: &request.model,
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool {
                r#type: "function",
                function: WireFunction {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.parameters,
                },
            })
            .collect(),
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        reasoning_effort: request.reasoning_effort.map(|effort| effort.as_str()),
        response_format: request.text_format.as_ref().map(ResponseFormat::new),
        max_completion_tokens: request.max_output_tokens,
        temperature: request.temperature,
        top_p: request.top_p,
        verbosity: request.verbosity.map(|verbosity| verbosity.as_str()),
        service_tier: request.service_tier.as_deref(),
    };
    let rest = serde_json::to_vec(&rest).map_err(fail)?;
    // `rest` is an object with `model` at least: its fields follow the messages.
    out.extend_from_slice(rest.get(1..).unwrap_or_default());
    Ok(Bytes::from(out))
}

/// Where a message goes: a tool call joins the assistant message right
/// before it (its text or earlier calls of the same step), as Chat
/// Completions wants them together; reasoning has no place in the history
/// (DeepSeek refuses a `reasoning_content` sent back).
fn place(message: &Message) -> Option<Place> {
    let (role, joins) = match message {
        Message::User { .. } => ("user", false),
        Message::Reasoning(_) => return None,
        Message::Assistant { .. } => ("assistant", false),
        Message::ToolCall(_) => ("assistant", true),
        Message::ToolResult { .. } => ("tool", false),
    };
    Some(Place { role, joins })
}

/// The wire message of one span: its first message, then the tool calls
/// that joined it.
fn wire_message<'a>(messages: &'a [Message], role: &'static str) -> WireMessage<'a> {
    let mut wire = WireMessage::new(role, None);
    for message in messages {
        match message {
            Message::User { text } | Message::Assistant { text } => wire.content = Some(text),
            Message::ToolResult { call_id, content } => {
                wire.content = Some(content);
                wire.tool_call_id = Some(call_id);
            }
            Message::ToolCall(call) => wire.tool_calls.push(WireToolCall {
                id: &call.id,
                r#type: "function",
                function: WireFunctionCall { name: &call.name, arguments: &call.arguments },
            }),
            Message::Reasoning(_) => {}
        }
    }
    wire
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_turns_kept_encodings_change_no_body() {
        crate::types::encoded::assert_reuse_changes_nothing(|r| body(r, "p").unwrap());
    }
    use crate::types::{Reasoning, ReasoningEffort, ToolCall, ToolSpec, Verbosity};
    use serde_json::json;

    #[test]
    fn history_becomes_chat_messages_with_tool_calls_grouped() {
        let request = ModelRequest {
            model: "m".into(),
            instructions: Some("be brief".into()),
            messages: vec![
                Message::user("hi"),
                Message::assistant("let me look"),
                Message::ToolCall(ToolCall::new("c1", "ls", "{}")),
                Message::ToolCall(ToolCall::new("c2", "cat", "{\"p\":1}")),
                Message::tool_result("c1", "a b"),
                Message::tool_result("c2", "text"),
            ],
            tools: vec![ToolSpec::new("ls", "list", json!({"type": "object"}))],
            reasoning_effort: Some(ReasoningEffort::Low),
            ..ModelRequest::default()
        };
        let sent: Value = serde_json::from_slice(&body(&request, "openai").unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "let me look", "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                        {"id": "c2", "type": "function", "function": {"name": "cat", "arguments": "{\"p\":1}"}}
                    ]},
                    {"role": "tool", "content": "a b", "tool_call_id": "c1"},
                    {"role": "tool", "content": "text", "tool_call_id": "c2"}
                ],
                "tools": [{"type": "function", "function": {"name": "ls", "description": "list", "parameters": {"type": "object"}}}],
                "stream": true,
                "stream_options": {"include_usage": true},
                "reasoning_effort": "low"
            })
        );
    }

    #[test]
    fn output_and_sampling_settings_are_sent_and_reasoning_is_not() {
        let mut request = ModelRequest::new("m").message(Message::user("hi"));
        request.messages.push(Message::Reasoning(Reasoning::new(super::super::REASONING_ORIGIN, "hmm")));
        request.messages.push(Message::assistant("{}"));
        request.text_format = Some(TextFormat::JsonObject);
        request.temperature = Some(0.5);
        request.top_p = Some(0.9);
        request.verbosity = Some(Verbosity::Low);
        request.service_tier = Some("flex".into());
        request.max_output_tokens = Some(64);
        let sent: Value = serde_json::from_slice(&body(&request, "openai").unwrap()).unwrap();
        assert_eq!(sent["response_format"], json!({"type": "json_object"}));
        assert_eq!(
            sent["messages"],
            json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "{}"}])
        );
        assert_eq!(
            (&sent["temperature"], &sent["top_p"], &sent["verbosity"], &sent["service_tier"]),
            (&json!(0.5), &json!(0.9), &json!("low"), &json!("flex"))
        );
        assert_eq!(sent["max_completion_tokens"], json!(64));

        request.text_format = Some(TextFormat::JsonSchema {
            name: "answer".into(),
            description: Some("the answer".into()),
            schema: json!({"type": "object"}),
            strict: false,
        });
        let sent: Value = serde_json::from_slice(&body(&request, "openai").unwrap()).unwrap();
        assert_eq!(
            sent["response_format"],
            json!({"type": "json_schema", "json_schema": {
                "name": "answer", "description": "the answer", "schema": {"type": "object"}, "strict": false
            }})
        );
    }
}
