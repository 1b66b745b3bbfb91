//! Serializes a [`ModelRequest`] into a Responses API request body: the
//! history as input items (messages, `function_call`, `function_call_output`,
//! `reasoning`), borrowing from the request.

use crate::error::{ModelError, Result};
use crate::types::encoded::{Place, Span, spans};
use crate::types::{Message, ModelRequest, Reasoning, ReasoningEffort, TextFormat};
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

/// The body after its `input`, which is written first (see [`body`]).
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    stream: bool,
    store: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Text<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_tier: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    Message {
        role: &'static str,
        content: &'a str,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
    Reasoning {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        summary: Vec<Summary<'a>>,
        encrypted_content: &'a str,
    },
}

#[derive(Serialize)]
struct Summary<'a> {
    r#type: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct Tool<'a> {
    r#type: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: bool,
}

#[derive(Serialize)]
struct ReasoningConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'static str>,
}

#[derive(Serialize)]
struct Text<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<Format<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verbosity: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Format<'a> {
    JsonSchema {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<&'a str>,
        schema: &'a Value,
        strict: bool,
    },
    JsonObject,
}

pub(super) fn body(request: &ModelRequest, provider: &str) -> Result<Bytes> {
    let fail = |error: serde_json::Error| ModelError::Config {
        message: format!("model provider `{provider}`: cannot serialize the request: {error}"),
    };
    // Each item a wire message of its own (none joins another).
    let input = spans(&request.messages, |message| item(message).map(|_| Place { role: "item", joins: false }));
    // The input first, its items' encodings reused from the turn's earlier steps.
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(b"{\"input\":[");
    let wire = |span: &Span| request.messages.get(span.range.start).and_then(item);
    request.encoded.write("openai_responses", request.messages.len(), &input, wire, &mut out).map_err(fail)?;
    out.extend_from_slice(b"],");
    let reasoning =
        (request.reasoning_effort.is_some() || request.reasoning_summary.is_some()).then(|| ReasoningConfig {
            effort: request.reasoning_effort.map(ReasoningEffort::as_str),
            summary: request.reasoning_summary.map(|summary| summary.as_str()),
        });
    let reasons = request.reasoning_effort.is_some_and(|effort| effort != ReasoningEffort::None);
    let format = request.text_format.as_ref().map(|format| match format {
        TextFormat::JsonSchema { name, description, schema, strict } => {
            Format::JsonSchema { name, description: description.as_deref(), schema, strict: *strict }
        }
        TextFormat::JsonObject => Format::JsonObject,
    });
    let verbosity = request.verbosity.map(|verbosity| verbosity.as_str());
    let body = Body {
        model: &request.model,
        instructions: request.instructions.as_deref(),
        tools: request
            .tools
            .iter()
            .map(|tool| Tool {
                r#type: "function",
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
                strict: false,
            })
            .collect(),
        stream: true,
        store: false,
        include: if reasons || request.reasoning_summary.is_some() {
            vec!["reasoning.encrypted_content"]
        } else {
            Vec::new()
        },
        reasoning,
        text: (format.is_some() || verbosity.is_some()).then_some(Text { format, verbosity }),
        max_output_tokens: request.max_output_tokens,
        temperature: request.temperature,
        top_p: request.top_p,
        service_tier: request.service_tier.as_deref(),
    };
    let rest = serde_json::to_vec(&body).map_err(fail)?;
    // `rest` is an object with `model` at least: its fields follow the input.
    out.extend_from_slice(rest.get(1..).unwrap_or_default());
    Ok(Bytes::from(out))
}

fn item(message: &Message) -> Option<Item<'_>> {
    Some(match message {
        Message::User { text } => Item::Message { role: "user", content: text },
        Message::Assistant { text } => Item::Message { role: "assistant", content: text },
        Message::ToolCall(call) => {
            Item::FunctionCall { call_id: &call.id, name: &call.name, arguments: &call.arguments }
        }
        Message::ToolResult { call_id, content } => Item::FunctionCallOutput { call_id, output: content },
        Message::Reasoning(reasoning) => return reasoning_item(reasoning),
    })
}

/// Only this wire format's own reasoning, and only with its encrypted
/// content: with `store: false` the upstream cannot look an id up.
fn reasoning_item(reasoning: &Reasoning) -> Option<Item<'_>> {
    let encrypted_content = reasoning.signature.as_deref().filter(|_| reasoning.is_from(super::REASONING_ORIGIN))?;
    let summary = match reasoning.text.is_empty() {
        true => Vec::new(),
        false => vec![Summary { r#type: "summary_text", text: &reasoning.text }],
    };
    Some(Item::Reasoning { id: reasoning.id.as_deref(), summary, encrypted_content })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_turns_kept_encodings_change_no_body() {
        crate::types::encoded::assert_reuse_changes_nothing(|r| body(r, "p").unwrap());
    }
    use crate::types::{ReasoningSummary, ToolCall, ToolSpec, Verbosity};
    use serde_json::json;

    #[test]
    fn history_becomes_input_items_and_settings_their_fields() {
        let own = Reasoning {
            signature: Some("enc".into()),
            id: Some("rs_1".into()),
            ..Reasoning::new(super::super::REASONING_ORIGIN, "Thinking.")
        };
        let mut request = ModelRequest::new("gpt-x")
            .instructions("sys")
            .message(Message::user("hi"))
            .message(Message::Reasoning(own))
            .message(Message::Reasoning(Reasoning::new("anthropic", "not mine")))
            .message(Message::ToolCall(ToolCall::new("call_1", "ls", "{}")))
            .message(Message::tool_result("call_1", "a b"))
            .message(Message::assistant("done"))
            .tool(ToolSpec::new("ls", "list", json!({"type": "object"})));
        request.reasoning_effort = Some(ReasoningEffort::High);
        request.reasoning_summary = Some(ReasoningSummary::Auto);
        request.text_format = Some(TextFormat::JsonObject);
        request.verbosity = Some(Verbosity::High);
        request.max_output_tokens = Some(100);
        let sent: Value = serde_json::from_slice(&body(&request, "responses").unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({
                "model": "gpt-x",
                "instructions": "sys",
                "input": [
                    {"type": "message", "role": "user", "content": "hi"},
                    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Thinking."}],
                     "encrypted_content": "enc"},
                    {"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "a b"},
                    {"type": "message", "role": "assistant", "content": "done"}
                ],
                "tools": [{"type": "function", "name": "ls", "description": "list",
                           "parameters": {"type": "object"}, "strict": false}],
                "stream": true,
                "store": false,
                "include": ["reasoning.encrypted_content"],
                "reasoning": {"effort": "high", "summary": "auto"},
                "text": {"format": {"type": "json_object"}, "verbosity": "high"},
                "max_output_tokens": 100
            })
        );
    }

    #[test]
    fn a_plain_request_asks_for_nothing_it_did_not_set() {
        let sent: Value =
            serde_json::from_slice(&body(&ModelRequest::new("m").message(Message::user("x")), "r").unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({"model": "m", "input": [{"type": "message", "role": "user", "content": "x"}],
                   "stream": true, "store": false})
        );
    }
}
