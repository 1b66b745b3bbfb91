//! Renders a scripted reply in the Anthropic Messages wire format: named SSE
//! events (`message_start`, `ping`, content blocks with `text_delta` and
//! `input_json_delta`, `message_delta`, `message_stop`) or one `message`.

use super::openai::Ctx;
use super::playback::Frames;
use super::script::{Reply, ScriptedUsage, split};
use serde_json::{Value, json};

pub(crate) fn stream(reply: &Reply, ctx: &Ctx<'_>) -> Frames {
    let usage = reply.usage.unwrap_or_default();
    let mut start_usage = input_usage(usage);
    start_usage["output_tokens"] = json!(1);
    let mut content = vec![
        event(json!({"type": "message_start", "message": {
            "id": message_id(ctx), "type": "message", "role": "assistant", "model": ctx.model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage,
        }})),
        event(json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !reply.reasoning.is_empty() {
        content.push(event(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "thinking", "thinking": ""}})));
        for piece in split(&reply.reasoning, reply.chunks) {
            content.push(event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "thinking_delta", "thinking": piece}})));
        }
        content.push(event(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "signature_delta", "signature": signature(ctx)}})));
        content.push(event(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    if !reply.text.is_empty() {
        content.push(event(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}})));
        for piece in split(&reply.text, reply.chunks) {
            content.push(event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": piece}})));
        }
        content.push(event(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    for (n, call) in reply.tool_calls.iter().enumerate() {
        content.push(event(json!({"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": tool_id(ctx, n, call.id.as_deref()), "name": call.name, "input": {},
        }})));
        for piece in split(&call.arguments, reply.chunks) {
            content.push(event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}})));
        }
        content.push(event(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    content.push(event(json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
        "usage": {"output_tokens": usage.output_tokens}})));
    Frames { content, end: vec![event(json!({"type": "message_stop"}))] }
}

pub(crate) fn complete(reply: &Reply, ctx: &Ctx<'_>) -> Value {
    let mut content = Vec::new();
    if !reply.reasoning.is_empty() {
        content.push(json!({"type": "thinking", "thinking": reply.reasoning, "signature": signature(ctx)}));
    }
    if !reply.text.is_empty() {
        content.push(json!({"type": "text", "text": reply.text}));
    }
    for (n, call) in reply.tool_calls.iter().enumerate() {
        let input = serde_json::from_str::<Value>(&call.arguments).unwrap_or_else(|_| json!(call.arguments));
        content.push(
            json!({"type": "tool_use", "id": tool_id(ctx, n, call.id.as_deref()), "name": call.name, "input": input}),
        );
    }
    let usage = reply.usage.unwrap_or_default();
    let mut wire_usage = input_usage(usage);
    wire_usage["output_tokens"] = json!(usage.output_tokens);
    json!({
        "id": message_id(ctx), "type": "message", "role": "assistant", "model": ctx.model,
        "content": content, "stop_reason": stop_reason(reply), "stop_sequence": null, "usage": wire_usage,
    })
}

pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// The signature of the scripted thinking block of request `n`: `sig_scripted_n`.
pub(crate) fn signature(ctx: &Ctx<'_>) -> String {
    format!("sig_scripted_{}", ctx.request_no)
}

fn message_id(ctx: &Ctx<'_>) -> String {
    format!("msg_scripted_{}", ctx.request_no)
}

fn tool_id(ctx: &Ctx<'_>, n: usize, id: Option<&str>) -> String {
    id.map_or_else(|| format!("toolu_{}_{n}", ctx.request_no), str::to_owned)
}

/// Anthropic's `input_tokens` leaves out the cache reads.
fn input_usage(usage: ScriptedUsage) -> Value {
    json!({
        "input_tokens": usage.input_tokens.saturating_sub(usage.cached_tokens),
        "cache_read_input_tokens": usage.cached_tokens,
        "cache_creation_input_tokens": 0,
    })
}

fn stop_reason(reply: &Reply) -> String {
    match &reply.finish_reason {
        Some(reason) => reason.clone(),
        None if reply.tool_calls.is_empty() => "end_turn".to_owned(),
        None => "tool_use".to_owned(),
    }
}

fn event(body: Value) -> String {
    let name = body["type"].as_str().unwrap_or("message").to_owned();
    format!("event: {name}\ndata: {body}\n\n")
}
