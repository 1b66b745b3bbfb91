//! The Responses and Conversations views of turns and items: a turn is a
//! `response` (`resp_<uuid>`), a session a `conversation` (`conv_<uuid>`),
//! and items take the shapes the `openai` client's `responses` types parse.

use crate::item::{Content, Item, ItemStatus, Role};
use crate::session::TokenUsage;
use crate::turn::{Turn, TurnStatus};
use serde_json::{Value, json};

/// Prefix of a turn seen through the Responses API.
pub use crate::ids::RESPONSE_PREFIX;

/// A response's status. A turn waiting for client function results is a
/// completed response whose output ends with those `function_call` items:
/// the caller answers with `function_call_output` input, as with OpenAI.
pub fn status(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Queued => "queued",
        TurnStatus::InProgress => "in_progress",
        TurnStatus::Waiting | TurnStatus::Completed => "completed",
        TurnStatus::Failed => "failed",
        TurnStatus::Cancelled => "cancelled",
    }
}

fn item_status(status: ItemStatus) -> &'static str {
    match status {
        ItemStatus::InProgress => "in_progress",
        ItemStatus::Completed => "completed",
        ItemStatus::Incomplete | ItemStatus::Failed => "incomplete",
    }
}

fn text_part(content: &Content) -> Value {
    match content {
        Content::OutputText { text } => json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []}),
        Content::InputText { text } => json!({"type": "input_text", "text": text}),
        Content::InputImage { image_url } => json!({"type": "input_image", "image_url": image_url, "detail": "auto"}),
    }
}

fn string_of(value: &Value) -> Value {
    match value {
        Value::Null => Value::Null,
        Value::String(_) => value.clone(),
        other => Value::String(other.to_string()),
    }
}

/// An output item of a response; `None` for items a response does not show
/// (user messages, function call outputs, command executions).
pub fn output_item(item: &Item) -> Option<Value> {
    output_item_of(item, false)
}

/// An output item; `settled` shows calls that wait for the caller as
/// completed (the response ended there, as with OpenAI).
fn output_item_of(item: &Item, settled: bool) -> Option<Value> {
    let call_status = |s: ItemStatus| if settled && s == ItemStatus::InProgress { "completed" } else { item_status(s) };
    match item {
        Item::Message { id, role: Role::Assistant, status, content, phase, .. } => Some(json!({
            "id": id, "type": "message", "role": "assistant", "status": item_status(*status),
            "phase": phase, "content": content.iter().map(text_part).collect::<Vec<_>>(),
        })),
        Item::FunctionCall { id, call_id, name, arguments, status, .. } => Some(json!({
            "id": id, "type": "function_call", "call_id": call_id, "name": name,
            "arguments": crate::response::arguments(arguments), "status": call_status(*status),
        })),
        Item::McpCall { id, server_label, name, arguments, output, error, status, .. } => Some(json!({
            "id": id, "type": "mcp_call", "server_label": server_label, "name": name,
            "arguments": arguments_string(arguments), "output": string_of(output), "error": string_of(error),
            "status": item_status(*status),
        })),
        Item::Reasoning { id, summary, encrypted_content, status, .. } => Some(json!({
            "id": id, "type": "reasoning", "summary": summary, "status": item_status(*status),
            "encrypted_content": encrypted_content,
        })),
        Item::Program { id, call_id, code, fingerprint, .. } => Some(json!({
            "id": id, "type": "program", "call_id": call_id, "code": code, "fingerprint": fingerprint,
        })),
        Item::ProgramOutput { id, call_id, result, status, .. } => Some(json!({
            "id": id, "type": "program_output", "call_id": call_id, "result": result,
            "status": item_status(*status),
        })),
        _ => None,
    }
}

