//! Serializes a [`ModelRequest`] into a Messages API request body. Roles must
//! alternate there, so consecutive entries of one role share a message:
//! assistant text and its `tool_use` blocks, and the `tool_result` blocks
//! (plus any user text) that answer them.

use super::DEFAULT_MAX_TOKENS;
use crate::error::{ModelError, Result};
use crate::types::{Message, ModelRequest, ToolCall};
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
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
    let mut messages: Vec<WireMessage<'_>> = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        let (role, block) = match message {
            Message::User { text } => ("user", Block::Text { text }),
            Message::Assistant { text } if text.is_empty() => continue,
            Message::Assistant { text } => ("assistant", Block::Text { text }),
            Message::ToolCall(call) => ("assistant", tool_use(call)),
            Message::ToolResult { call_id, content } => ("user", Block::ToolResult { tool_use_id: call_id, content }),
        };
        match messages.last_mut() {
            Some(last) if last.role == role => last.content.push(block),
            _ => messages.push(WireMessage { role, content: vec![block] }),
        }
    }
    let body = Body {
        model: &request.model,
        max_tokens: request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        system: request.instructions.as_deref(),
        messages,
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool { name: &tool.name, description: &tool.description, input_schema: &tool.parameters })
            .collect(),
        stream: true,
    };
    serde_json::to_vec(&body).map(Bytes::from).map_err(|error| ModelError::Config {
        message: format!("model provider `{provider}`: cannot serialize the request: {error}"),
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
        let body: Value = serde_json::from_slice(&body(&request, "anthropic").unwrap()).unwrap();
        assert_eq!(
            body,
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
}