fn arguments_string(arguments: &Value) -> String {
    match arguments {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Function call arguments as the Responses API shows them: a JSON string.
pub fn arguments(arguments: &Value) -> String {
    arguments_string(arguments)
}

/// An item of a conversation (`GET /v1/conversations/{id}/items`).
pub fn conversation_item(item: &Item) -> Option<Value> {
    match item {
        Item::Message { id, role: Role::User, status, content, .. } => Some(json!({
            "id": id, "type": "message", "role": "user", "status": item_status(*status),
            "content": content.iter().map(text_part).collect::<Vec<_>>(),
        })),
        Item::FunctionCallOutput { id, call_id, output, error, status, .. } => {
            let text = match (output, error) {
                (_, Some(e)) => format!("error: {e}"),
                (Some(Value::String(s)), None) => s.clone(),
                (Some(v), None) => v.to_string(),
                (None, None) => String::new(),
            };
            Some(json!({"id": id, "type": "function_call_output", "call_id": call_id, "output": text,
                        "status": item_status(*status)}))
        }
        other => output_item(other),
    }
}

/// The Responses error code for a turn error code (the original stays in `type`).
fn error_code(code: &str) -> &'static str {
    match code {
        "rate_limit_exceeded" => "rate_limit_exceeded",
        "invalid_request" => "invalid_prompt",
        _ => "server_error",
    }
}

/// Token usage in the Responses shape.
pub fn usage(usage: &TokenUsage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.input_tokens_details.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.output_tokens_details.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    })
}

/// What a response shows beside its turn and items.
pub struct ResponseContext<'a> {
    pub model: &'a str,
    pub instructions: Option<&'a str>,
    /// Function tools in the Responses shape.
    pub tools: Vec<Value>,
    pub background: bool,
    pub metadata: Value,
    /// The session's required actions: a waiting response shows its approval requests.
    pub required_actions: &'a [Value],
}

/// The `mcp_approval_request` output items of a waiting turn's required actions.
fn approval_requests(actions: &[Value], turn_id: &str) -> Vec<Value> {
    actions
        .iter()
        .filter(|a| a["type"] == "mcp_approval_request" && a["turn_id"] == turn_id)
        .map(|a| {
            let request = &a["request"];
            json!({"id": a["request_id"], "type": "mcp_approval_request", "server_label": request["server_label"],
                   "name": request["name"], "arguments": arguments_string(&request["arguments"])})
        })
        .collect()
}

/// The whole `response` object of a turn.
pub fn response(turn: &Turn, items: &[Item], ctx: &ResponseContext<'_>) -> Value {
    let waiting = turn.status == TurnStatus::Waiting;
    let mut output: Vec<Value> = items.iter().filter_map(|i| output_item_of(i, waiting)).collect();
    if waiting {
        output.extend(approval_requests(ctx.required_actions, &turn.id.to_string()));
    }
    let error = turn.error.as_ref().map(|e| json!({"code": error_code(&e.code), "message": e.message, "type": e.code}));
    let completed_at = if waiting { turn.started_at.or(Some(turn.created_at)) } else { turn.completed_at };
    let settings = turn.settings.clone().unwrap_or_default();
    let text = settings.text.unwrap_or_default();
    json!({
        "id": turn.id.response(),
        "object": "response",
        "created_at": turn.created_at,
        "status": status(turn.status),
        "error": error,
        "incomplete_details": null,
        "instructions": ctx.instructions,
        "metadata": ctx.metadata,
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": true,
        "temperature": settings.temperature,
        "tool_choice": "auto",
        "tools": ctx.tools,
        "top_p": settings.top_p,
        "max_output_tokens": settings.max_output_tokens,
        "text": {"format": text.format.unwrap_or_default(), "verbosity": text.verbosity.unwrap_or_default()},
        "reasoning": settings.reasoning.unwrap_or_default(),
        "service_tier": settings.service_tier.unwrap_or_default(),
        "background": ctx.background || turn.background,
        "completed_at": completed_at,
        "conversation": {"id": turn.session_id.conversation()},
        "usage": turn.usage.as_ref().map(usage),
    })
}
